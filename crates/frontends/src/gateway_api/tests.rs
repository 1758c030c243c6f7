use super::*;
use ir::{BackendTarget, HttpFilter, PathMatch, Protocol};

/// The objects of a YAML fixture; [`PEM`] and [`KEY`] in double-quoted strings become a real
/// certificate and key.
fn snapshot(yaml: &str) -> Snapshot {
    use objects::secrets::testing::quoted;
    let yaml = yaml
        .replace(PEM, &quoted(objects::secrets::testing::CERT))
        .replace(KEY, &quoted(objects::secrets::testing::KEY));
    Snapshot::from_yaml(&yaml).expect("fixture parses")
}

/// Our GatewayClass, to start fixtures with.
const CLASS: &str = "apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: contour}
spec: {controllerName: projectcontour.io/gateway-controller}
";

/// Stands for a real certificate in a YAML double-quoted string ([`snapshot`] puts it in).
const PEM: &str = "%CERT%";
/// Stands for its private key.
const KEY: &str = "%KEY%";

/// The status and reason of the condition of `type_`.
fn condition<'a>(conditions: &'a [status::Condition], type_: &str) -> (bool, &'a str) {
    let c = conditions.iter().find(|c| c.type_ == type_).unwrap_or_else(|| panic!("no {type_} in {conditions:?}"));
    (c.status, c.reason)
}

/// The translation of `yaml` and the status it gives, every fleet programmed.
fn translate_with_status(yaml: &str, options: &Options) -> (Translation, status::StatusSet) {
    let s = snapshot(yaml);
    let t = translate(&s, options);
    let set = status::compute(&s, options, &t.diagnostics, &status::attached_routes(&t.ir), |_| {
        status::FleetState::Programmed
    });
    (t, set)
}

const BASE: &str = r#"
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: contour}
spec: {controllerName: projectcontour.io/gateway-controller}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: other}
spec: {controllerName: example.com/other}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: infra}
spec:
  gatewayClassName: contour
  addresses: [{type: IPAddress, value: 127.0.0.9}]
  listeners:
  - {name: http, port: 8080, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}
  - {name: same-ns, port: 8081, protocol: HTTP}
  - {name: custom, port: 53, protocol: example.com/sctp}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: foreign, namespace: infra}
spec:
  gatewayClassName: other
  listeners: [{name: http, port: 80, protocol: HTTP}]
"#;

#[test]
fn only_gateways_of_our_classes_become_fleets() {
    let t = translate(&snapshot(BASE), &Options::default());
    assert_eq!(t.ir.fleets.len(), 1);
    let fleet = &t.ir.fleets[0];
    assert_eq!(fleet.id, "infra/gw");
    assert_eq!(fleet.address, Some("127.0.0.9".parse().unwrap()));
    assert_eq!(fleet.listeners[0].protocol, Protocol::Http);
    assert_eq!(fleet.listeners[0].port, 8080);
    assert_eq!(fleet.listeners[2].port, 0, "a protocol of another implementation is refused");
    assert!(t.diagnostics.iter().any(|d| d.reason == "UnsupportedProtocol" && d.field == "spec.listeners[2].protocol"));
}

#[test]
fn routes_attach_where_listeners_allow_them() {
    let yaml = format!(
        "{BASE}{}",
        r#"
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: web, namespace: apps}
spec:
  parentRefs: [{name: gw, namespace: infra}]
  hostnames: [www.example.com]
  rules:
  - matches: [{path: {type: Exact, value: /exact}}]
    backendRefs: [{name: web, port: 80}, {name: other, namespace: elsewhere, port: 80}]
  - matches: [{path: {type: RegularExpression, value: "/(unclosed"}}]
    backendRefs: [{name: web, port: 80}]
"#
    );
    let t = translate(&snapshot(&yaml), &Options::default());
    let fleet = &t.ir.fleets[0];
    assert_eq!(fleet.listeners[0].http_routes.len(), 1, "From: All admits apps/web");
    assert!(fleet.listeners[1].http_routes.is_empty(), "default Same refuses apps/web");
    let route = &fleet.listeners[0].http_routes[0];
    assert_eq!(route.rules[0].matches[0].path, PathMatch::Exact("/exact".into()));
    assert_eq!(route.rules[0].backends[1].target, BackendTarget::Invalid);
    assert!(t.diagnostics.iter().any(|d| d.reason == "RefNotPermitted" && d.field == "spec.rules[0].backendRefs[1]"));
    assert!(t.diagnostics.iter().any(|d| d.field == "spec.rules[1].matches[0].path"), "{:?}", t.diagnostics);
    assert_eq!(route.rules.len(), 1, "a rule with no usable match is dropped");
}

