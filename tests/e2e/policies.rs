//! HTTPProxy's traffic and access policies through Envoy, judged by what a client sees: CORS
//! answers, IP allow and deny lists, local rate limits, rewritten cookies.

use std::time::Duration;

use serde_json::json;

use testkit::{AuthServer, Backend, Ca, JwksServer, Request, Response, Signer};

use crate::harness::{Harness, default_fleet_options, extension_service, service};
use crate::tls::tls_secret;

fn proxy(name: &str, spec: &str) -> String {
    format!(
        "---\napiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {{name: {name}, namespace: default}}\nspec:\n{spec}\n"
    )
}

/// The default fleet on fresh ports, trusting one X-Forwarded-For hop (as behind a load
/// balancer), with `yaml`; returns the harness and its HTTP port once `ready.test` answers.
async fn start(yaml: &str) -> anyhow::Result<(Harness, u16)> {
    start_tls(yaml).await.map(|(h, http, _)| (h, http))
}

/// [`start`], also returning the HTTPS port.
async fn start_tls(yaml: &str) -> anyhow::Result<(Harness, u16, u16)> {
    let (http, https) = (testkit::free_port(), testkit::free_port());
    let mut options = default_fleet_options(http, https);
    options.compile.listener.xff_num_trusted_hops = 1;
    let h = Harness::start_with(yaml, ir::DEFAULT_FLEET, options).await?;
    h.until(http, &Request::get("ready.test", "/"), |r| r.status == 200).await?;
    Ok((h, http, https))
}

fn ready(web: &Backend) -> String {
    [
        service("web", &[web.addr]),
        proxy("ready", "  virtualhost: {fqdn: ready.test}\n  routes: [{services: [{name: web, port: 80}]}]"),
    ]
    .concat()
}

fn preflight(host: &str, origin: &str, method: &str) -> Request {
    Request { method: "OPTIONS".into(), ..Request::get(host, "/") }
        .header("origin", origin)
        .header("access-control-request-method", method)
}

/// Every value of a response header, in order.
fn all<'a>(r: &'a Response, name: &str) -> Vec<&'a str> {
    r.headers.iter().filter(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str()).collect()
}

