//! `hack/bench --vs-upstream`: contour-rs and upstream Contour side by side, each started on a
//! fresh kube-apiserver + etcd already holding N apps (a Service, an EndpointSlice and a root
//! HTTPProxy each, or with `--routes httproute` an HTTPRoute of one Gateway, all pointing at one
//! echo backend in a network namespace), each feeding the same Envoy binary through its own
//! `contour bootstrap`. Prints one table per N with medians over the runs and the ratio ours /
//! upstream. A benchmark, not a test: nothing is asserted.
//!
//!   vs-upstream --ours BIN (--upstream BIN --upstream-module DIR | --envoy-gateway BIN
//!               --envoy-gateway-module DIR) [--sizes 1000,5000] [--runs 2] [--apps 20] [--idle 60]
//!               [--sotw] [--routes httpproxy,httproute] [--converge-timeout 600]
//!               [--change-timeout 60] [--without-tuned] [--ours-arg ARG]...
//!
//! With HTTPRoutes both Contours run in their static Gateway mode (contour.yaml
//! `gateway.gatewayRef`), as upstream's own manifests do: the Gateway's listener is one more
//! listener of the Envoys of their one configuration, on the listener's port + 8000. Each
//! controller's API server holds the Gateway API CRDs its release installs (upstream's from its
//! module's examples, Envoy Gateway's from its chart, with its own CRDs).
//!
//! Each controller's Envoy gets that controller's own bootstrap at its defaults; `--sotw` gives
//! ours State-of-the-World xDS instead of its default, Delta (upstream's bootstrap has only SotW).
//!
//! With `VS_UPSTREAM_LOGS=DIR`, each run's controller log is kept in DIR and the times of the
//! benchmark's own writes are printed, to line them up with the log.
//!
//! BIN is a `contour` multi-call command (`contour serve`, `contour bootstrap`): ours from
//! bins/contour, upstream's built by hack/install-upstream-contour.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use futures::{StreamExt, TryStreamExt};
use kube::api::{Api, DynamicObject, Patch, PatchParams, WatchEvent, WatchParams};
use serde_json::{Value, json};
use testkit::{ApiServer, Envoy, NetnsBackend, Request};

mod apps;
mod contour;
mod envoy_gateway;
mod floor;
mod report;
mod table;

use apps::{NAMESPACE, Routes, app, create, endpoint_slice, host, resource};
use table::print_table;

/// A controller under test.
#[derive(Clone)]
struct Controller {
    label: &'static str,
    kind: Kind,
    /// The files of the Gateway API CRDs (and the controller's own) it is built for, as its
    /// release installs them; none: ours, `CONTOUR_GATEWAY_API_CRDS`.
    gateway_crds: Vec<PathBuf>,
}

/// How a controller is started.
#[derive(Clone)]
enum Kind {
    /// A `contour` command (ours or upstream's): `contour bootstrap`, then `contour serve` with
    /// these arguments.
    Contour { contour: PathBuf, extra: Vec<String>, bootstrap_extra: Vec<&'static str> },
    /// Envoy Gateway's `envoy-gateway server`, with this client rate limit (QPS, burst) or its
    /// default.
    EnvoyGateway { bin: PathBuf, qps: Option<(u32, u32)> },
}

impl Kind {
    /// The Gateway listener port the controller has Envoy bind as `envoy_port`: Contour (ours and
    /// upstream, static Gateway mode) binds a listener's port + 8000 (wrapping past 65535), Envoy
    /// Gateway binds ports from 1024 on as they are.
    fn gateway_port(&self, envoy_port: u16) -> anyhow::Result<u16> {
        let port = match self {
            Kind::Contour { .. } => (1..=u16::MAX).find(|&p| frontends::gateway_api::container_port(p) == envoy_port),
            Kind::EnvoyGateway { .. } => (envoy_port >= 1024).then_some(envoy_port),
        };
        port.with_context(|| format!("no Gateway listener port maps onto Envoy's port {envoy_port}"))
    }

