//! contour-certgen: its certificates secure the real xDS channel between the real Envoy and the
//! controller, a certificate from another CA is refused, and it leaves existing certificates
//! alone unless told to overwrite (files and Secrets).

use std::path::Path;

use testkit::{ApiServer, Backend, Issued, Request, workspace_binary};

use crate::harness::{EnvoySide, Harness, XdsMtls, single_route};

/// Runs contour-certgen with `args`; returns what it printed.
async fn certgen(args: &[&str]) -> anyhow::Result<String> {
    let out = tokio::process::Command::new(workspace_binary("contour-certgen")?).args(args).output().await?;
    anyhow::ensure!(out.status.success(), "certgen failed: {}", String::from_utf8_lossy(&out.stderr));
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn temp_dir(name: &str) -> anyhow::Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("contour-{name}-{}-{}", std::process::id(), testkit::free_port()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

fn path(dir: &Path, file: &str) -> String {
    dir.join(file).display().to_string()
}

/// Both sides of xDS with certgen's files: the controller's from `dir`, Envoy's a certificate
/// for the harness's Gateway fleet (`--fleet default/gw`) issued into `fleet` from the CA kept
/// in `dir`.
async fn certgen_fleet_files(dir: &Path, fleet: &Path) -> anyhow::Result<XdsMtls> {
    let (ca_dir, out) = (dir.display().to_string(), fleet.display().to_string());
    certgen(&["--pem", "--overwrite", "--fleet", crate::harness::GATEWAY, "--ca-dir", &ca_dir, &out]).await?;
    let mut tls = certgen_files(dir)?;
    tls.envoy.cert_file = path(fleet, "envoycert.pem");
    tls.envoy.key_file = path(fleet, "envoykey.pem");
    Ok(tls)
}

/// Both sides of xDS using certgen's PEM files in `dir`.
fn certgen_files(dir: &Path) -> anyhow::Result<XdsMtls> {
    let server = xds_server::Reloading::new(xds_server::TlsFiles {
        ca: path(dir, "cacert.pem").into(),
        cert: path(dir, "contourcert.pem").into(),
        key: path(dir, "contourkey.pem").into(),
    })?;
    let envoy = bootstrap::XdsTls {
        ca_file: path(dir, "cacert.pem"),
        cert_file: path(dir, "envoycert.pem"),
        key_file: path(dir, "envoykey.pem"),
    };
    Ok(XdsMtls { server: std::sync::Arc::new(server), envoy })
}

#[tokio::test]
async fn certgen_certificates_secure_xds_between_envoy_and_the_controller() -> anyhow::Result<()> {
    let dir = temp_dir("certgen")?;
    let printed = certgen(&["--pem", "--keep-ca-key", &dir.display().to_string()]).await?;
    assert!(printed.contains("contourcert.pem written"), "{printed}");
    let fleet = temp_dir("certgen-fleet")?;
    let web = Backend::start("web").await?;
    let port = testkit::free_port();
    let h = Harness::start_mtls(&single_route(port, web.addr), certgen_fleet_files(&dir, &fleet).await?).await?;
    h.until(port, &Request::get("x", "/"), |r| r.header("x-backend") == Some("web")).await?;

    // Envoy's certificate is accepted; one from another certgen run (another CA) is not.
    let ca = std::fs::read_to_string(dir.join("cacert.pem"))?;
    let xds = std::net::SocketAddr::from(([127, 0, 0, 1], h.xds_port));
    let read = |d: &Path| -> anyhow::Result<Issued> {
        Ok(Issued {
            cert_pem: std::fs::read_to_string(d.join("envoycert.pem"))?,
            key_pem: std::fs::read_to_string(d.join("envoykey.pem"))?,
        })
    };
    let ours = testkit::h2_preface_mtls(xds, "contour", &ca, Some(&read(&dir)?)).await;
    assert!(ours.is_ok(), "certgen's Envoy certificate was refused: {ours:?}");
    let other = temp_dir("certgen-other")?;
    certgen(&["--pem", &other.display().to_string()]).await?;
    let foreign = testkit::h2_preface_mtls(xds, "contour", &ca, Some(&read(&other)?)).await;
    assert!(foreign.is_err(), "a certificate from another CA was answered");

    // Again without --overwrite: left alone, said so. With it: new certificates.
    let before = std::fs::read_to_string(dir.join("contourcert.pem"))?;
    let printed = certgen(&["--pem", &dir.display().to_string()]).await?;
    assert!(printed.contains("left alone"), "{printed}");
    assert_eq!(std::fs::read_to_string(dir.join("contourcert.pem"))?, before);
    certgen(&["--pem", "--overwrite", &dir.display().to_string()]).await?;
    assert_ne!(std::fs::read_to_string(dir.join("contourcert.pem"))?, before);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&other);
    let _ = std::fs::remove_dir_all(&fleet);
    h.assert_no_nacks().await
}

#[tokio::test]
async fn certgen_issues_a_fleet_certificate_that_receives_its_fleet_only() -> anyhow::Result<()> {
    let dir = temp_dir("certgen-ca")?;
    let printed = certgen(&["--pem", "--keep-ca-key", &dir.display().to_string()]).await?;
    assert!(printed.contains("cakey.pem written"), "{printed}");
    // A fleet certificate for the harness's Gateway, default/gw, from the kept CA.
    let fleet_dir = temp_dir("certgen-fleet")?;
    let tls = certgen_fleet_files(&dir, &fleet_dir).await?;
    let text = std::fs::read_to_string(fleet_dir.join("envoycert.pem"))?;
    let identity = certs::fleet::identity_pem(&text, certs::DEFAULT_TRUST_DOMAIN)?;
    assert_eq!(identity.subject, "spiffe://projectcontour.io/ns/default/gateway/gw");
    let web = Backend::start("web").await?;
    let port = testkit::free_port();
    let h = Harness::start_mtls(&single_route(port, web.addr), tls).await?;
    h.until(port, &Request::get("x", "/"), |r| r.header("x-backend") == Some("web")).await?;
    assert_eq!(h.server.stats().refused.values().sum::<u64>(), 0);
    // The same certificate claiming another fleet is refused.
    let fleet_tls = bootstrap::XdsTls {
        ca_file: path(&dir, "cacert.pem"),
        cert_file: path(&fleet_dir, "envoycert.pem"),
        key_file: path(&fleet_dir, "envoykey.pem"),
    };
    let other = testkit::Envoy::start(bootstrap::Bootstrap {
        xds_address: "127.0.0.1".into(),
        xds_port: h.xds_port,
        fleet: ir::DEFAULT_FLEET.into(),
        node_id: "other".into(),
        tls: Some(fleet_tls),
        ..Default::default()
    })
    .await?;
    let refused = testkit::eventually(std::time::Duration::from_secs(20), || async {
        let stats = h.server.stats();
        (stats.refused.get(&xds_server::Refusal::OtherFleet).copied().unwrap_or_default() > 0).then_some(())
    })
    .await;
    assert!(refused.is_some(), "a fleet certificate received the default fleet; log:\n{}", other.log());
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&fleet_dir);
    h.assert_no_nacks().await
}

