//! Readiness for a pod's whole life, as the kubelet keeps it: each container's probe on its
//! schedule (retried quickly until its first success) (`httpGet`, `tcpSocket`; without one, or with a command probe, "a socket is
//! listening"), and the pod's Ready condition and container statuses written whenever the
//! verdict changes.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Patch, PatchParams};
use podrunner::{ContainerPlan, ProbeTiming, Readiness};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::time::Instant;

/// Each container's current process id (`None` while it is down), for the probes.
pub type Pids = std::sync::Arc<std::sync::Mutex<Vec<Option<u32>>>>;

/// How often probes without a schedule of their own (listening) are checked.
const LISTEN_PERIOD: Duration = Duration::from_millis(250);

/// One container's probe state.
struct State {
    next: Instant,
    ready: bool,
    successes: u32,
    failures: u32,
}

/// Probes until aborted; writes the pod's readiness on every change.
pub async fn watch(client: kube::Client, pod: Pod, containers: Vec<ContainerPlan>, pids: Pids) {
    let name = pod.metadata.name.clone().unwrap_or_default();
    let address: IpAddr = pod
        .status
        .as_ref()
        .and_then(|s| s.pod_ip.as_deref())
        .and_then(|ip| ip.parse().ok())
        .unwrap_or(Ipv4Addr::LOCALHOST.into());
    let start = Instant::now();
    let mut states: Vec<State> = containers
        .iter()
        .map(|c| State {
            next: start + Duration::from_secs(timing(&c.readiness).map_or(0, |t| u64::from(t.initial_delay))),
            ready: false,
            successes: 0,
            failures: 0,
        })
        .collect();
    let mut written: Option<Vec<bool>> = None;
    loop {
        let now = Instant::now();
        for (i, c) in containers.iter().enumerate() {
            let state = &mut states[i];
            if now < state.next {
                continue;
            }
            let pid = pids.lock().expect("pids lock").get(i).copied().flatten();
            let ok = match pid {
                None => false,
                Some(pid) => check(&c.readiness, address, pid).await,
            };
            let t = timing(&c.readiness);
            let period = t.map_or(LISTEN_PERIOD, |t| Duration::from_secs(u64::from(t.period)));
            // Until a container is first ready, a failed probe is retried at once rather than a
            // whole period later (the kubelet waits the period): pods turn Ready as soon as they
            // serve, and suites do not wait out a period for a server that was still starting.
            let starting = !state.ready && !ok;
            state.next = Instant::now() + if starting { period.min(LISTEN_PERIOD) } else { period };
            if ok {
                state.successes += 1;
                state.failures = 0;
                if state.successes >= t.map_or(1, |t| t.success_threshold) {
                    state.ready = true;
                }
            } else {
                state.failures += 1;
                state.successes = 0;
                // Before the first success a failing probe changes nothing; after it, the
                // threshold decides (a process that is down is unready at once).
                if pid.is_none() || state.failures >= t.map_or(1, |t| t.failure_threshold) {
                    state.ready = false;
                }
            }
        }
        let verdict: Vec<bool> = states.iter().map(|s| s.ready).collect();
        if written.as_ref() != Some(&verdict) {
            match write(&client, &pod, &containers, &verdict).await {
                Ok(()) => {
                    tracing::info!(pod = %name, ready = verdict.iter().all(|r| *r), containers = ?verdict, "readiness");
                    written = Some(verdict);
                }
                Err(e) => tracing::warn!(pod = %name, error = format!("{e:#}"), "writing readiness"),
            }
        }
        let wake = states.iter().map(|s| s.next).min().unwrap_or(now + LISTEN_PERIOD);
        tokio::time::sleep_until(wake.max(Instant::now() + Duration::from_millis(50))).await;
    }
}

fn timing(r: &Readiness) -> Option<ProbeTiming> {
    match r {
        Readiness::Listening => None,
        Readiness::Http { timing, .. } | Readiness::Tcp { timing, .. } => Some(*timing),
    }
}

