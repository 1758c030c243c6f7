use frontends::httpproxy::status::ProxyStatus;

use super::*;

fn proxy(valid: bool) -> ProxyStatus {
    ProxyStatus {
        key: objects::ObjectKey::new("n", "p"),
        vhost: "a.example".into(),
        uid: "u".into(),
        generation: 1,
        current_status: if valid { "valid" } else { "invalid" },
        description: "Valid HTTPProxy".into(),
        valid,
        reason: if valid { "Valid" } else { "ErrorPresent" },
        message: "Valid HTTPProxy".into(),
        errors: Vec::new(),
        warnings: Vec::new(),
    }
}

#[test]
fn what_was_written_matches_the_same_desired_status_and_no_other() {
    let desired = Desired::Proxy(proxy(true), None);
    // As written to an object that also carries another controller's condition, long ago.
    let server = json!({"conditions": [{"type": "Other", "status": "True", "reason": "X", "message": "m",
                                        "lastTransitionTime": "2020-01-01T00:00:00Z"}]});
    let Desired::Proxy(p, _) = &desired else { unreachable!() };
    let ours = json::proxy(p, None, &server, "2026-01-01T00:00:00Z");
    let written = Written::of(None, &ours, &desired);
    assert!(written.matches(&desired, "c"));
    assert!(!written.matches(&Desired::Proxy(proxy(false), None), "c"));
    assert!(!written.matches(&Desired::Proxy(proxy(true), Some(json!({"ingress": [{"ip": "1.2.3.4"}]}))), "c"));

    // The pass over every proxy compares the same digest without rendering: equal for the
    // same desired status and address, and for no other.
    let address = json!({"ingress": [{"ip": "1.2.3.4"}]});
    let fast = |p: &ProxyStatus, lb: Option<&Value>| Some(proxy_digest(p, lb.map(address_digest)));
    assert_eq!(written.desired, fast(&proxy(true), None));
    assert_ne!(written.desired, fast(&proxy(false), None));
    assert_ne!(written.desired, fast(&proxy(true), Some(&address)));
    let with_address = Desired::Proxy(proxy(true), Some(address.clone()));
    assert_eq!(Written::of(None, &ours, &with_address).desired, fast(&proxy(true), Some(&address)));

    let routes = Desired::Route(Vec::new());
    let none = Written::of(None, &json::parents(&[], &Value::Null, "c", "now"), &routes);
    assert_eq!(none.desired, Some(frontends::gateway_api::status::digest(&[])), "routes are compared as computed, too");
    assert!(none.matches(&routes, "c"));
    assert!(!none.entries);

    // A route's entries: the same digest for the same entries, another for any change.
    let entry = |accepted: bool| frontends::gateway_api::status::RouteParentStatus {
        parent: frontends::gateway_api::status::ParentRefStatus {
            group: "gateway.networking.k8s.io".into(),
            kind: "Gateway".into(),
            namespace: "infra".into(),
            name: "gw".into(),
            section_name: None,
            port: None,
        },
        conditions: vec![frontends::gateway_api::status::Condition {
            type_: "Accepted",
            status: accepted,
            reason: ir::reason::ACCEPTED,
            message: "Accepted by the Gateway".into(),
            observed_generation: 1,
        }],
    };
    let route = Desired::Route(vec![entry(true)]);
    let written = Written::of(None, &json::parents(&[entry(true)], &Value::Null, "c", "now"), &route);
    assert_eq!(written.desired, Some(frontends::gateway_api::status::digest(&[entry(true)])));
    assert_ne!(written.desired, Some(frontends::gateway_api::status::digest(&[entry(false)])));
    assert_ne!(written.desired, Some(frontends::gateway_api::status::digest(&[])));
    assert!(written.entries);
}
