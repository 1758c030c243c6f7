//! The Gateway API front end: GatewayClass, Gateway, HTTPRoute and TLSRoute into IR fleets.
//!
//! One fleet per Gateway of an accepted GatewayClass. Routes are translated once and attached
//! (shared) to every listener they are allowed on.

mod backends;
pub(crate) mod http_route;
mod listeners;
mod refs;
mod tls_route;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use ir::{Diagnostic, Origin, Severity};
use objects::Snapshot;
use objects::types::Gateway;

use crate::Translation;

/// The controller name upstream Contour's provisioner uses; GatewayClasses naming it are ours.
pub const DEFAULT_CONTROLLER_NAME: &str = "projectcontour.io/gateway-controller";

/// The API group of the Gateway API.
pub const GROUP: &str = "gateway.networking.k8s.io";

pub use http_route::{MAX_REGEX_LEN, check_regex, parse_duration_ms};

/// Settings of the Gateway API front end.
#[derive(Debug, Clone)]
pub struct Options {
    /// GatewayClasses with this `spec.controllerName` are ours.
    pub controller_name: String,
}

impl Default for Options {
    fn default() -> Self {
        Self { controller_name: DEFAULT_CONTROLLER_NAME.into() }
    }
}

/// Translations kept between builds, so an unchanged route costs a pointer comparison.
///
/// Entries are keyed by object and reused while the object is the same `Arc` and nothing a
/// route's translation reads (ReferenceGrants) changed.
#[derive(Debug, Default)]
pub struct Cache {
    grants: Vec<usize>,
    http: HashMap<objects::ObjectKey, CachedHttpRoute>,
}

#[derive(Debug)]
struct CachedHttpRoute {
    object: Arc<objects::types::HTTPRoute>,
    route: Arc<ir::HttpRoute>,
    diagnostics: Vec<Diagnostic>,
}

/// Translates every Gateway of our GatewayClasses, and the routes attached to them.
pub fn translate(snapshot: &Snapshot, options: &Options) -> Translation {
    translate_cached(snapshot, options, &mut Cache::default())
}

/// [`translate`], reusing what `cache` holds from the previous build.
pub fn translate_cached(snapshot: &Snapshot, options: &Options, cache: &mut Cache) -> Translation {
    let grants: Vec<usize> = snapshot.reference_grants.values().map(|g| Arc::as_ptr(g) as usize).collect();
    if grants != cache.grants {
        cache.http.clear();
        cache.grants = grants;
    }
    cache.http.retain(|key, cached| snapshot.http_routes.get(key).is_some_and(|o| Arc::ptr_eq(o, &cached.object)));
    let mut diagnostics = Vec::new();
    let mut fleets = Vec::new();
    let mut gateways: BTreeMap<(String, String), usize> = BTreeMap::new();
    for (key, gateway) in &snapshot.gateways {
        let ours = snapshot
            .gateway_classes
            .get(&objects::ObjectKey::new("", &gateway.spec.gateway_class_name))
            .is_some_and(|class| class.spec.controller_name == options.controller_name);
        if !ours {
            continue;
        }
        let fleet = listeners::translate_gateway(snapshot, gateway, &mut diagnostics);
        gateways.insert((key.namespace.clone(), key.name.clone()), fleets.len());
        fleets.push((Arc::clone(gateway), fleet));
    }

    let mut http = Vec::with_capacity(snapshot.http_routes.len());
    for (key, object) in &snapshot.http_routes {
        let cached = cache.http.entry(key.clone()).or_insert_with(|| {
            let mut found = Vec::new();
            let route = Arc::new(http_route::translate(snapshot, object, &mut found));
            CachedHttpRoute { object: Arc::clone(object), route, diagnostics: found }
        });
        diagnostics.extend(cached.diagnostics.iter().cloned());
        http.push((object, Arc::clone(&cached.route)));
    }
    for (object, route) in http {
        let parents = http_route::parent_refs(object);
        attach(
            &mut fleets,
            &gateways,
            snapshot,
            &route.origin,
            &parents,
            "HTTPRoute",
            &route.hostnames,
            &mut diagnostics,
            |l| l.http_routes.push(Arc::clone(&route)),
        );
    }
    let tls: Vec<_> = snapshot
        .tls_routes
        .values()
        .map(|route| (route, Arc::new(tls_route::translate(snapshot, route, &mut diagnostics))))
        .collect();
    for (object, route) in tls {
        let parents = tls_route::parent_refs(object);
        attach(
            &mut fleets,
            &gateways,
            snapshot,
            &route.origin,
            &parents,
            "TLSRoute",
            &route.hostnames,
            &mut diagnostics,
            |l| l.tls_routes.push(Arc::clone(&route)),
        );
    }

    Translation { ir: ir::Ir { fleets: fleets.into_iter().map(|(_, f)| f).collect() }, diagnostics }
}

/// A route's reference to a parent Gateway, already defaulted.
#[derive(Debug, Clone)]
pub(crate) struct ParentRef {
    pub group: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub section_name: Option<String>,
    pub port: Option<i32>,
}

#[allow(clippy::too_many_arguments)]
fn attach(
    fleets: &mut [(Arc<Gateway>, ir::Fleet)],
    gateways: &BTreeMap<(String, String), usize>,
    snapshot: &Snapshot,
    origin: &Origin,
    parents: &[ParentRef],
    kind: &str,
    hostnames: &[String],
    diagnostics: &mut Vec<Diagnostic>,
    mut push: impl FnMut(&mut ir::Listener),
) {
    for (i, parent) in parents.iter().enumerate() {
        if parent.group != GROUP || parent.kind != "Gateway" {
            continue;
        }
        let Some(&index) = gateways.get(&(parent.namespace.clone(), parent.name.clone())) else {
            continue;
        };
        let (gateway, fleet) = &mut fleets[index];
        let mut reason = "NoMatchingParent";
        let mut attached = false;
        for (spec, listener) in gateway.spec.listeners.iter().zip(fleet.listeners.iter_mut()) {
            if parent.section_name.as_ref().is_some_and(|s| *s != spec.name)
                || parent.port.is_some_and(|p| p != spec.port)
            {
                continue;
            }
            if !listeners::allows(snapshot, gateway, spec, kind, &origin.namespace) {
                reason = "NotAllowedByListeners";
                continue;
            }
            let hostname = listener.hostname.as_deref();
            if !hostnames.is_empty() && hostnames.iter().all(|h| ir::hostname::intersect(hostname, h).is_none()) {
                reason = "NoMatchingListenerHostname";
                continue;
            }
            // Listeners the front end refused (protocol, port, TLS) are kept out of the IR by the
            // DAG; a route still counts as attached, as the Gateway API asks.
            push(listener);
            attached = true;
        }
        if !attached {
            diagnostics.push(Diagnostic {
                origin: origin.clone(),
                severity: Severity::Error,
                field: format!("spec.parentRefs[{i}]"),
                reason,
                message: format!("not accepted by Gateway {}/{}", parent.namespace, parent.name),
            });
        }
    }
}

/// The origin of an object from its metadata.
pub(crate) fn origin(kind: &'static str, meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> Origin {
    Origin {
        kind,
        namespace: meta.namespace.clone().unwrap_or_default(),
        name: meta.name.clone().unwrap_or_default(),
        generation: meta.generation.unwrap_or(0),
    }
}

/// A diagnostic with severity `Error`.
pub(crate) fn error(origin: &Origin, field: String, reason: &'static str, message: String) -> Diagnostic {
    Diagnostic { origin: origin.clone(), severity: Severity::Error, field, reason, message }
}
