//! ExtensionService (projectcontour.io/v1alpha1): a gRPC service of the cluster that Envoy calls,
//! for authorization today. Each valid one is a cluster of the default fleet.

use crate::{LoadBalancer, ServicePort, UpstreamProtocol, UpstreamValidation};

/// A checked ExtensionService.
#[derive(Debug, serde::Serialize, Clone, PartialEq, Eq, Hash)]
pub struct ExtensionService {
    /// `namespace/name` of the object.
    pub origin: crate::ObjectRef,
    /// The Service ports the extension runs on (at least one, each in the object's namespace):
    /// one cluster whose endpoints are all of theirs.
    pub services: Vec<ServicePort>,
    /// HTTP/2 over TLS (`h2`, the default) or in clear text (`h2c`); `None` is HTTP/1.1 in clear
    /// text (a Gateway listener's HTTP ExternalAuth server).
    pub protocol: Option<UpstreamProtocol>,
    /// Verification of the server's certificate (with `h2`).
    pub validation: Option<UpstreamValidation>,
    /// `timeoutPolicy.response`, in milliseconds: the default time a call may take.
    pub response_timeout_ms: Option<u64>,
    /// `timeoutPolicy.idleConnection`, in milliseconds.
    pub idle_connection_timeout_ms: Option<u64>,
    /// How endpoints are picked.
    pub load_balancer: LoadBalancer,
    /// `circuitBreakerPolicy`: max connections, pending requests, requests, retries, and
    /// connections per host; `None` keeps the default.
    pub circuit_breakers: [Option<u32>; 5],
    /// The cluster's name when the server is not an ExtensionService object (a Gateway
    /// listener's ExternalAuth backend, see [`external_auth_cluster_name`]).
    pub cluster: Option<String>,
}

impl ExtensionService {
    /// The cluster name upstream gives it: `extension/<namespace>/<name>`.
    pub fn cluster_name(&self) -> String {
        match &self.cluster {
            Some(name) => name.clone(),
            None => extension_cluster_name(&self.origin.namespace, &self.origin.name),
        }
    }

    /// The `:authority` of calls: the first subject name Envoy verifies, else the cluster name
    /// with dots for slashes (upstream's).
    pub fn authority(&self) -> String {
        match self.validation.as_ref().and_then(|v| v.subject_names.first()) {
            Some(name) => name.clone(),
            None => self.cluster_name().replace('/', "."),
        }
    }
}

/// The cluster of the ExtensionService `namespace/name` (upstream's name), also where the
/// global filters that name one by configuration send their calls.
pub fn extension_cluster_name(namespace: &str, name: &str) -> String {
    format!("extension/{namespace}/{name}")
}

/// The cluster of a Gateway listener's ExternalAuth server: the Service port, by protocol
/// (`grpc` or `http`). No ExtensionService's cluster can have it (their names have two parts).
pub fn external_auth_cluster_name(service: &ServicePort, protocol: &str) -> String {
    format!("externalauth/{}/{}/{}/{protocol}", service.namespace, service.name, service.port)
}
