//! Golden fixtures for class selection, policies, and tcpproxy.

use super::*;

#[test]
fn class_selection_hides_other_classes() {
    let yaml = [
        proxy("mine", "  virtualhost: {fqdn: a.example.com}\n  routes: [{services: [{name: web, port: 80}]}]"),
        "apiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {name: theirs, namespace: apps, annotations: {projectcontour.io/ingress.class: other}}\nspec: {virtualhost: {fqdn: b.example.com}, routes: [{services: [{name: web, port: 80}]}]}\n---\n".into(),
    ]
    .concat();
    let (_, statuses) = run(&yaml);
    assert_eq!(render(&statuses), ["apps/mine valid: Valid HTTPProxy"]);
    let (_, statuses) = run_with(&yaml, &Options { class_names: vec!["other".into()], ..Default::default() });
    assert_eq!(render(&statuses), ["apps/theirs valid: Valid HTTPProxy"]);
}

#[test]
fn policies_reach_the_ir() {
    let yaml = proxy(
        "root",
        "  virtualhost: {fqdn: '*.example.com'}
  routes:
  - conditions: [{prefix: /api/}, {header: {name: X-Env, notexact: prod, treatMissingAsEmpty: true}}, {queryParameter: {name: q, prefix: a, ignoreCase: true}}]
    enableWebsockets: true
    timeoutPolicy: {response: 1.5s, idle: infinity, idleConnection: 30s}
    retryPolicy: {count: 3, perTryTimeout: 250ms, retryOn: [gateway-error]}
    loadBalancerPolicy: {strategy: RequestHash, requestHashPolicies: [{headerHashOptions: {headerName: x-user}}, {hashSourceIP: true, headerHashOptions: {headerName: y}}]}
    healthCheckPolicy: {path: /healthz}
    pathRewritePolicy: {replacePrefix: [{replacement: /v2}]}
    requestHeadersPolicy: {set: [{name: Host, value: backend.internal}, {name: x-ns, value: '%CONTOUR_NAMESPACE%'}]}
    services:
    - {name: web, port: 80, protocol: h2c, requestHeadersPolicy: {set: [{name: x-svc, value: '%CONTOUR_SERVICE_NAME%:%CONTOUR_SERVICE_PORT%'}]}}",
    );
    let (t, statuses) = run(&yaml);
    assert_eq!(
        render(&statuses),
        [
            "apps/root valid: Valid HTTPProxy",
            "  warning SpecError/IgnoredField: ignoring invalid request hash policy, must set exactly one of hashSourceIP or headerHashOptions or queryParameterHashOptions",
        ]
    );
    let rules = http_rules(&t, "*.example.com");
    assert_eq!(rules.len(), 2, "a prefix rewrite splits the route at the trailing slash");
    let (bare, slash) = (rules[0], rules[1]);
    assert_eq!(bare.matches[0].path, PathMatch::StringPrefix("/api".into()));
    assert_eq!(slash.matches[0].path, PathMatch::StringPrefix("/api/".into()));
    let rewrite = |r: &ir::HttpRule| {
        r.filters.iter().find_map(|f| match f {
            HttpFilter::UrlRewrite(u) => Some(u.clone()),
            _ => None,
        })
    };
    assert_eq!(rewrite(bare).unwrap().path, Some(ir::PathModifier::Prefix("/v2".into())));
    assert_eq!(rewrite(slash).unwrap().path, Some(ir::PathModifier::Prefix("/v2/".into())));
    assert_eq!(rewrite(slash).unwrap().hostname.as_deref(), Some("backend.internal"));
    let m = &slash.matches[0];
    assert!(m.headers.iter().any(|h| h.name == "x-env" && h.invert && h.missing_as_empty));
    assert!(m.headers.iter().any(|h| h.name == ":authority"
        && h.value == StringMatch::Regex(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?\.example\.com(:[0-9]+)?".into())));
    assert!(m.query[0].ignore_case && m.query[0].value == StringMatch::Prefix("a".into()));
    assert!(
        slash
            .filters
            .iter()
            .any(|f| matches!(f, HttpFilter::RequestHeaders(h) if h.set == [("X-Ns".to_string(), "apps".to_string())]))
    );
    assert_eq!(slash.request_timeout_ms, Some(1500));
    let p = &slash.policy;
    assert_eq!(p.idle_timeout_ms, Some(0));
    assert!(p.websockets);
    let retry = p.retry.as_ref().unwrap();
    assert_eq!(
        (retry.count, retry.per_try_timeout_ms, retry.retry_on.as_slice()),
        (3, Some(250), &["gateway-error".to_string()][..])
    );
    assert_eq!(p.cluster.load_balancer, ir::LoadBalancer::RequestHash);
    assert_eq!(p.hash_policies, [ir::HashPolicy::Header { name: "X-User".into(), terminal: false }]);
    assert_eq!(p.cluster.idle_connection_timeout_ms, Some(30_000));
    let hc = p.cluster.health_check.as_ref().unwrap();
    assert_eq!((hc.host.as_str(), hc.interval_s, hc.timeout_s), ("contour-envoy-healthcheck", 5, 2));
    let options = slash.backends[0].options.as_ref().unwrap();
    assert_eq!(options.protocol, Some(ir::UpstreamProtocol::H2c));
    assert_eq!(options.request_headers.set, [("X-Svc".to_string(), "web:80".to_string())]);
}

#[test]
fn access_controls_fail_closed() {
    let yaml = [
        proxy(
            "authz",
            "  virtualhost: {fqdn: a.example.com, authorization: {extensionRef: {name: authz}}}\n  routes: [{services: [{name: web, port: 80}]}]",
        ),
        proxy(
            "jwt",
            "  virtualhost: {fqdn: b.example.com, jwtProviders: [{name: p, remoteJWKS: {uri: 'https://idp/keys'}}]}\n  routes: [{services: [{name: web, port: 80}]}]",
        ),
        proxy("open", "  virtualhost: {fqdn: c.example.com}\n  routes: [{services: [{name: web, port: 80}]}]"),
    ]
    .concat();
    let (t, statuses) = run(&yaml);
    assert_eq!(
        render(&statuses),
        [
            "apps/authz invalid: At least one error present, see Errors for details",
            "  AuthError/AuthNotPermitted: Spec.VirtualHost.Authorization.ExtensionServiceRef can only be defined for root HTTPProxies that terminate TLS",
            "apps/jwt invalid: At least one error present, see Errors for details",
            "  JWTVerificationError/JWTVerificationNotPermitted: Spec.VirtualHost.JWTProviders can only be defined for root HTTPProxies that terminate TLS",
            "apps/open valid: Valid HTTPProxy",
        ]
    );
    let hosts: Vec<_> = t.ir.fleets[0].listeners[0].http_routes.iter().flat_map(|r| r.hostnames.clone()).collect();
    assert_eq!(hosts, ["c.example.com"], "only the virtual host without access controls is served");
}

#[test]
fn empty_strings_count_as_unset() {
    let yaml = [
        proxy(
            "root",
            "  virtualhost: {fqdn: example.com}\n  routes: [{conditions: [{prefix: ''}, {header: {name: x, exact: '', present: false}}], services: [{name: web, port: 80}]}]",
        ),
        "apiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {name: blank-class, namespace: apps, annotations: {kubernetes.io/ingress.class: ''}}\nspec: {virtualhost: {fqdn: b.example.com}, routes: [{services: [{name: web, port: 80}]}]}\n---\n".into(),
    ]
    .concat();
    let (t, statuses) = run(&yaml);
    assert_eq!(render(&statuses), ["apps/blank-class valid: Valid HTTPProxy", "apps/root valid: Valid HTTPProxy"]);
    let rules = http_rules(&t, "example.com");
    assert_eq!(rules[0].matches[0].path, PathMatch::StringPrefix("/".into()));
    assert!(rules[0].matches[0].headers.is_empty(), "a condition asking for nothing adds nothing");
}

#[test]
fn a_tcpproxy_chain_ending_without_a_tcpproxy_forwards_nothing() {
    let yaml = [
        proxy(
            "root",
            "  virtualhost: {fqdn: example.com, tls: {passthrough: true}}\n  tcpproxy: {include: {name: plain}}",
        ),
        proxy("plain", "  routes: [{services: [{name: web, port: 80}]}]"),
    ]
    .concat();
    let (t, statuses) = run(&yaml);
    assert_eq!(render(&statuses), ["apps/plain valid: Valid HTTPProxy", "apps/root valid: Valid HTTPProxy"]);
    assert!(t.ir.fleets.is_empty(), "no listener with an empty backend list (Envoy would refuse it)");
}

#[test]
fn prefix_rewrites_split_only_when_alone_on_their_prefix() {
    let yaml = proxy(
        "root",
        "  virtualhost: {fqdn: example.com}
  routes:
  - conditions: [{prefix: /api}]
    pathRewritePolicy: {replacePrefix: [{replacement: /v2}]}
    services: [{name: web, port: 80}]
  - conditions: [{prefix: /api/}]
    services: [{name: api, port: 80}]
  - conditions: [{prefix: /solo}]
    pathRewritePolicy: {replacePrefix: [{replacement: /}]}
    services: [{name: web, port: 80}]",
    );
    let (t, _) = run(&yaml);
    let paths: Vec<PathMatch> = http_rules(&t, "example.com").iter().map(|r| r.matches[0].path.clone()).collect();
    let prefix = |p: &str| PathMatch::StringPrefix(p.into());
    assert_eq!(
        paths,
        [prefix("/api"), prefix("/api/"), prefix("/solo"), prefix("/solo/")],
        "the user's /api/ stays theirs"
    );
}

#[test]
fn a_proxys_own_route_replaces_an_included_one_with_the_same_conditions() {
    let yaml = [
        proxy(
            "root",
            "  virtualhost: {fqdn: example.com}
  includes: [{name: child, conditions: [{prefix: /app}]}, {name: gone, conditions: [{prefix: /old}]}]
  routes:
  - conditions: [{prefix: /app}]
    services: [{name: api, port: 80}]
  - conditions: [{prefix: /old}]
    services: [{name: api, port: 80}]",
        ),
        proxy("child", "  routes: [{services: [{name: web, port: 80}]}]"),
    ]
    .concat();
    let (t, _) = run(&yaml);
    let rules = http_rules(&t, "example.com");
    assert_eq!(rules.len(), 2, "{rules:#?}");
    for r in rules {
        assert!(matches!(&r.backends[0].target, BackendTarget::Service(s) if s.name == "api"), "{r:#?}");
    }
}

#[test]
fn tcp_proxies_pass_through_or_terminate() {
    let yaml = [
        proxy(
            "pass",
            "  virtualhost: {fqdn: pass.example.com, tls: {passthrough: true}}\n  tcpproxy: {services: [{name: web, port: 80}]}",
        ),
        proxy(
            "term",
            "  virtualhost: {fqdn: term.example.com, tls: {secretName: cert}}\n  tcpproxy: {include: {name: child}}\n  routes: [{services: [{name: web, port: 80}]}]",
        ),
        proxy("child", "  tcpproxy: {services: [{name: api, port: 80}]}"),
        proxy("plain", "  virtualhost: {fqdn: plain.example.com}\n  tcpproxy: {services: [{name: web, port: 80}]}"),
        proxy(
            "both",
            "  virtualhost: {fqdn: both.example.com, tls: {passthrough: true}}\n  tcpproxy: {services: [{name: web, port: 80}], include: {name: child}}",
        ),
    ]
    .concat();
    let (t, statuses) = run(&yaml);
    assert_eq!(
        render(&statuses),
        [
            "apps/both invalid: At least one error present, see Errors for details",
            "  TCPProxyError/NoServicesAndInclude: cannot specify services and include in the same httpproxy",
            "apps/child valid: Valid HTTPProxy",
            "apps/pass valid: Valid HTTPProxy",
            "apps/plain invalid: At least one error present, see Errors for details",
            "  TCPProxyError/TLSMustBeConfigured: Spec.TCPProxy requires that either Spec.TLS.Passthrough or Spec.TLS.SecretName be set",
            "apps/term valid: Valid HTTPProxy",
        ]
    );
    let listeners = &t.ir.fleets[0].listeners;
    let pass = listeners.iter().find(|l| l.name == "ingress_https/pass.example.com").unwrap();
    assert_eq!(pass.protocol, Protocol::Tls);
    assert_eq!(pass.tls.as_ref().unwrap().mode, TlsMode::Passthrough);
    let term = listeners.iter().find(|l| l.name == "ingress_https/term.example.com").unwrap();
    assert_eq!(term.tls.as_ref().unwrap().mode, TlsMode::Terminate);
    assert!(matches!(&term.tls_routes[0].backends[0].target, BackendTarget::Service(s) if s.name == "api"));
    // The routes of a tcpproxy root only serve plain HTTP (redirected to HTTPS).
    assert_eq!(http_rules(&t, "term.example.com").len(), 1);
}

#[test]
fn error_pages_reach_the_ir_and_bad_ones_are_named() {
    let config_map = |name: &str, label: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: apps{label}}}\ndata: {{page.html: '<p>gone</p>'}}\n---\n"
        )
    };
    let yaml = [
        config_map("pages", ", labels: {projectcontour.io/error-pages: \"true\"}"),
        config_map("plain", ""),
        proxy(
            "good",
            "  virtualhost:
    fqdn: good.example.com
    errorPages: [{statusCodes: [404], statusCodeRanges: [{start: 500, end: 599}], body: {configMap: {name: pages, key: page.html}}, contentType: text/html}]
  routes:
  - services: [{name: web, port: 80}]
    errorPages: [{statusCodes: [502], body: {inline: x}, fromBackend: true}]",
        ),
        proxy(
            "unlabelled",
            "  virtualhost: {fqdn: a.example.com}\n  routes:\n  - services: [{name: web, port: 80}]\n    errorPages: [{statusCodes: [502], body: {configMap: {name: plain, key: page.html}}}]",
        ),
        proxy(
            "nokey",
            "  virtualhost: {fqdn: b.example.com, errorPages: [{statusCodes: [502], body: {configMap: {name: pages, key: other}}}]}\n  routes: [{services: [{name: web, port: 80}]}]",
        ),
        proxy(
            "both",
            "  virtualhost: {fqdn: c.example.com, errorPages: [{statusCodes: [502], body: {inline: x, configMap: {name: pages, key: page.html}}}]}\n  routes: [{services: [{name: web, port: 80}]}]",
        ),
        proxy(
            "nocodes",
            "  virtualhost: {fqdn: d.example.com, errorPages: [{body: {inline: x}}]}\n  routes: [{services: [{name: web, port: 80}]}]",
        ),
        proxy(
            "badtype",
            "  virtualhost: {fqdn: e.example.com, errorPages: [{statusCodes: [404], body: {inline: x}, contentType: \"\"}]}\n  routes: [{services: [{name: web, port: 80}]}]",
        ),
    ]
    .concat();
    let (t, statuses) = run(&yaml);
    assert_eq!(
        render(&statuses),
        [
            "apps/badtype invalid: At least one error present, see Errors for details",
            "  VirtualHostError/ErrorPageInvalid: spec.virtualhost.errorPages[0]: contentType is empty",
            "apps/both invalid: At least one error present, see Errors for details",
            "  VirtualHostError/ErrorPageInvalid: spec.virtualhost.errorPages[0]: body must set exactly one of inline and configMap",
            "apps/good valid: Valid HTTPProxy",
            "apps/nocodes invalid: At least one error present, see Errors for details",
            "  VirtualHostError/ErrorPageInvalid: spec.virtualhost.errorPages[0]: names no status code (statusCodes or statusCodeRanges)",
            "apps/nokey invalid: At least one error present, see Errors for details",
            "  VirtualHostError/ErrorPageInvalid: spec.virtualhost.errorPages[0]: ConfigMap apps/pages has no key \"other\"",
            "apps/unlabelled invalid: At least one error present, see Errors for details",
            "  RouteError/ErrorPageInvalid: spec.routes[0].errorPages[0]: ConfigMap apps/plain does not carry the label projectcontour.io/error-pages: \"true\"",
        ]
    );
    let fleet = t.ir.fleets.iter().find(|f| f.id == ir::DEFAULT_FLEET).expect("default fleet");
    let http = fleet.listeners.iter().find(|l| l.name == HTTP_LISTENER).expect("http listener");
    let route = http.http_routes.iter().find(|r| r.hostnames == ["good.example.com"]).expect("served");
    let host = route.vhost.as_deref().expect("a host policy");
    assert_eq!(
        host.error_pages,
        [ir::ErrorPage {
            ranges: vec![(404, 404), (500, 599)],
            body: "<p>gone</p>".into(),
            content_type: "text/html".into(),
            from_backend: false,
        }]
    );
    let own = &route.rules[0].policy.error_pages;
    assert_eq!((own[0].ranges.as_slice(), own[0].from_backend), (&[(502, 502)][..], true));
    assert_eq!(own[0].content_type, "text/plain; charset=utf-8");
}

