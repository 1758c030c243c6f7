//! Ingress (networking.k8s.io/v1) into the default fleet, as upstream Contour translates it:
//! class selection (plus IngressClass objects naming our controller), rules and paths by
//! pathType, the default backend, TLS per host (with `projectcontour.io/tls-cert-namespace` and
//! TLSCertificateDelegation), and upstream's annotations. Ingress has no conditions: problems are
//! diagnostics (logged, and recorded as Events on the Ingress in Kubernetes mode).

#[cfg(test)]
mod tests;

use std::sync::Arc;

use ir::{
    Backend, BackendTarget, Diagnostic, HttpMatch, HttpRoute, HttpRule, Listener, ListenerTls, ObjectRef, Origin,
    PathMatch, Protocol, RetryPolicy, RoutePolicy, ServicePort, Severity, TlsMode, TlsVersion, reason,
};
use objects::types::{Ingress, IngressClass};
use objects::{ObjectKey, Snapshot};

use crate::shared::{HTTP_LISTENER, HTTPS_LISTENER};
use crate::{Translation, delegation};

pub use crate::class::DEFAULT_CLASS;

/// The `spec.controller` of IngressClasses this controller serves.
pub const INGRESS_CONTROLLER: &str = "projectcontour.io/ingress-controller";

/// Settings of the Ingress front end.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Ingress classes served (`--ingress-class-name`); empty: no class or `contour`.
    pub class_names: Vec<String>,
    /// The port Envoy serves plain HTTP on (`--envoy-service-http-port`).
    pub http_port: u16,
    /// The port Envoy serves HTTPS on (`--envoy-service-https-port`).
    pub https_port: u16,
    /// The global header policy, when `applyToIngress` says it applies to Ingress too.
    pub default_headers: Option<Arc<crate::DefaultHeaders>>,
}

impl Default for Options {
    fn default() -> Self {
        Self { class_names: Vec::new(), http_port: 8080, https_port: 8443, default_headers: None }
    }
}

/// An Ingress's class: the `projectcontour.io/ingress.class` annotation, else the
/// `kubernetes.io/ingress.class` annotation, else `spec.ingressClassName`.
pub fn class_of(ingress: &Ingress) -> Option<&str> {
    crate::class::of(&ingress.metadata, ingress.spec.as_ref().and_then(|s| s.ingress_class_name.as_deref()))
}

/// Whether this controller serves an Ingress: upstream's class rules, or an IngressClass whose
/// `spec.controller` is [`INGRESS_CONTROLLER`] named by the Ingress (or marked the default with
/// `ingressclass.kubernetes.io/is-default-class` for Ingresses without a class).
pub fn is_ours(snapshot: &Snapshot, ingress: &Ingress, class_names: &[String]) -> bool {
    let class = class_of(ingress);
    if crate::class::is_served(class, class_names) {
        return true;
    }
    let ours = |c: &IngressClass| c.spec.as_ref().and_then(|s| s.controller.as_deref()) == Some(INGRESS_CONTROLLER);
    match class {
        Some(name) => snapshot.ingress_classes.get(&ObjectKey::new("", name)).is_some_and(|c| ours(c)),
        None => snapshot.ingress_classes.values().any(|c| {
            ours(c)
                && c.metadata.annotations.as_ref().and_then(|a| a.get("ingressclass.kubernetes.io/is-default-class"))
                    == Some(&"true".to_string())
        }),
    }
}

/// Translates every Ingress of our class into listeners of the default fleet (named as the
/// HTTPProxy front end names them, so the two merge into the same virtual hosts).
pub fn translate(snapshot: &Snapshot, options: &Options) -> Translation {
    translate_cached(snapshot, options, &mut Cache::default())
}

/// Ingress translations kept between builds: an entry is reused while its Ingress is the same
/// `Arc` and no Service, Secret, TLSCertificateDelegation or IngressClass changed.
#[derive(Debug, Default)]
pub struct Cache {
    options: Option<Options>,
    inputs: Vec<usize>,
    ingresses: rustc_hash::FxHashMap<ObjectKey, CachedIngress>,
}

