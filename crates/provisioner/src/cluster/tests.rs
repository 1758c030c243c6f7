//! The fleet objects of a Gateway in cluster mode: owners, workload, Service, ContourDeployment
//! fields, ListenerSet ports.

use super::*;

fn gateway(yaml: &str) -> Gateway {
    serde_yaml::from_str(yaml).expect("a Gateway")
}

const GATEWAY: &str = "
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: web, namespace: apps, uid: u-1}
spec:
  gatewayClassName: contour
  infrastructure: {labels: {team: a}, annotations: {note: x}}
  listeners:
  - {name: http, port: 80, protocol: HTTP}
  - {name: https, port: 443, protocol: HTTPS}
  - {name: tls, port: 443, protocol: TLS}
  - {name: dns, port: 53, protocol: UDP}
";

fn settings() -> Settings {
    Settings {
        contour_image: "contour-rs:1".into(),
        envoy_image: "envoyproxy/envoy:v1.40.0".into(),
        controller: Controller::Shared { xds_address: "contour.projectcontour".into(), xds_port: 8001 },
    }
}

fn deployment(yaml: &str) -> ContourDeploymentSpec {
    serde_yaml::from_str(yaml).expect("a ContourDeploymentSpec")
}

fn render(spec: Option<&ContourDeploymentSpec>) -> Vec<Value> {
    let certificate: BTreeMap<String, String> =
        [("ca.crt", "Q0E="), ("tls.crt", "Q1JU"), ("tls.key", "S0VZ")].map(|(k, v)| (k.into(), v.into())).into();
    objects(&gateway(GATEWAY), spec, &settings(), Some(&certificate))
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array().into_iter().flatten().filter_map(Value::as_str).collect()
}

#[test]
fn a_gateway_gets_upstreams_objects_owned_by_it() {
    let objects = render(None);
    let kinds: Vec<(&str, &str)> = objects
        .iter()
        .map(|o| (o["kind"].as_str().unwrap_or_default(), o["metadata"]["name"].as_str().unwrap_or_default()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("ServiceAccount", "envoy-web"),
            ("Secret", "envoycert-web"),
            ("DaemonSet", "envoy-web"),
            ("Service", "envoy-web")
        ]
    );
    for o in &objects {
        let meta = &o["metadata"];
        assert_eq!(meta["namespace"], "apps");
        assert_eq!(meta["labels"]["projectcontour.io/owning-gateway-name"], "web");
        assert_eq!(meta["labels"]["gateway.networking.k8s.io/gateway-name"], "web");
        assert_eq!(meta["labels"]["team"], "a", "the Gateway's infrastructure labels");
        assert_eq!(meta["annotations"]["note"], "x");
        assert_eq!(meta["ownerReferences"][0]["uid"], "u-1");
        assert_eq!(meta["ownerReferences"][0]["kind"], "Gateway");
    }
    assert_eq!(objects[1]["data"]["tls.key"], "S0VZ", "the installation's certificate, copied");
    assert_eq!(objects[1]["type"], "kubernetes.io/tls");
}

