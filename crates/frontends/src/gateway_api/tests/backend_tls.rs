//! BackendTLSPolicy: conflicts, CA references, subject names and ancestors.

use super::*;

fn policy(name: &str, created: &str, target: &str, validation: &str) -> String {
    format!(
        r#"
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {{name: {name}, namespace: infra, creationTimestamp: "{created}", generation: 2}}
spec:
  targetRefs: [{target}]
  validation: {validation}
"#
    )
}

fn fixture() -> String {
    format!(
        r#"{CLASS}---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {{name: gw, namespace: infra}}
spec:
  gatewayClassName: contour
  listeners: [{{name: http, port: 80, protocol: HTTP}}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: web, namespace: infra}}
spec:
  parentRefs: [{{name: gw}}]
  rules: [{{backendRefs: [{{name: tls, port: 443}}]}}]
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: ca, namespace: infra}}
data: {{ca.crt: "{PEM}"}}
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: empty, namespace: infra}}
data: {{}}
{}{}{}{}{}"#,
        policy(
            "older",
            "2026-01-01T00:00:00Z",
            "{group: '', kind: Service, name: tls}",
            "{caCertificateRefs: [{group: '', kind: ConfigMap, name: ca}], hostname: Abc.example.com}"
        ),
        policy(
            "newer",
            "2026-01-02T00:00:00Z",
            "{group: '', kind: Service, name: tls}",
            "{caCertificateRefs: [{group: '', kind: ConfigMap, name: ca}], hostname: other.example.com}"
        ),
        policy(
            "port",
            "2026-01-03T00:00:00Z",
            "{group: '', kind: Service, name: tls, sectionName: https}",
            "{caCertificateRefs: [{group: '', kind: ConfigMap, name: ca}], hostname: abc.example.com, subjectAltNames: [{type: URI, uri: 'spiffe://abc/x'}, {type: Hostname, hostname: san.example.com}]}"
        ),
        policy(
            "missing",
            "2026-01-01T00:00:00Z",
            "{group: '', kind: Service, name: missing}",
            "{caCertificateRefs: [{group: '', kind: ConfigMap, name: empty}, {group: '', kind: ConfigMap, name: absent}], hostname: abc.example.com}"
        ),
        policy(
            "kind",
            "2026-01-01T00:00:00Z",
            "{group: '', kind: Service, name: kind}",
            "{caCertificateRefs: [{group: invalid.io, kind: InvalidKind, name: x}], hostname: abc.example.com}"
        ),
    )
}

#[test]
fn the_oldest_policy_of_a_target_applies_and_a_port_has_its_own() {
    let s = snapshot(&fixture());
    let evaluation = crate::gateway_api::backend_tls::evaluate(&s);
    let applied: Vec<_> = evaluation
        .applied
        .iter()
        .map(|p| (p.service.as_str(), p.section.as_deref(), p.origin.name.as_str(), p.tls.is_some()))
        .collect();
    assert_eq!(
        applied,
        [
            ("kind", None, "kind", false),
            ("missing", None, "missing", false),
            ("tls", None, "older", true),
            ("tls", Some("https"), "port", true),
        ]
    );
    let older = evaluation.applied[2].tls.as_ref().unwrap();
    assert_eq!(older.sni, "abc.example.com");
    assert_eq!(older.validation.subject_names, ["abc.example.com"], "without SANs, the hostname is checked");
    let port = evaluation.applied[3].tls.as_ref().unwrap();
    assert_eq!(port.validation.subject_names, ["san.example.com"], "with SANs, only they are");
    assert_eq!(port.validation.subject_uris, ["spiffe://abc/x"]);
    assert_eq!(port.sni, "abc.example.com", "the hostname is still the SNI");

    let verdict = |name: &str| {
        let v = &evaluation.verdicts[&objects::ObjectKey::new("infra", name)];
        ((v.accepted.0, v.accepted.1), (v.resolved.0, v.resolved.1))
    };
    assert_eq!(verdict("older"), ((true, "Accepted"), (true, "ResolvedRefs")));
    assert_eq!(verdict("newer"), ((false, "Conflicted"), (true, "ResolvedRefs")));
    assert_eq!(verdict("port"), ((true, "Accepted"), (true, "ResolvedRefs")), "a port and its Service do not conflict");
    assert_eq!(verdict("missing"), ((false, "NoValidCACertificate"), (false, "InvalidCACertificateRef")));
    assert_eq!(verdict("kind"), ((false, "NoValidCACertificate"), (false, "InvalidKind")));
}

