//! Leader election on a coordination.k8s.io/v1 Lease, with upstream Contour's defaults
//! (15 s lease, 10 s renew deadline, 2 s retry, Lease `leader-elect`).
//!
//! Every replica serves xDS; only the holder writes status. Leadership is a deadline on the
//! monotonic clock: a leader that stops renewing (paused, partitioned) stops being leader on its
//! own, before anyone else can take the lease over.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, Time};
use kube::api::{Api, PostParams};
use tokio::sync::watch;
use tokio::time::Instant;
use tracing::{info, warn};

/// Settings, with upstream's flag names in the binary.
#[derive(Debug, Clone)]
pub struct Options {
    /// The Lease name.
    pub name: String,
    /// The Lease namespace.
    pub namespace: String,
    /// This replica's identity (the pod name).
    pub identity: String,
    /// How long a lease is valid without renewal.
    pub lease_duration: Duration,
    /// How long the leader keeps trying to renew before it gives up leadership.
    pub renew_deadline: Duration,
    /// How often to try to acquire or renew.
    pub retry_period: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            name: "leader-elect".into(),
            namespace: "projectcontour".into(),
            identity: "contour".into(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }
}

/// Whether this replica leads. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Leadership {
    until: watch::Receiver<Option<Instant>>,
    /// The lease was last acquired from a previous holder rather than created.
    took_over: Arc<AtomicBool>,
    /// Keeps the channel open for [`Leadership::always`], which has no election task.
    _always: Option<Arc<watch::Sender<Option<Instant>>>>,
}

impl Leadership {
    /// Leadership that never ends (`--disable-leader-election`).
    pub fn always() -> Self {
        let (tx, until) = watch::channel(Some(Instant::now() + Duration::from_secs(100 * 365 * 24 * 3600)));
        Self { until, took_over: Arc::default(), _always: Some(Arc::new(tx)) }
    }

    /// Whether this replica leads right now.
    pub fn is_leader(&self) -> bool {
        self.until.borrow().is_some_and(|until| Instant::now() < until)
    }

    /// Whether this replica's leadership began by taking the lease over from a previous holder
    /// (another replica, or an earlier run), who wrote status before; false when it created the
    /// lease.
    pub fn took_over(&self) -> bool {
        self.took_over.load(Ordering::Relaxed)
    }

    /// Resolves when leadership may have changed (acquired, renewed or lost).
    pub async fn changed(&mut self) -> bool {
        self.until.changed().await.is_ok()
    }
}

