//! The file's shape: upstream's keys, kebab- or camel-case exactly as upstream spells them.

use serde::Deserialize;

use crate::services::{GeoIp, GlobalExtAuth, RateLimitService, Tracing};

/// The whole file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContourConfig {
    /// Log at debug level (`-d/--debug` overrides it).
    #[serde(default)]
    pub debug: Option<bool>,
    /// Use the in-cluster configuration.
    #[serde(default)]
    pub incluster: Option<bool>,
    /// Path of a kubeconfig.
    #[serde(default)]
    pub kubeconfig: Option<String>,
    /// Client QPS towards the API server.
    #[serde(default, rename = "kubernetesClientQPS")]
    pub kubernetes_client_qps: Option<f64>,
    /// Client burst towards the API server.
    #[serde(default, rename = "kubernetesClientBurst")]
    pub kubernetes_client_burst: Option<u32>,
    /// Server settings: upstream has none left (`xds-server-type` is gone), so only `{}` loads.
    #[serde(default)]
    pub server: Option<ServerConfig>,
    /// Gateway settings.
    #[serde(default)]
    pub gateway: Option<GatewayConfig>,
    /// Static addresses for Ingress and HTTPProxy status.
    #[serde(default, rename = "ingress-status-address")]
    pub ingress_status_address: Option<String>,
    /// Access log format.
    #[serde(default, rename = "accesslog-format")]
    pub accesslog_format: Option<AccessLogFormat>,
    /// Envoy access log format string.
    #[serde(default, rename = "accesslog-format-string")]
    pub accesslog_format_string: Option<String>,
    /// JSON access log fields.
    #[serde(default, rename = "json-fields")]
    pub json_fields: Option<Vec<String>>,
    /// Access log level.
    #[serde(default, rename = "accesslog-level")]
    pub accesslog_level: Option<AccessLogLevel>,
    /// Which requests the level lets through are logged (a contour-rs extension).
    #[serde(default, rename = "accesslog-filter")]
    pub accesslog_filter: Option<AccessLogFilter>,
    /// Downstream TLS settings.
    #[serde(default)]
    pub tls: Option<TlsConfig>,
    /// Ignore `permitInsecure` on HTTPProxy routes.
    #[serde(default, rename = "disablePermitInsecure")]
    pub disable_permit_insecure: Option<bool>,
    /// Refuse chunked requests with a Content-Length.
    #[serde(default, rename = "disableAllowChunkedLength")]
    pub disable_allow_chunked_length: Option<bool>,
    /// Keep duplicate slashes in paths.
    #[serde(default, rename = "disableMergeSlashes")]
    pub disable_merge_slashes: Option<bool>,
    /// Response compression.
    #[serde(default)]
    pub compression: Option<Compression>,
    /// What Envoy does with the Server header.
    #[serde(default, rename = "serverHeaderTransformation")]
    pub server_header_transformation: Option<ServerHeaderTransformation>,
    /// Allow ExternalName Services (off by default, as upstream).
    #[serde(default, rename = "enableExternalNameService")]
    pub enable_external_name_service: Option<bool>,
    /// Connection and request timeouts.
    #[serde(default)]
    pub timeouts: Option<Timeouts>,
    /// Headers set or removed on every route.
    #[serde(default)]
    pub policy: Option<Policy>,
    /// Namespace of the Envoy Service whose address goes to status.
    #[serde(default, rename = "envoy-service-namespace")]
    pub envoy_service_namespace: Option<String>,
    /// Name of that Service.
    #[serde(default, rename = "envoy-service-name")]
    pub envoy_service_name: Option<String>,
    /// HTTP versions offered upstream and downstream.
    #[serde(default, rename = "default-http-versions")]
    pub default_http_versions: Option<Vec<HttpVersion>>,
    /// Upstream cluster settings.
    #[serde(default)]
    pub cluster: Option<Cluster>,
    /// Network settings.
    #[serde(default)]
    pub network: Option<Network>,
    /// Listener settings.
    #[serde(default)]
    pub listener: Option<Listener>,
    /// The global rate limit service.
    #[serde(default, rename = "rateLimitService")]
    pub rate_limit_service: Option<RateLimitService>,
    /// The GeoIP databases of HTTPProxy's location rules (as ContourConfiguration `geoIP`).
    #[serde(default, rename = "geoIP")]
    pub geo_ip: Option<GeoIp>,
    /// Global external authorization.
    #[serde(default, rename = "globalExtAuth")]
    pub global_ext_auth: Option<GlobalExtAuth>,
    /// Metrics servers.
    #[serde(default)]
    pub metrics: Option<Metrics>,
    /// Tracing to an OpenTelemetry collector.
    #[serde(default)]
    pub tracing: Option<Tracing>,
    /// Feature flags (none are defined, as upstream).
    #[serde(default, rename = "featureFlags")]
    pub feature_flags: Option<Vec<String>>,
    /// A readiness listener the overload manager's connection limit applies to.
    #[serde(default, rename = "omEnforcedHealthListener")]
    pub om_enforced_health_listener: Option<Address>,
    /// Extra Envoy runtime keys: a number, a string or a boolean each.
    #[serde(default, rename = "runtime-settings")]
    pub runtime_settings: Option<std::collections::BTreeMap<String, RuntimeValue>>,
}

