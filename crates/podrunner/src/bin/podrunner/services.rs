//! The cluster's Services, for the cluster DNS and, with a service range, at their cluster IPs as
//! kube-proxy in userspace mode would serve them. The cluster IPs live in a network namespace of
//! their own (so a host process bound to 0.0.0.0 on a Service's port, as upstream's e2e suites
//! run the controller, never clashes with them), joined to the pod bridge at the address after
//! the host's; pods and the host route the service range there. The listening sockets are made
//! in that namespace, the connections onwards from the host's: one listener per TCP port relays
//! each connection to a ready endpoint of the Service's EndpointSlices (round robin; the port
//! found by name; terminating endpoints get no new connections). The `default/kubernetes`
//! Service, which nothing fills with endpoints here (the API server's endpoint reconciler is
//! off), leads to the API server. UDP ports are not forwarded.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::runtime::watcher;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

pub use crate::net::Range;
use crate::net::ip;

/// The network namespace holding the cluster IPs (the runner's prefix: a teardown that removes
/// the pods' namespaces removes it too).
const NETNS: &str = "gwc-services";
/// Its veth pair: the host's side (on the bridge) and its own.
const HOST_IF: &str = "gwcsvch";
const NS_IF: &str = "gwcsvcp";

/// A Service, as far as forwarding and DNS go.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ServiceEntry {
    /// `None` for a headless Service.
    cluster_ip: Option<Ipv4Addr>,
    /// TCP ports: (name, port).
    ports: Vec<(String, u16)>,
}

/// An EndpointSlice: its Service, its ports by name, its endpoints.
#[derive(Debug, Clone)]
struct SliceEntry {
    service: String,
    ports: Vec<(String, u16)>,
    endpoints: Vec<Endpoint>,
}

/// One endpoint address and its conditions.
#[derive(Debug, Clone, Copy)]
struct Endpoint {
    address: Ipv4Addr,
    /// Ready and not terminating: takes new connections.
    ready: bool,
    /// Still serving (a terminating pod that has not stopped yet).
    serving: bool,
}

#[derive(Default)]
struct State {
    services: BTreeMap<(String, String), ServiceEntry>,
    slices: BTreeMap<(String, String), SliceEntry>,
}

/// The Services and EndpointSlices of the cluster, kept current by watches.
#[derive(Clone, Default)]
pub struct Table {
    state: Arc<RwLock<State>>,
    changed: Arc<Notify>,
    /// Whether Services are served at their cluster IPs.
    forwarding: bool,
}

