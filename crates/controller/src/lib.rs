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
use tokio::sync::watch;
use tokio::time::Instant;
use tracing::{debug, info, warn};
use xds::{CompileOptions, FleetResources, ResourceType};
use xds_server::XdsServer;

pub use frontends::httpproxy::status::ProxyStatus;

/// Settings of the pipeline and the loop.
#[derive(Debug, Clone)]
pub struct Options {
    /// The Gateway API front end's settings.
    pub gateway_api: frontends::gateway_api::Options,
    /// The HTTPProxy front end's settings.
    pub httpproxy: frontends::httpproxy::Options,
    /// The Ingress front end's settings.
    pub ingress: frontends::ingress::Options,
    /// The DAG's settings.
    pub dag: dag::Options,
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
            httpproxy: Default::default(),
            ingress: Default::default(),
            dag: Default::default(),
            compile: Default::default(),
            holdoff: Duration::from_millis(100),
            holdoff_max: Duration::from_millis(500),
        }
    }
}

impl Options {
    /// The front ends' settings.
    pub fn frontends(&self) -> frontends::AllOptions<'_> {
        frontends::AllOptions { gateway_api: &self.gateway_api, httpproxy: &self.httpproxy, ingress: &self.ingress }
    }
}

/// The result of one full build.
#[derive(Debug, Clone)]
pub struct Build {
    /// The DAG, with every diagnostic.
    pub dag: dag::Dag,
    /// Envoy resources per fleet, endpoints included.
    pub fleets: BTreeMap<String, FleetResources>,
    /// How long each stage took.
    pub timings: Timings,
    /// Routes attached per `(fleet, listener)`, for listener status.
    pub attached: BTreeMap<(String, String), u32>,
}

/// What the last full build produced, for status and the debug endpoint.
#[derive(Debug, Clone)]
pub struct Published {
    /// The objects it was built from.
    pub snapshot: Arc<Snapshot>,
    /// The DAG, with every diagnostic.
    pub dag: Arc<dag::Dag>,
    /// Routes attached per `(fleet, listener)`.
    pub attached: Arc<BTreeMap<(String, String), u32>>,
    /// What every HTTPProxy's status should say (before Envoy's verdict).
    pub proxies: Arc<Vec<Arc<frontends::httpproxy::status::ProxyStatus>>>,
}

/// Time spent per stage of one build.
#[derive(Debug, Clone, Copy, Default)]
pub struct Timings {
    /// Front ends.
    pub translate: Duration,
    /// DAG.
    pub dag: Duration,
    /// xDS compile.
    pub compile: Duration,
    /// Load assignments.
    pub endpoints: Duration,
}

/// Runs the whole pure pipeline on a snapshot.
pub fn build(snapshot: &Snapshot, options: &Options) -> Build {
    Pipeline::default().build(snapshot, options)
}

/// The pipeline with its caches: each stage reuses what it made for objects that did not change
/// since the previous build (by `Arc` identity), so a one-route change costs about one route.
#[derive(Debug, Default)]
pub struct Pipeline {
    frontends: frontends::Caches,
    dag: dag::Cache,
    compile: xds::Cache,
    endpoints: dag::EndpointCache,
    load_assignments: xds::LoadAssignmentCache,
    /// Each fleet's load assignments as last computed, for endpoint-only changes to patch.
    last_eds: BTreeMap<String, Arc<xds::Resources>>,
}

impl Pipeline {
    /// Runs the pipeline; the output is the same as [`build`]'s for the same snapshot.
    pub fn build(&mut self, snapshot: &Snapshot, options: &Options) -> Build {
        let clock = std::time::Instant::now();
        let translation = frontends::translate_all(snapshot, options.frontends(), &mut self.frontends);
        let translate = clock.elapsed();
        let attached = frontends::gateway_api::status::attached_routes(&translation.ir);
        self.dag.set_options(&options.dag);
        let dag = dag::build_cached(&translation.ir, snapshot, translation.diagnostics, &mut self.dag);
        let dag_done = clock.elapsed();
        let mut fleets = xds::compile_cached(&dag, &options.compile, &mut self.compile);
        let compile_done = clock.elapsed();
        for (id, eds) in self.endpoints(&dag, snapshot) {
            fleets.entry(id).or_default().by_type.insert(ResourceType::Endpoint, eds);
        }
        let timings = Timings {
            translate,
            dag: dag_done - translate,
            compile: compile_done - dag_done,
            endpoints: clock.elapsed() - compile_done,
        };
        Build { dag, fleets, timings, attached }
    }

