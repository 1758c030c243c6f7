use super::*;
use ir::PathMatch;
use objects::Snapshot;

/// The objects of a YAML fixture; `%CERT%` and `%KEY%` in double-quoted strings become a real
/// certificate and key.
fn snapshot(yaml: &str) -> Snapshot {
    use objects::secrets::testing::quoted;
    let yaml = yaml
        .replace("%CERT%", &quoted(objects::secrets::testing::CERT))
        .replace("%KEY%", &quoted(objects::secrets::testing::KEY));
    Snapshot::from_yaml(&yaml).expect("fixture parses")
}

/// Our GatewayClass, to start fixtures with.
const CLASS: &str = "apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: contour}
spec: {controllerName: projectcontour.io/gateway-controller}
";

fn dag(yaml: &str) -> Dag {
    let s = snapshot(yaml);
    let t = frontends::gateway_api::translate(&s, &Default::default());
    build(&t.ir, &s, t.diagnostics)
}

const FIXTURE: &str = r#"
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: contour}
spec: {controllerName: projectcontour.io/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: default}
spec:
  gatewayClassName: contour
  listeners:
  - {name: http, port: 8080, protocol: HTTP}
  - name: https
    port: 8443
    protocol: HTTPS
    hostname: secure.example.com
    tls: {certificateRefs: [{name: cert}]}
  - name: https-missing
    port: 8443
    protocol: HTTPS
    hostname: other.example.com
    tls: {certificateRefs: [{name: missing}]}
---
apiVersion: v1
kind: Secret
metadata: {name: cert}
type: kubernetes.io/tls
stringData: {tls.crt: "%CERT%", tls.key: "%KEY%"}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {ports: [{name: http, port: 80, targetPort: 8000}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-1, labels: {kubernetes.io/service-name: web}}
addressType: IPv4
ports: [{name: http, port: 8000}]
endpoints:
- addresses: [127.0.0.1]
- addresses: [127.0.0.2]
  conditions: {ready: false}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: a-general, creationTimestamp: "2026-01-01T00:00:00Z"}
spec:
  parentRefs: [{name: gw}]
  hostnames: [www.example.com, secure.example.com]
  rules:
  - backendRefs: [{name: web, port: 80}]
  - matches: [{path: {type: PathPrefix, value: /api}}]
    backendRefs: [{name: web, port: 80}, {name: gone, port: 80}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: b-exact, creationTimestamp: "2026-02-01T00:00:00Z"}
spec:
  parentRefs: [{name: gw}]
  hostnames: [www.example.com]
  rules:
  - matches: [{path: {type: Exact, value: /api/v1}}]
    backendRefs: [{name: gone, port: 80}]
"#;

#[test]
fn routes_merge_per_hostname_in_precedence_order() {
    let dag = dag(FIXTURE);
    let fleet = &dag.fleets["default/gw"];
    assert_eq!(fleet.listeners.len(), 2);
    let ListenerKind::Http(table) = &fleet.listeners[0].kind else { panic!("http first") };
    assert_eq!(
        table.virtual_hosts.iter().map(|v| v.hostname.as_str()).collect::<Vec<_>>(),
        ["secure.example.com", "www.example.com"]
    );
    let www = &table.virtual_hosts[1];
    let paths: Vec<_> = www.routes.iter().map(|r| r.matcher.path.clone()).collect();
    assert_eq!(
        paths,
        [PathMatch::Exact("/api/v1".into()), PathMatch::Prefix("/api".into()), PathMatch::Prefix("/".into())]
    );
    assert_eq!(www.routes[0].action, RouteAction::Direct { status: 500, body: None }, "only backend missing");
    let RouteAction::Forward { backends, .. } = &www.routes[1].action else { panic!() };
    assert_eq!(backends[0].cluster.as_deref(), Some("default/web/80/da39a3ee5e"));
    assert_eq!(backends[1].cluster, None);
    assert!(dag.diagnostics.iter().any(|d| d.reason == "BackendNotFound"
        && d.origin.name == "b-exact"
        && d.field == "spec.rules[0].backendRefs[0]"));
}

