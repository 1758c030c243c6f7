//! TCPRoute and UDPRoute: listeners, attachment, claim order and status.

use super::*;

/// A Gateway with TCP and UDP listeners (UDP sharing a number with TCP), and a Service.
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
  - {name: tcp-again, port: 9000, protocol: TCP}
  - {name: http, port: 9001, protocol: HTTP}
  - {name: tcp-on-http, port: 9001, protocol: TCP}
---
apiVersion: v1
kind: Service
metadata: {name: dns, namespace: infra}
spec: {ports: [{name: dns-tcp, port: 53}, {name: dns, port: 53, protocol: UDP}]}
"#;

fn route(kind: &str, name: &str, created: &str, parent: &str) -> String {
    format!(
        r#"
---
apiVersion: gateway.networking.k8s.io/v1alpha2
kind: {kind}
metadata: {{name: {name}, namespace: infra, creationTimestamp: "{created}"}}
spec:
  parentRefs: [{parent}]
  rules: [{{backendRefs: [{{name: dns, port: 53, weight: 3}}, {{name: absent, port: 53}}]}}]
"#
    )
}

#[test]
fn tcp_and_udp_listeners_carry_their_own_route_kinds() {
    let yaml = format!(
        "{CLASS}{L4}{}{}{}",
        route("TCPRoute", "newer", "2026-01-02T00:00:00Z", "{name: gw, sectionName: tcp}"),
        route("TCPRoute", "older", "2026-01-01T00:00:00Z", "{name: gw, sectionName: tcp}"),
        route("UDPRoute", "dns", "2026-01-01T00:00:00Z", "{name: gw}"),
    );
    let (t, set) = translate_with_status(&yaml, &Options::default());
    let fleet = &t.ir.fleets[0];
    let (tcp, udp) = (&fleet.listeners[0], &fleet.listeners[1]);
    assert_eq!((tcp.protocol, tcp.port), (Protocol::Tcp, 9000));
    assert_eq!((udp.protocol, udp.port), (Protocol::Udp, 9000), "UDP shares a number with TCP");
    let names: Vec<_> = tcp.l4_routes.iter().map(|r| r.origin.name.as_str()).collect();
    assert_eq!(names, ["older", "newer"], "the oldest route claims the listener");
    assert_eq!(udp.l4_routes.len(), 1, "a parentRef without section attaches to the UDP listener only");
    assert_eq!(udp.l4_routes[0].rules[0][0].weight, 3);

    let gw = &set.gateways[0];
    assert_eq!(gw.listeners[0].supported_kinds, ["TCPRoute"]);
    assert_eq!(gw.listeners[1].supported_kinds, ["UDPRoute"]);
    assert_eq!(gw.listeners[0].attached_routes, 2, "every accepted route counts, served or not");
    assert_eq!(gw.listeners[1].attached_routes, 1);
    let conflicted = |l: usize| {
        let c = gw.listeners[l].conditions.iter().find(|c| c.type_ == "Conflicted").unwrap();
        (c.status, c.reason)
    };
    assert_eq!(conflicted(0), (false, "NoConflicts"));
    assert_eq!(conflicted(1), (false, "NoConflicts"), "UDP and TCP share a port number");
    assert_eq!(conflicted(2), (true, "ProtocolConflict"), "a second TCP listener on one port");
    assert_eq!(fleet.listeners[2].port, 0);
    assert_eq!(conflicted(3), (true, "ProtocolConflict"), "HTTP and TCP cannot share a port");
    assert_eq!(conflicted(4), (true, "ProtocolConflict"));

    let accepted = |name: &str| {
        let r = set.routes.iter().find(|r| r.key.name == name).expect(name);
        let c = r.parents[0].conditions.iter().find(|c| c.type_ == "Accepted").unwrap();
        (r.kind, c.status)
    };
    assert_eq!(accepted("older"), ("TCPRoute", true));
    assert_eq!(accepted("newer"), ("TCPRoute", true), "both are accepted, as the Gateway API asks");
    assert_eq!(accepted("dns"), ("UDPRoute", true));
}

#[test]
fn a_tcp_route_on_a_udp_listener_is_not_allowed() {
    let yaml =
        format!("{CLASS}{L4}{}", route("TCPRoute", "wrong", "2026-01-01T00:00:00Z", "{name: gw, sectionName: udp}"));
    let (t, set) = translate_with_status(&yaml, &Options::default());
    assert!(t.ir.fleets[0].listeners.iter().all(|l| l.l4_routes.is_empty()));
    let c = set.routes[0].parents[0].conditions.iter().find(|c| c.type_ == "Accepted").unwrap();
    assert_eq!((c.status, c.reason), (false, "NotAllowedByListeners"));
    assert_eq!(set.gateways[0].listeners[1].attached_routes, 0);
}
