//! Reads the current status, merges, and writes with a resourceVersion precondition.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use frontends::gateway_api::status::StatusSet;
use futures::StreamExt;
use kube::api::{Api, DynamicObject, PostParams};
use kube::discovery::ApiResource;
use objects::ObjectKey;
use serde_json::{Value, json};
use tracing::{debug, warn};

use crate::proxies::{self, Delta, Previous};
use crate::{Counters, Error, json, kind_index};

/// How many status writes run at once. Each waits on the API server's round trip: at 10k
/// HTTPRoutes the first pass wrote 312 statuses a second 8 at a time, 386 with 32.
const CONCURRENCY: usize = 32;
/// How many times a conflicting write is retried.
const ATTEMPTS: usize = 3;

/// Writes status for one controller name.
pub struct StatusWriter {
    client: kube::Client,
    controller: String,
    counters: Arc<Counters>,
    /// What we last wrote (or found) per object, as a digest: unchanged desired status costs no
    /// request.
    last: HashMap<&'static str, HashMap<ObjectKey, Written>>,
    /// Counts passes; an entry of `last` a pass neither wrote nor found current is dropped.
    pass: u64,
    /// The API version each kind is written through, once found (see [`resource`]).
    resources: HashMap<&'static str, ApiResource>,
    /// What the watches saw of each object's status, when the source records it.
    seen: Option<store::StatusSeen>,
    /// The HTTPProxy statuses of the previous pass (see [`proxies::delta`]).
    proxies: Option<Previous>,
}

/// What an object's status said of ours when we last wrote or read it. A digest, not the
/// status: at 10k objects the statuses as JSON values took 25 MiB.
#[derive(Clone)]
struct Written {
    /// The object's uid when known, so an object deleted and created again under the same
    /// name between two passes is written, not skipped.
    uid: Option<String>,
    /// Of our part, without transition times.
    digest: u64,
    /// A route's parent entries of ours were not empty.
    entries: bool,
    /// Conditions of other types on an HTTPProxy or ExtensionService (kept as they are when
    /// we write ours); almost always none.
    others: Option<Value>,
    /// Of the desired HTTPProxy, ExtensionService, route or BackendTLSPolicy status it was
    /// written or checked for, as computed (see [`desired_digest`]).
    desired: Option<u64>,
    /// The writer's pass that last wrote it or found it current.
    pass: u64,
}

impl Written {
    fn of(uid: Option<String>, ours: &Value, desired: &Desired) -> Self {
        let others = match desired {
            Desired::Proxy(..) | Desired::Extension(_) => {
                let others: Vec<Value> = ours["conditions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|c| c["type"] != "Valid")
                    .cloned()
                    .collect();
                (!others.is_empty()).then(|| json!({ "conditions": others }))
            }
            _ => None,
        };
        let entries = ours.as_array().is_some_and(|a| !a.is_empty());
        Self { uid, digest: json::digest(ours), entries, others, desired: desired_digest(desired), pass: 0 }
    }

    /// Whether it already says what is desired now.
    fn matches(&self, desired: &Desired, controller: &str) -> bool {
        let base = match desired {
            Desired::Proxy(..) | Desired::Extension(_) => self.others.as_ref().unwrap_or(&Value::Null),
            _ => &Value::Null,
        };
        json::digest(&render(desired, base, controller, "").1) == self.digest
    }
}

/// A digest of a desired HTTPProxy or ExtensionService status as the pipeline computed it, not
/// as rendered: an unchanged one is passed over without rendering it as JSON. Every build
/// publishes every proxy's status, so at 10k proxies rendering them all took most of a new
/// app's CPU; the same holds for routes (at 50k HTTPRoutes, 2.6 s of CPU per build). `None`
/// for the other kinds (few objects).
fn desired_digest(desired: &Desired) -> Option<u64> {
    match desired {
        Desired::Proxy(p, lb) => Some(proxy_digest(p, lb.as_ref().map(address_digest))),
        Desired::Extension(e) => Some(proxy_digest(e, None)),
        Desired::Route(parents) | Desired::Ancestors(parents) => Some(frontends::gateway_api::status::digest(parents)),
        _ => None,
    }
}

fn proxy_digest(p: &frontends::httpproxy::status::ProxyStatus, address: Option<u64>) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    p.hash(&mut h);
    address.hash(&mut h);
    h.finish()
}

