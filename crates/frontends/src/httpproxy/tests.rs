//! Golden fixtures: objects in, upstream-shaped status and IR out.

use super::*;
use ir::{BackendTarget, HttpFilter, PathMatch, StringMatch};

use crate::fixtures::{CERT, tls_secret};

/// Services `web` (80, 8080 named `http`) and `api` (80) in `apps`, a TLS Secret `apps/cert`
/// and one in `certs/shared` (with a CA).
fn base() -> String {
    let services = r#"
apiVersion: v1
kind: Service
metadata: {name: web, namespace: apps}
spec: {ports: [{port: 80}, {name: http, port: 8080}, {name: dns, port: 53, protocol: UDP}]}
---
apiVersion: v1
kind: Service
metadata: {name: api, namespace: apps}
spec: {ports: [{port: 80}]}
"#;
    [services.to_string(), tls_secret("apps", "cert", ""), tls_secret("certs", "shared", &format!("ca.crt: {CERT}"))]
        .concat()
}

fn run(extra: &str) -> (Translation, Vec<status::ProxyStatus>) {
    run_with(extra, &Options::default())
}

fn run_with(extra: &str, options: &Options) -> (Translation, Vec<status::ProxyStatus>) {
    let snapshot = Snapshot::from_yaml(&format!("{}---\n{extra}", base())).expect("fixture parses");
    let t = translate(&snapshot, options);
    let statuses = status::compute(&snapshot, options, &t.diagnostics);
    let cached = status::compute_cached(&snapshot, options, &t.diagnostics, &mut Default::default());
    assert!(cached.iter().map(|s| &**s).eq(statuses.iter()), "computed with a cache, the same statuses");
    (t, statuses)
}

#[test]
fn statuses_of_proxies_whose_object_and_diagnostics_are_the_same_are_reused() {
    let root = proxy(
        "root",
        "  virtualhost: {fqdn: www.example.com}\n  includes: [{name: child}]\n  routes: [{services: [{name: web, port: 80}]}]",
    );
    let other =
        proxy("other", "  virtualhost: {fqdn: other.example.com}\n  routes: [{services: [{name: web, port: 80}]}]");
    let mut snapshot = Snapshot::from_yaml(&format!("{}---\n{root}{other}", base())).expect("parses");
    let options = Options::default();
    let mut cache = status::StatusCache::default();
    let statuses = |snapshot: &Snapshot, cache: &mut status::StatusCache| {
        let t = translate(snapshot, &options);
        status::compute_cached(snapshot, &options, &t.diagnostics, cache)
    };
    let first = statuses(&snapshot, &mut cache);
    assert_eq!(first.iter().map(|s| s.current_status).collect::<Vec<_>>(), ["valid", "invalid"], "other, root");

    // The child arrives: the root's diagnostics change although the root did not.
    let child = proxy("child", "  routes: [{services: [{name: api, port: 80}]}]");
    snapshot.upsert(objects::parse_documents(&child).remove(0).expect("parses"));
    let second = statuses(&snapshot, &mut cache);
    let by_name = |list: &[std::sync::Arc<status::ProxyStatus>], name: &str| {
        std::sync::Arc::clone(list.iter().find(|s| s.key.name == name).expect("a status"))
    };
    assert_eq!(by_name(&second, "root").current_status, "valid");
    assert_eq!(by_name(&second, "child").current_status, "valid");
    assert!(std::sync::Arc::ptr_eq(&by_name(&first, "other"), &by_name(&second, "other")), "reused");
    let third = statuses(&snapshot, &mut cache);
    assert!(second.iter().zip(&third).all(|(a, b)| std::sync::Arc::ptr_eq(a, b)), "nothing changed");
}

