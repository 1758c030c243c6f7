//! HTTP routes: matches, filters and backends, shaped like the Gateway API's HTTPRoute.

use crate::{Backend, Origin};

/// An HTTP route attached to one or more listeners.
#[derive(Debug, serde::Serialize, Clone, PartialEq)]
pub struct HttpRoute {
    /// The object this route comes from (shared by everything made from the route).
    pub origin: std::sync::Arc<Origin>,
    /// `metadata.creationTimestamp` in seconds, the first tie-breaker between routes.
    pub created: i64,
    /// Hostnames this route serves; empty means the listener's hostname (or all).
    pub hostnames: Vec<String>,
    /// Rules, in the order of the source object.
    pub rules: Vec<HttpRule>,
    /// Policies of the virtual hosts this route's hostnames make (HTTPProxy's `virtualhost`).
    pub vhost: Option<std::sync::Arc<crate::VirtualHostPolicy>>,
}

/// One rule: any of its matches selects it; filters apply, then backends are chosen by weight.
#[derive(Debug, serde::Serialize, Clone, PartialEq)]
pub struct HttpRule {
    /// Matches, OR-ed. Never empty: a rule without matches gets a `/` prefix match.
    pub matches: Vec<HttpMatch>,
    /// Filters applied to matching requests.
    pub filters: Vec<HttpFilter>,
    /// Weighted backends. Empty with no redirect or direct response means 500.
    pub backends: Vec<Backend>,
    /// The request timeout in milliseconds, if set; `Some(0)` disables Envoy's default.
    pub request_timeout_ms: Option<u64>,
    /// Settings beyond the Gateway API's filters.
    pub policy: crate::RoutePolicy,
}

/// The conditions of one match, AND-ed.
#[derive(Debug, serde::Serialize, Clone, PartialEq, Eq, Hash)]
pub struct HttpMatch {
    /// The path condition.
    pub path: PathMatch,
    /// Header conditions.
    pub headers: Vec<HeaderMatch>,
    /// Query parameter conditions.
    pub query: Vec<QueryMatch>,
    /// The HTTP method, if restricted.
    pub method: Option<String>,
}

impl Default for HttpMatch {
    fn default() -> Self {
        Self { path: PathMatch::Prefix("/".into()), headers: Vec::new(), query: Vec::new(), method: None }
    }
}

/// A path condition.
#[derive(Debug, serde::Serialize, Clone, PartialEq, Eq, Hash)]
pub enum PathMatch {
    /// The whole path equals the value.
    Exact(String),
    /// The path starts with the value, on a segment boundary.
    Prefix(String),
    /// The path starts with the value, anywhere (`/foo` matches `/foobar`): HTTPProxy's prefix.
    StringPrefix(String),
    /// The path matches an RE2 regular expression (already validated).
    Regex(String),
}

/// `text` as an RE2 pattern matching exactly itself (the metacharacters escaped), for building a
/// regex around a literal such as a path prefix.
pub fn regex_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A string condition on a header or query parameter value.
#[derive(Debug, serde::Serialize, Clone, PartialEq, Eq, Hash)]
pub enum StringMatch {
    /// Equal to the value.
    Exact(String),
    /// Matches an RE2 regular expression (already validated).
    Regex(String),
    /// Starts with the value.
    Prefix(String),
    /// Ends with the value.
    Suffix(String),
    /// Contains the value.
    Contains(String),
    /// Present, with any value.
    Present,
}

/// A header condition.
#[derive(Debug, serde::Serialize, Clone, PartialEq, Eq, Hash)]
pub struct HeaderMatch {
    /// The header name, lower case (pseudo-headers such as `:authority` included).
    pub name: String,
    /// The value condition.
    pub value: StringMatch,
    /// Compare without regard to case (not for regexes).
    pub ignore_case: bool,
    /// Match requests for which the condition does not hold.
    pub invert: bool,
    /// A missing header counts as an empty value instead of failing the match.
    pub missing_as_empty: bool,
}

impl HeaderMatch {
    /// A plain condition: `name` satisfies `value`.
    pub fn new(name: impl Into<String>, value: StringMatch) -> Self {
        Self { name: name.into(), value, ignore_case: false, invert: false, missing_as_empty: false }
    }
}

/// A query parameter condition.
#[derive(Debug, serde::Serialize, Clone, PartialEq, Eq, Hash)]
pub struct QueryMatch {
    /// The parameter name (case-sensitive).
    pub name: String,
    /// The value condition.
    pub value: StringMatch,
    /// Compare without regard to case (not for regexes).
    pub ignore_case: bool,
}

/// What a rule does to a request besides choosing a backend.
#[derive(Debug, serde::Serialize, Clone, PartialEq)]
pub enum HttpFilter {
    /// Change request headers before forwarding.
    RequestHeaders(HeaderModifier),
    /// Change response headers before answering.
    ResponseHeaders(HeaderModifier),
    /// Answer with a redirect instead of forwarding.
    Redirect(Redirect),
    /// Rewrite the host or path before forwarding.
    UrlRewrite(UrlRewrite),
    /// Copy requests to another backend, ignoring its answers.
    Mirror(RequestMirror),
    /// Answer CORS preflights and add CORS headers (the Gateway API's CORS filter).
    Cors(crate::Cors),
    /// Answer directly with a status and body.
    DirectResponse {
        /// The HTTP status code.
        status: u16,
        /// The response body.
        body: Option<String>,
    },
}

/// Header changes: set replaces, add appends, remove deletes.
#[derive(Debug, serde::Serialize, Clone, Default, PartialEq, Eq, Hash)]
pub struct HeaderModifier {
    /// Headers set to a value, replacing any existing value.
    pub set: Vec<(String, String)>,
    /// Headers appended.
    pub add: Vec<(String, String)>,
    /// Headers removed.
    pub remove: Vec<String>,
}

/// A redirect response.
#[derive(Debug, serde::Serialize, Clone, Default, PartialEq, Eq)]
pub struct Redirect {
    /// `http` or `https`; `None` keeps the request's scheme.
    pub scheme: Option<String>,
    /// The host to redirect to; `None` keeps the request's host.
    pub hostname: Option<String>,
    /// The port to redirect to; `None` follows the Gateway API rules for the scheme.
    pub port: Option<u16>,
    /// How the path changes.
    pub path: Option<PathModifier>,
    /// The status code (301 or 302, ...).
    pub status: u16,
}

/// A URL rewrite before forwarding.
#[derive(Debug, serde::Serialize, Clone, Default, PartialEq, Eq)]
pub struct UrlRewrite {
    /// The new Host header.
    pub hostname: Option<String>,
    /// The new Host header is this request header's value.
    pub hostname_from_header: Option<String>,
    /// How the path changes.
    pub path: Option<PathModifier>,
}

/// How a redirect or rewrite changes the path.
#[derive(Debug, serde::Serialize, Clone, PartialEq, Eq)]
pub enum PathModifier {
    /// Replace the whole path.
    Full(String),
    /// Replace the prefix that the rule's prefix match matched.
    Prefix(String),
}

/// A mirrored copy of each request.
#[derive(Debug, serde::Serialize, Clone, PartialEq)]
pub struct RequestMirror {
    /// Where the copy goes.
    pub backend: Backend,
    /// The share of requests mirrored, in percent (0-100).
    pub percent: u32,
}
