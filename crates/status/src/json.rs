//! Status values as the API expects them, and comparisons that ignore transition times.

use frontends::gateway_api::status::{Condition, GatewayStatus, RouteParentStatus};
use frontends::httpproxy::status::{ProxyStatus, SubCondition};
use serde_json::{Value, json};

/// Conditions as JSON; a condition that did not change keeps its `lastTransitionTime`.
pub(crate) fn conditions(desired: &[Condition], current: Option<&Value>, now: &str) -> Value {
    let current: Vec<&Value> = current.and_then(Value::as_array).map(|a| a.iter().collect()).unwrap_or_default();
    Value::Array(
        desired
            .iter()
            .map(|c| {
                let status = if c.status { "True" } else { "False" };
                let unchanged = current.iter().find(|x| {
                    x["type"] == c.type_
                        && x["status"] == status
                        && x["reason"] == c.reason
                        && x["message"] == c.message.as_str()
                });
                let since = unchanged.and_then(|x| x["lastTransitionTime"].as_str()).unwrap_or(now);
                json!({
                    "type": c.type_,
                    "status": status,
                    "reason": c.reason,
                    "message": c.message,
                    "observedGeneration": c.observed_generation,
                    "lastTransitionTime": since,
                })
            })
            .collect(),
    )
}

/// The condition types the Gateway API defines for Gateways (and ListenerSets) and their
/// listeners: this controller's to write. A condition of any other type on those objects belongs
/// to another controller and is kept exactly as it is.
const GATEWAY_CONDITION_TYPES: [&str; 11] = [
    "Accepted",
    "AddressesAssigned",
    "Programmed",
    "Ready",
    "ResolvedRefs",
    "Scheduled",
    "InsecureFrontendValidationMode",
    "AttachedListenerSets",
    "Conflicted",
    "Detached",
    "OverlappingTLSConfig",
];

/// [`conditions`], followed by the conditions in `current` of a type this controller does not
/// write, unchanged.
fn conditions_keeping_foreign(desired: &[Condition], current: Option<&Value>, now: &str) -> Value {
    let mut out = conditions(desired, current, now);
    let foreign = current
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        // One of a type written now is ours whatever the list says: a type may appear only once.
        .filter(|c| {
            c["type"]
                .as_str()
                .is_some_and(|t| !GATEWAY_CONDITION_TYPES.contains(&t) && desired.iter().all(|d| d.type_ != t))
        });
    if let Value::Array(list) = &mut out {
        list.extend(foreign.cloned());
    }
    out
}

/// A Gateway's whole status, or a ListenerSet's (the same shape without addresses). Conditions
/// other controllers wrote, on the Gateway and on its listeners, stay.
pub(crate) fn gateway(desired: &GatewayStatus, current: &Value, now: &str) -> Value {
    let listeners: Vec<Value> = desired
        .listeners
        .iter()
        .map(|l| {
            let old = current["listeners"].as_array().and_then(|a| a.iter().find(|x| x["name"] == l.name.as_str()));
            json!({
                "name": l.name,
                "supportedKinds": l.supported_kinds.iter().map(|k| json!({"group": "gateway.networking.k8s.io", "kind": k})).collect::<Vec<_>>(),
                "attachedRoutes": l.attached_routes,
                "conditions": conditions_keeping_foreign(&l.conditions, old.map(|o| &o["conditions"]), now),
            })
        })
        .collect();
    let mut status = json!({
        "conditions": conditions_keeping_foreign(&desired.conditions, Some(&current["conditions"]), now),
        "listeners": listeners,
    });
    if !desired.addresses.is_empty() {
        // Routability on every address, an empty one included, as Gateway API 1.7 asks of an
        // implementation claiming it. A CRD without the field drops it: addresses already
        // written without it, where nothing asks for a scope, are compared without it too, so
        // an unchanged status is not written again.
        let dropped = current["addresses"]
            .as_array()
            .is_some_and(|a| !a.is_empty() && a.iter().all(|x| x.get("routability").is_none()))
            && desired.addresses.iter().all(|a| a.routability.is_empty());
        status["addresses"] = desired
            .addresses
            .iter()
            .map(|a| {
                let mut address = json!({"type": a.type_, "value": a.value});
                if !dropped {
                    address["routability"] = json!(a.routability);
                }
                address
            })
            .collect();
    }
    if let Some(n) = desired.attached_listener_sets {
        status["attachedListenerSets"] = json!(n);
    }
    status
}

/// A route's `status.parents`: other controllers' entries as they are, ours replaced.
pub(crate) fn parents(desired: &[RouteParentStatus], current: &Value, controller: &str, now: &str) -> Value {
    entries(desired, current, controller, now, ("parents", "parentRef"))
}

