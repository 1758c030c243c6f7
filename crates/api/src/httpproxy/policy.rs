//! Policies shared by routes and services: headers, timeouts, retries, load balancing, health
//! checks, upstream TLS, rate limits, cookies and rewrites.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{DURATION, DURATION_OR_INFINITY, HOSTNAME, HeaderMatchCondition};

/// Rate limits.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RateLimitPolicy {
    /// Per-Envoy limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local: Option<LocalRateLimitPolicy>,
    /// Limits enforced by the rate limit service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub global: Option<GlobalRateLimitPolicy>,
}

/// A per-Envoy token bucket.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalRateLimitPolicy {
    /// Requests per unit.
    #[schemars(range(min = 1))]
    pub requests: u32,
    /// `second`, `minute` or `hour`.
    #[schemars(extend("enum" = ["second", "minute", "hour"]))]
    pub unit: String,
    /// Extra requests allowed in a burst.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<u32>,
    /// The status of limited requests (429).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 400, max = 599))]
    pub response_status_code: Option<u32>,
    /// Headers added to limited responses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_headers_to_add: Option<Vec<HeaderValue>>,
}

/// Limits enforced by the global rate limit service.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GlobalRateLimitPolicy {
    /// Opt out of the default global policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled: Option<bool>,
    /// Descriptors sent to the service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub descriptors: Option<Vec<RateLimitDescriptor>>,
}

/// One descriptor: a list of entries.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RateLimitDescriptor {
    /// The entries.
    #[schemars(length(min = 1))]
    pub entries: Vec<RateLimitDescriptorEntry>,
}

/// One descriptor entry; exactly one field is set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RateLimitDescriptorEntry {
    /// A static key and value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generic_key: Option<GenericKeyDescriptor>,
    /// A request header's value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_header: Option<RequestHeaderDescriptor>,
    /// Whether request headers match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_header_value_match: Option<RequestHeaderValueMatchDescriptor>,
    /// The client address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_address: Option<RemoteAddressDescriptor>,
}

/// A static descriptor entry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GenericKeyDescriptor {
    /// The key (`generic_key` when empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The value.
    #[schemars(length(min = 1))]
    pub value: String,
}

/// A descriptor entry from a request header.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequestHeaderDescriptor {
    /// The header.
    #[schemars(length(min = 1))]
    pub header_name: String,
    /// The descriptor key.
    #[schemars(length(min = 1))]
    pub descriptor_key: String,
}

/// A descriptor entry from header matches.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequestHeaderValueMatchDescriptor {
    /// The conditions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub headers: Option<Vec<HeaderMatchCondition>>,
    /// Whether the entry applies when they match (true) or do not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = true))]
    pub expect_match: Option<bool>,
    /// The value.
    #[schemars(length(min = 1))]
    pub value: String,
}

/// The client address as a descriptor entry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RemoteAddressDescriptor {}

/// Headers set and removed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HeadersPolicy {
    /// Headers set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set: Option<Vec<HeaderValue>>,
    /// Headers removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remove: Option<Vec<String>>,
}

/// A header and its value.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HeaderValue {
    /// The name.
    #[schemars(length(min = 1))]
    pub name: String,
    /// The value.
    #[schemars(length(min = 1))]
    pub value: String,
}

/// Route timeouts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TimeoutPolicy {
    /// The whole response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(DURATION_OR_INFINITY))]
    pub response: Option<String>,
    /// Idle time of a request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(DURATION_OR_INFINITY))]
    pub idle: Option<String>,
    /// Idle time of an upstream connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(DURATION_OR_INFINITY))]
    pub idle_connection: Option<String>,
}

/// Retries.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RetryPolicy {
    /// How many retries (-1: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = -1), extend("default" = 1))]
    pub count: Option<i64>,
    /// The timeout of each try.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(DURATION_OR_INFINITY))]
    pub per_try_timeout: Option<String>,
    /// When to retry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_on: Option<Vec<RetryOn>>,
    /// Status codes to retry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retriable_status_codes: Option<Vec<u32>>,
}

