//! TLSCertificateDelegation (projectcontour.io/v1): lets other namespaces use a Secret.

use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::DetailedCondition;

/// Delegates the use of Secrets in this namespace to other namespaces.
#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "projectcontour.io",
    version = "v1",
    kind = "TLSCertificateDelegation",
    namespaced,
    status = "TLSCertificateDelegationStatus",
    shortname = "tlscerts",
    crates(kube_core = "::kube_core"),
    derive = "PartialEq",
    doc = "TLSCertificateDelegation is an TLS Certificate Delegation CRD specification. See design/tls-certificate-delegation.md for details."
)]
#[serde(rename_all = "camelCase")]
pub struct TLSCertificateDelegationSpec {
    /// The delegations.
    pub delegations: Vec<CertificateDelegation>,
}

/// One Secret and the namespaces that may use it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CertificateDelegation {
    /// The name of the Secret in this namespace.
    pub secret_name: String,
    /// Namespaces allowed to use the Secret; `*` allows every namespace.
    pub target_namespaces: Vec<String>,
}

/// Status of a TLSCertificateDelegation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TLSCertificateDelegationStatus {
    /// Conditions, including `Valid`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<DetailedCondition>,
}
