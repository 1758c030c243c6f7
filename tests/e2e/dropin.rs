//! What an upstream Contour user's files and habits meet: the `contour` command, the bootstrap
//! file written in place, and kubeconfigs made the way people make them.

use std::io::Read;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ListParams};
use testkit::{ApiServer, workspace_binary};

use crate::harness::Serve;

/// `contour bootstrap PATH` rewrites PATH itself: a reader that opened it before (upstream's
/// e2e framework keeps its temporary file open) reads the bootstrap through its own handle.
#[tokio::test]
async fn contour_bootstrap_writes_the_file_a_reader_already_holds() -> anyhow::Result<()> {
    let path =
        std::env::temp_dir().join(format!("contour-bootstrap-{}-{}.json", std::process::id(), testkit::free_port()));
    std::fs::write(&path, "")?;
    let mut held = std::fs::File::open(&path)?;
    let out = tokio::process::Command::new(workspace_binary("contour")?)
        .args(["bootstrap"])
        .arg(&path)
        .args([
            "--xds-address=127.0.0.1",
            "--xds-port=8001",
            "--xds-resource-version=v3",
            "--admin-address=/admin/admin.sock",
        ])
        .output()
        .await?;
    assert!(out.status.success(), "contour bootstrap: {}", String::from_utf8_lossy(&out.stderr));
    let mut text = String::new();
    held.read_to_string(&mut text)?;
    let json: serde_json::Value = serde_json::from_str(&text)?;
    assert!(json["static_resources"]["clusters"].is_array(), "the held handle reads the bootstrap: {text}");
    let _ = std::fs::remove_file(&path);
    Ok(())
}

/// Each upstream subcommand reaches the binary that does its job, with its flags.
#[tokio::test]
async fn the_contour_command_runs_our_binaries() -> anyhow::Result<()> {
    let contour = workspace_binary("contour")?;
    let run = |args: &'static [&'static str]| {
        let contour = contour.clone();
        async move { tokio::process::Command::new(contour).args(args).output().await }
    };
    let out = run(&["version"]).await?;
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("version: v"));
    for (args, usage) in [
        (&["serve", "--incluster", "--xds-address=0.0.0.0", "--help"][..], "Usage: contour-serve"),
        (&["envoy", "shutdown-manager", "--serve-port=8090", "--help"][..], "Usage: contour-shutdown-manager serve"),
        (&["envoy", "shutdown", "--check-delay=30s", "--help"][..], "Usage: contour-shutdown-manager shutdown"),
        (&["certgen", "--kube", "--secrets-format=compact", "--help"][..], "Usage: contour-certgen"),
    ] {
        let out = run(args).await?;
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "contour {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(help.contains(usage), "{args:?}: {help}");
    }
    let out = run(&["serve", "--no-such-flag"]).await?;
    assert_eq!(out.status.code(), Some(2), "our binary's own refusal comes back");
    Ok(())
}

/// A client certificate made by `openssl x509 -req` (X.509 v1) works, as it does for Go clients:
/// certgen reaches the API server with it.
#[tokio::test]
async fn a_kubeconfig_with_an_x509_v1_client_certificate_is_accepted() -> anyhow::Result<()> {
    let api = ApiServer::start().await?;
    let kubeconfig = api.v1_certificate_kubeconfig().await?;
    let text = tokio::process::Command::new("openssl")
        .args(["x509", "-noout", "-text", "-in"])
        .arg(api.dir.join("v1.pem"))
        .output()
        .await?;
    assert!(String::from_utf8_lossy(&text.stdout).contains("Version: 1 (0x0)"), "the fixture is a v1 certificate");

    let client = kubeclient::connect(Some(&kubeconfig), false).await?;
    let namespaces: Api<Namespace> = Api::all(client);
    assert!(!namespaces.list(&ListParams::default()).await?.items.is_empty());

    let out = tokio::process::Command::new(workspace_binary("contour-certgen")?)
        .args(["--kube", "--namespace=default", "--kubeconfig"])
        .arg(&kubeconfig)
        .output()
        .await?;
    assert!(out.status.success(), "certgen with a v1 certificate: {}", String::from_utf8_lossy(&out.stderr));
    Ok(())
}

/// Upstream's Envoy names the controller's namespace as its node cluster: it gets the default
/// fleet, and with it the stats listener its readiness probe asks, before any route exists. And
/// `contour serve` stops promptly on SIGTERM while that Envoy holds its xDS stream open
/// (upstream's e2e framework allows a minute; a graceful wait would never end).
#[tokio::test]
async fn upstreams_envoy_is_served_and_serve_stops_on_sigterm() -> anyhow::Result<()> {
    let mut serve = Serve::start("", None, &[])?;
    let (xds, stats) = (serve.xds, serve.stats);
    let bootstrap = bootstrap::Bootstrap { xds_port: xds, fleet: "projectcontour".into(), ..Default::default() };
    let _envoy = testkit::Envoy::start(bootstrap).await?;
    let ready = testkit::eventually(std::time::Duration::from_secs(30), || async move {
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], stats));
        testkit::request(addr, &testkit::Request::get("x", "/ready")).await.ok().filter(|r| r.status == 200)
    })
    .await;
    assert!(ready.is_some(), "Envoy of node cluster projectcontour never answered /ready on its stats listener");

    let started = std::time::Instant::now();
    testkit::signal(serve.child.id().unwrap_or_default(), "TERM")?;
    let status = tokio::time::timeout(std::time::Duration::from_secs(10), serve.child.wait()).await;
    assert!(status.is_ok(), "contour serve still runs 10 s after SIGTERM");
    assert!(started.elapsed() < std::time::Duration::from_secs(5), "stopping took {:?}", started.elapsed());
    Ok(())
}