/// A condition that makes a request retried.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
#[schemars(extend("enum" = ["5xx", "gateway-error", "reset", "reset-before-request", "connect-failure", "envoy-ratelimited", "retriable-4xx", "refused-stream", "retriable-status-codes", "retriable-headers", "http3-post-connect-failure", "cancelled", "deadline-exceeded", "internal", "resource-exhausted", "unavailable"]))]
pub struct RetryOn(pub String);

/// Load balancing.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoadBalancerPolicy {
    /// RoundRobin (default), WeightedLeastRequest, Random, Cookie or RequestHash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<String>,
    /// What RequestHash hashes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_hash_policies: Option<Vec<RequestHashPolicy>>,
}

/// One input of a request hash.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequestHashPolicy {
    /// Stop at this input when it is present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminal: Option<bool>,
    /// A header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header_hash_options: Option<HeaderHashOptions>,
    /// A query parameter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query_parameter_hash_options: Option<QueryParameterHashOptions>,
    /// The client address.
    #[serde(default, rename = "hashSourceIP", skip_serializing_if = "Option::is_none")]
    pub hash_source_ip: Option<bool>,
}

/// Hash a header.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HeaderHashOptions {
    /// The header.
    #[schemars(length(min = 1))]
    pub header_name: String,
}

/// Hash a query parameter.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueryParameterHashOptions {
    /// The parameter.
    #[schemars(length(min = 1))]
    pub parameter_name: String,
}

/// Upstream TLS verification.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{"message": "subjectNames[0] must equal subjectName if set", "rule": "has(self.subjectNames) ? self.subjectNames[0] == self.subjectName : true"}]))]
pub struct UpstreamValidation {
    /// The Secret with the CA bundle (`ca.crt`).
    #[schemars(length(min = 1, max = 317))]
    pub ca_secret: String,
    /// The name the certificate must carry (deprecated: use subjectNames).
    #[schemars(length(min = 1, max = 250))]
    pub subject_name: String,
    /// Names the certificate may carry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 8))]
    pub subject_names: Option<Vec<String>>,
}

/// Active HTTP health checks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HTTPHealthCheckPolicy {
    /// The path to check.
    pub path: String,
    /// The Host header (`contour-envoy-healthcheck`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Seconds between checks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval_seconds: Option<i64>,
    /// Seconds to wait for an answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<i64>,
    /// Failures before a host is unhealthy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub unhealthy_threshold_count: Option<i64>,
    /// Successes before a host is healthy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub healthy_threshold_count: Option<i64>,
    /// Statuses that count as healthy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_statuses: Option<Vec<HTTPStatusRange>>,
}

/// A range of HTTP statuses, end exclusive.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HTTPStatusRange {
    /// First status.
    #[schemars(range(min = 100, max = 599))]
    pub start: i64,
    /// One past the last status.
    #[schemars(range(min = 101, max = 600))]
    pub end: i64,
}

/// Active TCP health checks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TCPHealthCheckPolicy {
    /// Seconds between checks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval_seconds: Option<i64>,
    /// Seconds to wait.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<i64>,
    /// Failures before a host is unhealthy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unhealthy_threshold_count: Option<u32>,
    /// Successes before a host is healthy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub healthy_threshold_count: Option<u32>,
}

/// Slow start for new endpoints.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SlowStartPolicy {
    /// How long the ramp-up lasts.
    #[schemars(pattern(DURATION))]
    pub window: String,
    /// How fast traffic grows (`1.0` is linear).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(r"^([0-9]+([.][0-9]+)?|[.][0-9]+)$"), extend("default" = "1.0"))]
    pub aggression: Option<String>,
    /// The weight a new endpoint starts with, in percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100), extend("default" = 10))]
    pub min_weight_percent: Option<u32>,
}

