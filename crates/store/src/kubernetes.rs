//! The Kubernetes source: one watch per kind (per namespace with `--watch-namespaces`), merged
//! into the store. Objects are trimmed to what can change the output (no managedFields, no
//! status, no resourceVersion), so status-only updates never reach the pipeline.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;
use std::time::Duration;

use futures::stream::{BoxStream, SelectAll};
use futures::{FutureExt, StreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use objects::types::*;
use objects::{Kind, Object, ObjectKey, Snapshot};
use tracing::{debug, info, warn};

use crate::Store;
use crate::seen::StatusSeen;

mod kinds;

pub use kinds::{CA_BUNDLE_KEY, IGNORED_SECRET_TYPES};
use kinds::{Watched, typed};

/// Kinds we watch that upstream Contour does not, so its ClusterRole does not grant them: without
/// the permission they are not watched (a warning names them) rather than stopping the source. A
/// missing permission on any other kind stops start-up, naming the kind.
const BEYOND_UPSTREAMS_RBAC: [Kind; 4] =
    [Kind::UdpRoute, Kind::IngressClass, Kind::ListenerSet, Kind::ClusterTrustBundle];

/// Why the source could not start.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Discovering a kind failed for a reason other than its CRD being absent.
    #[error("checking {kind}: {source}")]
    Discovery {
        /// The kind.
        kind: &'static str,
        /// The API error.
        #[source]
        source: kube::Error,
    },
}

/// What the API server serves, from its discovery documents: the group versions (one request)
/// and the resources of each group version asked about (one request each, only for group
/// versions that exist). A kind whose CRD is absent costs no failed request, nor a warning;
/// a served kind is then listed once (one object) to check the permission.
#[derive(Debug, Default)]
struct Served {
    group_versions: Option<BTreeSet<String>>,
    resources: BTreeMap<String, BTreeSet<String>>,
}

impl Served {
    async fn serves(&mut self, client: &kube::Client, resource: &ApiResource) -> Result<bool, kube::Error> {
        if !resource.group.is_empty() {
            if self.group_versions.is_none() {
                let groups = client.list_api_groups().await?;
                let all = groups.groups.iter().flat_map(|g| g.versions.iter().map(|v| v.group_version.clone()));
                self.group_versions = Some(all.collect());
            }
            if !self.group_versions.as_ref().is_some_and(|gv| gv.contains(&resource.api_version)) {
                return Ok(false);
            }
        }
        if !self.resources.contains_key(&resource.api_version) {
            let list = match resource.group.as_str() {
                "" => client.list_core_api_resources(&resource.version).await?,
                _ => client.list_api_group_resources(&resource.api_version).await?,
            };
            self.resources.insert(resource.api_version.clone(), list.resources.into_iter().map(|r| r.name).collect());
        }
        Ok(self.resources.get(&resource.api_version).is_some_and(|names| names.contains(&resource.plural)))
    }
}

/// Watches the cluster and keeps the store current.
pub struct KubernetesSource {
    client: kube::Client,
    namespaces: Vec<String>,
    context: std::sync::Arc<Context>,
    disabled: BTreeSet<Kind>,
}

/// What trimming needs to know about the configuration.
#[derive(Clone, Default)]
pub struct Context {
    /// The Envoy Service whose load-balancer status is kept (for Ingress status).
    pub keep_service_status: Option<ObjectKey>,
    /// Where each object's resourceVersion and status digest go before they are trimmed, when
    /// a status writer wants them.
    pub seen: Option<StatusSeen>,
}

impl Context {
    /// Records what a watch event says of an object's status (see [`StatusSeen`]).
    fn observe<S: serde::Serialize>(&self, kind: &'static str, meta: &ObjectMeta, status: Option<&S>) {
        if let Some(seen) = self.seen.as_ref().filter(|s| s.records(kind)) {
            let status = status.and_then(|s| serde_json::to_value(s).ok()).unwrap_or(serde_json::Value::Null);
            seen.record(kind, meta, status);
        }
    }
}

/// One watch stream's events, typed as objects.
enum Change {
    Init,
    Add(Object),
    InitDone,
    Apply(Object),
    Delete(Kind, ObjectKey),
}

type Stream = BoxStream<'static, (usize, Change)>;