/// An Ingress (kept alive for identity) and what it became.
type CachedIngress = (Arc<Ingress>, Arc<(Translated, Vec<Diagnostic>)>);

/// [`translate`], reusing what `cache` holds from the previous build.
pub fn translate_cached(snapshot: &Snapshot, options: &Options, cache: &mut Cache) -> Translation {
    fn ptr<T>(p: &Arc<T>) -> usize {
        Arc::as_ptr(p) as *const () as usize
    }
    let inputs: Vec<usize> = (snapshot.services.values().map(ptr))
        .chain(snapshot.secrets.values().map(ptr))
        .chain(snapshot.tls_certificate_delegations.values().map(ptr))
        .chain(snapshot.ingress_classes.values().map(ptr))
        .collect();
    if cache.options.as_ref() != Some(options) || cache.inputs != inputs {
        *cache = Cache { options: Some(options.clone()), inputs, ..Default::default() };
    }
    cache.ingresses.retain(|k, (i, _)| snapshot.ingresses.get(k).is_some_and(|now| Arc::ptr_eq(now, i)));
    let mut diagnostics = Vec::new();
    let mut http_routes = Vec::new();
    let mut secure: Vec<Listener> = Vec::new();
    for (key, ingress) in snapshot.ingresses.iter() {
        if !is_ours(snapshot, ingress, &options.class_names) {
            continue;
        }
        let (_, entry) = cache.ingresses.entry(key.clone()).or_insert_with(|| {
            let mut found = Vec::new();
            let t = translate_one(snapshot, ingress, options.default_headers.as_deref(), &mut found);
            (Arc::clone(ingress), Arc::new((t, found)))
        });
        let (t, found) = &**entry;
        diagnostics.extend(found.iter().cloned());
        http_routes.extend(t.http.iter().cloned());
        for (host, tls, route) in t.secure.iter().cloned() {
            match secure.iter_mut().find(|l| l.hostname.as_deref() == Some(host.as_str())) {
                Some(l) => l.http_routes.push(route),
                None => secure.push(Listener {
                    name: format!("{HTTPS_LISTENER}/{host}"),
                    port: options.https_port,
                    protocol: Protocol::Https,
                    hostname: Some(host),
                    tls: Some(tls),
                    http_routes: vec![route],
                    tls_routes: Vec::new(),
                    l4_routes: Vec::new(),
                    pre_routing: Vec::new(),
                }),
            }
        }
    }
    let mut listeners = Vec::new();
    if !http_routes.is_empty() {
        listeners.push(Listener {
            name: HTTP_LISTENER.into(),
            port: options.http_port,
            protocol: Protocol::Http,
            hostname: None,
            tls: None,
            http_routes,
            tls_routes: Vec::new(),
            l4_routes: Vec::new(),
            pre_routing: Vec::new(),
        });
    }
    listeners.extend(secure);
    let fleets = if listeners.is_empty() { Vec::new() } else { vec![ir::Fleet::default_fleet(listeners, Vec::new())] };
    Translation { ir: ir::Ir { fleets, ..Default::default() }, diagnostics }
}

/// What one Ingress contributes: plain-HTTP routes, and per TLS host its TLS and routes.
#[derive(Debug)]
struct Translated {
    http: Vec<Arc<HttpRoute>>,
    secure: Vec<(String, ListenerTls, Arc<HttpRoute>)>,
}

/// Upstream's annotations, read once per Ingress.
struct Annotations {
    allow_http: bool,
    force_ssl_redirect: bool,
    timeout_ms: Option<u64>,
    retry: Option<RetryPolicy>,
    min_version: Option<TlsVersion>,
    max_version: Option<TlsVersion>,
    cert_namespace: Option<String>,
    websocket_paths: Vec<String>,
}