#[test]
fn the_default_fleet_is_a_daemonset_bootstrapped_for_the_gateways_fleet() {
    let objects = render(None);
    let ds = &objects[2];
    assert_eq!(ds["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"], "10%");
    assert_eq!(ds["spec"]["selector"]["matchLabels"]["app"], "envoy-web");
    let pod = &ds["spec"]["template"]["spec"];
    assert_eq!(ds["spec"]["template"]["metadata"]["labels"]["app"], "envoy-web");
    assert_eq!(pod["serviceAccountName"], "envoy-web");
    assert_eq!(pod["automountServiceAccountToken"], false);
    assert_eq!(pod["terminationGracePeriodSeconds"], 300);
    assert_eq!(pod["securityContext"]["sysctls"][0]["name"], "net.ipv4.ip_unprivileged_port_start");
    let init = &pod["initContainers"][0];
    assert_eq!(init["image"], "contour-rs:1");
    let args = strings(&init["args"]);
    for want in
        ["--xds-address=contour.projectcontour", "--xds-port=8001", "--fleet=apps/web", "--envoy-cafile=/certs/ca.crt"]
    {
        assert!(args.contains(&want), "{want} in {args:?}");
    }
    assert!(!args.iter().any(|a| a.starts_with("--overload")), "{args:?}");
    let envoy = &pod["containers"][1];
    assert_eq!(envoy["image"], "envoyproxy/envoy:v1.40.0");
    assert_eq!(
        strings(&envoy["args"]),
        [
            "-c",
            "/config/envoy.json",
            "--service-cluster",
            "apps/web",
            "--service-node",
            "$(ENVOY_POD_NAME)",
            "--log-level",
            "info"
        ]
    );
    let ports: Vec<(i64, &str)> = envoy["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| (p["containerPort"].as_i64().unwrap_or_default(), p["protocol"].as_str().unwrap_or_default()))
        .collect();
    assert_eq!(ports, [(8002, "TCP"), (53, "UDP"), (80, "TCP"), (443, "TCP")]);
    assert_eq!(envoy["readinessProbe"]["httpGet"]["port"], 8002);
    assert_eq!(envoy["lifecycle"]["preStop"]["httpGet"]["port"], 8090);
    assert_eq!(pod["volumes"][0]["secret"]["secretName"], "envoycert-web");
}

#[test]
fn the_service_publishes_each_listener_port_once() {
    let objects = render(None);
    let svc = &objects[3];
    assert_eq!(svc["spec"]["type"], "LoadBalancer");
    assert_eq!(svc["spec"]["externalTrafficPolicy"], "Local");
    assert_eq!(svc["spec"]["ipFamilyPolicy"], "SingleStack");
    assert_eq!(svc["spec"]["selector"]["app"], "envoy-web");
    let ports: Vec<(&str, i64, i64)> = svc["spec"]["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            let n = |k: &str| p[k].as_i64().unwrap_or_default();
            (p["name"].as_str().unwrap_or_default(), n("port"), n("targetPort"))
        })
        .collect();
    assert_eq!(ports, [("udp-53", 53, 53), ("http-80", 80, 80), ("https-443", 443, 443)]);
    assert!(svc["spec"].get("loadBalancerIP").is_none());
}

#[test]
fn admitted_listener_sets_add_their_ports_to_the_fleet() {
    let set = |namespace: &str, name: &str, port: u16| -> ListenerSet {
        serde_yaml::from_str(&format!(
            "apiVersion: gateway.networking.k8s.io/v1\nkind: ListenerSet\nmetadata: {{name: {name}, namespace: {namespace}}}\nspec:\n  parentRef: {{name: web, namespace: apps}}\n  listeners: [{{name: extra, port: {port}, protocol: HTTP}}]\n"
        ))
        .expect("a ListenerSet")
    };
    let sets = [set("apps", "same", 8080), set("other", "foreign", 9090), set("apps", "dup", 80)];
    let ports = |allowed: &str| {
        let gateway = gateway(&format!("{GATEWAY}  allowedListeners: {allowed}\n"));
        let certificate = BTreeMap::new();
        let objects = objects(&with_listener_sets(&gateway, &sets), None, &settings(), Some(&certificate));
        let service: Vec<i64> =
            objects[3]["spec"]["ports"].as_array().into_iter().flatten().filter_map(|p| p["port"].as_i64()).collect();
        let containers = objects[2]["spec"]["template"]["spec"]["containers"].as_array().cloned().unwrap_or_default();
        let envoy = containers.iter().find(|c| c["name"] == "envoy").expect("the envoy container");
        let container: Vec<i64> =
            envoy["ports"].as_array().into_iter().flatten().filter_map(|p| p["containerPort"].as_i64()).collect();
        (service, container)
    };
    let (service, container) = ports("{namespaces: {from: Same}}");
    assert_eq!(service, [53, 80, 443, 8080], "the same-namespace set's port, once each");
    assert!(container.contains(&8080) && !container.contains(&9090), "{container:?}");
    assert_eq!(ports("{namespaces: {from: All}}").0, [53, 80, 443, 8080, 9090]);
    assert_eq!(ports("{namespaces: {from: None}}").0, [53, 80, 443], "none admitted");
}

