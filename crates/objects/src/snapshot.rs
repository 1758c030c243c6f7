//! The snapshot: one map per kind, keyed by namespace and name, values shared behind `Arc`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::types::*;

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

/// All objects of one kind.
pub type Objects<T> = BTreeMap<ObjectKey, Arc<T>>;

/// The kinds the controller reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// gateway.networking.k8s.io GatewayClass.
    GatewayClass,
    /// gateway.networking.k8s.io Gateway.
    Gateway,
    /// gateway.networking.k8s.io HTTPRoute.
    HttpRoute,
    /// gateway.networking.k8s.io TLSRoute.
    TlsRoute,
    /// gateway.networking.k8s.io ReferenceGrant.
    ReferenceGrant,
    /// core Service.
    Service,
    /// discovery.k8s.io EndpointSlice.
    EndpointSlice,
    /// core Secret.
    Secret,
    /// core Namespace.
    Namespace,
}

/// One object of any kind the controller reads.
#[derive(Debug, Clone)]
pub enum Object {
    /// A GatewayClass.
    GatewayClass(GatewayClass),
    /// A Gateway.
    Gateway(Gateway),
    /// An HTTPRoute.
    HttpRoute(HTTPRoute),
    /// A TLSRoute.
    TlsRoute(TLSRoute),
    /// A ReferenceGrant.
    ReferenceGrant(ReferenceGrant),
    /// A Service.
    Service(Service),
    /// An EndpointSlice.
    EndpointSlice(EndpointSlice),
    /// A Secret.
    Secret(Secret),
    /// A Namespace.
    Namespace(Namespace),
}

impl Object {
    /// The object's kind.
    pub fn kind(&self) -> Kind {
        match self {
            Object::GatewayClass(_) => Kind::GatewayClass,
            Object::Gateway(_) => Kind::Gateway,
            Object::HttpRoute(_) => Kind::HttpRoute,
            Object::TlsRoute(_) => Kind::TlsRoute,
            Object::ReferenceGrant(_) => Kind::ReferenceGrant,
            Object::Service(_) => Kind::Service,
            Object::EndpointSlice(_) => Kind::EndpointSlice,
            Object::Secret(_) => Kind::Secret,
            Object::Namespace(_) => Kind::Namespace,
        }
    }

    /// The object's metadata.
    pub fn meta(&self) -> &ObjectMeta {
        match self {
            Object::GatewayClass(o) => &o.metadata,
            Object::Gateway(o) => &o.metadata,
            Object::HttpRoute(o) => &o.metadata,
            Object::TlsRoute(o) => &o.metadata,
            Object::ReferenceGrant(o) => &o.metadata,
            Object::Service(o) => &o.metadata,
            Object::EndpointSlice(o) => &o.metadata,
            Object::Secret(o) => &o.metadata,
            Object::Namespace(o) => &o.metadata,
        }
    }

    /// The object's key.
    pub fn key(&self) -> ObjectKey {
        ObjectKey::of(self.meta())
    }
}

