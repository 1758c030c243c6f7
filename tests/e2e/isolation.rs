//! Tenants never see each other's secrets or reach each other's Services: two teams' Gateways
//! (each its own fleet, its own Envoy) and the default fleet, checked through what each real
//! Envoy holds (its config_dump) and answers.

use std::net::SocketAddr;
use std::time::Duration;

use testkit::{Backend, Ca, Envoy, Request};

use crate::harness::{Harness, default_fleet_options, fleet_envoy, gateway_in as gateway, service_in};
use crate::tls::tls_secret_in as secret;

fn route(namespace: &str, name: &str, host: &str, backend: &str) -> String {
    format!(
        "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {{name: {name}, namespace: {namespace}}}\nspec:\n  parentRefs: [{{name: gw}}]\n  hostnames: [{host}]\n  rules: [{{backendRefs: [{backend}]}}]\n"
    )
}

/// The names of the secrets an Envoy holds, from its config_dump.
async fn secrets_held(envoy: &Envoy) -> anyhow::Result<Vec<String>> {
    let dump: serde_json::Value =
        serde_json::from_str(&envoy.admin_get("/config_dump?resource=dynamic_active_secrets").await?)?;
    Ok(dump["configs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s["name"].as_str().map(str::to_string))
        .collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tenants_get_only_their_own_secrets_and_services() -> anyhow::Result<()> {
    let ca = Ca::new()?;
    let (a, b) = (Backend::start("team-a").await?, Backend::start("team-b").await?);
    let port = testkit::free_port;
    let (a_https, b_https, b_stolen, b_http, default_http, default_https) =
        (port(), port(), port(), port(), port(), port());
    let yaml = [
        "apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata: {name: contour}\nspec: {controllerName: projectcontour.io/gateway-controller}\n".to_string(),
        gateway("team-a", &format!("  - {{name: https, port: {a_https}, protocol: HTTPS, hostname: a.example.test, tls: {{certificateRefs: [{{name: cert-a}}]}}}}")),
        // Team B's Gateway names team A's certificate without a ReferenceGrant: that listener
        // must not be served, and team B's fleet must never receive the certificate.
        gateway("team-b", &format!(
            "  - {{name: https, port: {b_https}, protocol: HTTPS, hostname: b.example.test, tls: {{certificateRefs: [{{name: cert-b}}]}}}}\n  - {{name: stolen, port: {b_stolen}, protocol: HTTPS, hostname: a.example.test, tls: {{certificateRefs: [{{name: cert-a, namespace: team-a}}]}}}}\n  - {{name: http, port: {b_http}, protocol: HTTP}}"
        )),
        secret("team-a", "cert-a", &ca.issue(&["a.example.test"])?),
        secret("team-a", "unused", &ca.issue(&["unused.example.test"])?),
        secret("team-b", "cert-b", &ca.issue(&["b.example.test"])?),
        service_in("team-a", "web", &[a.addr]),
        service_in("team-b", "web", &[b.addr]),
        route("team-a", "web", "a.example.test", "{name: web, port: 80}"),
        route("team-b", "web", "b.example.test", "{name: web, port: 80}"),
        // Team B's route to team A's Service, without a ReferenceGrant.
        route("team-b", "steal", "steal.example.test", "{name: web, namespace: team-a, port: 80}"),
        // An HTTPProxy of team B naming team A's certificate without a delegation.
        "---\napiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {name: proxy, namespace: team-b}\nspec:\n  virtualhost: {fqdn: proxy.example.test, tls: {secretName: team-a/cert-a}}\n  routes: [{services: [{name: web, port: 80}]}]\n".to_string(),
    ]
    .concat();
    let h = Harness::start_with(&yaml, "team-a/gw", default_fleet_options(default_http, default_https)).await?;
    let (team_b, default) =
        (fleet_envoy(h.xds_port, "team-b/gw", false).await?, fleet_envoy(h.xds_port, "contour", false).await?);
    let at = |port: u16| SocketAddr::from(([127, 0, 0, 1], port));

    // Each team's own listener serves its own certificate and backend.
    let r = h.until_tls(a_https, "a.example.test", &ca.pem(), None, &Request::get("a.example.test", "/")).await?;
    assert_eq!(r.header("x-backend"), Some("team-a"));
    let r = h.until_tls(b_https, "b.example.test", &ca.pem(), None, &Request::get("b.example.test", "/")).await?;
    assert_eq!(r.header("x-backend"), Some("team-b"));
    // The listener naming another team's certificate is not served at all.
    let req = Request::get("a.example.test", "/");
    let stolen = testkit::request_tls(at(b_stolen), "a.example.test", &ca.pem(), &req).await;
    assert!(stolen.is_err(), "team B's listener served team A's certificate");
    // A route to another team's Service without a grant answers 500 and never reaches it.
    let hits = a.hits.load(std::sync::atomic::Ordering::Relaxed);
    let r = h.until(b_http, &Request::get("steal.example.test", "/"), |r| r.status != 404).await?;
    assert_eq!(r.status, 500, "{r:?}");
    assert_eq!(a.hits.load(std::sync::atomic::Ordering::Relaxed), hits, "team A's backend was reached");
    // The HTTPProxy naming another team's certificate is not served over TLS.
    let req = Request::get("proxy.example.test", "/");
    let proxy = testkit::request_tls(at(default_https), "proxy.example.test", &ca.pem(), &req).await;
    assert!(proxy.is_err(), "the default fleet served team A's certificate for team B's HTTPProxy");

    // What each Envoy holds: its own listeners' certificates, nothing else.
    let held = testkit::eventually(Duration::from_secs(10), || async {
        let a = secrets_held(&h.envoy).await.ok()?;
        (!a.is_empty()).then_some(a)
    })
    .await
    .unwrap_or_default();
    assert!(held.iter().any(|n| n.contains("cert-a")), "team A's Envoy lacks its certificate: {held:?}");
    assert!(held.iter().all(|n| n.contains("team-a") && n.contains("cert-a")), "team A's Envoy holds {held:?}");
    let held = secrets_held(&team_b).await?;
    assert!(held.iter().any(|n| n.contains("cert-b")), "team B's Envoy lacks its certificate: {held:?}");
    assert!(held.iter().all(|n| !n.contains("team-a")), "team B's Envoy holds team A's secrets: {held:?}");
    let held = secrets_held(&default).await?;
    assert!(held.iter().all(|n| !n.contains("team-a")), "the default fleet holds team A's secrets: {held:?}");
    h.assert_no_nacks().await
}

/// The listening sockets bound to `port`, from the kernel's tables.
fn listeners_on(port: u16) -> Vec<String> {
    let mut out = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let text = std::fs::read_to_string(table).unwrap_or_default();
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            // local_address is ADDR:PORT in hex; state 0A is LISTEN.
            if let (Some(local), Some("0A")) = (fields.get(1), fields.get(3).copied())
                && let Some((addr, p)) = local.split_once(':')
                && u16::from_str_radix(p, 16).ok() == Some(port)
            {
                out.push(addr.to_string());
            }
        }
    }
    out
}

#[tokio::test]
async fn admin_and_debug_endpoints_listen_on_loopback_only_by_default() -> anyhow::Result<()> {
    // No --debug-http-address: the default.
    let serve = crate::harness::Serve::start("", None, &[])?;
    let debug = serve.debug;
    let bound = testkit::eventually(Duration::from_secs(15), || async {
        let l = listeners_on(debug);
        (!l.is_empty()).then_some(l)
    })
    .await
    .unwrap_or_default();
    // 127.0.0.1 in the kernel's little-endian hex.
    assert_eq!(bound, ["0100007F"], "the debug server listens on {bound:?}; log:\n{}", serve.log());
    // Envoy's admin interface: a loopback port (or, as contour-bootstrap writes by default, a
    // unix socket).
    let envoy = serve.envoy().await?;
    assert_eq!(listeners_on(envoy.admin.port()), ["0100007F"]);
    let json = bootstrap::Bootstrap::default().to_json();
    assert!(json["admin"]["address"]["pipe"]["path"].is_string(), "the default admin address: {}", json["admin"]);
    Ok(())
}