fn address_digest(lb: &Value) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    lb.to_string().hash(&mut h);
    h.finish()
}

struct Write {
    kind: &'static str,
    /// The object's uid, when the status computation knows it.
    uid: Option<String>,
    key: ObjectKey,
    desired: Desired,
}

enum Desired {
    Gateway(frontends::gateway_api::status::GatewayStatus),
    Route(Vec<frontends::gateway_api::status::RouteParentStatus>),
    /// A policy's `status.ancestors` entries of ours.
    Ancestors(Vec<frontends::gateway_api::status::RouteParentStatus>),
    /// An Ingress's `status.loadBalancer`.
    LoadBalancer(Value),
    /// An HTTPProxy's status, and its `loadBalancer` when an address is known.
    Proxy(frontends::httpproxy::status::ProxyStatus, Option<Value>),
    /// An ExtensionService's `Valid` condition.
    Extension(frontends::httpproxy::status::ProxyStatus),
}

impl StatusWriter {
    /// A writer that signs route parent entries with `controller`.
    pub fn new(client: kube::Client, controller: String) -> Self {
        Self {
            client,
            controller,
            counters: Arc::default(),
            last: HashMap::new(),
            pass: 0,
            resources: HashMap::new(),
            seen: None,
            proxies: None,
        }
    }

    /// Reads each object's resourceVersion and status digest from `seen` (filled by the
    /// Kubernetes source) instead of from the API server where it can: a status nobody has
    /// written yet is written without reading the object, and one that already says what is
    /// desired is neither read nor written.
    pub fn with_seen(mut self, seen: store::StatusSeen) -> Self {
        self.seen = Some(seen);
        self
    }

    /// The writer's counters, shared.
    pub fn counters(&self) -> Arc<Counters> {
        Arc::clone(&self.counters)
    }

    /// Forgets what was written, so the next pass reads every object back and repairs it.
    pub fn forget(&mut self) {
        self.last.clear();
        self.proxies = None;
    }

    /// Whether the HTTPProxy or ExtensionService at `key` was last written or found for the same
    /// desired status (the same object, by uid); counted as a write that changed nothing, and
    /// kept for this pass. No key is built: at 10k proxies every pass asks this of each.
    fn unchanged(&mut self, kind: &'static str, key: &ObjectKey, uid: &str, digest: u64) -> bool {
        let pass = self.pass;
        let Some(w) = self.last.get_mut(kind).and_then(|m| m.get_mut(key)) else { return false };
        let same = w.uid.as_deref().is_none_or(|u| u == uid) && w.desired == Some(digest);
        if same {
            w.pass = pass;
            self.counters.total[kind_index(kind)].fetch_add(1, Ordering::Relaxed);
            self.counters.noop[kind_index(kind)].fetch_add(1, Ordering::Relaxed);
        }
        same
    }

