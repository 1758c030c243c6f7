//! The pure stages against generated objects: they never panic, stay within a time budget, the
//! cached pipeline agrees with a fresh build, and the sentinels keep their virtual hosts.
//!
//! `PROPTEST_CASES` sets how many cases run (256 by default); `CONTOUR_FUZZ_SEED` the seed
//! (fixed by default, so a run is the same every time; `hack/fuzz` draws a new one).

use std::time::{Duration, Instant};

use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};
use xds::ResourceType;

use super::*;

/// The seed of the default run.
const SEED: u64 = 0x0c0f_f5ee_d000_0001;

fn options() -> controller::Options {
    controller::Options::default()
}

/// The fleets whose route configuration holds the sentinels' host name.
fn sentinel_fleets(build: &controller::Build) -> Vec<String> {
    build
        .fleets
        .iter()
        .filter(|(_, f)| {
            [ResourceType::Route, ResourceType::RouteVhds]
                .iter()
                .any(|t| f.of(*t).values().any(|r| r.body.value.windows(20).any(|w| w == b"sentinel.example.com")))
        })
        .map(|(id, _)| id.clone())
        .collect()
}

#[test]
fn the_base_objects_build_without_a_problem() {
    let base = Base::load(&Ports::default());
    let objects = base.apply(&Case { changes: Vec::new() });
    assert!(objects.unreadable.is_empty(), "{:?}", objects.unreadable);
    let build = controller::build(&objects.snapshot, &options());
    let problems: Vec<String> = build.dag.diagnostics.iter().map(|d| d.to_string()).collect();
    assert!(problems.is_empty(), "the base fixture must be clean:\n{}", problems.join("\n"));
    assert_eq!(sentinel_fleets(&build), ["contour", "default/gw"]);
    assert!(base.sites() > 300, "{} sites", base.sites());
}

#[test]
fn structural_changes_apply() {
    let base = Base::load(&Ports::default());
    let many = base.apply(&Case { changes: vec![Change::Structure(Structure::IncludeChain(5))] });
    assert_eq!(many.snapshot.http_proxies.len(), 5 + 5);
    let routes = base.apply(&Case { changes: vec![Change::Structure(Structure::ManyRoutes(1000))] });
    let root = &routes.snapshot.http_proxies[&objects::ObjectKey::new("default", "root")];
    assert_eq!(root.spec.routes.as_ref().map(Vec::len), Some(1000));
    let removed = base.apply(&Case { changes: vec![Change::Field { site: 0, op: Op::Remove, pick: 0 }] });
    assert_ne!(removed.json, base.objects);
}

