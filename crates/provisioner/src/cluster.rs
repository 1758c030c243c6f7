//! Cluster mode: each Gateway's fleet runs as Envoy pods in the Gateway's namespace. Per Gateway,
//! with upstream's names and labels: the ServiceAccount `envoy-<gw>`, the xDS client certificate
//! `envoycert-<gw>`, the DaemonSet or Deployment `envoy-<gw>` and the Service `envoy-<gw>`.
//!
//! Who feeds the fleet ([`Controller`]):
//! - **the installation's one contour-serve** (`deploy/install`; a fleet per Gateway, where
//!   upstream runs a controller per Gateway). `envoycert-<gw>` is the fleet's own client
//!   certificate from the installation's CA ([`certificate`]), naming that fleet alone. Envoy listens on the Gateway's listener ports themselves (the pod may bind ports
//!   below 1024 through the namespaced sysctl `net.ipv4.ip_unprivileged_port_start`, still as
//!   user 65534), so the Service's target ports, Envoy's statistics and the controller's
//!   listeners all say the port the Gateway says;
//! - **a contour-serve of the Gateway's own** ([`contour`]), as upstream's provisioner makes: the
//!   drop-in for an install of upstream's provisioner manifest alone. The controller serves the
//!   Gateway as upstream's static Gateway does, on the listener port plus 8000.
//!
//! Pure: a Gateway, its ContourDeployment and the settings in, object bodies out.

use std::collections::BTreeMap;

use api::contourconfig::ContourConfigurationSpec;
use api::contourdeployment::ContourDeploymentSpec;
use objects::types::Gateway;
use objects::types::ListenerSet;
use serde_json::{Value, json};

use crate::gateway::GATEWAY_NAME_LABEL;

pub mod apply;
pub mod certificate;
pub mod contour;

/// The label upstream's provisioner marks every object of a Gateway with.
pub const OWNING_GATEWAY_LABEL: &str = "projectcontour.io/owning-gateway-name";
/// Upstream's `app.kubernetes.io/managed-by` value for what its provisioner makes.
pub const MANAGED_BY_VALUE: &str = "contour-gateway-provisioner";
/// Where Envoy answers readiness (`/ready`) and serves statistics.
pub const ENVOY_HEALTH_PORT: u16 = 8002;
/// Where the shutdown manager answers Envoy's preStop hook.
pub const SHUTDOWN_MANAGER_PORT: u16 = 8090;

/// How fleets are built, from the provisioner's flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// Our image (`contour` on its PATH): the bootstrap init container and the shutdown manager.
    pub contour_image: String,
    /// Envoy's image.
    pub envoy_image: String,
    /// Who serves the fleets' xDS.
    pub controller: Controller,
}

/// Who serves a Gateway's fleet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Controller {
    /// The installation's one contour-serve, every Gateway a fleet of its own.
    Shared {
        /// Its xDS address as pods reach it (its Service's DNS name).
        xds_address: String,
        /// Its xDS port.
        xds_port: u16,
    },
    /// A contour-serve per Gateway ([`contour`]), as upstream's provisioner makes.
    PerGateway,
}