/// Passive health checks of a service (Envoy's outlier detection), a contour-rs extension:
/// endpoints are watched in the traffic they carry, and one that fails too often in a row is
/// ejected from the load-balancing pool, for longer each time it is ejected again.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OutlierDetection {
    /// Turns passive health checks off for this service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled: Option<bool>,
    /// Consecutive server errors (5xx answers; for TCP, connection failures and timeouts) that
    /// eject an endpoint; 0 turns this check off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 5))]
    pub consecutive_server_errors: Option<u32>,
    /// How often endpoints are evaluated (and ejected ones returned).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(DURATION), extend("default" = "10s"))]
    pub interval: Option<String>,
    /// How long an endpoint is ejected the first time (times the number of its ejections).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(DURATION), extend("default" = "30s"))]
    pub base_ejection_time: Option<String>,
    /// The longest an endpoint is ejected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(DURATION), extend("default" = "300s"))]
    pub max_ejection_time: Option<String>,
    /// Counts failures to reach an endpoint (connection failures, timeouts, resets) apart from the
    /// errors it answers with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub split_external_local_origin_errors: Option<bool>,
    /// Consecutive failures to reach an endpoint that eject it, when they are counted apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 5))]
    pub consecutive_local_origin_failure: Option<u32>,
    /// The most endpoints of the service ejected at once, in percent (at least one can always be).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100), extend("default" = 10))]
    pub max_ejection_percent: Option<u32>,
    /// A random delay, up to this long, added to each ejection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(DURATION), extend("default" = "0s"))]
    pub max_ejection_time_jitter: Option<String>,
}

/// Characters not allowed in cookie names and values.
const COOKIE_NAME: &str = "^[^()<>@,;:\\\\\"\\/[\\]?={} \\t\\x7f\\x00\\x01\\x02\\x03\\x04\\x05\\x06\\x07\\x08\\x09\\x0a\\x0b\\x0c\\x0d\\x0e\\x0f\\x10\\x11\\x12\\x13\\x14\\x15\\x16\\x17\\x18\\x19\\x1a\\x1b\\x1c\\x1d\\x1e\\x1f]+$";
const COOKIE_PATH: &str = "^[^;\\x7f\\x00\\x01\\x02\\x03\\x04\\x05\\x06\\x07\\x08\\x09\\x0a\\x0b\\x0c\\x0d\\x0e\\x0f\\x10\\x11\\x12\\x13\\x14\\x15\\x16\\x17\\x18\\x19\\x1a\\x1b\\x1c\\x1d\\x1e\\x1f]+$";

/// Rewrites of a Set-Cookie header.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CookieRewritePolicy {
    /// The cookie.
    #[schemars(length(min = 1, max = 4096), pattern(COOKIE_NAME))]
    pub name: String,
    /// New Path attribute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_rewrite: Option<CookiePathRewrite>,
    /// New Domain attribute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain_rewrite: Option<CookieDomainRewrite>,
    /// Set or clear Secure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secure: Option<bool>,
    /// SameSite: Strict, Lax or None.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["Strict", "Lax", "None"]))]
    pub same_site: Option<String>,
}

/// A cookie's new path.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CookiePathRewrite {
    /// The path.
    #[schemars(length(min = 1, max = 4096), pattern(COOKIE_PATH))]
    pub value: String,
}

/// A cookie's new domain.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CookieDomainRewrite {
    /// The domain.
    #[schemars(length(min = 1, max = 4096), pattern(HOSTNAME))]
    pub value: String,
}

/// Path prefix rewriting.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PathRewritePolicy {
    /// Prefix replacements.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replace_prefix: Option<Vec<ReplacePrefix>>,
    /// A regular expression replacement of the path (not with `replacePrefix`). A contour-rs
    /// extension: upstream Contour has no such field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replace_regex: Option<ReplaceRegex>,
}

/// A regular expression replacement of the path: every match of `pattern` (RE2) in the path
/// becomes `substitution`, where `\1` to `\9` stand for the pattern's capture groups. The query
/// string is kept as it is.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReplaceRegex {
    /// The regular expression (RE2 syntax).
    #[schemars(length(min = 1, max = 1024))]
    pub pattern: String,
    /// What replaces each match.
    pub substitution: String,
}

/// One prefix replacement.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReplacePrefix {
    /// The prefix replaced (default: the route's prefix).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub prefix: Option<String>,
    /// What replaces it.
    #[schemars(length(min = 1))]
    pub replacement: String,
}

