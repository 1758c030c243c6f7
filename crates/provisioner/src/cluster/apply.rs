//! Create-or-update without server-side apply (upstream's provisioner ClusterRole grants no
//! `patch`): whether an object already holds what is asked, and the body of its update, which
//! keeps what the API server and other controllers filled in.

use serde_json::Value;

/// Whether `current` holds every field `desired` sets, with the same value: objects by their
/// keys, lists item by item (items may carry defaulted fields `desired` does not set).
pub fn contains(current: &Value, desired: &Value) -> bool {
    match (current, desired) {
        (Value::Object(c), Value::Object(d)) => d.iter().all(|(k, v)| contains(c.get(k).unwrap_or(&Value::Null), v)),
        (Value::Array(c), Value::Array(d)) => c.len() == d.len() && c.iter().zip(d).all(|(c, d)| contains(c, d)),
        // An empty map or list asked for is what an absent one is.
        (Value::Null, Value::Object(d)) => d.is_empty(),
        (Value::Null, Value::Array(d)) => d.is_empty(),
        _ => current == desired,
    }
}

/// The update of `current` to `desired`: `desired` with `current`'s resourceVersion (so a
/// concurrent change conflicts rather than being lost), the annotations others set, and, for a
/// Service, the addresses and node ports the API server allocated.
pub fn updated(current: &Value, desired: &Value) -> Value {
    let mut out = desired.clone();
    out["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"].clone();
    if let Some(theirs) = current["metadata"]["annotations"].as_object() {
        if !out["metadata"]["annotations"].is_object() {
            out["metadata"]["annotations"] = Value::Object(Default::default());
        }
        for (k, v) in theirs {
            if out["metadata"]["annotations"].get(k).is_none() {
                out["metadata"]["annotations"][k] = v.clone();
            }
        }
    }
    if desired["kind"] == "Service" {
        for field in ["clusterIP", "clusterIPs", "ipFamilies", "healthCheckNodePort"] {
            if out["spec"].get(field).is_none() && !current["spec"][field].is_null() {
                out["spec"][field] = current["spec"][field].clone();
            }
        }
        let allocated: Vec<(Value, Value)> = current["spec"]["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|p| (p["port"].clone(), p["nodePort"].clone()))
            .collect();
        for port in out["spec"]["ports"].as_array_mut().into_iter().flatten() {
            if port.get("nodePort").is_none()
                && let Some((_, node_port)) = allocated.iter().find(|(p, n)| *p == port["port"] && !n.is_null())
            {
                port["nodePort"] = node_port.clone();
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_object_with_defaults_filled_in_holds_what_was_asked() {
        let desired = json!({"metadata": {"name": "a", "labels": {"x": "1"}}, "spec": {"containers": [{"name": "c"}], "volumes": []}});
        let current = json!({
            "metadata": {"name": "a", "labels": {"x": "1", "y": "2"}, "resourceVersion": "7"},
            "spec": {"containers": [{"name": "c", "terminationMessagePath": "/dev/termination-log"}]},
        });
        assert!(contains(&current, &desired));
        let changed = json!({"metadata": {"name": "a", "labels": {"x": "2"}}});
        assert!(!contains(&current, &changed));
        let more = json!({"spec": {"containers": [{"name": "c"}, {"name": "d"}]}});
        assert!(!contains(&current, &more));
    }

    #[test]
    fn an_update_keeps_the_version_others_annotations_and_allocated_addresses() {
        let current = json!({
            "kind": "Service",
            "metadata": {"name": "s", "resourceVersion": "9", "annotations": {"theirs": "1", "mine": "old"}},
            "spec": {"clusterIP": "10.0.0.4", "clusterIPs": ["10.0.0.4"], "ports": [{"port": 80, "nodePort": 30080}, {"port": 81, "nodePort": 30081}]},
        });
        let desired = json!({
            "kind": "Service",
            "metadata": {"name": "s", "annotations": {"mine": "new"}},
            "spec": {"ports": [{"port": 80}, {"port": 82}, {"port": 81, "nodePort": 81}]},
        });
        let out = updated(&current, &desired);
        assert_eq!(out["metadata"]["resourceVersion"], "9");
        assert_eq!(out["metadata"]["annotations"], json!({"theirs": "1", "mine": "new"}));
        assert_eq!(out["spec"]["clusterIP"], "10.0.0.4");
        assert_eq!(out["spec"]["ports"][0]["nodePort"], 30080);
        assert!(out["spec"]["ports"][1].get("nodePort").is_none(), "a new port gets a new node port");
        assert_eq!(out["spec"]["ports"][2]["nodePort"], 81, "an asked-for node port wins");
    }
}
