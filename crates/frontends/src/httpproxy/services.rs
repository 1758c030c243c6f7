//! Services of routes and tcpproxies: lookup in the proxy's namespace, port, protocol, upstream
//! validation, per-service headers, weights and mirrors.

use std::sync::Arc;

use api::httpproxy::{HTTPProxy, Service, TCPProxy};
use ir::{
    Backend, BackendOptions, BackendTarget, ListenerTls, LoadBalancer, ObjectRef, Origin, Protocol, ServicePort,
    SlowStart, TlsMode, TlsRoute, UpstreamProtocol, UpstreamValidation, reason,
};
use objects::ObjectKey;

use super::policy;
use super::{HTTPS_LISTENER, Translator};
use crate::delegation;
use crate::shared::headers::{self, Variables};

/// A Service and its port matching `port` by number, or by a name that is the number written out.
fn service_port<'a>(
    t: &Translator<'a>,
    namespace: &str,
    name: &str,
    port: i32,
) -> Option<(&'a objects::types::Service, &'a k8s_openapi::api::core::v1::ServicePort)> {
    let service = t.service(namespace, name)?;
    let wanted = port.to_string();
    let ports = service.spec.as_ref()?.ports.as_ref()?;
    let found = ports.iter().find(|p| p.port == port || p.name.as_deref() == Some(wanted.as_str()))?;
    Some((service, found))
}

/// Why a port of a Service cannot be used (upstream's words).
fn lookup(t: &Translator<'_>, namespace: &str, name: &str, port: i32) -> Result<(), String> {
    let Some(service) = t.service(namespace, name) else {
        return Err(format!("service \"{namespace}/{name}\" not found"));
    };
    if let Err(why) = objects::services::external_name(service, t.options.enable_external_name_service) {
        return Err(format!("{namespace}/{name} {why}"));
    }
    let wanted = port.to_string();
    match service_port(t, namespace, name, port).map(|(_, p)| p) {
        None => Err(format!("port \"{wanted}\" on service \"{namespace}/{name}\" not matched")),
        Some(p) if !matches!(p.protocol.as_deref(), None | Some("") | Some("TCP")) => {
            Err(format!("unsupported service protocol {:?}", p.protocol.as_deref().unwrap_or_default()))
        }
        Some(_) => Ok(()),
    }
}

/// Route settings that change how its services are read.
#[derive(Clone, Copy)]
pub(super) struct RouteSettings<'a> {
    /// The route's load-balancing strategy (slow start needs round robin or least request).
    pub load_balancer: LoadBalancer,
    /// Whether the route has an active health check (only then does `healthPort` count).
    pub health_checked: bool,
    /// The route's literal Host rewrite, the server name for TLS backends.
    pub host: Option<&'a str>,
}

/// The outcome of a route's services.
pub(super) struct RouteServices {
    pub backends: Vec<Backend>,
    pub mirror: Option<Backend>,
}

/// A route's services; `Err` when an error drops the proxy's routes (recorded). Unresolved
/// services are recorded and skipped.
pub(super) fn route(
    t: &mut Translator<'_>,
    origin: &Origin,
    field: &str,
    services: &[Service],
    settings: RouteSettings<'_>,
) -> Result<RouteServices, ()> {
    let mut out = RouteServices { backends: Vec::new(), mirror: None };
    for (i, s) in services.iter().enumerate() {
        let field = format!("{field}.services[{i}]");
        let Some(backend) = service(t, origin, &field, s, settings)? else { continue };
        if s.mirror == Some(true) {
            if out.mirror.is_some() {
                let message = "only one service per route may be nominated as mirror".into();
                t.error(origin, "ServiceError", &field, reason::ONLY_ONE_MIRROR, message);
                return Err(());
            }
            out.mirror = Some(backend);
        } else {
            out.backends.push(backend);
        }
    }
    // All weights zero (or none given): equal shares, as upstream.
    if out.backends.iter().all(|b| b.weight == 0) {
        for b in &mut out.backends {
            b.weight = 1;
        }
    }
    Ok(out)
}

