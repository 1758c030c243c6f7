//! The fields of HTTPProxy and Ingress that have no Gateway API equivalent, named one by one.
//!
//! Each object's spec is walked against the fields the conversion carries over; any other field
//! that is set (not empty, not `false`) is reported where its subtree starts, with its object.
//! Upstream's Ingress annotations are checked the same way.

use serde_json::Value;

use crate::Finding;
use crate::input::describe;

/// HTTPProxy fields carried over (`[]` stands for any index).
const HTTPPROXY: &[&str] = &[
    "spec",
    "spec.virtualhost",
    "spec.virtualhost.fqdn",
    "spec.virtualhost.tls",
    "spec.virtualhost.tls.secretName",
    "spec.virtualhost.tls.passthrough",
    "spec.ingressClassName",
    "spec.routes",
    "spec.routes[]",
    "spec.routes[].conditions",
    "spec.routes[].conditions[]",
    "spec.routes[].conditions[].prefix",
    "spec.routes[].conditions[].exact",
    "spec.routes[].conditions[].regex",
    "spec.routes[].conditions[].header",
    "spec.routes[].conditions[].header.name",
    "spec.routes[].conditions[].header.present",
    "spec.routes[].conditions[].header.exact",
    "spec.routes[].conditions[].header.contains",
    "spec.routes[].conditions[].header.regex",
    "spec.routes[].conditions[].header.ignoreCase",
    "spec.routes[].conditions[].queryParameter",
    "spec.routes[].conditions[].queryParameter.name",
    "spec.routes[].conditions[].queryParameter.exact",
    "spec.routes[].conditions[].queryParameter.prefix",
    "spec.routes[].conditions[].queryParameter.suffix",
    "spec.routes[].conditions[].queryParameter.regex",
    "spec.routes[].conditions[].queryParameter.contains",
    "spec.routes[].conditions[].queryParameter.ignoreCase",
    "spec.routes[].conditions[].queryParameter.present",
    "spec.routes[].services",
    "spec.routes[].services[]",
    "spec.routes[].services[].name",
    "spec.routes[].services[].port",
    "spec.routes[].services[].weight",
    "spec.routes[].services[].mirror",
    "spec.routes[].services[].validation",
    "spec.routes[].services[].validation.caSecret",
    "spec.routes[].services[].validation.subjectName",
    "spec.routes[].services[].requestHeadersPolicy",
    "spec.routes[].services[].requestHeadersPolicy.set",
    "spec.routes[].services[].requestHeadersPolicy.set[]",
    "spec.routes[].services[].requestHeadersPolicy.set[].name",
    "spec.routes[].services[].requestHeadersPolicy.set[].value",
    "spec.routes[].services[].requestHeadersPolicy.remove",
    "spec.routes[].services[].responseHeadersPolicy",
    "spec.routes[].services[].responseHeadersPolicy.set",
    "spec.routes[].services[].responseHeadersPolicy.set[]",
    "spec.routes[].services[].responseHeadersPolicy.set[].name",
    "spec.routes[].services[].responseHeadersPolicy.set[].value",
    "spec.routes[].services[].responseHeadersPolicy.remove",
    "spec.routes[].requestHeadersPolicy",
    "spec.routes[].requestHeadersPolicy.set",
    "spec.routes[].requestHeadersPolicy.set[]",
    "spec.routes[].requestHeadersPolicy.set[].name",
    "spec.routes[].requestHeadersPolicy.set[].value",
    "spec.routes[].requestHeadersPolicy.remove",
    "spec.routes[].responseHeadersPolicy",
    "spec.routes[].responseHeadersPolicy.set",
    "spec.routes[].responseHeadersPolicy.set[]",
    "spec.routes[].responseHeadersPolicy.set[].name",
    "spec.routes[].responseHeadersPolicy.set[].value",
    "spec.routes[].responseHeadersPolicy.remove",
    "spec.routes[].pathRewritePolicy",
    "spec.routes[].pathRewritePolicy.replacePrefix",
    "spec.routes[].pathRewritePolicy.replacePrefix[]",
    "spec.routes[].pathRewritePolicy.replacePrefix[].prefix",
    "spec.routes[].pathRewritePolicy.replacePrefix[].replacement",
    "spec.routes[].requestRedirectPolicy",
    "spec.routes[].requestRedirectPolicy.scheme",
    "spec.routes[].requestRedirectPolicy.hostname",
    "spec.routes[].requestRedirectPolicy.port",
    "spec.routes[].requestRedirectPolicy.statusCode",
    "spec.routes[].requestRedirectPolicy.path",
    "spec.routes[].requestRedirectPolicy.prefix",
    "spec.routes[].permitInsecure",
    "spec.routes[].timeoutPolicy",
    "spec.routes[].timeoutPolicy.response",
    "spec.includes",
    "spec.includes[]",
    "spec.includes[].name",
    "spec.includes[].namespace",
    "spec.includes[].conditions",
    "spec.includes[].conditions[]",
    "spec.includes[].conditions[].prefix",
    "spec.includes[].conditions[].header",
    "spec.includes[].conditions[].header.name",
    "spec.includes[].conditions[].header.present",
    "spec.includes[].conditions[].header.exact",
    "spec.includes[].conditions[].header.contains",
    "spec.includes[].conditions[].header.regex",
    "spec.includes[].conditions[].header.ignoreCase",
    "spec.includes[].conditions[].queryParameter",
    "spec.includes[].conditions[].queryParameter.name",
    "spec.includes[].conditions[].queryParameter.exact",
    "spec.includes[].conditions[].queryParameter.prefix",
    "spec.includes[].conditions[].queryParameter.suffix",
    "spec.includes[].conditions[].queryParameter.regex",
    "spec.includes[].conditions[].queryParameter.contains",
    "spec.includes[].conditions[].queryParameter.ignoreCase",
    "spec.includes[].conditions[].queryParameter.present",
    "spec.tcpproxy",
    "spec.tcpproxy.services",
    "spec.tcpproxy.services[]",
    "spec.tcpproxy.services[].name",
    "spec.tcpproxy.services[].port",
    "spec.tcpproxy.services[].weight",
    "spec.tcpproxy.include",
    "spec.tcpproxy.include.name",
    "spec.tcpproxy.include.namespace",
    "spec.tcpproxy.includes",
    "spec.tcpproxy.includes.name",
    "spec.tcpproxy.includes.namespace",
];

