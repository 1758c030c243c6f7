//! The file's shape: upstream's keys, kebab- or camel-case exactly as upstream spells them.

use serde::Deserialize;

use crate::cluster::Cluster;
use crate::listener::{Listener, Network};
use crate::services::{GeoIp, GlobalExtAuth, RateLimitService, Tracing};

/// The whole file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContourConfig {
    /// Logs at debug level. As upstream, `true` turns debug logging on whatever the command line says: the
    /// flag can turn it on, not off. Default: `false`. Flag: -d/--debug.
    #[serde(default)]
    pub debug: Option<bool>,
    /// Connects to the cluster with the in-cluster service account, ignoring any kubeconfig.
    /// Default: `false`. Flag: --incluster.
    #[serde(default)]
    pub incluster: Option<bool>,
    /// Path of the kubeconfig of the cluster to watch. Default: the in-cluster configuration, then
    /// `$KUBECONFIG`, then `~/.kube/config`. Flag: --kubeconfig (or the environment variable `KUBECONFIG`).
    #[serde(default)]
    pub kubeconfig: Option<String>,
    /// Requests a second contour-serve sends the API server, on average: a token bucket in front of every
    /// request (status writes, watches starting, leader election) lets `kubernetesClientBurst` through at
    /// once, then this many a second. With only the burst set, client-go's 5 a second applies, as upstream
    /// passes only what is set. Default: not throttled, unlike upstream (client-go's 5 and 10); the API
    /// server's priority and fairness still applies. Flag: --kubernetes-client-qps.
    #[serde(default, rename = "kubernetesClientQPS")]
    pub kubernetes_client_qps: Option<f64>,
    /// Requests contour-serve may send the API server at once, above `kubernetesClientQPS` (the same token
    /// bucket). With only the QPS set, client-go's burst of 10 applies, as upstream. Default: not throttled.
    /// Flag: --kubernetes-client-burst.
    #[serde(default, rename = "kubernetesClientBurst")]
    pub kubernetes_client_burst: Option<u32>,
    /// Upstream's server settings. Upstream defines no keys here (there is no `xds-server-type`), so only
    /// `{}` loads and any key in it stops start-up, as upstream refuses it. Default: `{}`.
    /// ContourConfiguration: spec.xdsServer.type.
    #[serde(default)]
    pub server: Option<ServerConfig>,
    /// Gateway API settings: upstream's static Gateway mode. ContourConfiguration: spec.gateway.
    #[serde(default)]
    pub gateway: Option<GatewayConfig>,
    /// Addresses written to Ingress and HTTPProxy status instead of the Envoy Service's load-balancer
    /// address, separated by commas. ContourConfiguration: spec.ingress.statusAddress.
    /// Flag: --ingress-status-address.
    #[serde(default, rename = "ingress-status-address")]
    pub ingress_status_address: Option<String>,
    /// Writes access log lines in Envoy's text format (`envoy`) or as JSON (`json`), on every HTTP, HTTPS and
    /// TCP-proxy listener. Default: `envoy`. ContourConfiguration: spec.envoy.logging.accessLogFormat.
    /// Flag: --accesslog-format.
    #[serde(default, rename = "accesslog-format")]
    pub accesslog_format: Option<AccessLogFormat>,
    /// The line of the `envoy` access log format, in Envoy's format-string syntax. It is checked as upstream
    /// checks it (known operators, their arguments, a trailing newline), and `%REQ_WITHOUT_QUERY%` and
    /// `%METADATA%` bring their formatters. Default: Envoy's default line.
    /// ContourConfiguration: spec.envoy.logging.accessLogFormatString.
    #[serde(default, rename = "accesslog-format-string")]
    pub accesslog_format_string: Option<String>,
    /// The keys of each `json` access log line: upstream's names (`@timestamp`, `method`,
    /// `contour_config_name`, ...), simple operators in lower case (`bytes_sent`), or `key=%OPERATOR%`.
    /// Default: upstream's 23 fields. ContourConfiguration: spec.envoy.logging.accessLogJSONFields.
    #[serde(default, rename = "json-fields")]
    pub json_fields: Option<Vec<String>>,
    /// Which requests are logged: `info` every one, `error` those with a status of 300 or above or an Envoy
    /// response flag, `critical` those with 500 or above or a flag, `disabled` none. Default: `info`.
    /// ContourConfiguration: spec.envoy.logging.accessLogLevel.
    #[serde(default, rename = "accesslog-level")]
    pub accesslog_level: Option<AccessLogLevel>,
    /// Which of the requests the level lets through are logged, a contour-rs extension: every condition set
    /// must hold. Default: none. ContourConfiguration: spec.envoy.logging.accessLogFilter.
    #[serde(default, rename = "accesslog-filter")]
    pub accesslog_filter: Option<AccessLogFilter>,
    /// Downstream TLS of every fleet's listeners, the fallback certificate, and Envoy's client certificate
    /// towards backends.
    #[serde(default)]
    pub tls: Option<TlsConfig>,
    /// Ignores `permitInsecure` on HTTPProxy routes, so their plain-HTTP requests are redirected to HTTPS as
    /// on any secure route. Default: `false`. ContourConfiguration: spec.httpproxy.disablePermitInsecure.
    #[serde(default, rename = "disablePermitInsecure")]
    pub disable_permit_insecure: Option<bool>,
    /// Refuses a request with both `Content-Length` and chunked encoding instead of serving it with the
    /// length dropped. Default: `false`. ContourConfiguration: spec.envoy.listener.disableAllowChunkedLength.
    #[serde(default, rename = "disableAllowChunkedLength")]
    pub disable_allow_chunked_length: Option<bool>,
    /// Keeps repeated slashes in request paths instead of merging them. Default: `false`.
    /// ContourConfiguration: spec.envoy.listener.disableMergeSlashes.
    #[serde(default, rename = "disableMergeSlashes")]
    pub disable_merge_slashes: Option<bool>,
    /// Response compression. ContourConfiguration: spec.envoy.listener.compression.
    #[serde(default)]
    pub compression: Option<Compression>,
    /// What Envoy does with the `Server` header of responses: `overwrite` sets `Server: envoy`,
    /// `append_if_absent` sets it only when the backend sent none, `pass_through` keeps the backend's.
    /// Default: `overwrite`. ContourConfiguration: spec.envoy.listener.serverHeaderTransformation.
    #[serde(default, rename = "serverHeaderTransformation")]
    pub server_header_transformation: Option<ServerHeaderTransformation>,
    /// Lets ExternalName Services be backends: each becomes a DNS cluster Envoy resolves itself (logical DNS
    /// with `cluster.dns-lookup-family: all`, strict DNS otherwise). Off, a route to one is refused with
    /// upstream's message; `localhost`, `localhost.localdomain` and `local.projectcontour.io` are always
    /// refused, and so, beyond upstream, are `*.localhost`, loopback, unspecified and link-local addresses.
    /// Default: `false`, as upstream. ContourConfiguration: spec.enableExternalNameService.
    #[serde(default, rename = "enableExternalNameService")]
    pub enable_external_name_service: Option<bool>,
    /// Timeouts of the HTTP connection manager and of connecting to backends, as durations (`30s`, `1m`) or
    /// `infinity`. ContourConfiguration: spec.envoy.timeouts.
    #[serde(default)]
    pub timeouts: Option<Timeouts>,
    /// Headers set and removed on every route. ContourConfiguration: spec.policy.
    #[serde(default)]
    pub policy: Option<Policy>,
    /// Namespace of the Envoy Service whose load-balancer address goes to Ingress and HTTPProxy status.
    /// Default: `projectcontour`. ContourConfiguration: spec.envoy.service.namespace.
    /// Flag: --envoy-service-namespace (or the environment variable `CONTOUR_NAMESPACE`).
    #[serde(default, rename = "envoy-service-namespace")]
    pub envoy_service_namespace: Option<String>,
    /// Name of the Envoy Service whose load-balancer address goes to Ingress and HTTPProxy status.
    /// Default: `envoy`. ContourConfiguration: spec.envoy.service.name. Flag: --envoy-service-name.
    #[serde(default, rename = "envoy-service-name")]
    pub envoy_service_name: Option<String>,
    /// The HTTP versions offered to clients, `HTTP/1.1` and `HTTP/2`: one alone limits both the codec and the
    /// ALPN offered on TLS. Default: both. ContourConfiguration: spec.envoy.defaultHTTPVersions.
    #[serde(default, rename = "default-http-versions")]
    pub default_http_versions: Option<Vec<HttpVersion>>,
    /// Settings of Envoy's upstream clusters, the connections to backends.
    /// ContourConfiguration: spec.envoy.cluster.
    #[serde(default)]
    pub cluster: Option<Cluster>,
    /// Network settings of Envoy. ContourConfiguration: spec.envoy.network.
    #[serde(default)]
    pub network: Option<Network>,
    /// Settings of Envoy's traffic listeners, applied to every fleet: the default fleet (HTTPProxy, Ingress)
    /// and each Gateway's. ContourConfiguration: spec.envoy.listener.
    #[serde(default)]
    pub listener: Option<Listener>,
    /// The global rate limit service of the default fleet. Default: off.
    /// ContourConfiguration: spec.rateLimitService.
    #[serde(default, rename = "rateLimitService")]
    pub rate_limit_service: Option<RateLimitService>,
    /// The GeoIP databases that HTTPProxy's location rules look clients up in. Default: none.
    /// ContourConfiguration: spec.geoIP.
    #[serde(default, rename = "geoIP")]
    pub geo_ip: Option<GeoIp>,
    /// Global external authorization of the default fleet: the authorization server every virtual host uses
    /// unless it names its own or opts out. Default: off. ContourConfiguration: spec.globalExtAuth.
    #[serde(default, rename = "globalExtAuth")]
    pub global_ext_auth: Option<GlobalExtAuth>,
    /// The metrics servers of contour-serve and of Envoy.
    #[serde(default)]
    pub metrics: Option<Metrics>,
    /// Tracing of the default fleet's requests to an OpenTelemetry collector. Default: off.
    /// ContourConfiguration: spec.tracing.
    #[serde(default)]
    pub tracing: Option<Tracing>,
    /// Feature flags. Upstream defines none, so any flag stops start-up, as upstream refuses it.
    /// Default: none. ContourConfiguration: spec.featureFlags.
    #[serde(default, rename = "featureFlags")]
    pub feature_flags: Option<Vec<String>>,
    /// A second readiness listener (`/ready`) that the overload manager's connection limit applies to: it
    /// stops answering when Envoy is full. Default: none. ContourConfiguration: spec.envoy.omEnforcedHealth.
    #[serde(default, rename = "omEnforcedHealthListener")]
    pub om_enforced_health_listener: Option<Address>,
    /// Further Envoy runtime keys, each a number, a string or a boolean, in the runtime layer `dynamic`.
    /// Default: none. ContourConfiguration: spec.envoy.runtimeSettings.
    #[serde(default, rename = "runtime-settings")]
    pub runtime_settings: Option<std::collections::BTreeMap<String, RuntimeValue>>,
}

