//! HTTPProxy through Envoy in standalone mode: delegation, placeholders for what cannot be
//! served, TLS with the HTTP→HTTPS redirect, policies proven by the answers.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use testkit::{Backend, Ca, Request};

use crate::harness::{Harness, envoy_service_with_address, service};
use crate::tls::tls_secret;

fn proxy(name: &str, spec: &str) -> String {
    format!(
        "---\napiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {{name: {name}, namespace: default}}\nspec:\n{spec}\n"
    )
}

fn served_by(r: &testkit::Response) -> &str {
    r.header("x-backend").unwrap_or("-")
}

#[tokio::test]
async fn delegation_conditions_and_placeholders() -> anyhow::Result<()> {
    let (web, blog, canary) =
        (Backend::start("web").await?, Backend::start("blog").await?, Backend::start("canary").await?);
    let (http, https) = (testkit::free_port(), testkit::free_port());
    let yaml = [
        service("web", &[web.addr]),
        service("blog", &[blog.addr]),
        service("canary", &[canary.addr]),
        proxy(
            "root",
            r#"  virtualhost: {fqdn: www.example.com}
  includes:
  - {name: blog, conditions: [{prefix: /blog}]}
  - {name: missing, conditions: [{prefix: /missing}]}
  routes:
  - conditions: [{prefix: /}, {header: {name: X-Env, exact: canary}}]
    services: [{name: canary, port: 80}]
  - conditions: [{prefix: /}]
    requestHeadersPolicy: {set: [{name: X-Namespace, value: "%CONTOUR_NAMESPACE%"}], remove: [X-Secret]}
    responseHeadersPolicy: {set: [{name: X-Served-By, value: contour}]}
    services:
    - {name: web, port: 80, requestHeadersPolicy: {set: [{name: X-Service, value: "%CONTOUR_SERVICE_NAME%:%CONTOUR_SERVICE_PORT%"}]}}
  - conditions: [{prefix: /gone}]
    services: [{name: nowhere, port: 80}]"#,
        ),
        proxy("blog", "  routes:\n  - conditions: [{prefix: /posts}]\n    services: [{name: blog, port: 80}]"),
        proxy("wild", "  virtualhost: {fqdn: '*.wild.test'}\n  routes: [{services: [{name: web, port: 80}]}]"),
        // A broken root: its host serves nothing, nobody else notices.
        proxy("broken", "  virtualhost: {fqdn: broken.test}\n  routes: [{conditions: [{prefix: nope}], services: [{name: web, port: 80}]}]"),
    ]
    .concat();
    let h = Harness::start_default_fleet(&yaml, http, https).await?;
    h.until(http, &Request::get("www.example.com", "/"), |r| r.status == 200).await?;

    let r = h.get(http, &Request::get("www.example.com", "/blog/posts/1")).await?;
    assert_eq!((r.status, served_by(&r), r.echo()["path"].as_str()), (200, "blog", Some("/blog/posts/1")));
    assert_eq!(h.get(http, &Request::get("www.example.com", "/blog/other")).await?.status, 200, "falls to / of root");
    assert_eq!(served_by(&h.get(http, &Request::get("www.example.com", "/blog/other")).await?), "web");
    assert_eq!(h.get(http, &Request::get("www.example.com", "/missing/x")).await?.status, 502, "missing include");
    assert_eq!(h.get(http, &Request::get("www.example.com", "/gone")).await?.status, 503, "no service");
    assert_eq!(
        served_by(&h.get(http, &Request::get("www.example.com", "/").header("X-Env", "canary")).await?),
        "canary"
    );

    let r = h.get(http, &Request::get("www.example.com", "/").header("X-Secret", "s3cr3t")).await?;
    let headers = &r.echo()["headers"];
    assert_eq!(headers["x-namespace"], "default");
    assert_eq!(headers["x-service"], "web:80");
    assert!(headers.get("x-secret").is_none(), "removed before forwarding: {headers}");
    assert_eq!(r.header("x-served-by"), Some("contour"));

    assert_eq!(served_by(&h.get(http, &Request::get("a.wild.test", "/")).await?), "web");
    assert_eq!(h.get(http, &Request::get("a.b.wild.test", "/")).await?.status, 404, "one label only");
    assert_eq!(h.get(http, &Request::get("broken.test", "/")).await?.status, 404);
    h.assert_no_nacks().await
}