#[test]
fn https_chains_only_for_listeners_with_usable_certificates() {
    let dag = dag(FIXTURE);
    let fleet = &dag.fleets["default/gw"];
    let ListenerKind::Tls(chains) = &fleet.listeners[1].kind else { panic!("tls second") };
    assert_eq!(chains.len(), 1);
    assert_eq!(chains[0].server_names, ["secure.example.com"]);
    let TlsAction::Terminate { secrets, routes, .. } = &chains[0].action else { panic!() };
    assert_eq!(secrets, &["default/cert"]);
    let hosts: Vec<&str> = routes.virtual_hosts.iter().map(|v| v.hostname.as_str()).collect();
    assert_eq!(hosts, ["*", "secure.example.com"]);
    // Any other host on this listener's connections is misdirected.
    assert_eq!(routes.virtual_hosts[0].routes[0].action, RouteAction::Direct { status: 421, body: None });
    assert!(fleet.secrets.contains_key("default/cert"));
    assert!(
        dag.diagnostics
            .iter()
            .any(|d| d.reason == "InvalidCertificateRef" && d.message.contains("default/missing: Secret not found"))
    );
}

#[test]
fn endpoints_are_ready_addresses_on_the_named_port() {
    let s = snapshot(FIXTURE);
    let dag = dag(FIXTURE);
    let cluster = &dag.fleets["default/gw"].clusters["default/web/80/da39a3ee5e"];
    assert_eq!(
        SliceIndex::new(&s).endpoints(cluster),
        vec![crate::Endpoint { address: "127.0.0.1:8000".parse().unwrap(), health_port: None, locality: None }]
    );
}

#[test]
fn dot_shows_the_path_from_fleet_to_cluster() {
    let dot = to_dot(&dag(FIXTURE));
    assert!(dot.starts_with("digraph DAG {"));
    assert!(dot.contains("\"fleet default/gw\""));
    assert!(dot.contains("\"vhost www.example.com\""));
    assert!(dot.contains("\"cluster default/web/80/da39a3ee5e\""));
    assert!(dot.contains("[label=\"weight 1\"]"));
}

#[test]
fn json_never_carries_private_keys() {
    let json = serde_json::to_string(&dag(FIXTURE)).unwrap();
    assert!(json.contains("default/cert"));
    assert!(!json.contains("PRIVATE KEY"));
}

#[test]
fn routes_on_listeners_that_are_not_served_still_get_backends_checked() {
    let yaml = &format!(
        "{CLASS}---\n{}",
        r#"
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: default}
spec:
  gatewayClassName: contour
  listeners:
  - {name: tls, port: 443, protocol: HTTPS, tls: {certificateRefs: [{name: does-not-exist}]}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: default}
spec:
  parentRefs: [{name: gw, sectionName: tls}]
  rules: [{backendRefs: [{name: gone, port: 8080}]}]
"#
    );
    let dag = dag(yaml);
    assert!(dag.fleets["default/gw"].listeners.is_empty(), "no filter chain to serve: no listener for Envoy to refuse");
    let found: Vec<_> = dag.diagnostics.iter().filter(|d| d.origin.name == "r").collect();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!((found[0].reason, found[0].field.as_str()), ("BackendNotFound", "spec.rules[0].backendRefs[0]"));
}

#[test]
fn gateway_redirects_without_scheme_or_port_keep_the_listener_port() {
    let yaml = &format!(
        "{CLASS}---\n{}",
        r#"
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: default}
spec:
  gatewayClassName: contour
  listeners:
  - {name: http, port: 80, protocol: HTTP}
  - {name: alt, port: 8080, protocol: HTTP}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: default}
spec:
  parentRefs: [{name: gw}]
  rules:
  - matches: [{path: {type: PathPrefix, value: /host}}]
    filters: [{type: RequestRedirect, requestRedirect: {hostname: example.org}}]
  - matches: [{path: {type: PathPrefix, value: /scheme}}]
    filters: [{type: RequestRedirect, requestRedirect: {scheme: https}}]
