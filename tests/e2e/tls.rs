//! TLS through Envoy: HTTPS termination with SNI-chosen certificates (421 for another Host), and
//! TLS passthrough.

use testkit::{Backend, Ca, Issued, Request};

use crate::harness::{Harness, gateway, http_route, service};

pub(crate) fn tls_secret(name: &str, issued: &Issued) -> String {
    tls_secret_in("default", name, issued)
}

/// [`tls_secret`] in `namespace`.
pub(crate) fn tls_secret_in(namespace: &str, name: &str, issued: &Issued) -> String {
    let indent = |pem: &str| pem.lines().map(|l| format!("    {l}\n")).collect::<String>();
    format!(
        "---\napiVersion: v1\nkind: Secret\nmetadata: {{name: {name}, namespace: {namespace}}}\ntype: kubernetes.io/tls\nstringData:\n  tls.crt: |\n{}  tls.key: |\n{}",
        indent(&issued.cert_pem),
        indent(&issued.key_pem)
    )
}

#[tokio::test]
async fn https_termination_picks_the_certificate_by_sni() -> anyhow::Result<()> {
    let ca = Ca::new()?;
    let web = Backend::start("web").await?;
    let port = testkit::free_port();
    let listeners = format!(
        "  - {{name: a, port: {port}, protocol: HTTPS, hostname: a.secure.test, tls: {{certificateRefs: [{{name: cert-a}}]}}}}\n  - {{name: b, port: {port}, protocol: HTTPS, hostname: b.secure.test, tls: {{certificateRefs: [{{name: cert-b}}]}}}}"
    );
    let yaml = [
        gateway(&listeners),
        tls_secret("cert-a", &ca.issue(&["a.secure.test"])?),
        tls_secret("cert-b", &ca.issue(&["b.secure.test"])?),
        service("web", &[web.addr]),
        http_route("secure", "  rules: [{backendRefs: [{name: web, port: 80}]}]"),
    ]
    .concat();
    let h = Harness::start(&yaml, false).await?;
    for host in ["a.secure.test", "b.secure.test"] {
        // The client trusts only the test CA and checks the name: the wrong certificate fails.
        let r = h.until_tls(port, host, &ca.pem(), None, &Request::get(host, "/")).await?;
        assert_eq!((r.status, r.echo()["host"].as_str()), (200, Some(host)));
    }
    // A Host other than the connection's SNI is misdirected: 421, not the other listener's routes.
    let addr = ([127, 0, 0, 1], port).into();
    let r = testkit::request_tls(addr, "a.secure.test", &ca.pem(), &Request::get("b.secure.test", "/")).await?;
    assert_eq!(r.status, 421, "{r:?}");
    h.assert_no_nacks().await
}

#[tokio::test]
async fn tls_passthrough_routes_by_sni() -> anyhow::Result<()> {
    let ca = Ca::new()?;
    let one = Backend::start_tls("one", &ca.issue(&["one.pass.test"])?).await?;
    let two = Backend::start_tls("two", &ca.issue(&["two.pass.test"])?).await?;
    let port = testkit::free_port();
    let listeners = format!("  - {{name: tls, port: {port}, protocol: TLS, tls: {{mode: Passthrough}}}}");
    let route = |name: &str, host: &str| {
        format!(
            "---\napiVersion: gateway.networking.k8s.io/v1\nkind: TLSRoute\nmetadata: {{name: {name}, namespace: default}}\nspec:\n  parentRefs: [{{name: gw}}]\n  hostnames: [{host}]\n  rules: [{{backendRefs: [{{name: {name}, port: 80}}]}}]\n"
        )
    };
    let yaml = [
        gateway(&listeners),
        service("one", &[one.addr]),
        service("two", &[two.addr]),
        route("one", "one.pass.test"),
        route("two", "two.pass.test"),
    ]
    .concat();
    let h = Harness::start(&yaml, false).await?;
    for (host, backend) in [("one.pass.test", "one"), ("two.pass.test", "two")] {
        let r = h.until_tls(port, host, &ca.pem(), None, &Request::get(host, "/")).await?;
        assert_eq!(r.header("x-backend"), Some(backend), "the backend's own TLS answered");
    }
    h.assert_no_nacks().await
}

#[tokio::test]
async fn backend_tls_policies_verify_with_a_ca_config_map_or_the_system_trust_store() -> anyhow::Result<()> {
    let ca = Ca::new()?;
    let secure = Backend::start_tls("secure", &ca.issue(&["backend.internal"])?).await?;
    let port = testkit::free_port();
    let indented: String = ca.pem().lines().map(|l| format!("    {l}\n")).collect();
    let policy = |name: &str, validation: &str| {
        format!(
            "---\napiVersion: gateway.networking.k8s.io/v1\nkind: BackendTLSPolicy\nmetadata: {{name: {name}, namespace: default}}\nspec:\n  targetRefs: [{{group: '', kind: Service, name: {name}}}]\n  validation: {validation}\n"
        )
    };
    let yaml = [
        gateway(&crate::harness::http_listener("http", port)),
        service("private", &[secure.addr]),
        service("public", &[secure.addr]),
        format!("---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: ca, namespace: default}}\ndata:\n  ca.crt: |\n{indented}"),
        policy("private", "{caCertificateRefs: [{group: '', kind: ConfigMap, name: ca}], hostname: backend.internal}"),
        policy("public", "{wellKnownCACertificates: System, hostname: backend.internal}"),
        http_route(
            "both",
            "  rules:\n  - matches: [{path: {type: PathPrefix, value: /private}}]\n    backendRefs: [{name: private, port: 80}]\n  - matches: [{path: {type: PathPrefix, value: /public}}]\n    backendRefs: [{name: public, port: 80}]",
        ),
    ]
    .concat();
    let h = Harness::start(&yaml, false).await?;
    let r = h.until(port, &Request::get("any.example", "/private"), |r| r.status == 200).await?;
    assert_eq!(r.header("x-backend"), Some("secure"), "verified with the ConfigMap's CA");
    // The system's trust store is loaded by Envoy (no NACK) and does not know the test CA.
    let r = h.until(port, &Request::get("any.example", "/public"), |r| r.status != 404).await?;
    assert_eq!(r.status, 503, "a certificate the system does not trust is refused");
    h.assert_no_nacks().await
}
