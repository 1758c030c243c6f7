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