/// A policy's `status.ancestors`, as [`parents`] (the same shape under other names).
pub(crate) fn ancestors(desired: &[RouteParentStatus], current: &Value, controller: &str, now: &str) -> Value {
    entries(desired, current, controller, now, ("ancestors", "ancestorRef"))
}

fn entries(
    desired: &[RouteParentStatus],
    current: &Value,
    controller: &str,
    now: &str,
    (list, reference): (&str, &str),
) -> Value {
    let mut out: Vec<Value> =
        current[list].as_array().into_iter().flatten().filter(|p| p["controllerName"] != controller).cloned().collect();
    for entry in desired {
        let p = &entry.parent;
        let mut parent_ref = json!({"group": p.group, "kind": p.kind, "namespace": p.namespace, "name": p.name});
        if let Some(s) = &p.section_name {
            parent_ref["sectionName"] = json!(s);
        }
        if let Some(port) = p.port {
            parent_ref["port"] = json!(port);
        }
        let old = current[list]
            .as_array()
            .and_then(|a| a.iter().find(|x| x["controllerName"] == controller && same_ref(&x[reference], &parent_ref)));
        out.push(json!({
            reference: parent_ref,
            "controllerName": controller,
            "conditions": conditions(&entry.conditions, old.map(|o| &o["conditions"]), now),
        }));
    }
    Value::Array(out)
}

/// An HTTPProxy's status as upstream writes it; conditions of other types are kept, the `Valid`
/// condition keeps its transition time while it says the same.
pub(crate) fn proxy(desired: &ProxyStatus, load_balancer: Option<&Value>, current: &Value, now: &str) -> Value {
    let status = if desired.valid { "True" } else { "False" };
    let subs = |list: &[SubCondition]| -> Value {
        list.iter()
            .map(|s| json!({"type": s.type_, "status": "True", "reason": s.reason, "message": s.message}))
            .collect()
    };
    let mut valid = json!({
        "type": "Valid",
        "status": status,
        "observedGeneration": desired.generation,
        "reason": desired.reason,
        "message": desired.message,
    });
    if !desired.errors.is_empty() {
        valid["errors"] = subs(&desired.errors);
    }
    if !desired.warnings.is_empty() {
        valid["warnings"] = subs(&desired.warnings);
    }
    let others = current["conditions"].as_array().into_iter().flatten().filter(|c| c["type"] != "Valid");
    let old = current["conditions"].as_array().into_iter().flatten().find(|c| c["type"] == "Valid");
    let unchanged = old
        .filter(|o| o["status"] == status && o["reason"] == desired.reason && o["message"] == desired.message.as_str());
    valid["lastTransitionTime"] = json!(unchanged.and_then(|o| o["lastTransitionTime"].as_str()).unwrap_or(now));
    let mut out = json!({
        "currentStatus": desired.current_status,
        "description": desired.description,
        "conditions": others.cloned().chain([valid]).collect::<Vec<_>>(),
    });
    if let Some(lb) = load_balancer {
        out["loadBalancer"] = lb.clone();
    }
    out
}

/// An ExtensionService's status: the `Valid` condition of [`proxy`], with no summary fields.
pub(crate) fn extension(desired: &ProxyStatus, current: &Value, now: &str) -> Value {
    let status = proxy(desired, None, current, now);
    json!({"conditions": status["conditions"]})
}

/// Applies `patch` to `target` by JSON merge-patch rules (RFC 7386): objects merge key by key, a
/// null removes the key, anything else replaces.
pub(crate) fn merge(target: &mut Value, patch: &Value) {
    let Value::Object(fields) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(serde_json::Map::new());
    }
    let object = target.as_object_mut().expect("made an object");
    for (key, value) in fields {
        if value.is_null() {
            object.remove(key);
        } else {
            merge(object.entry(key.clone()).or_insert(Value::Null), value);
        }
    }
}

/// Parent refs are equal when their fields are, with the API's defaults filled in.
fn same_ref(a: &Value, b: &Value) -> bool {
    let field = |v: &Value, k: &str, default: &str| v[k].as_str().unwrap_or(default).to_string();
    ["group", "kind", "namespace", "name", "sectionName"].iter().all(|k| {
        let default = match *k {
            "group" => "gateway.networking.k8s.io",
            "kind" => "Gateway",
            _ => "",
        };
        field(a, k, default) == field(b, k, default)
    }) && a["port"] == b["port"]
}

/// Equal but for transition times (and null fields).
pub(crate) fn same(a: &Value, b: &Value) -> bool {
    store::seen::strip(a.clone()) == store::seen::strip(b.clone())
}