"#
    );
    let dag = dag(yaml);
    let fleet = &dag.fleets["default/gw"];
    let ports = |index: usize| -> Vec<Option<u16>> {
        let ListenerKind::Http(table) = &fleet.listeners[index].kind else { panic!("http") };
        table.virtual_hosts[0]
            .routes
            .iter()
            .map(|r| match &r.action {
                RouteAction::Redirect(r) => r.port,
                other => panic!("{other:?}"),
            })
            .collect()
    };
    assert_eq!(fleet.listeners[0].port, 80);
    assert_eq!(ports(0), [None, None], "80 is http's own port: left out");
    assert_eq!(ports(1), [None, Some(8080)], "/scheme: https's own port; /host: the listener's");
}

#[test]
fn http_listeners_sharing_a_port_are_isolated() {
    let yaml = &format!(
        "{CLASS}---\n{}",
        r#"
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: default}
spec:
  gatewayClassName: contour
  listeners:
  - {name: wide, port: 80, protocol: HTTP, hostname: "*.example.com"}
  - {name: narrow, port: 80, protocol: HTTP, hostname: "*.foo.example.com"}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: wide, namespace: default}
spec:
  parentRefs: [{name: gw, sectionName: wide}]
  hostnames: ["*.example.com", "abc.foo.example.com"]
  rules: [{matches: [{path: {type: PathPrefix, value: /wide}}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: narrow, namespace: default}
spec:
  parentRefs: [{name: gw, sectionName: narrow}]
  rules: [{matches: [{path: {type: PathPrefix, value: /narrow}}]}]
"#
    );
    let dag = dag(yaml);
    let ListenerKind::Http(table) = &dag.fleets["default/gw"].listeners[0].kind else { panic!("http") };
    let hosts: Vec<(&str, Vec<&str>)> = table
        .virtual_hosts
        .iter()
        .map(|v| (v.hostname.as_str(), v.routes.iter().map(|r| r.origin.name.as_str()).collect()))
        .collect();
    // abc.foo.example.com belongs to the narrow listener: the wide listener's route does not get it.
    assert_eq!(hosts, [("*.example.com", vec!["wide"]), ("*.foo.example.com", vec!["narrow"])]);
}

/// A listener's ExternalAuth filter runs for the hosts that listener owns on a shared port (the
/// narrow listener's host, not the wide one's), and its server gets a cluster of its own.
#[test]
fn listener_checks_run_for_their_own_listeners_hosts() {
    let yaml = &format!(
        "{CLASS}---\n{}",
        r#"
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: default}
spec:
  gatewayClassName: contour
  listeners:
  - {name: wide, port: 80, protocol: HTTP, hostname: "*.example.com"}
  - name: narrow
    port: 80
    protocol: HTTP
    hostname: "*.foo.example.com"
    filters: {requests: [{type: ExternalAuth, externalAuth: {protocol: GRPC, grpc: {}, backendRef: {name: authz, port: 9000}}}]}
---
apiVersion: v1
kind: Service
metadata: {name: authz, namespace: default}
spec: {ports: [{port: 9000}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: both, namespace: default}
spec:
  parentRefs: [{name: gw}]
  hostnames: ["a.example.com", "b.foo.example.com"]
  rules: [{matches: [{path: {type: PathPrefix, value: /}}]}]
"#
    );
    let dag = dag(yaml);
    let fleet = &dag.fleets["default/gw"];
    let ListenerKind::Http(table) = &fleet.listeners[0].kind else { panic!("http") };
    let checks: Vec<String> = table.pre_routing.iter().map(PreRouting::key).collect();
    assert_eq!(checks, ["narrow/0"]);
    let hosts: Vec<(&str, &[String])> =
        table.virtual_hosts.iter().map(|v| (v.hostname.as_str(), v.pre_routing.as_slice())).collect();
    assert_eq!(hosts, [("a.example.com", &[][..]), ("b.foo.example.com", &["narrow/0".to_string()][..])]);
    let cluster = &fleet.clusters["externalauth/default/authz/9000/grpc"];
    assert_eq!(cluster.protocol, Some(ir::UpstreamProtocol::H2c));
    assert_eq!(table.pre_routing[0].authorization.cluster, cluster.name);
}

