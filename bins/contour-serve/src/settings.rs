//! Where settings come from: flags override the ContourConfiguration resource
//! (`--contour-config-name`) and contour.yaml (`--config-path`), which override defaults.

use std::collections::BTreeSet;
use std::net::IpAddr;

use anyhow::{Context, bail};
use api::contourconfig::{ContourConfiguration, ContourConfigurationSpec};

use crate::Args;
use services::{geo_databases, global_ext_auth, global_ext_auth_of_file, rate_limit_service, tracing, tracing_of_file};

mod services;
#[cfg(test)]
mod tests;

/// The flags given on the command line or through the environment.
pub type Explicit = BTreeSet<String>;

/// Applies contour.yaml to the flags that were not given.
pub fn apply_file(args: &mut Args, explicit: &Explicit) -> anyhow::Result<()> {
    let Some(path) = args.config_path.clone() else { return Ok(()) };
    let file = config::load(&path)?;
    let envoy = crate::envoy::from_file(&file);
    crate::envoy::apply(&mut args.listener, &envoy, crate::envoy::Source::File)
        .and_then(|()| crate::envoy::apply_cluster(&mut args.cluster, &envoy, crate::envoy::Source::File))
        .with_context(|| path.display().to_string())?;
    if !explicit.contains("incluster") {
        args.incluster = file.incluster.unwrap_or(false);
    }
    if !explicit.contains("kubeconfig") {
        args.kubeconfig = file.kubeconfig.map(Into::into).or(args.kubeconfig.take());
    }
    if !explicit.contains("kubernetes_client_qps") {
        args.kubernetes_client_qps = file.kubernetes_client_qps.map(|q| q as f32).or(args.kubernetes_client_qps);
    }
    if !explicit.contains("kubernetes_client_burst") {
        args.kubernetes_client_burst = file.kubernetes_client_burst.or(args.kubernetes_client_burst);
    }
    // As upstream, the file's `debug: true` turns debug logging on and the flag cannot turn it off.
    args.debug |= file.debug.unwrap_or(false);
    args.disable_permit_insecure = file.disable_permit_insecure.unwrap_or(false);
    args.disable_merge_slashes = file.disable_merge_slashes.unwrap_or(false);
    if let Some(port) = file.network.as_ref().and_then(|n| n.admin_port) {
        args.envoy_admin_port = port;
    }
    if let Some(r) = file.gateway.as_ref().and_then(|g| g.gateway_ref.clone()) {
        args.gateway_ref = Some(static_gateway("gateway.gatewayRef", &r.namespace, &r.name)?);
    }
    if let Some(addresses) = &file.ingress_status_address
        && !explicit.contains("ingress_status_address")
    {
        args.ingress_status_address = split_addresses(addresses);
    }
    if let Some(name) = file.envoy_service_name.clone().filter(|_| !explicit.contains("envoy_service_name")) {
        args.envoy_service_name = name;
    }
    if let Some(ns) = file.envoy_service_namespace.clone().filter(|_| !explicit.contains("envoy_service_namespace")) {
        args.envoy_service_namespace = ns;
    }
    if let Some(m) = file.metrics.as_ref().and_then(|m| m.envoy.as_ref()) {
        let tls = match (&m.server_certificate_path, &m.server_key_path) {
            (Some(cert), Some(key)) if !cert.is_empty() && !key.is_empty() => Some(api::contourconfig::MetricsTLS {
                cert_file: Some(cert.clone()),
                key_file: Some(key.clone()),
                ca_file: m.ca_certificate_path.clone(),
            }),
            _ => None,
        };
        let envoy = api::contourconfig::MetricsConfig { address: m.address.clone(), port: m.port.map(i64::from), tls };
        apply_envoy_metrics(args, &envoy, "metrics.envoy")?;
    }
    if let Some(m) = file.metrics.as_ref().and_then(|m| m.contour.as_ref()) {
        if let (Some(cert), Some(key)) = (&m.server_certificate_path, &m.server_key_path)
            && !cert.is_empty()
            && !key.is_empty()
        {
            let ca = m.ca_certificate_path.clone().filter(|c| !c.is_empty()).map(Into::into);
            args.metrics_tls = Some((cert.into(), key.into(), ca));
        }
        if let Some(a) = m.address.as_deref().filter(|_| !explicit.contains("http_address")) {
            args.http_address =
                a.parse().with_context(|| format!("metrics.contour.address: {a:?} is not an IP address"))?;
        }
        if let Some(p) = m.port.filter(|p| *p != 0 && !explicit.contains("http_port")) {
            args.http_port = p;
        }
    }
    if let Some(h) = &file.om_enforced_health_listener {
        let port = h.port.map(i64::from);
        args.om_enforced_health = Some(listen_address("omEnforcedHealthListener", h.address.as_deref(), port)?);
    }
    if let Some(v) = file.enable_external_name_service {
        args.enable_external_name_service = v;
    }
    if let Some(p) = &file.policy {
        let policy = api::contourconfig::PolicyConfig {
            request_headers: p
                .request_headers
                .as_ref()
                .map(|h| api::contourconfig::HeadersPolicy { set: h.set.clone(), remove: h.remove.clone() }),
            response_headers: p
                .response_headers
                .as_ref()
                .map(|h| api::contourconfig::HeadersPolicy { set: h.set.clone(), remove: h.remove.clone() }),
            apply_to_ingress: p.apply_to_ingress,
        };
        apply_policy(args, &policy, "policy").with_context(|| path.display().to_string())?;
    }
    if let Some(r) = &file.rate_limit_service
        && let Some(service) = r.extension_service.as_deref().filter(|s| !s.is_empty())
    {
        let Some((namespace, name)) = service.split_once('/') else {
            bail!("{}: rateLimitService.extensionService: {service:?} is not namespace/name", path.display());
        };
        let default = r
            .default_policy()
            .map_err(|e| anyhow::anyhow!("{}: rateLimitService.defaultGlobalRateLimitPolicy: {e}", path.display()))?;
        let config = api::contourconfig::RateLimitServiceConfig {
            extension_service: api::contourconfig::NamespacedName { name: name.into(), namespace: namespace.into() },
            domain: r.domain.clone(),
            fail_open: r.fail_open,
            enable_x_rate_limit_headers: r.enable_x_rate_limit_headers,
            enable_resource_exhausted_code: r.enable_resource_exhausted_code,
            default_global_rate_limit_policy: default,
        };
        args.rate_limit_service = Some(rate_limit_service(&config));
    }
    if let Some(g) = &file.global_ext_auth {
        args.global_ext_auth = global_ext_auth_of_file(g).with_context(|| path.display().to_string())?;
    }
    if let Some(t) = &file.tracing {
        args.tracing = Some(tracing(&tracing_of_file(t), "tracing").with_context(|| path.display().to_string())?);
    }
    if let Some(m) = file.geo_ip.as_ref().and_then(|g| g.provider.as_ref()).and_then(|p| p.max_mind.as_ref()) {
        let max_mind = api::contourconfig::MaxMindConfig {
            city_db_path: m.city_db_path.clone(),
            country_db_path: m.country_db_path.clone(),
            asn_db_path: m.asn_db_path.clone(),
            isp_db_path: m.isp_db_path.clone(),
            anon_db_path: m.anon_db_path.clone(),
        };
        args.geoip = geo_databases(&max_mind, "geoIP.provider.maxMind").with_context(|| path.display().to_string())?;
    }
    if let Some(c) = file.tls.as_ref().and_then(|t| t.envoy_client_certificate.clone()) {
        args.envoy_client_certificate = Some(secret_ref("tls.envoy-client-certificate", &c.namespace, &c.name)?);
    }
    if let Some(f) = file.tls.and_then(|t| t.fallback_certificate) {
        args.fallback_certificate = Some(ir::ObjectRef { namespace: f.namespace, name: f.name });
    }
    Ok(())
}

