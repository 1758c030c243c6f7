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

/// The route of a TLS virtual host.
fn secure_route<'a>(fleet: &'a ir::Fleet, host: &str) -> &'a ir::HttpRoute {
    let name = format!("ingress_https/{host}");
    let listener = fleet.listeners.iter().find(|l| l.name == name).expect("TLS listener");
    &listener.http_routes[0]
}

/// An ExtensionService `apps/<name>` with this spec (flow YAML).
fn extension(name: &str, spec: &str) -> String {
    format!(
        "apiVersion: projectcontour.io/v1alpha1\nkind: ExtensionService\nmetadata: {{name: {name}, namespace: apps}}\nspec: {spec}\n---\n"
    )
}

#[test]
fn authorization_needs_tls_and_a_valid_extension_service() {
    let root = |name: &str, auth: &str| {
        proxy(
            name,
            &format!(
                "  virtualhost: {{fqdn: {name}.example.com, tls: {{secretName: cert}}, authorization: {auth}}}
  routes:
  - conditions: [{{prefix: /open}}]
    authPolicy: {{disabled: true}}
    services: [{{name: web, port: 80}}]
  - authPolicy: {{context: {{b: route}}}}
    services: [{{name: web, port: 80}}]"
            ),
        )
    };
    let yaml = [
        extension("authz", "{services: [{name: api, port: 80}], timeoutPolicy: {response: 3s}}"),
        extension("broken", "{services: [{name: missing, port: 80}]}"),
        root("good", "{extensionRef: {name: authz}, failOpen: true, authPolicy: {context: {a: host, b: host}}, withRequestBody: {}}"),
        root("missing", "{extensionRef: {name: nope}}"),
        root("invalid", "{extensionRef: {name: broken}}"),
        root("version", "{extensionRef: {name: authz, apiVersion: projectcontour.io/v2}}"),
        root("timeout", "{extensionRef: {name: authz}, responseTimeout: soon}"),
        root("http", "{extensionRef: {name: authz}, serviceType: http, httpSettings: {pathPrefix: /verify, allowedAuthorizationHeaders: [{exact: x-team}], allowedUpstreamHeaders: [{prefix: auth-, ignoreCase: true}]}}"),
        root("http-bad", "{extensionRef: {name: authz}, serviceType: http, httpSettings: {pathPrefix: verify}}"),
        root("grpc-settings", "{extensionRef: {name: authz}, httpSettings: {pathPrefix: /verify}}"),
    ]
    .concat();
    let (t, statuses) = run(&yaml);
    let invalid = "invalid: At least one error present, see Errors for details";
    assert_eq!(
        render(&statuses),
        [
            "apps/good valid: Valid HTTPProxy".to_string(),
            format!("apps/grpc-settings {invalid}"),
            "  AuthError/AuthHTTPSettingsInvalid: spec.virtualhost.authorization.httpSettings can only be set when serviceType is 'http'".into(),
            "apps/http valid: Valid HTTPProxy".into(),
            format!("apps/http-bad {invalid}"),
            "  AuthError/AuthHTTPSettingsInvalid: spec.virtualhost.authorization.httpSettings.pathPrefix \"verify\" must be a path starting with /".into(),
            format!("apps/invalid {invalid}"),
            "  AuthError/ExtensionServiceNotFound: Spec.Virtualhost.Authorization.ServiceRef extension service \"apps/broken\" not found".into(),
            format!("apps/missing {invalid}"),
            "  AuthError/ExtensionServiceNotFound: Spec.Virtualhost.Authorization.ServiceRef extension service \"apps/nope\" not found".into(),
            format!("apps/timeout {invalid}"),
            "  AuthError/AuthResponseTimeoutInvalid: Spec.Virtualhost.Authorization.ResponseTimeout is invalid: unable to parse timeout string \"soon\": time: invalid duration \"soon\"".into(),
            format!("apps/version {invalid}"),
            "  AuthError/AuthBadResourceVersion: Spec.Virtualhost.Authorization.extensionRef specifies an unsupported resource version \"projectcontour.io/v2\"".into(),
        ]
    );
    let fleet = &t.ir.fleets[0];
    let route = secure_route(fleet, "good.example.com");
    let auth = route.vhost.as_ref().and_then(|p| p.authorization.as_ref()).expect("authorization");
    assert_eq!((auth.cluster.as_str(), auth.authority.as_str()), ("extension/apps/authz", "extension.apps.authz"));
    assert_eq!((auth.fail_open, auth.response_timeout_ms), (true, Some(3000)), "the extension's timeout");
    assert_eq!(auth.with_request_body.map(|b| b.max_request_bytes), Some(1024));
    let by_prefix = |p: &str| route.rules.iter().find(|r| format!("{:?}", r.matches[0].path).contains(p)).unwrap();
    assert!(by_prefix("/open").policy.authorization.as_ref().is_some_and(|a| a.disabled));
    let context = &by_prefix("\"/\"").policy.authorization.as_ref().unwrap().context;
    assert_eq!(context.get("a").map(String::as_str), Some("host"));
    assert_eq!(context.get("b").map(String::as_str), Some("route"), "the route's entry wins");
    let http_route = secure_route(fleet, "http.example.com");
    let http = http_route.vhost.as_ref().and_then(|p| p.authorization.as_ref()).and_then(|a| a.http.as_ref());
    let http = http.expect("the HTTP protocol");
    assert_eq!(http.path_prefix, "/verify");
    assert_eq!(http.allowed_headers[0].pattern, ir::StringMatch::Exact("x-team".into()));
    assert!(http.allowed_upstream_headers[0].ignore_case);
    assert!(auth.http.is_none(), "gRPC by default");
    // Plain HTTP has no authorization server: it only redirects.
    let http = fleet.listeners.iter().find(|l| l.name == HTTP_LISTENER).unwrap();
    assert!(http.http_routes.iter().all(|r| r.vhost.as_ref().is_none_or(|p| p.authorization.is_none())));
}

