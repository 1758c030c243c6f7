//! The Gateway API front end: GatewayClass, Gateway, HTTPRoute, GRPCRoute and TLSRoute into IR
//! fleets.
//!
//! One fleet per Gateway of an accepted GatewayClass. Routes are translated once and attached
//! (shared) to every listener they are allowed on.

pub mod addresses;
mod backend_tls;
mod backends;
mod grpc_route;
pub(crate) mod http_route;
mod l4_route;
mod listener_filters;
pub mod listener_set;
mod listeners;
mod refs;
pub mod status;
mod tls_route;

#[cfg(test)]
mod tests;

use std::sync::Arc;

use ir::{Diagnostic, Origin, Severity, reason};
use objects::Snapshot;
use objects::types::Gateway;

use crate::Translation;

/// The controller name upstream Contour's provisioner uses; GatewayClasses naming it are ours.
pub const DEFAULT_CONTROLLER_NAME: &str = "projectcontour.io/gateway-controller";

/// The API group of the Gateway API.
pub const GROUP: &str = "gateway.networking.k8s.io";

pub(crate) use crate::shared::origin;
pub use crate::shared::regex::{MAX_REGEX_LEN, check_regex};
pub use http_route::parse_duration_ms;

/// Settings of the Gateway API front end.
#[derive(Debug, Clone)]
pub struct Options {
    /// GatewayClasses with this `spec.controllerName` are ours.
    pub controller_name: String,
    /// Gateway fleets run on the host, one Envoy per Gateway (the provisioner's host mode):
    /// their listeners bind to the Gateway's own address, the one its Service's load-balancer
    /// status carries (else its first `spec.addresses` IP).
    pub host_mode: bool,
    /// Upstream's static mode (contour.yaml `gateway.gatewayRef`): this Gateway alone is served,
    /// whatever its class's controller, by the default fleet beside HTTPProxy and Ingress, with
    /// listener ports mapped to Envoy's unprivileged ports as upstream does ([`container_port`]).
    pub static_gateway: Option<objects::ObjectKey>,
    /// The Envoy Service (`--envoy-service-namespace/name`): in static mode its load-balancer
    /// addresses are the Gateway's, as upstream writes them.
    pub envoy_service: Option<objects::ObjectKey>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            controller_name: DEFAULT_CONTROLLER_NAME.into(),
            host_mode: false,
            static_gateway: None,
            envoy_service: None,
        }
    }
}

impl Options {
    /// Whether this controller serves the Gateway: the static one (its class must exist), else
    /// any whose GatewayClass names our controller.
    pub fn serves(&self, snapshot: &Snapshot, key: &objects::ObjectKey, gateway: &Gateway) -> bool {
        let class = snapshot.gateway_classes.get(&objects::ObjectKey::new("", &gateway.spec.gateway_class_name));
        match &self.static_gateway {
            Some(only) => only == key && class.is_some(),
            None => class.is_some_and(|c| c.spec.controller_name == self.controller_name),
        }
    }

    /// The fleet that serves a Gateway: the default fleet in static mode, else its own.
    pub fn fleet_id(&self, key: &objects::ObjectKey) -> String {
        match &self.static_gateway {
            Some(_) => ir::DEFAULT_FLEET.to_string(),
            None => format!("{}/{}", key.namespace, key.name),
        }
    }
}

/// The port Envoy listens on for a static Gateway's listener port, as upstream maps it for a
/// non-root Envoy: the port plus 8000, wrapped past 65535 and kept above the privileged range
/// (80 → 8080, 443 → 8443).
pub fn container_port(port: u16) -> u16 {
    let mut mapped = u32::from(port) + 8000;
    if mapped > 65535 {
        mapped -= 65535;
    }
    if mapped <= 1023 {
        mapped += 1023;
    }
    mapped as u16
}

/// Translations kept between builds, so an unchanged route costs a pointer comparison.
///
/// Entries are reused while the object is the same `Arc` and nothing its translation reads
/// (ReferenceGrants) changed; where a route attaches is reused while no GatewayClass, Gateway or
/// Namespace changed.
#[derive(Debug, Default)]
pub struct Cache {
    grants: Vec<usize>,
    gateways: Vec<usize>,
    /// Sorted by key, in the order the snapshot iterates, so lookups are a merge.
    http: Vec<(objects::ObjectKey, CachedHttpRoute)>,
}

#[derive(Debug)]
struct CachedHttpRoute {
    object: Arc<objects::types::HTTPRoute>,
    route: Arc<ir::HttpRoute>,
    parents: Arc<[ParentRef]>,
    diagnostics: Vec<Diagnostic>,
    attachments: Option<Attachments>,
}

