//! `hack/chaos`: control-plane faults under steady load. A real kube-apiserver and etcd, contour
//! serve in Kubernetes mode with leader election (one replica, then two), and a real Envoy that
//! reaches the controllers through a relay standing for their Service. A load of several hundred
//! requests a second goes through Envoy to an HTTPProxy's backends in network namespaces while
//! each fault happens:
//!
//! - `controller-kill`: the controller gets SIGKILL and starts again a few seconds later;
//! - `apiserver-stop`: the API server and etcd stop for 30 s, then start again;
//! - `xds-cut`: the relay cuts Envoy's xDS connection and refuses new ones for 30 s;
//! - `config-churn`: one change every 100 ms for a minute (the loaded HTTPProxy and other apps);
//! - `endpoint-churn`: for a minute, backends are added to the loaded Service, and the oldest are
//!   removed as Kubernetes removes a pod: its endpoint is marked terminating first, then removed,
//!   then the backend stops;
//! - `backend-crash`: for a minute, a backend is added each cycle and the oldest crashes (killed at
//!   once, still in the EndpointSlice until it is removed a moment later, as Kubernetes notices);
//! - `backend-crash-retry`: the same while the loaded route retries on `reset` and `connect-failure`;
//! - `leader-kill`: a second replica joins; the Lease holder gets SIGKILL and starts again.
//!
//! After each fault a new app is created, and the time until it answers through Envoy and until
//! its status is written is measured: the control plane is back. One table row a fault: requests
//! sent, failed, p99 and slowest latency. Exits 1 if a request failed that the fault does not excuse
//! (see [`Row::unexplained_failures`]) or the control plane did not come back.
//!
//!   chaos [--quick] [--faults a,b] [--rate 300] [--connections 8]
//!
//! `--quick` shortens every fault to a few seconds (a smoke run). The workspace's `contour`
//! command is found beside this binary, or at `$CONTOUR_CONTOUR`.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::Api;
use serde_json::{Value, json};
use testkit::{ApiServer, Envoy, Load, LoadReport, NetnsBackend, Relay, Request, apply_yaml, delete_yaml};
use tokio::time::Instant;

/// The host the load asks for.
const APP: &str = "app";
/// How long the load runs before a fault, and after the control plane is back.
const STEADY: Duration = Duration::from_secs(2);
/// How long a new app may take to be served, or to get status, after a fault.
const BACK_WITHIN: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Fault {
    ControllerKill,
    #[value(name = "apiserver-stop")]
    ApiServerStop,
    XdsCut,
    ConfigChurn,
    EndpointChurn,
    BackendCrash,
    BackendCrashRetry,
    LeaderKill,
}

const FAULTS: [Fault; 8] = [
    Fault::ControllerKill,
    Fault::ApiServerStop,
    Fault::XdsCut,
    Fault::ConfigChurn,
    Fault::EndpointChurn,
    Fault::BackendCrash,
    Fault::BackendCrashRetry,
    Fault::LeaderKill,
];

impl Fault {
    /// The fault's name on the command line and in the table.
    fn name(self) -> String {
        clap::ValueEnum::to_possible_value(&self).map(|v| v.get_name().to_string()).unwrap_or_default()
    }
}

/// How long each fault lasts.
struct Lengths {
    /// A killed controller is down this long before it starts again.
    down: Duration,
    /// The API server outage and the xDS cut.
    outage: Duration,
    /// Config and endpoint churn.
    churn: Duration,
    /// One endpoint churn cycle: a backend added, the oldest drained and removed.
    cycle: Duration,
}

impl Lengths {
    fn full() -> Self {
        Self {
            down: Duration::from_secs(5),
            outage: Duration::from_secs(30),
            churn: Duration::from_secs(60),
            cycle: Duration::from_secs(3),
        }
    }

    fn quick() -> Self {
        Self {
            down: Duration::from_secs(2),
            outage: Duration::from_secs(5),
            churn: Duration::from_secs(8),
            cycle: Duration::from_secs(2),
        }
    }
}