impl KubernetesSource {
    /// A source over `client`; `namespaces` restricts namespaced kinds (empty: all namespaces).
    pub fn new(client: kube::Client, namespaces: Vec<String>) -> Self {
        Self { client, namespaces, context: Default::default(), disabled: BTreeSet::new() }
    }

    /// Never watches these kinds (upstream's `--disable-feature`): their objects stay absent,
    /// as when their CRD is not installed.
    pub fn disable(mut self, kinds: impl IntoIterator<Item = Kind>) -> Self {
        self.disabled.extend(kinds);
        self
    }

    /// Keeps the load-balancer status of this Service (the Envoy Service), for Ingress status.
    pub fn keep_service_status(mut self, service: ObjectKey) -> Self {
        std::sync::Arc::make_mut(&mut self.context).keep_service_status = Some(service);
        self
    }

    /// Records every watched object's resourceVersion and status digest in `seen`, for the
    /// status writer.
    pub fn status_seen(mut self, seen: StatusSeen) -> Self {
        std::sync::Arc::make_mut(&mut self.context).seen = Some(seen);
        self
    }

    /// Starts every watch whose kind the API server serves (absent CRDs are skipped with one
    /// log line), fills the store, marks it synced once every watch has listed, and keeps it
    /// current until the store is dropped.
    pub async fn run(self, store: Store) -> Result<(), Error> {
        let mut streams: SelectAll<Stream> = SelectAll::new();
        let mut scopes: Vec<(Kind, Option<String>)> = Vec::new();
        let mut served = Served::default();
        self.add::<GatewayClass>(&mut streams, &mut scopes, &mut served).await?;
        self.add::<Gateway>(&mut streams, &mut scopes, &mut served).await?;
        self.add::<HTTPRoute>(&mut streams, &mut scopes, &mut served).await?;
        self.add::<TLSRoute>(&mut streams, &mut scopes, &mut served).await?;
        self.add::<TCPRoute>(&mut streams, &mut scopes, &mut served).await?;
        self.add::<UDPRoute>(&mut streams, &mut scopes, &mut served).await?;
        self.add::<ListenerSet>(&mut streams, &mut scopes, &mut served).await?;
        self.add::<GRPCRoute>(&mut streams, &mut scopes, &mut served).await?;
        self.add::<BackendTLSPolicy>(&mut streams, &mut scopes, &mut served).await?;
        self.add::<Ingress>(&mut streams, &mut scopes, &mut served).await?;
        self.add::<IngressClass>(&mut streams, &mut scopes, &mut served).await?;
        self.add::<HTTPProxy>(&mut streams, &mut scopes, &mut served).await?;
        self.add::<ExtensionService>(&mut streams, &mut scopes, &mut served).await?;
        self.add::<TLSCertificateDelegation>(&mut streams, &mut scopes, &mut served).await?;
        self.add::<ReferenceGrant>(&mut streams, &mut scopes, &mut served).await?;
        self.add::<Service>(&mut streams, &mut scopes, &mut served).await?;
        self.add::<EndpointSlice>(&mut streams, &mut scopes, &mut served).await?;
        self.add::<Secret>(&mut streams, &mut scopes, &mut served).await?;
        self.add::<ConfigMap>(&mut streams, &mut scopes, &mut served).await?;
        self.add::<ClusterTrustBundle>(&mut streams, &mut scopes, &mut served).await?;
        self.add::<Namespace>(&mut streams, &mut scopes, &mut served).await?;

        let mut working = Snapshot::default();
        let mut listing: BTreeMap<usize, BTreeSet<ObjectKey>> = BTreeMap::new();
        let mut unsynced: BTreeSet<usize> = (0..scopes.len()).collect();
        if unsynced.is_empty() {
            store.set_synced();
        }
        while let Some((stream, change)) = streams.next().await {
            let mut dirty = apply(&mut working, &scopes, &mut listing, &mut unsynced, stream, change);
            let mut events = 1;
            // Take whatever else is ready, then publish once.
            while let Some(Some((stream, change))) = streams.next().now_or_never() {
                dirty |= apply(&mut working, &scopes, &mut listing, &mut unsynced, stream, change);
                events += 1;
            }
            if store.is_synced() {
                debug!(events, dirty, "watch events taken in");
            }
            if dirty {
                // Unchanged objects already share the published snapshot's `Arc`s (`upsert`).
                store.replace_shared(working.clone());
            }
            if unsynced.is_empty() && !store.is_synced() {
                info!("every watch has listed; the store is synced");
                store.set_synced();
            }
        }
        Ok(())
    }

