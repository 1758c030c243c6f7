//! Where settings come from: flags override the ContourConfiguration resource
//! (`--contour-config-name`) and contour.yaml (`--config-path`), which override defaults.

use std::collections::BTreeSet;
use std::net::IpAddr;

use anyhow::{Context, bail};
use api::contourconfig::{ContourConfiguration, ContourConfigurationSpec};

use crate::Args;

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
        let service = t.extension_service.as_deref().unwrap_or_default();
        let (namespace, name) = service.split_once('/').unwrap_or(("", service));
        let config = api::contourconfig::TracingConfig {
            include_pod_detail: t.include_pod_detail,
            service_name: t.service_name.clone(),
            overall_sampling: t.overall_sampling.clone(),
            max_path_tag_length: t.max_path_tag_length,
            custom_tags: t.custom_tags.as_ref().map(|tags| {
                tags.iter()
                    .map(|c| api::contourconfig::CustomTag {
                        tag_name: c.tag_name.clone(),
                        literal: c.literal.clone(),
                        request_header_name: c.request_header_name.clone(),
                    })
                    .collect()
            }),
            extension_service: api::contourconfig::NamespacedName { name: name.into(), namespace: namespace.into() },
        };
        args.tracing = Some(tracing(&config, "tracing").with_context(|| path.display().to_string())?);
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

/// contour.yaml's `globalExtAuth` as the ContourConfiguration's (an `extensionRef` instead of
/// `extensionService: namespace/name`); `None` without an extension service, as upstream.
fn global_ext_auth_of_file(g: &config::GlobalExtAuth) -> anyhow::Result<Option<api::httpproxy::AuthorizationServer>> {
    use api::httpproxy::{AuthorizationPolicy, AuthorizationServer, AuthorizationServerBufferSettings};
    let Some(service) = g.extension_service.as_deref().filter(|s| !s.is_empty()) else { return Ok(None) };
    let Some((namespace, name)) = service.split_once('/') else {
        bail!("globalExtAuth.extensionService: {service:?} is not namespace/name");
    };
    let server = AuthorizationServer {
        extension_ref: Some(api::httpproxy::ExtensionServiceReference {
            api_version: None,
            namespace: Some(namespace.into()),
            name: Some(name.into()),
        }),
        service_type: g.service_type.clone(),
        http_settings: g.http_settings.as_ref().map(|h| {
            let names = |list: &Option<Vec<config::AllowedHeader>>| {
                list.as_ref().map(|l| {
                    l.iter()
                        .map(|a| api::httpproxy::HTTPAuthorizationServerAllowedHeaders {
                            exact: a.exact.clone(),
                            prefix: a.prefix.clone(),
                            suffix: a.suffix.clone(),
                            contains: a.contains.clone(),
                            ignore_case: a.ignore_case,
                        })
                        .collect()
                })
            };
            api::httpproxy::HTTPAuthorizationServerSettings {
                path_prefix: h.path_prefix.clone(),
                allowed_authorization_headers: names(&h.allowed_authorization_headers),
                allowed_upstream_headers: names(&h.allowed_upstream_headers),
            }
        }),
        auth_policy: g
            .auth_policy
            .as_ref()
            .map(|p| AuthorizationPolicy { disabled: p.disabled, context: p.context.clone() }),
        response_timeout: g.response_timeout.clone(),
        fail_open: g.fail_open,
        with_request_body: g.with_request_body.as_ref().map(|b| AuthorizationServerBufferSettings {
            max_request_bytes: b.max_request_bytes,
            allow_partial_message: b.allow_partial_message,
            pack_as_bytes: b.pack_as_bytes,
        }),
    };
    global_ext_auth(server, "globalExtAuth")
}

