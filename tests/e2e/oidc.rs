//! OpenID Connect login (HTTPProxy `virtualhost.oidc`, a contour-rs extension) through the real
//! Envoy against a real OpenID provider (zitadel/oidc's example, built from its Go module): the
//! whole browser flow with a cookie jar, from the redirect to the provider to the logout.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use testkit::{OIDC_CLIENT, OIDC_USER, OidcProvider, Request, Response};

use crate::harness::{Harness, service};

/// A browser: one cookie jar per site, and the Set-Cookie headers of each answer applied.
#[derive(Default)]
struct Jar(BTreeMap<String, String>);

impl Jar {
    fn take(&mut self, r: &Response) {
        for (name, value) in r.headers.iter().filter(|(n, _)| n == "set-cookie") {
            let pair = value.split(';').next().unwrap_or_default();
            let Some((k, v)) = pair.split_once('=') else { continue };
            let deleted = value.to_ascii_lowercase().contains("expires=thu, 01 jan 1970") || v == "deleted";
            let _ = name;
            if deleted || v.is_empty() {
                self.0.remove(k.trim());
            } else {
                self.0.insert(k.trim().to_string(), v.to_string());
            }
        }
    }

    fn on(&self, req: Request) -> Request {
        if self.0.is_empty() {
            return req;
        }
        let cookie: Vec<String> = self.0.iter().map(|(k, v)| format!("{k}={v}")).collect();
        req.header("cookie", &cookie.join("; "))
    }

    fn named(&self, prefix: &str) -> Option<&String> {
        self.0.iter().find(|(k, _)| k.starts_with(prefix)).map(|(_, v)| v)
    }
}

fn location(r: &Response) -> anyhow::Result<String> {
    r.header("location").map(str::to_string).ok_or_else(|| anyhow::anyhow!("no Location in {r:?}"))
}

/// The path and query of a URL (or the path given).
fn path_of(url: &str) -> String {
    match url.split_once("://") {
        Some((_, rest)) => rest.find('/').map_or("/".to_string(), |i| rest[i..].to_string()),
        None => url.to_string(),
    }
}