/// Control-plane faults under steady load (see the module doc); needs root for the network
/// namespaces of the backends.
#[derive(clap::Parser)]
#[command(name = "chaos")]
struct Flags {
    /// Shorten every fault to a few seconds (a smoke run).
    #[arg(long)]
    quick: bool,
    /// The faults, in order (comma-separated; default all).
    #[arg(long, value_enum, value_delimiter = ',')]
    faults: Vec<Fault>,
    /// Requests a second of the steady load.
    #[arg(long, default_value_t = 300)]
    rate: u32,
    /// Connections the load spreads over.
    #[arg(long, default_value_t = 8)]
    connections: u32,
}

struct Args {
    lengths: Lengths,
    faults: Vec<Fault>,
    rate: u32,
    connections: u32,
}

/// The arguments, and every prerequisite checked before any work starts.
fn args() -> anyhow::Result<Args> {
    let flags = <Flags as clap::Parser>::parse();
    testkit::require_tools(&["CONTOUR_ENVOY", "CONTOUR_KUBE_APISERVER", "CONTOUR_ETCD"], "hack/chaos")?;
    testkit::workspace_binary("contour")?;
    Ok(Args {
        lengths: if flags.quick { Lengths::quick() } else { Lengths::full() },
        faults: if flags.faults.is_empty() { FAULTS.to_vec() } else { flags.faults },
        rate: flags.rate,
        connections: flags.connections,
    })
}

/// What one fault cost.
struct Row {
    fault: Fault,
    lasted: Duration,
    load: LoadReport,
    /// From the fault's end to a new app answering through Envoy.
    served: Option<Duration>,
    /// From the fault's end to the new app's status being written.
    status: Option<Duration>,
    /// Envoy's retries to the loaded app's backends: done, refused by the circuit breaker
    /// (`upstream_rq_retry_overflow`), and given up (`upstream_rq_retry_limit_exceeded`).
    retried: Vec<u64>,
}

