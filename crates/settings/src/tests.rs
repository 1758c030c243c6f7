use api::contourconfig::ContourConfigurationSpec;

use super::*;

/// The settings with `text` as contour.yaml and no flags.
fn from_file(text: &str) -> Result<Settings> {
    let mut settings = Settings::defaults();
    let file = config::parse("contour.yaml", text)?;
    settings.apply_file(&file, "contour.yaml", &Explicit::new())?;
    Ok(settings)
}

/// `spec` applied to `settings` with the flags in `explicit` given.
fn apply_spec(settings: &mut Settings, explicit: &Explicit, spec: &ContourConfigurationSpec) -> Result<()> {
    settings.apply_resource(spec, "projectcontour/contour", explicit)
}

#[test]
fn geoip_databases_come_from_contour_yaml_as_absolute_paths() -> Result<(), Box<dyn std::error::Error>> {
    let args =
        from_file("geoIP:\n  provider:\n    maxMind: {cityDbPath: /geo/city.mmdb, anonDbPath: /geo/anon.mmdb}\n")?;
    let databases = args.geoip.expect("set");
    assert_eq!(
        (databases.city.as_deref(), databases.anon.as_deref()),
        (Some("/geo/city.mmdb"), Some("/geo/anon.mmdb"))
    );
    assert_eq!(databases.asn, None);
    assert!(from_file("geoIP: {provider: {maxMind: {}}}\n")?.geoip.is_none(), "no database: off");
    let e = from_file("geoIP: {provider: {maxMind: {asnDbPath: asn.mmdb}}}\n").expect_err("relative");
    assert!(format!("{e:#}").contains("geoIP.provider.maxMind.asnDbPath"), "{e:#}");
    Ok(())
}

#[test]
fn global_ext_auth_names_its_extension_and_becomes_every_default_fleet_filter() -> Result<(), Box<dyn std::error::Error>>
{
    let args = from_file(
        "globalExtAuth:\n  extensionService: auth/server\n  failOpen: true\n  responseTimeout: 3s\n  withRequestBody: {}\n",
    )?;
    let server = args.global_ext_auth.expect("set");
    let filter = frontends::httpproxy::global_authorization(&server).expect("a filter");
    assert_eq!(
        (filter.cluster.as_str(), filter.authority.as_str()),
        ("extension/auth/server", "extension.auth.server")
    );
    assert_eq!((filter.fail_open, filter.response_timeout_ms), (true, Some(3000)));
    assert_eq!(filter.with_request_body.map(|b| b.max_request_bytes), Some(1024));
    assert!(from_file("globalExtAuth: {extensionService: ''}\n")?.global_ext_auth.is_none(), "none named: off");
    let http = from_file(
        "globalExtAuth: {extensionService: a/b, serviceType: http, httpSettings: {pathPrefix: /check, allowedUpstreamHeaders: [{prefix: x-auth-}]}}\n",
    )?;
    let filter = frontends::httpproxy::global_authorization(&http.global_ext_auth.expect("set")).expect("a filter");
    let settings = filter.http.expect("the HTTP protocol");
    assert_eq!(settings.path_prefix, "/check");
    assert_eq!(settings.allowed_upstream_headers[0].pattern, ir::StringMatch::Prefix("x-auth-".into()));
    for bad in [
        "globalExtAuth: {extensionService: server}\n",
        "globalExtAuth: {extensionService: a/b, responseTimeout: soon}\n",
        "globalExtAuth: {extensionService: a/b, httpSettings: {pathPrefix: /x}}\n",
        "globalExtAuth: {extensionService: a/b, serviceType: http, httpSettings: {allowedUpstreamHeaders: [{}]}}\n",
        "globalExtAuth: {extensionService: a/b, serviceType: http, httpSettings: {nope: 1}}\n",
    ] {
        let e = from_file(bad).expect_err(bad);
        assert!(format!("{e:#}").contains("globalExtAuth"), "{e:#}");
    }
    Ok(())
}

