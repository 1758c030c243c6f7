//! `hack/bench --vs-upstream`: contour-rs and upstream Contour side by side, each started on a
//! fresh kube-apiserver + etcd already holding N apps (a Service, an EndpointSlice and a root
//! HTTPProxy each, all pointing at one echo backend in a network namespace), each feeding the
//! same Envoy binary through its own `contour bootstrap`. Prints one table per N with medians
//! over the runs and the ratio ours / upstream. A benchmark, not a test: nothing is asserted.
//!
//!   vs-upstream --ours BIN --upstream BIN [--sizes 1000,5000] [--runs 2] [--apps 20] [--idle 60] [--sotw]
//!               [--converge-timeout 600] [--change-timeout 60]
//!               [--ours-arg ARG]...
//!
//! Each controller's Envoy gets that controller's own bootstrap at its defaults; `--sotw` gives
//! ours State-of-the-World xDS instead of its default, Delta (upstream's bootstrap has only SotW).
//!
//! With `VS_UPSTREAM_LOGS=DIR`, each run's controller log is kept in DIR and the times of the
//! benchmark's own writes are printed, to line them up with the log.
//!
//! BIN is a `contour` multi-call command (`contour serve`, `contour bootstrap`): ours from
//! bins/contour, upstream's built by hack/install-upstream-contour.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use futures::{StreamExt, TryStreamExt};
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::discovery::ApiResource;
use serde_json::{Value, json};
use testkit::{ApiServer, Envoy, NetnsBackend, Request};

/// A controller under test.
#[derive(Clone)]
struct Controller {
    label: &'static str,
    contour: PathBuf,
    extra: Vec<String>,
    bootstrap_extra: Vec<&'static str>,
}

/// What one run measured.
#[derive(Default, Clone)]
struct Figures {
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

/// contour-rs and upstream Contour side by side at N HTTPProxies (see the module doc).
#[derive(clap::Parser)]
#[command(name = "vs-upstream")]
struct Args {
    /// Our `contour` command (bins/contour).
    #[arg(long, value_name = "BIN")]
    ours: PathBuf,
    /// Upstream's `contour` command (hack/install-upstream-contour builds it).
    #[arg(long, value_name = "BIN")]
    upstream: Option<PathBuf>,
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
    /// Only the tuned upstream: at its defaults upstream needs about 200 s per 1k proxies to
    /// write statuses.
    #[arg(long)]
    without_upstream_defaults: bool,
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
    testkit::require_tools(&["CONTOUR_ENVOY", "CONTOUR_KUBE_APISERVER", "CONTOUR_ETCD"], "hack/bench --vs-upstream")?;
    Ok(a)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = args()?;
    let mut controllers = vec![Controller {
        label: "contour-rs",
        contour: args.ours.clone(),
        extra: args.ours_args.clone(),
        bootstrap_extra: if args.sotw { vec!["--sotw"] } else { Vec::new() },
    }];
    if let Some(upstream) = &args.upstream {
        if !args.without_upstream_defaults {
            controllers.push(Controller {
                label: "upstream",
                contour: upstream.clone(),
                extra: Vec::new(),
                bootstrap_extra: Vec::new(),
            });
        }
        controllers.push(Controller {
            label: "upstream QPS 200",
            contour: upstream.clone(),
            extra: vec!["--kubernetes-client-qps=200".into(), "--kubernetes-client-burst=400".into()],
            bootstrap_extra: Vec::new(),
        });
    }
    let blue = NetnsBackend::start("blue").await?;
    let green = NetnsBackend::start("green").await?;
    for &n in &args.sizes {
        let mut results = Vec::new();
        for c in &controllers {
            let mut runs = Vec::new();
            for run in 0..args.runs {
                eprintln!("== {} at {n}, run {}", c.label, run + 1);
                let figures = measure(c, n, &args, &blue, &green)
                    .await
                    .with_context(|| format!("{} at {n}, run {}", c.label, run + 1))?;
                // Each run's own figures as it ends, so a long benchmark cut short keeps them.
                print_table(n, &args, &[(c.label, vec![figures.clone()])]);
                runs.push(figures);
            }
            results.push((c.label, runs));
        }
        print_table(n, &args, &results);
    }
    Ok(())
}

/// The Service, EndpointSlice and root HTTPProxy of app `name`, sending to `backend`.
fn app(name: &str, backend: IpAddr) -> [Value; 3] {
    [
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "default"},
            "spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080}]}}),
        endpoint_slice(name, backend),
        json!({"apiVersion": "projectcontour.io/v1", "kind": "HTTPProxy", "metadata": {"name": name, "namespace": "default"},
            "spec": {"virtualhost": {"fqdn": host(name)}, "routes": [{"services": [{"name": name, "port": 80}]}]}}),
    ]
}