/// Where a route attaches: (fleet, listener) indices, and why it did not attach elsewhere.
#[derive(Debug, Clone, Default)]
struct Attachments {
    listeners: Vec<(usize, usize)>,
    diagnostics: Vec<Diagnostic>,
}

/// Translates every Gateway of our GatewayClasses, and the routes attached to them.
pub fn translate(snapshot: &Snapshot, options: &Options) -> Translation {
    translate_cached(snapshot, options, &mut Cache::default())
}

/// [`translate`], reusing what `cache` holds from the previous build.
pub fn translate_cached(snapshot: &Snapshot, options: &Options, cache: &mut Cache) -> Translation {
    let ptrs = |it: &mut dyn Iterator<Item = usize>| it.collect::<Vec<_>>();
    let grants = ptrs(&mut snapshot.reference_grants.values().map(|g| Arc::as_ptr(g) as usize));
    if grants != cache.grants {
        cache.http.clear();
        cache.grants = grants;
    }
    let gateways_now = ptrs(
        &mut (snapshot.gateway_classes.values().map(|o| Arc::as_ptr(o) as usize))
            .chain(snapshot.gateways.values().map(|o| Arc::as_ptr(o) as usize))
            .chain(snapshot.listener_sets.values().map(|o| Arc::as_ptr(o) as usize))
            .chain(snapshot.namespaces.values().map(|o| Arc::as_ptr(o) as usize)),
    );
    if gateways_now != cache.gateways {
        for (_, cached) in &mut cache.http {
            cached.attachments = None;
        }
        cache.gateways = gateways_now;
    }

    let mut diagnostics = Vec::new();
    let mut fleets = Vec::new();
    // (kind, namespace, name) of each parent a route may name, and its fleet's index.
    let mut gateways: Vec<(&str, &str, &str, usize)> = Vec::new();
    for (key, gateway) in snapshot.gateways.iter() {
        if !options.serves(snapshot, key, gateway) {
            continue;
        }
        let (fleet, sources) = listeners::translate_gateway(snapshot, key, gateway, options, &mut diagnostics);
        gateways.push(("Gateway", key.namespace.as_str(), key.name.as_str(), fleets.len()));
        for set in sources.iter().filter_map(|s| s.set.as_ref()) {
            let (kind, namespace, name) = ("ListenerSet", set.namespace.as_str(), set.name.as_str());
            if !gateways.iter().any(|p| (p.0, p.1, p.2) == (kind, namespace, name)) {
                let (k, _) = snapshot.listener_sets.get_key_value(set).expect("a source's ListenerSet exists");
                gateways.push((kind, k.namespace.as_str(), k.name.as_str(), fleets.len()));
            }
        }
        fleets.push((Arc::clone(gateway), fleet, sources));
    }

    let mut previous = std::mem::take(&mut cache.http).into_iter().peekable();
    let mut next = Vec::with_capacity(snapshot.http_routes.len());
    for (key, object) in snapshot.http_routes.iter() {
        // The same object is under the same key: the keys (strings spread over the heap, a
        // cache miss each at 50k routes) are compared only where the walks part.
        let same = |c: &CachedHttpRoute| Arc::ptr_eq(&c.object, object);
        if !previous.peek().is_some_and(|(_, c)| same(c)) {
            while previous.peek().is_some_and(|(k, _)| k < key) {
                previous.next();
            }
        }
        let reusable = previous.peek().is_some_and(|(_, c)| same(c));
        let (key, mut cached) = if reusable {
            previous.next().expect("peeked")
        } else {
            let mut found = Vec::new();
            let route = Arc::new(http_route::translate(snapshot, object, &mut found));
            let parents = http_route::parent_refs(object).into();
            (
                key.clone(),
                CachedHttpRoute { object: Arc::clone(object), route, parents, diagnostics: found, attachments: None },
            )
        };
        let attachments = cached.attachments.get_or_insert_with(|| {
            attachments(
                &fleets,
                &gateways,
                snapshot,
                &cached.route.origin,
                &cached.parents,
                "HTTPRoute",
                &cached.route.hostnames,
            )
        });
        for &(f, l) in &attachments.listeners {
            fleets[f].1.listeners[l].http_routes.push(Arc::clone(&cached.route));
        }
        diagnostics.extend(cached.diagnostics.iter().cloned());
        diagnostics.extend(attachments.diagnostics.iter().cloned());
        next.push((key, cached));
    }
    drop(previous);
    cache.http = next;

    for object in snapshot.grpc_routes.values() {
        let route = Arc::new(grpc_route::translate(snapshot, object, &mut diagnostics));
        let parents = grpc_route::parent_refs(object);
        let found = attachments(&fleets, &gateways, snapshot, &route.origin, &parents, "GRPCRoute", &route.hostnames);
        for (f, l) in found.listeners {
            fleets[f].1.listeners[l].http_routes.push(Arc::clone(&route));
        }
        diagnostics.extend(found.diagnostics);
    }

    for object in snapshot.tls_routes.values() {
        let route = Arc::new(tls_route::translate(snapshot, object, &mut diagnostics));
        let parents = tls_route::parent_refs(object);
        let found = attachments(&fleets, &gateways, snapshot, &route.origin, &parents, "TLSRoute", &route.hostnames);
        for (f, l) in found.listeners {
            fleets[f].1.listeners[l].tls_routes.push(Arc::clone(&route));
        }
        diagnostics.extend(found.diagnostics);
    }

    attach_l4(&mut fleets, &gateways, snapshot, snapshot.tcp_routes.values(), &mut diagnostics);
    attach_l4(&mut fleets, &gateways, snapshot, snapshot.udp_routes.values(), &mut diagnostics);

    let backend_tls = backend_tls::evaluate(snapshot).applied;
    Translation { ir: ir::Ir { fleets: fleets.into_iter().map(|(_, f, _)| f).collect(), backend_tls }, diagnostics }
}