/// `ns/name currentStatus` followed by `type/reason: message` per error (and `warning ...`).
fn render(statuses: &[status::ProxyStatus]) -> Vec<String> {
    let mut out = Vec::new();
    for s in statuses {
        out.push(format!("{} {}: {}", s.key, s.current_status, s.description));
        for e in &s.errors {
            out.push(format!("  {}/{}: {}", e.type_, e.reason, e.message));
        }
        for w in &s.warnings {
            out.push(format!("  warning {}/{}: {}", w.type_, w.reason, w.message));
        }
    }
    out
}

fn proxy(name: &str, spec: &str) -> String {
    format!(
        "apiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {{name: {name}, namespace: apps}}\nspec:\n{spec}\n---\n"
    )
}

/// The rules on the HTTP listener for a hostname, flattened.
fn http_rules<'a>(t: &'a Translation, host: &str) -> Vec<&'a ir::HttpRule> {
    let fleet = t.ir.fleets.iter().find(|f| f.id == ir::DEFAULT_FLEET).expect("default fleet");
    let http = fleet.listeners.iter().find(|l| l.name == HTTP_LISTENER).expect("http listener");
    http.http_routes.iter().filter(|r| r.hostnames == [host]).flat_map(|r| &r.rules).collect()
}

#[test]
fn a_simple_root_is_valid_and_routes_to_its_service() {
    let (t, statuses) = run(&proxy(
        "root",
        "  virtualhost: {fqdn: Www.Example.com}\n  routes:\n  - conditions: [{prefix: /app}]\n    services: [{name: web, port: 80, weight: 3}, {name: api, port: 80}]",
    ));
    assert_eq!(render(&statuses), ["apps/root valid: Valid HTTPProxy"]);
    let rules = http_rules(&t, "www.example.com");
    assert_eq!(rules.len(), 1);
    assert_eq!(rules[0].matches[0].path, PathMatch::StringPrefix("/app".into()));
    let weights: Vec<_> = rules[0].backends.iter().map(|b| b.weight).collect();
    assert_eq!(weights, [3, 0], "an unset weight next to a set one gets no traffic, as upstream");
    assert!(matches!(&rules[0].backends[0].target, BackendTarget::Service(s) if s.name == "web" && s.port == 80));
}

#[test]
fn includes_merge_conditions_and_report_their_problems() {
    let yaml = [
        proxy(
            "root",
            "  virtualhost: {fqdn: example.com}
  includes:
  - {name: blog, conditions: [{prefix: /blog}]}
  - {name: missing, conditions: [{prefix: /missing}]}
  - {name: other-root, conditions: [{prefix: /other}]}
  - {name: blog2, conditions: [{prefix: /blog/}]}
  - {name: bad, conditions: [{exact: /x}]}",
        ),
        proxy("blog", "  routes:\n  - conditions: [{prefix: /posts}]\n    services: [{name: web, port: 80}]"),
        proxy("blog2", "  routes:\n  - services: [{name: web, port: 80}]"),
        proxy(
            "other-root",
            "  virtualhost: {fqdn: other.example.com}\n  routes: [{services: [{name: web, port: 80}]}]",
        ),
        proxy("lonely", "  routes: [{services: [{name: web, port: 80}]}]"),
    ]
    .concat();
    let (t, statuses) = run(&yaml);
    assert_eq!(
        render(&statuses),
        [
            "apps/blog valid: Valid HTTPProxy",
            "apps/blog2 valid: Valid HTTPProxy",
            "apps/lonely orphaned: this HTTPProxy is not part of a delegation chain from a root HTTPProxy",
            "  Orphaned/Orphaned: this HTTPProxy is not part of a delegation chain from a root HTTPProxy",
            "apps/other-root valid: Valid HTTPProxy",
            "apps/root invalid: At least one error present, see Errors for details",
            "  IncludeError/IncludeNotFound: include apps/missing not found",
            "  IncludeError/RootIncludesRoot: root httpproxy cannot include another root httpproxy (apps/other-root)",
            "  IncludeError/PathMatchConditionsNotValid: include: exact conditions are not allowed in includes block",
        ]
    );
    let rules = http_rules(&t, "example.com");
    let answers: Vec<(PathMatch, Option<u16>)> = rules
        .iter()
        .map(|r| {
            let status = r.filters.iter().find_map(|f| match f {
                HttpFilter::DirectResponse { status, .. } => Some(*status),
                _ => None,
            });
            (r.matches[0].path.clone(), status)
        })
        .collect();
    assert!(answers.contains(&(PathMatch::StringPrefix("/blog/posts".into()), None)), "{answers:?}");
    assert!(answers.contains(&(PathMatch::StringPrefix("/blog/".into()), None)), "{answers:?}");
    assert!(answers.contains(&(PathMatch::StringPrefix("/missing".into()), Some(502))), "{answers:?}");
    assert!(answers.contains(&(PathMatch::StringPrefix("/other".into()), Some(502))), "{answers:?}");
}

