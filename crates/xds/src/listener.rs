//! Listeners (LDS): one per port, HTTP connection managers over RDS, TLS chains chosen by SNI.

use dag::{DagListener, ListenerKind, RouteTable, TlsAction};
use envoy_types::pb::envoy::config::core::v3::{SocketOption, TransportSocket, socket_option, transport_socket};
use envoy_types::pb::envoy::config::listener::v3::listener::{ConnectionBalanceConfig, connection_balance_config};
use envoy_types::pb::envoy::config::listener::v3::{
    Filter, FilterChain, FilterChainMatch, Listener, ListenerFilter, filter, listener_filter,
};
use envoy_types::pb::envoy::extensions::filters::http::grpc_stats::v3::FilterConfig as GrpcStatsConfig;
use envoy_types::pb::envoy::extensions::filters::http::grpc_web::v3::GrpcWeb;
use envoy_types::pb::envoy::extensions::filters::http::router::v3::Router;
use envoy_types::pb::envoy::extensions::filters::listener::proxy_protocol::v3::ProxyProtocol;
use envoy_types::pb::envoy::extensions::filters::listener::tls_inspector::v3::TlsInspector;
use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::{
    HttpConnectionManager, HttpFilter, Rds, http_connection_manager, http_filter,
};
use envoy_types::pb::envoy::extensions::transport_sockets::tls::v3::{
    CommonTlsContext, DownstreamTlsContext, SdsSecretConfig,
};
use envoy_types::pb::google::protobuf::{BoolValue, UInt32Value};
use envoy_types::util::pack_any;

use crate::settings::{HttpVersion, ListenerOptions, ServerHeader, SocketOptions, Timeout, TlsOptions};
use crate::transport::{socket, tls_parameters};
use crate::{CompileOptions, Resource, ads};

/// The bootstrap's static cluster for Envoy's admin interface (`contour-bootstrap`'s name).
const ADMIN_CLUSTER: &str = "envoy-admin";

/// A route table a listener refers to, whether it goes over VHDS, and the port `alt-svc`
/// advertises HTTP/3 on, if it is served over QUIC too.
pub(crate) type TableUse<'a> = (&'a RouteTable, bool, Option<u16>);