/// Runs `cases` generated cases through the pipeline, checking every property; prints the
/// figures.
#[test]
fn generated_objects_never_break_the_pipeline() {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256);
    let seed = std::env::var("CONTOUR_FUZZ_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(SEED);
    let config = Config { cases, failure_persistence: None, rng_seed: RngSeed::Fixed(seed), ..Config::default() };
    let base = Base::load(&Ports::default());
    let options = options();
    // The controller's pipeline, warmed on the base objects: each case is a change from there,
    // as in a running controller.
    let warm = std::cell::RefCell::new(controller::Pipeline::default());
    let base_snapshot = base.apply(&Case { changes: Vec::new() }).snapshot;
    warm.borrow_mut().build(&base_snapshot, &options);
    let figures = std::cell::RefCell::new(Figures::default());
    let result = TestRunner::new(config).run(&case(&base), |case| {
        let objects = base.apply(&case);
        let started = Instant::now();
        let fresh = controller::build(&objects.snapshot, &options);
        let took = started.elapsed();
        let input: usize = objects.json.iter().map(|v| v.to_string().len()).sum();
        // A guard against cost that grows faster than the input, not a speed target (those are in
        // hack/bench): a second, plus a millisecond per KiB. Unoptimised, on the shared 2-core
        // machine, the largest case (10k routes, 743 KiB) takes 0.55–1.1 s from run to run; a
        // quadratic step over those routes would take minutes.
        let budget = Duration::from_secs(1) + Duration::from_millis((input / 1024) as u64);
        prop_assert!(
            took <= budget,
            "build took {took:?} for {input} bytes (budget {budget:?}): {}",
            base.describe(&case)
        );
        let cached = warm.borrow_mut().build(&objects.snapshot, &options);
        prop_assert!(cached.fleets == fresh.fleets, "cached and fresh builds differ: {}", base.describe(&case));
        prop_assert_eq!(&cached.dag.diagnostics, &fresh.dag.diagnostics);
        // Back to the base, so the next case is again one change away.
        warm.borrow_mut().build(&base_snapshot, &options);
        status(&objects.snapshot, &fresh);
        for d in &fresh.dag.diagnostics {
            prop_assert!(!d.origin.name.is_empty() && !d.reason.is_empty(), "diagnostic without object or reason: {d}");
        }
        if !base.touches(&case, "Gateway") && !base.touches(&case, "GatewayClass") {
            let served = sentinel_fleets(&fresh);
            prop_assert!(
                served == ["contour", "default/gw"],
                "the sentinels lost their virtual hosts ({served:?}): {}",
                base.describe(&case)
            );
        }
        figures.borrow_mut().add(took, input, objects.unreadable.len(), fresh.dag.diagnostics.len());
        Ok::<(), TestCaseError>(())
    });
    let figures = figures.into_inner();
    println!(
        "{} cases (seed {seed}): build median {:?}, slowest {:?} (for {} KiB); {} objects unreadable, {} diagnostics",
        figures.times.len(),
        figures.median(),
        figures.slowest.0,
        figures.slowest.1 / 1024,
        figures.unreadable,
        figures.diagnostics,
    );
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// Every status the controller would write for a build; computing it must not panic.
fn status(snapshot: &objects::Snapshot, build: &controller::Build) {
    let options = options();
    let set = frontends::gateway_api::status::compute(
        snapshot,
        &options.gateway_api,
        &build.dag.diagnostics,
        &build.attached,
        |_| frontends::gateway_api::status::FleetState::Programmed,
    );
    std::hint::black_box(set);
    let proxies = frontends::httpproxy::status::compute(snapshot, &options.httpproxy, &build.dag.diagnostics);
    std::hint::black_box(proxies);
    std::hint::black_box(frontends::httpproxy::status::extensions(snapshot, &build.dag.diagnostics));
}

#[derive(Default)]
struct Figures {
    times: Vec<Duration>,
    slowest: (Duration, usize),
    unreadable: usize,
    diagnostics: usize,
}

impl Figures {
    fn add(&mut self, took: Duration, input: usize, unreadable: usize, diagnostics: usize) {
        self.times.push(took);
        if took > self.slowest.0 {
            self.slowest = (took, input);
        }
        self.unreadable += unreadable;
        self.diagnostics += diagnostics;
    }

    fn median(&self) -> Duration {
        let mut t = self.times.clone();
        t.sort();
        t.get(t.len() / 2).copied().unwrap_or_default()
    }
}

/// Every corpus case builds, says what its file expects, and leaves the sentinels served.
#[test]
fn the_corpus_says_what_it_must() {
    let base = Base::load(&Ports::default());
    let entries = corpus::load();
    assert!(entries.len() >= 10, "{} corpus cases", entries.len());
    let mut unmet = Vec::new();
    for entry in &entries {
        let objects = entry.objects(&base);
        let build = controller::build(&objects.snapshot, &options());
        status(&objects.snapshot, &build);
        unmet.extend(entry.unmet(&objects, &build.dag.diagnostics));
        let want: &[&str] = if entry.changes_gateway() { &["contour"] } else { &["contour", "default/gw"] };
        let served = sentinel_fleets(&build);
        if !want.iter().all(|f| served.iter().any(|s| s == f)) {
            unmet.push(format!("{}: the sentinels lost their virtual hosts ({served:?})", entry.name));
        }
    }
    assert!(unmet.is_empty(), "{}", unmet.join("\n"));
}