/// `server:`, empty as upstream's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {}

/// `gateway:`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GatewayConfig {
    /// Upstream's static Gateway mode: this Gateway alone is served, by the default fleet. Both its namespace
    /// and its name must be set. ContourConfiguration: spec.gateway.gatewayRef.
    #[serde(default, rename = "gatewayRef")]
    pub gateway_ref: Option<NamespacedName>,
}

/// A namespace and a name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NamespacedName {
    /// The object's name.
    pub name: String,
    /// The object's namespace.
    pub namespace: String,
}

/// `accesslog-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AccessLogFormat {
    /// Envoy's text format.
    Envoy,
    /// JSON.
    Json,
}

/// `accesslog-level`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AccessLogLevel {
    /// Every request.
    Info,
    /// Responses with status ≥ 300, or with an Envoy response flag.
    Error,
    /// Responses with status ≥ 500, or with an Envoy response flag.
    Critical,
    /// None.
    Disabled,
}

/// `accesslog-filter` (a contour-rs extension).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AccessLogFilter {
    /// Only requests answered with one of these status codes (`404`) or ranges (`"500-599"`) are logged; each
    /// within 100-599, a range in ascending order. Default: any status.
    /// ContourConfiguration: spec.envoy.logging.accessLogFilter.statusCodes.
    #[serde(default, rename = "status-codes")]
    pub status_codes: Option<Vec<StatusCode>>,
    /// Only requests that took at least this long (a duration such as `500ms`) are logged. Default: any
    /// duration. ContourConfiguration: spec.envoy.logging.accessLogFilter.minDuration.
    #[serde(default, rename = "min-duration")]
    pub min_duration: Option<String>,
    /// Of the requests the other conditions keep, this percentage, picked at random, is logged; above 100
    /// stops start-up. Default: all of them.
    /// ContourConfiguration: spec.envoy.logging.accessLogFilter.samplePercent.
    #[serde(default, rename = "sample-percent")]
    pub sample_percent: Option<u32>,
}

