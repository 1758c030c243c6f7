//! contour-serve with the least-privilege RBAC of deploy/rbac/, as a ServiceAccount: cluster-wide,
//! and Role-only with --watch-namespaces. A permission the manifests lack fails these tests.

use testkit::{ApiServer, NetnsBackend, Request, apply_yaml, status_of};

use crate::harness::{Harness, single_route};

/// A client authenticated as `projectcontour/contour` with a fresh ServiceAccount token.
async fn service_account_client(api: &ApiServer) -> anyhow::Result<kube::Client> {
    ApiServer::client_for(&api.service_account_kubeconfig("projectcontour", "contour").await?).await
}

async fn serves_as_service_account(rbac: &str, namespace: &str, watch: Vec<String>) -> anyhow::Result<()> {
    let api = ApiServer::start().await?;
    api.install_gateway_api().await?;
    let admin = api.client().await?;
    apply_yaml(&admin, "apiVersion: v1\nkind: Namespace\nmetadata: {name: projectcontour}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: apps}\n").await?;
    apply_yaml(&admin, rbac).await?;
    let client = service_account_client(&api).await?;

    let web = NetnsBackend::start("web").await?;
    let port = testkit::free_port();
    let yaml = single_route(port, web.addr).replace("namespace: default", &format!("namespace: {namespace}"));
    apply_yaml(&admin, &yaml).await?;

    let h = Harness::start_kubernetes_with(client, watch, &format!("{namespace}/gw"), false).await?;
    h.until(port, &Request::get("x", "/"), |r| r.header("x-backend") == Some("web")).await?;
    // Status writes are allowed too.
    for _ in 0..100 {
        let s = status_of(&admin, "gateway.networking.k8s.io/v1", "HTTPRoute", namespace, "web").await?;
        if !s["parents"].is_null() {
            return h.assert_no_nacks().await;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    anyhow::bail!("the ServiceAccount could not write route status")
}

#[tokio::test]
async fn cluster_wide_rbac_is_enough() -> anyhow::Result<()> {
    serves_as_service_account(include_str!("../../deploy/rbac/contour.yaml"), "default", Vec::new()).await
}

#[tokio::test]
async fn namespaced_rbac_is_enough_with_watch_namespaces() -> anyhow::Result<()> {
    serves_as_service_account(include_str!("../../deploy/rbac/contour-namespaced.yaml"), "apps", vec!["apps".into()])
        .await
}

#[tokio::test]
async fn a_missing_permission_stops_the_source_with_a_clear_error() -> anyhow::Result<()> {
    let api = ApiServer::start().await?;
    api.install_gateway_api().await?;
    let admin = api.client().await?;
    apply_yaml(&admin, "apiVersion: v1\nkind: Namespace\nmetadata: {name: projectcontour}\n").await?;
    let without_slices = include_str!("../../deploy/rbac/contour.yaml")
        .replace("  resources: [endpointslices]", "  resources: [nothing]");
    apply_yaml(&admin, &without_slices).await?;
    let client = service_account_client(&api).await?;
    let store = store::Store::new();
    let result = tokio::time::timeout(
        std::time::Duration::from_secs(30),
        store::KubernetesSource::new(client, Vec::new()).run(store.clone()),
    )
    .await?;
    let error = result.expect_err("the source must not run without EndpointSlice access").to_string();
    assert!(error.contains("EndpointSlice") && error.contains("forbidden"), "{error}");
    assert!(!store.is_synced());
    Ok(())
}