/// Runs the election until `stop` resolves, then releases the lease if held (the task ends
/// when that is done).
pub fn spawn(
    client: kube::Client,
    options: Options,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> (Leadership, tokio::task::JoinHandle<()>) {
    let (tx, until) = watch::channel(None);
    let took_over = Arc::new(AtomicBool::new(false));
    let task = tokio::spawn(run(client, options, tx, Arc::clone(&took_over), stop));
    (Leadership { until, took_over, _always: None }, task)
}

async fn run(
    client: kube::Client,
    o: Options,
    tx: watch::Sender<Option<Instant>>,
    took_over: Arc<AtomicBool>,
    stop: impl std::future::Future<Output = ()>,
) {
    let api: Api<Lease> = Api::namespaced(client, &o.namespace);
    // The last record seen and when it changed, on our clock: a lease is expired when its record
    // has not changed for a lease duration (clocks of other replicas are not trusted).
    let mut observed: Option<(Option<String>, Option<String>, Instant)> = None;
    let mut last_renew: Option<Instant> = None;
    tokio::pin!(stop);
    loop {
        let attempt = Instant::now();
        match try_acquire_or_renew(&api, &o, &mut observed, &took_over).await {
            Ok(true) => {
                if last_renew.is_none() {
                    info!(lease = %o.name, identity = %o.identity, "became leader");
                    tokio::spawn(record_event(api.clone(), o.clone()));
                }
                last_renew = Some(attempt);
                tx.send_replace(Some(attempt + o.renew_deadline));
            }
            Ok(false) => {
                if last_renew.take().is_some() {
                    warn!(lease = %o.name, "lost the lease to another replica");
                }
                tx.send_replace(None);
            }
            Err(e) => {
                warn!(lease = %o.name, error = %e, "leader election request failed");
                if last_renew.is_some_and(|t| t.elapsed() >= o.renew_deadline) {
                    warn!(lease = %o.name, "could not renew within the deadline; no longer leader");
                    last_renew = None;
                    tx.send_replace(None);
                }
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(o.retry_period) => {}
            _ = &mut stop => break,
        }
    }
    if last_renew.is_some() && tx.borrow().is_some_and(|until| Instant::now() < until) {
        tx.send_replace(None);
        release(&api, &o).await;
    }
}

/// One round of the election: true when we hold the lease afterwards.
async fn try_acquire_or_renew(
    api: &Api<Lease>,
    o: &Options,
    observed: &mut Option<(Option<String>, Option<String>, Instant)>,
    took_over: &AtomicBool,
) -> Result<bool, kube::Error> {
    let now = MicroTime(k8s_openapi::jiff::Timestamp::now());
    let duration = o.lease_duration.as_secs() as i32;
    let current = match api.get_opt(&o.name).await? {
        Some(l) => l,
        None => {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(o.name.clone()),
                    namespace: Some(o.namespace.clone()),
                    ..Default::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(o.identity.clone()),
                    lease_duration_seconds: Some(duration),
                    acquire_time: Some(now.clone()),
                    renew_time: Some(now),
                    lease_transitions: Some(0),
                    ..Default::default()
                }),
            };
            return match api.create(&PostParams::default(), &lease).await {
                Ok(_) => {
                    took_over.store(false, Ordering::Relaxed);
                    Ok(true)
                }
                Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
                Err(e) => Err(e),
            };
        }
    };
    let spec = current.spec.clone().unwrap_or_default();
    let holder = spec.holder_identity.clone().filter(|h| !h.is_empty());
    let record = (holder.clone(), spec.renew_time.as_ref().map(|t| t.0.to_string()));
    let changed_at = match observed {
        Some((h, r, at)) if (h.clone(), r.clone()) == record => *at,
        _ => {
            *observed = Some((record.0.clone(), record.1.clone(), Instant::now()));
            Instant::now()
        }
    };
    let theirs_valid = Duration::from_secs(spec.lease_duration_seconds.unwrap_or(duration).max(1) as u64);
    let ours = holder.as_deref() == Some(o.identity.as_str());
    if !ours && holder.is_some() && changed_at.elapsed() < theirs_valid {
        return Ok(false);
    }
    let mut lease = current;
    let spec = lease.spec.get_or_insert_with(Default::default);
    if !ours {
        spec.acquire_time = Some(now.clone());
        spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
        spec.holder_identity = Some(o.identity.clone());
    }
    spec.renew_time = Some(now);
    spec.lease_duration_seconds = Some(duration);
    // `replace` carries the resourceVersion we read: a concurrent writer makes this a 409.
    match api.replace(&o.name, &PostParams::default(), &lease).await {
        Ok(_) => {
            if !ours {
                took_over.store(true, Ordering::Relaxed);
            }
            Ok(true)
        }
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
        Err(e) => Err(e),
    }
}

/// The Event client-go's leader election records on becoming leader: reason `LeaderElection` on
/// the Lease, from the component named after this replica's identity. Best effort: a failure is
/// a warning (the Role may not grant events).
async fn record_event(leases: Api<Lease>, o: Options) {
    let lease = leases.get_opt(&o.name).await.ok().flatten();
    let now = k8s_openapi::jiff::Timestamp::now();
    let event = Event {
        metadata: ObjectMeta {
            name: Some(format!("{}.{:x}", o.name, now.as_nanosecond())),
            namespace: Some(o.namespace.clone()),
            ..Default::default()
        },
        involved_object: ObjectReference {
            api_version: Some("coordination.k8s.io/v1".into()),
            kind: Some("Lease".into()),
            name: Some(o.name.clone()),
            namespace: Some(o.namespace.clone()),
            uid: lease.as_ref().and_then(|l| l.metadata.uid.clone()),
            resource_version: lease.as_ref().and_then(|l| l.metadata.resource_version.clone()),
            ..Default::default()
        },
        reason: Some(ir::reason::LEADER_ELECTION.into()),
        message: Some(format!("{} became leader", o.identity)),
        type_: Some("Normal".into()),
        source: Some(EventSource { component: Some(o.identity.clone()), host: None }),
        first_timestamp: Some(Time(now)),
        last_timestamp: Some(Time(now)),
        count: Some(1),
        ..Default::default()
    };
    let events: Api<Event> = Api::namespaced(leases.into_client(), &o.namespace);
    if let Err(e) = events.create(&PostParams::default(), &event).await {
        warn!(lease = %o.name, error = %e, "could not record the LeaderElection event");
    }
}

/// Gives the lease up so another replica takes over at once (on SIGTERM).
async fn release(api: &Api<Lease>, o: &Options) {
    let Ok(Some(mut lease)) = api.get_opt(&o.name).await else { return };
    let spec = lease.spec.get_or_insert_with(Default::default);
    if spec.holder_identity.as_deref() != Some(o.identity.as_str()) {
        return;
    }
    spec.holder_identity = None;
    spec.lease_duration_seconds = Some(1);
    spec.renew_time = Some(MicroTime(k8s_openapi::jiff::Timestamp::now()));
    match api.replace(&o.name, &PostParams::default(), &lease).await {
        Ok(_) => info!(lease = %o.name, "released the lease"),
        Err(e) => warn!(lease = %o.name, error = %e, "could not release the lease"),
    }
}
