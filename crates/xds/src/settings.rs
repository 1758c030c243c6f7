//! Settings of the listeners that carry traffic, from contour.yaml, the ContourConfiguration and
//! `contour-serve`'s flags (resolved once by the binary), with upstream Contour's defaults.

use std::time::Duration;

use crate::accesslog::AccessLog;

/// How every traffic listener of every fleet is built.
#[derive(Debug, Clone, PartialEq)]
pub struct ListenerOptions {
    /// Access logs of HTTP, HTTPS and TCP proxying.
    pub access_log: AccessLog,
    /// The response compressor (`compression.algorithm`); gzip by default.
    pub compression: Compression,
    /// Accept HTTP/1.1 requests carrying both `Content-Length` and chunked encoding (the length
    /// is dropped), as upstream does unless `disableAllowChunkedLength` is set.
    pub allow_chunked_length: bool,
    /// What Envoy does with the backend's `Server` header.
    pub server_header: ServerHeader,
    /// Proxies in front of Envoy whose X-Forwarded-For entries are trusted
    /// (`network.num-trusted-hops`).
    pub xff_num_trusted_hops: u32,
    /// Remove a trailing dot from the Host header before routing.
    pub strip_trailing_host_dot: bool,
    /// Connection and stream timeouts.
    pub timeouts: Timeouts,
    /// The HTTP versions offered to clients (codec and ALPN); empty means both.
    pub http_versions: Vec<HttpVersion>,
    /// Requests a client connection may carry before Envoy closes it.
    pub max_requests_per_connection: Option<u32>,
    /// Concurrent streams of one HTTP/2 client connection.
    pub http2_max_concurrent_streams: Option<u32>,
    /// Read and write buffer limit of each client connection.
    pub per_connection_buffer_limit_bytes: Option<u32>,
    /// Balance accepted connections exactly across Envoy's worker threads.
    pub exact_connection_balancer: bool,
    /// IP_TOS (IPv4) and IPV6_TCLASS (IPv6) of accepted connections.
    pub socket_options: SocketOptions,
    /// Expect a PROXY protocol header (v1 or v2) on every connection.
    pub use_proxy_protocol: bool,
    /// Downstream TLS defaults.
    pub tls: TlsOptions,
    /// Requests Envoy handles per I/O cycle (runtime `http.max_requests_per_io_cycle`).
    pub max_requests_per_io_cycle: Option<u32>,
    /// Connections each traffic listener accepts at most (a runtime limit per listener).
    pub max_connections_per_listener: Option<u32>,
    /// Connections a listener accepts per socket event.
    pub max_connections_to_accept_per_socket_event: Option<u32>,
    /// Further Envoy runtime keys (`runtime-settings`), in the runtime layer after the limits.
    pub runtime: Vec<(String, RuntimeValue)>,
    /// HTTP/3 over QUIC (`listener.http3`, a contour-rs extension).
    pub http3: Http3Options,
}

/// HTTP/3 over QUIC beside the TLS listeners' TCP.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Http3Options {
    /// Every TLS-terminating virtual host serves HTTP/3 unless its own setting says otherwise.
    pub enabled: bool,
    /// The UDP port `alt-svc` names (the port clients reach, such as a Service's 443 in front
    /// of Envoy's 8443); `None`: the listener's own port.
    pub advertised_port: Option<u16>,
}

/// The value of an Envoy runtime key.
#[derive(Debug, Clone, PartialEq)]
pub enum RuntimeValue {
    /// `true` or `false`.
    Bool(bool),
    /// A number.
    Number(f64),
    /// Text.
    Text(String),
}

impl Default for ListenerOptions {
    fn default() -> Self {
        Self {
            access_log: AccessLog::default(),
            compression: Compression::Gzip,
            allow_chunked_length: true,
            server_header: ServerHeader::Overwrite,
            xff_num_trusted_hops: 0,
            strip_trailing_host_dot: false,
            timeouts: Timeouts::default(),
            http_versions: Vec::new(),
            max_requests_per_connection: None,
            http2_max_concurrent_streams: None,
            per_connection_buffer_limit_bytes: None,
            exact_connection_balancer: false,
            socket_options: SocketOptions::default(),
            use_proxy_protocol: false,
            tls: TlsOptions::default(),
            max_requests_per_io_cycle: None,
            max_connections_per_listener: None,
            max_connections_to_accept_per_socket_event: None,
            runtime: Vec::new(),
            http3: Http3Options::default(),
        }
    }
}

