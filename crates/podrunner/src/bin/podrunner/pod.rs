//! One pod's life: files, namespace, init containers to completion, then the containers with
//! CRI-format logs and a kwok `Logs` object, readiness from their probes for as long as the pod
//! lives, host ports forwarded from loopback, a kwok `PortForward` object for its listening
//! ports; everything undone when the pod goes.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret, Service, ServiceAccount};
use kube::api::{DeleteParams, DynamicObject, ListParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::watch;

use crate::net::PodNet;
use crate::probe::Pids;

/// What every pod task needs.
pub struct Shared {
    pub client: kube::Client,
    pub images: podrunner::Images,
    pub state_dir: PathBuf,
    pub bridge: String,
    pub gateway: Ipv4Addr,
    pub prefix: u8,
    /// Publish kwok PortForwards (see port_forward.rs).
    pub port_forwards: bool,
    /// Where Services are served at their cluster IPs (see services.rs): pods route the range
    /// there and get the `kubernetes` Service's address in their environment.
    pub services: Option<crate::net::Range>,
}

/// How often a container that exits is started again before the runner gives up on it.
const MAX_RESTARTS: u32 = 5;
/// How long an init container may run.
const INIT_TIMEOUT: Duration = Duration::from_secs(120);

struct Objects {
    secrets: BTreeMap<String, Secret>,
    config_maps: BTreeMap<String, ConfigMap>,
    /// Service-account tokens by audience.
    tokens: BTreeMap<Option<String>, String>,
    /// The `kubernetes` Service's address, when Services are forwarded.
    api_server: Option<(String, u16)>,
}

impl podrunner::Lookup for Objects {
    fn secret(&self, name: &str) -> Option<&Secret> {
        self.secrets.get(name)
    }
    fn config_map(&self, name: &str) -> Option<&ConfigMap> {
        self.config_maps.get(name)
    }
    fn token(&self, audience: Option<&str>) -> Option<&str> {
        self.tokens.get(&audience.map(str::to_string)).map(String::as_str)
    }
    fn api_server(&self) -> Option<(&str, u16)> {
        self.api_server.as_ref().map(|(host, port)| (host.as_str(), *port))
    }
}

/// Why a pod's processes stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The pod is being deleted with this grace period (seconds): its preStop hooks run, its
    /// containers get SIGTERM and the rest of the period, and then its object is removed, as
    /// the kubelet does.
    Deleted { grace: u32 },
    /// Its object is gone: the processes are killed.
    Gone,
    /// The runner stops: the processes are killed, the object is left alone.
    Shutdown,
}

/// Runs `pod` until `stop` says why it ends (or the sender goes away), then cleans up.
pub async fn run(shared: Arc<Shared>, pod: Pod, mut stop: watch::Receiver<Option<Stop>>) {
    let name = format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.name.as_deref().unwrap_or_default()
    );
    let uid = pod.metadata.uid.clone().unwrap_or_default();
    let dir = shared.state_dir.join("pods").join(&uid);
    let mut attempt = 0u32;
    let mut net = None;
    // A pod whose Secret is not there yet waits for it, as the kubelet does.
    let mut processes = loop {
        match start(&shared, &pod, &dir, &mut net).await {
            Ok(p) => break Some(p),
            Err(e) if attempt < 30 => {
                attempt += 1;
                tracing::warn!(pod = %name, error = format!("{e:#}"), "cannot start yet");
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_secs(2)) => {}
                    _ = stop.wait_for(Option::is_some) => break None,
                }
            }
            Err(e) => {
                tracing::error!(pod = %name, error = format!("{e:#}"), "giving up");
                break None;
            }
        }
    };
    if let Some(running) = processes.as_mut() {
        tracing::info!(pod = %name, netns = %running.netns, "started");
        let probes = tokio::spawn(crate::probe::watch(
            shared.client.clone(),
            pod.clone(),
            running.containers.iter().map(|c| c.plan.clone()).collect(),
            Arc::clone(&running.pids),
        ));
        let forwards = crate::ports::forward(&name, running.address, &running.host_ports);
        let port_forward = shared.port_forwards.then(|| {
            tokio::spawn(crate::port_forward::publish(
                shared.client.clone(),
                pod.metadata.namespace.clone().unwrap_or_default(),
                pod.metadata.name.clone().unwrap_or_default(),
                running.netns.clone(),
                Arc::clone(&running.pids),
            ))
        });
        let finished = tokio::select! {
            codes = supervise(&name, running, Restart::of(&pod)) => Some(codes),
            _ = stop.wait_for(Option::is_some) => None,
        };
        probes.abort();
        if let Some(codes) = finished {
            // A Job's pod: its status says how it ended; it stays (with its logs) until deleted.
            write_finished(&shared.client, &pod, running, &codes).await;
            let _ = stop.wait_for(Option::is_some).await;
        }
        terminate(&name, running, &mut stop).await;
        crate::ports::pod_stopped(running.address);
        if let Some(p) = port_forward {
            p.abort();
        }
        for f in forwards {
            f.abort();
        }
    }
    drop(net);
    let logs = logs_api(&shared.client, pod.metadata.namespace.as_deref().unwrap_or_default());
    let _ = logs.delete(pod.metadata.name.as_deref().unwrap_or_default(), &DeleteParams::default()).await;
    if shared.port_forwards {
        crate::port_forward::remove(
            &shared.client,
            pod.metadata.namespace.as_deref().unwrap_or_default(),
            pod.metadata.name.as_deref().unwrap_or_default(),
        )
        .await;
    }
    let _ = tokio::fs::remove_dir_all(&dir).await;
    if matches!(*stop.borrow(), Some(Stop::Deleted { .. })) {
        remove_object(&shared.client, &pod).await;
    }
    tracing::info!(pod = %name, "stopped");
}