#[test]
fn reference_grant_admits_cross_namespace_backend() {
    let yaml = format!(
        "{BASE}{}",
        r#"
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: web, namespace: infra}
spec:
  parentRefs: [{name: gw, sectionName: same-ns}]
  rules:
  - backendRefs: [{name: other, namespace: elsewhere, port: 80}]
    filters:
    - {type: RequestRedirect, requestRedirect: {scheme: https, statusCode: 301}}
---
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {name: allow, namespace: elsewhere}
spec:
  from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: infra}]
  to: [{group: "", kind: Service}]
"#
    );
    let t = translate(&snapshot(&yaml), &Options::default());
    let fleet = &t.ir.fleets[0];
    assert!(fleet.listeners[0].http_routes.is_empty(), "sectionName picks same-ns only");
    let rule = &fleet.listeners[1].http_routes[0].rules[0];
    assert!(matches!(rule.backends[0].target, BackendTarget::Service(ref s) if s.namespace == "elsewhere"));
    assert!(
        matches!(&rule.filters[0], HttpFilter::Redirect(r) if r.status == 301 && r.scheme.as_deref() == Some("https"))
    );
    assert!(
        t.diagnostics.is_empty() || t.diagnostics.iter().all(|d| d.origin.kind == "Gateway"),
        "{:?}",
        t.diagnostics
    );
}

#[test]
fn durations_parse_like_the_gateway_api() {
    assert_eq!(http_route::parse_duration_ms("1h30m"), Some(5_400_000));
    assert_eq!(http_route::parse_duration_ms("250ms"), Some(250));
    assert_eq!(http_route::parse_duration_ms("10"), None);
    assert_eq!(http_route::parse_duration_ms(""), None);
}

#[test]
fn status_reports_listeners_attachments_and_references() {
    let yaml = format!(
        "{BASE}{}",
        r#"
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: web, namespace: apps}
spec:
  parentRefs: [{name: gw, namespace: infra, sectionName: http}, {name: gw, namespace: infra, sectionName: same-ns}, {name: elsewhere}]
  rules:
  - backendRefs: [{name: other, namespace: elsewhere, port: 80}]
"#
    );
    let s = snapshot(&yaml);
    let t = translate(&s, &Options::default());
    let attached = status::attached_routes(&t.ir);
    let set = status::compute(&s, &Options::default(), &t.diagnostics, &attached, |_| status::FleetState::Pending);
    let gw = &set.gateways[0];
    let find = |conds: &[status::Condition], t: &str| conds.iter().find(|c| c.type_ == t).cloned().unwrap();
    assert!(find(&gw.conditions, "Accepted").status);
    assert_eq!(find(&gw.conditions, "Programmed").reason, "Pending", "an address exists, no Envoy accepted yet");
    assert_eq!(gw.listeners[0].attached_routes, 1);
    assert_eq!(gw.listeners[1].attached_routes, 0);
    let custom = find(&gw.listeners[2].conditions, "Accepted");
    assert_eq!((custom.status, custom.reason), (false, "UnsupportedProtocol"));

    let route = &set.routes[0];
    assert_eq!(route.parents.len(), 2, "the parentRef to a Gateway that is not ours gets no entry");
    let first = &route.parents[0];
    assert!(find(&first.conditions, "Accepted").status);
    let refs = find(&first.conditions, "ResolvedRefs");
    assert_eq!((refs.status, refs.reason), (false, "RefNotPermitted"));
    let second = find(&route.parents[1].conditions, "Accepted");
    assert_eq!((second.status, second.reason), (false, "NotAllowedByListeners"));
}