/// The compression library of the compressor filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
    /// gzip, upstream's default.
    #[default]
    Gzip,
    /// Brotli.
    Brotli,
    /// Zstandard.
    Zstd,
    /// No compressor filter.
    Disabled,
}

/// Envoy's `server_header_transformation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ServerHeader {
    /// `Server: envoy` on every response (upstream's default).
    #[default]
    Overwrite,
    /// Envoy's name only when the backend sent none.
    AppendIfAbsent,
    /// The backend's header, or none.
    PassThrough,
}

/// An HTTP version offered to clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpVersion {
    /// HTTP/1.1.
    Http1,
    /// HTTP/2.
    Http2,
}

/// One timeout, as upstream reads `timeouts.*`: empty keeps Envoy's default, `infinity` turns it
/// off, a duration sets it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Timeout {
    /// Envoy's own default.
    #[default]
    Default,
    /// No timeout.
    Disabled,
    /// This long.
    After(Duration),
}

impl Timeout {
    /// Reads upstream's form: `""` or `0s` is the default, `infinity`/`infinite` disables, and
    /// otherwise a Go duration (`30s`, `1m30s`). `None` when the text is none of these.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "" => Some(Self::Default),
            "infinity" | "infinite" => Some(Self::Disabled),
            _ => match duration::parse(text)? {
                d if d.is_zero() => Some(Self::Default),
                d => Some(Self::After(d)),
            },
        }
    }

    /// As a protobuf duration field: unset, zero (off), or the duration.
    pub(crate) fn proto(self) -> Option<envoy_types::pb::google::protobuf::Duration> {
        match self {
            Self::Default => None,
            Self::Disabled => Some(crate::duration_ms(0)),
            Self::After(d) => Some(crate::duration_ms(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))),
        }
    }
}

/// `timeouts.*` of the HTTP connection manager.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Timeouts {
    /// The whole request, from its first byte to the response's last.
    pub request: Timeout,
    /// A connection with no active stream.
    pub connection_idle: Timeout,
    /// A stream with no activity.
    pub stream_idle: Timeout,
    /// The longest a connection lives.
    pub max_connection_duration: Timeout,
    /// How long Envoy waits for the client to close after Envoy's response.
    pub delayed_close: Timeout,
    /// Between Envoy's GOAWAY (or `Connection: close`) and the close itself.
    pub connection_shutdown_grace_period: Timeout,
}

/// Socket options of accepted connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SocketOptions {
    /// IPv4 type of service (0 leaves it alone).
    pub tos: u8,
    /// IPv6 traffic class (0 leaves it alone).
    pub traffic_class: u8,
}

/// Downstream TLS defaults; a virtual host may narrow the versions further.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsOptions {
    /// The lowest version accepted.
    pub min_version: ir::TlsVersion,
    /// The highest version accepted.
    pub max_version: ir::TlsVersion,
    /// TLS 1.2 cipher suites, in order of preference (OpenSSL names, `[A|B]` groups allowed).
    pub cipher_suites: Vec<String>,
    /// ECDH curves; empty keeps Envoy's defaults.
    pub ecdh_curves: Vec<String>,
    /// The TLS inspector computes the client's JA3 fingerprint (`%TLS_JA3_FINGERPRINT%`).
    pub ja3_fingerprint: bool,
    /// The TLS inspector computes the client's JA4 fingerprint (`%TLS_JA4_FINGERPRINT%`).
    pub ja4_fingerprint: bool,
}

