//! What clusters and listeners both build: socket addresses and TLS parameters.

use envoy_types::pb::envoy::config::core::v3::{Address, SocketAddress, address, socket_address};

use crate::settings::TlsOptions;

/// A TCP address. The IPv6 any address also takes IPv4 (`ipv4_compat`), as upstream sets it: a
/// listener on `::` serves both families.
pub(crate) fn socket(address: String, port: u16) -> Address {
    Address {
        address: Some(address::Address::SocketAddress(SocketAddress {
            ipv4_compat: address == "::",
            address,
            port_specifier: Some(socket_address::PortSpecifier::PortValue(u32::from(port))),
            ..Default::default()
        })),
    }
}

/// TLS versions from `min` to `max` (never below `min`), with the configured ciphers and curves.
pub(crate) fn tls_parameters(
    min: ir::TlsVersion,
    max: ir::TlsVersion,
    defaults: &TlsOptions,
) -> envoy_types::pb::envoy::extensions::transport_sockets::tls::v3::TlsParameters {
    use envoy_types::pb::envoy::extensions::transport_sockets::tls::v3::{TlsParameters, tls_parameters::TlsProtocol};
    let version = |v: ir::TlsVersion| {
        (match v {
            ir::TlsVersion::V1_2 => TlsProtocol::TlSv12,
            ir::TlsVersion::V1_3 => TlsProtocol::TlSv13,
        }) as i32
    };
    TlsParameters {
        tls_minimum_protocol_version: version(min),
        tls_maximum_protocol_version: version(max.max(min)),
        cipher_suites: defaults.cipher_suites.clone(),
        ecdh_curves: defaults.ecdh_curves.clone(),
        ..Default::default()
    }
}