#[test]
fn an_oidc_login_reaches_the_ir_without_its_secret_and_bad_ones_are_named() {
    let client = "apiVersion: v1\nkind: Secret\nmetadata: {name: client, namespace: apps}\ndata: {client-secret: aHVudGVyMg==}\n---\n";
    let oidc = |name: &str, fqdn: &str, overrides: &[(&str, &str)], tls: &str| {
        let mut fields: Vec<(&str, &str)> = vec![
            ("authorizationEndpoint", "'https://idp.example.com/auth'"),
            ("tokenEndpoint", "'https://idp.example.com:8443/token'"),
            ("clientID", "web"),
            ("clientSecretName", "client"),
        ];
        for (k, v) in overrides {
            fields.retain(|(f, _)| f != k);
            fields.push((k, v));
        }
        let body: Vec<String> = fields.iter().map(|(k, v)| format!("{k}: {v}")).collect();
        proxy(
            name,
            &format!(
                "  virtualhost:\n    fqdn: {fqdn}\n{}    oidc: {{{}}}\n  routes:\n  - services: [{{name: web, port: 80}}]\n  - conditions: [{{prefix: /health}}]\n    services: [{{name: web, port: 80}}]\n    oidcPolicy: {{disabled: true}}",
                if tls.is_empty() { String::new() } else { format!("    tls: {{{tls}}}\n") },
                body.join(", ")
            ),
        )
    };
    let yaml = [
        client.to_string(),
        oidc("good", "good.example.com", &[("scopes", "[email, openid]")], "secretName: cert"),
        oidc("plain", "plain.example.com", &[], ""),
        oidc("fallback", "fallback.example.com", &[], "secretName: cert, enableFallbackCertificate: true"),
        oidc("nosecret", "nosecret.example.com", &[("clientSecretName", "missing")], "secretName: cert"),
        oidc("badurl", "badurl.example.com", &[("tokenEndpoint", "'ftp://idp/token'")], "secretName: cert"),
        oidc(
            "samepath",
            "samepath.example.com",
            &[("redirectPath", "/out"), ("logoutPath", "/out")],
            "secretName: cert",
        ),
        oidc("insecure", "insecure.example.com", &[], "secretName: cert").replace(
            "  - services: [{name: web, port: 80}]\n",
            "  - services: [{name: web, port: 80}]\n    permitInsecure: true\n",
        ),
        oidc("insecureopen", "insecureopen.example.com", &[], "secretName: cert")
            .replace("    oidcPolicy: {disabled: true}", "    oidcPolicy: {disabled: true}\n    permitInsecure: true"),
        oidc("tcp", "tcp.example.com", &[], "secretName: cert")
            .replace("  routes:\n", "  tcpproxy: {services: [{name: web, port: 80}]}\n  routes:\n"),
    ]
    .concat();
    let options = Options {
        fallback_certificate: Some(ir::ObjectRef { namespace: "apps".into(), name: "cert".into() }),
        ..Default::default()
    };
    let (t, statuses) = run_with(&yaml, &options);
    let rendered = render(&statuses);
    let line = |name: &str| {
        rendered.iter().skip_while(|l| !l.starts_with(&format!("apps/{name} "))).take(2).cloned().collect::<Vec<_>>()
    };
    assert_eq!(line("good")[0], "apps/good valid: Valid HTTPProxy");
    assert!(!line("good")[1].starts_with("  "), "{rendered:?}");
    assert_eq!(
        line("plain")[1],
        "  OIDCError/OIDCNotPermitted: Spec.VirtualHost.OIDC can only be defined for root HTTPProxies that terminate TLS"
    );
    assert_eq!(
        line("fallback")[1],
        "  OIDCError/OIDCNotPermitted: Spec.Virtualhost.TLS fallback & OIDC are incompatible"
    );
    assert!(line("nosecret")[1].starts_with("  OIDCError/OIDCClientSecretInvalid: "), "{rendered:?}");
    assert!(
        line("badurl")[1].starts_with("  OIDCError/OIDCEndpointInvalid: Spec.VirtualHost.OIDC.tokenEndpoint"),
        "{rendered:?}"
    );
    assert!(line("samepath")[1].starts_with("  OIDCError/OIDCInvalid: "), "{rendered:?}");
    assert!(line("insecure")[1].starts_with("  RouteError/OIDCNotPermitted: route.permitInsecure"), "{rendered:?}");
    assert_eq!(line("insecureopen")[0], "apps/insecureopen valid: Valid HTTPProxy", "opted out, it may be plain HTTP");
    assert!(
        line("tcp")[1]
            .starts_with("  OIDCError/OIDCNotPermitted: Spec.VirtualHost.OIDC cannot be combined with Spec.TCPProxy"),
        "{rendered:?}"
    );

    let fleet = t.ir.fleets.iter().find(|f| f.id == ir::DEFAULT_FLEET).expect("default fleet");
    let https =
        fleet.listeners.iter().find(|l| l.hostname.as_deref() == Some("good.example.com")).expect("the TLS host");
    let route = &https.http_routes[0];
    let oidc = route.vhost.as_deref().and_then(|p| p.oidc.as_ref()).expect("the login");
    assert_eq!(oidc.scopes, ["openid", "email"]);
    assert_eq!((oidc.redirect_path.as_str(), oidc.logout_path.as_str()), ("/oauth2/callback", "/logout"));
    assert_eq!(
        (oidc.token_endpoint.host.as_str(), oidc.token_endpoint.port, oidc.token_endpoint.tls),
        ("idp.example.com", 8443, true)
    );
    assert_eq!(oidc.client_secret.0, b"hunter2");
    assert!(oidc.refresh_tokens && !oidc.forward_access_token);
    let dump = serde_json::to_string(&t.ir).unwrap();
    assert!(!dump.contains("hunter2") && !format!("{:?}", t.ir).contains("hunter2"), "the client's secret shows");
    assert!(route.rules.iter().any(|r| r.policy.oidc_disabled) && route.rules.iter().any(|r| !r.policy.oidc_disabled));
}

