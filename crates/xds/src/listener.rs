//! Listeners (LDS): one per port, HTTP connection managers over RDS, TLS chains chosen by SNI.

use dag::{DagListener, ListenerKind, RouteTable, TlsAction};
use envoy_types::pb::envoy::config::core::v3::{TransportSocket, transport_socket};
use envoy_types::pb::envoy::config::listener::v3::{
    Filter, FilterChain, FilterChainMatch, Listener, ListenerFilter, filter, listener_filter,
};
use envoy_types::pb::envoy::extensions::filters::http::router::v3::Router;
use envoy_types::pb::envoy::extensions::filters::listener::tls_inspector::v3::TlsInspector;
use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::{
    HttpConnectionManager, HttpFilter, Rds, http_connection_manager, http_filter,
};
use envoy_types::pb::envoy::extensions::filters::network::tcp_proxy::v3::{TcpProxy, tcp_proxy};
use envoy_types::pb::envoy::extensions::transport_sockets::tls::v3::{
    CommonTlsContext, DownstreamTlsContext, SdsSecretConfig,
};
use envoy_types::pb::google::protobuf::BoolValue;
use envoy_types::util::pack_any;

use crate::cluster::socket;
use crate::route::INVALID_BACKEND_CLUSTER;
use crate::{CompileOptions, Resource, ads};

/// The bootstrap's static cluster for Envoy's admin interface (`contour-bootstrap`'s name).
const ADMIN_CLUSTER: &str = "envoy-admin";