/// The grace period a stop gives (none but for a deletion).
fn grace_of(stop: Option<Stop>) -> Duration {
    match stop {
        Some(Stop::Deleted { grace }) => Duration::from_secs(u64::from(grace)),
        _ => Duration::ZERO,
    }
}

/// Stops the containers as the kubelet does: each container's preStop hook, then SIGTERM, then
/// SIGKILL for whatever still runs when the grace period is over (at once with none). A later
/// stop with less grace (a forced delete, the object gone, the runner stopping) cuts it short.
async fn terminate(name: &str, running: &mut Running, stop: &mut watch::Receiver<Option<Stop>>) {
    let started = tokio::time::Instant::now();
    let grace = grace_of(*stop.borrow_and_update());
    let Running { containers, netns, dir, address, .. } = running;
    if !grace.is_zero() {
        let (netns, dir, address) = (&*netns, &*dir, *address);
        let stops = containers.iter_mut().filter(|c| c.exit.is_none()).map(|c| async move {
            if let Some(hook) = &c.plan.pre_stop {
                run_hook(name, netns, dir, address, c, hook).await;
            }
            if let Some(pid) = c.child.id() {
                let _ = Command::new("kill").args(["-TERM", &pid.to_string()]).status().await;
            }
            let _ = c.child.wait().await;
        });
        let cut_short = async {
            loop {
                let deadline = started + grace_of(*stop.borrow_and_update());
                tokio::select! {
                    _ = tokio::time::sleep_until(deadline) => return,
                    changed = stop.changed() => {
                        if changed.is_err() {
                            tokio::time::sleep_until(deadline).await;
                            return;
                        }
                    }
                }
            }
        };
        tokio::select! {
            _ = futures::future::join_all(stops) => {}
            _ = cut_short => tracing::warn!(pod = %name, grace = ?grace, "still running when the grace period ended: killed"),
        }
    }
    for c in containers.iter_mut() {
        let _ = c.child.start_kill();
        let _ = c.child.wait().await;
    }
}

/// Runs one preStop hook to its end (the grace period bounds it).
async fn run_hook(name: &str, netns: &str, dir: &Path, address: Ipv4Addr, c: &Container, hook: &podrunner::Hook) {
    tracing::info!(pod = %name, container = %c.plan.name, ?hook, "preStop");
    match hook {
        podrunner::Hook::Exec { program, args } => {
            let plan = podrunner::ContainerPlan { program: program.clone(), args: args.clone(), ..c.plan.clone() };
            match spawn(netns, dir, &plan, &c.log) {
                Ok(mut child) => {
                    let status = child.wait().await;
                    tracing::info!(pod = %name, container = %c.plan.name, ?status, "preStop finished");
                }
                Err(e) => tracing::warn!(pod = %name, container = %c.plan.name, error = format!("{e:#}"), "preStop"),
            }
        }
        podrunner::Hook::Http { port, path } => {
            let code = crate::probe::http_get(std::net::SocketAddr::from((address, *port)), path, None, false).await;
            tracing::info!(pod = %name, container = %c.plan.name, ?code, "preStop finished");
        }
        podrunner::Hook::Sleep(seconds) => tokio::time::sleep(Duration::from_secs(u64::from(*seconds))).await,
    }
}

