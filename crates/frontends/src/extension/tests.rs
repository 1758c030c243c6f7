use super::*;

/// Services `web` (80) and `api` (80) in `apps`.
const SERVICES: &str = "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: apps}\nspec: {ports: [{port: 80}]}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: api, namespace: apps}\nspec: {ports: [{port: 80}]}\n";

/// An ExtensionService `apps/<name>` with this spec (flow YAML).
fn extension(name: &str, spec: &str) -> String {
    format!(
        "apiVersion: projectcontour.io/v1alpha1\nkind: ExtensionService\nmetadata: {{name: {name}, namespace: apps}}\nspec: {spec}\n---\n"
    )
}

#[test]
fn extension_services_are_checked_as_upstream_checks_them() {
    let yaml = [
        extension("ok", "{protocol: h2c, services: [{name: api, port: 80}], circuitBreakerPolicy: {maxRequests: 7}}"),
        extension("no-service", "{services: [{name: missing, port: 80}]}"),
        extension("no-port", "{services: [{name: api, port: 81}]}"),
        extension("two", "{services: [{name: api, port: 80}, {name: web, port: 80}]}"),
        extension("half", "{services: [{name: api, port: 80}, {name: gone, port: 80}, {name: web, port: 99}]}"),
        extension("hashing", "{services: [{name: api, port: 80}], loadBalancerPolicy: {strategy: RequestHash}}"),
        extension("idle", "{services: [{name: api, port: 80}], timeoutPolicy: {idle: 5s, response: x}}"),
        extension(
            "h2c-tls",
            "{protocol: h2c, services: [{name: api, port: 80}], validation: {caSecret: ca, subjectName: a}}",
        ),
        // Upstream main's `http/1.1`: HTTP/1.1 in clear text, so no validation either.
        extension("plain", "{protocol: 'http/1.1', services: [{name: api, port: 80}]}"),
        extension(
            "plain-tls",
            "{protocol: 'http/1.1', services: [{name: api, port: 80}], validation: {caSecret: ca, subjectName: a}}",
        ),
        extension("h3", "{protocol: h3, services: [{name: api, port: 80}]}"),
    ]
    .concat();
    let snapshot = Snapshot::from_yaml(&format!("{SERVICES}---\n{yaml}")).unwrap();
    let t = translate(&snapshot);
    let problems: Vec<String> = t
        .diagnostics
        .iter()
        .map(|d| format!("{} {:?} {}/{}: {}", d.origin.name, d.severity, d.condition, d.reason, d.message))
        .collect();
    assert_eq!(
        problems,
        [
            "h2c-tls Error SpecError/InconsistentProtocol: upstream TLS validation not supported for \"h2c\" protocol",
            "h3 Error SpecError/UnsupportedProtocol: unsupported protocol \"h3\"",
            // Every Service is checked and reported, as upstream.
            "half Error ServiceError/ServiceUnresolvedReference: unresolved service \"apps/gone\": service not found",
            "half Error ServiceError/ServiceUnresolvedReference: unresolved service \"apps/web\": port 99 not found",
            "hashing Warning SpecError/IgnoredField: ignoring field \".Spec.LoadBalancerPolicy\"; RequestHash load balancer policy is not supported for ExtensionClusters",
            "idle Error SpecError/TimeoutPolicyNotValid: spec.timeoutPolicy failed to parse: error parsing response timeout: unable to parse timeout string \"x\": time: invalid duration \"x\"",
            "idle Warning SpecError/IgnoredField: ignoring field \".Spec.TimeoutPolicy.Idle\"; idle timeouts are not supported for ExtensionClusters",
            "no-port Error ServiceError/ServiceUnresolvedReference: unresolved service \"apps/api\": port 81 not found",
            "no-service Error ServiceError/ServiceUnresolvedReference: unresolved service \"apps/missing\": service not found",
            "plain-tls Error SpecError/InconsistentProtocol: upstream TLS validation not supported for \"http/1.1\" protocol",
        ]
    );
    let extensions = &t.ir.fleets[0].extensions;
    let names: Vec<String> = extensions.iter().map(|e| e.cluster_name()).collect();
    assert_eq!(names, ["extension/apps/hashing", "extension/apps/ok", "extension/apps/plain", "extension/apps/two"]);
    assert_eq!(extensions[2].protocol, None, "http/1.1: a plain HTTP/1.1 cluster");
    assert_eq!((extensions[1].protocol, extensions[1].circuit_breakers[2]), (Some(ir::UpstreamProtocol::H2c), Some(7)));
    let services: Vec<&str> = extensions[3].services.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(services, ["api", "web"], "one cluster over both Services");
}
