//! The per-Gateway controller (cluster mode without an installation's contour-serve): what
//! upstream's provisioner makes for each Gateway besides its Envoy fleet, with upstream's names,
//! so that upstream's provisioner-only install works with our image. A `contour serve` of the
//! Gateway's own in its namespace reads the ContourConfiguration `contourconfig-<gw>` (the
//! ContourDeployment's `runtimeSettings` with the Gateway as `gateway.gatewayRef`), serves the
//! Gateway alone to its Envoys over mTLS (Secrets `contourcert-<gw>` and `envoycert-<gw>`, from a
//! CA of the Gateway's own) and holds the Lease `leader-elect-<gw>`.
//!
//! RBAC as upstream's: the controller's ServiceAccount `contour-<gw>` gets a ClusterRole
//! `contour-<ns>-<gw>` for everything it reads, or, when the ContourDeployment names
//! `contour.watchNamespaces`, for cluster-scoped kinds only plus a Role
//! `contour-resources-<ns>-<gw>` in each watched namespace (the Gateway's own always among them).
//! Cluster-scoped objects and Roles in other namespaces carry no owner reference (a namespaced
//! owner cannot own them); the provisioner deletes them by name.

use std::collections::BTreeMap;

use api::contourdeployment::ContourDeploymentSpec;
use objects::types::Gateway;
use serde_json::{Value, json};

use super::{common_labels, metadata};

/// The label naming the Gateway's namespace on the objects it cannot own (cluster-scoped ones
/// and Roles in other namespaces), so a provisioner that restarts finds them after the Gateway
/// has gone.
pub const OWNING_GATEWAY_NAMESPACE_LABEL: &str = "projectcontour.io/owning-gateway-namespace";
/// The annotation on the certificate Secrets naming the image tag that made them (upstream's):
/// another tag (an upgrade) makes new ones.
pub const GENERATED_BY_VERSION: &str = "projectcontour.io/generated-by-version";

/// The controller's xDS port, in its pod and on its Service.
pub const XDS_PORT: u16 = 8001;
/// Where the controller serves `/metrics` and `/healthz`.
const METRICS_PORT: u16 = 8000;

/// The names of a Gateway's controller objects: upstream's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Names {
    /// The Deployment, its Service and its ServiceAccount: `contour-<gw>`.
    pub controller: String,
    /// The ContourConfiguration: `contourconfig-<gw>`.
    pub configuration: String,
    /// The Lease: `leader-elect-<gw>`.
    pub lease: String,
    /// The serving certificate Secret: `contourcert-<gw>`.
    pub controller_certificate: String,
    /// The ClusterRole and its binding: `contour-<ns>-<gw>`.
    pub cluster_role: String,
    /// The Role for Events and Leases in the Gateway's namespace: `contour-<gw>`.
    pub role: String,
    /// Its binding: `contour-rolebinding-<gw>`.
    pub role_binding: String,
    /// The Role (and binding) in each watched namespace: `contour-resources-<ns>-<gw>`.
    pub namespace_role: String,
}

impl Names {
    /// The names for Gateway `gateway` in `namespace`.
    pub fn of(namespace: &str, gateway: &str) -> Self {
        Self {
            controller: format!("contour-{gateway}"),
            configuration: format!("contourconfig-{gateway}"),
            lease: format!("leader-elect-{gateway}"),
            controller_certificate: format!("contourcert-{gateway}"),
            cluster_role: format!("contour-{namespace}-{gateway}"),
            role: format!("contour-{gateway}"),
            role_binding: format!("contour-rolebinding-{gateway}"),
            namespace_role: format!("contour-resources-{namespace}-{gateway}"),
        }
    }
}

/// The namespaces the Gateway's controller watches: `None` for all, else the ContourDeployment's
/// `contour.watchNamespaces` with the Gateway's own namespace added (upstream's rule).
pub fn watched_namespaces(gateway: &Gateway, spec: Option<&ContourDeploymentSpec>) -> Option<Vec<String>> {
    let listed = spec.and_then(|s| s.contour.as_ref()).and_then(|c| c.watch_namespaces.clone())?;
    if listed.is_empty() {
        return None;
    }
    let own = gateway.metadata.namespace.clone().unwrap_or_default();
    let mut out = listed;
    if !out.contains(&own) {
        out.push(own);
    }
    Some(out)
}

