//! HTTP/3 over QUIC (a contour-rs extension): a UDP listener beside a TLS listener, on the same
//! port, with a filter chain for each terminating chain that serves HTTP/3. Each chain has the
//! same server names, certificates and route table as its TCP twin, so a request is routed the
//! same way over either; the TCP chain's responses carry `alt-svc` to advertise it.

use dag::DownstreamTls;
use envoy_types::pb::envoy::config::core::v3::{
    Http3ProtocolOptions, TransportSocket, UdpSocketConfig, transport_socket,
};
use envoy_types::pb::envoy::config::listener::v3::{
    FilterChain, FilterChainMatch, Listener, QuicProtocolOptions, UdpListenerConfig,
};
use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::{
    HttpConnectionManager, http_connection_manager,
};
use envoy_types::pb::envoy::extensions::transport_sockets::quic::v3::QuicDownstreamTransport;
use envoy_types::pb::envoy::extensions::transport_sockets::tls::v3::DownstreamTlsContext;
use envoy_types::pb::google::protobuf::BoolValue;
use envoy_types::util::pack_any;

use crate::settings::{Http3Options, TlsOptions};

/// Whether a terminating chain serves HTTP/3: its own setting or the installation's, and only
/// where QUIC can carry it (TLS 1.3 allowed, no client certificate asked for).
pub(crate) fn serves(tls: &DownstreamTls, settings: &Http3Options, defaults: &TlsOptions) -> bool {
    let max = tls.max_version.map_or(defaults.max_version, |v| v.min(defaults.max_version));
    tls.http3.unwrap_or(settings.enabled) && max == ir::TlsVersion::V1_3 && tls.client.is_none()
}

/// The port `alt-svc` names for a listener on `port`: the configured one for the default
/// fleet (upstream's Envoy listens on 8443 behind a Service's 443), the listener's own for a
/// Gateway's (its listeners name the ports clients use).
pub(crate) fn advertised(settings: &Http3Options, port: u16, default_fleet: bool) -> u16 {
    settings.advertised_port.filter(|_| default_fleet).unwrap_or(port)
}

/// A QUIC filter chain: the TCP chain's match, its TLS context (ALPN `h3`) in QUIC's transport
/// socket, and its connection manager speaking HTTP/3.
pub(crate) fn chain(
    filter_chain_match: Option<FilterChainMatch>,
    mut tls: DownstreamTlsContext,
    mut hcm: HttpConnectionManager,
) -> FilterChain {
    if let Some(common) = tls.common_tls_context.as_mut() {
        common.alpn_protocols = vec!["h3".into()];
    }
    hcm.codec_type = http_connection_manager::CodecType::Http3 as i32;
    hcm.http3_protocol_options = Some(Http3ProtocolOptions::default());
    // HTTP/1 and HTTP/2 settings say nothing to HTTP/3.
    hcm.http_protocol_options = None;
    hcm.http2_protocol_options = None;
    let transport = QuicDownstreamTransport { downstream_tls_context: Some(tls), ..Default::default() };
    FilterChain {
        filter_chain_match,
        filters: vec![crate::connection_manager_filter(hcm)],
        transport_socket: Some(TransportSocket {
            name: "envoy.transport_sockets.quic".into(),
            config_type: Some(transport_socket::ConfigType::TypedConfig(pack_any(transport))),
        }),
        ..Default::default()
    }
}

/// The UDP listener of a TLS port's QUIC chains, named after the TCP listener.
pub(crate) fn listener(tcp: &Listener, chains: Vec<FilterChain>) -> Listener {
    Listener {
        name: format!("{}-quic", tcp.name),
        address: tcp.address.clone().map(crate::udp::udp),
        udp_listener_config: Some(UdpListenerConfig {
            quic_options: Some(QuicProtocolOptions::default()),
            downstream_socket_config: Some(UdpSocketConfig {
                prefer_gro: Some(BoolValue { value: true }),
                ..Default::default()
            }),
            ..Default::default()
        }),
        filter_chains: chains,
        per_connection_buffer_limit_bytes: tcp.per_connection_buffer_limit_bytes,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http3_needs_tls_1_3_and_no_client_certificate() {
        let on = Http3Options { enabled: true, advertised_port: None };
        let defaults = TlsOptions::default();
        assert!(serves(&DownstreamTls::default(), &on, &defaults));
        assert!(!serves(&DownstreamTls::default(), &Http3Options::default(), &defaults), "off by default");
        let own = DownstreamTls { http3: Some(true), ..Default::default() };
        assert!(serves(&own, &Http3Options::default(), &defaults), "a host's own setting wins");
        let off = DownstreamTls { http3: Some(false), ..Default::default() };
        assert!(!serves(&off, &on, &defaults));
        let capped = DownstreamTls { max_version: Some(ir::TlsVersion::V1_2), ..own.clone() };
        assert!(!serves(&capped, &on, &defaults), "QUIC is TLS 1.3");
        let client = DownstreamTls {
            client: Some(dag::ClientAuth { validation: None, optional: false, forward: Default::default() }),
            ..own
        };
        assert!(!serves(&client, &on, &defaults));
        let behind_443 = Http3Options { enabled: true, advertised_port: Some(443) };
        assert_eq!(advertised(&behind_443, 8443, true), 443);
        assert_eq!(advertised(&behind_443, 8443, false), 8443, "a Gateway's listener port is its own");
        assert_eq!(advertised(&on, 8443, true), 8443);
    }
}
