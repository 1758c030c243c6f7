//! The provisioner's loop: watch GatewayClasses and Gateways, keep class status, Services,
//! addresses and (host mode) Envoy processes in line with them. Level-triggered: every change
//! reconciles everything, which is cheap at the scale of Gateways per cluster.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use api::contourdeployment::{ContourDeployment, ContourDeploymentSpec};
use futures::{FutureExt as _, StreamExt as _};
use gateway_api::gatewayclasses::GatewayClass;
use k8s_openapi::api::core::v1::Service;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt as _, watcher};
use objects::types::Gateway;
use objects::types::ListenerSet;
use serde_json::Value;

use crate::class::{self, Parameters};
use crate::cluster;
use crate::features::Features;
use crate::gateway::{self, AddressPool};
use crate::host::{Envoy, EnvoySettings};

mod certificates;
mod writes;
use writes::{apply, cluster_teardown, delete, dynamic, ensure_certificates};

/// The field manager of everything the provisioner writes.
pub const FIELD_MANAGER: &str = "contour-provisioner";

/// Provisioner settings.
#[derive(Debug, Clone)]
pub struct Settings {
    /// GatewayClasses with this `spec.controllerName` are ours.
    pub controller_name: String,
    /// Host mode: addresses for Gateways that ask for none (IPv4 CIDR).
    pub address_pool: String,
    /// Where fleets run.
    pub mode: Mode,
    /// How often everything is reconciled even without events (crashed Envoys, deleted Services,
    /// edited objects).
    pub resync: Duration,
}

/// Where fleets run.
#[derive(Debug, Clone)]
pub enum Mode {
    /// One Envoy process per Gateway on this machine.
    Host(EnvoySettings),
    /// Envoy pods in the Gateway's namespace ([`cluster`]).
    Cluster(ClusterSettings),
}

/// Cluster mode's settings.
#[derive(Debug, Clone)]
pub struct ClusterSettings {
    /// Images and who serves the fleets.
    pub fleet: cluster::Settings,
    /// The installation's CA Secret (`namespace`, `name`; `ca.crt` and `ca.key`, written by
    /// `contour-certgen --keep-ca-key`), which issues each fleet's client certificate when the
    /// installation's controller serves it.
    pub ca: (String, String),
    /// How fleet certificates are issued.
    pub issuing: cluster::certificate::Issuing,
}

/// What the provisioner has done, for its `/metrics`.
#[derive(Debug, Default)]
pub struct Counters {
    /// Reconciliations run.
    pub reconciles: AtomicU64,
    /// Gateways whose provisioning failed, summed over reconciliations.
    pub errors: AtomicU64,
    /// Gateways provisioned now.
    pub gateways: AtomicU64,
    /// 1 while this replica leads (or runs without an election).
    pub leader: AtomicU64,
}

impl Counters {
    /// Prometheus text.
    pub fn render(&self) -> String {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        format!(
            "# HELP contour_provisioner_reconciles_total Reconciliations run.\n# TYPE contour_provisioner_reconciles_total counter\ncontour_provisioner_reconciles_total {}\n\
             # HELP contour_provisioner_errors_total Gateways whose provisioning failed, per reconciliation.\n# TYPE contour_provisioner_errors_total counter\ncontour_provisioner_errors_total {}\n\
             # HELP contour_provisioner_gateways Gateways provisioned.\n# TYPE contour_provisioner_gateways gauge\ncontour_provisioner_gateways {}\n\
             # HELP contour_provisioner_is_leader Whether this replica provisions.\n# TYPE contour_provisioner_is_leader gauge\ncontour_provisioner_is_leader {}\n",
            get(&self.reconciles),
            get(&self.errors),
            get(&self.gateways),
            get(&self.leader),
        )
    }
}

/// What cluster mode last applied for a Gateway.
#[derive(Default)]
struct Clustered {
    uid: String,
    applied: Vec<Value>,
}

struct Provisioned {
    uid: String,
    address: IpAddr,
    slot: String,
    applied: Option<Value>,
    envoy: Option<Envoy>,
    starts: u32,
}

/// Envoy is started again this often at most before the provisioner stops trying.
const MAX_STARTS: u32 = 10;

