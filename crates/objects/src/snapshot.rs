//! The snapshot: one map per kind, keyed by namespace and name, values shared behind `Arc`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::types::*;
use compact::Compact;

mod compact;

pub use chunkmap::ChunkMap;

/// The identity of an object within its kind. Cluster-scoped objects have an empty namespace.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    /// The namespace, empty for cluster-scoped kinds.
    pub namespace: String,
    /// The name.
    pub name: String,
}

impl ObjectKey {
    /// A key from a namespace and a name.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self { namespace: namespace.into(), name: name.into() }
    }

    /// The key of an object from its metadata.
    pub fn of(meta: &ObjectMeta) -> Self {
        Self::new(meta.namespace.clone().unwrap_or_default(), meta.name.clone().unwrap_or_default())
    }
}

impl std::fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.namespace.is_empty() { f.write_str(&self.name) } else { write!(f, "{}/{}", self.namespace, self.name) }
    }
}

/// All objects of one kind, in key order.
pub type Objects<T> = ChunkMap<ObjectKey, Arc<T>>;

/// Declares every kind the controller reads, once: the [`Kind`] and [`Object`] enums, the
/// [`Snapshot`] maps, and the per-kind dispatch. Adding a kind is one line here.
macro_rules! kinds {
    ($( $variant:ident, $field:ident, $ty:ty, $group:literal, $name:literal, $namespaced:literal; )*) => {
        /// The kinds the controller reads.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Kind {
            $( #[doc = concat!($group, " ", $name, ".")] $variant, )*
        }

        impl Kind {
            /// Every kind.
            pub const ALL: &'static [Kind] = &[$(Kind::$variant),*];

            /// The kind's name, as in `kind:`.
            pub fn name(self) -> &'static str {
                match self { $(Kind::$variant => $name,)* }
            }

            /// The kind's API group (empty for the core group).
            pub fn group(self) -> &'static str {
                match self { $(Kind::$variant => $group,)* }
            }

            /// Whether objects of the kind live in a namespace.
            pub fn namespaced(self) -> bool {
                match self { $(Kind::$variant => $namespaced,)* }
            }
        }

        /// One object of any kind the controller reads. Short-lived: it moves into an `Arc` in
        /// the snapshot right away, so the size difference between kinds costs nothing.
        #[derive(Debug, Clone)]
        #[allow(clippy::large_enum_variant)]
        pub enum Object {
            $( #[doc = concat!("A ", $name, ".")] $variant($ty), )*
        }

        impl Object {
            /// The object's kind.
            pub fn kind(&self) -> Kind {
                match self { $(Object::$variant(_) => Kind::$variant,)* }
            }

            /// The object's metadata.
            pub fn meta(&self) -> &ObjectMeta {
                match self { $(Object::$variant(o) => &o.metadata,)* }
            }

            /// The object's metadata, to change.
            pub fn meta_mut(&mut self) -> &mut ObjectMeta {
                match self { $(Object::$variant(o) => &mut o.metadata,)* }
            }

            /// Deserializes an object of a kind from JSON.
            pub fn from_json(kind: Kind, json: serde_json::Value) -> Result<Self, serde_json::Error> {
                Ok(match kind { $(Kind::$variant => Object::$variant(serde_json::from_value(json)?),)* })
            }
        }

        /// Every object the controller has read, at one point in time. Each kind's map is
        /// shared behind an `Arc`: a snapshot clones in constant time, a change copies only the
        /// map of its kind, and kinds that did not change compare by pointer.
        #[derive(Debug, Clone, Default, PartialEq)]
        pub struct Snapshot {
            $( #[doc = concat!($name, "s.")] pub $field: Arc<Objects<$ty>>, )*
        }

        impl Snapshot {
            /// Adds or replaces an object; returns whether it was already present.
            pub fn insert(&mut self, object: Object) -> bool {
                let key = object.key();
                match object { $(Object::$variant(mut o) => { o.compact(); Arc::make_mut(&mut self.$field).insert(key, Arc::new(o)).is_some() })* }
            }

            /// Adds or replaces an object unless an equal one is already there; returns whether
            /// the snapshot changed. Watch events that change nothing we keep (our own status
            /// writes, for one) then cost one lookup.
            pub fn upsert(&mut self, object: Object) -> bool {
                let key = object.key();
                match object {
                    $(Object::$variant(mut o) => {
                        o.compact();
                        if self.$field.get(&key).is_some_and(|old| **old == o) {
                            return false;
                        }
                        Arc::make_mut(&mut self.$field).insert(key, Arc::new(o));
                        true
                    })*
                }
            }

            /// Removes an object; returns whether it was present.
            pub fn remove(&mut self, kind: Kind, key: &ObjectKey) -> bool {
                match kind { $(Kind::$variant => self.$field.contains_key(key) && Arc::make_mut(&mut self.$field).remove(key).is_some(),)* }
            }

            /// The keys of every object of a kind.
            pub fn keys(&self, kind: Kind) -> Vec<ObjectKey> {
                match kind { $(Kind::$variant => self.$field.keys().cloned().collect(),)* }
            }

            /// How many objects of a kind there are.
            pub fn len(&self, kind: Kind) -> usize {
                match kind { $(Kind::$variant => self.$field.len(),)* }
            }

            /// Whether the snapshot holds no object at all.
            pub fn is_empty(&self) -> bool {
                true $(&& self.$field.is_empty())*
            }

            /// Replaces each object equal to the one `previous` holds under the same key by
            /// `previous`'s `Arc`, so later stages can recognise unchanged objects by pointer.
            pub fn share_unchanged(&mut self, previous: &Snapshot) {
                $( if !Arc::ptr_eq(&self.$field, &previous.$field) { share(Arc::make_mut(&mut self.$field), &previous.$field); } )*
            }

            /// The identity (`Arc` address) of an object, if present: caches reuse work while
            /// the objects it read keep their identity.
            pub fn identity(&self, kind: Kind, key: &ObjectKey) -> Option<usize> {
                match kind { $(Kind::$variant => self.$field.get(key).map(|o| identity(o)),)* }
            }

            /// A kind's whole map, type-erased: the same `Arc` while none of the kind's objects
            /// changed.
            pub fn kind_map(&self, kind: Kind) -> Arc<dyn std::any::Any + Send + Sync> {
                match kind { $(Kind::$variant => Arc::clone(&self.$field) as Arc<dyn std::any::Any + Send + Sync>,)* }
            }

            /// The keys of a kind's objects added, removed or replaced since `before`, a
            /// [`Snapshot::kind_map`] of the same kind (`None` if it is not one).
            pub fn changed_keys(&self, kind: Kind, before: &(dyn std::any::Any + Send + Sync)) -> Option<BTreeSet<ObjectKey>> {
                match kind { $(Kind::$variant => before.downcast_ref::<Objects<$ty>>().map(|b| keys_changed(b, &self.$field)),)* }
            }

            /// The identities of every object of a kind, in key order.
            pub fn identities(&self, kind: Kind) -> Vec<usize> {
                match kind { $(Kind::$variant => self.$field.values().map(|o| identity(o)).collect(),)* }
            }

            /// The kinds whose objects differ between `self` and `other`.
            pub fn changed_kinds(&self, other: &Snapshot) -> BTreeSet<Kind> {
                let mut kinds = BTreeSet::new();
                $( if differs(&self.$field, &other.$field) { kinds.insert(Kind::$variant); } )*
                kinds
            }
        }
    };
}