/// Keys upstream decodes through structs without YAML tags, spelled as upstream's own tooling
/// writes them (lower case): `globalExtAuth.httpSettings` and the header conditions of
/// `rateLimitService.defaultGlobalRateLimitPolicy`.
#[test]
fn untagged_keys_are_taken_as_upstream_writes_them() -> Result<(), Box<dyn std::error::Error>> {
    let http = from_file(
        "globalExtAuth:
  extensionService: a/b
  serviceType: http
  httpSettings:
    pathprefix: /check
    allowedauthorizationheaders: [{exact: x-team}]
    allowedupstreamheaders: [{prefix: X-Auth-, ignorecase: true}]
",
    )?;
    let filter = frontends::httpproxy::global_authorization(&http.global_ext_auth.expect("set")).expect("a filter");
    let settings = filter.http.expect("the HTTP protocol");
    assert_eq!(settings.path_prefix, "/check");
    assert_eq!(settings.allowed_headers[0].pattern, ir::StringMatch::Exact("x-team".into()));
    let upstream = &settings.allowed_upstream_headers[0];
    assert_eq!((&upstream.pattern, upstream.ignore_case), (&ir::StringMatch::Prefix("X-Auth-".into()), true));

    let limits = from_file(
        "rateLimitService:
  extensionService: a/limits
  defaultGlobalRateLimitPolicy:
    descriptors:
    - entries:
      - requestHeaderValueMatch:
          headers: [{name: x-tenant, notpresent: true}, {name: x-plan, exact: Gold, ignorecase: true, treatmissingasempty: true}]
          value: tenantless
",
    )?;
    let (_, policy) = limits.rate_limit_service.expect("set");
    let entries = &policy.expect("a default policy").descriptors.expect("descriptors")[0].entries;
    let matcher = entries[0].request_header_value_match.as_ref().expect("a header value match");
    let headers = matcher.headers.as_ref().expect("headers");
    assert_eq!((headers[0].name.as_str(), headers[0].not_present), ("x-tenant", Some(true)));
    assert_eq!((headers[1].ignore_case, headers[1].treat_missing_as_empty), (Some(true), Some(true)));
    let e = from_file("globalExtAuth: {extensionService: a/b, serviceType: http, httpSettings: {path_prefix: /x}}\n")
        .expect_err("not a spelling of either");
    assert!(format!("{e:#}").contains("path_prefix"), "{e:#}");
    Ok(())
}

#[test]
fn tracing_takes_upstream_defaults_and_refuses_what_upstream_refuses() -> Result<(), Box<dyn std::error::Error>> {
    let t = from_file("tracing: {extensionService: obs/otel}\n")?.tracing.expect("set");
    assert_eq!(
        (t.cluster.as_str(), t.service_name.as_str(), t.overall_sampling, t.max_path_tag_length),
        ("extension/obs/otel", "contour", 100.0, 256)
    );
    let env = |name: &str, variable: &str| xds::CustomTag {
        name: name.into(),
        value: xds::TagValue::Environment(variable.into()),
    };
    assert_eq!(t.custom_tags, [env("podName", "HOSTNAME"), env("podNamespace", "CONTOUR_NAMESPACE")]);
    let t = from_file(
        "tracing:\n  extensionService: obs/otel\n  includePodDetail: false\n  serviceName: shop\n  overallSampling: '12.5'\n  maxPathTagLength: 40\n  customTags: [{tagName: a, literal: x}, {tagName: b, requestHeaderName: X-Team}]\n",
    )?
    .tracing
    .expect("set");
    assert_eq!((t.service_name.as_str(), t.overall_sampling, t.max_path_tag_length), ("shop", 12.5, 40));
    let tags: Vec<_> = t.custom_tags.iter().map(|c| (c.name.as_str(), c.value.clone())).collect();
    assert_eq!(tags, [("a", xds::TagValue::Literal("x".into())), ("b", xds::TagValue::RequestHeader("x-team".into()))]);
    // Upstream reads a zero rate as 100.
    let t = from_file("tracing: {extensionService: obs/otel, overallSampling: '0'}\n")?.tracing.expect("set");
    assert_eq!(t.overall_sampling, 100.0);
    for (bad, key) in [
        ("tracing: {serviceName: shop}\n", "tracing.extensionService"),
        ("tracing: {extensionService: otel}\n", "tracing.extensionService"),
        ("tracing: {extensionService: a/b, overallSampling: lots}\n", "tracing.overallSampling"),
        ("tracing: {extensionService: a/b, overallSampling: '101'}\n", "tracing.overallSampling"),
        ("tracing: {extensionService: a/b, customTags: [{tagName: ''}]}\n", "tracing.customTags[0].tagName"),
        ("tracing: {extensionService: a/b, customTags: [{tagName: a}]}\n", "tracing.customTags[0]"),
        (
            "tracing: {extensionService: a/b, customTags: [{tagName: a, literal: x, requestHeaderName: y}]}\n",
            "tracing.customTags[0]",
        ),
        (
            "tracing: {extensionService: a/b, customTags: [{tagName: a, literal: x}, {tagName: a, literal: y}]}\n",
            "tracing.customTags[1].tagName",
        ),
        (
            "tracing: {extensionService: a/b, customTags: [{tagName: a, requestHeaderName: 'x y'}]}\n",
            "requestHeaderName",
        ),
        ("tracing: {extensionService: a/b, sampling: 5}\n", "sampling"),
    ] {
        let e = from_file(bad).expect_err(bad);
        assert!(format!("{e:#}").contains(key), "{bad}: {e:#}");
    }
    // The ContourConfiguration's, with the same rules.
    let mut args = Settings::defaults();
    let spec: ContourConfigurationSpec = serde_json::from_value(serde_json::json!({
        "tracing": {"extensionService": {"namespace": "obs", "name": "otel"}, "overallSampling": "50"},
    }))?;
    apply_spec(&mut args, &Explicit::new(), &spec)?;
    assert_eq!(args.tracing.take().map(|t| (t.cluster, t.overall_sampling)), Some(("extension/obs/otel".into(), 50.0)));
    let spec: ContourConfigurationSpec = serde_json::from_value(serde_json::json!({
        "tracing": {"extensionService": {"namespace": "obs", "name": "otel"}, "overallSampling": "-1"},
    }))?;
    let e = apply_spec(&mut args, &Explicit::new(), &spec).expect_err("negative");
    assert!(format!("{e:#}").contains("spec.tracing.overallSampling"), "{e:#}");
    Ok(())
}

