//! Virtual host and route policies as per-filter configuration: where each lands, and that the
//! bytes are the same however the maps hash.

use super::*;
use envoy_types::pb::envoy::config::route::v3::{route, route_action};
use envoy_types::pb::envoy::extensions::filters::http::cors::v3::CorsPolicy;
use envoy_types::pb::envoy::extensions::filters::http::local_ratelimit::v3::LocalRateLimit;
use envoy_types::pb::envoy::extensions::filters::http::lua::v3::LuaPerRoute;
use envoy_types::pb::envoy::extensions::filters::http::rbac::v3::RbacPerRoute;

const POLICIES: &str = "
apiVersion: v1
kind: Service
metadata: {name: web, namespace: apps}
spec: {ports: [{port: 80}]}
---
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: root, namespace: apps}
spec:
  virtualhost:
    fqdn: a.example.com
    corsPolicy: {allowOrigin: ['https://b.example.com', 'https://.*\\\\.example\\\\.org'], allowMethods: [GET, PUT], maxAge: 0s}
    rateLimitPolicy: {local: {requests: 5, unit: second, burst: 1}}
    ipAllowPolicy: [{source: Peer, cidr: 127.0.0.0/8}]
  routes:
  - conditions: [{prefix: /own}]
    ipDenyPolicy: [{source: Remote, cidr: 10.0.0.0/8}]
    rateLimitPolicy: {local: {requests: 1, unit: hour, responseStatusCode: 503}}
    cookieRewritePolicies: [{name: a, pathRewrite: {value: /own}}]
    services: [{name: web, port: 80}]
  - conditions: [{prefix: /split}]
    cookieRewritePolicies: [{name: a, sameSite: Strict}]
    services: [{name: web, port: 80, weight: 1, cookieRewritePolicies: [{name: b, secure: true}]}]
  - services: [{name: web, port: 80}]
";

fn route_configuration(fleet: &FleetResources) -> RouteConfiguration {
    prost::Message::decode(
        fleet.of(ResourceType::Route).values().next().expect("one route configuration").body.value.as_slice(),
    )
    .unwrap()
}

fn decode<M: prost::Message + Default>(any: &envoy_types::pb::google::protobuf::Any) -> M {
    M::decode(any.value.as_slice()).expect("decodes")
}

fn keys<V>(map: &std::collections::HashMap<String, V>) -> Vec<&str> {
    let mut keys: Vec<&str> = map.keys().map(String::as_str).collect();
    keys.sort();
    keys
}

#[test]
fn virtual_host_and_route_policies_become_per_filter_configuration() {
    let fleet = compiled_proxies(POLICIES);
    let rc = route_configuration(&fleet);
    let vh = &rc.virtual_hosts[0];
    assert_eq!(
        keys(&vh.typed_per_filter_config),
        ["envoy.filters.http.cors", "envoy.filters.http.local_ratelimit", "envoy.filters.http.rbac"]
    );
    let cors: CorsPolicy = decode(&vh.typed_per_filter_config["envoy.filters.http.cors"]);
    assert_eq!((cors.allow_methods.as_str(), cors.max_age.as_str()), ("GET,PUT", "0"));
    assert_eq!(cors.allow_origin_string_match.len(), 2);
    let limit: LocalRateLimit = decode(&vh.typed_per_filter_config["envoy.filters.http.local_ratelimit"]);
    let bucket = limit.token_bucket.unwrap();
    assert_eq!((bucket.max_tokens, bucket.tokens_per_fill.unwrap().value), (6, 5));
    assert_eq!(limit.stat_prefix, "vhost.a.example.com");
    let rbac: RbacPerRoute = decode(&vh.typed_per_filter_config["envoy.filters.http.rbac"]);
    let rules = rbac.rbac.unwrap().rules.unwrap();
    assert_eq!(rules.action, 0, "ALLOW");

    let by_prefix = |prefix: &str| {
        vh.routes
            .iter()
            .find(|r| format!("{:?}", r.r#match).contains(prefix))
            .unwrap_or_else(|| panic!("a route for {prefix}"))
    };
    let own = by_prefix("/own");
    assert_eq!(
        keys(&own.typed_per_filter_config),
        ["envoy.filters.http.local_ratelimit", "envoy.filters.http.lua", "envoy.filters.http.rbac"]
    );
    let limit: LocalRateLimit = decode(&own.typed_per_filter_config["envoy.filters.http.local_ratelimit"]);
    assert_eq!(limit.status.unwrap().code, 503);
    let rbac: RbacPerRoute = decode(&own.typed_per_filter_config["envoy.filters.http.rbac"]);
    assert_eq!(rbac.rbac.unwrap().rules.unwrap().action, 1, "DENY");
    let lua: LuaPerRoute = decode(&own.typed_per_filter_config["envoy.filters.http.lua"]);
    assert!(lua.filter_context.unwrap().fields.contains_key("a"));

    // Per-backend rules: each weighted cluster carries the route's merged with its own.
    let split = by_prefix("/split");
    assert!(split.typed_per_filter_config.is_empty());
    let Some(route::Action::Route(action)) = &split.action else { panic!() };
    let Some(route_action::ClusterSpecifier::WeightedClusters(weighted)) = &action.cluster_specifier else { panic!() };
    let lua: LuaPerRoute = decode(&weighted.clusters[0].typed_per_filter_config["envoy.filters.http.lua"]);
    assert_eq!(keys(&lua.filter_context.unwrap().fields), ["a", "b"]);

    let default = vh.routes.last().unwrap();
    assert!(default.typed_per_filter_config.is_empty(), "the virtual host's policies apply");
}

#[test]
fn per_filter_configuration_encodes_the_same_every_time() {
    let first = compiled_proxies(POLICIES);
    for _ in 0..8 {
        assert_eq!(compiled_proxies(POLICIES), first, "every map gets a new hasher; the bytes must not change");
    }
}

#[test]
fn a_gateway_api_cors_filter_becomes_the_routes_cors_policy() {
    let yaml = FIXTURE.replace(
        "  rules: [{backendRefs: [{name: web, port: 80}]}]\n---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: admin}",
        "  rules: [{filters: [{type: CORS, cors: {allowOrigins: ['https://*.bar.com'], allowMethods: [GET], allowCredentials: true}}], backendRefs: [{name: web, port: 80}]}]\n---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: admin}",
    );
    assert_ne!(yaml, FIXTURE);
    let fleet = compiled(&yaml);
    let rc: RouteConfiguration =
        prost::Message::decode(fleet.of(ResourceType::Route)["http-8080"].body.value.as_slice()).unwrap();
    let route = &rc.virtual_hosts[0].routes[0];
    let cors: CorsPolicy = decode(&route.typed_per_filter_config["envoy.filters.http.cors"]);
    assert_eq!((cors.allow_methods.as_str(), cors.max_age.as_str()), ("GET", "5"));
    assert_eq!(cors.allow_credentials.map(|b| b.value), Some(true));
}