    /// The version of `K` to watch: its own, else the first of its other versions the API server
    /// serves; `None` when it serves none (its CRD is absent).
    async fn served_version<K: Watched>(&self, served: &mut Served) -> Result<Option<ApiResource>, Error> {
        let base = ApiResource::erase::<K>(&());
        let versions = std::iter::once(base.version.as_str()).chain(K::OTHER_VERSIONS.iter().copied());
        for version in versions {
            let resource = ApiResource {
                version: version.to_string(),
                api_version: match base.group.as_str() {
                    "" => version.to_string(),
                    group => format!("{group}/{version}"),
                },
                ..base.clone()
            };
            match served.serves(&self.client, &resource).await {
                Ok(true) => return Ok(Some(resource)),
                Ok(false) => continue,
                Err(source) => return Err(Error::Discovery { kind: K::NAME, source }),
            }
        }
        Ok(None)
    }

    async fn add<K: Watched>(
        &self,
        streams: &mut SelectAll<Stream>,
        scopes: &mut Vec<(Kind, Option<String>)>,
        served: &mut Served,
    ) -> Result<(), Error> {
        if self.disabled.contains(&K::KIND) {
            info!(kind = K::NAME, "disabled (--disable-feature); not watching it");
            return Ok(());
        }
        let version = match self.served_version::<K>(served).await? {
            Some(resource) if resource.version == ApiResource::erase::<K>(&()).version => None,
            Some(older) => {
                info!(kind = K::NAME, version = older.version, "served only at another version; watching that");
                Some(older)
            }
            None => {
                info!(kind = K::NAME, "not served by the API server (CRD absent?); not watching it");
                return Ok(());
            }
        };
        let apis: Vec<(Api<K>, Option<String>)> = if K::NAMESPACED && !self.namespaces.is_empty() {
            self.namespaces.iter().map(|ns| (K::api(self.client.clone(), Some(ns)), Some(ns.clone()))).collect()
        } else {
            vec![(K::api(self.client.clone(), None), None)]
        };
        for (api, scope) in apis {
            let version = version.clone();
            // Served, but can we read it? A missing permission stops start-up naming the kind,
            // rather than a watch retrying forbidden lists in the background.
            let resource = version.clone().unwrap_or_else(|| ApiResource::erase::<K>(&()));
            let probe: Api<DynamicObject> = match &scope {
                Some(ns) => Api::namespaced_with(self.client.clone(), ns, &resource),
                None => Api::all_with(self.client.clone(), &resource),
            };
            match probe.list_metadata(&kube::api::ListParams::default().limit(1)).await {
                Ok(_) => {}
                // Upstream's RBAC does not grant it: a drop-in install runs without the kind.
                Err(kube::Error::Api(e)) if e.code == 403 && BEYOND_UPSTREAMS_RBAC.contains(&K::KIND) => {
                    warn!(
                        kind = K::NAME,
                        error = %e.message,
                        namespace = scope.as_deref().unwrap_or("(all)"),
                        "no permission to list it (upstream Contour's ClusterRole does not grant it); not watching it"
                    );
                    continue;
                }
                Err(source) => return Err(Error::Discovery { kind: K::NAME, source }),
            }
            let index = scopes.len();
            scopes.push((K::KIND, scope.clone()));
            let cx = std::sync::Arc::clone(&self.context);
            let events: BoxStream<'static, Result<Event<K>, watcher::Error>> = match version {
                None => watcher::watcher(api, K::config()).backoff(WatchBackoff::default()).boxed(),
                Some(resource) => {
                    let api: Api<DynamicObject> = match &scope {
                        Some(ns) => Api::namespaced_with(self.client.clone(), ns, &resource),
                        None => Api::all_with(self.client.clone(), &resource),
                    };
                    watcher::watcher(api, K::config())
                        .backoff(WatchBackoff::default())
                        .filter_map(|event| async move {
                            match event {
                                Ok(e) => typed::<K>(e).map(Ok),
                                Err(e) => Some(Err(e)),
                            }
                        })
                        .boxed()
                }
            };
            let stream = events
                .filter_map(move |event| {
                    let cx = std::sync::Arc::clone(&cx);
                    let namespace = scope.clone();
                    async move {
                        let change = match event {
                            Ok(Event::Init) => {
                                if let Some(seen) = &cx.seen {
                                    seen.forget_scope(K::NAME, namespace.as_deref());
                                }
                                Change::Init
                            }
                            Ok(Event::InitApply(o)) => Change::Add(o.into_object(&cx)?),
                            Ok(Event::InitDone) => Change::InitDone,
                            Ok(Event::Apply(o)) => {
                                let key = ObjectKey::of(o.meta());
                                match o.into_object(&cx) {
                                    Some(object) => Change::Apply(object),
                                    None => Change::Delete(K::KIND, key),
                                }
                            }
                            Ok(Event::Delete(o)) => {
                                let key = ObjectKey::of(o.meta());
                                if let Some(seen) = &cx.seen {
                                    seen.forget(K::NAME, &key);
                                }
                                Change::Delete(K::KIND, key)
                            }
                            Err(e) => {
                                warn!(kind = K::NAME, error = %e, "watch failed; retrying with backoff");
                                return None;
                            }
                        };
                        Some((index, change))
                    }
                })
                .boxed();
            streams.push(stream);
        }
        Ok(())
    }
}

