//! Behaviour beyond the Gateway API's filters that HTTPProxy and Ingress can ask for: idle
//! timeouts, retries, websockets, load balancing, active health checks, upstream protocols, and
//! the access and traffic policies of virtual hosts and routes (one module each).

mod backend_tls;
mod cookie;
mod cors;
mod ext_authz;
mod extension;
mod ip_filter;
mod jwt;
mod oidc;
mod rate_limit;

pub use backend_tls::{BackendTls, BackendTlsPolicy};
pub use cookie::{CookieRewrite, merge_cookie_rewrites};
pub use cors::{Cors, OriginMatch};
pub use ext_authz::{Authorization, AuthorizationBody, HeaderNameMatch, HttpAuthorization, RouteAuthorization};
pub use extension::{ExtensionService, extension_cluster_name, external_auth_cluster_name};
pub use ip_filter::{GeoDatabases, GeoDimension, GeoRule, IpFilter, IpRule};
pub use jwt::{Jwks, JwtProvider, RemoteJwks};
pub use oidc::{Oidc, Redacted};
pub use rate_limit::{DescriptorEntry, GlobalRateLimit, LocalRateLimit};

use std::sync::Arc;

use crate::ObjectRef;

/// Policies of a whole virtual host (an HTTPProxy's `virtualhost`); a route's own policy of the
/// same kind replaces it for that route.
#[derive(Debug, serde::Serialize, Clone, Default, PartialEq, Eq, Hash)]
pub struct VirtualHostPolicy {
    /// Cross-origin requests.
    pub cors: Option<Cors>,
    /// Client addresses allowed or denied.
    pub ip_filter: Option<IpFilter>,
    /// A rate limit shared by every route of the host.
    pub local_rate_limit: Option<LocalRateLimit>,
    /// The external authorization server checking the host's requests (TLS hosts only).
    pub authorization: Option<Authorization>,
    /// Providers of the tokens its routes may require (TLS hosts only).
    pub jwt_providers: Vec<JwtProvider>,
    /// Descriptors sent to the rate-limit service for every request of the host.
    pub global_rate_limit: Option<GlobalRateLimit>,
    /// Custom error pages of every route (a route's own are tried first).
    pub error_pages: Vec<ErrorPage>,
    /// OpenID Connect login (TLS hosts only).
    pub oidc: Option<Oidc>,
}

/// Route-level settings that are not request filters. The default asks for nothing.
#[derive(Debug, serde::Serialize, Clone, Default, PartialEq, Eq, Hash)]
pub struct RoutePolicy {
    /// How long a stream may stay idle, in milliseconds; `Some(0)` disables the timeout.
    pub idle_timeout_ms: Option<u64>,
    /// Retries of failed requests.
    pub retry: Option<RetryPolicy>,
    /// Whether websocket upgrades are allowed.
    pub websockets: bool,
    /// How hashing load balancers pick an endpoint (for [`LoadBalancer::RequestHash`] and
    /// [`LoadBalancer::Cookie`]).
    pub hash_policies: Vec<HashPolicy>,
    /// Redirects Envoy follows itself instead of returning them.
    pub internal_redirect: Option<InternalRedirect>,
    /// Settings of the clusters the route's backends become.
    pub cluster: ClusterPolicy,
    /// Cross-origin requests, replacing the virtual host's policy (the Gateway API's CORS
    /// filter).
    pub cors: Option<Cors>,
    /// Client addresses allowed or denied, replacing the virtual host's list.
    pub ip_filter: Option<IpFilter>,
    /// A rate limit of this route alone.
    pub local_rate_limit: Option<LocalRateLimit>,
    /// Attribute changes of cookies the backends set.
    pub cookie_rewrites: Vec<CookieRewrite>,
    /// Whether and with what context the virtual host's authorization server checks this route.
    pub authorization: Option<RouteAuthorization>,
    /// The provider whose token requests must carry; `None` checks none.
    pub jwt_provider: Option<String>,
    /// Descriptors sent to the rate-limit service for this route's requests.
    pub global_rate_limit: Option<GlobalRateLimit>,
    /// The virtual host's descriptors are not sent for this route (`global.disabled`).
    pub ignore_host_rate_limits: bool,
    /// The name of the route's own statistics (`vhost.<host>.route.<prefix>.*`), ContourConfiguration
    /// `envoy.enableStatPrefix`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stat_prefix: Option<String>,
    /// Custom error pages, tried before the virtual host's.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub error_pages: Vec<ErrorPage>,
    /// The virtual host's OpenID Connect login does not apply to this route.
    pub oidc_disabled: bool,
}

