//! Per-fleet configuration: what the compiler wants, what Envoy accepted and rejected, and what
//! streams are served (the wanted set with rejected resources replaced by their last good version).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use tokio::sync::watch;
use xds::{FleetResources, Resource, ResourceType, Resources};

/// Whether a fleet's Envoys run the configuration they are served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Programming {
    /// Every served resource was accepted by at least one Envoy of the fleet.
    Programmed,
    /// Some resource has not been accepted yet (or no Envoy of the fleet is connected).
    Pending,
    /// Envoy rejected part of the configuration; this is its message.
    Rejected(String),
}

/// A resource Envoy rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// The fleet.
    pub fleet: String,
    /// The resource type.
    pub resource_type: ResourceType,
    /// The resource name.
    pub name: String,
    /// The rejected version.
    pub version: String,
    /// Envoy's `error_detail` message.
    pub error: String,
}

pub(crate) struct Fleets {
    fleets: HashMap<String, Fleet>,
    /// Bumped on every ACK and NACK, so status can follow what Envoy accepted.
    pub(crate) feedback: watch::Sender<u64>,
}

impl Default for Fleets {
    fn default() -> Self {
        Self { fleets: HashMap::new(), feedback: watch::channel(0).0 }
    }
}

struct Fleet {
    known: bool,
    desired: FleetResources,
    accepted: HashMap<(ResourceType, Arc<str>), Resource>,
    rejected: BTreeMap<(ResourceType, Arc<str>), (Arc<str>, String)>,
    served: watch::Sender<Arc<FleetResources>>,
    /// Per type: the served map this was worked out for, and the names whose served version
    /// no Envoy has accepted yet. Kept up to date as ACKs come, so the fleet's state costs a
    /// look at a few sets, not a pass over every resource.
    pending: BTreeMap<ResourceType, (Arc<Resources>, HashSet<Arc<str>>)>,
    /// Open streams of this server per type they serve (`None`: ADS, every type). An Envoy
    /// without ADS (upstream's bootstrap) opens a stream per type, and they may reach different
    /// replicas: a type served by another replica is not this one's to judge.
    streams: HashMap<Option<ResourceType>, usize>,
}

impl Fleet {
    fn new(known: bool) -> Self {
        let (served, _) = watch::channel(Arc::new(FleetResources::default()));
        Self {
            known,
            desired: FleetResources::default(),
            accepted: HashMap::new(),
            rejected: BTreeMap::new(),
            served,
            pending: BTreeMap::new(),
            streams: HashMap::new(),
        }
    }

    /// Recomputes what streams see; only notifies them when it changed.
    fn publish(&mut self) {
        let desired = &self.desired;
        self.rejected.retain(|(t, name), (version, _)| desired.of(*t).get(name).is_some_and(|r| r.version == *version));
        let mut served = self.desired.clone();
        for (t, name) in self.rejected.keys() {
            let map = Arc::make_mut(served.by_type.entry(*t).or_default());
            match self.accepted.get(&(*t, Arc::clone(name))) {
                Some(good) => {
                    map.insert(Arc::clone(name), good.clone());
                }
                None => {
                    map.remove(name);
                }
            }
        }
        self.served.send_if_modified(|current| {
            if **current == served {
                false
            } else {
                *current = Arc::new(served);
                true
            }
        });
        self.refresh_pending();
    }

