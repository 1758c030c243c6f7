//! Ingress through Envoy in standalone mode: paths by type, the default backend, wildcard hosts,
//! TLS with a delegated Secret, upstream's annotations proven by the answers, class selection,
//! and an Ingress and an HTTPProxy sharing one host.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use testkit::{Backend, Ca, Request};

use crate::harness::{Harness, service};
use crate::tls::tls_secret;

fn ingress(name: &str, annotations: &str, spec: &str) -> String {
    format!(
        "---\napiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {{name: {name}, namespace: default, annotations: {{{annotations}}}}}\nspec:\n{spec}\n"
    )
}

fn served_by(r: &testkit::Response) -> &str {
    r.header("x-backend").unwrap_or("-")
}

fn path(p: &str, kind: &str, svc: &str) -> String {
    format!("{{path: '{p}', pathType: {kind}, backend: {{service: {{name: {svc}, port: {{number: 80}}}}}}}}")
}

#[tokio::test]
async fn ingress_rules_default_backend_and_classes() -> anyhow::Result<()> {
    let names = ["web", "api", "items", "fallback", "wild", "classy", "proxied"];
    let mut backends = Vec::new();
    for n in names {
        backends.push(Backend::start(n).await?);
    }
    let (http, https) = (testkit::free_port(), testkit::free_port());
    let mut yaml: String = names.iter().zip(&backends).map(|(n, b)| service(n, &[b.addr])).collect();
    yaml += &ingress(
        "site",
        "",
        &format!(
            "  defaultBackend: {{service: {{name: fallback, port: {{number: 80}}}}}}
  rules:
  - host: www.example.com
    http:
      paths: [{}, {}, {}, {}]
  - host: '*.wild.test'
    http:
      paths: [{}]",
            path("/", "Prefix", "web"),
            path("/api", "Prefix", "api"),
            path("/items/[0-9]+", "ImplementationSpecific", "items"),
            path("/exact", "Exact", "api"),
            path("/", "Prefix", "wild"),
        ),
    );
    // Another class: not ours. An IngressClass of ours marked default: its Ingresses are.
    yaml += &ingress(
        "theirs",
        "kubernetes.io/ingress.class: nginx",
        &format!("  rules: [{{host: theirs.test, http: {{paths: [{}]}}}}]", path("/", "Prefix", "web")),
    );
    yaml += "---\napiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata: {name: ours}\nspec: {controller: projectcontour.io/ingress-controller}\n";
    yaml += &ingress(
        "classy",
        "",
        &format!(
            "  ingressClassName: ours\n  rules: [{{host: classy.test, http: {{paths: [{}]}}}}]",
            path("/", "Prefix", "classy")
        ),
    );
    // An HTTPProxy for the same host as the Ingress: one virtual host serves both.
    yaml += "---\napiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {name: proxy, namespace: default}\nspec:\n  virtualhost: {fqdn: www.example.com}\n  routes: [{conditions: [{prefix: /proxied}], services: [{name: proxied, port: 80}]}]\n";

    let h = Harness::start_default_fleet(&yaml, http, https).await?;
    h.until(http, &Request::get("www.example.com", "/"), |r| r.status == 200).await?;
    let cases = [
        ("www.example.com", "/", "web"),
        ("www.example.com", "/api/v1", "api"),
        ("www.example.com", "/apiary", "web"),
        ("www.example.com", "/items/42", "items"),
        ("www.example.com", "/items/x", "web"),
        ("www.example.com", "/exact", "api"),
        ("www.example.com", "/proxied/x", "proxied"),
        ("other.example.com", "/", "fallback"),
        ("a.wild.test", "/", "wild"),
        ("a.b.wild.test", "/", "-"),
        ("classy.test", "/", "classy"),
        ("theirs.test", "/", "fallback"),
    ];
    for (host, p, want) in cases {
        let r = h.get(http, &Request::get(host, p)).await?;
        assert_eq!(served_by(&r), want, "{host}{p}: {r:?}");
    }
    h.assert_no_nacks().await
}