struct State {
    client: kube::Client,
    settings: Settings,
    features: Vec<String>,
    pool: AddressPool,
    gateways: BTreeMap<String, Provisioned>,
    clustered: BTreeMap<String, Clustered>,
    /// Each Gateway fleet's client certificate, by Gateway (cluster mode, shared controller).
    certificates: BTreeMap<String, cluster::certificate::Kept>,
    next_slot: u64,
    counters: Arc<Counters>,
    /// Cluster mode has looked for fleets made before it started.
    swept: bool,
}

fn kube_err(what: impl Into<String>) -> impl FnOnce(kube::Error) -> crate::Error {
    let what = what.into();
    move |source| crate::Error::Kube { what, source: Box::new(source) }
}

fn key_of(meta: &kube::api::ObjectMeta) -> String {
    format!("{}/{}", meta.namespace.as_deref().unwrap_or_default(), meta.name.as_deref().unwrap_or_default())
}

enum Event {
    Class(Box<Result<watcher::Event<GatewayClass>, watcher::Error>>),
    Gateway(Box<Result<watcher::Event<Gateway>, watcher::Error>>),
    /// A ContourDeployment changed: the classes naming it are looked at again.
    Parameters,
    /// A ListenerSet changed (its ports join its Gateway's fleet in cluster mode).
    ListenerSet(Box<watcher::Event<ListenerSet>>),
}

/// Runs until `stop` resolves, acting only while `leadership` holds; then stops every Envoy it
/// started (host mode; cluster mode's pods stay).
pub async fn run(
    client: kube::Client,
    settings: Settings,
    mut leadership: election::Leadership,
    counters: Arc<Counters>,
    stop: impl std::future::Future<Output = ()>,
) -> Result<(), crate::Error> {
    let features = Features::committed()?.supported_sorted();
    let pool = AddressPool::new(&settings.address_pool)?;
    let mut state = State {
        client: client.clone(),
        settings,
        features,
        pool,
        gateways: BTreeMap::new(),
        clustered: BTreeMap::new(),
        certificates: BTreeMap::new(),
        next_slot: 0,
        counters,
        swept: false,
    };
    let classes = watcher::watcher(kube::Api::<GatewayClass>::all(client.clone()), watcher::Config::default())
        .default_backoff()
        .map(|e| Event::Class(Box::new(e)));
    let gateways = watcher::watcher(kube::Api::<Gateway>::all(client.clone()), watcher::Config::default())
        .default_backoff()
        .map(|e| Event::Gateway(Box::new(e)));
    // Without the ContourDeployment CRD this watch only retries; classes then name none.
    let parameters = watcher::watcher(kube::Api::<ContourDeployment>::all(client.clone()), watcher::Config::default())
        .default_backoff()
        .filter_map(|e| async move { e.ok().map(|_| Event::Parameters) });
    // Without the ListenerSet CRD (or the permission) this watch only retries; no fleet then
    // takes ports from ListenerSets, and nothing waits for it.
    let listener_sets = watcher::watcher(kube::Api::<ListenerSet>::all(client), watcher::Config::default())
        .default_backoff()
        .filter_map(|e| async move { e.ok().map(|e| Event::ListenerSet(Box::new(e))) });
    let mut events =
        futures::stream::select_all([classes.boxed(), gateways.boxed(), parameters.boxed(), listener_sets.boxed()]);
    let mut class_objects: BTreeMap<String, GatewayClass> = BTreeMap::new();
    let mut gateway_objects: BTreeMap<String, Gateway> = BTreeMap::new();
    let mut set_objects: BTreeMap<String, ListenerSet> = BTreeMap::new();
    // Whether ListenerSets were listed: nothing waits for it (the CRD is optional).
    let mut sets_listed = false;
    let (mut class_init, mut gateway_init, mut set_init) = (
        None::<BTreeMap<String, GatewayClass>>,
        None::<BTreeMap<String, Gateway>>,
        None::<BTreeMap<String, ListenerSet>>,
    );
    let mut resync = tokio::time::interval(state.settings.resync);
    let mut stop = std::pin::pin!(stop);
    let mut synced = (false, false);
    loop {
        tokio::select! {
            _ = &mut stop => break,
            _ = resync.tick() => {
                for p in state.gateways.values_mut() {
                    p.applied = None;
                }
                for c in state.clustered.values_mut() {
                    c.applied.clear();
                }
            }
            _ = leadership.changed() => {}
            event = events.next() => {
                let Some(event) = event else { break };
                match event {
                    Event::Class(e) => apply_event(*e, &mut class_objects, &mut class_init, &mut synced.0),
                    Event::Gateway(e) => apply_event(*e, &mut gateway_objects, &mut gateway_init, &mut synced.1),
                    Event::Parameters => {}
                    Event::ListenerSet(e) => apply_event(Ok(*e), &mut set_objects, &mut set_init, &mut sets_listed),
                }
            }
        }
        state.counters.leader.store(u64::from(leadership.is_leader()), Ordering::Relaxed);
        if synced.0 && synced.1 && leadership.is_leader() {
            // Let a burst of events settle before acting on it.
            tokio::time::sleep(Duration::from_millis(20)).await;
            while let Some(Some(event)) = events.next().now_or_never() {
                match event {
                    Event::Class(e) => apply_event(*e, &mut class_objects, &mut class_init, &mut synced.0),
                    Event::Gateway(e) => apply_event(*e, &mut gateway_objects, &mut gateway_init, &mut synced.1),
                    Event::Parameters => {}
                    Event::ListenerSet(e) => apply_event(Ok(*e), &mut set_objects, &mut set_init, &mut sets_listed),
                }
            }
            state.reconcile(&class_objects, &gateway_objects, &set_objects).await;
            state.counters.reconciles.fetch_add(1, Ordering::Relaxed);
            let provisioned = state.gateways.len() + state.clustered.len();
            state.counters.gateways.store(provisioned as u64, Ordering::Relaxed);
        }
    }
    for (_, p) in std::mem::take(&mut state.gateways) {
        if let Some(envoy) = p.envoy {
            envoy.stop().await;
        }
    }
    Ok(())
}

