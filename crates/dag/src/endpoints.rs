//! A cluster's endpoints from the EndpointSlices of its Service. Kept apart from the build so an
//! endpoint-only change can skip it.

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use objects::Snapshot;
use objects::services::slice_service;
use objects::types::EndpointSlice;

use crate::Cluster;
use ir::ServicePort;

/// EndpointSlices by namespace and Service name, for looking up many clusters at once.
pub struct SliceIndex<'a> {
    by_service: HashMap<(&'a str, &'a str), Vec<&'a EndpointSlice>>,
}

impl<'a> SliceIndex<'a> {
    /// Indexes every EndpointSlice of a snapshot by its `kubernetes.io/service-name` label.
    pub fn new(snapshot: &'a Snapshot) -> Self {
        Self::of_slices(snapshot.endpoint_slices.iter(), |_, _| true)
    }

    fn of_slices(
        slices: impl Iterator<Item = (&'a objects::ObjectKey, &'a Arc<EndpointSlice>)>,
        wanted: impl Fn(&str, &str) -> bool,
    ) -> Self {
        let mut by_service: HashMap<(&str, &str), Vec<&EndpointSlice>> = HashMap::new();
        for (key, slice) in slices {
            if let Some(service) = slice_service(slice)
                && wanted(&key.namespace, service)
            {
                by_service.entry((key.namespace.as_str(), service)).or_default().push(slice);
            }
        }
        Self { by_service }
    }

    /// The slices of one Service.
    fn slices_of<'s>(&'s self, service: &'s ServicePort) -> &'s [&'a EndpointSlice] {
        let key = (service.namespace.as_str(), service.name.as_str());
        self.by_service.get(&key).map_or(&[], Vec::as_slice)
    }

    /// The ready endpoints of a cluster, each with its health-check port when the cluster checks
    /// another Service port (slices may map that port differently, so it is per endpoint).
    pub fn endpoints(&self, cluster: &Cluster) -> Vec<Endpoint> {
        let mut out = Vec::new();
        for (i, (service, port_name)) in cluster.services().enumerate() {
            let locality = cluster.locality_weights.get(i).map(|&weight| Locality { index: i as u32, weight });
            endpoints_from(cluster, port_name, locality, self.slices_of(service).iter().copied(), &mut out);
        }
        out.sort();
        out.dedup();
        out
    }
}

/// The endpoint port of a slice for a Service port name.
fn port_named(slice: &EndpointSlice, name: &str) -> Option<u16> {
    let port = slice.ports.iter().flatten().find(|p| p.name.as_deref().unwrap_or_default() == name)?;
    port.port.and_then(|p| u16::try_from(p).ok())
}

/// Appends the ready endpoints of one Service's slices, on the Service port named `port_name`.
fn endpoints_from<'a>(
    cluster: &Cluster,
    port_name: &str,
    locality: Option<Locality>,
    slices: impl Iterator<Item = &'a EndpointSlice>,
    out: &mut Vec<Endpoint>,
) {
    for slice in slices {
        let Some(port) = port_named(slice, port_name) else {
            continue;
        };
        let health_port = cluster.health_port_name.as_deref().and_then(|name| port_named(slice, name));
        for endpoint in slice.endpoints.iter().flatten() {
            if endpoint.conditions.as_ref().and_then(|c| c.ready) == Some(false) {
                continue;
            }
            for address in &endpoint.addresses {
                if let Ok(ip) = address.parse::<IpAddr>() {
                    out.push(Endpoint { address: SocketAddr::new(ip, port), health_port, locality });
                }
            }
        }
    }
}

/// One ready endpoint of a cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Endpoint {
    /// Where traffic goes.
    pub address: SocketAddr,
    /// The port active health checks go to, when not the traffic port.
    pub health_port: Option<u16>,
    /// The locality the endpoint belongs to, when its cluster weighs several (see
    /// [`Cluster::locality_weights`]).
    pub locality: Option<Locality>,
}

/// A weighted group of a cluster's endpoints: one backend of a UDPRoute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Locality {
    /// The backend's position in the cluster's Services.
    pub index: u32,
    /// Its relative weight.
    pub weight: u32,
}

/// The endpoints of every cluster of a fleet, by cluster name.
pub type FleetEndpoints = std::collections::BTreeMap<String, Arc<[Endpoint]>>;

/// A Service, as a cluster names it and an EndpointSlice's label does: (namespace, name).
type ServiceKey = (String, String);

