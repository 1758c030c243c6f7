//! HTTPProxy fields of contour-rs that upstream Contour does not have, through the real Envoy:
//! passive health checks (`services[].outlierDetection`: of three endpoints, the one that fails
//! is ejected after its failures in a row, traffic goes on to the others, and it comes back once
//! its ejection is over) and regular expression path rewrites (`pathRewritePolicy.replaceRegex`,
//! capture groups included).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use testkit::{Backend, Request};

use crate::harness::{Harness, service};

#[tokio::test]
async fn a_failing_endpoint_is_ejected_and_comes_back() -> anyhow::Result<()> {
    // One Service of three endpoints; the sick one answers its first three requests with 503.
    let pool = Backend::start_pool(&["a", "b", "sick"], &[0, 0, 3]).await?;
    let [a, b, sick] = &pool[..] else { anyhow::bail!("three backends") };
    let (http, https) = (testkit::free_port(), testkit::free_port());
    let yaml = [
        service("pool", &[a.addr, b.addr, sick.addr]),
        "---
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: pool, namespace: default}
spec:
  virtualhost: {fqdn: pool.test}
  routes:
  - services:
    - name: pool
      port: 80
      outlierDetection: {consecutiveServerErrors: 3, interval: 1s, baseEjectionTime: 4s, maxEjectionPercent: 50}
"
        .to_string(),
    ]
    .concat();
    let h = Harness::start_default_fleet(&yaml, http, https).await?;
    let req = Request::get("pool.test", "/");
    h.until(http, &req, |r| r.header("x-backend").is_some()).await?;

    // Until the sick endpoint has failed three times in a row, it gets its share.
    let deadline = Instant::now() + Duration::from_secs(15);
    while sick.hits.load(Ordering::SeqCst) < 3 {
        anyhow::ensure!(
            Instant::now() < deadline,
            "the sick endpoint never got three requests: hits a {} b {} sick {}",
            a.hits.load(Ordering::SeqCst),
            b.hits.load(Ordering::SeqCst),
            sick.hits.load(Ordering::SeqCst)
        );
        h.get(http, &req).await?;
    }
    let ejected_at = Instant::now();
    // Ejected: every request goes to the others, none to it.
    for _ in 0..30 {
        let r = h.get(http, &req).await?;
        assert_eq!(r.status, 200, "{r:?}");
        assert_ne!(r.header("x-backend"), Some("sick"), "an ejected endpoint got traffic");
    }
    let during = ejected_at.elapsed();
    assert!(during < Duration::from_secs(4), "the check outlasted the ejection ({during:?}): it proves nothing");
    assert_eq!(sick.hits.load(Ordering::SeqCst), 3, "requests reached the ejected endpoint");

    // After its ejection time (and the next evaluation), it serves again.
    let back = testkit::eventually(Duration::from_secs(20), || async {
        let r = h.get(http, &req).await.ok()?;
        (r.status == 200 && r.header("x-backend") == Some("sick")).then_some(())
    })
    .await;
    assert!(back.is_some(), "the endpoint never came back after its ejection");
    assert!(ejected_at.elapsed() >= Duration::from_secs(4), "back before its ejection time was over");
    h.assert_no_nacks().await
}

#[tokio::test]
async fn a_regex_rewrite_rearranges_the_path_with_its_groups() -> anyhow::Result<()> {
    let web = Backend::start("web").await?;
    let (http, https) = (testkit::free_port(), testkit::free_port());
    let yaml = [
        service("web", &[web.addr]),
        r#"---
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: rewrite, namespace: default}
spec:
  virtualhost: {fqdn: rewrite.test}
  routes:
  - conditions: [{prefix: /users}]
    pathRewritePolicy:
      replaceRegex: {pattern: '^/users/([0-9]+)/posts/([0-9]+)$', substitution: '/api/posts/\2/by/\1'}
    services: [{name: web, port: 80}]
  - services: [{name: web, port: 80}]
---
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: bad, namespace: default}
spec:
  virtualhost: {fqdn: bad.test}
  routes:
  - pathRewritePolicy:
      replaceRegex: {pattern: '^/bad/(.*)$', substitution: '/\3'}
    services: [{name: web, port: 80}]