#[tokio::test]
async fn tls_virtual_host_redirects_plain_http() -> anyhow::Result<()> {
    let ca = Ca::new()?;
    let web = Backend::start("web").await?;
    let (http, https) = (testkit::free_port(), testkit::free_port());
    let yaml = [
        service("web", &[web.addr]),
        tls_secret("cert", &ca.issue(&["secure.test"])?),
        proxy(
            "secure",
            "  virtualhost: {fqdn: secure.test, tls: {secretName: cert}}
  routes:
  - services: [{name: web, port: 80}]
  - conditions: [{prefix: /.well-known}]
    permitInsecure: true
    services: [{name: web, port: 80}]",
        ),
    ]
    .concat();
    let h = Harness::start_default_fleet(&yaml, http, https).await?;
    let r = h.until(http, &Request::get("secure.test", "/app?x=1"), |r| r.status == 301).await?;
    assert_eq!(r.header("location"), Some("https://secure.test/app?x=1"));
    assert_eq!(h.get(http, &Request::get("secure.test", "/.well-known/acme")).await?.status, 200, "permitInsecure");

    let answer = h.until_tls(https, "secure.test", &ca.pem(), None, &Request::get("secure.test", "/app")).await?;
    assert_eq!((answer.status, served_by(&answer)), (200, "web"));
    h.assert_no_nacks().await
}

#[tokio::test]
async fn route_policies_show_in_the_answers() -> anyhow::Result<()> {
    let web = Backend::start("web").await?;
    let flaky = Backend::start_flaky("flaky", 1).await?;
    // Two endpoints of one Service share a port: one on 127.0.0.3, one on 127.0.0.1.
    let right = Backend::start_on(SocketAddr::from(([127, 0, 0, 3], 0)), "right").await?;
    let left = Backend::start_on(SocketAddr::from(([127, 0, 0, 1], right.addr.port())), "left").await?;
    let (http, https) = (testkit::free_port(), testkit::free_port());
    let yaml = [
        service("web", &[web.addr]),
        service("flaky", &[flaky.addr]),
        service("pair", &[left.addr, right.addr]),
        proxy(
            "policies",
            r#"  virtualhost: {fqdn: policy.test}
  routes:
  - conditions: [{prefix: /old}]
    requestRedirectPolicy: {hostname: new.test, statusCode: 301, prefix: /new}
  - conditions: [{exact: /teapot}]
    directResponsePolicy: {statusCode: 418, body: "short and stout"}
  - conditions: [{prefix: /api}]
    pathRewritePolicy: {replacePrefix: [{replacement: /v2}]}
    services: [{name: web, port: 80}]
  - conditions: [{prefix: /slow}]
    timeoutPolicy: {response: 300ms}
    services: [{name: web, port: 80}]
  - conditions: [{prefix: /retry}]
    retryPolicy: {count: 2, retryOn: [5xx]}
    services: [{name: flaky, port: 80}]
  - conditions: [{prefix: /follow}]
    internalRedirectPolicy: {maxInternalRedirects: 1, redirectResponseCodes: [302]}
    services: [{name: web, port: 80}]
  - conditions: [{prefix: /hashed}]
    loadBalancerPolicy: {strategy: RequestHash, requestHashPolicies: [{headerHashOptions: {headerName: x-user}}]}
    services: [{name: pair, port: 80}]"#,
        ),
    ]
    .concat();
    let h = Harness::start_default_fleet(&yaml, http, https).await?;
    let r = h.until(http, &Request::get("policy.test", "/old/page"), |r| r.status == 301).await?;
    assert_eq!(r.header("location"), Some("http://new.test/new/page"));
    let r = h.get(http, &Request::get("policy.test", "/teapot")).await?;
    assert_eq!((r.status, r.body.as_str()), (418, "short and stout"));
    for (path, seen) in [("/api/users", "/v2/users"), ("/api", "/v2")] {
        let r = h.get(http, &Request::get("policy.test", path)).await?;
        assert_eq!(r.echo()["path"].as_str(), Some(seen), "{path}");
    }
    let started = Instant::now();
    let r = h.get(http, &Request::get("policy.test", "/slow").header("x-echo-delay-ms", "3000")).await?;
    assert_eq!(r.status, 504, "the response timeout fired");
    assert!(started.elapsed() < Duration::from_millis(2500), "{:?}", started.elapsed());
    assert_eq!(h.get(http, &Request::get("policy.test", "/slow")).await?.status, 200);
    // The flaky backend fails its first request; the retry gets the answer.
    let r = h.get(http, &Request::get("policy.test", "/retry")).await?;
    assert_eq!((r.status, served_by(&r)), (200, "flaky"));
    // The backend redirects /follow to /follow/there (absolute, as Envoy needs); Envoy follows it.
    let r = h
        .get(
            http,
            &Request::get("policy.test", "/follow")
                .header("x-echo-redirect", "/follow=http://policy.test/follow/there"),
        )
        .await?;
    assert_eq!((r.status, r.echo()["path"].as_str()), (200, Some("/follow/there")), "{r:?}");
    // One user always reaches the same endpoint of the pair (round robin would alternate).
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..10 {
        let r = h.get(http, &Request::get("policy.test", "/hashed").header("x-user", "alice")).await?;
        seen.insert(served_by(&r).to_string());
    }
    assert_eq!(seen.len(), 1, "{seen:?}");
    h.assert_no_nacks().await
}

