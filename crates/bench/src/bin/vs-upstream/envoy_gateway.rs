//! Starting Envoy Gateway (`envoy-gateway server`) in its Kubernetes mode outside a cluster,
//! and an Envoy it configures.
//!
//! Envoy Gateway watches the API server through `KUBECONFIG` and serves xDS on 0.0.0.0:18000
//! with the certificates it reads from the fixed directory `/certs`: it runs in a mount
//! namespace of its own (`unshare --mount`) where its `envoy-gateway certgen --local`
//! certificates are bind-mounted there. Its own Envoy Deployment gets no pods (the API server
//! has no kubelet), so the benchmark runs the same Envoy binary as for the other controllers,
//! with a bootstrap like the one Envoy Gateway renders: Delta ADS to its xDS server over mTLS,
//! node cluster `<gateway namespace>/<gateway name>` (which selects the Gateway's
//! configuration).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context as _;
use serde_json::{Value, json};
use testkit::{ApiServer, Envoy};

use crate::Running;
use crate::apps::{GATEWAY, NAMESPACE};

/// The GatewayClass controller name Envoy Gateway serves.
pub const CONTROLLER: &str = "gateway.envoyproxy.io/gatewayclass-controller";
/// Where Envoy Gateway keeps its infrastructure objects.
const EG_NAMESPACE: &str = "envoy-gateway-system";
/// Envoy Gateway's xDS port (fixed).
const XDS_PORT: u16 = 18000;
/// Its fixed certificate directory.
const CERTS: &str = "/certs";

/// The CRD files Envoy Gateway's chart installs from its module `module`: the standard-channel
/// Gateway API CRDs of its release and its own.
pub fn crds(module: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let chart = module.join("charts/gateway-crds-helm/templates");
    let mut files = vec![chart.join("standard-gatewayapi-crds.yaml")];
    let mut own: Vec<PathBuf> = std::fs::read_dir(chart.join("generated"))
        .with_context(|| format!("Envoy Gateway's CRDs in {}", chart.display()))?
        .flatten()
        .map(|e| e.path())
        .collect();
    own.sort();
    files.extend(own);
    Ok(files)
}

pub fn namespace() -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": EG_NAMESPACE}})
}

/// The `/certs` directory, made for the run when it did not exist (and removed after).
pub struct CertsMount {
    made: bool,
}

impl Drop for CertsMount {
    fn drop(&mut self) {
        if self.made {
            let _ = std::fs::remove_dir(CERTS);
        }
    }
}

/// Envoy Gateway's configuration: Kubernetes provider, no leader election, no topology
/// injector (its webhook and the extra cluster in Envoy's bootstrap), its admin on `admin`, its
/// Prometheus listener (fixed at 0.0.0.0:19001) off, and the client rate limit if given.
fn config(admin: u16, qps: Option<(u32, u32)>) -> String {
    let rate =
        qps.map(|(q, b)| format!("    client:\n      rateLimit: {{qps: {q}, burst: {b}}}\n")).unwrap_or_default();
    format!(
        "apiVersion: gateway.envoyproxy.io/v1alpha1
kind: EnvoyGateway
gateway:
  controllerName: {CONTROLLER}
provider:
  type: Kubernetes
  kubernetes:
    leaderElection:
      disable: true
    proxyTopologyInjector:
      disabled: true
{rate}logging:
  level:
    default: info
admin:
  address: {{host: 127.0.0.1, port: {admin}}}
telemetry:
  metrics:
    prometheus: {{disable: true}}
"
    )
}