/// What the endpoint stage kept from the previous build, so a build costs what changed.
///
/// [`EndpointCache::begin`] starts each build: it finds the Services whose slices changed since
/// the previous build by a diff of the two slice maps that skips the chunks they share, and
/// keeps an index from each Service to its slices up to date with it. Per fleet, the clusters
/// of the previous build are kept with an index from each Service to the clusters that use it:
/// [`fleet_endpoint_changes`] then looks at the clusters that differ between the previous map
/// and this one (again a diff past the shared chunks) and at the clusters of changed Services.
#[derive(Debug, Default)]
pub struct EndpointCache {
    /// The slices at the previous build.
    seen: Option<Arc<objects::Objects<EndpointSlice>>>,
    /// The Services whose slices changed since then (`None`: not known, every fleet is
    /// computed whole).
    changed: Option<ServiceSet>,
    /// Each Service's slices, by key.
    slices: rustc_hash::FxHashMap<ServiceKey, Vec<objects::ObjectKey>>,
    fleets: rustc_hash::FxHashMap<String, FleetState>,
    /// Counts builds; fleets a build did not look at are forgotten.
    epoch: u64,
}

/// One fleet's clusters as the previous build saw them.
#[derive(Debug, Default)]
struct FleetState {
    clusters: chunkmap::ChunkMap<String, Arc<Cluster>>,
    /// The clusters each Service's endpoints go to.
    by_service: rustc_hash::FxHashMap<ServiceKey, rustc_hash::FxHashSet<String>>,
    epoch: u64,
}

impl FleetState {
    fn add(&mut self, cluster: &Cluster) {
        for (s, _) in cluster.services() {
            let key = (s.namespace.clone(), s.name.clone());
            self.by_service.entry(key).or_default().insert(cluster.name.clone());
        }
    }

    fn remove(&mut self, cluster: &Cluster) {
        for (s, _) in cluster.services() {
            let key = (s.namespace.clone(), s.name.clone());
            if let Some(names) = self.by_service.get_mut(&key) {
                names.remove(&cluster.name);
                if names.is_empty() {
                    self.by_service.remove(&key);
                }
            }
        }
    }
}

/// What a fleet's load assignments need after a build: every cluster's endpoints (`whole`), or
/// the endpoints of the clusters that changed and the names of those that went.
#[derive(Debug, Default, PartialEq)]
pub struct EndpointChanges {
    /// Whether `endpoints` holds every cluster's (nothing kept from before).
    pub whole: bool,
    /// Endpoints by cluster name.
    pub endpoints: FleetEndpoints,
    /// Clusters (names) whose load assignments go.
    pub removed: Vec<String>,
}

impl EndpointCache {
    /// Starts a build over `snapshot`: which Services' slices changed since the previous one.
    pub fn begin(&mut self, snapshot: &Snapshot) {
        let slices = &snapshot.endpoint_slices;
        self.changed = match &self.seen {
            Some(seen) if Arc::ptr_eq(seen, slices) => Some(ServiceSet::default()),
            Some(seen) => {
                let mut changed = ServiceSet::default();
                let index = &mut self.slices;
                seen.diff(
                    slices,
                    |a, b| Arc::ptr_eq(a, b) || a == b,
                    |key, before, after| {
                        for (slice, present) in [(before, false), (after, true)] {
                            let Some(service) = slice.and_then(|s| slice_service(s)) else { continue };
                            changed.insert(&key.namespace, service);
                            let keys = index.entry((key.namespace.clone(), service.to_string())).or_default();
                            keys.retain(|k| k != key);
                            if present {
                                keys.push(key.clone());
                            }
                        }
                        std::ops::ControlFlow::Continue(())
                    },
                );
                self.slices.retain(|_, keys| !keys.is_empty());
                Some(changed)
            }
            None => {
                self.slices.clear();
                for (key, slice) in slices.iter() {
                    if let Some(service) = slice_service(slice) {
                        self.slices.entry((key.namespace.clone(), service.to_string())).or_default().push(key.clone());
                    }
                }
                None
            }
        };
        self.seen = Some(Arc::clone(slices));
        self.epoch += 1;
    }

    /// Ends a build: fleets it did not look at are forgotten.
    pub fn sweep(&mut self) {
        let epoch = self.epoch;
        self.fleets.retain(|_, f| f.epoch == epoch);
    }

    /// The slices of `services`, by the kept index.
    fn index<'a>(&self, snapshot: &'a Snapshot, services: impl Iterator<Item = ServiceKey>) -> SliceIndex<'a> {
        let mut by_service: HashMap<(&'a str, &'a str), Vec<&'a EndpointSlice>> = HashMap::new();
        for service in services {
            for key in self.slices.get(&service).into_iter().flatten() {
                if let Some((k, slice)) = snapshot.endpoint_slices.get_key_value(key)
                    && let Some(name) = slice_service(slice)
                {
                    by_service.entry((k.namespace.as_str(), name)).or_default().push(slice);
                }
            }
        }
        SliceIndex { by_service }
    }
}

