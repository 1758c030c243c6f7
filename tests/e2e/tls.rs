//! TLS through Envoy: HTTPS termination with SNI-chosen certificates (421 for another Host), and
//! TLS passthrough.

use testkit::{Backend, Ca, Issued, NetnsBackend, Request, apply_yaml};

use crate::harness::{Harness, gateway, gateway_api_server, http_listener, http_route, service};

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
        gateway(&http_listener("http", port)),
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

/// A ClusterTrustBundle read through the API server is a BackendTLSPolicy's CA: while it holds
/// another CA the backend is refused; once it holds the backend's CA, the backend is verified.
/// (A refused handshake leaves no connection behind, so the change shows on the next request.)
#[tokio::test]
async fn a_cluster_trust_bundle_from_the_api_server_verifies_backends() -> anyhow::Result<()> {
    let (_api, client) = gateway_api_server().await?;
    let (ca, other) = (Ca::new()?, Ca::new()?);
    // The API server refuses loopback endpoints: the backend lives in a namespace of its own.
    let secure = NetnsBackend::start_tls("secure", &ca.issue(&["backend.internal"])?).await?;
    let port = testkit::free_port();
    let bundle = |ca: &Ca| cluster_trust_bundle("backends", ca);
    let yaml = [
        gateway(&http_listener("http", port)),
        service("private", &[secure.addr]),
        bundle(&other),
        "---\napiVersion: gateway.networking.k8s.io/v1\nkind: BackendTLSPolicy\nmetadata: {name: private, namespace: default}\nspec:\n  targetRefs: [{group: '', kind: Service, name: private}]\n  validation: {caCertificateRefs: [{group: certificates.k8s.io, kind: ClusterTrustBundle, name: backends}], hostname: backend.internal}\n".to_string(),
        http_route("private", "  rules: [{backendRefs: [{name: private, port: 80}]}]"),
    ]
    .concat();
    apply_yaml(&client, &yaml).await?;
    let h = Harness::start_kubernetes(client.clone(), false).await?;
    let req = Request::get("any.example", "/");
    let r = h.until(port, &req, |r| r.status != 404).await?;
    assert_eq!(r.status, 503, "a certificate the bundle does not trust is refused");
    apply_yaml(&client, &bundle(&ca)).await?;
    let r = h.until(port, &req, |r| r.status == 200).await?;
    assert_eq!(r.header("x-backend"), Some("secure"), "verified with the bundle's new CA");
    h.assert_no_nacks().await
}

/// A ClusterTrustBundle `name` holding `ca`'s certificate.
fn cluster_trust_bundle(name: &str, ca: &Ca) -> String {
    let indented: String = ca.pem().lines().map(|l| format!("    {l}\n")).collect();
    format!(
        "---\napiVersion: certificates.k8s.io/v1beta1\nkind: ClusterTrustBundle\nmetadata: {{name: {name}}}\nspec:\n  trustBundle: |\n{indented}"
    )
}

/// A Gateway's client certificate check (`spec.tls.frontend`) with its CA in a
/// ClusterTrustBundle: a client whose certificate that CA issued gets in; one without a
/// certificate, or with one from another CA, does not.
#[tokio::test]
async fn a_cluster_trust_bundle_checks_client_certificates() -> anyhow::Result<()> {
    let (ca, clients) = (Ca::new()?, Ca::new()?);
    let web = Backend::start("web").await?;
    let port = testkit::free_port();
    // The Gateway's spec.tls follows its listeners.
    let listeners = format!(
        "  - {{name: https, port: {port}, protocol: HTTPS, hostname: mtls.test, tls: {{certificateRefs: [{{name: cert}}]}}}}
  tls: {{frontend: {{default: {{validation: {{caCertificateRefs: [{{group: certificates.k8s.io, kind: ClusterTrustBundle, name: clients}}]}}}}}}}}"
    );
    let yaml = [
        gateway(&listeners),
        tls_secret("cert", &ca.issue(&["mtls.test"])?),
        cluster_trust_bundle("clients", &clients),
        service("web", &[web.addr]),
        http_route("mtls", "  rules: [{backendRefs: [{name: web, port: 80}]}]"),
    ]
    .concat();
    let h = Harness::start(&yaml, false).await?;
    let req = Request::get("mtls.test", "/");
    let client = clients.issue(&["client.example"])?;
    let r = h.until_tls(port, "mtls.test", &ca.pem(), Some(&client), &req).await?;
    assert_eq!((r.status, r.header("x-backend")), (200, Some("web")));
    let addr = ([127, 0, 0, 1], port).into();
    assert!(testkit::request_tls(addr, "mtls.test", &ca.pem(), &req).await.is_err(), "no certificate, no answer");
    let stranger = ca.issue(&["client.example"])?;
    assert!(
        testkit::request_mtls(addr, "mtls.test", &ca.pem(), &stranger, &req).await.is_err(),
        "a certificate the bundle's CA did not issue is refused"
    );
    h.assert_no_nacks().await
}