/// `server:`, empty as upstream's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {}

/// `gateway:`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GatewayConfig {
    /// A specific Gateway to serve.
    #[serde(default, rename = "gatewayRef")]
    pub gateway_ref: Option<NamespacedName>,
}

/// A namespace and a name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NamespacedName {
    /// Name.
    pub name: String,
    /// Namespace.
    pub namespace: String,
}

/// `accesslog-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AccessLogFormat {
    /// Envoy's text format.
    Envoy,
    /// JSON.
    Json,
}

/// `accesslog-level`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AccessLogLevel {
    /// Every request.
    Info,
    /// Responses with status ≥ 400.
    Error,
    /// Responses with status ≥ 500.
    Critical,
    /// None.
    Disabled,
}

/// `accesslog-filter` (a contour-rs extension).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccessLogFilter {
    /// Status codes (`404`) and ranges (`"500-599"`).
    #[serde(default, rename = "status-codes")]
    pub status_codes: Option<Vec<StatusCode>>,
    /// The least duration logged.
    #[serde(default, rename = "min-duration")]
    pub min_duration: Option<String>,
    /// The percentage logged.
    #[serde(default, rename = "sample-percent")]
    pub sample_percent: Option<u32>,
}

/// A status code (a number) or a range of them (`"500-599"`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum StatusCode {
    /// One code.
    Code(u16),
    /// A code or range as text.
    Text(String),
}

impl StatusCode {
    /// As the ContourConfiguration spells it.
    pub fn text(&self) -> String {
        match self {
            StatusCode::Code(c) => c.to_string(),
            StatusCode::Text(t) => t.clone(),
        }
    }
}

/// `tls:`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsConfig {
    /// `1.2` or `1.3`.
    #[serde(default, rename = "minimum-protocol-version")]
    pub minimum_protocol_version: Option<String>,
    /// `1.2` or `1.3`.
    #[serde(default, rename = "maximum-protocol-version")]
    pub maximum_protocol_version: Option<String>,
    /// Cipher suites.
    #[serde(default, rename = "cipher-suites")]
    pub cipher_suites: Option<Vec<String>>,
    /// ECDH curves.
    #[serde(default, rename = "ecdh-curves")]
    pub ecdh_curves: Option<Vec<String>>,
    /// The fallback certificate.
    #[serde(default, rename = "fallback-certificate")]
    pub fallback_certificate: Option<NamespacedName>,
    /// Envoy's client certificate towards backends.
    #[serde(default, rename = "envoy-client-certificate")]
    pub envoy_client_certificate: Option<NamespacedName>,
    /// Client fingerprints the TLS inspector computes.
    #[serde(default)]
    pub fingerprint: Option<Fingerprint>,
}

/// `compression:`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Compression {
    /// `gzip`, `brotli`, `zstd` or `disabled`.
    #[serde(default)]
    pub algorithm: Option<CompressionAlgorithm>,
}

/// A compression algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CompressionAlgorithm {
    /// gzip (default).
    Gzip,
    /// Brotli.
    Brotli,
    /// Zstandard.
    Zstd,
    /// No compression.
    Disabled,
}