/// Removes the pod's object once its processes are gone (the kubelet's final delete, grace 0,
/// for this pod only).
async fn remove_object(client: &kube::Client, pod: &Pod) {
    let api: kube::Api<Pod> =
        kube::Api::namespaced(client.clone(), pod.metadata.namespace.as_deref().unwrap_or_default());
    let params = DeleteParams {
        grace_period_seconds: Some(0),
        preconditions: Some(kube::api::Preconditions { uid: pod.metadata.uid.clone(), resource_version: None }),
        ..DeleteParams::default()
    };
    if let Err(e) = api.delete(pod.metadata.name.as_deref().unwrap_or_default(), &params).await
        && !matches!(&e, kube::Error::Api(s) if s.code == 404 || s.code == 409)
    {
        tracing::warn!(pod = ?pod.metadata.name, error = %e, "removing the pod");
    }
}

struct Container {
    plan: podrunner::ContainerPlan,
    child: Child,
    log: LogFile,
    restarts: u32,
    /// Set once the container will not run again: its exit code (`None`: a signal).
    exit: Option<Option<i32>>,
}

struct Running {
    netns: String,
    dir: PathBuf,
    address: Ipv4Addr,
    containers: Vec<Container>,
    pids: Pids,
    host_ports: Vec<podrunner::HostPort>,
}

async fn start(shared: &Shared, pod: &Pod, dir: &Path, net: &mut Option<PodNet>) -> anyhow::Result<Running> {
    let namespace = pod.metadata.namespace.clone().unwrap_or_default();
    let objects = lookup(shared, pod).await?;
    let plan = podrunner::plan(pod, &objects, &shared.images, dir)?;
    let _ = tokio::fs::remove_dir_all(dir).await;
    for d in &plan.dirs {
        tokio::fs::create_dir_all(dir.join(d)).await?;
    }
    for f in &plan.files {
        let path = dir.join(&f.path);
        tokio::fs::create_dir_all(path.parent().unwrap_or(dir)).await?;
        tokio::fs::write(&path, &f.contents).await?;
    }
    let logs_dir = dir.join("logs");
    tokio::fs::create_dir_all(&logs_dir).await?;

    let address: Ipv4Addr = pod
        .status
        .as_ref()
        .and_then(|s| s.pod_ip.as_deref())
        .context("no pod IP")?
        .parse()
        .context("pod IP is not IPv4")?;
    if net.is_none() {
        let uid = pod.metadata.uid.as_deref().unwrap_or_default();
        *net = Some(PodNet::create(
            uid,
            &namespace,
            address,
            &shared.bridge,
            (shared.gateway, shared.prefix),
            shared.services.as_ref(),
        )?);
    }
    let netns = net.as_ref().expect("just set").netns.clone();

    let mut logs = Vec::new();
    for c in &plan.init_containers {
        let path = logs_dir.join(format!("{}.log", c.name));
        let log = log_file(&path)?;
        let mut child = spawn(&netns, dir, c, &log)?;
        let status = tokio::time::timeout(INIT_TIMEOUT, child.wait())
            .await
            .with_context(|| format!("init container {} did not finish", c.name))??;
        anyhow::ensure!(status.success(), "init container {} failed: {status}", c.name);
        logs.push(serde_json::json!({"containers": [c.name], "logsFile": path, "follow": false}));
    }
    let mut containers = Vec::new();
    for c in plan.containers {
        let path = logs_dir.join(format!("{}.log", c.name));
        let log = log_file(&path)?;
        let child = spawn(&netns, dir, &c, &log)?;
        logs.push(serde_json::json!({"containers": [c.name], "logsFile": path, "follow": true}));
        containers.push(Container { plan: c, child, log, restarts: 0, exit: None });
    }
    // kwok serves `pods/log` from the files a Logs object names.
    let name = pod.metadata.name.clone().unwrap_or_default();
    let object = serde_json::json!({
        "apiVersion": "kwok.x-k8s.io/v1alpha1",
        "kind": "Logs",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"logs": logs},
    });
    let object: DynamicObject = serde_json::from_value(object)?;
    let api = logs_api(&shared.client, &namespace);
    let _ = api.delete(&name, &DeleteParams::default()).await;
    api.create(&PostParams::default(), &object).await.context("creating the Logs object")?;
    let pids = Arc::new(std::sync::Mutex::new(containers.iter().map(|c| c.child.id()).collect()));
    Ok(Running { netns, dir: dir.to_path_buf(), address, containers, pids, host_ports: plan.host_ports })
}