#[test]
fn jwt_providers_and_route_requirements_are_checked_as_upstream_checks_them() {
    let root = |name: &str, providers: &str, route: &str| {
        proxy(
            name,
            &format!(
                "  virtualhost: {{fqdn: {name}.example.com, tls: {{secretName: cert}}, jwtProviders: {providers}}}\n  routes: [{{{route}services: [{{name: web, port: 80}}]}}]"
            ),
        )
    };
    let remote = "remoteJWKS: {uri: 'https://idp.example.com/keys'}";
    let yaml = [
        root("good", &format!("[{{name: a, default: true, issuer: i, audiences: [x], forwardJWT: true, {remote}}}, {{name: b, {remote}}}]"), ""),
        root("dup", &format!("[{{name: a, {remote}}}, {{name: a, {remote}}}]"), ""),
        root("defaults", &format!("[{{name: a, default: true, {remote}}}, {{name: b, default: true, {remote}}}]"), ""),
        root("scheme", "[{name: a, remoteJWKS: {uri: 'ftp://idp/keys'}}]", ""),
        root("timeout", "[{name: a, remoteJWKS: {uri: 'https://idp/keys', timeout: soon}}]", ""),
        root("family", "[{name: a, remoteJWKS: {uri: 'https://idp/keys', dnsLookupFamily: v5}}]", ""),
        root("plain-ca", "[{name: a, remoteJWKS: {uri: 'http://idp/keys', validation: {caSecret: cert, subjectName: idp}}}]", ""),
        root("undefined", &format!("[{{name: a, {remote}}}]"), "jwtVerificationPolicy: {require: nope}, "),
        root("both", &format!("[{{name: a, {remote}}}]"), "jwtVerificationPolicy: {require: a, disabled: true}, "),
        root("local-bad", "[{name: a, localJWKS: {secretName: cert, key: tls.crt}}]", ""),
    ]
    .concat();
    let (t, statuses) = run(&yaml);
    let invalid = "invalid: At least one error present, see Errors for details";
    assert_eq!(
        render(&statuses),
        [
            format!("apps/both {invalid}"),
            "  JWTVerificationError/InvalidJWTVerificationPolicy: route's JWT verification policy cannot specify both require and disabled".to_string(),
            format!("apps/defaults {invalid}"),
            "  JWTVerificationError/MultipleDefaultProvidersSpecified: Spec.VirtualHost.JWTProviders is invalid: at most one provider can be set as the default".into(),
            format!("apps/dup {invalid}"),
            "  JWTVerificationError/DuplicateProviderName: Spec.VirtualHost.JWTProviders is invalid: duplicate name a".into(),
            format!("apps/family {invalid}"),
            "  JWTVerificationError/RemoteJWKSDNSLookupFamilyInvalid: Spec.VirtualHost.JWTProviders.RemoteJWKS.DNSLookupFamily has an invalid value \"v5\", must be auto, all, v4 or v6".into(),
            "apps/good valid: Valid HTTPProxy".into(),
            format!("apps/local-bad {invalid}"),
            "  JWTVerificationError/LocalJWKSInvalid: Spec.VirtualHost.JWTProviders.LocalJWKS is invalid: key \"tls.crt\" is not JSON: invalid number at line 1 column 2".into(),
            format!("apps/plain-ca {invalid}"),
            "  JWTVerificationError/RemoteJWKSUpstreamValidationInvalid: Spec.VirtualHost.JWTProviders.RemoteJWKS.UpstreamValidation must not be specified when URI scheme is http.".into(),
            format!("apps/scheme {invalid}"),
            "  JWTVerificationError/RemoteJWKSSchemeInvalid: Spec.VirtualHost.JWTProviders.RemoteJWKS.URI has invalid scheme \"ftp\", must be http or https".into(),
            format!("apps/timeout {invalid}"),
            "  JWTVerificationError/RemoteJWKSTimeoutInvalid: Spec.VirtualHost.JWTProviders.RemoteJWKS.Timeout is invalid: time: invalid duration \"soon\"".into(),
            format!("apps/undefined {invalid}"),
            "  JWTVerificationError/JWTProviderNotDefined: Route references an undefined JWT provider \"nope\"".into(),
        ]
    );
    let secure = t.ir.fleets[0].listeners.iter().find(|l| l.name == "ingress_https/good.example.com").expect("TLS");
    let route = &secure.http_routes[0];
    let providers = &route.vhost.as_ref().expect("a policy").jwt_providers;
    assert_eq!(providers.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(), ["a", "b"]);
    let ir::Jwks::Remote(remote) = &providers[0].jwks else { panic!("remote") };
    assert_eq!((remote.port, remote.timeout_ms, providers[0].forward), (443, 1000, true));
    assert_eq!(route.rules[0].policy.jwt_provider.as_deref(), Some("a"), "the default provider");
}