/// The MaxMind database paths (contour.yaml's mapped into the ContourConfiguration's shape, as
/// the other keys are), checked to be absolute paths Envoy can be given; `None` when none is set.
fn geo_databases(m: &api::contourconfig::MaxMindConfig, key: &str) -> anyhow::Result<Option<ir::GeoDatabases>> {
    let names = ["cityDbPath", "countryDbPath", "asnDbPath", "ispDbPath", "anonDbPath"];
    let paths = [&m.city_db_path, &m.country_db_path, &m.asn_db_path, &m.isp_db_path, &m.anon_db_path];
    let mut set = paths.map(|p| p.clone().filter(|p| !p.is_empty()));
    for (path, name) in set.iter().zip(names) {
        if let Some(p) = path
            && (!p.starts_with('/') || p.chars().any(char::is_control))
        {
            bail!("{key}.{name}: {p:?} is not an absolute path");
        }
    }
    if set.iter().all(Option::is_none) {
        return Ok(None);
    }
    let [city, country, asn, isp, anon] = std::mem::take(&mut set);
    Ok(Some(ir::GeoDatabases { city, country, asn, isp, anon }))
}

/// Upstream's `tracing`, checked (its rules, and a sampling rate Envoy accepts) and with its
/// defaults: service name `contour`, every request sampled (upstream reads an unparsable or zero
/// rate as 100; an unparsable one is refused here), paths tagged up to 256 bytes, and the Envoy
/// pod's name and namespace as tags unless `includePodDetail` is false.
fn tracing(t: &api::contourconfig::TracingConfig, key: &str) -> anyhow::Result<xds::Tracing> {
    let service = &t.extension_service;
    if service.name.is_empty() || service.namespace.is_empty() {
        bail!("{key}.extensionService must name an ExtensionService as namespace/name");
    }
    let sampling = t.overall_sampling.as_deref().unwrap_or("100");
    let overall_sampling = match sampling.trim().parse::<f64>() {
        Ok(0.0) => 100.0,
        Ok(rate) if (0.0..=100.0).contains(&rate) => rate,
        _ => bail!("{key}.overallSampling: {sampling:?} is not a percentage from 0 to 100"),
    };
    let mut custom_tags = Vec::new();
    if t.include_pod_detail != Some(false) {
        for (name, variable) in [("podName", "HOSTNAME"), ("podNamespace", "CONTOUR_NAMESPACE")] {
            custom_tags.push(xds::CustomTag { name: name.into(), value: xds::TagValue::Environment(variable.into()) });
        }
    }
    let mut names = std::collections::BTreeSet::new();
    for (i, tag) in t.custom_tags.iter().flatten().enumerate() {
        let field = format!("{key}.customTags[{i}]");
        if tag.tag_name.is_empty() {
            bail!("{field}.tagName must be defined");
        }
        if !names.insert(tag.tag_name.as_str()) {
            bail!("{field}.tagName {:?} is duplicate", tag.tag_name);
        }
        let value = match (tag.literal.as_deref().filter(|v| !v.is_empty()), tag.request_header_name.as_deref()) {
            (Some(literal), None | Some("")) => xds::TagValue::Literal(literal.into()),
            (None, Some(header)) if !header.is_empty() => {
                if header.bytes().any(|b| !b.is_ascii_graphic() || b == b':') {
                    bail!("{field}.requestHeaderName {header:?} is not a header name");
                }
                xds::TagValue::RequestHeader(header.to_ascii_lowercase())
            }
            _ => bail!("{field}: must set exactly one of literal or requestHeaderName"),
        };
        custom_tags.push(xds::CustomTag { name: tag.tag_name.clone(), value });
    }
    Ok(xds::Tracing {
        cluster: ir::extension_cluster_name(&service.namespace, &service.name),
        service_name: t.service_name.clone().filter(|n| !n.is_empty()).unwrap_or_else(|| "contour".into()),
        overall_sampling,
        max_path_tag_length: t.max_path_tag_length.unwrap_or(256),
        custom_tags,
    })
}

/// Upstream's `rateLimitService` as the filter's settings and the default policy.
fn rate_limit_service(
    r: &api::contourconfig::RateLimitServiceConfig,
) -> (xds::RateLimitService, Option<api::httpproxy::GlobalRateLimitPolicy>) {
    let service = xds::RateLimitService {
        cluster: ir::extension_cluster_name(&r.extension_service.namespace, &r.extension_service.name),
        domain: r.domain.clone().unwrap_or_default(),
        fail_open: r.fail_open == Some(true),
        timeout_ms: None,
        x_ratelimit_headers: r.enable_x_rate_limit_headers == Some(true),
        resource_exhausted: r.enable_resource_exhausted_code == Some(true),
    };
    (service, r.default_global_rate_limit_policy.clone())
}