#[tokio::test]
async fn status_through_the_api_server() -> anyhow::Result<()> {
    use serde_json::json;
    use testkit::{ApiServer, NetnsBackend, apply_yaml};

    let api = ApiServer::start().await?;
    crate::harness::install_contour_crds(&api).await?;
    let client = api.client().await?;
    let web = NetnsBackend::start("web").await?;
    let (http, https) = (testkit::free_port(), testkit::free_port());
    let root = |includes: &str| {
        proxy(
            "root",
            &format!(
                "  virtualhost: {{fqdn: www.example.com}}\n  includes:\n{includes}  routes: [{{services: [{{name: web, port: 80}}]}}]"
            ),
        )
    };
    let child = "  - {name: child, conditions: [{prefix: /child}]}\n";
    let missing = "  - {name: missing, conditions: [{prefix: /missing}]}\n";
    let yaml = [
        service("web", &[web.addr]),
        root(&format!("{child}{missing}")),
        proxy("child", "  routes: [{services: [{name: web, port: 80}]}]"),
        proxy("orphan", "  routes: [{services: [{name: web, port: 80}]}]"),
    ]
    .concat();
    apply_yaml(&client, &yaml).await?;
    envoy_service_with_address(&client, "192.0.2.7").await?;
    let h = Harness::start_kubernetes_default_fleet(client.clone(), http, https).await?;
    h.until(http, &Request::get("www.example.com", "/child/x"), |r| r.status == 200).await?;
    assert_eq!(h.get(http, &Request::get("www.example.com", "/missing")).await?.status, 502);

    let until = |name, check| proxy_status_until(&client, name, check);
    let root_status = until("root", |s| s["currentStatus"] == "invalid").await?;
    let valid = &root_status["conditions"][0];
    assert_eq!(
        (&valid["type"], &valid["status"], &valid["reason"]),
        (&json!("Valid"), &json!("False"), &json!("ErrorPresent"))
    );
    assert_eq!(valid["errors"][0]["reason"], "IncludeNotFound", "{root_status:#}");
    assert_eq!(valid["errors"][0]["message"], "include default/missing not found");
    assert_eq!(valid["observedGeneration"], 1);
    assert_eq!(root_status["description"], "At least one error present, see Errors for details");
    let lb = until("root", |s| s["loadBalancer"]["ingress"][0]["ip"] == "192.0.2.7").await?;
    assert_eq!(lb["currentStatus"], "invalid");
    let child_status = until("child", |s| s["currentStatus"] == "valid").await?;
    assert_eq!(child_status["description"], "Valid HTTPProxy");
    let orphan = until("orphan", |s| s["currentStatus"] == "orphaned").await?;
    assert_eq!(orphan["description"], "this HTTPProxy is not part of a delegation chain from a root HTTPProxy");
    assert_eq!(orphan["conditions"][0]["errors"][0]["type"], "Orphaned");

    // Fixed through the API: valid again, at the new generation.
    apply_yaml(&client, &root(child)).await?;
    let fixed = until("root", |s| s["currentStatus"] == "valid").await?;
    assert_eq!(fixed["conditions"][0]["observedGeneration"], 2);
    assert!(fixed["conditions"][0].get("errors").is_none(), "{fixed:#}");
    h.until(http, &Request::get("www.example.com", "/missing"), |r| r.status == 200).await?;
    h.assert_no_nacks().await?;

    // Envoy rejects the default fleet's routes: the proxies say so with Envoy's words, and the
    // error clears once a new build is accepted.
    let name = format!("http-{http}");
    h.server.inject_for_test(ir::DEFAULT_FLEET, xds::ResourceType::Route, crate::harness::rejected_route_config(&name));
    let rejected = until("root", |s| s["currentStatus"] == "invalid").await?;
    let error = &rejected["conditions"][0]["errors"][0];
    assert_eq!((&error["type"], &error["reason"]), (&json!("EnvoyError"), &json!("ConfigurationRejected")));
    assert!(error["message"].as_str().unwrap_or_default().contains("missing )"), "{error}");
    apply_yaml(
        &client,
        &proxy("child", "  routes: [{services: [{name: web, port: 80}], timeoutPolicy: {response: 5s}}]"),
    )
    .await?;
    until("root", |s| s["currentStatus"] == "valid").await?;

    // Deleted and created again under the same name: another object, whose status is written
    // although it is the same as the first one's was.
    let orphan = proxy("orphan", "  routes: [{services: [{name: web, port: 80}]}]");
    testkit::delete_yaml(&client, &orphan).await?;
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    apply_yaml(&client, &orphan).await?;
    until("orphan", |s| s["currentStatus"] == "orphaned").await?;
    Ok(())
}

