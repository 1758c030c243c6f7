//! Each kind the source watches: how it is listed and watched, and what of it is kept.

use std::fmt::Debug;

use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::watcher::{self, Event};
use objects::types::*;
use objects::{Kind, Object, ObjectKey};
use serde::de::DeserializeOwned;
use tracing::warn;

use super::Context;

/// Secret types the controller never keeps: they are large, numerous and never referenced.
pub const IGNORED_SECRET_TYPES: [&str; 2] = ["helm.sh/release.v1", "kubernetes.io/service-account-token"];

/// The data key of a CA's private key in a Secret: dropped as the Secret is read.
const CA_KEY: &str = "ca.key";

/// A kind the source watches.
pub(super) trait Watched:
    kube::Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static
{
    const KIND: Kind;
    const NAME: &'static str;
    const NAMESPACED: bool;
    fn into_object(self, cx: &Context) -> Option<Object>;
    /// The API for one namespace (namespaced kinds) or the whole cluster.
    fn api(client: kube::Client, namespace: Option<&str>) -> Api<Self>;
    fn config() -> watcher::Config {
        watcher::Config::default().any_semantic()
    }
    /// Other API versions to read the kind through when the API server does not serve ours:
    /// upstream Contour's own CRD bundle (Gateway API 1.3) serves ReferenceGrant as v1beta1
    /// only and TLSRoute as v1alpha2; Gateway API 1.6's standard channel serves TCPRoute and
    /// UDPRoute as v1 only (our types are v1alpha2). Their schemas are the same as far as we read
    /// them.
    const OTHER_VERSIONS: &'static [&'static str] = &[];
}

macro_rules! scoped_api {
    (true) => {
        fn api(client: kube::Client, namespace: Option<&str>) -> Api<Self> {
            match namespace {
                Some(ns) => Api::namespaced(client, ns),
                None => Api::all(client),
            }
        }
    };
    (false) => {
        fn api(client: kube::Client, _namespace: Option<&str>) -> Api<Self> {
            Api::all(client)
        }
    };
}

macro_rules! watched {
    ($ty:ty, $kind:ident, $name:literal, $namespaced:tt, $variant:ident) => {
        watched!($ty, $kind, $name, $namespaced, $variant, []);
    };
    ($ty:ty, $kind:ident, $name:literal, $namespaced:tt, $variant:ident, [$($older:literal),*]) => {
        impl Watched for $ty {
            const KIND: Kind = Kind::$kind;
            const NAME: &'static str = $name;
            const NAMESPACED: bool = $namespaced;
            const OTHER_VERSIONS: &'static [&'static str] = &[$($older),*];
            fn into_object(mut self, cx: &Context) -> Option<Object> {
                cx.observe(Self::NAME, &self.metadata, self.status.as_ref());
                trim(&mut self.metadata);
                self.status = None;
                Some(Object::$variant(self))
            }
            scoped_api!($namespaced);
        }
    };
}

watched!(GatewayClass, GatewayClass, "GatewayClass", false, GatewayClass);
watched!(Gateway, Gateway, "Gateway", true, Gateway);
watched!(HTTPRoute, HttpRoute, "HTTPRoute", true, HttpRoute);
watched!(TLSRoute, TlsRoute, "TLSRoute", true, TlsRoute, ["v1alpha3", "v1alpha2"]);
watched!(TCPRoute, TcpRoute, "TCPRoute", true, TcpRoute, ["v1"]);
watched!(UDPRoute, UdpRoute, "UDPRoute", true, UdpRoute, ["v1"]);
watched!(ListenerSet, ListenerSet, "ListenerSet", true, ListenerSet);
watched!(GRPCRoute, GrpcRoute, "GRPCRoute", true, GrpcRoute);
watched!(BackendTLSPolicy, BackendTlsPolicy, "BackendTLSPolicy", true, BackendTlsPolicy, ["v1alpha3"]);
watched!(Ingress, Ingress, "Ingress", true, Ingress);
watched!(HTTPProxy, HttpProxy, "HTTPProxy", true, HttpProxy);
watched!(ExtensionService, ExtensionService, "ExtensionService", true, ExtensionService);
watched!(
    TLSCertificateDelegation,
    TlsCertificateDelegation,
    "TLSCertificateDelegation",
    true,
    TlsCertificateDelegation
);
impl Watched for Service {
    scoped_api!(true);
    const KIND: Kind = Kind::Service;
    const NAME: &'static str = "Service";
    const NAMESPACED: bool = true;
    /// A Gateway's Service and the Envoy Service keep their load-balancer status (addresses for
    /// Gateway and Ingress status); every other Service loses its status.
    fn into_object(mut self, cx: &Context) -> Option<Object> {
        trim(&mut self.metadata);
        let gateway_service = self.metadata.labels.as_ref().is_some_and(|l| l.contains_key(GATEWAY_NAME_LABEL));
        let envoy_service = cx.keep_service_status.as_ref().is_some_and(|k| *k == ObjectKey::of(&self.metadata));
        if !(gateway_service || envoy_service) {
            self.status = None;
        } else if let Some(status) = self.status.as_mut() {
            status.conditions = None;
        }
        Some(Object::Service(self))
    }
}

/// The label the provisioner puts on a Gateway's Service.
const GATEWAY_NAME_LABEL: &str = "gateway.networking.k8s.io/gateway-name";
watched!(Namespace, Namespace, "Namespace", false, Namespace);