async fn lookup(shared: &Shared, pod: &Pod) -> anyhow::Result<Objects> {
    let client = &shared.client;
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    let secrets: kube::Api<Secret> = kube::Api::namespaced(client.clone(), namespace);
    let maps: kube::Api<ConfigMap> = kube::Api::namespaced(client.clone(), namespace);
    let lp = ListParams::default();
    let name = |m: &kube::api::ObjectMeta| m.name.clone().unwrap_or_default();
    let mut tokens = BTreeMap::new();
    for wanted in podrunner::token_requests(pod) {
        tokens.insert(wanted.audience.clone(), token(client, pod, &wanted).await?);
    }
    let api_server = match shared.services {
        Some(_) => Some(kubernetes_service(client).await?),
        None => None,
    };
    Ok(Objects {
        secrets: secrets.list(&lp).await?.items.into_iter().map(|s| (name(&s.metadata), s)).collect(),
        config_maps: maps.list(&lp).await?.items.into_iter().map(|m| (name(&m.metadata), m)).collect(),
        tokens,
        api_server,
    })
}

/// A token of the pod's service account, bound to the pod (it stops working once the pod goes),
/// as the kubelet requests it for a projected volume.
async fn token(client: &kube::Client, pod: &Pod, wanted: &podrunner::TokenWanted) -> anyhow::Result<String> {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    let account = pod.spec.as_ref().and_then(|s| s.service_account_name.clone()).unwrap_or_else(|| "default".into());
    let request: TokenRequest = serde_json::from_value(serde_json::json!({
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {
            "audiences": wanted.audience.iter().collect::<Vec<_>>(),
            "expirationSeconds": wanted.expiration_seconds,
            "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": pod.metadata.name, "uid": pod.metadata.uid},
        },
    }))?;
    let accounts: kube::Api<ServiceAccount> = kube::Api::namespaced(client.clone(), namespace);
    let issued = accounts
        .create_token_request(&account, &PostParams::default(), &request)
        .await
        .with_context(|| format!("a token for ServiceAccount {namespace}/{account}"))?;
    issued.status.and_then(|s| s.token).context("the TokenRequest has no token")
}

/// The `default/kubernetes` Service's cluster IP and HTTPS port (a pod waits for them: without
/// them its in-cluster clients could never reach the API server).
async fn kubernetes_service(client: &kube::Client) -> anyhow::Result<(String, u16)> {
    let services: kube::Api<Service> = kube::Api::namespaced(client.clone(), "default");
    let spec = services.get("kubernetes").await.context("the default/kubernetes Service")?.spec.unwrap_or_default();
    let port = spec.ports.iter().flatten().find(|p| p.name.as_deref() == Some("https")).map_or(443, |p| p.port);
    let ip = spec.cluster_ip.filter(|ip| !ip.is_empty()).context("the default/kubernetes Service has no cluster IP")?;
    Ok((ip, u16::try_from(port).context("the default/kubernetes Service's port")?))
}

fn logs_api(client: &kube::Client, namespace: &str) -> kube::Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("kwok.x-k8s.io", "v1alpha1", "Logs");
    kube::Api::namespaced_with(client.clone(), namespace, &ApiResource::from_gvk_with_plural(&gvk, "logs"))
}

/// What runs inside `ip netns exec` (which gives every process a mount namespace of its own,
/// slave to the host's, and binds /etc/netns/NAME/resolv.conf over /etc/resolv.conf): bind each
/// volume at its mount path, then exec the program. A missing mount point is created empty on
/// the host (which sees nothing of the binds) and listed in $CREATED, for the runner to remove
/// when it stops. The container has a UTS namespace of its own named after the pod ($HOSTNAME).
/// Arguments: SOURCE TARGET rw|ro ... -- PROGRAM ARGS.
const ENTER: &str = r#"set -e
point() {
  missing="" d="$1"
  while [ ! -e "$d" ]; do missing="$d
$missing"; d="$(dirname "$d")"; done
  printf '%s' "$missing" | while IFS= read -r m; do
    [ -n "$m" ] || continue
    if [ "$m" = "$1" ] && [ "$2" = file ]; then : >"$m"; else mkdir "$m"; fi
    printf '%s\n' "$m" >>"$CREATED"
  done
}
while [ "$1" != -- ]; do
  src="$1" dst="$2" mode="$3"; shift 3
  if [ -d "$src" ]; then point "$dst" dir; else point "$dst" file; fi
  mount --bind "$src" "$dst"
  if [ "$mode" = ro ]; then mount -o remount,bind,ro "$dst"; fi
