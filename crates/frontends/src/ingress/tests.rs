//! Ingress fixtures: objects in, default-fleet IR and diagnostics out.

use super::*;
use ir::{HttpFilter, StringMatch};

use crate::fixtures::tls_secret;

fn base() -> String {
    let service = "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: apps}\nspec: {ports: [{name: http, port: 80}]}\n";
    [service.to_string(), tls_secret("apps", "cert", ""), tls_secret("certs", "shared", "")].concat()
}

fn ingress(name: &str, annotations: &str, spec: &str) -> String {
    format!(
        "---\napiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {{name: {name}, namespace: apps, annotations: {{{annotations}}}}}\nspec:\n{spec}\n"
    )
}

fn run(extra: &str) -> Translation {
    let snapshot = Snapshot::from_yaml(&format!("{}{extra}", base())).expect("fixture parses");
    translate(&snapshot, &Options::default())
}

fn listener<'a>(t: &'a Translation, name: &str) -> Option<&'a Listener> {
    t.ir.fleets.first()?.listeners.iter().find(|l| l.name == name)
}

fn rules<'a>(t: &'a Translation, listener_name: &str, host: &str) -> Vec<&'a HttpRule> {
    let Some(l) = listener(t, listener_name) else { return Vec::new() };
    let wanted: Vec<String> = if host == "*" { Vec::new() } else { vec![host.to_string()] };
    l.http_routes.iter().filter(|r| r.hostnames == wanted).flat_map(|r| &r.rules).collect()
}

#[test]
fn classes_as_upstream_decides_them_and_ingress_classes_beyond() {
    let snapshot = |yaml: &str| Snapshot::from_yaml(yaml).unwrap();
    let one = |yaml: &str| match objects::parse_documents(yaml).remove(0).unwrap() {
        objects::Object::Ingress(i) => i,
        other => panic!("{other:?}"),
    };
    let none = one("apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: a}\nspec: {}\n");
    let contour = one(
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: b}\nspec: {ingressClassName: contour}\n",
    );
    let other = one(
        "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: c, annotations: {kubernetes.io/ingress.class: other}}\nspec: {ingressClassName: contour}\n",
    );
    let mine =
        one("apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: d}\nspec: {ingressClassName: mine}\n");
    let empty = snapshot("");
    assert!(is_ours(&empty, &none, &[]) && is_ours(&empty, &contour, &[]) && !is_ours(&empty, &other, &[]));
    let names = vec!["other".to_string()];
    assert!(!is_ours(&empty, &none, &names) && !is_ours(&empty, &contour, &names) && is_ours(&empty, &other, &names));
    // An IngressClass naming our controller makes its Ingresses ours; as the default, also those without a class.
    let classes = snapshot(&format!(
        "apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata: {{name: mine, annotations: {{ingressclass.kubernetes.io/is-default-class: 'true'}}}}\nspec: {{controller: {INGRESS_CONTROLLER}}}\n"
    ));
    assert!(!is_ours(&empty, &mine, &names) && is_ours(&classes, &mine, &names));
    assert!(is_ours(&classes, &none, &names), "the default IngressClass is ours");
}

