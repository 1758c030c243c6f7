//! External authorization (HTTPProxy's `authorization` and `authPolicy`): Envoy asks an
//! ExtensionService whether each request may pass, over gRPC or (`serviceType: http`) by
//! forwarding the request to it.

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
    /// An HTTP server (`serviceType: http`) instead of the gRPC API.
    pub http: Option<HttpAuthorization>,
    /// The client headers a gRPC server is sent besides Envoy's own set; empty sends them all
    /// (Gateway API ExternalAuth `grpc.allowedHeaders`).
    pub grpc_allowed_headers: Vec<HeaderNameMatch>,
}

/// How Envoy asks an HTTP authorization server: the client's request, its path under a prefix,
/// with the headers allowed; a 2xx answer lets the request through with the server's headers
/// that are allowed upstream, any other answer goes back to the client.
#[derive(Debug, serde::Serialize, Clone, Default, PartialEq, Eq, Hash)]
pub struct HttpAuthorization {
    /// Put before the request's path (`httpSettings.pathPrefix`).
    pub path_prefix: String,
    /// Client headers sent along besides Envoy's own set (`allowedAuthorizationHeaders`).
    pub allowed_headers: Vec<HeaderNameMatch>,
    /// The server's headers added to the request sent upstream (`allowedUpstreamHeaders`).
    pub allowed_upstream_headers: Vec<HeaderNameMatch>,
}

/// A header name condition.
#[derive(Debug, serde::Serialize, Clone, PartialEq, Eq, Hash)]
pub struct HeaderNameMatch {
    /// Exact, prefix, suffix or contains.
    pub pattern: crate::StringMatch,
    /// Compare without case.
    pub ignore_case: bool,
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
