//! Upstream Contour's DetailedCondition: a Kubernetes condition with error and warning
//! sub-conditions.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A condition with details: every error and warning that contributed to it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DetailedCondition {
    /// The condition type, such as `Valid`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// The `metadata.generation` the condition was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// When the status last changed.
    pub last_transition_time: String,
    /// A CamelCase reason.
    pub reason: String,
    /// A human-readable message.
    pub message: String,
    /// Errors that make the object (partly) invalid.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<SubCondition>,
    /// Problems that do not make the object invalid.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<SubCondition>,
}

/// One error or warning under a DetailedCondition.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SubCondition {
    /// The kind of problem, such as `RouteError`.
    #[serde(rename = "type")]
    pub type_: String,
    /// A CamelCase reason, such as `ServiceUnresolvedReference`.
    pub reason: String,
    /// A human-readable message.
    pub message: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
}