#[test]
fn gateway_addresses_come_from_its_service_when_it_has_one() {
    let with_service = format!(
        "{BASE}{}",
        r#"
---
apiVersion: v1
kind: Service
metadata: {name: envoy-gw, namespace: infra, labels: {gateway.networking.k8s.io/gateway-name: gw}}
spec: {ports: [{port: 80}]}
status: {loadBalancer: {ingress: [{hostname: lb.example.net}, {ip: 192.0.2.10}]}}
"#
    );
    let address_of = |yaml: &str| {
        let s = snapshot(yaml);
        let t = translate(&s, &Options::default());
        let attached = status::attached_routes(&t.ir);
        status::compute(&s, &Options::default(), &t.diagnostics, &attached, |_| status::FleetState::Programmed).gateways
            [0]
        .addresses
        .iter()
        .map(|a| (a.type_, a.value.clone()))
        .collect::<Vec<_>>()
    };
    assert_eq!(address_of(BASE), [("IPAddress", "127.0.0.9".to_string())], "the requested address in host mode");
    assert_eq!(
        address_of(&with_service),
        [("Hostname", "lb.example.net".to_string()), ("IPAddress", "192.0.2.10".to_string())],
        "the Service's load-balancer addresses win"
    );
}

#[test]
fn regexes_are_checked_against_what_re2_accepts() {
    for ok in [r"(?i)abc", r"(?P<n>a)", r"(?<n>a)", r"\d+\.\w*", r"(?s:.)", r"[\]\-]", r"\x{41}\pL"] {
        assert!(check_regex(ok.into()).is_ok(), "{ok}");
    }
    for bad in [r"(?x)a b", r"\u0041", r"a\<", r"end\Z", r"(?u)x", r"(a", "a{2,1}", r"\Qa\E"] {
        assert!(check_regex(bad.into()).is_err(), "{bad}");
    }
}

#[test]
fn host_mode_binds_fleets_to_the_provisioned_address() {
    let with_service = format!(
        "{BASE}{}",
        r#"
---
apiVersion: v1
kind: Service
metadata: {name: envoy-gw, namespace: infra, labels: {gateway.networking.k8s.io/gateway-name: gw}}
spec: {ports: [{port: 80}]}
status: {loadBalancer: {ingress: [{ip: 127.0.1.7}]}}
"#
    );
    let host = Options { host_mode: true, ..Options::default() };
    let t = translate(&snapshot(&with_service), &host);
    assert_eq!(t.ir.fleets[0].address, Some("127.0.1.7".parse().unwrap()), "the Service's address");
    let t = translate(&snapshot(&with_service), &Options::default());
    assert_eq!(t.ir.fleets[0].address, Some("127.0.0.9".parse().unwrap()), "outside host mode: spec.addresses");
}