/// One service: `Ok(None)` when unresolved (recorded), `Err` when the proxy's routes must go.
fn service(
    t: &mut Translator<'_>,
    origin: &Origin,
    field: &str,
    s: &Service,
    settings: RouteSettings<'_>,
) -> Result<Option<Backend>, ()> {
    let namespace = origin.namespace.as_str();
    let Some(port) = u16::try_from(s.port).ok().filter(|p| *p != 0) else {
        let message = format!("service {:?}: port must be in the range 1-65535", s.name);
        t.error(origin, "ServiceError", field, reason::SERVICE_PORT_INVALID, message);
        return Err(());
    };
    let health_port = s
        .health_port
        .filter(|_| settings.health_checked)
        .and_then(|p| u16::try_from(p).ok())
        .filter(|p| *p != 0 && *p != port);
    let checked = lookup(t, namespace, &s.name, s.port)
        .and_then(|()| health_port.map_or(Ok(()), |hp| lookup(t, namespace, &s.name, i32::from(hp))));
    if let Err(e) = checked {
        let message = format!("Spec.Routes unresolved service reference: {e}");
        t.error(origin, "ServiceError", field, reason::SERVICE_UNRESOLVED_REFERENCE, message);
        return Ok(None);
    }
    let protocol = match s.protocol.as_deref() {
        None | Some("") => None,
        Some("h2") => Some(UpstreamProtocol::H2),
        Some("h2c") => Some(UpstreamProtocol::H2c),
        Some("tls") => Some(UpstreamProtocol::Tls),
        Some(other) => {
            t.error(
                origin,
                "ServiceError",
                field,
                reason::UNSUPPORTED_PROTOCOL,
                format!("unsupported protocol: {other}"),
            );
            return Err(());
        }
    };
    // Validation applies when the backend speaks TLS, whether the route or the Service says so.
    let tls = match protocol {
        Some(p) => matches!(p, UpstreamProtocol::Tls | UpstreamProtocol::H2),
        None => service_port(t, namespace, &s.name, s.port).is_some_and(|(service, port)| {
            matches!(
                objects::services::app_protocol(service, port),
                Some(objects::services::AppProtocol::Tls | objects::services::AppProtocol::H2)
            )
        }),
    };
    let validation = match &s.validation {
        Some(v) if tls => Some(validation(t, origin, field, s, port, v)?),
        _ => None,
    };
    let vars = Variables { namespace, service: Some((&s.name, port)) };
    let headers = &s.headers;
    let defaults = t.options.default_headers.as_deref();
    let request = headers::headers(headers.request_headers_policy.as_ref(), true, &vars);
    let request = match defaults {
        Some(d) => request.and_then(|own| Ok(own.with_defaults(headers::headers(Some(&d.request), true, &vars)?))),
        None => request,
    };
    let request = request.and_then(|h| match h.host {
        // A service sets a literal Host; copying one from a request header is a route's policy.
        Some(Err(header)) => Err(format!("rewriting \"Host\" from %REQ({header})% is only supported on routes")),
        Some(Ok(host)) => Ok((h.modifier, Some(host))),
        None => Ok((h.modifier, None)),
    });
    let (request, host_rewrite) = request.map_err(|e| {
        t.error(
            origin,
            "ServiceError",
            field,
            reason::REQUEST_HEADERS_POLICY_INVALID,
            format!("{e} on request headers"),
        );
    })?;
    let response = headers::headers(headers.response_headers_policy.as_ref(), false, &vars);
    let response = match defaults {
        Some(d) => response.and_then(|own| Ok(own.with_defaults(headers::headers(Some(&d.response), false, &vars)?))),
        None => response,
    };
    let response = response.map_err(|e| {
        t.error(
            origin,
            "ServiceError",
            field,
            reason::RESPONSE_HEADERS_POLICY_INVALID,
            format!("{e} on response headers"),
        );
    })?;
    let cookie_rewrites = super::filters::cookie_rewrites(headers.cookie_rewrite_policies.as_deref()).map_err(|e| {
        let message = format!("{e} on service cookie rewrite rules");
        t.error(origin, "RouteError", field, reason::COOKIE_REWRITE_POLICIES_INVALID, message);
    })?;
    let slow_start = match &s.slow_start_policy {
        None => None,
        Some(p) => Some(slow_start(p, settings.load_balancer).map_err(|e| {
            t.error(origin, "ServiceError", field, reason::SLOW_START_INVALID, e);
        })?),
    };
    let outlier_detection = match s.outlier_detection.as_ref().filter(|o| o.disabled != Some(true)) {
        // A service of its own says nothing: the installation's default, if any.
        None if s.outlier_detection.is_none() => t.options.default_outlier_detection,
        None => None,
        Some(o) => Some(outlier_detection(o).map_err(|e| {
            t.error(origin, "ServiceError", &format!("{field}.outlierDetection"), reason::OUTLIER_DETECTION_INVALID, e);
        })?),
    };
    // TLS to the backend names the host it is sent to (the service's Host, else the route's).
    let sni = host_rewrite.clone().or_else(|| settings.host.map(str::to_string)).filter(|_| tls);
    let options = BackendOptions {
        protocol,
        validation,
        request_headers: request,
        response_headers: response.modifier,
        slow_start,
        health_port,
        host_rewrite,
        sni,
        cookie_rewrites,
        outlier_detection,
    };
    let weight = match (s.mirror, s.weight) {
        // A mirror's weight is the share of requests mirrored; unset or 0 means all.
        (Some(true), w) => w.filter(|w| (1..=100).contains(w)).unwrap_or(100) as u32,
        (_, w) => w.unwrap_or(0).clamp(0, i64::from(u32::MAX)) as u32,
    };
    Ok(Some(Backend {
        target: BackendTarget::Service(ServicePort { namespace: namespace.into(), name: s.name.clone(), port }),
        weight,
        options: (options != BackendOptions::default()).then(|| Arc::new(options)),
    }))
}

