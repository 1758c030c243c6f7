use serde_json::{Value, json};

use super::*;

fn run(yaml: &str, options: &Options) -> Conversion {
    convert(read_yaml(yaml, "test").expect("yaml"), options).expect("conversion")
}

fn of_kind<'a>(c: &'a Conversion, kind: &str) -> Vec<&'a Value> {
    c.objects.iter().filter(|o| o["kind"] == kind).collect()
}

fn report(c: &Conversion) -> String {
    c.report.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n")
}

const SERVICE: &str = "---\napiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\nspec: {ports: [{name: http, port: 80}]}\n";

#[test]
fn a_plain_httpproxy_becomes_a_gateway_and_an_httproute() {
    let yaml = format!(
        "{SERVICE}---\napiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {{name: app, namespace: shop}}\nspec:\n  virtualhost: {{fqdn: app.example.com}}\n  routes:\n  - conditions: [{{prefix: /}}]\n    services: [{{name: web, port: 80}}]\n  - conditions: [{{prefix: /api}}, {{header: {{name: x-team, exact: ops}}}}]\n    services: [{{name: web, port: 80}}]\n    timeoutPolicy: {{response: 90s}}\n"
    );
    let c = run(&yaml, &Options::default());
    assert_eq!(report(&c), "");
    assert_eq!(of_kind(&c, "Service").len(), 1, "other kinds pass through");
    let gateway = of_kind(&c, "Gateway")[0];
    assert_eq!(gateway["metadata"], json!({"name": "contour", "namespace": "projectcontour"}));
    assert_eq!(gateway["spec"]["gatewayClassName"], "contour");
    assert_eq!(
        gateway["spec"]["listeners"],
        json!([{"name": "http", "protocol": "HTTP", "port": 80, "allowedRoutes": {"namespaces": {"from": "All"}}}])
    );
    let routes = of_kind(&c, "HTTPRoute");
    assert_eq!(routes.len(), 1);
    let route = routes[0];
    assert_eq!(route["metadata"], json!({"name": "app", "namespace": "shop"}));
    assert_eq!(route["spec"]["hostnames"], json!(["app.example.com"]));
    assert_eq!(
        route["spec"]["parentRefs"],
        json!([{"name": "contour", "namespace": "projectcontour", "sectionName": "http"}])
    );
    let rules = route["spec"]["rules"].as_array().unwrap();
    let api = rules.iter().find(|r| r["timeouts"].is_object()).expect("the /api rule");
    assert_eq!(api["timeouts"], json!({"request": "1m30s"}));
    assert_eq!(
        api["matches"],
        json!([
            {"path": {"type": "PathPrefix", "value": "/api"}, "headers": [{"type": "Exact", "name": "x-team", "value": "ops"}]},
            {"path": {"type": "RegularExpression", "value": "/api[^/].*"}, "headers": [{"type": "Exact", "name": "x-team", "value": "ops"}]},
        ])
    );
    assert_eq!(api["backendRefs"], json!([{"name": "web", "port": 80, "weight": 1}]));
}

#[test]
fn a_tls_host_gets_its_listener_a_redirect_and_a_grant_for_its_secret() {
    let yaml = format!(
        "{SERVICE}---\napiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {{name: app, namespace: shop}}\nspec:\n  virtualhost: {{fqdn: app.example.com, tls: {{secretName: app-cert}}}}\n  routes:\n  - services: [{{name: web, port: 80}}]\n"
    );
    let c = run(&yaml, &Options::default());
    assert_eq!(report(&c), "");
    let listeners = &of_kind(&c, "Gateway")[0]["spec"]["listeners"];
    assert_eq!(listeners[1]["name"], "https-app.example.com");
    assert_eq!(listeners[1]["hostname"], "app.example.com");
    assert_eq!(listeners[1]["port"], 443);
    assert_eq!(
        listeners[1]["tls"],
        json!({"mode": "Terminate", "certificateRefs": [{"kind": "Secret", "name": "app-cert", "namespace": "shop"}]})
    );
    let grant = of_kind(&c, "ReferenceGrant")[0];
    assert_eq!(grant["metadata"]["namespace"], "shop");
    assert_eq!(
        grant["spec"],
        json!({"from": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "namespace": "projectcontour"}],
               "to": [{"group": "", "kind": "Secret", "name": "app-cert"}]})
    );
    let routes = of_kind(&c, "HTTPRoute");
    let names: Vec<&str> = routes.iter().map(|r| r["metadata"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["app-http", "app"]);
    assert_eq!(routes[0]["spec"]["parentRefs"][0]["sectionName"], "http");
    assert_eq!(
        routes[0]["spec"]["rules"][0]["filters"],
        json!([{"type": "RequestRedirect", "requestRedirect": {"scheme": "https", "statusCode": 301}}])
    );
    assert_eq!(routes[1]["spec"]["parentRefs"][0]["sectionName"], "https-app.example.com");
}