#[test]
fn grpc_routes_become_http2_routes_on_http_listeners() {
    let yaml = format!(
        "{BASE}{}",
        r#"
---
apiVersion: v1
kind: Service
metadata: {name: echo, namespace: infra}
spec: {ports: [{port: 8080}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {name: grpc, namespace: infra}
spec:
  parentRefs: [{name: gw, sectionName: http}]
  hostnames: [Grpc.Example.com]
  rules:
  - matches: [{method: {service: pkg.Echo, method: Ping}}]
    backendRefs: [{name: echo, port: 8080}]
  - matches: [{method: {service: pkg.Echo}, headers: [{name: X-Team, value: a}]}]
    backendRefs: [{name: echo, port: 8080}]
  - matches: [{method: {method: Ping}}]
    backendRefs: [{name: echo, port: 8080}]
  - matches: [{method: {type: RegularExpression, service: "pkg\\..*"}}]
    backendRefs: [{name: echo, port: 8080}]
"#
    );
    let s = snapshot(&yaml);
    let t = translate(&s, &Options::default());
    assert!(t.diagnostics.iter().all(|d| d.origin.kind == "Gateway"), "{:?}", t.diagnostics);
    let routes = &t.ir.fleets[0].listeners[0].http_routes;
    assert_eq!(routes.len(), 1, "attached to the HTTP listener");
    let route = &routes[0];
    assert_eq!(route.origin.kind, "GRPCRoute");
    assert_eq!(route.hostnames, ["grpc.example.com"]);
    let paths: Vec<&PathMatch> = route.rules.iter().map(|r| &r.matches[0].path).collect();
    assert_eq!(
        paths,
        [
            &PathMatch::Exact("/pkg.Echo/Ping".into()),
            &PathMatch::StringPrefix("/pkg.Echo/".into()),
            &PathMatch::Regex("/[^/]+/Ping".into()),
            &PathMatch::Regex("/(?:pkg\\..*)/(?:[^/]+)".into()),
        ]
    );
    assert_eq!(route.rules[1].matches[0].headers[0].name, "x-team");
    let protocol = route.rules[0].backends[0].options.as_ref().and_then(|o| o.protocol);
    assert_eq!(protocol, Some(ir::UpstreamProtocol::H2c), "gRPC needs HTTP/2 to the backend");
    let (_, status) = translate_with_status(&yaml, &Options::default());
    assert_eq!(status.gateways[0].listeners[0].supported_kinds, ["HTTPRoute", "GRPCRoute"]);
    assert_eq!(status.gateways[0].listeners[0].attached_routes, 1);
    assert!(status.routes.iter().any(|r| r.kind == "GRPCRoute"), "the route gets status");
}

#[test]
fn listener_route_kinds_and_gateway_parameters_are_checked() {
    let yaml = &format!(
        "{CLASS}---\n{}",
        r#"
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: infra}
spec:
  gatewayClassName: contour
  infrastructure: {parametersRef: {group: invalid.io, kind: InvalidParameters, name: invalid}}
  listeners:
  - {name: only-invalid, port: 80, protocol: HTTP, allowedRoutes: {kinds: [{kind: InvalidRoute}]}}
  - {name: mixed, port: 81, protocol: HTTP, allowedRoutes: {kinds: [{kind: InvalidRoute}, {kind: HTTPRoute}]}}
  - {name: tls, port: 443, protocol: TLS, tls: {mode: Passthrough}}
"#
    );
    let (_, status) = translate_with_status(yaml, &Options::default());
    let gw = &status.gateways[0];
    let accepted = gw.conditions.iter().find(|c| c.type_ == "Accepted").expect("Accepted");
    assert_eq!((accepted.status, accepted.reason), (false, "InvalidParameters"));
    let resolved = |l: usize| gw.listeners[l].conditions.iter().find(|c| c.type_ == "ResolvedRefs").cloned().unwrap();
    assert!(gw.listeners[0].supported_kinds.is_empty());
    assert_eq!((resolved(0).status, resolved(0).reason), (false, "InvalidRouteKinds"));
    assert_eq!(gw.listeners[1].supported_kinds, ["HTTPRoute"]);
    assert_eq!((resolved(1).status, resolved(1).reason), (false, "InvalidRouteKinds"));
    assert_eq!(gw.listeners[2].supported_kinds, ["TLSRoute"]);
    assert!(resolved(2).status);
}

#[test]
fn gateway_with_some_refused_listeners_is_accepted_with_listeners_not_valid() {
    // BASE's Gateway has two HTTP listeners and one of a protocol we do not know, refused.
    let (_, status) = translate_with_status(BASE, &Options::default());
    let accepted = status.gateways[0].conditions.iter().find(|c| c.type_ == "Accepted").expect("Accepted");
    assert_eq!((accepted.status, accepted.reason), (true, "ListenersNotValid"));
    let custom = status.gateways[0].listeners[2].conditions.iter().find(|c| c.type_ == "Accepted").unwrap();
    assert_eq!((custom.status, custom.reason), (false, "UnsupportedProtocol"));
}

#[test]
fn a_certificate_in_another_namespace_without_grant_says_ref_not_permitted() {
    let yaml = &format!(
        "{CLASS}---\n{}",
        r#"
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: infra}
spec:
  gatewayClassName: contour
  listeners:
  - {name: https, port: 443, protocol: HTTPS, tls: {certificateRefs: [{name: cert, namespace: web}]}}
---
apiVersion: v1
kind: Secret
metadata: {name: cert, namespace: web}
type: kubernetes.io/tls
stringData: {tls.crt: x, tls.key: y}
"#
    );
    let (_, status) = translate_with_status(yaml, &Options::default());
    let resolved = status.gateways[0].listeners[0].conditions.iter().find(|c| c.type_ == "ResolvedRefs").unwrap();
    assert_eq!((resolved.status, resolved.reason), (false, "RefNotPermitted"), "the specific reason wins");
}

