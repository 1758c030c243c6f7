//! A Gateway's own TLS settings: client certificate validation per port (`spec.tls.frontend`)
//! and the certificate presented to backends (`spec.tls.backend`).

use super::*;
use ir::ObjectRef;

/// A Gateway with four HTTPS listeners (ports 443, 7443, 8443, 6443) and an HTTP one (80),
/// `frontend` as its `spec.tls.frontend`, and the objects the references may name.
fn fixture(frontend: &str, backend: &str) -> String {
    format!(
        r#"{CLASS}---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {{name: gw, namespace: infra, generation: 3}}
spec:
  gatewayClassName: contour
  tls: {{frontend: {frontend}, backend: {backend}}}
  listeners:
  - {{name: https, port: 443, protocol: HTTPS, tls: {{certificateRefs: [{{name: cert}}]}}}}
  - {{name: unresolved, port: 7443, protocol: HTTPS, tls: {{certificateRefs: [{{name: cert}}]}}}}
  - {{name: kind, port: 8443, protocol: HTTPS, tls: {{certificateRefs: [{{name: cert}}]}}}}
  - {{name: grant, port: 6443, protocol: HTTPS, tls: {{certificateRefs: [{{name: cert}}]}}}}
  - {{name: http, port: 80, protocol: HTTP}}
---
apiVersion: v1
kind: Secret
metadata: {{name: cert, namespace: infra}}
type: kubernetes.io/tls
stringData: {{tls.crt: "{PEM}", tls.key: "{KEY}"}}
---
apiVersion: v1
kind: Secret
metadata: {{name: client, namespace: web}}
type: kubernetes.io/tls
stringData: {{tls.crt: "{PEM}", tls.key: "{KEY}"}}
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: ca, namespace: infra}}
data: {{ca.crt: "{PEM}"}}
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: ca, namespace: web}}
data: {{ca.crt: "{PEM}"}}
"#
    )
}

const PER_PORT: &str = "{default: {validation: {caCertificateRefs: [{group: '', kind: ConfigMap, name: ca}]}},
  perPort: [
   {port: 7443, tls: {validation: {caCertificateRefs: [{group: '', kind: ConfigMap, name: missing}]}}},
   {port: 8443, tls: {validation: {caCertificateRefs: [{group: '', kind: Service, name: web}]}}},
   {port: 6443, tls: {validation: {caCertificateRefs: [{group: '', kind: ConfigMap, name: ca, namespace: web}]}}},
   {port: 80, tls: {validation: {caCertificateRefs: [{group: '', kind: ConfigMap, name: missing}]}}}]}";

#[test]
fn frontend_validation_resolves_per_port_and_refuses_listeners_without_a_ca() {
    let (t, status) = translate_with_status(&fixture(PER_PORT, "{}"), &Options::default());
    let gateway = &status.gateways[0];
    let listener = |name: &str| gateway.listeners.iter().find(|l| l.name == name).unwrap();
    // The default applies to 443: its CA is a ConfigMap, every client must present a certificate.
    let fleet = &t.ir.fleets[0];
    let https = fleet.listeners.iter().find(|l| l.name == "https").unwrap();
    let cv = https.tls.as_ref().unwrap().client_validation.as_ref().expect("validated");
    assert_eq!(cv.ca, Some(ObjectRef { namespace: "infra".into(), name: "ca".into() }));
    assert_eq!((cv.ca_kind, cv.optional, cv.skip_verify), (ir::CaKind::ConfigMap, false, false));
    assert_eq!(condition(&listener("https").conditions, "Accepted"), (true, "Accepted"));
    assert_eq!(condition(&listener("https").conditions, "Programmed"), (true, "Programmed"));
    // Each broken port's listener is refused with the spec's reasons, and not served.
    for (name, reason) in
        [("unresolved", "InvalidCACertificateRef"), ("kind", "InvalidCACertificateKind"), ("grant", "RefNotPermitted")]
    {
        let conditions = &listener(name).conditions;
        assert_eq!(condition(conditions, "ResolvedRefs"), (false, reason), "{name}");
        assert_eq!(condition(conditions, "Accepted"), (false, "NoValidCACertificate"), "{name}");
        assert!(!condition(conditions, "Programmed").0, "{name}");
        assert_eq!(fleet.listeners.iter().find(|l| l.name == name).unwrap().port, 0, "{name} is not served");
    }
    // A plain HTTP listener has no TLS to validate: its port's entry is ignored.
    assert_eq!(condition(&listener("http").conditions, "ResolvedRefs"), (true, "ResolvedRefs"));
    // The Gateway sums its listeners' references up; nothing is insecure.
    assert_eq!(condition(&gateway.conditions, "ResolvedRefs"), (false, "ListenersNotResolved"));
    assert!(gateway.conditions.iter().all(|c| c.type_ != "InsecureFrontendValidationMode"));
    assert!(gateway.conditions.iter().all(|c| c.observed_generation == 3));
}

