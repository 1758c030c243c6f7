//! Gateway listener filters (Gateway API 1.7, experimental channel) against a real API server
//! and the real Envoy: an `ExternalAuth` filter checks every request of its listener before a
//! route is chosen (so a route can match on what the authorization server added), over gRPC or
//! HTTP; the other listeners of the same port are not checked; a listener whose filter cannot
//! be honoured is not served at all, and its status says why.

use serde_json::Value;
use testkit::{ApiServer, AuthServer, NetnsBackend, Request, apply_yaml};

use crate::harness::{Harness, http_route, service};
use crate::kubernetes::status_of_until;

const V1: &str = "gateway.networking.k8s.io/v1";

/// The listener `name`'s condition `type_` as `(status, reason)`.
fn listener_condition(gateway: &Value, name: &str, type_: &str) -> Option<(String, String)> {
    let listener = gateway["listeners"].as_array()?.iter().find(|l| l["name"] == name)?;
    let c = listener["conditions"].as_array()?.iter().find(|c| c["type"] == type_)?;
    Some((c["status"].as_str()?.to_string(), c["reason"].as_str()?.to_string()))
}

fn is(gateway: &Value, listener: &str, type_: &str, status: &str, reason: &str) -> bool {
    listener_condition(gateway, listener, type_) == Some((status.to_string(), reason.to_string()))
}

#[tokio::test]
async fn external_auth_listener_filters_check_requests_before_routing() -> anyhow::Result<()> {
    let api = ApiServer::start().await?;
    api.install_gateway_api_latest().await?;
    let client = api.client().await?;
    let web = NetnsBackend::start("web").await?;
    let alice = NetnsBackend::start("alice").await?;
    // The servers listen on the host's end of a backend's veth pair: the API server refuses
    // loopback endpoints.
    let grpc_auth = AuthServer::start_on(web.host.into(), &[("alice", "wonderland")]).await?;
    let http_auth = AuthServer::start_http_on(web.host.into(), &[("alice", "wonderland")]).await?;
    let port = testkit::free_port();
    let external_auth = |protocol: &str, service: &str, extra: &str| {
        format!(
            "{{type: ExternalAuth, externalAuth: {{protocol: {protocol}, backendRef: {{name: {service}, port: 80}}{extra}}}}}"
        )
    };
    let listener = |name: &str, filters: Option<String>| {
        let filters = filters.map(|f| format!(", filters: {{requests: [{f}]}}")).unwrap_or_default();
        format!(
            "  - {{name: {name}, hostname: {name}.example.com, port: {port}, protocol: HTTP, allowedRoutes: {{namespaces: {{from: All}}}}{filters}}}\n"
        )
    };
    let gateway = [
        format!("apiVersion: {V1}\nkind: GatewayClass\nmetadata: {{name: contour}}\nspec: {{controllerName: projectcontour.io/gateway-controller}}\n---\n"),
        format!("apiVersion: {V1}\nkind: Gateway\nmetadata: {{name: gw, namespace: default}}\nspec:\n  gatewayClassName: contour\n  addresses: [{{type: IPAddress, value: 127.0.0.1}}]\n  listeners:\n"),
        listener("grpc", Some(external_auth("GRPC", "grpc-auth", ", grpc: {}"))),
        listener(
            "http",
            Some(external_auth(
                "HTTP",
                "http-auth",
                ", http: {path: /verify, allowedResponseHeaders: [auth-username, auth-path]}",
            )),
        ),
        listener("open", None),
        listener("missing", Some(external_auth("GRPC", "nowhere", ", grpc: {}"))),
        listener("extension", Some("{type: ExtensionRef, extensionRef: {group: example.com, kind: Filter, name: f}}".into())),
    ]
    .concat();
    // One route for every listener; the identity the server established picks a backend.
    let route = http_route(
        "app",
        "  rules:
  - matches: [{headers: [{name: auth-username, value: alice}]}]
    backendRefs: [{name: alice, port: 80}]
  - backendRefs: [{name: web, port: 80}]",
    );
    let yaml = [
        gateway,
        service("web", &[web.addr]),
        service("alice", &[alice.addr]),
        service("grpc-auth", &[grpc_auth.addr]),
        service("http-auth", &[http_auth.addr]),
        route,
    ]
    .concat();
    apply_yaml(&client, &yaml).await?;
    let h = Harness::start_kubernetes(client.clone(), true).await?;
    let credentials = testkit::basic("alice", "wonderland");

    // The open listener: served, never checked.
    let open = Request::get("open.example.com", "/");
    h.until(port, &open, |r| r.status == 200 && r.header("x-backend") == Some("web")).await?;

    // gRPC: no credentials, the server's 401; with them, the route that matches the identity.
    let grpc = Request::get("grpc.example.com", "/app");
    h.until(port, &grpc, |r| r.status == 401).await?;
    let r = h.get(port, &grpc.clone().header("authorization", &credentials)).await?;
    assert_eq!((r.status, r.header("x-backend")), (200, Some("alice")), "routed on the checked identity: {r:?}");

    // HTTP: the same, with the path under the prefix and the allowed answer headers upstream.
    let http = Request::get("http.example.com", "/app");
    h.until(port, &http, |r| r.status == 401).await?;
    let r = h.get(port, &http.clone().header("authorization", &credentials)).await?;
    assert_eq!((r.status, r.header("x-backend")), (200, Some("alice")), "{r:?}");
    assert_eq!(r.echo()["headers"]["auth-path"].as_str(), Some("/verify/app"), "{r:?}");

    // A client cannot claim an identity the server did not give: without credentials, no
    // route sees its own auth-username header (the check answers first).
    let forged = Request::get("grpc.example.com", "/app").header("auth-username", "alice");
    assert_eq!(h.get(port, &forged).await?.status, 401);

    // Each server was asked only for its own listener's requests.
    let (grpc_calls, http_calls) = (grpc_auth.calls.clone(), http_auth.calls.clone());
    let load = |c: &std::sync::atomic::AtomicU64| c.load(std::sync::atomic::Ordering::Relaxed);
    let before = (load(&grpc_calls), load(&http_calls));
    for _ in 0..3 {
        assert_eq!(h.get(port, &open).await?.status, 200);
    }
    assert_eq!((load(&grpc_calls), load(&http_calls)), before, "the open listener's requests were checked");

    // Filters that cannot be honoured: the listener is not served, and says why.
    for host in ["missing.example.com", "extension.example.com"] {
        let r = h.get(port, &Request::get(host, "/app")).await?;
        assert_eq!(r.status, 404, "{host} is not served unchecked: {r:?}");
    }
    let gw = status_of_until(&client, V1, "Gateway", "gw", |s| {
        is(s, "missing", "ResolvedRefs", "False", "BackendNotFound")
            && is(s, "extension", "Accepted", "False", "UnsupportedValue")
            && is(s, "grpc", "Programmed", "True", "Programmed")
    })
    .await?;
    assert!(is(&gw, "missing", "Programmed", "False", "Invalid"), "{gw:#}");
    for served in ["grpc", "http", "open"] {
        assert!(is(&gw, served, "ResolvedRefs", "True", "ResolvedRefs"), "{served}: {gw:#}");
    }
    h.assert_no_nacks().await
}
