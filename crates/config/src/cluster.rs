//! `cluster`: the settings of Envoy's upstream clusters, the connections to backends.

use serde::Deserialize;

/// `cluster:`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Cluster {
    /// The addresses a backend's DNS name resolves to, on every cluster: `auto` (IPv6 first, then IPv4),
    /// `v4`, `v6` or `all`. Default: `auto`. ContourConfiguration: spec.envoy.cluster.dnsLookupFamily.
    #[serde(default, rename = "dns-lookup-family")]
    pub dns_lookup_family: Option<String>,
    /// Requests an upstream connection carries before Envoy closes it; 0 stops start-up. Default: unlimited.
    /// ContourConfiguration: spec.envoy.cluster.maxRequestsPerConnection.
    #[serde(default, rename = "max-requests-per-connection")]
    pub max_requests_per_connection: Option<u32>,
    /// The read and write buffer limit of each upstream connection, in bytes; 0 stops start-up.
    /// Default: Envoy's (1 MiB). ContourConfiguration: spec.envoy.cluster.per-connection-buffer-limit-bytes.
    #[serde(default, rename = "per-connection-buffer-limit-bytes")]
    pub per_connection_buffer_limit_bytes: Option<u32>,
    /// Limits of clusters whose Service sets none: a Service's `projectcontour.io/max-*` annotations win
    /// field by field, and 0 means unset. Default: Envoy's.
    /// ContourConfiguration: spec.envoy.cluster.circuitBreakers.
    #[serde(default, rename = "circuit-breakers")]
    pub circuit_breakers: Option<CircuitBreakers>,
    /// TLS versions and cipher suites towards backends. ContourConfiguration: spec.envoy.cluster.upstreamTLS.
    #[serde(default, rename = "upstream-tls")]
    pub upstream_tls: Option<ProtocolParameters>,
    /// Passive health checks of every HTTPProxy service that names none, a contour-rs extension: HTTPProxy's
    /// `outlierDetection`, its keys dashed. Default: none.
    /// ContourConfiguration: spec.envoy.cluster.outlierDetection.
    #[serde(default, rename = "outlier-detection")]
    pub outlier_detection: Option<OutlierDetection>,
}

/// `cluster.outlier-detection` (a contour-rs extension): HTTPProxy's `outlierDetection`, keys
/// dashed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutlierDetection {
    /// `true` gives services that name none no passive health checks, as without this section.
    /// Default: `false`. ContourConfiguration: spec.envoy.cluster.outlierDetection.disabled.
    #[serde(default)]
    pub disabled: Option<bool>,
    /// Server errors in a row (5xx answers; for TCP, connection failures and timeouts) that eject an
    /// endpoint; 0 turns this check off. Default: `5`.
    /// ContourConfiguration: spec.envoy.cluster.outlierDetection.consecutiveServerErrors.
    #[serde(default, rename = "consecutive-server-errors")]
    pub consecutive_server_errors: Option<u32>,
    /// How often endpoints are evaluated and ejected ones returned, as a duration; 0 stops start-up.
    /// Default: `10s`. ContourConfiguration: spec.envoy.cluster.outlierDetection.interval.
    #[serde(default)]
    pub interval: Option<String>,
    /// The length of an endpoint's first ejection, multiplied by the number of its ejections. Default: `30s`.
    /// ContourConfiguration: spec.envoy.cluster.outlierDetection.baseEjectionTime.
    #[serde(default, rename = "base-ejection-time")]
    pub base_ejection_time: Option<String>,
    /// The longest ejection; never shorter than the first. Default: `300s`.
    /// ContourConfiguration: spec.envoy.cluster.outlierDetection.maxEjectionTime.
    #[serde(default, rename = "max-ejection-time")]
    pub max_ejection_time: Option<String>,
    /// A random time, up to this long, added to each ejection. Default: `0s`.
    /// ContourConfiguration: spec.envoy.cluster.outlierDetection.maxEjectionTimeJitter.
    #[serde(default, rename = "max-ejection-time-jitter")]
    pub max_ejection_time_jitter: Option<String>,
    /// The most endpoints of a service ejected at once, in percent (one can always be); above 100 stops
    /// start-up. Default: `10`. ContourConfiguration: spec.envoy.cluster.outlierDetection.maxEjectionPercent.
    #[serde(default, rename = "max-ejection-percent")]
    pub max_ejection_percent: Option<u32>,
    /// Counts failures to reach an endpoint (connection failures, timeouts, resets) apart from the errors it
    /// answers with. Default: `false`.
    /// ContourConfiguration: spec.envoy.cluster.outlierDetection.splitExternalLocalOriginErrors.
    #[serde(default, rename = "split-external-local-origin-errors")]
    pub split_external_local_origin_errors: Option<bool>,
    /// Failures to reach an endpoint in a row that eject it, when `split-external-local-origin-errors` counts
    /// them apart. Default: `5`.
    /// ContourConfiguration: spec.envoy.cluster.outlierDetection.consecutiveLocalOriginFailure.
    #[serde(default, rename = "consecutive-local-origin-failure")]
    pub consecutive_local_origin_failure: Option<u32>,
}

