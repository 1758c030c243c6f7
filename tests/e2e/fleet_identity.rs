//! Tenant isolation on xDS: with mTLS, an Envoy receives only the fleet its client certificate
//! names. A fleet certificate claiming another fleet, and the installation's certificate claiming
//! a Gateway's fleet, get nothing (no listener, route, cluster or secret); the installation's
//! certificate still gets the default fleet; a fleet certificate is rotated under traffic.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use testkit::{Backend, Ca, Envoy, Request};
use xds_server::Refusal;

use crate::harness::{EnvoySide, Harness, XdsMtls, default_fleet_options, gateway_in, service_in, single_route};
use crate::tls::tls_secret_in as secret;

const DAY: Duration = Duration::from_secs(86_400);

/// A directory of PEM files, written as certgen and the provisioner write them
/// ([`certs::files::write_together`]). Removed when dropped.
struct Files(PathBuf);

impl Files {
    fn new(name: &str) -> anyhow::Result<Self> {
        let dir = std::env::temp_dir().join(format!("contour-{name}-{}-{}", std::process::id(), testkit::free_port()));
        std::fs::create_dir_all(&dir)?;
        Ok(Self(dir))
    }

    /// Writes `text` to `name`, the other files kept.
    fn write(&self, name: &str, text: &str) -> anyhow::Result<String> {
        self.write_together(&[(name, text)])?;
        Ok(self.0.join(name).display().to_string())
    }

    fn write_together(&self, files: &[(&str, &str)]) -> anyhow::Result<()> {
        Ok(certs::files::write_together(&self.0, files, Some(0o600))?)
    }
}