/// A digest of a value without its transition times (see [`store::seen::digest`]): equal
/// digests, [`same`] values.
pub(crate) fn digest(v: &Value) -> u64 {
    store::seen::digest(v)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn merge_follows_merge_patch_rules() {
        let mut status = json!({"parents": [{"a": 1}], "other": {"keep": true, "drop": 1}, "x": 1});
        super::merge(&mut status, &json!({"parents": [{"b": 2}], "other": {"drop": null, "new": 2}}));
        assert_eq!(status, json!({"parents": [{"b": 2}], "other": {"keep": true, "new": 2}, "x": 1}));
        let mut none = serde_json::Value::Null;
        super::merge(&mut none, &json!({"a": {"b": null, "c": 1}}));
        assert_eq!(none, json!({"a": {"c": 1}}));
    }

    #[test]
    fn conditions_of_other_controllers_stay_on_the_gateway_and_its_listeners() {
        use frontends::gateway_api::status::{Condition, GatewayStatus, ListenerStatus};
        let condition =
            |type_, status, reason| Condition { type_, status, reason, message: String::new(), observed_generation: 2 };
        let desired = GatewayStatus {
            key: objects::ObjectKey::new("infra", "gw"),
            uid: "u".into(),
            conditions: vec![condition("Accepted", true, "Accepted"), condition("Programmed", true, "Programmed")],
            addresses: vec![],
            listeners: vec![ListenerStatus {
                name: "http".into(),
                supported_kinds: vec!["HTTPRoute"],
                attached_routes: 0,
                conditions: vec![condition("Accepted", true, "Accepted")],
            }],
            attached_listener_sets: None,
        };
        let foreign = json!({"type": "example.com/Audited", "status": "True", "reason": "Seeded", "message": "",
            "observedGeneration": 1, "lastTransitionTime": "2026-01-01T00:00:00Z"});
        let current = json!({
            "conditions": [
                {"type": "Accepted", "status": "False", "reason": "Pending", "message": "", "observedGeneration": 1},
                {"type": "Conflicted", "status": "True", "reason": "Old", "message": "", "observedGeneration": 1},
                foreign,
            ],
            "listeners": [{"name": "http", "conditions": [foreign, {"type": "ResolvedRefs", "status": "True"}]}],
        });
        let status = super::gateway(&desired, &current, "2026-02-02T00:00:00Z");
        let types = |v: &serde_json::Value| -> Vec<String> {
            v.as_array().unwrap().iter().map(|c| c["type"].as_str().unwrap().to_string()).collect()
        };
        assert_eq!(types(&status["conditions"]), ["Accepted", "Programmed", "example.com/Audited"]);
        assert_eq!(status["conditions"][2], foreign, "kept exactly as it was");
        assert_eq!(types(&status["listeners"][0]["conditions"]), ["Accepted", "example.com/Audited"]);
        // A type written now is never kept beside it as another controller's.
        let mut with_new = desired.clone();
        with_new.conditions.push(condition("example.com/Audited", true, "Ours"));
        let status = super::gateway(&with_new, &current, "2026-02-02T00:00:00Z");
        assert_eq!(types(&status["conditions"]), ["Accepted", "Programmed", "example.com/Audited"]);
        assert_eq!(status["listeners"][0]["conditions"][1], foreign);
    }

    #[test]
    fn addresses_carry_routability_unless_the_crd_drops_it() {
        use frontends::gateway_api::addresses::StatusAddress;
        use frontends::gateway_api::status::GatewayStatus;
        let address = |value: &str, routability: &str| StatusAddress {
            type_: "IPAddress",
            value: value.into(),
            routability: routability.into(),
        };
        let mut desired = GatewayStatus {
            key: objects::ObjectKey::new("infra", "gw"),
            uid: "u".into(),
            conditions: vec![],
            addresses: vec![address("192.0.2.1", "")],
            listeners: vec![],
            attached_listener_sets: None,
        };
        let now = "2026-02-02T00:00:00Z";
        let first = super::gateway(&desired, &serde_json::Value::Null, now);
        assert_eq!(first["addresses"], json!([{"type": "IPAddress", "value": "192.0.2.1", "routability": ""}]));
        // Written before and dropped by the CRD: compared without it.
        let dropped = json!({"addresses": [{"type": "IPAddress", "value": "192.0.2.1"}]});
        let again = super::gateway(&desired, &dropped, now);
        assert_eq!(again["addresses"], json!([{"type": "IPAddress", "value": "192.0.2.1"}]));
        // A scope asked for: the CRD has the field.
        desired.addresses = vec![address("10.96.0.9", "Cluster")];
        let scoped = super::gateway(&desired, &dropped, now);
        assert_eq!(scoped["addresses"], json!([{"type": "IPAddress", "value": "10.96.0.9", "routability": "Cluster"}]));
    }
}