fn annotations(ingress: &Ingress, origin: &Origin, diagnostics: &mut Vec<Diagnostic>) -> Annotations {
    let get = |key: &str| ingress.metadata.annotations.as_ref().and_then(|a| a.get(key)).map(|v| v.trim());
    let mut invalid = |key: &str, value: &str, why: &str| {
        diagnostics.push(warning(origin, format!("metadata.annotations[{key}]"), format!("{value:?} {why}; ignored")));
    };
    let mut timeout = |key: &str| {
        let value = get(key)?;
        match crate::shared::timeouts::timeout(Some(value)) {
            Ok(t) => t,
            Err(_) => {
                invalid(key, value, "is not a duration");
                None
            }
        }
    };
    let timeout_ms =
        timeout("projectcontour.io/response-timeout").or_else(|| timeout("projectcontour.io/request-timeout"));
    let per_try = timeout("projectcontour.io/per-try-timeout");
    let retry_on = get("projectcontour.io/retry-on").filter(|v| !v.is_empty());
    let num_retries = match get("projectcontour.io/num-retries") {
        None => None,
        Some(v) => match v.parse::<i64>() {
            Ok(-1) => Some(0),
            Ok(n) if n >= 0 => Some(u32::try_from(n).unwrap_or(u32::MAX)),
            _ => {
                invalid("projectcontour.io/num-retries", v, "is not a number of retries");
                None
            }
        },
    };
    let retry = retry_on.map(|on| RetryPolicy {
        retry_on: on.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect(),
        count: num_retries.unwrap_or(1),
        per_try_timeout_ms: per_try,
        retriable_status_codes: Vec::new(),
        backoff_ms: None,
    });
    let mut version = |key: &str| match get(key) {
        None => None,
        Some("1.2") => Some(TlsVersion::V1_2),
        Some("1.3") => Some(TlsVersion::V1_3),
        Some(v) => {
            invalid(key, v, "is not a TLS version (1.2 or 1.3)");
            None
        }
    };
    let min_version = version("projectcontour.io/tls-minimum-protocol-version");
    let max_version = version("projectcontour.io/tls-maximum-protocol-version");
    Annotations {
        allow_http: get("kubernetes.io/ingress.allow-http") != Some("false"),
        force_ssl_redirect: get("ingress.kubernetes.io/force-ssl-redirect") == Some("true"),
        timeout_ms,
        retry,
        min_version,
        max_version,
        cert_namespace: get("projectcontour.io/tls-cert-namespace").filter(|v| !v.is_empty()).map(str::to_string),
        websocket_paths: get("projectcontour.io/websocket-routes")
            .map(|v| v.split(',').map(|p| p.trim().to_string()).filter(|p| !p.is_empty()).collect())
            .unwrap_or_default(),
    }
}

