//! The controller loop: snapshot → front ends → DAG → xDS → server, debounced.
//!
//! [`build`] is the pure pipeline. [`Controller`] runs it whenever the store changes, after a
//! holdoff, and sends endpoint-only changes straight to EDS without rebuilding.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use objects::{Kind, Snapshot};
use store::Store;
use tokio::time::Instant;
use tracing::{info, warn};
use xds::{CompileOptions, FleetResources, ResourceType};
use xds_server::XdsServer;

/// Settings of the pipeline and the loop.
#[derive(Debug, Clone)]
pub struct Options {
    /// The Gateway API front end's settings.
    pub gateway_api: frontends::gateway_api::Options,
    /// The compiler's settings.
    pub compile: CompileOptions,
    /// Quiet time after a change before rebuilding.
    pub holdoff: Duration,
    /// The longest a rebuild waits while changes keep coming.
    pub holdoff_max: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            gateway_api: Default::default(),
            compile: Default::default(),
            holdoff: Duration::from_millis(100),
            holdoff_max: Duration::from_millis(500),
        }
    }
}

/// The result of one full build.
#[derive(Debug, Clone)]
pub struct Build {
    /// The DAG, with every diagnostic.
    pub dag: dag::Dag,
    /// Envoy resources per fleet, endpoints included.
    pub fleets: BTreeMap<String, FleetResources>,
}

/// Runs the whole pure pipeline on a snapshot.
pub fn build(snapshot: &Snapshot, options: &Options) -> Build {
    let translation = frontends::gateway_api::translate(snapshot, &options.gateway_api);
    let dag = dag::build(&translation.ir, snapshot, translation.diagnostics);
    let mut fleets = xds::compile(&dag, &options.compile);
    for (id, fleet) in &dag.fleets {
        let eds = xds::endpoints(fleet, snapshot);
        fleets
            .entry(id.clone())
            .or_default()
            .by_type
            .insert(ResourceType::Endpoint, eds);
    }
    Build { dag, fleets }
}

/// Counters of the loop.
#[derive(Debug, Default)]
pub struct Counters {
    /// Full rebuilds.
    pub rebuilds: AtomicU64,
    /// Endpoint-only updates that skipped the rebuild.
    pub endpoint_updates: AtomicU64,
}

/// Keeps the xDS server in step with the store.
pub struct Controller {
    options: Options,
    server: XdsServer,
    counters: Arc<Counters>,
    last: Option<(Arc<Snapshot>, dag::Dag)>,
}

impl Controller {
    /// A controller feeding `server`.
    pub fn new(options: Options, server: XdsServer) -> Self {
        Self {
            options,
            server,
            counters: Arc::default(),
            last: None,
        }
    }

    /// The loop's counters, shared.
    pub fn counters(&self) -> Arc<Counters> {
        Arc::clone(&self.counters)
    }

    /// Brings the server up to date with a snapshot: EDS only when only EndpointSlices changed,
    /// a full rebuild otherwise.
    pub fn apply(&mut self, snapshot: Arc<Snapshot>) {
        if let Some((previous, dag)) = &self.last {
            let changed = previous.changed_kinds(&snapshot);
            if changed.is_empty() {
                return;
            }
            if changed == BTreeSet::from([Kind::EndpointSlice]) {
                for (id, fleet) in &dag.fleets {
                    self.server
                        .set_endpoints(id, xds::endpoints(fleet, &snapshot));
                }
                self.counters
                    .endpoint_updates
                    .fetch_add(1, Ordering::Relaxed);
                self.last = self.last.take().map(|(_, dag)| (snapshot, dag));
                return;
            }
        }
        let started = std::time::Instant::now();
        let build = build(&snapshot, &self.options);
        let previous: BTreeSet<_> = self
            .last
            .as_ref()
            .map(|(_, d)| d.diagnostics.iter().cloned().collect())
            .unwrap_or_default();
        for d in build
            .dag
            .diagnostics
            .iter()
            .filter(|d| !previous.contains(*d))
        {
            warn!(object = %d.origin, field = %d.field, reason = d.reason, "{}", d.message);
        }
        let (resources, bytes) = build
            .fleets
            .values()
            .map(FleetResources::size)
            .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
        self.server.set_fleets(build.fleets);
        self.counters.rebuilds.fetch_add(1, Ordering::Relaxed);
        info!(
            fleets = build.dag.fleets.len(),
            resources,
            bytes,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "configuration rebuilt"
        );
        self.last = Some((snapshot, build.dag));
    }

    /// Waits for the store to sync, builds, marks the server ready, then follows every change
    /// with the holdoff. Returns when the store is gone.
    pub async fn run(mut self, store: Store) {
        let mut rx = store.subscribe();
        store.wait_synced().await;
        self.apply(Arc::clone(&rx.borrow_and_update()));
        self.server.set_ready();
        while rx.changed().await.is_ok() {
            let first = Instant::now();
            let mut last = first;
            loop {
                let deadline = (last + self.options.holdoff).min(first + self.options.holdoff_max);
                tokio::select! {
                    changed = rx.changed() => {
                        if changed.is_err() { return; }
                        last = Instant::now();
                    }
                    _ = tokio::time::sleep_until(deadline) => break,
                }
            }
            let snapshot = Arc::clone(&rx.borrow_and_update());
            self.apply(snapshot);
        }
    }
}

#[cfg(test)]
mod tests;