/// `serverHeaderTransformation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerHeaderTransformation {
    /// Replace it with Envoy's.
    Overwrite,
    /// Add Envoy's only when absent.
    AppendIfAbsent,
    /// Leave it alone.
    PassThrough,
}

/// `timeouts:`; durations as upstream writes them (`30s`, `infinity`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Timeouts {
    /// Whole-request timeout.
    #[serde(default, rename = "request-timeout")]
    pub request_timeout: Option<String>,
    /// Idle connection timeout.
    #[serde(default, rename = "connection-idle-timeout")]
    pub connection_idle_timeout: Option<String>,
    /// Idle stream timeout.
    #[serde(default, rename = "stream-idle-timeout")]
    pub stream_idle_timeout: Option<String>,
    /// Maximum connection duration.
    #[serde(default, rename = "max-connection-duration")]
    pub max_connection_duration: Option<String>,
    /// Delayed close timeout.
    #[serde(default, rename = "delayed-close-timeout")]
    pub delayed_close_timeout: Option<String>,
    /// Graceful shutdown period of a connection.
    #[serde(default, rename = "connection-shutdown-grace-period")]
    pub connection_shutdown_grace_period: Option<String>,
    /// Upstream connect timeout.
    #[serde(default, rename = "connect-timeout")]
    pub connect_timeout: Option<String>,
}

/// `policy:`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// Request headers.
    #[serde(default, rename = "request-headers")]
    pub request_headers: Option<HeadersPolicy>,
    /// Response headers.
    #[serde(default, rename = "response-headers")]
    pub response_headers: Option<HeadersPolicy>,
    /// Apply to Ingress objects too.
    #[serde(default, rename = "applyToIngress")]
    pub apply_to_ingress: Option<bool>,
}

/// Headers set and removed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeadersPolicy {
    /// Headers set.
    #[serde(default)]
    pub set: Option<std::collections::BTreeMap<String, String>>,
    /// Headers removed.
    #[serde(default)]
    pub remove: Option<Vec<String>>,
}

/// An HTTP version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum HttpVersion {
    /// HTTP/1.1.
    #[serde(rename = "HTTP/1.1", alias = "http/1.1")]
    Http11,
    /// HTTP/2.
    #[serde(rename = "HTTP/2", alias = "http/2")]
    Http2,
}

/// `cluster:`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cluster {
    /// `auto`, `v4`, `v6` or `all`.
    #[serde(default, rename = "dns-lookup-family")]
    pub dns_lookup_family: Option<String>,
    /// Requests per upstream connection.
    #[serde(default, rename = "max-requests-per-connection")]
    pub max_requests_per_connection: Option<u32>,
    /// Buffer limit of each upstream connection.
    #[serde(default, rename = "per-connection-buffer-limit-bytes")]
    pub per_connection_buffer_limit_bytes: Option<u32>,
    /// Limits for clusters whose Service sets none.
    #[serde(default, rename = "circuit-breakers")]
    pub circuit_breakers: Option<CircuitBreakers>,
    /// TLS towards backends.
    #[serde(default, rename = "upstream-tls")]
    pub upstream_tls: Option<ProtocolParameters>,
    /// Passive health checks of every HTTPProxy service that names none (a contour-rs
    /// extension).
    #[serde(default, rename = "outlier-detection")]
    pub outlier_detection: Option<OutlierDetection>,
}

/// `cluster.outlier-detection` (a contour-rs extension): HTTPProxy's `outlierDetection`, keys
/// dashed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutlierDetection {
    /// No passive health checks by default.
    #[serde(default)]
    pub disabled: Option<bool>,
    /// Server errors in a row that eject an endpoint.
    #[serde(default, rename = "consecutive-server-errors")]
    pub consecutive_server_errors: Option<u32>,
    /// How often endpoints are evaluated.
    #[serde(default)]
    pub interval: Option<String>,
    /// The first ejection's length.
    #[serde(default, rename = "base-ejection-time")]
    pub base_ejection_time: Option<String>,
    /// The longest ejection.
    #[serde(default, rename = "max-ejection-time")]
    pub max_ejection_time: Option<String>,
    /// Random time added to an ejection.
    #[serde(default, rename = "max-ejection-time-jitter")]
    pub max_ejection_time_jitter: Option<String>,
    /// The most endpoints ejected at once, in percent.
    #[serde(default, rename = "max-ejection-percent")]
    pub max_ejection_percent: Option<u32>,
    /// Count failures to reach an endpoint apart from its answers.
    #[serde(default, rename = "split-external-local-origin-errors")]
    pub split_external_local_origin_errors: Option<bool>,
    /// Failures to reach an endpoint in a row that eject it (with the split).
    #[serde(default, rename = "consecutive-local-origin-failure")]
    pub consecutive_local_origin_failure: Option<u32>,
}