    /// Writes what changed; routes we wrote before but no longer parent lose our entries.
    pub async fn write(
        &mut self,
        set: &StatusSet,
        ingresses: &[(objects::ObjectKey, String, Value)],
        proxies: &Arc<Vec<Arc<frontends::httpproxy::status::ProxyStatus>>>,
        extensions: &[frontends::httpproxy::status::ProxyStatus],
        address: Option<&Value>,
        leadership: &election::Leadership,
    ) {
        self.pass += 1;
        let pass = self.pass;
        let mut writes = Vec::new();
        let write = |kind, uid: &str, key: &ObjectKey, desired| Write {
            kind,
            uid: Some(uid.to_string()),
            key: key.clone(),
            desired,
        };
        for g in set.gateways.iter() {
            writes.push(write("Gateway", &g.uid, &g.key, Desired::Gateway(g.clone())));
        }
        for s in set.listener_sets.iter() {
            writes.push(write("ListenerSet", &s.uid, &s.key, Desired::Gateway(s.clone())));
        }
        // Routes and policies whose desired entries are what was last written or found are
        // passed over without rendering them (their digest is computed with them).
        for r in set.routes.iter().map(|r| &**r).chain(&set.policies) {
            if !self.unchanged(r.kind, &r.key, &r.uid, r.digest) {
                let desired = match r.kind {
                    "BackendTLSPolicy" => Desired::Ancestors(r.parents.clone()),
                    _ => Desired::Route(r.parents.clone()),
                };
                writes.push(write(r.kind, &r.uid, &r.key, desired));
            }
        }
        for (key, uid, lb) in ingresses {
            writes.push(write("Ingress", uid, key, Desired::LoadBalancer(lb.clone())));
        }
        // Routes that had our entries and now have none: neither passed over above (which marks
        // them with this pass) nor about to be written.
        let writing: std::collections::HashSet<(&str, &ObjectKey)> = writes.iter().map(|w| (w.kind, &w.key)).collect();
        let mut gone = Vec::new();
        for (kind, objects) in &self.last {
            if matches!(*kind, "Gateway" | "ListenerSet" | "Ingress" | "HTTPProxy" | "ExtensionService") {
                continue;
            }
            for (key, w) in objects {
                if w.entries && w.pass != pass && !writing.contains(&(*kind, key)) {
                    let desired = if *kind == "BackendTLSPolicy" {
                        Desired::Ancestors(Vec::new())
                    } else {
                        Desired::Route(Vec::new())
                    };
                    gone.push(Write { kind, uid: None, key: key.clone(), desired });
                }
            }
        }
        writes.extend(gone);
        // Proxies whose desired status is what was last written or found are passed over here.
        let address_digest = address.map(address_digest);
        let delta = proxies::delta(self.proxies.as_ref(), proxies, address_digest);
        let looked: Vec<&Arc<frontends::httpproxy::status::ProxyStatus>> = match &delta {
            Delta::All => proxies.iter().collect(),
            Delta::Some { changed, same, .. } => {
                let kind = kind_index("HTTPProxy");
                self.counters.total[kind].fetch_add(*same, Ordering::Relaxed);
                self.counters.noop[kind].fetch_add(*same, Ordering::Relaxed);
                changed.clone()
            }
        };
        for (kind, p) in
            looked.iter().map(|p| ("HTTPProxy", &***p)).chain(extensions.iter().map(|e| ("ExtensionService", e)))
        {
            let digest = proxy_digest(p, if kind == "HTTPProxy" { address_digest } else { None });
            if self.unchanged(kind, &p.key, &p.uid, digest) {
                continue;
            }
            let desired = match kind {
                "HTTPProxy" => Desired::Proxy(p.clone(), address.cloned()),
                _ => Desired::Extension(p.clone()),
            };
            writes.push(write(kind, &p.uid, &p.key, desired));
        }

        let mut kinds: Vec<&'static str> = writes.iter().map(|w| w.kind).collect();
        kinds.sort_unstable();
        kinds.dedup();
        for kind in kinds {
            if !self.resources.contains_key(kind)
                && let Some(found) = resource(&self.client, kind).await
            {
                self.resources.insert(kind, found);
            }
        }
        let resources = &self.resources;
        let client = self.client.clone();
        let controller = self.controller.clone();
        let counters = Arc::clone(&self.counters);
        let last = &self.last;
        let seen_objects = self.seen.as_ref();
        let results: Vec<_> = futures::stream::iter(writes)
            .map(|w| {
                let (client, controller, counters) = (client.clone(), controller.clone(), Arc::clone(&counters));
                let previous = last
                    .get(w.kind)
                    .and_then(|m| m.get(&w.key))
                    .filter(|p| p.uid.is_none() || w.uid.is_none() || p.uid == w.uid);
                let leadership = leadership.clone();
                let seen = seen_objects.and_then(|s| s.get(w.kind, &w.key));
                let resource =
                    resources.get(w.kind).cloned().unwrap_or_else(|| api_resource(w.kind, versions(w.kind)[0]));
                async move {
                    let key = (w.kind, w.key.clone());
                    // Leadership can end mid-pass (a paused replica resumes): check per write.
                    if !leadership.is_leader() {
                        return (key, Err(Error::NotLeader));
                    }
                    (key, write_one(&client, &resource, &controller, &counters, w, previous, seen).await)
                }
            })
            .buffer_unordered(CONCURRENCY)
            .collect()
            .await;
        for ((kind, key), result) in results {
            match result {
                Ok(Some(mut value)) => {
                    value.pass = pass;
                    self.last.entry(kind).or_default().insert(key, value);
                }
                Ok(None) | Err(Error::NotLeader) => {}
                Err(e) => warn!(error = %e, "status write failed"),
            }
        }
        // Forget objects that are gone (and, for routes, hold none of our entries), and what a
        // write could not confirm: one deleted and created again later is written afresh, and
        // what is remembered stays as large as what exists.
        // HTTPProxies the pass did not look at keep what they had.
        let partial = matches!(delta, Delta::Some { .. });
        for (kind, objects) in self.last.iter_mut() {
            if !(partial && *kind == "HTTPProxy") {
                objects.retain(|_, w| w.pass == pass);
            }
        }
        let written = self.last.entry("HTTPProxy").or_default();
        let retry = match delta {
            Delta::All => proxies.iter().filter(|p| !written.contains_key(&p.key)).map(|p| p.key.clone()).collect(),
            Delta::Some { changed, gone, .. } => {
                for key in &gone {
                    written.remove(key);
                }
                let unsettled: Vec<ObjectKey> = changed
                    .iter()
                    .filter(|p| written.get(&p.key).is_none_or(|w| w.pass != pass))
                    .map(|p| p.key.clone())
                    .collect();
                for key in &unsettled {
                    written.remove(key);
                }
                unsettled.into_iter().collect()
            }
        };
        self.proxies = Some(Previous { list: Arc::clone(proxies), address: address_digest, retry });
    }
}

