use envoy_types::pb::envoy::extensions::transport_sockets::tls::v3::tls_parameters::TlsProtocol;

use super::*;

fn context(chain: &dag::DownstreamTls, defaults: &TlsOptions, alpn: Vec<String>) -> DownstreamTlsContext {
    let socket = downstream_tls(&["default/cert".into()], chain, defaults, alpn);
    let Some(transport_socket::ConfigType::TypedConfig(any)) = socket.config_type else { panic!("typed") };
    prost::Message::decode(any.value.as_slice()).unwrap()
}

/// As upstream: a listener on the IPv6 any address takes IPv4 too; others are as given.
#[test]
fn the_ipv6_any_address_takes_ipv4_too() {
    let compat = |a: &str| match socket(a.into(), 8080).address {
        Some(envoy_types::pb::envoy::config::core::v3::address::Address::SocketAddress(s)) => s.ipv4_compat,
        other => panic!("a socket address: {other:?}"),
    };
    assert!(compat("::"));
    assert!(!compat("0.0.0.0") && !compat("::1") && !compat("127.0.0.1"));
}

/// As upstream: the configured range bounds every chain's own, and the configured ciphers and
/// curves apply to all.
#[test]
fn tls_versions_narrow_and_ciphers_apply() {
    let defaults = TlsOptions {
        min_version: ir::TlsVersion::V1_2,
        max_version: ir::TlsVersion::V1_2,
        cipher_suites: vec!["ECDHE-RSA-AES256-GCM-SHA384".into()],
        ecdh_curves: vec!["X25519".into()],
        ..Default::default()
    };
    let chain = dag::DownstreamTls { min_version: Some(ir::TlsVersion::V1_3), ..Default::default() };
    let params = context(&chain, &defaults, Vec::new()).common_tls_context.unwrap().tls_params.unwrap();
    assert_eq!(params.tls_minimum_protocol_version, TlsProtocol::TlSv13 as i32, "the chain's higher minimum");
    assert_eq!(params.tls_maximum_protocol_version, TlsProtocol::TlSv13 as i32, "never below the minimum");
    assert_eq!(params.cipher_suites, ["ECDHE-RSA-AES256-GCM-SHA384"]);
    assert_eq!(params.ecdh_curves, ["X25519"]);
    let params = context(&Default::default(), &TlsOptions::default(), Vec::new())
        .common_tls_context
        .unwrap()
        .tls_params
        .unwrap();
    assert_eq!(
        (params.tls_minimum_protocol_version, params.tls_maximum_protocol_version),
        (TlsProtocol::TlSv12 as i32, TlsProtocol::TlSv13 as i32)
    );
    assert_eq!(params.cipher_suites.len(), 4, "upstream's defaults");
}

#[test]
fn alpn_follows_the_http_versions() {
    let with = |versions: Vec<HttpVersion>| alpn(&ListenerOptions { http_versions: versions, ..Default::default() });
    assert_eq!(with(vec![]), ["h2", "http/1.1"]);
    assert_eq!(with(vec![HttpVersion::Http1]), ["http/1.1"]);
    assert_eq!(with(vec![HttpVersion::Http1, HttpVersion::Http2]), ["h2", "http/1.1"]);
}