    /// Brings `pending` up to date with the served configuration: only types whose map changed
    /// are looked at, and of those only resources whose version changed are looked up.
    fn refresh_pending(&mut self) {
        let served = Arc::clone(&self.served.borrow());
        self.pending.retain(|t, _| served.by_type.contains_key(t));
        for (t, map) in &served.by_type {
            let old = match self.pending.get(t) {
                Some((seen, _)) if Arc::ptr_eq(seen, map) => continue,
                _ => self.pending.remove(t),
            };
            let waiting = |accepted: &HashMap<(ResourceType, Arc<str>), Resource>, name: &Arc<str>, r: &Resource| {
                accepted.get(&(*t, Arc::clone(name))).is_none_or(|a| a.version != r.version)
            };
            let pending = match old {
                // Only what changed since the map worked out last: the chunks both share are
                // skipped, and a name that kept its version keeps its state.
                Some((before, mut pending)) => {
                    before.diff(map, same_version, |name, _, now| {
                        pending.remove(name);
                        if now.is_some_and(|r| waiting(&self.accepted, name, r)) {
                            pending.insert(Arc::clone(name));
                        }
                        std::ops::ControlFlow::Continue(())
                    });
                    pending
                }
                None => map
                    .iter()
                    .filter(|(name, r)| waiting(&self.accepted, name, r))
                    .map(|(n, _)| Arc::clone(n))
                    .collect(),
            };
            self.pending.insert(*t, (Arc::clone(map), pending));
        }
    }
}

impl Fleets {
    /// Replaces every fleet's resources; returns whether any fleet's resources changed.
    pub(crate) fn set_all(&mut self, fleets: BTreeMap<String, FleetResources>) -> bool {
        let mut changed = false;
        for (id, fleet) in self.fleets.iter_mut() {
            if !fleets.contains_key(id) {
                changed |= fleet.known;
                fleet.known = false;
                fleet.desired = FleetResources::default();
                fleet.publish();
            }
        }
        for (id, mut resources) in fleets {
            let fleet = self.fleets.entry(id).or_insert_with(|| Fleet::new(false));
            // Endpoints arrive separately; keep the current ones when the build carries none.
            if !resources.by_type.contains_key(&ResourceType::Endpoint)
                && let Some(eds) = fleet.desired.by_type.get(&ResourceType::Endpoint)
            {
                resources.by_type.insert(ResourceType::Endpoint, eds.clone());
            }
            changed |= !fleet.known || !same_versions(&fleet.desired, &resources);
            fleet.known = true;
            fleet.desired = resources;
            fleet.publish();
        }
        self.fleets.retain(|_, f| f.known || f.served.receiver_count() > 0);
        changed
    }

    pub(crate) fn set_type(&mut self, id: &str, t: ResourceType, resources: Arc<Resources>) {
        let fleet = self.fleets.entry(id.to_string()).or_insert_with(|| Fleet::new(true));
        fleet.desired.by_type.insert(t, resources);
        fleet.publish();
    }

    #[cfg(feature = "testing")]
    pub(crate) fn inject(&mut self, id: &str, t: ResourceType, resource: Resource) {
        let fleet = self.fleets.entry(id.to_string()).or_insert_with(|| Fleet::new(true));
        fleet.desired.insert(t, resource);
        fleet.publish();
    }

    /// A receiver of the fleet's served configuration, and whether the fleet is known.
    /// A stream serving `only` (every type: ADS) follows the fleet's configuration; call
    /// [`Fleets::unwatch`] when it ends.
    pub(crate) fn watch(
        &mut self,
        id: &str,
        only: Option<ResourceType>,
    ) -> (watch::Receiver<Arc<FleetResources>>, bool) {
        let fleet = self.fleets.entry(id.to_string()).or_insert_with(|| Fleet::new(false));
        *fleet.streams.entry(only).or_default() += 1;
        (fleet.served.subscribe(), fleet.known)
    }

    /// A stream that [`Fleets::watch`]ed ended.
    pub(crate) fn unwatch(&mut self, id: &str, only: Option<ResourceType>) {
        if let Some(count) = self.fleets.get_mut(id).and_then(|f| f.streams.get_mut(&only)) {
            *count = count.saturating_sub(1);
        }
    }

    pub(crate) fn accepted(&mut self, id: &str, t: ResourceType, resources: &[Resource]) {
        self.feedback.send_modify(|n| *n += 1);
        if let Some(fleet) = self.fleets.get_mut(id) {
            for r in resources {
                fleet.accepted.insert((t, Arc::clone(&r.name)), r.clone());
                if let Some((served, pending)) = fleet.pending.get_mut(&t)
                    && served.get(&r.name).is_some_and(|s| s.version == r.version)
                {
                    pending.remove(&r.name);
                }
            }
        }
    }

