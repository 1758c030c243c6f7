//! Measures the pure pipeline (front end → DAG → xDS) on generated objects and prints figures
//! against the targets. Run through `hack/bench`, once per scale so peak memory is per scale.

use std::time::{Duration, Instant};

use objects::Snapshot;
use xds::ResourceType;
use xds_server::stream::{Incoming, Mode, StreamState};

/// How many Services and hostnames the routes share.
#[derive(Clone, Copy)]
struct Shape {
    services: usize,
    hostnames: usize,
}

/// Which front end the generated objects exercise.
#[derive(Clone, Copy, PartialEq, clap::ValueEnum)]
enum Kind {
    /// HTTPRoutes on one Gateway, spread over `--hostnames` hostnames.
    #[value(name = "httproute")]
    HttpRoute,
    /// Root HTTPProxies, one fqdn each, in the default fleet.
    #[value(name = "httpproxy")]
    HttpProxy,
}

/// The pipeline's figures at one scale (`hack/bench` runs it once per scale, so peak memory is
/// per scale).
#[derive(clap::Parser)]
#[command(name = "bench")]
struct Args {
    /// How many routes (HTTPRoutes, or root HTTPProxies) to generate.
    #[arg(default_value_t = 1000)]
    routes: usize,
    /// Which front end the routes exercise.
    #[arg(value_enum, default_value = "httproute")]
    kind: Kind,
    /// How many Services the routes share (each with an EndpointSlice of three endpoints).
    /// `--services N --hostnames N` for N routes is `--vs-upstream`'s shape: one app per route.
    #[arg(long, default_value_t = 1000)]
    services: usize,
    /// How many hostnames the HTTPRoutes share (HTTPProxies have one fqdn each).
    #[arg(long, default_value_t = 5)]
    hostnames: usize,
    /// Full builds measured (the best is reported); default 20, 5 above 5k routes.
    #[arg(long, env = "BENCH_RUNS")]
    runs: Option<usize>,
    /// Also print each stage's time and the memory between stages.
    #[arg(long, env = "BENCH_STAGES")]
    stages: bool,
    /// Answer N admission reviews against the generated objects (the webhook's judge, in
    /// process: an AdmissionReview's JSON in, the answer out), one in four an fqdn or route
    /// that clashes; prints p50, p99 and the slowest.
    #[arg(long, env = "BENCH_ADMISSION", value_name = "N")]
    admission: Option<usize>,
    /// Rebuild N times more after the new app, alternating between the snapshots before and
    /// after it, for a profiler; prints the median.
    #[arg(long, env = "BENCH_PROFILE_CHANGES", value_name = "N")]
    profile_changes: Option<usize>,
}

/// The system allocator, counting: what a change allocates is printed beside its time.
#[global_allocator]
static GLOBAL: &stats_alloc::StatsAlloc<std::alloc::System> = &stats_alloc::INSTRUMENTED_SYSTEM;

/// Allocations so far, for [`allocated_since`].
fn allocated() -> stats_alloc::Stats {
    GLOBAL.stats()
}

/// What was allocated since `from` (reallocations count as allocations), for a line of output.
fn allocated_since(from: stats_alloc::Stats) -> String {
    let d = GLOBAL.stats() - from;
    let bytes = d.bytes_allocated + d.bytes_reallocated.max(0) as usize;
    format!("{} allocations, {:.0} KiB", d.allocations + d.reallocations, bytes as f64 / 1024.0)
}

/// `--stages`, read where the stages are timed.
static STAGES: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn stages() -> bool {
    STAGES.load(std::sync::atomic::Ordering::Relaxed)
}

