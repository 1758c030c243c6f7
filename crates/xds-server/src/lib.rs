//! The xDS server: ADS (State-of-the-World and Delta) and the per-type discovery services.
//!
//! Fleets of resources come in from the compiler ([`XdsServer::set_fleets`],
//! [`XdsServer::set_endpoints`]); each Envoy stream serves the fleet its node cluster names.
//! The per-stream state machine ([`stream`]) enforces make-before-break ordering and tracks
//! ACKs and NACKs; a rejected resource is replaced by its last accepted version fleet-wide.

mod fleets;
mod link;
mod peer;
mod protocol;
mod services;
pub mod stream;
mod tls;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::watch;
pub use xds::{FleetResources, Resource, ResourceType, Resources};

pub use certs::DEFAULT_TRUST_DOMAIN;
pub use fleets::{Programming, Rejection};
pub use peer::{PeerInfo, PeerStream, Refusal};
pub use services::{listen, serve, serve_tls};
pub use tls::{Reloading, TlsError, TlsFiles, accept as accept_tls};

/// The fleet Envoys join when their node names no cluster.
pub const DEFAULT_FLEET: &str = "contour";

/// Tunables of the server.
#[derive(Debug, Clone)]
pub struct Options {
    /// How long listeners and routes wait for Envoy to ask for the endpoints of new clusters
    /// before they are sent anyway.
    pub eds_wait: Duration,
    /// Node clusters that also name the default fleet. Upstream's Envoy manifests set the node
    /// cluster to the controller's namespace (`--service-cluster $(CONTOUR_NAMESPACE)`), so that
    /// namespace goes here and those Envoys get the default fleet unchanged.
    pub default_fleet_aliases: Vec<String>,
    /// Delta Envoys get plain-HTTP virtual hosts over VHDS, one by one, instead of inline in
    /// their route configuration. Off by default: a one-host change then sends kilobytes, not
    /// the whole table, but Envoy takes longer to apply it (it rebuilds the table from its
    /// copies of every virtual host).
    pub vhds: bool,
    /// The trust domain of the fleet identities in Envoys' client certificates
    /// (`spiffe://<trust domain>/ns/<namespace>/gateway/<name>`).
    pub trust_domain: String,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            eds_wait: Duration::from_secs(5),
            default_fleet_aliases: Vec::new(),
            vhds: false,
            trust_domain: certs::DEFAULT_TRUST_DOMAIN.to_string(),
        }
    }
}

impl Options {
    /// The fleet an Envoy whose node names `cluster` belongs to.
    pub fn fleet_of(&self, cluster: &str) -> String {
        if cluster.is_empty() || self.default_fleet_aliases.iter().any(|a| a == cluster) {
            DEFAULT_FLEET.to_string()
        } else {
            cluster.to_string()
        }
    }
}

/// The xDS server. Cheap to clone; all clones share state.
#[derive(Clone)]
pub struct XdsServer {
    inner: Arc<Inner>,
    /// Streams come over mTLS: each is checked against its client certificate.
    mtls: bool,
}

struct Inner {
    options: Options,
    fleets: std::sync::Mutex<fleets::Fleets>,
    ready: watch::Sender<bool>,
    stats: Counters,
    links: link::Links,
}

#[derive(Default)]
struct Counters {
    connections: AtomicI64,
    streams_total: AtomicU64,
    unknown_fleet: AtomicU64,
    refused: [AtomicU64; Refusal::ALL.len()],
    pushes: [AtomicU64; TYPES],
    resources_sent: [AtomicU64; TYPES],
    nacks: [AtomicU64; TYPES],
}

/// Counters, read at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Open xDS streams.
    pub connections: i64,
    /// Streams opened since start.
    pub streams_total: u64,
    /// Streams whose node named a fleet the controller has no configuration for.
    pub unknown_fleet: u64,
    /// Streams refused because the client certificate may not receive the fleet the node
    /// names, by reason.
    pub refused: BTreeMap<Refusal, u64>,
    /// Responses sent, by type.
    pub pushes: BTreeMap<ResourceType, u64>,
    /// Resources sent (in responses), by type.
    pub resources_sent: BTreeMap<ResourceType, u64>,
    /// NACKs received, by type.
    pub nacks: BTreeMap<ResourceType, u64>,
}

