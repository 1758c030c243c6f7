//! The status writer: Gateway API status, computed after every build and every ACK or NACK,
//! written to the API server only where it changed.
//!
//! Writes carry a resourceVersion precondition and retry a bounded number of times on conflict;
//! route `status.parents` entries of other controllers are kept as they are.

mod events;
mod ingress;
mod json;
mod proxies;
mod writer;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use frontends::gateway_api::status::{FleetState, compute_cached};
use tokio::sync::watch;
use xds_server::{Programming, XdsServer};

pub use events::IngressEvents;
pub use ingress::{IngressStatusOptions, load_balancer, load_balancers};

/// What the writer needs to know about the front ends and where addresses come from.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The Gateway API front end's settings (controller name).
    pub gateway_api: frontends::gateway_api::Options,
    /// The HTTPProxy front end's settings (classes).
    pub httpproxy: frontends::httpproxy::Options,
    /// Where Ingress and HTTPProxy addresses come from.
    pub ingress: IngressStatusOptions,
    /// What the Kubernetes source saw of each object's status, when it records it (see
    /// [`store::StatusSeen`]): writes then need no read first.
    pub seen: Option<store::StatusSeen>,
}
pub use writer::StatusWriter;

/// The kinds whose status the writer writes, in counter order.
pub const KINDS: [&str; 11] = [
    "Gateway",
    "ListenerSet",
    "HTTPRoute",
    "GRPCRoute",
    "TLSRoute",
    "TCPRoute",
    "UDPRoute",
    "BackendTLSPolicy",
    "Ingress",
    "HTTPProxy",
    "ExtensionService",
];

/// Counters of the writer per kind (see [`KINDS`]), with upstream's meaning
/// (`contour_status_update_*`).
#[derive(Debug, Default)]
pub struct Counters {
    /// Status updates attempted (written or found unchanged).
    pub total: [AtomicU64; KINDS.len()],
    /// Writes that succeeded.
    pub success: [AtomicU64; KINDS.len()],
    /// Writes that failed after retries.
    pub failed: [AtomicU64; KINDS.len()],
    /// Conflicts (another writer changed the object first); each is retried.
    pub conflict: [AtomicU64; KINDS.len()],
    /// Updates skipped because the object already said it.
    pub noop: [AtomicU64; KINDS.len()],
    /// Objects read from the API server before a write (not an upstream metric).
    pub reads: [AtomicU64; KINDS.len()],
}

/// The counter index of a kind.
pub(crate) fn kind_index(kind: &str) -> usize {
    KINDS.iter().position(|k| *k == kind).unwrap_or(0)
}

/// Why a write failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The API server refused or could not be reached.
    #[error("{kind} {key}: {source}")]
    Api {
        /// The object kind.
        kind: &'static str,
        /// The object.
        key: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// This replica stopped leading before the write.
    #[error("not the leader")]
    NotLeader,
    /// The object kept changing under us.
    #[error("{kind} {key}: still conflicting after {attempts} attempts")]
    Conflict {
        /// The object kind.
        kind: &'static str,
        /// The object.
        key: String,
        /// How many writes were tried.
        attempts: usize,
    },
}

/// How long status waits after a change for more changes before writing.
pub const HOLDOFF: Duration = Duration::from_millis(200);

/// How often every object's status is read back and repaired if someone else changed it.
pub const RESYNC: Duration = Duration::from_secs(300);

/// How long a fleet's configuration may wait with no Envoy of the fleet connected to this replica
/// before its state is taken from the build alone (upstream's Programmed): with several replicas
/// the fleet's Envoys may all be connected to another one, whose ACKs the leader never sees.
pub const UNSEEN_GRACE: Duration = Duration::from_secs(3);

/// How long the first write of a leadership may wait for the Envoys connected here to accept or
/// reject their first configuration (with none connected, [`UNSEEN_GRACE`] decides sooner).
/// Until then every Gateway would say Pending, and writing thousands of statuses at once takes the
/// API server's and Envoy's CPU while Envoy loads: at 50k HTTPProxies a cold Envoy needs 23 s
/// alone, and more than twice that while the statuses are written. Once the Envoys have
/// answered, one write says it all.
pub const FIRST_VERDICT_WAIT: Duration = Duration::from_secs(60);

