//! A cluster's endpoints from the EndpointSlices of its Service. Kept apart from the build so an
//! endpoint-only change can skip it.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use objects::Snapshot;
use objects::types::EndpointSlice;

use crate::Cluster;

/// EndpointSlices by namespace and Service name, for looking up many clusters at once.
pub struct SliceIndex<'a> {
    by_service: HashMap<(&'a str, &'a str), Vec<&'a EndpointSlice>>,
}

impl<'a> SliceIndex<'a> {
    /// Indexes every EndpointSlice of a snapshot by its `kubernetes.io/service-name` label.
    pub fn new(snapshot: &'a Snapshot) -> Self {
        let mut by_service: HashMap<(&str, &str), Vec<&EndpointSlice>> = HashMap::new();
        for (key, slice) in &snapshot.endpoint_slices {
            if let Some(service) = slice.metadata.labels.as_ref().and_then(|l| l.get("kubernetes.io/service-name")) {
                by_service.entry((key.namespace.as_str(), service.as_str())).or_default().push(slice);
            }
        }
        Self { by_service }
    }

    /// The ready endpoints of a cluster, each with its health-check port when the cluster checks
    /// another Service port (slices may map that port differently, so it is per endpoint).
    pub fn endpoints(&self, cluster: &Cluster) -> Vec<Endpoint> {
        let slices = self.by_service.get(&(cluster.service.namespace.as_str(), cluster.service.name.as_str()));
        endpoints_from(cluster, slices.into_iter().flatten().copied())
    }
}

/// The endpoint port of a slice for a Service port name.
fn port_named(slice: &EndpointSlice, name: &str) -> Option<u16> {
    let port = slice.ports.iter().flatten().find(|p| p.name.as_deref().unwrap_or_default() == name)?;
    port.port.and_then(|p| u16::try_from(p).ok())
}

fn endpoints_from<'a>(cluster: &Cluster, slices: impl Iterator<Item = &'a EndpointSlice>) -> Vec<Endpoint> {
    let mut out = Vec::new();
    for slice in slices {
        let Some(port) = port_named(slice, &cluster.port_name) else {
            continue;
        };
        let health_port = cluster.health_port_name.as_deref().and_then(|name| port_named(slice, name));
        for endpoint in slice.endpoints.iter().flatten() {
            if endpoint.conditions.as_ref().and_then(|c| c.ready) == Some(false) {
                continue;
            }
            for address in &endpoint.addresses {
                if let Ok(ip) = address.parse::<IpAddr>() {
                    out.push(Endpoint { address: SocketAddr::new(ip, port), health_port });
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// One ready endpoint of a cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Endpoint {
    /// Where traffic goes.
    pub address: SocketAddr,
    /// The port active health checks go to, when not the traffic port.
    pub health_port: Option<u16>,
}

/// The endpoints of every cluster of a fleet, by cluster name.
pub type FleetEndpoints = std::collections::BTreeMap<String, Arc<[Endpoint]>>;

/// Endpoints kept between builds: valid while no Service or EndpointSlice changed.
#[derive(Debug, Default)]
pub struct EndpointCache {
    inputs: (Vec<usize>, Vec<usize>),
    by_cluster: HashMap<String, (Cluster, Arc<[Endpoint]>)>,
}

/// The endpoints of every cluster of a fleet, reusing what `cache` computed for clusters whose
/// inputs did not change.
pub fn fleet_endpoints_cached(
    fleet: &crate::FleetDag,
    snapshot: &Snapshot,
    cache: &mut EndpointCache,
) -> FleetEndpoints {
    let ptrs = |m: &mut dyn Iterator<Item = usize>| m.collect::<Vec<_>>();
    let inputs = (
        ptrs(&mut snapshot.services.values().map(|s| Arc::as_ptr(s) as usize)),
        ptrs(&mut snapshot.endpoint_slices.values().map(|s| Arc::as_ptr(s) as usize)),
    );
    if inputs != cache.inputs {
        cache.inputs = inputs;
        cache.by_cluster.clear();
    }
    let mut index = None;
    let mut out = FleetEndpoints::new();
    for c in fleet.clusters.values() {
        let endpoints = match cache.by_cluster.get(&c.name) {
            Some((cluster, e)) if cluster == c => Arc::clone(e),
            _ => {
                let index = index.get_or_insert_with(|| SliceIndex::new(snapshot));
                let e: Arc<[Endpoint]> = index.endpoints(c).into();
                cache.by_cluster.insert(c.name.clone(), (c.clone(), Arc::clone(&e)));
                e
            }
        };
        out.insert(c.name.clone(), endpoints);
    }
    out
}