/// A service's slow start, valid only with round robin or least request (upstream's rule).
fn slow_start(p: &api::httpproxy::SlowStartPolicy, load_balancer: LoadBalancer) -> Result<SlowStart, String> {
    if !matches!(load_balancer, LoadBalancer::RoundRobin | LoadBalancer::WeightedLeastRequest) {
        return Err(
            "slow start is only supported with RoundRobin or WeightedLeastRequest load balancer strategy".into()
        );
    }
    let window_ms = crate::shared::timeouts::go_duration_ms(&p.window)
        .ok_or_else(|| format!("error parsing window: time: invalid duration {:?} on slow start", p.window))?;
    let aggression = p.aggression.as_deref().unwrap_or("1.0");
    let aggression_milli = aggression
        .parse::<f64>()
        .ok()
        .filter(|a| a.is_finite() && *a > 0.0)
        .map(|a| (a * 1000.0).round() as u32)
        .ok_or_else(|| format!("error parsing aggression: \"{aggression}\" is not a decimal number on slow start"))?;
    Ok(SlowStart { window_ms, aggression_milli, min_weight_percent: p.min_weight_percent.unwrap_or(10).min(100) })
}

/// A service's passive health checks, with the defaults of upstream's design for the field
/// (also the installation's default, `cluster.outlier-detection`, checked at start-up).
pub fn outlier_detection(o: &api::httpproxy::OutlierDetection) -> Result<ir::OutlierDetection, String> {
    let duration = |name: &str, value: Option<&String>, default: u64| match value {
        None => Ok(default),
        Some(v) => crate::shared::timeouts::go_duration_ms(v)
            .ok_or_else(|| format!("error parsing {name}: time: invalid duration {v:?} on outlier detection")),
    };
    let max_ejection_percent = o.max_ejection_percent.unwrap_or(10);
    if max_ejection_percent > 100 {
        return Err(format!("maxEjectionPercent {max_ejection_percent} is over 100 on outlier detection"));
    }
    let interval_ms = duration("interval", o.interval.as_ref(), 10_000)?;
    if interval_ms == 0 {
        return Err("interval must be more than 0s on outlier detection".into());
    }
    let base_ejection_ms = duration("baseEjectionTime", o.base_ejection_time.as_ref(), 30_000)?;
    // Envoy's rule: the longest ejection is never shorter than the first.
    let max_ejection_ms = duration("maxEjectionTime", o.max_ejection_time.as_ref(), 300_000)?.max(base_ejection_ms);
    Ok(ir::OutlierDetection {
        consecutive_server_errors: o.consecutive_server_errors.unwrap_or(5),
        interval_ms,
        base_ejection_ms,
        max_ejection_ms,
        split_local_origin: o.split_external_local_origin_errors == Some(true),
        consecutive_local_origin_failures: o.consecutive_local_origin_failure.unwrap_or(5),
        max_ejection_percent,
        jitter_ms: duration("maxEjectionTimeJitter", o.max_ejection_time_jitter.as_ref(), 0)?,
    })
}