/// A status code (a number) or a range of them (`"500-599"`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
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
#[derive(Debug, Clone, Default, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TlsConfig {
    /// The lowest TLS version clients may use, `1.2` or `1.3`; an HTTPProxy's own range narrows it.
    /// Default: `1.2`. ContourConfiguration: spec.envoy.listener.tls.minimumProtocolVersion.
    #[serde(default, rename = "minimum-protocol-version")]
    pub minimum_protocol_version: Option<String>,
    /// The highest TLS version clients may use, `1.2` or `1.3`; one below the minimum stops start-up.
    /// Default: `1.3`. ContourConfiguration: spec.envoy.listener.tls.maximumProtocolVersion.
    #[serde(default, rename = "maximum-protocol-version")]
    pub maximum_protocol_version: Option<String>,
    /// The TLS 1.2 cipher suites offered to clients, in order of preference: the names upstream allows, and
    /// bracketed groups of equal preference whose names are separated by a vertical bar. Default: upstream's
    /// list of ECDHE suites with AEAD. ContourConfiguration: spec.envoy.listener.tls.cipherSuites.
    #[serde(default, rename = "cipher-suites")]
    pub cipher_suites: Option<Vec<String>>,
    /// The ECDH curves offered to clients, in order of preference. Default: Envoy's.
    /// ContourConfiguration: spec.envoy.listener.tls.ecdhCurves.
    #[serde(default, rename = "ecdh-curves")]
    pub ecdh_curves: Option<Vec<String>>,
    /// The Secret whose certificate Envoy presents to TLS clients that send no SNI, on the HTTPProxies that
    /// set `tls.enableFallbackCertificate` (without it, those HTTPProxies are refused).
    /// ContourConfiguration: spec.httpproxy.fallbackCertificate.
    #[serde(default, rename = "fallback-certificate")]
    pub fallback_certificate: Option<NamespacedName>,
    /// The Secret (`kubernetes.io/tls`) whose certificate Envoy presents to every backend it speaks TLS to,
    /// for backends behind mutual TLS; both its namespace and its name must be set.
    /// ContourConfiguration: spec.envoy.clientCertificate.
    #[serde(default, rename = "envoy-client-certificate")]
    pub envoy_client_certificate: Option<NamespacedName>,
    /// Client fingerprints the TLS inspector computes.
    /// ContourConfiguration: spec.envoy.listener.tls.fingerprint.
    #[serde(default)]
    pub fingerprint: Option<Fingerprint>,
}