/// The features (kinds) the ContourDeployment turns off: `contour.disabledFeatures`.
fn disabled_features(spec: Option<&ContourDeploymentSpec>) -> Vec<String> {
    spec.and_then(|s| s.contour.as_ref())
        .and_then(|c| c.disabled_features.clone())
        .unwrap_or_default()
        .into_iter()
        .map(|f| f.0)
        .collect()
}

fn rule(group: &str, verbs: &[&str], resources: &[&str]) -> Value {
    json!({"apiGroups": [group], "verbs": verbs, "resources": resources})
}

/// Upstream's rules for the namespaced kinds, without the disabled features' kinds.
fn namespaced_rules(disabled: &[String]) -> Vec<Value> {
    let keep = |resources: &[&'static str]| -> Vec<&'static str> {
        resources
            .iter()
            .copied()
            .filter(|r| !disabled.iter().any(|d| r.split('/').next() == Some(d.as_str())))
            .collect()
    };
    let read = ["get", "list", "watch"];
    let write = ["create", "get", "update"];
    vec![
        rule("", &read, &["secrets", "services", "configmaps"]),
        rule("discovery.k8s.io", &read, &["endpointslices"]),
        rule(
            "gateway.networking.k8s.io",
            &read,
            &keep(&[
                "gateways",
                "httproutes",
                "tlsroutes",
                "grpcroutes",
                "tcproutes",
                "referencegrants",
                "backendtlspolicies",
            ]),
        ),
        rule(
            "gateway.networking.k8s.io",
            &["update"],
            &keep(&[
                "gateways/status",
                "httproutes/status",
                "tlsroutes/status",
                "grpcroutes/status",
                "tcproutes/status",
                "backendtlspolicies/status",
            ]),
        ),
        rule("networking.k8s.io", &read, &["ingresses"]),
        rule("networking.k8s.io", &write, &["ingresses/status"]),
        rule(
            "projectcontour.io",
            &read,
            &keep(&["httpproxies", "tlscertificatedelegations", "extensionservices", "contourconfigurations"]),
        ),
        rule(
            "projectcontour.io",
            &write,
            &keep(&["httpproxies/status", "extensionservices/status", "contourconfigurations/status"]),
        ),
    ]
}

/// Upstream's rules for the cluster-scoped kinds.
fn cluster_rules() -> Vec<Value> {
    vec![
        rule("gateway.networking.k8s.io", &["get", "list", "watch"], &["gatewayclasses"]),
        rule("gateway.networking.k8s.io", &["update"], &["gatewayclasses/status"]),
        rule("", &["get", "list", "watch"], &["namespaces"]),
        // Cluster-scoped: a namespace's Role cannot grant them.
        rule("certificates.k8s.io", &["get", "list", "watch"], &["clustertrustbundles"]),
    ]
}

/// Labels for objects outside the Gateway's namespace or scope, which find their way back to it
/// by these (no owner reference).
fn unowned_metadata(
    name: &str,
    namespace: Option<&str>,
    gateway: &Gateway,
    labels: &BTreeMap<String, String>,
) -> Value {
    let mut meta = json!({"name": name, "labels": labels});
    meta["labels"][OWNING_GATEWAY_NAMESPACE_LABEL] = json!(gateway.metadata.namespace);
    if let Some(namespace) = namespace {
        meta["namespace"] = json!(namespace);
    }
    meta
}

fn subject(names: &Names, namespace: &str) -> Value {
    json!([{"kind": "ServiceAccount", "name": names.controller, "namespace": namespace}])
}

/// The controller's objects for a Gateway, in the order they are applied: its ServiceAccount,
/// RBAC, ContourConfiguration, Deployment and Service. Its certificates are made apart (once,
/// never replaced by a reconcile).
pub fn objects(gateway: &Gateway, spec: Option<&ContourDeploymentSpec>, contour_image: &str) -> Vec<Value> {
    let gw = gateway.metadata.name.clone().unwrap_or_default();
    let namespace = gateway.metadata.namespace.clone().unwrap_or_default();
    let names = Names::of(&namespace, &gw);
    let labels = common_labels(gateway, spec);
    let disabled = disabled_features(spec);
    let watched = watched_namespaces(gateway, spec);
    let mut out = vec![json!({
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": metadata(gateway, &names.controller, &labels),
    })];
    let mut cluster_role_rules = cluster_rules();
    if watched.is_none() {
        cluster_role_rules.extend(namespaced_rules(&disabled));
    }
    out.push(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": unowned_metadata(&names.cluster_role, None, gateway, &labels),
        "rules": cluster_role_rules,
    }));
    out.push(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": unowned_metadata(&names.cluster_role, None, gateway, &labels),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": names.cluster_role},
        "subjects": subject(&names, &namespace),
    }));
    for watched_namespace in watched.iter().flatten() {
        out.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": unowned_metadata(&names.namespace_role, Some(watched_namespace), gateway, &labels),
            "rules": namespaced_rules(&disabled),
        }));
        out.push(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": unowned_metadata(&names.namespace_role, Some(watched_namespace), gateway, &labels),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": names.namespace_role},
            "subjects": subject(&names, &namespace),
        }));
    }
    out.push(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": metadata(gateway, &names.role, &labels),
        "rules": [
            rule("", &["create", "get", "update"], &["events"]),
            rule("coordination.k8s.io", &["create", "get", "update"], &["leases"]),
        ],
    }));
    out.push(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": metadata(gateway, &names.role_binding, &labels),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": names.role},
        "subjects": subject(&names, &namespace),
    }));
    out.push(configuration(gateway, spec, &names, &labels));
    out.push(deployment(gateway, spec, contour_image, &names, &labels, watched.as_deref(), &disabled));
    out.push(json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(gateway, &names.controller, &labels),
        "spec": {
            "type": "ClusterIP",
            "selector": {"app": names.controller},
            "ports": [{"name": "xds", "port": XDS_PORT, "protocol": "TCP", "targetPort": XDS_PORT}],
        },
    }));
    out
}

