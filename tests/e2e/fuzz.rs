//! Generated hostile objects (crates/fuzz) through the controller to two real Envoys: a
//! Gateway's fleet on Delta xDS and the default fleet (HTTPProxy, Ingress) on
//! State-of-the-World. Every case's configuration must be accepted: anything Envoy would reject
//! has to be refused by a front end first, with a status condition. The sentinels (an
//! HTTPRoute and an HTTPProxy no case touches) must keep answering through Envoy after every
//! case.
//!
//! `CONTOUR_FUZZ_CASES` (300), `CONTOUR_FUZZ_SECONDS` (600) and `CONTOUR_FUZZ_SEED` (fixed) set
//! the run; `hack/fuzz` runs many more with a new seed. A failing case's objects are written to
//! `CONTOUR_FUZZ_FAILURES` (a temporary directory by default), ready to become a corpus case.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngSeed, TestRunner};
use testkit::{Envoy, Request};
use xds_server::{Programming, XdsServer};

use crate::harness::{Harness, default_fleet_options, fleet_envoy};

/// The seed hack/test uses, so its run is the same every time.
const SEED: u64 = 0x0c0f_f5ee_d000_0001;

/// The fleets the two Envoys serve.
const FLEETS: [&str; 2] = ["default/gw", ir::DEFAULT_FLEET];

fn env<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// What happened to one case that should not have.
struct Failure {
    case: usize,
    what: String,
    problem: String,
    yaml: String,
}

/// The controller, its xDS server and the two Envoys, with the base objects applied.
struct Rig {
    base: fuzz::Base,
    server: XdsServer,
    controller: controller::Controller,
    envoys: [Envoy; 2],
    /// The Gateway's HTTP listener and the default fleet's.
    gateway: SocketAddr,
    default: SocketAddr,
    _backend: testkit::Backend,
    _serving: AbortOnDrop,
}

/// What one case did.
struct Outcome {
    problems: Vec<String>,
    unreadable: usize,
    diagnostics: usize,
    verdict: Duration,
}

impl Rig {
    async fn start() -> anyhow::Result<Self> {
        let backend = testkit::Backend::start("sentinel").await?;
        let port = testkit::free_port;
        let ports = free_ports(backend.addr);
        let (default_http, default_https) = (port(), port());
        let base = fuzz::Base::load(&ports);
        let server = XdsServer::new(Default::default());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let xds_port = listener.local_addr()?.port();
        let serving = server.clone();
        let task = tokio::spawn(async move {
            let _ = xds_server::serve(serving, listener, std::future::pending()).await;
        });
        let mut controller =
            controller::Controller::new(default_fleet_options(default_http, default_https), server.clone());
        controller.apply(Arc::new(base.apply(&fuzz::Case { changes: Vec::new() }).snapshot));
        server.set_ready();
        let envoys = [fleet_envoy(xds_port, FLEETS[0], true).await?, fleet_envoy(xds_port, FLEETS[1], false).await?];
        let gateway = SocketAddr::from(([127, 0, 0, 1], ports.http));
        let default = SocketAddr::from(([127, 0, 0, 1], default_http));
        for addr in [gateway, default] {
            anyhow::ensure!(sentinel_serves(addr, Duration::from_secs(15)).await, "the base objects do not serve");
        }
        Ok(Self { base, server, controller, envoys, gateway, default, _backend: backend, _serving: AbortOnDrop(task) })
    }

    /// Applies a case as the controller would and checks what a user would notice: Envoy's
    /// verdict, and both sentinels answering.
    async fn run(&mut self, case: &fuzz::Case) -> Outcome {
        let gateway_touched = self.base.touches(case, "Gateway") || self.base.touches(case, "GatewayClass");
        self.run_objects(self.base.apply(case), gateway_touched).await
    }

    /// [`Rig::run`] for objects made otherwise (a corpus case).
    async fn run_objects(&mut self, objects: fuzz::Objects, gateway_touched: bool) -> Outcome {
        let nacks = self.server.stats().nacks_total();
        let applied = Instant::now();
        self.controller.apply(Arc::new(objects.snapshot));
        let diagnostics = self.controller.published().borrow().as_ref().map_or(0, |p| p.dag.diagnostics.len());
        let verdict = settle(&self.server, Duration::from_secs(10)).await;
        let took = applied.elapsed();
        let mut problems = Vec::new();
        let nacked = self.server.stats().nacks_total() - nacks;
        if verdict.is_err() || nacked > 0 {
            let logs: Vec<String> = self
                .envoys
                .iter()
                .map(|e| {
                    let log = e.log();
                    match rejections(&log) {
                        r if r.is_empty() => log
                            .lines()
                            .filter(|l| !l.contains("work-in-progress") && !l.contains("retry_on"))
                            .rev()
                            .take(8)
                            .collect::<Vec<_>>()
                            .join("\n"),
                        r => r,
                    }
                })
                .collect();
            problems.push(format!(
                "{} ({nacked} NACKs)\nEnvoy: {}",
                verdict.err().unwrap_or_default(),
                logs.join("\n")
            ));
        }
        if !gateway_touched && !sentinel_serves(self.gateway, Duration::from_secs(5)).await {
            problems.push("the Gateway's sentinel HTTPRoute stopped answering".into());
        }
        if !sentinel_serves(self.default, Duration::from_secs(5)).await {
            problems.push("the sentinel HTTPProxy stopped answering".into());
        }
        Outcome { problems, unreadable: objects.unreadable.len(), diagnostics, verdict: took }
    }