/// Translates TCPRoutes or UDPRoutes and attaches them, oldest first, to the listeners they may
/// use (such listeners have no hostname to match).
fn attach_l4<'a, T: l4_route::L4Kind + 'a>(
    fleets: &mut [Parent],
    gateways: &[(&str, &str, &str, usize)],
    snapshot: &Snapshot,
    routes: impl Iterator<Item = &'a Arc<T>>,
    diagnostics: &mut Vec<Diagnostic>,
) {
    for object in l4_route::claim_order(routes) {
        let route = Arc::new(object.translate(snapshot, diagnostics));
        let parents = object.parent_refs();
        let found = attachments(fleets, gateways, snapshot, &route.origin, &parents, T::KIND, &[]);
        for (f, l) in found.listeners {
            fleets[f].1.listeners[l].l4_routes.push(Arc::clone(&route));
        }
        diagnostics.extend(found.diagnostics);
    }
}

/// The parentRefs of any route kind, defaulted (the generated types differ per kind but share
/// their fields).
macro_rules! parent_refs {
    ($route:expr, $refs:expr) => {{
        let namespace = $route.metadata.namespace.clone().unwrap_or_default();
        $refs
            .map(|p| $crate::gateway_api::ParentRef {
                group: p.group.clone().unwrap_or_else(|| $crate::gateway_api::GROUP.into()),
                kind: p.kind.clone().unwrap_or_else(|| "Gateway".into()),
                namespace: p.namespace.clone().unwrap_or_else(|| namespace.clone()),
                name: p.name.clone(),
                section_name: p.section_name.clone(),
                port: p.port,
            })
            .collect::<Vec<_>>()
    }};
}
pub(crate) use parent_refs;

/// A route's reference to a parent Gateway, already defaulted.
#[derive(Debug, Clone)]
pub struct ParentRef {
    pub group: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub section_name: Option<String>,
    pub port: Option<i32>,
}

/// A Gateway of ours, its fleet, and who declared each of the fleet's listeners.
type Parent = (Arc<Gateway>, ir::Fleet, Vec<listeners::Source>);

