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
    let Some(value) = load_balancer(snapshot, o) else { return Vec::new() };
    snapshot
        .ingresses
        .iter()
        .filter(|(_, i)| frontends::ingress::is_ours(snapshot, i, &o.class_names))
        .map(|(k, i)| (k.clone(), i.metadata.uid.clone().unwrap_or_default(), value.clone()))
        .collect()
}

/// The `status.loadBalancer` of everything the default fleet serves (Ingress, HTTPProxy): the
/// static addresses, else the Envoy Service's; `None` when no address is known.
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
            .filter_map(|i| match (&i.ip, &i.hostname) {
                (Some(ip), _) => Some(json!({"ip": ip})),
                (None, Some(h)) => Some(json!({"hostname": h})),
                _ => None,
            })
            .collect()
    };
    (!ingress.is_empty()).then(|| json!({"ingress": ingress}))
}
