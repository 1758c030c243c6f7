use super::*;
use envoy_types::pb::envoy::config::route::v3::RouteConfiguration;

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

fn compiled(yaml: &str) -> FleetResources {
    let s = objects::Snapshot::from_yaml(yaml).expect("fixture parses");
    let t = frontends::gateway_api::translate(&s, &Default::default());
    let dag = dag::build(&t.ir, &s, t.diagnostics);
    compile(&dag, &CompileOptions::default()).remove("default/gw").expect("fleet compiled")
}

#[test]
fn versions_are_content_hashes() {
    let a = compiled(FIXTURE);
    let b = compiled(FIXTURE);
    assert_eq!(a, b, "same input, same versions");
    assert_eq!(a.of(ResourceType::Listener).len(), 2);
    assert_eq!(a.of(ResourceType::Cluster).len(), 1);
    let changed = compiled(&FIXTURE.replace("admin.example.com", "ops.example.com"));
    let differing: Vec<_> = ResourceType::ALL
        .into_iter()
        .flat_map(|t| {
            let (a, c) = (a.of(t), changed.of(t));
            a.keys().filter(move |k| a[*k].version != c[*k].version).map(|k| k.to_string()).collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(differing, ["http-9090"], "only the route table that changed gets a new version");
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
            "default/web/80".into()
        ))
    );
}