fn validation(
    t: &mut Translator<'_>,
    origin: &Origin,
    field: &str,
    s: &Service,
    port: u16,
    v: &api::httpproxy::UpstreamValidation,
) -> Result<UpstreamValidation, ()> {
    let (namespace, name) = delegation::resolve(&v.ca_secret, &origin.namespace);
    if !delegation::permitted(t.snapshot, namespace, name, &origin.namespace) {
        let message = format!(
            "service.UpstreamValidation.CACertificate Secret {:?} is not configured for certificate delegation",
            v.ca_secret
        );
        t.error(origin, "TLSError", field, reason::CA_CERTIFICATE_NOT_DELEGATED, message);
        return Err(());
    }
    let fail = |t: &mut Translator<'_>, detail: String| {
        let message = format!("Service [{}:{port}] TLS upstream validation policy error: {detail}", s.name);
        t.error(origin, "ServiceError", field, reason::TLS_UPSTREAM_VALIDATION, message);
        Err(())
    };
    let secret = t.secret(namespace, name);
    if let Err(e) = objects::secrets::ca_bundle(secret.map(|s| &**s)) {
        return fail(t, format!("invalid CA Secret \"{namespace}/{name}\": {e}"));
    }
    let subject_names = match crate::shared::subject_names(v) {
        Ok(names) => names,
        Err(detail) => return fail(t, detail),
    };
    Ok(UpstreamValidation {
        ca: ObjectRef { namespace: namespace.into(), name: name.into() },
        ca_kind: ir::CaKind::Secret,
        subject_names,
        subject_uris: Vec::new(),
    })
}

/// A root's tcpproxy as a listener of the HTTPS port: passthrough by SNI, or TLS terminated and
/// the stream forwarded. `Err` when an error stops the root (recorded); `Ok(None)` when the chain
/// ends in a proxy without a tcpproxy (nothing to forward, as upstream).
pub(super) fn tcp_proxy(
    t: &mut Translator<'_>,
    root: &HTTPProxy,
    origin: &Origin,
    tcp: &TCPProxy,
    tls: &ListenerTls,
    fqdn: &str,
) -> Result<Option<ir::Listener>, ()> {
    let mut visited = vec![ObjectKey::of(&root.metadata)];
    let mut backends = tcp_backends(t, origin, tcp, &mut visited).ok_or(())?;
    if backends.is_empty() {
        return Ok(None);
    }
    // All weights zero (or none given): equal shares, as upstream.
    if backends.iter().all(|b| b.weight == 0) {
        for b in &mut backends {
            b.weight = 1;
        }
    }
    // Load balancing (Cookie and RequestHash make no sense for a stream) and health checks.
    let (load_balancer, _, _) = policy::load_balancer(tcp.load_balancer_policy.as_ref());
    let load_balancer =
        if load_balancer == LoadBalancer::RequestHash { LoadBalancer::RoundRobin } else { load_balancer };
    let health_check = policy::tcp_health_check(tcp.health_check_policy.as_ref());
    let policy = ir::ClusterPolicy { load_balancer, health_check, idle_connection_timeout_ms: None };
    let route = TlsRoute { origin: origin.clone(), hostnames: vec![fqdn.to_string()], created: 0, backends, policy };
    Ok(Some(ir::Listener {
        name: format!("{HTTPS_LISTENER}/{fqdn}"),
        port: t.options.https_port,
        protocol: if tls.mode == TlsMode::Passthrough { Protocol::Tls } else { Protocol::Https },
        hostname: Some(fqdn.to_string()),
        tls: Some(tls.clone()),
        http_routes: Vec::new(),
        tls_routes: vec![Arc::new(route)],
        l4_routes: Vec::new(),
        pre_routing: Vec::new(),
    }))
}