#[test]
fn requested_addresses_are_checked() {
    let gateway = |addresses: &str| {
        format!(
            r#"{CLASS}---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {{name: gw, namespace: infra}}
spec:
  gatewayClassName: contour
  addresses: {addresses}
  listeners: [{{name: http, port: 8080, protocol: HTTP}}]
"#
        )
    };
    let host = Options { host_mode: true, ..Options::default() };
    let conditions = |yaml: &str| {
        let (_, status) = translate_with_status(yaml, &host);
        let c = |ty: &str| {
            let c = status.gateways[0].conditions.iter().find(|c| c.type_ == ty).cloned().unwrap();
            (c.status, c.reason)
        };
        (c("Accepted"), c("Programmed"))
    };
    let invalid = gateway(r#"[{type: test/fake-invalid-type, value: "x"}, {value: 127.0.2.250}]"#);
    assert_eq!(conditions(&invalid).0, (false, "UnsupportedAddress"));
    let unusable = gateway("[{type: Hostname, value: unusable.example.com}, {value: 127.0.2.250}]");
    assert_eq!(conditions(&unusable), ((true, "Accepted"), (false, "AddressNotUsable")));
    let foreign = gateway("[{type: IPAddress, value: 192.0.2.1}]");
    assert_eq!(conditions(&foreign).1, (false, "AddressNotUsable"), "host mode binds loopback addresses only");
    let usable = gateway("[{type: IPAddress, value: 127.0.2.250}]");
    assert_eq!(conditions(&usable), ((true, "Accepted"), (true, "Programmed")));
}

#[test]
fn backend_request_timeouts_and_websockets() {
    let yaml = format!(
        "{BASE}{}",
        r#"
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: t, namespace: infra}
spec:
  parentRefs: [{name: gw, sectionName: http}]
  rules:
  - {timeouts: {backendRequest: 500ms}, backendRefs: [{name: a, port: 80}]}
  - {timeouts: {request: 2s, backendRequest: 500ms}, backendRefs: [{name: a, port: 80}]}
  - {timeouts: {request: 2s, backendRequest: 0s}, backendRefs: [{name: a, port: 80}]}
  - {timeouts: {request: 0s, backendRequest: 1s}, backendRefs: [{name: a, port: 80}]}
"#
    );
    let t = translate(&snapshot(&yaml), &Options::default());
    let route = &t.ir.fleets[0].listeners[0].http_routes[0];
    let timeouts: Vec<Option<u64>> = route.rules.iter().map(|r| r.request_timeout_ms).collect();
    assert_eq!(timeouts, [Some(500), Some(500), Some(2000), Some(1000)]);
    assert!(route.rules.iter().all(|r| r.policy.websockets), "HTTPRoute allows websocket upgrades");
}

#[test]
fn retries_follow_the_rule_and_its_backend_timeout() {
    let yaml = format!(
        "{BASE}{}",
        r#"
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: t, namespace: infra}
spec:
  parentRefs: [{name: gw, sectionName: http}]
  rules:
  - {retry: {codes: [500, 503], attempts: 3, backoff: 50ms}, timeouts: {request: 2s, backendRequest: 500ms}, backendRefs: [{name: a, port: 80}]}
  - {retry: {}, backendRefs: [{name: a, port: 80}]}
  - {retry: {attempts: 2, backoff: soon}, backendRefs: [{name: a, port: 80}]}
"#
    );
    let t = translate(&snapshot(&yaml), &Options::default());
    let route = &t.ir.fleets[0].listeners[0].http_routes[0];
    let first = route.rules[0].policy.retry.clone().expect("a retry policy");
    assert_eq!(first.retry_on, ["connect-failure", "refused-stream", "reset", "retriable-status-codes"]);
    assert_eq!((first.count, first.retriable_status_codes.clone()), (3, vec![500, 503]));
    assert_eq!((first.per_try_timeout_ms, first.backoff_ms), (Some(500), Some(50)), "each try gets backendRequest");
    assert_eq!(route.rules[0].request_timeout_ms, Some(2000), "the request's timeout covers every try");
    let bare = route.rules[1].policy.retry.clone().expect("a retry policy");
    assert_eq!((bare.count, bare.retry_on.len(), bare.per_try_timeout_ms), (1, 3, None), "connection errors, once");
    let bad: Vec<&str> = t.diagnostics.iter().map(|d| d.field.as_str()).collect();
    assert!(bad.contains(&"spec.rules[2].retry.backoff"), "{bad:?}");
}

