//! Kubernetes mode against a real kube-apiserver: objects created, changed and deleted through
//! the API reach Envoy.

use std::time::Duration;

use testkit::{ApiServer, NetnsBackend, Request, apply_yaml, delete_yaml};

use crate::harness::{Harness, gateway, http_listener, http_route, service};

#[tokio::test]
async fn objects_applied_through_the_api_reach_envoy() -> anyhow::Result<()> {
    let api = ApiServer::start().await?;
    api.install_gateway_api().await?;
    let client = api.client().await?;
    let blue = NetnsBackend::start("blue").await?;
    let green = NetnsBackend::start("green").await?;
    let port = testkit::free_port();
    let base = [gateway(&http_listener("http", port)), service("blue", &[blue.addr]), service("green", &[green.addr])]
        .concat();
    apply_yaml(&client, &base).await?;
    let route = |svc: &str| {
        http_route(
            "app",
            &format!("  hostnames: [app.example.com]\n  rules: [{{backendRefs: [{{name: {svc}, port: 80}}]}}]"),
        )
    };
    apply_yaml(&client, &route("blue")).await?;

    let h = Harness::start_kubernetes(client.clone(), true).await?;
    let req = Request::get("app.example.com", "/");
    h.until(port, &req, |r| r.header("x-backend") == Some("blue")).await?;

    // An update through the API moves the traffic.
    apply_yaml(&client, &route("green")).await?;
    h.until(port, &req, |r| r.header("x-backend") == Some("green")).await?;

    // Deleting the route takes it out of Envoy.
    delete_yaml(&client, &route("green")).await?;
    h.until(port, &req, |r| r.status == 404).await?;
    tokio::time::sleep(Duration::from_millis(200)).await;
    h.assert_no_nacks().await
}