/// `compression:`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Compression {
    /// The response compressor: `gzip`, `brotli`, `zstd`, or `disabled` for none. It compresses text, JSON,
    /// JavaScript, SVG and gRPC-Web responses. Default: `gzip`.
    /// ContourConfiguration: spec.envoy.listener.compression.algorithm.
    #[serde(default)]
    pub algorithm: Option<CompressionAlgorithm>,
}

/// A compression algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
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
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Timeouts {
    /// How long a whole request may take, from its first byte to the response's last. A Go duration, or
    /// `infinity` to turn it off; empty or `0s` keeps Envoy's default. Default: Envoy's.
    /// ContourConfiguration: spec.envoy.timeouts.requestTimeout.
    #[serde(default, rename = "request-timeout")]
    pub request_timeout: Option<String>,
    /// How long a client connection with no active stream stays open. A Go duration, or `infinity` to turn it
    /// off; empty or `0s` keeps Envoy's default. Default: Envoy's.
    /// ContourConfiguration: spec.envoy.timeouts.connectionIdleTimeout.
    #[serde(default, rename = "connection-idle-timeout")]
    pub connection_idle_timeout: Option<String>,
    /// A stream silent this long is ended by Envoy, with a 504 `stream timeout` while the backend has not
    /// answered. A Go duration, or `infinity` to turn it off; empty or `0s` keeps Envoy's default.
    /// Default: Envoy's (5 min). ContourConfiguration: spec.envoy.timeouts.streamIdleTimeout.
    #[serde(default, rename = "stream-idle-timeout")]
    pub stream_idle_timeout: Option<String>,
    /// The longest a client connection lives. A Go duration; as upstream, `infinity` leaves the connection
    /// duration unlimited, and empty or `0s` keeps Envoy's default. Default: Envoy's.
    /// ContourConfiguration: spec.envoy.timeouts.maxConnectionDuration.
    #[serde(default, rename = "max-connection-duration")]
    pub max_connection_duration: Option<String>,
    /// How long Envoy waits for the client to close the connection after Envoy's last response before closing
    /// it itself. A Go duration, or `infinity` to turn it off; empty or `0s` keeps Envoy's default.
    /// Default: Envoy's. ContourConfiguration: spec.envoy.timeouts.delayedCloseTimeout.
    #[serde(default, rename = "delayed-close-timeout")]
    pub delayed_close_timeout: Option<String>,
    /// The time between Envoy's GOAWAY (or `Connection: close`) and its closing the connection. A Go
    /// duration, or `infinity` to turn it off; empty or `0s` keeps Envoy's default. Default: Envoy's.
    /// ContourConfiguration: spec.envoy.timeouts.connectionShutdownGracePeriod.
    #[serde(default, rename = "connection-shutdown-grace-period")]
    pub connection_shutdown_grace_period: Option<String>,
    /// How long Envoy waits to connect to a backend. A duration; `infinity` and `0s` stop start-up, as
    /// upstream. Default: `2s`. ContourConfiguration: spec.envoy.timeouts.connectTimeout.
    #[serde(default, rename = "connect-timeout")]
    pub connect_timeout: Option<String>,
}

