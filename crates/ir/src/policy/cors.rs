//! Cross-origin resource sharing: which origins may call a virtual host or route from a browser,
//! and what the preflight answer says (HTTPProxy's `corsPolicy`, the Gateway API's CORS filter).

/// A CORS policy. Envoy answers preflight requests itself and adds the CORS headers to answers
/// for allowed origins; other origins get no CORS headers.
#[derive(Debug, serde::Serialize, Clone, Default, PartialEq, Eq, Hash)]
pub struct Cors {
    /// Origins allowed; `Exact("*")` allows every origin.
    pub allow_origins: Vec<OriginMatch>,
    /// Methods allowed (`Access-Control-Allow-Methods`).
    pub allow_methods: Vec<String>,
    /// Request headers allowed (`Access-Control-Allow-Headers`).
    pub allow_headers: Vec<String>,
    /// Response headers the browser may read (`Access-Control-Expose-Headers`).
    pub expose_headers: Vec<String>,
    /// How long a preflight answer may be cached, in seconds; `None` sends no
    /// `Access-Control-Max-Age`, `Some(0)` asks not to cache.
    pub max_age_s: Option<u64>,
    /// Credentials (cookies, authorization) may be sent (`Access-Control-Allow-Credentials`).
    pub allow_credentials: bool,
    /// Requests from public to private networks are allowed (`Access-Control-Allow-Private-Network`).
    pub allow_private_network: bool,
    /// Preflights from origins not allowed go on to the backend (HTTPProxy, as upstream) instead
    /// of being answered by Envoy without CORS headers (the Gateway API's rule).
    pub forward_unmatched_preflights: bool,
}

/// How an `Origin` header is matched.
#[derive(Debug, serde::Serialize, Clone, PartialEq, Eq, Hash)]
pub enum OriginMatch {
    /// Equal to the value, ignoring case (`*` matches any origin).
    Exact(String),
    /// Matches an RE2 regular expression (already validated).
    Regex(String),
}
