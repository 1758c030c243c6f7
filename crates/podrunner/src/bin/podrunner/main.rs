//! podrunner: the local conformance cluster's node, as far as processes go. kwok plays the
//! kubelet towards the API server (node status, pod IPs, `pods/log`); this runs every pod kwok
//! places on the node as real processes in a network namespace of its own at the pod's IP, on a
//! bridge it creates, keeps its readiness from its probes, forwards its host ports from
//! loopback, publishes its listening ports for `kubectl port-forward` through kwok, answers
//! the pods' DNS queries for cluster names, and (with `--service-cidr`) serves Services at their
//! cluster IPs and publishes those of `LoadBalancer` Services as their load-balancer addresses.
//!
//! Started as `coredns` (a symlink the runner makes), it is the stand-in for CoreDNS instead: it
//! answers the Corefile's `whoami` zones and refuses everything else, so nothing is ever
//! forwarded off the machine.

mod cluster_dns;
mod dns;
mod load_balancer;
mod net;
mod pod;
mod port_forward;
mod ports;
mod probe;
mod services;

use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use clap::Parser;
use futures::StreamExt as _;
use k8s_openapi::api::core::v1::Pod;
use kube::runtime::watcher;
use tokio::sync::watch;

/// Runs the pods of one kwok node as processes.
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// The node whose pods to run.
    #[arg(long, default_value = "kwok-node-0")]
    node_name: String,
    /// Where pods' files, logs and the runner's own state live.
    #[arg(long)]
    state_dir: PathBuf,
    /// The bridge every pod's veth joins.
    #[arg(long, default_value = "gwc0")]
    bridge: String,
    /// The host's address on the bridge (the pods' default gateway) with the pod network's prefix.
    #[arg(long, default_value = "10.244.0.1/16")]
    bridge_address: String,
    /// `REPOSITORY=BINARY`: run images of REPOSITORY (no registry host, no tag) with BINARY; or
    /// `REPOSITORY=DIR` with an unpacked image's root file system (hack/image), whose programs
    /// the containers' commands name.
    #[arg(long = "image", value_parser = parse_image)]
    images: Vec<(String, PathBuf)>,
    /// Keep a kwok PortForward per pod so `kubectl port-forward` works (upstream's e2e suites
    /// need it). Off by default: reading the pods' socket tables made the conformance suite's
    /// mirror-percentage test undercount mirrored requests in the backends' logs.
    #[arg(long, env = "PODRUNNER_PORT_FORWARDS")]
    port_forwards: bool,
    /// The Services' cluster IP range: with it, every Service is served at its cluster IP
    /// (services.rs), pods route the range to the host, the cluster DNS answers cluster IPs,
    /// and containers get the `kubernetes` Service in their environment.
    #[arg(long, requires = "api_server")]
    service_cidr: Option<String>,
    /// Where the `default/kubernetes` Service leads (the API server's address, host:port).
    #[arg(long)]
    api_server: Option<std::net::SocketAddr>,
}

fn parse_image(s: &str) -> Result<(String, PathBuf), String> {
    let (repo, bin) = s.split_once('=').ok_or("expected REPOSITORY=BINARY")?;
    Ok((repo.to_string(), PathBuf::from(bin)))
}

/// The image repository the DNS stand-in serves.
const COREDNS_REPOSITORY: &str = "coredns/coredns";

fn main() -> anyhow::Result<()> {
    let argv0 = std::env::args().next().unwrap_or_default();
    if std::path::Path::new(&argv0).file_name().is_some_and(|n| n == "coredns") {
        return dns::main();
    }
    // kwok's port-forward command (see port_forward.rs).
    if let [_, pipe, target] = std::env::args().collect::<Vec<_>>().as_slice()
        && pipe == "pipe"
    {
        return port_forward::pipe(target);
    }
    podrunner::process::init_logs();
    let args = Args::parse();
    tokio::runtime::Builder::new_multi_thread().enable_all().build()?.block_on(run(args))
}