/// Why a ContourDeployment cannot be used: upstream's messages, joined by `; `.
pub fn invalid_parameters(spec: &ContourDeploymentSpec) -> Option<String> {
    let mut problems = Vec::new();
    if let Some(runtime) = &spec.runtime_settings {
        problems.extend(invalid_runtime_settings(runtime));
    }
    let Some(envoy) = &spec.envoy else { return (!problems.is_empty()).then(|| problems.join("; ")) };
    if let Some(w) = envoy.workload_type.as_deref().filter(|w| !matches!(*w, "" | "DaemonSet" | "Deployment")) {
        problems
            .push(format!("invalid ContourDeployment spec.envoy.workloadType {w:?}, must be DaemonSet or Deployment"));
    }
    if let Some(p) = &envoy.network_publishing {
        if let Some(t) = p
            .type_
            .as_deref()
            .filter(|t| !matches!(*t, "" | "LoadBalancerService" | "NodePortService" | "ClusterIPService"))
        {
            problems.push(format!(
                "invalid ContourDeployment spec.envoy.networkPublishing.type {t:?}, must be LoadBalancerService, NodePortService or ClusterIPService"
            ));
        }
        if let Some(f) = p
            .ip_family_policy
            .as_deref()
            .filter(|f| !matches!(*f, "" | "SingleStack" | "PreferDualStack" | "RequireDualStack"))
        {
            problems.push(format!(
                "invalid ContourDeployment spec.envoy.networkPublishing.ipFamilyPolicy {f:?}, must be SingleStack, PreferDualStack or RequireDualStack"
            ));
        }
        if let Some(e) = p.external_traffic_policy.as_deref().filter(|e| !matches!(*e, "" | "Local" | "Cluster")) {
            problems.push(format!(
                "invalid ContourDeployment spec.envoy.networkPublishing.externalTrafficPolicy {e:?}, must be Local or Cluster"
            ));
        }
    }
    let volumes: Vec<&str> = envoy.extra_volumes.iter().flatten().map(|v| v.name.as_str()).collect();
    for m in envoy.extra_volume_mounts.iter().flatten() {
        if !volumes.contains(&m.name.as_str()) {
            problems.push(format!(
                "invalid ContourDeployment spec.envoy.extraVolumeMounts, mount to unknown volume: {:?}",
                m.name
            ));
        }
    }
    if let Some(l) = envoy
        .log_level
        .as_deref()
        .filter(|l| !matches!(*l, "" | "trace" | "debug" | "info" | "warn" | "error" | "critical" | "off"))
    {
        problems.push(format!(
            "invalid ContourDeployment spec.envoy.logLevel {l:?}, must be trace, debug, info, warn, error, critical or off"
        ));
    }
    (!problems.is_empty()).then(|| problems.join("; "))
}

/// Why contour-serve would refuse to start with `runtime` as its ContourConfiguration, checked
/// by the same code (ours: upstream's provisioner accepts the class and its contour does not
/// start). The Gateway reference and the Envoy Service are the provisioner's, so not checked.
fn invalid_runtime_settings(runtime: &ContourConfigurationSpec) -> Option<String> {
    let mut runtime = runtime.clone();
    runtime.gateway = None;
    if let Some(envoy) = runtime.envoy.as_mut() {
        envoy.service = None;
    }
    let message = settings::check_resource(&runtime).err()?.to_string();
    Some(match message.strip_prefix("spec.") {
        Some(rest) => format!("invalid ContourDeployment spec.runtimeSettings.{rest}"),
        None => format!("invalid ContourDeployment spec.runtimeSettings: {message}"),
    })
}

/// The name of every object of a Gateway's fleet: upstream's `envoy-<gateway>`.
pub fn fleet_name(gateway: &str) -> String {
    crate::gateway::service_name(gateway)
}

/// The xDS client certificate Secret of a Gateway's fleet: upstream's `envoycert-<gateway>`.
pub fn certificate_name(gateway: &str) -> String {
    let name = format!("envoycert-{gateway}");
    if name.len() <= 253 { name } else { format!("envoycert-{}", fleet_name(gateway)) }
}

/// The kind of workload a ContourDeployment asks for.
pub fn workload_kind(spec: Option<&ContourDeploymentSpec>) -> &'static str {
    match spec.and_then(|s| s.envoy.as_ref()).and_then(|e| e.workload_type.as_deref()) {
        Some("Deployment") => "Deployment",
        _ => "DaemonSet",
    }
}

/// Labels on every object of the fleet: the ContourDeployment's `resourceLabels`, then the
/// Gateway's infrastructure labels, then the owner labels (upstream's order).
fn common_labels(gateway: &Gateway, spec: Option<&ContourDeploymentSpec>) -> BTreeMap<String, String> {
    let name = gateway.metadata.name.clone().unwrap_or_default();
    let mut labels: BTreeMap<String, String> = spec.and_then(|s| s.resource_labels.clone()).unwrap_or_default();
    labels.extend(gateway.spec.infrastructure.as_ref().and_then(|i| i.labels.clone()).unwrap_or_default());
    labels.insert(OWNING_GATEWAY_LABEL.into(), name.clone());
    labels.insert(GATEWAY_NAME_LABEL.into(), name);
    labels.insert("app.kubernetes.io/managed-by".into(), MANAGED_BY_VALUE.into());
    labels
}

fn common_annotations(gateway: &Gateway) -> BTreeMap<String, String> {
    gateway.spec.infrastructure.as_ref().and_then(|i| i.annotations.clone()).unwrap_or_default()
}