    /// Each fleet's load assignments for `snapshot`'s EndpointSlices: the previous ones patched
    /// with the clusters that changed since the previous call (in the DAG, or by their Services'
    /// slices), found without a walk over every cluster. The full build and the endpoint-only
    /// update both use it; a fleet not seen before is computed whole.
    pub fn endpoints(&mut self, dag: &dag::Dag, snapshot: &Snapshot) -> BTreeMap<String, Arc<xds::Resources>> {
        let mut out = BTreeMap::new();
        self.endpoints.begin(snapshot);
        for (id, fleet) in &dag.fleets {
            let previous = self.last_eds.get(id);
            let changes = dag::fleet_endpoint_changes(fleet, snapshot, &mut self.endpoints, previous.is_none());
            let eds = match previous {
                Some(previous) if !changes.whole => {
                    let mut eds = Arc::clone(previous);
                    xds::update_load_assignments(&mut eds, &changes.endpoints, &mut self.load_assignments);
                    if !changes.removed.is_empty() {
                        let map = Arc::make_mut(&mut eds);
                        for name in &changes.removed {
                            map.remove(name.as_str());
                        }
                    }
                    eds
                }
                _ => Arc::new(xds::load_assignments_cached(&changes.endpoints, &mut self.load_assignments)),
            };
            out.insert(id.clone(), eds);
        }
        self.endpoints.sweep();
        self.load_assignments.sweep();
        self.last_eds = out.clone();
        out
    }
}

/// Counters of the loop.
#[derive(Debug, Default)]
pub struct Counters {
    /// Full rebuilds.
    pub rebuilds: AtomicU64,
    /// Endpoint-only updates that skipped the rebuild.
    pub endpoint_updates: AtomicU64,
    /// Total time spent in full rebuilds, in microseconds.
    pub rebuild_micros: AtomicU64,
    /// When the last full rebuild finished, in seconds since the Unix epoch.
    pub last_rebuild_unix: AtomicU64,
}

/// Keeps the xDS server in step with the store.
pub struct Controller {
    options: Options,
    server: XdsServer,
    counters: Arc<Counters>,
    pipeline: Pipeline,
    last: Option<(Arc<Snapshot>, Arc<dag::Dag>)>,
    /// The last [`Controller::changed_kinds`] answer, for the pair of snapshots it was for.
    last_diff: Option<(Arc<Snapshot>, Arc<Snapshot>, BTreeSet<Kind>)>,
    published: watch::Sender<Option<Arc<Published>>>,
    /// How long the last full rebuild took (see [`leading_gap`]).
    last_build: std::time::Duration,
    /// HTTPProxy statuses of the last build, reused for proxies that did not change.
    statuses: frontends::httpproxy::status::StatusCache,
}

impl Controller {
    /// A controller feeding `server`.
    pub fn new(options: Options, server: XdsServer) -> Self {
        Self {
            options,
            server,
            counters: Arc::default(),
            pipeline: Pipeline::default(),
            last: None,
            last_diff: None,
            published: watch::channel(None).0,
            last_build: Duration::ZERO,
            statuses: Default::default(),
        }
    }

    /// What the latest full build produced (for status and the debug endpoint).
    pub fn published(&self) -> watch::Receiver<Option<Arc<Published>>> {
        self.published.subscribe()
    }

    /// The loop's counters, shared.
    pub fn counters(&self) -> Arc<Counters> {
        Arc::clone(&self.counters)
    }

    /// Whether `snapshot` differs from the last one applied in EndpointSlices alone.
    fn only_endpoints_changed(&mut self, snapshot: &Arc<Snapshot>) -> bool {
        self.changed_kinds(snapshot).is_some_and(|k| k == BTreeSet::from([Kind::EndpointSlice]))
    }

    /// The kinds that differ between the last snapshot applied and `snapshot` (`None` before the
    /// first), remembered for the pair: the loop asks again before it applies, and comparing a
    /// changed kind walks all of its objects.
    fn changed_kinds(&mut self, snapshot: &Arc<Snapshot>) -> Option<BTreeSet<Kind>> {
        let (previous, _) = self.last.as_ref()?;
        if let Some((from, to, kinds)) = &self.last_diff
            && Arc::ptr_eq(from, previous)
            && Arc::ptr_eq(to, snapshot)
        {
            return Some(kinds.clone());
        }
        let kinds = previous.changed_kinds(snapshot);
        self.last_diff = Some((Arc::clone(previous), Arc::clone(snapshot), kinds.clone()));
        Some(kinds)
    }