#[test]
fn global_rate_limits_become_descriptors_and_the_default_applies_unless_opted_out() {
    let yaml = [
        proxy(
            "own",
            "  virtualhost:
    fqdn: own.example.com
    rateLimitPolicy: {global: {descriptors: [{entries: [{genericKey: {key: k, value: v}}, {remoteAddress: {}}]}, {entries: [{requestHeader: {headerName: x-user, descriptorKey: user}}]}]}}
  routes:
  - conditions: [{prefix: /free}]
    rateLimitPolicy: {global: {disabled: true}}
    services: [{name: web, port: 80}]
  - rateLimitPolicy: {global: {descriptors: [{entries: [{requestHeaderValueMatch: {headers: [{name: x-env, exact: prod}], value: prod}}]}]}}
    services: [{name: web, port: 80}]",
        ),
        proxy("defaulted", "  virtualhost: {fqdn: defaulted.example.com}\n  routes: [{services: [{name: web, port: 80}]}]"),
        proxy(
            "optout",
            "  virtualhost: {fqdn: optout.example.com, rateLimitPolicy: {global: {disabled: true}}}\n  routes: [{services: [{name: web, port: 80}]}]",
        ),
        proxy(
            "bad",
            "  virtualhost: {fqdn: bad.example.com, rateLimitPolicy: {global: {descriptors: [{entries: [{genericKey: {value: a}, remoteAddress: {}}]}]}}}\n  routes: [{services: [{name: web, port: 80}]}]",
        ),
    ]
    .concat();
    use api::httpproxy::{GenericKeyDescriptor, GlobalRateLimitPolicy, RateLimitDescriptor, RateLimitDescriptorEntry};
    let entry = RateLimitDescriptorEntry {
        generic_key: Some(GenericKeyDescriptor { key: None, value: "default".into() }),
        ..Default::default()
    };
    let default =
        GlobalRateLimitPolicy { disabled: None, descriptors: Some(vec![RateLimitDescriptor { entries: vec![entry] }]) };
    let options = Options { default_global_rate_limit: Some(default), ..Default::default() };
    let (t, statuses) = run_with(&yaml, &options);
    assert_eq!(
        render(&statuses),
        [
            "apps/bad invalid: At least one error present, see Errors for details",
            "  VirtualHostError/RateLimitPolicyNotValid: Spec.VirtualHost.RateLimitPolicy is invalid: rate limit descriptor entry must have exactly one field set",
            "apps/defaulted valid: Valid HTTPProxy",
            "apps/optout valid: Valid HTTPProxy",
            "apps/own valid: Valid HTTPProxy",
        ]
    );
    let own = vhost_policy(&t, "own.example.com").and_then(|p| p.global_rate_limit.clone()).unwrap();
    assert_eq!(
        own.descriptors,
        [
            vec![
                ir::DescriptorEntry::GenericKey { key: "k".into(), value: "v".into() },
                ir::DescriptorEntry::RemoteAddress
            ],
            vec![ir::DescriptorEntry::RequestHeader { header_name: "x-user".into(), descriptor_key: "user".into() }],
        ]
    );
    let rules = http_rules(&t, "own.example.com");
    let free = rules.iter().find(|r| format!("{:?}", r.matches[0].path).contains("/free")).unwrap();
    assert!(free.policy.ignore_host_rate_limits && free.policy.global_rate_limit.is_none());
    let defaulted = vhost_policy(&t, "defaulted.example.com").and_then(|p| p.global_rate_limit.clone()).unwrap();
    assert_eq!(
        defaulted.descriptors,
        [vec![ir::DescriptorEntry::GenericKey { key: String::new(), value: "default".into() }]]
    );
    assert!(vhost_policy(&t, "optout.example.com").is_none_or(|p| p.global_rate_limit.is_none()), "opted out");
}

