//! What one Envoy's ADS stream and its VHDS stream tell each other.
//!
//! Envoy takes virtual hosts (VHDS) only on a stream of their own, so make-before-break spans two
//! streams: a virtual host may use a cluster only once Envoy has it (the ADS stream opens the
//! gate on a snapshot whose clusters, endpoints and secrets Envoy acknowledged), and a cluster is
//! removed only once no virtual host Envoy holds uses it (the VHDS stream reports the snapshot
//! whose virtual hosts Envoy acknowledged).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use tokio::sync::watch;
use xds::{FleetResources, ResourceType};

type Snapshot = Option<Arc<FleetResources>>;

/// The link between the streams of one Envoy (fleet and node id).
pub(crate) struct Link {
    /// The newest snapshot whose clusters, endpoints and secrets Envoy has.
    pub(crate) gate: watch::Sender<Snapshot>,
    /// Per open VHDS stream (Envoy opens one per route configuration over VHDS): the snapshot
    /// whose virtual hosts Envoy acknowledged on it.
    vhds: Mutex<BTreeMap<u64, Snapshot>>,
    /// Bumped when a VHDS stream syncs, opens or closes.
    pub(crate) vhds_changed: watch::Sender<u64>,
    next_stream: AtomicU64,
}

impl Link {
    /// Opens the gate on `snapshot` (the ADS stream, when Envoy has its prerequisites).
    pub(crate) fn open_gate(&self, snapshot: &Arc<FleetResources>) {
        self.gate.send_if_modified(|held| {
            if held.as_ref().is_some_and(|h| Arc::ptr_eq(h, snapshot)) {
                false
            } else {
                *held = Some(Arc::clone(snapshot));
                true
            }
        });
    }

    /// Records that the virtual hosts of VHDS stream `guard` are those of `snapshot`.
    pub(crate) fn vhds_synced(&self, guard: &VhdsGuard, snapshot: &Arc<FleetResources>) {
        let mut streams = self.vhds.lock().expect("vhds lock");
        let held = streams.entry(guard.id).or_default();
        if !held.as_ref().is_some_and(|h| Arc::ptr_eq(h, snapshot)) {
            *held = Some(Arc::clone(snapshot));
            drop(streams);
            self.vhds_changed.send_modify(|n| *n += 1);
        }
    }

    /// Whether every VHDS stream of the Envoy holds the virtual hosts of `current` (true
    /// without one).
    pub(crate) fn vhds_in_step(&self, current: &FleetResources) -> bool {
        let want = current.of(ResourceType::VirtualHost);
        self.vhds.lock().expect("vhds lock").values().all(|synced| {
            synced.as_deref().is_some_and(|s| {
                let held = s.of(ResourceType::VirtualHost);
                held.len() == want.len()
                    && held.iter().zip(want).all(|((n1, r1), (n2, r2))| n1 == n2 && r1.version == r2.version)
            })
        })
    }

    /// Registers a VHDS stream until the guard drops.
    pub(crate) fn vhds_stream(self: &Arc<Self>) -> VhdsGuard {
        let id = self.next_stream.fetch_add(1, Ordering::Relaxed);
        self.vhds.lock().expect("vhds lock").insert(id, None);
        self.vhds_changed.send_modify(|n| *n += 1);
        VhdsGuard { link: Arc::clone(self), id }
    }
}

/// Keeps a VHDS stream registered.
pub(crate) struct VhdsGuard {
    link: Arc<Link>,
    id: u64,
}

impl Drop for VhdsGuard {
    fn drop(&mut self) {
        self.link.vhds.lock().expect("vhds lock").remove(&self.id);
        // Wake the ADS stream: it stops waiting for this stream.
        self.link.vhds_changed.send_modify(|n| *n += 1);
    }
}

/// Links by fleet and node id, held while a stream of that Envoy is open.
#[derive(Default)]
pub(crate) struct Links(Mutex<HashMap<(String, String), Weak<Link>>>);

impl Links {
    /// The link of an Envoy, shared by its streams.
    pub(crate) fn get(&self, fleet: &str, node: &str) -> Arc<Link> {
        let mut links = self.0.lock().expect("links lock");
        let key = (fleet.to_string(), node.to_string());
        if let Some(link) = links.get(&key).and_then(Weak::upgrade) {
            return link;
        }
        links.retain(|_, l| l.strong_count() > 0);
        let link = Arc::new(Link {
            gate: watch::channel(None).0,
            vhds: Mutex::new(BTreeMap::new()),
            vhds_changed: watch::channel(0).0,
            next_stream: AtomicU64::new(0),
        });
        links.insert(key, Arc::downgrade(&link));
        link
    }
}