kinds! {
    GatewayClass, gateway_classes, GatewayClass, "gateway.networking.k8s.io", "GatewayClass", false;
    Gateway, gateways, Gateway, "gateway.networking.k8s.io", "Gateway", true;
    HttpRoute, http_routes, HTTPRoute, "gateway.networking.k8s.io", "HTTPRoute", true;
    GrpcRoute, grpc_routes, GRPCRoute, "gateway.networking.k8s.io", "GRPCRoute", true;
    TlsRoute, tls_routes, TLSRoute, "gateway.networking.k8s.io", "TLSRoute", true;
    TcpRoute, tcp_routes, TCPRoute, "gateway.networking.k8s.io", "TCPRoute", true;
    UdpRoute, udp_routes, UDPRoute, "gateway.networking.k8s.io", "UDPRoute", true;
    ListenerSet, listener_sets, ListenerSet, "gateway.networking.k8s.io", "ListenerSet", true;
    ReferenceGrant, reference_grants, ReferenceGrant, "gateway.networking.k8s.io", "ReferenceGrant", true;
    BackendTlsPolicy, backend_tls_policies, BackendTLSPolicy, "gateway.networking.k8s.io", "BackendTLSPolicy", true;
    Ingress, ingresses, Ingress, "networking.k8s.io", "Ingress", true;
    IngressClass, ingress_classes, IngressClass, "networking.k8s.io", "IngressClass", false;
    HttpProxy, http_proxies, HTTPProxy, "projectcontour.io", "HTTPProxy", true;
    ExtensionService, extension_services, ExtensionService, "projectcontour.io", "ExtensionService", true;
    TlsCertificateDelegation, tls_certificate_delegations, TLSCertificateDelegation, "projectcontour.io", "TLSCertificateDelegation", true;
    Service, services, Service, "", "Service", true;
    EndpointSlice, endpoint_slices, EndpointSlice, "discovery.k8s.io", "EndpointSlice", true;
    Secret, secrets, Secret, "", "Secret", true;
    ConfigMap, config_maps, ConfigMap, "", "ConfigMap", true;
    ClusterTrustBundle, cluster_trust_bundles, ClusterTrustBundle, "certificates.k8s.io", "ClusterTrustBundle", false;
    Namespace, namespaces, Namespace, "", "Namespace", false;
}