async fn check(readiness: &Readiness, address: IpAddr, pid: u32) -> bool {
    match readiness {
        Readiness::Listening => listening(pid),
        Readiness::Tcp { port, timing } => {
            let connect = tokio::net::TcpStream::connect(SocketAddr::new(address, *port));
            matches!(tokio::time::timeout(Duration::from_secs(u64::from(timing.timeout)), connect).await, Ok(Ok(_)))
        }
        Readiness::Http { port, path, https, host_header, timing } => {
            let limit = Duration::from_secs(u64::from(timing.timeout));
            let probe = http_get(SocketAddr::new(address, *port), path, host_header.as_deref(), *https);
            matches!(tokio::time::timeout(limit, probe).await, Ok(Some(code)) if (200..400).contains(&code))
        }
    }
}

/// The status code of a plain HTTP/1.1 GET (`None` if there is no answer). HTTPS probes only
/// check that the port accepts connections: the kubelet does not verify certificates either,
/// and nothing here needs more.
pub async fn http_get(addr: SocketAddr, path: &str, host: Option<&str>, https: bool) -> Option<u16> {
    let mut stream = tokio::net::TcpStream::connect(addr).await.ok()?;
    if https {
        return Some(200);
    }
    let host = host.map_or_else(|| addr.to_string(), str::to_string);
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: kube-probe/1.36\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut head = vec![0u8; 64];
    let n = stream.read(&mut head).await.ok()?;
    let line = String::from_utf8_lossy(&head[..n]);
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Whether the pod's network namespace (seen through one of its processes) has a listening TCP
/// socket or a bound UDP socket.
pub fn listening(pid: u32) -> bool {
    let table = |name: &str| std::fs::read_to_string(format!("/proc/{pid}/net/{name}")).unwrap_or_default();
    let tcp_listen =
        ["tcp", "tcp6"].iter().any(|t| table(t).lines().skip(1).any(|l| l.split_whitespace().nth(3) == Some("0A")));
    let udp_bound = ["udp", "udp6"].iter().any(|t| table(t).lines().nth(1).is_some());
    tcp_listen || udp_bound
}

/// Writes the Ready and ContainersReady conditions and the container statuses.
async fn write(client: &kube::Client, pod: &Pod, containers: &[ContainerPlan], ready: &[bool]) -> anyhow::Result<()> {
    let now = k8s_openapi::jiff::Timestamp::now().to_string();
    let all = if ready.iter().all(|r| *r) { "True" } else { "False" };
    let cond = |t: &str, status: &str| serde_json::json!({"type": t, "status": status, "lastTransitionTime": now});
    let statuses: Vec<_> = containers
        .iter()
        .zip(ready)
        .map(|(c, ready)| container_status(pod, &c.name, *ready, 0, serde_json::json!({"running": {"startedAt": now}})))
        .collect();
    let patch = serde_json::json!({"status": {
        "conditions": [cond("Initialized", "True"), cond("ContainersReady", all), cond("Ready", all), cond("PodScheduled", "True")],
        "containerStatuses": statuses,
    }});
    patch_status(client, pod, patch).await
}

/// One container's entry in the pod's `containerStatuses`, in `state`.
pub fn container_status(
    pod: &Pod,
    name: &str,
    ready: bool,
    restarts: u32,
    state: serde_json::Value,
) -> serde_json::Value {
    let image = pod
        .spec
        .iter()
        .flat_map(|s| s.containers.iter())
        .find(|x| x.name == name)
        .and_then(|x| x.image.clone())
        .unwrap_or_default();
    let started = state.get("running").is_some();
    serde_json::json!({
        "name": name, "image": image, "imageID": image, "ready": ready, "started": started,
        "restartCount": restarts, "state": state,
    })
}

/// Patches the pod's status (a strategic merge: containers by name).
pub async fn patch_status(client: &kube::Client, pod: &Pod, patch: serde_json::Value) -> anyhow::Result<()> {
    let api: kube::Api<Pod> =
        kube::Api::namespaced(client.clone(), pod.metadata.namespace.as_deref().unwrap_or_default());
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    api.patch_status(name, &PatchParams::default(), &Patch::Strategic(patch)).await?;
    Ok(())
}