#[tokio::test]
async fn a_browser_logs_in_at_the_provider_is_served_refreshed_and_logged_out() -> anyhow::Result<()> {
    let ca = testkit::Ca::new()?;
    let web = testkit::Backend::start("web").await?;
    let (http, https) = (testkit::free_port(), testkit::free_port());
    let host = "oidc.test";
    let callback = format!("https://{host}:{https}/oauth2/callback");
    let provider = OidcProvider::start(&callback).await?;
    let yaml = [
        service("web", &[web.addr]),
        crate::tls::tls_secret("oidc-cert", &ca.issue(&[host])?),
        format!(
            "---
apiVersion: v1
kind: Secret
metadata: {{name: oidc-client, namespace: default}}
type: Opaque
data: {{client-secret: {secret}}}
---
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {{name: app, namespace: default}}
spec:
  virtualhost:
    fqdn: {host}
    tls: {{secretName: oidc-cert}}
    oidc:
      authorizationEndpoint: {auth}
      tokenEndpoint: {token}
      endSessionEndpoint: {end}
      clientID: {client}
      clientSecretName: oidc-client
      scopes: [profile, offline_access]
      forwardAccessToken: true
  routes:
  - conditions: [{{prefix: /public}}]
    services: [{{name: web, port: 80}}]
    oidcPolicy: {{disabled: true}}
  - services: [{{name: web, port: 80}}]
",
            secret = base64(OIDC_CLIENT.1),
            auth = provider.endpoint("auth"),
            token = provider.endpoint("oauth/token"),
            end = provider.endpoint("end_session"),
            client = OIDC_CLIENT.0,
        ),
    ]
    .concat();
    let h = Harness::start_default_fleet(&yaml, http, https).await?;
    let envoy = SocketAddr::from(([127, 0, 0, 1], https));
    let pem = ca.pem();
    let app = |jar: &Jar, path: &str| {
        let req = jar.on(Request::get(&format!("{host}:{https}"), path));
        let pem = pem.clone();
        async move { testkit::request_tls(envoy, host, &pem, &req).await }
    };
    let idp = provider.authority();

    // A route that opts out is served without a session.
    let r = h.until_tls(https, host, &pem, None, &Request::get(host, "/public")).await?;
    assert_eq!((r.status, r.header("x-backend")), (200, Some("web")), "{r:?}");

    // 1. No session: Envoy sends the browser to the provider's authorization endpoint.
    let (mut site, mut provider_jar) = (Jar::default(), Jar::default());
    let r = app(&site, "/private?page=1").await?;
    assert_eq!(r.status, 302, "{r:?}");
    let to = location(&r)?;
    assert!(to.starts_with(&provider.endpoint("auth")), "{to}");
    assert!(to.contains(&format!("client_id={}", OIDC_CLIENT.0)) && to.contains("code_challenge="), "{to}");
    site.take(&r);

    // 2. At the provider: its login form, the user's password, back with a code.
    let mut next = to;
    let mut logged_in = false;
    for _ in 0..10 {
        if next.starts_with(&format!("https://{host}")) {
            break;
        }
        let r = testkit::request(provider.addr, &provider_jar.on(Request::get(&idp, &path_of(&next)))).await?;
        provider_jar.take(&r);
        if r.status == 200 && r.body.contains("password") && !logged_in {
            let id = next.split("authRequestID=").nth(1).unwrap_or_default().split('&').next().unwrap_or_default();
            let form = [("id", id), ("username", OIDC_USER.0), ("password", OIDC_USER.1)];
            let r =
                testkit::request(provider.addr, &provider_jar.on(Request::post_form(&idp, "/login/username", &form)))
                    .await?;
            provider_jar.take(&r);
            assert_eq!(r.status, 302, "the provider refused the login: {r:?}");
            logged_in = true;
            next = location(&r)?;
            continue;
        }
        anyhow::ensure!(r.status == 302, "the provider answered {r:?}");
        next = location(&r)?;
    }
    assert!(logged_in, "never saw the provider's login form");
    assert!(next.starts_with(&callback) && next.contains("code="), "not sent back with a code: {next}");

    // 3. The callback: Envoy exchanges the code (with the client's secret) and sets the session.
    let r = app(&site, &path_of(&next)).await?;
    assert_eq!(r.status, 302, "the code exchange failed: {r:?}\n{}", h.envoy.log());
    assert!(location(&r)?.ends_with("/private?page=1"), "back to where the browser was going: {r:?}");
    site.take(&r);
    let token = site.named("BearerToken").cloned().ok_or_else(|| anyhow::anyhow!("no session cookie: {r:?}"))?;
    assert!(site.named("RefreshToken").is_some(), "no refresh token kept: {:?}", site.0.keys());

    // 4. An authorized request: served, with the access token forwarded.
    let r = app(&site, "/private?page=1").await?;
    assert_eq!(r.status, 200, "{r:?}");
    let authorization = r.echo()["headers"]["authorization"].as_str().unwrap_or_default().to_string();
    assert!(authorization.starts_with("Bearer ") && authorization.len() > 10, "{authorization:?}");

    // 5. The access token's cookie gone (as a browser drops it when it expires): the refresh
    // token renews the session without a login.
    let expired: Vec<String> =
        site.0.keys().filter(|k| k.starts_with("BearerToken") || k.starts_with("OauthExpires")).cloned().collect();
    for k in expired {
        site.0.remove(&k);
    }
    let mut r = app(&site, "/private?page=2").await?;
    site.take(&r);
    if r.status == 302 && location(&r)?.ends_with("/private?page=2") {
        r = app(&site, "/private?page=2").await?;
    }
    assert_eq!(r.status, 200, "not renewed with the refresh token: {r:?}\n{}", h.envoy.log());
    let renewed = site.named("BearerToken").cloned().unwrap_or_default();
    assert!(!renewed.is_empty() && renewed != token, "no new access token: {:?}", site.0.keys());

    // 6. Logout: the session's cookies are cleared, the provider's session is ended too, and
    // the next request must log in again.
    let r = app(&site, "/logout").await?;
    assert_eq!(r.status, 302, "{r:?}");
    site.take(&r);
    let to = location(&r)?;
    assert!(to.starts_with(&provider.endpoint("end_session")) && to.contains("id_token_hint="), "{to}");
    assert!(site.named("BearerToken").is_none(), "the session cookie stayed: {:?}", site.0.keys());
    let r = testkit::request(provider.addr, &provider_jar.on(Request::get(&idp, &path_of(&to)))).await?;
    assert!(r.status < 400, "the provider refused the logout: {r:?}");
    let r = app(&site, "/private?page=1").await?;
    assert_eq!(r.status, 302, "served after logout: {r:?}");
    assert!(location(&r)?.starts_with(&provider.endpoint("auth")));
    h.assert_no_nacks().await
}

fn base64(s: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(s)
}
