//! ContourDeployment (projectcontour.io/v1alpha1): the provisioner's parameters for one Gateway's
//! Contour and Envoy, referenced from `GatewayClass.spec.parametersRef`.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{DaemonSetUpdateStrategy, DeploymentStrategy};
use k8s_openapi::api::core::v1::{ResourceRequirements, Toleration, Volume, VolumeMount};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::contourconfig::ContourConfigurationSpec;

/// ContourDeployment is the schema for a Contour Deployment.
#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "projectcontour.io",
    version = "v1alpha1",
    kind = "ContourDeployment",
    namespaced,
    status = "ContourDeploymentStatus",
    shortname = "contourdeploy",
    crates(kube_core = "::kube_core"),
    derive = "PartialEq",
    doc = "ContourDeployment is the schema for a Contour Deployment."
)]
#[serde(rename_all = "camelCase")]
pub struct ContourDeploymentSpec {
    /// The Contour Deployment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contour: Option<ContourSettings>,
    /// The Envoy fleet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub envoy: Option<EnvoySettings>,
    /// The ContourConfiguration generated for the Gateway.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_settings: Option<ContourConfigurationSpec>,
    /// Deprecated: labels on every resource (use Gateway.spec.infrastructure.labels).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_labels: Option<BTreeMap<String, String>>,
}

/// A namespace name.
const NAMESPACE: &str = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";

/// Settings of the Contour Deployment.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContourSettings {
    /// Deprecated: use deployment.replicas (2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub replicas: Option<i32>,
    /// Scheduling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_placement: Option<NodePlacement>,
    /// Kubernetes client log level (0-9).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 9))]
    pub kubernetes_log_level: Option<u8>,
    /// `info` or `debug`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_level: Option<String>,
    /// Compute resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// Deployment settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployment: Option<DeploymentSettings>,
    /// Pod annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_annotations: Option<BTreeMap<String, String>>,
    /// Namespaces watched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 42), inner(length(min = 1, max = 63), pattern(NAMESPACE)))]
    pub watch_namespaces: Option<Vec<String>>,
    /// Features turned off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 42))]
    pub disabled_features: Option<Vec<Feature>>,
}

/// A feature that can be turned off.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
#[schemars(extend("enum" = ["grpcroutes", "tlsroutes", "extensionservices", "backendtlspolicies"]))]
pub struct Feature(pub String);

/// Settings of a Deployment.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DeploymentSettings {
    /// Replicas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub replicas: Option<i32>,
    /// The rollout strategy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<DeploymentStrategy>,
}

/// Settings of a DaemonSet.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DaemonSetSettings {
    /// The rollout strategy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_strategy: Option<DaemonSetUpdateStrategy>,
}

/// Settings of the Envoy fleet.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EnvoySettings {
    /// `DaemonSet` (default) or `Deployment`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload_type: Option<String>,
    /// Deprecated: use deployment.replicas (2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub replicas: Option<i32>,
    /// How the fleet is exposed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_publishing: Option<NetworkPublishing>,
    /// Scheduling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_placement: Option<NodePlacement>,
    /// Extra volumes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra_volumes: Option<Vec<Volume>>,
    /// Extra volume mounts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra_volume_mounts: Option<Vec<VolumeMount>>,
    /// Pod annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_annotations: Option<BTreeMap<String, String>>,
    /// Compute resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// trace, debug, info, warn, error, critical or off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_level: Option<String>,
    /// DaemonSet settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daemon_set: Option<DaemonSetSettings>,
    /// Deployment settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployment: Option<DeploymentSettings>,
    /// Envoy's --base-id.
    #[serde(default, rename = "baseID", skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub base_id: Option<i32>,
    /// Heap size that turns the overload manager on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overload_max_heap_size: Option<u64>,
    /// The most downstream connections Envoy keeps open at once (overload manager).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overload_max_downstream_connections: Option<u64>,
}

/// How the Envoy fleet is exposed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NetworkPublishing {
    /// LoadBalancerService (default), NodePortService or ClusterIPService.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// Local (default) or Cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_traffic_policy: Option<String>,
    /// SingleStack (default), PreferDualStack or RequireDualStack.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_family_policy: Option<String>,
    /// Annotations on the Service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_annotations: Option<BTreeMap<String, String>>,
}

/// Scheduling constraints.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodePlacement {
    /// Node labels required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<BTreeMap<String, String>>,
    /// Taints tolerated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerations: Option<Vec<Toleration>>,
}

/// Status of a ContourDeployment.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ContourDeploymentStatus {
    /// Conditions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Option<Vec<Condition>>,
}
