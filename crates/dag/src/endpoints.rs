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

    /// Indexes only the slices of `services`: those of their namespaces are looked at, and
    /// only theirs get a map entry.
    fn of_services(snapshot: &'a Snapshot, services: &ServiceSet) -> Self {
        let slices = services.namespaces().into_iter().flat_map(|ns| {
            let start = objects::ObjectKey::new(ns, "");
            snapshot.endpoint_slices.range(start..).take_while(move |(k, _)| k.namespace == ns)
        });
        Self::of_slices(slices, |ns, service| services.contains(ns, service))
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

/// Endpoints kept between builds, per cluster: valid while the cluster is the same and no
/// EndpointSlice of its Services changed, so a new app's slice computes one cluster's endpoints.
///
/// [`EndpointCache::begin`] starts each build: it finds the Services whose slices changed since
/// the previous build, in one walk over the two slice maps; a cluster's entry from the previous
/// build is then reused unless one of its Services is among them.
#[derive(Debug, Default)]
pub struct EndpointCache {
    /// The slices at the previous build.
    seen: Option<Arc<objects::Objects<EndpointSlice>>>,
    /// The Services whose slices changed since then (`None`: not known, nothing is reused).
    changed: Option<ServiceSet>,
    /// Counts builds; an entry is current if used by this build or the previous one.
    epoch: u64,
    by_cluster: rustc_hash::FxHashMap<String, CachedEndpoints>,
}

#[derive(Debug)]
struct CachedEndpoints {
    cluster: Arc<Cluster>,
    endpoints: Arc<[Endpoint]>,
    /// The build that last computed or reused the entry.
    epoch: u64,
}

impl EndpointCache {
    /// Starts a build over `snapshot`: what changed since the previous one, and entries no build
    /// used since then dropped (their clusters' slices may have changed unseen).
    pub fn begin(&mut self, snapshot: &Snapshot) {
        let slices = &snapshot.endpoint_slices;
        self.changed = match &self.seen {
            Some(seen) if Arc::ptr_eq(seen, slices) => Some(ServiceSet::default()),
            Some(seen) => Some(ServiceSet::from(changed_services(seen, slices))),
            None => None,
        };
        self.seen = Some(Arc::clone(slices));
        self.epoch += 1;
        let epoch = self.epoch;
        self.by_cluster.retain(|_, e| e.epoch + 1 >= epoch);
    }
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

    /// The namespaces of the Services, each once.
    fn namespaces(&self) -> Vec<&str> {
        let mut out: Vec<&str> =
            self.few.iter().map(|(ns, _)| ns.as_str()).chain(self.many.keys().map(String::as_str)).collect();
        out.sort_unstable();
        out.dedup();
        out
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

impl From<HashSet<(String, String)>> for ServiceSet {
    fn from(services: HashSet<(String, String)>) -> Self {
        let mut out = Self::default();
        for (namespace, name) in &services {
            out.insert(namespace, name);
        }
        out
    }
}

/// The Services (namespace, name) whose EndpointSlices differ between two snapshots: those of
/// slices added, removed or changed, by the slices' `kubernetes.io/service-name` labels before
/// and after. A walk over both maps comparing pointers, past the chunks they share.
pub fn services_with_changed_slices(previous: &Snapshot, snapshot: &Snapshot) -> HashSet<(String, String)> {
    changed_services(&previous.endpoint_slices, &snapshot.endpoint_slices)
}

fn changed_services(
    previous: &objects::Objects<EndpointSlice>,
    snapshot: &objects::Objects<EndpointSlice>,
) -> HashSet<(String, String)> {
    let mut out = HashSet::new();
    previous.diff(
        snapshot,
        |a, b| Arc::ptr_eq(a, b) || a == b,
        |key, before, after| {
            for slice in before.into_iter().chain(after) {
                if let Some(service) = slice_service(slice) {
                    out.insert((key.namespace.clone(), service.to_string()));
                }
            }
            std::ops::ControlFlow::Continue(())
        },
    );
    out
}

/// The endpoints of a fleet's clusters whose Service is in `services`, updating `cache`: the
/// endpoint-only change, which leaves every other cluster as it was.
pub fn cluster_endpoints_of(
    fleet: &crate::FleetDag,
    snapshot: &Snapshot,
    services: &HashSet<(String, String)>,
    cache: &mut EndpointCache,
) -> FleetEndpoints {
    let mut out = FleetEndpoints::new();
    if services.is_empty() {
        return out;
    }
    // Looked up by reference: at 10k slices and clusters, a pair of Strings cloned per lookup
    // was most of an endpoint change's time.
    let mut wanted = ServiceSet::default();
    for (ns, name) in services {
        wanted.insert(ns, name);
    }
    // A cluster of several Services (a UDPRoute's, an ExtensionService's) takes the endpoints of
    // all of them, changed or not.
    let affected: Vec<&Arc<Cluster>> = fleet
        .clusters
        .values()
        .filter(|c| c.external_name.is_none() && c.services().any(|(s, _)| wanted.contains(&s.namespace, &s.name)))
        .collect();
    for (s, _) in affected.iter().flat_map(|c| c.services()) {
        wanted.insert(&s.namespace, &s.name);
    }
    let index = SliceIndex::of_services(snapshot, &wanted);
    for c in affected {
        let endpoints: Arc<[Endpoint]> = index.endpoints(c).into();
        let entry = CachedEndpoints { cluster: Arc::clone(c), endpoints: Arc::clone(&endpoints), epoch: cache.epoch };
        cache.by_cluster.insert(c.name.clone(), entry);
        out.insert(c.name.clone(), endpoints);
    }
    out
}

/// The endpoints of every cluster of a fleet, reusing what `cache` computed for clusters whose
/// slices did not change since the previous build ([`EndpointCache::begin`] starts each build;
/// without it nothing is reused).
pub fn fleet_endpoints_cached(
    fleet: &crate::FleetDag,
    snapshot: &Snapshot,
    cache: &mut EndpointCache,
) -> FleetEndpoints {
    let EndpointCache { changed, epoch, by_cluster, .. } = cache;
    let epoch = *epoch;
    // In cluster-name order, as the fleet's clusters: made into a map in one pass at the end.
    let mut out: Vec<(String, Arc<[Endpoint]>)> = Vec::with_capacity(fleet.clusters.len());
    let mut fresh = Vec::new();
    // An ExternalName Service's cluster resolves its name itself: no load assignment over EDS.
    for c in fleet.clusters.values().filter(|c| c.external_name.is_none()) {
        let current =
            changed.as_ref().is_some_and(|changed| !c.services().any(|(s, _)| changed.contains(&s.namespace, &s.name)));
        let cached = by_cluster
            .get_mut(&c.name)
            .filter(|e| current && e.epoch + 1 >= epoch && (Arc::ptr_eq(&e.cluster, c) || e.cluster == *c));
        match cached {
            Some(e) => {
                e.epoch = epoch;
                out.push((c.name.clone(), Arc::clone(&e.endpoints)));
            }
            None => fresh.push(c),
        }
    }
    if fresh.is_empty() {
        return out.into_iter().collect();
    }
    // A few clusters (a new app's): index only their Services' slices.
    let index = if fresh.len() <= 64 {
        let mut services = ServiceSet::default();
        for (s, _) in fresh.iter().flat_map(|c| c.services()) {
            services.insert(&s.namespace, &s.name);
        }
        SliceIndex::of_services(snapshot, &services)
    } else {
        SliceIndex::new(snapshot)
    };
    for c in fresh {
        let endpoints: Arc<[Endpoint]> = index.endpoints(c).into();
        let entry = CachedEndpoints { cluster: Arc::clone(c), endpoints: Arc::clone(&endpoints), epoch };
        by_cluster.insert(c.name.clone(), entry);
        out.push((c.name.clone(), endpoints));
    }
    out.into_iter().collect()
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
