//! Golden fixtures for TLS virtual hosts: redirects, certificate errors, the fallback
//! certificate, delegation and root namespaces.

use super::*;

#[test]
fn tls_virtual_hosts_redirect_plain_http_unless_insecure_is_permitted() {
    let yaml = proxy(
        "root",
        "  virtualhost: {fqdn: secure.example.com, tls: {secretName: cert, minimumProtocolVersion: '1.3'}}
  routes:
  - conditions: [{prefix: /}]
    services: [{name: web, port: 80}]
  - conditions: [{prefix: /open}]
    permitInsecure: true
    services: [{name: web, port: 80}]",
    );
    let (t, statuses) = run(&yaml);
    assert_eq!(render(&statuses), ["apps/root valid: Valid HTTPProxy"]);
    let rules = http_rules(&t, "secure.example.com");
    let redirect = |r: &ir::HttpRule| {
        r.filters
            .iter()
            .any(|f| matches!(f, HttpFilter::Redirect(x) if x.status == 301 && x.scheme.as_deref() == Some("https")))
    };
    assert!(redirect(rules[0]) && !redirect(rules[1]));
    let fleet = &t.ir.fleets[0];
    let https = fleet.listeners.iter().find(|l| l.name == "ingress_https/secure.example.com").expect("https listener");
    assert_eq!(https.port, 8443);
    let tls = https.tls.as_ref().unwrap();
    assert_eq!(tls.certificates[0].name, "cert");
    assert_eq!(tls.min_version, Some(ir::TlsVersion::V1_3));
    assert!(https.http_routes.iter().flat_map(|r| &r.rules).all(|r| !redirect(r)));

    let (_, disabled) = run_with(&yaml, &Options { disable_permit_insecure: true, ..Default::default() });
    assert_eq!(render(&disabled), ["apps/root valid: Valid HTTPProxy"]);
}

#[test]
fn tls_errors_stop_the_virtual_host() {
    let cases: &[(&str, &str)] = &[
        (
            "{secretName: cert, passthrough: true}",
            "TLSError/TLSConfigNotValid: Spec.VirtualHost.TLS: both Passthrough and SecretName were specified",
        ),
        ("{}", "TLSError/TLSConfigNotValid: Spec.VirtualHost.TLS: neither Passthrough nor SecretName were specified"),
        (
            "{secretName: certs/shared}",
            "TLSError/DelegationNotPermitted: Spec.VirtualHost.TLS Secret \"certs/shared\" certificate delegation not permitted",
        ),
        (
            "{secretName: nope}",
            "TLSError/SecretNotValid: Spec.VirtualHost.TLS Secret \"nope\" is invalid: Secret not found",
        ),
        (
            "{secretName: cert, minimumProtocolVersion: '1.3', maximumProtocolVersion: '1.2'}",
            "TLSError/TLSConfigNotValid: Spec.Virtualhost.TLS the minimum protocol version is greater than the maximum protocol version",
        ),
        (
            "{secretName: cert, enableFallbackCertificate: true}",
            "TLSError/FallbackNotPresent: Spec.Virtualhost.TLS enabled fallback but the fallback Certificate Secret is not configured in Contour configuration file",
        ),
        (
            "{passthrough: true, clientValidation: {caSecret: cert}}",
            "TLSError/TLSIncompatibleFeatures: Spec.VirtualHost.TLS passthrough cannot be combined with tls.clientValidation",
        ),
        (
            "{secretName: cert, clientValidation: {caSecret: cert}}",
            "TLSError/ClientValidationInvalid: Spec.VirtualHost.TLS client validation is invalid: invalid CA Secret \"apps/cert\": empty \"ca.crt\" key",
        ),
        (
            "{secretName: cert, clientValidation: {caSecret: certs/shared}}",
            "TLSError/DelegationNotPermitted: Spec.VirtualHost.TLS CA Secret \"certs/shared\" is invalid: Certificate delegation not permitted",
        ),
    ];
    for (tls, expected) in cases {
        let yaml = proxy(
            "root",
            &format!(
                "  virtualhost: {{fqdn: example.com, tls: {tls}}}\n  routes: [{{services: [{{name: web, port: 80}}]}}]"
            ),
        );
        let (t, statuses) = run(&yaml);
        assert_eq!(
            render(&statuses),
            [
                "apps/root invalid: At least one error present, see Errors for details".to_string(),
                format!("  {expected}")
            ],
            "for {tls}"
        );
        assert!(t.ir.fleets.is_empty(), "{tls}");
    }
}