/// The listener and the route tables it refers to, each with whether Delta streams get its
/// virtual hosts over VHDS: a plain-HTTP listener's table holds every host of its port, so one
/// host's change should not re-send them all; a TLS filter chain's table holds the few hosts of
/// its certificate, and VHDS would cost Envoy a stream per chain.
///
/// The default fleet's listeners report their statistics as upstream's do (`ingress_http`,
/// `ingress_https`), so upstream's dashboards keep working.
///
/// A TLS port whose terminating chains serve HTTP/3 gets a QUIC listener too; their tables
/// carry the port `alt-svc` advertises.
pub(crate) fn listener<'a>(
    l: &'a DagListener,
    options: &CompileOptions,
    fleet: &dag::FleetDag,
) -> (Vec<Resource>, Vec<TableUse<'a>>) {
    let default_fleet = fleet.id == ir::DEFAULT_FLEET;
    let stat_prefix = match (&l.kind, default_fleet) {
        (ListenerKind::Http(_), true) => "ingress_http",
        (ListenerKind::Tls(_), true) => "ingress_https",
        _ => l.name.as_str(),
    };
    let address = l.address.unwrap_or(options.default_address).to_string();
    if let ListenerKind::Udp(cluster) = &l.kind {
        return (
            vec![Resource::new(&l.name, crate::udp::listener(&l.name, address, l.port, cluster.as_deref()))],
            Vec::new(),
        );
    }
    let mut tables = Vec::new();
    let mut quic = Vec::new();
    // A UDPRoute's listener on the same port keeps it: no QUIC beside it.
    let udp_taken = fleet
        .listeners
        .iter()
        .any(|o| matches!(o.kind, ListenerKind::Udp(_)) && o.port == l.port && o.address == l.address);
    let settings = &options.listener;
    // The global authorization server checks the default fleet's requests (upstream's
    // listeners are the default fleet's).
    let global = options.global_authorization.clone().filter(|_| default_fleet);
    let rate_limit = options.rate_limit_service.as_ref().filter(|_| default_fleet);
    // Built once for the listener, not once per filter chain (a TLS port has one per host).
    let shared = Shared {
        filters: http_filters(settings),
        access_log: settings.access_log.loggers(matches!(l.kind, ListenerKind::Tls(_) | ListenerKind::Tcp(_))),
        // Spans go to the collector once its ExtensionService is valid (upstream refuses to
        // start without it; here traffic is served untraced until it is).
        tracing: options
            .tracing
            .as_ref()
            .filter(|_| default_fleet)
            .and_then(|t| Some(crate::tracer::config(t, fleet.extensions.get(&t.cluster)?))),
    };
    let mut message = Listener {
        name: l.name.clone(),
        address: Some(socket(address, l.port)),
        per_connection_buffer_limit_bytes: settings
            .per_connection_buffer_limit_bytes
            .map(|value| UInt32Value { value }),
        socket_options: socket_options(&settings.socket_options),
        max_connections_to_accept_per_socket_event: settings
            .max_connections_to_accept_per_socket_event
            .map(|value| UInt32Value { value }),
        connection_balance_config: settings.exact_connection_balancer.then(|| ConnectionBalanceConfig {
            balance_type: Some(connection_balance_config::BalanceType::ExactBalance(Default::default())),
        }),
        ..Default::default()
    };
    if settings.use_proxy_protocol {
        message.listener_filters.push(ListenerFilter {
            name: "envoy.filters.listener.proxy_protocol".into(),
            config_type: Some(listener_filter::ConfigType::TypedConfig(pack_any(ProxyProtocol::default()))),
            ..Default::default()
        });
    }
    match &l.kind {
        ListenerKind::Http(table) => {
            message.filter_chains.push(FilterChain {
                filters: vec![crate::connection_manager_filter(connection_manager(
                    stat_prefix,
                    &table.name,
                    Default::default(),
                    Checks {
                        pre_routing: &table.pre_routing,
                        oidc: None,
                        error_pages: uses_error_pages(table),
                        authorization: global.as_ref(),
                        jwt_providers: &[],
                        rate_limit,
                        geoip: options.geoip.as_ref().filter(|_| uses_geo(table)),
                    },
                    options,
                    &shared,
                ))],
                ..Default::default()
            });
            tables.push((table, true, None));
        }
        ListenerKind::Tls(chains) => {
            message.listener_filters.push(ListenerFilter {
                name: "envoy.filters.listener.tls_inspector".into(),
                config_type: Some(listener_filter::ConfigType::TypedConfig(pack_any(TlsInspector {
                    enable_ja3_fingerprinting: settings.tls.ja3_fingerprint.then_some(BoolValue { value: true }),
                    enable_ja4_fingerprinting: settings.tls.ja4_fingerprint.then_some(BoolValue { value: true }),
                    ..Default::default()
                }))),
                ..Default::default()
            });
            for chain in chains {
                let filter_chain_match =
                    Some(FilterChainMatch { server_names: chain.server_names.clone(), ..Default::default() });
                let fc = match &chain.action {
                    TlsAction::Terminate { secrets, settings: tls, routes } => {
                        let http3 = crate::http3::serves(tls, &settings.http3, &settings.tls) && !udp_taken;
                        let alt_svc = http3.then(|| crate::http3::advertised(&settings.http3, l.port, default_fleet));
                        tables.push((routes, false, alt_svc));
                        let forward = tls.client.as_ref().map(|c| c.forward).unwrap_or_default();
                        // The chain of a host with an authorization server checks its requests.
                        let authorization = routes
                            .virtual_hosts
                            .iter()
                            .find_map(|vh| vh.policy.as_ref().and_then(|p| p.authorization.as_ref()))
                            .or(global.as_ref());
                        let jwt_providers = routes
                            .virtual_hosts
                            .iter()
                            .find_map(|vh| {
                                vh.policy.as_ref().map(|p| p.jwt_providers.as_slice()).filter(|p| !p.is_empty())
                            })
                            .unwrap_or_default();
                        let oidc =
                            routes.virtual_hosts.iter().find_map(|vh| vh.policy.as_ref().and_then(|p| p.oidc.as_ref()));
                        let hcm = connection_manager(
                            stat_prefix,
                            &routes.name,
                            forward,
                            Checks {
                                pre_routing: &routes.pre_routing,
                                oidc,
                                error_pages: uses_error_pages(routes),
                                authorization,
                                jwt_providers,
                                rate_limit,
                                geoip: options.geoip.as_ref().filter(|_| uses_geo(routes)),
                            },
                            options,
                            &shared,
                        );
                        let context = downstream_context(secrets, tls, &settings.tls, alpn(settings));
                        if http3 {
                            quic.push(crate::http3::chain(filter_chain_match.clone(), context.clone(), hcm.clone()));
                        }
                        FilterChain {
                            filter_chain_match,
                            filters: vec![crate::connection_manager_filter(hcm)],
                            transport_socket: Some(tls_socket(context)),
                            ..Default::default()
                        }
                    }
                    TlsAction::TerminateTcp { secrets, settings: tls, backends } => FilterChain {
                        filter_chain_match,
                        filters: vec![crate::tcp::proxy(stat_prefix, backends, &shared.access_log)],
                        transport_socket: Some(downstream_tls(secrets, tls, &settings.tls, Vec::new())),
                        ..Default::default()
                    },
                    TlsAction::Passthrough { backends } => FilterChain {
                        filter_chain_match,
                        filters: vec![crate::tcp::proxy(stat_prefix, backends, &shared.access_log)],
                        ..Default::default()
                    },
                };
                message.filter_chains.push(fc);
            }
        }
        ListenerKind::Tcp(backends) => message.filter_chains.push(FilterChain {
            filters: vec![crate::tcp::proxy(stat_prefix, backends, &shared.access_log)],
            ..Default::default()
        }),
        // Compiled apart above: a UDP listener has no filter chains.
        ListenerKind::Udp(_) => {}
    }
    let mut out = Vec::new();
    if !quic.is_empty() {
        let udp = crate::http3::listener(&message, quic);
        out.push(Resource::new(&udp.name.clone(), udp));
    }
    out.insert(0, Resource::new(&l.name, message));
    (out, tables)
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
    let mut add = |name: &str,
                   address: std::net::SocketAddr,
                   routes: Vec<r::Route>,
                   enforced: bool,
                   tls: Option<&crate::MetricsTls>| {
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
            filter_chains: vec![FilterChain {
                filters: vec![filter],
                transport_socket: tls.map(metrics_tls),
                ..Default::default()
            }],
            // Probes and scrapes must still answer when the overload manager's connection
            // limit is reached by traffic (except on the listener meant to show that limit).
            ignore_global_conn_limit: !enforced,
            ..Default::default()
        };
        out.push(Resource::new(name, listener));
    };
    let stats = || route(Prefix("/stats".into()));
    let metrics = options.metrics_listener.as_ref().map(|m| (at(m.address), m.tls.as_ref()));
    match (options.stats_listener.map(at), metrics) {
        // As upstream: statistics on their own address or over HTTPS, readiness apart.
        (health, Some((address, tls))) if tls.is_some() || health != Some(address) => {
            add("stats", address, vec![stats()], false, tls);
            if let Some(health) = health {
                add("health", health, vec![route(Path("/ready".into()))], false, None);
            }
        }
        (Some(address), _) => {
            add("stats-health", address, vec![route(Path("/ready".into())), stats()], false, None);
        }
        (None, _) => {}
    }
    if let Some(address) = options.admin_listener.map(at) {
        let pages =
            ["/certs", "/clusters", "/listeners", "/config_dump", "/memory", "/ready", "/runtime", "/server_info"];
        let mut routes: Vec<r::Route> = pages.iter().map(|p| route(Path((*p).into()))).collect();
        routes.push(route(Prefix("/stats".into())));
        add("envoy-admin", address, routes, false, None);
    }
    if let Some(address) = options.om_enforced_health_listener.map(at) {
        add("health-om-enforced", address, vec![route(Path("/ready".into()))], true, None);
    }
    out
}

