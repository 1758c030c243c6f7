//! ContourConfiguration (projectcontour.io/v1alpha1): contour-serve's settings as a resource
//! (`--contour-config-name`), the same content as contour.yaml, structured.

use std::collections::BTreeMap;

use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::DetailedCondition;
use crate::extensionservice::CircuitBreakers;
use crate::httpproxy::{AuthorizationServer, GlobalRateLimitPolicy};

/// ContourConfiguration is the schema for a Contour instance.
#[derive(CustomResource, Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "projectcontour.io",
    version = "v1alpha1",
    kind = "ContourConfiguration",
    namespaced,
    status = "ContourConfigurationStatus",
    shortname = "contourconfig",
    crates(kube_core = "::kube_core"),
    derive = "PartialEq",
    doc = "ContourConfiguration is the schema for a Contour instance."
)]
#[serde(rename_all = "camelCase")]
pub struct ContourConfigurationSpec {
    /// The xDS server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub xds_server: Option<XDSServerConfig>,
    /// Ingress settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingress: Option<IngressConfig>,
    /// The debug server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debug: Option<DebugConfig>,
    /// The health server (0.0.0.0:8000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<HealthConfig>,
    /// Envoy settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub envoy: Option<EnvoyConfig>,
    /// Gateway API settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway: Option<GatewayConfig>,
    /// HTTPProxy settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub httpproxy: Option<HTTPProxyConfig>,
    /// Allow ExternalName Services (false: they are a security risk).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_external_name_service: Option<bool>,
    /// External authorization for every virtual host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub global_ext_auth: Option<AuthorizationServer>,
    /// The global rate limit service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit_service: Option<RateLimitServiceConfig>,
    /// The GeoIP databases of HTTPProxy's location rules (upstream's main branch).
    #[serde(default, rename = "geoIP", skip_serializing_if = "Option::is_none")]
    pub geo_ip: Option<GeoIPConfig>,
    /// Headers on every route.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<PolicyConfig>,
    /// The metrics server (0.0.0.0:8000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<MetricsConfig>,
    /// Tracing to OpenTelemetry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tracing: Option<TracingConfig>,
    /// Feature toggles (`useEndpointSlices`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feature_flags: Option<Vec<String>>,
}

/// The xDS server.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct XDSServerConfig {
    /// Deprecated: `envoy` (default) or `contour`.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// The address (0.0.0.0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub address: Option<String>,
    /// The port (8001).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<i64>,
    /// TLS files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<TLS>,
}

/// TLS files of the xDS server.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[allow(clippy::upper_case_acronyms)]
pub struct TLS {
    /// CA bundle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<String>,
    /// Certificate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert_file: Option<String>,
    /// Key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_file: Option<String>,
    /// Serve xDS without TLS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insecure: Option<bool>,
}

/// A namespace and a name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NamespacedName {
    /// Name.
    pub name: String,
    /// Namespace.
    pub namespace: String,
}

/// Ingress settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IngressConfig {
    /// Ingress classes served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class_names: Option<Vec<String>>,
    /// Static status address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_address: Option<String>,
}

/// The debug server.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DebugConfig {
    /// The address (127.0.0.1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    /// The port (6060).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<i64>,
}

/// A health server.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HealthConfig {
    /// The address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub address: Option<String>,
    /// The port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<i64>,
}

/// A metrics server.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MetricsConfig {
    /// The address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub address: Option<String>,
    /// The port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<i64>,
    /// Serve over HTTPS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<MetricsTLS>,
}

/// TLS files of a metrics server.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MetricsTLS {
    /// CA bundle for client certificates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<String>,
    /// Certificate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert_file: Option<String>,
    /// Key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_file: Option<String>,
}

/// Envoy settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EnvoyConfig {
    /// Listener settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listener: Option<EnvoyListenerConfig>,
    /// The Envoy Service (projectcontour/envoy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<NamespacedName>,
    /// The HTTP listener (0.0.0.0:8080).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<EnvoyListener>,
    /// The HTTPS listener (0.0.0.0:8443).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub https: Option<EnvoyListener>,
    /// Envoy's health listener (0.0.0.0:8002).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<HealthConfig>,
    /// Envoy's metrics listener (0.0.0.0:8002).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<MetricsConfig>,
    /// Envoy's client certificate towards backends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_certificate: Option<NamespacedName>,
    /// Access logging.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logging: Option<EnvoyLogging>,
    /// `HTTP/1.1` and/or `HTTP/2`.
    #[serde(default, rename = "defaultHTTPVersions", skip_serializing_if = "Option::is_none")]
    pub default_http_versions: Option<Vec<String>>,
    /// Timeouts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeouts: Option<TimeoutParameters>,
    /// Upstream cluster settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterParameters>,
    /// Network settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkParameters>,
    /// Set a stat prefix on routes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_stat_prefix: Option<bool>,
    /// A readiness listener the overload manager's connection limit applies to.
    #[serde(default, rename = "omEnforcedHealth", skip_serializing_if = "Option::is_none")]
    pub om_enforced_health: Option<HealthConfig>,
    /// Extra Envoy runtime keys (a number, a string or a boolean each).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "runtime_settings_schema")]
    pub runtime_settings: Option<BTreeMap<String, serde_json::Value>>,
}