/// The listeners a route may attach to through its parentRefs: a Gateway's own, or those of a
/// ListenerSet attached to one (`parents_known` says which fleet each is in).
fn attachments(
    fleets: &[Parent],
    parents_known: &[(&str, &str, &str, usize)],
    snapshot: &Snapshot,
    origin: &Origin,
    parents: &[ParentRef],
    kind: &str,
    hostnames: &[String],
) -> Attachments {
    let mut out = Attachments::default();
    for (i, parent) in parents.iter().enumerate() {
        if parent.group != GROUP || !matches!(parent.kind.as_str(), "Gateway" | "ListenerSet") {
            continue;
        }
        let Some(&(.., index)) = parents_known
            .iter()
            .find(|(k, ns, name, _)| *k == parent.kind && *ns == parent.namespace && *name == parent.name)
        else {
            continue;
        };
        let (_, fleet, sources) = &fleets[index];
        let set = (parent.kind == "ListenerSet").then(|| objects::ObjectKey::new(&parent.namespace, &parent.name));
        let mut reason = reason::NO_MATCHING_PARENT;
        let mut attached = false;
        for (l, (source, listener)) in sources.iter().zip(fleet.listeners.iter()).enumerate() {
            let spec = &source.spec;
            if source.set != set
                || parent.section_name.as_ref().is_some_and(|s| *s != spec.name)
                || parent.port.is_some_and(|p| p != spec.port)
            {
                continue;
            }
            if !listeners::allows(snapshot, &source.namespace, spec, kind, &origin.namespace) {
                reason = reason::NOT_ALLOWED_BY_LISTENERS;
                continue;
            }
            let hostname = listener.hostname.as_deref();
            if !hostnames.is_empty() && !hostnames.iter().any(|h| ir::hostname::intersects(hostname, h)) {
                reason = reason::NO_MATCHING_LISTENER_HOSTNAME;
                continue;
            }
            // Listeners the front end refused (protocol, port, TLS) are kept out of the IR by the
            // DAG; a route still counts as attached, as the Gateway API asks.
            out.listeners.push((index, l));
            attached = true;
        }
        if !attached {
            out.diagnostics.push(Diagnostic {
                origin: origin.clone(),
                severity: Severity::Error,
                condition: "",
                field: format!("spec.parentRefs[{i}]"),
                reason,
                message: format!("not accepted by {} {}/{}", parent.kind, parent.namespace, parent.name),
            });
        }
    }
    out
}

/// A route's hostnames, lower-cased, without those that are no hostname (`ir::hostname::problem`):
/// each of those is left out with a diagnostic (`Degraded`, as upstream says through the
/// route's `ResolvedRefs` condition), and the route serves the rest.
pub(crate) fn route_hostnames<'a>(
    origin: &Origin,
    hostnames: impl IntoIterator<Item = &'a String>,
    diagnostics: &mut Vec<Diagnostic>,
) -> Vec<String> {
    let mut out = Vec::new();
    for (i, h) in hostnames.into_iter().enumerate() {
        let h = h.to_ascii_lowercase();
        match ir::hostname::problem(&h) {
            None => out.push(h),
            Some(message) => diagnostics.push(error(origin, format!("spec.hostnames[{i}]"), reason::DEGRADED, message)),
        }
    }
    out
}

/// A rule's filter after the checks Envoy would otherwise make: header changes it refuses, and
/// a header modifier of a kind the rule already has (the Gateway API's schema forbids the
/// repeat). `None`, with a diagnostic, for a filter the rule cannot have.
pub(crate) fn checked_filter(
    origin: &Origin,
    field: String,
    filter: ir::HttpFilter,
    earlier: &[ir::HttpFilter],
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<ir::HttpFilter> {
    // A redirect's or rewrite's host and path go into headers.
    let rewritten = |hostname: Option<&String>, path: Option<&ir::PathModifier>| {
        let host = hostname.and_then(|h| match h.starts_with('*') {
            true => Some(format!("invalid hostname {h:?}: must not be a wildcard")),
            false => ir::hostname::problem(h),
        });
        host.or_else(|| path.and_then(|p| ir::header_value_problem(p.value()).map(|e| format!("path: {e}"))))
    };
    let (kind, modifier) = match &filter {
        ir::HttpFilter::RequestHeaders(m) => ("RequestHeaderModifier", Some(m)),
        ir::HttpFilter::ResponseHeaders(m) => ("ResponseHeaderModifier", Some(m)),
        ir::HttpFilter::Redirect(_) => ("RequestRedirect", None),
        ir::HttpFilter::UrlRewrite(_) => ("URLRewrite", None),
        _ => return Some(filter),
    };
    let repeated = earlier.iter().any(|f| std::mem::discriminant(f) == std::mem::discriminant(&filter));
    let problem = match (&filter, modifier) {
        _ if repeated => Some(format!("the {kind} filter cannot be repeated")),
        (_, Some(m)) => m.problem(),
        (ir::HttpFilter::Redirect(r), _) => rewritten(r.hostname.as_ref(), r.path.as_ref()),
        (ir::HttpFilter::UrlRewrite(r), _) => rewritten(r.hostname.as_ref(), r.path.as_ref()),
        _ => None,
    };
    match problem {
        None => Some(filter),
        Some(message) => {
            diagnostics.push(error(origin, field, reason::UNSUPPORTED_VALUE, message));
            None
        }
    }
}

/// A diagnostic with severity `Error`.
pub(crate) fn error(origin: &Origin, field: String, reason: &'static str, message: String) -> Diagnostic {
    Diagnostic { origin: origin.clone(), severity: Severity::Error, condition: "", field, reason, message }
}
