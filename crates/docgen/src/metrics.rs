//! Every metric: what contour-serve's and contour-provisioner's `/metrics` render.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::GENERATED;
use crate::table::{cell, render};

/// What contour-serve's `/metrics` renders with every part on (Kubernetes mode, the webhook).
pub fn contour_serve() -> String {
    let serve = telemetry::Telemetry {
        version: "",
        counters: Arc::default(),
        xds: xds_server::XdsServer::new(xds_server::Options::default()),
        store: store::Store::new(),
        status: Some(Arc::default()),
        published: tokio::sync::watch::channel(Some(Arc::new(proxies()))).1,
        admission: Some(Arc::default()),
    };
    telemetry::render(&serve)
}

/// A build with an HTTPProxy of each state (a valid root, an invalid root, an orphaned child),
/// so the HTTPProxy gauges render with their labels.
fn proxies() -> controller::Published {
    let proxy = |name: &str, vhost: &str, current_status: &'static str| {
        Arc::new(controller::ProxyStatus {
            key: objects::ObjectKey::new("web", name),
            vhost: vhost.into(),
            uid: String::new(),
            generation: 1,
            current_status,
            description: String::new(),
            valid: current_status == "valid",
            reason: ir::reason::VALID,
            message: String::new(),
            errors: Vec::new(),
            warnings: Vec::new(),
        })
    };
    controller::Published {
        snapshot: Arc::default(),
        dag: Arc::default(),
        attached: Arc::default(),
        proxies: Arc::new(vec![
            proxy("app", "app.example.com", "valid"),
            proxy("broken", "broken.example.com", "invalid"),
            proxy("child", "", "orphaned"),
        ]),
    }
}

/// The metric names of a Prometheus text exposition: each one declared (`# HELP`), with or
/// without samples, and each series name (a histogram's `_bucket`, a summary's `_sum`).
pub fn names(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|line| match line.strip_prefix("# HELP ") {
            Some(declared) => declared.split(' ').next(),
            None if line.starts_with('#') => None,
            None => line.split(['{', ' ']).next(),
        })
        .filter(|name| !name.is_empty())
        .map(str::to_string)
        .collect()
}

/// The metrics page.
pub(crate) fn page() -> String {
    let provisioner = provisioner::controller::Counters::default();
    format!(
        "{GENERATED}\n\n# Metrics\n\n\
         `contour-serve` serves these on `/metrics` (`--http-address`, `--http-port`, or `metrics.contour` in \
         contour.yaml). The names, types and help texts of upstream Contour's metrics are upstream's, so its \
         dashboards and alerts work unchanged. `contour_status_update_*` appear in Kubernetes mode, \
         `contour_admission_*` when the webhook is on. Envoy's own statistics are Envoy's, on its stats port \
         (`/stats/prometheus`).\n\n## contour-serve\n\n{}\n## contour-provisioner\n\n{}",
        table(&contour_serve()),
        table(&provisioner.render())
    )
}

/// One row per metric of a Prometheus text exposition: its name, type, labels and help.
fn table(text: &str) -> String {
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut labels: BTreeSet<String> = BTreeSet::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            flush(&mut rows, &mut labels);
            let (name, help) = rest.split_once(' ').unwrap_or((rest, ""));
            rows.push(vec![format!("`{name}`"), String::new(), String::new(), cell(help)]);
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            if let Some(row) = rows.last_mut() {
                row[1] = rest.split_once(' ').map_or("", |(_, t)| t).to_string();
            }
        } else if let Some((_, rest)) = line.split_once('{') {
            let inside = rest.split_once('}').map_or("", |(l, _)| l);
            labels.extend(inside.split(',').filter_map(|kv| kv.split_once('=')).map(|(k, _)| format!("`{k}`")));
        }
    }
    flush(&mut rows, &mut labels);
    render(&["Name", "Type", "Labels", "Help"], &rows)
}

fn flush(rows: &mut [Vec<String>], labels: &mut BTreeSet<String>) {
    if let Some(row) = rows.last_mut() {
        row[2] = std::mem::take(labels).into_iter().collect::<Vec<_>>().join(", ");
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn upstream_names_and_our_counters_are_listed() {
        let page = super::page();
        for name in ["contour_dagrebuild_total", "contour_status_update_total", "contour_xds_refused_streams_total"] {
            assert!(page.contains(&format!("| `{name}` |")), "{name} missing:\n{page}");
        }
        assert!(page.contains("| `contour_status_update_total` | counter | `kind` |"), "{page}");
    }
}