#[test]
fn cycles_duplicates_and_root_checks() {
    let yaml = [
        proxy("a", "  virtualhost: {fqdn: dup.example.com}\n  routes: [{services: [{name: web, port: 80}]}]"),
        proxy("b", "  virtualhost: {fqdn: DUP.example.com}\n  routes: [{services: [{name: web, port: 80}]}]"),
        proxy(
            "loop-root",
            "  virtualhost: {fqdn: loop.example.com}\n  includes: [{name: loop1, conditions: [{prefix: /a}]}]",
        ),
        proxy("loop1", "  includes: [{name: loop2, conditions: [{prefix: /b}]}]"),
        proxy("loop2", "  includes: [{name: loop1, conditions: [{prefix: /c}]}]"),
        proxy("empty", "  virtualhost: {fqdn: empty.example.com}"),
        proxy(
            "twice",
            "  virtualhost: {fqdn: twice.example.com}
  includes:
  - {name: loop1, conditions: [{prefix: /x}, {header: {name: a, exact: b}}]}
  - {name: loop2, conditions: [{header: {name: a, exact: b}}, {prefix: /x}]}",
        ),
    ]
    .concat();
    let (_, statuses) = run(&yaml);
    let rendered = render(&statuses);
    let expect = [
        "apps/a invalid: At least one error present, see Errors for details",
        "  VirtualHostError/DuplicateVhost: fqdn \"dup.example.com\" is used in multiple HTTPProxies: apps/a, apps/b",
        "apps/b invalid: At least one error present, see Errors for details",
        "  VirtualHostError/DuplicateVhost: fqdn \"dup.example.com\" is used in multiple HTTPProxies: apps/a, apps/b",
        "apps/empty invalid: At least one error present, see Errors for details",
        "  SpecError/NothingDefined: HTTPProxy.Spec must have at least one Route, Include, or a TCPProxy",
    ];
    for line in expect {
        assert!(rendered.iter().any(|l| l == line), "missing {line:?} in {rendered:#?}");
    }
    assert!(
        rendered.iter().any(|l| l == "  IncludeError/IncludeCreatesCycle: include creates an include cycle: apps/loop-root -> apps/loop1 -> apps/loop2 -> apps/loop1"),
        "{rendered:#?}"
    );
    assert!(
        rendered
            .iter()
            .any(|l| l == "  IncludeError/DuplicateMatchConditions: duplicate conditions defined on an include"),
        "{rendered:#?}"
    );
}