/// The backends of a tcpproxy, following its include chain.
fn tcp_backends(
    t: &mut Translator<'_>,
    origin: &Origin,
    tcp: &TCPProxy,
    visited: &mut Vec<ObjectKey>,
) -> Option<Vec<Backend>> {
    let field = "spec.tcpproxy";
    let include = tcp.include.as_ref().or(tcp.includes.as_ref());
    let services = tcp.services.as_deref().unwrap_or_default();
    if !services.is_empty() && include.is_some() {
        let message = "cannot specify services and include in the same httpproxy".into();
        t.error(origin, "TCPProxyError", field, reason::NO_SERVICES_AND_INCLUDE, message);
        return None;
    }
    if let Some(strategy @ ("Cookie" | "RequestHash")) =
        tcp.load_balancer_policy.as_ref().and_then(|p| p.strategy.as_deref())
    {
        let message = format!(
            "ignoring field \"Spec.TCPProxy.LoadBalancerPolicy\"; {strategy} load balancer policy is not supported for TCPProxies"
        );
        t.warning(origin, "TCPProxyError", field, reason::IGNORED_FIELD, message);
    }
    if !services.is_empty() {
        let mut backends = Vec::new();
        for s in services {
            if let Err(e) = lookup(t, &origin.namespace, &s.name, s.port) {
                let message = format!("Spec.TCPProxy unresolved service reference: {e}");
                t.error(origin, "TCPProxyError", field, reason::SERVICE_UNRESOLVED_REFERENCE, message);
                return None;
            }
            let port = u16::try_from(s.port).ok()?;
            // Only `tls` (re-encryption, with the backend's certificate checked) changes a stream.
            let tls = match s.protocol.as_deref() {
                None | Some("" | "h2" | "h2c") => false,
                Some("tls") => true,
                Some(other) => {
                    let message = format!("unsupported protocol: {other}");
                    t.error(origin, "ServiceError", field, reason::UNSUPPORTED_PROTOCOL, message);
                    return None;
                }
            };
            let validation = match &s.validation {
                Some(v) if tls => Some(validation(t, origin, field, s, port, v).ok()?),
                _ => None,
            };
            let options = tls.then(|| {
                Arc::new(BackendOptions { protocol: Some(UpstreamProtocol::Tls), validation, ..Default::default() })
            });
            backends.push(Backend {
                target: BackendTarget::Service(ServicePort {
                    namespace: origin.namespace.clone(),
                    name: s.name.clone(),
                    port,
                }),
                weight: s.weight.unwrap_or(0).clamp(0, i64::from(u32::MAX)) as u32,
                options,
            });
        }
        return Some(backends);
    }
    let Some(include) = include else {
        let message = "either services or inclusion must be specified".into();
        t.error(origin, "TCPProxyError", field, reason::NOTHING_DEFINED, message);
        return None;
    };
    let namespace = include.namespace.clone().unwrap_or_else(|| origin.namespace.clone());
    let key = ObjectKey::new(&namespace, &include.name);
    let Some(child) = t.lookup(&key) else {
        let message = format!("include {namespace}/{} not found", include.name);
        t.error(origin, "TCPProxyIncludeError", field, reason::INCLUDE_NOT_FOUND, message);
        return None;
    };
    if child.spec.virtualhost.is_some() {
        let message = format!("root httpproxy cannot include another root httpproxy ({namespace}/{})", include.name);
        t.error(origin, "TCPProxyIncludeError", field, reason::ROOT_INCLUDES_ROOT, message);
        return None;
    }
    t.reach(&key);
    if visited.contains(&key) {
        let chain: Vec<String> = visited.iter().chain([&key]).map(|k| k.to_string()).collect();
        let message = format!("include creates a cycle: {}", chain.join(" -> "));
        t.error(origin, "TCPProxyIncludeError", field, reason::INCLUDE_CREATES_CYCLE, message);
        return None;
    }
    visited.push(key);
    let child_origin = super::origin(child);
    match &child.spec.tcpproxy {
        Some(tcp) => tcp_backends(t, &child_origin, tcp, visited),
        None => Some(Vec::new()),
    }
}
