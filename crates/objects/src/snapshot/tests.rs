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

#[test]
fn upsert_of_an_equal_object_changes_nothing_and_keeps_its_identity() {
    let service = |port: u16| {
        let yaml =
            format!("apiVersion: v1\nkind: Service\nmetadata: {{name: web}}\nspec: {{ports: [{{port: {port}}}]}}\n");
        parse_documents(&yaml).remove(0).expect("parses")
    };
    let key = ObjectKey::new("default", "web");
    let mut s = Snapshot::default();
    assert!(s.upsert(service(80)), "new");
    let before = s.identity(Kind::Service, &key);
    assert!(!s.upsert(service(80)), "equal: no change");
    assert_eq!(s.identity(Kind::Service, &key), before, "the object read before stays");
    assert!(s.upsert(service(81)), "different");
    assert_ne!(s.identity(Kind::Service, &key), before);
}

#[test]
fn reads_stay_valid_until_an_object_read_changes() {
    let mut s =
        Snapshot::from_yaml("apiVersion: v1\nkind: Service\nmetadata: {name: a}\nspec: {ports: [{port: 80}]}\n")
            .expect("parses");
    let mut watch = KindWatch::default();
    assert_eq!(watch.changed(&s, &[Kind::Service, Kind::Secret]).len(), 2, "the first call reports every kind");
    let mut reads = Reads::default();
    reads.record(&s, Kind::Service, &ObjectKey::new("default", "a"));
    reads.record(&s, Kind::Service, &ObjectKey::new("default", "missing"));
    assert!(watch.changed(&s, &[Kind::Service]).is_empty());

    // Another Service arrives: a change of the kind, but not of anything read.
    let other = "apiVersion: v1\nkind: Service\nmetadata: {name: b}\nspec: {ports: [{port: 80}]}\n";
    s.upsert(parse_documents(other).remove(0).expect("parses"));
    let changed = watch.changed(&s, &[Kind::Service]);
    assert_eq!(changed.len(), 1);
    assert!(reads.unchanged(&s, &changed));

    // The Service read as missing arrives.
    let missing = "apiVersion: v1\nkind: Service\nmetadata: {name: missing}\nspec: {ports: [{port: 80}]}\n";
    s.upsert(parse_documents(missing).remove(0).expect("parses"));
    let changed = watch.changed(&s, &[Kind::Service]);
    assert!(!reads.unchanged(&s, &changed));
}

#[test]
fn changes_name_the_keys_added_removed_and_replaced() {
    let service = |name: &str, port: u16| {
        let yaml =
            format!("apiVersion: v1\nkind: Service\nmetadata: {{name: {name}}}\nspec: {{ports: [{{port: {port}}}]}}\n");
        parse_documents(&yaml).remove(0).expect("parses")
    };
    let mut s = Snapshot::default();
    for name in ["a", "b", "c"] {
        s.upsert(service(name, 80));
    }
    let mut watch = KindWatch::default();
    assert_eq!(
        watch.changed(&s, &[Kind::Service, Kind::Secret]).keys(Kind::Service),
        None,
        "the first call knows no keys"
    );
    s.upsert(service("b", 81));
    s.remove(Kind::Service, &ObjectKey::new("default", "c"));
    s.upsert(service("d", 80));
    s.upsert(service("a", 80));
    let changed = watch.changed(&s, &[Kind::Service, Kind::Secret]);
    let keys: Vec<&str> = changed.keys(Kind::Service).expect("known").iter().map(|k| k.name.as_str()).collect();
    assert_eq!(keys, ["b", "c", "d"], "an equal object written again is no change");
    assert_eq!(changed.len(), 1);
    assert!(watch.changed(&s, &[Kind::Service]).is_empty());
}

#[test]
fn a_cluster_trust_bundle_is_read_at_any_of_its_versions() {
    let pem = crate::secrets::testing::quoted(crate::secrets::testing::CERT);
    for version in ["v1alpha1", "v1beta1", "v1"] {
        let yaml = format!(
            "apiVersion: certificates.k8s.io/{version}\nkind: ClusterTrustBundle\nmetadata: {{name: b}}\nspec: {{trustBundle: {pem}}}\n"
        );
        let snapshot = Snapshot::from_yaml(&yaml).unwrap_or_else(|e| panic!("{version}: {e}"));
        let bundle = &snapshot.cluster_trust_bundles[&ObjectKey::new("", "b")];
        assert!(bundle.spec.trust_bundle.contains("BEGIN CERTIFICATE"), "{version}");
    }
}
