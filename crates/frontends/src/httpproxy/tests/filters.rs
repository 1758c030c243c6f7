//! Golden fixtures for CORS, IP filters, local rate limits and cookie rewriting: what reaches the
//! IR, and upstream's conditions for what cannot.

use super::*;

/// The policy of the virtual host `host` (on the HTTP listener).
fn vhost_policy(t: &Translation, host: &str) -> Option<std::sync::Arc<ir::VirtualHostPolicy>> {
    let fleet = t.ir.fleets.iter().find(|f| f.id == ir::DEFAULT_FLEET).expect("default fleet");
    let http = fleet.listeners.iter().find(|l| l.name == HTTP_LISTENER).expect("http listener");
    http.http_routes.iter().find(|r| r.hostnames == [host]).and_then(|r| r.vhost.clone())
}

#[test]
fn virtual_host_policies_reach_the_ir() {
    let yaml = proxy(
        "root",
        "  virtualhost:
    fqdn: a.example.com
    corsPolicy: {allowOrigin: ['*', 'https://b.example.com', 'https://.*\\.example\\.org'], allowMethods: [GET, POST], allowHeaders: [x-a], exposeHeaders: [x-b], maxAge: 10m, allowCredentials: true}
    rateLimitPolicy: {local: {requests: 3, unit: minute, burst: 2, responseStatusCode: 503, responseHeadersToAdd: [{name: x-limited, value: 'yes'}]}}
    ipDenyPolicy: [{source: Peer, cidr: 10.1.2.3/8}, {source: Remote, cidr: '2001:db8::1'}]
  routes: [{services: [{name: web, port: 80}]}]",
    );
    let (t, statuses) = run(&yaml);
    assert_eq!(render(&statuses), ["apps/root valid: Valid HTTPProxy"]);
    let policy = vhost_policy(&t, "a.example.com").expect("a policy");
    let cors = policy.cors.as_ref().unwrap();
    assert_eq!(
        cors.allow_origins,
        [
            ir::OriginMatch::Exact("*".into()),
            ir::OriginMatch::Exact("https://b.example.com".into()),
            ir::OriginMatch::Regex(r"https://.*\.example\.org".into()),
        ]
    );
    assert_eq!((cors.max_age_s, cors.allow_credentials, cors.allow_private_network), (Some(600), true, false));
    let limit = policy.local_rate_limit.as_ref().unwrap();
    assert_eq!((limit.max_tokens, limit.tokens_per_fill, limit.fill_interval_s), (5, 3, 60));
    assert_eq!((limit.status, limit.stat_prefix.as_str()), (Some(503), "vhost.a.example.com"));
    assert_eq!(limit.response_headers, [("X-Limited".to_string(), "yes".to_string())]);
    let ip = policy.ip_filter.as_ref().unwrap();
    assert!(!ip.allow);
    assert_eq!(
        ip.rules,
        [
            ir::IpRule { remote: false, address: "10.0.0.0".parse().unwrap(), prefix_len: 8 },
            ir::IpRule { remote: true, address: "2001:db8::1".parse().unwrap(), prefix_len: 128 },
        ]
    );
}

#[test]
fn route_and_service_policies_reach_the_ir() {
    let yaml = proxy(
        "root",
        "  virtualhost: {fqdn: a.example.com}
  routes:
  - ipAllowPolicy: [{source: Remote, cidr: 192.168.0.0/16}]
    rateLimitPolicy: {local: {requests: 1, unit: second}}
    cookieRewritePolicies: [{name: session, pathRewrite: {value: /app}, sameSite: Lax}]
    services: [{name: web, port: 80, cookieRewritePolicies: [{name: session, secure: true}]}]",
    );
    let (t, statuses) = run(&yaml);
    assert_eq!(render(&statuses), ["apps/root valid: Valid HTTPProxy"]);
    assert_eq!(vhost_policy(&t, "a.example.com"), None, "nothing on the virtual host");
    let rule = http_rules(&t, "a.example.com")[0];
    let p = &rule.policy;
    assert!(p.ip_filter.as_ref().is_some_and(|f| f.allow && f.rules[0].remote));
    assert_eq!(p.local_rate_limit.as_ref().map(|l| (l.max_tokens, l.fill_interval_s)), Some((1, 1)));
    let session = |path: Option<&str>, secure, same_site: Option<&str>| ir::CookieRewrite {
        name: "session".into(),
        path: path.map(Into::into),
        domain: None,
        secure,
        same_site: same_site.map(Into::into),
    };
    assert_eq!(p.cookie_rewrites, [session(Some("/app"), None, Some("Lax"))]);
    let options = rule.backends[0].options.as_ref().unwrap();
    assert_eq!(options.cookie_rewrites, [session(None, Some(true), None)]);
    assert_eq!(
        ir::merge_cookie_rewrites(&p.cookie_rewrites, &options.cookie_rewrites),
        [session(Some("/app"), Some(true), Some("Lax"))]
    );
}

