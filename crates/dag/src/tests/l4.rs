//! TCP and UDP listeners: weighted clusters, the oldest route served, UDP ports and localities.

use super::*;

const L4: &str = r#"
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: infra}
spec:
  gatewayClassName: contour
  listeners:
  - {name: tcp, port: 9000, protocol: TCP}
  - {name: udp, port: 9000, protocol: UDP}
---
apiVersion: v1
kind: Service
metadata: {name: dns, namespace: infra}
spec: {ports: [{name: dns-tcp, port: 53}, {name: dns, port: 53, protocol: UDP}]}
---
apiVersion: v1
kind: Service
metadata: {name: other, namespace: infra}
spec: {ports: [{name: dns, port: 53, protocol: UDP}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: dns-1, namespace: infra, labels: {kubernetes.io/service-name: dns}}
addressType: IPv4
ports: [{name: dns-tcp, port: 5353}, {name: dns, port: 5354, protocol: UDP}]
endpoints: [{addresses: [10.0.0.1]}, {addresses: [10.0.0.2]}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: other-1, namespace: infra, labels: {kubernetes.io/service-name: other}}
addressType: IPv4
ports: [{name: dns, port: 6000, protocol: UDP}]
endpoints: [{addresses: [10.0.0.3]}]
---
apiVersion: gateway.networking.k8s.io/v1alpha2
kind: TCPRoute
metadata: {name: tcp, namespace: infra, creationTimestamp: "2026-01-01T00:00:00Z"}
spec:
  parentRefs: [{name: gw, sectionName: tcp}]
  rules: [{backendRefs: [{name: dns, port: 53, weight: 70}, {name: absent, port: 53, weight: 30}]}]
---
apiVersion: gateway.networking.k8s.io/v1alpha2
kind: TCPRoute
metadata: {name: waiting, namespace: infra, creationTimestamp: "2026-01-02T00:00:00Z"}
spec:
  parentRefs: [{name: gw, sectionName: tcp}]
  rules: [{backendRefs: [{name: gone, port: 53}]}]
---
apiVersion: gateway.networking.k8s.io/v1alpha2
kind: UDPRoute
metadata: {name: dns, namespace: infra}
spec:
  parentRefs: [{name: gw, sectionName: udp}]
  rules: [{backendRefs: [{name: dns, port: 53, weight: 70}, {name: other, port: 53, weight: 30}, {name: dns, port: 53, weight: 0}]}]
"#;

/// The fixture's snapshot and its DAG.
fn built() -> (Snapshot, Dag) {
    let s = snapshot(&format!("{CLASS}{L4}"));
    let t = frontends::gateway_api::translate(&s, &Default::default());
    let dag = build(&t.ir, &s, t.diagnostics);
    (s, dag)
}

#[test]
fn a_tcp_listener_forwards_to_the_oldest_routes_weighted_clusters() {
    let dag = dag(&format!("{CLASS}{L4}"));
    let fleet = &dag.fleets["infra/gw"];
    let tcp = fleet.listeners.iter().find(|l| l.name == "tcp-9000").expect("tcp-9000");
    let ListenerKind::Tcp(backends) = &tcp.kind else { panic!("a TCP listener: {:?}", tcp.kind) };
    let clusters: Vec<_> = backends.iter().map(|b| (b.cluster.as_deref(), b.weight)).collect();
    assert_eq!(clusters, [(Some("infra/dns/53/da39a3ee5e"), 70), (None, 30)]);
    assert_eq!(fleet.clusters["infra/dns/53/da39a3ee5e"].port_name, "dns-tcp", "the TCP port of the Service");
    let reasons: Vec<_> =
        dag.diagnostics.iter().map(|d| (d.origin.name.as_str(), d.field.as_str(), d.reason)).collect();
    assert!(reasons.contains(&("tcp", "spec.rules[0].backendRefs[1]", "BackendNotFound")), "{reasons:?}");
    assert!(reasons.contains(&("waiting", "spec.rules[0].backendRefs[0]", "BackendNotFound")), "{reasons:?}");
}

#[test]
fn a_udp_listener_sends_sessions_to_one_cluster_weighted_by_locality() {
    let (s, dag) = built();
    let fleet = &dag.fleets["infra/gw"];
    let udp = fleet.listeners.iter().find(|l| l.name == "udp-9000").expect("udp-9000");
    assert_eq!(udp.kind, ListenerKind::Udp(Some("udproute/infra/dns".into())));
    let cluster = &fleet.clusters["udproute/infra/dns"];
    assert_eq!(cluster.port_name, "dns", "the UDP port of the Service");
    assert_eq!(cluster.locality_weights, [70, 30], "the zero-weight backend is left out");
    let endpoints = SliceIndex::new(&s).endpoints(cluster);
    let found: Vec<_> =
        endpoints.iter().map(|e| (e.address.to_string(), e.locality.map(|l| (l.index, l.weight)))).collect();
    assert_eq!(
        found,
        [
            ("10.0.0.1:5354".to_string(), Some((0, 70))),
            ("10.0.0.2:5354".to_string(), Some((0, 70))),
            ("10.0.0.3:6000".to_string(), Some((1, 30))),
        ]
    );
}

#[test]
fn an_endpoint_change_of_one_backend_recomputes_the_clusters_of_that_backend_only() {
    let (mut s, dag) = built();
    let fleet = &dag.fleets["infra/gw"];
    let mut cache = EndpointCache::default();
    cache.begin(&s);
    let all = fleet_endpoint_changes(fleet, &s, &mut cache, false);
    assert!(all.whole, "a fleet not seen before is computed whole");
    assert_eq!(all.endpoints["udproute/infra/dns"].len(), 3);
    cache.begin(&s);
    let same = fleet_endpoint_changes(fleet, &s, &mut cache, false);
    assert_eq!(same, EndpointChanges::default(), "nothing changed, nothing to compute");

    // Only `other`'s slice changes: the UDP cluster takes it, with `dns`'s endpoints beside it.
    let other = "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: other-1, namespace: infra, labels: {kubernetes.io/service-name: other}}\naddressType: IPv4\nports: [{name: dns, port: 6000, protocol: UDP}]\nendpoints: [{addresses: [10.0.0.3]}, {addresses: [10.0.0.4]}]\n";
    s.upsert(objects::parse_documents(other).remove(0).expect("parses"));
    cache.begin(&s);
    let update = fleet_endpoint_changes(fleet, &s, &mut cache, false);
    assert!(!update.whole);
    assert_eq!(update.endpoints["udproute/infra/dns"].len(), 4, "{:?}", update.endpoints);
    let tcp = "infra/dns/53/da39a3ee5e";
    assert!(!update.endpoints.contains_key(tcp), "a cluster of unchanged Services is left alone");

    // `dns`'s slice goes: both clusters of `dns` follow.
    let key = objects::ObjectKey::new("infra", "dns-1");
    assert!(s.remove(objects::Kind::EndpointSlice, &key));
    cache.begin(&s);
    let update = fleet_endpoint_changes(fleet, &s, &mut cache, false);
    assert_eq!(update.endpoints[tcp].len(), 0, "{:?}", update.endpoints);
    assert_eq!(update.endpoints["udproute/infra/dns"].len(), 2, "{:?}", update.endpoints);

    // A fleet whose cluster went: its load assignment goes.
    let mut smaller = fleet.clone();
    smaller.clusters.remove(tcp);
    cache.begin(&s);
    let update = fleet_endpoint_changes(&smaller, &s, &mut cache, false);
    assert_eq!(update.removed, [tcp]);
    assert!(update.endpoints.is_empty());
}