/// The status of HTTPProxy `default/name` once `check` holds.
async fn proxy_status_until(
    client: &kube::Client,
    name: &str,
    check: fn(&serde_json::Value) -> bool,
) -> anyhow::Result<serde_json::Value> {
    crate::kubernetes::status_of_until(client, "projectcontour.io/v1", "HTTPProxy", name, check).await
}

/// The status writer's counters for HTTPProxies: (written, found unchanged, objects read).
fn proxy_writes(h: &Harness) -> (u64, u64, u64) {
    let c = h.status.as_ref().expect("a status writer");
    let i = status::KINDS.iter().position(|k| *k == "HTTPProxy").expect("a kind of the writer");
    let load = |n: &std::sync::atomic::AtomicU64| n.load(std::sync::atomic::Ordering::Relaxed);
    (load(&c.success[i]), load(&c.noop[i]), load(&c.reads[i]))
}

#[tokio::test]
async fn status_is_written_without_reading_what_the_watch_has_seen() -> anyhow::Result<()> {
    use testkit::{ApiServer, NetnsBackend, apply_yaml};

    let api = ApiServer::start().await?;
    crate::harness::install_contour_crds(&api).await?;
    let client = api.client().await?;
    let web = NetnsBackend::start("web").await?;
    let routes = "  routes: [{services: [{name: web, port: 80}]}]";
    let yaml = [
        service("web", &[web.addr]),
        proxy("root", &format!("  virtualhost: {{fqdn: www.example.com}}\n{routes}")),
        proxy("a", routes),
        proxy("b", routes),
    ]
    .concat();
    apply_yaml(&client, &yaml).await?;
    let until = |name, check| proxy_status_until(&client, name, check);

    // Fresh objects: each status is written once, with the resourceVersion the watch saw.
    let (http, https) = (testkit::free_port(), testkit::free_port());
    let h = Harness::start_kubernetes_default_fleet(client.clone(), http, https).await?;
    h.until(http, &Request::get("www.example.com", "/"), |r| r.status == 200).await?;
    until("root", |s| s["currentStatus"] == "valid").await?;
    until("a", |s| s["currentStatus"] == "orphaned").await?;
    until("b", |s| s["currentStatus"] == "orphaned").await?;
    let (written, _, read) = proxy_writes(&h);
    assert_eq!((written, read), (3, 0), "three statuses written, no object read");
    drop(h);

    // Another controller over the same objects: every status already says it, so nothing is
    // read or written.
    let (http, https) = (testkit::free_port(), testkit::free_port());
    let h = Harness::start_kubernetes_default_fleet(client.clone(), http, https).await?;
    h.until(http, &Request::get("www.example.com", "/"), |r| r.status == 200).await?;
    let checked = Instant::now();
    while proxy_writes(&h).1 < 3 && checked.elapsed() < Duration::from_secs(20) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(proxy_writes(&h), (0, 3, 0), "(written, unchanged, read) after a restart");

    // A status that changes is read first (it holds a condition whose transition time is kept).
    apply_yaml(&client, &proxy("b", &format!("  virtualhost: {{fqdn: b.example.com}}\n{routes}"))).await?;
    until("b", |s| s["currentStatus"] == "valid").await?;
    let (written, _, read) = proxy_writes(&h);
    assert_eq!((written, read), (1, 1), "one status read and written");
    h.assert_no_nacks().await
}