#[test]
fn client_throttling_comes_from_the_file_unless_a_flag_says_otherwise() -> Result<(), Box<dyn std::error::Error>> {
    let args = from_file("kubernetesClientQPS: 50\nkubernetesClientBurst: 100\n")?;
    assert_eq!((args.kubernetes_client_qps, args.kubernetes_client_burst), (Some(50.0), Some(100)));
    assert_eq!(from_file("{}\n")?.kubernetes_client_qps, None, "not throttled unless asked");
    let (mut args, explicit) = Settings::from_args(["contour-serve", "--kubernetes-client-qps", "7"])?;
    assert!(explicit.contains("kubernetes_client_qps"), "{explicit:?}");
    args.apply_file(&config::parse("contour.yaml", "kubernetesClientQPS: 50\n")?, "contour.yaml", &explicit)?;
    assert_eq!(args.kubernetes_client_qps, Some(7.0), "the flag wins");
    Ok(())
}

#[test]
fn route_statistics_follow_the_resource() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = Settings::defaults();
    assert!(!args.enable_stat_prefix, "off by default, as upstream");
    let spec: ContourConfigurationSpec =
        serde_json::from_value(serde_json::json!({"envoy": {"enableStatPrefix": true}}))?;
    apply_spec(&mut args, &Explicit::new(), &spec)?;
    assert!(args.enable_stat_prefix);
    Ok(())
}

#[test]
fn flags_win_and_bad_values_name_their_field() {
    let (mut args, explicit) = Settings::from_args(["contour-serve", "--xds-port", "9001"]).unwrap();
    let spec: ContourConfigurationSpec = serde_json::from_value(serde_json::json!({
        "xdsServer": {"address": "0.0.0.0", "port": 7001},
        "debug": {"port": 7060},
    }))
    .unwrap();
    apply_spec(&mut args, &explicit, &spec).unwrap();
    assert_eq!(args.xds_port, 9001, "the flag wins");
    assert_eq!(args.xds_address.to_string(), "0.0.0.0");
    assert_eq!(args.debug_http_port, 7060);
    let bad: ContourConfigurationSpec =
        serde_json::from_value(serde_json::json!({"metrics": {"port": 70000}})).unwrap();
    let err = apply_spec(&mut args, &explicit, &bad).unwrap_err().to_string();
    assert!(err.contains("spec.metrics.port"), "{err}");
}

