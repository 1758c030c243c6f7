use std::net::SocketAddr;

use testkit::Request;

use super::*;

const FIXTURE: &str = r#"
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: contour}
spec: {controllerName: projectcontour.io/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw}
spec: {gatewayClassName: contour, listeners: [{name: http, port: 8080, protocol: HTTP}]}
"#;

async fn start() -> (Telemetry, controller::Controller, SocketAddr, SocketAddr) {
    let store = store::Store::new();
    let xds = xds_server::XdsServer::default();
    let c = controller::Controller::new(Default::default(), xds.clone());
    let t = Telemetry {
        version: "test",
        counters: c.counters(),
        xds,
        store,
        status: None,
        published: c.published(),
        admission: None,
    };
    let metrics = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let debug = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let (m, d) = (metrics.local_addr().unwrap(), debug.local_addr().unwrap());
    tokio::spawn(serve_metrics(metrics, t.clone(), std::future::pending()));
    tokio::spawn(serve_debug(debug, t.clone(), std::future::pending()));
    (t, c, m, d)
}

#[tokio::test]
async fn ready_only_after_sync_and_first_build() {
    let (t, mut c, metrics, debug) = start().await;
    assert_eq!(testkit::request(metrics, &Request::get("x", "/healthz")).await.unwrap().status, 200);
    assert_eq!(testkit::request(metrics, &Request::get("x", "/readyz")).await.unwrap().status, 503);
    assert_eq!(testkit::request(debug, &Request::get("x", "/debug/dag")).await.unwrap().status, 503);

    t.store.replace(objects::Snapshot::from_yaml(FIXTURE).unwrap());
    t.store.set_synced();
    let readyz = || async { testkit::request(metrics, &Request::get("x", "/readyz")).await.unwrap().status };
    assert_eq!(readyz().await, 503, "synced but not built yet");
    c.apply(t.store.current());
    assert_eq!(readyz().await, 200);

    let dot = testkit::request(debug, &Request::get("x", "/debug/dag")).await.unwrap();
    assert!(dot.body.contains("fleet default/gw"), "{}", dot.body);
    let json = testkit::request(debug, &Request::get("x", "/debug/dag?format=json")).await.unwrap();
    let parsed: serde_json::Value = serde_json::from_str(&json.body).unwrap();
    assert!(parsed["fleets"]["default/gw"].is_object(), "{}", json.body);
}

#[tokio::test]
async fn metrics_use_upstream_names() {
    let (t, mut c, metrics, _) = start().await;
    t.store.replace(objects::Snapshot::from_yaml(FIXTURE).unwrap());
    c.apply(t.store.current());
    let body = testkit::request(metrics, &Request::get("x", "/metrics")).await.unwrap().body;
    for line in [
        "contour_build_info{branch=\"\",revision=\"\",version=\"test\"} 1",
        "contour_dagrebuild_total 1",
        "contour_dag_cache_object{kind=\"Gateway\"} 1",
        "contour_xds_nacks_total{type=\"rds\"} 0",
        "contour_xds_refused_streams_total{reason=\"other_fleet\"} 0",
        "# TYPE contour_dagrebuild_seconds summary",
    ] {
        assert!(body.lines().any(|l| l == line), "missing {line:?} in\n{body}");
    }
}

#[tokio::test]
async fn httpproxy_gauges_count_by_status() {
    let (t, mut c, metrics, _) = start().await;
    let proxies = r#"
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: root, namespace: web}
spec: {virtualhost: {fqdn: www.example.com}, routes: [{services: [{name: nope, port: 80}]}]}
---
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: fine, namespace: web}
spec: {virtualhost: {fqdn: fine.example.com}, routes: [{directResponsePolicy: {statusCode: 200}}]}
---
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: lonely, namespace: web}
spec: {routes: [{directResponsePolicy: {statusCode: 200}}]}
"#;
    t.store.replace(objects::Snapshot::from_yaml(proxies).unwrap());
    c.apply(t.store.current());
    let body = testkit::request(metrics, &Request::get("x", "/metrics")).await.unwrap().body;
    for line in [
        "contour_httpproxy{namespace=\"web\"} 3",
        "contour_httpproxy_root{namespace=\"web\"} 2",
        "contour_httpproxy_valid{namespace=\"web\",vhost=\"fine.example.com\"} 1",
        "contour_httpproxy_invalid{namespace=\"web\",vhost=\"www.example.com\"} 1",
        "contour_httpproxy_orphaned{namespace=\"web\"} 1",
    ] {
        assert!(body.lines().any(|l| l == line), "missing {line:?} in\n{body}");
    }
}