#[test]
fn backend_ref_header_filters_become_backend_options() {
    let yaml = format!(
        "{BASE}{}",
        r#"
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: f, namespace: infra}
spec:
  parentRefs: [{name: gw, sectionName: http}]
  rules:
  - backendRefs:
    - name: a
      port: 80
      filters:
      - {type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: X-A, value: "1"}]}}
      - {type: ResponseHeaderModifier, responseHeaderModifier: {remove: [X-B]}}
    - name: b
      port: 80
      filters: [{type: RequestMirror, requestMirror: {backendRef: {name: a, port: 80}}}]
"#
    );
    let t = translate(&snapshot(&yaml), &Options::default());
    let backends = &t.ir.fleets[0].listeners[0].http_routes[0].rules[0].backends;
    let options = backends[0].options.as_ref().expect("filters as options");
    assert_eq!(options.request_headers.set, [("X-A".to_string(), "1".to_string())]);
    assert_eq!(options.response_headers.remove, ["X-B"]);
    assert!(backends[1].options.is_none());
    assert!(
        t.diagnostics.iter().any(|d| d.reason == "UnsupportedValue" && d.field.ends_with("backendRefs[1].filters[0]")),
        "an unsupported backend filter is reported: {:?}",
        t.diagnostics
    );
}

#[test]
fn a_backend_ref_url_rewrite_shared_by_the_rule_rewrites_the_route() {
    let rewrite = |path: &str| format!("{{type: URLRewrite, urlRewrite: {{path: {path}}}}}");
    let full = rewrite("{type: ReplaceFullPath, replaceFullPath: /rewritten-full}");
    let prefix = rewrite("{type: ReplacePrefixMatch, replacePrefixMatch: /rewritten-prefix}");
    let yaml = format!(
        r#"{BASE}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: r, namespace: infra}}
spec:
  parentRefs: [{{name: gw, sectionName: http}}]
  rules:
  - matches: [{{path: {{type: PathPrefix, value: /full}}}}]
    backendRefs: [{{name: a, port: 80, filters: [{full}]}}]
  - matches: [{{path: {{type: PathPrefix, value: /prefix}}}}]
    backendRefs: [{{name: a, port: 80, weight: 1, filters: [{prefix}]}}, {{name: b, port: 80, weight: 1, filters: [{prefix}]}}]
  - matches: [{{path: {{type: PathPrefix, value: /mixed}}}}]
    backendRefs: [{{name: a, port: 80, filters: [{full}]}}, {{name: b, port: 80}}]
  - matches: [{{path: {{type: PathPrefix, value: /twice}}}}]
    filters: [{full}]
    backendRefs: [{{name: a, port: 80, filters: [{prefix}]}}]
"#
    );
    let t = translate(&snapshot(&yaml), &Options::default());
    let rules = &t.ir.fleets[0].listeners[0].http_routes[0].rules;
    let rewrite_of = |rule: &ir::HttpRule| {
        rule.filters.iter().find_map(|f| match f {
            HttpFilter::UrlRewrite(r) => r.path.clone(),
            _ => None,
        })
    };
    assert_eq!(rewrite_of(&rules[0]), Some(ir::PathModifier::Full("/rewritten-full".into())));
    assert_eq!(rewrite_of(&rules[1]), Some(ir::PathModifier::Prefix("/rewritten-prefix".into())));
    assert_eq!(rules[1].backends.len(), 2, "both backends stay");
    for (rule, field) in
        [(&rules[2], "spec.rules[2].backendRefs[1]"), (&rules[3], "spec.rules[3].backendRefs[0].filters[0]")]
    {
        assert_eq!(rule.filters, [HttpFilter::DirectResponse { status: 500, body: None }], "refused, not half served");
        assert!(
            t.diagnostics.iter().any(|d| d.reason == "UnsupportedValue" && d.field == field),
            "{field} is named: {:?}",
            t.diagnostics
        );
    }
    let refused = t.diagnostics.iter().filter(|d| d.reason == "UnsupportedValue").count();
    assert_eq!(refused, 2, "{:?}", t.diagnostics);
}

