//! `kubectl port-forward` to a pod. kwok serves the kubelet's port-forward API from its
//! PortForward objects: per pod, a command per port, run with the connection on its stdin and
//! stdout. The runner keeps one PortForward per pod naming every TCP port something listens on
//! inside the pod (read from the pod's own `/proc/PID/net/tcp*`, so ports bound to the pod's
//! loopback count, as they do for a kubelet), each with a command that enters the pod's network
//! namespace and relays to that port: the runner itself, as `podrunner pipe ADDRESS:PORT`.

use std::collections::BTreeSet;
use std::io::{Read as _, Write as _};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use anyhow::Context as _;
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};

use crate::probe::Pids;

/// How often the listening ports are read: often while the pod starts, rarely after. Reading a
/// busy pod's socket table costs the kernel a walk over every connection, TIME_WAIT included, so
/// it is done off the async workers and not every second for a pod's whole life.
const RESCAN_STARTING: Duration = Duration::from_secs(1);
const RESCAN_STARTING_COUNT: u32 = 30;
const RESCAN: Duration = Duration::from_secs(15);

fn api(client: &kube::Client, namespace: &str) -> kube::Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("kwok.x-k8s.io", "v1alpha1", "PortForward");
    kube::Api::namespaced_with(client.clone(), namespace, &ApiResource::from_gvk_with_plural(&gvk, "portforwards"))
}

/// Keeps the pod's PortForward up to date until aborted; [`remove`] deletes it.
pub async fn publish(client: kube::Client, namespace: String, name: String, netns: String, pids: Pids) {
    let Ok(runner) = std::env::current_exe() else { return };
    let api = api(&client, &namespace);
    let mut published: Option<BTreeSet<SocketAddr>> = None;
    for scan in 0u32.. {
        let pid = pids.lock().expect("pids lock").iter().flatten().next().copied();
        if let Some(pid) = pid {
            let Ok(ports) = tokio::task::spawn_blocking(move || listening(pid)).await else { return };
            if published.as_ref() != Some(&ports) {
                let forwards: Vec<serde_json::Value> = ports
                    .iter()
                    .map(|target| {
                        serde_json::json!({
                            "ports": [target.port()],
                            "command": ["ip", "netns", "exec", &netns, &runner, "pipe", target.to_string()],
                        })
                    })
                    .collect();
                let object = serde_json::json!({
                    "apiVersion": "kwok.x-k8s.io/v1alpha1",
                    "kind": "PortForward",
                    "metadata": {"name": name, "namespace": namespace},
                    "spec": {"forwards": forwards},
                });
                let params = PatchParams::apply("podrunner").force();
                match api.patch(&name, &params, &Patch::Apply(&object)).await {
                    Ok(_) => published = Some(ports),
                    Err(e) => tracing::warn!(pod = %format!("{namespace}/{name}"), error = %e, "PortForward"),
                }
            }
        }
        tokio::time::sleep(if scan < RESCAN_STARTING_COUNT { RESCAN_STARTING } else { RESCAN }).await;
    }
}

/// Deletes the pod's PortForward.
pub async fn remove(client: &kube::Client, namespace: &str, name: &str) {
    let _ = api(client, namespace).delete(name, &DeleteParams::default()).await;
}

/// The addresses to dial for each TCP port listening in `pid`'s network namespace: a wildcard
/// listener is dialled on loopback; a port bound on IPv4 and IPv6 is dialled on IPv4.
fn listening(pid: u32) -> BTreeSet<SocketAddr> {
    let mut found: Vec<SocketAddr> = Vec::new();
    for file in ["tcp", "tcp6"] {
        if let Ok(table) = std::fs::read_to_string(format!("/proc/{pid}/net/{file}")) {
            found.extend(parse_listeners(&table));
        }
    }
    let mut out: BTreeSet<SocketAddr> = BTreeSet::new();
    for addr in found.iter().filter(|a| a.is_ipv4()).chain(found.iter().filter(|a| a.is_ipv6())) {
        if !out.iter().any(|o| o.port() == addr.port()) {
            out.insert(*addr);
        }
    }
    out
}