/// Applies one change to the working snapshot; returns whether the snapshot should be published.
///
/// A listed object goes into the working snapshot as it arrives (compacted, behind its `Arc`),
/// not into a list held until the listing ends: at 10k objects a kind that list is the largest
/// allocation of start-up. Listed objects are newer than what they replace, so a snapshot
/// published while a relist is under way is no less current; only the removal of the objects
/// the relist no longer has waits for its end.
fn apply(
    working: &mut Snapshot,
    scopes: &[(Kind, Option<String>)],
    listing: &mut BTreeMap<usize, BTreeSet<ObjectKey>>,
    unsynced: &mut BTreeSet<usize>,
    stream: usize,
    change: Change,
) -> bool {
    match change {
        Change::Init => {
            listing.insert(stream, BTreeSet::new());
            false
        }
        Change::Add(o) => {
            listing.entry(stream).or_default().insert(o.key());
            // Published with the listing's end (or with the next change of another stream).
            working.upsert(o);
            false
        }
        Change::InitDone => {
            // A (re)list is complete: whatever this stream had that the list did not is gone.
            let (kind, scope) = &scopes[stream];
            let listed = listing.remove(&stream).unwrap_or_default();
            let outside = |key: &ObjectKey| scope.as_ref().is_some_and(|ns| *ns != key.namespace);
            let stale: Vec<ObjectKey> =
                working.keys(*kind).into_iter().filter(|k| !outside(k) && !listed.contains(k)).collect();
            for key in stale {
                working.remove(*kind, &key);
            }
            unsynced.remove(&stream);
            debug!(kind = ?kind, scope = ?scope, "listed");
            true
        }
        Change::Apply(o) => working.upsert(o),
        Change::Delete(kind, key) => working.remove(kind, &key),
    }
}

/// Retry delays of a failed watch: 250 ms doubling up to [`MAX_WATCH_BACKOFF`], so the store
/// catches up within seconds of the API server coming back.
#[derive(Debug, Clone)]
struct WatchBackoff {
    next: Duration,
}

/// The longest a failed watch waits before trying again.
pub const MAX_WATCH_BACKOFF: Duration = Duration::from_secs(5);

impl Default for WatchBackoff {
    fn default() -> Self {
        Self { next: Duration::from_millis(250) }
    }
}

impl Iterator for WatchBackoff {
    type Item = Duration;
    fn next(&mut self) -> Option<Duration> {
        let delay = self.next;
        self.next = (self.next * 2).min(MAX_WATCH_BACKOFF);
        Some(delay)
    }
}

