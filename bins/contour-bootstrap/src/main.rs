//! `contour-bootstrap`: writes Envoy's bootstrap JSON (run as an init container).

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use bootstrap::{Admin, Bootstrap, DnsLookupFamily, Overload, XdsTls};
use clap::{Parser, ValueEnum};

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
    /// Use incremental (Delta) xDS, the default.
    #[arg(long, conflicts_with = "sotw")]
    delta: bool,
    /// Use State-of-the-World xDS instead of Delta.
    #[arg(long)]
    sotw: bool,
    /// CA bundle to verify the controller's certificate.
    #[arg(long, env = "ENVOY_CAFILE", requires_all = ["envoy_cert_file", "envoy_key_file"])]
    envoy_cafile: Option<String>,
    /// Envoy's client certificate for the xDS channel.
    #[arg(long, env = "ENVOY_CERT_FILE", requires = "envoy_cafile")]
    envoy_cert_file: Option<String>,
    /// Envoy's client key for the xDS channel.
    #[arg(long, env = "ENVOY_KEY_FILE", requires = "envoy_cafile")]
    envoy_key_file: Option<String>,
    /// With the mTLS files: write SDS files referencing them under DIR/sds, so Envoy re-reads
    /// rotated certificates without a restart.
    #[arg(long, value_name = "DIR")]
    resources_dir: Option<PathBuf>,
    /// The xDS API version; only v3 exists.
    #[arg(long, default_value = "v3", value_parser = ["v3"])]
    xds_resource_version: String,
    /// The namespace Envoy runs in (reported in its node metadata).
    #[arg(long, env = "CONTOUR_NAMESPACE", default_value = "projectcontour")]
    namespace: String,
    /// How a DNS name in --xds-address is resolved.
    #[arg(long, value_enum, default_value = "auto")]
    dns_lookup_family: Family,
    /// Heap size in bytes that turns the overload manager on (shrink the heap at 95%, stop
    /// accepting requests at 98%).
    #[arg(long, value_name = "BYTES")]
    overload_max_heap: Option<u64>,
    /// The most downstream connections Envoy keeps open at once (overload manager).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    overload_downstream_max_conn: Option<u64>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Family {
    V4,
    V6,
    Auto,
    All,
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
        delta: args.delta || !args.sotw,
        tls,
        resources_dir: args.resources_dir,
        dns_lookup_family: match args.dns_lookup_family {
            Family::V4 => DnsLookupFamily::V4,
            Family::V6 => DnsLookupFamily::V6,
            Family::Auto => DnsLookupFamily::Auto,
            Family::All => DnsLookupFamily::All,
        },
        overload: Overload {
            max_heap_bytes: args.overload_max_heap.filter(|b| *b > 0),
            max_downstream_connections: args.overload_downstream_max_conn,
        },
        namespace: Some(args.namespace),
    };
    if config.resources_dir.is_some() && config.tls.is_none() {
        eprintln!(
            "warning: --resources-dir has no effect without --envoy-cafile, --envoy-cert-file and --envoy-key-file"
        );
    }
    for (path, json) in config.sds_files() {
        let dir = path.parent().unwrap_or(std::path::Path::new("."));
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        write_in_place(&path, &serde_json::to_string_pretty(&json)?)?;
    }
    let json = serde_json::to_string_pretty(&config.to_json())?;
    if args.path.as_os_str() == "-" {
        writeln!(std::io::stdout(), "{json}")?;
        return Ok(());
    }
    write_in_place(&args.path, &json)
}

/// Truncates and rewrites the file itself, as upstream does: a reader that opened PATH before
/// (upstream's e2e framework hands over a temporary file it keeps open) sees the bootstrap.
/// Envoy reads the file only once it starts, after this init step has finished.
fn write_in_place(path: &std::path::Path, text: &str) -> anyhow::Result<()> {
    std::fs::write(path, format!("{text}\n")).with_context(|| format!("writing {}", path.display()))
}