fn apply_event<K: kube::Resource + Clone>(
    event: Result<watcher::Event<K>, watcher::Error>,
    objects: &mut BTreeMap<String, K>,
    init: &mut Option<BTreeMap<String, K>>,
    synced: &mut bool,
) {
    match event {
        Ok(watcher::Event::Apply(o)) => {
            objects.insert(key_of(o.meta()), o);
        }
        Ok(watcher::Event::Delete(o)) => {
            objects.remove(&key_of(o.meta()));
        }
        Ok(watcher::Event::Init) => *init = Some(BTreeMap::new()),
        Ok(watcher::Event::InitApply(o)) => {
            init.get_or_insert_with(BTreeMap::new).insert(key_of(o.meta()), o);
        }
        Ok(watcher::Event::InitDone) => {
            *objects = init.take().unwrap_or_default();
            *synced = true;
        }
        Err(e) => tracing::warn!(error = %e, "watch"),
    }
}

impl State {
    async fn reconcile(
        &mut self,
        classes: &BTreeMap<String, GatewayClass>,
        gateways: &BTreeMap<String, Gateway>,
        listener_sets: &BTreeMap<String, ListenerSet>,
    ) {
        // The accepted classes, each with its ContourDeployment's spec if it names one.
        let mut accepted: BTreeMap<String, Option<ContourDeploymentSpec>> = BTreeMap::new();
        let mut mine = BTreeSet::new();
        for class in classes.values().filter(|c| c.spec.controller_name == self.settings.controller_name) {
            let name = class.metadata.name.clone().unwrap_or_default();
            mine.insert(name.clone());
            match self.class_status(class).await {
                Ok(Some(spec)) => {
                    accepted.insert(name, spec);
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(class = %name, error = %e, "GatewayClass status"),
            }
        }
        let live = |g: &&Gateway| g.metadata.deletion_timestamp.is_none();
        // A fleet goes with its Gateway, or when the Gateway's class is no longer ours; while
        // the class is refused (a bad ContourDeployment), the fleet keeps serving as it was.
        let kept: BTreeSet<&String> = gateways
            .iter()
            .filter(|(_, g)| live(g) && mine.contains(&g.spec.gateway_class_name))
            .map(|(k, _)| k)
            .collect();
        let ours: BTreeMap<&String, (&Gateway, Option<&ContourDeploymentSpec>)> = gateways
            .iter()
            .filter(|(_, g)| live(g))
            .filter_map(|(k, g)| Some((k, (g, accepted.get(&g.spec.gateway_class_name)?.as_ref()))))
            .collect();
        let gone: Vec<String> = self.gateways.keys().filter(|k| !kept.contains(k)).cloned().collect();
        for key in gone {
            self.teardown(&key, true).await;
        }
        if let Mode::Cluster(settings) = self.settings.mode.clone() {
            if !self.swept {
                // Fleets made before a restart: those whose Gateway went meanwhile go too.
                let per_gateway = settings.fleet.controller == cluster::Controller::PerGateway;
                match self.fleets_on_record(per_gateway).await {
                    Ok(keys) => {
                        for key in keys {
                            self.clustered.entry(key).or_default();
                        }
                        self.swept = true;
                    }
                    Err(e) => tracing::warn!(error = %e, "listing the fleets made before"),
                }
            }
            let gone: Vec<String> = self.clustered.keys().filter(|k| !kept.contains(k)).cloned().collect();
            for key in gone {
                let applied = self.clustered.remove(&key).map(|c| c.applied).unwrap_or_default();
                let per_gateway = settings.fleet.controller == cluster::Controller::PerGateway;
                cluster_teardown(&self.client, &key, &applied, per_gateway).await;
            }
            if ours.is_empty() {
                return;
            }
            // Each fleet gets a certificate of its own from the installation's CA; a Gateway's own
            // controller makes its fleet's certificates instead.
            // Without the CA the fleets are still provisioned; their pods wait for the Secret.
            let authority = match settings.fleet.controller {
                cluster::Controller::PerGateway => None,
                cluster::Controller::Shared { .. } => match self.authority(&settings).await {
                    Ok(ca) => Some(ca),
                    Err(e) => {
                        tracing::warn!(error = %e, "no CA to issue the fleets' xDS client certificates yet");
                        None
                    }
                },
            };
            self.certificates.retain(|k, _| kept.contains(k));
            for (key, (gw, spec)) in ours {
                let gw = &cluster::with_listener_sets(gw, listener_sets.values());
                let certificate = match &authority {
                    None => None,
                    Some(ca) => match self.fleet_certificate(key, gw, ca, &settings.issuing).await {
                        Ok(data) => Some(data),
                        Err(e) => {
                            self.counters.errors.fetch_add(1, Ordering::Relaxed);
                            tracing::warn!(gateway = %key, error = %e, "issuing the fleet's xDS client certificate");
                            continue;
                        }
                    },
                };
                if let Err(e) = self.provision_cluster(key, gw, spec, &settings, certificate.as_ref()).await {
                    self.counters.errors.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(gateway = %key, error = %e, "provisioning");
                }
            }
            return;
        }
        for (key, (gw, _)) in ours {
            if let Err(e) = self.provision(key, gw).await {
                self.counters.errors.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(gateway = %key, error = %e, "provisioning");
            }
        }
    }

    /// The Gateways (`namespace/name`) whose fleet Services this provisioner made in cluster mode,
    /// and, with a controller per Gateway, those whose ClusterRoles it made (they outlive the
    /// Gateway's own objects, which the cluster's garbage collector removes with it).
    async fn fleets_on_record(&self, per_gateway: bool) -> Result<Vec<String>, crate::Error> {
        let api: kube::Api<Service> = kube::Api::all(self.client.clone());
        let selector =
            format!("app.kubernetes.io/managed-by={},{}", cluster::MANAGED_BY_VALUE, cluster::OWNING_GATEWAY_LABEL);
        let list = api
            .list(&kube::api::ListParams::default().labels(&selector))
            .await
            .map_err(kube_err("listing fleet Services"))?;
        let mut out: Vec<String> = list
            .items
            .iter()
            .filter_map(|s| {
                let gateway = s.metadata.labels.as_ref()?.get(cluster::OWNING_GATEWAY_LABEL)?;
                Some(format!("{}/{gateway}", s.metadata.namespace.as_deref()?))
            })
            .collect();
        if per_gateway {
            let selector = format!("{selector},{}", cluster::contour::OWNING_GATEWAY_NAMESPACE_LABEL);
            let roles = dynamic(&self.client, None, "rbac.authorization.k8s.io/v1", "ClusterRole")
                .list(&kube::api::ListParams::default().labels(&selector))
                .await
                .map_err(kube_err("listing controller ClusterRoles"))?;
            out.extend(roles.items.iter().filter_map(|r| {
                let labels = r.metadata.labels.as_ref()?;
                let namespace = labels.get(cluster::contour::OWNING_GATEWAY_NAMESPACE_LABEL)?;
                Some(format!("{namespace}/{}", labels.get(cluster::OWNING_GATEWAY_LABEL)?))
            }));
        }
        Ok(out)
    }

    /// Applies the Gateway's fleet objects when they differ from what was last applied, and
    /// removes the workload of the other kind.
    async fn provision_cluster(
        &mut self,
        key: &str,
        gw: &Gateway,
        spec: Option<&ContourDeploymentSpec>,
        settings: &ClusterSettings,
        certificate: Option<&BTreeMap<String, String>>,
    ) -> Result<(), crate::Error> {
        let uid = gw.metadata.uid.clone().unwrap_or_default();
        let objects = cluster::objects(gw, spec, &settings.fleet, certificate);
        let entry = self.clustered.entry(key.to_string()).or_default();
        if entry.uid == uid && entry.applied == objects {
            return Ok(());
        }
        let namespace = gw.metadata.namespace.clone().unwrap_or_default();
        if settings.fleet.controller == cluster::Controller::PerGateway {
            ensure_certificates(&self.client, gw, spec, &settings.fleet.contour_image).await?;
        }
        for body in &objects {
            apply(&self.client, body).await?;
        }
        let other = if cluster::workload_kind(spec) == "DaemonSet" { "Deployment" } else { "DaemonSet" };
        let name = cluster::fleet_name(gw.metadata.name.as_deref().unwrap_or_default());
        delete(&self.client, Some(&namespace), "apps/v1", other, &name).await;
        tracing::info!(gateway = %key, workload = cluster::workload_kind(spec), "fleet applied");
        *entry = Clustered { uid, applied: objects };
        Ok(())
    }

    /// Writes the class's status when it changed; `Some` (with the ContourDeployment's spec, if
    /// it names one) when the class is accepted.
    async fn class_status(&self, c: &GatewayClass) -> Result<Option<Option<ContourDeploymentSpec>>, crate::Error> {
        let name = c.metadata.name.clone().unwrap_or_default();
        let mut spec = None;
        let parameters = match class::parameters_ref(c) {
            Ok(None) => Parameters::None,
            Err(p) => p,
            Ok(Some((namespace, pname))) => {
                let api: kube::Api<ContourDeployment> = kube::Api::namespaced(self.client.clone(), &namespace);
                match api.get_opt(&pname).await {
                    Ok(Some(found)) => match cluster::invalid_parameters(&found.spec) {
                        Some(message) => Parameters::Invalid(message),
                        None => {
                            spec = Some(found.spec);
                            Parameters::Found
                        }
                    },
                    _ => Parameters::Invalid(format!(
                        "spec.parametersRef: {}/{} {namespace}/{pname} not found",
                        class::PARAMETERS_GROUP,
                        class::PARAMETERS_KIND
                    )),
                }
            }
        };
        let accepted = !matches!(parameters, Parameters::Invalid(_));
        let desired = class::desired(c.metadata.generation.unwrap_or_default(), &parameters, &self.features);
        let current = serde_json::to_value(&c.status).unwrap_or_default();
        let verdict = accepted.then_some(spec);
        if class::up_to_date(&current, &desired) {
            return Ok(verdict);
        }
        let now = k8s_openapi::jiff::Timestamp::now().round(k8s_openapi::jiff::Unit::Second).map(|t| t.to_string());
        let status = class::with_transition_times(&current, &desired, &now.unwrap_or_default());
        // An update of the status subresource with the class's resourceVersion (a conflict is
        // retried with the next reconcile), as upstream writes it: its ClusterRole grants
        // `update` on gatewayclasses/status, not `patch`.
        let mut updated = serde_json::to_value(c).unwrap_or_default();
        updated["status"] = status;
        let updated: GatewayClass = serde_json::from_value(updated)
            .map_err(|e| kube_err(format!("GatewayClass {name} status"))(kube::Error::SerdeError(e)))?;
        let api: kube::Api<GatewayClass> = kube::Api::all(self.client.clone());
        api.replace_status(&name, &PostParams::default(), &updated)
            .await
            .map_err(kube_err(format!("GatewayClass {name} status")))?;
        tracing::info!(class = %name, accepted, "GatewayClass status written");
        Ok(verdict)
    }

    async fn provision(&mut self, key: &str, gw: &Gateway) -> Result<(), crate::Error> {
        let Mode::Host(envoy) = &self.settings.mode else { return Ok(()) };
        let envoy = envoy.clone();
        let uid = gw.metadata.uid.clone().unwrap_or_default();
        // Host mode binds the address on this machine: only loopback addresses can be (the
        // Gateway's status says why another one is not used).
        let requested = gateway::requested_address(gw).filter(IpAddr::is_loopback);
        let keep = self.gateways.get(key).is_some_and(|p| p.uid == uid && requested.is_none_or(|r| r == p.address));
        if !keep {
            self.teardown(key, false).await;
            let address = self.pool.take(key, requested)?;
            self.next_slot += 1;
            let slot = format!("gw-{}", self.next_slot);
            self.gateways
                .insert(key.to_string(), Provisioned { uid, address, slot, applied: None, envoy: None, starts: 0 });
        }
        let p = self.gateways.get_mut(key).expect("just ensured");
        let namespace = gw.metadata.namespace.clone().unwrap_or_default();
        let body = gateway::service(gw);
        if p.applied.as_ref() != Some(&body) {
            let name = body["metadata"]["name"].as_str().unwrap_or_default().to_string();
            let api: kube::Api<Service> = kube::Api::namespaced(self.client.clone(), &namespace);
            // A Service made before it had a load-balancer class cannot be given one: made again.
            if p.applied.is_none()
                && let Ok(Some(old)) = api.get_opt(&name).await
                && old.spec.as_ref().is_some_and(|s| s.load_balancer_class.is_none())
            {
                let _ = api.delete(&name, &DeleteParams::default()).await;
            }
            api.patch(&name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(&body))
                .await
                .map_err(kube_err(format!("Service {namespace}/{name}")))?;
            api.patch_status(&name, &PatchParams::default(), &Patch::Merge(gateway::service_status(p.address)))
                .await
                .map_err(kube_err(format!("Service {namespace}/{name} status")))?;
            p.applied = Some(body);
        }
        // Envoy starts once contour-serve has the address (the Gateway's status shows it), so
        // its first configuration already binds there.
        let published =
            gw.status.iter().flat_map(|s| s.addresses.iter().flatten()).any(|a| a.value == p.address.to_string());
        let running = p.envoy.as_mut().is_some_and(Envoy::running);
        if published && !running {
            if let Some(dead) = p.envoy.take() {
                tracing::warn!(gateway = %key, log = %dead.dir().join("envoy.log").display(), "Envoy exited");
                dead.stop().await;
            }
            if p.starts < MAX_STARTS {
                p.starts += 1;
                p.envoy = Some(Envoy::start(&envoy, key, &p.slot)?);
                tracing::info!(gateway = %key, address = %p.address, "Envoy started");
            }
        } else if let Some(running) = p.envoy.as_mut() {
            running.renew_certificate(&envoy, key)?;
        }
        Ok(())
    }

    /// Stops the Gateway's Envoy, gives its address back and (when the Gateway is gone or no
    /// longer ours) deletes its Service.
    async fn teardown(&mut self, key: &str, delete_service: bool) {
        let Some(p) = self.gateways.remove(key) else { return };
        if let Some(envoy) = p.envoy {
            envoy.stop().await;
        }
        self.pool.release(p.address);
        if delete_service {
            let (namespace, name) = key.split_once('/').unwrap_or_default();
            let api: kube::Api<Service> = kube::Api::namespaced(self.client.clone(), namespace);
            let _ = api.delete(&gateway::service_name(name), &DeleteParams::default()).await;
        }
        tracing::info!(gateway = %key, "deprovisioned");
    }
}