fn endpoint_slice(name: &str, backend: IpAddr) -> Value {
    json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": name, "namespace": "default", "labels": {"kubernetes.io/service-name": name}},
        "addressType": "IPv4", "ports": [{"name": "http", "port": 8080}],
        "endpoints": [{"addresses": [backend.to_string()], "conditions": {"ready": true}}]})
}

fn host(name: &str) -> String {
    format!("{name}.bench.test")
}

fn resource(object: &Value) -> ApiResource {
    let (api_version, kind) = (object["apiVersion"].as_str().unwrap_or(""), object["kind"].as_str().unwrap_or(""));
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let plural = match kind {
        "Service" => "services",
        "EndpointSlice" => "endpointslices",
        _ => "httpproxies",
    };
    ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: api_version.into(),
        kind: kind.into(),
        plural: plural.into(),
    }
}

async fn create(client: &kube::Client, object: &Value) -> anyhow::Result<()> {
    let ar = resource(object);
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar);
    let o: DynamicObject = serde_json::from_value(object.clone())?;
    api.create(&PostParams::default(), &o).await?;
    Ok(())
}

async fn measure(
    c: &Controller,
    n: usize,
    args: &Args,
    blue: &NetnsBackend,
    green: &NetnsBackend,
) -> anyhow::Result<Figures> {
    let api = ApiServer::start().await?;
    api.install_crds(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/crds")).await?;
    let client = api.client().await?;
    let objects: Vec<Value> = (0..n).flat_map(|i| app(&format!("app-{i}"), blue.addr.ip())).collect();
    futures::stream::iter(objects.iter().map(|o| create(&client, o))).buffer_unordered(32).try_collect::<()>().await?;

    let dir = api.dir.join("bench");
    std::fs::create_dir_all(&dir)?;
    let port = testkit::free_port;
    let (xds, http, stats) = (port(), port(), port());
    let bootstrap = dir.join("envoy.json");
    let status = tokio::process::Command::new(&c.contour)
        .arg("bootstrap")
        .arg(&bootstrap)
        .args(["--xds-address=127.0.0.1", &format!("--xds-port={xds}")])
        .arg(format!("--admin-address={}", dir.join("admin.sock").display()))
        .arg("--xds-resource-version=v3")
        .args(&c.bootstrap_extra)
        .status()
        .await?;
    anyhow::ensure!(status.success(), "{} bootstrap: {status}", c.label);

    let started = Instant::now();
    let mut serve = tokio::process::Command::new(&c.contour)
        .arg("serve")
        .arg(format!("--kubeconfig={}", api.kubeconfig.display()))
        .args(["--xds-address=127.0.0.1", &format!("--xds-port={xds}"), "--insecure", "--disable-leader-election"])
        .args(["--envoy-service-http-address=127.0.0.1", &format!("--envoy-service-http-port={http}")])
        .args(["--envoy-service-https-address=127.0.0.1", &format!("--envoy-service-https-port={}", port())])
        .args([format!("--http-port={}", port()), format!("--health-port={}", port())])
        .args([format!("--debug-http-port={}", port()), format!("--stats-port={stats}")])
        .args(&c.extra)
        .stdout(std::fs::File::create(dir.join("serve.log"))?)
        .stderr(std::fs::File::create(dir.join("serve.err"))?)
        .kill_on_drop(true)
        .spawn()?;
    let pid = serve.id().context("controller pid")?;
    let stats = SocketAddr::from(([127, 0, 0, 1], stats));
    let node = ["--service-cluster", "contour", "--service-node", "bench"];
    let envoy = Envoy::start_file(&bootstrap, stats, &node).await?;
    let listener = SocketAddr::from(([127, 0, 0, 1], http));

    let last = host(&format!("app-{}", n - 1));
    let served = async {
        testkit::eventually(args.converge_timeout, || async {
            let r = testkit::request(listener, &Request::get(&last, "/")).await.ok()?;
            (r.status == 200).then(|| started.elapsed())
        })
        .await
    };
    let proxies: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &resource(&app("x", blue.addr.ip())[2]));
    let all_valid = async {
        let deadline = Instant::now() + args.converge_timeout;
        while Instant::now() < deadline {
            if count_valid(&proxies).await.unwrap_or(0) >= n {
                return Some(started.elapsed());
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        None
    };
    let (served, all_valid) = tokio::join!(served, all_valid);
    let mut f = Figures { served, all_valid, ..Figures::default() };
    f.rss_converged = testkit::usage(pid).1;

    // Bytes Envoy receives from the controller for a one-proxy change.
    // Both bootstraps name the xDS cluster's stats `<namespace>_contour_<port>`.
    let xds_rx = format!("_contour_{xds}.upstream_cx_rx_bytes_total");
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
    let narrowed =
        json!({"spec": {"routes": [{"conditions": [{"prefix": "/v2"}], "services": [{"name": "app-1", "port": 80}]}]}});
    proxies.patch("app-1", &PatchParams::default(), &Patch::Merge(&narrowed)).await?;
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
        for o in app(&name, blue.addr.ip()) {
            create(&client, &o).await?;
            if args.logs.is_some() {
                eprintln!("{} {name} created at {:?}", o["kind"], std::time::SystemTime::now());
            }
        }
        f.new_app_api.push(Some(t.elapsed()));
        f.new_app.push(
            wait_until(listener, &host(&name), args.change_timeout, |r| r.status == 200).await.map(|()| t.elapsed()),
        );
    }
    // A second more takes in the work the last change left behind (status writes, their watch events).
    tokio::time::sleep(Duration::from_secs(1)).await;
    f.apps_cpu = testkit::usage(pid).0 - apps_from;

    // An EndpointSlice change → traffic follows.
    let slices: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &resource(&endpoint_slice("x", blue.addr.ip())));
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

    let _ = serve.start_kill();
    let _ = serve.wait().await;
    drop(envoy);
    // The API server's directory (the controller's log with it) goes when it stops.
    if let Some(keep) = &args.logs {
        let to = keep.join(format!("{}-{n}-{}.log", c.label.replace(' ', "-"), std::process::id()));
        std::fs::create_dir_all(keep)?;
        std::fs::copy(dir.join("serve.err"), to)?;
    }
    Ok(f)
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

async fn count_valid(proxies: &Api<DynamicObject>) -> anyhow::Result<usize> {
    let mut valid = 0;
    let mut params = ListParams::default().limit(1000);
    loop {
        let page = proxies.list(&params).await?;
        valid += page.items.iter().filter(|p| p.data["status"]["currentStatus"] == "valid").count();
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(valid),
        }
    }
}