/// The request checks of one connection manager: an authorization server, JWT providers, the
/// global rate limit, the location lookup.
struct Checks<'a> {
    /// The listeners' checks before a route is chosen (Gateway API listener filters).
    pre_routing: &'a [dag::PreRouting],
    /// The virtual host's OpenID Connect login.
    oidc: Option<&'a ir::Oidc>,
    /// A host or route has error pages.
    error_pages: bool,
    authorization: Option<&'a ir::Authorization>,
    jwt_providers: &'a [ir::JwtProvider],
    rate_limit: Option<&'a crate::RateLimitService>,
    /// The GeoIP databases, when a route of the connection manager has location rules.
    geoip: Option<&'a ir::GeoDatabases>,
}

impl Checks<'_> {
    /// The listener's filters with the location lookup first (RBAC reads its headers) and the
    /// checks just before the router: the OpenID login (ours), JWT, authorization, the global
    /// rate limit (upstream's order).
    fn filters(&self, shared: &[HttpFilter]) -> Vec<HttpFilter> {
        let mut filters: Vec<HttpFilter> = self.geoip.map(crate::geoip::filters).into_iter().flatten().collect();
        // Before every filter that reads the route: they run before a route is chosen.
        filters.extend(self.pre_routing.iter().map(crate::ext_authz::pre_routing_filter));
        filters.extend_from_slice(shared);
        if self.error_pages {
            // Before every filter but the compressor: pages replace answers before they are
            // compressed, every later filter's own included (a local reply goes back through
            // the filters before the one that sent it).
            let at = filters.iter().position(|f| f.name == crate::compression::NAME).map_or(0, |i| i + 1);
            filters.insert(at, crate::custom_response::filter());
        }
        let router = filters.pop();
        // The login first: the checks after it see the session's token.
        if let Some(oidc) = self.oidc {
            filters.push(crate::oauth2::filter(oidc));
        }
        if !self.jwt_providers.is_empty() {
            filters.push(crate::jwt::filter(self.jwt_providers));
        }
        if let Some(a) = self.authorization {
            filters.push(crate::ext_authz::filter(a));
        }
        if let Some(service) = self.rate_limit {
            filters.push(crate::ratelimit::global_filter(service));
        }
        filters.extend(router);
        filters
    }
}

