//! Prometheus text exposition of the controller's counters, with upstream Contour's metric names
//! where upstream has the metric.

use std::fmt::Write;
use std::sync::atomic::Ordering;

use xds::ResourceType;

use crate::Telemetry;

/// Renders every metric in the Prometheus text format.
pub fn render(t: &Telemetry) -> String {
    let mut out = String::new();
    let mut metric = |name: &str, kind: &str, help: &str, samples: &[(String, f64)]| {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
        for (labels, value) in samples {
            let _ = writeln!(out, "{name}{labels} {value}");
        }
    };
    let c = &t.counters;
    metric(
        "contour_build_info",
        "gauge",
        "Build information for Contour. Labels include the branch and git SHA that Contour was built from, and the Contour version.",
        &[(format!("{{branch=\"\",revision=\"\",version=\"{}\"}}", t.version), 1.0)],
    );
    let rebuilds = c.rebuilds.load(Ordering::Relaxed);
    metric(
        "contour_dagrebuild_total",
        "counter",
        "Total number of times DAG has been rebuilt since startup",
        &[(String::new(), rebuilds as f64)],
    );
    metric(
        "contour_dagrebuild_timestamp",
        "gauge",
        "Timestamp of the last DAG rebuild.",
        &[(String::new(), c.last_rebuild_unix.load(Ordering::Relaxed) as f64)],
    );
    metric(
        "contour_dagrebuild_seconds",
        "summary",
        "Duration in seconds of DAG rebuilds",
        &[("_sum".into(), c.rebuild_micros.load(Ordering::Relaxed) as f64 / 1e6), ("_count".into(), rebuilds as f64)],
    );
    let snapshot = t.store.current();
    let kinds: Vec<(&str, usize)> = objects::Kind::ALL.iter().map(|k| (k.name(), snapshot.len(*k))).collect();
    metric(
        "contour_dag_cache_object",
        "gauge",
        "Total number of items that are currently in the DAG cache.",
        &kinds.iter().map(|(k, n)| (format!("{{kind=\"{k}\"}}"), *n as f64)).collect::<Vec<_>>(),
    );
    metric(
        "contour_endpoint_updates_total",
        "counter",
        "Endpoint-only changes sent to EDS without a rebuild.",
        &[(String::new(), c.endpoint_updates.load(Ordering::Relaxed) as f64)],
    );
    if let Some(a) = &t.admission {
        metric(
            "contour_admission_reviews_total",
            "counter",
            "AdmissionReviews the webhook answered.",
            &[(String::new(), a.reviews.load(Ordering::Relaxed) as f64)],
        );
        metric(
            "contour_admission_denied_total",
            "counter",
            "AdmissionReviews the webhook denied.",
            &[(String::new(), a.denied.load(Ordering::Relaxed) as f64)],
        );
    }

    // Upstream's HTTPProxy gauges, from the last build.
    let published = t.published.borrow().clone();
    let proxies = published.as_ref().map(|p| p.proxies.as_slice()).unwrap_or_default();
    let count = |pick: &dyn Fn(&controller::ProxyStatus) -> Option<String>| {
        let mut counts: std::collections::BTreeMap<String, f64> = Default::default();
        for labels in proxies.iter().filter_map(|p| pick(p)) {
            *counts.entry(labels).or_default() += 1.0;
        }
        counts.into_iter().collect::<Vec<_>>()
    };
    let namespace = |p: &controller::ProxyStatus| format!("{{namespace=\"{}\"}}", p.key.namespace);
    let vhost = |p: &controller::ProxyStatus| format!("{{namespace=\"{}\",vhost=\"{}\"}}", p.key.namespace, p.vhost);
    metric("contour_httpproxy", "gauge", "Total number of HTTPProxies.", &count(&|p| Some(namespace(p))));
    metric(
        "contour_httpproxy_root",
        "gauge",
        "Total number of root HTTPProxies.",
        &count(&|p| (!p.vhost.is_empty()).then(|| namespace(p))),
    );
    metric(
        "contour_httpproxy_valid",
        "gauge",
        "Total number of valid HTTPProxies.",
        &count(&|p| (p.current_status == "valid").then(|| vhost(p))),
    );
    metric(
        "contour_httpproxy_invalid",
        "gauge",
        "Total number of invalid HTTPProxies.",
        &count(&|p| (p.current_status == "invalid").then(|| vhost(p))),
    );
    metric(
        "contour_httpproxy_orphaned",
        "gauge",
        "Total number of orphaned HTTPProxies.",
        &count(&|p| (p.current_status == "orphaned").then(|| namespace(p))),
    );

    if let Some(sc) = &t.status {
        let per_kind = |a: &[std::sync::atomic::AtomicU64; status::KINDS.len()]| {
            status::KINDS
                .iter()
                .zip(a)
                .map(|(k, n)| (format!("{{kind=\"{k}\"}}"), n.load(Ordering::Relaxed) as f64))
                .collect::<Vec<_>>()
        };
        metric(
            "contour_status_update_total",
            "counter",
            "Total number of status updates by object kind.",
            &per_kind(&sc.total),
        );
        metric(
            "contour_status_update_success_total",
            "counter",
            "Number of status updates that succeeded, by object kind.",
            &per_kind(&sc.success),
        );
        metric(
            "contour_status_update_failed_total",
            "counter",
            "Number of status updates that failed, by object kind.",
            &per_kind(&sc.failed),
        );
        metric(
            "contour_status_update_conflict_total",
            "counter",
            "Number of status update conflicts encountered, by object kind.",
            &per_kind(&sc.conflict),
        );
        metric(
            "contour_status_update_noop_total",
            "counter",
            "Number of status updates that are no-ops, by object kind.",
            &per_kind(&sc.noop),
        );
    }

    let stats = t.xds.stats();
    // Both forms of route configurations count as `rds`.
    let by_type = |m: &std::collections::BTreeMap<ResourceType, u64>| {
        let mut by_label = std::collections::BTreeMap::<&str, u64>::new();
        for (t, n) in m {
            *by_label.entry(t.short()).or_default() += n;
        }
        by_label.into_iter().map(|(l, n)| (format!("{{type=\"{l}\"}}"), n as f64)).collect::<Vec<_>>()
    };
    metric("contour_xds_connections", "gauge", "Open xDS streams.", &[(String::new(), stats.connections as f64)]);
    metric(
        "contour_xds_streams_total",
        "counter",
        "xDS streams opened since startup.",
        &[(String::new(), stats.streams_total as f64)],
    );
    metric("contour_xds_pushes_total", "counter", "xDS responses sent, by resource type.", &by_type(&stats.pushes));
    metric(
        "contour_xds_resources_sent_total",
        "counter",
        "Resources sent in xDS responses, by type.",
        &by_type(&stats.resources_sent),
    );
    metric(
        "contour_xds_nacks_total",
        "counter",
        "Configuration Envoy rejected (NACKs), by resource type.",
        &by_type(&stats.nacks),
    );
    metric(
        "contour_xds_unknown_fleet_total",
        "counter",
        "xDS streams whose Envoy named a fleet with no configuration.",
        &[(String::new(), stats.unknown_fleet as f64)],
    );
    let refused: Vec<(String, f64)> =
        stats.refused.iter().map(|(r, n)| (format!("{{reason=\"{}\"}}", r.label()), *n as f64)).collect();
    metric(
        "contour_xds_refused_streams_total",
        "counter",
        "xDS streams refused because the client certificate may not receive the fleet the node names, by reason.",
        &refused,
    );
    metric(
        "contour_xds_rejected_resources",
        "gauge",
        "Resources Envoy rejected that are still wanted (the last accepted version is served).",
        &[(String::new(), t.xds.rejections().len() as f64)],
    );
    out
}