fn main() -> anyhow::Result<()> {
    let args = <Args as clap::Parser>::parse();
    let (routes, kind) = (args.routes, args.kind);
    let shape = Shape { services: args.services.max(1), hostnames: args.hostnames.max(1) };
    let services = shape.services;
    STAGES.store(args.stages, std::sync::atomic::Ordering::Relaxed);
    let fleet_id = if kind == Kind::HttpProxy { ir::DEFAULT_FLEET } else { "default/bench" };
    let snapshot = generate(routes, kind, shape);
    if stages() {
        println!("  after generate: {:.1} MiB", rss_mib("VmRSS:"));
    }
    // Delta with VHDS, so a change's wire size is what changed.
    let mut options = controller::Options::default();
    options.compile.vhds = true;

    // Full build: best of several runs after a warm-up (the machine is noisy; best is the floor).
    let runs = args.runs.unwrap_or(if routes > 5000 { 5 } else { 20 });
    let mut best = Duration::MAX;
    let mut build = controller::build(&snapshot, &options);
    for _ in 0..runs {
        drop(build);
        let started = Instant::now();
        build = controller::build(&snapshot, &options);
        best = best.min(started.elapsed());
    }
    let fleet = &build.fleets[fleet_id];
    let (resources, bytes) = fleet.size();
    match kind {
        Kind::HttpRoute => println!("routes={routes} services={services} hostnames={}", shape.hostnames),
        Kind::HttpProxy => println!("httpproxies={routes} services={services} (one fqdn each)"),
    }
    println!("  full build:      {:>8.2} ms (best of {runs})  resources={resources} bytes={bytes}", ms(best));

    // One HTTPRoute changes its backend: time to rebuild, and what a Delta stream then sends.
    // The controller keeps its pipeline caches across builds and sources keep unchanged objects'
    // Arcs, so this is what the controller does for a one-route edit.
    drop(build);
    let mut pipeline = controller::Pipeline::default();
    if stages() {
        println!("  rss before pipeline: {:.1} MiB (peak so far {:.1})", rss_mib("VmRSS:"), peak_rss_mib());
    }
    let before = pipeline.build(&snapshot, &options);
    if stages() {
        println!("  rss after pipeline build: {:.1} MiB", rss_mib("VmRSS:"));
    }
    // As a watch event would: the same snapshot with route 0 replaced (pointing at another Service).
    let mut changed = snapshot.clone();
    for object in objects::parse_documents(&object(kind, 0, 1 % services, shape)) {
        changed.insert(object.expect("generated route parses"));
    }
    let next = change(&mut pipeline, &before, &changed, &options, fleet_id, "one-route change");
    if stages() {
        let t = Instant::now();
        let tr = frontends::gateway_api::translate(&snapshot, &options.gateway_api);
        let t1 = t.elapsed();
        let dag = dag::build(&tr.ir, &snapshot, tr.diagnostics);
        let t2 = t.elapsed();
        let fleets = xds::compile(&dag, &options.compile);
        let t3 = t.elapsed();
        let _ = controller::Pipeline::default().endpoints(&dag, &snapshot);
        let t4 = t.elapsed();
        println!(
            "  stages: translate {:.2} dag {:.2} compile {:.2} endpoints {:.2} ms ({} fleets)",
            ms(t1),
            ms(t2 - t1),
            ms(t3 - t2),
            ms(t4 - t3),
            fleets.len()
        );
    }

    // A new app: its Service, EndpointSlice and route arrive together, as `kubectl apply` of one
    // app's manifest does. Nothing that exists changes, so the rebuild should cost about as
    // much as the one-route change.
    let before = next;
    let mut changed = changed.clone();
    for object in objects::parse_documents(&service(services))
        .into_iter()
        .chain(objects::parse_documents(&object(kind, routes, services, shape)))
    {
        changed.insert(object.expect("generated app parses"));
    }
    let next = change(&mut pipeline, &before, &changed, &options, fleet_id, "new app (Service, EndpointSlice, route)");
    profile_changes(args.profile_changes, &mut pipeline, &snapshot, &changed, &options);
    endpoint_change(&mut pipeline, &next, &changed, fleet_id);
    println!("  peak RSS:        {:>8.1} MiB", peak_rss_mib());
    if let Some(reviews) = args.admission {
        admission_reviews(reviews, kind, routes, shape, &changed, &options);
    }
    Ok(())
}

