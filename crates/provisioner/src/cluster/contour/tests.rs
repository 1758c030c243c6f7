//! A Gateway's own controller: upstream's objects and names, RBAC by watched namespaces and
//! disabled features, the ContourConfiguration, the fleet pointed at it.

use super::super::{Controller, Settings, objects as fleet_objects};
use super::*;

const GATEWAY: &str = "
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: web, namespace: apps, uid: u-1}
spec:
  gatewayClassName: contour
  listeners:
  - {name: http, port: 80, protocol: HTTP}
  - {name: https, port: 443, protocol: HTTPS}
  - {name: tcp, port: 7777, protocol: TCP}
";

fn gateway() -> Gateway {
    serde_yaml::from_str(GATEWAY).expect("a Gateway")
}

fn spec(yaml: &str) -> ContourDeploymentSpec {
    serde_yaml::from_str(yaml).expect("a ContourDeploymentSpec")
}

fn render(spec: Option<&ContourDeploymentSpec>) -> Vec<Value> {
    let settings = Settings {
        contour_image: "ghcr.io/projectcontour/contour:v1".into(),
        envoy_image: "envoyproxy/envoy:v1.40.0".into(),
        controller: Controller::PerGateway,
    };
    fleet_objects(&gateway(), spec, &settings, None)
}

fn find<'a>(objects: &'a [Value], kind: &str, name: &str) -> &'a Value {
    objects
        .iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name}"))
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array().into_iter().flatten().filter_map(Value::as_str).collect()
}

fn resources(rules: &Value) -> Vec<&str> {
    rules.as_array().into_iter().flatten().flat_map(|r| strings(&r["resources"])).collect()
}