/// `cluster.circuit-breakers`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CircuitBreakers {
    /// Connections at once.
    #[serde(default, rename = "max-connections")]
    pub max_connections: Option<u32>,
    /// Pending requests at once.
    #[serde(default, rename = "max-pending-requests")]
    pub max_pending_requests: Option<u32>,
    /// Requests at once.
    #[serde(default, rename = "max-requests")]
    pub max_requests: Option<u32>,
    /// Retries at once.
    #[serde(default, rename = "max-retries")]
    pub max_retries: Option<u32>,
    /// Connections to one host at once.
    #[serde(default, rename = "per-host-max-connections")]
    pub per_host_max_connections: Option<u32>,
}

/// TLS versions and cipher suites (`cluster.upstream-tls`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProtocolParameters {
    /// `1.2` or `1.3`.
    #[serde(default, rename = "minimum-protocol-version")]
    pub minimum_protocol_version: Option<String>,
    /// `1.2` or `1.3`.
    #[serde(default, rename = "maximum-protocol-version")]
    pub maximum_protocol_version: Option<String>,
    /// Cipher suites.
    #[serde(default, rename = "cipher-suites")]
    pub cipher_suites: Option<Vec<String>>,
    /// ECDH curves.
    #[serde(default, rename = "ecdh-curves")]
    pub ecdh_curves: Option<Vec<String>>,
}

/// The value of an Envoy runtime key.
#[derive(Debug, Clone, PartialEq, Deserialize, serde::Serialize)]
#[serde(untagged)]
pub enum RuntimeValue {
    /// `true` or `false`.
    Bool(bool),
    /// A number.
    Number(f64),
    /// Text.
    Text(String),
}

/// `tls.fingerprint`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fingerprint {
    /// JA3.
    #[serde(default)]
    pub ja3: Option<bool>,
    /// JA4.
    #[serde(default)]
    pub ja4: Option<bool>,
}

/// `metrics:`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Metrics {
    /// Contour's own `/metrics`.
    #[serde(default)]
    pub contour: Option<MetricsServer>,
    /// Envoy's statistics listener.
    #[serde(default)]
    pub envoy: Option<MetricsServer>,
}

/// `metrics.contour` and `metrics.envoy`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsServer {
    /// The IP address to bind.
    #[serde(default)]
    pub address: Option<String>,
    /// The port.
    #[serde(default)]
    pub port: Option<u16>,
    /// Serve HTTPS with this certificate...
    #[serde(default, rename = "server-certificate-path")]
    pub server_certificate_path: Option<String>,
    /// ...and this key.
    #[serde(default, rename = "server-key-path")]
    pub server_key_path: Option<String>,
    /// Require client certificates signed by this CA.
    #[serde(default, rename = "ca-certificate-path")]
    pub ca_certificate_path: Option<String>,
}

/// An address and port (`omEnforcedHealthListener`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Address {
    /// The IP address to bind.
    #[serde(default)]
    pub address: Option<String>,
    /// The port.
    #[serde(default)]
    pub port: Option<u16>,
}

