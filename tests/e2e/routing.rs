//! HTTP routing through Envoy: hosts, paths, matches, weights, filters.

use testkit::{Backend, Request};

use crate::harness::{Harness, gateway, http_listener, http_route, service};

async fn backends(names: &[&str]) -> anyhow::Result<Vec<Backend>> {
    let mut out = Vec::new();
    for n in names {
        out.push(Backend::start(n).await?);
    }
    Ok(out)
}

fn served_by(r: &testkit::Response) -> String {
    r.header("x-backend").unwrap_or("-").to_string()
}

async fn host_routing(delta: bool) -> anyhow::Result<()> {
    let b = backends(&["alpha", "beta"]).await?;
    let port = testkit::free_port();
    let yaml = [
        gateway(&http_listener("http", port)),
        service("alpha", &[b[0].addr]),
        service("beta", &[b[1].addr]),
        http_route("a", "  hostnames: [a.example.com]\n  rules: [{backendRefs: [{name: alpha, port: 80}]}]"),
        http_route("b", "  hostnames: [b.example.com]\n  rules: [{backendRefs: [{name: beta, port: 80}]}]"),
    ]
    .concat();
    let h = Harness::start(&yaml, delta).await?;
    h.until(port, &Request::get("a.example.com", "/"), |r| r.status == 200).await?;
    assert_eq!(served_by(&h.get(port, &Request::get("a.example.com", "/x")).await?), "alpha");
    assert_eq!(
        served_by(&h.get(port, &Request::get("b.example.com:8080", "/x")).await?),
        "beta",
        "a port in Host still matches"
    );
    assert_eq!(h.get(port, &Request::get("c.example.com", "/")).await?.status, 404);
    h.assert_no_nacks().await
}

#[tokio::test]
async fn host_routing_sotw() -> anyhow::Result<()> {
    host_routing(false).await
}

#[tokio::test]
async fn host_routing_delta() -> anyhow::Result<()> {
    host_routing(true).await
}

#[tokio::test]
async fn path_header_query_and_method_matches() -> anyhow::Result<()> {
    let b = backends(&["prefix", "exact", "regex", "header", "query", "method"]).await?;
    let port = testkit::free_port();
    let rules = r#"  rules:
  - matches: [{path: {type: PathPrefix, value: /api}}]
    backendRefs: [{name: prefix, port: 80}]
  - matches: [{path: {type: Exact, value: /api/exact}}]
    backendRefs: [{name: exact, port: 80}]
  - matches: [{path: {type: RegularExpression, value: "/items/[0-9]+"}}]
    backendRefs: [{name: regex, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /api}, headers: [{name: X-Version, value: "2"}]}]
    backendRefs: [{name: header, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /api}, queryParams: [{name: debug, value: "on"}]}]
    backendRefs: [{name: query, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /api}, method: POST}]
    backendRefs: [{name: method, port: 80}]"#;
    let mut yaml = gateway(&http_listener("http", port));
    for backend in &b {
        yaml += &service(&backend.name, &[backend.addr]);
    }
    yaml += &http_route("matches", rules);
    let h = Harness::start(&yaml, false).await?;
    h.until(port, &Request::get("any.example.com", "/api"), |r| r.status == 200).await?;
    let cases = [
        (Request::get("h", "/api/things"), "prefix"),
        (Request::get("h", "/api"), "prefix"),
        (Request::get("h", "/api/exact"), "exact"),
        (Request::get("h", "/items/42"), "regex"),
        (Request::get("h", "/api/x").header("x-version", "2"), "header"),
        (Request::get("h", "/api/x?debug=on"), "query"),
        (Request { method: "POST".into(), ..Request::get("h", "/api/x") }, "method"),
    ];
    for (req, want) in cases {
        assert_eq!(served_by(&h.get(port, &req).await?), want, "{req:?}");
    }
    assert_eq!(h.get(port, &Request::get("h", "/apis")).await?.status, 404, "prefix matches whole segments");
    assert_eq!(h.get(port, &Request::get("h", "/items/x")).await?.status, 404);
    h.assert_no_nacks().await
}

