use super::*;

fn resolve(text: &str) -> Result<ListenerOptions> {
    let file = config::parse("contour.yaml", text)?;
    let mut out = ListenerOptions::default();
    apply(&mut out, &from_file(&file), Source::File)?;
    Ok(out)
}

#[test]
fn defaults_are_upstreams() {
    let out = resolve("").unwrap();
    assert_eq!(out, ListenerOptions::default());
    assert_eq!(out.access_log.http_path, "/dev/stdout");
    assert_eq!(out.access_log.format, accesslog::Format::Envoy(None));
    assert_eq!(out.compression, Compression::Gzip);
    assert!(out.allow_chunked_length);
}

#[test]
fn file_keys_reach_the_listener_options() {
    let out = resolve(
        r#"
accesslog-format: json
json-fields: [method, "custom=%REQ(X-CUSTOM)%"]
accesslog-level: critical
compression: {algorithm: brotli}
disableAllowChunkedLength: true
serverHeaderTransformation: pass_through
network: {num-trusted-hops: 2, strip-trailing-host-dot: true}
default-http-versions: ["HTTP/1.1"]
timeouts: {stream-idle-timeout: 2s, request-timeout: infinity}
listener:
  connection-balancer: exact
  max-requests-per-connection: 5
  max-requests-per-io-cycle: 8
  max-connections-per-listener: 1000
  socket-options: {tos: 64}
  http3: {enabled: true, advertised-port: 443}
tls: {minimum-protocol-version: "1.3", cipher-suites: [AES128-SHA, AES128-SHA]}
"#,
    )
    .unwrap();
    assert_eq!(
        out.access_log.format,
        accesslog::Format::Json(vec![
            ("method".into(), "%REQ(:METHOD)%".into()),
            ("custom".into(), "%REQ(X-CUSTOM)%".into())
        ])
    );
    assert_eq!(out.access_log.level, accesslog::Level::Critical);
    assert_eq!(out.compression, Compression::Brotli);
    assert!(!out.allow_chunked_length);
    assert_eq!(out.server_header, ServerHeader::PassThrough);
    assert_eq!((out.xff_num_trusted_hops, out.strip_trailing_host_dot), (2, true));
    assert_eq!(out.http_versions, [HttpVersion::Http1]);
    assert_eq!(out.timeouts.stream_idle, Timeout::After(std::time::Duration::from_secs(2)));
    assert_eq!(out.timeouts.request, Timeout::Disabled);
    assert!(out.exact_connection_balancer);
    assert_eq!(out.max_requests_per_connection, Some(5));
    assert_eq!((out.max_requests_per_io_cycle, out.max_connections_per_listener), (Some(8), Some(1000)));
    assert_eq!(out.socket_options.tos, 64);
    assert_eq!(out.tls.min_version, ir::TlsVersion::V1_3);
    assert_eq!(out.tls.cipher_suites, ["AES128-SHA"]);
    assert_eq!(out.http3, xds::settings::Http3Options { enabled: true, advertised_port: Some(443) });
}

#[test]
fn the_access_log_filter_is_read_and_checked() {
    let out = resolve("accesslog-filter: {status-codes: [404, \"500-599\"], min-duration: 1.5s, sample-percent: 10}\n")
        .unwrap();
    let want = accesslog::Filter {
        status_codes: vec![(404, 404), (500, 599)],
        min_duration_ms: Some(1500),
        sample_percent: Some(10),
    };
    assert_eq!(out.access_log.filter, want);
    for (bad, named) in [
        ("accesslog-filter: {status-codes: [\"599-500\"]}\n", "accesslog-filter.status-codes"),
        ("accesslog-filter: {status-codes: [700]}\n", "accesslog-filter.status-codes"),
        ("accesslog-filter: {min-duration: soon}\n", "accesslog-filter.min-duration"),
        ("accesslog-filter: {sample-percent: 101}\n", "accesslog-filter.sample-percent"),
    ] {
        let e = resolve(bad).unwrap_err().to_string();
        assert!(e.contains(named), "{bad}: {e}");
    }
}