fn median(mut values: Vec<f64>) -> Option<f64> {
    values.retain(|v| v.is_finite());
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len().is_multiple_of(2) { (values[mid - 1] + values[mid]) / 2.0 } else { values[mid] })
}

fn secs(d: &Option<Duration>) -> f64 {
    d.map_or(f64::INFINITY, |d| d.as_secs_f64())
}

fn print_table(n: usize, args: &Args, results: &[(&str, Vec<Figures>)]) {
    type Row = (&'static str, fn(&Figures) -> f64, &'static str);
    let rows: Vec<Row> = vec![
        ("start → the last proxy served", |f| secs(&f.served), "s"),
        ("start → every HTTPProxy status valid", |f| secs(&f.all_valid), "s"),
        ("controller RSS when converged", |f| f.rss_converged, "MiB"),
        (
            "one more app: create → 200 through Envoy, median",
            |f| median(f.new_app.iter().map(secs).collect()).unwrap_or(f64::INFINITY) * 1000.0,
            "ms",
        ),
        ("the same, slowest", |f| f.new_app.iter().map(secs).fold(0.0, f64::max) * 1000.0, "ms"),
        (
            "the same, the API server's part (the three creates), median",
            |f| median(f.new_app_api.iter().map(secs).collect()).unwrap_or(f64::INFINITY) * 1000.0,
            "ms",
        ),
        (
            "an EndpointSlice change → traffic follows, median",
            |f| median(f.endpoints.iter().map(secs).collect()).unwrap_or(f64::INFINITY) * 1000.0,
            "ms",
        ),
        (
            "the same, the API server's part (patch → watch event), median",
            |f| median(f.endpoints_watch.iter().map(secs).collect()).unwrap_or(f64::INFINITY) * 1000.0,
            "ms",
        ),
        (
            "the same, the patch request alone, median",
            |f| median(f.endpoints_patch.iter().map(secs).collect()).unwrap_or(f64::INFINITY) * 1000.0,
            "ms",
        ),
        ("bytes to Envoy for a one-proxy change", |f| f.change_kib, "KiB"),
        ("Envoy's time applying that change (its update_duration sums)", |f| f.change_apply_ms, "ms"),
        ("controller CPU over the new apps (with the second between each two)", |f| f.apps_cpu, "s"),
        ("controller CPU over the whole run", |f| f.cpu, "s"),
        ("controller CPU while idle", |f| f.idle_cpu, "s"),
        ("peak RSS over the whole run", |f| f.peak_rss, "MiB"),
    ];
    println!();
    println!(
        "N = {n} apps (Service + EndpointSlice + root HTTPProxy); medians of {} run(s); {} new apps, {} EndpointSlice changes, {} s idle; timed out: not within {} s (start) or {} s (a change)",
        results.iter().map(|(_, runs)| runs.len()).max().unwrap_or(0),
        args.apps,
        args.apps,
        args.idle.as_secs(),
        args.converge_timeout.as_secs(),
        args.change_timeout.as_secs()
    );
    let mut header = String::from("| |");
    let mut rule = String::from("|---|");
    for (label, _) in results {
        header.push_str(&format!(" {label} |"));
        rule.push_str("---|");
    }
    for (label, _) in results.iter().skip(1) {
        header.push_str(&format!(" ours / {label} |"));
        rule.push_str("---|");
    }
    println!("{header}\n{rule}");
    for (name, get, unit) in rows {
        let medians: Vec<Option<f64>> =
            results.iter().map(|(_, runs)| median(runs.iter().map(get).collect())).collect();
        let mut line = format!("| {name} |");
        for m in &medians {
            line.push_str(&match m {
                Some(v) => format!(" {} {unit} |", figure(*v)),
                None => " timed out |".into(),
            });
        }
        for m in medians.iter().skip(1) {
            line.push_str(&match (medians[0], m) {
                (Some(ours), Some(theirs)) if *theirs > 0.0 => format!(" {:.2}× |", ours / theirs),
                _ => " — |".into(),
            });
        }
        println!("{line}");
    }
}

fn figure(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}