/// A global authorization server, checked: it names an ExtensionService with its namespace,
/// its `serviceType` and `httpSettings` agree, and its timeout is valid.
fn global_ext_auth(
    server: api::httpproxy::AuthorizationServer,
    key: &str,
) -> anyhow::Result<Option<api::httpproxy::AuthorizationServer>> {
    let reference = server.extension_ref.clone().unwrap_or_default();
    let Some(_) = reference.name.as_deref().filter(|n| !n.is_empty()) else { return Ok(None) };
    if reference.namespace.as_deref().is_none_or(str::is_empty) {
        bail!("{key}: the extension service needs its namespace");
    }
    frontends::httpproxy::http_settings(&server).map_err(|e| anyhow::anyhow!("{key}.{e}"))?;
    if let Some(t) = server.response_timeout.as_deref().filter(|t| !t.is_empty()) {
        frontends::httpproxy::check_timeout(t).map_err(|e| anyhow::anyhow!("{key}.responseTimeout: {e}"))?;
    }
    Ok(Some(server))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    /// `contour-serve --config-path F` with `text` in F, as `apply_file` leaves the flags.
    fn from_file(text: &str) -> anyhow::Result<Args> {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("contour-serve-settings-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let path = dir.join("contour.yaml");
        std::fs::write(&path, text)?;
        let mut args = Args::parse_from(["contour-serve", "--config-path", path.to_str().unwrap_or_default()]);
        let applied = apply_file(&mut args, &Explicit::new());
        let _ = std::fs::remove_dir_all(&dir);
        applied.map(|()| args)
    }

    #[test]
    fn geoip_databases_come_from_contour_yaml_as_absolute_paths() -> anyhow::Result<()> {
        let args =
            from_file("geoIP:\n  provider:\n    maxMind: {cityDbPath: /geo/city.mmdb, anonDbPath: /geo/anon.mmdb}\n")?;
        let databases = args.geoip.expect("set");
        assert_eq!(
            (databases.city.as_deref(), databases.anon.as_deref()),
            (Some("/geo/city.mmdb"), Some("/geo/anon.mmdb"))
        );
        assert_eq!(databases.asn, None);
        assert!(from_file("geoIP: {provider: {maxMind: {}}}\n")?.geoip.is_none(), "no database: off");
        let e = from_file("geoIP: {provider: {maxMind: {asnDbPath: asn.mmdb}}}\n").expect_err("relative");
        assert!(format!("{e:#}").contains("geoIP.provider.maxMind.asnDbPath"), "{e:#}");
        Ok(())
    }

    #[test]
    fn global_ext_auth_names_its_extension_and_becomes_every_default_fleet_filter() -> anyhow::Result<()> {
        let args = from_file(
            "globalExtAuth:\n  extensionService: auth/server\n  failOpen: true\n  responseTimeout: 3s\n  withRequestBody: {}\n",
        )?;
        let server = args.global_ext_auth.expect("set");
        let filter = frontends::httpproxy::global_authorization(&server).expect("a filter");
        assert_eq!(
            (filter.cluster.as_str(), filter.authority.as_str()),
            ("extension/auth/server", "extension.auth.server")
        );
        assert_eq!((filter.fail_open, filter.response_timeout_ms), (true, Some(3000)));
        assert_eq!(filter.with_request_body.map(|b| b.max_request_bytes), Some(1024));
        assert!(from_file("globalExtAuth: {extensionService: ''}\n")?.global_ext_auth.is_none(), "none named: off");
        let http = from_file(
            "globalExtAuth: {extensionService: a/b, serviceType: http, httpSettings: {pathPrefix: /check, allowedUpstreamHeaders: [{prefix: x-auth-}]}}\n",
        )?;
        let filter = frontends::httpproxy::global_authorization(&http.global_ext_auth.expect("set")).expect("a filter");
        let settings = filter.http.expect("the HTTP protocol");
        assert_eq!(settings.path_prefix, "/check");
        assert_eq!(settings.allowed_upstream_headers[0].pattern, ir::StringMatch::Prefix("x-auth-".into()));
        for bad in [
            "globalExtAuth: {extensionService: server}\n",
            "globalExtAuth: {extensionService: a/b, responseTimeout: soon}\n",
            "globalExtAuth: {extensionService: a/b, httpSettings: {pathPrefix: /x}}\n",
            "globalExtAuth: {extensionService: a/b, serviceType: http, httpSettings: {allowedUpstreamHeaders: [{}]}}\n",
            "globalExtAuth: {extensionService: a/b, serviceType: http, httpSettings: {nope: 1}}\n",
        ] {
            let e = from_file(bad).expect_err(bad);
            assert!(format!("{e:#}").contains("globalExtAuth"), "{e:#}");
        }
        Ok(())
    }

    #[test]
    fn tracing_takes_upstream_defaults_and_refuses_what_upstream_refuses() -> anyhow::Result<()> {
        let t = from_file("tracing: {extensionService: obs/otel}\n")?.tracing.expect("set");
        assert_eq!(
            (t.cluster.as_str(), t.service_name.as_str(), t.overall_sampling, t.max_path_tag_length),
            ("extension/obs/otel", "contour", 100.0, 256)
        );
        let env = |name: &str, variable: &str| xds::CustomTag {
            name: name.into(),
            value: xds::TagValue::Environment(variable.into()),
        };
        assert_eq!(t.custom_tags, [env("podName", "HOSTNAME"), env("podNamespace", "CONTOUR_NAMESPACE")]);
        let t = from_file(
            "tracing:\n  extensionService: obs/otel\n  includePodDetail: false\n  serviceName: shop\n  overallSampling: '12.5'\n  maxPathTagLength: 40\n  customTags: [{tagName: a, literal: x}, {tagName: b, requestHeaderName: X-Team}]\n",
        )?
        .tracing
        .expect("set");
        assert_eq!((t.service_name.as_str(), t.overall_sampling, t.max_path_tag_length), ("shop", 12.5, 40));
        let tags: Vec<_> = t.custom_tags.iter().map(|c| (c.name.as_str(), c.value.clone())).collect();
        assert_eq!(
            tags,
            [("a", xds::TagValue::Literal("x".into())), ("b", xds::TagValue::RequestHeader("x-team".into()))]
        );
        // Upstream reads a zero rate as 100.
        let t = from_file("tracing: {extensionService: obs/otel, overallSampling: '0'}\n")?.tracing.expect("set");
        assert_eq!(t.overall_sampling, 100.0);
        for (bad, key) in [
            ("tracing: {serviceName: shop}\n", "tracing.extensionService"),
            ("tracing: {extensionService: otel}\n", "tracing.extensionService"),
            ("tracing: {extensionService: a/b, overallSampling: lots}\n", "tracing.overallSampling"),
            ("tracing: {extensionService: a/b, overallSampling: '101'}\n", "tracing.overallSampling"),
            ("tracing: {extensionService: a/b, customTags: [{tagName: ''}]}\n", "tracing.customTags[0].tagName"),
            ("tracing: {extensionService: a/b, customTags: [{tagName: a}]}\n", "tracing.customTags[0]"),
            (
                "tracing: {extensionService: a/b, customTags: [{tagName: a, literal: x, requestHeaderName: y}]}\n",
                "tracing.customTags[0]",
            ),
            (
                "tracing: {extensionService: a/b, customTags: [{tagName: a, literal: x}, {tagName: a, literal: y}]}\n",
                "tracing.customTags[1].tagName",
            ),
            (
                "tracing: {extensionService: a/b, customTags: [{tagName: a, requestHeaderName: 'x y'}]}\n",
                "requestHeaderName",
            ),
            ("tracing: {extensionService: a/b, sampling: 5}\n", "sampling"),
        ] {
            let e = from_file(bad).expect_err(bad);
            assert!(format!("{e:#}").contains(key), "{bad}: {e:#}");
        }
        // The ContourConfiguration's, with the same rules.
        let mut args = Args::parse_from(["contour-serve"]);
        let spec: ContourConfigurationSpec = serde_json::from_value(serde_json::json!({
            "tracing": {"extensionService": {"namespace": "obs", "name": "otel"}, "overallSampling": "50"},
        }))?;
        apply_spec(&mut args, &Explicit::new(), &spec)?;
        assert_eq!(
            args.tracing.take().map(|t| (t.cluster, t.overall_sampling)),
            Some(("extension/obs/otel".into(), 50.0))
        );
        let spec: ContourConfigurationSpec = serde_json::from_value(serde_json::json!({
            "tracing": {"extensionService": {"namespace": "obs", "name": "otel"}, "overallSampling": "-1"},
        }))?;
        let e = apply_spec(&mut args, &Explicit::new(), &spec).expect_err("negative");
        assert!(format!("{e:#}").contains("spec.tracing.overallSampling"), "{e:#}");
        Ok(())
    }

    #[test]
    fn client_throttling_comes_from_the_file_unless_a_flag_says_otherwise() -> anyhow::Result<()> {
        let args = from_file("kubernetesClientQPS: 50\nkubernetesClientBurst: 100\n")?;
        let limits =
            kubeclient::Limits::from_settings(args.kubernetes_client_qps.map(f64::from), args.kubernetes_client_burst);
        assert_eq!(limits, Some(kubeclient::Limits { qps: 50.0, burst: 100 }));
        assert_eq!(from_file("{}\n")?.kubernetes_client_qps, None, "not throttled unless asked");
        let mut args = Args::parse_from(["contour-serve", "--kubernetes-client-qps", "7"]);
        let explicit: Explicit = ["kubernetes_client_qps".to_string()].into();
        let dir = std::env::temp_dir().join(format!("contour-serve-qps-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join("contour.yaml"), "kubernetesClientQPS: 50\n")?;
        args.config_path = Some(dir.join("contour.yaml"));
        let applied = apply_file(&mut args, &explicit);
        let _ = std::fs::remove_dir_all(&dir);
        applied?;
        assert_eq!(args.kubernetes_client_qps, Some(7.0), "the flag wins");
        Ok(())
    }

    #[test]
    fn route_statistics_follow_the_resource() -> anyhow::Result<()> {
        let mut args = Args::parse_from(["contour-serve"]);
        assert!(!args.enable_stat_prefix, "off by default, as upstream");
        let spec: ContourConfigurationSpec =
            serde_json::from_value(serde_json::json!({"envoy": {"enableStatPrefix": true}}))?;
        apply_spec(&mut args, &Explicit::new(), &spec)?;
        assert!(args.enable_stat_prefix);
        Ok(())
    }

    #[test]
    fn flags_win_and_bad_values_name_their_field() {
        let mut args = Args::parse_from(["contour-serve", "--xds-port", "9001"]);
        let explicit: Explicit = ["xds_port".to_string()].into();
        let spec: ContourConfigurationSpec = serde_json::from_value(serde_json::json!({
            "xdsServer": {"address": "0.0.0.0", "port": 7001},
            "debug": {"port": 7060},
        }))
        .unwrap();
        apply_spec(&mut args, &explicit, &spec).unwrap();
        assert_eq!(args.xds_port, 9001, "the flag wins");
        assert_eq!(args.xds_address.to_string(), "0.0.0.0");
        assert_eq!(args.debug_http_port, 7060);
        let bad: ContourConfigurationSpec =
            serde_json::from_value(serde_json::json!({"metrics": {"port": 70000}})).unwrap();
        let err = apply_spec(&mut args, &explicit, &bad).unwrap_err().to_string();
        assert!(err.contains("spec.metrics.port"), "{err}");
    }

    #[test]
    fn status_address_and_envoy_service_come_from_the_file_and_the_resource() {
        let text =
            "ingress-status-address: 192.0.2.1, 192.0.2.2\nenvoy-service-name: edge\nenvoy-service-namespace: infra\n";
        let mut args = from_file(text).unwrap();
        assert_eq!(args.ingress_status_address, ["192.0.2.1", "192.0.2.2"]);
        assert_eq!((args.envoy_service_namespace.as_str(), args.envoy_service_name.as_str()), ("infra", "edge"));
        let spec: ContourConfigurationSpec = serde_json::from_value(serde_json::json!({
            "ingress": {"statusAddress": "198.51.100.4", "classNames": ["internal"]},
            "envoy": {"service": {"name": "envoy-int", "namespace": "edge"}},
        }))
        .unwrap();
        let explicit: Explicit = ["envoy_service_name".to_string()].into();
        apply_spec(&mut args, &explicit, &spec).unwrap();
        assert_eq!(args.ingress_status_address, ["198.51.100.4"]);
        assert_eq!(args.ingress_class_name, ["internal"]);
        assert_eq!((args.envoy_service_namespace.as_str(), args.envoy_service_name.as_str()), ("edge", "edge"));
    }

    #[test]
    fn the_enforced_health_listener_comes_from_the_file_and_the_resource() {
        let mut args = from_file("omEnforcedHealthListener: {address: 127.0.0.1, port: 8003}\n").unwrap();
        assert_eq!(args.om_enforced_health.map(|a| a.to_string()).as_deref(), Some("127.0.0.1:8003"));
        let err = from_file("omEnforcedHealthListener: {address: 127.0.0.1}\n").unwrap_err().to_string();
        assert!(err.contains("omEnforcedHealthListener.port"), "{err}");
        let spec: ContourConfigurationSpec =
            serde_json::from_value(serde_json::json!({"envoy": {"omEnforcedHealth": {"port": 8004}}})).unwrap();
        apply_spec(&mut args, &Explicit::new(), &spec).unwrap();
        assert_eq!(args.om_enforced_health.map(|a| a.to_string()).as_deref(), Some("0.0.0.0:8004"));
    }

    #[test]
    fn envoy_metrics_come_from_the_file_and_the_resource() {
        let args = from_file("metrics:\n  envoy: {port: 8003, server-certificate-path: /c/tls.crt, server-key-path: /c/tls.key}\n  contour: {port: 9000}\n").unwrap();
        let m = args.envoy_metrics.clone().unwrap();
        assert_eq!(m.address.to_string(), "0.0.0.0:8003");
        assert_eq!(m.tls.map(|t| (t.cert_file, t.ca_file)), Some(("/c/tls.crt".into(), None)));
        assert_eq!(args.http_port, 9000);
        let err = from_file("metrics:\n  envoy: {server-certificate-path: /c/tls.crt, server-key-path: /c/tls.key}\n")
            .unwrap_err();
        assert!(err.to_string().contains("metrics.envoy") && err.to_string().contains("port of their own"), "{err}");
        let mut args = Args::parse_from(["contour-serve"]);
        let spec: ContourConfigurationSpec = serde_json::from_value(serde_json::json!({
            "envoy": {"health": {"port": 8010}, "metrics": {"address": "127.0.0.1", "port": 8011, "tls": {"certFile": "/c/t", "keyFile": "/c/k", "caFile": "/c/ca"}}}
        }))
        .unwrap();
        apply_spec(&mut args, &Explicit::new(), &spec).unwrap();
        assert_eq!(args.stats_port, 8010);
        let m = args.envoy_metrics.unwrap();
        assert_eq!(
            (m.address.to_string().as_str(), m.tls.and_then(|t| t.ca_file)),
            ("127.0.0.1:8011", Some("/c/ca".into()))
        );
    }

    #[test]
    fn merge_slashes_follow_the_file_and_the_resource() {
        let mut args = from_file("disableMergeSlashes: true\n").unwrap();
        assert!(args.disable_merge_slashes);
        let spec: ContourConfigurationSpec =
            serde_json::from_value(serde_json::json!({"envoy": {"listener": {"disableMergeSlashes": false}}})).unwrap();
        apply_spec(&mut args, &Explicit::new(), &spec).unwrap();
        assert!(!args.disable_merge_slashes);
    }
}