/// Metadata of an object of the fleet, owned by the Gateway (so a cluster's garbage collector
/// removes it with the Gateway; the provisioner deletes it too).
fn metadata(gateway: &Gateway, name: &str, labels: &BTreeMap<String, String>) -> Value {
    json!({
        "name": name,
        "namespace": gateway.metadata.namespace,
        "labels": labels,
        "annotations": common_annotations(gateway),
        "ownerReferences": [{
            "apiVersion": "gateway.networking.k8s.io/v1",
            "kind": "Gateway",
            "name": gateway.metadata.name,
            "uid": gateway.metadata.uid,
            "controller": true,
        }],
    })
}

/// Every object of the Gateway's fleet, in the order they are applied: the ServiceAccount, the
/// fleet's certificate Secret when the installation's controller serves it (`certificate`'s
/// data: `ca.crt`, `tls.crt`, `tls.key`, base64), the workload and the Service; with a controller per Gateway,
/// the controller's objects ([`contour::objects`]) come before the fleet's.
pub fn objects(
    gateway: &Gateway,
    spec: Option<&ContourDeploymentSpec>,
    settings: &Settings,
    certificate: Option<&BTreeMap<String, String>>,
) -> Vec<Value> {
    let gw = gateway.metadata.name.clone().unwrap_or_default();
    let name = fleet_name(&gw);
    let labels = common_labels(gateway, spec);
    let account = json!({
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": metadata(gateway, &name, &labels),
    });
    let mut out = match settings.controller {
        Controller::Shared { .. } => vec![account],
        Controller::PerGateway => {
            let mut out = contour::objects(gateway, spec, &settings.contour_image);
            out.push(account);
            out
        }
    };
    if let Some(certificate) = certificate {
        let mut secret_labels = labels.clone();
        secret_labels.insert("app".into(), "contour".into());
        out.push(json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": metadata(gateway, &certificate_name(&gw), &secret_labels),
            "type": "kubernetes.io/tls",
            "data": certificate,
        }));
    }
    out.push(workload(gateway, spec, settings, &labels));
    out.push(service(gateway, spec, settings, &labels));
    out
}

/// The port Envoy listens on for a listener port: the port itself when fed by the shared
/// controller, upstream's mapping (plus 8000) when by the Gateway's own.
fn envoy_port(settings: &Settings, port: i32) -> i32 {
    match settings.controller {
        Controller::Shared { .. } => port,
        Controller::PerGateway => {
            u16::try_from(port).map_or(port, |p| i32::from(frontends::gateway_api::container_port(p)))
        }
    }
}

/// The Gateway with the listeners of the ListenerSets it admits appended, so that its fleet's
/// container and Service ports cover theirs too. The provisioner does not watch namespaces: a
/// namespace selector admits every ListenerSet here (a published port that no listener serves is
/// refused by Envoy; the controller decides which listeners are served).
pub fn with_listener_sets<'a>(gateway: &Gateway, sets: impl IntoIterator<Item = &'a ListenerSet>) -> Gateway {
    use frontends::gateway_api::listener_set;
    let namespace = gateway.metadata.namespace.as_deref().unwrap_or_default();
    let key = objects::ObjectKey::new(namespace, gateway.metadata.name.as_deref().unwrap_or_default());
    let mut out = gateway.clone();
    for set in sets {
        let set_namespace = set.metadata.namespace.as_deref().unwrap_or_default();
        let set_key = objects::ObjectKey::new(set_namespace, set.metadata.name.as_deref().unwrap_or_default());
        if listener_set::parent(&set_key, set).as_ref() == Some(&key)
            && listener_set::admits(gateway, set_namespace, None)
        {
            out.spec.listeners.extend(set.spec.listeners.iter().map(listener_set::as_gateway_listener));
        }
    }
    out
}