/// A custom error page: answers whose status is in one of `ranges` get `body` as
/// `content_type`, their status kept. Envoy's own answers only, unless `from_backend`.
#[derive(Debug, serde::Serialize, Clone, PartialEq, Eq, Hash)]
pub struct ErrorPage {
    /// Status code ranges, both ends included (a single code is a range of one).
    pub ranges: Vec<(u16, u16)>,
    /// The page.
    pub body: String,
    /// Its `Content-Type`.
    pub content_type: String,
    /// The backends' answers are replaced too.
    pub from_backend: bool,
}

impl ErrorPage {
    /// Whether the page answers `status`.
    pub fn covers(&self, status: u16) -> bool {
        self.ranges.iter().any(|&(start, end)| (start..=end).contains(&status))
    }
}

/// Settings that belong to an upstream cluster; backends with different settings get distinct
/// clusters.
#[derive(Debug, serde::Serialize, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClusterPolicy {
    /// The load-balancing strategy.
    pub load_balancer: LoadBalancer,
    /// Active HTTP health checking.
    pub health_check: Option<HealthCheck>,
    /// How long an upstream connection may stay idle, in milliseconds; `Some(0)` disables it.
    pub idle_connection_timeout_ms: Option<u64>,
}

/// Retries of failed requests.
#[derive(Debug, serde::Serialize, Clone, PartialEq, Eq, Hash)]
pub struct RetryPolicy {
    /// Envoy's retry conditions, such as `5xx` or `retriable-status-codes`.
    pub retry_on: Vec<String>,
    /// How many retries.
    pub count: u32,
    /// The timeout of each try, in milliseconds; `Some(0)` disables it.
    pub per_try_timeout_ms: Option<u64>,
    /// Status codes retried with `retriable-status-codes`.
    pub retriable_status_codes: Vec<u32>,
    /// The least time between tries, in milliseconds; `None` is Envoy's (25 ms, growing).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backoff_ms: Option<u64>,
}

/// How a cluster picks an endpoint.
#[derive(Debug, serde::Serialize, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LoadBalancer {
    /// Round robin (weighted by endpoint weight).
    #[default]
    RoundRobin,
    /// The endpoint with the fewest active requests, of two picked at random.
    WeightedLeastRequest,
    /// A random endpoint.
    Random,
    /// A consistent hash of the request (ring hash), see [`HashPolicy`].
    RequestHash,
}

/// What a hashing load balancer hashes.
#[derive(Debug, serde::Serialize, Clone, PartialEq, Eq, Hash)]
pub enum HashPolicy {
    /// A request header's value.
    Header {
        /// The header name.
        name: String,
        /// Stop at this policy when it produced a hash.
        terminal: bool,
    },
    /// A query parameter's value.
    QueryParameter {
        /// The parameter name.
        name: String,
        /// Stop at this policy when it produced a hash.
        terminal: bool,
    },
    /// The client's address.
    SourceIp {
        /// Stop at this policy when it produced a hash.
        terminal: bool,
    },
    /// A session cookie, generated when absent (upstream's `X-Contour-Session-Affinity`).
    Cookie {
        /// The cookie name.
        name: String,
    },
}

/// Active health checking of a cluster's endpoints: HTTP, or a TCP connect for `tcp`.
#[derive(Debug, serde::Serialize, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HealthCheck {
    /// A TCP connect check instead of an HTTP request (path, host and statuses unused).
    pub tcp: bool,
    /// The request path.
    pub path: String,
    /// The Host header of the check.
    pub host: String,
    /// Seconds between checks.
    pub interval_s: u32,
    /// Seconds before a check times out.
    pub timeout_s: u32,
    /// Failed checks before an endpoint is unhealthy.
    pub unhealthy_threshold: u32,
    /// Passed checks before an endpoint is healthy again.
    pub healthy_threshold: u32,
    /// Status ranges `[start, end)` that count as healthy; empty means 200 only.
    pub expected_statuses: Vec<(u32, u32)>,
}

/// Redirects Envoy follows on the client's behalf.
#[derive(Debug, serde::Serialize, Clone, PartialEq, Eq, Hash)]
pub struct InternalRedirect {
    /// The most redirects followed for one request.
    pub max: u32,
    /// The status codes treated as redirects (Envoy's default: 302).
    pub codes: Vec<u32>,
    /// Whether a redirect may switch between http and https: `Never`, `Always` or `SafeOnly`.
    pub cross_scheme: CrossScheme,
    /// Refuse a redirect to a route already visited.
    pub deny_repeated_route: bool,
}