/// Upstream's global header policy, from the file's `policy` or the resource's `spec.policy`:
/// HTTPProxy services always, Ingress backends when `applyToIngress` is true.
fn apply_policy(args: &mut Args, policy: &api::contourconfig::PolicyConfig, key: &str) -> anyhow::Result<()> {
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
    frontends::httpproxy::check_default_headers(&defaults).map_err(|e| anyhow::anyhow!("{key}.{e}"))?;
    if defaults != frontends::DefaultHeaders::default() {
        args.default_headers = Some(std::sync::Arc::new(defaults));
    }
    if let Some(v) = policy.apply_to_ingress {
        args.default_headers_on_ingress = v;
    }
    Ok(())
}

/// Upstream's status address: one address, or several separated by commas.
fn split_addresses(text: &str) -> Vec<String> {
    text.split(',').map(str::trim).filter(|a| !a.is_empty()).map(str::to_string).collect()
}

/// The flags that override what the file or the resource said about Envoy's listeners.
pub fn apply_flags(args: &mut Args, explicit: &Explicit) {
    use xds::accesslog::Format;
    let log = &mut args.listener.access_log;
    if explicit.contains("accesslog_format") {
        match args.accesslog_format.as_deref() {
            Some("json") if !matches!(log.format, Format::Json(_)) => {
                log.format = Format::Json(
                    xds::accesslog::json_fields(&xds::accesslog::DEFAULT_JSON_FIELDS).expect("upstream's fields"),
                );
            }
            Some("envoy") if !matches!(log.format, Format::Envoy(_)) => log.format = Format::Envoy(None),
            _ => {}
        }
    }
    if let Some(path) = args.envoy_http_access_log.clone().filter(|_| explicit.contains("envoy_http_access_log")) {
        log.http_path = path;
    }
    if let Some(path) = args.envoy_https_access_log.clone().filter(|_| explicit.contains("envoy_https_access_log")) {
        log.https_path = path;
    }
    if explicit.contains("use_proxy_protocol") {
        args.listener.use_proxy_protocol = args.use_proxy_protocol;
    }
}

