//! HTTPProxy (projectcontour.io/v1): upstream Contour's ingress API, field for field.
//!
//! Names, optionality, enums, defaults, patterns and CEL rules follow upstream's schema so that
//! existing objects apply unchanged. Fields are `Option` wherever upstream's schema does not
//! require them.

mod policy;
mod route;
mod vhost;

use k8s_openapi::api::core::v1::LoadBalancerStatus;
use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use policy::*;
pub use route::*;
pub use vhost::*;

use crate::DetailedCondition;

/// Upstream's duration pattern that also allows `infinity`.
pub(crate) const DURATION_OR_INFINITY: &str = r"^(((\d*(\.\d*)?h)|(\d*(\.\d*)?m)|(\d*(\.\d*)?s)|(\d*(\.\d*)?ms)|(\d*(\.\d*)?us)|(\d*(\.\d*)?µs)|(\d*(\.\d*)?ns))+|infinity|infinite)$";
/// Upstream's duration pattern.
pub(crate) const DURATION: &str = r"^(((\d*(\.\d*)?h)|(\d*(\.\d*)?m)|(\d*(\.\d*)?s)|(\d*(\.\d*)?ms)|(\d*(\.\d*)?us)|(\d*(\.\d*)?µs)|(\d*(\.\d*)?ns))+)$";
/// Upstream's duration pattern that also allows `0`.
pub(crate) const DURATION_OR_ZERO: &str = r"^(((\d*(\.\d*)?h)|(\d*(\.\d*)?m)|(\d*(\.\d*)?s)|(\d*(\.\d*)?ms)|(\d*(\.\d*)?us)|(\d*(\.\d*)?µs)|(\d*(\.\d*)?ns))+|0)$";
/// A DNS hostname.
pub(crate) const HOSTNAME: &str = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";

/// HTTPProxy is an Ingress CRD specification.
#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "projectcontour.io",
    version = "v1",
    kind = "HTTPProxy",
    plural = "httpproxies",
    namespaced,
    status = "HTTPProxyStatus",
    shortname = "proxy",
    shortname = "proxies",
    crates(kube_core = "::kube_core"),
    derive = "PartialEq",
    printcolumn = r#"{"name":"FQDN","type":"string","description":"Fully qualified domain name","jsonPath":".spec.virtualhost.fqdn"}"#,
    printcolumn = r#"{"name":"TLS Secret","type":"string","description":"Secret with TLS credentials","jsonPath":".spec.virtualhost.tls.secretName"}"#,
    printcolumn = r#"{"name":"Status","type":"string","description":"The current status of the HTTPProxy","jsonPath":".status.currentStatus"}"#,
    printcolumn = r#"{"name":"Status Description","type":"string","description":"Description of the current status","jsonPath":".status.description"}"#,
    doc = "HTTPProxy is an Ingress CRD specification."
)]
#[serde(rename_all = "camelCase")]
pub struct HTTPProxySpec {
    /// The fully qualified domain name and its settings; present on a root HTTPProxy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub virtualhost: Option<VirtualHost>,
    /// The routes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routes: Option<Vec<Route>>,
    /// TCP proxying (TLS passthrough or termination); routes then only serve plain HTTP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcpproxy: Option<Box<TCPProxy>>,
    /// Other HTTPProxies whose routes this one includes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub includes: Option<Vec<Include>>,
    /// The ingress class this object belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingress_class_name: Option<String>,
}

/// An HTTPProxy included by another, with the conditions that select it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Include {
    /// The included HTTPProxy.
    pub name: String,
    /// Its namespace (default: this one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Conditions prefixed to the included routes' conditions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<MatchCondition>>,
}

/// Status of an HTTPProxy.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("default" = {"currentStatus": "NotReconciled", "description": "Waiting for controller"}))]
pub struct HTTPProxyStatus {
    /// `valid`, `invalid` or `orphaned` (and `NotReconciled` at first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_status: Option<String>,
    /// The message of the Valid condition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Where the proxy is reachable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_balancer: Option<LoadBalancerStatus>,
    /// Conditions, including `Valid`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Option<Vec<DetailedCondition>>,
}