    /// The objects the controller needs before the HTTPRoutes: a GatewayClass of its own and the
    /// Gateway with its listener on `port` (and Envoy Gateway's namespace).
    fn setup(&self, port: u16) -> Vec<Value> {
        match self {
            Kind::Contour { .. } => apps::gateway("projectcontour.io/gateway-controller", port).into(),
            Kind::EnvoyGateway { .. } => {
                let mut out = vec![envoy_gateway::namespace()];
                out.extend(apps::gateway(envoy_gateway::CONTROLLER, port));
                out
            }
        }
    }
}

/// A controller and its Envoy, running.
struct Running {
    started: Instant,
    process: tokio::process::Child,
    pid: u32,
    envoy: Envoy,
    /// Where Envoy serves the routes.
    listener: SocketAddr,
    /// The stat of the bytes Envoy receives on its xDS cluster.
    xds_rx: String,
    /// The controller's log.
    log: PathBuf,
    /// Envoy's bootstrap and command-line arguments, to start it again.
    envoy_args: (PathBuf, Vec<String>),
    /// Removed when the run ends (a directory the run had to create).
    _cleanup: Option<envoy_gateway::CertsMount>,
}

/// What one run measured.
#[derive(Default, Clone)]
struct Figures {
    /// The floor (see [`floor`]): a bare client listing every object, and a cold Envoy against
    /// the converged control plane.
    list: Duration,
    cold_envoy: Option<Duration>,
    served: Option<Duration>,
    all_valid: Option<Duration>,
    rss_converged: f64,
    new_app: Vec<Option<Duration>>,
    /// From the first create to the last one's answer: the API server's part of `new_app`, the
    /// same for every controller (the three creates are made one after another).
    new_app_api: Vec<Option<Duration>>,
    endpoints: Vec<Option<Duration>>,
    /// From the EndpointSlice patch to its watch event, seen by the benchmark's own watch: the
    /// API server's part of `endpoints`, the same for every controller.
    endpoints_watch: Vec<Option<Duration>>,
    /// The EndpointSlice patch request alone (sent → answered).
    endpoints_patch: Vec<Option<Duration>>,
    /// NaN when Envoy's stats could not be read.
    change_kib: f64,
    change_apply_ms: f64,
    /// Controller CPU over the new apps, from the first create to a second after the last one
    /// served (the gaps between them are idle time).
    apps_cpu: f64,
    idle_cpu: f64,
    cpu: f64,
    peak_rss: f64,
}

/// contour-rs beside upstream Contour or Envoy Gateway at N apps (see the module doc).
#[derive(clap::Parser)]
#[command(name = "vs-upstream")]
struct Args {
    /// Our `contour` command (bins/contour).
    #[arg(long, value_name = "BIN")]
    ours: PathBuf,
    /// Upstream's `contour` command (hack/install-upstream-contour builds it).
    #[arg(long, value_name = "BIN")]
    upstream: Option<PathBuf>,
    /// Upstream's Go module (hack/install-upstream-contour prints it): with HTTPRoutes, the
    /// Gateway API CRDs of its release (`examples/gateway/00-crds.yaml`).
    #[arg(long, env = "UPSTREAM_CONTOUR_MODULE", value_name = "DIR")]
    upstream_module: Option<PathBuf>,
    /// Envoy Gateway's `envoy-gateway` command (hack/install-envoy-gateway builds it): compared
    /// on HTTPRoutes, at its client rate limit's default and at QPS 200 (needs root: it reads
    /// its xDS certificates from /certs, bind-mounted in a mount namespace of its own).
    #[arg(long, value_name = "BIN")]
    envoy_gateway: Option<PathBuf>,
    /// Envoy Gateway's Go module (hack/install-envoy-gateway prints it): the CRDs its chart
    /// installs, standard-channel Gateway API and its own.
    #[arg(long, env = "ENVOY_GATEWAY_MODULE", value_name = "DIR")]
    envoy_gateway_module: Option<PathBuf>,
    /// The numbers of apps (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "1000,5000,10000")]
    sizes: Vec<usize>,
    /// Runs per size and controller (medians are reported).
    #[arg(long, default_value_t = 2)]
    runs: usize,
    /// New apps created one by one after the start.
    #[arg(long, default_value_t = 20)]
    apps: usize,
    /// Idle time measured, in seconds.
    #[arg(long, value_name = "SECONDS", value_parser = seconds, default_value = "60")]
    idle: Duration,
    /// Our Envoy speaks State-of-the-World instead of Delta.
    #[arg(long)]
    sotw: bool,
    /// More `contour serve` arguments for ours (repeatable).
    #[arg(long = "ours-arg", value_name = "ARG", allow_hyphen_values = true)]
    ours_args: Vec<String>,
    /// Where to keep controller logs.
    #[arg(long, env = "VS_UPSTREAM_LOGS", value_name = "DIR")]
    logs: Option<PathBuf>,
    /// Start → served or all valid: reported as timed out after this many seconds.
    #[arg(long, value_name = "SECONDS", value_parser = seconds, default_value = "600")]
    converge_timeout: Duration,
    /// One change → seen through Envoy: reported as timed out after this many seconds.
    #[arg(long, value_name = "SECONDS", value_parser = seconds, default_value = "60")]
    change_timeout: Duration,
    /// The routes: a root HTTPProxy per app, or an HTTPRoute per app on one Gateway (both
    /// controllers in static Gateway mode); both, comma-separated, one after the other.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "httpproxy,httproute")]
    routes: Vec<Routes>,
    /// Only the tuned upstream: at its defaults upstream needs about 200 s per 1k proxies to
    /// write statuses.
    #[arg(long)]
    without_upstream_defaults: bool,
    /// Only the other controllers at their defaults, not also with a client rate limit of QPS
    /// 200 (the smoke runs: at N = 100 the limit makes no difference).
    #[arg(long, conflicts_with = "without_upstream_defaults")]
    without_tuned: bool,
    /// Ours alone, whatever else is given (the 50k runs).
    #[arg(long)]
    ours_only: bool,
    /// Also write each size's medians as JSON and, with another controller, a chart of the ratios
    /// (SVG), into this directory (`httproute-1000.json`, `httproute-1000.svg`, ...).
    #[arg(long, value_name = "DIR")]
    report: Option<PathBuf>,
}

fn seconds(text: &str) -> Result<Duration, String> {
    text.parse().map(Duration::from_secs).map_err(|e| format!("{text:?}: {e}"))
}

/// The arguments, and every prerequisite checked before any work starts.
fn args() -> anyhow::Result<Args> {
    let a = <Args as clap::Parser>::parse();
    anyhow::ensure!(a.ours.exists(), "--ours: no contour command at {}", a.ours.display());
    if let Some(upstream) = &a.upstream {
        anyhow::ensure!(upstream.exists(), "--upstream: no contour command at {}", upstream.display());
    }
    if a.upstream.is_some() && a.routes.contains(&Routes::Httproute) {
        anyhow::ensure!(a.upstream_module.is_some(), "--routes httproute with --upstream needs --upstream-module");
    }
    if let Some(eg) = &a.envoy_gateway {
        anyhow::ensure!(eg.exists(), "--envoy-gateway: no envoy-gateway command at {}", eg.display());
        anyhow::ensure!(a.envoy_gateway_module.is_some(), "--envoy-gateway needs --envoy-gateway-module");
        anyhow::ensure!(
            a.routes == [Routes::Httproute],
            "--envoy-gateway compares HTTPRoutes only: give --routes httproute"
        );
    }
    testkit::require_tools(&["CONTOUR_ENVOY", "CONTOUR_KUBE_APISERVER", "CONTOUR_ETCD"], "hack/bench --vs-upstream")?;
    Ok(a)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = args()?;
    let contour = |label, contour: &PathBuf, extra: Vec<String>, bootstrap_extra, gateway_crds| Controller {
        label,
        kind: Kind::Contour { contour: contour.clone(), extra, bootstrap_extra },
        gateway_crds,
    };
    let ours_bootstrap = if args.sotw { vec!["--sotw"] } else { Vec::new() };
    let mut controllers = vec![contour("contour-rs", &args.ours, args.ours_args.clone(), ours_bootstrap, Vec::new())];
    if let Some(upstream) = args.upstream.as_ref().filter(|_| !args.ours_only) {
        let crds: Vec<PathBuf> = args.upstream_module.iter().map(|m| m.join("examples/gateway/00-crds.yaml")).collect();
        if !args.without_upstream_defaults {
            controllers.push(contour("upstream", upstream, Vec::new(), Vec::new(), crds.clone()));
        }
        if !args.without_tuned {
            let tuned = vec!["--kubernetes-client-qps=200".into(), "--kubernetes-client-burst=400".into()];
            controllers.push(contour("upstream QPS 200", upstream, tuned, Vec::new(), crds));
        }
    }
    if let (Some(bin), Some(module), false) = (&args.envoy_gateway, &args.envoy_gateway_module, args.ours_only) {
        let crds = envoy_gateway::crds(module)?;
        let eg = |label, qps| Controller {
            label,
            kind: Kind::EnvoyGateway { bin: bin.clone(), qps },
            gateway_crds: crds.clone(),
        };
        controllers.push(eg("Envoy Gateway", None));
        if !args.without_tuned {
            controllers.push(eg("Envoy Gateway QPS 200", Some((200, 400))));
        }
    }
    let blue = NetnsBackend::start("blue").await?;
    let green = NetnsBackend::start("green").await?;
    for &routes in &args.routes {
        for &n in &args.sizes {
            let mut results = Vec::new();
            for c in &controllers {
                let mut runs = Vec::new();
                for run in 0..args.runs {
                    eprintln!("== {} at {n} {}s, run {}", c.label, routes.kind(), run + 1);
                    let figures = measure(c, n, routes, &args, &blue, &green)
                        .await
                        .with_context(|| format!("{} at {n} {}s, run {}", c.label, routes.kind(), run + 1))?;
                    // Each run's own figures as it ends, so a long benchmark cut short keeps them.
                    print_table(n, routes, &args, &[(c.label, vec![figures.clone()])]);
                    runs.push(figures);
                }
                results.push((c.label, runs));
            }
            print_table(n, routes, &args, &results);
            if let Some(dir) = &args.report {
                let labels: Vec<&str> = results.iter().map(|(l, _)| *l).collect();
                let title = format!("N = {n} {}s", routes.kind());
                let name = format!("{}-{n}", routes.kind().to_lowercase());
                report::write(dir, &name, &title, &labels, &table::rows(routes, &results))?;
            }
        }
    }
    Ok(())
}

async fn measure(
    c: &Controller,
    n: usize,
    routes: Routes,
    args: &Args,
    blue: &NetnsBackend,
    green: &NetnsBackend,
) -> anyhow::Result<Figures> {
    let api = ApiServer::start().await?;
    api.install_crds(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/crds")).await?;
    let client = api.client().await?;
    let dir = api.dir.join("bench");
    std::fs::create_dir_all(&dir)?;
    // HTTPRoutes: one Gateway whose HTTP listener Envoy binds on a free port.
    let envoy_port = testkit::free_port();
    if routes == Routes::Httproute {
        if c.gateway_crds.is_empty() {
            api.install_gateway_api().await?;
        } else {
            let crds = dir.join("gateway-crds");
            write_crds(&c.gateway_crds, &crds)?;
            api.install_crds(&crds).await?;
        }
        for o in c.kind.setup(c.kind.gateway_port(envoy_port)?) {
            create(&client, &o).await?;
        }
    }
    let objects: Vec<Value> = (0..n).flat_map(|i| app(routes, &format!("app-{i}"), blue.addr.ip())).collect();
    futures::stream::iter(objects.iter().map(|o| create(&client, o))).buffer_unordered(32).try_collect::<()>().await?;
    let list = floor::list_time(&api.client().await?, routes).await?;
    let mut run = match &c.kind {
        Kind::Contour { contour, extra, bootstrap_extra } => {
            contour::start(c.label, contour, extra, bootstrap_extra, &api, &dir, routes, envoy_port).await?
        }
        Kind::EnvoyGateway { bin, qps } => envoy_gateway::start(bin, *qps, &api, &dir, envoy_port).await?,
    };
    let (started, pid, listener) = (run.started, run.pid, run.listener);
    let envoy = &run.envoy;

    let last = host(&format!("app-{}", n - 1));
    let served = async {
        testkit::eventually(args.converge_timeout, || async {
            let r = testkit::request(listener, &Request::get(&last, "/")).await.ok()?;
            (r.status == 200).then(|| started.elapsed())
        })
        .await
    };
    let proxies: Api<DynamicObject> = Api::namespaced_with(client.clone(), NAMESPACE, &resource(&routes.route("x")));
    let all_valid = async {
        let accepted = apps::until_accepted(routes, &proxies, n);
        tokio::time::timeout(args.converge_timeout, accepted).await.ok().map(|()| started.elapsed())
    };
    let (served, all_valid) = tokio::join!(served, all_valid);
    let mut f = Figures { served, all_valid, list, ..Figures::default() };
    f.rss_converged = testkit::usage(pid).1;

    // Bytes Envoy receives from the controller for a one-proxy change.
    // The stat of the bytes received on the xDS cluster (each controller's bootstrap names it).
    let xds_rx = run.xds_rx.clone();
    // Envoy folds histogram samples into its stats every 5 s (its default flush interval): wait
    // one out before and after, so the apply time is the change's alone.
    let flush = Duration::from_millis(5500);
    tokio::time::sleep(flush).await;
    // A controller that has not configured Envoy's stats listener by now (upstream at its
    // defaults, far behind) has these figures missing, not the whole benchmark failed.
    let (before, applying) = match (envoy.counter_sum(&xds_rx).await, envoy.update_time_ms().await) {
        (Ok(b), Ok(a)) => (Some(b), a),
        (b, a) => {
            eprintln!("{}: Envoy's stats unreadable before the one-proxy change: {:?} {:?}", c.label, b.err(), a.err());
            (None, f64::NAN)
        }
    };
    proxies.patch("app-1", &PatchParams::default(), &Patch::Merge(&routes.narrowed("app-1"))).await?;
    let one = host("app-1");
    wait_until(listener, &one, args.change_timeout, |r| r.status == 404).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    f.change_kib = match (before, envoy.counter_sum(&xds_rx).await) {
        (Some(before), Ok(after)) => after.saturating_sub(before) as f64 / 1024.0,
        _ => f64::NAN,
    };
    tokio::time::sleep(flush).await;
    f.change_apply_ms = envoy.update_time_ms().await.map_or(f64::NAN, |after| after - applying);

    // New apps, one at a time: created → served through Envoy.
    // Each a second after the last, as a user's changes come: neither controller's holdoff
    // for bursts applies.
    let apps_from = testkit::usage(pid).0;
    for j in 0..args.apps {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let name = format!("new-{j}");
        let t = Instant::now();
        for o in app(routes, &name, blue.addr.ip()) {
            create(&client, &o).await?;
            if args.logs.is_some() {
                eprintln!("{} {name} created at {:?}", o["kind"], std::time::SystemTime::now());
            }
        }
        f.new_app_api.push(Some(t.elapsed()));
        let served =
            wait_until(listener, &host(&name), args.change_timeout, |r| r.status == 200).await.map(|()| t.elapsed());
        if args.logs.is_some() {
            eprintln!("{name} served at {:?}", std::time::SystemTime::now());
        }
        f.new_app.push(served);
    }
    // A second more takes in the work the last change left behind (status writes, their watch events).
    tokio::time::sleep(Duration::from_secs(1)).await;
    f.apps_cpu = testkit::usage(pid).0 - apps_from;

    // An EndpointSlice change → traffic follows.
    let slices: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), NAMESPACE, &resource(&endpoint_slice("x", blue.addr.ip())));
    let target = host("app-0");
    for j in 0..args.apps {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let to = if j % 2 == 0 { green } else { blue };
        let version = slices.get("app-0").await?.metadata.resource_version.unwrap_or_default();
        let mut events =
            slices.watch(&WatchParams::default().fields("metadata.name=app-0").timeout(60), &version).await?.boxed();
        let t = Instant::now();
        let patch = json!({"endpoints": [{"addresses": [to.addr.ip().to_string()], "conditions": {"ready": true}}]});
        slices.patch("app-0", &PatchParams::default(), &Patch::Merge(&patch)).await?;
        f.endpoints_patch.push(Some(t.elapsed()));
        if args.logs.is_some() {
            eprintln!("EndpointSlice patched at {:?}", std::time::SystemTime::now());
        }
        let watched = async {
            let seen = tokio::time::timeout(args.change_timeout, async {
                while let Some(event) = events.next().await {
                    if matches!(event, Ok(WatchEvent::Modified(_))) {
                        return Some(t.elapsed());
                    }
                }
                None
            });
            seen.await.ok().flatten()
        };
        let follows =
            wait_until(listener, &target, args.change_timeout, |r| r.header("x-backend") == Some(to.name.as_str()));
        let (watched, follows) = tokio::join!(watched, follows);
        f.endpoints_watch.push(watched);
        f.endpoints.push(follows.map(|()| t.elapsed()));
    }