"#
        .to_string(),
    ]
    .concat();
    let h = Harness::start_default_fleet(&yaml, http, https).await?;
    let path_seen = |r: &testkit::Response| r.echo()["path"].as_str().unwrap_or_default().to_string();
    let r = h.until(http, &Request::get("rewrite.test", "/users/7/posts/42?page=2"), |r| r.status == 200).await?;
    assert_eq!(path_seen(&r), "/api/posts/42/by/7?page=2", "groups swapped, the query kept: {r:?}");
    // What the pattern does not match is passed on as it is.
    let r = h.get(http, &Request::get("rewrite.test", "/users/7/profile")).await?;
    assert_eq!(path_seen(&r), "/users/7/profile");
    // A substitution naming a group the pattern lacks is refused before Envoy: its HTTPProxy is
    // not served (as upstream serves none of an invalid one), the other one is, and Envoy
    // rejects nothing.
    let r = h.get(http, &Request::get("bad.test", "/bad/x")).await?;
    assert_eq!(r.status, 404, "{r:?}");
    h.assert_no_nacks().await
}

/// HTTP/3 (`tls.http3`): the HTTPS port answers over QUIC too, with the virtual host's own
/// certificate (chosen by SNI) and routes, and HTTP/1.1 answers advertise it with `alt-svc`.
/// A virtual host of the same port without it is neither advertised nor served over QUIC.
#[tokio::test]
async fn http3_is_served_over_quic_and_advertised() -> anyhow::Result<()> {
    let ca = testkit::Ca::new()?;
    let web = Backend::start("web").await?;
    let (http, https) = (testkit::free_port(), testkit::free_port());
    let proxy = |name: &str, http3: &str| {
        format!(
            "---
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {{name: {name}, namespace: default}}
spec:
  virtualhost:
    fqdn: {name}.h3.test
    tls: {{secretName: {name}{http3}}}
  routes:
  - conditions: [{{prefix: /}}]
    services: [{{name: web, port: 80}}]
    responseHeadersPolicy: {{set: [{{name: x-vhost, value: {name}}}]}}
"
        )
    };
    let yaml = [
        service("web", &[web.addr]),
        crate::tls::tls_secret("quic", &ca.issue(&["quic.h3.test"])?),
        crate::tls::tls_secret("tcp", &ca.issue(&["tcp.h3.test"])?),
        proxy("quic", ", http3: true"),
        proxy("tcp", ""),
    ]
    .concat();
    let h = Harness::start_default_fleet(&yaml, http, https).await?;
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], https));

    // Over TCP, the HTTP/3 host's answers advertise the same port for h3; the other's do not.
    let r = h.until_tls(https, "quic.h3.test", &ca.pem(), None, &Request::get("quic.h3.test", "/")).await?;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.header("alt-svc"), Some(format!("h3=\":{https}\"; ma=86400").as_str()));
    let r = h.until_tls(https, "tcp.h3.test", &ca.pem(), None, &Request::get("tcp.h3.test", "/")).await?;
    assert_eq!((r.status, r.header("alt-svc")), (200, None), "{r:?}");

    // Over QUIC: the same routes, the same certificate (the client checks the name against the CA).
    let req = Request::get("quic.h3.test", "/over/quic");
    let last = std::sync::Mutex::new(String::new());
    let r = testkit::eventually(Duration::from_secs(15), || async {
        let r = testkit::request_h3(addr, "quic.h3.test", &ca.pem(), &req).await;
        r.map_err(|e| *last.lock().unwrap() = e.to_string()).ok()
    })
    .await
    .ok_or_else(|| anyhow::anyhow!("no HTTP/3 answer ({}); envoy log:\n{}", last.lock().unwrap(), h.envoy.log()))?;
    assert_eq!((r.status, r.header("alpn")), (200, Some("h3")), "{r:?}");
    assert_eq!(r.header("x-vhost"), Some("quic"));
    assert_eq!(r.echo()["path"].as_str(), Some("/over/quic"), "{r:?}");

    // The host without HTTP/3 has no QUIC chain: the handshake for its name fails.
    let refused = testkit::request_h3(addr, "tcp.h3.test", &ca.pem(), &Request::get("tcp.h3.test", "/")).await;
    assert!(refused.is_err(), "a host without http3 answered over QUIC: {refused:?}");
    h.assert_no_nacks().await
}

