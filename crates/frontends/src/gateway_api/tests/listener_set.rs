//! ListenerSet: who may attach, precedence and conflicts, routes naming a ListenerSet, and
//! references resolved from the ListenerSet's own namespace.

use super::*;

fn listener_set(namespace: &str, name: &str, created: &str, listeners: &str) -> String {
    format!(
        r#"
---
apiVersion: gateway.networking.k8s.io/v1
kind: ListenerSet
metadata: {{name: {name}, namespace: {namespace}, creationTimestamp: "{created}", generation: 2}}
spec:
  parentRef: {{name: gw, namespace: infra}}
  listeners: {listeners}
"#
    )
}

fn fixture(allowed: &str) -> String {
    format!(
        r#"{CLASS}---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {{name: gw, namespace: infra}}
spec:
  gatewayClassName: contour
  allowedListeners: {allowed}
  listeners:
  - {{name: web, port: 80, protocol: HTTP, hostname: gw.example.com, allowedRoutes: {{namespaces: {{from: All}}}}}}
---
apiVersion: v1
kind: Secret
metadata: {{name: cert, namespace: certs}}
type: kubernetes.io/tls
stringData: {{tls.crt: "{PEM}", tls.key: "{KEY}"}}
---
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {{name: to-gateways, namespace: certs}}
spec:
  from: [{{group: gateway.networking.k8s.io, kind: Gateway, namespace: infra}}]
  to: [{{group: '', kind: Secret}}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: via-set, namespace: infra}}
spec:
  parentRefs: [{{kind: ListenerSet, name: older, sectionName: web}}]
  rules: [{{backendRefs: [{{name: web, port: 80}}]}}]
{}{}{}"#,
        listener_set(
            "infra",
            "older",
            "2026-01-01T00:00:00Z",
            "[{name: web, port: 80, protocol: HTTP, hostname: older.example.com},
              {name: clash, port: 80, protocol: TCP},
              {name: tls, port: 443, protocol: HTTPS, hostname: tls.example.com,
               tls: {certificateRefs: [{name: cert, namespace: certs}]}}]"
        ),
        listener_set(
            "infra",
            "newer",
            "2026-01-02T00:00:00Z",
            "[{name: web, port: 80, protocol: HTTP, hostname: older.example.com}]"
        ),
        listener_set("apps", "elsewhere", "2026-01-01T00:00:00Z", "[{name: web, port: 8080, protocol: HTTP}]"),
    )
}

#[test]
fn no_listener_set_attaches_unless_the_gateway_allows_its_namespace() {
    for allowed in ["null", "{namespaces: {from: None}}"] {
        let (t, status) = translate_with_status(&fixture(allowed), &Options::default());
        assert_eq!(t.ir.fleets[0].listeners.len(), 1, "{allowed}: only the Gateway's own listener");
        assert_eq!(status.listener_sets.len(), 3);
        for set in &status.listener_sets {
            assert_eq!(condition(&set.conditions, "Accepted"), (false, "NotAllowed"), "{allowed}");
            assert_eq!(condition(&set.conditions, "Programmed"), (false, "NotAllowed"), "{allowed}");
        }
        let expected = (allowed != "null").then_some(0);
        assert_eq!(status.gateways[0].attached_listener_sets, expected, "{allowed}");
    }
}

#[test]
fn listener_sets_of_allowed_namespaces_add_listeners_in_precedence_order() {
    let (t, status) = translate_with_status(&fixture("{namespaces: {from: Same}}"), &Options::default());
    let names: Vec<(&str, u16)> = t.ir.fleets[0].listeners.iter().map(|l| (l.name.as_str(), l.port)).collect();
    assert_eq!(
        names,
        [
            ("web", 80),
            ("infra/older/web", 80),
            ("infra/older/clash", 0),
            ("infra/older/tls", 0),
            ("infra/newer/web", 0),
        ],
        "the Gateway's own first, then the oldest set; conflicting and unresolved listeners are not served"
    );
    let set = |name: &str| status.listener_sets.iter().find(|s| s.key.name == name).unwrap();
    let listener = |set: &status::GatewayStatus, name: &str| {
        set.listeners.iter().find(|l| l.name == name).unwrap().conditions.clone()
    };
    // A TCP listener on the HTTP port loses to the listeners before it, and says why.
    let clash = listener(set("older"), "clash");
    assert_eq!(condition(&clash, "Accepted"), (false, "ProtocolConflict"));
    assert_eq!(condition(&clash, "Programmed"), (false, "ProtocolConflict"));
    assert_eq!(condition(&clash, "Conflicted"), (true, "ProtocolConflict"));
    // The Gateway's grant is not the ListenerSet's: its certificate in another namespace is refused.
    assert_eq!(condition(&listener(set("older"), "tls"), "ResolvedRefs"), (false, "RefNotPermitted"));
    // The set with a listener served is accepted; the one whose only listener repeats an older
    // hostname is not.
    assert_eq!(condition(&set("older").conditions, "Accepted"), (true, "Accepted"));
    assert_eq!(condition(&listener(set("newer"), "web"), "Accepted"), (false, "HostnameConflict"));
    assert_eq!(condition(&set("newer").conditions, "Accepted"), (false, "ListenersNotValid"));
    assert_eq!(condition(&set("newer").conditions, "Programmed"), (false, "ListenersNotValid"));
    assert_eq!(condition(&set("elsewhere").conditions, "Accepted"), (false, "NotAllowed"));
    assert_eq!(status.gateways[0].attached_listener_sets, Some(1));
    // The Gateway's own listener is untouched by the sets' conflicts.
    assert_eq!(condition(&status.gateways[0].listeners[0].conditions, "Conflicted"), (false, "NoConflicts"));
}