/// The ContourConfiguration: `runtimeSettings` as given, with this Gateway as the one it serves
/// and its Envoy Service as the one whose address it publishes.
fn configuration(
    gateway: &Gateway,
    spec: Option<&ContourDeploymentSpec>,
    names: &Names,
    labels: &BTreeMap<String, String>,
) -> Value {
    let gw = gateway.metadata.name.clone().unwrap_or_default();
    let namespace = gateway.metadata.namespace.clone().unwrap_or_default();
    let mut settings = spec
        .and_then(|s| s.runtime_settings.as_ref())
        .and_then(|r| serde_json::to_value(r).ok())
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}));
    settings["gateway"] = json!({"gatewayRef": {"namespace": namespace, "name": gw}});
    if !settings["envoy"].is_object() {
        settings["envoy"] = json!({});
    }
    settings["envoy"]["service"] = json!({"namespace": namespace, "name": super::fleet_name(&gw)});
    json!({
        "apiVersion": "projectcontour.io/v1alpha1",
        "kind": "ContourConfiguration",
        "metadata": metadata(gateway, &names.configuration, labels),
        "spec": settings,
    })
}

fn deployment(
    gateway: &Gateway,
    spec: Option<&ContourDeploymentSpec>,
    image: &str,
    names: &Names,
    labels: &BTreeMap<String, String>,
    watched: Option<&[String]>,
    disabled: &[String],
) -> Value {
    let gw = gateway.metadata.name.clone().unwrap_or_default();
    let settings = spec.and_then(|s| s.contour.clone()).unwrap_or_default();
    let mut args = vec![
        "serve".to_string(),
        "--incluster".into(),
        "--xds-address=0.0.0.0".into(),
        format!("--xds-port={XDS_PORT}"),
        "--contour-cafile=/certs/ca.crt".into(),
        "--contour-cert-file=/certs/tls.crt".into(),
        "--contour-key-file=/certs/tls.key".into(),
        format!("--contour-config-name={}", names.configuration),
        format!("--leader-election-resource-name={}", names.lease),
        format!("--envoy-service-name={}", super::fleet_name(&gw)),
        format!("--kubernetes-debug={}", settings.kubernetes_log_level.unwrap_or(0)),
    ];
    if settings.log_level.as_deref() == Some("debug") {
        args.push("--debug".into());
    }
    if let Some(watched) = watched {
        args.push(format!("--watch-namespaces={}", watched.join(",")));
    }
    args.extend(disabled.iter().map(|f| format!("--disable-feature={f}")));
    let workload_labels = super::workload_labels(labels, &gw);
    let mut pod_labels = workload_labels.clone();
    pod_labels.insert("app".into(), names.controller.clone());
    let mut pod_annotations = settings.pod_annotations.clone().unwrap_or_default();
    pod_annotations.extend(super::common_annotations(gateway));
    let field = |path: &str| json!({"fieldRef": {"apiVersion": "v1", "fieldPath": path}});
    let mut pod = json!({
        "serviceAccountName": names.controller,
        "terminationGracePeriodSeconds": 30,
        "securityContext": {"runAsUser": 65534, "runAsGroup": 65534, "runAsNonRoot": true},
        "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
            "weight": 100,
            "podAffinityTerm": {
                "labelSelector": {"matchLabels": {"app": names.controller}},
                "topologyKey": "kubernetes.io/hostname",
            },
        }]}},
        "containers": [{
            "name": "contour",
            "image": image,
            "imagePullPolicy": "IfNotPresent",
            "command": ["contour"],
            "args": args,
            "env": [
                {"name": "CONTOUR_NAMESPACE", "valueFrom": field("metadata.namespace")},
                {"name": "POD_NAME", "valueFrom": field("metadata.name")},
            ],
            "ports": [
                {"name": "xds", "containerPort": XDS_PORT, "protocol": "TCP"},
                {"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"},
            ],
            "livenessProbe": {"httpGet": {"path": "/healthz", "port": METRICS_PORT}},
            "readinessProbe": {"tcpSocket": {"port": XDS_PORT}, "periodSeconds": 10},
            "securityContext": super::hardened(true),
            "volumeMounts": [{"name": "contourcert", "mountPath": "/certs", "readOnly": true}],
            "resources": settings.resources.as_ref().and_then(|r| serde_json::to_value(r).ok()).unwrap_or_else(|| json!({})),
        }],
        "volumes": [{"name": "contourcert", "secret": {"secretName": names.controller_certificate, "defaultMode": 420}}],
    });
    super::place(&mut pod, settings.node_placement.as_ref());
    let deployment = settings.deployment.clone().unwrap_or_default();
    let replicas = deployment.replicas.or(settings.replicas).filter(|r| *r > 0).unwrap_or(2);
    let mut body = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata(gateway, &names.controller, &workload_labels),
        "spec": {
            "replicas": replicas,
            "revisionHistoryLimit": 10,
            "selector": {"matchLabels": {"app": names.controller}},
            "template": {"metadata": {"labels": pod_labels, "annotations": pod_annotations}, "spec": pod},
        },
    });
    if let Some(strategy) = deployment.strategy.and_then(|s| serde_json::to_value(s).ok()) {
        body["spec"]["strategy"] = strategy;
    }
    body
}