/// Envoy's bootstrap: admin on `stats` (the benchmark reads its stats there), Delta ADS to
/// Envoy Gateway's xDS server with the client certificate certgen made, its server
/// certificate checked for the name `envoy-gateway`.
fn bootstrap(stats: u16, client: &Path) -> Value {
    let file = |name: &str| json!({"filename": client.join(name).display().to_string()});
    json!({
        "admin": {"address": {"socket_address": {"address": "127.0.0.1", "port_value": stats}}},
        "dynamic_resources": {
            "ads_config": {"api_type": "DELTA_GRPC", "transport_api_version": "V3", "set_node_on_first_message_only": true,
                "grpc_services": [{"envoy_grpc": {"cluster_name": "xds_cluster"}}]},
            "lds_config": {"ads": {}, "initial_fetch_timeout": "0s", "resource_api_version": "V3"},
            "cds_config": {"ads": {}, "initial_fetch_timeout": "0s", "resource_api_version": "V3"},
        },
        "static_resources": {"clusters": [{
            "name": "xds_cluster",
            "type": "STATIC",
            "connect_timeout": "10s",
            "load_assignment": {"cluster_name": "xds_cluster", "endpoints": [{"lb_endpoints": [{"endpoint": {"address":
                {"socket_address": {"address": "127.0.0.1", "port_value": XDS_PORT}}}}]}]},
            "typed_extension_protocol_options": {"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
                "@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
                "explicit_http_config": {"http2_protocol_options": {"connection_keepalive": {"interval": "30s", "timeout": "5s"}}}}},
            "transport_socket": {"name": "envoy.transport_sockets.tls", "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext",
                "common_tls_context": {
                    "tls_params": {"tls_maximum_protocol_version": "TLSv1_3"},
                    "tls_certificates": [{"certificate_chain": file("tls.crt"), "private_key": file("tls.key")}],
                    "validation_context": {"trusted_ca": file("ca.crt"),
                        "match_typed_subject_alt_names": [{"san_type": "DNS", "matcher": {"exact": "envoy-gateway"}}]},
                }}},
        }]},
    })
}

pub async fn start(
    bin: &PathBuf,
    qps: Option<(u32, u32)>,
    api: &ApiServer,
    dir: &Path,
    envoy_port: u16,
) -> anyhow::Result<Running> {
    let home = dir.join("envoy-gateway");
    let status = tokio::process::Command::new(bin)
        .args(["certgen", "--local", "--config-home"])
        .arg(&home)
        .env("ENVOY_GATEWAY_NAMESPACE", EG_NAMESPACE)
        .stdout(std::process::Stdio::null())
        .status()
        .await?;
    anyhow::ensure!(status.success(), "envoy-gateway certgen --local: {status}");
    let made = !Path::new(CERTS).exists();
    if made {
        std::fs::create_dir(CERTS)
            .with_context(|| format!("making {CERTS} (Envoy Gateway's certificate directory)"))?;
    }
    let cleanup = CertsMount { made };
    let config_file = dir.join("envoy-gateway.yaml");
    std::fs::write(&config_file, config(testkit::free_port(), qps))?;
    let stats = testkit::free_port();
    let envoy_bootstrap = dir.join("envoy-eg.json");
    std::fs::write(&envoy_bootstrap, bootstrap(stats, &home.join("certs/envoy")).to_string())?;

    let log = dir.join("envoy-gateway.log");
    let started = Instant::now();
    // unshare execs sh, which execs envoy-gateway: the child's pid is Envoy Gateway's.
    let process = tokio::process::Command::new("unshare")
        .args(["--mount", "--propagation", "private", "--", "sh", "-c"])
        .arg(r#"mount --bind "$1" /certs && exec "$2" server --config-path "$3""#)
        .arg("sh")
        .arg(home.join("certs/envoy-gateway"))
        .arg(bin)
        .arg(&config_file)
        .env("KUBECONFIG", &api.kubeconfig)
        .env("ENVOY_GATEWAY_NAMESPACE", EG_NAMESPACE)
        .stdout(std::fs::File::create(&log)?)
        .stderr(std::fs::File::create(dir.join("envoy-gateway.err"))?)
        .kill_on_drop(true)
        .spawn()?;
    let pid = process.id().context("envoy-gateway pid")?;
    let cluster = format!("{NAMESPACE}/{GATEWAY}");
    let node = ["--service-cluster", cluster.as_str(), "--service-node", "bench"];
    let envoy = Envoy::start_file(&envoy_bootstrap, SocketAddr::from(([127, 0, 0, 1], stats)), &node).await?;
    let envoy_args = (envoy_bootstrap, node.map(String::from).to_vec());
    Ok(Running {
        started,
        process,
        pid,
        envoy,
        listener: SocketAddr::from(([127, 0, 0, 1], envoy_port)),
        xds_rx: "cluster.xds_cluster.upstream_cx_rx_bytes_total".into(),
        log,
        envoy_args,
        _cleanup: Some(cleanup),
    })
}