/// Upstream's rule conflicts: a rule whose match repeats an older rule's on the same host is
/// dropped; its route is not accepted when every rule is dropped, partly invalid when some are.
#[test]
fn rules_repeating_an_older_match_are_dropped_and_reported() {
    let route = |name: &str, created: &str, hosts: &str, rules: &str| {
        format!(
            "---\napiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {{name: {name}, namespace: default, creationTimestamp: \"{created}\"}}\nspec:\n  parentRefs: [{{name: gw}}]\n  hostnames: [{hosts}]\n  rules:\n{rules}"
        )
    };
    let rule = |query: &str, backend: &str| {
        format!("  - matches: [{{queryParams: [{query}]}}]\n    backendRefs: [{{name: {backend}, port: 80}}]\n")
    };
    let (whale, dolphin) = ("{name: animal, value: whale}", "{name: animal, value: dolphin}");
    let other = "{name: b, value: '2'}, {name: a, value: '1'}";
    let yaml = [
        format!("{CLASS}---\n{}", "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {name: gw, namespace: default}\nspec:\n  gatewayClassName: contour\n  listeners: [{name: http, port: 80, protocol: HTTP}]\n"),
        route("first", "2026-01-01T00:00:00Z", "a.example.com", &(rule(whale, "one") + &rule(dolphin, "two"))),
        // Newer, every rule repeats one of "first": not accepted.
        route("all", "2026-01-02T00:00:00Z", "a.example.com", &rule(whale, "three")),
        // Newer, one rule repeats: partly invalid; its other rule is new and kept.
        route("some", "2026-01-03T00:00:00Z", "a.example.com", &(rule(dolphin, "three") + &rule(other, "three"))),
        // Same match, another host: no conflict.
        route("elsewhere", "2026-01-04T00:00:00Z", "b.example.com", &rule(whale, "three")),
        // A rule repeating an earlier rule of the same route, conditions reordered.
        route("itself", "2026-01-05T00:00:00Z", "c.example.com", &(rule(other, "one") + &rule("{name: a, value: '1'}, {name: b, value: '2'}", "two"))),
    ]
    .concat();
    let s = snapshot(&yaml);
    let t = frontends::gateway_api::translate(&s, &Default::default());
    let dag = build(&t.ir, &s, t.diagnostics);
    let ListenerKind::Http(table) = &dag.fleets["default/gw"].listeners[0].kind else { panic!("http") };
    // Each served route as "route?name=value&...".
    let served = |host: &str| -> Vec<String> {
        let vhost = table.virtual_hosts.iter().find(|v| v.hostname == host).expect(host);
        let mut out: Vec<String> = vhost
            .routes
            .iter()
            .map(|r| {
                let query: Vec<String> = r
                    .matcher
                    .query
                    .iter()
                    .map(|q| match &q.value {
                        ir::StringMatch::Exact(v) => format!("{}={v}", q.name),
                        other => format!("{}{other:?}", q.name),
                    })
                    .collect();
                format!("{}?{}", r.origin.name, query.join("&"))
            })
            .collect();
        out.sort();
        out
    };
    assert_eq!(served("a.example.com"), ["first?animal=dolphin", "first?animal=whale", "some?b=2&a=1"]);
    assert_eq!(served("b.example.com"), ["elsewhere?animal=whale"]);
    assert_eq!(served("c.example.com"), ["itself?b=2&a=1"]);
    let dropped: Vec<(&str, &str)> = dag
        .diagnostics
        .iter()
        .filter(|d| d.reason == ir::reason::RULE_MATCH_CONFLICT)
        .map(|d| (d.origin.name.as_str(), d.field.as_str()))
        .collect();
    assert_eq!(dropped.len(), 3, "{dropped:?}");
    for expected in [("all", "spec.rules[0]"), ("some", "spec.rules[0]"), ("itself", "spec.rules[1]")] {
        assert!(dropped.contains(&expected), "{expected:?} in {dropped:?}");
    }

    let set = frontends::gateway_api::status::compute(
        &s,
        &Default::default(),
        &dag.diagnostics,
        &frontends::gateway_api::status::attached_routes(&t.ir),
        |_| frontends::gateway_api::status::FleetState::Programmed,
    );
    let conditions = |name: &str| -> Vec<(String, bool, String, String)> {
        let route = set.routes.iter().find(|r| r.key.name == name).expect(name);
        route.parents[0]
            .conditions
            .iter()
            .map(|c| (c.type_.to_string(), c.status, c.reason.to_string(), c.message.clone()))
            .collect()
    };
    let all = conditions("all");
    assert_eq!(
        all[0],
        (
            "Accepted".into(),
            false,
            "RuleMatchConflict".into(),
            "HTTPRoute's Match has conflict with other HTTPRoute's Match".into()
        )
    );
    assert!(!all.iter().any(|c| c.0 == "PartiallyInvalid"), "{all:?}");
    let some = conditions("some");
    assert_eq!((some[0].0.as_str(), some[0].1), ("Accepted", true));
    assert!(some.contains(&(
        "PartiallyInvalid".into(),
        true,
        "RuleMatchPartiallyConflict".into(),
        "Dropped Rule: some of HTTPRoute's rule(s) has(ve) been dropped because of conflict against other HTTPRoute's rule(s)".into()
    )));
    for fine in ["first", "elsewhere"] {
        assert_eq!(conditions(fine).len(), 2, "{fine}: Accepted and ResolvedRefs only");
    }
}