impl Object {
    /// The object's key.
    pub fn key(&self) -> ObjectKey {
        ObjectKey::of(self.meta())
    }
}

fn share<T: PartialEq>(next: &mut Objects<T>, previous: &Objects<T>) {
    next.replace_values(|key, value| {
        previous.get(key).filter(|old| !Arc::ptr_eq(old, value) && ***old == **value).cloned()
    });
}

/// The address of a shared object.
fn identity<T>(o: &Arc<T>) -> usize {
    Arc::as_ptr(o) as *const () as usize
}

/// The objects one cached computation read, each with the identity it found (or that it was
/// absent). The computation's result stays valid while [`Reads::unchanged`] holds.
#[derive(Debug, Clone, Default)]
pub struct Reads(Vec<Read>);

/// One object read: its kind, key and the key's fingerprint, and the identity found.
#[derive(Debug, Clone)]
struct Read {
    kind: Kind,
    fingerprint: u64,
    key: ObjectKey,
    found: Option<usize>,
}

/// A hash of a key, kept beside it: checking 20k reads against a few changed keys compares
/// these numbers, and touches the keys' strings only when one matches.
fn fingerprint(key: &ObjectKey) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = rustc_hash::FxHasher::default();
    key.hash(&mut h);
    h.finish()
}

impl Reads {
    /// Records that `key` of `kind` was read from `snapshot`.
    pub fn record(&mut self, snapshot: &Snapshot, kind: Kind, key: &ObjectKey) {
        let found = snapshot.identity(kind, key);
        self.0.push(Read { kind, fingerprint: fingerprint(key), key: key.clone(), found });
    }

    /// Whether every object read is still the same in `snapshot`, given what `changed` since
    /// the previous build, when the reads were last found current (caches drop entries a build
    /// did not use): a read of a kind that did not change holds, one of a kind whose changed
    /// keys are known holds unless its key is among them, and the others compare identities.
    pub fn unchanged(&self, snapshot: &Snapshot, changed: &Changes) -> bool {
        changed.kinds.is_empty()
            || self.0.iter().all(|read| match changed.kinds.get(&read.kind) {
                None => true,
                Some(Some(keys)) => !keys.fingerprints.contains(&read.fingerprint) || !keys.keys.contains(&read.key),
                Some(None) => snapshot.identity(read.kind, &read.key) == read.found,
            })
    }
}