/// Custom error pages (`errorPages`): Envoy's own answers (no route, a service without a live
/// endpoint, a timeout) get the virtual host's pages, inline or from a labelled ConfigMap, with
/// their content type and status kept; a backend's own error passes unchanged unless a page
/// asks for `fromBackend`; a route's pages come before its host's.
#[tokio::test]
async fn error_pages_replace_envoys_answers_and_on_request_the_backends() -> anyhow::Result<()> {
    let web = Backend::start("web").await?;
    // Nothing listens there: connections are refused, Envoy answers 503.
    let dead = std::net::SocketAddr::from(([127, 0, 0, 1], testkit::free_port()));
    let (http, https) = (testkit::free_port(), testkit::free_port());
    let yaml = [
        service("web", &[web.addr]),
        service("dead", &[dead]),
        "---
apiVersion: v1
kind: ConfigMap
metadata:
  name: pages
  namespace: default
  labels: {projectcontour.io/error-pages: \"true\"}
data:
  not-found.html: \"<h1>Nothing here</h1>\"
---
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: pages, namespace: default}
spec:
  virtualhost:
    fqdn: pages.test
    errorPages:
    - statusCodes: [404]
      body: {configMap: {name: pages, key: not-found.html}}
      contentType: text/html
    - statusCodeRanges: [{start: 500, end: 599}]
      body: {inline: 'Sorry, try again later (%RESPONSE_CODE% is not expanded)'}
  routes:
  - conditions: [{prefix: /app}]
    services: [{name: web, port: 80}]
    timeoutPolicy: {response: 500ms}
  - conditions: [{prefix: /dead}]
    services: [{name: dead, port: 80}]
  - conditions: [{prefix: /own}]
    services: [{name: web, port: 80}]
    errorPages:
    - statusCodes: [500, 503]
      body: {inline: '{\"error\": \"the route says no\"}'}
      contentType: application/json
      fromBackend: true
"
        .to_string(),
    ]
    .concat();
    let h = Harness::start_default_fleet(&yaml, http, https).await?;
    let get = |path: &str, headers: &[(&str, &str)]| {
        let mut req = Request::get("pages.test", path);
        req.headers = headers.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect();
        req
    };
    h.until(http, &get("/app", &[]), |r| r.status == 200).await?;

    // No route: the host's 404 page, from the ConfigMap, as HTML.
    let r = h.get(http, &get("/nowhere", &[])).await?;
    assert_eq!((r.status, r.body.as_str()), (404, "<h1>Nothing here</h1>"), "{r:?}");
    assert_eq!(r.header("content-type"), Some("text/html"));
    // No live endpoint: Envoy's 503 gets the 5xx page, as text, the status kept.
    let r = h.get(http, &get("/dead", &[])).await?;
    assert_eq!(r.status, 503, "{r:?}");
    assert_eq!(r.body, "Sorry, try again later (%RESPONSE_CODE% is not expanded)");
    assert_eq!(r.header("content-type"), Some("text/plain; charset=utf-8"));
    // A timeout: Envoy's 504 gets it too.
    let r = h.get(http, &get("/app", &[("x-echo-delay-ms", "2000")])).await?;
    assert_eq!((r.status, r.body.as_str()), (504, "Sorry, try again later (%RESPONSE_CODE% is not expanded)"));
    // The backend's own 500 is its own: the host's page does not ask for backends' answers.
    let r = h.get(http, &get("/app", &[("x-echo-status", "500")])).await?;
    assert_eq!(r.status, 500, "{r:?}");
    assert_eq!(r.echo()["path"].as_str(), Some("/app"), "the backend's body came through: {r:?}");
    // A route's page, with fromBackend, replaces the backend's answer, before the host's.
    let r = h.get(http, &get("/own", &[("x-echo-status", "503")])).await?;
    assert_eq!((r.status, r.body.as_str()), (503, "{\"error\": \"the route says no\"}"), "{r:?}");
    assert_eq!(r.header("content-type"), Some("application/json"));
    // Codes no page covers pass unchanged.
    let r = h.get(http, &get("/own", &[("x-echo-status", "418")])).await?;
    assert_eq!(r.status, 418);
    assert_eq!(r.echo()["path"].as_str(), Some("/own"));
    let r = h.get(http, &get("/app", &[])).await?;
    assert_eq!(r.status, 200);
    h.assert_no_nacks().await
}