/// Client validation bundles that verify differently never share a validation context: the same
/// CA and CRL checked for the leaf only or for the whole chain, and a CA with verification
/// skipped (a certificate is still asked for, as upstream).
#[test]
fn client_validation_bundles_differ_by_how_they_verify() {
    let pem = |label: &str| format!("-----BEGIN {label}-----\\nx\\n-----END {label}-----\\n");
    let proxy = |name: &str, validation: &str| {
        format!(
            "---\napiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {{name: {name}, namespace: apps}}\nspec:\n  virtualhost:\n    fqdn: {name}.test\n    tls: {{secretName: cert, clientValidation: {validation}}}\n  routes: [{{services: [{{name: web, port: 80}}]}}]\n"
        )
    };
    let yaml = [
        format!(
            "apiVersion: v1\nkind: Service\nmetadata: {{name: web, namespace: apps}}\nspec: {{ports: [{{port: 80}}]}}\n---\napiVersion: v1\nkind: Secret\nmetadata: {{name: cert, namespace: apps}}\ntype: kubernetes.io/tls\nstringData: {{tls.crt: \"{c}\", tls.key: \"{k}\", ca.crt: \"{c}\"}}\n---\napiVersion: v1\nkind: Secret\nmetadata: {{name: crl, namespace: apps}}\nstringData: {{crl.pem: \"{r}\"}}\n",
            c = "%CERT%",
            k = "%KEY%",
            r = pem("X509 CRL"),
        ),
        proxy("full", "{caSecret: cert, crlSecret: crl}"),
        proxy("leaf", "{caSecret: cert, crlSecret: crl, crlOnlyVerifyLeafCert: true}"),
        proxy("skip", "{caSecret: cert, skipClientCertValidation: true}"),
        proxy("skip-no-ca", "{skipClientCertValidation: true}"),
    ]
    .concat();
    let s = snapshot(&yaml);
    let t = frontends::httpproxy::translate(&s, &Default::default());
    let dag = build(&t.ir, &s, t.diagnostics);
    let fleet = &dag.fleets[ir::DEFAULT_FLEET];
    let bundles: Vec<(&str, bool, bool)> =
        fleet.validation.values().map(|b| (b.name.as_str(), b.crl_only_leaf, b.accept_untrusted)).collect();
    assert_eq!(
        bundles,
        [
            ("apps/cert/ca/apps/crl", false, false),
            ("apps/cert/ca/apps/crl/leaf-crl", true, false),
            ("apps/cert/ca/untrusted", false, true),
        ]
    );
}

