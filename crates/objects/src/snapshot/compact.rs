//! Objects shrunk to their contents before they are shared.
//!
//! Deserializing a list from JSON grows its `Vec` by doubling from four elements, so an
//! HTTPProxy with one route holds room for four 1 KiB routes, and an EndpointSlice with one
//! endpoint room for four. At 10k apps that is over 50 MiB of spare capacity kept for the
//! object's lifetime. Each kind with lists that matter gives it back here, once, before the
//! object goes behind its `Arc`.

use crate::types::*;

/// Gives spare list capacity back.
pub(crate) trait Compact {
    /// Shrinks every list that matters to its length.
    fn compact(&mut self) {}
}

fn shrink<T>(list: &mut Option<Vec<T>>) -> &mut [T] {
    match list {
        Some(v) => {
            v.shrink_to_fit();
            v
        }
        None => &mut [],
    }
}

impl Compact for HTTPProxy {
    fn compact(&mut self) {
        for route in shrink(&mut self.spec.routes) {
            shrink(&mut route.conditions);
            shrink(&mut route.services);
        }
        for include in shrink(&mut self.spec.includes) {
            shrink(&mut include.conditions);
        }
        if let Some(tcp) = self.spec.tcpproxy.as_mut() {
            shrink(&mut tcp.services);
        }
    }
}

impl Compact for HTTPRoute {
    fn compact(&mut self) {
        shrink(&mut self.spec.hostnames);
        shrink(&mut self.spec.parent_refs);
        for rule in shrink(&mut self.spec.rules) {
            shrink(&mut rule.backend_refs);
            shrink(&mut rule.filters);
            shrink(&mut rule.matches);
        }
    }
}

impl Compact for EndpointSlice {
    fn compact(&mut self) {
        for endpoint in shrink(&mut self.endpoints) {
            endpoint.addresses.shrink_to_fit();
        }
        shrink(&mut self.ports);
    }
}

impl Compact for Service {
    fn compact(&mut self) {
        if let Some(spec) = self.spec.as_mut() {
            shrink(&mut spec.ports);
            shrink(&mut spec.cluster_ips);
        }
    }
}

/// Kinds whose lists are short, or whose objects are few.
macro_rules! as_deserialized {
    ($($ty:ty),*) => { $(impl Compact for $ty {})* };
}
as_deserialized!(
    GatewayClass,
    Gateway,
    GRPCRoute,
    TLSRoute,
    TCPRoute,
    UDPRoute,
    ListenerSet,
    ReferenceGrant,
    BackendTLSPolicy,
    Ingress,
    IngressClass,
    ExtensionService,
    TLSCertificateDelegation,
    Secret,
    ConfigMap,
    Namespace
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_shrunk_to_their_length() {
        let json = serde_json::json!({
            "apiVersion": "projectcontour.io/v1", "kind": "HTTPProxy",
            "metadata": {"name": "a", "namespace": "n"},
            "spec": {"virtualhost": {"fqdn": "a.example"},
                     "routes": [{"conditions": [{"prefix": "/"}], "services": [{"name": "s", "port": 80}]}]}
        });
        let mut proxy: HTTPProxy = serde_json::from_value(json.clone()).unwrap();
        let before = proxy.clone();
        proxy.compact();
        assert_eq!(proxy, before);
        let routes = proxy.spec.routes.as_ref().unwrap();
        assert_eq!(routes.capacity(), 1);
        assert_eq!(routes[0].services.as_ref().unwrap().capacity(), 1);
        assert_eq!(routes[0].conditions.as_ref().unwrap().capacity(), 1);

        let mut slice: EndpointSlice = serde_json::from_value(serde_json::json!({
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "addressType": "IPv4",
            "metadata": {"name": "s-1", "namespace": "n"},
            "endpoints": [{"addresses": ["10.0.0.1"]}], "ports": [{"port": 80}]
        }))
        .unwrap();
        slice.compact();
        assert_eq!(slice.endpoints.as_ref().unwrap().capacity(), 1);
    }
}