    /// Brings the server up to date with a snapshot: EDS only when only EndpointSlices changed,
    /// a full rebuild otherwise. Returns whether it rebuilt and Envoy's configuration changed: a
    /// rebuild for objects nothing uses (a new app's Service before its route) does not start a
    /// burst, so the route that follows is not held back by the holdoff.
    pub fn apply(&mut self, snapshot: Arc<Snapshot>) -> bool {
        match self.push(snapshot) {
            Pushed::Done(changed) => changed,
            Pushed::Built(built) => self.follow_up(*built),
        }
    }

    /// The first half of [`Controller::apply`]: brings the xDS server up to date. What is left
    /// (HTTPProxy statuses, the published build) is for [`Controller::follow_up`]; the loop
    /// yields between the two, so the xDS streams this woke send before it goes on. (A task this
    /// one wakes waits in this worker's next-task slot until this one yields.)
    fn push(&mut self, snapshot: Arc<Snapshot>) -> Pushed {
        let changed = self.changed_kinds(&snapshot);
        if let (Some((_, dag)), Some(changed)) = (&self.last, changed) {
            if changed.is_empty() {
                return Pushed::Done(false);
            }
            if changed == BTreeSet::from([Kind::EndpointSlice]) {
                let started = std::time::Instant::now();
                for (id, eds) in self.pipeline.endpoints(dag, &snapshot) {
                    self.server.set_endpoints(&id, eds);
                }
                debug!(elapsed_us = started.elapsed().as_micros() as u64, "endpoints updated");
                self.counters.endpoint_updates.fetch_add(1, Ordering::Relaxed);
                self.last = self.last.take().map(|(_, dag)| (snapshot, dag));
                return Pushed::Done(false);
            }
        }
        let started = std::time::Instant::now();
        let build = self.pipeline.build(&snapshot, &self.options);
        let previous: BTreeSet<_> =
            self.last.as_ref().map(|(_, d)| d.diagnostics.iter().cloned().collect()).unwrap_or_default();
        for d in build.dag.diagnostics.iter().filter(|d| !previous.contains(*d)) {
            warn!(object = %d.origin, field = %d.field, reason = d.reason, "{}", d.message);
        }
        let (resources, bytes) =
            build.fleets.values().map(FleetResources::size).fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
        let timings = build.timings;
        let published = std::time::Instant::now();
        let changed = self.server.set_fleets(build.fleets);
        let publish = published.elapsed();
        self.last_build = started.elapsed();
        self.counters.rebuilds.fetch_add(1, Ordering::Relaxed);
        self.counters.rebuild_micros.fetch_add(started.elapsed().as_micros() as u64, Ordering::Relaxed);
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        self.counters.last_rebuild_unix.store(now.as_secs(), Ordering::Relaxed);
        info!(
            fleets = build.dag.fleets.len(),
            resources,
            bytes,
            elapsed_ms = started.elapsed().as_millis() as u64,
            translate_ms = timings.translate.as_millis() as u64,
            dag_ms = timings.dag.as_millis() as u64,
            compile_ms = timings.compile.as_millis() as u64,
            endpoints_ms = timings.endpoints.as_millis() as u64,
            publish_ms = publish.as_millis() as u64,
            "configuration rebuilt"
        );
        Pushed::Built(Box::new(Built { snapshot, dag: build.dag, attached: build.attached, changed }))
    }

    /// The second half of [`Controller::apply`], after the push: status is not on the path of
    /// Envoy's configuration. Returns whether Envoy's configuration changed.
    fn follow_up(&mut self, built: Built) -> bool {
        let Built { snapshot, dag, attached, changed } = built;
        let proxies = frontends::httpproxy::status::compute_cached(
            &snapshot,
            &self.options.httpproxy,
            &dag.diagnostics,
            &mut self.statuses,
        );
        let dag = Arc::new(dag);
        let published = Published {
            snapshot: Arc::clone(&snapshot),
            dag: Arc::clone(&dag),
            attached: Arc::new(attached),
            proxies: Arc::new(proxies),
        };
        self.published.send_replace(Some(Arc::new(published)));
        self.last = Some((snapshot, dag));
        changed
    }