/// Upstream's static mode: the named Gateway alone, on the default fleet, ports mapped.
#[test]
fn a_static_gateway_is_served_by_the_default_fleet_alone() {
    let yaml = format!(
        "{BASE}{}",
        r#"
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: web, namespace: infra}
spec:
  parentRefs: [{name: foreign}]
  rules: [{backendRefs: [{name: echo, port: 80}]}]
"#
    );
    let options = Options { static_gateway: Some(objects::ObjectKey::new("infra", "foreign")), ..Options::default() };
    let (t, set) = translate_with_status(&yaml, &options);
    assert_eq!(t.ir.fleets.len(), 1, "only the named Gateway, whatever its class");
    let fleet = &t.ir.fleets[0];
    assert_eq!(fleet.id, ir::DEFAULT_FLEET);
    assert_eq!(fleet.listeners[0].port, 8080, "port 80 becomes Envoy's 8080");
    assert_eq!(fleet.listeners[0].http_routes.len(), 1);
    let gateways: Vec<_> = set.gateways.iter().map(|g| g.key.name.as_str()).collect();
    assert_eq!(gateways, ["foreign"], "status for the static Gateway only");
    assert_eq!(set.gateways[0].listeners[0].attached_routes, 1);
    let programmed = set.gateways[0].conditions.iter().find(|c| c.type_ == "Programmed").expect("Programmed");
    assert!(programmed.status, "no address asked for, none needed: {programmed:?}");

    // Its addresses are the Envoy Service's load balancer's.
    let with_service = format!(
        "{yaml}{}",
        r#"
---
apiVersion: v1
kind: Service
metadata: {name: envoy, namespace: projectcontour}
spec: {ports: [{port: 80}]}
status: {loadBalancer: {ingress: [{ip: 10.0.0.7}]}}
"#
    );
    let envoy = Options { envoy_service: Some(objects::ObjectKey::new("projectcontour", "envoy")), ..options.clone() };
    let (_, set) = translate_with_status(&with_service, &envoy);
    let address = &set.gateways[0].addresses;
    assert_eq!(address.iter().map(|a| (a.type_, a.value.as_str())).collect::<Vec<_>>(), [("IPAddress", "10.0.0.7")]);

    let missing = Options { static_gateway: Some(objects::ObjectKey::new("infra", "absent")), ..Options::default() };
    assert!(translate(&snapshot(BASE), &missing).ir.fleets.is_empty());
}

#[test]
fn static_gateway_ports_map_as_upstream() {
    for (port, mapped) in
        [(80, 8080), (443, 8443), (8080, 16080), (1, 8001), (57535, 65535), (57536, 1024), (65535, 8000)]
    {
        assert_eq!(container_port(port), mapped, "{port}");
    }
}

mod backend_tls;
mod gateway_tls;
mod l4;
mod listener_set;
mod status_cache;

#[test]
fn invalid_hostnames_are_left_out_with_upstreams_conditions() {
    let yaml = format!(
        r#"{CLASS}---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {{name: gw, namespace: default}}
spec:
  gatewayClassName: contour
  listeners:
  - {{name: http, port: 8080, protocol: HTTP}}
  - {{name: bad, port: 8081, protocol: HTTP, hostname: "foo.*.example.com"}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: web, namespace: default}}
spec:
  parentRefs: [{{name: gw, sectionName: http}}]
  hostnames: ["", web.example.com, "10.0.0.1"]
  rules: [{{backendRefs: [{{name: web, port: 80}}]}}]
"#
    );
    let (t, set) = translate_with_status(&yaml, &Options::default());
    let listeners = &t.ir.fleets[0].listeners;
    assert_eq!(listeners[0].http_routes[0].hostnames, ["web.example.com"]);
    assert_eq!(listeners[1].port, 0, "a listener with an invalid hostname is not served");
    let route = &set.routes[0].parents[0].conditions;
    assert_eq!(condition(route, "Accepted"), (true, "Accepted"));
    assert_eq!(condition(route, "ResolvedRefs"), (false, "Degraded"));
    let bad = &set.gateways[0].listeners[1].conditions;
    assert_eq!(condition(bad, "Accepted"), (false, "UnsupportedValue"));
    assert_eq!(condition(bad, "Programmed"), (false, "Invalid"));
    let fields: Vec<&str> = t.diagnostics.iter().map(|d| d.field.as_str()).collect();
    assert_eq!(fields, ["spec.listeners[1].hostname", "spec.hostnames[0]", "spec.hostnames[2]"]);
}