/// Ingress fields carried over.
const INGRESS: &[&str] = &[
    "spec",
    "spec.ingressClassName",
    "spec.defaultBackend",
    "spec.defaultBackend.service",
    "spec.defaultBackend.service.name",
    "spec.defaultBackend.service.port",
    "spec.defaultBackend.service.port.number",
    "spec.defaultBackend.service.port.name",
    "spec.rules",
    "spec.rules[]",
    "spec.rules[].host",
    "spec.rules[].http",
    "spec.rules[].http.paths",
    "spec.rules[].http.paths[]",
    "spec.rules[].http.paths[].path",
    "spec.rules[].http.paths[].pathType",
    "spec.rules[].http.paths[].backend",
    "spec.rules[].http.paths[].backend.service",
    "spec.rules[].http.paths[].backend.service.name",
    "spec.rules[].http.paths[].backend.service.port",
    "spec.rules[].http.paths[].backend.service.port.number",
    "spec.rules[].http.paths[].backend.service.port.name",
    "spec.tls",
    "spec.tls[]",
    "spec.tls[].hosts",
    "spec.tls[].secretName",
];

/// Upstream's Ingress (and HTTPProxy) annotations the conversion carries over.
const ANNOTATIONS: &[&str] = &[
    "kubernetes.io/ingress.class",
    "projectcontour.io/ingress.class",
    "ingress.kubernetes.io/force-ssl-redirect",
    "kubernetes.io/ingress.allow-http",
    "projectcontour.io/response-timeout",
    "projectcontour.io/tls-cert-namespace",
];

/// Prefixes of the annotations upstream reads; others are not ours to judge.
const ANNOTATION_PREFIXES: &[&str] = &["projectcontour.io/", "contour.heptio.com/", "ingress.kubernetes.io/"];

/// Whether a value asks for nothing: absent, `false`, empty.
fn unset(value: &Value) -> bool {
    match value {
        Value::Null | Value::Bool(false) => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

/// Whether a set field is carried over even though its path is not in the list: the values the
/// conversion handles by what they say.
fn carried_by_value(pattern: &str, value: &Value, parent: &Value) -> bool {
    match pattern {
        // TLS to the Service becomes a BackendTLSPolicy when the certificate is verified.
        "spec.routes[].services[].protocol" => value == "tls" && parent.get("validation").is_some_and(|v| !unset(v)),
        // TLS 1.2 is the Gateway API's floor too.
        "spec.virtualhost.tls.minimumProtocolVersion" => value == "1.2",
        _ => false,
    }
}

fn walk(value: &Value, path: &str, pattern: &str, parent: &Value, allowed: &[&str], out: &mut Vec<(String, String)>) {
    if unset(value) {
        return;
    }
    if !pattern.is_empty() && !allowed.contains(&pattern) {
        if !carried_by_value(pattern, value, parent) {
            out.push((path.to_string(), pattern.to_string()));
        }
        return;
    }
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                let join = |p: &str| if p.is_empty() { key.clone() } else { format!("{p}.{key}") };
                walk(child, &join(path), &join(pattern), value, allowed, out);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                walk(item, &format!("{path}[{i}]"), &format!("{pattern}[]"), value, allowed, out);
            }
        }
        _ => {}
    }
}