done
shift
hostname "$HOSTNAME"
exec "$@""#;

/// Starts one container in the pod's network namespace and its own mount namespace; its output
/// goes to `log` in CRI format.
fn spawn(netns: &str, dir: &Path, c: &podrunner::ContainerPlan, log: &LogFile) -> anyhow::Result<Child> {
    let mut binds: Vec<String> = Vec::new();
    for m in &c.mounts {
        binds.push(m.source.display().to_string());
        binds.push(m.target.clone());
        binds.push(if m.read_only { "ro" } else { "rw" }.to_string());
    }
    let mut child = Command::new("ip")
        .args(["netns", "exec", netns, "unshare", "--uts", "sh", "-c", ENTER, "sh"])
        .args(&binds)
        .arg("--")
        .arg(&c.program)
        .args(&c.args)
        .env_clear()
        .env("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
        .env("CREATED", created_mount_points(dir))
        .envs(c.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {}", c.program.display()))?;
    let out = child.stdout.take().expect("piped");
    let err = child.stderr.take().expect("piped");
    tokio::spawn(copy_lines(out, "stdout", Arc::clone(log)));
    tokio::spawn(copy_lines(err, "stderr", Arc::clone(log)));
    Ok(child)
}

/// The file listing mount points created on the host: beside the runner's `pods` directory.
fn created_mount_points(pod_dir: &Path) -> PathBuf {
    pod_dir.parent().and_then(Path::parent).unwrap_or(pod_dir).join("created-mount-points")
}

/// Removes the mount points containers created on the host, deepest first, if they are still
/// empty (another runner's process may still use a shared one: then it stays).
pub fn remove_created_mount_points(state_dir: &Path) {
    let list = state_dir.join("created-mount-points");
    let mut paths: Vec<String> =
        std::fs::read_to_string(&list).unwrap_or_default().lines().map(str::to_string).collect();
    paths.sort_by_key(|p| std::cmp::Reverse(p.len()));
    paths.dedup();
    for p in paths {
        let path = Path::new(&p);
        match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => {
                let _ = std::fs::remove_dir(path);
            }
            Ok(m) if m.len() == 0 => {
                let _ = std::fs::remove_file(path);
            }
            _ => {}
        }
    }
    let _ = std::fs::remove_file(list);
}

/// A container's log file, shared by its stdout and stderr copiers.
type LogFile = Arc<std::sync::Mutex<std::fs::File>>;

fn log_file(path: &Path) -> anyhow::Result<LogFile> {
    let file = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
    Ok(Arc::new(std::sync::Mutex::new(file)))
}

/// Copies lines into the log in the CRI format kwok (and the kubelet) read:
/// `<RFC 3339 time with nanoseconds> <stream> F <line>`. Each line is one `write` to the file,
/// made at once: a reader (kwok serving `pods/log`) sees whole lines, never a line still sitting
/// in a buffer or half written.
async fn copy_lines(from: impl tokio::io::AsyncRead + Unpin, stream: &'static str, log: LogFile) {
    use std::io::Write as _;
    let mut lines = BufReader::new(from).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let record = format!("{} {stream} F {line}\n", cri_time(k8s_openapi::jiff::Timestamp::now()));
        let mut file = log.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if file.write_all(record.as_bytes()).is_err() {
            return;
        }
    }
}

/// RFC 3339 in UTC with exactly nine fractional digits.
fn cri_time(t: k8s_openapi::jiff::Timestamp) -> String {
    let whole = k8s_openapi::jiff::Timestamp::from_second(t.as_second()).expect("in range").to_string();
    format!("{}.{:09}Z", whole.trim_end_matches('Z'), t.subsec_nanosecond())
}