/// The API versions a kind may be served at, ours first: the route kinds that graduated are
/// still served only at an older version by older Gateway API bundles (upstream Contour's own is
/// Gateway API 1.3: TLSRoute v1alpha2, TCPRoute and UDPRoute v1alpha2).
fn versions(kind: &str) -> &'static [&'static str] {
    match kind {
        "ExtensionService" => &["v1alpha1"],
        "TLSRoute" => &["v1", "v1alpha3", "v1alpha2"],
        "TCPRoute" | "UDPRoute" => &["v1", "v1alpha2"],
        "BackendTLSPolicy" => &["v1", "v1alpha3"],
        _ => &["v1"],
    }
}

fn api_resource(kind: &str, version: &str) -> ApiResource {
    let (group, plural) = match kind {
        "HTTPProxy" => ("projectcontour.io", "httpproxies"),
        "ExtensionService" => ("projectcontour.io", "extensionservices"),
        "Ingress" => ("networking.k8s.io", "ingresses"),
        "Gateway" => ("gateway.networking.k8s.io", "gateways"),
        "ListenerSet" => ("gateway.networking.k8s.io", "listenersets"),
        "HTTPRoute" => ("gateway.networking.k8s.io", "httproutes"),
        "GRPCRoute" => ("gateway.networking.k8s.io", "grpcroutes"),
        "TCPRoute" => ("gateway.networking.k8s.io", "tcproutes"),
        "UDPRoute" => ("gateway.networking.k8s.io", "udproutes"),
        "BackendTLSPolicy" => ("gateway.networking.k8s.io", "backendtlspolicies"),
        _ => ("gateway.networking.k8s.io", "tlsroutes"),
    };
    ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: format!("{group}/{version}"),
        kind: kind.into(),
        plural: plural.into(),
    }
}

/// The resource a kind's status is written through: the first of its versions the API server
/// serves. `None` when discovery fails or serves none of them (asked again next pass).
async fn resource(client: &kube::Client, kind: &'static str) -> Option<ApiResource> {
    let candidates = versions(kind);
    if let [only] = candidates {
        return Some(api_resource(kind, only));
    }
    for version in candidates {
        let resource = api_resource(kind, version);
        match client.list_api_group_resources(&resource.api_version).await {
            Ok(list) if list.resources.iter().any(|r| r.name == resource.plural) => return Some(resource),
            // Not served at this version: try the next.
            Ok(_) => continue,
            Err(kube::Error::Api(s)) if s.code == 404 => continue,
            Err(e) => {
                debug!(kind, error = %e, "discovery failed; trying again on the next pass");
                return None;
            }
        }
    }
    None
}

