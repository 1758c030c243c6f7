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

/// The most headers Envoy adds, or removes, for one route or virtual host.
pub const MAX_HEADER_CHANGES: usize = 1000;

/// The longest query parameter name Envoy matches, in bytes.
pub const MAX_QUERY_NAME_BYTES: usize = 1024;

/// The longest header name or value Envoy takes, in bytes.
pub const MAX_HEADER_BYTES: usize = 16384;

impl HeaderModifier {
    /// What Envoy would refuse in these changes, if anything: a header name that is no HTTP
    /// token (RFC 9110, as the Gateway API's schema requires), a pseudo-header other than
    /// `:authority` (which is a host rewrite), a value with a line break or NUL, anything over
    /// 16 KiB, or more than a thousand headers. `Host` may be set (a host rewrite) but not
    /// removed.
    pub fn problem(&self) -> Option<String> {
        if self.set.len() + self.add.len() > MAX_HEADER_CHANGES || self.remove.len() > MAX_HEADER_CHANGES {
            return Some(format!("at most {MAX_HEADER_CHANGES} headers may be set, added or removed"));
        }
        for (name, value) in self.set.iter().chain(&self.add) {
            if name != ":authority"
                && let Some(problem) = header_name_problem(name)
            {
                return Some(problem);
            }
            if let Some(problem) = header_value_problem(value) {
                return Some(format!("header {name:?}: {problem}"));
            }
        }
        for name in &self.remove {
            if name.eq_ignore_ascii_case("host") {
                return Some("the Host header cannot be removed".into());
            }
            if let Some(problem) = header_name_problem(name) {
                return Some(problem);
            }
        }
        None
    }
}

/// What makes `value` no value Envoy puts in a header (a header's, a redirect's or rewrite's
/// host or path): over 16 KiB, or a line break or NUL in it.
pub fn header_value_problem(value: &str) -> Option<String> {
    (value.len() > MAX_HEADER_BYTES || value.bytes().any(|b| matches!(b, 0 | b'\r' | b'\n')))
        .then(|| format!("a value must be at most {MAX_HEADER_BYTES} bytes, without line breaks or NUL"))
}

impl PathModifier {
    /// The new path or prefix (a regex rewrite's substitution).
    pub fn value(&self) -> &str {
        match self {
            PathModifier::Full(p) | PathModifier::Prefix(p) => p,
            PathModifier::Regex { substitution, .. } => substitution,
        }
    }
}

/// What makes `name` no header name a route may change: empty, over 16 KiB, a character that
/// is not an HTTP token character, or a pseudo-header (`:path`).
pub fn header_name_problem(name: &str) -> Option<String> {
    let tchar = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    if name.starts_with(':') {
        return Some(format!("header {name:?}: pseudo-headers cannot be changed"));
    }
    if name.is_empty() || name.len() > MAX_HEADER_BYTES || !name.bytes().all(tchar) {
        return Some(format!(
            "header name {name:?} must be 1 to {MAX_HEADER_BYTES} HTTP token characters (letters, digits and !#$%&'*+-.^_`|~)"
        ));
    }
    None
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
    /// Replace each match of a regular expression (RE2, checked), with `\N` for its groups.
    Regex {
        /// The regular expression.
        pattern: String,
        /// What replaces each match.
        substitution: String,
    },
}

/// A mirrored copy of each request.
#[derive(Debug, serde::Serialize, Clone, PartialEq)]
pub struct RequestMirror {
    /// Where the copy goes.
    pub backend: Backend,
    /// The share of requests mirrored, in percent (0-100).
    pub percent: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(name: &str, value: &str) -> HeaderModifier {
        HeaderModifier { set: vec![(name.into(), value.into())], ..Default::default() }
    }

    #[test]
    fn header_changes_envoy_would_refuse_are_named() {
        assert_eq!(set("x-a", "%REQ(x-b)% \t tabs are fine").problem(), None);
        assert_eq!(set(":authority", "host.example.com").problem(), None, "a host rewrite");
        assert_eq!(set("Host", "host.example.com").problem(), None, "a host rewrite");
        for (name, value, says) in [
            ("x-a", "x\r\nInjected: 1", "line breaks"),
            ("x-a", "a\0b", "line breaks or NUL"),
            ("", "v", "HTTP token"),
            ("x a", "v", "HTTP token"),
            ("x-a\r\n", "v", "HTTP token"),
            (":path", "/", "pseudo-headers"),
        ] {
            let problem = set(name, value).problem().unwrap_or_default();
            assert!(problem.contains(says), "{name:?}: {value:?}: {problem}");
        }
        assert!(set("x-a", &"v".repeat(MAX_HEADER_BYTES + 1)).problem().is_some());
        let many =
            HeaderModifier { add: vec![("x-a".into(), "v".into()); MAX_HEADER_CHANGES + 1], ..Default::default() };
        assert!(many.problem().unwrap().contains("at most 1000"));
        let host = HeaderModifier { remove: vec!["host".into()], ..Default::default() };
        assert!(host.problem().unwrap().contains("Host"));
    }
}
