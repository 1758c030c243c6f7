//! `contour-shutdown-manager`: the Envoy pod's sidecar that lets Envoy drain before it stops,
//! split as upstream's `contour envoy shutdown-manager` and `contour envoy shutdown`.
//!
//! `serve` answers `/healthz`, and `/shutdown` only once the ready file exists (Envoy's preStop
//! hook calls it, so Envoy is not stopped before draining ends). `shutdown` (the sidecar's
//! preStop) tells Envoy to fail its health checks, waits until its open downstream connections
//! fall to `--min-open-connections`, then writes the ready file.

use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand};
use http_body_util::{BodyExt, Empty, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use tracing::{info, warn};

#[derive(Parser, Debug)]
#[command(name = "contour-shutdown-manager", about = "Drain Envoy before its pod stops")]
struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// The sidecar: /healthz, and /shutdown answering once the ready file exists.
    Serve {
        /// Port to serve on.
        #[arg(long, default_value_t = 8090)]
        serve_port: u16,
        /// The file `shutdown` writes when Envoy has drained.
        #[arg(long, default_value = "/admin/ok")]
        ready_file: PathBuf,
    },
    /// The preStop hook: fail Envoy's health checks, wait for connections to drain, write the
    /// ready file.
    Shutdown {
        /// Envoy's admin interface: a unix socket path (upstream's), or `host:port`.
        #[arg(long, default_value = "/admin/admin.sock")]
        admin_address: String,
        /// How often to count open connections.
        #[arg(long, default_value = "5s", value_parser = go_duration)]
        check_interval: Duration,
        /// How long to wait before failing the health checks.
        #[arg(long, default_value = "0s", value_parser = go_duration)]
        check_delay: Duration,
        /// How long to wait after failing the health checks before counting connections.
        #[arg(long, default_value = "0s", value_parser = go_duration)]
        drain_delay: Duration,
        /// Drained when at most this many downstream connections are open.
        #[arg(long, default_value_t = 0)]
        min_open_connections: u64,
        /// The file to write when drained.
        #[arg(long, default_value = "/admin/ok")]
        ready_file: PathBuf,
    },
}

fn go_duration(text: &str) -> Result<Duration, String> {
    duration::parse(text).ok_or_else(|| format!("{text:?} is not a duration such as 500ms, 5s or 1m"))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt().with_writer(std::io::stderr).init();
    match Args::parse().command {
        Command::Serve { serve_port, ready_file } => serve(serve_port, ready_file).await,
        Command::Shutdown {
            admin_address,
            check_interval,
            check_delay,
            drain_delay,
            min_open_connections,
            ready_file,
        } => {
            tokio::time::sleep(check_delay).await;
            let admin = Admin(admin_address);
            admin.request("POST", "/healthcheck/fail").await.context("failing Envoy's health checks")?;
            info!("Envoy's health checks now fail; draining");
            tokio::time::sleep(drain_delay).await;
            loop {
                match admin.request("GET", "/stats/prometheus").await {
                    Ok(stats) => {
                        let open = open_connections(&stats);
                        info!(open, min_open_connections, "open downstream connections");
                        if open <= min_open_connections {
                            break;
                        }
                    }
                    // Envoy gone: nothing left to drain.
                    Err(e) => {
                        warn!(error = %e, "Envoy's admin interface does not answer; done draining");
                        break;
                    }
                }
                tokio::time::sleep(check_interval).await;
            }
            std::fs::write(&ready_file, b"").with_context(|| format!("writing {}", ready_file.display()))?;
            info!(file = %ready_file.display(), "drained");
            Ok(())
        }
    }
}