impl Table {
    /// What a cluster name resolves to: the cluster IP of a Service that has one (when
    /// forwarding), else the ready addresses of its endpoints.
    pub fn resolve(&self, service: &str, namespace: &str) -> Vec<Ipv4Addr> {
        let state = self.state.read().expect("services lock");
        if self.forwarding
            && let Some(ip) =
                state.services.get(&(namespace.to_string(), service.to_string())).and_then(|s| s.cluster_ip)
        {
            return vec![ip];
        }
        let mut out: Vec<Ipv4Addr> = state
            .slices
            .iter()
            .filter(|((ns, _), slice)| ns == namespace && slice.service == service)
            .flat_map(|(_, slice)| slice.endpoints.iter().filter(|e| e.ready).map(|e| e.address))
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The endpoints (address, port) of `namespace/service`'s port `port_name` that take new
    /// connections: the ready ones, else (as kube-proxy falls back) those terminating but still
    /// serving.
    fn endpoints(&self, namespace: &str, service: &str, port_name: &str) -> Vec<SocketAddr> {
        let state = self.state.read().expect("services lock");
        let all: Vec<(Endpoint, u16)> = state
            .slices
            .iter()
            .filter(|((ns, _), slice)| ns == namespace && slice.service == service)
            .filter_map(|(_, slice)| {
                let port = slice.ports.iter().find(|(name, _)| name == port_name)?.1;
                Some(slice.endpoints.iter().map(move |e| (*e, port)))
            })
            .flatten()
            .collect();
        let ready = all.iter().any(|(e, _)| e.ready);
        let mut out: Vec<SocketAddr> = all
            .iter()
            .filter(|(e, _)| if ready { e.ready } else { e.serving })
            .map(|(e, port)| SocketAddr::from((e.address, *port)))
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// Watches Services and EndpointSlices. With `forwarding` (the range, and the API server's
/// address for `default/kubernetes`), serves every Service at its cluster IP until the process
/// ends; the bridge is `(name, host address, prefix)`.
pub fn start(
    client: kube::Client,
    forwarding: Option<(String, SocketAddr)>,
    bridge: (&str, Ipv4Addr, u8),
) -> anyhow::Result<(Table, Option<Range>)> {
    let table = Table { forwarding: forwarding.is_some(), ..Table::default() };
    tokio::spawn(follow_services(client.clone(), table.clone()));
    tokio::spawn(follow_slices(client, table.clone()));
    let Some((cidr, api_server)) = forwarding else { return Ok((table, None)) };
    let range = namespace(&cidr, bridge)?;
    let binder = Binder::start()?;
    tokio::spawn(forward(table.clone(), binder, api_server));
    Ok((table, Some(range)))
}

/// A fresh namespace for the cluster IPs on the bridge, at the address after the host's, with
/// the host's route to the range through it.
fn namespace(cidr: &str, (bridge, gateway, prefix): (&str, Ipv4Addr, u8)) -> anyhow::Result<Range> {
    remove(cidr);
    let via = Ipv4Addr::from(u32::from(gateway) + 1);
    ip(&["netns", "add", NETNS])?;
    ip(&["link", "add", HOST_IF, "type", "veth", "peer", "name", NS_IF])?;
    ip(&["link", "set", NS_IF, "netns", NETNS])?;
    ip(&["link", "set", HOST_IF, "master", bridge, "up"])?;
    ip(&["-n", NETNS, "link", "set", "lo", "up"])?;
    ip(&["-n", NETNS, "addr", "add", &format!("{via}/{prefix}"), "dev", NS_IF])?;
    ip(&["-n", NETNS, "link", "set", NS_IF, "up"])?;
    ip(&["route", "replace", cidr, "via", &via.to_string(), "dev", bridge])?;
    Ok(Range { cidr: cidr.to_string(), via })
}

/// Removes the cluster IPs' namespace and the host's route to `cidr`.
pub fn remove(cidr: &str) {
    let _ = ip(&["route", "del", cidr]);
    let _ = ip(&["link", "del", HOST_IF]);
    let _ = ip(&["netns", "del", NETNS]);
}

/// Makes listening sockets inside the cluster IPs' namespace: a thread of its own joins it (a
/// socket stays in the namespace it was made in, whichever thread then uses it).
struct Binder {
    requests:
        std::sync::mpsc::Sender<(SocketAddrV4, tokio::sync::oneshot::Sender<std::io::Result<std::net::TcpListener>>)>,
}

impl Binder {
    fn start() -> anyhow::Result<Self> {
        let netns = std::fs::File::open(format!("/var/run/netns/{NETNS}"))?;
        let (requests, incoming) = std::sync::mpsc::channel::<(SocketAddrV4, tokio::sync::oneshot::Sender<_>)>();
        let (joined, result) = std::sync::mpsc::channel();
        std::thread::Builder::new().name("cluster-ips".into()).spawn(move || {
            let entered = nix::sched::setns(&netns, nix::sched::CloneFlags::CLONE_NEWNET);
            let ok = entered.is_ok();
            let _ = joined.send(entered);
            if ok {
                for (address, reply) in incoming {
                    let _ = reply.send(listen(address));
                }
            }
        })?;
        result.recv()?.map_err(|e| anyhow::anyhow!("joining {NETNS}: {e}"))?;
        Ok(Self { requests })
    }

    /// A listener at `address` in the namespace, registered with the runtime.
    async fn listen(&self, address: SocketAddrV4) -> std::io::Result<tokio::net::TcpListener> {
        let (reply, listener) = tokio::sync::oneshot::channel();
        self.requests.send((address, reply)).map_err(|_| std::io::Error::other("the binder thread ended"))?;
        let listener = listener.await.map_err(|_| std::io::Error::other("the binder thread ended"))??;
        tokio::net::TcpListener::from_std(listener)
    }
}

/// A non-blocking listening socket at `address`, reusable at once after it closes.
fn listen(address: SocketAddrV4) -> std::io::Result<std::net::TcpListener> {
    use nix::sys::socket::{self, AddressFamily, Backlog, SockFlag, SockType, SockaddrIn, sockopt};
    use std::os::fd::AsRawFd as _;
    let flags = SockFlag::SOCK_CLOEXEC | SockFlag::SOCK_NONBLOCK;
    let fd = socket::socket(AddressFamily::Inet, SockType::Stream, flags, None)?;
    socket::setsockopt(&fd, sockopt::ReuseAddr, &true)?;
    socket::bind(fd.as_raw_fd(), &SockaddrIn::from(address))?;
    socket::listen(&fd, Backlog::new(1024)?)?;
    Ok(std::net::TcpListener::from(fd))
}

fn key(meta: &kube::api::ObjectMeta) -> (String, String) {
    (meta.namespace.clone().unwrap_or_default(), meta.name.clone().unwrap_or_default())
}

fn service_entry(s: &Service) -> ServiceEntry {
    let spec = s.spec.as_ref();
    let cluster_ip = spec.and_then(|s| s.cluster_ip.as_deref()).and_then(|ip| ip.parse().ok());
    let ports = spec
        .iter()
        .flat_map(|s| s.ports.iter().flatten())
        .filter(|p| p.protocol.as_deref().is_none_or(|p| p == "TCP"))
        .filter_map(|p| Some((p.name.clone().unwrap_or_default(), u16::try_from(p.port).ok()?)))
        .collect();
    ServiceEntry { cluster_ip, ports }
}

fn slice_entry(s: &EndpointSlice) -> SliceEntry {
    let service =
        s.metadata.labels.as_ref().and_then(|l| l.get("kubernetes.io/service-name")).cloned().unwrap_or_default();
    let ports = s
        .ports
        .iter()
        .flatten()
        .filter(|p| p.protocol.as_deref().is_none_or(|p| p == "TCP"))
        .filter_map(|p| Some((p.name.clone().unwrap_or_default(), u16::try_from(p.port?).ok()?)))
        .collect();
    let endpoints = s
        .endpoints
        .iter()
        .flatten()
        .flat_map(|e| {
            let c = e.conditions.as_ref();
            let terminating = c.and_then(|c| c.terminating).unwrap_or(false);
            let ready = c.and_then(|c| c.ready).unwrap_or(true) && !terminating;
            let serving = c.and_then(|c| c.serving).unwrap_or(ready);
            e.addresses
                .iter()
                .filter_map(move |a| Some(Endpoint { address: a.parse::<Ipv4Addr>().ok()?, ready, serving }))
        })
        .collect();
    SliceEntry { service, ports, endpoints }
}

/// Keeps one kind's map current; `pick` chooses the map, `entry` makes the value.
async fn follow<K, V>(
    api: kube::Api<K>,
    table: Table,
    pick: fn(&mut State) -> &mut BTreeMap<(String, String), V>,
    entry: fn(&K) -> V,
) where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
{
    let what = std::any::type_name::<K>().rsplit("::").next().unwrap_or_default();
    let mut events = watcher::watcher(api, watcher::Config::default()).boxed();
    let mut fresh = BTreeMap::new();
    while let Some(event) = events.next().await {
        match event {
            Ok(watcher::Event::Init) => fresh.clear(),
            Ok(watcher::Event::InitApply(o)) => {
                fresh.insert(key(o.meta()), entry(&o));
            }
            Ok(watcher::Event::InitDone) => {
                *pick(&mut table.state.write().expect("services lock")) = std::mem::take(&mut fresh);
            }
            Ok(watcher::Event::Apply(o)) => {
                pick(&mut table.state.write().expect("services lock")).insert(key(o.meta()), entry(&o));
            }
            Ok(watcher::Event::Delete(o)) => {
                pick(&mut table.state.write().expect("services lock")).remove(&key(o.meta()));
            }
            Err(e) => {
                tracing::warn!(error = %e, "{what} watch");
                continue;
            }
        }
        table.changed.notify_one();
    }
}

async fn follow_services(client: kube::Client, table: Table) {
    follow(kube::Api::<Service>::all(client), table, |s| &mut s.services, service_entry).await;
}

async fn follow_slices(client: kube::Client, table: Table) {
    follow(kube::Api::<EndpointSlice>::all(client), table, |s| &mut s.slices, slice_entry).await;
}

/// One forwarded port: the cluster IP and port, and the Service port it belongs to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Forward {
    address: SocketAddrV4,
    namespace: String,
    service: String,
    port_name: String,
}

/// Keeps one listener per Service port at its cluster IP.
async fn forward(table: Table, binder: Binder, api_server: SocketAddr) {
    let binder = Arc::new(binder);
    let mut listeners: BTreeMap<Forward, JoinHandle<()>> = BTreeMap::new();
    let mut addresses: BTreeSet<Ipv4Addr> = BTreeSet::new();
    loop {
        table.changed.notified().await;
        let wanted: BTreeSet<Forward> = {
            let state = table.state.read().expect("services lock");
            state
                .services
                .iter()
                .filter_map(|((ns, name), s)| Some((ns, name, s.cluster_ip?, &s.ports)))
                .flat_map(|(ns, name, ip, ports)| {
                    ports.iter().map(move |(port_name, port)| Forward {
                        address: SocketAddrV4::new(ip, *port),
                        namespace: ns.clone(),
                        service: name.clone(),
                        port_name: port_name.clone(),
                    })
                })
                .collect()
        };
        // A listener that ended (its bind failed) is tried again.
        listeners.retain(|f, task| {
            let keep = wanted.contains(f) && !task.is_finished();
            if !keep {
                task.abort();
            }
            keep
        });
        let in_use: BTreeSet<Ipv4Addr> = wanted.iter().map(|f| *f.address.ip()).collect();
        for gone in addresses.difference(&in_use) {
            let _ = ip(&["-n", NETNS, "addr", "del", &format!("{gone}/32"), "dev", "lo"]);
        }
        for new in in_use.difference(&addresses) {
            if let Err(e) = ip(&["-n", NETNS, "addr", "add", &format!("{new}/32"), "dev", "lo"]) {
                tracing::warn!(address = %new, error = format!("{e:#}"), "cluster IP");
            }
        }
        addresses = in_use;
        for f in wanted {
            if listeners.contains_key(&f) {
                continue;
            }
            let fallback = (f.namespace == "default" && f.service == "kubernetes").then_some(api_server);
            let task = tokio::spawn(relay(table.clone(), Arc::clone(&binder), f.clone(), fallback));
            listeners.insert(f, task);
        }
    }
}

/// Accepts at the cluster IP and relays each connection to one of the Service's ready
/// endpoints, in turn (`fallback` when it has none).
async fn relay(table: Table, binder: Arc<Binder>, f: Forward, fallback: Option<SocketAddr>) {
    let listener = match binder.listen(f.address).await {
        Ok(l) => l,
        Err(e) => {
            tracing::warn!(service = %format!("{}/{}", f.namespace, f.service), address = %f.address, error = %e, "cannot serve the cluster IP");
            return;
        }
    };
    let next = Arc::new(AtomicUsize::new(0));
    loop {
        let inbound = match listener.accept().await {
            Ok((inbound, _)) => inbound,
            Err(e) => {
                tracing::warn!(address = %f.address, error = %e, "accepting at the cluster IP");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                continue;
            }
        };
        let endpoints = table.endpoints(&f.namespace, &f.service, &f.port_name);
        let target = match endpoints.len() {
            0 => fallback,
            n => Some(endpoints[next.fetch_add(1, Ordering::Relaxed) % n]),
        };
        let Some(target) = target else {
            tracing::debug!(address = %f.address, "no ready endpoint: connection closed");
            continue;
        };
        tokio::spawn(crate::ports::splice(inbound, target));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(forwarding: bool) -> Table {
        let t = Table { forwarding, ..Table::default() };
        {
            let mut s = t.state.write().unwrap();
            let svc = |ip: Option<Ipv4Addr>| ServiceEntry { cluster_ip: ip, ports: vec![("http".into(), 80)] };
            s.services.insert(("apps".into(), "echo".into()), svc(Some(Ipv4Addr::new(10, 96, 0, 10))));
            s.services.insert(("apps".into(), "headless".into()), svc(None));
            let slice = |service: &str, endpoints: Vec<(Ipv4Addr, bool, bool)>| SliceEntry {
                service: service.into(),
                ports: vec![("http".into(), 3000)],
                endpoints: endpoints
                    .into_iter()
                    .map(|(address, ready, serving)| Endpoint { address, ready, serving })
                    .collect(),
            };
            let (a, b, c) = (Ipv4Addr::new(10, 244, 1, 5), Ipv4Addr::new(10, 244, 1, 6), Ipv4Addr::new(10, 244, 1, 7));
            s.slices.insert(("apps".into(), "echo-1".into()), slice("echo", vec![(a, true, true), (b, false, false)]));
            s.slices.insert(("apps".into(), "headless-1".into()), slice("headless", vec![(c, true, true)]));
            s.slices.insert(("other".into(), "echo-1".into()), slice("echo", vec![(b, true, true)]));
            // The last pod of `draining` is terminating but still serving.
            s.slices.insert(
                ("apps".into(), "draining-1".into()),
                slice("draining", vec![(a, false, true), (b, false, false)]),
            );
        }
        t
    }

    #[test]
    fn names_resolve_to_the_cluster_ip_when_forwarding_and_to_endpoints_otherwise() {
        assert_eq!(table(true).resolve("echo", "apps"), vec![Ipv4Addr::new(10, 96, 0, 10)]);
        assert_eq!(table(false).resolve("echo", "apps"), vec![Ipv4Addr::new(10, 244, 1, 5)], "only the ready one");
        assert_eq!(table(true).resolve("headless", "apps"), vec![Ipv4Addr::new(10, 244, 1, 7)]);
        assert!(table(true).resolve("absent", "apps").is_empty());
    }

    #[test]
    fn connections_go_to_ready_endpoints_of_the_named_port_only() {
        let t = table(true);
        assert_eq!(t.endpoints("apps", "echo", "http"), vec![SocketAddr::from(([10, 244, 1, 5], 3000))]);
        assert!(t.endpoints("apps", "echo", "https").is_empty());
        assert_eq!(
            t.endpoints("apps", "draining", "http"),
            vec![SocketAddr::from(([10, 244, 1, 5], 3000))],
            "no ready endpoint: the terminating one still serving, as kube-proxy falls back"
        );
    }
}