/// Whether a virtual host or route of a route table has error pages: only then does its
/// connection manager get the custom response filter (Envoy calls it work in progress, and says
/// so in its log), so a table without them is served as upstream's. On a TLS port each host's
/// chain has its own; a host's first page changes its chain alone.
fn uses_error_pages(table: &RouteTable) -> bool {
    table.virtual_hosts.iter().any(|vh| {
        vh.policy.as_ref().is_some_and(|p| !p.error_pages.is_empty())
            || vh.routes.iter().any(|r| !r.policy.error_pages.is_empty())
    })
}

/// Whether a virtual host or route of a route table has location rules.
fn uses_geo(table: &RouteTable) -> bool {
    let geo = |f: Option<&ir::IpFilter>| f.is_some_and(|f| !f.geo.is_empty());
    table.virtual_hosts.iter().any(|vh| {
        geo(vh.policy.as_ref().and_then(|p| p.ip_filter.as_ref()))
            || vh.routes.iter().any(|r| geo(r.policy.ip_filter.as_ref()))
    })
}

/// What every connection manager and TCP proxy of one listener has in common.
struct Shared {
    /// The HTTP filters, router last.
    filters: Vec<HttpFilter>,
    /// The access loggers (the HTTP or the HTTPS file, by the listener).
    access_log: Vec<envoy_types::pb::envoy::config::accesslog::v3::AccessLog>,
    /// Where spans go, if anywhere.
    tracing: Option<http_connection_manager::Tracing>,
}