async fn run(args: Args) -> anyhow::Result<()> {
    let (gateway, prefix) = args.bridge_address.split_once('/').context("--bridge-address needs a /prefix")?;
    let gateway: Ipv4Addr = gateway.parse().context("--bridge-address")?;
    let prefix: u8 = prefix.parse().context("--bridge-address prefix")?;
    std::fs::create_dir_all(args.state_dir.join("pods"))?;
    let coredns = args.state_dir.join("bin").join("coredns");
    std::fs::create_dir_all(coredns.parent().expect("has a parent"))?;
    let _ = std::fs::remove_file(&coredns);
    std::os::unix::fs::symlink(std::env::current_exe()?, &coredns)?;
    let mut images = podrunner::Images::default().with(COREDNS_REPOSITORY, &coredns);
    for (repo, path) in &args.images {
        images = if path.is_dir() { images.with_root(repo, path) } else { images.with(repo, path) };
    }
    net::remove_stale()?;
    pod::remove_created_mount_points(&args.state_dir);
    net::bridge(&args.bridge, gateway, prefix)?;

    let client = kube::Client::try_default().await.context("no kubeconfig")?;
    let forwarding = args.service_cidr.clone().zip(args.api_server);
    let (table, range) = services::start(client.clone(), forwarding, (&args.bridge, gateway, prefix))?;
    if range.is_some() {
        tokio::spawn(load_balancer::publish(client.clone()));
    }
    let shared = Arc::new(pod::Shared {
        client: client.clone(),
        images,
        state_dir: args.state_dir.clone(),
        bridge: args.bridge.clone(),
        gateway,
        prefix,
        port_forwards: args.port_forwards,
        services: range.clone(),
    });
    let dns = tokio::spawn(cluster_dns::serve(table, gateway));
    let pods: kube::Api<Pod> = kube::Api::all(client);
    let config = watcher::Config::default().fields(&format!("spec.nodeName={}", args.node_name));
    let mut events = watcher::watcher(pods, config).boxed();
    let mut running: BTreeMap<String, watch::Sender<Option<pod::Stop>>> = BTreeMap::new();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    tracing::info!(node = %args.node_name, bridge = %args.bridge, "running pods");
    let mut stop = std::pin::pin!(podrunner::process::shutdown());
    loop {
        let event = tokio::select! {
            _ = &mut stop => break,
            event = events.next() => event,
        };
        let Some(event) = event else { break };
        match event {
            Ok(watcher::Event::Init) => seen.clear(),
            Ok(watcher::Event::InitApply(p)) | Ok(watcher::Event::Apply(p)) => {
                if let Some(uid) = p.metadata.uid.clone() {
                    seen.insert(uid.clone());
                    reconcile(&shared, &mut running, uid, p);
                }
            }
            Ok(watcher::Event::InitDone) => {
                // Pods that went away while the watch was down.
                running.retain(|uid, stop| {
                    let keep = seen.contains(uid);
                    if !keep {
                        let _ = stop.send(Some(pod::Stop::Gone));
                    }
                    keep
                });
            }
            Ok(watcher::Event::Delete(p)) => {
                // Gone before its processes were (a forced delete): stop them now. After the
                // pod's own graceful end this is its task's own delete coming back.
                if let Some(stop) = p.metadata.uid.as_ref().and_then(|uid| running.remove(uid)) {
                    stop.send_if_modified(|s| {
                        let forced = !matches!(s, Some(pod::Stop::Gone));
                        *s = Some(pod::Stop::Gone);
                        forced
                    });
                }
            }
            Err(e) => tracing::warn!(error = %e, "pod watch"),
        }
        running.retain(|_, stop| !stop.is_closed());
    }
    tracing::info!(pods = running.len(), "stopping");
    for stop in running.values() {
        let _ = stop.send(Some(pod::Stop::Shutdown));
    }
    // Each pod task removes its own namespace; wait until they all have.
    for _ in 0..100 {
        if running.values().all(watch::Sender::is_closed) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    dns.abort();
    pod::remove_created_mount_points(&args.state_dir);
    net::remove_stale()?;
    net::remove_bridge(&args.bridge);
    if let Some(range) = &range {
        services::remove(&range.cidr);
    }
    Ok(())
}

/// Starts a pod once kwok gave it an IP; stops it gracefully once it is being deleted.
fn reconcile(
    shared: &Arc<pod::Shared>,
    running: &mut BTreeMap<String, watch::Sender<Option<pod::Stop>>>,
    uid: String,
    p: Pod,
) {
    if p.metadata.deletion_timestamp.is_some() {
        let grace = p.metadata.deletion_grace_period_seconds.map_or(30, |g| u32::try_from(g).unwrap_or(0));
        if let Some(stop) = running.get(&uid) {
            // The first deletion decides; a shorter grace later (a forced delete) cuts it short.
            stop.send_if_modified(|s| match s {
                None => {
                    *s = Some(pod::Stop::Deleted { grace });
                    true
                }
                Some(pod::Stop::Deleted { grace: g }) if grace < *g => {
                    *s = Some(pod::Stop::Deleted { grace });
                    true
                }
                _ => false,
            });
        }
        return;
    }
    let has_ip = p.status.as_ref().and_then(|s| s.pod_ip.as_deref()).is_some_and(|ip| !ip.is_empty());
    if !has_ip || running.contains_key(&uid) {
        return;
    }
    let (stop, stopped) = watch::channel(None);
    running.insert(uid, stop);
    tokio::spawn(pod::run(Arc::clone(shared), p, stopped));
}
