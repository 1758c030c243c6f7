use super::*;

/// A Service `apps/web` and an HTTPProxy `apps/app` that owns `app.example.com`.
const CLUSTER: &str = "apiVersion: v1
kind: Service
metadata: {name: web, namespace: apps}
spec: {ports: [{port: 80}]}
---
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: app, namespace: apps, creationTimestamp: '2026-01-01T00:00:00Z'}
spec:
  virtualhost: {fqdn: app.example.com}
  routes: [{services: [{name: web, port: 80}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: contour}
spec: {controllerName: projectcontour.io/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: apps}
spec:
  gatewayClassName: contour
  listeners: [{name: http, protocol: HTTP, port: 80}]
";

fn judge_yaml(yaml: &str) -> Verdict {
    let snapshot = Arc::new(Snapshot::from_yaml(CLUSTER).expect("the cluster parses"));
    let object = objects::parse_documents(yaml).pop().expect("one object").expect("it parses");
    Judge::new(controller::Options::default()).judge(&snapshot, object)
}

fn proxy(namespace: &str, name: &str, spec: &str) -> String {
    format!(
        "apiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {{name: {name}, namespace: {namespace}}}\nspec:\n{spec}"
    )
}

#[test]
fn an_fqdn_another_namespace_owns_is_refused_naming_both() {
    let yaml = proxy(
        "other",
        "steal",
        "  virtualhost: {fqdn: app.example.com}\n  routes: [{services: [{name: web, port: 80}]}]\n",
    );
    let verdict = judge_yaml(&yaml);
    assert!(!verdict.allowed, "{verdict:?}");
    assert!(verdict.message.starts_with("HTTPProxy other/steal: spec.virtualhost.fqdn:"), "{}", verdict.message);
    assert!(verdict.message.ends_with("apps/app, other/steal (DuplicateVhost)"), "{}", verdict.message);
}

#[test]
fn an_update_of_the_owner_itself_is_allowed() {
    let yaml = proxy(
        "apps",
        "app",
        "  virtualhost: {fqdn: app.example.com}\n  routes: [{services: [{name: web, port: 80}], timeoutPolicy: {response: 5s}}]\n",
    );
    assert_eq!(judge_yaml(&yaml), Verdict::allow(Vec::new()));
}

#[test]
fn a_bad_regex_and_an_unknown_value_are_refused() {
    let regex = proxy(
        "apps",
        "regex",
        "  virtualhost: {fqdn: regex.example.com}\n  routes: [{conditions: [{regex: '/(unclosed'}], services: [{name: web, port: 80}]}]\n",
    );
    let verdict = judge_yaml(&regex);
    assert!(!verdict.allowed && verdict.message.contains("PathMatchConditionsNotValid"), "{verdict:?}");
    let strategy = proxy(
        "apps",
        "strategy",
        "  virtualhost: {fqdn: lb.example.com}\n  routes: [{services: [{name: web, port: 80, protocol: h3}]}]\n",
    );
    let verdict = judge_yaml(&strategy);
    assert!(!verdict.allowed && verdict.message.contains("UnsupportedProtocol"), "{verdict:?}");
}

#[test]
fn an_include_cycle_is_refused() {
    // apps/app includes apps/child; a child that includes apps/app back closes a cycle.
    let snapshot = Snapshot::from_yaml(&format!(
        "{CLUSTER}---\n{}",
        proxy(
            "apps",
            "root",
            "  virtualhost: {fqdn: root.example.com}\n  includes: [{name: child, namespace: apps}]\n"
        )
    ))
    .expect("parses");
    let child = proxy("apps", "child", "  includes: [{name: grandchild, namespace: apps}]\n");
    let grandchild = proxy("apps", "grandchild", "  includes: [{name: child, namespace: apps}]\n");
    let mut judge = Judge::new(controller::Options::default());
    let mut current = snapshot;
    current.insert(objects::parse_documents(&child).pop().unwrap().unwrap());
    let current = Arc::new(current);
    let object = objects::parse_documents(&grandchild).pop().unwrap().unwrap();
    let verdict = judge.judge(&current, object);
    assert!(!verdict.allowed, "{verdict:?}");
    assert!(verdict.message.contains("IncludeCreatesCycle"), "{}", verdict.message);
}

#[test]
fn what_may_come_later_is_allowed_with_warnings() {
    let service = proxy(
        "apps",
        "early",
        "  virtualhost: {fqdn: early.example.com}\n  routes: [{services: [{name: later, port: 80}]}]\n",
    );
    let verdict = judge_yaml(&service);
    assert!(verdict.allowed, "{verdict:?}");
    assert!(verdict.warnings.iter().any(|w| w.contains("ServiceUnresolvedReference")), "{verdict:?}");
    let secret = proxy(
        "apps",
        "secure",
        "  virtualhost: {fqdn: secure.example.com, tls: {secretName: not-yet}}\n  routes: [{services: [{name: web, port: 80}]}]\n",
    );
    let verdict = judge_yaml(&secret);
    assert!(verdict.allowed, "{verdict:?}");
    assert!(verdict.warnings.iter().any(|w| w.starts_with("spec.virtualhost.tls:")), "{verdict:?}");
    let orphan = proxy("apps", "child", "  routes: [{services: [{name: web, port: 80}]}]\n");
    let verdict = judge_yaml(&orphan);
    assert!(verdict.allowed, "no root includes it yet: {verdict:?}");
}

#[test]
fn gateway_api_objects_are_judged_too() {
    let route = "apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: route, namespace: apps}
spec:
  parentRefs: [{name: gw}]
  rules: [{backendRefs: [{name: not-yet, port: 80}]}]
";
    let verdict = judge_yaml(route);
    assert!(verdict.allowed, "{verdict:?}");
    assert!(verdict.warnings.iter().any(|w| w.contains("BackendNotFound")), "{verdict:?}");
    let gateway = "apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw2, namespace: apps}
spec:
  gatewayClassName: contour
  listeners: [{name: a, protocol: HTTP, port: 80, hostname: a.example.com}, {name: b, protocol: HTTPS, port: 80, hostname: a.example.com, tls: {certificateRefs: [{name: cert}]}}]
";
    let verdict = judge_yaml(gateway);
    assert!(!verdict.allowed, "{verdict:?}");
    assert!(verdict.message.starts_with("Gateway apps/gw2: spec.listeners"), "{}", verdict.message);
}

#[test]
fn a_review_is_answered_as_the_api_server_expects() {
    let snapshot = Arc::new(Snapshot::from_yaml(CLUSTER).expect("parses"));
    let mut judge = Judge::new(controller::Options::default());
    let request = serde_json::json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
            "kind": {"group": "projectcontour.io", "version": "v1", "kind": "HTTPProxy"},
            "namespace": "other",
            "operation": "CREATE",
            "object": {
                "apiVersion": "projectcontour.io/v1", "kind": "HTTPProxy",
                "metadata": {"name": "steal"},
                "spec": {"virtualhost": {"fqdn": "app.example.com"}, "routes": [{"services": [{"name": "web", "port": 80}]}]}
            }
        }
    });
    let answer = review(&mut judge, &snapshot, request.to_string().as_bytes());
    assert_eq!(answer["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(answer["response"]["uid"], "705ab4f5-6393-11e8-b7cc-42010a800002");
    assert_eq!(answer["response"]["allowed"], false);
    let message = answer["response"]["status"]["message"].as_str().unwrap_or_default();
    assert!(message.starts_with("HTTPProxy other/steal:"), "the request's namespace is the object's: {message}");
    // A deletion, or a kind the controller does not read, is allowed unseen.
    let mut delete = request.clone();
    delete["request"]["operation"] = "DELETE".into();
    assert_eq!(review(&mut judge, &snapshot, delete.to_string().as_bytes())["response"]["allowed"], true);
    let mut other = request;
    other["request"]["kind"] = serde_json::json!({"group": "apps", "version": "v1", "kind": "Deployment"});
    assert_eq!(review(&mut judge, &snapshot, other.to_string().as_bytes())["response"]["allowed"], true);
}
