//! The Kubernetes objects the controller reads, held as an immutable snapshot.
//!
//! Every source (the Kubernetes watches, the `--from-dir` directory) fills the same [`Snapshot`];
//! front ends and the DAG read it and never see where it came from.

pub mod gateway;
mod parse;
pub mod secrets;
pub mod services;
mod snapshot;

pub use parse::{ParseError, parse_documents, parse_json};
pub use snapshot::{Changes, Kind, KindWatch, Object, ObjectKey, Objects, Reads, Snapshot};

/// The label of ConfigMaps whose keys are error pages (HTTPProxy `errorPages`, a contour-rs
/// extension): only those are kept whole, other ConfigMaps only for their CA bundles.
pub const ERROR_PAGES_LABEL: &str = "projectcontour.io/error-pages";

/// Re-exports of the object types, so users need not name the generated crates.
pub mod types {
    pub use crate::gateway::{Gateway, ListenerSet};
    pub use api::extensionservice::ExtensionService;
    pub use api::httpproxy::HTTPProxy;
    pub use api::tlscertificatedelegation::TLSCertificateDelegation;
    pub use gateway_api::backendtlspolicies::BackendTlsPolicy as BackendTLSPolicy;
    pub use gateway_api::experimental::httproutes::HttpRoute as HTTPRoute;
    pub use gateway_api::experimental::tcproutes::TcpRoute as TCPRoute;
    pub use gateway_api::experimental::udproutes::UdpRoute as UDPRoute;
    pub use gateway_api::gatewayclasses::GatewayClass;
    pub use gateway_api::grpcroutes::GrpcRoute as GRPCRoute;
    pub use gateway_api::referencegrants::ReferenceGrant;
    pub use gateway_api::tlsroutes::TlsRoute as TLSRoute;
    pub use k8s_openapi::api::certificates::v1beta1::ClusterTrustBundle;
    pub use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret, Service};
    pub use k8s_openapi::api::discovery::v1::EndpointSlice;
    pub use k8s_openapi::api::networking::v1::{Ingress, IngressClass};
}
