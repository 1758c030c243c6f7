//! JWT verification (HTTPProxy's `jwtProviders` and `jwtVerificationPolicy`): Envoy checks the
//! bearer token of a TLS virtual host's requests against a provider's keys.

use crate::UpstreamValidation;

/// A provider of tokens, named for routes to require.
#[derive(Debug, serde::Serialize, Clone, PartialEq, Eq, Hash)]
pub struct JwtProvider {
    /// The name routes refer to.
    pub name: String,
    /// The `iss` a token must carry; empty accepts any.
    pub issuer: String,
    /// The `aud` values accepted (any of them); empty accepts any.
    pub audiences: Vec<String>,
    /// Where the keys come from.
    pub jwks: Jwks,
    /// Keep the token in the request sent to the backend.
    pub forward: bool,
}

/// Where a provider's keys come from.
#[derive(Debug, serde::Serialize, Clone, PartialEq, Eq, Hash)]
pub enum Jwks {
    /// Fetched from a server.
    Remote(RemoteJwks),
    /// A JWKS document from a Secret (already checked to be one).
    Local(String),
}

/// Keys fetched over HTTP(S) and cached.
#[derive(Debug, serde::Serialize, Clone, PartialEq, Eq, Hash)]
pub struct RemoteJwks {
    /// The URI.
    pub uri: String,
    /// `https` (or `http`).
    pub tls: bool,
    /// The URI's host.
    pub host: String,
    /// The URI's port (the scheme's when absent).
    pub port: u16,
    /// Verification of the server's certificate (`https` only).
    pub validation: Option<UpstreamValidation>,
    /// How long a fetch may take, in milliseconds.
    pub timeout_ms: u64,
    /// How long keys are kept, in milliseconds; `None` is Envoy's default (5 minutes).
    pub cache_duration_ms: Option<u64>,
    /// `auto`, `v4`, `v6` or `all`; `None` follows `cluster.dns-lookup-family`.
    pub dns_lookup_family: Option<String>,
}
