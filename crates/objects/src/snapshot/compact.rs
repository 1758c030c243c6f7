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
    /// Also keeps of its metadata only what is read: a slice's labels (the Service's own are
    /// copied onto it), its `last-change-trigger-time` annotation and its owner reference were
    /// each a heap map or list per slice, 544 bytes for a map of one label. Only the Service's
    /// name stays, where [`crate::services::slice_service`] reads it.
    fn compact(&mut self) {
        for endpoint in shrink(&mut self.endpoints) {
            endpoint.addresses.shrink_to_fit();
        }
        shrink(&mut self.ports);
        let meta = &mut self.metadata;
        if let Some(mut labels) = meta.labels.take() {
            meta.generate_name = labels.remove(crate::services::SERVICE_NAME_LABEL);
        } else if meta.annotations.is_some() || meta.owner_references.is_some() {
            meta.generate_name = None;
        }
        meta.annotations = None;
        meta.owner_references = None;
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
    ClusterTrustBundle,
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

    #[test]
    fn a_slice_keeps_only_its_services_name_of_its_metadata() {
        use crate::services::slice_service;
        // As the EndpointSlice controller writes them: the Service's labels copied, a trigger
        // time, an owner reference and a generated name.
        let mut slice: EndpointSlice = serde_json::from_value(serde_json::json!({
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "addressType": "IPv4",
            "metadata": {"name": "web-x7k2p", "namespace": "n", "generateName": "web-",
                "labels": {"kubernetes.io/service-name": "web", "app": "web",
                    "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"},
                "annotations": {"endpoints.kubernetes.io/last-change-trigger-time": "2026-11-26T20:00:00Z"},
                "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": "web", "uid": "u"}]},
            "endpoints": [{"addresses": ["10.0.0.1"]}], "ports": [{"port": 80}]
        }))
        .unwrap();
        assert_eq!(slice_service(&slice), Some("web"));
        slice.compact();
        assert_eq!(slice_service(&slice), Some("web"));
        let meta = &slice.metadata;
        assert!(meta.labels.is_none() && meta.annotations.is_none() && meta.owner_references.is_none());
        let once = slice.clone();
        slice.compact();
        assert_eq!(slice, once, "compacting again changes nothing");

        // A slice no Service owns keeps none, whatever its generated name.
        let mut orphan: EndpointSlice = serde_json::from_value(serde_json::json!({
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "addressType": "IPv4",
            "metadata": {"name": "x-1", "namespace": "n", "generateName": "x-", "labels": {"team": "a"}},
        }))
        .unwrap();
        orphan.compact();
        assert_eq!(slice_service(&orphan), None);
    }
}