/// Upstream's quickstart manifest (examples/render/contour.yaml of the pinned contour module).
fn upstream_quickstart() -> anyhow::Result<String> {
    let dir = std::env::var("CONTOUR_UPSTREAM")
        .map_err(|_| anyhow::anyhow!("CONTOUR_UPSTREAM is not set: run the tests through hack/test"))?;
    crate::deploy::read(&std::path::Path::new(&dir).join("examples/render/contour.yaml"))
}

/// The quickstart manifest with only the image changed: the API server takes every object, and
/// every command line of every container running our image (preStop hooks too) is one our
/// `contour` accepts; its contour.yaml loads.
#[tokio::test]
async fn upstreams_quickstart_manifest_works_with_only_the_image_changed() -> anyhow::Result<()> {
    let original = upstream_quickstart()?;
    let image = regex_free_image(&original).ok_or_else(|| anyhow::anyhow!("no contour image in the manifest"))?;
    let ours = original.replace(&image, "contour-rs:latest");
    assert_ne!(ours, original);

    // kubectl, as a user runs it (it reads YAML 1.1: `defaultMode: 0644` is octal).
    let api = ApiServer::start().await?;
    let file = api.dir.join("quickstart.yaml");
    std::fs::write(&file, &ours)?;
    let kubectl = std::env::var("CONTOUR_KUBECTL")
        .map_err(|_| anyhow::anyhow!("CONTOUR_KUBECTL is not set: run the tests through hack/test"))?;
    let run = |args: Vec<String>| {
        let (kubectl, kubeconfig) = (kubectl.clone(), api.kubeconfig.clone());
        async move { tokio::process::Command::new(kubectl).arg("--kubeconfig").arg(kubeconfig).args(args).output().await }
    };
    let out = run(vec!["create".into(), "namespace".into(), "projectcontour".into()]).await?;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let args = ["apply", "--server-side", "--dry-run=server", "-f"].map(String::from);
    let out = run(args.into_iter().chain([file.display().to_string()]).collect()).await?;
    assert!(out.status.success(), "the quickstart manifest refused: {}", String::from_utf8_lossy(&out.stderr));
    let docs = crate::deploy::documents(&ours);
    let applied = String::from_utf8_lossy(&out.stdout).lines().filter(|l| l.contains("(server dry run)")).count();
    assert_eq!(applied, docs.len(), "every object: {}", String::from_utf8_lossy(&out.stdout));

    let mut checked = 0;
    for line in crate::deploy::command_lines(&ours) {
        let Some(first) = line.first() else { continue };
        if !first.ends_with("contour") {
            continue;
        }
        let args: Vec<String> = line[1..].iter().map(|a| a.replace("$(CONTOUR_NAMESPACE)", "projectcontour")).collect();
        let out = tokio::process::Command::new(workspace_binary("contour")?).args(&args).arg("--help").output().await?;
        assert!(out.status.success(), "contour {args:?} refused: {}", String::from_utf8_lossy(&out.stderr));
        checked += 1;
    }
    assert!(checked >= 5, "certgen, serve, bootstrap, shutdown-manager and the shutdown hook: {checked}");

    let config_map =
        docs.iter().find(|d| d["kind"] == "ConfigMap" && d["metadata"]["name"] == "contour").expect("ConfigMap");
    let text = config_map["data"]["contour.yaml"].as_str().expect("contour.yaml");
    config::parse("contour.yaml", text).map_err(|e| anyhow::anyhow!("upstream's contour.yaml: {e}"))?;
    Ok(())
}

/// The contour image reference the manifest uses.
fn regex_free_image(text: &str) -> Option<String> {
    text.lines()
        .map(str::trim)
        .filter_map(|l| l.strip_prefix("image: "))
        .find(|i| i.contains("projectcontour/contour:"))
        .map(str::to_string)
}

/// `contour cli lds` watches a controller's listeners as upstream's debug client does: the
/// default fleet's stats listener is printed, and the response is ACKed.
#[tokio::test]
async fn contour_cli_prints_the_default_fleets_listeners() -> anyhow::Result<()> {
    let serve = Serve::start("", None, &[])?;
    let xds = serve.xds;
    // The client watches until it is stopped: read what it prints until the listener and the
    // ACK show up, or give up after 20 s (it retries connecting while the controller starts).
    let mut seen = String::new();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    while !(seen.contains("stats-health") && seen.contains("sending ACK")) && tokio::time::Instant::now() < deadline {
        let mut cli = tokio::process::Command::new(workspace_binary("contour")?)
            .args(["cli", "lds", "--contour", &format!("127.0.0.1:{xds}")])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()?;
        let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(cli.stdout.take().expect("piped")));
        let read = async {
            while let Ok(Some(line)) = lines.next_line().await {
                seen.push_str(&line);
                seen.push('\n');
                if seen.contains("stats-health") && seen.contains("sending ACK") {
                    break;
                }
            }
        };
        let _ = tokio::time::timeout(std::time::Duration::from_secs(3), read).await;
        let _ = cli.start_kill();
    }
    assert!(seen.contains("stats-health"), "the stats listener printed: {seen}");
    assert!(seen.contains("sending ACK"), "the response ACKed: {seen}");
    Ok(())
}