/// When a container that exited starts again (the pod's `restartPolicy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Restart {
    Always,
    OnFailure,
    Never,
}

impl Restart {
    fn of(pod: &Pod) -> Self {
        match pod.spec.as_ref().and_then(|s| s.restart_policy.as_deref()) {
            Some("Never") => Self::Never,
            Some("OnFailure") => Self::OnFailure,
            _ => Self::Always,
        }
    }

    fn again(self, code: Option<i32>) -> bool {
        match self {
            Self::Always => true,
            Self::OnFailure => code != Some(0),
            Self::Never => false,
        }
    }
}

/// Restarts containers that exit, as the pod's restart policy says and a bounded number of
/// times; returns each container's exit code (`None`: killed by a signal) once none of them
/// will run again (a Job's pod), and never while one runs or a restarted one gave up.
async fn supervise(name: &str, running: &mut Running, policy: Restart) -> Vec<Option<i32>> {
    loop {
        if running.containers.iter().all(|c| c.exit.is_some()) {
            return running.containers.iter().map(|c| c.exit.flatten()).collect();
        }
        let (status, index) = {
            let waits = running
                .containers
                .iter_mut()
                .enumerate()
                .filter(|(_, c)| c.exit.is_none())
                .map(|(i, c)| Box::pin(async move { (c.child.wait().await, i) }));
            futures::future::select_all(waits).await.0
        };
        let (netns, dir) = (running.netns.clone(), running.dir.clone());
        running.pids.lock().expect("pids lock")[index] = None;
        let c = &mut running.containers[index];
        let code = status.as_ref().ok().and_then(std::process::ExitStatus::code);
        if !policy.again(code) {
            tracing::info!(pod = %name, container = %c.plan.name, code = ?code, "container finished");
            c.exit = Some(code);
            continue;
        }
        tracing::warn!(pod = %name, container = %c.plan.name, status = ?status, "container exited");
        if c.restarts >= MAX_RESTARTS {
            tracing::error!(pod = %name, container = %c.plan.name, "not restarting any more");
            if policy != Restart::Always {
                // A Job's pod ends Failed, so its Job sees the end.
                c.exit = Some(code);
                continue;
            }
            // Keep the pod's other containers; park here until stopped.
            std::future::pending::<()>().await;
        }
        c.restarts += 1;
        tokio::time::sleep(Duration::from_secs(1)).await;
        match spawn(&netns, &dir, &c.plan, &c.log) {
            Ok(child) => {
                running.pids.lock().expect("pids lock")[index] = child.id();
                c.child = child;
            }
            Err(e) => {
                tracing::error!(pod = %name, error = format!("{e:#}"), "restart failed");
                std::future::pending::<()>().await;
            }
        }
    }
}

/// A finished pod's status, as the kubelet writes it: Succeeded when every container exited 0,
/// else Failed, with each container's exit code.
async fn write_finished(client: &kube::Client, pod: &Pod, running: &Running, codes: &[Option<i32>]) {
    let now = k8s_openapi::jiff::Timestamp::now().to_string();
    let phase = if codes.iter().all(|c| *c == Some(0)) { "Succeeded" } else { "Failed" };
    let cond = |t: &str| serde_json::json!({"type": t, "status": "False", "lastTransitionTime": now, "reason": "PodCompleted"});
    let statuses: Vec<_> = running
        .containers
        .iter()
        .zip(codes)
        .map(|(c, code)| {
            let code = code.unwrap_or(137);
            let reason = if code == 0 { "Completed" } else { "Error" };
            let state = serde_json::json!({"terminated": {"exitCode": code, "reason": reason, "finishedAt": now}});
            crate::probe::container_status(pod, &c.plan.name, false, c.restarts, state)
        })
        .collect();
    let patch = serde_json::json!({"status": {
        "phase": phase,
        "conditions": [cond("ContainersReady"), cond("Ready")],
        "containerStatuses": statuses,
    }});
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    match crate::probe::patch_status(client, pod, patch).await {
        Ok(()) => tracing::info!(pod = %name, %phase, "finished"),
        Err(e) => tracing::warn!(pod = %name, error = format!("{e:#}"), "writing the finished status"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn cri_time_has_nine_fraction_digits() {
        let t = k8s_openapi::jiff::Timestamp::new(1_700_000_000, 1_500).expect("valid");
        assert_eq!(super::cri_time(t), "2023-11-14T22:13:20.000001500Z");
    }
}