/// Whether internal redirects may change the scheme.
#[derive(Debug, serde::Serialize, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum CrossScheme {
    /// Never.
    #[default]
    Never,
    /// Always.
    Always,
    /// Only from http to https.
    SafeOnly,
}

/// The protocol spoken to a backend when it is not plain HTTP/1.1.
#[derive(Debug, serde::Serialize, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum UpstreamProtocol {
    /// HTTP/2 over TLS.
    H2,
    /// HTTP/2 in clear text.
    H2c,
    /// HTTP/1.1 over TLS.
    Tls,
}

/// The kind of object a CA bundle (`ca.crt`) is read from.
#[derive(Debug, serde::Serialize, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CaKind {
    /// A Secret (HTTPProxy, ExtensionService, JWKS: upstream's `caSecret`).
    #[default]
    Secret,
    /// A ConfigMap (BackendTLSPolicy's `caCertificateRefs`).
    ConfigMap,
    /// A cluster-scoped ClusterTrustBundle's `spec.trustBundle` (the reference's namespace is
    /// empty).
    ClusterTrustBundle,
    /// The trust store of the system Envoy runs on (BackendTLSPolicy's `wellKnownCACertificates:
    /// System`); the object reference is not used.
    System,
}

/// How the backend's certificate is verified when Envoy speaks TLS to it.
#[derive(Debug, serde::Serialize, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct UpstreamValidation {
    /// The object holding `ca.crt`, already checked for permission.
    pub ca: ObjectRef,
    /// Whether `ca` is a Secret or a ConfigMap.
    pub ca_kind: CaKind,
    /// DNS names the certificate must carry (it must carry one of these or of `subject_uris`).
    pub subject_names: Vec<String>,
    /// URI subject alternative names the certificate may carry instead (BackendTLSPolicy's
    /// `subjectAltNames` of type URI).
    pub subject_uris: Vec<String>,
}

/// Per-backend settings beyond the target and weight.
#[derive(Debug, serde::Serialize, Clone, Default, PartialEq, Eq, Hash)]
pub struct BackendOptions {
    /// The protocol spoken to the backend; `None` follows the Service (appProtocol, annotations).
    pub protocol: Option<UpstreamProtocol>,
    /// Verification of the backend's certificate.
    pub validation: Option<UpstreamValidation>,
    /// Request header changes for requests sent to this backend.
    pub request_headers: crate::HeaderModifier,
    /// Response header changes for answers from this backend.
    pub response_headers: crate::HeaderModifier,
    /// Slow start for new endpoints of this backend.
    pub slow_start: Option<SlowStart>,
    /// The Service port health checks go to, when not the traffic port.
    pub health_port: Option<u16>,
    /// The Host header requests to this backend carry.
    pub host_rewrite: Option<String>,
    /// The server name sent when speaking TLS to the backend.
    pub sni: Option<String>,
    /// Attribute changes of cookies this backend sets (after the route's).
    pub cookie_rewrites: Vec<CookieRewrite>,
    /// Passive health checks of its endpoints.
    pub outlier_detection: Option<OutlierDetection>,
}

/// Passive health checks (Envoy outlier detection): an endpoint failing too often in a row is
/// ejected from the pool for `base_ejection_ms` times its number of ejections, at most
/// `max_ejection_ms` (plus up to `jitter_ms`).
#[derive(Debug, serde::Serialize, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OutlierDetection {
    /// Consecutive server errors that eject an endpoint; 0: not checked.
    pub consecutive_server_errors: u32,
    /// How often endpoints are evaluated, in milliseconds.
    pub interval_ms: u64,
    /// The first ejection's length, in milliseconds.
    pub base_ejection_ms: u64,
    /// The longest ejection, in milliseconds.
    pub max_ejection_ms: u64,
    /// Failures to reach an endpoint are counted apart from the errors it answers with.
    pub split_local_origin: bool,
    /// Consecutive failures to reach an endpoint that eject it (with `split_local_origin`).
    pub consecutive_local_origin_failures: u32,
    /// The most endpoints ejected at once, in percent.
    pub max_ejection_percent: u32,
    /// The most random delay added to an ejection, in milliseconds.
    pub jitter_ms: u64,
}

/// Traffic to a new endpoint ramps up over a window instead of arriving all at once.
#[derive(Debug, serde::Serialize, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SlowStart {
    /// How long the ramp lasts, in milliseconds.
    pub window_ms: u64,
    /// The ramp's curve, in thousandths (1000 = linear).
    pub aggression_milli: u32,
    /// The share of its weight a new endpoint starts with, in percent.
    pub min_weight_percent: u32,
}

/// Shared per-backend options; `None` on a backend means the defaults.
pub type SharedBackendOptions = Option<Arc<BackendOptions>>;