/// A route's backend CA and Envoy's client certificate reach the fleet, on the first build and
/// from the cache on the next: routes are built apart from the fleet, and what they use must
/// come along (a CA used by no listener was lost before, and Envoy waited for it forever).
#[test]
fn what_route_clusters_use_reaches_the_fleet_from_the_cache_too() {
    let yaml = format!(
        "apiVersion: v1\nkind: Service\nmetadata: {{name: web, namespace: apps}}\nspec: {{ports: [{{port: 443}}]}}\n---\napiVersion: v1\nkind: Secret\nmetadata: {{name: backend-ca, namespace: apps}}\nstringData: {{ca.crt: \"{c}\"}}\n---\napiVersion: v1\nkind: Secret\nmetadata: {{name: envoy-client, namespace: infra}}\ntype: kubernetes.io/tls\nstringData: {{tls.crt: \"{c}\", tls.key: \"{k}\"}}\n---\napiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {{name: p, namespace: apps}}\nspec:\n  virtualhost: {{fqdn: p.test}}\n  routes: [{{services: [{{name: web, port: 443, protocol: tls, validation: {{caSecret: backend-ca, subjectName: web.apps}}}}]}}]\n",
        c = "%CERT%",
        k = "%KEY%",
    );
    let s = snapshot(&yaml);
    let t = frontends::httpproxy::translate(&s, &Default::default());
    let mut cache = Cache::default();
    let options = Options {
        client_certificate: Some(ir::ObjectRef { namespace: "infra".into(), name: "envoy-client".into() }),
        ..Default::default()
    };
    cache.set_options(&options);
    for build in ["first", "cached"] {
        let dag = build_cached(&t.ir, &s, t.diagnostics.clone(), &mut cache);
        let fleet = &dag.fleets[ir::DEFAULT_FLEET];
        let cluster = fleet.clusters.values().next().expect("a cluster");
        let ca = cluster.validation.clone().expect("validated").ca;
        assert!(fleet.validation.contains_key(&ca), "{build}: the CA bundle is the fleet's");
        assert_eq!(cluster.client_certificate.as_deref(), Some("infra/envoy-client"), "{build}");
        assert!(fleet.secrets.contains_key("infra/envoy-client"), "{build}: the client certificate is the fleet's");
    }
}

#[test]
fn misdirected_requests_get_421_on_listeners_of_one_port() {
    let mut table = RouteTable { name: "t".into(), virtual_hosts: Vec::new(), pre_routing: Vec::new() };
    let tls = Some(ir::ListenerTls::new(ir::TlsMode::Terminate, Vec::new()));
    let listener = |name: &str, hostname: Option<&str>| ir::Listener {
        name: name.into(),
        port: 443,
        protocol: ir::Protocol::Https,
        hostname: hostname.map(str::to_string),
        tls: tls.clone(),
        http_routes: Vec::new(),
        tls_routes: Vec::new(),
        l4_routes: Vec::new(),
        pre_routing: Vec::new(),
    };
    let all = [
        listener("any", None),
        listener("second", Some("second.example.org")),
        listener("wildcard", Some("*.wildcard.org")),
        listener("fourth", Some("fourth.wildcard.org")),
    ];
    let listeners: Vec<(usize, &ir::Listener)> = all.iter().enumerate().collect();
    let hosts = |own: usize, table: &mut RouteTable| {
        table.virtual_hosts.clear();
        crate::build::misdirected(table, None, &all[own], &listeners);
        table.virtual_hosts.iter().map(|v| v.hostname.clone()).collect::<Vec<_>>()
    };
    assert_eq!(hosts(0, &mut table), ["*.wildcard.org", "fourth.wildcard.org", "second.example.org"]);
    assert_eq!(hosts(1, &mut table), ["*"]);
    assert_eq!(hosts(2, &mut table), ["*", "fourth.wildcard.org"]);
    assert_eq!(hosts(3, &mut table), ["*"]);
}

mod backend_tls;
mod l4;