#[test]
fn invalid_policies_get_upstreams_conditions() {
    let route = |name: &str, policy: &str| {
        proxy(
            name,
            &format!(
                "  virtualhost: {{fqdn: {name}.example.com}}\n  routes: [{{{policy}, services: [{{name: web, port: 80}}]}}]"
            ),
        )
    };
    let vhost = |name: &str, policy: &str| {
        proxy(
            name,
            &format!(
                "  virtualhost: {{fqdn: {name}.example.com, {policy}}}\n  routes: [{{services: [{{name: web, port: 80}}]}}]"
            ),
        )
    };
    let yaml = [
        vhost("cors-origin", "corsPolicy: {allowOrigin: ['https://(a'], allowMethods: [GET]}"),
        vhost("cors-methods", "corsPolicy: {allowOrigin: ['*'], allowMethods: []}"),
        vhost("cors-age", "corsPolicy: {allowOrigin: ['*'], allowMethods: [GET], maxAge: soon}"),
        vhost(
            "ip-both",
            "ipAllowPolicy: [{source: Peer, cidr: 10.0.0.0/8}], ipDenyPolicy: [{source: Peer, cidr: 10.0.0.0/8}]",
        ),
        vhost("ip-cidr", "ipAllowPolicy: [{source: Peer, cidr: 10.0.0.0/33}]"),
        vhost("limit-unit", "rateLimitPolicy: {local: {requests: 1, unit: day}}"),
        route("route-cidr", "ipDenyPolicy: [{source: Remote, cidr: not-an-address}]"),
        route("route-limit", "rateLimitPolicy: {local: {requests: 0, unit: second}}"),
        route("cookie-dup", "cookieRewritePolicies: [{name: a, secure: true}, {name: a, secure: false}]"),
        route("cookie-empty", "cookieRewritePolicies: [{name: a}]"),
    ]
    .concat();
    let (t, statuses) = run(&yaml);
    let invalid = "invalid: At least one error present, see Errors for details";
    assert_eq!(
        render(&statuses),
        [
            format!("apps/cookie-dup {invalid}"),
            "  RouteError/CookieRewritePoliciesInvalid: duplicate cookie rewrite rule for cookie \"a\" on route cookie rewrite rules".into(),
            format!("apps/cookie-empty {invalid}"),
            "  RouteError/CookieRewritePoliciesInvalid: no attributes rewritten for cookie \"a\" on route cookie rewrite rules".into(),
            format!("apps/cors-age {invalid}"),
            "  CORSError/PolicyDidNotParse: Spec.VirtualHost.CORSPolicy: unable to parse timeout string \"soon\"".into(),
            format!("apps/cors-methods {invalid}"),
            "  CORSError/PolicyDidNotParse: Spec.VirtualHost.CORSPolicy: invalid allowed methods configuration with length 0".into(),
            format!("apps/cors-origin {invalid}"),
            "  CORSError/PolicyDidNotParse: Spec.VirtualHost.CORSPolicy: invalid allowed origin \"https://(a\": allowed origin is invalid exact match and invalid regex match".into(),
            format!("apps/ip-both {invalid}"),
            "  IPFilterError/IncompatibleIPAddressFilters: Spec.VirtualHost.IPAllowFilterPolicy and Spec.VirtualHost.IPDenyFilterPolicy cannot both be defined".into(),
            format!("apps/ip-cidr {invalid}"),
            "  IPFilterError/InvalidCIDR: Spec.VirtualHost.IPAllowFilterPolicy or Spec.VirtualHost.IPDenyFilterPolicy is invalid: 10.0.0.0/33 failed to parse: invalid CIDR address: 10.0.0.0/33".into(),
            format!("apps/limit-unit {invalid}"),
            "  VirtualHostError/RateLimitPolicyNotValid: Spec.VirtualHost.RateLimitPolicy is invalid: invalid unit \"day\" in local rate limit policy".into(),
            format!("apps/route-cidr {invalid}"),
            "  IPFilterError/InvalidCIDR: not-an-address failed to parse: invalid CIDR address: not-an-address".into(),
            format!("apps/route-limit {invalid}"),
            "  RouteError/RateLimitPolicyNotValid: route.rateLimitPolicy is invalid: invalid requests value 0 in local rate limit policy".into(),
        ]
    );
    assert!(t.ir.fleets.is_empty(), "no virtual host with a bad policy is served unprotected");
}
