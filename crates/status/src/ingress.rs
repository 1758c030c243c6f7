//! `status.loadBalancer` of the Ingresses this controller serves: the Envoy Service's
//! load-balancer addresses, or the static `--ingress-status-address` list.

use objects::{ObjectKey, Snapshot};
use serde_json::{Value, json};

/// Where Ingress addresses come from.
#[derive(Debug, Clone, Default)]
pub struct IngressStatusOptions {
    /// Ingress classes served (empty: no class or `contour`).
    pub class_names: Vec<String>,
    /// The Envoy Service.
    pub envoy_service: Option<ObjectKey>,
    /// Static addresses that replace the Envoy Service's.
    pub static_addresses: Vec<String>,
}

/// The load-balancer status each of our Ingresses should carry, with the Ingress's uid; empty
/// when no address is known.
pub fn load_balancers(snapshot: &Snapshot, o: &IngressStatusOptions) -> Vec<(ObjectKey, String, Value)> {
    let Some(mut value) = load_balancer(snapshot, o) else { return Vec::new() };
    // An Ingress's entries have no ipMode (networking.k8s.io's type).
    for entry in value["ingress"].as_array_mut().into_iter().flatten() {
        entry.as_object_mut().map(|e| e.remove("ipMode"));
    }
    snapshot
        .ingresses
        .iter()
        .filter(|(_, i)| frontends::ingress::is_ours(snapshot, i, &o.class_names))
        .map(|(k, i)| (k.clone(), i.metadata.uid.clone().unwrap_or_default(), value.clone()))
        .collect()
}

/// The `status.loadBalancer` of everything the default fleet serves (Ingress, HTTPProxy): the
/// static addresses, else the Envoy Service's entries as they are (address, ipMode, ports), as
/// upstream copies them; `None` when no address is known.
pub fn load_balancer(snapshot: &Snapshot, o: &IngressStatusOptions) -> Option<Value> {
    let ingress: Vec<Value> = if !o.static_addresses.is_empty() {
        o.static_addresses
            .iter()
            .map(|a| if a.parse::<std::net::IpAddr>().is_ok() { json!({"ip": a}) } else { json!({"hostname": a}) })
            .collect()
    } else {
        o.envoy_service
            .as_ref()
            .and_then(|k| snapshot.services.get(k))
            .and_then(|s| s.status.as_ref()?.load_balancer.as_ref()?.ingress.clone())
            .unwrap_or_default()
            .iter()
            .filter(|i| i.ip.is_some() || i.hostname.is_some())
            .filter_map(|i| serde_json::to_value(i).ok())
            .collect()
    };
    (!ingress.is_empty()).then(|| json!({"ingress": ingress}))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ENVOY: &str = r#"
apiVersion: v1
kind: Service
metadata: {name: envoy, namespace: projectcontour}
spec: {type: LoadBalancer, ports: [{port: 80}]}
status:
  loadBalancer:
    ingress: [{ip: 192.0.2.1, ipMode: VIP, ports: [{port: 80, protocol: TCP}]}, {hostname: lb.example.net}]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, namespace: apps}
spec: {defaultBackend: {service: {name: web, port: {number: 80}}}}
"#;

    #[test]
    fn proxies_get_the_envoy_services_entries_as_they_are_and_ingresses_without_ip_mode() {
        let snapshot = Snapshot::from_yaml(ENVOY).expect("fixture parses");
        let o = IngressStatusOptions {
            envoy_service: Some(ObjectKey { namespace: "projectcontour".into(), name: "envoy".into() }),
            ..Default::default()
        };
        let mut entries = json!({"ingress": [
            {"ip": "192.0.2.1", "ipMode": "VIP", "ports": [{"port": 80, "protocol": "TCP"}]},
            {"hostname": "lb.example.net"},
        ]});
        assert_eq!(load_balancer(&snapshot, &o), Some(entries.clone()), "upstream copies the Service's entries");
        entries["ingress"][0].as_object_mut().expect("an entry").remove("ipMode");
        let ingresses: Vec<Value> = load_balancers(&snapshot, &o).into_iter().map(|(_, _, v)| v).collect();
        assert_eq!(ingresses, [entries], "an Ingress's entries have no ipMode");
    }
}
