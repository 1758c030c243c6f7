//! The tables: medians per controller and the ratios ours / theirs.

use std::time::Duration;

use crate::{Args, Figures};

pub fn median(mut values: Vec<f64>) -> Option<f64> {
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

/// One measure's medians, one per controller (ours first); `None` when every run timed out.
pub struct Row {
    pub name: &'static str,
    pub unit: &'static str,
    pub medians: Vec<Option<f64>>,
}

/// The measures the tables print, with each controller's median.
pub fn rows(routes: crate::Routes, results: &[(&str, Vec<Figures>)]) -> Vec<Row> {
    type Measure = (&'static str, fn(&Figures) -> f64, &'static str);
    let measures: Vec<Measure> = vec![
        ("start → the last route served", |f| secs(&f.served), "s"),
        (routes.accepted(), |f| secs(&f.all_valid), "s"),
        ("floor: a bare client lists every object of the kinds watched", |f| f.list.as_secs_f64(), "s"),
        ("floor: a cold Envoy → the last route served, its configuration built", |f| secs(&f.cold_envoy), "s"),
        (
            "start → served over the floor (the two together)",
            |f| secs(&f.served) / (f.list.as_secs_f64() + secs(&f.cold_envoy)),
            "×",
        ),
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
        ("bytes to Envoy for a one-route change", |f| f.change_kib, "KiB"),
        ("Envoy's time applying that change (its update_duration sums)", |f| f.change_apply_ms, "ms"),
        ("controller CPU over the new apps (with the second between each two)", |f| f.apps_cpu, "s"),
        ("controller CPU over the whole run", |f| f.cpu, "s"),
        ("controller CPU while idle", |f| f.idle_cpu, "s"),
        ("peak RSS over the whole run", |f| f.peak_rss, "MiB"),
    ];
    measures
        .into_iter()
        .map(|(name, get, unit)| Row {
            name,
            unit,
            medians: results.iter().map(|(_, runs)| median(runs.iter().map(get).collect())).collect(),
        })
        .collect()
}

pub fn print_table(n: usize, routes: crate::Routes, args: &Args, results: &[(&str, Vec<Figures>)]) {
    println!();
    println!(
        "N = {n} apps (Service + EndpointSlice + {}); medians of {} run(s); {} new apps, {} EndpointSlice changes, {} s idle; timed out: not within {} s (start) or {} s (a change)",
        match routes {
            crate::Routes::Httpproxy => "root HTTPProxy",
            crate::Routes::Httproute => "HTTPRoute of one Gateway",
        },
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
    for Row { name, unit, medians } in rows(routes, results) {
        let mut line = format!("| {name} |");
        for m in &medians {
            line.push_str(&match m {
                Some(v) => format!(" {}{}{unit} |", figure(*v), if unit == "×" { "" } else { " " }),
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