/// `--admission N`: the webhook's answer time on the snapshot, new objects and clashing ones.
fn admission_reviews(
    reviews: usize,
    kind: Kind,
    routes: usize,
    shape: Shape,
    snapshot: &Snapshot,
    options: &controller::Options,
) {
    let snapshot = std::sync::Arc::new(snapshot.clone());
    let mut judge = admission::Judge::new(options.clone());
    let mut times = Vec::with_capacity(reviews);
    let mut denied = 0;
    for i in 0..reviews {
        // One in four takes an existing object's host (an HTTPProxy's fqdn) or path (a route of
        // another namespace's HTTPRoute conflicts by precedence, not validity: allowed).
        let (number, namespace) = if i % 4 == 3 { (i % routes, "other") } else { (routes + 1 + i, "default") };
        let yaml = object(kind, number, i % shape.services, shape)
            .replace("namespace: default", &format!("namespace: {namespace}"));
        let object = serde_json::to_value(serde_yaml::from_str::<serde_json::Value>(&yaml).expect("generated YAML"))
            .expect("as JSON");
        let (group, name) = match kind {
            Kind::HttpRoute => ("gateway.networking.k8s.io", "HTTPRoute"),
            Kind::HttpProxy => ("projectcontour.io", "HTTPProxy"),
        };
        let review = serde_json::json!({
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {"uid": i.to_string(), "kind": {"group": group, "version": "v1", "kind": name},
                "namespace": namespace, "operation": "CREATE", "object": object},
        })
        .to_string();
        let started = Instant::now();
        let answer = admission::review(&mut judge, &snapshot, review.as_bytes());
        times.push(started.elapsed());
        if answer["response"]["allowed"] == false {
            denied += 1;
        }
    }
    times.sort();
    let at = |q: f64| times[((times.len() as f64 * q).ceil() as usize).clamp(1, times.len()) - 1];
    println!(
        "  admission review: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms ({reviews} reviews, {denied} denied; target p99 <= 10 ms)",
        ms(at(0.5)),
        ms(at(0.99)),
        ms(at(1.0))
    );
}

/// Rebuilds `snapshot` with the pipeline that built `before`, and prints the time it took (its
/// stages with `--stages`) and what a Delta stream then sends.
fn change(
    pipeline: &mut controller::Pipeline,
    before: &controller::Build,
    snapshot: &Snapshot,
    options: &controller::Options,
    fleet_id: &str,
    what: &str,
) -> controller::Build {
    let allocations = allocated();
    let started = Instant::now();
    let next = measured_change(pipeline, snapshot, options);
    let change_time = started.elapsed();
    let allocations = allocated_since(allocations);
    if stages() {
        let t = next.timings;
        println!(
            "  {what} stages: translate {:.2} dag {:.2} compile {:.2} endpoints {:.2} ms",
            ms(t.translate),
            ms(t.dag),
            ms(t.compile),
            ms(t.endpoints)
        );
    }
    let (sent, sent_bytes) = delta_change(&before.fleets[fleet_id], &next.fleets[fleet_id]);
    println!(
        "  {what}: {:>7.2} ms rebuild ({allocations}); Delta with VHDS sends {sent} resource(s), {sent_bytes} bytes",
        ms(change_time)
    );
    next
}

/// One Service's EndpointSlice gets another address: what the Kubernetes source (its working
/// copy shares the published snapshot's maps), the loop (which kinds changed) and the pipeline
/// (the load assignments, patched) do for it, and what a Delta stream then sends.
fn endpoint_change(
    pipeline: &mut controller::Pipeline,
    before: &controller::Build,
    snapshot: &Snapshot,
    fleet_id: &str,
) {
    // Service 2: route 2's in every shape (route 0 was moved to Service 1 by the one-route change).
    let slice = objects::parse_documents(&service(2)).into_iter().nth(1).expect("a slice").expect("it parses");
    let objects::Object::EndpointSlice(mut slice) = slice else { unreachable!("the second document is the slice") };
    if let Some(e) = slice.endpoints.as_mut().and_then(|e| e.first_mut()) {
        e.addresses = vec!["10.9.9.9".into()];
    }
    let mut stream = StreamState::new(Mode::Delta, None, Duration::from_secs(5));
    let names = before.fleets[fleet_id].of(ResourceType::Endpoint).keys().map(|k| k.to_string()).collect();
    let _ = stream.on_request(&Incoming {
        type_url: ResourceType::Endpoint.type_url().into(),
        subscribe: names,
        ..Default::default()
    });
    settle(&mut stream, &before.fleets[fleet_id], &[]);

    let allocations = allocated();
    let started = Instant::now();
    let mut working = snapshot.clone();
    working.upsert(objects::Object::EndpointSlice(slice));
    let source = started.elapsed();
    let kinds = snapshot.changed_kinds(&working);
    let compared = started.elapsed();
    let eds = pipeline.endpoints(&before.dag, &working);
    let patched = started.elapsed();
    let mut fleet = before.fleets[fleet_id].clone();
    fleet.by_type.insert(ResourceType::Endpoint, std::sync::Arc::clone(&eds[fleet_id]));
    let (sent, bytes) = settle(&mut stream, &fleet, &[]);
    let total = started.elapsed();
    let allocations = allocated_since(allocations);
    assert_eq!(kinds.len(), 1, "only EndpointSlices changed");
    println!(
        "  EndpointSlice change: {:>7.2} ms (source {:.2}, changed kinds {:.2}, load assignments {:.2}, Delta {:.2}; {allocations}); sends {sent} resource(s), {bytes} bytes",
        ms(total),
        ms(source),
        ms(compared - source),
        ms(patched - compared),
        ms(total - patched),
    );
}