/// Routes reaching the same host through one listener: the one whose own hostname is more
/// specific goes first, whatever its age or matches, and only what it does not match falls
/// through to the other; the same for TLS passthrough server names. Neither is a conflict.
#[test]
fn a_route_with_a_more_specific_hostname_of_its_own_takes_precedence() {
    let route = |kind: &str, name: &str, created: &str, listener: &str, hostname: &str, rules: &str| {
        format!(
            "---
apiVersion: gateway.networking.k8s.io/v1
kind: {kind}
metadata: {{name: {name}, creationTimestamp: \"{created}\"}}
spec:
  parentRefs: [{{name: gw, sectionName: {listener}}}]
  hostnames: [\"{hostname}\"]
  rules: {rules}
"
        )
    };
    let to = |service: &str| format!("[{{backendRefs: [{{name: {service}, port: 80}}]}}]");
    let header = |name: &str| {
        format!(
            "[{{matches: [{{path: {{type: PathPrefix, value: /path/prefix}}, headers: [{{name: {name}, value: x}}]}}], \
             backendRefs: [{{name: web, port: 80}}]}}]"
        )
    };
    let yaml = [
        format!(
            "{CLASS}---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {{name: gw, namespace: default}}
spec:
  gatewayClassName: contour
  listeners:
  - {{name: exact, port: 8080, protocol: HTTP, hostname: abc.example.com}}
  - {{name: wild, port: 8081, protocol: HTTP, hostname: \"*.example.com\"}}
  - {{name: tls, port: 8443, protocol: TLS, hostname: \"*.example.com\", tls: {{mode: Passthrough}}}}
---
apiVersion: v1
kind: Service
metadata: {{name: web}}
spec: {{ports: [{{port: 80}}]}}
---
apiVersion: v1
kind: Service
metadata: {{name: other}}
spec: {{ports: [{{port: 80}}]}}
"
        ),
        // Port 8080: all three intersect to abc.example.com.
        route("HTTPRoute", "a-wildcard", "2026-01-01T00:00:00Z", "exact", "*.example.com", &header("b")),
        route("HTTPRoute", "b-exact", "2026-01-03T00:00:00Z", "exact", "abc.example.com", &header("a")),
        route("HTTPRoute", "c-widest", "2026-01-01T00:00:00Z", "exact", "*.com", &to("web")),
        route("HTTPRoute", "d-exact-all", "2026-01-04T00:00:00Z", "exact", "abc.example.com", &to("other")),
        // Port 8081: both intersect to *.example.com; the same match, no conflict.
        route("HTTPRoute", "e-com", "2026-01-01T00:00:00Z", "wild", "*.com", &to("web")),
        route("HTTPRoute", "f-example", "2026-01-02T00:00:00Z", "wild", "*.example.com", &to("other")),
        // Port 8443: both claim *.example.com.
        route("TLSRoute", "g-com", "2026-01-01T00:00:00Z", "tls", "*.com", &to("web")),
        route("TLSRoute", "h-example", "2026-01-02T00:00:00Z", "tls", "*.example.com", &to("other")),
    ]
    .concat();
    let dag = dag(&yaml);
    let fleet = &dag.fleets["default/gw"];
    let served = |i: usize| -> Vec<String> {
        let ListenerKind::Http(table) = &fleet.listeners[i].kind else { panic!("http") };
        assert_eq!(table.virtual_hosts.len(), 1);
        table.virtual_hosts[0].routes.iter().map(|r| r.origin.name.clone()).collect()
    };
    // Exact hostnames first (the more specific match, then the catch-all), then wider ones.
    assert_eq!(served(0), ["b-exact", "d-exact-all", "a-wildcard", "c-widest"]);
    assert_eq!(served(1), ["f-example", "e-com"]);
    let ListenerKind::Tls(chains) = &fleet.listeners[2].kind else { panic!("tls") };
    assert_eq!(chains.len(), 1);
    let TlsAction::Passthrough { backends } = &chains[0].action else { panic!("passthrough") };
    assert_eq!(backends[0].cluster.as_deref().map(|c| c.split('/').nth(1)), Some(Some("other")));
    let refused: Vec<_> = dag.diagnostics.iter().filter(|d| d.severity == ir::Severity::Error).collect();
    assert!(refused.is_empty(), "outranked is not in conflict: {refused:?}");
}