#[test]
fn status_address_and_envoy_service_come_from_the_file_and_the_resource() {
    let text =
        "ingress-status-address: 192.0.2.1, 192.0.2.2\nenvoy-service-name: edge\nenvoy-service-namespace: infra\n";
    let mut args = from_file(text).unwrap();
    assert_eq!(args.ingress_status_address, ["192.0.2.1", "192.0.2.2"]);
    assert_eq!((args.envoy_service_namespace.as_str(), args.envoy_service_name.as_str()), ("infra", "edge"));
    let spec: ContourConfigurationSpec = serde_json::from_value(serde_json::json!({
        "ingress": {"statusAddress": "198.51.100.4", "classNames": ["internal"]},
        "envoy": {"service": {"name": "envoy-int", "namespace": "edge"}},
    }))
    .unwrap();
    let explicit: Explicit = ["envoy_service_name".to_string()].into();
    apply_spec(&mut args, &explicit, &spec).unwrap();
    assert_eq!(args.ingress_status_address, ["198.51.100.4"]);
    assert_eq!(args.ingress_class_name, ["internal"]);
    assert_eq!((args.envoy_service_namespace.as_str(), args.envoy_service_name.as_str()), ("edge", "edge"));
}

#[test]
fn the_enforced_health_listener_comes_from_the_file_and_the_resource() {
    let mut args = from_file("omEnforcedHealthListener: {address: 127.0.0.1, port: 8003}\n").unwrap();
    assert_eq!(args.om_enforced_health.map(|a| a.to_string()).as_deref(), Some("127.0.0.1:8003"));
    let err = from_file("omEnforcedHealthListener: {address: 127.0.0.1}\n").unwrap_err().to_string();
    assert!(err.contains("omEnforcedHealthListener.port"), "{err}");
    let spec: ContourConfigurationSpec =
        serde_json::from_value(serde_json::json!({"envoy": {"omEnforcedHealth": {"port": 8004}}})).unwrap();
    apply_spec(&mut args, &Explicit::new(), &spec).unwrap();
    assert_eq!(args.om_enforced_health.map(|a| a.to_string()).as_deref(), Some("0.0.0.0:8004"));
}

#[test]
fn envoy_metrics_come_from_the_file_and_the_resource() {
    let args = from_file("metrics:\n  envoy: {port: 8003, server-certificate-path: /c/tls.crt, server-key-path: /c/tls.key}\n  contour: {port: 9000}\n").unwrap();
    let m = args.envoy_metrics.clone().unwrap();
    assert_eq!(m.address.to_string(), "0.0.0.0:8003");
    assert_eq!(m.tls.map(|t| (t.cert_file, t.ca_file)), Some(("/c/tls.crt".into(), None)));
    assert_eq!(args.http_port, 9000);
    let err = from_file("metrics:\n  envoy: {server-certificate-path: /c/tls.crt, server-key-path: /c/tls.key}\n")
        .unwrap_err();
    assert!(err.to_string().contains("metrics.envoy") && err.to_string().contains("port of their own"), "{err}");
    let mut args = Settings::defaults();
    let spec: ContourConfigurationSpec = serde_json::from_value(serde_json::json!({
        "envoy": {"health": {"port": 8010}, "metrics": {"address": "127.0.0.1", "port": 8011, "tls": {"certFile": "/c/t", "keyFile": "/c/k", "caFile": "/c/ca"}}}
    }))
    .unwrap();
    apply_spec(&mut args, &Explicit::new(), &spec).unwrap();
    assert_eq!(args.stats_port, 8010);
    let m = args.envoy_metrics.unwrap();
    assert_eq!(
        (m.address.to_string().as_str(), m.tls.and_then(|t| t.ca_file)),
        ("127.0.0.1:8011", Some("/c/ca".into()))
    );
}

#[test]
fn merge_slashes_follow_the_file_and_the_resource() {
    let mut args = from_file("disableMergeSlashes: true\n").unwrap();
    assert!(args.disable_merge_slashes);
    let spec: ContourConfigurationSpec =
        serde_json::from_value(serde_json::json!({"envoy": {"listener": {"disableMergeSlashes": false}}})).unwrap();
    apply_spec(&mut args, &Explicit::new(), &spec).unwrap();
    assert!(!args.disable_merge_slashes);
}