#[tokio::test]
async fn ingress_annotations_and_tls() -> anyhow::Result<()> {
    let ca = Ca::new()?;
    let web = Backend::start("web").await?;
    let flaky = Backend::start_flaky("flaky", 1).await?;
    let (http, https) = (testkit::free_port(), testkit::free_port());
    let yaml = [
        service("web", &[web.addr]),
        service("flaky", &[flaky.addr]),
        // The certificate lives in another namespace and is delegated to this one.
        tls_secret("shared", &ca.issue(&["secure.test", "redirect.test"])?).replace("namespace: default", "namespace: certs"),
        "---\napiVersion: projectcontour.io/v1\nkind: TLSCertificateDelegation\nmetadata: {name: d, namespace: certs}\nspec: {delegations: [{secretName: shared, targetNamespaces: ['*']}]}\n".into(),
        ingress(
            "secure",
            "kubernetes.io/ingress.allow-http: 'false', projectcontour.io/tls-cert-namespace: certs, projectcontour.io/response-timeout: 300ms",
            &format!("  tls: [{{hosts: [secure.test], secretName: shared}}]\n  rules: [{{host: secure.test, http: {{paths: [{}]}}}}]", path("/", "Prefix", "web")),
        ),
        ingress(
            "redirect",
            "ingress.kubernetes.io/force-ssl-redirect: 'true', projectcontour.io/tls-cert-namespace: certs",
            &format!("  tls: [{{hosts: [redirect.test], secretName: shared}}]\n  rules: [{{host: redirect.test, http: {{paths: [{}]}}}}]", path("/", "Prefix", "web")),
        ),
        ingress(
            "retries",
            "projectcontour.io/retry-on: 5xx, projectcontour.io/num-retries: '2', projectcontour.io/websocket-routes: /ws",
            &format!(
                "  rules: [{{host: plain.test, http: {{paths: [{}, {}]}}}}]",
                path("/", "Prefix", "flaky"),
                path("/ws", "Prefix", "web")
            ),
        ),
    ]
    .concat();
    let h = Harness::start_default_fleet(&yaml, http, https).await?;
    let r = h.until(http, &Request::get("redirect.test", "/a?b=c"), |r| r.status == 301).await?;
    assert_eq!(r.header("location"), Some("https://redirect.test/a?b=c"));
    assert_eq!(h.get(http, &Request::get("secure.test", "/")).await?.status, 404, "allow-http=false");

    let answer = h.until_tls(https, "secure.test", &ca.pem(), None, &Request::get("secure.test", "/")).await?;
    let addr = SocketAddr::from(([127, 0, 0, 1], https));
    assert_eq!((answer.status, served_by(&answer)), (200, "web"));
    let started = Instant::now();
    let slow = Request::get("secure.test", "/").header("x-echo-delay-ms", "3000");
    let r = testkit::request_tls(addr, "secure.test", &ca.pem(), &slow).await?;
    assert_eq!(r.status, 504, "the response timeout fired");
    assert!(started.elapsed() < Duration::from_millis(2500), "{:?}", started.elapsed());

    // The flaky backend fails once; the retry answers.
    let r = h.get(http, &Request::get("plain.test", "/")).await?;
    assert_eq!((r.status, served_by(&r)), (200, "flaky"));
    let upgrade =
        |p: &str| Request::get("plain.test", p).header("connection", "upgrade").header("upgrade", "websocket");
    assert_eq!(served_by(&h.get(http, &upgrade("/ws")).await?), "web", "websocket route");
    assert_eq!(h.get(http, &upgrade("/")).await?.status, 403, "not a websocket route");
    h.assert_no_nacks().await
}

#[tokio::test]
async fn ingresses_through_the_api_server_get_traffic_status_and_events() -> anyhow::Result<()> {
    use k8s_openapi::api::events::v1::Event;
    use testkit::{ApiServer, NetnsBackend, apply_yaml};

    let api = ApiServer::start().await?;
    let client = api.client().await?;
    let (blue, green) = (NetnsBackend::start("blue").await?, NetnsBackend::start("green").await?);
    let (http, https) = (testkit::free_port(), testkit::free_port());
    let site = |svc: &str, annotations: &str| {
        ingress(
            "site",
            annotations,
            &format!("  rules: [{{host: site.test, http: {{paths: [{}]}}}}]", path("/", "Prefix", svc)),
        )
    };
    apply_yaml(&client, &[service("blue", &[blue.addr]), service("green", &[green.addr]), site("blue", "")].concat())
        .await?;
    crate::harness::envoy_service_with_address(&client, "192.0.2.9").await?;
    let h = Harness::start_kubernetes_default_fleet(client.clone(), http, https).await?;
    h.until(http, &Request::get("site.test", "/"), |r| served_by(r) == "blue").await?;
    crate::kubernetes::status_of_until(&client, "networking.k8s.io/v1", "Ingress", "site", |s| {
        s["loadBalancer"]["ingress"][0]["ip"] == "192.0.2.9"
    })
    .await?;

    // An update moves the traffic; an invalid annotation is ignored and reported as an Event.
    apply_yaml(&client, &site("green", "projectcontour.io/num-retries: lots")).await?;
    h.until(http, &Request::get("site.test", "/"), |r| served_by(r) == "green").await?;
    let events: kube::Api<Event> = kube::Api::namespaced(client.clone(), "default");
    let found = testkit::eventually(Duration::from_secs(15), || {
        let events = events.clone();
        async move {
            let list = events.list(&Default::default()).await.ok()?;
            list.items.into_iter().find(|e| {
                e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("site")
                    && e.reason.as_deref() == Some("InvalidAnnotation")
            })
        }
    })
    .await
    .ok_or_else(|| anyhow::anyhow!("no Event on the Ingress"))?;
    let note = found.note.unwrap_or_default();
    assert!(note.contains("projectcontour.io/num-retries") && note.contains("\"lots\""), "{note}");
    h.assert_no_nacks().await
}
