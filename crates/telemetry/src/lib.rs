//! The controller's own HTTP endpoints: `/healthz`, `/readyz` and Prometheus `/metrics` (port
//! 8000, as upstream), and `/debug/dag` (Graphviz DOT or JSON, 127.0.0.1:6060).

mod metrics;
mod server;

#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use tokio::sync::watch;

pub use metrics::render;
pub use server::{serve_debug, serve_health, serve_metrics, serve_metrics_tls};

/// What the endpoints read. Cheap to clone.
#[derive(Clone)]
pub struct Telemetry {
    /// The version reported by `contour_build_info`.
    pub version: &'static str,
    /// The controller loop's counters.
    pub counters: Arc<controller::Counters>,
    /// The xDS server (its counters).
    pub xds: xds_server::XdsServer,
    /// The object store (object counts, sync state).
    pub store: store::Store,
    /// The status writer's counters (Kubernetes mode).
    pub status: Option<Arc<status::Counters>>,
    /// What the latest build produced.
    pub published: watch::Receiver<Option<Arc<controller::Published>>>,
    /// The admission webhook's counters, when it is on.
    pub admission: Option<Arc<admission::Counters>>,
}

impl Telemetry {
    /// Ready when every source has synced and the first build is done (xDS is then served).
    pub fn ready(&self) -> bool {
        self.store.is_synced() && self.counters.rebuilds.load(Ordering::Relaxed) > 0
    }
}