/// The listener ports of the Gateway with their protocol, once each (ports out of range and
/// duplicates dropped; UDP listeners get UDP ports).
fn listener_ports(gateway: &Gateway) -> Vec<(i32, &'static str, &'static str)> {
    let mut ports: BTreeMap<(i32, &'static str), &'static str> = BTreeMap::new();
    for l in &gateway.spec.listeners {
        let (protocol, name) = match l.protocol.as_str() {
            "UDP" => ("UDP", "udp"),
            "TCP" => ("TCP", "tcp"),
            "HTTP" => ("TCP", "http"),
            _ => ("TCP", "https"),
        };
        if (1..=65535).contains(&l.port) {
            ports.entry((l.port, protocol)).or_insert(name);
        }
    }
    ports.into_iter().map(|((port, protocol), name)| (port, protocol, name)).collect()
}

fn workload(
    gateway: &Gateway,
    spec: Option<&ContourDeploymentSpec>,
    settings: &Settings,
    labels: &BTreeMap<String, String>,
) -> Value {
    let gw = gateway.metadata.name.clone().unwrap_or_default();
    let namespace = gateway.metadata.namespace.clone().unwrap_or_default();
    let name = fleet_name(&gw);
    let envoy = spec.and_then(|s| s.envoy.clone()).unwrap_or_default();
    let kind = workload_kind(spec);
    let workload_labels = workload_labels(labels, &gw);
    let selector = json!({"app": name});
    let mut pod_labels = workload_labels.clone();
    pod_labels.insert("app".into(), name.clone());
    let mut pod_annotations = envoy.pod_annotations.clone().unwrap_or_default();
    pod_annotations.extend(common_annotations(gateway));
    let init_resources =
        json!({"requests": {"cpu": "25m", "memory": "50Mi"}, "limits": {"cpu": "200m", "memory": "100Mi"}});
    // The fleet's name: the Gateway's with the shared controller; with the Gateway's own, the
    // default fleet, which its controller serves the Gateway to (upstream's node cluster, the
    // namespace).
    let (xds_address, xds_port, fleet) = match &settings.controller {
        Controller::Shared { xds_address, xds_port } => (xds_address.clone(), *xds_port, format!("{namespace}/{gw}")),
        Controller::PerGateway => (
            format!("{}.{namespace}", contour::Names::of(&namespace, &gw).controller),
            contour::XDS_PORT,
            "$(CONTOUR_NAMESPACE)".to_string(),
        ),
    };
    let mut bootstrap = vec![
        "bootstrap".to_string(),
        "/config/envoy.json".into(),
        format!("--xds-address={xds_address}"),
        format!("--xds-port={xds_port}"),
        "--xds-resource-version=v3".into(),
        "--resources-dir=/config/resources".into(),
        "--envoy-cafile=/certs/ca.crt".into(),
        "--envoy-cert-file=/certs/tls.crt".into(),
        "--envoy-key-file=/certs/tls.key".into(),
    ];
    if let Controller::Shared { .. } = settings.controller {
        bootstrap.push(format!("--fleet={fleet}"));
    }
    if let Some(heap) = envoy.overload_max_heap_size.filter(|h| *h > 0) {
        bootstrap.push(format!("--overload-max-heap={heap}"));
    }
    if let Some(max) = envoy.overload_max_downstream_connections.filter(|m| *m > 0) {
        bootstrap.push(format!("--overload-downstream-max-conn={max}"));
    }
    let namespace_env = json!({"name": "CONTOUR_NAMESPACE", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}});
    let extra_mounts: Vec<Value> =
        envoy.extra_volume_mounts.iter().flatten().filter_map(|m| serde_json::to_value(m).ok()).collect();
    let mut envoy_mounts = vec![
        json!({"name": "envoycert", "mountPath": "/certs", "readOnly": true}),
        json!({"name": "envoy-config", "mountPath": "/config", "readOnly": true}),
        json!({"name": "envoy-admin", "mountPath": "/admin"}),
    ];
    envoy_mounts.extend(extra_mounts.iter().cloned());
    let mut shutdown_mounts = vec![json!({"name": "envoy-admin", "mountPath": "/admin"})];
    shutdown_mounts.extend(extra_mounts);
    let mut ports = vec![json!({"name": "metrics", "containerPort": ENVOY_HEALTH_PORT, "protocol": "TCP"})];
    ports.extend(listener_ports(gateway).into_iter().map(|(port, protocol, kind)| {
        json!({"name": format!("{kind}-{port}"), "containerPort": envoy_port(settings, port), "protocol": protocol})
    }));
    let mut args = vec![
        "-c".to_string(),
        "/config/envoy.json".into(),
        "--service-cluster".into(),
        fleet,
        "--service-node".into(),
        "$(ENVOY_POD_NAME)".into(),
        "--log-level".into(),
        envoy.log_level.clone().filter(|l| !l.is_empty()).unwrap_or_else(|| "info".into()),
    ];
    if let Some(id) = envoy.base_id.filter(|id| *id > 0) {
        args.extend(["--base-id".into(), id.to_string()]);
    }
    let mut volumes = vec![
        json!({"name": "envoycert", "secret": {"secretName": certificate_name(&gw), "defaultMode": 420}}),
        json!({"name": "envoy-config", "emptyDir": {}}),
        json!({"name": "envoy-admin", "emptyDir": {}}),
    ];
    volumes.extend(envoy.extra_volumes.iter().flatten().filter_map(|v| serde_json::to_value(v).ok()));
    let mut pod = json!({
        "serviceAccountName": name,
        "automountServiceAccountToken": false,
        "terminationGracePeriodSeconds": 300,
        "securityContext": {
            "runAsUser": 65534,
            "runAsGroup": 65534,
            "runAsNonRoot": true,
            "fsGroup": 65534,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "initContainers": [{
            "name": "envoy-initconfig",
            "image": settings.contour_image,
            "imagePullPolicy": "IfNotPresent",
            "command": ["contour"],
            "args": bootstrap,
            "env": [namespace_env.clone()],
            "securityContext": hardened(true),
            "volumeMounts": [
                {"name": "envoycert", "mountPath": "/certs", "readOnly": true},
                {"name": "envoy-config", "mountPath": "/config"},
            ],
            "resources": init_resources.clone(),
        }],
        "containers": [
            {
                "name": "shutdown-manager",
                "image": settings.contour_image,
                "imagePullPolicy": "IfNotPresent",
                "command": ["contour"],
                "args": ["envoy", "shutdown-manager", format!("--serve-port={SHUTDOWN_MANAGER_PORT}"), "--ready-file=/admin/ok"],
                "lifecycle": {"preStop": {"exec": {"command": [
                    "contour", "envoy", "shutdown", "--admin-address=/admin/admin.sock", "--ready-file=/admin/ok",
                ]}}},
                "livenessProbe": {"httpGet": {"path": "/healthz", "port": SHUTDOWN_MANAGER_PORT}},
                "securityContext": hardened(true),
                "volumeMounts": shutdown_mounts,
                "resources": init_resources,
            },
            {
                "name": "envoy",
                "image": settings.envoy_image,
                "imagePullPolicy": "IfNotPresent",
                "command": ["envoy"],
                "args": args,
                "env": [
                    namespace_env,
                    {"name": "ENVOY_POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
                ],
                "ports": ports,
                "readinessProbe": {
                    "httpGet": {"path": "/ready", "port": ENVOY_HEALTH_PORT},
                    "initialDelaySeconds": 3,
                    "periodSeconds": 4,
                    "timeoutSeconds": 1,
                    "successThreshold": 1,
                    "failureThreshold": 3,
                },
                "lifecycle": {"preStop": {"httpGet": {"path": "/shutdown", "port": SHUTDOWN_MANAGER_PORT, "scheme": "HTTP"}}},
                "securityContext": hardened(false),
                "volumeMounts": envoy_mounts,
                "resources": envoy.resources.as_ref().and_then(|r| serde_json::to_value(r).ok()).unwrap_or_else(|| json!({})),
            },
        ],
        "volumes": volumes,
    });
    if let Controller::Shared { .. } = settings.controller {
        // Envoy binds the Gateway's own ports, 80 and 443 too, without root.
        pod["securityContext"]["sysctls"] = json!([{"name": "net.ipv4.ip_unprivileged_port_start", "value": "0"}]);
    }
    place(&mut pod, envoy.node_placement.as_ref());
    let template = json!({
        "metadata": {"labels": pod_labels, "annotations": pod_annotations},
        "spec": pod,
    });
    let mut body = json!({
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": metadata(gateway, &name, &workload_labels),
        "spec": {
            "revisionHistoryLimit": 10,
            "selector": {"matchLabels": selector},
            "template": template,
        },
    });
    if kind == "Deployment" {
        let deployment = envoy.deployment.clone().unwrap_or_default();
        let replicas = deployment.replicas.or(envoy.replicas).filter(|r| *r > 0).unwrap_or(2);
        let strategy = deployment
            .strategy
            .and_then(|s| serde_json::to_value(s).ok())
            .unwrap_or_else(|| json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "10%"}}));
        body["spec"]["replicas"] = json!(replicas);
        body["spec"]["strategy"] = strategy;
        // Spread over nodes where possible, as upstream.
        body["spec"]["template"]["spec"]["affinity"] = json!({"podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{
                "weight": 100,
                "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": name}}, "topologyKey": "kubernetes.io/hostname"},
            }],
        }});
    } else {
        let strategy = envoy
            .daemon_set
            .and_then(|d| d.update_strategy)
            .and_then(|s| serde_json::to_value(s).ok())
            .unwrap_or_else(|| json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "10%"}}));
        body["spec"]["updateStrategy"] = strategy;
    }
    body
}