#[test]
fn geo_rules_need_tls_and_a_database_for_their_dimension() {
    let root = |name: &str, tls: bool, filters: &str, route: &str| {
        let tls = if tls { "tls: {secretName: cert}, " } else { "" };
        proxy(
            name,
            &format!(
                "  virtualhost: {{fqdn: {name}.example.com, {tls}{filters}}}\n  routes: [{{{route}services: [{{name: web, port: 80}}]}}]"
            ),
        )
    };
    let country = "geoAllowPolicy: [{dimension: country, value: GB}]";
    let yaml = [
        root("good", true, &format!("{country}, ipAllowPolicy: [{{source: Remote, cidr: 10.0.0.0/8}}]"), ""),
        root("route", true, "", "geoDenyPolicy: [{dimension: anonVpn, value: 'true'}], "),
        root("plain", false, country, ""),
        root(
            "both",
            true,
            "geoAllowPolicy: [{dimension: country, value: GB}], geoDenyPolicy: [{dimension: city, value: X}]",
            "",
        ),
        root("mixed", true, &format!("{country}, ipDenyPolicy: [{{source: Peer, cidr: 10.0.0.0/8}}]"), ""),
        root("asn", true, "geoDenyPolicy: [{dimension: asn, value: '64500'}]", ""),
        root("dimension", true, "geoDenyPolicy: [{dimension: planet, value: mars}]", ""),
    ]
    .concat();
    let databases = ir::GeoDatabases {
        city: Some("/geo/city.mmdb".into()),
        anon: Some("/geo/anon.mmdb".into()),
        ..Default::default()
    };
    let options = Options { geoip: Some(databases), ..Options::default() };
    let (t, statuses) = run_with(&yaml, &options);
    let invalid = "invalid: At least one error present, see Errors for details";
    let geo = "Spec.VirtualHost.GeoAllowPolicy or Spec.VirtualHost.GeoDenyPolicy is invalid";
    assert_eq!(
        render(&statuses),
        [
            format!("apps/asn {invalid}"),
            format!(
                "  IPFilterError/GeoIPNotConfigured: {geo}: no configured GeoIP database provides the asn dimension"
            ),
            format!("apps/both {invalid}"),
            format!(
                "  IPFilterError/IncompatibleGeoFilters: {geo}: cannot specify both `geoAllowPolicy` and `geoDenyPolicy`"
            ),
            format!("apps/dimension {invalid}"),
            format!("  IPFilterError/GeoFilterPolicyNotValid: {geo}: \"planet\" is not a valid dimension"),
            "apps/good valid: Valid HTTPProxy".into(),
            format!("apps/mixed {invalid}"),
            format!(
                "  IPFilterError/IncompatibleIPAndGeoFilters: {geo}: IP and geo rules of one scope must both be allow or both be deny"
            ),
            format!("apps/plain {invalid}"),
            format!(
                "  IPFilterError/GeoFilterNotPermitted: {geo}: geo rules can only be defined for virtual hosts that terminate TLS"
            ),
            "apps/route valid: Valid HTTPProxy".into(),
        ]
    );
    let fleet = &t.ir.fleets[0];
    let good = secure_route(fleet, "good.example.com");
    let filter = good.vhost.as_ref().and_then(|p| p.ip_filter.as_ref()).expect("a filter");
    assert!(filter.allow);
    assert_eq!(
        (filter.rules.len(), filter.geo[0].dimension, filter.geo[0].value.as_str()),
        (1, ir::GeoDimension::Country, "GB")
    );
    let route = secure_route(fleet, "route.example.com");
    let filter = route.rules[0].policy.ip_filter.as_ref().expect("the route's filter");
    assert_eq!((filter.allow, filter.geo[0].dimension), (false, ir::GeoDimension::AnonVpn));
    // Without databases, no geo rule is served.
    let (_, statuses) = run(&root("none", true, country, ""));
    assert_eq!(
        render(&statuses)[1],
        format!(
            "  IPFilterError/GeoIPNotConfigured: {geo}: geo rules need the GeoIP databases of ContourConfiguration spec.geoIP, which are not configured"
        )
    );
}
