use super::*;
use crate::parse_documents;

const DOCS: &str = r#"
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: infra}
spec:
  gatewayClassName: contour
  listeners: [{name: http, port: 8080, protocol: HTTP}]
---
apiVersion: v1
kind: Secret
metadata: {name: cert}
type: kubernetes.io/tls
stringData: {tls.crt: CRT, tls.key: KEY}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: nope}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: bad}
spec: {rules: 7}
"#;

#[test]
fn parses_each_document_and_reports_the_bad_ones_by_name() {
    let parsed = parse_documents(DOCS);
    assert_eq!(parsed.len(), 4);
    let Ok(Object::Gateway(gw)) = &parsed[0] else { panic!("{:?}", parsed[0]) };
    assert_eq!(gw.spec.listeners[0].port, 8080);
    let Ok(Object::Secret(secret)) = &parsed[1] else { panic!("{:?}", parsed[1]) };
    assert_eq!(secret.metadata.namespace.as_deref(), Some("default"));
    assert_eq!(secret.data.as_ref().unwrap()["tls.crt"].0, b"CRT");
    let err = parsed[2].as_ref().unwrap_err().to_string();
    assert!(err.contains("Deployment nope"), "{err}");
    let err = parsed[3].as_ref().unwrap_err().to_string();
    assert!(err.contains("HTTPRoute bad"), "{err}");
}

#[test]
fn changed_kinds_sees_only_what_changed() {
    let mut a = Snapshot::default();
    for o in parse_documents(DOCS).into_iter().flatten() {
        a.insert(o);
    }
    assert!(Snapshot::from_yaml(DOCS).is_err(), "the Deployment is not a kind we read");
    let mut b = a.clone();
    assert!(a.changed_kinds(&b).is_empty());
    b.remove(Kind::Secret, &ObjectKey::new("default", "cert"));
    assert_eq!(a.changed_kinds(&b).into_iter().collect::<Vec<_>>(), vec![Kind::Secret]);
}
