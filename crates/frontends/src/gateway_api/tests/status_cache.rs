//! Route statuses computed with a cache: only routes that changed are computed again, and the
//! result is what computing everything gives.

use std::sync::Arc;

use super::*;

/// A route of `kind` in `apps` on Gateway `infra/gw` of [`BASE`], sending to Service `svc` of
/// `backends`.
fn route_yaml(kind: &str, name: &str, generation: i64, backends: &str) -> String {
    format!(
        "---
apiVersion: gateway.networking.k8s.io/v1
kind: {kind}
metadata: {{name: {name}, namespace: apps, generation: {generation}}}
spec:
  parentRefs: [{{name: gw, namespace: infra}}]
  rules: [{{backendRefs: [{{name: svc, namespace: {backends}, port: 80}}]}}]
"
    )
}

/// The statuses of `s` with `cache`, and without one.
fn both(s: &Snapshot, cache: &mut status::RouteCache) -> (status::StatusSet, status::StatusSet) {
    let t = translate(s, &Options::default());
    let attached = status::attached_routes(&t.ir);
    let fleet = |_: &str| status::FleetState::Programmed;
    let cached = status::compute_cached(s, &Options::default(), &t.diagnostics, &attached, fleet, cache);
    (cached, status::compute(s, &Options::default(), &t.diagnostics, &attached, fleet))
}

fn route<'a>(set: &'a status::StatusSet, name: &str) -> &'a Arc<status::RouteStatus> {
    set.routes.iter().find(|r| r.key.name == name).unwrap_or_else(|| panic!("no status for {name}"))
}

fn accepted(set: &status::StatusSet, name: &str) -> (bool, &'static str) {
    let c = &route(set, name).parents[0].conditions[0];
    (c.status, c.reason)
}

#[test]
fn only_routes_that_changed_are_computed_again() {
    let routes = [("HTTPRoute", "a"), ("HTTPRoute", "b"), ("GRPCRoute", "g")];
    let yaml: String = routes.iter().map(|(kind, name)| route_yaml(kind, name, 1, "apps")).collect();
    let first = snapshot(&format!("{BASE}{yaml}"));
    let mut cache = status::RouteCache::default();
    let (before, fresh) = both(&first, &mut cache);
    assert_eq!(before, fresh, "the cache's first pass is the whole computation");
    let kinds: Vec<&str> = before.routes.iter().map(|r| r.kind).collect();
    assert_eq!(kinds, ["GRPCRoute", "HTTPRoute", "HTTPRoute"], "in the order of (kind, key)");

    // Nothing changed: every status is the same Arc.
    let (again, _) = both(&first.clone(), &mut cache);
    for (a, b) in before.routes.iter().zip(&again.routes) {
        assert!(Arc::ptr_eq(a, b), "{} kept", a.key);
    }

    // Route b now sends to another namespace's Service, which no ReferenceGrant allows (a new
    // generation): b is computed again, a and g are kept.
    let mut second = first.clone();
    let changed = snapshot(&route_yaml("HTTPRoute", "b", 2, "other"));
    let b = changed.http_routes.iter().next().expect("route b").1;
    second.upsert(objects::Object::HttpRoute((**b).clone()));
    let (after, fresh) = both(&second, &mut cache);
    assert_eq!(after, fresh, "the same statuses as computing everything");
    assert!(Arc::ptr_eq(route(&before, "a"), route(&after, "a")), "a kept");
    assert!(Arc::ptr_eq(route(&before, "g"), route(&after, "g")), "g kept");
    let refs = &route(&after, "b").parents[0].conditions[1];
    assert_eq!((refs.status, refs.reason, refs.observed_generation), (false, "RefNotPermitted", 2));
    assert_ne!(route(&before, "b").digest, route(&after, "b").digest);

    // A ReferenceGrant allows it: b's object is the same, its diagnostics are not, and it is
    // computed again.
    let grant = snapshot(
        "apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {name: allow, namespace: other}
spec:
  from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: apps}]
  to: [{group: '', kind: Service}]
",
    );
    let mut third = second.clone();
    let (_, g) = grant.reference_grants.iter().next().expect("the grant");
    third.upsert(objects::Object::ReferenceGrant((**g).clone()));
    let (granted, fresh) = both(&third, &mut cache);
    assert_eq!(granted, fresh);
    let refs = &route(&granted, "b").parents[0].conditions[1];
    assert_eq!((refs.status, refs.reason), (true, "ResolvedRefs"));
    assert!(Arc::ptr_eq(route(&before, "a"), route(&granted, "a")), "a kept");

    // The Gateway goes: no route names a parent of ours, and none has a status.
    let mut fourth = third.clone();
    fourth.remove(objects::Kind::Gateway, &objects::ObjectKey::new("infra", "gw"));
    let (none, fresh) = both(&fourth, &mut cache);
    assert_eq!(none, fresh);
    assert!(none.routes.is_empty(), "{:?}", none.routes);
    // And comes back: every route is computed against it again.
    let (back, fresh) = both(&third, &mut cache);
    assert_eq!(back, fresh);
    assert_eq!(accepted(&back, "a"), (true, "Accepted"));
}