/// `policy:`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// Request headers set and removed on every HTTPProxy service; a bad header name stops start-up.
    /// Default: none. ContourConfiguration: spec.policy.requestHeaders.
    #[serde(default, rename = "request-headers")]
    pub request_headers: Option<HeadersPolicy>,
    /// Response headers set and removed on every HTTPProxy service; a bad header name stops start-up.
    /// Default: none. ContourConfiguration: spec.policy.responseHeaders.
    #[serde(default, rename = "response-headers")]
    pub response_headers: Option<HeadersPolicy>,
    /// Sets and removes the same headers on Ingress backends too. Default: `false`.
    /// ContourConfiguration: spec.policy.applyToIngress.
    #[serde(default, rename = "applyToIngress")]
    pub apply_to_ingress: Option<bool>,
}

/// Headers set and removed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HeadersPolicy {
    /// Headers set, by name, with `%CONTOUR_NAMESPACE%` and the other variables filled in; a service's own
    /// value for the same header wins. ContourConfiguration: spec.policy.requestHeaders.set,
    /// spec.policy.responseHeaders.set.
    #[serde(default)]
    pub set: Option<std::collections::BTreeMap<String, String>>,
    /// Names of headers removed, in addition to those a service removes itself.
    /// ContourConfiguration: spec.policy.requestHeaders.remove, spec.policy.responseHeaders.remove.
    #[serde(default)]
    pub remove: Option<Vec<String>>,
}

/// An HTTP version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
pub enum HttpVersion {
    /// HTTP/1.1.
    #[serde(rename = "HTTP/1.1", alias = "http/1.1")]
    Http11,
    /// HTTP/2.
    #[serde(rename = "HTTP/2", alias = "http/2")]
    Http2,
}