impl Row {
    /// Failed requests nothing excuses. A crashed backend without a retry policy costs the
    /// requests sent to it until it leaves the EndpointSlice; with one, only the retries Envoy
    /// would not make: over the cluster's circuit breaker (`max_retries`, 3 at once by default)
    /// or past the retry count.
    fn unexplained_failures(&self) -> u64 {
        match (self.fault, &self.retried[..]) {
            (Fault::BackendCrash, _) => 0,
            (Fault::BackendCrashRetry, &[_, overflow, limit]) => {
                self.load.failed_total().saturating_sub(overflow + limit)
            }
            _ => self.load.failed_total(),
        }
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = args()?;
    let mut rig = Rig::start().await?;
    let mut rows = Vec::new();
    for &fault in &args.faults {
        eprintln!("== {}", fault.name());
        let row = rig.run(fault, &args).await.with_context(|| fault.name())?;
        eprintln!("   {}", row.load.summary());
        if let [done, overflow, limit] = row.retried[..] {
            eprintln!("   Envoy retried {done}; {overflow} retries refused by the circuit breaker, {limit} gave up");
        }
        rows.push(row);
    }
    let rejected = rig.envoy.rejected_updates().await.map_or("?".into(), |n| n.to_string());
    print_table(&args, &rows);
    println!("\nEnvoy rejected {rejected} configuration updates over the whole run.");
    let failed: u64 = rows.iter().map(Row::unexplained_failures).sum();
    let unrecovered = rows.iter().filter(|r| r.served.is_none() || r.status.is_none()).count();
    drop(rig);
    if failed > 0 || unrecovered > 0 {
        eprintln!(
            "chaos: {failed} requests failed that no fault excuses; the control plane did not come back after {unrecovered} faults"
        );
        std::process::exit(1);
    }
    Ok(())
}

fn print_table(args: &Args, rows: &[Row]) {
    println!(
        "\nSteady load: {} requests a second over {} keep-alive connections through Envoy.\n",
        args.rate, args.connections
    );
    println!("| fault | fault lasted | requests sent | failed | p99 | slowest | new app served | its status written |");
    println!("|---|---|---|---|---|---|---|---|");
    let secs = |d: Option<Duration>| d.map_or("never".into(), |d| format!("{:.1} s", d.as_secs_f64()));
    for r in rows {
        let kinds: Vec<String> = r.load.failed.iter().map(|(k, n)| format!("{k}: {n}")).collect();
        let failed = if kinds.is_empty() {
            "0".to_string()
        } else {
            format!("{} ({})", r.load.failed_total(), kinds.join(", "))
        };
        println!(
            "| {} | {:.0} s | {} | {failed} | {:.1} ms | {:.1} ms | {} | {} |",
            r.fault.name(),
            r.lasted.as_secs_f64(),
            r.load.sent,
            r.load.percentile(99.0).as_secs_f64() * 1000.0,
            r.load.percentile(100.0).as_secs_f64() * 1000.0,
            secs(r.served),
            secs(r.status),
        );
    }
}

/// One `contour serve` process.
struct Replica {
    identity: String,
    xds: SocketAddr,
    child: tokio::process::Child,
}

/// Everything the faults act on.
struct Rig {
    api: ApiServer,
    client: kube::Client,
    contour: PathBuf,
    dir: PathBuf,
    /// Envoy's listeners (the same for every replica).
    http: u16,
    https: u16,
    stats: u16,
    replicas: Vec<Replica>,
    /// The controllers' Service: Envoy's xDS connection goes through it.
    relay: Relay,
    envoy: Envoy,
    /// The loaded app's backends, oldest first.
    backends: Vec<NetnsBackend>,
    /// The backend of the apps created after each fault.
    probe_backend: NetnsBackend,
    apps: usize,
    replicas_started: usize,
}

impl Rig {
    async fn start() -> anyhow::Result<Self> {
        let api = ApiServer::start().await?;
        api.install_crds(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../deploy/crds")).await?;
        let client = api.client().await?;
        let dir = api.dir.join("chaos");
        std::fs::create_dir_all(&dir)?;
        let backends = vec![NetnsBackend::start("b0").await?, NetnsBackend::start("b1").await?];
        let probe_backend = NetnsBackend::start("probe").await?;
        apply_yaml(&client, &app(APP, &endpoints(&backends, None), 0)).await?;

        let contour = testkit::workspace_binary("contour")?;
        let port = testkit::free_port;
        let xds = SocketAddr::from(([127, 0, 0, 1], port()));
        let relay = Relay::start_many(vec![xds]).await?;
        let bootstrap = dir.join("envoy.json");
        let status = tokio::process::Command::new(&contour)
            .arg("bootstrap")
            .arg(&bootstrap)
            .args(["--xds-address=127.0.0.1", &format!("--xds-port={}", relay.addr.port())])
            .arg(format!("--admin-address={}", dir.join("admin.sock").display()))
            .status()
            .await?;
        anyhow::ensure!(status.success(), "contour bootstrap: {status}");
        let stats = port();
        let envoy = Envoy::start_file(
            &bootstrap,
            SocketAddr::from(([127, 0, 0, 1], stats)),
            &["--service-cluster", "contour", "--service-node", "chaos"],
        )
        .await?;
        let mut rig = Self {
            api,
            client,
            contour,
            dir,
            http: port(),
            https: port(),
            stats,
            replicas: Vec::new(),
            relay,
            envoy,
            backends,
            probe_backend,
            apps: 0,
            replicas_started: 0,
        };
        let first = rig.spawn_replica(xds).await?;
        rig.replicas.push(first);
        let served = rig.served(APP, Instant::now()).await;
        anyhow::ensure!(served.is_some(), "the loaded app was never served through Envoy");
        Ok(rig)
    }

    /// Starts `contour serve` with xDS on `xds`, under a new identity (as a new pod would be).
    async fn spawn_replica(&mut self, xds: SocketAddr) -> anyhow::Result<Replica> {
        self.replicas_started += 1;
        let identity = format!("contour-{}", self.replicas_started);
        let log = std::fs::OpenOptions::new().create(true).append(true).open(self.dir.join("contour.log"))?;
        let port = || testkit::free_port().to_string();
        let child = tokio::process::Command::new(&self.contour)
            .arg("serve")
            .arg(format!("--kubeconfig={}", self.api.kubeconfig.display()))
            .args(["--xds-address=127.0.0.1", &format!("--xds-port={}", xds.port()), "--insecure"])
            .args(["--envoy-service-http-address=127.0.0.1", &format!("--envoy-service-http-port={}", self.http)])
            .args(["--envoy-service-https-address=127.0.0.1", &format!("--envoy-service-https-port={}", self.https)])
            .args(["--stats-port", &self.stats.to_string()])
            .args(["--http-address=127.0.0.1", "--http-port", &port(), "--health-address=127.0.0.1"])
            .args(["--health-port", &port(), "--debug-http-port", &port()])
            .args(["--leader-election-resource-namespace=default", "--leader-election-identity", &identity])
            .stdout(std::process::Stdio::null())
            .stderr(log)
            .kill_on_drop(true)
            .spawn()?;
        let up = testkit::eventually(Duration::from_secs(30), || async move {
            tokio::net::TcpStream::connect(xds).await.ok().map(drop)
        })
        .await;
        anyhow::ensure!(up.is_some(), "{identity} did not serve xDS on {xds} within 30 s");
        Ok(Replica { identity, xds, child })
    }

    /// Kills a replica with SIGKILL.
    async fn kill(&mut self, index: usize) -> anyhow::Result<Replica> {
        let mut replica = self.replicas.remove(index);
        replica.child.start_kill()?;
        replica.child.wait().await?;
        Ok(replica)
    }

    /// Runs the load through one fault and what follows it.
    async fn run(&mut self, fault: Fault, args: &Args) -> anyhow::Result<Row> {
        if fault == Fault::LeaderKill && self.replicas.len() < 2 {
            let second = self.spawn_replica(SocketAddr::from(([127, 0, 0, 1], testkit::free_port()))).await?;
            self.replicas.push(second);
            self.relay.set_targets(self.replicas.iter().map(|r| r.xds).collect());
        }
        let retries = fault == Fault::BackendCrashRetry;
        if retries {
            self.set_proxy(Some(retry_policy())).await?;
        }
        let load = Load {
            addr: SocketAddr::from(([127, 0, 0, 1], self.http)),
            host: host(APP),
            path: "/".into(),
            rate: args.rate,
            connections: args.connections,
        };
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let load = tokio::spawn(testkit::load::run(load, async move {
            let _ = stopped.await;
        }));
        tokio::time::sleep(STEADY).await;

        let retried = self.retry_counters().await;
        let began = Instant::now();
        let outcome = self.inject(fault, &args.lengths).await;
        let lasted = began.elapsed();
        let ended = Instant::now();
        let back = match outcome {
            Ok(()) => self.new_app(ended).await,
            Err(e) => Err(e),
        };
        tokio::time::sleep(STEADY).await;
        let _ = stop.send(());
        let load = load.await?;
        let retried = self.retry_counters().await.iter().zip(retried).map(|(after, before)| after - before).collect();
        if retries {
            self.set_proxy(None).await?;
        }
        let (served, status) = back?;
        Ok(Row { fault, lasted, load, served, status, retried })
    }

    async fn inject(&mut self, fault: Fault, lengths: &Lengths) -> anyhow::Result<()> {
        match fault {
            Fault::ControllerKill => {
                let killed = self.kill(0).await?;
                tokio::time::sleep(lengths.down).await;
                let again = self.spawn_replica(killed.xds).await?;
                self.replicas.insert(0, again);
            }
            Fault::LeaderKill => {
                let holder = self.holder().await;
                let index = self
                    .replicas
                    .iter()
                    .position(|r| Some(&r.identity) == holder.as_ref())
                    .with_context(|| format!("no replica holds the Lease (holder: {holder:?})"))?;
                let killed = self.kill(index).await?;
                eprintln!("   killed the leader {}", killed.identity);
                tokio::time::sleep(lengths.down).await;
                let again = self.spawn_replica(killed.xds).await?;
                self.replicas.insert(index, again);
            }
            Fault::ApiServerStop => {
                self.api.stop().await;
                tokio::time::sleep(lengths.outage).await;
                self.api.restart().await?;
                self.client = self.api.client().await?;
            }
            Fault::XdsCut => {
                self.relay.block();
                tokio::time::sleep(lengths.outage).await;
                self.relay.unblock();
            }
            Fault::ConfigChurn => self.config_churn(lengths.churn).await?,
            Fault::EndpointChurn => self.endpoint_churn(lengths, false).await?,
            Fault::BackendCrash | Fault::BackendCrashRetry => self.endpoint_churn(lengths, true).await?,
        }
        Ok(())
    }

    /// One change every 100 ms: the loaded HTTPProxy's request headers, and other apps created
    /// and deleted (their Service, EndpointSlice and HTTPProxy one at a time).
    async fn config_churn(&mut self, length: Duration) -> anyhow::Result<()> {
        let probe = endpoints(std::slice::from_ref(&self.probe_backend), None);
        let mut ticks = tokio::time::interval(Duration::from_millis(100));
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let began = Instant::now();
        let mut step = 0_u64;
        while began.elapsed() < length {
            ticks.tick().await;
            let other = app_objects(&format!("churn-{}", step / 5), &probe, 0);
            match step % 5 {
                0 => apply_yaml(&self.client, &proxy(APP, step, None).to_string()).await?,
                i @ 1..=3 => apply_yaml(&self.client, &other[i as usize - 1].to_string()).await?,
                _ => {
                    if let Some(old) = (step / 5).checked_sub(5) {
                        delete_yaml(&self.client, &app(&format!("churn-{old}"), &probe, 0)).await?;
                    }
                }
            }
            step += 1;
        }
        eprintln!("   {step} changes");
        Ok(())
    }

    /// Backends come and go on the loaded Service: each cycle a new one is added, and the oldest
    /// leaves. Drained, it is marked terminating, removed once Envoy had time to stop sending to
    /// it, then stopped; crashed, it is killed at once and removed from the EndpointSlice a
    /// moment later.
    async fn endpoint_churn(&mut self, lengths: &Lengths, crash: bool) -> anyhow::Result<()> {
        let began = Instant::now();
        let third = lengths.cycle / 3;
        let mut cycles = 0;
        while began.elapsed() < lengths.churn {
            cycles += 1;
            let added = NetnsBackend::start(&format!("b{}", self.apps + cycles + 1)).await?;
            self.backends.push(added);
            self.set_endpoints(None).await?;
            tokio::time::sleep(third).await;
            if crash {
                self.backends[0].crash().await;
            } else {
                self.set_endpoints(Some(self.backends[0].addr.ip())).await?;
            }
            tokio::time::sleep(third).await;
            let removed = self.backends.remove(0);
            self.set_endpoints(None).await?;
            tokio::time::sleep(third).await;
            drop(removed);
        }
        eprintln!("   {cycles} backends added and removed");
        Ok(())
    }

    /// The loaded app's HTTPProxy, with this retry policy.
    async fn set_proxy(&self, retry: Option<Value>) -> anyhow::Result<()> {
        apply_yaml(&self.client, &proxy(APP, 0, retry).to_string()).await?;
        // Give Envoy the new route before the load starts.
        tokio::time::sleep(Duration::from_secs(1)).await;
        Ok(())
    }

    async fn set_endpoints(&self, terminating: Option<IpAddr>) -> anyhow::Result<()> {
        apply_yaml(&self.client, &slice(APP, &endpoints(&self.backends, terminating)).to_string()).await
    }

    /// Envoy's retry counters of the loaded app's cluster (see [`Row::retried`]).
    async fn retry_counters(&self) -> Vec<u64> {
        let mut out = Vec::new();
        for counter in ["upstream_rq_retry", "upstream_rq_retry_overflow", "upstream_rq_retry_limit_exceeded"] {
            let name = format!("cluster.default_{APP}_80.{counter}");
            let body = self.envoy.admin_get(&format!("/stats?filter=^{name}$")).await.unwrap_or_default();
            out.push(body.rsplit(' ').next().and_then(|v| v.trim().parse().ok()).unwrap_or(0));
        }
        out
    }

    async fn holder(&self) -> Option<String> {
        let leases: Api<Lease> = Api::namespaced(self.client.clone(), "default");
        leases.get_opt("leader-elect").await.ok()??.spec?.holder_identity
    }

    /// Creates a new app and returns how long after `from` it answered through Envoy, and its
    /// status was written.
    async fn new_app(&mut self, from: Instant) -> anyhow::Result<(Option<Duration>, Option<Duration>)> {
        self.apps += 1;
        let name = format!("new-{}", self.apps);
        let yaml = app(&name, &endpoints(std::slice::from_ref(&self.probe_backend), None), 0);
        // The API server may still be warming up after an outage: a few tries.
        let mut tries = 0;
        while let Err(e) = apply_yaml(&self.client, &yaml).await {
            tries += 1;
            anyhow::ensure!(tries < 20, "creating {name}: {e}");
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        let served = self.served(&name, from).await;
        let status = testkit::eventually(BACK_WITHIN, || async {
            let s =
                testkit::status_of(&self.client, "projectcontour.io/v1", "HTTPProxy", "default", &name).await.ok()?;
            (s["currentStatus"] == "valid").then(|| from.elapsed())
        })
        .await;
        Ok((served, status))
    }

    /// How long after `from` the app `name` answered 200 through Envoy (`None`: not within
    /// [`BACK_WITHIN`]).
    async fn served(&self, name: &str, from: Instant) -> Option<Duration> {
        let listener = SocketAddr::from(([127, 0, 0, 1], self.http));
        let request = Request::get(&host(name), "/");
        testkit::eventually(BACK_WITHIN, || async {
            let r = testkit::request(listener, &request).await.ok()?;
            (r.status == 200).then(|| from.elapsed())
        })
        .await
    }
}

fn host(name: &str) -> String {
    format!("{name}.chaos.test")
}

/// An endpoint: its address, and whether it is terminating (not ready, still serving).
type Endpoint = (IpAddr, bool);

fn endpoints(backends: &[NetnsBackend], terminating: Option<IpAddr>) -> Vec<Endpoint> {
    backends.iter().map(|b| (b.addr.ip(), Some(b.addr.ip()) == terminating)).collect()
}

/// The Service, EndpointSlice and HTTPProxy of app `name`.
fn app_objects(name: &str, endpoints: &[Endpoint], version: u64) -> [Value; 3] {
    let service = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "default"},
        "spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080}]}});
    [service, slice(name, endpoints), proxy(name, version, None)]
}

/// [`app_objects`] as a multi-document YAML text.
fn app(name: &str, endpoints: &[Endpoint], version: u64) -> String {
    app_objects(name, endpoints, version).map(|o| o.to_string()).join("\n---\n")
}

fn slice(name: &str, endpoints: &[Endpoint]) -> Value {
    let endpoints: Vec<Value> = endpoints
        .iter()
        .map(|&(ip, terminating)| {
            json!({"addresses": [ip.to_string()],
                "conditions": {"ready": !terminating, "serving": true, "terminating": terminating}})
        })
        .collect();
    json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": name, "namespace": "default", "labels": {"kubernetes.io/service-name": name}},
        "addressType": "IPv4", "ports": [{"name": "http", "port": 8080}], "endpoints": endpoints})
}

/// The HTTPProxy of app `name`; `version` goes into a request header, so each one is a change.
fn proxy(name: &str, version: u64, retry: Option<Value>) -> Value {
    let mut route = json!({"services": [{"name": name, "port": 80}],
        "requestHeadersPolicy": {"set": [{"name": "x-chaos-version", "value": version.to_string()}]}});
    if let Some(retry) = retry {
        route["retryPolicy"] = retry;
    }
    json!({"apiVersion": "projectcontour.io/v1", "kind": "HTTPProxy", "metadata": {"name": name, "namespace": "default"},
        "spec": {"virtualhost": {"fqdn": host(name)}, "routes": [route]}})
}

/// The retry policy of `backend-crash-retry`: what a crashed backend causes, retried on another.
fn retry_policy() -> Value {
    json!({"count": 3, "retryOn": ["reset", "connect-failure"]})
}