#[test]
fn a_route_naming_a_listener_set_attaches_to_its_listener_alone() {
    let (t, status) = translate_with_status(&fixture("{namespaces: {from: All}}"), &Options::default());
    let fleet = &t.ir.fleets[0];
    let with_route: Vec<&str> =
        fleet.listeners.iter().filter(|l| !l.http_routes.is_empty()).map(|l| l.name.as_str()).collect();
    assert_eq!(with_route, ["infra/older/web"]);
    let older = status.listener_sets.iter().find(|s| s.key.name == "older").unwrap();
    assert_eq!(older.listeners.iter().find(|l| l.name == "web").unwrap().attached_routes, 1);
    let route = status.routes.iter().find(|r| r.key.name == "via-set").expect("the route has our status");
    assert_eq!(
        (route.parents[0].parent.kind.as_str(), route.parents[0].parent.name.as_str()),
        ("ListenerSet", "older")
    );
    assert_eq!(condition(&route.parents[0].conditions, "Accepted"), (true, "Accepted"));
    // All namespaces are allowed now: the set in `apps` adds its own port.
    assert!(fleet.listeners.iter().any(|l| l.name == "apps/elsewhere/web" && l.port == 8080));
    assert_eq!(status.gateways[0].attached_listener_sets, Some(2));
}

#[test]
fn a_listener_set_grant_admits_its_certificate() {
    let grant = "\n---\napiVersion: gateway.networking.k8s.io/v1beta1\nkind: ReferenceGrant
metadata: {name: to-sets, namespace: certs}
spec:
  from: [{group: gateway.networking.k8s.io, kind: ListenerSet, namespace: infra}]
  to: [{group: '', kind: Secret}]\n";
    let yaml = fixture("{namespaces: {from: Same}}") + grant;
    let (t, _) = translate_with_status(&yaml, &Options::default());
    let tls = t.ir.fleets[0].listeners.iter().find(|l| l.name == "infra/older/tls").unwrap();
    assert_eq!(tls.port, 443);
    let certificate = &tls.tls.as_ref().unwrap().certificates[0];
    assert_eq!((certificate.namespace.as_str(), certificate.name.as_str()), ("certs", "cert"));
}

/// A ListenerSet's listener filters are its own: an ExternalAuth server of its namespace checks
/// its listener; one in another namespace needs a grant to the ListenerSet; an ExtensionRef
/// leaves the listener unserved (never served unchecked).
#[test]
fn a_listener_sets_filters_check_its_listeners() {
    let auth = |name: &str, namespace: &str| {
        format!(
            "{{type: ExternalAuth, externalAuth: {{protocol: GRPC, grpc: {{}}, backendRef: {{name: {name}, namespace: {namespace}, port: 9000}}}}}}"
        )
    };
    let yaml = [
        fixture("{namespaces: {from: Same}}"),
        listener_set(
            "infra",
            "checked",
            "2026-01-03T00:00:00Z",
            &format!(
                "[{{name: own, port: 81, protocol: HTTP, filters: {{requests: [{}]}}}},
                  {{name: far, port: 82, protocol: HTTP, filters: {{requests: [{}]}}}},
                  {{name: ext, port: 83, protocol: HTTP, filters: {{requests: [{{type: ExtensionRef, extensionRef: {{group: example.com, kind: F, name: f}}}}]}}}}]",
                auth("authz", "infra"),
                auth("authz", "auth")
            ),
        ),
        "\n---\napiVersion: v1\nkind: Service\nmetadata: {name: authz, namespace: infra}\nspec: {ports: [{port: 9000}]}\n".into(),
        "---\napiVersion: v1\nkind: Service\nmetadata: {name: authz, namespace: auth}\nspec: {ports: [{port: 9000}]}\n".into(),
    ]
    .concat();
    let (t, status) = translate_with_status(&yaml, &Options::default());
    let fleet = &t.ir.fleets[0];
    let listener = |name: &str| fleet.listeners.iter().find(|l| l.name == name).unwrap();
    let own = listener("infra/checked/own");
    assert_eq!((own.port, own.pre_routing.len()), (81, 1));
    assert_eq!(own.pre_routing[0].cluster, "externalauth/infra/authz/9000/grpc");
    assert!(fleet.extensions.iter().any(|e| e.cluster_name() == own.pre_routing[0].cluster));
    assert_eq!(listener("infra/checked/far").port, 0, "no grant: not served");
    assert_eq!(listener("infra/checked/ext").port, 0, "an ExtensionRef: not served");
    let set = status.listener_sets.iter().find(|s| s.key.name == "checked").unwrap();
    let of = |name: &str| &set.listeners.iter().find(|l| l.name == name).unwrap().conditions;
    assert_eq!(condition(of("far"), "ResolvedRefs"), (false, "RefNotPermitted"));
    assert_eq!(condition(of("ext"), "Accepted"), (false, "UnsupportedValue"));
    assert_eq!(condition(of("own"), "Programmed"), (true, "Programmed"));

    // The grant names the ListenerSet, not its Gateway.
    let grant = "---\napiVersion: gateway.networking.k8s.io/v1beta1\nkind: ReferenceGrant
metadata: {name: to-sets, namespace: auth}
spec:
  from: [{group: gateway.networking.k8s.io, kind: ListenerSet, namespace: infra}]
  to: [{group: '', kind: Service}]\n";
    let (t, _) = translate_with_status(&(yaml + grant), &Options::default());
    let far = t.ir.fleets[0].listeners.iter().find(|l| l.name == "infra/checked/far").unwrap();
    assert_eq!((far.port, far.pre_routing[0].cluster.as_str()), (82, "externalauth/auth/authz/9000/grpc"));
}
