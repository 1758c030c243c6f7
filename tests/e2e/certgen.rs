//! contour-certgen: its certificates secure the real xDS channel between the real Envoy and the
//! controller, a certificate from another CA is refused, and it leaves existing certificates
//! alone unless told to overwrite (files and Secrets).

use std::path::Path;

use testkit::{ApiServer, Backend, Issued, Request, workspace_binary};

use crate::harness::{Harness, XdsMtls, single_route};

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

#[tokio::test]
async fn certgen_certificates_secure_xds_between_envoy_and_the_controller() -> anyhow::Result<()> {
    let dir = temp_dir("certgen")?;
    let printed = certgen(&["--pem", &dir.display().to_string()]).await?;
    assert!(printed.contains("contourcert.pem written"), "{printed}");
    let server = xds_server::Reloading::new(xds_server::TlsFiles {
        ca: path(&dir, "cacert.pem").into(),
        cert: path(&dir, "contourcert.pem").into(),
        key: path(&dir, "contourkey.pem").into(),
    })?;
    let envoy = bootstrap::XdsTls {
        ca_file: path(&dir, "cacert.pem"),
        cert_file: path(&dir, "envoycert.pem"),
        key_file: path(&dir, "envoykey.pem"),
    };
    let web = Backend::start("web").await?;
    let port = testkit::free_port();
    let h = Harness::start_mtls(&single_route(port, web.addr), XdsMtls { server: std::sync::Arc::new(server), envoy })
        .await?;
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