fn translate_one(
    snapshot: &Snapshot,
    ingress: &Ingress,
    defaults: Option<&crate::DefaultHeaders>,
    diagnostics: &mut Vec<Diagnostic>,
) -> Translated {
    let origin = crate::shared::origin("Ingress", &ingress.metadata);
    let a = annotations(ingress, &origin, diagnostics);
    let spec = ingress.spec.as_ref();
    let created = ingress.metadata.creation_timestamp.as_ref().map(|t| t.0.as_second()).unwrap_or(0);
    let shared_origin = Arc::new(origin.clone());

    // host -> rules, in spec order; the default backend first, as a catch-all for any host.
    let mut hosts: Vec<(String, Vec<HttpRule>)> = Vec::new();
    let mut add = |host: String, rule: HttpRule| match hosts.iter_mut().find(|(h, _)| *h == host) {
        Some((_, rules)) => rules.push(rule),
        None => hosts.push((host, vec![rule])),
    };
    if let Some(backend) = spec.and_then(|s| s.default_backend.as_ref()) {
        let field = "spec.defaultBackend".to_string();
        if let Some(b) = backend_of(snapshot, &origin, backend, defaults, field, diagnostics) {
            add("*".into(), rule(HttpMatch::default(), b, &a, "/"));
        }
    }
    for (i, r) in spec.and_then(|s| s.rules.as_ref()).into_iter().flatten().enumerate() {
        let host = r.host.as_deref().filter(|h| !h.is_empty()).unwrap_or("*").to_ascii_lowercase();
        for (j, p) in r.http.iter().flat_map(|h| &h.paths).enumerate() {
            let field = format!("spec.rules[{i}].http.paths[{j}]");
            let path = p.path.clone().filter(|p| !p.is_empty()).unwrap_or_else(|| "/".into());
            let Some(matcher) = path_match(&path, &p.path_type, &origin, &field, diagnostics) else { continue };
            let field = format!("{field}.backend");
            let Some(b) = backend_of(snapshot, &origin, &p.backend, defaults, field, diagnostics) else {
                continue;
            };
            add(host.clone(), rule(matcher, b, &a, &path));
        }
    }

    let mut out = Translated { http: Vec::new(), secure: Vec::new() };
    let tls_hosts = tls_hosts(snapshot, ingress, &origin, &a, diagnostics);
    for (host, mut rules) in hosts {
        if let Some(authority) = crate::wildcard_authority(&host) {
            for r in &mut rules {
                r.matches[0].headers.push(authority.clone());
            }
        }
        let hostnames = if host == "*" { Vec::new() } else { vec![host.clone()] };
        let route = |rules: Vec<HttpRule>| {
            Arc::new(HttpRoute {
                origin: Arc::clone(&shared_origin),
                created,
                hostnames: hostnames.clone(),
                rules,
                vhost: None,
            })
        };
        let tls = tls_hosts.iter().find(|(h, _)| *h == host).map(|(_, tls)| tls.clone());
        if a.force_ssl_redirect {
            out.http.push(route(rules.iter().map(crate::https_redirect).collect()));
        } else if a.allow_http {
            out.http.push(route(rules.clone()));
        }
        // Host `*` never gets HTTPS routes (upstream).
        if let Some(tls) = tls.filter(|_| host != "*") {
            out.secure.push((host.clone(), tls, route(rules)));
        }
    }
    out
}

/// The TLS hosts of an Ingress whose Secret can be used; the others are reported.
fn tls_hosts(
    snapshot: &Snapshot,
    ingress: &Ingress,
    origin: &Origin,
    a: &Annotations,
    diagnostics: &mut Vec<Diagnostic>,
) -> Vec<(String, ListenerTls)> {
    let mut out = Vec::new();
    for (i, tls) in ingress.spec.as_ref().and_then(|s| s.tls.as_ref()).into_iter().flatten().enumerate() {
        let Some(name) = tls.secret_name.as_deref().filter(|n| !n.is_empty()) else { continue };
        let namespace = a.cert_namespace.as_deref().unwrap_or(&origin.namespace);
        let field = format!("spec.tls[{i}].secretName");
        if !delegation::permitted(snapshot, namespace, name, &origin.namespace) {
            let message = format!("Secret {namespace}/{name}: certificate delegation not permitted");
            diagnostics.push(error(origin, field, reason::DELEGATION_NOT_PERMITTED, message));
            continue;
        }
        let secret = snapshot.secrets.get(&ObjectKey::new(namespace, name));
        if let Err(e) = objects::secrets::tls_pair(secret.map(|s| &**s)) {
            diagnostics.push(error(
                origin,
                field,
                reason::SECRET_NOT_VALID,
                format!("Secret {namespace}/{name} is invalid: {e}"),
            ));
            continue;
        }
        let certificate = ObjectRef { namespace: namespace.into(), name: name.into() };
        for host in tls.hosts.iter().flatten() {
            let mut settings = ListenerTls::new(TlsMode::Terminate, vec![certificate.clone()]);
            settings.min_version = a.min_version;
            settings.max_version = a.max_version;
            out.push((host.to_ascii_lowercase(), settings));
        }
    }
    out
}