/// The listening sockets of a `/proc/net/tcp` or `tcp6` table, wildcards turned into loopback.
fn parse_listeners(table: &str) -> Vec<SocketAddr> {
    const LISTEN: &str = "0A";
    let mut out = Vec::new();
    for line in table.lines().skip(1) {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let (Some(local), Some(state)) = (fields.get(1), fields.get(3)) else { continue };
        if *state != LISTEN {
            continue;
        }
        let Some((ip, port)) = local.split_once(':') else { continue };
        let Ok(port) = u16::from_str_radix(port, 16) else { continue };
        // The kernel prints each 32-bit word of the address as a number: its bytes in memory
        // (native order) are the address's bytes in network order.
        let words: Option<Vec<[u8; 4]>> = (0..ip.len() / 8)
            .map(|i| ip.get(i * 8..i * 8 + 8).and_then(|w| u32::from_str_radix(w, 16).ok()).map(u32::to_ne_bytes))
            .collect();
        let ip = match (ip.len(), words) {
            (8, Some(w)) => Some(IpAddr::V4(Ipv4Addr::from(w[0]))),
            (32, Some(w)) => {
                let mut bytes = [0u8; 16];
                for (i, word) in w.iter().enumerate() {
                    bytes[i * 4..i * 4 + 4].copy_from_slice(word);
                }
                Some(IpAddr::V6(Ipv6Addr::from(bytes)))
            }
            _ => None,
        };
        let Some(ip) = ip else { continue };
        let ip = match ip {
            IpAddr::V4(v) if v.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(v) if v.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
            other => other,
        };
        out.push(SocketAddr::new(ip, port));
    }
    out
}

/// `podrunner pipe ADDRESS:PORT`: relays stdin to the address and the address to stdout until
/// either side closes (run by kwok, inside the pod's network namespace).
pub fn pipe(target: &str) -> anyhow::Result<()> {
    let target: SocketAddr = target.parse().context("pipe ADDRESS:PORT")?;
    let socket = std::net::TcpStream::connect_timeout(&target, Duration::from_secs(5))
        .with_context(|| format!("connecting to {target}"))?;
    let mut upstream = socket.try_clone()?;
    let inbound = std::thread::spawn(move || {
        let _ = std::io::copy(&mut std::io::stdin().lock(), &mut upstream);
        let _ = upstream.shutdown(std::net::Shutdown::Write);
    });
    let mut downstream = socket;
    let mut stdout = std::io::stdout().lock();
    let mut buf = [0u8; 16 * 1024];
    loop {
        let n = downstream.read(&mut buf)?;
        if n == 0 {
            break;
        }
        stdout.write_all(&buf[..n])?;
        stdout.flush()?;
    }
    drop(inbound);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listeners_from_the_kernel_tables() {
        let tcp = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:2329 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0
   1: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2 1 0 100 0 0 10 0
   2: 0100007F:2329 0100007F:D2F0 01 00000000:00000000 00:00000000 00000000     0        0 3 1 0 100 0 0 10 0
   3: 0201F40A:1F4A 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4 1 0 100 0 0 10 0
";
        let tcp6 = "  sl  local_address                         remote_address                        st
   0: 00000000000000000000000000000000:1F92 00000000000000000000000000000000:0000 0A 0
   1: 00000000000000000000000001000000:1F93 00000000000000000000000000000000:0000 0A 0
";
        let found: Vec<String> =
            parse_listeners(tcp).into_iter().chain(parse_listeners(tcp6)).map(|a| a.to_string()).collect();
        assert_eq!(found, ["127.0.0.1:9001", "127.0.0.1:8080", "10.244.1.2:8010", "[::1]:8082", "[::1]:8083"]);
    }
}
