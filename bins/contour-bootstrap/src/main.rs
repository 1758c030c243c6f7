//! `contour-bootstrap`: writes Envoy's bootstrap JSON (run as an init container).

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use bootstrap::{Admin, Bootstrap, XdsTls};
use clap::Parser;

/// Writes the Envoy bootstrap configuration that connects Envoy to contour-serve over ADS.
#[derive(Debug, Parser)]
#[command(name = "contour-bootstrap", version)]
struct Args {
    /// Where to write the bootstrap JSON; `-` for standard output.
    path: PathBuf,
    /// The controller's xDS address (IP or DNS name).
    #[arg(long, default_value = "127.0.0.1")]
    xds_address: String,
    /// The controller's xDS port.
    #[arg(long, default_value_t = 8001)]
    xds_port: u16,
    /// Unix socket for Envoy's admin interface.
    #[arg(long, default_value = "/admin/admin.sock")]
    admin_address: String,
    /// Serve Envoy's admin interface on this loopback TCP port instead of the unix socket.
    #[arg(long)]
    admin_port: Option<u16>,
    /// The fleet (node cluster) this Envoy belongs to: `contour`, or a Gateway's `namespace/name`.
    #[arg(long, default_value = "contour")]
    fleet: String,
    /// The node id Envoy reports.
    #[arg(long, env = "HOSTNAME", default_value = "envoy")]
    node_id: String,
    /// Use incremental (Delta) xDS.
    #[arg(long)]
    delta: bool,
    /// CA bundle to verify the controller's certificate.
    #[arg(long, env = "ENVOY_CAFILE", requires_all = ["envoy_cert_file", "envoy_key_file"])]
    envoy_cafile: Option<String>,
    /// Envoy's client certificate for the xDS channel.
    #[arg(long, env = "ENVOY_CERT_FILE", requires = "envoy_cafile")]
    envoy_cert_file: Option<String>,
    /// Envoy's client key for the xDS channel.
    #[arg(long, env = "ENVOY_KEY_FILE", requires = "envoy_cafile")]
    envoy_key_file: Option<String>,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let tls = match (args.envoy_cafile, args.envoy_cert_file, args.envoy_key_file) {
        (Some(ca_file), Some(cert_file), Some(key_file)) => Some(XdsTls { ca_file, cert_file, key_file }),
        _ => None,
    };
    let config = Bootstrap {
        xds_address: args.xds_address,
        xds_port: args.xds_port,
        admin: args.admin_port.map(Admin::Port).unwrap_or(Admin::Unix(args.admin_address)),
        fleet: args.fleet,
        node_id: args.node_id,
        delta: args.delta,
        tls,
    };
    let json = serde_json::to_string_pretty(&config.to_json())?;
    if args.path.as_os_str() == "-" {
        writeln!(std::io::stdout(), "{json}")?;
        return Ok(());
    }
    // Write then rename, so Envoy never reads half a file.
    let tmp = args.path.with_extension("tmp");
    std::fs::write(&tmp, json + "\n").with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, &args.path).with_context(|| format!("writing {}", args.path.display()))?;
    Ok(())
}