/// Reads the ContourConfiguration named by `--contour-config-name` and applies it to the flags
/// that were not given; a bad value stops start-up naming its field.
pub async fn apply_resource(args: &mut Args, explicit: &Explicit, client: &kube::Client) -> anyhow::Result<()> {
    let Some(name) = args.contour_config_name.clone() else { return Ok(()) };
    let namespace = args.leader_election_resource_namespace.clone();
    let api: kube::Api<ContourConfiguration> = kube::Api::namespaced(client.clone(), &namespace);
    let resource = api.get(&name).await.with_context(|| format!("reading ContourConfiguration {namespace}/{name}"))?;
    apply_spec(args, explicit, &resource.spec).with_context(|| format!("ContourConfiguration {namespace}/{name}"))
}

fn apply_spec(args: &mut Args, explicit: &Explicit, spec: &ContourConfigurationSpec) -> anyhow::Result<()> {
    let set_addr = |field: &str, value: &Option<String>, target: &mut IpAddr, flag: &str| -> anyhow::Result<()> {
        if let Some(v) = value
            && !explicit.contains(flag)
        {
            *target = v.parse().with_context(|| format!("{field}: {v:?} is not an IP address"))?;
        }
        Ok(())
    };
    let set_port = |field: &str, value: Option<i64>, target: &mut u16, flag: &str| -> anyhow::Result<()> {
        if let Some(v) = value
            && !explicit.contains(flag)
        {
            match u16::try_from(v) {
                Ok(p) if p != 0 => *target = p,
                _ => bail!("{field}: {v} is not a port"),
            }
        }
        Ok(())
    };
    if let Some(x) = &spec.xds_server {
        set_addr("spec.xdsServer.address", &x.address, &mut args.xds_address, "xds_address")?;
        set_port("spec.xdsServer.port", x.port, &mut args.xds_port, "xds_port")?;
    }
    if let Some(d) = &spec.debug {
        set_addr("spec.debug.address", &d.address, &mut args.debug_http_address, "debug_http_address")?;
        set_port("spec.debug.port", d.port, &mut args.debug_http_port, "debug_http_port")?;
    }
    if let Some(h) = &spec.health {
        set_addr("spec.health.address", &h.address, &mut args.health_address, "health_address")?;
        set_port("spec.health.port", h.port, &mut args.health_port, "health_port")?;
    }
    if let Some(m) = &spec.metrics {
        set_addr("spec.metrics.address", &m.address, &mut args.http_address, "http_address")?;
        set_port("spec.metrics.port", m.port, &mut args.http_port, "http_port")?;
        if let Some(t) = &m.tls {
            let (Some(cert), Some(key)) = (t.cert_file.clone(), t.key_file.clone()) else {
                bail!("spec.metrics.tls: both the certificate and the key files are needed");
            };
            args.metrics_tls =
                Some((cert.into(), key.into(), t.ca_file.clone().filter(|c| !c.is_empty()).map(Into::into)));
        }
    }
    if let Some(h) = spec.envoy.as_ref().and_then(|e| e.health.as_ref()) {
        set_addr("spec.envoy.health.address", &h.address, &mut args.stats_address, "stats_address")?;
        set_port("spec.envoy.health.port", h.port, &mut args.stats_port, "stats_port")?;
    }
    if let Some(m) = spec.envoy.as_ref().and_then(|e| e.metrics.as_ref()) {
        apply_envoy_metrics(args, m, "spec.envoy.metrics")?;
    }
    if let Some(h) = spec.envoy.as_ref().and_then(|e| e.om_enforced_health.as_ref()) {
        args.om_enforced_health = Some(listen_address("spec.envoy.omEnforcedHealth", h.address.as_deref(), h.port)?);
    }
    if let Some(v) = spec.envoy.as_ref().and_then(|e| e.enable_stat_prefix) {
        args.enable_stat_prefix = v;
    }
    if let Some(c) = spec.envoy.as_ref().and_then(|e| e.client_certificate.as_ref()) {
        args.envoy_client_certificate = Some(secret_ref("spec.envoy.clientCertificate", &c.namespace, &c.name)?);
    }
    if let Some(v) = spec.enable_external_name_service {
        args.enable_external_name_service = v;
    }
    if let Some(p) = &spec.policy {
        apply_policy(args, p, "spec.policy")?;
    }
    if let Some(g) = &spec.global_ext_auth {
        args.global_ext_auth = global_ext_auth(g.clone(), "spec.globalExtAuth")?;
    }
    if let Some(r) = spec.rate_limit_service.as_ref().filter(|r| !r.extension_service.name.is_empty()) {
        args.rate_limit_service = Some(rate_limit_service(r));
    }
    if let Some(m) = spec.geo_ip.as_ref().and_then(|g| g.provider.as_ref()).and_then(|p| p.max_mind.as_ref()) {
        args.geoip = geo_databases(m, "spec.geoIP.provider.maxMind")?;
    }
    if let Some(t) = &spec.tracing {
        args.tracing = Some(tracing(t, "spec.tracing")?);
    }
    if let Some(i) = &spec.ingress {
        if let Some(classes) = i.class_names.clone().filter(|_| !explicit.contains("ingress_class_name")) {
            args.ingress_class_name = classes;
        }
        if let Some(a) = i.status_address.as_deref().filter(|_| !explicit.contains("ingress_status_address")) {
            args.ingress_status_address = split_addresses(a);
        }
    }
    if let Some(service) = spec.envoy.as_ref().and_then(|e| e.service.as_ref()) {
        if !explicit.contains("envoy_service_name") {
            args.envoy_service_name = service.name.clone();
        }
        if !explicit.contains("envoy_service_namespace") {
            args.envoy_service_namespace = service.namespace.clone();
        }
    }
    if let Some(g) = &spec.gateway {
        let r = &g.gateway_ref;
        args.gateway_ref = Some(static_gateway("spec.gateway.gatewayRef", &r.namespace, &r.name)?);
    }
    if let Some(h) = &spec.httpproxy {
        if let Some(v) = h.disable_permit_insecure {
            args.disable_permit_insecure = v;
        }
        if let Some(roots) = &h.root_namespaces
            && !explicit.contains("root_namespaces")
        {
            args.root_namespaces = roots.clone();
        }
        if let Some(f) = &h.fallback_certificate {
            args.fallback_certificate = Some(ir::ObjectRef { namespace: f.namespace.clone(), name: f.name.clone() });
        }
    }
    if let Some(e) = &spec.envoy {
        crate::envoy::apply(&mut args.listener, e, crate::envoy::Source::Resource)?;
        crate::envoy::apply_cluster(&mut args.cluster, e, crate::envoy::Source::Resource)?;
        if let Some(v) = e.network.as_ref().and_then(|n| n.admin_port) {
            match u16::try_from(v) {
                Ok(p) if p != 0 => args.envoy_admin_port = p,
                _ => bail!("spec.envoy.network.adminPort: {v} is not a port"),
            }
        }
        if let Some(v) = e.listener.as_ref().and_then(|l| l.disable_merge_slashes) {
            args.disable_merge_slashes = v;
        }
        if let Some(l) = &e.http {
            set_addr(
                "spec.envoy.http.address",
                &l.address,
                &mut args.envoy_service_http_address,
                "envoy_service_http_address",
            )?;
            set_port("spec.envoy.http.port", l.port, &mut args.envoy_service_http_port, "envoy_service_http_port")?;
        }
        if let Some(l) = &e.https {
            set_addr(
                "spec.envoy.https.address",
                &l.address,
                &mut args.envoy_service_https_address,
                "envoy_service_https_address",
            )?;
            set_port("spec.envoy.https.port", l.port, &mut args.envoy_service_https_port, "envoy_service_https_port")?;
        }
    }
    Ok(())
}