#[test]
fn the_installations_outlier_detection_applies_to_services_that_name_none() {
    let yaml = proxy(
        "root",
        "  virtualhost: {fqdn: od.example.com}
  routes:
  - conditions: [{prefix: /plain}]
    services: [{name: web, port: 80}]
  - conditions: [{prefix: /own}]
    services: [{name: web, port: 80, outlierDetection: {consecutiveServerErrors: 9}}]
  - conditions: [{prefix: /off}]
    services: [{name: api, port: 80, outlierDetection: {disabled: true}}]",
    );
    let default = ir::OutlierDetection {
        consecutive_server_errors: 3,
        interval_ms: 1000,
        base_ejection_ms: 2000,
        max_ejection_ms: 2000,
        split_local_origin: false,
        consecutive_local_origin_failures: 5,
        max_ejection_percent: 50,
        jitter_ms: 0,
    };
    let options = Options { default_outlier_detection: Some(default), ..Default::default() };
    let (t, statuses) = run_with(&yaml, &options);
    assert_eq!(render(&statuses), ["apps/root valid: Valid HTTPProxy"]);
    let of = |prefix: &str| {
        let rules = http_rules(&t, "od.example.com");
        let rule =
            rules.iter().find(|r| r.matches[0].path == PathMatch::StringPrefix(prefix.into())).expect("the rule");
        rule.backends[0].options.as_ref().and_then(|o| o.outlier_detection)
    };
    assert_eq!(of("/plain"), Some(default), "the default");
    assert_eq!(of("/own").map(|o| o.consecutive_server_errors), Some(9), "its own wins");
    assert_eq!(of("/off"), None, "disabled wins");
    let (t, _) = run(&yaml);
    let rules = http_rules(&t, "od.example.com");
    let plain = rules.iter().find(|r| r.matches[0].path == PathMatch::StringPrefix("/plain".into())).unwrap();
    assert_eq!(plain.backends[0].options.as_ref().and_then(|o| o.outlier_detection), None, "no default: as upstream");
}