/// What changed since a [`KindWatch`]'s previous call: per kind with a change, the keys of the
/// objects added, removed or replaced (`None` on the first call, when every object is new).
#[derive(Debug, Clone, Default)]
pub struct Changes {
    kinds: BTreeMap<Kind, Option<ChangedKeys>>,
}

/// The keys of one kind that changed, and their fingerprints.
#[derive(Debug, Clone)]
struct ChangedKeys {
    keys: BTreeSet<ObjectKey>,
    fingerprints: rustc_hash::FxHashSet<u64>,
}

impl Changes {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.kinds.is_empty()
    }

    /// How many kinds changed.
    pub fn len(&self) -> usize {
        self.kinds.len()
    }

    /// Whether objects of `kind` changed.
    pub fn includes(&self, kind: Kind) -> bool {
        self.kinds.contains_key(&kind)
    }

    /// The keys of `kind` that changed, when known.
    pub fn keys(&self, kind: Kind) -> Option<&BTreeSet<ObjectKey>> {
        self.kinds.get(&kind).and_then(Option::as_ref).map(|c| &c.keys)
    }
}

/// Which objects changed since the previous build, for caches that track [`Reads`].
#[derive(Clone, Default)]
pub struct KindWatch {
    /// Per kind: its map as last seen (the same `Arc` means nothing changed).
    previous: BTreeMap<Kind, Arc<dyn std::any::Any + Send + Sync>>,
}

impl std::fmt::Debug for KindWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KindWatch").field("kinds", &self.previous.keys().collect::<Vec<_>>()).finish()
    }
}

impl KindWatch {
    /// What changed among `kinds` since the previous call: one walk over the two maps of each
    /// kind whose map is not the same `Arc`, comparing keys and pointers. At 10k HTTPProxies a
    /// new app changes three keys, and a cached translation then checks its reads against
    /// those instead of looking each one up. The first call reports every kind.
    pub fn changed(&mut self, snapshot: &Snapshot, kinds: &[Kind]) -> Changes {
        let mut changed = BTreeMap::new();
        for kind in kinds {
            let map = snapshot.kind_map(*kind);
            match self.previous.get_mut(kind) {
                Some(seen) if Arc::ptr_eq(seen, &map) => {}
                Some(seen) => {
                    let keys = snapshot.changed_keys(*kind, &**seen);
                    if keys.as_ref().is_none_or(|k| !k.is_empty()) {
                        let fingerprinted = |keys: BTreeSet<ObjectKey>| ChangedKeys {
                            fingerprints: keys.iter().map(fingerprint).collect(),
                            keys,
                        };
                        changed.insert(*kind, keys.map(fingerprinted));
                    }
                    *seen = map;
                }
                None => {
                    changed.insert(*kind, None);
                    self.previous.insert(*kind, map);
                }
            }
        }
        Changes { kinds: changed }
    }
}

/// The keys of objects added, removed or replaced (by identity) from `before` to `now`.
fn keys_changed<T>(before: &Objects<T>, now: &Objects<T>) -> BTreeSet<ObjectKey> {
    let mut out = BTreeSet::new();
    before.diff(now, Arc::ptr_eq, |key, _, _| {
        out.insert(key.clone());
        std::ops::ControlFlow::Continue(())
    });
    out
}

fn differs<T: PartialEq>(a: &Arc<Objects<T>>, b: &Arc<Objects<T>>) -> bool {
    if Arc::ptr_eq(a, b) {
        return false;
    }
    if a.len() != b.len() {
        return true;
    }
    let mut differ = false;
    a.diff(
        b,
        |x, y| Arc::ptr_eq(x, y) || x == y,
        |_, _, _| {
            differ = true;
            std::ops::ControlFlow::Break(())
        },
    );
    differ
}

impl Snapshot {
    /// A snapshot of every object in a multi-document YAML text; the first document that cannot
    /// be read is the error.
    pub fn from_yaml(text: &str) -> Result<Self, crate::ParseError> {
        let mut snapshot = Self::default();
        for object in crate::parse_documents(text) {
            snapshot.insert(object?);
        }
        Ok(snapshot)
    }
}

#[cfg(test)]
mod tests;
