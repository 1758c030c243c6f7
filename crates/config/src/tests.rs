use super::*;

#[test]
fn upstream_example_loads() {
    let text = r#"
incluster: true
gateway:
  gatewayRef: {name: contour, namespace: projectcontour}
accesslog-format: json
json-fields: [method, path]
tls:
  minimum-protocol-version: "1.2"
  fallback-certificate: {name: fallback, namespace: projectcontour}
disablePermitInsecure: false
timeouts:
  request-timeout: infinity
  connection-idle-timeout: 60s
default-http-versions: ["HTTP/1.1", "HTTP/2"]
network:
  admin-port: 9001
cluster:
  dns-lookup-family: auto
"#;
    let c = parse("contour.yaml", text).unwrap();
    assert_eq!(c.accesslog_format, Some(AccessLogFormat::Json));
    assert_eq!(c.gateway.unwrap().gateway_ref.unwrap().name, "contour");
    assert_eq!(c.default_http_versions, Some(vec![HttpVersion::Http11, HttpVersion::Http2]));
}

#[test]
fn errors_name_the_key() {
    let err = parse("contour.yaml", "timeouts:\n  request-timeout: soon\n").unwrap_err().to_string();
    assert!(err.contains("timeouts.request-timeout"), "{err}");
    let err = parse("contour.yaml", "tls:\n  minimum-protocol-version: \"1.1\"\n").unwrap_err().to_string();
    assert!(err.contains("tls.minimum-protocol-version") && err.contains("1.1"), "{err}");
    let err = parse("contour.yaml", "network:\n  admin-prot: 9001\n").unwrap_err().to_string();
    assert!(err.contains("network") && err.contains("admin-prot"), "{err}");
    let err = parse("contour.yaml", "accesslog-format: xml\n").unwrap_err().to_string();
    assert!(err.contains("accesslog-format"), "{err}");
}

/// What upstream's own tooling writes: its defaults marshalled, and its zero value.
#[test]
fn upstream_generated_files_load() {
    let defaults = r#"
debug: false
kubeconfig: kubeconfig.yaml
accesslog-format: envoy
json-fields: ["@timestamp", authority, bytes_received, method, path, grpc_status, grpc_status_number]
accesslog-level: info
serverHeaderTransformation: overwrite
timeouts:
    connection-idle-timeout: 60s
    connect-timeout: 2s
envoy-service-namespace: projectcontour
envoy-service-name: envoy
default-http-versions: []
cluster:
    dns-lookup-family: auto
network:
    admin-port: 9001
"#;
    let c = parse("contour.yaml", defaults).unwrap();
    assert_eq!(c.debug, Some(false));
    assert_eq!(c.default_http_versions, Some(vec![]));
    let c = parse("contour.yaml", "debug: true\ndefault-http-versions: []\nserver: {}\n").unwrap();
    assert_eq!(c.debug, Some(true));
}

/// Upstream decodes strictly, and has no `server` keys left.
#[test]
fn keys_upstream_refuses_are_refused() {
    let err = parse("contour.yaml", "server:\n  xds-server-type: envoy\n").unwrap_err().to_string();
    assert!(err.contains("server") && err.contains("xds-server-type"), "{err}");
    let err = parse("contour.yaml", "debugging: true\n").unwrap_err().to_string();
    assert!(err.contains("debugging"), "{err}");
}