#[test]
fn an_error_page_config_map_that_changes_is_read_again() {
    let root = proxy(
        "root",
        "  virtualhost:\n    fqdn: pages.example.com\n    errorPages: [{statusCodes: [503], body: {configMap: {name: pages, key: p}}}]\n  routes: [{services: [{name: web, port: 80}]}]",
    );
    let map = |body: &str, label: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: pages, namespace: apps{label}}}\ndata: {{p: '{body}'}}\n---\n"
        )
    };
    let labelled = ", labels: {projectcontour.io/error-pages: \"true\"}";
    let mut snapshot = Snapshot::from_yaml(&format!("{}---\n{root}", base())).expect("parses");
    let options = Options::default();
    let mut cache = Cache::default();
    let page = |t: &Translation| {
        let fleet = t.ir.fleets.iter().find(|f| f.id == ir::DEFAULT_FLEET)?;
        let http = fleet.listeners.iter().find(|l| l.name == HTTP_LISTENER)?;
        let route = http.http_routes.iter().find(|r| r.hostnames == ["pages.example.com"])?;
        Some(route.vhost.as_deref()?.error_pages[0].body.clone())
    };
    assert_eq!(page(&translate_cached(&snapshot, &options, &mut cache)), None, "no ConfigMap yet: not served");
    for (body, label, want) in
        [("first", labelled, Some("first")), ("second", labelled, Some("second")), ("third", "", None)]
    {
        snapshot.upsert(objects::parse_documents(&map(body, label)).remove(0).expect("parses"));
        let t = translate_cached(&snapshot, &options, &mut cache);
        assert_eq!(page(&t).as_deref(), want, "after the ConfigMap became {body:?}{label}");
    }
}

