//! Starting a `contour` command (ours or upstream's) and its Envoy: `contour bootstrap` at its
//! defaults, then `contour serve`; with HTTPRoutes in static Gateway mode (contour.yaml
//! `gateway.gatewayRef`), the Gateway's listener one more of its one configuration.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context as _;
use testkit::{ApiServer, Envoy};

use crate::Running;
use crate::apps::{self, NAMESPACE, Routes};

#[allow(clippy::too_many_arguments)]
pub async fn start(
    label: &str,
    contour: &PathBuf,
    extra: &[String],
    bootstrap_extra: &[&str],
    api: &ApiServer,
    dir: &Path,
    routes: Routes,
    envoy_port: u16,
) -> anyhow::Result<Running> {
    let port = testkit::free_port;
    let (xds, http, stats) = (port(), port(), port());
    let mut config = Vec::new();
    let mut listener = http;
    if routes == Routes::Httproute {
        let file = dir.join("contour.yaml");
        std::fs::write(
            &file,
            format!("gateway:\n  gatewayRef: {{namespace: {NAMESPACE}, name: {}}}\n", apps::GATEWAY),
        )?;
        config.push(format!("--config-path={}", file.display()));
        listener = envoy_port;
    }
    let bootstrap = dir.join("envoy.json");
    let status = tokio::process::Command::new(contour)
        .arg("bootstrap")
        .arg(&bootstrap)
        .args(["--xds-address=127.0.0.1", &format!("--xds-port={xds}")])
        .arg(format!("--admin-address={}", dir.join("admin.sock").display()))
        .arg("--xds-resource-version=v3")
        .args(bootstrap_extra)
        .status()
        .await?;
    anyhow::ensure!(status.success(), "{label} bootstrap: {status}");

    let log = dir.join("serve.err");
    let started = Instant::now();
    let process = tokio::process::Command::new(contour)
        .arg("serve")
        .arg(format!("--kubeconfig={}", api.kubeconfig.display()))
        .args(["--xds-address=127.0.0.1", &format!("--xds-port={xds}"), "--insecure", "--disable-leader-election"])
        .args(["--envoy-service-http-address=127.0.0.1", &format!("--envoy-service-http-port={http}")])
        .args(["--envoy-service-https-address=127.0.0.1", &format!("--envoy-service-https-port={}", port())])
        .args([format!("--http-port={}", port()), format!("--health-port={}", port())])
        .args([format!("--debug-http-port={}", port()), format!("--stats-port={stats}")])
        .args(&config)
        .args(extra)
        .stdout(std::fs::File::create(dir.join("serve.log"))?)
        .stderr(std::fs::File::create(&log)?)
        .kill_on_drop(true)
        .spawn()?;
    let pid = process.id().context("controller pid")?;
    let stats = SocketAddr::from(([127, 0, 0, 1], stats));
    let node = ["--service-cluster", "contour", "--service-node", "bench"];
    let envoy = Envoy::start_file(&bootstrap, stats, &node).await?;
    let envoy_args = (bootstrap, node.map(String::from).to_vec());
    Ok(Running {
        started,
        process,
        pid,
        envoy,
        listener: SocketAddr::from(([127, 0, 0, 1], listener)),
        // Both bootstraps name the xDS cluster's stats `<namespace>_contour_<port>`.
        xds_rx: format!("_contour_{xds}.upstream_cx_rx_bytes_total"),
        log,
        envoy_args,
        _cleanup: None,
    })
}