/// Why a field has no equivalent, when there is more to say than that.
fn explain(pattern: &str) -> &'static str {
    match pattern {
        "spec.routes[].conditions[].header.notpresent"
        | "spec.routes[].conditions[].header.notcontains"
        | "spec.routes[].conditions[].header.notexact" => {
            "Gateway API has no negated header condition; the condition is left out"
        }
        "spec.routes[].retryPolicy" => {
            "carried over as the rule's retry (attempts, codes; Gateway API's experimental channel) and \
             timeouts.backendRequest (perTryTimeout), but Gateway API retries only connection failures and the \
             listed codes: Envoy's retry conditions (retryOn, 5xx by default) are not converted"
        }
        "spec.routes[].enableWebsockets" => {
            "Gateway API upgrades to WebSocket when the Service port's appProtocol is kubernetes.io/ws; set that"
        }
        "spec.routes[].services[].protocol" => {
            "Gateway API speaks TLS to a Service with a BackendTLSPolicy (which verifies), and h2c when the Service \
             port's appProtocol is kubernetes.io/h2c; not converted"
        }
        "spec.virtualhost.tls.enableFallbackCertificate" => "Gateway API has no fallback certificate; not converted",
        _ => "no Gateway API equivalent; not converted",
    }
}

/// Adds a finding for every set field of a converted object that is not carried over.
pub(crate) fn fields(object: &Value, report: &mut Vec<Finding>) {
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or_default();
    let allowed = if kind == "HTTPProxy" { HTTPPROXY } else { INGRESS };
    let mut found = Vec::new();
    if let Some(spec) = object.get("spec") {
        walk(spec, "spec", "spec", object, allowed, &mut found);
    }
    for (path, pattern) in found {
        report.push(Finding::new(describe(object), path, explain(&pattern)));
    }
    let annotations = object.pointer("/metadata/annotations").and_then(Value::as_object);
    for (key, value) in annotations.into_iter().flatten() {
        if ANNOTATION_PREFIXES.iter().any(|p| key.starts_with(p))
            && !ANNOTATIONS.contains(&key.as_str())
            && !unset(value)
        {
            report.push(Finding::new(
                describe(object),
                format!("metadata.annotations[{key}]"),
                "no Gateway API equivalent; not converted",
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn findings(object: Value) -> Vec<String> {
        let mut out = Vec::new();
        fields(&object, &mut out);
        out.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn fields_without_an_equivalent_are_named_where_their_subtree_starts() {
        let proxy = json!({
            "apiVersion": "projectcontour.io/v1", "kind": "HTTPProxy",
            "metadata": {"name": "app", "namespace": "shop"},
            "spec": {
                "virtualhost": {"fqdn": "a.example.com", "corsPolicy": {"allowOrigin": ["*"]}},
                "routes": [
                    {"conditions": [{"prefix": "/"}], "services": [{"name": "s", "port": 80}], "enableWebsockets": false},
                    {"services": [{"name": "s", "port": 80}], "retryPolicy": {"count": 3}},
                ],
            },
        });
        assert_eq!(
            findings(proxy),
            vec![
                "HTTPProxy shop/app: spec.routes[1].retryPolicy: carried over as the rule's retry (attempts, codes; Gateway API's experimental channel) and timeouts.backendRequest (perTryTimeout), but Gateway API retries only connection failures and the listed codes: Envoy's retry conditions (retryOn, 5xx by default) are not converted",
                "HTTPProxy shop/app: spec.virtualhost.corsPolicy: no Gateway API equivalent; not converted",
            ]
        );
    }

    #[test]
    fn upstream_annotations_are_judged_and_others_left_alone() {
        let ingress = json!({
            "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": "web", "annotations": {
                "projectcontour.io/retry-on": "5xx",
                "ingress.kubernetes.io/force-ssl-redirect": "true",
                "kubectl.kubernetes.io/last-applied-configuration": "{}",
            }},
            "spec": {"rules": [{"host": "a.example.com"}]},
        });
        assert_eq!(
            findings(ingress),
            vec![
                "Ingress default/web: metadata.annotations[projectcontour.io/retry-on]: no Gateway API equivalent; not converted"
            ]
        );
    }

    #[test]
    fn tls_to_a_service_is_carried_only_with_verification() {
        let proxy = |validation: Value| {
            json!({"kind": "HTTPProxy", "metadata": {"name": "p"}, "spec": {"routes": [{"services": [
                {"name": "s", "port": 443, "protocol": "tls", "validation": validation}
            ]}]}})
        };
        assert!(findings(proxy(json!({"caSecret": "ca", "subjectName": "s.example.com"}))).is_empty());
        assert_eq!(findings(proxy(Value::Null)).len(), 1);
    }
}