    /// The simplest case `tree` shrinks to that still fails (at most 100 tries).
    async fn shrink(&mut self, tree: &mut impl ValueTree<Value = fuzz::Case>) -> fuzz::Case {
        let mut smallest = tree.current();
        for _ in 0..100 {
            if !tree.simplify() {
                break;
            }
            let candidate = tree.current();
            if !self.run(&candidate).await.problems.is_empty() {
                smallest = candidate;
            } else if !tree.complicate() {
                break;
            }
        }
        smallest
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_objects_are_accepted_by_envoy_and_never_dark_the_rest() -> anyhow::Result<()> {
    let cases: usize = env("CONTOUR_FUZZ_CASES", 300);
    let budget = Duration::from_secs(env("CONTOUR_FUZZ_SECONDS", 600));
    let seed: u64 = env("CONTOUR_FUZZ_SEED", SEED);
    let mut rig = Rig::start().await?;
    let mut runner = TestRunner::new(Config { rng_seed: RngSeed::Fixed(seed), ..Config::default() });
    let strategy = fuzz::case(&rig.base);
    let started = Instant::now();
    let mut failures = Vec::new();
    let (mut ran, mut unreadable, mut diagnostics, mut verdicts) = (0, 0, 0, Vec::new());
    while ran < cases && started.elapsed() < budget {
        let mut tree = strategy.new_tree(&mut runner).map_err(|e| anyhow::anyhow!("{e}"))?;
        ran += 1;
        let outcome = rig.run(&tree.current()).await;
        unreadable += outcome.unreadable;
        diagnostics += outcome.diagnostics;
        verdicts.push(outcome.verdict);
        if outcome.problems.is_empty() {
            continue;
        }
        let case = rig.shrink(&mut tree).await;
        let problems = rig.run(&case).await.problems;
        let problem = if problems.is_empty() { outcome.problems } else { problems }.join("\n");
        let yaml = rig.base.apply(&case).yaml();
        failures.push(Failure { case: ran, what: rig.base.describe(&case), problem, yaml });
    }
    let mut rejected = 0;
    for envoy in &rig.envoys {
        rejected += envoy.rejected_updates().await?;
    }
    let nacks = rig.server.stats().nacks_total();
    verdicts.sort();
    println!(
        "fuzz: {ran} cases in {:.1} s (seed {seed}): {unreadable} objects unreadable, {diagnostics} diagnostics, \
         {nacks} NACKs counted by the server, {rejected} updates rejected by Envoy; apply → Envoy's verdict median {:?}, slowest {:?}",
        started.elapsed().as_secs_f64(),
        verdicts.get(verdicts.len() / 2).copied().unwrap_or_default(),
        verdicts.last().copied().unwrap_or_default(),
    );
    report(&failures, seed)?;
    anyhow::ensure!(rejected == 0 && nacks == 0, "Envoy rejected {rejected} updates, the server counted {nacks} NACKs");
    Ok(())
}

/// Every case of the committed corpus (crates/fuzz/corpus) through the two Envoys: no NACK,
/// and the sentinels keep answering.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_corpus_is_refused_before_envoy() -> anyhow::Result<()> {
    let mut rig = Rig::start().await?;
    let entries = fuzz::corpus::load();
    let mut problems = Vec::new();
    for entry in &entries {
        let objects = entry.objects(&rig.base);
        for p in rig.run_objects(objects, entry.changes_gateway()).await.problems {
            problems.push(format!("{}: {p}", entry.name));
        }
    }
    println!("corpus: {} cases through Envoy, {} problems", entries.len(), problems.len());
    anyhow::ensure!(problems.is_empty(), "{}", problems.join("\n"));
    Ok(())
}

/// The corpus in Kubernetes mode: every case is applied through a real API server (with
/// Gateway API's CRDs, TCPRoute and UDPRoute, and Contour's) to the controller watching it, with the
/// Gateway's fleet and the default fleet in two Envoys. A case the API server refuses is refused
/// at admission, as `kubectl apply` shows; one it admits must get its condition's reason in the
/// object's status (for a route, its message naming the field). Either way, no NACK, and the sentinels keep answering.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_corpus_in_kubernetes_mode_is_refused_by_the_api_server_or_gets_its_condition() -> anyhow::Result<()> {
    let api = testkit::ApiServer::start().await?;
    api.install_gateway_api().await?;
    api.install_gateway_api_experimental().await?;
    api.install_crds(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/crds")).await?;
    let client = api.client().await?;
    let backend = testkit::NetnsBackend::start("sentinel").await?;
    let port = testkit::free_port;
    let ports = free_ports(backend.addr);
    let base = fuzz::Base::load(&ports);
    testkit::apply_yaml(&client, "apiVersion: v1\nkind: Namespace\nmetadata: {name: other}").await?;
    let mut refused = Vec::new();
    for object in base.objects() {
        if let Err(e) = testkit::apply_yaml(&client, &object.to_string()).await {
            refused.push(format!("{} {}: {e}", object["kind"], object["metadata"]["name"]));
        }
    }
    anyhow::ensure!(refused.is_empty(), "the API server refuses base objects:\n{}", refused.join("\n"));
    let (http, https) = (port(), port());
    let h = Harness::start_kubernetes_gateway_and_default(client.clone(), http, https).await?;
    let _default_envoy = fleet_envoy(h.xds_port, ir::DEFAULT_FLEET, false).await?;
    let (gateway, default) = (SocketAddr::from(([127, 0, 0, 1], ports.http)), SocketAddr::from(([127, 0, 0, 1], http)));
    for addr in [gateway, default] {
        anyhow::ensure!(
            sentinel_serves(addr, Duration::from_secs(30)).await,
            "the base objects do not serve at {addr}"
        );
    }

    let entries = fuzz::corpus::load();
    let (mut admitted, mut at_admission, mut problems) = (Vec::new(), Vec::new(), Vec::new());
    for entry in &entries {
        let documents = entry.documents(&base);
        let mut refusals = Vec::new();
        for doc in &documents {
            if let Err(e) = testkit::apply_yaml(&client, &doc.to_string()).await {
                refusals.push(e.to_string());
            }
        }
        if refusals.is_empty() {
            admitted.push(entry.name.as_str());
        } else {
            at_admission.push(entry.name.as_str());
        }
        let mut unmet = Vec::new();
        for expect in &entry.expect {
            match expect {
                fuzz::corpus::Expect::Unreadable(_) if refusals.is_empty() => {
                    unmet.push("the API server admitted an object it must refuse".to_string())
                }
                fuzz::corpus::Expect::Diagnostic { kind, object, field, reason } if refusals.is_empty() => {
                    let (namespace, name) = object.split_once('/').unwrap_or(("default", object));
                    let api_version = documents
                        .iter()
                        .chain(base.objects())
                        .find(|o| o["kind"] == kind.as_str())
                        .and_then(|o| o["apiVersion"].as_str())
                        .unwrap_or_default();
                    // Route conditions name the field in their message; a Gateway's are per
                    // listener, and HTTPProxy's keep upstream's messages, which name none.
                    let field = if kind.ends_with("Route") { field.as_str() } else { "" };
                    let found = testkit::eventually(Duration::from_secs(10), || async {
                        let status = testkit::status_of(&client, api_version, kind, namespace, name).await.ok()?;
                        has_condition(&status, reason, field).then_some(())
                    })
                    .await;
                    if found.is_none() {
                        let status = testkit::status_of(&client, api_version, kind, namespace, name).await;
                        unmet.push(format!("no {reason} naming {field} in the status of {kind} {object}: {status:?}"));
                    }
                }
                _ => {}
            }
        }
        // Give the controller the change (a condition may have come from an earlier build).
        tokio::time::sleep(Duration::from_millis(500)).await;
        if let Err(e) = settle(&h.server, Duration::from_secs(10)).await {
            unmet.push(e);
        }
        if !entry.changes_gateway() && !sentinel_serves(gateway, Duration::from_secs(5)).await {
            unmet.push("the Gateway's sentinel HTTPRoute stopped answering".into());
        }
        if !sentinel_serves(default, Duration::from_secs(5)).await {
            unmet.push("the sentinel HTTPProxy stopped answering".into());
        }
        problems.extend(unmet.into_iter().map(|u| format!("{}: {u}", entry.name)));
        // Back to the base objects.
        for doc in &documents {
            let yaml = doc.to_string();
            match base.objects().iter().find(|o| fuzz::corpus::same_object(o, doc)) {
                Some(original) => testkit::apply_yaml(&client, &original.to_string()).await?,
                None => testkit::delete_yaml(&client, &yaml).await.or_else(|e| {
                    // An object the API server never admitted cannot be named to delete.
                    if refusals.is_empty() { Err(e) } else { Ok(()) }
                })?,
            }
        }
        anyhow::ensure!(sentinel_serves(gateway, Duration::from_secs(15)).await, "{}: not restored", entry.name);
    }
    let nacks = h.server.stats().nacks_total();
    println!(
        "corpus in Kubernetes mode: {} cases; refused by the API server: {}; admitted: {}; {nacks} NACKs; {} problems",
        entries.len(),
        at_admission.join(", "),
        admitted.join(", "),
        problems.len()
    );
    anyhow::ensure!(problems.is_empty() && nacks == 0, "{nacks} NACKs; {}", problems.join("\n"));
    Ok(())
}

/// Free ports for the base objects' listeners, their backends at `backend`.
fn free_ports(backend: SocketAddr) -> fuzz::Ports {
    let port = testkit::free_port;
    fuzz::Ports { http: port(), https: port(), tls: port(), tcp: port(), udp: port(), set: port(), backend }
}

/// Whether a status holds a condition (at any depth) with this reason whose message names
/// `field`.
fn has_condition(status: &serde_json::Value, reason: &str, field: &str) -> bool {
    match status {
        serde_json::Value::Object(map) => {
            let message = map.get("message").and_then(|m| m.as_str()).unwrap_or_default();
            (map.get("reason").is_some_and(|r| r == reason) && message.contains(field))
                || map.values().any(|v| has_condition(v, reason, field))
        }
        serde_json::Value::Array(items) => items.iter().any(|v| has_condition(v, reason, field)),
        _ => false,
    }
}

/// Waits until every fleet's Envoy has answered the configuration it is served: `Err` with
/// Envoy's message when it rejected some, or when it did not answer in time.
async fn settle(server: &XdsServer, timeout: Duration) -> Result<(), String> {
    let deadline = Instant::now() + timeout;
    loop {
        let states: Vec<Programming> = FLEETS.iter().map(|f| server.programming(f)).collect();
        if let Some(Programming::Rejected(e)) = states.iter().find(|s| matches!(s, Programming::Rejected(_))) {
            return Err(format!("rejected: {e}"));
        }
        if states.iter().all(|s| *s == Programming::Programmed) {
            return Ok(());
        }
        if Instant::now() >= deadline {
            let pending: Vec<_> = FLEETS.iter().map(|f| (f, server.pending(f))).collect();
            return Err(format!("no verdict from Envoy within {timeout:?}: {states:?}; not yet accepted: {pending:?}"));
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Envoy's own words for the last update it rejected: the end of its log line, where the
/// reason is (the start is the rejected resource, printed whole).
fn rejections(log: &str) -> String {
    let Some(start) = log.rfind("rejected: ") else { return String::new() };
    let end = log[start..].find("\n[").map_or(log.len(), |i| start + i);
    let message = &log[start..end];
    let tail = message.char_indices().rev().nth(1500).map_or(0, |(i, _)| i);
    message[tail..].to_string()
}

/// Whether the sentinels' host answers 200 through the listener at `addr` within `timeout`.
async fn sentinel_serves(addr: SocketAddr, timeout: Duration) -> bool {
    let req = Request::get("sentinel.example.com", "/");
    testkit::eventually(timeout, || async { testkit::request(addr, &req).await.ok().filter(|r| r.status == 200) })
        .await
        .is_some()
}

/// Writes every failing case's objects out and fails with the list.
fn report(failures: &[Failure], seed: u64) -> anyhow::Result<()> {
    if failures.is_empty() {
        return Ok(());
    }
    let dir = std::env::var_os("CONTOUR_FUZZ_FAILURES")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("contour-fuzz-failures"));
    std::fs::create_dir_all(&dir)?;
    let mut lines = Vec::new();
    for f in failures {
        let path = dir.join(format!("seed-{seed}-case-{}.yaml", f.case));
        let header = format!("# seed {seed}, case {}: {}\n# {}\n", f.case, f.what, f.problem.replace('\n', "\n# "));
        std::fs::write(&path, header + &f.yaml)?;
        lines.push(format!("case {} ({}): {}\n  objects: {}", f.case, f.what, f.problem, path.display()));
    }
    anyhow::bail!("{} of the generated cases failed:\n{}", failures.len(), lines.join("\n"))
}

/// Stops a task when the test ends, however it ends.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