#[test]
fn route_errors_drop_the_proxys_routes_and_name_the_reason() {
    let cases: &[(&str, &str)] = &[
        (
            "  - conditions: [{prefix: /a}]",
            "RouteError/RouteActionCountNotValid: must set exactly one of route.services or route.requestRedirectPolicy or route.directResponsePolicy",
        ),
        (
            "  - conditions: [{prefix: a}]\n    services: [{name: web, port: 80}]",
            "RouteError/PathMatchConditionsNotValid: route: prefix conditions must start with /, a was supplied",
        ),
        (
            "  - conditions: [{prefix: /a}, {exact: /b}]\n    services: [{name: web, port: 80}]",
            "RouteError/PathMatchConditionsNotValid: route: more than one prefix, exact or regex is not allowed in a condition block",
        ),
        (
            "  - conditions: [{regex: '/(a'}]\n    services: [{name: web, port: 80}]",
            "RouteError/PathMatchConditionsNotValid: route: supplied regex: /(a invalid. error: unclosed group",
        ),
        (
            "  - conditions: [{header: {name: x, present: true}}, {header: {name: X, notpresent: true}}]\n    services: [{name: web, port: 80}]",
            "RouteError/HeaderMatchConditionsNotValid: cannot specify contradictory 'present' and 'notpresent' conditions for the same route and header",
        ),
        (
            "  - conditions: [{header: {name: x, exact: a}}, {header: {name: x, exact: b}}]\n    services: [{name: web, port: 80}]",
            "RouteError/HeaderMatchConditionsNotValid: cannot specify duplicate header 'exact match' conditions in the same route",
        ),
        (
            "  - conditions: [{header: {name: x, exact: a}}, {header: {name: x, notexact: a}}]\n    services: [{name: web, port: 80}]",
            "RouteError/HeaderMatchConditionsNotValid: cannot specify contradictory 'exact' and 'notexact' conditions for the same route and header",
        ),
        (
            "  - conditions: [{header: {name: x, contains: a}}, {header: {name: x, notcontains: a}}]\n    services: [{name: web, port: 80}]",
            "RouteError/HeaderMatchConditionsNotValid: cannot specify contradictory 'contains' and 'notcontains' conditions for the same route and header",
        ),
        (
            "  - conditions: [{header: {name: x, regex: '('}}]\n    services: [{name: web, port: 80}]",
            "RouteError/HeaderMatchConditionsNotValid: invalid regular expression specified for 'regex' condition",
        ),
        (
            "  - conditions: [{queryParameter: {name: q}}]\n    services: [{name: web, port: 80}]",
            "RouteError/QueryParameterMatchConditionsNotValid: must specify at least one query parameter condition",
        ),
        (
            "  - conditions: [{queryParameter: {name: q, exact: a, prefix: b}}]\n    services: [{name: web, port: 80}]",
            "RouteError/QueryParameterMatchConditionsNotValid: cannot specify more than one condition in the same match condition branch",
        ),
        (
            "  - conditions: [{queryParameter: {name: q, exact: a}}, {queryParameter: {name: q, exact: b}}]\n    services: [{name: web, port: 80}]",
            "RouteError/QueryParameterMatchConditionsNotValid: cannot specify duplicate query parameter 'exact match' conditions in the same route",
        ),
        (
            "  - services: [{name: web, port: 80}]\n    requestHeadersPolicy: {set: [{name: x-a, value: '1'}, {name: X-A, value: '2'}]}",
            "RouteError/RequestHeadersPolicyInvalid: duplicate header addition: \"X-A\" on request headers",
        ),
        (
            "  - services: [{name: web, port: 80}]\n    responseHeadersPolicy: {set: [{name: host, value: x}]}",
            "RouteError/ResponseHeaderPolicyInvalid: rewriting \"Host\" header is not supported on response headers",
        ),
        (
            "  - services: [{name: web, port: 80}]\n    requestHeadersPolicy: {remove: [x-a, X-a]}",
            "RouteError/RequestHeadersPolicyInvalid: duplicate header removal: \"X-A\" on request headers",
        ),
        (
            "  - services: [{name: web, port: 80}]\n    timeoutPolicy: {response: forever}",
            "RouteError/TimeoutPolicyNotValid: route.timeoutPolicy failed to parse: error parsing response timeout: unable to parse timeout string \"forever\": time: invalid duration \"forever\"",
        ),
        (
            "  - requestRedirectPolicy: {path: /a, prefix: /b}",
            "RouteError/RequestRedirectPolicy: route.requestRedirectPolicy is invalid: cannot specify both redirect path and redirect prefix",
        ),
        (
            "  - conditions: [{exact: /a}]\n    services: [{name: web, port: 80}]\n    pathRewritePolicy: {replacePrefix: [{replacement: /b}]}",
            "PrefixReplaceError/MustHavePrefix: cannot specify prefix replacements without a prefix condition",
        ),
        (
            "  - services: [{name: web, port: 80}]\n    pathRewritePolicy: {replacePrefix: [{prefix: /a, replacement: /b}, {prefix: /a, replacement: /c}]}",
            "PrefixReplaceError/DuplicateReplacement: duplicate replacement prefix '/a'",
        ),
        (
            "  - services: [{name: web, port: 80}]\n    pathRewritePolicy: {replacePrefix: [{replacement: /b}, {replacement: /c}]}",
            "PrefixReplaceError/AmbiguousReplacement: ambiguous prefix replacement",
        ),
        (
            "  - services: [{name: web, port: 80}]\n    healthCheckPolicy: {path: /hc, expectedStatuses: [{start: 99, end: 200}]}",
            "RouteError/HealthCheckPolicyInvalid: invalid expected status range: start must be in the range [100, 599]",
        ),
        (
            "  - services: [{name: web, port: 80}]\n    healthCheckPolicy: {path: /hc, expectedStatuses: [{start: 200, end: 601}]}",
            "RouteError/HealthCheckPolicyInvalid: invalid expected status range: end must be in the range [101, 600]",
        ),
        (
            "  - services: [{name: web, port: 0}]",
            "ServiceError/ServicePortInvalid: service \"web\": port must be in the range 1-65535",
        ),
        (
            "  - services: [{name: web, port: 80, slowStartPolicy: {window: 5s}}]\n    loadBalancerPolicy: {strategy: Random}",
            "ServiceError/SlowStartInvalid: slow start is only supported with RoundRobin or WeightedLeastRequest load balancer strategy",
        ),
        (
            "  - services: [{name: web, port: 80, slowStartPolicy: {window: soon}}]",
            "ServiceError/SlowStartInvalid: error parsing window: time: invalid duration \"soon\" on slow start",
        ),
        (
            "  - services: [{name: web, port: 80, requestHeadersPolicy: {set: [{name: Host, value: '%REQ(x-host)%'}]}}]",
            "ServiceError/RequestHeadersPolicyInvalid: rewriting \"Host\" from %REQ(x-host)% is only supported on routes on request headers",
        ),
        (
            "  - services: [{name: web, port: 80, responseHeadersPolicy: {remove: [x-a, X-A]}}]",
            "ServiceError/ResponseHeadersPolicyInvalid: duplicate header removal: \"X-A\" on response headers",
        ),
        (
            "  - services: [{name: web, port: 80, protocol: h3}]",
            "ServiceError/UnsupportedProtocol: unsupported protocol: h3",
        ),
        (
            "  - services: [{name: web, port: 80, mirror: true}, {name: api, port: 80, mirror: true}]",
            "ServiceError/OnlyOneMirror: only one service per route may be nominated as mirror",
        ),
        (
            "  - services: [{name: web, port: 80, protocol: tls, validation: {caSecret: certs/shared, subjectName: web}}]",
            "TLSError/CACertificateNotDelegated: service.UpstreamValidation.CACertificate Secret \"certs/shared\" is not configured for certificate delegation",
        ),
        (
            "  - services: [{name: web, port: 80, protocol: tls, validation: {caSecret: cert, subjectName: a, subjectNames: [b]}}]",
            "ServiceError/TLSUpstreamValidation: Service [web:80] TLS upstream validation policy error: invalid CA Secret \"apps/cert\": empty \"ca.crt\" key",
        ),
    ];
    for (routes, expected) in cases {
        let yaml = proxy(
            "root",
            &format!(
                "  virtualhost: {{fqdn: example.com}}\n  routes:\n  - conditions: [{{prefix: /ok}}]\n    services: [{{name: web, port: 80}}]\n{routes}"
            ),
        );
        let (t, statuses) = run(&yaml);
        let rendered = render(&statuses);
        assert_eq!(
            rendered,
            [
                "apps/root invalid: At least one error present, see Errors for details".to_string(),
                format!("  {expected}")
            ],
            "for {routes}"
        );
        assert!(t.ir.fleets.is_empty(), "a route error drops the proxy's routes, as upstream: {routes}");
    }
}