#[test]
fn a_gateway_gets_upstreams_controller_objects_then_its_fleet() {
    let objects = render(None);
    let kinds: Vec<(&str, &str, &str)> = objects
        .iter()
        .map(|o| {
            let meta = &o["metadata"];
            (
                o["kind"].as_str().unwrap_or_default(),
                meta["namespace"].as_str().unwrap_or("-"),
                meta["name"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("ServiceAccount", "apps", "contour-web"),
            ("ClusterRole", "-", "contour-apps-web"),
            ("ClusterRoleBinding", "-", "contour-apps-web"),
            ("Role", "apps", "contour-web"),
            ("RoleBinding", "apps", "contour-rolebinding-web"),
            ("ContourConfiguration", "apps", "contourconfig-web"),
            ("Deployment", "apps", "contour-web"),
            ("Service", "apps", "contour-web"),
            ("ServiceAccount", "apps", "envoy-web"),
            ("DaemonSet", "apps", "envoy-web"),
            ("Service", "apps", "envoy-web"),
        ],
        "no Secret: the Gateway's certificates are made once, apart"
    );
    for o in &objects {
        let meta = &o["metadata"];
        assert_eq!(meta["labels"]["projectcontour.io/owning-gateway-name"], "web");
        // A cluster-scoped object cannot be owned by a namespaced one.
        let owned = meta["namespace"] == "apps";
        assert_eq!(meta["ownerReferences"][0]["uid"] == "u-1", owned, "{}", o["kind"]);
    }
    let binding = find(&objects, "ClusterRoleBinding", "contour-apps-web");
    assert_eq!(binding["subjects"][0]["name"], "contour-web");
    assert_eq!(binding["subjects"][0]["namespace"], "apps");
    let all = resources(&find(&objects, "ClusterRole", "contour-apps-web")["rules"]);
    for want in
        ["gatewayclasses", "namespaces", "httpproxies", "secrets", "endpointslices", "tlsroutes", "gateways/status"]
    {
        assert!(all.contains(&want), "{want} in {all:?}");
    }
}

#[test]
fn the_controller_serves_the_gateway_alone_over_mtls() {
    let objects = render(Some(&spec("{contour: {logLevel: debug, kubernetesLogLevel: 4, replicas: 1}}")));
    let deployment = find(&objects, "Deployment", "contour-web");
    assert_eq!(deployment["spec"]["replicas"], 1);
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(pod["serviceAccountName"], "contour-web");
    assert_eq!(pod["volumes"][0]["secret"]["secretName"], "contourcert-web");
    let container = &pod["containers"][0];
    assert_eq!(container["image"], "ghcr.io/projectcontour/contour:v1");
    assert_eq!(strings(&container["command"]), ["contour"]);
    let args = strings(&container["args"]);
    for want in [
        "serve",
        "--incluster",
        "--xds-address=0.0.0.0",
        "--xds-port=8001",
        "--contour-cafile=/certs/ca.crt",
        "--contour-config-name=contourconfig-web",
        "--leader-election-resource-name=leader-elect-web",
        "--envoy-service-name=envoy-web",
        "--kubernetes-debug=4",
        "--debug",
    ] {
        assert!(args.contains(&want), "{want} in {args:?}");
    }
    assert!(!args.iter().any(|a| a.starts_with("--watch-namespaces")), "{args:?}");
    let service = find(&objects, "Service", "contour-web");
    assert_eq!(service["spec"]["ports"][0]["port"], 8001);
    assert_eq!(service["spec"]["selector"]["app"], "contour-web");
}

#[test]
fn the_fleet_dials_the_gateways_controller_on_upstreams_ports() {
    let objects = render(None);
    let fleet = find(&objects, "DaemonSet", "envoy-web");
    let pod = &fleet["spec"]["template"]["spec"];
    let bootstrap = strings(&pod["initContainers"][0]["args"]);
    assert_eq!(bootstrap[0], "bootstrap");
    assert!(bootstrap.contains(&"--xds-address=contour-web.apps"), "{bootstrap:?}");
    assert!(bootstrap.contains(&"--xds-port=8001"), "{bootstrap:?}");
    assert!(!bootstrap.iter().any(|a| a.starts_with("--fleet")), "the default fleet: {bootstrap:?}");
    let envoy = &pod["containers"][1];
    let args = strings(&envoy["args"]);
    assert_eq!(args[2..4], ["--service-cluster", "$(CONTOUR_NAMESPACE)"]);
    let ports: Vec<i64> =
        envoy["ports"].as_array().into_iter().flatten().filter_map(|p| p["containerPort"].as_i64()).collect();
    assert_eq!(ports, [8002, 8080, 8443, 15777], "upstream's listener port + 8000");
    assert!(pod["securityContext"].get("sysctls").is_none(), "no low port is bound");
    let service = find(&objects, "Service", "envoy-web");
    let mapped: Vec<(i64, i64)> = service["spec"]["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| (p["port"].as_i64().unwrap_or_default(), p["targetPort"].as_i64().unwrap_or_default()))
        .collect();
    assert_eq!(mapped, [(80, 8080), (443, 8443), (7777, 15777)]);
}

#[test]
fn watched_namespaces_get_roles_and_the_cluster_role_keeps_cluster_kinds() {
    let objects = render(Some(&spec("{contour: {watchNamespaces: [testns-1, testns-2]}}")));
    let cluster = resources(&find(&objects, "ClusterRole", "contour-apps-web")["rules"]);
    assert_eq!(cluster, ["gatewayclasses", "gatewayclasses/status", "namespaces", "clustertrustbundles"]);
    let roles: Vec<&str> = objects
        .iter()
        .filter(|o| o["kind"] == "Role" && o["metadata"]["name"] == "contour-resources-apps-web")
        .filter_map(|o| o["metadata"]["namespace"].as_str())
        .collect();
    assert_eq!(roles, ["testns-1", "testns-2", "apps"], "the Gateway's own namespace is watched too");
    let bindings = objects
        .iter()
        .filter(|o| o["kind"] == "RoleBinding" && o["metadata"]["name"] == "contour-resources-apps-web")
        .count();
    assert_eq!(bindings, 3);
    for o in objects.iter().filter(|o| o["metadata"]["name"] == "contour-resources-apps-web") {
        assert!(o["metadata"].get("ownerReferences").is_none(), "another namespace's object has no owner here");
        assert_eq!(o["metadata"]["labels"][OWNING_GATEWAY_NAMESPACE_LABEL], "apps", "found again by its labels");
    }
    let args =
        strings(&find(&objects, "Deployment", "contour-web")["spec"]["template"]["spec"]["containers"][0]["args"])
            .into_iter()
            .map(str::to_string)
            .collect::<Vec<_>>();
    assert!(args.contains(&"--watch-namespaces=testns-1,testns-2,apps".to_string()), "{args:?}");
}

#[test]
fn disabled_features_are_neither_watched_nor_granted() {
    let objects = render(Some(&spec("{contour: {disabledFeatures: [tlsroutes, extensionservices]}}")));
    let args =
        strings(&find(&objects, "Deployment", "contour-web")["spec"]["template"]["spec"]["containers"][0]["args"])
            .into_iter()
            .map(str::to_string)
            .collect::<Vec<_>>();
    assert!(args.contains(&"--disable-feature=tlsroutes".to_string()), "{args:?}");
    assert!(args.contains(&"--disable-feature=extensionservices".to_string()), "{args:?}");
    let granted = resources(&find(&objects, "ClusterRole", "contour-apps-web")["rules"]);
    for gone in ["tlsroutes", "tlsroutes/status", "extensionservices", "extensionservices/status"] {
        assert!(!granted.contains(&gone), "{gone} in {granted:?}");
    }
    assert!(granted.contains(&"httproutes"));
}

#[test]
fn runtime_settings_become_the_configuration_with_this_gateway_as_its_gateway_ref() {
    let objects = render(Some(&spec(
        "{runtimeSettings: {gateway: {gatewayRef: {namespace: x, name: y}}, envoy: {listener: {useProxyProtocol: true}}}}",
    )));
    let configuration = &find(&objects, "ContourConfiguration", "contourconfig-web")["spec"];
    assert_eq!(configuration["gateway"]["gatewayRef"]["namespace"], "apps");
    assert_eq!(configuration["gateway"]["gatewayRef"]["name"], "web");
    assert_eq!(configuration["envoy"]["service"]["name"], "envoy-web");
    assert_eq!(configuration["envoy"]["listener"]["useProxyProtocol"], true, "the user's settings stay");
    let plain = render(None);
    let configuration = &find(&plain, "ContourConfiguration", "contourconfig-web")["spec"];
    assert_eq!(configuration["gateway"]["gatewayRef"]["name"], "web");
}

#[test]
fn each_gateway_gets_certificates_from_a_ca_of_its_own() {
    let first = certificate_secrets(&gateway(), None, "ghcr.io/projectcontour/contour:v1.33.8").expect("certificates");
    let names: Vec<&str> = first.iter().filter_map(|s| s["metadata"]["name"].as_str()).collect();
    assert_eq!(names, ["contourcert-web", "envoycert-web"]);
    for secret in &first {
        assert_eq!(secret["type"], "kubernetes.io/tls");
        assert_eq!(secret["metadata"]["namespace"], "apps");
        assert_eq!(secret["metadata"]["ownerReferences"][0]["uid"], "u-1");
        for key in ["ca.crt", "tls.crt", "tls.key"] {
            assert!(secret["data"][key].as_str().is_some_and(|v| !v.is_empty()), "{key}");
        }
    }
    assert_eq!(first[0]["data"]["ca.crt"], first[1]["data"]["ca.crt"], "one CA signs both");
    assert_eq!(first[0]["metadata"]["annotations"][GENERATED_BY_VERSION], "v1.33.8");
    assert_eq!(image_tag("registry:5000/contour"), "", "a registry port is no tag");
    assert_eq!(image_tag("contour:v2@sha256:ab"), "v2");
    let second = certificate_secrets(&gateway(), None, "ghcr.io/projectcontour/contour:v1.33.8").expect("certificates");
    assert_ne!(first[0]["data"]["ca.crt"], second[0]["data"]["ca.crt"], "another Gateway's CA is not this one's");
}