/// Every object the controller has read, at one point in time.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    /// GatewayClasses.
    pub gateway_classes: Objects<GatewayClass>,
    /// Gateways.
    pub gateways: Objects<Gateway>,
    /// HTTPRoutes.
    pub http_routes: Objects<HTTPRoute>,
    /// TLSRoutes.
    pub tls_routes: Objects<TLSRoute>,
    /// ReferenceGrants.
    pub reference_grants: Objects<ReferenceGrant>,
    /// Services.
    pub services: Objects<Service>,
    /// EndpointSlices.
    pub endpoint_slices: Objects<EndpointSlice>,
    /// Secrets.
    pub secrets: Objects<Secret>,
    /// Namespaces.
    pub namespaces: Objects<Namespace>,
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

    /// Adds or replaces an object; returns whether it was already present.
    pub fn insert(&mut self, object: Object) -> bool {
        let key = object.key();
        match object {
            Object::GatewayClass(o) => self.gateway_classes.insert(key, Arc::new(o)).is_some(),
            Object::Gateway(o) => self.gateways.insert(key, Arc::new(o)).is_some(),
            Object::HttpRoute(o) => self.http_routes.insert(key, Arc::new(o)).is_some(),
            Object::TlsRoute(o) => self.tls_routes.insert(key, Arc::new(o)).is_some(),
            Object::ReferenceGrant(o) => self.reference_grants.insert(key, Arc::new(o)).is_some(),
            Object::Service(o) => self.services.insert(key, Arc::new(o)).is_some(),
            Object::EndpointSlice(o) => self.endpoint_slices.insert(key, Arc::new(o)).is_some(),
            Object::Secret(o) => self.secrets.insert(key, Arc::new(o)).is_some(),
            Object::Namespace(o) => self.namespaces.insert(key, Arc::new(o)).is_some(),
        }
    }

    /// Removes an object; returns whether it was present.
    pub fn remove(&mut self, kind: Kind, key: &ObjectKey) -> bool {
        match kind {
            Kind::GatewayClass => self.gateway_classes.remove(key).is_some(),
            Kind::Gateway => self.gateways.remove(key).is_some(),
            Kind::HttpRoute => self.http_routes.remove(key).is_some(),
            Kind::TlsRoute => self.tls_routes.remove(key).is_some(),
            Kind::ReferenceGrant => self.reference_grants.remove(key).is_some(),
            Kind::Service => self.services.remove(key).is_some(),
            Kind::EndpointSlice => self.endpoint_slices.remove(key).is_some(),
            Kind::Secret => self.secrets.remove(key).is_some(),
            Kind::Namespace => self.namespaces.remove(key).is_some(),
        }
    }

    /// Replaces each object equal to the one `previous` holds under the same key by `previous`'s
    /// `Arc`, so later stages can recognise unchanged objects by pointer.
    pub fn share_unchanged(&mut self, previous: &Snapshot) {
        fn share<T: PartialEq>(next: &mut Objects<T>, previous: &Objects<T>) {
            for (key, value) in next.iter_mut() {
                if let Some(old) = previous.get(key)
                    && !Arc::ptr_eq(old, value)
                    && **old == **value
                {
                    *value = Arc::clone(old);
                }
            }
        }
        share(&mut self.gateway_classes, &previous.gateway_classes);
        share(&mut self.gateways, &previous.gateways);
        share(&mut self.http_routes, &previous.http_routes);
        share(&mut self.tls_routes, &previous.tls_routes);
        share(&mut self.reference_grants, &previous.reference_grants);
        share(&mut self.services, &previous.services);
        share(&mut self.endpoint_slices, &previous.endpoint_slices);
        share(&mut self.secrets, &previous.secrets);
        share(&mut self.namespaces, &previous.namespaces);
    }

    /// The kinds whose objects differ between `self` and `other`.
    pub fn changed_kinds(&self, other: &Snapshot) -> BTreeSet<Kind> {
        fn differs<T: PartialEq>(a: &Objects<T>, b: &Objects<T>) -> bool {
            a.len() != b.len()
                || a.iter().zip(b).any(|((ka, va), (kb, vb))| ka != kb || !(Arc::ptr_eq(va, vb) || va == vb))
        }
        let mut kinds = BTreeSet::new();
        let mut check = |changed: bool, kind: Kind| {
            if changed {
                kinds.insert(kind);
            }
        };
        check(differs(&self.gateway_classes, &other.gateway_classes), Kind::GatewayClass);
        check(differs(&self.gateways, &other.gateways), Kind::Gateway);
        check(differs(&self.http_routes, &other.http_routes), Kind::HttpRoute);
        check(differs(&self.tls_routes, &other.tls_routes), Kind::TlsRoute);
        check(differs(&self.reference_grants, &other.reference_grants), Kind::ReferenceGrant);
        check(differs(&self.services, &other.services), Kind::Service);
        check(differs(&self.endpoint_slices, &other.endpoint_slices), Kind::EndpointSlice);
        check(differs(&self.secrets, &other.secrets), Kind::Secret);
        check(differs(&self.namespaces, &other.namespaces), Kind::Namespace);
        kinds
    }

    /// The EndpointSlices of a Service (label `kubernetes.io/service-name`).
    pub fn endpoint_slices_of<'a>(
        &'a self,
        namespace: &'a str,
        service: &'a str,
    ) -> impl Iterator<Item = &'a Arc<EndpointSlice>> + 'a {
        let start = ObjectKey::new(namespace, "");
        self.endpoint_slices
            .range(start..)
            .take_while(move |(k, _)| k.namespace == namespace)
            .filter(move |(_, s)| {
                s.metadata.labels.as_ref().and_then(|l| l.get("kubernetes.io/service-name")).map(String::as_str)
                    == Some(service)
            })
            .map(|(_, s)| s)
    }
}

#[cfg(test)]
mod tests;