#[tokio::test]
async fn cors_preflights_are_answered_for_allowed_origins_only() -> anyhow::Result<()> {
    let web = Backend::start("web").await?;
    let yaml = [
        ready(&web),
        proxy(
            "cors",
            r#"  virtualhost:
    fqdn: cors.test
    corsPolicy:
      allowCredentials: true
      allowOrigin: [https://app.example.com, 'https://.*\.trusted\.org']
      allowMethods: [GET, PUT]
      allowHeaders: [x-custom]
      exposeHeaders: [x-exposed]
      maxAge: 10m
  routes: [{services: [{name: web, port: 80}]}]"#,
        ),
    ]
    .concat();
    let (h, http) = start(&yaml).await?;
    for origin in ["https://app.example.com", "https://api.trusted.org"] {
        let r = h.get(http, &preflight("cors.test", origin, "PUT")).await?;
        assert_eq!(r.status, 200, "{origin}: {r:?}");
        assert_eq!(r.header("access-control-allow-origin"), Some(origin));
        assert_eq!(r.header("access-control-allow-methods"), Some("GET,PUT"));
        assert_eq!(r.header("access-control-allow-headers"), Some("x-custom"));
        assert_eq!(r.header("access-control-max-age"), Some("600"));
        assert_eq!(r.header("access-control-allow-credentials"), Some("true"));
        assert_eq!(r.header("x-backend"), None, "Envoy answered the preflight itself");
    }
    // An allowed origin's request gets the CORS headers on the backend's answer.
    let r = h.get(http, &Request::get("cors.test", "/").header("origin", "https://app.example.com")).await?;
    assert_eq!((r.status, r.header("x-backend")), (200, Some("web")));
    assert_eq!(r.header("access-control-allow-origin"), Some("https://app.example.com"));
    assert_eq!(r.header("access-control-expose-headers"), Some("x-exposed"));
    // Another origin gets no CORS headers, so the browser refuses the answer.
    let r = h.get(http, &preflight("cors.test", "https://evil.example.com", "PUT")).await?;
    assert_eq!(r.header("access-control-allow-origin"), None, "{r:?}");
    let r = h.get(http, &Request::get("cors.test", "/").header("origin", "https://evil.example.com")).await?;
    assert_eq!((r.status, r.header("access-control-allow-origin")), (200, None));
    h.assert_no_nacks().await
}

#[tokio::test]
async fn ip_filters_allow_and_deny_by_peer_and_by_forwarded_address() -> anyhow::Result<()> {
    let web = Backend::start("web").await?;
    let yaml = [
        ready(&web),
        proxy(
            "allow",
            r#"  virtualhost:
    fqdn: allow.test
    ipAllowPolicy: [{source: Peer, cidr: 127.0.0.0/8}]
  routes:
  - conditions: [{prefix: /peer-denied}]
    ipDenyPolicy: [{source: Peer, cidr: 127.0.0.1}]
    services: [{name: web, port: 80}]
  - conditions: [{prefix: /remote}]
    ipAllowPolicy: [{source: Remote, cidr: 192.0.2.0/24}]
    services: [{name: web, port: 80}]
  - services: [{name: web, port: 80}]"#,
        ),
        proxy(
            "deny",
            "  virtualhost:\n    fqdn: deny.test\n    ipDenyPolicy: [{source: Peer, cidr: 127.0.0.0/8}]\n  routes: [{services: [{name: web, port: 80}]}]",
        ),
    ]
    .concat();
    let (h, http) = start(&yaml).await?;
    let h = &h;
    let status = |host: &str, path: &str, xff: Option<&str>| {
        let mut req = Request::get(host, path);
        if let Some(xff) = xff {
            req = req.header("x-forwarded-for", xff);
        }
        async move { h.get(http, &req).await.map(|r| r.status) }
    };
    assert_eq!(status("allow.test", "/", None).await?, 200, "the peer 127.0.0.1 is in the allow list");
    assert_eq!(status("deny.test", "/", None).await?, 403, "the peer is in the deny list");
    assert_eq!(status("allow.test", "/peer-denied", None).await?, 403, "the route's list replaces the host's");
    // Remote: the client address from X-Forwarded-For, one trusted hop.
    assert_eq!(status("allow.test", "/remote", Some("192.0.2.7")).await?, 200);
    assert_eq!(status("allow.test", "/remote", Some("198.51.100.1")).await?, 403);
    assert_eq!(status("allow.test", "/remote", None).await?, 403, "127.0.0.1 is not in 192.0.2.0/24");
    h.assert_no_nacks().await
}

#[tokio::test]
async fn local_rate_limits_answer_beyond_the_burst_and_refill() -> anyhow::Result<()> {
    let web = Backend::start("web").await?;
    let yaml = [
        ready(&web),
        proxy(
            "limited",
            r#"  virtualhost:
    fqdn: limited.test
    rateLimitPolicy: {local: {requests: 2, unit: second, burst: 1}}
  routes:
  - conditions: [{prefix: /hourly}]
    rateLimitPolicy: {local: {requests: 1, unit: hour, responseStatusCode: 503, responseHeadersToAdd: [{name: x-limited, value: hourly}]}}
    services: [{name: web, port: 80}]
  - services: [{name: web, port: 80}]"#,
        ),
    ]
    .concat();
    let (h, http) = start(&yaml).await?;
    // The host's bucket holds 3 (2 per second plus a burst of 1): a quick run gets 429 soon after.
    let mut statuses = Vec::new();
    for _ in 0..12 {
        statuses.push(h.get(http, &Request::get("limited.test", "/")).await?.status);
    }
    let first_limited = statuses.iter().position(|s| *s == 429);
    assert!(first_limited.is_some_and(|i| (3..=6).contains(&i)), "{statuses:?}");
    assert!(statuses.iter().all(|s| *s == 200 || *s == 429), "{statuses:?}");
    // The bucket refills after the unit.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(h.get(http, &Request::get("limited.test", "/")).await?.status, 200);
    // The route's own bucket (one an hour) with its status and header.
    let r = h.get(http, &Request::get("limited.test", "/hourly")).await?;
    assert_eq!(r.status, 200);
    let r = h.get(http, &Request::get("limited.test", "/hourly")).await?;
    assert_eq!((r.status, r.header("x-limited")), (503, Some("hourly")), "{r:?}");
    h.assert_no_nacks().await
}

#[tokio::test]
async fn cookies_set_by_backends_are_rewritten() -> anyhow::Result<()> {
    let web = Backend::start("web").await?;
    let yaml = [
        ready(&web),
        proxy(
            "cookies",
            r#"  virtualhost: {fqdn: cookies.test}
  routes:
  - conditions: [{prefix: /app}]
    cookieRewritePolicies:
    - {name: session, pathRewrite: {value: /app}, domainRewrite: {value: cookies.test}, secure: true, sameSite: Strict}
    - {name: plain, secure: false}
    - {name: inject, pathRewrite: {value: '/x")]] os.exit(1) --[['}, domainRewrite: {value: "a'b\"c"}}
    services:
    - name: web
      port: 80
      cookieRewritePolicies: [{name: svc, sameSite: Lax}]
  - services: [{name: web, port: 80}]"#,
        ),
    ]
    .concat();
    let (h, http) = start(&yaml).await?;
    let req = |path: &str| {
        Request::get("cookies.test", path)
            .header(
                "x-echo-header",
                "Set-Cookie:session=abc; Path=/; HttpOnly, Set-Cookie:plain=1; Secure; Path=/, Set-Cookie:svc=2, Set-Cookie:other=3; Path=/, Set-Cookie:inject=1; Path=/",
            )
    };
    let r = h.get(http, &req("/app")).await?;
    assert_eq!(r.status, 200);
    assert_eq!(
        all(&r, "set-cookie"),
        [
            "session=abc; Path=/app; HttpOnly; Domain=cookies.test; Secure; SameSite=Strict",
            "plain=1; Path=/",
            "svc=2; SameSite=Lax",
            "other=3; Path=/",
            // Upstream's 2026 advisory: a rewrite value is a literal, never Lua code.
            r#"inject=1; Path=/x")]] os.exit(1) --[[; Domain=a'b"c"#,
        ]
    );
    assert_eq!(h.envoy.counter_sum("lua.errors").await?, 0, "the script ran without error");
    // Routes without a policy leave cookies alone.
    let r = h.get(http, &req("/")).await?;
    assert_eq!(
        all(&r, "set-cookie"),
        ["session=abc; Path=/; HttpOnly", "plain=1; Secure; Path=/", "svc=2", "other=3; Path=/", "inject=1; Path=/"]
    );
    h.assert_no_nacks().await
}

#[tokio::test]
async fn external_authorization_checks_the_requests_of_tls_virtual_hosts() -> anyhow::Result<()> {
    let ca = Ca::new()?;
    let web = Backend::start("web").await?;
    let auth = AuthServer::start(&[("alice", "wonderland")]).await?;
    // Nothing listens here: the server is down.
    let down = std::net::SocketAddr::from(([127, 0, 0, 1], testkit::free_port()));
    let guarded = |name: &str, extension: &str, fail_open: bool| {
        proxy(
            name,
            &format!(
                "  virtualhost:
    fqdn: {name}.test
    tls: {{secretName: cert}}
    authorization: {{extensionRef: {{name: {extension}}}, failOpen: {fail_open}, responseTimeout: 2s, authPolicy: {{context: {{team: blue}}}}}}
  routes:
  - conditions: [{{prefix: /public}}]
    authPolicy: {{disabled: true}}
    services: [{{name: web, port: 80}}]
  - conditions: [{{prefix: /admin}}]
    authPolicy: {{context: {{area: admin}}}}
    services: [{{name: web, port: 80}}]
  - services: [{{name: web, port: 80}}]"
            ),
        )
    };
    let yaml = [
        ready(&web),
        service("authz", &[auth.addr]),
        service("gone", &[down]),
        extension_service("authz", "authz"),
        extension_service("gone", "gone"),
        tls_secret("cert", &ca.issue(&["secure.test", "open.test", "closed.test", "optin.test"])?),
        guarded("secure", "authz", false),
        guarded("open", "gone", true),
        guarded("closed", "gone", false),
        // Checks off for the virtual host and back on for one route (upstream main, #7671): that
        // route is checked, the others are not.
        proxy(
            "optin",
            "  virtualhost:
    fqdn: optin.test
    tls: {secretName: cert}
    authorization: {extensionRef: {name: authz}, authPolicy: {disabled: true}}
  routes:
  - conditions: [{prefix: /checked}]
    authPolicy: {disabled: false}
    services: [{name: web, port: 80}]
  - services: [{name: web, port: 80}]",
        ),
    ]
    .concat();
    let (h, http, https) = start_tls(&yaml).await?;
    let pem = ca.pem();
    let get = |host: &'static str, path: &'static str, credentials: Option<String>| {
        let mut req = Request::get(host, path);
        if let Some(c) = &credentials {
            req = req.header("authorization", c);
        }
        let (h, pem) = (&h, &pem);
        async move { h.until_tls(https, host, pem, None, &req).await }
    };
    let r = get("secure.test", "/", None).await?;
    assert_eq!(r.status, 401, "{r:?}");
    assert!(r.header("www-authenticate").is_some_and(|v| v.starts_with("Basic")), "{r:?}");
    assert_eq!(get("secure.test", "/", Some(testkit::basic("alice", "nope"))).await?.status, 401);
    let r = get("secure.test", "/", Some(testkit::basic("alice", "wonderland"))).await?;
    assert_eq!((r.status, r.header("x-backend")), (200, Some("web")), "{r:?}");
    let seen = &r.echo()["headers"];
    assert_eq!((seen["auth-username"].as_str(), seen["auth-context-team"].as_str()), (Some("alice"), Some("blue")));
    // A route's context adds to the virtual host's.
    let r = get("secure.test", "/admin", Some(testkit::basic("alice", "wonderland"))).await?;
    let seen = &r.echo()["headers"];
    assert_eq!((seen["auth-context-area"].as_str(), seen["auth-context-team"].as_str()), (Some("admin"), Some("blue")));
    // A route with checks disabled needs no credentials.
    assert_eq!(get("secure.test", "/public", None).await?.status, 200);
    // The server is down: failing open lets requests through, failing closed answers 403.
    assert_eq!(get("open.test", "/", None).await?.status, 200);
    assert_eq!(get("closed.test", "/", None).await?.status, 403);
    assert_eq!(get("optin.test", "/checked", None).await?.status, 401, "the route that turned checks back on");
    assert_eq!(get("optin.test", "/checked", Some(testkit::basic("alice", "wonderland"))).await?.status, 200);
    assert_eq!(get("optin.test", "/", None).await?.status, 200, "the virtual host's checks are off");
    // Plain HTTP is redirected to HTTPS, where the checks are.
    assert_eq!(h.get(http, &Request::get("secure.test", "/")).await?.status, 301);
    h.assert_no_nacks().await
}

#[tokio::test]
async fn jwt_verification_accepts_good_tokens_only() -> anyhow::Result<()> {
    let ca = Ca::new()?;
    let web = Backend::start("web").await?;
    let (rsa, ec, stranger) = (Signer::rs256("rsa")?, Signer::es256("ec")?, Signer::es256("ec")?);
    let jwks = JwksServer::start(&ca.issue(&["jwks.test"])?, vec![rsa.jwk(), ec.jwk()]).await?;
    let uri = format!("https://127.0.0.1:{}/jwks.json", jwks.addr.port());
    // The EC key alone, in a Secret (localJWKS).
    let local = {
        use base64::Engine;
        let document = serde_json::json!({ "keys": [ec.jwk()] }).to_string();
        base64::engine::general_purpose::STANDARD.encode(document)
    };
    let yaml = [
        ready(&web),
        format!("---\napiVersion: v1\nkind: Secret\nmetadata: {{name: jwks, namespace: default}}\ndata: {{jwks.json: {local}}}\n"),
        tls_secret("cert", &ca.issue(&["jwt.test"])?),
        proxy(
            "jwt",
            &format!(
                "  virtualhost:
    fqdn: jwt.test
    tls: {{secretName: cert}}
    jwtProviders:
    - {{name: idp, default: true, issuer: https://idp.test, audiences: [api], forwardJWT: true, remoteJWKS: {{uri: '{uri}', timeout: 2s}}}}
    - {{name: other, issuer: https://other.test, remoteJWKS: {{uri: '{uri}'}}}}
    - {{name: local, issuer: https://local.test, localJWKS: {{secretName: jwks, key: jwks.json}}}}
  routes:
  - conditions: [{{prefix: /local}}]
    jwtVerificationPolicy: {{require: local}}
    services: [{{name: web, port: 80}}]
  - conditions: [{{prefix: /public}}]
    jwtVerificationPolicy: {{disabled: true}}
    services: [{{name: web, port: 80}}]
  - conditions: [{{prefix: /other}}]
    jwtVerificationPolicy: {{require: other}}
    services: [{{name: web, port: 80}}]
  - services: [{{name: web, port: 80}}]"
            ),
        ),
    ]
    .concat();
    let (h, _, https) = start_tls(&yaml).await?;
    let pem = ca.pem();
    let get = |path: &'static str, token: Option<String>| {
        let mut req = Request::get("jwt.test", path);
        if let Some(t) = &token {
            req = req.header("authorization", &format!("Bearer {t}"));
        }
        let (h, pem) = (&h, &pem);
        async move { h.until_tls(https, "jwt.test", pem, None, &req).await }
    };
    let claims =
        |iss: &str, aud: &str, exp: u64| serde_json::json!({"iss": iss, "aud": aud, "sub": "alice", "exp": exp});
    let later = testkit::now_s() + 600;
    assert_eq!(get("/", None).await?.status, 401, "no token");
    for signer in [&rsa, &ec] {
        let token = signer.token(&claims("https://idp.test", "api", later))?;
        let r = get("/", Some(token.clone())).await?;
        assert_eq!((r.status, r.header("x-backend")), (200, Some("web")), "{r:?}");
        assert_eq!(r.echo()["headers"]["authorization"], format!("Bearer {token}"), "forwardJWT keeps it");
    }
    let expired = rsa.token(&claims("https://idp.test", "api", testkit::now_s() - 600))?;
    assert_eq!(get("/", Some(expired)).await?.status, 401, "expired");
    let wrong_audience = rsa.token(&claims("https://idp.test", "web", later))?;
    assert_eq!(get("/", Some(wrong_audience)).await?.status, 403, "wrong audience");
    let unknown_key = stranger.token(&claims("https://idp.test", "api", later))?;
    assert_eq!(get("/", Some(unknown_key)).await?.status, 401, "signed by a key the JWKS does not have");
    // A route requiring the other provider wants the other issuer.
    let idp = rsa.token(&claims("https://idp.test", "api", later))?;
    assert_eq!(get("/other", Some(idp)).await?.status, 401);
    let other = rsa.token(&claims("https://other.test", "anything", later))?;
    assert_eq!(get("/other", Some(other)).await?.status, 200);
    assert_eq!(get("/public", None).await?.status, 200, "verification disabled");
    // Keys from a Secret: the EC key is there, the RSA key is not.
    let local_ec = ec.token(&claims("https://local.test", "any", later))?;
    assert_eq!(get("/local", Some(local_ec)).await?.status, 200);
    let local_rsa = rsa.token(&claims("https://local.test", "any", later))?;
    assert_eq!(get("/local", Some(local_rsa)).await?.status, 401);
    h.assert_no_nacks().await
}

#[tokio::test]
async fn an_extension_service_spreads_checks_over_its_services() -> anyhow::Result<()> {
    let ca = Ca::new()?;
    let web = Backend::start("web").await?;
    let users = [("alice", "wonderland")];
    let (a, b) = (AuthServer::start(&users).await?, AuthServer::start(&users).await?);
    let yaml = [
        ready(&web),
        service("authz-a", &[a.addr]),
        service("authz-b", &[b.addr]),
        "---\napiVersion: projectcontour.io/v1alpha1\nkind: ExtensionService\nmetadata: {name: authz, namespace: default}\nspec: {protocol: h2c, services: [{name: authz-a, port: 80}, {name: authz-b, port: 80}]}\n".into(),
        tls_secret("cert", &ca.issue(&["secure.test"])?),
        proxy(
            "secure",
            "  virtualhost: {fqdn: secure.test, tls: {secretName: cert}, authorization: {extensionRef: {name: authz}}}\n  routes: [{services: [{name: web, port: 80}]}]",
        ),
    ]
    .concat();
    let (h, _, https) = start_tls(&yaml).await?;
    let pem = ca.pem();
    let req = Request::get("secure.test", "/").header("authorization", &testkit::basic("alice", "wonderland"));
    h.until_tls(https, "secure.test", &pem, None, &req).await?;
    for _ in 0..20 {
        let r = testkit::request_tls(([127, 0, 0, 1], https).into(), "secure.test", &pem, &req).await?;
        assert_eq!(r.status, 200, "{r:?}");
    }
    let calls = |s: &AuthServer| s.calls.load(std::sync::atomic::Ordering::Relaxed);
    assert!(calls(&a) > 0 && calls(&b) > 0, "checks went to one Service only: {} and {}", calls(&a), calls(&b));
    h.assert_no_nacks().await
}

#[tokio::test]
async fn extension_services_get_upstream_status_conditions() -> anyhow::Result<()> {
    use testkit::{ApiServer, NetnsBackend, apply_yaml};
    let api = ApiServer::start().await?;
    crate::harness::install_contour_crds(&api).await?;
    let client = api.client().await?;
    let web = NetnsBackend::start("web").await?;
    let extension = |name: &str, spec: &str| {
        format!(
            "---\napiVersion: projectcontour.io/v1alpha1\nkind: ExtensionService\nmetadata: {{name: {name}, namespace: default}}\nspec: {spec}\n"
        )
    };
    let yaml = [
        service("web", &[web.addr]),
        extension("good", "{protocol: h2c, services: [{name: web, port: 80}]}"),
        extension("missing", "{protocol: h2c, services: [{name: web, port: 80}, {name: nowhere, port: 80}]}"),
        extension(
            "hashing",
            "{protocol: h2c, services: [{name: web, port: 80}], loadBalancerPolicy: {strategy: Cookie}}",
        ),
    ]
    .concat();
    apply_yaml(&client, &yaml).await?;
    let (http, https) = (testkit::free_port(), testkit::free_port());
    let _h = crate::harness::Harness::start_kubernetes_default_fleet(client.clone(), http, https).await?;
    let until = |name: &'static str, check: fn(&serde_json::Value) -> bool| {
        let client = client.clone();
        async move {
            crate::kubernetes::status_of_until(&client, "projectcontour.io/v1alpha1", "ExtensionService", name, check)
                .await
        }
    };
    let good = until("good", |s| !s["conditions"].is_null()).await?;
    let valid = &good["conditions"][0];
    assert_eq!(
        (&valid["type"], &valid["status"], &valid["reason"], &valid["message"]),
        (&json!("Valid"), &json!("True"), &json!("Valid"), &json!("Valid ExtensionService")),
        "{good:#}"
    );
    assert_eq!(valid["observedGeneration"], 1);
    assert!(good.get("currentStatus").is_none(), "{good:#}");
    let missing = until("missing", |s| !s["conditions"].is_null()).await?;
    let valid = &missing["conditions"][0];
    assert_eq!((&valid["status"], &valid["reason"]), (&json!("False"), &json!("ErrorPresent")), "{missing:#}");
    let error = &valid["errors"][0];
    assert_eq!(
        (&error["type"], &error["reason"], &error["message"]),
        (
            &json!("ServiceError"),
            &json!("ServiceUnresolvedReference"),
            &json!("unresolved service \"default/nowhere\": service not found")
        ),
        "{missing:#}"
    );
    let hashing = until("hashing", |s| !s["conditions"].is_null()).await?;
    let valid = &hashing["conditions"][0];
    assert_eq!(valid["status"], "True", "a warning leaves it valid: {hashing:#}");
    assert_eq!(
        (&valid["warnings"][0]["type"], &valid["warnings"][0]["reason"]),
        (&json!("SpecError"), &json!("IgnoredField"))
    );

    // Fixed through the API: valid at the new generation.
    apply_yaml(&client, &extension("missing", "{protocol: h2c, services: [{name: web, port: 80}]}")).await?;
    let fixed = until("missing", |s| s["conditions"][0]["status"] == "True").await?;
    assert_eq!(fixed["conditions"][0]["observedGeneration"], 2, "{fixed:#}");
    Ok(())
}

#[tokio::test]
async fn external_authorization_over_http_forwards_requests_under_the_prefix() -> anyhow::Result<()> {
    let ca = Ca::new()?;
    let web = Backend::start("web").await?;
    let auth = AuthServer::start_http(&[("alice", "wonderland")]).await?;
    let yaml = [
        ready(&web),
        service("authz", &[auth.addr]),
        extension_service("authz", "authz"),
        tls_secret("cert", &ca.issue(&["secure.test"])?),
        proxy(
            "secure",
            "  virtualhost:
    fqdn: secure.test
    tls: {secretName: cert}
    authorization:
      extensionRef: {name: authz}
      serviceType: http
      httpSettings: {pathPrefix: /verify, allowedUpstreamHeaders: [{exact: auth-username}, {prefix: AUTH-P, ignoreCase: true}]}
  routes:
  - conditions: [{prefix: /public}]
    authPolicy: {disabled: true}
    services: [{name: web, port: 80}]
  - services: [{name: web, port: 80}]",
        ),
    ]
    .concat();
    let (h, _, https) = start_tls(&yaml).await?;
    let pem = ca.pem();
    let r = h.until_tls(https, "secure.test", &pem, None, &Request::get("secure.test", "/app")).await?;
    assert_eq!(r.status, 401, "the server's answer goes back to the client: {r:?}");
    assert!(r.header("www-authenticate").is_some_and(|v| v.starts_with("Basic")), "{r:?}");
    let req = Request::get("secure.test", "/app?x=1").header("authorization", &testkit::basic("alice", "wonderland"));
    let r = testkit::request_tls(([127, 0, 0, 1], https).into(), "secure.test", &pem, &req).await?;
    assert_eq!((r.status, r.header("x-backend")), (200, Some("web")), "{r:?}");
    let seen = &r.echo()["headers"];
    assert_eq!(
        (seen["auth-username"].as_str(), seen["auth-path"].as_str()),
        (Some("alice"), Some("/verify/app")),
        "the allowed headers of the server's answer reach the backend: {seen}"
    );
    assert_eq!(seen["auth-protocol"], "HTTP/2.0", "an h2c ExtensionService is asked over HTTP/2: {seen}");
    let calls = auth.calls.load(std::sync::atomic::Ordering::Relaxed);
    let r = testkit::request_tls(
        ([127, 0, 0, 1], https).into(),
        "secure.test",
        &pem,
        &Request::get("secure.test", "/public"),
    )
    .await?;
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(auth.calls.load(std::sync::atomic::Ordering::Relaxed), calls, "a disabled route is not checked");
    h.assert_no_nacks().await
}

#[tokio::test]
async fn geo_rules_allow_and_deny_by_the_client_location() -> anyhow::Result<()> {
    use std::net::Ipv4Addr;
    use testkit::mmdb;
    let dir = std::env::temp_dir().join(format!("contour-geo-{}-{}", std::process::id(), testkit::free_port()));
    std::fs::create_dir_all(&dir)?;
    let city = dir.join("city.mmdb");
    let anon = dir.join("anon.mmdb");
    std::fs::write(
        &city,
        mmdb::database(
            "GeoLite2-City",
            &[
                ((Ipv4Addr::new(81, 2, 69, 0), 24), mmdb::city("GB", "ENG", "London")),
                ((Ipv4Addr::new(81, 2, 70, 0), 24), mmdb::city("GB", "ENG", "London")),
                ((Ipv4Addr::new(175, 16, 199, 0), 24), mmdb::city("CN", "22", "Changchun")),
            ],
        ),
    )?;
    let anonymous = [
        ((Ipv4Addr::new(81, 2, 69, 0), 24), mmdb::anonymous(false, false, false, false)),
        ((Ipv4Addr::new(81, 2, 70, 0), 24), mmdb::anonymous(true, false, false, false)),
    ];
    std::fs::write(&anon, mmdb::database("GeoIP2-Anonymous-IP", &anonymous))?;
    let databases = ir::GeoDatabases {
        city: Some(city.display().to_string()),
        anon: Some(anon.display().to_string()),
        ..Default::default()
    };
    let ca = Ca::new()?;
    let web = Backend::start("web").await?;
    let yaml = [
        ready(&web),
        tls_secret("cert", &ca.issue(&["geo.test"])?),
        proxy(
            "geo",
            "  virtualhost:
    fqdn: geo.test
    tls: {secretName: cert}
    geoAllowPolicy: [{dimension: country, value: GB}]
  routes:
  - conditions: [{prefix: /private}]
    geoDenyPolicy: [{dimension: anonVpn, value: 'true'}]
    services: [{name: web, port: 80}]
  - services: [{name: web, port: 80}]",
        ),
    ]
    .concat();
    let (http, https) = (testkit::free_port(), testkit::free_port());
    let mut options = default_fleet_options(http, https);
    options.compile.listener.xff_num_trusted_hops = 1;
    options.compile.geoip = Some(databases.clone());
    options.httpproxy.geoip = Some(databases);
    let h = Harness::start_with(&yaml, ir::DEFAULT_FLEET, options).await?;
    h.until(http, &Request::get("ready.test", "/"), |r| r.status == 200).await?;
    let pem = ca.pem();
    let from = |client: &str, path: &str| Request::get("geo.test", path).header("x-forwarded-for", client);
    h.until_tls(https, "geo.test", &pem, None, &from("81.2.69.142", "/")).await?;
    let get = |req: Request| {
        let pem = &pem;
        async move { testkit::request_tls(([127, 0, 0, 1], https).into(), "geo.test", pem, &req).await }
    };
    let r = get(from("81.2.69.142", "/")).await?;
    assert_eq!(r.status, 200, "a client in GB: {r:?}");
    let seen = &r.echo()["headers"];
    assert_eq!(
        (seen["x-contour-geo-country"].as_str(), seen["x-contour-geo-city"].as_str()),
        (Some("GB"), Some("London")),
        "the backend sees the location: {seen}"
    );
    assert_eq!(get(from("175.16.199.7", "/")).await?.status, 403, "a client in CN");
    let spoofed = from("1.1.1.1", "/").header("x-contour-geo-country", "GB");
    assert_eq!(get(spoofed).await?.status, 403, "a client cannot claim a location");
    // The route's deny list replaces the host's allow list.
    assert_eq!(get(from("81.2.70.9", "/private")).await?.status, 403, "a VPN");
    assert_eq!(get(from("81.2.69.142", "/private")).await?.status, 200);
    assert_eq!(get(from("175.16.199.7", "/private")).await?.status, 200);
    let _ = std::fs::remove_dir_all(&dir);
    h.assert_no_nacks().await
}
