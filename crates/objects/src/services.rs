//! What a Service says about the protocol its backends speak, as upstream Contour reads it.
//! Shared by the front ends (which check settings that depend on it) and the DAG.

use crate::types::{EndpointSlice, Service};
use k8s_openapi::api::core::v1::ServicePort;

/// The label that names an EndpointSlice's Service.
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

/// The name of the Service an EndpointSlice belongs to (its `kubernetes.io/service-name`
/// label). A slice in a snapshot keeps that name alone, in `generateName`, which nothing else
/// reads (see the snapshot's compaction); a slice not yet in one has its labels.
pub fn slice_service(slice: &EndpointSlice) -> Option<&str> {
    match &slice.metadata.labels {
        Some(labels) => labels.get(SERVICE_NAME_LABEL).map(String::as_str),
        None => slice.metadata.generate_name.as_deref(),
    }
}

/// A protocol other than plain HTTP/1.1 that a Service port asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppProtocol {
    /// HTTP/2 over TLS.
    H2,
    /// HTTP/2 in clear text.
    H2c,
    /// TLS.
    Tls,
}

/// The protocol of a Service port: its `appProtocol` when set (`kubernetes.io/h2c`, `https`,
/// `kubernetes.io/wss`; anything else is HTTP/1.1), otherwise the
/// `projectcontour.io/upstream-protocol.{h2,h2c,tls}` annotations (comma-separated port names
/// or numbers; a port listed under several takes the last of h2, h2c, tls).
pub fn app_protocol(service: &Service, port: &ServicePort) -> Option<AppProtocol> {
    if let Some(app) = port.app_protocol.as_deref() {
        return match app {
            "kubernetes.io/h2c" => Some(AppProtocol::H2c),
            "https" | "kubernetes.io/wss" => Some(AppProtocol::Tls),
            _ => None,
        };
    }
    let annotations = service.metadata.annotations.as_ref()?;
    let names = [port.name.clone().unwrap_or_default(), port.port.to_string()];
    let mut found = None;
    for (key, protocol) in [
        ("projectcontour.io/upstream-protocol.h2", AppProtocol::H2),
        ("projectcontour.io/upstream-protocol.h2c", AppProtocol::H2c),
        ("projectcontour.io/upstream-protocol.tls", AppProtocol::Tls),
    ] {
        let listed = annotations
            .get(key)
            .is_some_and(|v| v.split(',').map(str::trim).any(|p| !p.is_empty() && names.iter().any(|n| n == p)));
        if listed {
            found = Some(protocol);
        }
    }
    found
}

/// Names upstream refuses as ExternalName targets: they would point Envoy at itself.
const LOCALHOST_NAMES: [&str; 3] = ["localhost", "localhost.localdomain", "local.projectcontour.io"];

/// The DNS name of an ExternalName Service when such Services are allowed and the name is not a
/// localhost name; `Ok(None)` for any other Service. The error completes "Service ns/name ..." (upstream's words).
pub fn external_name(service: &Service, allowed: bool) -> Result<Option<String>, String> {
    let spec = service.spec.as_ref();
    if spec.and_then(|s| s.type_.as_deref()) != Some("ExternalName") {
        return Ok(None);
    }
    if !allowed {
        return Err("is an ExternalName service, these are not currently enabled. See the config.enableExternalNameService config file setting".into());
    }
    let name =
        spec.and_then(|s| s.external_name.as_deref()).unwrap_or_default().trim_end_matches('.').to_ascii_lowercase();
    if name.is_empty() {
        return Err("is an ExternalName service without spec.externalName".into());
    }
    let ip = name.trim_start_matches('[').trim_end_matches(']').parse::<std::net::IpAddr>().ok();
    let ip = ip.map(|ip| match ip {
        std::net::IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, std::net::IpAddr::V4),
        v4 => v4,
    });
    if LOCALHOST_NAMES.contains(&name.as_str())
        || name.ends_with(".localhost")
        || ip.is_some_and(|ip| ip.is_loopback() || ip.is_unspecified())
    {
        return Err("is an ExternalName service that points to localhost, this is not allowed".into());
    }
    let link_local = |ip: std::net::IpAddr| match ip {
        std::net::IpAddr::V4(v4) => v4.is_link_local(),
        std::net::IpAddr::V6(v6) => (v6.segments()[0] & 0xffc0) == 0xfe80,
    };
    if ip.is_some_and(link_local) {
        return Err(
            "is an ExternalName service that points to a link-local address (where cloud metadata services answer), this is not allowed"
                .into(),
        );
    }
    Ok(Some(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service(annotations: &[(&str, &str)]) -> Service {
        let mut s = Service::default();
        s.metadata.annotations = Some(annotations.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
        s
    }

    fn port(name: &str, number: i32, app: Option<&str>) -> ServicePort {
        ServicePort { name: Some(name.into()), port: number, app_protocol: app.map(Into::into), ..Default::default() }
    }

    #[test]
    fn external_names_never_point_envoy_at_itself_or_the_metadata_service() {
        let external = |name: &str| {
            let spec = k8s_openapi::api::core::v1::ServiceSpec {
                type_: Some("ExternalName".into()),
                external_name: Some(name.into()),
                ..Default::default()
            };
            external_name(&Service { spec: Some(spec), ..Default::default() }, true)
        };
        assert_eq!(external("Example.com."), Ok(Some("example.com".into())));
        assert_eq!(external("10.0.0.1"), Ok(Some("10.0.0.1".into())));
        for local in [
            "localhost",
            "LOCALHOST.",
            "local.projectcontour.io",
            "a.localhost",
            "127.0.0.1",
            "127.9.9.9",
            "::1",
            "[::1]",
            "0.0.0.0",
            "::ffff:127.0.0.1",
        ] {
            assert!(external(local).unwrap_err().contains("localhost"), "{local}");
        }
        for metadata in ["169.254.169.254", "fe80::1", "::ffff:169.254.169.254"] {
            assert!(external(metadata).unwrap_err().contains("link-local"), "{metadata}");
        }
    }

    #[test]
    fn app_protocol_first_then_the_last_matching_annotation() {
        let s = service(&[
            ("projectcontour.io/upstream-protocol.h2", "https, 8443"),
            ("projectcontour.io/upstream-protocol.tls", "8443"),
        ]);
        assert_eq!(app_protocol(&s, &port("https", 443, None)), Some(AppProtocol::H2), "by name");
        assert_eq!(app_protocol(&s, &port("x", 8443, None)), Some(AppProtocol::Tls), "tls is read after h2");
        assert_eq!(app_protocol(&s, &port("https", 443, Some("kubernetes.io/h2c"))), Some(AppProtocol::H2c));
        assert_eq!(app_protocol(&s, &port("https", 443, Some("http"))), None, "appProtocol alone decides");
        assert_eq!(app_protocol(&s, &port("web", 80, None)), None);
    }
}