/// What `fleet`'s load assignments need since the previous build that [`EndpointCache::begin`]
/// started (`whole`: compute every cluster's, as for a fleet not seen before). ExternalName
/// clusters resolve their name themselves: they have no load assignment.
pub fn fleet_endpoint_changes(
    fleet: &crate::FleetDag,
    snapshot: &Snapshot,
    cache: &mut EndpointCache,
    whole: bool,
) -> EndpointChanges {
    let epoch = cache.epoch;
    let eds = |c: &Arc<Cluster>| c.external_name.is_none();
    let kept = cache.fleets.remove(&fleet.id).filter(|_| !whole && cache.changed.is_some());
    let Some(mut state) = kept else {
        let mut state = FleetState { clusters: fleet.clusters.clone(), epoch, ..Default::default() };
        let clusters: Vec<&Arc<Cluster>> = fleet.clusters.values().filter(|c| eds(c)).collect();
        for c in &clusters {
            state.add(c);
        }
        let index = if clusters.len() <= 64 {
            cache.index(
                snapshot,
                clusters.iter().flat_map(|c| c.services()).map(|(s, _)| (s.namespace.clone(), s.name.clone())),
            )
        } else {
            SliceIndex::new(snapshot)
        };
        let endpoints = clusters.iter().map(|c| (c.name.clone(), index.endpoints(c).into())).collect();
        cache.fleets.insert(fleet.id.clone(), state);
        return EndpointChanges { whole: true, endpoints, removed: Vec::new() };
    };
    let mut affected: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
    let mut removed = Vec::new();
    let before = std::mem::take(&mut state.clusters);
    before.diff(
        &fleet.clusters,
        |a, b| Arc::ptr_eq(a, b) || a == b,
        |name, was, now| {
            if let Some(was) = was.filter(|c| eds(c)) {
                state.remove(was);
            }
            match now.filter(|c| eds(c)) {
                Some(now) => {
                    state.add(now);
                    affected.insert(name.clone());
                }
                None => removed.push(name.clone()),
            }
            std::ops::ControlFlow::Continue(())
        },
    );
    if let Some(changed) = &cache.changed {
        for service in changed.iter() {
            if let Some(names) = state.by_service.get(&service) {
                affected.extend(names.iter().cloned());
            }
        }
    }
    let clusters: Vec<&Arc<Cluster>> = affected.iter().filter_map(|name| fleet.clusters.get(name.as_str())).collect();
    let index = cache.index(
        snapshot,
        clusters.iter().flat_map(|c| c.services()).map(|(s, _)| (s.namespace.clone(), s.name.clone())),
    );
    let endpoints = clusters.iter().map(|c| (c.name.clone(), index.endpoints(c).into())).collect();
    state.clusters = fleet.clusters.clone();
    state.epoch = epoch;
    cache.fleets.insert(fleet.id.clone(), state);
    EndpointChanges { whole: false, endpoints, removed }
}

/// A set of Services (namespace, name), looked up without building owned keys: a few (a new
/// app's one) compared in place, more through a map.
#[derive(Debug, Default)]
struct ServiceSet {
    few: Vec<(String, String)>,
    many: HashMap<String, HashSet<String>>,
}

/// Up to this many Services are compared one by one.
const FEW: usize = 8;

impl ServiceSet {
    /// Whether the Service `namespace`/`name` is in the set.
    fn contains(&self, namespace: &str, name: &str) -> bool {
        self.few.iter().any(|(ns, n)| n == name && ns == namespace)
            || (!self.many.is_empty() && self.many.get(namespace).is_some_and(|names| names.contains(name)))
    }

    /// Every Service of the set.
    fn iter(&self) -> impl Iterator<Item = ServiceKey> + '_ {
        self.few
            .iter()
            .cloned()
            .chain(self.many.iter().flat_map(|(ns, names)| names.iter().map(move |n| (ns.clone(), n.clone()))))
    }

    fn insert(&mut self, namespace: &str, name: &str) {
        if self.contains(namespace, name) {
            return;
        }
        if self.few.len() < FEW && self.many.is_empty() {
            self.few.push((namespace.to_string(), name.to_string()));
            return;
        }
        for (ns, n) in self.few.drain(..) {
            self.many.entry(ns).or_default().insert(n);
        }
        self.many.entry(namespace.to_string()).or_default().insert(name.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::ServiceSet;

    #[test]
    fn changed_services_are_found_whether_few_or_many() {
        let names: Vec<String> = (0..20).map(|i| format!("svc-{i}")).collect();
        let mut set = ServiceSet::default();
        for (i, name) in names.iter().enumerate() {
            set.insert("apps", name);
            assert!(names[..=i].iter().all(|n| set.contains("apps", n)), "after {i}");
            assert!(!set.contains("other", name) && !set.contains("apps", "svc-99"));
        }
        assert!(set.few.is_empty(), "more than a few are kept in the map");
    }
}
