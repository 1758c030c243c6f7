//! The Grafana dashboard in `deploy/grafana/` shows what exists: every metric its queries name is
//! one contour-serve renders or one a real Envoy serving traffic exports.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::time::Duration;

use testkit::{Backend, Request};

use crate::harness::{Serve, service};

/// Every metric name in the dashboard's queries (identifiers starting `contour_` or `envoy_`).
fn queried_metrics(dashboard: &serde_json::Value) -> BTreeSet<String> {
    let mut exprs = Vec::new();
    collect_exprs(dashboard, &mut exprs);
    let mut names = BTreeSet::new();
    for expr in exprs {
        let words = expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'));
        names.extend(words.filter(|w| w.starts_with("contour_") || w.starts_with("envoy_")).map(str::to_string));
    }
    names
}

fn collect_exprs(value: &serde_json::Value, out: &mut Vec<String>) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, v) in map {
                match (key.as_str(), v.as_str()) {
                    // Label values inside a query are not metric names: drop `{...}` matchers.
                    ("expr", Some(expr)) => out.push(strip_matchers(expr)),
                    _ => collect_exprs(v, out),
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| collect_exprs(v, out)),
        _ => {}
    }
}

/// `expr` without its label matchers (`{...}`) and groupings (`by (...)`, `without (...)`).
fn strip_matchers(expr: &str) -> String {
    let mut expr = expr.to_string();
    for grouping in ["by (", "without ("] {
        while let Some(at) = expr.find(grouping) {
            let end = expr[at..].find(')').map_or(expr.len(), |e| at + e + 1);
            expr.replace_range(at..end, "");
        }
    }
    let mut out = String::new();
    let mut depth = 0;
    for c in expr.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out
}

#[tokio::test]
async fn every_dashboard_query_names_a_metric_that_exists() -> anyhow::Result<()> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/grafana/contour-rs.json");
    let dashboard: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path)?)?;
    let queried = queried_metrics(&dashboard);
    assert!(queried.len() > 20, "the dashboard's queries were read: {queried:?}");

    // A real Envoy that has served a request, so its request and upstream statistics exist.
    let web = Backend::start("web").await?;
    let proxy = "---\napiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {name: web, namespace: default}\nspec:\n  virtualhost: {fqdn: www.example.com}\n  routes: [{services: [{name: web, port: 80}]}]\n";
    let serve = Serve::start(&[service("web", &[web.addr]), proxy.into()].concat(), None, &[])?;
    let envoy = serve.envoy().await?;
    let addr = SocketAddr::from(([127, 0, 0, 1], serve.http));
    let ok = testkit::eventually(Duration::from_secs(20), || async move {
        testkit::request(addr, &Request::get("www.example.com", "/")).await.ok().filter(|r| r.status == 200)
    })
    .await;
    anyhow::ensure!(ok.is_some(), "never served; log:\n{}", serve.log());
    let mut exported = docgen::metrics::names(&envoy.admin_get("/stats/prometheus").await?);
    // contour-serve's metrics with every part on (status writes and the webhook only exist in
    // Kubernetes mode), as the reference lists them.
    exported.extend(docgen::metrics::names(&docgen::metrics::contour_serve()));
    let missing: Vec<&String> = queried.difference(&exported).collect();
    assert!(missing.is_empty(), "the dashboard queries metrics nobody exports: {missing:?}");
    Ok(())
}