/// The status to write over `current` (the whole status field, merged into what is there), and
/// our part of it (what [`Written`] keeps a digest of).
fn render(desired: &Desired, current: &Value, controller: &str, now: &str) -> (Value, Value) {
    match desired {
        Desired::Gateway(g) => {
            let status = json::gateway(g, current, now);
            (status.clone(), status)
        }
        Desired::Route(parents) => {
            let merged = json::parents(parents, current, controller, now);
            let ours = of_controller(&merged, controller);
            (json!({"parents": merged}), ours)
        }
        Desired::Ancestors(ancestors) => {
            let merged = json::ancestors(ancestors, current, controller, now);
            let ours = of_controller(&merged, controller);
            (json!({"ancestors": merged}), ours)
        }
        Desired::LoadBalancer(lb) => (json!({"loadBalancer": lb}), lb.clone()),
        Desired::Proxy(p, lb) => {
            let status = json::proxy(p, lb.as_ref(), current, now);
            (status.clone(), status)
        }
        Desired::Extension(e) => {
            let status = json::extension(e, current, now);
            (status.clone(), status)
        }
    }
}

/// How a write went when it did not need the object read first.
enum Unread {
    /// Done: what the object's status now says (None: the object is gone).
    Done(Option<Written>),
    /// The object must be read (what was seen is stale, or not blank).
    Read,
}

/// Writes from what the watch last saw of the object, without reading it: nothing when its
/// status already says what is desired, the whole status when it is blank (with the seen
/// resourceVersion as precondition). A conflict leaves it to the read-then-write path.
async fn write_unread(
    api: &Api<DynamicObject>,
    resource: &ApiResource,
    controller: &str,
    counters: &Counters,
    w: &Write,
    seen: &store::Seen,
    now: &str,
) -> Result<Unread, kube::Error> {
    let (status, ours) = render(&w.desired, &Value::Null, controller, now);
    if seen.digest == json::digest(&status) {
        counters.noop[kind_index(w.kind)].fetch_add(1, Ordering::Relaxed);
        return Ok(Unread::Done(Some(Written::of(w.uid.clone(), &ours, &w.desired))));
    }
    if !seen.blank || seen.resource_version.is_empty() {
        return Ok(Unread::Read);
    }
    let mut object = DynamicObject::new(&w.key.name, resource).within(&w.key.namespace);
    object.metadata.resource_version = Some(seen.resource_version.clone());
    let mut whole = Value::Null;
    json::merge(&mut whole, &status);
    object.data = json!({ "status": whole });
    match api.replace_status(&w.key.name, &PostParams::default(), &object).await {
        Ok(_) => {
            counters.success[kind_index(w.kind)].fetch_add(1, Ordering::Relaxed);
            Ok(Unread::Done(Some(Written::of(w.uid.clone(), &ours, &w.desired))))
        }
        Err(kube::Error::Api(s)) if s.code == 409 => {
            counters.conflict[kind_index(w.kind)].fetch_add(1, Ordering::Relaxed);
            Ok(Unread::Read)
        }
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(Unread::Done(None)),
        Err(e) => Err(e),
    }
}