/// The path condition for a path and its type: `Prefix` is segment-aware, `Exact` exact, and
/// `ImplementationSpecific` a regex when the path has any of `^+*[]%`, else a string prefix.
fn path_match(
    path: &str,
    path_type: &str,
    origin: &Origin,
    field: &str,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<HttpMatch> {
    let path = match path_type {
        "Exact" => PathMatch::Exact(path.into()),
        "Prefix" => PathMatch::Prefix(path.into()),
        _ if path.contains(['^', '+', '*', '[', ']', '%']) => match crate::shared::regex::check_regex(path.into()) {
            Ok(regex) => PathMatch::Regex(regex),
            Err(e) => {
                diagnostics.push(error(origin, format!("{field}.path"), reason::INVALID_PATH, e));
                return None;
            }
        },
        _ => PathMatch::StringPrefix(path.into()),
    };
    if !matches!(path, PathMatch::Regex(_)) && !path_text(&path).starts_with('/') {
        let message = format!("path {:?} must start with /", path_text(&path));
        diagnostics.push(error(origin, format!("{field}.path"), reason::INVALID_PATH, message));
        return None;
    }
    Some(HttpMatch { path, ..HttpMatch::default() })
}

fn path_text(path: &PathMatch) -> &str {
    match path {
        PathMatch::Exact(p) | PathMatch::Prefix(p) | PathMatch::StringPrefix(p) | PathMatch::Regex(p) => p,
    }
}

/// A Service backend, its port given by number or by name; `None` (reported) when it cannot be
/// resolved, so the path is not served, as upstream.
fn backend_of(
    snapshot: &Snapshot,
    origin: &Origin,
    backend: &k8s_openapi::api::networking::v1::IngressBackend,
    defaults: Option<&crate::DefaultHeaders>,
    field: String,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<Backend> {
    let Some(service) = &backend.service else {
        diagnostics.push(error(
            origin,
            field,
            reason::UNSUPPORTED_BACKEND,
            "only Service backends are supported".into(),
        ));
        return None;
    };
    let name = &service.name;
    let Some(object) = snapshot.services.get(&ObjectKey::new(&origin.namespace, name)) else {
        let message = format!("Service {}/{name} does not exist", origin.namespace);
        diagnostics.push(error(origin, field, reason::SERVICE_NOT_FOUND, message));
        return None;
    };
    let ports = object.spec.as_ref().and_then(|s| s.ports.as_ref());
    let wanted = service.port.as_ref();
    let port = ports.into_iter().flatten().find(|p| match wanted {
        Some(w) if w.number.is_some() => w.number == Some(p.port),
        Some(w) => w.name.is_some() && w.name == p.name,
        None => false,
    });
    let Some(port) = port.and_then(|p| u16::try_from(p.port).ok()) else {
        let message = format!("Service {}/{name} has no such port", origin.namespace);
        diagnostics.push(error(origin, format!("{field}.service.port"), reason::SERVICE_PORT_INVALID, message));
        return None;
    };
    // The global header policy, when it applies to Ingress (`applyToIngress`); checked at start-up.
    let options = defaults.and_then(|d| crate::shared::headers::backend_headers(d, &origin.namespace, name, port));
    let target = ServicePort { namespace: origin.namespace.clone(), name: name.clone(), port };
    Some(Backend { target: BackendTarget::Service(target), weight: 1, options: options.map(Arc::new) })
}

/// A rule forwarding `matcher` to `backend` with the Ingress's annotations applied.
fn rule(matcher: HttpMatch, backend: Backend, a: &Annotations, path: &str) -> HttpRule {
    HttpRule {
        matches: vec![matcher],
        filters: Vec::new(),
        backends: vec![backend],
        request_timeout_ms: a.timeout_ms,
        policy: RoutePolicy {
            retry: a.retry.clone(),
            websockets: a.websocket_paths.iter().any(|p| p == path),
            ..Default::default()
        },
    }
}

fn error(origin: &Origin, field: String, reason: &'static str, message: String) -> Diagnostic {
    Diagnostic { origin: origin.clone(), severity: Severity::Error, condition: "", field, reason, message }
}

fn warning(origin: &Origin, field: String, message: String) -> Diagnostic {
    let reason = reason::INVALID_ANNOTATION;
    Diagnostic { origin: origin.clone(), severity: Severity::Warning, condition: "", field, reason, message }
}