#[test]
fn contour_deployment_fields_take_effect() {
    let spec = deployment(
        "
resourceLabels: {cost: ops}
envoy:
  workloadType: Deployment
  deployment: {replicas: 3, strategy: {type: Recreate}}
  networkPublishing: {type: NodePortService, externalTrafficPolicy: Cluster, ipFamilyPolicy: PreferDualStack, serviceAnnotations: {lb: internal}}
  nodePlacement: {nodeSelector: {pool: edge}, tolerations: [{key: edge, operator: Exists}]}
  extraVolumes: [{name: geo, emptyDir: {}}]
  extraVolumeMounts: [{name: geo, mountPath: /geo}]
  podAnnotations: {scrape: 'true'}
  resources: {requests: {cpu: 500m}}
  logLevel: debug
  baseID: 7
  overloadMaxHeapSize: 1000000
  overloadMaxDownstreamConnections: 500
",
    );
    let objects = render(Some(&spec));
    let workload = &objects[2];
    assert_eq!(workload["kind"], "Deployment");
    assert_eq!(workload["spec"]["replicas"], 3);
    assert_eq!(workload["spec"]["strategy"]["type"], "Recreate");
    assert_eq!(workload["metadata"]["labels"]["cost"], "ops");
    let template = &workload["spec"]["template"];
    assert_eq!(template["metadata"]["annotations"]["scrape"], "true");
    assert_eq!(template["metadata"]["annotations"]["note"], "x");
    let pod = &template["spec"];
    assert_eq!(pod["nodeSelector"]["pool"], "edge");
    assert_eq!(pod["tolerations"][0]["key"], "edge");
    assert_eq!(pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]["weight"], 100);
    assert!(pod["volumes"].as_array().is_some_and(|v| v.iter().any(|v| v["name"] == "geo")));
    let envoy = &pod["containers"][1];
    assert_eq!(envoy["resources"]["requests"]["cpu"], "500m");
    assert!(envoy["volumeMounts"].as_array().is_some_and(|m| m.iter().any(|m| m["mountPath"] == "/geo")));
    let args = strings(&envoy["args"]);
    assert!(args.windows(2).any(|w| w == ["--log-level", "debug"]) && args.windows(2).any(|w| w == ["--base-id", "7"]));
    let init = strings(&pod["initContainers"][0]["args"]);
    assert!(init.contains(&"--overload-max-heap=1000000") && init.contains(&"--overload-downstream-max-conn=500"));
    let svc = &objects[3];
    assert_eq!(svc["spec"]["type"], "NodePort");
    assert_eq!(svc["spec"]["ports"][1]["nodePort"], 80, "upstream's: the node port is the listener port");
    assert_eq!(svc["spec"]["externalTrafficPolicy"], "Cluster");
    assert_eq!(svc["spec"]["ipFamilyPolicy"], "PreferDualStack");
    assert_eq!(svc["metadata"]["annotations"]["lb"], "internal");
    let cluster_ip = render(Some(&deployment("envoy: {networkPublishing: {type: ClusterIPService}}")));
    assert_eq!(cluster_ip[3]["spec"]["type"], "ClusterIP");
    assert!(cluster_ip[3]["spec"].get("externalTrafficPolicy").is_none());
}

#[test]
fn a_requested_address_becomes_the_load_balancer_ip() {
    let yaml = format!("{GATEWAY}  addresses: [{{value: 192.0.2.7}}]\n");
    let objects = objects(&gateway(&yaml), None, &settings(), Some(&BTreeMap::new()));
    assert_eq!(objects[3]["spec"]["loadBalancerIP"], "192.0.2.7");
}