#[tokio::test]
async fn weighted_backends_split_traffic() -> anyhow::Result<()> {
    let b = backends(&["heavy", "light"]).await?;
    let port = testkit::free_port();
    let yaml = [
        gateway(&http_listener("http", port)),
        service("heavy", &[b[0].addr]),
        service("light", &[b[1].addr]),
        http_route(
            "split",
            "  rules: [{backendRefs: [{name: heavy, port: 80, weight: 80}, {name: light, port: 80, weight: 20}]}]",
        ),
    ]
    .concat();
    let h = Harness::start(&yaml, false).await?;
    h.until(port, &Request::get("w", "/"), |r| r.status == 200).await?;
    let mut heavy = 0;
    for _ in 0..1000 {
        let r = h.get(port, &Request::get("w", "/")).await?;
        assert_eq!(r.status, 200);
        heavy += usize::from(served_by(&r) == "heavy");
    }
    let share = heavy as f64 / 10.0;
    assert!((75.0..=85.0).contains(&share), "heavy got {share}% of 1000 requests, want 80 ± 5");
    h.assert_no_nacks().await
}

#[tokio::test]
async fn header_modifiers_redirects_and_rewrites() -> anyhow::Result<()> {
    let b = backends(&["web"]).await?;
    let port = testkit::free_port();
    let rules = r#"  rules:
  - matches: [{path: {type: PathPrefix, value: /headers}}]
    filters:
    - type: RequestHeaderModifier
      requestHeaderModifier: {set: [{name: x-set, value: forced}], add: [{name: x-added, value: "yes"}], remove: [x-drop]}
    - type: ResponseHeaderModifier
      responseHeaderModifier: {set: [{name: x-response, value: set-by-route}], remove: [x-backend]}
    backendRefs: [{name: web, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /old}}]
    filters: [{type: RequestRedirect, requestRedirect: {scheme: https, hostname: new.example.com, statusCode: 301, path: {type: ReplacePrefixMatch, replacePrefixMatch: /new}}}]
  - matches: [{path: {type: PathPrefix, value: /prefix}}]
    filters: [{type: URLRewrite, urlRewrite: {hostname: rewritten.example.com, path: {type: ReplacePrefixMatch, replacePrefixMatch: /}}}]
    backendRefs: [{name: web, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /full}}]
    filters: [{type: URLRewrite, urlRewrite: {path: {type: ReplaceFullPath, replaceFullPath: /replaced}}}]
    backendRefs: [{name: web, port: 80}]"#;
    let yaml =
        [gateway(&http_listener("http", port)), service("web", &[b[0].addr]), http_route("filters", rules)].concat();
    let h = Harness::start(&yaml, false).await?;
    h.until(port, &Request::get("f", "/headers"), |r| r.status == 200).await?;

    let r = h.get(port, &Request::get("f", "/headers").header("x-set", "original").header("x-drop", "bye")).await?;
    let seen = &r.echo()["headers"];
    assert_eq!(seen["x-set"], "forced");
    assert_eq!(seen["x-added"], "yes");
    assert!(seen.get("x-drop").is_none());
    assert_eq!(r.header("x-response"), Some("set-by-route"));
    assert_eq!(r.header("x-backend"), None);

    let r = h.get(port, &Request::get("f", "/old/page?q=1")).await?;
    assert_eq!(r.status, 301);
    assert_eq!(r.header("location"), Some("https://new.example.com/new/page?q=1"));
    let r = h.get(port, &Request::get("f:8080", "/old")).await?;
    assert_eq!(r.header("location"), Some("https://new.example.com/new"), "the request's own port is not kept");

    let r = h.get(port, &Request::get("f", "/prefix/a/b")).await?;
    assert_eq!((r.echo()["path"].as_str(), r.echo()["host"].as_str()), (Some("/a/b"), Some("rewritten.example.com")));
    let r = h.get(port, &Request::get("f", "/full/anything?x=1")).await?;
    assert_eq!(r.echo()["path"], "/replaced?x=1");
    h.assert_no_nacks().await
}