/// The listener and the route tables it refers to, each with whether Delta streams get its
/// virtual hosts over VHDS: a plain-HTTP listener's table holds every host of its port, so one
/// host's change should not re-send them all; a TLS filter chain's table holds the few hosts of
/// its certificate, and VHDS would cost Envoy a stream per chain.
pub(crate) fn listener<'a>(l: &'a DagListener, options: &CompileOptions) -> (Resource, Vec<(&'a RouteTable, bool)>) {
    let address = l.address.unwrap_or(options.default_address).to_string();
    let mut tables = Vec::new();
    let mut message = Listener { name: l.name.clone(), address: Some(socket(address, l.port)), ..Default::default() };
    match &l.kind {
        ListenerKind::Http(table) => {
            message.filter_chains.push(FilterChain {
                filters: vec![http_connection_manager(&l.name, &table.name, Default::default(), options)],
                ..Default::default()
            });
            tables.push((table, true));
        }
        ListenerKind::Tls(chains) => {
            message.listener_filters.push(ListenerFilter {
                name: "envoy.filters.listener.tls_inspector".into(),
                config_type: Some(listener_filter::ConfigType::TypedConfig(pack_any(TlsInspector::default()))),
                ..Default::default()
            });
            for chain in chains {
                let filter_chain_match =
                    Some(FilterChainMatch { server_names: chain.server_names.clone(), ..Default::default() });
                let fc = match &chain.action {
                    TlsAction::Terminate { secrets, settings, routes } => {
                        tables.push((routes, false));
                        let forward = settings.client.as_ref().map(|c| c.forward).unwrap_or_default();
                        FilterChain {
                            filter_chain_match,
                            filters: vec![http_connection_manager(&l.name, &routes.name, forward, options)],
                            transport_socket: Some(downstream_tls(secrets, settings, true)),
                            ..Default::default()
                        }
                    }
                    TlsAction::TerminateTcp { secrets, settings, backends } => FilterChain {
                        filter_chain_match,
                        filters: vec![tcp_proxy(&l.name, backends)],
                        transport_socket: Some(downstream_tls(secrets, settings, false)),
                        ..Default::default()
                    },
                    TlsAction::Passthrough { backends } => FilterChain {
                        filter_chain_match,
                        filters: vec![tcp_proxy(&l.name, backends)],
                        ..Default::default()
                    },
                };
                message.filter_chains.push(fc);
            }
        }
    }
    (Resource::new(&l.name, message), tables)
}

/// Envoy's own listeners, as upstream serves them: `stats-health` (`/ready` and `/stats...`) and
/// `envoy-admin` (read-only admin pages on loopback), both forwarding to Envoy's admin
/// interface through the bootstrap's static `envoy-admin` cluster. A fleet with an address of
/// its own (one Envoy per Gateway on a shared host) serves them on that address, at the
/// configured ports, so its Envoys do not collide with other fleets'.
pub(crate) fn envoy_listeners(options: &CompileOptions, fleet_address: Option<std::net::IpAddr>) -> Vec<Resource> {
    let at = |a: std::net::SocketAddr| fleet_address.map_or(a, |ip| std::net::SocketAddr::new(ip, a.port()));
    use envoy_types::pb::envoy::config::route::v3 as r;
    let route = |matcher: r::route_match::PathSpecifier| r::Route {
        r#match: Some(r::RouteMatch {
            path_specifier: Some(matcher),
            headers: vec![r::HeaderMatcher {
                name: ":method".into(),
                header_match_specifier: Some(r::header_matcher::HeaderMatchSpecifier::StringMatch(
                    envoy_types::pb::envoy::r#type::matcher::v3::StringMatcher {
                        match_pattern: Some(
                            envoy_types::pb::envoy::r#type::matcher::v3::string_matcher::MatchPattern::Exact(
                                "GET".into(),
                            ),
                        ),
                        ..Default::default()
                    },
                )),
                ..Default::default()
            }],
            ..Default::default()
        }),
        action: Some(r::route::Action::Route(r::RouteAction {
            cluster_specifier: Some(r::route_action::ClusterSpecifier::Cluster(ADMIN_CLUSTER.into())),
            ..Default::default()
        })),
        ..Default::default()
    };
    use r::route_match::PathSpecifier::{Path, Prefix};
    let mut out = Vec::new();
    let mut add = |name: &str, address: std::net::SocketAddr, routes: Vec<r::Route>| {
        let table = r::RouteConfiguration {
            name: name.into(),
            virtual_hosts: vec![r::VirtualHost {
                name: name.into(),
                domains: vec!["*".into()],
                routes,
                ..Default::default()
            }],
            ..Default::default()
        };
        let hcm = HttpConnectionManager {
            stat_prefix: name.into(),
            codec_type: http_connection_manager::CodecType::Auto as i32,
            route_specifier: Some(http_connection_manager::RouteSpecifier::RouteConfig(table)),
            http_filters: vec![HttpFilter {
                name: "envoy.filters.http.router".into(),
                config_type: Some(http_filter::ConfigType::TypedConfig(pack_any(Router::default()))),
                ..Default::default()
            }],
            normalize_path: Some(BoolValue { value: true }),
            ..Default::default()
        };
        let filter = Filter {
            name: "envoy.filters.network.http_connection_manager".into(),
            config_type: Some(filter::ConfigType::TypedConfig(pack_any(hcm))),
        };
        let listener = Listener {
            name: name.into(),
            address: Some(socket(address.ip().to_string(), address.port())),
            filter_chains: vec![FilterChain { filters: vec![filter], ..Default::default() }],
            // Probes and scrapes must still answer when the overload manager's connection
            // limit is reached by traffic.
            ignore_global_conn_limit: true,
            ..Default::default()
        };
        out.push(Resource::new(name, listener));
    };
    if let Some(address) = options.stats_listener.map(at) {
        add("stats-health", address, vec![route(Path("/ready".into())), route(Prefix("/stats".into()))]);
    }
    if let Some(address) = options.admin_listener.map(at) {
        let pages =
            ["/certs", "/clusters", "/listeners", "/config_dump", "/memory", "/ready", "/runtime", "/server_info"];
        let mut routes: Vec<r::Route> = pages.iter().map(|p| route(Path((*p).into()))).collect();
        routes.push(route(Prefix("/stats".into())));
        add("envoy-admin", address, routes);
    }
    out
}