/// The labels of a workload of the Gateway `gateway`: upstream's `app.kubernetes.io` ones added.
fn workload_labels(labels: &BTreeMap<String, String>, gateway: &str) -> BTreeMap<String, String> {
    let mut out = labels.clone();
    out.extend([
        ("app.kubernetes.io/instance".to_string(), gateway.to_string()),
        ("app.kubernetes.io/name".into(), "contour".into()),
        ("app.kubernetes.io/component".into(), "ingress-controller".into()),
    ]);
    out
}

/// A ContourDeployment's `nodePlacement` on a pod spec: its node selector and tolerations.
fn place(pod: &mut Value, placement: Option<&api::contourdeployment::NodePlacement>) {
    let Some(p) = placement else { return };
    if let Some(s) = &p.node_selector {
        pod["nodeSelector"] = json!(s);
    }
    if let Some(t) = &p.tolerations {
        pod["tolerations"] = serde_json::to_value(t).unwrap_or_default();
    }
}

/// A container that cannot gain privileges and has no capabilities (as deploy/envoy's), with a
/// read-only root file system where the program writes nowhere but its volumes.
fn hardened(read_only_root: bool) -> Value {
    let mut context = json!({"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}});
    if read_only_root {
        context["readOnlyRootFilesystem"] = json!(true);
    }
    context
}

fn service(
    gateway: &Gateway,
    spec: Option<&ContourDeploymentSpec>,
    settings: &Settings,
    labels: &BTreeMap<String, String>,
) -> Value {
    let gw = gateway.metadata.name.clone().unwrap_or_default();
    let name = fleet_name(&gw);
    let publishing = spec.and_then(|s| s.envoy.as_ref()).and_then(|e| e.network_publishing.clone()).unwrap_or_default();
    let type_ = match publishing.type_.as_deref() {
        // Every address it asks for is a ClusterIP: nothing outside the cluster reaches it.
        _ if crate::gateway::cluster_only(gateway) => "ClusterIP",
        Some("NodePortService") => "NodePort",
        Some("ClusterIPService") => "ClusterIP",
        _ => "LoadBalancer",
    };
    let mut ports: Vec<Value> = listener_ports(gateway)
        .into_iter()
        .map(|(port, protocol, kind)| {
            let mut p =
                json!({"name": format!("{kind}-{port}"), "port": port, "protocol": protocol, "targetPort": envoy_port(settings, port)});
            if type_ == "NodePort" {
                // Upstream's: the node port is the listener port.
                p["nodePort"] = json!(port);
            }
            p
        })
        .collect();
    if ports.is_empty() {
        // A Service needs a port; a Gateway without a usable listener still gets its Service.
        ports.push(json!({"name": "none", "port": 1, "protocol": "TCP", "targetPort": 1}));
    }
    let mut annotations = common_annotations(gateway);
    annotations.extend(publishing.service_annotations.clone().unwrap_or_default());
    let mut meta = metadata(gateway, &name, labels);
    meta["annotations"] = json!(annotations);
    let mut body = json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta,
        "spec": {
            "type": type_,
            "selector": {"app": name},
            "sessionAffinity": "None",
            "ipFamilyPolicy": publishing.ip_family_policy.clone().filter(|p| !p.is_empty()).unwrap_or_else(|| "SingleStack".into()),
            "ports": ports,
        },
    });
    if type_ != "ClusterIP" {
        body["spec"]["externalTrafficPolicy"] = json!(
            publishing.external_traffic_policy.clone().filter(|p| !p.is_empty()).unwrap_or_else(|| "Local".into())
        );
    }
    if let Some(address) = gateway
        .address_requests()
        .iter()
        .find(|r| r.unscoped())
        .filter(|r| r.type_ == "IPAddress" || r.type_ == "Hostname")
        .and_then(|r| r.value)
        .filter(|_| type_ == "LoadBalancer")
    {
        body["spec"]["loadBalancerIP"] = json!(address);
    }
    // A ClusterIP asked for by value (the API server allocates one otherwise). It is fixed once
    // the Service exists: another value then goes unmet, as the Gateway's status says.
    if let Some(ip) = crate::gateway::requested_cluster_ip(gateway) {
        body["spec"]["clusterIP"] = json!(ip.to_string());
    }
    body
}

#[cfg(test)]
mod tests;