#[test]
fn cluster_keys_reach_the_cluster_options() {
    let file = config::parse(
        "contour.yaml",
        r#"
timeouts: {connect-timeout: 500ms}
cluster:
  dns-lookup-family: v4
  max-requests-per-connection: 3
  per-connection-buffer-limit-bytes: 65536
  circuit-breakers: {max-connections: 20, max-retries: 0}
  upstream-tls: {minimum-protocol-version: "1.3", cipher-suites: [AES256-SHA]}
  outlier-detection: {consecutive-server-errors: 3, interval: 2s, base-ejection-time: 5s, max-ejection-percent: 50}
"#,
    )
    .unwrap();
    let mut out = ClusterOptions::default();
    apply_cluster(&mut out, &from_file(&file), Source::File).unwrap();
    let o = out.default_outlier_detection.expect("a default for every HTTPProxy service");
    assert_eq!((o.consecutive_server_errors, o.interval_ms, o.base_ejection_ms), (3, 2000, 5000));
    assert_eq!((o.max_ejection_percent, o.max_ejection_ms), (50, 300_000));
    assert_eq!(out.connect_timeout, std::time::Duration::from_millis(500));
    assert_eq!(out.dns_lookup_family, DnsLookupFamily::V4);
    assert_eq!((out.max_requests_per_connection, out.per_connection_buffer_limit_bytes), (Some(3), Some(65536)));
    assert_eq!(out.circuit_breakers.max_connections, Some(20));
    assert_eq!(out.circuit_breakers.max_retries, None, "0 is unset");
    assert_eq!(out.upstream_tls.min_version, ir::TlsVersion::V1_3);
    assert_eq!(out.upstream_tls.cipher_suites, ["AES256-SHA"]);
    for (text, key) in [
        ("timeouts: {connect-timeout: infinity}\n", "timeouts.connect-timeout"),
        ("cluster: {dns-lookup-family: v5}\n", "cluster.dns-lookup-family"),
        ("cluster: {outlier-detection: {max-ejection-percent: 101}}\n", "cluster.outlier-detection"),
        ("cluster: {outlier-detection: {interval: soon}}\n", "cluster.outlier-detection"),
        (
            "cluster: {upstream-tls: {maximum-protocol-version: \"1.1\"}}\n",
            "cluster.upstream-tls.maximum-protocol-version",
        ),
    ] {
        let file = config::parse("contour.yaml", text).unwrap();
        let err = apply_cluster(&mut ClusterOptions::default(), &from_file(&file), Source::File).unwrap_err();
        assert!(err.to_string().contains(key), "{text}: {err}");
    }
}

#[test]
fn bad_values_name_their_key_in_the_users_form() {
    for (text, key) in [
        ("json-fields: [nope]\naccesslog-format: json\n", "json-fields"),
        ("accesslog-format-string: \"%NOPE%\\n\"\n", "accesslog-format-string"),
        ("listener: {connection-balancer: random}\n", "listener.connection-balancer"),
        ("listener: {socket-options: {tos: 300}}\n", "listener.socket-options.tos"),
        ("tls: {cipher-suites: [RC4]}\n", "tls.cipher-suites"),
        ("listener: {max-requests-per-connection: 0}\n", "listener.max-requests-per-connection"),
        ("listener: {http3: {advertised-port: 0}}\n", "listener.http3.advertised-port"),
    ] {
        let err = format!("{:#}", resolve(text).unwrap_err());
        assert!(err.contains(key), "{text}: {err}");
    }
    let envoy: EnvoyConfig = serde_json::from_value(serde_json::json!({
        "logging": {"accessLogLevel": "loud"}
    }))
    .unwrap();
    let err = apply(&mut ListenerOptions::default(), &envoy, Source::Resource).unwrap_err().to_string();
    assert!(err.contains("spec.envoy.logging.accessLogLevel"), "{err}");
}
