//! UDP listeners: Envoy's UDP proxy (`envoy.filters.udp_listener.udp_proxy`) sends each session
//! (a client's address and port) to one endpoint of the route's cluster, whose localities carry
//! the backends' weights.

use envoy_types::pb::envoy::config::core::v3::{Address, address, socket_address};
use envoy_types::pb::envoy::config::listener::v3::{Listener, ListenerFilter, UdpListenerConfig, listener_filter};
use envoy_types::pb::envoy::extensions::filters::udp::udp_proxy::v3::{Route, UdpProxyConfig, udp_proxy_config};
use envoy_types::pb::xds::core::v3::TypedExtensionConfig;
use envoy_types::pb::xds::r#type::matcher::v3::{Matcher, matcher};
use envoy_types::util::pack_any;

use crate::route::INVALID_BACKEND_CLUSTER;
use crate::transport::socket;

/// How long a session without datagrams is kept: Envoy's default, one minute.
const IDLE_TIMEOUT_MS: u64 = 60_000;

/// The listener of a UDP port: its datagrams go to `cluster` (or nowhere when no backend can
/// take them).
pub(crate) fn listener(name: &str, address: String, port: u16, cluster: Option<&str>) -> Listener {
    let route = Route { cluster: cluster.unwrap_or(INVALID_BACKEND_CLUSTER).to_string() };
    let proxy = UdpProxyConfig {
        stat_prefix: name.to_string(),
        idle_timeout: Some(crate::duration_ms(IDLE_TIMEOUT_MS)),
        route_specifier: Some(udp_proxy_config::RouteSpecifier::Matcher(Matcher {
            on_no_match: Some(Box::new(matcher::OnMatch {
                keep_matching: false,
                on_match: Some(matcher::on_match::OnMatch::Action(TypedExtensionConfig {
                    name: "route".into(),
                    typed_config: Some(pack_any(route)),
                })),
            })),
            matcher_type: None,
        })),
        ..Default::default()
    };
    Listener {
        name: name.to_string(),
        address: Some(udp(socket(address, port))),
        udp_listener_config: Some(UdpListenerConfig::default()),
        listener_filters: vec![ListenerFilter {
            name: "envoy.filters.udp_listener.udp_proxy".into(),
            config_type: Some(listener_filter::ConfigType::TypedConfig(pack_any(proxy))),
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// The same address, for UDP.
pub(crate) fn udp(mut address: Address) -> Address {
    if let Some(address::Address::SocketAddress(a)) = address.address.as_mut() {
        a.set_protocol(socket_address::Protocol::Udp);
    }
    address
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cluster the listener's UDP proxy sends sessions to.
    fn cluster_of(l: &Listener) -> String {
        let Some(listener_filter::ConfigType::TypedConfig(any)) = &l.listener_filters[0].config_type else {
            panic!("typed config");
        };
        let proxy: UdpProxyConfig = prost::Message::decode(any.value.as_slice()).expect("UdpProxyConfig");
        let Some(udp_proxy_config::RouteSpecifier::Matcher(m)) = proxy.route_specifier else { panic!("matcher") };
        let Some(matcher::on_match::OnMatch::Action(action)) = m.on_no_match.and_then(|o| o.on_match) else {
            panic!("an action on no match");
        };
        let route: Route =
            prost::Message::decode(action.typed_config.expect("config").value.as_slice()).expect("Route");
        route.cluster
    }

    #[test]
    fn a_udp_listener_proxies_every_session_to_its_cluster() {
        let l = listener("udp-5300", "127.0.0.1".into(), 5300, Some("udproute/ns/dns"));
        let Some(address::Address::SocketAddress(a)) = l.address.as_ref().and_then(|a| a.address.as_ref()) else {
            panic!("a socket address");
        };
        assert_eq!(a.protocol(), socket_address::Protocol::Udp);
        assert!(l.filter_chains.is_empty(), "a UDP listener has listener filters, no filter chains");
        assert!(l.udp_listener_config.is_some());
        assert_eq!(cluster_of(&l), "udproute/ns/dns");
    }

    #[test]
    fn without_a_backend_sessions_go_to_the_invalid_cluster() {
        assert_eq!(cluster_of(&listener("udp-53", "0.0.0.0".into(), 53, None)), INVALID_BACKEND_CLUSTER);
    }
}
