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
        for (key, slice) in snapshot.endpoint_slices.iter() {
            if let Some(service) = slice.metadata.labels.as_ref().and_then(|l| l.get("kubernetes.io/service-name")) {
                by_service.entry((key.namespace.as_str(), service.as_str())).or_default().push(slice);
            }
        }
        Self { by_service }
    }

    /// The slices of a cluster's Service.
    fn slices<'s>(&'s self, cluster: &'s Cluster) -> &'s [&'s EndpointSlice] {
        let key = (cluster.service.namespace.as_str(), cluster.service.name.as_str());
        self.by_service.get(&key).map_or(&[], Vec::as_slice)
    }

    /// The ready endpoints of a cluster, each with its health-check port when the cluster checks
    /// another Service port (slices may map that port differently, so it is per endpoint).
    pub fn endpoints(&self, cluster: &Cluster) -> Vec<Endpoint> {
        endpoints_from(cluster, self.slices(cluster).iter().copied())
    }
}

/// The identities of slices (their `Arc` addresses in the snapshot).
fn identities(slices: &[&EndpointSlice]) -> Vec<usize> {
    slices.iter().map(|s| *s as *const EndpointSlice as usize).collect()
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

/// Endpoints kept between builds, per cluster: valid while the cluster and the EndpointSlices
/// of its Service are the same, so one slice's change recomputes one cluster's endpoints.
#[derive(Debug, Default)]
pub struct EndpointCache {
    /// Every slice's identity at the last call, and a counter bumped whenever they change.
    slices: Vec<usize>,
    epoch: u64,
    by_cluster: HashMap<String, CachedEndpoints>,
}

#[derive(Debug)]
struct CachedEndpoints {
    cluster: Cluster,
    /// The identities of the slices the endpoints came from.
    slices: Vec<usize>,
    endpoints: Arc<[Endpoint]>,
    /// The cache's epoch when `slices` was last found current.
    epoch: u64,
}

/// The endpoints of every cluster of a fleet, reusing what `cache` computed for clusters whose
/// slices did not change.
pub fn fleet_endpoints_cached(
    fleet: &crate::FleetDag,
    snapshot: &Snapshot,
    cache: &mut EndpointCache,
) -> FleetEndpoints {
    let slices = snapshot.identities(objects::Kind::EndpointSlice);
    if slices != cache.slices {
        cache.slices = slices;
        cache.epoch += 1;
    }
    let epoch = cache.epoch;
    let mut index = None;
    let mut out = FleetEndpoints::new();
    for c in fleet.clusters.values() {
        let cached = cache.by_cluster.get_mut(&c.name).filter(|e| e.cluster == *c);
        let endpoints = match cached {
            Some(e) if e.epoch == epoch => Arc::clone(&e.endpoints),
            Some(e) if identities(index.get_or_insert_with(|| SliceIndex::new(snapshot)).slices(c)) == e.slices => {
                e.epoch = epoch;
                Arc::clone(&e.endpoints)
            }
            _ => {
                let index = index.get_or_insert_with(|| SliceIndex::new(snapshot));
                let endpoints: Arc<[Endpoint]> = index.endpoints(c).into();
                let slices = identities(index.slices(c));
                let entry = CachedEndpoints { cluster: c.clone(), slices, endpoints: Arc::clone(&endpoints), epoch };
                cache.by_cluster.insert(c.name.clone(), entry);
                endpoints
            }
        };
        out.insert(c.name.clone(), endpoints);
    }
    out
}