/// How long a write after a rebuild may wait for the Envoys connected here to accept or reject
/// it. Written at once, a Gateway would say Pending while its Envoy loads the change and
/// Programmed again right after: two writes, and the Gateway's Programmed condition flapping on
/// every change. At 50k routes Envoy takes about half a second to load a change, and the write
/// taking CPU beside it made that longer.
pub const VERDICT_WAIT: Duration = Duration::from_secs(1);

/// Fleets whose configuration waits while no Envoy of theirs is connected here, since when;
/// those taken as Programmed that way, until an Envoy connected here gives its verdict; and those
/// this leader has judged before.
#[derive(Debug, Default)]
struct Unseen {
    since: BTreeMap<String, tokio::time::Instant>,
    assumed: std::collections::BTreeSet<String>,
    /// Fleets with a verdict or taken as Programmed under this leadership: one that waits again
    /// with no Envoy here has its Envoys on another replica (or none at all), and gets no grace.
    judged: std::collections::BTreeSet<String>,
    /// Every fleet counts as judged: this leader took over from another, which judged them.
    took_over: bool,
}

impl Unseen {
    /// Starts afresh for a new leadership; `took_over` when the lease came from a previous
    /// holder, whose verdicts stand (Programmed) until an Envoy connected here gives one: waiting
    /// for the grace, or for the Envoys that reconnect here to answer, would write Pending over
    /// the previous leader's Programmed (a Gateway flapping at every handover) while the same
    /// Envoys go on serving.
    fn lead(&mut self, took_over: bool) {
        *self = Self { took_over, ..Self::default() };
    }

    /// The state to report for `fleet`: Envoy's verdict; or, once the fleet has waited
    /// [`UNSEEN_GRACE`] with no Envoy connected to this replica (at once when it was judged
    /// before, or when this leader took over), Programmed, which holds (no flapping back to
    /// Pending when an Envoy connects here later) until an Envoy connected here has accepted or
    /// rejected the configuration.
    fn judge(&mut self, fleet: &str, state: Programming, connected: usize, now: tokio::time::Instant) -> Programming {
        if state != Programming::Pending {
            self.since.remove(fleet);
            self.assumed.remove(fleet);
            self.judged.insert(fleet.to_string());
            return state;
        }
        if self.assumed.contains(fleet) {
            return Programming::Programmed;
        }
        let inherited = self.took_over && !self.judged.contains(fleet);
        if !inherited {
            if connected > 0 {
                self.since.remove(fleet);
                return state;
            }
            if !self.judged.contains(fleet) {
                let since = *self.since.entry(fleet.to_string()).or_insert(now);
                if now.duration_since(since) < UNSEEN_GRACE {
                    return Programming::Pending;
                }
            }
        }
        self.since.remove(fleet);
        self.assumed.insert(fleet.to_string());
        self.judged.insert(fleet.to_string());
        Programming::Programmed
    }

    /// When the next waiting fleet reaches its grace, if one has yet to.
    fn next(&self, now: tokio::time::Instant) -> Option<tokio::time::Instant> {
        self.since.values().map(|s| *s + UNSEEN_GRACE).filter(|d| *d > now).min()
    }
}

/// Starts a writer for `client` that follows `published` and the xDS server's feedback.
pub fn spawn(
    client: kube::Client,
    published: watch::Receiver<Option<Arc<controller::Published>>>,
    xds: XdsServer,
    options: Options,
    leadership: election::Leadership,
) -> (tokio::task::JoinHandle<()>, Arc<Counters>) {
    let mut writer = StatusWriter::new(client.clone(), options.gateway_api.controller_name.clone());
    if let Some(seen) = &options.seen {
        writer = writer.with_seen(seen.clone());
    }
    let counters = writer.counters();
    let instance = std::env::var("POD_NAME").ok();
    let events = IngressEvents::new(client, "contour", instance);
    (tokio::spawn(run(writer, events, published, xds, options, leadership)), counters)
}

