//! `contour-cli` (`contour cli` in upstream's command): a debugging xDS client. It opens an ADS
//! stream to a contour-serve, asks for one type (and optionally some names), and prints every
//! request it sends and every response it gets, decoded, ACKing each (or NACKing with `--nack`).

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use clap::{Parser, ValueEnum};
use envoy_types::pb::envoy::config::core::v3::Node;
use envoy_types::pb::envoy::service::discovery::v3::aggregated_discovery_service_client::AggregatedDiscoveryServiceClient;
use envoy_types::pb::envoy::service::discovery::v3::{DeltaDiscoveryRequest, DiscoveryRequest};
use envoy_types::pb::google::protobuf::Any;
use envoy_types::pb::google::rpc::Status;
use prost::Message as _;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

/// Watches one xDS type on a contour-serve, as upstream's `contour cli` does.
#[derive(Debug, Parser)]
#[command(name = "contour-cli", version)]
struct Args {
    /// The resource type.
    #[arg(value_enum)]
    r#type: Type,
    /// Resource names to ask for (all when none).
    resources: Vec<String>,
    /// The controller's xDS address.
    #[arg(long, default_value = "127.0.0.1:8001")]
    contour: String,
    /// CA bundle verifying the controller (with --cert-file and --key-file: mTLS).
    #[arg(long, env = "CLI_CAFILE", requires_all = ["cert_file", "key_file"])]
    cafile: Option<PathBuf>,
    /// Client certificate.
    #[arg(long, env = "CLI_CERT_FILE")]
    cert_file: Option<PathBuf>,
    /// Client key.
    #[arg(long, env = "CLI_KEY_FILE")]
    key_file: Option<PathBuf>,
    /// Use incremental (Delta) xDS.
    #[arg(long)]
    delta: bool,
    /// NACK every response (for testing).
    #[arg(long)]
    nack: bool,
    /// The node id to present.
    #[arg(long, env = "CLI_NODE_ID", default_value = "ContourCLI")]
    node_id: String,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Type {
    Cds,
    Eds,
    Lds,
    Rds,
    Sds,
}

impl Type {
    fn url(self) -> &'static str {
        match self {
            Type::Cds => "type.googleapis.com/envoy.config.cluster.v3.Cluster",
            Type::Eds => "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment",
            Type::Lds => "type.googleapis.com/envoy.config.listener.v3.Listener",
            Type::Rds => "type.googleapis.com/envoy.config.route.v3.RouteConfiguration",
            Type::Sds => "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret",
        }
    }
}

/// A resource, decoded by its type URL.
fn decoded(any: &Any) -> String {
    use envoy_types::pb::envoy::config::{cluster, endpoint, listener, route};
    use envoy_types::pb::envoy::extensions::transport_sockets::tls::v3::Secret;
    let bytes = any.value.as_slice();
    let text = match any.type_url.rsplit('/').next().unwrap_or_default() {
        "envoy.config.cluster.v3.Cluster" => cluster::v3::Cluster::decode(bytes).map(|m| format!("{m:#?}")),
        "envoy.config.endpoint.v3.ClusterLoadAssignment" => {
            endpoint::v3::ClusterLoadAssignment::decode(bytes).map(|m| format!("{m:#?}"))
        }
        "envoy.config.listener.v3.Listener" => listener::v3::Listener::decode(bytes).map(|m| format!("{m:#?}")),
        "envoy.config.route.v3.RouteConfiguration" => {
            route::v3::RouteConfiguration::decode(bytes).map(|m| format!("{m:#?}"))
        }
        // Private keys are not printed.
        "envoy.extensions.transport_sockets.tls.v3.Secret" => {
            Secret::decode(bytes).map(|m| format!("Secret {:?}", m.name))
        }
        other => Ok(format!("{other}: {} bytes", bytes.len())),
    };
    text.unwrap_or_else(|e| format!("undecodable {}: {e}", any.type_url))
}

fn main() -> anyhow::Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let args = Args::parse();
    tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(run(args))
}