#[test]
fn unresolved_services_answer_503_and_keep_the_rest() {
    let yaml = proxy(
        "root",
        "  virtualhost: {fqdn: example.com}
  routes:
  - conditions: [{prefix: /gone}]
    services: [{name: nope, port: 80}]
  - conditions: [{prefix: /port}]
    services: [{name: web, port: 81}]
  - conditions: [{prefix: /udp}]
    services: [{name: web, port: 53}]
  - conditions: [{prefix: /named}]
    services: [{name: web, port: 8080}]
  - conditions: [{prefix: /health}]
    healthCheckPolicy: {path: /hc}
    services: [{name: web, port: 80, healthPort: 99}]
  - conditions: [{prefix: /unchecked}]
    services: [{name: web, port: 80, healthPort: 99}]",
    );
    let (t, statuses) = run(&yaml);
    assert_eq!(
        render(&statuses),
        [
            "apps/root invalid: At least one error present, see Errors for details",
            "  ServiceError/ServiceUnresolvedReference: Spec.Routes unresolved service reference: service \"apps/nope\" not found",
            "  ServiceError/ServiceUnresolvedReference: Spec.Routes unresolved service reference: port \"81\" on service \"apps/web\" not matched",
            "  ServiceError/ServiceUnresolvedReference: Spec.Routes unresolved service reference: unsupported service protocol \"UDP\"",
            "  ServiceError/ServiceUnresolvedReference: Spec.Routes unresolved service reference: port \"99\" on service \"apps/web\" not matched",
        ]
    );
    let rules = http_rules(&t, "example.com");
    let direct: Vec<_> = rules
        .iter()
        .filter(|r| r.filters.iter().any(|f| matches!(f, HttpFilter::DirectResponse { status: 503, .. })))
        .map(|r| r.matches[0].path.clone())
        .collect();
    assert_eq!(direct.len(), 4);
    assert!(
        rules.iter().any(|r| r.matches[0].path == PathMatch::StringPrefix("/named".into()) && r.backends.len() == 1)
    );
}