#[test]
fn a_policy_reports_to_the_gateways_whose_routes_reach_its_service() {
    let (_, set) = translate_with_status(&fixture(), &Options::default());
    let names: Vec<_> = set.policies.iter().map(|p| (p.kind, p.key.name.as_str())).collect();
    assert_eq!(
        names,
        [("BackendTLSPolicy", "newer"), ("BackendTLSPolicy", "older"), ("BackendTLSPolicy", "port")],
        "policies of Services no route of ours reaches get no status"
    );
    let newer = &set.policies[0];
    assert_eq!((newer.parents[0].parent.namespace.as_str(), newer.parents[0].parent.name.as_str()), ("infra", "gw"));
    let accepted = &newer.parents[0].conditions[0];
    assert_eq!((accepted.type_, accepted.status, accepted.reason), ("Accepted", false, "Conflicted"));
    assert_eq!(accepted.observed_generation, 2);
}

/// A TLSRoute reaches a policy's Service through a listener that terminates TLS (the Gateway
/// re-encrypts), not through a passthrough one (the client's TLS goes to the backend as is).
#[test]
fn a_tls_route_makes_its_gateway_an_ancestor_only_where_tls_terminates() {
    let gateway = |name: &str, mode: &str| {
        format!(
            "---\napiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {{name: {name}, namespace: infra}}\nspec:\n  gatewayClassName: contour\n  listeners: [{{name: tls, port: 443, protocol: TLS, hostname: abc.example.com, tls: {{mode: {mode}, certificateRefs: [{{name: cert}}]}}}}]\n"
        )
    };
    let route = |name: &str, gateway: &str, service: &str| {
        format!(
            "---\napiVersion: gateway.networking.k8s.io/v1\nkind: TLSRoute\nmetadata: {{name: {name}, namespace: infra}}\nspec:\n  parentRefs: [{{name: {gateway}}}]\n  hostnames: [abc.example.com]\n  rules: [{{backendRefs: [{{name: {service}, port: 443}}]}}]\n"
        )
    };
    let validation = "{caCertificateRefs: [{group: '', kind: ConfigMap, name: ca}], hostname: abc.example.com}";
    let yaml = [
        CLASS.to_string(),
        gateway("terminating", "Terminate"),
        gateway("passing", "Passthrough"),
        format!("---\napiVersion: v1\nkind: Secret\nmetadata: {{name: cert, namespace: infra}}\ntype: kubernetes.io/tls\nstringData: {{tls.crt: \"{PEM}\", tls.key: \"{KEY}\"}}\n"),
        format!("---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: ca, namespace: infra}}\ndata: {{ca.crt: \"{PEM}\"}}\n"),
        route("re-encrypted", "terminating", "reencrypted"),
        route("passed", "passing", "passed"),
        policy("reencrypted", "2026-01-01T00:00:00Z", "{group: '', kind: Service, name: reencrypted}", validation),
        policy("passed", "2026-01-01T00:00:00Z", "{group: '', kind: Service, name: passed}", validation),
    ]
    .concat();
    let (_, set) = translate_with_status(&yaml, &Options::default());
    let ancestors: Vec<(&str, Vec<&str>)> = set
        .policies
        .iter()
        .map(|p| (p.key.name.as_str(), p.parents.iter().map(|a| a.parent.name.as_str()).collect()))
        .collect();
    assert_eq!(ancestors, [("reencrypted", vec!["terminating"])], "a passthrough listener is no ancestor");
}

#[test]
fn a_cluster_trust_bundle_verifies_backends() {
    let ctb = |name: &str| {
        format!(
            "{{caCertificateRefs: [{{group: certificates.k8s.io, kind: ClusterTrustBundle, name: {name}}}], hostname: api.example.com}}"
        )
    };
    let yaml = format!(
        "{}{}{}---\napiVersion: certificates.k8s.io/v1beta1\nkind: ClusterTrustBundle\nmetadata: {{name: backends}}\nspec: {{trustBundle: \"{PEM}\"}}\n",
        fixture(),
        policy("bundle", "2026-01-01T00:00:00Z", "{group: '', kind: Service, name: public}", &ctb("backends")),
        policy("absent", "2026-01-01T00:00:00Z", "{group: '', kind: Service, name: other}", &ctb("absent")),
    );
    let evaluation = crate::gateway_api::backend_tls::evaluate(&snapshot(&yaml));
    let applied = |service: &str| evaluation.applied.iter().find(|p| p.service == service).unwrap();
    let tls = applied("public").tls.as_ref().expect("the bundle verifies");
    assert_eq!(tls.validation.ca_kind, ir::CaKind::ClusterTrustBundle);
    assert_eq!(tls.validation.ca, ir::ObjectRef { namespace: String::new(), name: "backends".into() });
    assert!(applied("other").tls.is_none());
    let verdict = &evaluation.verdicts[&objects::ObjectKey::new("infra", "absent")];
    assert_eq!(verdict.resolved.1, "InvalidCACertificateRef");
    assert!(verdict.resolved.2.contains("has no PEM CA certificate in spec.trustBundle"), "{}", verdict.resolved.2);
}

