use super::*;
use envoy_types::pb::envoy::config::route::v3::RouteConfiguration;

mod policies;

const FIXTURE: &str = r#"
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: contour}
spec: {controllerName: projectcontour.io/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw}
spec:
  gatewayClassName: contour
  listeners: [{name: http, port: 8080, protocol: HTTP}, {name: admin, port: 9090, protocol: HTTP}]
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {ports: [{port: 80}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: web}
spec:
  parentRefs: [{name: gw, sectionName: http}]
  rules: [{backendRefs: [{name: web, port: 80}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: admin}
spec:
  parentRefs: [{name: gw, sectionName: admin}]
  hostnames: [admin.example.com]
  rules: [{backendRefs: [{name: web, port: 80}]}]
"#;

/// Compiled for a server that serves VHDS too, so both forms of each route table are made.
fn compiled(yaml: &str) -> FleetResources {
    compiled_with(yaml, &CompileOptions { vhds: true, ..Default::default() })
}

fn compiled_with(yaml: &str, options: &CompileOptions) -> FleetResources {
    let s = objects::Snapshot::from_yaml(yaml).expect("fixture parses");
    let t = frontends::gateway_api::translate(&s, &Default::default());
    let dag = dag::build(&t.ir, &s, t.diagnostics);
    compile(&dag, options).remove("default/gw").expect("fleet compiled")
}

#[test]
fn without_vhds_only_the_inline_form_is_made() {
    let a = compiled_with(FIXTURE, &CompileOptions::default());
    assert!(a.of(ResourceType::VirtualHost).is_empty());
    // Delta streams without VHDS get the inline form; it is the same resource.
    assert_eq!(a.of(ResourceType::Route), a.of(ResourceType::RouteVhds));
    assert_eq!(a.of(ResourceType::Route), compiled(FIXTURE).of(ResourceType::Route));
}

#[test]
fn versions_are_content_hashes() {
    let a = compiled(FIXTURE);
    let b = compiled(FIXTURE);
    assert_eq!(a, b, "same input, same versions");
    assert_eq!(a.of(ResourceType::Listener).len(), 2);
    assert_eq!(a.of(ResourceType::Cluster).len(), 1);
    let changed = compiled(&FIXTURE.replace("admin.example.com", "ops.example.com"));
    let differing: Vec<_> = ResourceType::served_by(false)
        .iter()
        .flat_map(|t| {
            let (a, c) = (a.of(*t), changed.of(*t));
            a.keys().filter(move |k| a[*k].version != c[*k].version).map(|k| k.to_string()).collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(differing, ["http-9090"], "only the route table that changed gets a new version");
    // Over VHDS the route configuration stays; one virtual host goes, another comes.
    assert_eq!(a.of(ResourceType::RouteVhds), changed.of(ResourceType::RouteVhds));
    let hosts = |f: &FleetResources| f.of(ResourceType::VirtualHost).keys().map(|k| k.to_string()).collect::<Vec<_>>();
    assert_eq!(hosts(&a), ["http-8080/*", "http-9090/admin.example.com"]);
    assert_eq!(hosts(&changed), ["http-8080/*", "http-9090/ops.example.com"]);
}

#[test]
fn vhds_form_names_its_hosts_under_the_route_configuration() {
    use envoy_types::pb::envoy::config::core::v3::{api_config_source::ApiType, config_source, grpc_service};
    use envoy_types::pb::envoy::config::route::v3::VirtualHost;
    let a = compiled(FIXTURE);
    let inline: RouteConfiguration =
        prost::Message::decode(a.of(ResourceType::Route)["http-9090"].body.value.as_slice()).unwrap();
    let vhds: RouteConfiguration =
        prost::Message::decode(a.of(ResourceType::RouteVhds)["http-9090"].body.value.as_slice()).unwrap();
    assert!(vhds.virtual_hosts.is_empty());
    assert_eq!(vhds.ignore_port_in_host_matching, inline.ignore_port_in_host_matching);
    // Envoy takes VHDS only from a Delta gRPC stream of its own, to the bootstrap's xDS cluster.
    let source = vhds.vhds.and_then(|v| v.config_source).and_then(|c| c.config_source_specifier);
    let Some(config_source::ConfigSourceSpecifier::ApiConfigSource(api)) = source else { panic!("{source:?}") };
    assert_eq!(api.api_type, ApiType::DeltaGrpc as i32);
    let Some(grpc_service::TargetSpecifier::EnvoyGrpc(g)) = &api.grpc_services[0].target_specifier else { panic!() };
    assert_eq!(g.cluster_name, "contour");
    let resource = &a.of(ResourceType::VirtualHost)["http-9090/admin.example.com"];
    let host: VirtualHost = prost::Message::decode(resource.body.value.as_slice()).unwrap();
    assert_eq!(host.name, "http-9090/admin.example.com", "Envoy removes a virtual host by this name");
    assert_eq!(VirtualHost { name: inline.virtual_hosts[0].name.clone(), ..host }, inline.virtual_hosts[0]);
}

#[test]
fn routes_answer_host_with_any_port_and_point_at_clusters() {
    let a = compiled(FIXTURE);
    let rc: RouteConfiguration =
        prost::Message::decode(a.of(ResourceType::Route)["http-9090"].body.value.as_slice()).unwrap();
    assert_eq!(rc.virtual_hosts[0].domains, ["admin.example.com"]);
    let route = &rc.virtual_hosts[0].routes[0];
    let Some(envoy_types::pb::envoy::config::route::v3::route::Action::Route(action)) = &route.action else { panic!() };
    assert_eq!(
        action.cluster_specifier,
        Some(envoy_types::pb::envoy::config::route::v3::route_action::ClusterSpecifier::Cluster(
            "default/web/80/da39a3ee5e".into()
        ))
    );
}

/// An HTTPProxy fixture compiled for the default fleet.
fn compiled_proxies(yaml: &str) -> FleetResources {
    compiled_proxies_with(yaml, &CompileOptions::default())
}

fn compiled_proxies_with(yaml: &str, options: &CompileOptions) -> FleetResources {
    let s = objects::Snapshot::from_yaml(yaml).expect("fixture parses");
    let t = frontends::httpproxy::translate(&s, &Default::default());
    assert!(t.diagnostics.is_empty(), "{:?}", t.diagnostics);
    let dag = dag::build(&t.ir, &s, t.diagnostics);
    compile(&dag, options).remove(ir::DEFAULT_FLEET).expect("fleet compiled")
}

#[test]
fn cluster_settings_make_distinct_clusters_with_envoys_settings() {
    use envoy_types::pb::envoy::config::cluster::v3::{Cluster, cluster};
    let yaml = r#"
apiVersion: v1
kind: Service
metadata: {name: web, namespace: apps, annotations: {projectcontour.io/max-connections: "7", projectcontour.io/max-retries: nope}}
spec: {ports: [{port: 80}]}
---
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: p, namespace: apps}
spec:
  virtualhost: {fqdn: p.test}
  routes:
  - services: [{name: web, port: 80}]
  - conditions: [{prefix: /slow}]
    loadBalancerPolicy: {strategy: WeightedLeastRequest}
    healthCheckPolicy: {path: /hc, expectedStatuses: [{start: 200, end: 300}]}
    timeoutPolicy: {idleConnection: 10s}
    services: [{name: web, port: 80, protocol: h2c, slowStartPolicy: {window: 3s, aggression: "1.5"}}]
"#;
    let fleet = compiled_proxies(yaml);
    let clusters = fleet.of(ResourceType::Cluster);
    assert_eq!(clusters.len(), 2, "{:?}", clusters.keys().collect::<Vec<_>>());
    let decode = |name: &str| Cluster::decode(clusters[name].body.value.as_slice()).unwrap();
    let plain = decode("apps/web/80/da39a3ee5e");
    assert_eq!(plain.lb_policy, cluster::LbPolicy::RoundRobin as i32);
    let limits = &plain.circuit_breakers.as_ref().unwrap().thresholds[0];
    assert_eq!(limits.max_connections.as_ref().map(|v| v.value), Some(7));
    assert_eq!(limits.max_retries, None, "a value that is not a number is ignored");
    let tuned_name = clusters
        .keys()
        .find(|k| k.starts_with("apps/web/80/") && &***k != "apps/web/80/da39a3ee5e")
        .expect("a second cluster")
        .to_string();
    assert_eq!(tuned_name.len(), "apps/web/80/".len() + 10, "upstream's name shape: {tuned_name}");
    let tuned = decode(&tuned_name);
    assert_eq!((plain.alt_stat_name.as_str(), tuned.alt_stat_name.as_str()), ("apps_web_80", "apps_web_80"));
    assert_eq!(tuned.lb_policy, cluster::LbPolicy::LeastRequest as i32);
    let Some(cluster::LbConfig::LeastRequestLbConfig(lr)) = &tuned.lb_config else { panic!("{:?}", tuned.lb_config) };
    let slow = lr.slow_start_config.as_ref().unwrap();
    assert_eq!(slow.slow_start_window.as_ref().map(|d| d.seconds), Some(3));
    assert_eq!(slow.aggression.as_ref().map(|a| a.default_value), Some(1.5));
    let hc = &tuned.health_checks[0];
    assert_eq!(hc.interval.as_ref().map(|d| d.seconds), Some(5));
    assert_eq!(tuned.eds_cluster_config.as_ref().unwrap().service_name, tuned_name, "own endpoints");
    assert!(
        tuned.typed_extension_protocol_options.contains_key("envoy.extensions.upstreams.http.v3.HttpProtocolOptions")
    );
    assert!(fleet.of(ResourceType::Endpoint).is_empty(), "endpoints come from the endpoint stage");
}

#[test]
fn tls_versions_and_client_certificates_reach_the_listener() {
    use envoy_types::pb::envoy::config::listener::v3::{Listener, filter};
    use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::{
        HttpConnectionManager, http_connection_manager::ForwardClientCertDetails,
    };
    use envoy_types::pb::envoy::extensions::transport_sockets::tls::v3::{
        DownstreamTlsContext, common_tls_context::ValidationContextType, tls_parameters::TlsProtocol,
    };
    use objects::secrets::testing::quoted;
    let (cert, key) = (quoted(objects::secrets::testing::CERT), quoted(objects::secrets::testing::KEY));
    let yaml = format!(
        r#"
apiVersion: v1
kind: Service
metadata: {{name: web, namespace: apps}}
spec: {{ports: [{{port: 80}}]}}
---
apiVersion: v1
kind: Secret
metadata: {{name: cert, namespace: apps}}
type: kubernetes.io/tls
stringData: {{tls.crt: "{}", tls.key: "{}", ca.crt: "{}"}}
---
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {{name: p, namespace: apps}}
spec:
  virtualhost:
    fqdn: p.test
    tls:
      secretName: cert
      minimumProtocolVersion: "1.3"
      clientValidation: {{caSecret: cert, optionalClientCertificate: true, forwardClientCertificate: {{subject: true}}}}
  routes: [{{services: [{{name: web, port: 80}}]}}]
"#,
        cert, key, cert,
    );
    let fleet = compiled_proxies(&yaml);
    let https = fleet.of(ResourceType::Listener).values().find(|l| l.name.starts_with("https-")).expect("https");
    let listener = Listener::decode(https.body.value.as_slice()).unwrap();
    let chain = &listener.filter_chains[0];
    assert_eq!(chain.filter_chain_match.as_ref().unwrap().server_names, ["p.test"]);
    let socket = chain.transport_socket.as_ref().unwrap();
    let Some(envoy_types::pb::envoy::config::core::v3::transport_socket::ConfigType::TypedConfig(any)) =
        &socket.config_type
    else {
        panic!()
    };
    let tls = DownstreamTlsContext::decode(any.value.as_slice()).unwrap();
    let common = tls.common_tls_context.unwrap();
    assert_eq!(common.tls_params.unwrap().tls_minimum_protocol_version, TlsProtocol::TlSv13 as i32);
    assert!(
        matches!(common.validation_context_type, Some(ValidationContextType::ValidationContextSdsSecretConfig(s)) if s.name == "apps/cert/ca")
    );
    assert_eq!(tls.require_client_certificate.map(|b| b.value), Some(false), "optional client certificates");
    assert!(fleet.of(ResourceType::Secret).contains_key("apps/cert/ca"), "the CA is served over SDS");
    let Some(filter::ConfigType::TypedConfig(hcm)) = &chain.filters[0].config_type else { panic!() };
    let hcm = HttpConnectionManager::decode(hcm.value.as_slice()).unwrap();
    assert_eq!(hcm.forward_client_cert_details, ForwardClientCertDetails::SanitizeSet as i32);
    assert_eq!(hcm.set_current_client_cert_details.unwrap().subject.map(|b| b.value), Some(true));
}

/// Envoy refuses `host` among headers to add (the whole RouteConfiguration would be NACKed): a
/// header modifier that sets Host is a host rewrite, as upstream translates it.
#[test]
fn a_host_header_modifier_is_a_host_rewrite() {
    let yaml = FIXTURE.replace(
        "  hostnames: [admin.example.com]\n  rules: [{backendRefs: [{name: web, port: 80}]}]",
        "  hostnames: [admin.example.com]\n  rules:\n  - filters: [{type: RequestHeaderModifier, requestHeaderModifier: {add: [{name: Host, value: rewritten.com}, {name: x-a, value: b}]}}]\n    backendRefs: [{name: web, port: 80}]",
    );
    let a = compiled(&yaml);
    let rc: RouteConfiguration =
        prost::Message::decode(a.of(ResourceType::Route)["http-9090"].body.value.as_slice()).unwrap();
    let route = &rc.virtual_hosts[0].routes[0];
    let Some(envoy_types::pb::envoy::config::route::v3::route::Action::Route(action)) = &route.action else { panic!() };
    assert_eq!(
        action.host_rewrite_specifier,
        Some(envoy_types::pb::envoy::config::route::v3::route_action::HostRewriteSpecifier::HostRewriteLiteral(
            "rewritten.com".into()
        ))
    );
    let added: Vec<_> =
        route.request_headers_to_add.iter().filter_map(|h| h.header.as_ref()).map(|h| h.key.as_str()).collect();
    assert_eq!(added, ["x-a"], "no host header op for Envoy to refuse");
}

/// contour.yaml `disableMergeSlashes`: repeated slashes are merged before routing unless it is set.
#[test]
fn repeated_slashes_are_merged_unless_disabled() {
    use envoy_types::pb::envoy::config::listener::v3::{Listener, filter};
    use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager;
    let s = objects::Snapshot::from_yaml(FIXTURE).expect("fixture parses");
    let t = frontends::gateway_api::translate(&s, &Default::default());
    let dag = dag::build(&t.ir, &s, t.diagnostics);
    for merge in [true, false] {
        let options = CompileOptions { merge_slashes: merge, ..Default::default() };
        let fleet = compile(&dag, &options).remove("default/gw").expect("fleet compiled");
        let listeners = fleet.of(ResourceType::Listener);
        assert!(!listeners.is_empty());
        for resource in listeners.values() {
            let listener = Listener::decode(resource.body.value.as_slice()).unwrap();
            let Some(filter::ConfigType::TypedConfig(hcm)) = &listener.filter_chains[0].filters[0].config_type else {
                panic!("{} has an HTTP connection manager", resource.name)
            };
            let hcm = HttpConnectionManager::decode(hcm.value.as_slice()).unwrap();
            assert_eq!(hcm.merge_slashes, merge, "{}", resource.name);
        }
    }
}

/// The first HTTP connection manager of every traffic listener compiled with `listener`.
fn connection_managers(
    listener: settings::ListenerOptions,
) -> Vec<(
    envoy_types::pb::envoy::config::listener::v3::Listener,
    envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager,
)> {
    use envoy_types::pb::envoy::config::listener::v3::{Listener, filter};
    use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager;
    let s = objects::Snapshot::from_yaml(FIXTURE).expect("fixture parses");
    let t = frontends::gateway_api::translate(&s, &Default::default());
    let dag = dag::build(&t.ir, &s, t.diagnostics);
    let options = CompileOptions { listener, ..Default::default() };
    let fleet = compile(&dag, &options).remove("default/gw").expect("fleet compiled");
    fleet
        .of(ResourceType::Listener)
        .values()
        .map(|resource| {
            let listener = Listener::decode(resource.body.value.as_slice()).unwrap();
            let Some(filter::ConfigType::TypedConfig(hcm)) = &listener.filter_chains[0].filters[0].config_type else {
                panic!("{} has an HTTP connection manager", resource.name)
            };
            let hcm = HttpConnectionManager::decode(hcm.value.as_slice()).unwrap();
            (listener, hcm)
        })
        .collect()
}

/// Upstream's defaults: access log to stdout, compressor, gRPC-Web, gRPC stats and the inert
/// policy filters before the router, chunked length allowed, `Server: envoy`, HTTP/1.0 accepted, TCP keep-alive.
#[test]
fn traffic_listeners_get_upstreams_defaults() {
    use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::http_connection_manager::{
        CodecType, ServerHeaderTransformation,
    };
    let managers = connection_managers(Default::default());
    assert_eq!(managers.len(), 2);
    for (listener, hcm) in managers {
        let filters: Vec<&str> = hcm.http_filters.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            filters,
            [
                "envoy.filters.http.compressor",
                "envoy.filters.http.grpc_web",
                "envoy.filters.http.grpc_stats",
                "envoy.filters.http.cors",
                "envoy.filters.http.local_ratelimit",
                "envoy.filters.http.lua",
                "envoy.filters.http.rbac",
                "envoy.filters.http.router"
            ]
        );
        assert_eq!(hcm.access_log.len(), 1);
        assert_eq!(hcm.access_log[0].name, "envoy.access_loggers.file");
        let http1 = hcm.http_protocol_options.expect("HTTP/1 options");
        assert!(http1.allow_chunked_length && http1.accept_http_10);
        assert_eq!(hcm.server_header_transformation, ServerHeaderTransformation::Overwrite as i32);
        assert_eq!(hcm.codec_type, CodecType::Auto as i32);
        assert!(hcm.request_timeout.is_none() && hcm.stream_idle_timeout.is_none(), "Envoy's defaults");
        assert!(listener.listener_filters.is_empty(), "no PROXY protocol");
        assert_eq!(listener.socket_options.len(), 4, "TCP keep-alive");
        assert!(listener.per_connection_buffer_limit_bytes.is_none() && listener.connection_balance_config.is_none());
    }
}

/// Every listener key of contour.yaml lands where Envoy reads it.
#[test]
fn listener_options_reach_the_listener_and_its_connection_manager() {
    use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::http_connection_manager::{
        CodecType, ServerHeaderTransformation,
    };
    use settings::*;
    let secs = |s| Timeout::After(std::time::Duration::from_secs(s));
    let options = ListenerOptions {
        access_log: accesslog::AccessLog { level: accesslog::Level::Disabled, ..Default::default() },
        compression: Compression::Disabled,
        allow_chunked_length: false,
        server_header: ServerHeader::AppendIfAbsent,
        xff_num_trusted_hops: 2,
        strip_trailing_host_dot: true,
        timeouts: Timeouts {
            request: Timeout::Disabled,
            connection_idle: secs(60),
            stream_idle: secs(5),
            max_connection_duration: secs(600),
            delayed_close: secs(2),
            connection_shutdown_grace_period: secs(10),
        },
        http_versions: vec![HttpVersion::Http1],
        max_requests_per_connection: Some(7),
        http2_max_concurrent_streams: Some(50),
        per_connection_buffer_limit_bytes: Some(32768),
        exact_connection_balancer: true,
        socket_options: SocketOptions { tos: 64, traffic_class: 0 },
        use_proxy_protocol: true,
        tls: TlsOptions::default(),
        http3: Http3Options::default(),
        max_requests_per_io_cycle: Some(2),
        max_connections_per_listener: Some(10),
        max_connections_to_accept_per_socket_event: Some(4),
        runtime: Vec::new(),
    };
    for (listener, hcm) in connection_managers(options) {
        assert!(hcm.access_log.is_empty(), "level disabled");
        assert!(hcm.http_filters.iter().all(|f| f.name != "envoy.filters.http.compressor"), "no compressor");
        assert!(!hcm.http_protocol_options.expect("HTTP/1 options").allow_chunked_length);
        assert_eq!(hcm.server_header_transformation, ServerHeaderTransformation::AppendIfAbsent as i32);
        assert_eq!((hcm.xff_num_trusted_hops, hcm.strip_trailing_host_dot), (2, true));
        assert_eq!(hcm.request_timeout.map(|d| d.seconds), Some(0), "infinity is 0s");
        assert_eq!(hcm.stream_idle_timeout.map(|d| d.seconds), Some(5));
        assert_eq!(hcm.delayed_close_timeout.map(|d| d.seconds), Some(2));
        assert_eq!(hcm.drain_timeout.map(|d| d.seconds), Some(10));
        let common = hcm.common_http_protocol_options.expect("common options");
        assert_eq!(common.idle_timeout.map(|d| d.seconds), Some(60));
        assert_eq!(common.max_connection_duration.map(|d| d.seconds), Some(600));
        assert_eq!(common.max_requests_per_connection.map(|v| v.value), Some(7));
        assert_eq!(hcm.http2_protocol_options.and_then(|o| o.max_concurrent_streams).map(|v| v.value), Some(50));
        assert_eq!(hcm.codec_type, CodecType::Http1 as i32);
        assert_eq!(listener.listener_filters[0].name, "envoy.filters.listener.proxy_protocol");
        assert_eq!(listener.per_connection_buffer_limit_bytes.map(|v| v.value), Some(32768));
        assert!(listener.connection_balance_config.is_some());
        assert_eq!(listener.socket_options.len(), 5, "keep-alive and TOS");
        assert_eq!(listener.max_connections_to_accept_per_socket_event.map(|v| v.value), Some(4));
    }
}

/// `cluster.*` and `timeouts.connect-timeout` on every cluster; a Service's own limits win
/// field by field over the global circuit-breaker defaults.
#[test]
fn cluster_options_reach_every_cluster() {
    use envoy_types::pb::envoy::config::cluster::v3::{Cluster, cluster};
    use envoy_types::pb::envoy::extensions::transport_sockets::tls::v3::UpstreamTlsContext;
    use envoy_types::pb::envoy::extensions::upstreams::http::v3::HttpProtocolOptions;
    let yaml = r#"
apiVersion: v1
kind: Service
metadata: {name: web, namespace: apps, annotations: {projectcontour.io/max-connections: "7"}}
spec: {ports: [{port: 443}]}
---
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: p, namespace: apps}
spec:
  virtualhost: {fqdn: p.test}
  routes: [{services: [{name: web, port: 443, protocol: tls}]}]
"#;
    let options = CompileOptions {
        cluster: settings::ClusterOptions {
            connect_timeout: std::time::Duration::from_millis(250),
            dns_lookup_family: settings::DnsLookupFamily::V4,
            max_requests_per_connection: Some(3),
            per_connection_buffer_limit_bytes: Some(4096),
            circuit_breakers: dag::CircuitBreakers {
                max_connections: Some(100),
                max_requests: Some(50),
                ..Default::default()
            },
            upstream_tls: settings::TlsOptions { min_version: ir::TlsVersion::V1_3, ..Default::default() },
            default_outlier_detection: None,
        },
        ..Default::default()
    };
    let fleet = compiled_proxies_with(yaml, &options);
    let clusters = fleet.of(ResourceType::Cluster);
    assert_eq!(clusters.len(), 1);
    let c = Cluster::decode(clusters.values().next().unwrap().body.value.as_slice()).unwrap();
    assert_eq!(c.connect_timeout.map(|d| d.nanos), Some(250_000_000));
    assert_eq!(c.dns_lookup_family, cluster::DnsLookupFamily::V4Only as i32);
    assert_eq!(c.per_connection_buffer_limit_bytes.map(|v| v.value), Some(4096));
    let limits = &c.circuit_breakers.as_ref().unwrap().thresholds[0];
    assert_eq!(limits.max_connections.as_ref().map(|v| v.value), Some(7), "the Service's own");
    assert_eq!(limits.max_requests.as_ref().map(|v| v.value), Some(50), "the global default");
    let options = HttpProtocolOptions::decode(
        c.typed_extension_protocol_options["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"].value.as_slice(),
    )
    .unwrap();
    let common = options.common_http_protocol_options.unwrap();
    assert_eq!(common.max_requests_per_connection.map(|v| v.value), Some(3));
    let Some(envoy_types::pb::envoy::config::core::v3::transport_socket::ConfigType::TypedConfig(tls)) =
        c.transport_socket.and_then(|t| t.config_type)
    else {
        panic!("upstream TLS")
    };
    let tls = UpstreamTlsContext::decode(tls.value.as_slice()).unwrap();
    let params = tls.common_tls_context.unwrap().tls_params.unwrap();
    assert_eq!(
        params.tls_minimum_protocol_version,
        envoy_types::pb::envoy::extensions::transport_sockets::tls::v3::tls_parameters::TlsProtocol::TlSv13 as i32
    );
    assert_eq!(params.cipher_suites.len(), 4, "upstream's defaults");
}

/// Envoy's own listeners as upstream lays them out: statistics beside readiness by default, apart
/// when `metrics.envoy` names another port, and over HTTPS (with its file secrets) when it names
/// certificate files.
#[test]
fn statistics_and_readiness_listeners_follow_the_metrics_settings() {
    use envoy_types::pb::envoy::config::listener::v3::Listener;
    let at = |port| Some(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
    let layout = |metrics: Option<MetricsListener>| {
        let options = CompileOptions { stats_listener: at(8002), metrics_listener: metrics, ..Default::default() };
        let yaml = "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: apps}\nspec: {ports: [{port: 80}]}\n---\napiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {name: p, namespace: apps}\nspec:\n  virtualhost: {fqdn: p.test}\n  routes: [{services: [{name: web, port: 80}]}]\n";
        let fleet = compiled_proxies_with(yaml, &options);
        let listeners: Vec<(String, bool)> = fleet
            .of(ResourceType::Listener)
            .values()
            .map(|r| {
                let l = Listener::decode(r.body.value.as_slice()).unwrap();
                (l.name, l.filter_chains[0].transport_socket.is_some())
            })
            .filter(|(name, _)| !name.starts_with("http-"))
            .collect();
        let secrets: Vec<String> = fleet.of(ResourceType::Secret).keys().map(|k| k.to_string()).collect();
        (listeners, secrets)
    };
    assert_eq!(layout(None).0, [("stats-health".to_string(), false)]);
    let same = MetricsListener { address: at(8002).unwrap(), tls: None };
    assert_eq!(layout(Some(same)).0, [("stats-health".to_string(), false)]);
    let apart = MetricsListener { address: at(8003).unwrap(), tls: None };
    assert_eq!(layout(Some(apart)).0, [("health".to_string(), false), ("stats".to_string(), false)]);
    let tls = MetricsTls { cert_file: "/certs/tls.crt".into(), key_file: "/certs/tls.key".into(), ca_file: None };
    let https = MetricsListener { address: at(8003).unwrap(), tls: Some(tls) };
    let (listeners, secrets) = layout(Some(https));
    assert_eq!(listeners, [("health".to_string(), false), ("stats".to_string(), true)]);
    assert_eq!(secrets, ["metrics-tls-certificate"]);
}

#[test]
fn weights_beyond_32_bits_are_scaled_down_with_their_ratios() {
    let fitted: Vec<u32> = route::fit_weights([u32::MAX, u32::MAX, 1, 0].into_iter()).collect();
    assert!(fitted.iter().map(|w| u64::from(*w)).sum::<u64>() <= u64::from(u32::MAX), "{fitted:?}");
    assert_eq!(fitted[0], fitted[1]);
    assert_eq!(&fitted[2..], [1, 0], "a weight above zero stays above zero");
    assert_eq!(route::fit_weights([3, 1].into_iter()).collect::<Vec<_>>(), [3, 1]);
}