/// `listener:`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Listener {
    /// `exact`, or empty for Envoy's default.
    #[serde(default, rename = "connection-balancer")]
    pub connection_balancer: Option<String>,
    /// Requests per client connection.
    #[serde(default, rename = "max-requests-per-connection")]
    pub max_requests_per_connection: Option<u32>,
    /// Buffer limit of each client connection.
    #[serde(default, rename = "per-connection-buffer-limit-bytes")]
    pub per_connection_buffer_limit_bytes: Option<u32>,
    /// IP socket options of accepted connections.
    #[serde(default, rename = "socket-options")]
    pub socket_options: Option<SocketOptions>,
    /// Requests Envoy handles per I/O cycle.
    #[serde(default, rename = "max-requests-per-io-cycle")]
    pub max_requests_per_io_cycle: Option<u32>,
    /// Concurrent streams of one HTTP/2 client connection.
    #[serde(default, rename = "http2-max-concurrent-streams")]
    pub http2_max_concurrent_streams: Option<u32>,
    /// Connections each listener accepts at most.
    #[serde(default, rename = "max-connections-per-listener")]
    pub max_connections_per_listener: Option<u32>,
    /// Connections accepted per socket event.
    #[serde(default, rename = "max-connections-to-accept-per-socket-event")]
    pub max_connections_to_accept_per_socket_event: Option<u32>,
    /// HTTP/3 over QUIC (a contour-rs extension).
    #[serde(default)]
    pub http3: Option<Http3>,
}

/// `listener.http3` (a contour-rs extension).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Http3 {
    /// Every TLS-terminating virtual host serves HTTP/3 too.
    #[serde(default)]
    pub enabled: Option<bool>,
    /// The UDP port `alt-svc` advertises; unset: the listener's own.
    #[serde(default, rename = "advertised-port")]
    pub advertised_port: Option<u16>,
}

/// `listener.socket-options`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SocketOptions {
    /// IPv4 TOS (0–255; 0 leaves it alone).
    #[serde(default)]
    pub tos: Option<i32>,
    /// IPv6 traffic class (0–255; 0 leaves it alone).
    #[serde(default, rename = "traffic-class")]
    pub traffic_class: Option<i32>,
}

/// `network:`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Network {
    /// Trusted proxy hops in X-Forwarded-For.
    #[serde(default, rename = "num-trusted-hops")]
    pub num_trusted_hops: Option<u32>,
    /// Envoy's admin port (9001).
    #[serde(default, rename = "admin-port")]
    pub admin_port: Option<u16>,
    /// Strip a trailing dot from hosts.
    #[serde(default, rename = "strip-trailing-host-dot")]
    pub strip_trailing_host_dot: Option<bool>,
}

impl ContourConfig {
    /// Checks values beyond their shape; the error names the key.
    pub fn validate(&self) -> Result<(), (String, String)> {
        if let Some(tls) = &self.tls {
            for (key, v) in [
                ("tls.minimum-protocol-version", &tls.minimum_protocol_version),
                ("tls.maximum-protocol-version", &tls.maximum_protocol_version),
            ] {
                if let Some(v) = v
                    && !matches!(v.as_str(), "" | "1.2" | "1.3")
                {
                    return Err((key.into(), format!("{v:?} is not 1.2 or 1.3")));
                }
            }
            if let (Some(min), Some(max)) = (&tls.minimum_protocol_version, &tls.maximum_protocol_version)
                && !min.is_empty()
                && !max.is_empty()
                && min > max
            {
                return Err(("tls.maximum-protocol-version".into(), format!("{max} is below the minimum {min}")));
            }
        }
        if let Some(t) = &self.timeouts {
            let all = [
                ("timeouts.request-timeout", &t.request_timeout),
                ("timeouts.connection-idle-timeout", &t.connection_idle_timeout),
                ("timeouts.stream-idle-timeout", &t.stream_idle_timeout),
                ("timeouts.max-connection-duration", &t.max_connection_duration),
                ("timeouts.delayed-close-timeout", &t.delayed_close_timeout),
                ("timeouts.connection-shutdown-grace-period", &t.connection_shutdown_grace_period),
                ("timeouts.connect-timeout", &t.connect_timeout),
            ];
            for (key, value) in all {
                if let Some(v) = value
                    && !valid_timeout(v)
                {
                    return Err((key.into(), format!("{v:?} is not a duration (such as 30s or 1m) or infinity")));
                }
            }
        }
        if let Some(flags) = &self.feature_flags
            && let Some(flag) = flags.first()
        {
            return Err(("featureFlags".into(), format!("unknown feature flag {flag:?}")));
        }
        Ok(())
    }
}

/// A Go-style duration (`1h2m3.5s`, `250ms`, `0`) or `infinity`/`infinite`.
fn valid_timeout(text: &str) -> bool {
    matches!(text, "infinity" | "infinite") || duration::parse(text).is_some()
}