/// A Secret holding a CA bundle (`ca.crt`).
fn ca_secret(name: &str, pem: &str) -> String {
    let indented: String = pem.lines().map(|l| format!("    {l}\n")).collect();
    format!(
        "---\napiVersion: v1\nkind: Secret\nmetadata: {{name: {name}, namespace: default}}\ntype: Opaque\nstringData:\n  ca.crt: |\n{indented}"
    )
}

#[tokio::test]
async fn client_certificates_and_upstream_tls_are_verified() -> anyhow::Result<()> {
    let ca = Ca::new()?;
    let web = Backend::start("web").await?;
    let secure = Backend::start_tls("secure", &ca.issue(&["backend.internal"])?).await?;
    let (http, https) = (testkit::free_port(), testkit::free_port());
    let yaml = [
        service("web", &[web.addr]),
        service("secure", &[secure.addr]),
        tls_secret("cert", &ca.issue(&["mtls.test", "up.test"])?),
        ca_secret("ca", &ca.pem()),
        proxy(
            "mtls",
            "  virtualhost:
    fqdn: mtls.test
    tls: {secretName: cert, clientValidation: {caSecret: ca, forwardClientCertificate: {subject: true}}}
  routes: [{services: [{name: web, port: 80}]}]",
        ),
        proxy(
            "upstream",
            "  virtualhost: {fqdn: up.test}
  routes:
  - services: [{name: secure, port: 80, protocol: tls, validation: {caSecret: ca, subjectName: backend.internal}}]
  - conditions: [{prefix: /wrong-name}]
    services: [{name: secure, port: 80, protocol: tls, validation: {caSecret: ca, subjectName: other.internal}}]
  - conditions: [{prefix: /host}]
    services:
    - name: secure
      port: 80
      protocol: tls
      validation: {caSecret: ca, subjectName: backend.internal}
      requestHeadersPolicy: {set: [{name: Host, value: backend.internal}]}",
        ),
    ]
    .concat();
    let h = Harness::start_default_fleet(&yaml, http, https).await?;

    // Upstream TLS: the backend's certificate is checked against the CA and the subject name.
    let r = h.until(http, &Request::get("up.test", "/"), |r| r.status == 200).await?;
    assert_eq!(served_by(&r), "secure");
    assert_eq!(h.get(http, &Request::get("up.test", "/wrong-name")).await?.status, 503, "name mismatch refused");
    let r = h.get(http, &Request::get("up.test", "/host")).await?;
    assert_eq!((r.status, r.echo()["host"].as_str()), (200, Some("backend.internal")), "the service's Host");

    let addr = SocketAddr::from(([127, 0, 0, 1], https));
    let client = ca.issue(&["client.example"])?;
    let req = Request::get("mtls.test", "/");
    let answer = h.until_tls(https, "mtls.test", &ca.pem(), Some(&client), &req).await?;
    assert_eq!(answer.status, 200);
    let xfcc = answer.echo()["headers"]["x-forwarded-client-cert"].as_str().unwrap_or_default().to_string();
    assert!(xfcc.contains("Subject=\"CN=client.example\""), "{xfcc}");
    // A client without a certificate gets no answer; one from another CA neither.
    assert!(testkit::request_tls(addr, "mtls.test", &ca.pem(), &req).await.is_err());
    let stranger = Ca::new()?.issue(&["client.example"])?;
    assert!(testkit::request_mtls(addr, "mtls.test", &ca.pem(), &stranger, &req).await.is_err());
    h.assert_no_nacks().await
}