impl Watched for ReferenceGrant {
    scoped_api!(true);
    const OTHER_VERSIONS: &'static [&'static str] = &["v1beta1"];
    const KIND: Kind = Kind::ReferenceGrant;
    const NAME: &'static str = "ReferenceGrant";
    const NAMESPACED: bool = true;
    fn into_object(mut self, _cx: &Context) -> Option<Object> {
        trim(&mut self.metadata);
        Some(Object::ReferenceGrant(self))
    }
}

impl Watched for IngressClass {
    scoped_api!(false);
    const KIND: Kind = Kind::IngressClass;
    const NAME: &'static str = "IngressClass";
    const NAMESPACED: bool = false;
    fn into_object(mut self, _cx: &Context) -> Option<Object> {
        trim(&mut self.metadata);
        Some(Object::IngressClass(self))
    }
}

/// The ConfigMap key that carries a CA bundle (BackendTLSPolicy's caCertificateRefs).
pub const CA_BUNDLE_KEY: &str = "ca.crt";

impl Watched for ConfigMap {
    scoped_api!(true);
    const KIND: Kind = Kind::ConfigMap;
    const NAME: &'static str = "ConfigMap";
    const NAMESPACED: bool = true;
    /// Only CA bundles are kept, and only their bundle, and ConfigMaps labelled as error pages
    /// (`projectcontour.io/error-pages: "true"`), whole: other ConfigMaps are nobody's business
    /// here.
    fn into_object(mut self, _cx: &Context) -> Option<Object> {
        let labels = self.metadata.labels.as_ref();
        if labels.and_then(|l| l.get(objects::ERROR_PAGES_LABEL)).is_some_and(|v| v == "true") {
            trim(&mut self.metadata);
            self.binary_data = None;
            return Some(Object::ConfigMap(self));
        }
        let bundle = self.data.as_mut().and_then(|d| d.remove(CA_BUNDLE_KEY))?;
        trim(&mut self.metadata);
        self.data = Some([(CA_BUNDLE_KEY.to_string(), bundle)].into_iter().collect());
        self.binary_data = None;
        Some(Object::ConfigMap(self))
    }
}

/// A CA source for BackendTLSPolicy and frontend validation. Beta in Kubernetes 1.33 to 1.36,
/// served only where the API server enables it; read at v1 or v1alpha1 where those are what
/// it serves (the fields read are the same).
impl Watched for ClusterTrustBundle {
    scoped_api!(false);
    const OTHER_VERSIONS: &'static [&'static str] = &["v1", "v1alpha1"];
    const KIND: Kind = Kind::ClusterTrustBundle;
    const NAME: &'static str = "ClusterTrustBundle";
    const NAMESPACED: bool = false;
    fn into_object(mut self, _cx: &Context) -> Option<Object> {
        trim(&mut self.metadata);
        Some(Object::ClusterTrustBundle(self))
    }
}

impl Watched for EndpointSlice {
    scoped_api!(true);
    const KIND: Kind = Kind::EndpointSlice;
    const NAME: &'static str = "EndpointSlice";
    const NAMESPACED: bool = true;
    fn into_object(mut self, _cx: &Context) -> Option<Object> {
        trim(&mut self.metadata);
        Some(Object::EndpointSlice(self))
    }
}

impl Watched for Secret {
    scoped_api!(true);
    const KIND: Kind = Kind::Secret;
    const NAME: &'static str = "Secret";
    const NAMESPACED: bool = true;
    fn into_object(mut self, _cx: &Context) -> Option<Object> {
        if self.type_.as_deref().is_some_and(|t| IGNORED_SECRET_TYPES.contains(&t)) {
            return None;
        }
        // A CA's private key (the installation's `contourca`) is never served or used here.
        if let Some(data) = &mut self.data {
            data.remove(CA_KEY);
        }
        if let Some(data) = &mut self.string_data {
            data.remove(CA_KEY);
        }
        trim(&mut self.metadata);
        Some(Object::Secret(self))
    }
    fn config() -> watcher::Config {
        let selector = IGNORED_SECRET_TYPES.map(|t| format!("type!={t}")).join(",");
        watcher::Config::default().any_semantic().fields(&selector)
    }
}

/// An event read through another API version, as the kind's own type (its `apiVersion` made the
/// type's own, which Kubernetes' generated types insist on); an object that does not fit the
/// type is dropped with a warning naming it.
pub(super) fn typed<K: Watched>(event: Event<DynamicObject>) -> Option<Event<K>> {
    let own = ApiResource::erase::<K>(&()).api_version;
    let convert = |o: DynamicObject| -> Option<K> {
        let name = ObjectKey::of(&o.metadata);
        let parsed = serde_json::to_value(&o).and_then(|mut value| {
            value["apiVersion"] = serde_json::Value::String(own.clone());
            serde_json::from_value::<K>(value)
        });
        parsed
            .map_err(|e| warn!(kind = K::NAME, object = %name, error = %e, "unreadable at this version; ignored"))
            .ok()
    };
    Some(match event {
        Event::Init => Event::Init,
        Event::InitApply(o) => Event::InitApply(convert(o)?),
        Event::InitDone => Event::InitDone,
        Event::Apply(o) => Event::Apply(convert(o)?),
        Event::Delete(o) => Event::Delete(convert(o)?),
    })
}

/// Drops what never changes the output but changes on every write.
fn trim(meta: &mut k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) {
    meta.managed_fields = None;
    meta.resource_version = None;
    if let Some(a) = meta.annotations.as_mut() {
        a.remove("kubectl.kubernetes.io/last-applied-configuration");
        if a.is_empty() {
            meta.annotations = None;
        }
    }
}