/// The value of an Envoy runtime key.
#[derive(Debug, Clone, PartialEq, Deserialize, serde::Serialize, schemars::JsonSchema)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Fingerprint {
    /// The TLS inspector computes each client's JA3 fingerprint, for `%TLS_JA3_FINGERPRINT%` in access logs
    /// (JSON field `tls_ja3_fingerprint`) and header values. Default: off.
    /// ContourConfiguration: spec.envoy.listener.tls.fingerprint.ja3.
    #[serde(default)]
    pub ja3: Option<bool>,
    /// The TLS inspector computes each client's JA4 fingerprint, for `%TLS_JA4_FINGERPRINT%` in access logs
    /// (JSON field `tls_ja4_fingerprint`) and header values. Default: off.
    /// ContourConfiguration: spec.envoy.listener.tls.fingerprint.ja4.
    #[serde(default)]
    pub ja4: Option<bool>,
}

/// `metrics:`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Metrics {
    /// contour-serve's own `/metrics` server. ContourConfiguration: spec.metrics.
    #[serde(default)]
    pub contour: Option<MetricsServer>,
    /// Envoy's statistics (`/stats`, `/stats/prometheus`): on their own listener when its address or port
    /// differs from the readiness listener's, beside `/ready` otherwise.
    /// ContourConfiguration: spec.envoy.metrics.
    #[serde(default)]
    pub envoy: Option<MetricsServer>,
}

/// `metrics.contour` and `metrics.envoy`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MetricsServer {
    /// The IP address to listen on. Default: `0.0.0.0` for `metrics.contour`; for `metrics.envoy`, the
    /// readiness listener's (`--stats-address`, `0.0.0.0`). ContourConfiguration: spec.metrics.address,
    /// spec.envoy.metrics.address. Flag: --http-address (`metrics.contour` only).
    #[serde(default)]
    pub address: Option<String>,
    /// The port to listen on; 0 keeps the default. Default: `8000` for `metrics.contour`; for
    /// `metrics.envoy`, the readiness listener's (`--stats-port`, `8002`).
    /// ContourConfiguration: spec.metrics.port, spec.envoy.metrics.port. Flag: --http-port (`metrics.contour`
    /// only).
    #[serde(default)]
    pub port: Option<u16>,
    /// With `server-key-path`, serves over HTTPS (TLS 1.3) with this certificate file; with only one of the
    /// two, plain HTTP. For `metrics.contour`, contour-serve re-reads the files when they change, and the
    /// health server (`--health-address`, `--health-port`) must have a port of its own and serves no metrics;
    /// for `metrics.envoy`, Envoy reads them from its own file system, and a port shared with the readiness
    /// listener stops start-up. Default: none (plain HTTP). ContourConfiguration: spec.metrics.tls.certFile,
    /// spec.envoy.metrics.tls.certFile.
    #[serde(default, rename = "server-certificate-path")]
    pub server_certificate_path: Option<String>,
    /// The key of `server-certificate-path`. Default: none (plain HTTP).
    /// ContourConfiguration: spec.metrics.tls.keyFile, spec.envoy.metrics.tls.keyFile.
    #[serde(default, rename = "server-key-path")]
    pub server_key_path: Option<String>,
    /// Over HTTPS, scrapers must present a client certificate this CA signed. Default: none (no client
    /// certificate asked for). ContourConfiguration: spec.metrics.tls.caFile, spec.envoy.metrics.tls.caFile.
    #[serde(default, rename = "ca-certificate-path")]
    pub ca_certificate_path: Option<String>,
}

/// An address and port (`omEnforcedHealthListener`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Address {
    /// The IP address to listen on. Default: `0.0.0.0`.
    /// ContourConfiguration: spec.envoy.omEnforcedHealth.address.
    #[serde(default)]
    pub address: Option<String>,
    /// The port to listen on; required. ContourConfiguration: spec.envoy.omEnforcedHealth.port.
    #[serde(default)]
    pub port: Option<u16>,
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
