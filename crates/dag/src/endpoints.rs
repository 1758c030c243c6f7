//! A cluster's endpoints from the EndpointSlices of its Service. Kept apart from the build so an
//! endpoint-only change can skip it.

use std::collections::HashMap;
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
    changed: Option<rustc_hash::FxHashSet<ServiceKey>>,
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
            Some(seen) if Arc::ptr_eq(seen, slices) => Some(Default::default()),
            Some(seen) => {
                let mut changed = rustc_hash::FxHashSet::default();
                let index = &mut self.slices;
                seen.diff(
                    slices,
                    |a, b| Arc::ptr_eq(a, b) || a == b,
                    |key, before, after| {
                        for (slice, present) in [(before, false), (after, true)] {
                            let Some(service) = slice.and_then(|s| slice_service(s)) else { continue };
                            let service = (key.namespace.clone(), service.to_string());
                            let keys = index.entry(service.clone()).or_default();
                            keys.retain(|k| k != key);
                            if present {
                                keys.push(key.clone());
                            } else if keys.is_empty() {
                                index.remove(&service);
                            }
                            changed.insert(service);
                        }
                        std::ops::ControlFlow::Continue(())
                    },
                );
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

    /// The endpoints of `clusters`, from the slices of their Services found by the kept index.
    fn endpoints_of(&self, snapshot: &Snapshot, clusters: &[&Arc<Cluster>]) -> FleetEndpoints {
        let mut by_service: HashMap<(&str, &str), Vec<&EndpointSlice>> = HashMap::new();
        for (service, _) in clusters.iter().flat_map(|c| c.services()) {
            let key = (service.namespace.clone(), service.name.clone());
            for key in self.slices.get(&key).into_iter().flatten() {
                if let Some((k, slice)) = snapshot.endpoint_slices.get_key_value(key)
                    && let Some(name) = slice_service(slice)
                {
                    by_service.entry((k.namespace.as_str(), name)).or_default().push(slice);
                }
            }
        }
        let index = SliceIndex { by_service };
        clusters.iter().map(|c| (c.name.clone(), index.endpoints(c).into())).collect()
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
        let endpoints = cache.endpoints_of(snapshot, &clusters);
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
        for service in changed {
            if let Some(names) = state.by_service.get(service) {
                affected.extend(names.iter().cloned());
            }
        }
    }
    let clusters: Vec<&Arc<Cluster>> = affected.iter().filter_map(|name| fleet.clusters.get(name.as_str())).collect();
    let endpoints = cache.endpoints_of(snapshot, &clusters);
    state.clusters = fleet.clusters.clone();
    state.epoch = epoch;
    cache.fleets.insert(fleet.id.clone(), state);
    EndpointChanges { whole: false, endpoints, removed }
}
