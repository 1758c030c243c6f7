//! `listener` and `network`: the settings of Envoy's listeners and of its network.

use serde::Deserialize;

/// `listener:`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Listener {
    /// `exact` balances accepted connections exactly across Envoy's worker threads; empty keeps Envoy's
    /// balancing. Default: Envoy's. ContourConfiguration: spec.envoy.listener.connectionBalancer.
    #[serde(default, rename = "connection-balancer")]
    pub connection_balancer: Option<String>,
    /// A client connection is closed after this many requests; 0 stops start-up. Default: unlimited.
    /// ContourConfiguration: spec.envoy.listener.maxRequestsPerConnection.
    #[serde(default, rename = "max-requests-per-connection")]
    pub max_requests_per_connection: Option<u32>,
    /// The read and write buffer limit of each client connection, in bytes; 0 stops start-up.
    /// Default: Envoy's (1 MiB). ContourConfiguration: spec.envoy.listener.per-connection-buffer-limit-bytes.
    #[serde(default, rename = "per-connection-buffer-limit-bytes")]
    pub per_connection_buffer_limit_bytes: Option<u32>,
    /// IP socket options of accepted connections, beside upstream's TCP keep-alive, which is always on.
    /// ContourConfiguration: spec.envoy.listener.socketOptions.
    #[serde(default, rename = "socket-options")]
    pub socket_options: Option<SocketOptions>,
    /// Requests Envoy handles per I/O cycle: the runtime key `http.max_requests_per_io_cycle`, in the runtime
    /// layer `dynamic` served over RTDS (upstream's layer). 0 stops start-up. Default: Envoy's.
    /// ContourConfiguration: spec.envoy.listener.maxRequestsPerIOCycle.
    #[serde(default, rename = "max-requests-per-io-cycle")]
    pub max_requests_per_io_cycle: Option<u32>,
    /// Concurrent streams of one HTTP/2 client connection; 0 stops start-up. Default: Envoy's.
    /// ContourConfiguration: spec.envoy.listener.httpMaxConcurrentStreams.
    #[serde(default, rename = "http2-max-concurrent-streams")]
    pub http2_max_concurrent_streams: Option<u32>,
    /// Connections each traffic listener holds at most, in the same runtime layer; further ones are closed,
    /// and 0 stops start-up. Default: unlimited.
    /// ContourConfiguration: spec.envoy.listener.maxConnectionsPerListener.
    #[serde(default, rename = "max-connections-per-listener")]
    pub max_connections_per_listener: Option<u32>,
    /// Connections a listener accepts per socket event; 0 stops start-up. Default: Envoy's.
    /// ContourConfiguration: spec.envoy.listener.maxConnectionsToAcceptPerSocketEvent.
    #[serde(default, rename = "max-connections-to-accept-per-socket-event")]
    pub max_connections_to_accept_per_socket_event: Option<u32>,
    /// HTTP/3 over QUIC beside the TLS listeners' TCP, a contour-rs extension.
    /// ContourConfiguration: spec.envoy.listener.http3.
    #[serde(default)]
    pub http3: Option<Http3>,
}

/// `listener.http3` (a contour-rs extension).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Http3 {
    /// Every TLS-terminating virtual host serves HTTP/3 over QUIC too, unless its own setting (HTTPProxy
    /// `tls.http3`) says otherwise. Default: off. ContourConfiguration: spec.envoy.listener.http3.enabled.
    #[serde(default)]
    pub enabled: Option<bool>,
    /// The UDP port `alt-svc` names: the port clients reach, such as a Service's 443 in front of Envoy's
    /// 8443; 0 stops start-up. Default: the listener's own port.
    /// ContourConfiguration: spec.envoy.listener.http3.advertisedPort.
    #[serde(default, rename = "advertised-port")]
    pub advertised_port: Option<u16>,
}

/// `listener.socket-options`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SocketOptions {
    /// The IPv4 type of service (IP_TOS) of accepted connections, 0-255; 0 leaves it alone, and a value
    /// outside stops start-up. Default: unset. ContourConfiguration: spec.envoy.listener.socketOptions.tos.
    #[serde(default)]
    pub tos: Option<i32>,
    /// The IPv6 traffic class (IPV6_TCLASS) of accepted connections, 0-255; 0 leaves it alone, and a value
    /// outside stops start-up. Default: unset.
    /// ContourConfiguration: spec.envoy.listener.socketOptions.trafficClass.
    #[serde(default, rename = "traffic-class")]
    pub traffic_class: Option<i32>,
}

/// `network:`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Network {
    /// The number of proxies in front of Envoy whose X-Forwarded-For entries are trusted: the client's
    /// address is the entry before theirs. Default: `0`.
    /// ContourConfiguration: spec.envoy.network.numTrustedHops.
    #[serde(default, rename = "num-trusted-hops")]
    pub num_trusted_hops: Option<u32>,
    /// The port of Envoy's read-only admin listener, on loopback. Default: `9001`.
    /// ContourConfiguration: spec.envoy.network.adminPort.
    #[serde(default, rename = "admin-port")]
    pub admin_port: Option<u16>,
    /// Removes a trailing dot from the host before routing, so `www.example.com.` routes as
    /// `www.example.com`. Default: `false`. ContourConfiguration: spec.envoy.network.stripTrailingHostDot.
    #[serde(default, rename = "strip-trailing-host-dot")]
    pub strip_trailing_host_dot: Option<bool>,
}
