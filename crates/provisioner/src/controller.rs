//! The provisioner's loop: watch GatewayClasses and Gateways, keep class status, Services,
//! addresses and (host mode) Envoy processes in line with them. Level-triggered: every change
//! reconciles everything, which is cheap at the scale of Gateways per cluster.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::time::Duration;

use futures::{FutureExt as _, StreamExt as _};
use gateway_api::gatewayclasses::GatewayClass;
use gateway_api::gateways::Gateway;
use k8s_openapi::api::core::v1::Service;
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::runtime::watcher;
use serde_json::Value;

use crate::class::{self, Parameters};
use crate::features::Features;
use crate::gateway::{self, AddressPool};
use crate::host::{Envoy, EnvoySettings};

/// The field manager of everything the provisioner writes.
pub const FIELD_MANAGER: &str = "contour-provisioner";

/// Provisioner settings.
#[derive(Debug, Clone)]
pub struct Settings {
    /// GatewayClasses with this `spec.controllerName` are ours.
    pub controller_name: String,
    /// Addresses for Gateways that ask for none (IPv4 CIDR).
    pub address_pool: String,
    /// How Envoys are started.
    pub envoy: EnvoySettings,
    /// How often everything is reconciled even without events (crashed Envoys, deleted Services).
    pub resync: Duration,
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
    next_slot: u64,
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
}

/// Runs until `stop` resolves; then stops every Envoy it started.
pub async fn run(
    client: kube::Client,
    settings: Settings,
    stop: impl std::future::Future<Output = ()>,
) -> Result<(), crate::Error> {
    let features = Features::committed()?.supported_sorted();
    let pool = AddressPool::new(&settings.address_pool)?;
    let mut state = State { client: client.clone(), settings, features, pool, gateways: BTreeMap::new(), next_slot: 0 };
    let classes = watcher::watcher(kube::Api::<GatewayClass>::all(client.clone()), watcher::Config::default())
        .map(|e| Event::Class(Box::new(e)));
    let gateways = watcher::watcher(kube::Api::<Gateway>::all(client), watcher::Config::default())
        .map(|e| Event::Gateway(Box::new(e)));
    let mut events = futures::stream::select(classes.boxed(), gateways.boxed());
    let mut class_objects: BTreeMap<String, GatewayClass> = BTreeMap::new();
    let mut gateway_objects: BTreeMap<String, Gateway> = BTreeMap::new();
    let (mut class_init, mut gateway_init) =
        (None::<BTreeMap<String, GatewayClass>>, None::<BTreeMap<String, Gateway>>);
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
            }
            event = events.next() => {
                let Some(event) = event else { break };
                match event {
                    Event::Class(e) => apply_event(*e, &mut class_objects, &mut class_init, &mut synced.0),
                    Event::Gateway(e) => apply_event(*e, &mut gateway_objects, &mut gateway_init, &mut synced.1),
                }
            }
        }
        if synced.0 && synced.1 {
            // Let a burst of events settle before acting on it.
            tokio::time::sleep(Duration::from_millis(20)).await;
            while let Some(Some(event)) = events.next().now_or_never() {
                match event {
                    Event::Class(e) => apply_event(*e, &mut class_objects, &mut class_init, &mut synced.0),
                    Event::Gateway(e) => apply_event(*e, &mut gateway_objects, &mut gateway_init, &mut synced.1),
                }
            }
            state.reconcile(&class_objects, &gateway_objects).await;
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
    async fn reconcile(&mut self, classes: &BTreeMap<String, GatewayClass>, gateways: &BTreeMap<String, Gateway>) {
        let mut accepted = BTreeSet::new();
        for class in classes.values().filter(|c| c.spec.controller_name == self.settings.controller_name) {
            let name = class.metadata.name.clone().unwrap_or_default();
            match self.class_status(class).await {
                Ok(true) => {
                    accepted.insert(name);
                }
                Ok(false) => {}
                Err(e) => tracing::warn!(class = %name, error = %e, "GatewayClass status"),
            }
        }
        let ours: BTreeMap<&String, &Gateway> = gateways
            .iter()
            .filter(|(_, g)| accepted.contains(&g.spec.gateway_class_name) && g.metadata.deletion_timestamp.is_none())
            .collect();
        let gone: Vec<String> = self.gateways.keys().filter(|k| !ours.contains_key(k)).cloned().collect();
        for key in gone {
            self.teardown(&key, true).await;
        }
        for (key, gw) in ours {
            if let Err(e) = self.provision(key, gw).await {
                tracing::warn!(gateway = %key, error = %e, "provisioning");
            }
        }
    }

    /// Writes the class's status when it changed; says whether the class is accepted.
    async fn class_status(&self, c: &GatewayClass) -> Result<bool, crate::Error> {
        let name = c.metadata.name.clone().unwrap_or_default();
        let parameters = match class::parameters_ref(c) {
            Ok(None) => Parameters::None,
            Err(p) => p,
            Ok(Some((namespace, pname))) => {
                let gvk = GroupVersionKind::gvk(class::PARAMETERS_GROUP, "v1alpha1", class::PARAMETERS_KIND);
                let api: kube::Api<DynamicObject> =
                    kube::Api::namespaced_with(self.client.clone(), &namespace, &ApiResource::from_gvk(&gvk));
                match api.get_opt(&pname).await {
                    Ok(Some(_)) => Parameters::Found,
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
        if class::up_to_date(&current, &desired) {
            return Ok(accepted);
        }
        let now = k8s_openapi::jiff::Timestamp::now().round(k8s_openapi::jiff::Unit::Second).map(|t| t.to_string());
        let status = class::with_transition_times(&current, &desired, &now.unwrap_or_default());
        let api: kube::Api<GatewayClass> = kube::Api::all(self.client.clone());
        api.patch_status(&name, &PatchParams::default(), &Patch::Merge(serde_json::json!({"status": status})))
            .await
            .map_err(kube_err(format!("GatewayClass {name} status")))?;
        tracing::info!(class = %name, accepted, "GatewayClass status written");
        Ok(accepted)
    }

    async fn provision(&mut self, key: &str, gw: &Gateway) -> Result<(), crate::Error> {
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
                p.envoy = Some(Envoy::start(&self.settings.envoy, key, &p.slot)?);
                tracing::info!(gateway = %key, address = %p.address, "Envoy started");
            }
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