/// `cluster.circuit-breakers`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CircuitBreakers {
    /// Connections to a cluster at once. Default: Envoy's (1024).
    /// ContourConfiguration: spec.envoy.cluster.circuitBreakers.maxConnections.
    #[serde(default, rename = "max-connections")]
    pub max_connections: Option<u32>,
    /// Requests waiting for a connection to a cluster at once. Default: Envoy's (1024).
    /// ContourConfiguration: spec.envoy.cluster.circuitBreakers.maxPendingRequests.
    #[serde(default, rename = "max-pending-requests")]
    pub max_pending_requests: Option<u32>,
    /// Requests to a cluster at once. Default: Envoy's (1024).
    /// ContourConfiguration: spec.envoy.cluster.circuitBreakers.maxRequests.
    #[serde(default, rename = "max-requests")]
    pub max_requests: Option<u32>,
    /// Retries to a cluster at once. Default: Envoy's (3).
    /// ContourConfiguration: spec.envoy.cluster.circuitBreakers.maxRetries.
    #[serde(default, rename = "max-retries")]
    pub max_retries: Option<u32>,
    /// Connections to one endpoint of a cluster at once. Default: unlimited.
    /// ContourConfiguration: spec.envoy.cluster.circuitBreakers.perHostMaxConnections.
    #[serde(default, rename = "per-host-max-connections")]
    pub per_host_max_connections: Option<u32>,
}

/// TLS versions and cipher suites (`cluster.upstream-tls`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProtocolParameters {
    /// The lowest TLS version towards backends, `1.2` or `1.3`. Default: `1.2`.
    /// ContourConfiguration: spec.envoy.cluster.upstreamTLS.minimumProtocolVersion.
    #[serde(default, rename = "minimum-protocol-version")]
    pub minimum_protocol_version: Option<String>,
    /// The highest TLS version towards backends, `1.2` or `1.3`; one below the minimum stops start-up.
    /// Default: `1.3`. ContourConfiguration: spec.envoy.cluster.upstreamTLS.maximumProtocolVersion.
    #[serde(default, rename = "maximum-protocol-version")]
    pub maximum_protocol_version: Option<String>,
    /// The TLS 1.2 cipher suites offered to backends, in order of preference, named as in
    /// `tls.cipher-suites`. Default: upstream's list of ECDHE suites with AEAD.
    /// ContourConfiguration: spec.envoy.cluster.upstreamTLS.cipherSuites.
    #[serde(default, rename = "cipher-suites")]
    pub cipher_suites: Option<Vec<String>>,
    /// The ECDH curves offered to backends, in order of preference. Default: Envoy's.
    /// ContourConfiguration: spec.envoy.cluster.upstreamTLS.ecdhCurves.
    #[serde(default, rename = "ecdh-curves")]
    pub ecdh_curves: Option<Vec<String>>,
}