/// Active downstream connections of Envoy's HTTP connection managers, except the admin, stats
/// and health listeners' (upstream's rule).
fn open_connections(stats: &str) -> u64 {
    const IGNORED: [&str; 5] = ["admin", "envoy-admin", "stats", "health", "stats-health"];
    stats
        .lines()
        .filter_map(|line| line.strip_prefix("envoy_http_downstream_cx_active{"))
        .filter_map(|rest| {
            let (labels, value) = rest.split_once("} ")?;
            let prefix = labels
                .split(',')
                .find_map(|l| l.strip_prefix("envoy_http_conn_manager_prefix=\""))
                .map(|p| p.trim_end_matches('"'))
                .unwrap_or_default();
            (!IGNORED.contains(&prefix)).then(|| value.trim().parse::<f64>().ok()).flatten()
        })
        .map(|v| v as u64)
        .sum()
}

/// Envoy's admin interface, over a unix socket or TCP.
struct Admin(String);

impl Admin {
    async fn request(&self, method: &str, path: &str) -> anyhow::Result<String> {
        let timeout = Duration::from_secs(5);
        let body = if let Ok(addr) = self.0.parse::<std::net::SocketAddr>() {
            let stream = tokio::time::timeout(timeout, tokio::net::TcpStream::connect(addr)).await??;
            send(stream, method, path).await?
        } else {
            let stream = tokio::time::timeout(timeout, tokio::net::UnixStream::connect(&self.0)).await??;
            send(stream, method, path).await?
        };
        Ok(body)
    }
}

async fn send<S>(stream: S, method: &str, path: &str) -> anyhow::Result<String>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    let conn = tokio::spawn(conn);
    let request =
        hyper::Request::builder().method(method).uri(path).header("host", "envoy").body(Empty::<Bytes>::new())?;
    let response = tokio::time::timeout(Duration::from_secs(10), sender.send_request(request)).await??;
    let status = response.status();
    let body = tokio::time::timeout(Duration::from_secs(10), response.into_body().collect()).await??.to_bytes();
    conn.abort();
    anyhow::ensure!(status.is_success(), "{method} {path}: {status}");
    Ok(String::from_utf8_lossy(&body).into_owned())
}

/// The sidecar's HTTP server.
async fn serve(port: u16, ready_file: PathBuf) -> anyhow::Result<()> {
    let listener =
        tokio::net::TcpListener::bind(("0.0.0.0", port)).await.with_context(|| format!("binding :{port}"))?;
    info!(port, "serving /healthz and /shutdown");
    let ready_file: std::sync::Arc<Path> = ready_file.into();
    loop {
        let (stream, _) = listener.accept().await?;
        let ready_file = std::sync::Arc::clone(&ready_file);
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| answer(req, std::sync::Arc::clone(&ready_file)));
            let _ = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
        });
    }
}

async fn answer(
    req: hyper::Request<hyper::body::Incoming>,
    ready_file: std::sync::Arc<Path>,
) -> Result<hyper::Response<Full<Bytes>>, Infallible> {
    let (status, body) = match req.uri().path() {
        "/healthz" => (200, "OK"),
        "/shutdown" => {
            // Envoy's preStop waits here until the drain is over (the kubelet's grace period
            // bounds it).
            while !ready_file.exists() {
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            (200, "OK")
        }
        _ => (404, "not found"),
    };
    let response =
        hyper::Response::builder().status(status).body(Full::new(Bytes::from(body))).expect("valid response");
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_traffic_connections_only() {
        let stats = "\
# TYPE envoy_http_downstream_cx_active gauge
envoy_http_downstream_cx_active{envoy_http_conn_manager_prefix=\"admin\"} 3
envoy_http_downstream_cx_active{envoy_http_conn_manager_prefix=\"http-8080\"} 2
envoy_http_downstream_cx_active{envoy_http_conn_manager_prefix=\"https-8443\"} 1
envoy_http_downstream_cx_active{envoy_http_conn_manager_prefix=\"stats\"} 4
envoy_http_downstream_cx_total{envoy_http_conn_manager_prefix=\"http-8080\"} 99
";
        assert_eq!(open_connections(stats), 3);
    }
}