/// Returns what the object's status now says (our part), or None when the object is gone.
async fn write_one(
    client: &kube::Client,
    resource: &ApiResource,
    controller: &str,
    counters: &Counters,
    w: Write,
    previous: Option<&Written>,
    seen: Option<store::Seen>,
) -> Result<Option<Written>, Error> {
    // Nothing changed since we last wrote or checked: no request at all.
    if let Some(previous) = previous
        && previous.matches(&w.desired, controller)
    {
        counters.total[kind_index(w.kind)].fetch_add(1, Ordering::Relaxed);
        counters.noop[kind_index(w.kind)].fetch_add(1, Ordering::Relaxed);
        return Ok(Some(previous.clone()));
    }
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &w.key.namespace, resource);
    let key = format!("{}/{}", w.key.namespace, w.key.name);
    let api_error = |source| Error::Api { kind: w.kind, key: key.clone(), source };
    let now = now();
    counters.total[kind_index(w.kind)].fetch_add(1, Ordering::Relaxed);
    if let Some(seen) = &seen {
        match write_unread(&api, resource, controller, counters, &w, seen, &now).await {
            Ok(Unread::Done(written)) => {
                debug!(kind = w.kind, object = %key, "status written without a read");
                return Ok(written);
            }
            Ok(Unread::Read) => {}
            Err(e) => {
                counters.failed[kind_index(w.kind)].fetch_add(1, Ordering::Relaxed);
                return Err(api_error(e));
            }
        }
    }
    for _ in 0..ATTEMPTS {
        // The object itself, not its status subresource: upstream's ClusterRoles grant `get` on
        // the kinds but only `update` on `gateways/status` and the other route statuses.
        counters.reads[kind_index(w.kind)].fetch_add(1, Ordering::Relaxed);
        let object = match api.get(&w.key.name).await {
            Ok(o) => o,
            Err(kube::Error::Api(s)) if s.code == 404 => return Ok(None),
            Err(e) => return Err(api_error(e)),
        };
        let current = object.data.get("status").cloned().unwrap_or(Value::Null);
        let (status, ours) = render(&w.desired, &current, controller, &now);
        if json::same(&current_part(&current, &w.desired, controller), &ours) {
            counters.noop[kind_index(w.kind)].fetch_add(1, Ordering::Relaxed);
            return Ok(Some(Written::of(w.uid, &ours, &w.desired)));
        }
        // An update (PUT) of the status with the object's resourceVersion, as upstream writes
        // it: upstream's ClusterRole grants `update` on the status subresources, not `patch`.
        // What we send is the current status with ours merged in (merge-patch rules), so fields
        // we do not own stay as they are.
        let mut replacement = object;
        let mut merged = current;
        json::merge(&mut merged, &status);
        replacement.data["status"] = merged;
        match api.replace_status(&w.key.name, &PostParams::default(), &replacement).await {
            Ok(_) => {
                counters.success[kind_index(w.kind)].fetch_add(1, Ordering::Relaxed);
                debug!(kind = w.kind, object = %key, "status written");
                return Ok(Some(Written::of(w.uid, &ours, &w.desired)));
            }
            Err(kube::Error::Api(s)) if s.code == 409 => {
                counters.conflict[kind_index(w.kind)].fetch_add(1, Ordering::Relaxed);
                continue;
            }
            Err(kube::Error::Api(s)) if s.code == 404 => return Ok(None),
            Err(e) => {
                counters.failed[kind_index(w.kind)].fetch_add(1, Ordering::Relaxed);
                return Err(api_error(e));
            }
        }
    }
    counters.failed[kind_index(w.kind)].fetch_add(1, Ordering::Relaxed);
    Err(Error::Conflict { kind: w.kind, key, attempts: ATTEMPTS })
}

/// The part of the current status we own.
fn current_part(current: &Value, desired: &Desired, controller: &str) -> Value {
    match desired {
        Desired::Gateway(g) => {
            let mut part = json!({"conditions": current["conditions"], "listeners": current["listeners"]});
            if !g.addresses.is_empty() {
                part["addresses"] = current["addresses"].clone();
            }
            if g.attached_listener_sets.is_some() {
                part["attachedListenerSets"] = current["attachedListenerSets"].clone();
            }
            part
        }
        Desired::Route(_) => of_controller(&current["parents"], controller),
        Desired::Ancestors(_) => of_controller(&current["ancestors"], controller),
        Desired::LoadBalancer(_) => current["loadBalancer"].clone(),
        Desired::Extension(_) => json!({"conditions": current["conditions"]}),
        Desired::Proxy(_, lb) => {
            let mut part = json!({
                "currentStatus": current["currentStatus"],
                "description": current["description"],
                "conditions": current["conditions"],
            });
            if lb.is_some() {
                part["loadBalancer"] = current["loadBalancer"].clone();
            }
            part
        }
    }
}

fn now() -> String {
    k8s_openapi::jiff::fmt::strtime::format("%Y-%m-%dT%H:%M:%SZ", k8s_openapi::jiff::Timestamp::now())
        .unwrap_or_default()
}

/// The entries of a `parents` or `ancestors` list that `controller` wrote.
fn of_controller(entries: &Value, controller: &str) -> Value {
    Value::Array(
        entries.as_array().into_iter().flatten().filter(|p| p["controllerName"] == controller).cloned().collect(),
    )
}

#[cfg(test)]
mod tests;