#[test]
fn an_include_tree_is_flattened_into_the_included_objects_routes() {
    let yaml = format!(
        "{SERVICE}---\napiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {{name: root, namespace: shop}}\nspec:\n  virtualhost: {{fqdn: app.example.com}}\n  includes: [{{name: blog, namespace: shop, conditions: [{{prefix: /blog}}]}}]\n---\napiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {{name: blog, namespace: shop}}\nspec:\n  routes: [{{conditions: [{{exact: /feed}}], services: [{{name: web, port: 80}}]}}]\n"
    );
    let c = run(&yaml, &Options::default());
    let routes = of_kind(&c, "HTTPRoute");
    assert_eq!(routes.len(), 1);
    assert_eq!(routes[0]["metadata"]["name"], "blog");
    assert_eq!(routes[0]["spec"]["rules"][0]["matches"][0]["path"], json!({"type": "Exact", "value": "/blog/feed"}));
}

#[test]
fn a_named_gateway_gets_no_gateway_and_is_told_the_listeners_it_needs() {
    let yaml = format!(
        "{SERVICE}---\napiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {{name: app, namespace: shop}}\nspec:\n  virtualhost: {{fqdn: app.example.com, tls: {{secretName: app-cert}}}}\n  routes:\n  - services: [{{name: web, port: 80}}]\n"
    );
    let options = Options { gateway: Some(("infra".into(), "edge".into())), ..Default::default() };
    let c = run(&yaml, &options);
    assert!(of_kind(&c, "Gateway").is_empty());
    assert!(of_kind(&c, "ReferenceGrant").is_empty());
    let routes = of_kind(&c, "HTTPRoute");
    assert_eq!(routes[1]["spec"]["parentRefs"], json!([{"name": "edge", "namespace": "infra", "port": 443}]));
    assert_eq!(
        report(&c),
        "Gateway infra/edge: spec.listeners: needs a HTTPS listener on port 443 for app.example.com with Secret shop/app-cert (Terminate)"
    );
}

#[test]
fn passthrough_becomes_a_tls_listener_and_a_tlsroute() {
    let yaml = "---\napiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {name: db, namespace: data}\nspec:\n  virtualhost: {fqdn: db.example.com, tls: {passthrough: true}}\n  tcpproxy: {services: [{name: db, port: 5432}]}\n";
    let c = run(yaml, &Options::default());
    assert_eq!(report(&c), "");
    let listeners = &of_kind(&c, "Gateway")[0]["spec"]["listeners"];
    assert_eq!(listeners.as_array().unwrap().len(), 1);
    assert_eq!(listeners[0]["name"], "tls-db.example.com");
    assert_eq!(listeners[0]["tls"], json!({"mode": "Passthrough"}));
    let route = of_kind(&c, "TLSRoute")[0];
    assert_eq!(route["spec"]["hostnames"], json!(["db.example.com"]));
    assert_eq!(route["spec"]["rules"][0]["backendRefs"][0]["name"], "db");
}

#[test]
fn an_ingress_is_converted_and_its_upstream_annotations_judged() {
    let yaml = "---\napiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: web\n  namespace: shop\n  annotations: {projectcontour.io/retry-on: 5xx, projectcontour.io/response-timeout: 5s}\nspec:\n  rules:\n  - host: web.example.com\n    http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}, {path: /named, pathType: Exact, backend: {service: {name: other, port: {name: http}}}}]}\n";
    let c = run(yaml, &Options::default());
    let text = report(&c);
    assert!(
        text.contains("Ingress shop/web: metadata.annotations[projectcontour.io/retry-on]: no Gateway API equivalent"),
        "{text}"
    );
    assert!(text.contains("spec.rules[0].http.paths[1].backend: Service shop/other is not in the input"), "{text}");
    let route = of_kind(&c, "HTTPRoute")[0];
    let rule = &route["spec"]["rules"][0];
    assert_eq!(rule["matches"][0]["path"], json!({"type": "PathPrefix", "value": "/"}));
    assert_eq!(rule["timeouts"], json!({"request": "5s"}));
}

#[test]
fn objects_of_another_class_pass_through_and_are_named() {
    let yaml = "---\napiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: web, namespace: shop}\nspec:\n  ingressClassName: nginx\n  defaultBackend: {service: {name: web, port: {number: 80}}}\n";
    let c = run(yaml, &Options::default());
    assert_eq!(c.objects.len(), 1);
    assert_eq!(c.objects[0]["kind"], "Ingress");
    assert!(report(&c).contains("of another ingress class"));
}

#[test]
fn an_invalid_object_is_reported_with_the_controllers_message() {
    let yaml = "---\napiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {name: bad, namespace: shop}\nspec:\n  virtualhost: {fqdn: bad.example.com}\n  routes: [{conditions: [{regex: '/a[('}], services: [{name: web, port: 80}]}]\n";
    let c = run(yaml, &Options::default());
    assert!(report(&c).contains("HTTPProxy shop/bad"), "{}", report(&c));
}

#[test]
fn yaml_lists_are_unpacked_and_written_back_as_documents() {
    let objects = read_yaml("apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: b}}\n", "list").unwrap();
    assert_eq!(objects.len(), 2);
    let text = to_yaml(&objects).unwrap();
    assert_eq!(text.matches("---\n").count(), 2);
    assert!(matches!(read_yaml("a: [", "broken"), Err(Error::Yaml { .. })));
}