#[test]
fn more_reasons_as_upstream_words_them() {
    // (objects, the line expected in the rendered status)
    let cases: Vec<(String, &str)> = vec![
        (
            proxy("root", "  virtualhost: {fqdn: ''}\n  routes: [{services: [{name: web, port: 80}]}]"),
            "  VirtualHostError/FQDNNotSpecified: Spec.VirtualHost.Fqdn must be specified",
        ),
        (
            proxy("root", "  virtualhost: {fqdn: example.com, tls: {passthrough: true, enableFallbackCertificate: true}}\n  tcpproxy: {services: [{name: web, port: 80}]}"),
            "  TLSError/TLSIncompatibleFeatures: Spec.VirtualHost.TLS: both Passthrough and enableFallbackCertificate were specified",
        ),
        // Upstream's 2026 advisory: with the fallback certificate, a client without SNI must never
        // reach a JWT-protected backend without a token; the combination is refused.
        (
            proxy("root", "  virtualhost:\n    fqdn: example.com\n    tls: {secretName: cert, enableFallbackCertificate: true}\n    jwtProviders: [{name: idp, issuer: https://idp.test, remoteJWKS: {uri: 'https://idp.test/jwks.json'}}]\n  routes: [{services: [{name: web, port: 80}]}]"),
            "  TLSError/TLSIncompatibleFeatures: Spec.Virtualhost.TLS fallback & JWT providers are incompatible",
        ),
        (
            proxy("root", "  virtualhost: {fqdn: example.com, tls: {secretName: cert, clientValidation: {}}}\n  routes: [{services: [{name: web, port: 80}]}]"),
            "  TLSError/ClientValidationInvalid: Spec.VirtualHost.TLS client validation is invalid: CA Secret must be specified",
        ),
        (
            proxy("root", "  virtualhost: {fqdn: example.com, tls: {secretName: cert, clientValidation: {skipClientCertValidation: true, crlSecret: cert}}}\n  routes: [{services: [{name: web, port: 80}]}]"),
            "  TLSError/ClientValidationInvalid: Spec.VirtualHost.TLS client validation is invalid: invalid CRL Secret \"apps/cert\": empty \"crl.pem\" key",
        ),
        (
            proxy("root", "  virtualhost: {fqdn: example.com, tls: {passthrough: true}}\n  tcpproxy: {}"),
            "  TCPProxyError/NothingDefined: either services or inclusion must be specified",
        ),
        (
            proxy("root", "  virtualhost: {fqdn: example.com, tls: {passthrough: true}}\n  tcpproxy: {services: [{name: nope, port: 80}]}"),
            "  TCPProxyError/ServiceUnresolvedReference: Spec.TCPProxy unresolved service reference: service \"apps/nope\" not found",
        ),
        (
            proxy("root", "  virtualhost: {fqdn: example.com, tls: {passthrough: true}}\n  tcpproxy: {include: {name: nope}}"),
            "  TCPProxyIncludeError/IncludeNotFound: include apps/nope not found",
        ),
        (
            [
                proxy("root", "  virtualhost: {fqdn: example.com, tls: {passthrough: true}}\n  tcpproxy: {include: {name: other}}"),
                proxy("other", "  virtualhost: {fqdn: other.example.com}\n  routes: [{services: [{name: web, port: 80}]}]"),
            ]
            .concat(),
            "  TCPProxyIncludeError/RootIncludesRoot: root httpproxy cannot include another root httpproxy (apps/other)",
        ),
        (
            [
                proxy("root", "  virtualhost: {fqdn: example.com, tls: {passthrough: true}}\n  tcpproxy: {include: {name: t1}}"),
                proxy("t1", "  tcpproxy: {include: {name: t2}}"),
                proxy("t2", "  tcpproxy: {include: {name: t1}}"),
            ]
            .concat(),
            "  TCPProxyIncludeError/IncludeCreatesCycle: include creates a cycle: apps/root -> apps/t1 -> apps/t2 -> apps/t1",
        ),
        (
            proxy("root", "  virtualhost: {fqdn: example.com, tls: {passthrough: true}}\n  tcpproxy: {loadBalancerPolicy: {strategy: Cookie}, services: [{name: web, port: 80}]}"),
            "  warning TCPProxyError/IgnoredField: ignoring field \"Spec.TCPProxy.LoadBalancerPolicy\"; Cookie load balancer policy is not supported for TCPProxies",
        ),
        (
            proxy("root", "  virtualhost: {fqdn: example.com}\n  includes: [{name: child, conditions: [{prefix: /a}, {prefix: /b}]}]"),
            "  IncludeError/PathMatchConditionsNotValid: include: more than one prefix, exact or regex is not allowed in a condition block",
        ),
        (
            proxy("root", "  virtualhost: {fqdn: example.com}\n  includes: [{name: child, conditions: [{header: {name: a, present: true}}, {header: {name: a, notpresent: true}}]}]"),
            "  RouteError/HeaderMatchConditionsNotValid: cannot specify contradictory 'present' and 'notpresent' conditions for the same route and header",
        ),
        (
            proxy("root", "  virtualhost: {fqdn: example.com}\n  includes: [{name: child, conditions: [{queryParameter: {name: q}}]}]"),
            "  RouteError/QueryParameterMatchConditionsNotValid: must specify at least one query parameter condition",
        ),
    ];
    let more: Vec<(String, &str)> = vec![
        (
            [
                proxy("blank1", "  virtualhost: {fqdn: ''}\n  routes: [{services: [{name: web, port: 80}]}]"),
                proxy("blank2", "  virtualhost: {fqdn: ' '}\n  routes: [{services: [{name: web, port: 80}]}]"),
            ]
            .concat(),
            "  VirtualHostError/DuplicateVhost: fqdn \"\" is used in multiple HTTPProxies: apps/blank1, apps/blank2",
        ),
        (
            proxy(
                "root",
                "  virtualhost: {fqdn: example.com}\n  routes: [{conditions: [{header: {name: 'a b', present: true}}], services: [{name: web, port: 80}]}]",
            ),
            "  RouteError/HeaderMatchConditionsNotValid: invalid header name \"a b\"",
        ),
        (
            proxy("root", "  virtualhost: {fqdn: example.com}\n  routes: [{directResponsePolicy: {statusCode: 700}}]"),
            "  RouteError/DirectResponsePolicyInvalid: route.directResponsePolicy is invalid: status code 700 is not in 200-599",
        ),
        (
            proxy(
                "root",
                "  virtualhost: {fqdn: example.com}\n  routes: [{services: [{name: web, port: 80}], requestHeadersPolicy: {set: [{name: x-a, value: \"a\\r\\nb: c\"}]}}]",
            ),
            "  RouteError/RequestHeadersPolicyInvalid: invalid set header \"X-A\": [a header value must not contain control characters] on request headers",
        ),
        (
            proxy(
                "root",
                "  virtualhost: {fqdn: example.com}\n  routes: [{services: [{name: web, port: 80}], timeoutPolicy: {idle: 100000000h}}]",
            ),
            "  RouteError/TimeoutPolicyNotValid: route.timeoutPolicy failed to parse: error parsing idle timeout: unable to parse timeout string \"100000000h\": time: invalid duration \"100000000h\"",
        ),
    ];
    for (yaml, expected) in cases.into_iter().chain(more) {
        let (_, statuses) = run(&yaml);
        let rendered = render(&statuses);
        assert!(rendered.iter().any(|l| l == expected), "missing {expected:?} in {rendered:#?}");
    }
}