#[test]
fn cluster_routability_asks_for_a_cluster_ip_service() {
    let only = format!("{GATEWAY}  addresses: [{{type: IPAddress, value: 10.96.0.50, routability: Cluster}}]\n");
    let only = objects(&gateway(&only), None, &settings(), Some(&BTreeMap::new()));
    let spec = &only[3]["spec"];
    assert_eq!((&spec["type"], &spec["clusterIP"]), (&json!("ClusterIP"), &json!("10.96.0.50")));
    assert!(spec.get("loadBalancerIP").is_none() && spec.get("externalTrafficPolicy").is_none(), "{spec}");
    // Beside an address of no scope: a load balancer still, whose IP is the unscoped one.
    let mixed = format!(
        "{GATEWAY}  addresses: [{{routability: Cluster}}, {{value: 192.0.2.7}}, {{routability: testing.x-k8s.io/sentinel}}]\n"
    );
    let mixed = objects(&gateway(&mixed), None, &settings(), Some(&BTreeMap::new()));
    let spec = &mixed[3]["spec"];
    assert_eq!((&spec["type"], &spec["loadBalancerIP"]), (&json!("LoadBalancer"), &json!("192.0.2.7")));
    assert!(spec.get("clusterIP").is_none(), "the API server allocates it: {spec}");
}

#[test]
fn bad_parameters_get_upstreams_messages() {
    assert_eq!(invalid_parameters(&deployment("envoy: {workloadType: Deployment, logLevel: warn}")), None);
    let spec = deployment(
        "envoy: {workloadType: Pod, logLevel: loud, networkPublishing: {type: Magic, ipFamilyPolicy: Dual, externalTrafficPolicy: Far}, extraVolumeMounts: [{name: nope, mountPath: /x}]}",
    );
    let message = invalid_parameters(&spec).expect("invalid");
    for part in [
        "spec.envoy.workloadType \"Pod\", must be DaemonSet or Deployment",
        "spec.envoy.networkPublishing.type \"Magic\"",
        "spec.envoy.networkPublishing.ipFamilyPolicy \"Dual\"",
        "spec.envoy.networkPublishing.externalTrafficPolicy \"Far\", must be Local or Cluster",
        "spec.envoy.extraVolumeMounts, mount to unknown volume: \"nope\"",
        "spec.envoy.logLevel \"loud\"",
    ] {
        assert!(message.contains(part), "{part} in {message}");
    }
    assert_eq!(message.matches("; ").count(), 5);
}

#[test]
fn runtime_settings_contour_serve_would_refuse_make_the_parameters_invalid() {
    let good = deployment(
        "runtimeSettings: {envoy: {listener: {tls: {minimumProtocolVersion: '1.3'}}, service: {name: '', namespace: ''}}, gateway: {gatewayRef: {name: '', namespace: ''}}}",
    );
    assert_eq!(invalid_parameters(&good), None, "the Gateway and the Service are the provisioner's to set");
    let bad = deployment(
        "runtimeSettings: {envoy: {listener: {tls: {minimumProtocolVersion: '1.1'}}}}\nenvoy: {workloadType: Pod}",
    );
    let message = invalid_parameters(&bad).expect("invalid");
    assert!(
        message.contains("invalid ContourDeployment spec.runtimeSettings.envoy.listener.tls.minimumProtocolVersion: \"1.1\" is not 1.2 or 1.3"),
        "{message}"
    );
    assert!(message.contains("spec.envoy.workloadType"), "both problems: {message}");
    let tracing = deployment("runtimeSettings: {tracing: {extensionService: {name: otel, namespace: ''}}}");
    let message = invalid_parameters(&tracing).expect("invalid");
    assert!(message.contains("spec.runtimeSettings.tracing.extensionService"), "{message}");
}
