//! Routes, their conditions and services, and TCP proxying.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::*;

// The policies are boxed: most routes set none of them, and inline they made every route
// 1 KiB (10 MiB for 10k one-route HTTPProxies). Not a doc comment: that would reach the CRD.
/// A route: conditions and one action (services, a redirect or a direct response).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Route {
    /// Conditions, AND-ed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<MatchCondition>>,
    /// Where requests go.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub services: Option<Vec<Service>>,
    /// Allow websocket upgrades.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_websockets: Option<bool>,
    /// Serve over plain HTTP even when the virtual host has TLS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permit_insecure: Option<bool>,
    /// Authorization for this route.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_policy: Option<Box<AuthorizationPolicy>>,
    /// Timeouts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_policy: Option<Box<TimeoutPolicy>>,
    /// Retries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_policy: Option<Box<RetryPolicy>>,
    /// Active health checks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_check_policy: Option<Box<HTTPHealthCheckPolicy>>,
    /// Load balancing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_balancer_policy: Option<Box<LoadBalancerPolicy>>,
    /// Path rewriting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_rewrite_policy: Option<Box<PathRewritePolicy>>,
    /// OpenID Connect login on this route (`disabled: true` serves it without a session). A
    /// contour-rs extension: upstream Contour has no such field.
    #[serde(default, rename = "oidcPolicy", skip_serializing_if = "Option::is_none")]
    pub oidc_policy: Option<OIDCPolicy>,
    /// Custom error pages of this route, tried before its virtual host's. A contour-rs
    /// extension: upstream Contour has no such field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 16))]
    pub error_pages: Option<Vec<ErrorPage>>,
    /// Header changes and Set-Cookie rewrites.
    #[serde(flatten)]
    pub headers: HeaderPolicies,
    /// Rate limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit_policy: Option<Box<RateLimitPolicy>>,
    /// Answer with a redirect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_redirect_policy: Option<Box<HTTPRequestRedirectPolicy>>,
    /// Answer directly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direct_response_policy: Option<Box<HTTPDirectResponsePolicy>>,
    /// Follow upstream redirects inside Envoy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub internal_redirect_policy: Option<Box<HTTPInternalRedirectPolicy>>,
    /// JWT verification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jwt_verification_policy: Option<Box<JWTVerificationPolicy>>,
    /// Address and location filters.
    #[serde(flatten)]
    pub filters: FilterPolicies,
}

/// Header changes and Set-Cookie rewrites, on a route or one of its services.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HeaderPolicies {
    /// Request headers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_headers_policy: Option<HeadersPolicy>,
    /// Response headers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_headers_policy: Option<HeadersPolicy>,
    /// Set-Cookie rewrites.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cookie_rewrite_policies: Option<Vec<CookieRewritePolicy>>,
}

/// One condition: exactly one of its fields.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MatchCondition {
    /// The path starts with this, on a segment boundary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// The path is exactly this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exact: Option<String>,
    /// The path matches this RE2 regular expression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regex: Option<String>,
    /// A header condition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<HeaderMatchCondition>,
    /// A query parameter condition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query_parameter: Option<QueryParameterMatchCondition>,
}

/// A header condition: exactly one matcher.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HeaderMatchCondition {
    /// The header.
    pub name: String,
    /// Present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub present: Option<bool>,
    /// Absent.
    #[serde(default, rename = "notpresent", skip_serializing_if = "Option::is_none")]
    pub not_present: Option<bool>,
    /// Contains.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contains: Option<String>,
    /// Does not contain.
    #[serde(default, rename = "notcontains", skip_serializing_if = "Option::is_none")]
    pub not_contains: Option<String>,
    /// Compare ignoring case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore_case: Option<bool>,
    /// Equal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exact: Option<String>,
    /// Not equal.
    #[serde(default, rename = "notexact", skip_serializing_if = "Option::is_none")]
    pub not_exact: Option<String>,
    /// Matches an RE2 regular expression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regex: Option<String>,
    /// A missing header counts as empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub treat_missing_as_empty: Option<bool>,
}