fn http_connection_manager(
    stat_prefix: &str,
    route_config_name: &str,
    forward: ir::ForwardClientCert,
    options: &CompileOptions,
) -> Filter {
    use http_connection_manager::{ForwardClientCertDetails, SetCurrentClientCertDetails};
    let any = forward.subject || forward.cert || forward.chain || forward.dns || forward.uri;
    let hcm = HttpConnectionManager {
        // Only what the virtual host asks for reaches the backend; a client-supplied header never does.
        forward_client_cert_details: if any {
            ForwardClientCertDetails::SanitizeSet as i32
        } else {
            ForwardClientCertDetails::Sanitize as i32
        },
        set_current_client_cert_details: any.then(|| SetCurrentClientCertDetails {
            subject: Some(BoolValue { value: forward.subject }),
            cert: forward.cert,
            chain: forward.chain,
            dns: forward.dns,
            uri: forward.uri,
            ..Default::default()
        }),
        stat_prefix: stat_prefix.to_string(),
        codec_type: http_connection_manager::CodecType::Auto as i32,
        route_specifier: Some(http_connection_manager::RouteSpecifier::Rds(Rds {
            config_source: Some(ads()),
            route_config_name: route_config_name.to_string(),
        })),
        http_filters: vec![HttpFilter {
            name: "envoy.filters.http.router".into(),
            config_type: Some(http_filter::ConfigType::TypedConfig(pack_any(Router::default()))),
            ..Default::default()
        }],
        normalize_path: Some(BoolValue { value: true }),
        merge_slashes: options.merge_slashes,
        use_remote_address: Some(BoolValue { value: true }),
        // Virtual hosts name bare hostnames; a Host header with a port still matches them
        // (the route configuration ignores the port) and reaches the backend unchanged.
        ..Default::default()
    };
    Filter {
        name: "envoy.filters.network.http_connection_manager".into(),
        config_type: Some(filter::ConfigType::TypedConfig(pack_any(hcm))),
    }
}

fn downstream_tls(secrets: &[String], settings: &dag::DownstreamTls, http: bool) -> TransportSocket {
    use envoy_types::pb::envoy::extensions::transport_sockets::tls::v3::{
        CertificateValidationContext, TlsParameters, certificate_validation_context, common_tls_context,
        tls_parameters::TlsProtocol,
    };
    let version = |v: Option<ir::TlsVersion>, default: TlsProtocol| {
        (match v {
            Some(ir::TlsVersion::V1_2) => TlsProtocol::TlSv12,
            Some(ir::TlsVersion::V1_3) => TlsProtocol::TlSv13,
            None => default,
        }) as i32
    };
    let client = settings.client.as_ref();
    let validation_context_type = client.map(|c| match &c.validation {
        Some(name) => common_tls_context::ValidationContextType::ValidationContextSdsSecretConfig(SdsSecretConfig {
            name: name.clone(),
            sds_config: Some(ads()),
        }),
        // A certificate is asked for but not verified.
        None => common_tls_context::ValidationContextType::ValidationContext(CertificateValidationContext {
            trust_chain_verification: certificate_validation_context::TrustChainVerification::AcceptUntrusted as i32,
            ..Default::default()
        }),
    });
    let context = DownstreamTlsContext {
        common_tls_context: Some(CommonTlsContext {
            tls_params: Some(TlsParameters {
                tls_minimum_protocol_version: version(settings.min_version, TlsProtocol::TlSv12),
                tls_maximum_protocol_version: version(settings.max_version, TlsProtocol::TlSv13),
                ..Default::default()
            }),
            tls_certificate_sds_secret_configs: secrets
                .iter()
                .map(|name| SdsSecretConfig { name: name.clone(), sds_config: Some(ads()) })
                .collect(),
            alpn_protocols: if http { vec!["h2".into(), "http/1.1".into()] } else { Vec::new() },
            validation_context_type,
            ..Default::default()
        }),
        require_client_certificate: client.map(|c| BoolValue { value: !c.optional }),
        ..Default::default()
    };
    TransportSocket {
        name: "envoy.transport_sockets.tls".into(),
        config_type: Some(transport_socket::ConfigType::TypedConfig(pack_any(context))),
    }
}

fn tcp_proxy(stat_prefix: &str, backends: &[dag::WeightedCluster]) -> Filter {
    let live: Vec<_> = backends.iter().filter(|b| b.weight > 0).collect();
    let specifier = match live.as_slice() {
        [one] => {
            tcp_proxy::ClusterSpecifier::Cluster(one.cluster.clone().unwrap_or_else(|| INVALID_BACKEND_CLUSTER.into()))
        }
        many => tcp_proxy::ClusterSpecifier::WeightedClusters(tcp_proxy::WeightedCluster {
            clusters: many
                .iter()
                .map(|b| tcp_proxy::weighted_cluster::ClusterWeight {
                    name: b.cluster.clone().unwrap_or_else(|| INVALID_BACKEND_CLUSTER.into()),
                    weight: b.weight,
                    ..Default::default()
                })
                .collect(),
        }),
    };
    let proxy =
        TcpProxy { stat_prefix: stat_prefix.to_string(), cluster_specifier: Some(specifier), ..Default::default() };
    Filter {
        name: "envoy.filters.network.tcp_proxy".into(),
        config_type: Some(filter::ConfigType::TypedConfig(pack_any(proxy))),
    }
}