impl kube::runtime::utils::Backoff for WatchBackoff {
    fn reset(&mut self) {
        *self = Self::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cas_private_key_is_dropped_as_the_secret_is_read() {
        use k8s_openapi::ByteString;
        let mut secret = Secret::default();
        secret.metadata.name = Some("contourca".into());
        secret.data = Some(
            [("ca.crt".to_string(), ByteString(b"CA".to_vec())), ("ca.key".into(), ByteString(b"KEY".to_vec()))].into(),
        );
        let Some(Object::Secret(kept)) = secret.into_object(&Context::default()) else { panic!("the Secret is kept") };
        let keys: Vec<&String> = kept.data.as_ref().unwrap().keys().collect();
        assert_eq!(keys, ["ca.crt"]);
    }

    #[test]
    fn config_maps_are_kept_for_their_ca_bundle_or_whole_when_labelled_as_error_pages() {
        let read = |labelled: bool| {
            let mut cm = ConfigMap::default();
            cm.metadata.name = Some("pages".into());
            if labelled {
                cm.metadata.labels = Some([(objects::ERROR_PAGES_LABEL.to_string(), "true".to_string())].into());
            }
            cm.data = Some([("ca.crt".to_string(), "CA".to_string()), ("404.html".into(), "gone".into())].into());
            match cm.into_object(&Context::default()) {
                Some(Object::ConfigMap(kept)) => kept.data.unwrap().into_keys().collect::<Vec<_>>(),
                _ => panic!("a ConfigMap with a bundle is kept"),
            }
        };
        assert_eq!(read(false), ["ca.crt"]);
        assert_eq!(read(true), ["404.html", "ca.crt"]);
    }

    fn config_map(namespace: &str, name: &str, value: &str) -> Object {
        let mut cm = ConfigMap::default();
        cm.metadata.namespace = Some(namespace.into());
        cm.metadata.name = Some(name.into());
        cm.data = Some([("k".to_string(), value.to_string())].into());
        Object::ConfigMap(cm)
    }

    fn value(working: &Snapshot, namespace: &str, name: &str) -> Option<String> {
        working.config_maps.get(&ObjectKey::new(namespace, name)).map(|cm| cm.data.as_ref().unwrap()["k"].clone())
    }

    #[test]
    fn a_list_fills_the_snapshot_as_it_arrives_and_a_relist_removes_what_it_no_longer_has() {
        let scopes = vec![(Kind::ConfigMap, None), (Kind::ConfigMap, Some("b".to_string()))];
        let mut working = Snapshot::default();
        let mut listing = BTreeMap::new();
        let mut unsynced: BTreeSet<usize> = [0, 1].into();
        let mut step = |working: &mut Snapshot, stream, change| {
            apply(working, &scopes, &mut listing, &mut unsynced, stream, change)
        };

        assert!(!step(&mut working, 0, Change::Init));
        assert!(!step(&mut working, 0, Change::Add(config_map("a", "one", "1"))));
        assert!(!step(&mut working, 0, Change::Add(config_map("a", "two", "2"))));
        // Held in the working snapshot already, published with the listing's end.
        assert_eq!(value(&working, "a", "two").as_deref(), Some("2"));
        assert!(step(&mut working, 0, Change::InitDone));
        step(&mut working, 1, Change::Init);
        assert!(step(&mut working, 1, Change::InitDone));
        assert_eq!(working.len(Kind::ConfigMap), 2);

        // A relist: a changed object takes effect as it arrives; one the list no longer has
        // goes at its end.
        step(&mut working, 0, Change::Init);
        step(&mut working, 0, Change::Add(config_map("a", "one", "1b")));
        assert_eq!(value(&working, "a", "one").as_deref(), Some("1b"));
        assert_eq!(value(&working, "a", "two").as_deref(), Some("2"));
        assert!(step(&mut working, 0, Change::InitDone));
        assert_eq!(value(&working, "a", "two"), None);
        assert_eq!(working.len(Kind::ConfigMap), 1);

        // A namespace-scoped stream's relist leaves other namespaces' objects alone.
        step(&mut working, 1, Change::Init);
        step(&mut working, 1, Change::Add(config_map("b", "three", "3")));
        step(&mut working, 1, Change::InitDone);
        step(&mut working, 1, Change::Init);
        step(&mut working, 1, Change::InitDone);
        assert_eq!(value(&working, "b", "three"), None);
        assert_eq!(value(&working, "a", "one").as_deref(), Some("1b"));
    }
}