/// With `--profile-changes n`, rebuilds `n` times more, alternating between the snapshots
/// before and after the new app, so a profiler sees mostly single-app changes; prints the median.
fn profile_changes(
    n: Option<usize>,
    pipeline: &mut controller::Pipeline,
    a: &Snapshot,
    b: &Snapshot,
    options: &controller::Options,
) {
    let Some(n) = n else { return };
    let mut times: Vec<Duration> = (0..n)
        .map(|i| {
            let started = Instant::now();
            drop(measured_change(pipeline, if i % 2 == 0 { a } else { b }, options));
            started.elapsed()
        })
        .collect();
    times.sort();
    if let Some(median) = times.get(n / 2) {
        println!("  {n} alternating single-app changes: median {:.2} ms", ms(*median));
    }
}

/// The change alone, as its own function so a profiler can select it.
#[inline(never)]
fn measured_change(
    pipeline: &mut controller::Pipeline,
    snapshot: &Snapshot,
    options: &controller::Options,
) -> controller::Build {
    pipeline.build(snapshot, options)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Generates a Gateway, `shape.services` Services with three endpoints each, and `routes` HTTPRoutes
/// spread over `shape.hostnames` hostnames (or `routes` root HTTPProxies).
fn generate(routes: usize, kind: Kind, shape: Shape) -> Snapshot {
    let mut snapshot = Snapshot::default();
    // Parsed object by object, so the generator's text never dominates peak memory.
    let mut add = |yaml: &str| {
        for object in objects::parse_documents(yaml) {
            snapshot.insert(object.expect("generated objects parse"));
        }
    };
    add(
        "apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata: {name: contour}\nspec: {controllerName: projectcontour.io/gateway-controller}\n---\n\
         apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: bench, namespace: default}\n\
         spec: {gatewayClassName: contour, listeners: [{name: http, port: 8080, protocol: HTTP}]}\n",
    );
    for s in 0..shape.services {
        add(&service(s));
    }
    for r in 0..routes {
        add(&object(kind, r, r % shape.services, shape));
    }
    snapshot
}

/// Service `svc-{s}` and its EndpointSlice with three endpoints.
fn service(s: usize) -> String {
    let (a, b) = (s / 250, s % 250);
    format!(
        "apiVersion: v1\nkind: Service\nmetadata: {{name: svc-{s}, namespace: default}}\nspec: {{ports: [{{name: http, port: 80}}]}}\n\
         ---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {{name: svc-{s}-1, namespace: default, labels: {{kubernetes.io/service-name: svc-{s}}}}}\n\
         addressType: IPv4\nports: [{{name: http, port: 8080}}]\nendpoints: [{{addresses: [10.0.{a}.{b}]}}, {{addresses: [10.1.{a}.{b}]}}, {{addresses: [10.2.{a}.{b}]}}]\n"
    )
}

/// Object number `r` of the kind measured, sending its traffic to Service `service`.
fn object(kind: Kind, r: usize, service: usize, shape: Shape) -> String {
    match kind {
        Kind::HttpRoute => route(r, service, shape.hostnames),
        Kind::HttpProxy => format!(
            "apiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {{name: proxy-{r}, namespace: default}}\n\
             spec: {{virtualhost: {{fqdn: host-{r}.example.com}}, routes: [{{conditions: [{{prefix: /app}}], services: [{{name: svc-{service}, port: 80}}]}}]}}\n"
        ),
    }
}

/// HTTPRoute number `r`, on one of `hostnames` hostnames, sending `/r{r}` to Service `service`.
fn route(r: usize, service: usize, hostnames: usize) -> String {
    format!(
        "apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {{name: route-{r}, namespace: default}}\n\
         spec: {{parentRefs: [{{name: bench}}], hostnames: [host-{}.example.com], rules: [{{matches: [{{path: {{type: PathPrefix, value: /r{r}}}}}], backendRefs: [{{name: svc-{service}, port: 80}}]}}]}}\n",
        r % hostnames
    )
}

/// Runs a Delta ADS stream and its VHDS stream to steady state on `before`, then returns what
/// they send for `after`.
fn delta_change(before: &xds::FleetResources, after: &xds::FleetResources) -> (usize, usize) {
    let mut stream = StreamState::new(Mode::Delta, None, Duration::from_secs(5)).with_vhds();
    let mut vhds = StreamState::new(Mode::Delta, Some(ResourceType::VirtualHost), Duration::from_secs(5));
    let subscribe = |t: ResourceType, names: Vec<String>| Incoming {
        type_url: t.type_url().into(),
        subscribe: names,
        ..Default::default()
    };
    let _ = stream.on_request(&subscribe(ResourceType::Cluster, vec![]));
    let _ = stream.on_request(&subscribe(ResourceType::Listener, vec![]));
    let names = |t: ResourceType| before.of(t).keys().map(|k| k.to_string()).collect::<Vec<_>>();
    let _ = stream.on_request(&subscribe(ResourceType::Endpoint, names(ResourceType::Endpoint)));
    let _ = stream.on_request(&subscribe(ResourceType::Route, names(ResourceType::RouteVhds)));
    let _ = vhds.on_request(&subscribe(ResourceType::VirtualHost, names(ResourceType::RouteVhds)));
    settle(&mut stream, before, &[]);
    settle(&mut vhds, before, &[]);
    // Envoy subscribes to a new cluster's endpoints once the cluster arrives, and the stream
    // holds route changes that name new clusters until then.
    let new_endpoints: Vec<String> = after
        .of(ResourceType::Endpoint)
        .keys()
        .filter(|k| !before.of(ResourceType::Endpoint).contains_key(*k))
        .map(|k| k.to_string())
        .collect();
    let (n, bytes) = settle(&mut stream, after, &new_endpoints);
    let (vn, vbytes) = settle(&mut vhds, after, &[]);
    (n + vn, bytes + vbytes)
}

/// Pumps and ACKs until nothing more is sent, subscribing to `new_endpoints` when clusters
/// arrive; returns resources and bytes sent.
fn settle(stream: &mut StreamState, fleet: &xds::FleetResources, new_endpoints: &[String]) -> (usize, usize) {
    let (mut count, mut bytes) = (0, 0);
    for _ in 0..20 {
        let out = stream.pump(fleet, Instant::now());
        if out.is_empty() {
            break;
        }
        for o in out {
            count += o.resources.len();
            bytes += o.resources.iter().map(|r| r.body.value.len()).sum::<usize>();
            let ack = Incoming { type_url: o.resource_type.type_url().into(), nonce: o.nonce, ..Default::default() };
            let _ = stream.on_request(&ack);
            if o.resource_type == ResourceType::Cluster && !new_endpoints.is_empty() {
                let _ = stream.on_request(&Incoming {
                    type_url: ResourceType::Endpoint.type_url().into(),
                    subscribe: new_endpoints.to_vec(),
                    ..Default::default()
                });
            }
        }
    }
    (count, bytes)
}

fn peak_rss_mib() -> f64 {
    rss_mib("VmHWM:")
}

fn rss_mib(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0.0);
    kib / 1024.0
}