async fn run(args: Args) -> anyhow::Result<()> {
    let channel = connect(&args).await?;
    let mut client = AggregatedDiscoveryServiceClient::new(channel);
    let node = Some(Node { id: args.node_id.clone(), ..Default::default() });
    if args.delta {
        let (tx, rx) = mpsc::channel(4);
        let first = DeltaDiscoveryRequest {
            node: node.clone(),
            type_url: args.r#type.url().into(),
            resource_names_subscribe: args.resources.clone(),
            ..Default::default()
        };
        println!("{first:#?}");
        tx.send(first).await?;
        let mut responses = client.delta_aggregated_resources(ReceiverStream::new(rx)).await?.into_inner();
        while let Some(resp) = responses.message().await? {
            println!(
                "response nonce {} version {}: removed {:?}",
                resp.nonce, resp.system_version_info, resp.removed_resources
            );
            for r in &resp.resources {
                println!(
                    "{} (version {}):\n{}",
                    r.name,
                    r.version,
                    r.resource.as_ref().map(decoded).unwrap_or_default()
                );
            }
            let reply = DeltaDiscoveryRequest {
                node: node.clone(),
                type_url: resp.type_url.clone(),
                response_nonce: resp.nonce.clone(),
                error_detail: args.nack.then(nack),
                ..Default::default()
            };
            println!("{}", if args.nack { "sending NACK" } else { "sending ACK" });
            tx.send(reply).await?;
        }
    } else {
        let (tx, rx) = mpsc::channel(4);
        let first = DiscoveryRequest {
            node: node.clone(),
            type_url: args.r#type.url().into(),
            resource_names: args.resources.clone(),
            ..Default::default()
        };
        println!("{first:#?}");
        tx.send(first).await?;
        let mut responses = client.stream_aggregated_resources(ReceiverStream::new(rx)).await?.into_inner();
        while let Some(resp) = responses.message().await? {
            println!("response version {} nonce {}: {} resources", resp.version_info, resp.nonce, resp.resources.len());
            for r in &resp.resources {
                println!("{}", decoded(r));
            }
            let reply = DiscoveryRequest {
                node: node.clone(),
                type_url: resp.type_url.clone(),
                resource_names: args.resources.clone(),
                version_info: if args.nack { String::new() } else { resp.version_info.clone() },
                response_nonce: resp.nonce.clone(),
                error_detail: args.nack.then(nack),
                ..Default::default()
            };
            println!("{}", if args.nack { "sending NACK" } else { "sending ACK" });
            tx.send(reply).await?;
        }
    }
    Ok(())
}

fn nack() -> Status {
    Status { code: 3, message: "Told to create a NACK for testing".into(), details: Vec::new() }
}

/// A channel to the controller, plaintext or mTLS (TLS 1.3, as contour-serve speaks it).
async fn connect(args: &Args) -> anyhow::Result<tonic::transport::Channel> {
    let endpoint = tonic::transport::Endpoint::from_shared(format!("http://{}", args.contour))?;
    let (Some(ca), Some(cert), Some(key)) = (&args.cafile, &args.cert_file, &args.key_file) else {
        return endpoint.connect().await.with_context(|| format!("connecting to {}", args.contour));
    };
    let read = |p: &PathBuf| std::fs::read(p).with_context(|| format!("reading {}", p.display()));
    use rustls::pki_types::pem::PemObject as _;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_slice_iter(&read(ca)?) {
        roots.add(c?)?;
    }
    let chain = CertificateDer::pem_slice_iter(&read(cert)?).collect::<Result<Vec<_>, _>>()?;
    let key = PrivateKeyDer::from_pem_slice(&read(key)?)?;
    let mut config = rustls::ClientConfig::builder().with_root_certificates(roots).with_client_auth_cert(chain, key)?;
    config.alpn_protocols = vec![b"h2".to_vec()];
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let address = args.contour.clone();
    // contour-serve's certificate names `contour` (certgen's), as Envoy's bootstrap expects.
    let name = ServerName::try_from("contour")?.to_owned();
    endpoint
        .connect_with_connector(tower::service_fn(move |_: tonic::transport::Uri| {
            let (connector, address, name) = (connector.clone(), address.clone(), name.clone());
            async move {
                let tcp = tokio::net::TcpStream::connect(&address).await?;
                let tls = connector.connect(name, tcp).await?;
                Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(tls))
            }
        }))
        .await
        .with_context(|| format!("connecting to {} over mTLS", args.contour))
}
