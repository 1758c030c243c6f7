//! External authorization (HTTPProxy's `authorization` and `authPolicy`): Envoy asks an
//! ExtensionService over gRPC whether each request may pass.

use std::collections::BTreeMap;

/// A virtual host's authorization server and how Envoy talks to it.
#[derive(Debug, serde::Serialize, Clone, PartialEq, Eq, Hash)]
pub struct Authorization {
    /// The ExtensionService's cluster (`extension/<namespace>/<name>`).
    pub cluster: String,
    /// The `:authority` of the check requests (the server name Envoy verifies over TLS).
    pub authority: String,
    /// Let requests through when the server cannot be reached or fails (otherwise 403).
    pub fail_open: bool,
    /// How long a check may take, in milliseconds; `None` is Envoy's default, `Some(0)` none.
    pub response_timeout_ms: Option<u64>,
    /// Send the request body along, buffered up to a limit.
    pub with_request_body: Option<AuthorizationBody>,
}

/// How much of the request body a check carries.
#[derive(Debug, serde::Serialize, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AuthorizationBody {
    /// The most bytes buffered.
    pub max_request_bytes: u32,
    /// Send what fits instead of answering 413 to a larger body.
    pub allow_partial_message: bool,
    /// Send the body as bytes rather than text.
    pub pack_as_bytes: bool,
}

/// A route's authorization under a virtual host that has a server.
#[derive(Debug, serde::Serialize, Clone, Default, PartialEq, Eq, Hash)]
pub struct RouteAuthorization {
    /// The route is not checked.
    pub disabled: bool,
    /// Context entries sent with each check (the virtual host's, then the route's).
    pub context: BTreeMap<String, String>,
}
