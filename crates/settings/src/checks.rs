//! Checks and conversions the file and the resource share.

use std::net::IpAddr;

use crate::Result;
use crate::flags::Settings;

/// An IP address, or an error naming `field`.
pub(crate) fn ip(text: &str, field: &str) -> Result<IpAddr> {
    text.parse().map_err(|_| crate::Error::Invalid(format!("{field}: {text:?} is not an IP address")))
}

/// Upstream's global header policy, from the file's `policy` or the resource's `spec.policy`:
/// HTTPProxy services always, Ingress backends when `applyToIngress` is true.
pub(crate) fn apply_policy(args: &mut Settings, policy: &api::contourconfig::PolicyConfig, key: &str) -> Result<()> {
    let convert = |p: &Option<api::contourconfig::HeadersPolicy>| api::httpproxy::HeadersPolicy {
        set: p.as_ref().and_then(|p| p.set.as_ref()).map(|set| {
            set.iter()
                .map(|(name, value)| api::httpproxy::HeaderValue { name: name.clone(), value: value.clone() })
                .collect()
        }),
        remove: p.as_ref().and_then(|p| p.remove.clone()),
    };
    let defaults = frontends::DefaultHeaders {
        request: convert(&policy.request_headers),
        response: convert(&policy.response_headers),
    };
    frontends::httpproxy::check_default_headers(&defaults).map_err(|e| crate::Error::Invalid(format!("{key}.{e}")))?;
    if defaults != frontends::DefaultHeaders::default() {
        args.default_headers = Some(std::sync::Arc::new(defaults));
    }
    if let Some(v) = policy.apply_to_ingress {
        args.default_headers_on_ingress = v;
    }
    Ok(())
}

/// Upstream's status address: one address, or several separated by commas.
pub(crate) fn split_addresses(text: &str) -> Vec<String> {
    text.split(',').map(str::trim).filter(|a| !a.is_empty()).map(str::to_string).collect()
}

/// Envoy's statistics listener (`metrics.envoy`, `spec.envoy.metrics`): its own address and port
/// (the health listener's when unset), over HTTPS with its files when given.
pub(crate) fn apply_envoy_metrics(
    args: &mut Settings,
    m: &api::contourconfig::MetricsConfig,
    field: &str,
) -> Result<()> {
    let ip: IpAddr = match m.address.as_deref().filter(|a| !a.is_empty()) {
        Some(a) => ip(a, &format!("{field}.address"))?,
        None => args.stats_address,
    };
    let port = match m.port {
        None | Some(0) => args.stats_port,
        Some(p) => u16::try_from(p).map_err(|_| crate::Error::Invalid(format!("{field}.port: {p} is not a port")))?,
    };
    let tls = match &m.tls {
        Some(t) => {
            let (Some(cert), Some(key)) = (t.cert_file.clone(), t.key_file.clone()) else {
                invalid!("{field}.tls: both the certificate and the key files are needed");
            };
            Some(xds::MetricsTls {
                cert_file: cert,
                key_file: key,
                ca_file: t.ca_file.clone().filter(|c| !c.is_empty()),
            })
        }
        None => None,
    };
    let address = std::net::SocketAddr::new(ip, port);
    if tls.is_some() && address == std::net::SocketAddr::new(args.stats_address, args.stats_port) {
        invalid!("{field}: statistics over HTTPS need a port of their own, apart from the health listener's");
    }
    args.envoy_metrics = Some(xds::MetricsListener { address, tls });
    Ok(())
}

/// A listener's address (0.0.0.0 when unset) and port (required).
pub(crate) fn listen_address(field: &str, address: Option<&str>, port: Option<i64>) -> Result<std::net::SocketAddr> {
    let ip: IpAddr = match address.filter(|a| !a.is_empty()) {
        Some(a) => ip(a, &format!("{field}.address"))?,
        None => std::net::Ipv4Addr::UNSPECIFIED.into(),
    };
    match port.map(u16::try_from) {
        Some(Ok(p)) if p != 0 => Ok(std::net::SocketAddr::new(ip, p)),
        Some(_) => invalid!("{field}.port: {} is not a port", port.unwrap_or_default()),
        None => invalid!("{field}.port: a port is needed"),
    }
}

/// A Secret named by the configuration: both parts must be set.
pub(crate) fn secret_ref(field: &str, namespace: &str, name: &str) -> Result<ir::ObjectRef> {
    if namespace.trim().is_empty() || name.trim().is_empty() {
        invalid!("{field}: both namespace and name must be set");
    }
    Ok(ir::ObjectRef { namespace: namespace.into(), name: name.into() })
}

/// Upstream's static Gateway, checked as upstream does: both parts named.
pub(crate) fn static_gateway(field: &str, namespace: &str, name: &str) -> Result<objects::ObjectKey> {
    if namespace.trim().is_empty() || name.trim().is_empty() {
        invalid!("{field}: both namespace and name must be set");
    }
    Ok(objects::ObjectKey::new(namespace, name))
}