/// Upstream Contour's default TLS 1.2 cipher suites, in order of preference (`[a|b]` is a group
/// of equal preference): ECDHE with AEAD only.
pub const DEFAULT_CIPHER_SUITES: [&str; 4] = [
    "[ECDHE-ECDSA-AES128-GCM-SHA256|ECDHE-ECDSA-CHACHA20-POLY1305]",
    "[ECDHE-RSA-AES128-GCM-SHA256|ECDHE-RSA-CHACHA20-POLY1305]",
    "ECDHE-ECDSA-AES256-GCM-SHA384",
    "ECDHE-RSA-AES256-GCM-SHA384",
];

/// The cipher suites a user may name, as upstream allows them.
const VALID_CIPHER_SUITES: [&str; 14] = [
    "ECDHE-ECDSA-CHACHA20-POLY1305",
    "ECDHE-RSA-CHACHA20-POLY1305",
    "ECDHE-ECDSA-AES128-GCM-SHA256",
    "ECDHE-RSA-AES128-GCM-SHA256",
    "ECDHE-ECDSA-AES128-SHA",
    "ECDHE-RSA-AES128-SHA",
    "AES128-GCM-SHA256",
    "AES128-SHA",
    "ECDHE-ECDSA-AES256-GCM-SHA384",
    "ECDHE-RSA-AES256-GCM-SHA384",
    "ECDHE-ECDSA-AES256-SHA",
    "ECDHE-RSA-AES256-SHA",
    "AES256-GCM-SHA384",
    "AES256-SHA",
];

/// Whether `spec` is a cipher suite, or an `[a|b]` group of them, that Envoy accepts.
pub fn valid_cipher_suite(spec: &str) -> bool {
    let names = spec.strip_prefix('[').and_then(|s| s.strip_suffix(']')).unwrap_or(spec);
    names.split('|').all(|n| VALID_CIPHER_SUITES.contains(&n))
}

/// Cipher suites without repeats, in the order given; none given means upstream's defaults.
pub fn cipher_suites(given: &[String]) -> Vec<String> {
    if given.is_empty() {
        return DEFAULT_CIPHER_SUITES.iter().map(|s| s.to_string()).collect();
    }
    let mut out: Vec<String> = Vec::with_capacity(given.len());
    for c in given {
        if !out.contains(c) {
            out.push(c.clone());
        }
    }
    out
}

impl Default for TlsOptions {
    fn default() -> Self {
        Self {
            min_version: ir::TlsVersion::V1_2,
            max_version: ir::TlsVersion::V1_3,
            cipher_suites: cipher_suites(&[]),
            ecdh_curves: Vec::new(),
            ja3_fingerprint: false,
            ja4_fingerprint: false,
        }
    }
}

/// How every upstream cluster is built (`cluster.*`, `timeouts.connect-timeout`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterOptions {
    /// How long Envoy waits to connect to an endpoint (upstream's 2 s).
    pub connect_timeout: Duration,
    /// Which addresses a DNS name resolves to.
    pub dns_lookup_family: DnsLookupFamily,
    /// Requests an upstream connection carries before Envoy closes it.
    pub max_requests_per_connection: Option<u32>,
    /// Read and write buffer limit of each upstream connection.
    pub per_connection_buffer_limit_bytes: Option<u32>,
    /// Limits for clusters whose Service does not set its own (`projectcontour.io/max-*`).
    pub circuit_breakers: dag::CircuitBreakers,
    /// TLS towards backends: versions and cipher suites (curves are not used).
    pub upstream_tls: TlsOptions,
    /// Passive health checks of every HTTPProxy service that names none
    /// (`cluster.outlier-detection`, a contour-rs extension), applied by the front end.
    pub default_outlier_detection: Option<ir::OutlierDetection>,
}

impl Default for ClusterOptions {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(2),
            dns_lookup_family: DnsLookupFamily::Auto,
            max_requests_per_connection: None,
            per_connection_buffer_limit_bytes: None,
            circuit_breakers: dag::CircuitBreakers::default(),
            upstream_tls: TlsOptions::default(),
            default_outlier_detection: None,
        }
    }
}

/// `cluster.dns-lookup-family`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DnsLookupFamily {
    /// IPv6 first, then IPv4 (Envoy's and upstream's default).
    #[default]
    Auto,
    /// IPv4 only.
    V4,
    /// IPv6 only.
    V6,
    /// Both.
    All,
}
