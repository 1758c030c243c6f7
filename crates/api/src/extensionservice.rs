//! ExtensionService (projectcontour.io/v1alpha1): a gRPC service Envoy calls for authorization,
//! rate limiting or tracing.

use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::DetailedCondition;
use crate::httpproxy::{LoadBalancerPolicy, TimeoutPolicy, UpstreamValidation};

/// ExtensionService is the schema for the Contour extension services API.
#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "projectcontour.io",
    version = "v1alpha1",
    kind = "ExtensionService",
    namespaced,
    status = "ExtensionServiceStatus",
    shortname = "extensionservice",
    shortname = "extensionservices",
    crates(kube_core = "::kube_core"),
    derive = "PartialEq",
    doc = "ExtensionService is the schema for the Contour extension services API."
)]
#[serde(rename_all = "camelCase")]
pub struct ExtensionServiceSpec {
    /// The Services that implement the extension.
    #[schemars(length(min = 1))]
    pub services: Vec<ExtensionServiceTarget>,
    /// Upstream TLS verification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation: Option<UpstreamValidation>,
    /// `h2` (HTTP/2 over TLS, the default), `h2c` (HTTP/2 in clear text) or `http/1.1`
    /// (HTTP/1.1 in clear text, as an HTTP authorization server speaks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["h2", "h2c", "http/1.1"]))]
    pub protocol: Option<String>,
    /// Load balancing (not Cookie or RequestHash).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_balancer_policy: Option<LoadBalancerPolicy>,
    /// Timeouts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_policy: Option<TimeoutPolicy>,
    /// The extension API version: `v3`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["v3"]))]
    pub protocol_version: Option<String>,
    /// Circuit breakers for this service, overriding the global budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub circuit_breaker_policy: Option<CircuitBreakers>,
}

/// One Service of an extension.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExtensionServiceTarget {
    /// The Service, in the ExtensionService's namespace.
    pub name: String,
    /// The Service port.
    #[schemars(range(min = 1, max = 65536), extend("exclusiveMaximum" = true))]
    pub port: i32,
    /// The relative share of requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<u32>,
}

/// Circuit breaker thresholds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CircuitBreakers {
    /// Connections at once (1024).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_connections: Option<u32>,
    /// Pending requests at once (1024).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_pending_requests: Option<u32>,
    /// Requests at once (1024).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_requests: Option<u32>,
    /// Retries at once (3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_retries: Option<u32>,
    /// Connections to one host at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_host_max_connections: Option<u32>,
}

/// Status of an ExtensionService.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExtensionServiceStatus {
    /// Conditions, including `Valid`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Option<Vec<DetailedCondition>>,
}