impl Stats {
    /// All NACKs of all types.
    pub fn nacks_total(&self) -> u64 {
        self.nacks.values().sum()
    }
}

const TYPES: usize = ResourceType::ALL.len();

fn index(t: ResourceType) -> usize {
    ResourceType::ALL.iter().position(|x| *x == t).unwrap_or(0)
}

impl Default for XdsServer {
    fn default() -> Self {
        Self::new(Options::default())
    }
}

impl XdsServer {
    /// A server with no fleets that serves nothing until [`XdsServer::set_ready`].
    pub fn new(options: Options) -> Self {
        let (ready, _) = watch::channel(false);
        Self {
            inner: Arc::new(Inner {
                options,
                fleets: Default::default(),
                ready,
                stats: Counters::default(),
                links: Default::default(),
            }),
            mtls: false,
        }
    }

    /// Replaces the configuration of every fleet except endpoints. Fleets absent from `fleets`
    /// become empty. Returns whether any fleet's resources changed.
    pub fn set_fleets(&self, fleets: BTreeMap<String, FleetResources>) -> bool {
        self.inner.fleets.lock().expect("fleets lock").set_all(fleets)
    }

    /// Replaces the endpoints (EDS) of one fleet, leaving every other type untouched.
    pub fn set_endpoints(&self, fleet: &str, endpoints: Arc<Resources>) {
        self.inner.fleets.lock().expect("fleets lock").set_type(fleet, ResourceType::Endpoint, endpoints);
    }

    /// Marks the first build done: streams start receiving configuration.
    pub fn set_ready(&self) {
        self.inner.ready.send_replace(true);
    }

    /// The counters.
    pub fn stats(&self) -> Stats {
        let c = &self.inner.stats;
        let by_type = |a: &[AtomicU64; TYPES]| {
            ResourceType::ALL.iter().map(|t| (*t, a[index(*t)].load(Ordering::Relaxed))).collect()
        };
        Stats {
            connections: c.connections.load(Ordering::Relaxed),
            streams_total: c.streams_total.load(Ordering::Relaxed),
            unknown_fleet: c.unknown_fleet.load(Ordering::Relaxed),
            refused: Refusal::ALL.iter().map(|r| (*r, c.refused[r.index()].load(Ordering::Relaxed))).collect(),
            pushes: by_type(&c.pushes),
            resources_sent: by_type(&c.resources_sent),
            nacks: by_type(&c.nacks),
        }
    }

    /// How far a fleet's Envoys are with their configuration.
    pub fn programming(&self, fleet: &str) -> Programming {
        self.inner.fleets.lock().expect("fleets lock").programming(fleet)
    }

    /// How many xDS streams of the fleet's Envoys this server holds now.
    pub fn connected(&self, fleet: &str) -> usize {
        self.inner.fleets.lock().expect("fleets lock").connected(fleet)
    }

    /// The resources of a fleet that no Envoy has accepted yet (what keeps it
    /// [`Programming::Pending`]), by type and name.
    pub fn pending(&self, fleet: &str) -> Vec<(ResourceType, String)> {
        self.inner.fleets.lock().expect("fleets lock").pending(fleet)
    }

    /// A receiver that changes whenever an Envoy ACKs or NACKs.
    pub fn feedback(&self) -> watch::Receiver<u64> {
        self.inner.fleets.lock().expect("fleets lock").feedback.subscribe()
    }

    /// Resources Envoy rejected that are still part of the desired configuration, for status.
    pub fn rejections(&self) -> Vec<Rejection> {
        self.inner.fleets.lock().expect("fleets lock").rejections()
    }

    /// Replaces one resource of a fleet as if the compiler had produced it. Test-only: lets a
    /// test make Envoy reject something.
    #[cfg(feature = "testing")]
    pub fn inject_for_test(&self, fleet: &str, t: ResourceType, resource: Resource) {
        self.inner.fleets.lock().expect("fleets lock").inject(fleet, t, resource);
    }
}