impl Drop for Files {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The controller's side of mTLS from an installation's certificates, written into `files`.
fn server_tls(files: &Files, installation: &certs::Certificates) -> anyhow::Result<Arc<xds_server::Reloading>> {
    let tls = xds_server::TlsFiles {
        ca: files.write("cacert.pem", &installation.ca)?.into(),
        cert: files.write("contourcert.pem", &installation.contour_cert)?.into(),
        key: files.write("contourkey.pem", &installation.contour_key)?.into(),
    };
    Ok(Arc::new(xds_server::Reloading::new(tls)?))
}

/// Envoy's side: a client certificate and key written as `<prefix>cert.pem` / `<prefix>key.pem`.
fn client_tls(files: &Files, prefix: &str, ca: &str, cert: &str, key: &str) -> anyhow::Result<bootstrap::XdsTls> {
    Ok(bootstrap::XdsTls {
        ca_file: files.write(&format!("{prefix}ca.pem"), ca)?,
        cert_file: files.write(&format!("{prefix}cert.pem"), cert)?,
        key_file: files.write(&format!("{prefix}key.pem"), key)?,
    })
}

/// An Envoy claiming `fleet` over mTLS with `tls`.
async fn claiming(xds_port: u16, fleet: &str, tls: bootstrap::XdsTls) -> anyhow::Result<Envoy> {
    Envoy::start(bootstrap::Bootstrap {
        xds_address: "127.0.0.1".into(),
        xds_port,
        fleet: fleet.into(),
        node_id: format!("claims-{}-{xds_port}", fleet.replace('/', "-")),
        tls: Some(tls),
        ..Default::default()
    })
    .await
}

/// The names of the dynamic listeners, clusters, route configurations and secrets Envoy holds.
async fn dynamic_resources(envoy: &Envoy) -> anyhow::Result<Vec<String>> {
    let dump: serde_json::Value = serde_json::from_str(&envoy.admin_get("/config_dump").await?)?;
    let mut names = Vec::new();
    for config in dump["configs"].as_array().into_iter().flatten() {
        for key in ["dynamic_listeners", "dynamic_active_clusters", "dynamic_route_configs", "dynamic_active_secrets"] {
            for item in config[key].as_array().into_iter().flatten() {
                let name = item["name"].as_str().or_else(|| item["cluster"]["name"].as_str());
                let name = name.or_else(|| item["route_config"]["name"].as_str()).unwrap_or("?");
                names.push(format!("{key}: {name}"));
            }
        }
    }
    Ok(names)
}

fn refused(h: &Harness, reason: Refusal) -> u64 {
    h.server.stats().refused.get(&reason).copied().unwrap_or_default()
}

/// Waits until the server has refused `at_least` streams for `reason`.
async fn until_refused(h: &Harness, reason: Refusal, at_least: u64) -> anyhow::Result<()> {
    let seen =
        testkit::eventually(Duration::from_secs(20), || async { (refused(h, reason) >= at_least).then_some(()) }).await;
    anyhow::ensure!(seen.is_some(), "{reason:?}: {} refusals, wanted {at_least}", refused(h, reason));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_envoy_receives_only_the_fleet_its_certificate_names() -> anyhow::Result<()> {
    let installation = certs::generate("projectcontour", 1)?;
    let authority = installation.authority()?;
    let fleet = |f: &str| certs::FleetId::parse(f).expect("a fleet name");
    let cert_a = authority.issue_fleet(&fleet("team-a/gw"), certs::DEFAULT_TRUST_DOMAIN, DAY)?;
    let files = Files::new("fleet-identity")?;
    let server = server_tls(&files, &installation)?;
    let ca = installation.ca.as_str();
    let envoy_a = client_tls(&files, "a", ca, &cert_a.cert, &cert_a.key)?;

    let tls = Ca::new()?;
    let (a, b, web) = (Backend::start("team-a").await?, Backend::start("team-b").await?, Backend::start("web").await?);
    let port = testkit::free_port;
    let (a_https, b_https, default_http, default_https) = (port(), port(), port(), port());
    let https = |host: &str, port: u16, cert: &str| {
        format!(
            "  - {{name: https, port: {port}, protocol: HTTPS, hostname: {host}, tls: {{certificateRefs: [{{name: {cert}}}]}}}}"
        )
    };
    let route = |namespace: &str, host: &str| {
        format!(
            "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {{name: web, namespace: {namespace}}}\nspec:\n  parentRefs: [{{name: gw}}]\n  hostnames: [{host}]\n  rules: [{{backendRefs: [{{name: web, port: 80}}]}}]\n"
        )
    };
    let yaml = [
        "apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata: {name: contour}\nspec: {controllerName: projectcontour.io/gateway-controller}\n".to_string(),
        gateway_in("team-a", &https("a.example.test", a_https, "cert-a")),
        gateway_in("team-b", &https("b.example.test", b_https, "cert-b")),
        secret("team-a", "cert-a", &tls.issue(&["a.example.test"])?),
        secret("team-b", "cert-b", &tls.issue(&["b.example.test"])?),
        service_in("team-a", "web", &[a.addr]),
        service_in("team-b", "web", &[b.addr]),
        route("team-a", "a.example.test"),
        route("team-b", "b.example.test"),
        service_in("default", "web", &[web.addr]),
        "---\napiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {name: web, namespace: default}\nspec:\n  virtualhost: {fqdn: web.example.test}\n  routes: [{services: [{name: web, port: 80}]}]\n".to_string(),
    ]
    .concat();
    // Team A's Envoy, with team A's fleet certificate, claims team A's fleet: served.
    let mtls = XdsMtls { server, envoy: envoy_a.clone() };
    let options = default_fleet_options(default_http, default_https);
    let h = Harness::start_fleet_mtls(&yaml, "team-a/gw", options, mtls).await?;
    let r = h.until_tls(a_https, "a.example.test", &tls.pem(), None, &Request::get("a.example.test", "/")).await?;
    assert_eq!(r.header("x-backend"), Some("team-a"));

    // Team A's certificate claiming team B's fleet, then the installation's certificate (no
    // fleet identity) claiming it: each refused, and Envoy holds nothing of it. Each refusal
    // closes the connection: Envoy's next attempt is a new TLS handshake (with the certificate
    // it holds then), refused again. (One Envoy at a time: tests share a few Envoy slots.)
    let envoy_plain = client_tls(&files, "plain", ca, &installation.envoy_cert, &installation.envoy_key)?;
    for (tls, reason) in [(envoy_a.clone(), Refusal::OtherFleet), (envoy_plain.clone(), Refusal::NoFleetIdentity)] {
        let envoy = claiming(h.xds_port, "team-b/gw", tls).await?;
        until_refused(&h, reason, 2).await?;
        let xds_cluster = format!("_contour_{}.upstream_cx_total", h.xds_port);
        let reconnected = testkit::eventually(Duration::from_secs(20), || async {
            envoy.counter_sum(&xds_cluster).await.ok().filter(|n| *n >= 2)
        })
        .await;
        assert!(
            reconnected.is_some(),
            "{reason:?}: the refused connection was not closed; Envoy kept its one connection"
        );
        let held = dynamic_resources(&envoy).await?;
        assert!(held.is_empty(), "{reason:?}: a refused Envoy holds {held:?}");
    }
    let req = Request::get("b.example.test", "/");
    let at = std::net::SocketAddr::from(([127, 0, 0, 1], b_https));
    // Nothing listens on team B's port: its own fleet has no Envoy, the refused ones no listener.
    assert!(testkit::request_tls(at, "b.example.test", &tls.pem(), &req).await.is_err(), "team B's listener is served");
    assert_eq!(b.hits.load(Ordering::Relaxed), 0, "team B's backend was reached");

    // The installation's certificate still receives the default fleet (Ingress and HTTPProxy),
    // as upstream's manifests give every Envoy.
    let default = claiming(h.xds_port, ir::DEFAULT_FLEET, envoy_plain).await?;
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], default_http));
    let served = testkit::eventually(Duration::from_secs(15), || async {
        testkit::request(addr, &Request::get("web.example.test", "/")).await.ok().filter(|r| r.status == 200)
    })
    .await;
    assert_eq!(
        served.and_then(|r| r.header("x-backend").map(str::to_string)).as_deref(),
        Some("web"),
        "{}",
        default.log()
    );
    let held = dynamic_resources(&default).await?;
    assert!(held.iter().all(|n| !n.contains("team-")), "the default fleet holds a tenant's resources: {held:?}");
    assert_eq!(h.server.stats().nacks_total(), 0);
    h.assert_no_nacks().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_certificate_is_rotated_with_traffic_flowing() -> anyhow::Result<()> {
    let fleet = certs::FleetId::parse(crate::harness::GATEWAY).expect("a fleet name");
    let first = certs::generate("projectcontour", 1)?;
    let issued = first.authority()?.issue_fleet(&fleet, certs::DEFAULT_TRUST_DOMAIN, DAY)?;
    let files = Files::new("fleet-rotate")?;
    let server = server_tls(&files, &first)?;
    let envoy = client_tls(&files, "envoy", &first.ca, &issued.cert, &issued.key)?;
    let (web, web2) = (Backend::start("web").await?, Backend::start("web2").await?);
    let port = testkit::free_port();
    // As contour-bootstrap --resources-dir: Envoy reads its certificate through SDS files.
    let side = EnvoySide { resources_dir: Some("resources".into()), relay: true, ..Default::default() };
    let mtls = Some(XdsMtls { server, envoy });
    let h = Harness::start_envoy_side(&single_route(port, web.addr), Default::default(), mtls, side).await?;
    h.until(port, &Request::get("x", "/"), |r| r.header("x-backend") == Some("web")).await?;

    // Requests flow the whole time; every one must be answered by a backend.
    let (stop, sent, failed) =
        (Arc::new(AtomicBool::new(false)), Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let traffic = {
        let (stop, sent, failed) = (Arc::clone(&stop), Arc::clone(&sent), Arc::clone(&failed));
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let ok = testkit::request(addr, &Request::get("x", "/")).await.is_ok_and(|r| r.status == 200);
                sent.fetch_add(1, Ordering::Relaxed);
                if !ok {
                    failed.fetch_add(1, Ordering::Relaxed);
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };

    // A new CA: the controller's certificate and the fleet's, written over the old files.
    let sds_updates = || h.envoy.counter_sum("client_ssl_socket_factory.ssl_context_update_by_sds");
    let before = sds_updates().await?;
    let second = certs::generate("projectcontour", 1)?;
    let renewed = second.authority()?.issue_fleet(&fleet, certs::DEFAULT_TRUST_DOMAIN, DAY)?;
    rotate(&files, &second, &renewed)?;
    let reloaded = testkit::eventually(Duration::from_secs(15), || async {
        sds_updates().await.ok().filter(|n| *n >= before + 2)
    })
    .await;
    assert!(reloaded.is_some(), "Envoy did not re-read its rotated certificate; log:\n{}", h.envoy.log());
    // The old certificate is refused now; a change reaches Envoy only over a new connection
    // with the new certificate, which must be admitted to its fleet.
    let xds = std::net::SocketAddr::from(([127, 0, 0, 1], h.xds_port));
    let old = testkit::Issued { cert_pem: issued.cert.clone(), key_pem: issued.key.clone() };
    assert!(
        testkit::h2_preface_mtls(xds, "contour", &second.ca, Some(&old)).await.is_err(),
        "old certificate accepted"
    );
    h.relay.as_ref().expect("relay").cut();
    h.write(&single_route(port, web2.addr))?;
    h.until(port, &Request::get("x", "/"), |r| r.header("x-backend") == Some("web2")).await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::Relaxed);
    traffic.await?;
    let (sent, failed) = (sent.load(Ordering::Relaxed), failed.load(Ordering::Relaxed));
    assert!(sent >= 10, "only {sent} requests were sent");
    assert_eq!(failed, 0, "{failed} of {sent} requests failed during the rotation");
    assert_eq!(h.server.stats().refused.values().sum::<u64>(), 0, "the rotated certificate was refused");
    h.assert_no_nacks().await
}

/// Writes a new CA, the controller's certificate and the fleet's over the old files, all at once.
fn rotate(files: &Files, installation: &certs::Certificates, fleet: &certs::Issued) -> anyhow::Result<()> {
    files.write_together(&[
        ("contourcert.pem", &installation.contour_cert),
        ("contourkey.pem", &installation.contour_key),
        ("cacert.pem", &installation.ca),
        ("envoycert.pem", &fleet.cert),
        ("envoykey.pem", &fleet.key),
        ("envoyca.pem", &installation.ca),
    ])
}
