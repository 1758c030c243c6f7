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

/// An API server with the Gateway API, the namespace projectcontour and this ClusterRole YAML.
async fn with_rbac(rbac: &str) -> anyhow::Result<ApiServer> {
    let api = ApiServer::start().await?;
    api.install_gateway_api().await?;
    let admin = api.client().await?;
    apply_yaml(&admin, "apiVersion: v1\nkind: Namespace\nmetadata: {name: projectcontour}\n").await?;
    apply_yaml(&admin, rbac).await?;
    Ok(api)
}

#[tokio::test]
async fn a_missing_permission_stops_the_source_with_a_clear_error() -> anyhow::Result<()> {
    let without_slices = include_str!("../../deploy/rbac/contour.yaml")
        .replace("  resources: [endpointslices]", "  resources: [nothing]");
    let api = with_rbac(&without_slices).await?;
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

#[tokio::test]
async fn upstreams_rbac_without_udproutes_ingressclasses_and_listenersets_serves_everything_else() -> anyhow::Result<()>
{
    // Upstream Contour's ClusterRole has no udproutes or listenersets (upstream has neither
    // kind) and no ingressclasses: a drop-in install with it must run without them rather than stop.
    let upstreams = include_str!("../../deploy/rbac/contour.yaml")
        .replace(" udproutes,", "")
        .replace(" udproutes/status,", "")
        .replace(", listenersets/status", "")
        .replace(", listenersets", "")
        .replace(", ingressclasses", "");
    let beyond = ["udproutes", "ingressclasses", "listenersets"];
    assert!(beyond.iter().all(|kind| !upstreams.contains(kind)), "{upstreams}");
    let api = with_rbac(&upstreams).await?;
    let store = store::Store::new();
    let source =
        tokio::spawn(store::KubernetesSource::new(service_account_client(&api).await?, Vec::new()).run(store.clone()));
    let synced = testkit::eventually(std::time::Duration::from_secs(30), || {
        let synced = store.is_synced();
        async move { synced.then_some(()) }
    })
    .await;
    assert!(!source.is_finished(), "the source stopped: {:?}", source.await);
    assert!(synced.is_some(), "the source never synced");
    source.abort();
    Ok(())
}