#[tokio::test]
async fn certgen_creates_secrets_once_and_replaces_them_on_request() -> anyhow::Result<()> {
    use k8s_openapi::api::core::v1::Secret;
    let api = ApiServer::start().await?;
    let client = api.client().await?;
    let kubeconfig = api.kubeconfig.display().to_string();
    let args = ["--kube", "--kubeconfig", &kubeconfig, "--namespace", "default", "--secrets-format", "compact"];
    let printed = certgen(&args).await?;
    assert!(
        printed.contains("secret/contourcert created") && printed.contains("secret/envoycert created"),
        "{printed}"
    );
    let secrets: kube::Api<Secret> = kube::Api::namespaced(client, "default");
    let data = |s: Secret| s.data.unwrap_or_default();
    let first = data(secrets.get("contourcert").await?);
    assert!(first.contains_key("ca.crt") && first.contains_key("tls.crt") && first.contains_key("tls.key"));
    let printed = certgen(&args).await?;
    assert!(printed.contains("left alone"), "{printed}");
    assert_eq!(data(secrets.get("contourcert").await?), first, "unchanged without --overwrite");
    let mut overwrite = args.to_vec();
    overwrite.push("--overwrite");
    certgen(&overwrite).await?;
    assert_ne!(data(secrets.get("contourcert").await?)["tls.crt"], first["tls.crt"], "replaced with --overwrite");
    // The legacy layout adds the CA as its own Secret, with a suffix on every name.
    let legacy = ["--kube", "--kubeconfig", &kubeconfig, "--namespace", "default", "--secrets-name-suffix", "-gw"];
    certgen(&legacy).await?;
    assert!(secrets.get("cacert-gw").await?.data.unwrap_or_default().contains_key("cacert.pem"));
    Ok(())
}