    /// Records a rejection; returns true when the served configuration changed.
    pub(crate) fn rejected(&mut self, id: &str, t: ResourceType, resources: &[Resource], error: &str) {
        self.feedback.send_modify(|n| *n += 1);
        if let Some(fleet) = self.fleets.get_mut(id) {
            for r in resources {
                fleet.rejected.insert((t, Arc::clone(&r.name)), (Arc::clone(&r.version), error.to_string()));
            }
            fleet.publish();
        }
    }

    /// How far the fleet's Envoys are with the configuration they are served.
    pub(crate) fn programming(&self, id: &str) -> Programming {
        let Some(fleet) = self.fleets.get(id) else { return Programming::Pending };
        if let Some((_, (_, error))) = fleet.rejected.iter().next() {
            return Programming::Rejected(error.clone());
        }
        // Every resource of one form accepted (State-of-the-World: routes inline; Delta: routes
        // over VHDS).
        // The runtime layer does not count: an Envoy bootstrapped without one never asks for it,
        // and its routing is complete without it.
        // With streams of single types here (Envoys without ADS), only their types count: the
        // others are served, and accepted, by another replica.
        let open = |only: Option<ResourceType>| fleet.streams.get(&only).is_some_and(|n| *n > 0);
        let ads = open(None);
        let single = fleet.streams.iter().any(|(only, n)| only.is_some() && *n > 0);
        let judged_here = |t: ResourceType| ads || !single || open(Some(t));
        let accepted = [false, true].into_iter().any(|delta| {
            ResourceType::served_by(delta)
                .iter()
                .filter(|t| **t != ResourceType::Runtime && judged_here(**t))
                .all(|t| fleet.pending.get(t).is_none_or(|(_, p)| p.is_empty()))
        });
        if accepted { Programming::Programmed } else { Programming::Pending }
    }

    /// The streams subscribed to a fleet's configuration.
    pub(crate) fn connected(&self, id: &str) -> usize {
        self.fleets.get(id).map_or(0, |f| f.served.receiver_count())
    }

    /// The resources of a fleet no Envoy has accepted yet, by type and name.
    pub(crate) fn pending(&self, id: &str) -> Vec<(ResourceType, String)> {
        let Some(fleet) = self.fleets.get(id) else { return Vec::new() };
        let mut out: Vec<_> =
            fleet.pending.iter().flat_map(|(t, (_, names))| names.iter().map(move |n| (*t, n.to_string()))).collect();
        out.sort();
        out
    }

    pub(crate) fn rejections(&self) -> Vec<Rejection> {
        let mut out: Vec<_> = self
            .fleets
            .iter()
            .flat_map(|(id, f)| {
                f.rejected.iter().map(move |((t, name), (version, error))| Rejection {
                    fleet: id.clone(),
                    resource_type: *t,
                    name: name.to_string(),
                    version: version.to_string(),
                    error: error.clone(),
                })
            })
            .collect();
        out.sort_by(|a, b| (&a.fleet, a.resource_type, &a.name).cmp(&(&b.fleet, b.resource_type, &b.name)));
        out
    }
}

/// Whether two fleets hold the same resources, by name and content-hash version.
fn same_versions(a: &FleetResources, b: &FleetResources) -> bool {
    let types =
        |f: &FleetResources| f.by_type.iter().filter(|(_, r)| !r.is_empty()).map(|(t, _)| *t).collect::<Vec<_>>();
    types(a) == types(b)
        && a.by_type.iter().all(|(t, resources)| {
            let other = b.of(*t);
            b.shared(*t).is_some_and(|o| Arc::ptr_eq(o, resources))
                || resources.len() == other.len() && {
                    let mut same = true;
                    resources.diff(other, same_version, |_, _, _| {
                        same = false;
                        std::ops::ControlFlow::Break(())
                    });
                    same
                }
        })
}

/// Whether two resources of a name carry the same content.
pub(crate) fn same_version(a: &Resource, b: &Resource) -> bool {
    Arc::ptr_eq(&a.version, &b.version) || a.version == b.version
}