/// Listener settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EnvoyListenerConfig {
    /// Expect the PROXY protocol.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub use_proxy_protocol: Option<bool>,
    /// Response compression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compression: Option<EnvoyCompression>,
    /// Refuse chunked requests with a Content-Length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_allow_chunked_length: Option<bool>,
    /// Keep duplicate slashes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_merge_slashes: Option<bool>,
    /// `overwrite`, `append_if_absent` or `pass_through`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_header_transformation: Option<String>,
    /// "" or `exact`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_balancer: Option<String>,
    /// Requests per downstream connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_requests_per_connection: Option<u32>,
    /// Buffer per connection, in bytes.
    #[serde(default, rename = "per-connection-buffer-limit-bytes", skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub per_connection_buffer_limit_bytes: Option<u32>,
    /// Downstream TLS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<EnvoyTLS>,
    /// Socket options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket_options: Option<SocketOptions>,
    /// Requests handled per I/O cycle.
    #[serde(default, rename = "maxRequestsPerIOCycle", skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_requests_per_io_cycle: Option<u32>,
    /// HTTP/2 concurrent streams.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub http_max_concurrent_streams: Option<u32>,
    /// Connections per listener.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_connections_per_listener: Option<u32>,
    /// Connections accepted per socket event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_connections_to_accept_per_socket_event: Option<u32>,
    /// HTTP/3 over QUIC on the HTTPS listeners. A contour-rs extension: upstream Contour has no
    /// such field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http3: Option<EnvoyHttp3>,
}

/// HTTP/3 over QUIC beside HTTPS (a contour-rs extension).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EnvoyHttp3 {
    /// Every TLS-terminating virtual host also serves HTTP/3 on its port (UDP), unless its
    /// HTTPProxy's `tls.http3` says otherwise. Off by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// The UDP port `alt-svc` advertises: the port clients reach, such as the Envoy Service's
    /// 443 in front of Envoy's 8443. Unset: the listener's own port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 65535))]
    pub advertised_port: Option<u16>,
}

/// Response compression.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EnvoyCompression {
    /// `gzip` (default), `brotli`, `zstd` or `disabled`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub algorithm: Option<String>,
}

/// IP socket options.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SocketOptions {
    /// IPv4 TOS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 255))]
    pub tos: Option<i32>,
    /// IPv6 traffic class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 255))]
    pub traffic_class: Option<i32>,
}

/// TLS versions and ciphers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EnvoyTLS {
    /// `1.2` (default) or `1.3`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimum_protocol_version: Option<String>,
    /// `1.2` or `1.3` (default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maximum_protocol_version: Option<String>,
    /// Cipher suites.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cipher_suites: Option<Vec<String>>,
    /// ECDH curves, in order of preference (Envoy's defaults when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ecdh_curves: Option<Vec<String>>,
    /// Client fingerprints the TLS inspector computes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<TlsFingerprint>,
}

/// TLS client fingerprints.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TlsFingerprint {
    /// JA3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ja3: Option<bool>,
    /// JA4.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ja4: Option<bool>,
}

/// An Envoy listener.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EnvoyListener {
    /// The address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub address: Option<String>,
    /// The port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<i64>,
    /// Where the access log goes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_log: Option<String>,
}

/// Access logging.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EnvoyLogging {
    /// `envoy` (default) or `json`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_log_format: Option<String>,
    /// Envoy format string.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_log_format_string: Option<String>,
    /// JSON fields.
    #[serde(default, rename = "accessLogJSONFields", skip_serializing_if = "Option::is_none")]
    pub access_log_json_fields: Option<Vec<String>>,
    /// `info` (default), `error`, `critical` or `disabled`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_log_level: Option<String>,
    /// Which requests the level lets through are logged. A contour-rs extension: upstream
    /// Contour has no such field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_log_filter: Option<AccessLogFilter>,
}

/// Conditions a request must meet to be logged, every one given (a contour-rs extension).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AccessLogFilter {
    /// Status codes (`404`) and ranges (`500-599`): the status must be one of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 32), inner(pattern(r"^[1-5][0-9]{2}(-[1-5][0-9]{2})?$")))]
    pub status_codes: Option<Vec<String>>,
    /// The request took at least this long (a duration such as `500ms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_duration: Option<String>,
    /// Of the requests that pass, this percentage (0-100) is logged, drawn at random.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100))]
    pub sample_percent: Option<u32>,
}