/// A query parameter condition: exactly one matcher.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueryParameterMatchCondition {
    /// The parameter.
    pub name: String,
    /// Equal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exact: Option<String>,
    /// Starts with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// Ends with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suffix: Option<String>,
    /// Matches an RE2 regular expression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regex: Option<String>,
    /// Contains.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contains: Option<String>,
    /// Compare ignoring case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore_case: Option<bool>,
    /// Present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub present: Option<bool>,
}

/// A backend Service of a route.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Service {
    /// The Service, in the HTTPProxy's namespace.
    pub name: String,
    /// The Service port.
    #[schemars(range(min = 1, max = 65536), extend("exclusiveMaximum" = true))]
    pub port: i32,
    /// A different port for health checks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 65535))]
    pub health_port: Option<i32>,
    /// `h2`, `h2c` or `tls` upstream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["h2", "h2c", "tls"]))]
    pub protocol: Option<String>,
    /// The relative share of traffic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub weight: Option<i64>,
    /// Upstream TLS verification.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation: Option<UpstreamValidation>,
    /// Mirror requests to this service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mirror: Option<bool>,
    /// Header changes and Set-Cookie rewrites.
    #[serde(flatten)]
    pub headers: HeaderPolicies,
    /// Slow start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slow_start_policy: Option<SlowStartPolicy>,
    /// Passive health checks: an endpoint that keeps failing leaves the load-balancing pool for
    /// a while. A contour-rs extension: upstream Contour has no such field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outlier_detection: Option<OutlierDetection>,
}

/// TCP proxying of a TLS virtual host.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[allow(clippy::upper_case_acronyms)]
pub struct TCPProxy {
    /// Load balancing (not Cookie or RequestHash).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_balancer_policy: Option<LoadBalancerPolicy>,
    /// Where connections go.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub services: Option<Vec<Service>>,
    /// Another HTTPProxy's tcpproxy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include: Option<TCPProxyInclude>,
    /// The old spelling of `include`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub includes: Option<TCPProxyInclude>,
    /// Active TCP health checks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_check_policy: Option<TCPHealthCheckPolicy>,
}

/// An included tcpproxy.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TCPProxyInclude {
    /// The HTTPProxy.
    pub name: String,
    /// Its namespace (default: this one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// A redirect response.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HTTPRequestRedirectPolicy {
    /// `http` or `https`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["http", "https"]))]
    pub scheme: Option<String>,
    /// The host to redirect to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253), pattern(HOSTNAME))]
    pub hostname: Option<String>,
    /// The port to redirect to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 65535))]
    pub port: Option<i32>,
    /// 301, 302 (default), 303, 307 or 308.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 302))]
    pub status_code: Option<RedirectResponseCode>,
    /// Replace the whole path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(r"^\/.*$"))]
    pub path: Option<String>,
    /// Replace the matched prefix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(r"^\/.*$"))]
    pub prefix: Option<String>,
}

/// A redirect status: 301, 302, 303, 307 or 308.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
#[schemars(extend("enum" = [301, 302, 303, 307, 308]))]
pub struct RedirectResponseCode(pub u32);

/// A direct response.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HTTPDirectResponsePolicy {
    /// The status.
    #[schemars(range(min = 200, max = 599))]
    pub status_code: i32,
    /// The body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
}

/// Redirects followed inside Envoy.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HTTPInternalRedirectPolicy {
    /// How many redirects at most.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_internal_redirects: Option<u32>,
    /// Which statuses are followed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect_response_codes: Option<Vec<RedirectResponseCode>>,
    /// Always, Never (default) or SafeOnly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["Always", "Never", "SafeOnly"], "default" = "Never"))]
    pub allow_cross_scheme_redirect: Option<String>,
    /// Refuse a redirect back to a route already visited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deny_repeated_route_redirect: Option<bool>,
}