#[tokio::test]
async fn websockets_affinity_mirrors_and_health_checks() -> anyhow::Result<()> {
    let web = Backend::start("web").await?;
    let shadow = Backend::start("shadow").await?;
    // Two endpoints of one Service (one port, two addresses); the sick one fails every request.
    let pool = Backend::start_pool(&["healthy", "sick"], &[0, usize::MAX]).await?;
    let [healthy, sick] = &pool[..] else { anyhow::bail!("two backends") };
    let (http, https) = (testkit::free_port(), testkit::free_port());
    // Envoy must accept circuit breakers and slow start too (every test ends checking NACKs).
    let limited = service("web", &[web.addr]).replace(
        "metadata: {name: web, namespace: default}",
        "metadata: {name: web, namespace: default, annotations: {projectcontour.io/max-connections: '100'}}",
    );
    let yaml = [
        limited,
        service("shadow", &[shadow.addr]),
        service("pool", &[healthy.addr, sick.addr]),
        proxy(
            "policies",
            "  virtualhost: {fqdn: p.test}
  routes:
  - conditions: [{prefix: /ws}]
    enableWebsockets: true
    services: [{name: web, port: 80}]
  - conditions: [{prefix: /sticky}]
    loadBalancerPolicy: {strategy: Cookie}
    services: [{name: web, port: 80}]
  - conditions: [{prefix: /mirrored}]
    services: [{name: web, port: 80, slowStartPolicy: {window: 1s}}, {name: shadow, port: 80, mirror: true}]
  - conditions: [{prefix: /pool}]
    healthCheckPolicy: {path: /healthz, intervalSeconds: 1, timeoutSeconds: 1, unhealthyThresholdCount: 1, healthyThresholdCount: 1}
    services: [{name: pool, port: 80}]
  - services: [{name: web, port: 80}]",
        ),
    ]
    .concat();
    let h = Harness::start_default_fleet(&yaml, http, https).await?;
    h.until(http, &Request::get("p.test", "/"), |r| r.status == 200).await?;

    let upgrade =
        |path: &str| Request::get("p.test", path).header("connection", "upgrade").header("upgrade", "websocket");
    // Envoy forwards the upgrade only where websockets are enabled; elsewhere it refuses it.
    let r = h.get(http, &upgrade("/ws")).await?;
    assert_eq!((r.status, served_by(&r)), (200, "web"), "the upgrade reaches the backend: {r:?}");
    let r = h.get(http, &upgrade("/other")).await?;
    assert_eq!((r.status, served_by(&r)), (403, "-"), "no websockets where not enabled: {r:?}");

    let r = h.get(http, &Request::get("p.test", "/sticky")).await?;
    let cookie = r.header("set-cookie").unwrap_or_default();
    assert!(cookie.starts_with("X-Contour-Session-Affinity="), "{cookie}");

    for _ in 0..3 {
        assert_eq!(served_by(&h.get(http, &Request::get("p.test", "/mirrored")).await?), "web");
    }
    let mirrored = testkit::eventually(Duration::from_secs(5), || async {
        (shadow.hits.load(std::sync::atomic::Ordering::SeqCst) >= 3).then_some(())
    })
    .await;
    assert!(mirrored.is_some(), "the mirror saw {} requests", shadow.hits.load(std::sync::atomic::Ordering::SeqCst));

    // Once the failing endpoint fails its health check, every request goes to the healthy one.
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut streak = 0;
    while streak < 10 {
        anyhow::ensure!(Instant::now() < deadline, "the unhealthy endpoint kept getting traffic");
        let r = h.get(http, &Request::get("p.test", "/pool")).await?;
        streak = if r.status == 200 && served_by(&r) == "healthy" { streak + 1 } else { 0 };
        if streak == 0 {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    assert!(sick.hits.load(std::sync::atomic::Ordering::SeqCst) > 0, "the sick endpoint was never in the pool");
    h.assert_no_nacks().await
}

#[tokio::test]
async fn tcp_proxies_pass_through_and_terminate() -> anyhow::Result<()> {
    let ca = Ca::new()?;
    let inner = Backend::start_tls("inner", &ca.issue(&["pass.test"])?).await?;
    let plain = Backend::start("plain").await?;
    let (http, https) = (testkit::free_port(), testkit::free_port());
    let yaml = [
        service("inner", &[inner.addr]),
        service("plain", &[plain.addr]),
        tls_secret("cert", &ca.issue(&["term.test", "again.test"])?),
        ca_secret("ca", &ca.pem()),
        // Terminated, then encrypted again towards a backend whose certificate is checked.
        proxy(
            "again",
            "  virtualhost: {fqdn: again.test, tls: {secretName: cert}}\n  tcpproxy: {services: [{name: inner, port: 80, protocol: tls, validation: {caSecret: ca, subjectName: pass.test}}]}",
        ),
        // One of the pool's two endpoints refuses connections: the TCP health check takes it out.
        service("pool", &[inner.addr, SocketAddr::from(([127, 0, 0, 2], inner.addr.port()))]),
        proxy(
            "pass",
            "  virtualhost: {fqdn: pass.test, tls: {passthrough: true}}
  tcpproxy:
    loadBalancerPolicy: {strategy: Random}
    healthCheckPolicy: {intervalSeconds: 1, timeoutSeconds: 1, unhealthyThresholdCount: 1, healthyThresholdCount: 1}
    services: [{name: pool, port: 80}]",
        ),
        proxy(
            "term",
            "  virtualhost: {fqdn: term.test, tls: {secretName: cert}}\n  tcpproxy: {include: {name: tcp-child}}",
        ),
        proxy("tcp-child", "  tcpproxy: {services: [{name: plain, port: 80}]}"),
    ]
    .concat();
    let h = Harness::start_default_fleet(&yaml, http, https).await?;
    for (host, backend) in [("pass.test", "inner"), ("term.test", "plain"), ("again.test", "inner")] {
        let answer = h.until_tls(https, host, &ca.pem(), None, &Request::get(host, "/")).await?;
        assert_eq!((answer.status, served_by(&answer)), (200, backend), "{host}");
    }
    // Once the dead endpoint failed its check, every connection reaches the live one.
    let addr = SocketAddr::from(([127, 0, 0, 1], https));
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut streak = 0;
    // 20 in a row: by chance (one in two endpoints dead) about one in a million.
    while streak < 20 {
        anyhow::ensure!(Instant::now() < deadline, "connections kept reaching the dead endpoint");
        let ok = testkit::request_tls(addr, "pass.test", &ca.pem(), &Request::get("pass.test", "/")).await.is_ok();
        streak = if ok { streak + 1 } else { 0 };
        if !ok {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    h.assert_no_nacks().await
}

#[tokio::test]
async fn health_checks_go_to_the_health_port() -> anyhow::Result<()> {
    let (alpha, beta) = (Backend::start("alpha").await?, Backend::start("beta").await?);
    let sick = Backend::start_flaky("sick", usize::MAX).await?;
    let (http, https) = (testkit::free_port(), testkit::free_port());
    // Two slices of one Service: alpha's health port is served by the sick backend, beta checks
    // itself. Only health checks on the health port can tell them apart.
    let yaml = health_checked_pool(&[
        ("pool-a", alpha.addr.port(), sick.addr.port()),
        ("pool-b", beta.addr.port(), beta.addr.port()),
    ]);
    let h = Harness::start_default_fleet(&yaml, http, https).await?;
    h.until(http, &Request::get("hc.test", "/"), |r| r.status == 200).await?;
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut streak = 0;
    while streak < 10 {
        anyhow::ensure!(Instant::now() < deadline, "alpha kept getting traffic though its health port fails");
        let r = h.get(http, &Request::get("hc.test", "/")).await?;
        streak = if served_by(&r) == "beta" { streak + 1 } else { 0 };
        if streak == 0 {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    assert!(sick.hits.load(std::sync::atomic::Ordering::SeqCst) > 0, "health checks reached the health port");
    h.assert_no_nacks().await
}

/// When every endpoint fails its health checks the route answers 503, as upstream's clusters do
/// (no panic mode that would send traffic to the failing endpoints anyway).
#[tokio::test]
async fn a_route_whose_only_endpoint_fails_its_health_check_answers_503() -> anyhow::Result<()> {
    let alpha = Backend::start("alpha").await?;
    let sick = Backend::start_flaky("sick", usize::MAX).await?;
    let (http, https) = (testkit::free_port(), testkit::free_port());
    let yaml = health_checked_pool(&[("pool-a", alpha.addr.port(), sick.addr.port())]);
    let h = Harness::start_default_fleet(&yaml, http, https).await?;
    h.until(http, &Request::get("hc.test", "/"), |r| r.status == 503).await?;
    h.assert_no_nacks().await
}

/// Service `pool` (traffic port 80, health port 81) with one EndpointSlice per `(name, traffic
/// port, health port)` on loopback, behind an HTTPProxy for `hc.test` whose route health-checks
/// `/healthz` on the health port every second.
fn health_checked_pool(slices: &[(&str, u16, u16)]) -> String {
    let mut yaml = "---\napiVersion: v1\nkind: Service\nmetadata: {name: pool, namespace: default}\nspec: {ports: [{name: http, port: 80}, {name: health, port: 81}]}\n".to_string();
    for (name, traffic, health) in slices {
        yaml.push_str(&format!(
            "---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {{name: {name}, namespace: default, labels: {{kubernetes.io/service-name: pool}}}}\naddressType: IPv4\nports: [{{name: http, port: {traffic}}}, {{name: health, port: {health}}}]\nendpoints: [{{addresses: [127.0.0.1]}}]\n"
        ));
    }
    yaml.push_str(&proxy(
        "checked",
        "  virtualhost: {fqdn: hc.test}
  routes:
  - healthCheckPolicy: {path: /healthz, intervalSeconds: 1, timeoutSeconds: 1, unhealthyThresholdCount: 1, healthyThresholdCount: 1}
    services: [{name: pool, port: 80, healthPort: 81}]",
    ));
    yaml
}

/// ContourConfiguration `envoy.enableStatPrefix`: each HTTPProxy route gets Envoy statistics of
/// its own, named as upstream names them, and a missing include's 502 counts under its parent.
#[tokio::test]
async fn routes_get_statistics_of_their_own_with_enable_stat_prefix() -> anyhow::Result<()> {
    let (web, blog) = (Backend::start("web").await?, Backend::start("blog").await?);
    let (http, https) = (testkit::free_port(), testkit::free_port());
    let yaml = [
        service("web", &[web.addr]),
        service("blog", &[blog.addr]),
        proxy(
            "root",
            "  virtualhost: {fqdn: www.example.com}\n  includes:\n  - {name: blog, conditions: [{prefix: /blog}]}\n  - {name: missing, conditions: [{prefix: /missing}]}\n  routes:\n  - services: [{name: web, port: 80}]",
        ),
        proxy("blog", "  routes:\n  - conditions: [{prefix: /posts}]\n    services: [{name: blog, port: 80}]"),
    ]
    .concat();
    let mut options = crate::harness::default_fleet_options(http, https);
    options.httpproxy.enable_stat_prefix = true;
    let h = Harness::start_with(&yaml, ir::DEFAULT_FLEET, options).await?;
    h.until(http, &Request::get("www.example.com", "/"), |r| r.status == 200).await?;
    for _ in 0..2 {
        assert_eq!(h.get(http, &Request::get("www.example.com", "/blog/posts/1")).await?.status, 200);
    }
    assert_eq!(h.get(http, &Request::get("www.example.com", "/missing/x")).await?.status, 502);
    let count = |name: &'static str| {
        let envoy = &h.envoy;
        async move { envoy.counter_sum(&format!(".route.{name}.upstream_rq_total")).await }
    };
    // Envoy counts a request once it has finished.
    let counted = testkit::eventually(Duration::from_secs(10), || async {
        (count("default_httpproxy_blog_path_posts").await.ok()? == 2).then_some(())
    })
    .await;
    let stats = h.envoy.admin_get("/stats?filter=route").await.unwrap_or_default();
    assert!(counted.is_some(), "no statistics for the blog route:\n{stats}");
    assert_eq!(count("default_httpproxy_root_path__").await?, 1, "the root's route without a prefix:\n{stats}");
    assert!(stats.contains(".route.default_root."), "the missing include's 502 route:\n{stats}");
    h.assert_no_nacks().await
}
