//! The default fleet's IR written as Gateway API objects: the Gateway and its listeners, one
//! HTTPRoute per object and host (and listener), TLSRoutes, the ReferenceGrants that let them
//! reach across namespaces, and BackendTLSPolicies.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use ir::{Backend, BackendTarget, HttpRoute, Listener, Origin, Protocol, TlsMode};
use objects::Snapshot;
use serde_json::{Value, json};

use crate::matches;
use crate::{Finding, Options};

const API_VERSION: &str = "gateway.networking.k8s.io/v1";
/// The Gateway API's limits on one HTTPRoute: rules, and matches over all its rules.
const MAX_RULES: usize = 16;
const MAX_MATCHES: usize = 128;
/// The Gateway API's limit on a Gateway's listeners.
const MAX_LISTENERS: usize = 64;

/// A listener of the Gateway written.
struct GatewayListener {
    name: String,
    protocol: &'static str,
    port: u16,
    hostname: Option<String>,
    mode: Option<&'static str>,
    certificates: Vec<ir::ObjectRef>,
}

/// An HTTPRoute to write: which IR route, on which listener.
struct RouteEntry<'a> {
    route: &'a Arc<HttpRoute>,
    section: String,
    secure: bool,
    port: u16,
}

/// Unique names per (kind, namespace).
#[derive(Default)]
struct Names(BTreeSet<(&'static str, String, String)>);

impl Names {
    fn take(&mut self, kind: &'static str, namespace: &str, base: &str) -> String {
        let base = dns_name(base);
        let mut name = base.clone();
        let mut n = 2;
        while !self.0.insert((kind, namespace.to_string(), name.clone())) {
            name = format!("{base}-{n}");
            n += 1;
        }
        name
    }
}

/// A name usable as an object or listener name: lower case, `*` spelled out, at most 253.
fn dns_name(text: &str) -> String {
    let text = text.replace('*', "wildcard").to_ascii_lowercase();
    let cleaned: String =
        text.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '.' { c } else { '-' }).collect();
    cleaned.trim_matches(|c| c == '-' || c == '.').chars().take(253).collect()
}

fn describe(origin: &Origin) -> String {
    format!("{} {}/{}", origin.kind, origin.namespace, origin.name)
}

/// What a route's parentRef says, for a listener of the Gateway written or of the one named.
fn parent_ref(options: &Options, section: &str, port: u16) -> Value {
    match &options.gateway {
        Some((namespace, name)) => json!({"name": name, "namespace": namespace, "port": port}),
        None => json!({"name": options.gateway_name, "namespace": options.gateway_namespace, "sectionName": section}),
    }
}

/// Everything the routes need beyond themselves, gathered while they are written.
#[derive(Default)]
struct Needs {
    /// (target namespace) → (from kind, from namespace, to kind, to name).
    grants: BTreeMap<String, BTreeSet<(String, String, String, String)>>,
    /// Services spoken to over TLS with verification: (namespace, name) → (CA, hostname).
    backend_tls: BTreeMap<(String, String), (ir::ObjectRef, String)>,
}

/// Writes the objects of the default fleet.
pub(crate) fn objects(ir: &ir::Ir, snapshot: &Snapshot, options: &Options, report: &mut Vec<Finding>) -> Vec<Value> {
    let Some(fleet) = ir.fleets.iter().find(|f| f.id == ir::DEFAULT_FLEET) else { return Vec::new() };
    let mut listeners: Vec<GatewayListener> = Vec::new();
    let mut http: Vec<RouteEntry<'_>> = Vec::new();
    let mut tls: Vec<(&Arc<ir::TlsRoute>, String, u16)> = Vec::new();
    for l in &fleet.listeners {
        if l.name.ends_with("/fallback") || (l.http_routes.is_empty() && l.tls_routes.is_empty()) {
            continue;
        }
        let host = l.hostname.clone().unwrap_or_default();
        let certificates = l.tls.as_ref().map(|t| t.certificates.clone()).unwrap_or_default();
        let listener = match (l.protocol, l.tls.as_ref().map(|t| t.mode)) {
            (Protocol::Http, _) => GatewayListener::new("http", "HTTP", l, None, Vec::new()),
            (Protocol::Https, _) if !l.http_routes.is_empty() => {
                GatewayListener::new(&format!("https-{host}"), "HTTPS", l, Some("Terminate"), certificates)
            }
            (Protocol::Https, _) => {
                GatewayListener::new(&format!("tls-{host}"), "TLS", l, Some("Terminate"), certificates)
            }
            (_, Some(TlsMode::Passthrough)) => {
                GatewayListener::new(&format!("tls-{host}"), "TLS", l, Some("Passthrough"), Vec::new())
            }
            _ => continue,
        };
        for route in &l.http_routes {
            let secure = l.protocol != Protocol::Http;
            http.push(RouteEntry { route, section: listener.name.clone(), secure, port: l.port });
        }
        for route in &l.tls_routes {
            tls.push((route, listener.name.clone(), l.port));
        }
        listeners.push(listener);
    }
    if listeners.is_empty() {
        return Vec::new();
    }
    let mut needs = Needs::default();
    let mut names = Names::default();
    let mut routes = http_routes(&http, options, &mut names, &mut needs, report);
    routes.extend(tls_routes(&tls, options, &mut names, &mut needs));
    let mut out = Vec::new();
    match &options.gateway {
        None => {
            out.push(gateway(&listeners, options, report));
            for l in &listeners {
                for c in l.certificates.iter().filter(|c| c.namespace != options.gateway_namespace) {
                    let from = ("Gateway".to_string(), options.gateway_namespace.clone());
                    let to = ("Secret".to_string(), c.name.clone());
                    needs.grants.entry(c.namespace.clone()).or_default().insert((from.0, from.1, to.0, to.1));
                }
            }
        }
        Some((namespace, name)) => {
            for l in listeners.iter().filter(|l| l.mode.is_some()) {
                let certificates: Vec<String> =
                    l.certificates.iter().map(|c| format!("Secret {}/{}", c.namespace, c.name)).collect();
                let with =
                    if certificates.is_empty() { String::new() } else { format!(" with {}", certificates.join(", ")) };
                report.push(Finding::new(
                    format!("Gateway {namespace}/{name}"),
                    "spec.listeners",
                    format!(
                        "needs a {} listener on port {} for {}{with} ({})",
                        l.protocol,
                        l.port,
                        l.hostname.as_deref().unwrap_or("every host"),
                        l.mode.unwrap_or_default()
                    ),
                ));
            }
        }
    }
    out.extend(reference_grants(&needs));
    out.extend(routes);
    out.extend(backend_tls_policies(&needs, snapshot, &mut names, report));
    out
}

impl GatewayListener {
    fn new(
        name: &str,
        protocol: &'static str,
        l: &Listener,
        mode: Option<&'static str>,
        certificates: Vec<ir::ObjectRef>,
    ) -> Self {
        Self { name: dns_name(name), protocol, port: l.port, hostname: l.hostname.clone(), mode, certificates }
    }
}

fn gateway(listeners: &[GatewayListener], options: &Options, report: &mut Vec<Finding>) -> Value {
    if listeners.len() > MAX_LISTENERS {
        report.push(Finding::new(
            format!("Gateway {}/{}", options.gateway_namespace, options.gateway_name),
            "spec.listeners",
            format!(
                "{} listeners, more than the Gateway API's {MAX_LISTENERS}: move some hosts to a ListenerSet",
                listeners.len()
            ),
        ));
    }
    let listeners: Vec<Value> = listeners
        .iter()
        .map(|l| {
            let mut out = json!({
                "name": l.name, "protocol": l.protocol, "port": l.port,
                "allowedRoutes": {"namespaces": {"from": "All"}},
            });
            if let Some(h) = &l.hostname {
                out["hostname"] = json!(h);
            }
            if let Some(mode) = l.mode {
                let mut tls = json!({"mode": mode});
                if !l.certificates.is_empty() {
                    let refs: Vec<Value> = l
                        .certificates
                        .iter()
                        .map(|c| {
                            let mut r = json!({"kind": "Secret", "name": c.name});
                            if c.namespace != options.gateway_namespace {
                                r["namespace"] = json!(c.namespace);
                            }
                            r
                        })
                        .collect();
                    tls["certificateRefs"] = Value::Array(refs);
                }
                out["tls"] = tls;
            }
            out
        })
        .collect();
    json!({
        "apiVersion": API_VERSION, "kind": "Gateway",
        "metadata": {"name": options.gateway_name, "namespace": options.gateway_namespace},
        "spec": {"gatewayClassName": options.gateway_class, "listeners": listeners},
    })
}

/// A backendRef, or `None` (reported) for a backend the original could not serve.
fn backend_ref(backend: &Backend, from: (&str, &str), needs: &mut Needs, with_weight: bool) -> Option<Value> {
    let BackendTarget::Service(s) = &backend.target else { return None };
    let mut out = json!({"name": s.name, "port": s.port});
    if s.namespace != from.1 {
        out["namespace"] = json!(s.namespace);
        let entry = (from.0.to_string(), from.1.to_string(), "Service".to_string(), s.name.clone());
        needs.grants.entry(s.namespace.clone()).or_default().insert(entry);
    }
    if with_weight {
        out["weight"] = json!(backend.weight);
    }
    Some(out)
}

/// The options of a backend that Gateway API carries (header changes, a Host rewrite, TLS with
/// verification) as backendRef filters and a BackendTLSPolicy; the others reported.
fn backend_options(backend: &Backend, out: &mut Value, needs: &mut Needs) {
    let (Some(options), BackendTarget::Service(s)) = (&backend.options, &backend.target) else { return };
    let mut filters = Vec::new();
    // A Host set on the backend's requests is the backend's own Host rewrite (a URLRewrite
    // would rewrite for the whole rule).
    let mut request = options.request_headers.clone();
    if let Some(host) = &options.host_rewrite
        && !request.set.iter().any(|(n, _)| n.eq_ignore_ascii_case("host"))
    {
        request.set.push(("Host".into(), host.clone()));
    }
    if request != ir::HeaderModifier::default() {
        filters.push(matches::header_filter("RequestHeaderModifier", &request));
    }
    if options.response_headers != ir::HeaderModifier::default() {
        filters.push(matches::header_filter("ResponseHeaderModifier", &options.response_headers));
    }
    if !filters.is_empty() {
        out["filters"] = Value::Array(filters);
    }
    // TLS without verification and other protocols are named by the report's field walk.
    if let Some(v) = &options.validation {
        let hostname = v.subject_names.first().cloned().or_else(|| options.sni.clone()).unwrap_or_default();
        needs.backend_tls.insert((s.namespace.clone(), s.name.clone()), (v.ca.clone(), hostname));
    }
}

/// The HTTPRoute rules of one IR route.
fn rules(entry: &RouteEntry<'_>, host: &str, needs: &mut Needs, report: &mut Vec<Finding>) -> Vec<(Value, usize)> {
    let route = entry.route;
    let origin = &route.origin;
    let wildcard = frontends::wildcard_authority(host);
    let mut out = Vec::new();
    for rule in &route.rules {
        let prefix_rewrite = matches::rewrites_prefix(&rule.filters);
        let mut all = Vec::new();
        for m in &rule.matches {
            for h in &m.headers {
                if wildcard.as_ref() != Some(h)
                    && let Some(problem) = matches::header_problem(h)
                {
                    report.push(Finding::new(describe(origin), "", format!("{problem}; the condition is left out")));
                }
            }
            if let ir::PathMatch::StringPrefix(p) = &m.path
                && prefix_rewrite
                && p != "/"
            {
                // Gateway API replaces a prefix only after a PathPrefix match, which matches
                // whole segments, with or without a trailing slash.
                let message = match p.strip_suffix('/') {
                    Some(bare) => format!(
                        "the prefix {p} with a prefix rewrite also matches {bare} in Gateway API, where \
                         prefixes match whole path segments"
                    ),
                    None => format!(
                        "the prefix {p} with a prefix rewrite matches only whole path segments in Gateway API \
                         ({p}/x, not {p}x)"
                    ),
                };
                report.push(Finding::new(describe(origin), "", message));
            }
            all.extend(matches::matches(m, prefix_rewrite, |h| wildcard.as_ref() == Some(h)));
        }
        let count = all.len();
        let mut value = json!({"matches": all});
        let namespace = origin.namespace.as_str();
        let mut filters = Vec::new();
        for f in &rule.filters {
            let target = |b: &Backend| backend_ref(b, ("HTTPRoute", namespace), &mut Needs::default(), false);
            match matches::filter(f, target) {
                Ok(f) => filters.push(f),
                Err(problem) => report.push(Finding::new(describe(origin), "", format!("{problem}; not converted"))),
            }
        }
        // A mirror's Service in another namespace needs a grant too.
        for f in &rule.filters {
            if let ir::HttpFilter::Mirror(m) = f {
                backend_ref(&m.backend, ("HTTPRoute", namespace), needs, false);
            }
        }
        if !filters.is_empty() {
            value["filters"] = Value::Array(filters);
        }
        let mut backends = Vec::new();
        for b in &rule.backends {
            match backend_ref(b, ("HTTPRoute", namespace), needs, true) {
                Some(mut r) => {
                    backend_options(b, &mut r, needs);
                    backends.push(r);
                }
                None => {
                    report.push(Finding::new(describe(origin), "", "a backend without a valid Service is left out"))
                }
            }
        }
        if !backends.is_empty() {
            value["backendRefs"] = Value::Array(backends);
        }
        let mut timeouts = serde_json::Map::new();
        if let Some(ms) = rule.request_timeout_ms {
            timeouts.insert("request".into(), json!(matches::duration(ms)));
        }
        // Retries carry over as far as Gateway API's go: attempts, status codes and the
        // timeout of each try (Envoy's retry conditions are named by the report).
        if let Some(retry) = &rule.policy.retry {
            let mut out = json!({"attempts": retry.count});
            if !retry.retriable_status_codes.is_empty() {
                out["codes"] = json!(retry.retriable_status_codes);
            }
            if let Some(ms) = retry.backoff_ms {
                out["backoff"] = json!(matches::duration(ms));
            }
            value["retry"] = out;
            if let Some(ms) = retry.per_try_timeout_ms {
                timeouts.insert("backendRequest".into(), json!(matches::duration(ms)));
            }
        }
        if !timeouts.is_empty() {
            value["timeouts"] = Value::Object(timeouts);
        }
        out.push((value, count));
    }
    out
}

fn http_routes(
    entries: &[RouteEntry<'_>],
    options: &Options,
    names: &mut Names,
    needs: &mut Needs,
    report: &mut Vec<Finding>,
) -> Vec<Value> {
    // Per object: its hosts, and whether it has a secure listener.
    let mut hosts: BTreeMap<&Origin, BTreeSet<&str>> = BTreeMap::new();
    let mut secure: BTreeSet<&Origin> = BTreeSet::new();
    for e in entries {
        let set = hosts.entry(&e.route.origin).or_default();
        set.extend(e.route.hostnames.iter().map(String::as_str));
        if e.secure {
            secure.insert(&e.route.origin);
        }
    }
    let mut out = Vec::new();
    for e in entries {
        let origin = &e.route.origin;
        let host = e.route.hostnames.first().map(String::as_str).unwrap_or("*");
        if host.starts_with("*.") {
            report.push(Finding::new(
                describe(origin),
                "",
                format!(
                    "the wildcard {host} matches one DNS label; a Gateway API wildcard hostname matches any number"
                ),
            ));
        }
        let mut base = origin.name.clone();
        if hosts.get(&**origin).is_some_and(|h| h.len() > 1) {
            base = format!("{base}-{host}");
        }
        if !e.secure && secure.contains(&**origin) {
            base += "-http";
        }
        let hostnames: Vec<&String> = e.route.hostnames.iter().filter(|h| h.as_str() != "*").collect();
        let rules = rules(e, host, needs, report);
        let mut chunks: Vec<Vec<Value>> = vec![Vec::new()];
        let mut matched = 0;
        for (rule, count) in rules {
            let last = chunks.last_mut().expect("never empty");
            if !last.is_empty() && (last.len() == MAX_RULES || matched + count > MAX_MATCHES) {
                chunks.push(Vec::new());
                matched = 0;
            }
            matched += count;
            chunks.last_mut().expect("never empty").push(rule);
        }
        for chunk in chunks.into_iter().filter(|c| !c.is_empty()) {
            let name = names.take("HTTPRoute", &origin.namespace, &base);
            let mut spec = json!({"parentRefs": [parent_ref(options, &e.section, e.port)], "rules": chunk});
            if !hostnames.is_empty() {
                spec["hostnames"] = json!(hostnames);
            }
            out.push(json!({
                "apiVersion": API_VERSION, "kind": "HTTPRoute",
                "metadata": {"name": name, "namespace": origin.namespace},
                "spec": spec,
            }));
        }
    }
    out
}

fn tls_routes(
    entries: &[(&Arc<ir::TlsRoute>, String, u16)],
    options: &Options,
    names: &mut Names,
    needs: &mut Needs,
) -> Vec<Value> {
    let mut out = Vec::new();
    for (route, section, port) in entries {
        let namespace = route.origin.namespace.as_str();
        let backends: Vec<Value> =
            route.backends.iter().filter_map(|b| backend_ref(b, ("TLSRoute", namespace), needs, true)).collect();
        let name = names.take("TLSRoute", namespace, &route.origin.name);
        out.push(json!({
            "apiVersion": API_VERSION, "kind": "TLSRoute",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "parentRefs": [parent_ref(options, section, *port)],
                "hostnames": route.hostnames,
                "rules": [{"backendRefs": backends}],
            },
        }));
    }
    out
}

fn reference_grants(needs: &Needs) -> Vec<Value> {
    let mut out = Vec::new();
    for (namespace, entries) in &needs.grants {
        // One grant per (from kind, from namespace), listing what it may reach.
        let mut by_from: BTreeMap<(&str, &str), Vec<Value>> = BTreeMap::new();
        for (kind, from, to_kind, to_name) in entries {
            by_from.entry((kind, from)).or_default().push(json!({"group": "", "kind": to_kind, "name": to_name}));
        }
        for ((kind, from), to) in by_from {
            let name = dns_name(&format!("from-{from}-{}", kind.to_ascii_lowercase()));
            out.push(json!({
                "apiVersion": API_VERSION, "kind": "ReferenceGrant",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {"from": [{"group": "gateway.networking.k8s.io", "kind": kind, "namespace": from}], "to": to},
            }));
        }
    }
    out
}

fn backend_tls_policies(
    needs: &Needs,
    snapshot: &Snapshot,
    names: &mut Names,
    report: &mut Vec<Finding>,
) -> Vec<Value> {
    let mut out = Vec::new();
    for ((namespace, service), (ca, hostname)) in &needs.backend_tls {
        if &ca.namespace != namespace {
            report.push(Finding::new(
                format!("Service {namespace}/{service}"),
                "",
                format!(
                    "its CA Secret {}/{} is in another namespace, which a BackendTLSPolicy cannot name: copy it to {namespace}",
                    ca.namespace, ca.name
                ),
            ));
        }
        let kind = if snapshot.config_maps.get(&objects::ObjectKey::new(&ca.namespace, &ca.name)).is_some()
            && snapshot.secrets.get(&objects::ObjectKey::new(&ca.namespace, &ca.name)).is_none()
        {
            "ConfigMap"
        } else {
            "Secret"
        };
        let name = names.take("BackendTLSPolicy", namespace, service);
        out.push(json!({
            "apiVersion": API_VERSION, "kind": "BackendTLSPolicy",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "targetRefs": [{"group": "", "kind": "Service", "name": service}],
                "validation": {"caCertificateRefs": [{"group": "", "kind": kind, "name": ca.name}], "hostname": hostname},
            },
        }));
    }
    out
}