mod filters;
mod policies;
mod tls;

/// `enableExternalNameService`: upstream's words when off, and for a localhost name when on.
#[test]
fn external_name_services_follow_the_setting_and_never_point_at_localhost() {
    let yaml = [
        "apiVersion: v1\nkind: Service\nmetadata: {name: ext, namespace: apps}\nspec: {type: ExternalName, externalName: api.example.net, ports: [{port: 443}]}\n---\n",
        "apiVersion: v1\nkind: Service\nmetadata: {name: loop, namespace: apps}\nspec: {type: ExternalName, externalName: localhost., ports: [{port: 80}]}\n---\n",
        &proxy(
            "root",
            "  virtualhost: {fqdn: example.com}\n  routes:\n  - services: [{name: ext, port: 443}]\n  - conditions: [{prefix: /loop}]\n    services: [{name: loop, port: 80}]",
        ),
    ]
    .concat();
    let (_, statuses) = run(&yaml);
    assert_eq!(
        render(&statuses),
        [
            "apps/root invalid: At least one error present, see Errors for details",
            "  ServiceError/ServiceUnresolvedReference: Spec.Routes unresolved service reference: apps/ext is an ExternalName service, these are not currently enabled. See the config.enableExternalNameService config file setting",
            "  ServiceError/ServiceUnresolvedReference: Spec.Routes unresolved service reference: apps/loop is an ExternalName service, these are not currently enabled. See the config.enableExternalNameService config file setting",
        ]
    );
    let options = Options { enable_external_name_service: true, ..Default::default() };
    let (_, statuses) = run_with(&yaml, &options);
    assert_eq!(
        render(&statuses),
        [
            "apps/root invalid: At least one error present, see Errors for details",
            "  ServiceError/ServiceUnresolvedReference: Spec.Routes unresolved service reference: apps/loop is an ExternalName service that points to localhost, this is not allowed",
        ]
    );
}