#[test]
fn a_reference_grant_admits_a_ca_in_another_namespace() {
    let grant = "\n---\napiVersion: gateway.networking.k8s.io/v1beta1\nkind: ReferenceGrant
metadata: {name: ca, namespace: web}
spec:
  from: [{group: gateway.networking.k8s.io, kind: Gateway, namespace: infra}]
  to: [{group: '', kind: ConfigMap, name: ca}]\n";
    let yaml = fixture(PER_PORT, "{}") + grant;
    let (t, status) = translate_with_status(&yaml, &Options::default());
    let grant = status.gateways[0].listeners.iter().find(|l| l.name == "grant").unwrap();
    assert_eq!(condition(&grant.conditions, "ResolvedRefs"), (true, "ResolvedRefs"));
    let listener = t.ir.fleets[0].listeners.iter().find(|l| l.name == "grant").unwrap();
    let ca = listener.tls.as_ref().unwrap().client_validation.as_ref().unwrap().ca.clone();
    assert_eq!(ca, Some(ObjectRef { namespace: "web".into(), name: "ca".into() }));
}

#[test]
fn a_cluster_trust_bundle_is_a_ca_without_namespace_or_grant() {
    let frontend = "{default: {validation: {caCertificateRefs: [{group: certificates.k8s.io, kind: ClusterTrustBundle, name: clients}]}},
  perPort: [{port: 7443, tls: {validation: {caCertificateRefs: [{group: certificates.k8s.io, kind: ClusterTrustBundle, name: absent}]}}}]}";
    let bundle = format!(
        "---\napiVersion: certificates.k8s.io/v1beta1\nkind: ClusterTrustBundle\nmetadata: {{name: clients}}\nspec: {{trustBundle: \"{PEM}\"}}\n"
    );
    let (t, status) = translate_with_status(&(fixture(frontend, "{}") + &bundle), &Options::default());
    let listener = |name: &str| status.gateways[0].listeners.iter().find(|l| l.name == name).unwrap();
    let https = t.ir.fleets[0].listeners.iter().find(|l| l.name == "https").unwrap();
    let cv = https.tls.as_ref().unwrap().client_validation.as_ref().expect("validated");
    assert_eq!(cv.ca, Some(ObjectRef { namespace: String::new(), name: "clients".into() }));
    assert_eq!(cv.ca_kind, ir::CaKind::ClusterTrustBundle);
    assert_eq!(condition(&listener("https").conditions, "ResolvedRefs"), (true, "ResolvedRefs"));
    let unresolved = &listener("unresolved").conditions;
    assert_eq!(condition(unresolved, "ResolvedRefs"), (false, "InvalidCACertificateRef"));
    let message = &unresolved.iter().find(|c| c.type_ == "ResolvedRefs").unwrap().message;
    assert!(message.contains("ClusterTrustBundle absent has no PEM CA certificate in spec.trustBundle"), "{message}");
}

#[test]
fn insecure_fallback_lets_any_client_in_and_says_so() {
    let frontend = "{default: {validation: {mode: AllowInsecureFallback,
      caCertificateRefs: [{group: '', kind: ConfigMap, name: ca}]}}}";
    let (t, status) = translate_with_status(&fixture(frontend, "{}"), &Options::default());
    let https = &t.ir.fleets[0].listeners[0];
    let cv = https.tls.as_ref().unwrap().client_validation.as_ref().unwrap();
    assert!(cv.optional && cv.skip_verify, "no certificate, or one that does not verify, still gets in");
    let gateway = &status.gateways[0];
    assert_eq!(condition(&gateway.conditions, "InsecureFrontendValidationMode"), (true, "ConfigurationChanged"));
    assert_eq!(condition(&gateway.conditions, "ResolvedRefs"), (true, "ResolvedRefs"));
}

#[test]
fn the_backend_client_certificate_needs_a_grant_and_a_tls_pair() {
    let cases = [
        ("{clientCertificateRef: {name: cert}}", Some("infra/cert"), (true, "ResolvedRefs")),
        ("{clientCertificateRef: {name: client, namespace: web}}", None, (false, "RefNotPermitted")),
        ("{clientCertificateRef: {name: absent}}", None, (false, "InvalidClientCertificateRef")),
        ("{clientCertificateRef: {kind: ConfigMap, name: ca}}", None, (false, "InvalidClientCertificateRef")),
    ];
    for (backend, expected, resolved) in cases {
        let (t, status) = translate_with_status(&fixture("{default: {}}", backend), &Options::default());
        let got = t.ir.fleets[0].backend_certificate.as_ref().map(|r| format!("{}/{}", r.namespace, r.name));
        assert_eq!(got.as_deref(), expected, "{backend}");
        assert_eq!(condition(&status.gateways[0].conditions, "ResolvedRefs"), resolved, "{backend}");
        // The Gateway is served either way.
        assert_eq!(condition(&status.gateways[0].conditions, "Accepted"), (true, "Accepted"), "{backend}");
    }
}