#[test]
fn paths_by_type_default_backend_and_wildcards() {
    let t = run(&ingress(
        "web",
        "",
        "  defaultBackend: {service: {name: web, port: {number: 80}}}
  rules:
  - host: Www.Example.com
    http:
      paths:
      - {path: /api, pathType: Prefix, backend: {service: {name: web, port: {name: http}}}}
      - {path: /exact, pathType: Exact, backend: {service: {name: web, port: {number: 80}}}}
      - {path: '/items/[0-9]+', pathType: ImplementationSpecific, backend: {service: {name: web, port: {number: 80}}}}
      - {path: /plain, pathType: ImplementationSpecific, backend: {service: {name: web, port: {number: 80}}}}
      - {path: /gone, pathType: Prefix, backend: {service: {name: nope, port: {number: 80}}}}
      - {path: /badport, pathType: Prefix, backend: {service: {name: web, port: {number: 81}}}}
  - host: '*.wild.test'
    http:
      paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]",
    ));
    let paths: Vec<PathMatch> =
        rules(&t, HTTP_LISTENER, "www.example.com").iter().map(|r| r.matches[0].path.clone()).collect();
    assert_eq!(
        paths,
        [
            PathMatch::Prefix("/api".into()),
            PathMatch::Exact("/exact".into()),
            PathMatch::Regex("/items/[0-9]+".into()),
            PathMatch::StringPrefix("/plain".into()),
        ]
    );
    let reasons: Vec<&str> = t.diagnostics.iter().map(|d| d.reason).collect();
    assert_eq!(reasons, ["ServiceNotFound", "ServicePortInvalid"], "{:?}", t.diagnostics);
    assert_eq!(rules(&t, HTTP_LISTENER, "*").len(), 1, "the default backend serves any host");
    assert!(rules(&t, HTTP_LISTENER, "*")[0].matches[0].headers.is_empty(), "`*` alone is the catch-all");
    let wild = rules(&t, HTTP_LISTENER, "*.wild.test");
    assert!(
        wild[0].matches[0].headers.iter().any(|h| h.name == ":authority" && matches!(h.value, StringMatch::Regex(_)))
    );
}

#[test]
fn tls_hosts_annotations_and_redirects() {
    let delegation = "---\napiVersion: projectcontour.io/v1\nkind: TLSCertificateDelegation\nmetadata: {name: d, namespace: certs}\nspec: {delegations: [{secretName: shared, targetNamespaces: [apps]}]}\n";
    let yaml = [
        ingress(
            "secure",
            "kubernetes.io/ingress.allow-http: 'false', projectcontour.io/tls-minimum-protocol-version: '1.3', projectcontour.io/response-timeout: 2s, projectcontour.io/retry-on: 5xx, projectcontour.io/num-retries: '3', projectcontour.io/websocket-routes: '/ws'",
            "  tls: [{hosts: [a.test], secretName: cert}]
  rules:
  - host: a.test
    http: {paths: [{path: /ws, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]}",
        ),
        ingress(
            "redirect",
            "ingress.kubernetes.io/force-ssl-redirect: 'true', kubernetes.io/ingress.allow-http: 'false', projectcontour.io/tls-cert-namespace: certs, projectcontour.io/num-retries: lots",
            "  tls: [{hosts: [b.test], secretName: shared}]
  rules:
  - host: b.test
    http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]}",
        ),
        delegation.to_string(),
    ]
    .concat();
    let t = run(&yaml);
    assert!(rules(&t, HTTP_LISTENER, "a.test").is_empty(), "allow-http=false: no plain HTTP");
    let secure = rules(&t, "ingress_https/a.test", "a.test");
    assert_eq!(secure.len(), 1);
    assert_eq!(secure[0].request_timeout_ms, Some(2000));
    assert_eq!(secure[0].policy.retry.as_ref().map(|r| r.count), Some(3));
    assert!(secure[0].policy.websockets);
    let tls = listener(&t, "ingress_https/a.test").unwrap().tls.as_ref().unwrap();
    assert_eq!(tls.min_version, Some(TlsVersion::V1_3));
    // force-ssl-redirect wins over allow-http=false; the delegated Secret serves b.test.
    let plain = rules(&t, HTTP_LISTENER, "b.test");
    assert!(matches!(&plain[0].filters[0], HttpFilter::Redirect(r) if r.status == 301));
    let b = listener(&t, "ingress_https/b.test").unwrap().tls.as_ref().unwrap();
    assert_eq!(b.certificates[0], ObjectRef { namespace: "certs".into(), name: "shared".into() });
    assert!(
        t.diagnostics
            .iter()
            .any(|d| d.field == "metadata.annotations[projectcontour.io/num-retries]" && d.origin.name == "redirect")
    );

    // Without the delegation the Secret is refused and only plain HTTP is left.
    let t = run(&yaml.replace(delegation, ""));
    assert!(listener(&t, "ingress_https/b.test").is_none());
    assert!(t.diagnostics.iter().any(|d| d.reason == "DelegationNotPermitted"));
}