    /// Waits for the store to sync, builds, marks the server ready, then follows every change.
    /// Returns when the store is gone.
    ///
    /// - Endpoint churn skips the holdoff: a change of EndpointSlices alone goes to EDS after
    ///   [`ENDPOINT_COALESCE`], which takes in a burst of slice events. Traffic leaves a dead pod
    ///   as soon as Envoy hears of it.
    /// - The first change after a quiet period (no rebuild that changed Envoy's configuration
    ///   for `holdoff_max`) rebuilds as soon as the rest of it has come ([`leading_gap`]
    ///   without another change), as upstream rebuilds at once; changes that follow within
    ///   `holdoff_max` are a burst, rebuilt after `holdoff` of quiet and at most `holdoff_max`
    ///   after the burst began. A rebuild that changed nothing for Envoy (a Service no route
    ///   uses yet) does not begin a burst, but only `QUICK_REBUILDS` of those in a row are quick:
    ///   churn of objects nothing uses is debounced like any burst.
    pub async fn run(mut self, store: Store) {
        let mut rx = store.subscribe();
        store.wait_synced().await;
        self.apply(Arc::clone(&rx.borrow_and_update()));
        self.server.set_ready();
        let mut last_effective = Instant::now();
        let mut last_change = Instant::now();
        let mut quick = 0;
        while rx.changed().await.is_ok() {
            let current = Arc::clone(&rx.borrow());
            if self.only_endpoints_changed(&current) {
                tokio::time::sleep(ENDPOINT_COALESCE).await;
                let snapshot = Arc::clone(&rx.borrow_and_update());
                if self.only_endpoints_changed(&snapshot) {
                    self.apply(snapshot);
                    continue;
                }
                // Something else changed meanwhile: that needs a rebuild, below.
            }
            let first = Instant::now();
            debug!("change noticed");
            if first.duration_since(last_change) >= self.options.holdoff_max {
                quick = 0;
            }
            let leading = first.duration_since(last_effective) >= self.options.holdoff_max && quick < QUICK_REBUILDS;
            // After a quiet period, wait only until the change's other objects have come (an
            // app's Service, EndpointSlice and route arrive a few milliseconds apart); in a
            // burst, for the holdoff.
            let (gap, cap) = if leading {
                (leading_gap(self.last_build, self.options.holdoff), self.options.holdoff)
            } else {
                (self.options.holdoff, self.options.holdoff_max)
            };
            let mut last = first;
            loop {
                let deadline = (last + gap).min(first + cap);
                tokio::select! {
                    changed = rx.changed() => {
                        if changed.is_err() { return; }
                        last = Instant::now();
                    }
                    _ = tokio::time::sleep_until(deadline) => break,
                }
            }
            last_change = last;
            debug!(waited_us = first.elapsed().as_micros() as u64, leading, "rebuilding");
            let snapshot = Arc::clone(&rx.borrow_and_update());
            let changed = match self.push(snapshot) {
                Pushed::Done(changed) => changed,
                Pushed::Built(built) => {
                    tokio::task::yield_now().await;
                    self.follow_up(*built)
                }
            };
            if changed {
                last_effective = Instant::now();
                quick = 0;
            } else if leading {
                quick += 1;
            }
        }
    }
}

/// What [`Controller::push`] did.
enum Pushed {
    /// Nothing more to do; whether Envoy's configuration changed.
    Done(bool),
    /// A rebuild, pushed, with its follow-up owed.
    Built(Box<Built>),
}

/// A rebuild pushed to the xDS server, for [`Controller::follow_up`].
struct Built {
    snapshot: Arc<Snapshot>,
    dag: dag::Dag,
    attached: BTreeMap<(String, String), u32>,
    changed: bool,
}

/// How long an EndpointSlice-only change waits for more of its burst before it goes to EDS.
pub const ENDPOINT_COALESCE: Duration = Duration::from_millis(1);

/// After a quiet period, how long the first change waits for another before it rebuilds, at
/// least (see [`leading_gap`]).
pub const LEADING_COALESCE: Duration = Duration::from_millis(5);

/// After a quiet period, how long a change waits for the next before it rebuilds:
/// [`LEADING_COALESCE`], or a quarter of what the last rebuild took when that is longer, and
/// never more than the holdoff. An app's Service, EndpointSlice and route come a few
/// milliseconds apart; rebuilding for the Service alone at 10k objects (60 ms) made the route
/// wait for that rebuild and then its own. Where a rebuild costs little, so does a miss.
pub fn leading_gap(last_build: Duration, holdoff: Duration) -> Duration {
    LEADING_COALESCE.max(last_build / 4).min(holdoff)
}

/// How many quick rebuilds in a row may change nothing for Envoy before changes are treated as
/// a burst.
pub const QUICK_REBUILDS: u32 = 3;

#[cfg(test)]
mod tests;