fn connection_manager(
    stat_prefix: &str,
    route_config_name: &str,
    forward: ir::ForwardClientCert,
    checks: Checks<'_>,
    options: &CompileOptions,
    shared: &Shared,
) -> HttpConnectionManager {
    use envoy_types::pb::envoy::config::core::v3::{Http1ProtocolOptions, Http2ProtocolOptions, HttpProtocolOptions};
    use http_connection_manager::{ForwardClientCertDetails, ServerHeaderTransformation, SetCurrentClientCertDetails};
    let settings = &options.listener;
    let any = forward.subject || forward.cert || forward.chain || forward.dns || forward.uri;
    let timeouts = &settings.timeouts;
    let max_connection_duration = match timeouts.max_connection_duration {
        // Upstream leaves the connection's lifetime unlimited for `infinity` as for the default.
        Timeout::Disabled => None,
        t => t.proto(),
    };
    HttpConnectionManager {
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
        codec_type: codec(&settings.http_versions) as i32,
        route_specifier: Some(http_connection_manager::RouteSpecifier::Rds(Rds {
            config_source: Some(ads()),
            route_config_name: route_config_name.to_string(),
        })),
        http_filters: checks.filters(&shared.filters),
        access_log: shared.access_log.clone(),
        tracing: shared.tracing.clone(),
        common_http_protocol_options: Some(HttpProtocolOptions {
            idle_timeout: timeouts.connection_idle.proto(),
            max_connection_duration,
            max_requests_per_connection: settings.max_requests_per_connection.map(|value| UInt32Value { value }),
            ..Default::default()
        }),
        http_protocol_options: Some(Http1ProtocolOptions {
            // HTTP/1.0 requests with a Host header are served, as upstream serves them.
            accept_http_10: true,
            allow_chunked_length: settings.allow_chunked_length,
            ..Default::default()
        }),
        http2_protocol_options: settings.http2_max_concurrent_streams.map(|value| Http2ProtocolOptions {
            max_concurrent_streams: Some(UInt32Value { value }),
            ..Default::default()
        }),
        request_timeout: timeouts.request.proto(),
        stream_idle_timeout: timeouts.stream_idle.proto(),
        drain_timeout: timeouts.connection_shutdown_grace_period.proto(),
        delayed_close_timeout: timeouts.delayed_close.proto(),
        server_header_transformation: match settings.server_header {
            ServerHeader::Overwrite => ServerHeaderTransformation::Overwrite,
            ServerHeader::AppendIfAbsent => ServerHeaderTransformation::AppendIfAbsent,
            ServerHeader::PassThrough => ServerHeaderTransformation::PassThrough,
        } as i32,
        normalize_path: Some(BoolValue { value: true }),
        merge_slashes: options.merge_slashes,
        use_remote_address: Some(BoolValue { value: true }),
        xff_num_trusted_hops: settings.xff_num_trusted_hops,
        strip_trailing_host_dot: settings.strip_trailing_host_dot,
        // A client's X-Request-Id is kept, as upstream keeps it.
        preserve_external_request_id: true,
        // Virtual hosts name bare hostnames; a Host header with a port still matches them
        // (the route configuration ignores the port) and reaches the backend unchanged.
        ..Default::default()
    }
}

/// Upstream's filters of every HTTP connection manager, in its order: the compressor, (error pages,
/// ours, where a host has some), gRPC-Web,
/// gRPC statistics, CORS, the local rate limiter, Lua (cookie rewriting), RBAC (IP filters),
/// then the router. The policy filters are inert until a virtual host or route configures them,
/// so a listener's bytes do not change when the first policy appears (which would drain it).
fn http_filters(settings: &ListenerOptions) -> Vec<HttpFilter> {
    let typed = crate::http_filter;
    let mut filters: Vec<HttpFilter> = crate::compression::filter(settings.compression).into_iter().collect();
    filters.push(typed("envoy.filters.http.grpc_web", pack_any(GrpcWeb::default())));
    filters.push(typed(
        "envoy.filters.http.grpc_stats",
        pack_any(GrpcStatsConfig { emit_filter_state: true, enable_upstream_stats: true, ..Default::default() }),
    ));
    filters.push(crate::cors::filter());
    filters.push(crate::ratelimit::local_filter());
    filters.push(crate::lua::filter());
    filters.push(crate::rbac::filter());
    filters.push(typed("envoy.filters.http.router", pack_any(Router::default())));
    filters
}

/// One HTTP version is spoken alone; both (or none named) are told apart per connection.
fn codec(versions: &[HttpVersion]) -> http_connection_manager::CodecType {
    use http_connection_manager::CodecType;
    match versions {
        [HttpVersion::Http1] => CodecType::Http1,
        [HttpVersion::Http2] => CodecType::Http2,
        _ => CodecType::Auto,
    }
}

/// The ALPN protocols a TLS listener offers for HTTP, in order of preference.
fn alpn(settings: &ListenerOptions) -> Vec<String> {
    let has = |v| settings.http_versions.is_empty() || settings.http_versions.contains(&v);
    let mut out = Vec::new();
    if has(HttpVersion::Http2) {
        out.push("h2".to_string());
    }
    if has(HttpVersion::Http1) {
        out.push("http/1.1".to_string());
    }
    out
}