/// Follows the controller's builds and Envoy's ACKs/NACKs, writing status while this replica
/// leads, until the controller goes away.
pub async fn run(
    mut writer: StatusWriter,
    mut events: IngressEvents,
    mut published: watch::Receiver<Option<Arc<controller::Published>>>,
    xds: XdsServer,
    options: Options,
    mut leadership: election::Leadership,
) {
    let mut feedback = xds.feedback();
    let mut resync = tokio::time::interval(RESYNC);
    resync.tick().await;
    // What Envoy's feedback decided at the last write, per fleet: an ACK that leaves every
    // fleet's state as it was (most ACKs: an endpoint update, a route Envoy took) writes nothing
    // and costs no status computation.
    let mut last_states: Option<(Arc<controller::Published>, BTreeMap<String, Programming>)> = None;
    let mut unseen = Unseen::default();
    let mut leading = false;
    // Until when the next write may still wait for verdicts: the first write of a leadership,
    // or the write after a rebuild while the Envoys connected here load it.
    let mut verdict_due: Option<tokio::time::Instant> = None;
    let mut first_write = false;
    // Route statuses as last computed: a pass computes only the routes that changed.
    let mut routes = frontends::gateway_api::status::RouteCache::default();
    loop {
        let mut only_feedback = false;
        let now = tokio::time::Instant::now();
        let wake = unseen.next(now).into_iter().chain(verdict_due.filter(|d| *d > now)).min();
        tokio::select! {
            changed = published.changed() => if changed.is_err() { return },
            changed = feedback.changed() => if changed.is_err() { return } else { only_feedback = true },
            _ = tokio::time::sleep_until(wake.unwrap_or_else(tokio::time::Instant::now)), if wake.is_some() => only_feedback = true,
            _ = resync.tick() => writer.forget(),
            // A new leader trusts nothing it wrote before.
            alive = leadership.changed() => if alive { writer.forget() } else { return },
        }
        tokio::time::sleep(HOLDOFF).await;
        if !leadership.is_leader() {
            leading = false;
            continue;
        }
        if !leading {
            unseen.lead(leadership.took_over());
            leading = true;
            first_write = true;
            verdict_due = Some(tokio::time::Instant::now() + FIRST_VERDICT_WAIT);
        }
        let Some(p) = published.borrow_and_update().clone() else { continue };
        feedback.borrow_and_update();
        let states: BTreeMap<String, Programming> = p
            .dag
            .fleets
            .keys()
            .map(String::as_str)
            .chain([ir::DEFAULT_FLEET])
            .map(|fleet| {
                let now = tokio::time::Instant::now();
                (fleet.to_string(), unseen.judge(fleet, xds.programming(fleet), xds.connected(fleet), now))
            })
            .collect();
        // The first write waits for every fleet; later ones for fleets whose Envoys are here.
        let awaited =
            states.iter().any(|(fleet, s)| *s == Programming::Pending && (first_write || xds.connected(fleet) > 0));
        if awaited && !only_feedback && verdict_due.is_none() {
            verdict_due = Some(tokio::time::Instant::now() + VERDICT_WAIT);
        }
        if awaited && verdict_due.is_some_and(|due| tokio::time::Instant::now() < due) {
            continue;
        }
        verdict_due = None;
        first_write = false;
        if only_feedback
            && last_states.as_ref().is_some_and(|(published, last)| Arc::ptr_eq(published, &p) && *last == states)
        {
            continue;
        }
        last_states = Some((Arc::clone(&p), states.clone()));
        let clock = std::time::Instant::now();
        let fleet = |fleet: &str| match states.get(fleet).cloned().unwrap_or_else(|| xds.programming(fleet)) {
            Programming::Programmed => FleetState::Programmed,
            Programming::Pending => FleetState::Pending,
            Programming::Rejected(e) => FleetState::Rejected(e),
        };
        let set =
            compute_cached(&p.snapshot, &options.gateway_api, &p.dag.diagnostics, &p.attached, fleet, &mut routes);
        let ingresses = load_balancers(&p.snapshot, &options.ingress);
        let mut proxies = Arc::clone(&p.proxies);
        // Envoy refusing the default fleet's configuration shows on every proxy it serves.
        if let Some(Programming::Rejected(e)) = states.get(ir::DEFAULT_FLEET) {
            for proxy in Arc::make_mut(&mut proxies).iter_mut().filter(|s| s.current_status == "valid") {
                Arc::make_mut(proxy).reject(e);
            }
        }
        let address = load_balancer(&p.snapshot, &options.ingress);
        let extensions = frontends::httpproxy::status::extensions(&p.snapshot, &p.dag.diagnostics);
        let computed = clock.elapsed();
        writer.write(&set, &ingresses, &proxies, &extensions, address.as_ref(), &leadership).await;
        events.publish(&p.snapshot, &p.dag.diagnostics).await;
        // Beside the controller's "configuration rebuilt": what a build costs the status side.
        tracing::info!(
            gateways = set.gateways.len(),
            routes = set.routes.len(),
            proxies = proxies.len(),
            compute_ms = computed.as_millis() as u64,
            write_ms = (clock.elapsed() - computed).as_millis() as u64,
            "statuses computed and written"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fleet_with_no_envoy_here_is_taken_as_programmed_after_the_grace() {
        let start = tokio::time::Instant::now();
        let mut unseen = Unseen::default();
        assert_eq!(unseen.judge("gw", Programming::Pending, 0, start), Programming::Pending);
        assert_eq!(unseen.next(start), Some(start + UNSEEN_GRACE), "the loop wakes when the grace ends");
        let later = start + UNSEEN_GRACE;
        assert_eq!(unseen.judge("gw", Programming::Pending, 0, later), Programming::Programmed);
        assert_eq!(unseen.next(later), None);
        // An Envoy connects here and has not answered yet: no flapping back to Pending.
        assert_eq!(unseen.judge("gw", Programming::Pending, 1, later), Programming::Programmed);
        // Once it has answered, its verdicts count again.
        assert_eq!(unseen.judge("gw", Programming::Programmed, 1, later), Programming::Programmed);
        assert_eq!(unseen.judge("gw", Programming::Pending, 1, later), Programming::Pending);
    }

    #[test]
    fn a_leader_taking_over_keeps_programmed_until_an_envoy_here_answers() {
        let start = tokio::time::Instant::now();
        let mut unseen = Unseen::default();
        unseen.lead(true);
        // No Envoy here, or one that reconnected here and has not answered yet: no Pending.
        assert_eq!(unseen.judge("gw", Programming::Pending, 0, start), Programming::Programmed, "no grace");
        assert_eq!(unseen.next(start), None);
        assert_eq!(unseen.judge("gw", Programming::Pending, 1, start), Programming::Programmed, "no flapping");
        assert_eq!(unseen.judge("back", Programming::Pending, 1, start), Programming::Programmed, "reconnected");
        // An Envoy connected here decides from then on.
        let rejected = Programming::Rejected("bad".into());
        assert_eq!(unseen.judge("gw", rejected.clone(), 1, start), rejected);
        assert_eq!(unseen.judge("gw", Programming::Pending, 1, start), Programming::Pending);
        // A leader that created the lease waits for its Envoys, or the grace.
        unseen.lead(false);
        assert_eq!(unseen.judge("gw", Programming::Pending, 0, start), Programming::Pending);
        assert_eq!(unseen.judge("back", Programming::Pending, 1, start), Programming::Pending);
    }

    #[test]
    fn a_judged_fleet_whose_envoys_are_elsewhere_is_not_pending_again() {
        // The leader's Envoy acknowledged, then moved to another replica; a new build waits.
        let start = tokio::time::Instant::now();
        let mut unseen = Unseen::default();
        assert_eq!(unseen.judge("gw", Programming::Programmed, 1, start), Programming::Programmed);
        assert_eq!(unseen.judge("gw", Programming::Pending, 0, start), Programming::Programmed, "no grace again");
        // Another fleet never judged here still gets its grace.
        assert_eq!(unseen.judge("other", Programming::Pending, 0, start), Programming::Pending);
    }

    #[test]
    fn an_envoy_connected_here_decides_and_its_verdicts_are_kept() {
        let start = tokio::time::Instant::now();
        let mut unseen = Unseen::default();
        unseen.judge("gw", Programming::Pending, 0, start);
        let later = start + UNSEEN_GRACE * 2;
        assert_eq!(unseen.judge("gw", Programming::Pending, 1, later), Programming::Pending, "one here still takes it");
        assert_eq!(unseen.judge("gw", Programming::Pending, 0, later), Programming::Pending, "the wait starts again");
        let rejected = Programming::Rejected("bad".into());
        assert_eq!(unseen.judge("gw", rejected.clone(), 0, later + UNSEEN_GRACE), rejected);
        assert_eq!(unseen.judge("gw", Programming::Programmed, 1, later), Programming::Programmed);
    }
}