/// Timeouts, as Go durations or `infinity`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TimeoutParameters {
    /// Whole request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_timeout: Option<String>,
    /// Idle connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_idle_timeout: Option<String>,
    /// Idle stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_idle_timeout: Option<String>,
    /// Connection lifetime.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_connection_duration: Option<String>,
    /// Delayed close.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delayed_close_timeout: Option<String>,
    /// Graceful shutdown of a connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection_shutdown_grace_period: Option<String>,
    /// Upstream connect (2s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_timeout: Option<String>,
}

/// Upstream cluster settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterParameters {
    /// `auto` (default), `v4`, `v6` or `all`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dns_lookup_family: Option<String>,
    /// Requests per upstream connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_requests_per_connection: Option<u32>,
    /// Buffer per connection, in bytes.
    #[serde(default, rename = "per-connection-buffer-limit-bytes", skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub per_connection_buffer_limit_bytes: Option<u32>,
    /// Default circuit breakers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub circuit_breakers: Option<CircuitBreakers>,
    /// Upstream TLS.
    #[serde(default, rename = "upstreamTLS", skip_serializing_if = "Option::is_none")]
    pub upstream_tls: Option<EnvoyTLS>,
    /// Passive health checks of every HTTPProxy service that names none (its own
    /// `outlierDetection`, `disabled: true` included, wins). A contour-rs extension: upstream
    /// Contour has no such field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outlier_detection: Option<crate::httpproxy::OutlierDetection>,
}

/// Network settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NetworkParameters {
    /// Trusted hops in X-Forwarded-For (0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_trusted_hops: Option<u32>,
    /// Envoy's admin port (9001; 0 turns it off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admin_port: Option<i64>,
    /// Strip a trailing dot from the Host header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strip_trailing_host_dot: Option<bool>,
}

/// Gateway API settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GatewayConfig {
    /// The Gateway served.
    pub gateway_ref: NamespacedName,
}

/// HTTPProxy settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HTTPProxyConfig {
    /// Ignore `permitInsecure`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_permit_insecure: Option<bool>,
    /// Namespaces where root HTTPProxies may live.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_namespaces: Option<Vec<String>>,
    /// The fallback certificate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback_certificate: Option<NamespacedName>,
}

/// The global rate limit service.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RateLimitServiceConfig {
    /// The ExtensionService.
    pub extension_service: NamespacedName,
    /// The rate limit domain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// Allow requests when the service fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fail_open: Option<bool>,
    /// Add X-RateLimit headers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_x_rate_limit_headers: Option<bool>,
    /// Answer limited gRPC requests with RESOURCE_EXHAUSTED.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_resource_exhausted_code: Option<bool>,
    /// A policy for virtual hosts that have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_global_rate_limit_policy: Option<GlobalRateLimitPolicy>,
}

/// The GeoIP lookup of HTTPProxy's `geoAllowPolicy` and `geoDenyPolicy`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GeoIPConfig {
    /// Where the data comes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<GeoIPProvider>,
}

/// A GeoIP data provider.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GeoIPProvider {
    /// MaxMind `.mmdb` databases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_mind: Option<MaxMindConfig>,
}

/// Paths of MaxMind databases on Envoy's file system (mounted into the Envoy pod separately).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MaxMindConfig {
    /// A City database: country, region, city.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub city_db_path: Option<String>,
    /// A Country database: country.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub country_db_path: Option<String>,
    /// An ASN database: the autonomous system number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asn_db_path: Option<String>,
    /// An ISP database: the ISP and the autonomous system number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isp_db_path: Option<String>,
    /// An Anonymous IP database: the anonymity flags.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anon_db_path: Option<String>,
}

/// Tracing.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TracingConfig {
    /// Tag spans with the pod's name and namespace (true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_pod_detail: Option<bool>,
    /// The service name (contour).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_name: Option<String>,
    /// Sampling percentage (100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overall_sampling: Option<String>,
    /// The longest path tag (256).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_path_tag_length: Option<u32>,
    /// Extra tags.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_tags: Option<Vec<CustomTag>>,
    /// The collector.
    pub extension_service: NamespacedName,
}

/// An extra span tag.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CustomTag {
    /// The tag.
    pub tag_name: String,
    /// A literal value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub literal: Option<String>,
    /// A request header's value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_header_name: Option<String>,
}

/// Headers on every route.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PolicyConfig {
    /// Request headers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_headers: Option<HeadersPolicy>,
    /// Response headers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_headers: Option<HeadersPolicy>,
    /// Apply to Ingress objects too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub apply_to_ingress: Option<bool>,
}

/// Headers set and removed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HeadersPolicy {
    /// Set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set: Option<BTreeMap<String, String>>,
    /// Removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remove: Option<Vec<String>>,
}

/// Status of a ContourConfiguration.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ContourConfigurationStatus {
    /// Conditions (`Valid`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Option<Vec<DetailedCondition>>,
}

/// A map whose values may be numbers, strings or booleans: structural, as the API server
/// requires, with each value left as given.
fn runtime_settings_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "additionalProperties": {"x-kubernetes-preserve-unknown-fields": true}
    })
}