/// Upstream's TCP keep-alive on every accepted connection, then the configured TOS and traffic
/// class.
fn socket_options(settings: &SocketOptions) -> Vec<SocketOption> {
    // Linux: SOL_SOCKET/SO_KEEPALIVE, IPPROTO_TCP/TCP_KEEPIDLE, TCP_KEEPINTVL, TCP_KEEPCNT,
    // IPPROTO_IP/IP_TOS, IPPROTO_IPV6/IPV6_TCLASS.
    let option = |description: &str, level: i64, name: i64, value: i64| SocketOption {
        description: description.into(),
        level,
        name,
        value: Some(socket_option::Value::IntValue(value)),
        state: socket_option::SocketState::StateListening as i32,
        ..Default::default()
    };
    let mut out = vec![
        option("Enable TCP keep-alive", 1, 9, 1),
        option("TCP keep-alive initial idle time", 6, 4, 45),
        option("TCP keep-alive time between probes", 6, 5, 5),
        option("TCP keep-alive probe count", 6, 6, 9),
    ];
    if settings.tos != 0 {
        out.push(option("Set IPv4 TOS field", 0, 1, settings.tos.into()));
    }
    if settings.traffic_class != 0 {
        out.push(option("Set IPv6 Traffic Class field", 41, 67, settings.traffic_class.into()));
    }
    out
}

/// HTTPS of the statistics listener, as upstream's: TLS 1.3, and a client certificate from the
/// CA when one is configured.
fn metrics_tls(tls: &crate::MetricsTls) -> TransportSocket {
    use envoy_types::pb::envoy::extensions::transport_sockets::tls::v3::tls_parameters::TlsProtocol;
    use envoy_types::pb::envoy::extensions::transport_sockets::tls::v3::{TlsParameters, common_tls_context};
    let sds = |name: &str| SdsSecretConfig { name: name.into(), sds_config: Some(ads()) };
    let context = DownstreamTlsContext {
        common_tls_context: Some(CommonTlsContext {
            tls_params: Some(TlsParameters {
                tls_minimum_protocol_version: TlsProtocol::TlSv13 as i32,
                tls_maximum_protocol_version: TlsProtocol::TlSv13 as i32,
                ..Default::default()
            }),
            tls_certificate_sds_secret_configs: vec![sds(crate::secret::METRICS_CERTIFICATE)],
            validation_context_type: tls.ca_file.as_ref().map(|_| {
                common_tls_context::ValidationContextType::ValidationContextSdsSecretConfig(sds(
                    crate::secret::METRICS_CA,
                ))
            }),
            ..Default::default()
        }),
        require_client_certificate: tls.ca_file.as_ref().map(|_| BoolValue { value: true }),
        ..Default::default()
    };
    tls_socket(context)
}

/// A TLS chain's context: the chain's own versions within the configured range, the
/// configured ciphers and curves, and `alpn` for HTTP.
fn downstream_tls(
    secrets: &[String],
    settings: &dag::DownstreamTls,
    defaults: &TlsOptions,
    alpn: Vec<String>,
) -> TransportSocket {
    tls_socket(downstream_context(secrets, settings, defaults, alpn))
}

/// A TLS context in Envoy's TLS transport socket.
fn tls_socket(context: DownstreamTlsContext) -> TransportSocket {
    TransportSocket {
        name: "envoy.transport_sockets.tls".into(),
        config_type: Some(transport_socket::ConfigType::TypedConfig(pack_any(context))),
    }
}

fn downstream_context(
    secrets: &[String],
    settings: &dag::DownstreamTls,
    defaults: &TlsOptions,
    alpn: Vec<String>,
) -> DownstreamTlsContext {
    use envoy_types::pb::envoy::extensions::transport_sockets::tls::v3::{
        CertificateValidationContext, certificate_validation_context, common_tls_context,
    };
    // As upstream: the higher of the two minimums, the lower of the two maximums.
    let min = settings.min_version.map_or(defaults.min_version, |v| v.max(defaults.min_version));
    let max = settings.max_version.map_or(defaults.max_version, |v| v.min(defaults.max_version));
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
    DownstreamTlsContext {
        common_tls_context: Some(CommonTlsContext {
            tls_params: Some(tls_parameters(min, max, defaults)),
            tls_certificate_sds_secret_configs: secrets
                .iter()
                .map(|name| SdsSecretConfig { name: name.clone(), sds_config: Some(ads()) })
                .collect(),
            alpn_protocols: alpn,
            validation_context_type,
            ..Default::default()
        }),
        require_client_certificate: client.map(|c| BoolValue { value: !c.optional }),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests;