/// JWT verification of a route.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct JWTVerificationPolicy {
    /// The provider that verifies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub require: Option<String>,
    /// No verification on this route.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled: Option<bool>,
}

/// A custom error page, a contour-rs extension: answers with one of its status codes get its
/// body and content type instead (the status code stays). By default only Envoy's own answers
/// are replaced (no route, no healthy endpoint, a timeout, a refused connection, a filter's
/// refusal); `fromBackend` replaces the backends' own answers too.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ErrorPage {
    /// Status codes answered with this page.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64), inner(range(min = 100, max = 599)))]
    pub status_codes: Vec<u16>,
    /// Ranges of status codes answered with this page, both ends included.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16))]
    pub status_code_ranges: Vec<StatusCodeRange>,
    /// The page.
    pub body: ErrorPageBody,
    /// Its `Content-Type`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 256), pattern(r"^[^\r\n\x00]+$"), extend("default" = "text/plain; charset=utf-8"))]
    pub content_type: Option<String>,
    /// Replace the backends' answers with these status codes too, not only Envoy's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_backend: Option<bool>,
}

/// A range of status codes, both ends included.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatusCodeRange {
    /// The first code.
    #[schemars(range(min = 100, max = 599))]
    pub start: u16,
    /// The last code.
    #[schemars(range(min = 100, max = 599))]
    pub end: u16,
}

/// An error page's body: inline, or a key of a ConfigMap in the HTTPProxy's namespace. The
/// ConfigMap must carry the label `projectcontour.io/error-pages: "true"`: only those are read
/// whole (others are kept only for their CA bundles).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ErrorPageBody {
    /// The page itself (at most 64 KiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 65536))]
    pub inline: Option<String>,
    /// A ConfigMap key holding the page (at most 64 KiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_map: Option<ConfigMapKey>,
}

/// A key of a ConfigMap in the object's own namespace.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigMapKey {
    /// The ConfigMap's name.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// The key.
    #[schemars(length(min = 1, max = 253))]
    pub key: String,
}

/// OpenID Connect login on a TLS virtual host, a contour-rs extension: Envoy sends a browser
/// without a valid session to the provider's authorization endpoint, exchanges the code it
/// comes back with (and later refresh tokens) at the token endpoint with the client's secret,
/// and keeps the session in HMAC-signed, encrypted cookies.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[allow(clippy::upper_case_acronyms)]
pub struct OIDC {
    /// The provider's authorization endpoint (`http` or `https` URL) browsers log in at.
    #[schemars(length(min = 1, max = 2048))]
    pub authorization_endpoint: String,
    /// The provider's token endpoint (`http` or `https` URL), which Envoy calls; `https` is
    /// verified against the system's trust store.
    #[schemars(length(min = 1, max = 2048))]
    pub token_endpoint: String,
    /// The provider's end session endpoint: logging out also ends the provider's session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 2048))]
    pub end_session_endpoint: Option<String>,
    /// The client's ID at the provider.
    #[serde(rename = "clientID")]
    #[schemars(length(min = 1, max = 256))]
    pub client_id: String,
    /// The Secret in the HTTPProxy's namespace whose `client-secret` key is the client's
    /// secret. It is sent only to the token endpoint, never logged or shown in status.
    #[schemars(length(min = 1, max = 253))]
    pub client_secret_name: String,
    /// Scopes asked for; `openid` is always asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32))]
    pub scopes: Option<Vec<String>>,
    /// The path the provider sends browsers back to (registered at the provider as
    /// `https://<fqdn><redirectPath>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(r"^/[^?#\s]*$"), extend("default" = "/oauth2/callback"))]
    pub redirect_path: Option<String>,
    /// The path that ends the session (and the provider's, with `endSessionEndpoint`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(r"^/[^?#\s]*$"), extend("default" = "/logout"))]
    pub logout_path: Option<String>,
    /// Send the access token to the backends as `Authorization: Bearer`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forward_access_token: Option<bool>,
    /// Renew an expired session with the provider's refresh token instead of a new login.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = true))]
    pub refresh_tokens: Option<bool>,
}

/// OpenID Connect login on one route.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OIDCPolicy {
    /// Serve this route without a session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled: Option<bool>,
}
