//! BackendTLSPolicy: TLS that Gateway API routes must speak to a Service's port.

use crate::{Origin, UpstreamValidation};

/// The policy that applies to one Service (or one of its ports), after conflicts are settled.
#[derive(Debug, serde::Serialize, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BackendTlsPolicy {
    /// The Service's namespace (the policy's own).
    pub namespace: String,
    /// The Service's name.
    pub service: String,
    /// The Service port's name, or `None` for every port without a policy of its own.
    pub section: Option<String>,
    /// The BackendTLSPolicy.
    pub origin: Origin,
    /// What to speak, or `None` when the policy names no usable CA: requests to the backend
    /// fail rather than go out in plain text or unverified.
    pub tls: Option<BackendTls>,
}

/// TLS towards a backend as a BackendTLSPolicy asks it.
#[derive(Debug, serde::Serialize, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BackendTls {
    /// The CA and the names the backend's certificate must carry.
    pub validation: UpstreamValidation,
    /// The server name sent (`validation.hostname`).
    pub sni: String,
}