#[test]
fn well_known_system_cas_verify_with_the_system_trust_store() {
    let yaml = format!(
        "{}{}{}",
        fixture(),
        policy(
            "system",
            "2026-01-01T00:00:00Z",
            "{group: '', kind: Service, name: public}",
            "{wellKnownCACertificates: System, hostname: api.example.com}"
        ),
        policy(
            "other",
            "2026-01-01T00:00:00Z",
            "{group: '', kind: Service, name: other}",
            "{wellKnownCACertificates: Mozilla, hostname: api.example.com}"
        ),
    );
    let evaluation = crate::gateway_api::backend_tls::evaluate(&snapshot(&yaml));
    let applied = |service: &str| evaluation.applied.iter().find(|p| p.service == service).unwrap();
    let system = applied("public").tls.as_ref().expect("the system's CAs verify");
    assert_eq!(system.validation.ca_kind, ir::CaKind::System);
    assert_eq!(system.validation.subject_names, ["api.example.com"]);
    assert!(applied("other").tls.is_none(), "an unknown trust store verifies nothing: requests fail");
    let verdict = |name: &str| evaluation.verdicts[&objects::ObjectKey::new("infra", name)].accepted.1;
    assert_eq!((verdict("system"), verdict("other")), ("Accepted", "Invalid"));
}

#[test]
fn a_section_naming_no_port_of_the_service_is_not_attached_and_said_so() {
    let service = "\n---\napiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: infra}\nspec: {ports: [{name: https, port: 443}]}\n";
    let validation = "{caCertificateRefs: [{group: '', kind: ConfigMap, name: ca}], hostname: web.example.com}";
    let yaml = format!(
        "{}{service}{}{}",
        fixture(),
        policy("typo", "2026-01-01T00:00:00Z", "{group: '', kind: Service, name: web, sectionName: htps}", validation),
        policy("port", "2026-01-01T00:00:00Z", "{group: '', kind: Service, name: web, sectionName: https}", validation),
    );
    let evaluation = crate::gateway_api::backend_tls::evaluate(&snapshot(&yaml));
    let typo = &evaluation.verdicts[&objects::ObjectKey::new("infra", "typo")].accepted;
    assert_eq!((typo.0, typo.1), (false, "TargetNotFound"));
    assert!(typo.2.contains("sectionName") && typo.2.contains("\"htps\""), "{}", typo.2);
    let web: Vec<_> =
        evaluation.applied.iter().filter(|p| p.service == "web").map(|p| p.origin.name.as_str()).collect();
    assert_eq!(web, ["port"], "only the policy of an existing port attaches");
}

/// A hostname Envoy cannot send as SNI (no DNS name, over 255 bytes) is refused with the field
/// named, and the policy is not applied.
#[test]
fn a_hostname_that_is_no_server_name_is_refused() {
    let long = format!("{}.example.com", "a".repeat(300));
    let yaml = fixture()
        + &policy(
            "long",
            "2025-01-01T00:00:00Z",
            "{group: '', kind: Service, name: tls}",
            &format!("{{caCertificateRefs: [{{group: '', kind: ConfigMap, name: ca}}], hostname: {long}}}"),
        );
    let (_, set) = translate_with_status(&yaml, &Options::default());
    let long = set.policies.iter().find(|p| p.key.name == "long").expect("the policy has our status");
    let accepted = &long.parents[0].conditions[0];
    assert_eq!((accepted.type_, accepted.status, accepted.reason), ("Accepted", false, "Invalid"));
    assert!(accepted.message.starts_with("spec.validation.hostname: invalid hostname"), "{}", accepted.message);
    let evaluation = crate::gateway_api::backend_tls::evaluate(&snapshot(&yaml));
    let applied = evaluation.applied.iter().find(|p| p.origin.name == "long").expect("evaluated");
    assert!(applied.tls.is_none(), "not applied with a server name Envoy refuses");
}