#[test]
fn fallback_certificates_serve_clients_without_sni() {
    let yaml = proxy(
        "root",
        "  virtualhost: {fqdn: example.com, tls: {secretName: cert, enableFallbackCertificate: true}}\n  routes: [{services: [{name: web, port: 80}]}]",
    );
    let fallback = |name: &str| Options {
        fallback_certificate: Some(ir::ObjectRef { namespace: "certs".into(), name: name.into() }),
        ..Default::default()
    };
    let (t, statuses) = run_with(&yaml, &fallback("shared"));
    assert_eq!(
        render(&statuses),
        [
            "apps/root invalid: At least one error present, see Errors for details",
            "  TLSError/FallbackNotDelegated: Spec.VirtualHost.TLS Secret \"certs/shared\" is not configured for certificate delegation",
        ]
    );
    assert!(t.ir.fleets.is_empty());
    let delegation = "apiVersion: projectcontour.io/v1\nkind: TLSCertificateDelegation\nmetadata: {name: d, namespace: certs}\nspec: {delegations: [{secretName: shared, targetNamespaces: [apps]}, {secretName: gone, targetNamespaces: [apps]}]}\n---\n";
    let (_, statuses) = run_with(&format!("{delegation}{yaml}"), &fallback("gone"));
    assert_eq!(
        render(&statuses)[1],
        "  TLSError/FallbackNotValid: Spec.Virtualhost.TLS Secret \"certs/gone\" fallback certificate is invalid: Secret not found"
    );
    let (t, statuses) = run_with(&format!("{delegation}{yaml}"), &fallback("shared"));
    assert_eq!(render(&statuses), ["apps/root valid: Valid HTTPProxy"]);
    let listener = t.ir.fleets[0].listeners.iter().find(|l| l.name == "ingress_https/fallback").expect("fallback");
    assert_eq!(
        (listener.hostname.as_deref(), listener.http_routes[0].hostnames.as_slice()),
        (None, &["example.com".to_string()][..])
    );
}

#[test]
fn delegated_certificates_and_root_namespaces() {
    let delegation = "apiVersion: projectcontour.io/v1
kind: TLSCertificateDelegation
metadata: {name: d, namespace: certs}
spec: {delegations: [{secretName: shared, targetNamespaces: ['*']}]}
---
";
    let yaml = format!(
        "{delegation}{}",
        proxy(
            "root",
            "  virtualhost: {fqdn: example.com, tls: {secretName: certs/shared}}\n  routes: [{services: [{name: web, port: 80}]}]"
        )
    );
    let (t, statuses) = run(&yaml);
    assert_eq!(render(&statuses), ["apps/root valid: Valid HTTPProxy"]);
    let https = t.ir.fleets[0].listeners.iter().find(|l| l.tls.is_some()).expect("https");
    assert_eq!(
        https.tls.as_ref().unwrap().certificates[0],
        ir::ObjectRef { namespace: "certs".into(), name: "shared".into() }
    );

    // `*` grants every namespace only on its own.
    let (_, statuses) = run(&yaml.replace("targetNamespaces: ['*']", "targetNamespaces: [other, '*']"));
    assert_eq!(statuses[0].errors[0].reason, "DelegationNotPermitted");

    let options = Options { root_namespaces: vec!["roots".into()], ..Default::default() };
    let (t, statuses) = run_with(&yaml, &options);
    assert_eq!(
        render(&statuses),
        [
            "apps/root invalid: At least one error present, see Errors for details",
            "  RootNamespaceError/RootProxyNotAllowedInNamespace: root HTTPProxy cannot be defined in this namespace",
        ]
    );
    assert!(t.ir.fleets.is_empty());
}
