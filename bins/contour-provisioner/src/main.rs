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

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Mode {
    /// One Envoy process per Gateway on this machine.
    Host,
}

/// Provisions Envoy fleets for Gateways.
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// How fleets run.
    #[arg(long, value_enum, default_value = "host")]
    mode: Mode,
    /// GatewayClasses with this controllerName are ours.
    #[arg(long, default_value = frontends::gateway_api::DEFAULT_CONTROLLER_NAME)]
    gateway_controller_name: String,
    /// Host mode: addresses for Gateways that ask for none.
    #[arg(long, default_value = "127.0.1.0/24")]
    address_pool: String,
    /// Host mode: the Envoy binary.
    #[arg(long, env = "CONTOUR_ENVOY", default_value = "envoy")]
    envoy_bin: PathBuf,
    /// Host mode: where each Envoy's bootstrap, admin socket and log go.
    #[arg(long)]
    state_dir: PathBuf,
    /// The controller's xDS address, as Envoy dials it.
    #[arg(long, default_value = "127.0.0.1")]
    xds_address: String,
    /// The controller's xDS port.
    #[arg(long, default_value_t = 8001)]
    xds_port: u16,
    /// Envoy's log level.
    #[arg(long, default_value = "warn")]
    envoy_log_level: String,
    /// How often everything is reconciled without events.
    #[arg(long, default_value = "30")]
    resync_seconds: u64,
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .init();
    let args = Args::parse();
    tokio::runtime::Builder::new_multi_thread().enable_all().build()?.block_on(async move {
        let client = kube::Client::try_default().await.context("no kubeconfig")?;
        let Mode::Host = args.mode;
        let settings = provisioner::controller::Settings {
            controller_name: args.gateway_controller_name,
            address_pool: args.address_pool,
            envoy: provisioner::host::EnvoySettings {
                envoy: args.envoy_bin,
                state_dir: args.state_dir,
                xds_address: args.xds_address,
                xds_port: args.xds_port,
                log_level: args.envoy_log_level,
            },
            resync: Duration::from_secs(args.resync_seconds.max(1)),
        };
        provisioner::controller::run(client, settings, shutdown()).await?;
        Ok(())
    })
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