#[test]
fn http3_asked_for_where_quic_cannot_serve_it_is_refused() {
    let host = |name: &str, tls: &str| {
        proxy(
            name,
            &format!(
                "  virtualhost: {{fqdn: {name}.example.com, tls: {{{tls}}}}}\n  routes: [{{services: [{{name: web, port: 80}}]}}]"
            ),
        )
    };
    let yaml = [
        host("good", "secretName: cert, http3: true"),
        host("capped", "secretName: cert, http3: true, maximumProtocolVersion: \"1.2\""),
        host("mtls", "secretName: cert, http3: true, clientValidation: {skipClientCertValidation: true}"),
        host("off", "secretName: cert, http3: false, maximumProtocolVersion: \"1.2\""),
    ]
    .concat();
    let (_, statuses) = run(&yaml);
    assert_eq!(
        render(&statuses),
        [
            "apps/capped invalid: At least one error present, see Errors for details",
            "  TLSError/TLSIncompatibleFeatures: Spec.VirtualHost.TLS http3 cannot be combined with maximumProtocolVersion 1.2 (QUIC is TLS 1.3)",
            "apps/good valid: Valid HTTPProxy",
            "apps/mtls invalid: At least one error present, see Errors for details",
            "  TLSError/TLSIncompatibleFeatures: Spec.VirtualHost.TLS http3 cannot be combined with clientValidation",
            "apps/off valid: Valid HTTPProxy",
        ]
    );
}