/// The certificate Secrets of a Gateway's controller and fleet, `contourcert-<gw>` and
/// `envoycert-<gw>`, from a new CA of the Gateway's own (upstream's compact layout: `ca.crt`,
/// `tls.crt`, `tls.key`), labelled and owned like the rest, and annotated with the tag of the
/// image that serves them: as upstream, an upgrade makes new ones.
pub fn certificate_secrets(
    gateway: &Gateway,
    spec: Option<&ContourDeploymentSpec>,
    contour_image: &str,
) -> Result<Vec<Value>, certs::Error> {
    let gw = gateway.metadata.name.clone().unwrap_or_default();
    let namespace = gateway.metadata.namespace.clone().unwrap_or_default();
    let generated = certs::generate(&namespace, 365)?;
    let labels = common_labels(gateway, spec);
    let mut out = certs::secrets(&generated, certs::SecretsFormat::Compact, &namespace, &format!("-{gw}"), false);
    for secret in &mut out {
        let name = secret["metadata"]["name"].as_str().unwrap_or_default().to_string();
        secret["metadata"] = metadata(gateway, &name, &labels);
        secret["metadata"]["annotations"][GENERATED_BY_VERSION] = json!(image_tag(contour_image));
    }
    Ok(out)
}

/// The tag of an image reference (`""` without one), as upstream compares it.
pub fn image_tag(image: &str) -> &str {
    let name = image.split_once('@').map_or(image, |(name, _)| name);
    name.rsplit_once(':').filter(|(_, tag)| !tag.contains('/')).map_or("", |(_, tag)| tag)
}

#[cfg(test)]
mod tests;