/// Envoy's statistics listener (`metrics.envoy`, `spec.envoy.metrics`): its own address and port
/// (the health listener's when unset), over HTTPS with its files when given.
fn apply_envoy_metrics(args: &mut Args, m: &api::contourconfig::MetricsConfig, field: &str) -> anyhow::Result<()> {
    let ip: IpAddr = match m.address.as_deref().filter(|a| !a.is_empty()) {
        Some(a) => a.parse().with_context(|| format!("{field}.address: {a:?} is not an IP address"))?,
        None => args.stats_address,
    };
    let port = match m.port {
        None | Some(0) => args.stats_port,
        Some(p) => u16::try_from(p).ok().with_context(|| format!("{field}.port: {p} is not a port"))?,
    };
    let tls = match &m.tls {
        Some(t) => {
            let (Some(cert), Some(key)) = (t.cert_file.clone(), t.key_file.clone()) else {
                bail!("{field}.tls: both the certificate and the key files are needed");
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
        bail!("{field}: statistics over HTTPS need a port of their own, apart from the health listener's");
    }
    args.envoy_metrics = Some(xds::MetricsListener { address, tls });
    Ok(())
}

/// A listener's address (0.0.0.0 when unset) and port (required).
fn listen_address(field: &str, address: Option<&str>, port: Option<i64>) -> anyhow::Result<std::net::SocketAddr> {
    let ip: IpAddr = match address.filter(|a| !a.is_empty()) {
        Some(a) => a.parse().with_context(|| format!("{field}.address: {a:?} is not an IP address"))?,
        None => std::net::Ipv4Addr::UNSPECIFIED.into(),
    };
    match port.map(u16::try_from) {
        Some(Ok(p)) if p != 0 => Ok(std::net::SocketAddr::new(ip, p)),
        Some(_) => bail!("{field}.port: {} is not a port", port.unwrap_or_default()),
        None => bail!("{field}.port: a port is needed"),
    }
}

/// A Secret named by the configuration: both parts must be set.
fn secret_ref(field: &str, namespace: &str, name: &str) -> anyhow::Result<ir::ObjectRef> {
    if namespace.trim().is_empty() || name.trim().is_empty() {
        bail!("{field}: both namespace and name must be set");
    }
    Ok(ir::ObjectRef { namespace: namespace.into(), name: name.into() })
}

/// Upstream's static Gateway, checked as upstream does: both parts named.
fn static_gateway(field: &str, namespace: &str, name: &str) -> anyhow::Result<objects::ObjectKey> {
    if namespace.trim().is_empty() || name.trim().is_empty() {
        bail!("{field}: both namespace and name must be set");
    }
    Ok(objects::ObjectKey::new(namespace, name))
}