    // Idle: nothing changes for a while.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let idle_from = testkit::usage(pid).0;
    tokio::time::sleep(args.idle).await;
    (f.cpu, _, f.peak_rss) = testkit::usage(pid);
    f.idle_cpu = f.cpu - idle_from;

    // The floor's other half: a cold Envoy against the converged control plane.
    f.cold_envoy = floor::cold_envoy(&mut run, listener, &last, args.converge_timeout).await;

    let _ = run.process.start_kill();
    let _ = run.process.wait().await;
    let log = run.log.clone();
    drop(run);
    // The API server's directory (the controller's log with it) goes when it stops.
    if let Some(keep) = &args.logs {
        let to = keep.join(format!("{}-{n}-{}.log", c.label.replace(' ', "-"), std::process::id()));
        std::fs::create_dir_all(keep)?;
        std::fs::copy(&log, to)?;
    }
    Ok(f)
}

/// Copies of CRD `files` into `dir`, without the lines of Helm template directives a chart's
/// files open and close with.
fn write_crds(files: &[PathBuf], dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)?;
    for (i, file) in files.iter().enumerate() {
        let text = std::fs::read_to_string(file).with_context(|| format!("CRDs {}", file.display()))?;
        let plain: Vec<&str> = text.lines().filter(|l| !l.trim_start().starts_with("{{")).collect();
        std::fs::write(dir.join(format!("{i:03}.yaml")), plain.join("\n"))?;
    }
    Ok(())
}

/// Polls `host` through Envoy every 2 ms until `done` holds; `None` after `timeout`.
async fn wait_until(
    listener: SocketAddr,
    host: &str,
    timeout: Duration,
    done: impl Fn(&testkit::Response) -> bool,
) -> Option<()> {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if let Ok(r) = testkit::request(listener, &Request::get(host, "/")).await
            && done(&r)
        {
            return Some(());
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    None
}