#[tokio::test]
async fn rotated_certificates_are_used_without_restarting_envoy_or_the_controller() -> anyhow::Result<()> {
    let dir = temp_dir("certgen-rotate")?;
    certgen(&["--pem", "--keep-ca-key", &dir.display().to_string()]).await?;
    let fleet = temp_dir("certgen-rotate-fleet")?;
    let (web, web2) = (Backend::start("web").await?, Backend::start("web2").await?);
    let port = testkit::free_port();
    let tls = certgen_fleet_files(&dir, &fleet).await?;
    // As contour-bootstrap --resources-dir: Envoy reads its certificates through SDS files.
    let side = EnvoySide { resources_dir: Some("resources".into()), relay: true, ..Default::default() };
    let h = Harness::start_envoy_side(&single_route(port, web.addr), Default::default(), Some(tls), side).await?;
    h.until(port, &Request::get("x", "/"), |r| r.header("x-backend") == Some("web")).await?;
    // Each SDS file read (certificate, CA) updates the xDS cluster's TLS context: the only
    // cluster here with TLS (its stats are named `<namespace>_contour_<port>`, as upstream's).
    let sds_updates = || h.envoy.counter_sum("client_ssl_socket_factory.ssl_context_update_by_sds");
    let before = sds_updates().await?;
    assert!(before >= 2, "Envoy read its certificate and CA through SDS");

    // A new CA and new certificates for both sides, written over the old files.
    let old_envoy = Issued {
        cert_pem: std::fs::read_to_string(fleet.join("envoycert.pem"))?,
        key_pem: std::fs::read_to_string(fleet.join("envoykey.pem"))?,
    };
    certgen(&["--pem", "--overwrite", "--keep-ca-key", &dir.display().to_string()]).await?;
    certgen_fleet_files(&dir, &fleet).await?;
    let reloaded = testkit::eventually(std::time::Duration::from_secs(15), || async {
        sds_updates().await.ok().filter(|n| *n >= before + 2)
    })
    .await;
    assert!(
        reloaded.is_some(),
        "Envoy did not re-read its rotated certificate; stats:\n{}\nlog:\n{}",
        h.envoy.admin_get("/stats?filter=sds").await.unwrap_or_default(),
        h.envoy.log()
    );
    // The controller now refuses the old certificate...
    let ca = std::fs::read_to_string(dir.join("cacert.pem"))?;
    let xds = std::net::SocketAddr::from(([127, 0, 0, 1], h.xds_port));
    assert!(testkit::h2_preface_mtls(xds, "contour", &ca, Some(&old_envoy)).await.is_err(), "old certificate accepted");
    // ...so once the connection drops, a change reaches Envoy only if it reconnects with the
    // new set on both sides.
    h.relay.as_ref().expect("relay").cut();
    h.write(&single_route(port, web2.addr))?;
    h.until(port, &Request::get("x", "/"), |r| r.header("x-backend") == Some("web2")).await?;
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&fleet);
    h.assert_no_nacks().await
}
