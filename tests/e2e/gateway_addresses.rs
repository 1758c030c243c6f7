//! Gateway address routability (Gateway API 1.7, experimental channel) against a real API
//! server and the real Envoy: each address a Gateway asks for is matched with one the Gateway
//! has (its Service's ClusterIP for `Cluster`), the status reports each one's routability and
//! the `AddressesAssigned` condition, and a Gateway keeps serving on the addresses it got.

use serde_json::Value;
use testkit::{ApiServer, NetnsBackend, Request, apply_yaml};

use crate::harness::{Harness, http_listener, http_route, service};
use crate::kubernetes::status_of_until;

const V1: &str = "gateway.networking.k8s.io/v1";

fn condition<'a>(status: &'a Value, type_: &str) -> Option<&'a Value> {
    status["conditions"].as_array()?.iter().find(|c| c["type"] == type_)
}

fn has(status: &Value, type_: &str, state: &str, reason: &str) -> bool {
    condition(status, type_).is_some_and(|c| c["status"] == state && c["reason"] == reason)
}

/// `(value, routability)` of each status address.
fn addresses(status: &Value) -> Vec<(String, String)> {
    let text = |v: &Value| v.as_str().unwrap_or("<unset>").to_string();
    status["addresses"].as_array().into_iter().flatten().map(|a| (text(&a["value"]), text(&a["routability"]))).collect()
}

/// The Gateway `default/<name>` asking for `addresses` (a YAML flow list), with one HTTP
/// listener on `port`.
fn gateway(name: &str, addresses: &str, port: u16) -> String {
    format!(
        "---\napiVersion: {V1}\nkind: Gateway\nmetadata: {{name: {name}, namespace: default}}\nspec:\n  gatewayClassName: contour\n  addresses: {addresses}\n  listeners:\n{}\n",
        http_listener("http", port)
    )
}

#[tokio::test]
async fn requested_routability_is_matched_reported_and_served() -> anyhow::Result<()> {
    let api = ApiServer::start().await?;
    api.install_gateway_api_latest().await?;
    let client = api.client().await?;
    let backend = NetnsBackend::start("scoped").await?;
    let port = testkit::free_port();
    let class = format!(
        "apiVersion: {V1}\nkind: GatewayClass\nmetadata: {{name: contour}}\nspec: {{controllerName: projectcontour.io/gateway-controller}}\n"
    );
    // The sentinel address is the one the Envoy binds; the ClusterIP comes with a Service.
    let scoped = "[{type: IPAddress, value: 127.0.0.1, routability: testing.x-k8s.io/sentinel}, {type: IPAddress, routability: Cluster}]";
    let yaml = [
        class,
        gateway("gw", scoped, port),
        service("web", &[backend.addr]),
        http_route("web", "  rules: [{backendRefs: [{name: web, port: 80}]}]"),
        // Nothing this implementation offers: never assigned, never programmed.
        gateway("corp", "[{type: IPAddress, routability: example.com/CorpWan}]", testkit::free_port()),
    ]
    .concat();
    apply_yaml(&client, &yaml).await?;
    let h = Harness::start_kubernetes(client.clone(), true).await?;
    let req = Request::get("web.example.com", "/");
    h.until(port, &req, |r| r.status == 200).await?;

    // No Service yet: the sentinel address is assigned, the ClusterIP awaited.
    let gw =
        status_of_until(&client, V1, "Gateway", "gw", |s| has(s, "AddressesAssigned", "False", "PartiallyAssigned"))
            .await?;
    assert_eq!(addresses(&gw), [("127.0.0.1".to_string(), "testing.x-k8s.io/sentinel".to_string())]);
    let message = condition(&gw, "AddressesAssigned").and_then(|c| c["message"].as_str()).unwrap_or_default();
    assert_eq!(message, "spec.addresses[1]: no matching address yet");
    assert!(has(&gw, "Programmed", "True", "Programmed"), "served on the address it has: {gw:#}");

    let corp = status_of_until(&client, V1, "Gateway", "corp", |s| has(s, "AddressesAssigned", "False", "NotAssigned"))
        .await?;
    assert!(has(&corp, "Programmed", "False", "AddressNotAssigned"), "{corp:#}");
    let message = condition(&corp, "AddressesAssigned").and_then(|c| c["message"].as_str()).unwrap_or_default();
    assert_eq!(message, "spec.addresses[0]: routability \"example.com/CorpWan\" is not supported");
    assert_eq!(addresses(&corp), Vec::<(String, String)>::new());

    // The Gateway's Service, as the provisioner makes it: the API server allocates its ClusterIP.
    let svc = "apiVersion: v1\nkind: Service\nmetadata: {name: envoy-gw, namespace: default, labels: {gateway.networking.k8s.io/gateway-name: gw}}\nspec: {type: ClusterIP, ports: [{name: http, port: 80}]}\n";
    apply_yaml(&client, svc).await?;
    let cluster_ip = testkit::object_of(&client, "v1", "Service", "default", "envoy-gw")
        .await?
        .and_then(|s| s["spec"]["clusterIP"].as_str().map(String::from))
        .unwrap_or_default();
    assert!(cluster_ip.starts_with("10.96."), "allocated from the service CIDR: {cluster_ip:?}");
    let gw =
        status_of_until(&client, V1, "Gateway", "gw", |s| has(s, "AddressesAssigned", "True", "AddressesAssigned"))
            .await?;
    assert_eq!(
        addresses(&gw),
        [("127.0.0.1".to_string(), "testing.x-k8s.io/sentinel".to_string()), (cluster_ip, "Cluster".to_string())]
    );
    assert_eq!(h.get(port, &req).await?.status, 200, "still served");

    // A scope nothing offers, beside the sentinel: partially assigned, still served.
    let partial = "[{type: IPAddress, value: 127.0.0.1, routability: testing.x-k8s.io/sentinel}, {type: IPAddress, routability: testing.x-k8s.io/other}]";
    apply_yaml(&client, &gateway("gw", partial, port)).await?;
    let gw =
        status_of_until(&client, V1, "Gateway", "gw", |s| has(s, "AddressesAssigned", "False", "PartiallyAssigned"))
            .await?;
    let message = condition(&gw, "AddressesAssigned").and_then(|c| c["message"].as_str()).unwrap_or_default();
    assert_eq!(message, "spec.addresses[1]: routability \"testing.x-k8s.io/other\" is not supported");
    assert_eq!(addresses(&gw), [("127.0.0.1".to_string(), "testing.x-k8s.io/sentinel".to_string())]);
    assert_eq!(h.get(port, &req).await?.status, 200, "still served");
    Ok(())
}
