//! contour-provisioner: accepts the GatewayClasses of our controller name (publishing the
//! features we claim) and gives each of their Gateways an Envoy fleet, an address and a Service
//! labelled with the Gateway's name that carries the address.
//!
//! `--mode host` runs each fleet as one Envoy process on this machine, bound to the Gateway's own
//! loopback address; `contour-serve --gateway-host-mode` then binds the fleet's listeners there.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Parser, ValueEnum};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Mode {
    /// One Envoy process per Gateway on this machine.
    Host,
    /// Envoy pods in each Gateway's namespace (the default inside a cluster).
    Cluster,
}

/// Provisions Envoy fleets for Gateways.
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// How fleets run: `cluster` inside a cluster, `host` elsewhere.
    #[arg(long, value_enum)]
    mode: Option<Mode>,
    /// GatewayClasses with this controllerName are ours.
    #[arg(long, default_value = frontends::gateway_api::DEFAULT_CONTROLLER_NAME)]
    gateway_controller_name: String,
    /// Path of a kubeconfig (default: in the cluster, else $KUBECONFIG or ~/.kube/config).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Use the in-cluster configuration (the default inside a cluster).
    #[arg(long)]
    incluster: bool,
    /// Only the replica holding the Lease provisions.
    #[arg(long)]
    enable_leader_election: bool,
    /// The Lease's namespace.
    #[arg(long, env = "CONTOUR_PROVISIONER_NAMESPACE", default_value = "projectcontour")]
    leader_election_namespace: String,
    /// Cluster mode: the image with contour-bootstrap and contour-shutdown-manager.
    #[arg(long, default_value = "contour-rs:latest")]
    contour_image: String,
    /// Cluster mode: Envoy's image.
    #[arg(long, default_value = "envoyproxy/envoy:v1.40.0")]
    envoy_image: String,
    /// Cluster mode: the installation's CA Secret (`namespace/name`, written by
    /// `contour-certgen --keep-ca-key`), which issues each Gateway fleet its own xDS client
    /// certificate (`envoycert-<gateway>`, naming that fleet alone).
    #[arg(long, default_value = "projectcontour/contourca")]
    ca_secret: String,
    /// Ignored: each fleet's certificate is issued from `--ca-secret`. Accepted so that
    /// manifests passing it keep working.
    #[arg(long, hide = true)]
    envoy_certificate: Option<String>,
    /// Host mode: mTLS on xDS. The directory with the installation's `cacert.pem` and
    /// `cakey.pem` (`contour-certgen --pem --keep-ca-key`); each Envoy gets a client certificate
    /// of its own, naming its fleet alone.
    #[arg(long, value_name = "DIR")]
    ca_dir: Option<PathBuf>,
    /// The trust domain of the fleet identities (contour-serve's).
    #[arg(long, default_value = certs::DEFAULT_TRUST_DOMAIN)]
    xds_trust_domain: String,
    /// How many days a fleet's client certificate is valid; it is renewed once a third is left.
    #[arg(long, default_value_t = 30)]
    fleet_certificate_lifetime: u32,
    /// Host mode: addresses for Gateways that ask for none.
    #[arg(long, default_value = "127.0.1.0/24")]
    address_pool: String,
    /// Host mode: the Envoy binary.
    #[arg(long, env = "CONTOUR_ENVOY", default_value = "envoy")]
    envoy_bin: PathBuf,
    /// Host mode: where each Envoy's bootstrap, admin socket and log go.
    #[arg(long)]
    state_dir: Option<PathBuf>,
    /// The controller's xDS address, as Envoy dials it (host mode: 127.0.0.1). In cluster mode it
    /// names the installation's contour-serve (deploy/install: contour.projectcontour), which
    /// then serves every Gateway's fleet; without it each Gateway gets a contour-serve of its own,
    /// as upstream's provisioner makes.
    #[arg(long)]
    xds_address: Option<String>,
    /// The controller's xDS port.
    #[arg(long, default_value_t = 8001)]
    xds_port: u16,
    /// Host mode: Envoy's log level.
    #[arg(long, default_value = "warn")]
    envoy_log_level: String,
    /// How often everything is reconciled without events.
    #[arg(long, default_value = "30")]
    resync_seconds: u64,
    /// Where `/metrics` and `/healthz` are served (`host:port`, `:port` for every address, `0`
    /// for nowhere). Default: `:8080` in cluster mode (upstream's); nowhere in host mode, whose
    /// Gateways listen on this machine's ports themselves.
    #[arg(long)]
    metrics_addr: Option<String>,
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .init();
    let args = Args::parse();
    let in_cluster = std::env::var_os("KUBERNETES_SERVICE_HOST").is_some();
    let mode = args.mode.unwrap_or(if in_cluster { Mode::Cluster } else { Mode::Host });
    let mode = match mode {
        Mode::Host => provisioner::controller::Mode::Host(provisioner::host::EnvoySettings {
            envoy: args.envoy_bin.clone(),
            state_dir: args.state_dir.clone().context("--mode host needs --state-dir")?,
            xds_address: args.xds_address.clone().unwrap_or_else(|| "127.0.0.1".into()),
            xds_port: args.xds_port,
            log_level: args.envoy_log_level.clone(),
            ca_dir: args.ca_dir.clone(),
            issuing: issuing(&args),
        }),
        Mode::Cluster => {
            let Some((namespace, name)) = args.ca_secret.split_once('/') else {
                anyhow::bail!("--ca-secret {:?} is not namespace/name", args.ca_secret);
            };
            if let Some(old) = &args.envoy_certificate {
                tracing::warn!(%old, "--envoy-certificate is ignored: each fleet gets a certificate of its own from --ca-secret");
            }
            provisioner::controller::Mode::Cluster(provisioner::controller::ClusterSettings {
                fleet: provisioner::cluster::Settings {
                    contour_image: args.contour_image.clone(),
                    envoy_image: args.envoy_image.clone(),
                    controller: match args.xds_address.clone() {
                        Some(xds_address) => {
                            provisioner::cluster::Controller::Shared { xds_address, xds_port: args.xds_port }
                        }
                        None => provisioner::cluster::Controller::PerGateway,
                    },
                },
                ca: (namespace.into(), name.into()),
                issuing: issuing(&args),
            })
        }
    };
    tokio::runtime::Builder::new_multi_thread().enable_all().build()?.block_on(async move {
        let client = kubeclient::connect(args.kubeconfig.as_deref(), args.incluster).await?;
        let settings = provisioner::controller::Settings {
            controller_name: args.gateway_controller_name,
            address_pool: args.address_pool,
            mode,
            resync: Duration::from_secs(args.resync_seconds.max(1)),
        };
        let (stop_tx, stop) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            shutdown().await;
            stop_tx.send_replace(true);
        });
        let stopped = |mut stop: tokio::sync::watch::Receiver<bool>| async move {
            let _ = stop.wait_for(|s| *s).await;
        };
        let (leadership, election) = if args.enable_leader_election {
            let identity = std::env::var("HOSTNAME").unwrap_or_else(|_| format!("provisioner-{}", std::process::id()));
            let options = election::Options {
                // Upstream's Lease, so an upstream provisioner and this one never both act.
                name: "0d879e31.projectcontour.io".into(),
                namespace: args.leader_election_namespace,
                identity,
                ..Default::default()
            };
            let (leadership, task) = election::spawn(client.clone(), options, stopped(stop.clone()));
            (leadership, Some(task))
        } else {
            (election::Leadership::always(), None)
        };
        let counters = std::sync::Arc::new(provisioner::controller::Counters::default());
        let metrics_addr = args.metrics_addr.clone().unwrap_or_else(|| match settings.mode {
            provisioner::controller::Mode::Cluster(_) => ":8080".into(),
            provisioner::controller::Mode::Host(_) => "0".into(),
        });
        if metrics_addr != "0" {
            let addr = match metrics_addr.strip_prefix(':') {
                Some(port) => format!("0.0.0.0:{port}"),
                None => metrics_addr.clone(),
            };
            let listener =
                tokio::net::TcpListener::bind(&addr).await.with_context(|| format!("--metrics-addr {addr}"))?;
            tokio::spawn(serve_metrics(listener, std::sync::Arc::clone(&counters)));
        }
        provisioner::controller::run(client, settings, leadership, counters, stopped(stop)).await?;
        if let Some(task) = election {
            let _ = task.await;
        }
        Ok(())
    })
}

/// How fleet certificates are issued, from the flags.
fn issuing(args: &Args) -> provisioner::cluster::certificate::Issuing {
    provisioner::cluster::certificate::Issuing {
        trust_domain: args.xds_trust_domain.clone(),
        lifetime: Duration::from_secs(u64::from(args.fleet_certificate_lifetime.max(1)) * 86_400),
    }
}

async fn shutdown() {
    let Ok(mut term) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}

/// `/metrics` (Prometheus text) and `/healthz`, on plain HTTP/1.1.
async fn serve_metrics(listener: tokio::net::TcpListener, counters: std::sync::Arc<provisioner::controller::Counters>) {
    use http_body_util::Full;
    use hyper::body::Bytes;
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
        let counters = std::sync::Arc::clone(&counters);
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                let (status, body) = match req.uri().path() {
                    "/metrics" => (200, counters.render()),
                    "/healthz" => (200, "ok\n".to_string()),
                    _ => (404, "not found\n".to_string()),
                };
                let response = hyper::Response::builder().status(status).body(Full::new(Bytes::from(body)));
                async move { response }
            });
            let io = hyper_util::rt::TokioIo::new(stream);
            let _ = hyper::server::conn::http1::Builder::new().serve_connection(io, service).await;
        });
    }
}
