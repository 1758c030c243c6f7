//! Cluster mode's writes to the API server: create-or-update of one object, a Gateway's
//! certificates, deletes (by name, or only when the owner labels say the object is ours), and the
//! teardown of everything a Gateway's fleet and controller had.

use api::contourdeployment::ContourDeploymentSpec;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{DeleteParams, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use objects::types::Gateway;
use serde_json::Value;

use super::{FIELD_MANAGER, kube_err};
use crate::cluster;

/// Creates one object, or updates it when it differs from what is asked (create and update, not
/// server-side apply: upstream's provisioner ClusterRole grants no `patch`).
pub(super) async fn apply(client: &kube::Client, body: &Value) -> Result<(), crate::Error> {
    let meta = &body["metadata"];
    let (kind, name) = (body["kind"].as_str().unwrap_or_default(), meta["name"].as_str().unwrap_or_default());
    let namespace = meta["namespace"].as_str();
    let what = format!("{kind} {}/{name}", namespace.unwrap_or_default());
    let api = dynamic(client, namespace, body["apiVersion"].as_str().unwrap_or_default(), kind);
    let params = PostParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
    let serde_err = |e| kube_err(what.clone())(kube::Error::SerdeError(e));
    match api.get_opt(name).await.map_err(kube_err(what.clone()))? {
        None => {
            let object: DynamicObject = serde_json::from_value(body.clone()).map_err(serde_err)?;
            api.create(&params, &object).await.map_err(kube_err(what.clone()))?;
        }
        Some(current) => {
            let current = serde_json::to_value(&current).map_err(serde_err)?;
            if cluster::apply::contains(&current, body) {
                return Ok(());
            }
            let desired = cluster::apply::updated(&current, body);
            let object: DynamicObject = serde_json::from_value(desired).map_err(serde_err)?;
            api.replace(name, &params, &object).await.map_err(kube_err(what.clone()))?;
        }
    }
    Ok(())
}

/// Makes the Gateway's controller and fleet certificates (a CA of its own) unless both exist and
/// were made for this image's tag (upstream's rule: an upgrade makes new ones); a reconcile
/// never replaces them otherwise.
pub(super) async fn ensure_certificates(
    client: &kube::Client,
    gw: &Gateway,
    spec: Option<&ContourDeploymentSpec>,
    contour_image: &str,
) -> Result<(), crate::Error> {
    let namespace = gw.metadata.namespace.clone().unwrap_or_default();
    let gateway = gw.metadata.name.clone().unwrap_or_default();
    let names = cluster::contour::Names::of(&namespace, &gateway);
    let api: kube::Api<Secret> = kube::Api::namespaced(client.clone(), &namespace);
    let tag = cluster::contour::image_tag(contour_image);
    let mut current = 0;
    for name in [&names.controller_certificate, &cluster::certificate_name(&gateway)] {
        let found = api.get_opt(name).await.map_err(kube_err(format!("Secret {namespace}/{name}")))?;
        let version = found
            .as_ref()
            .and_then(|s| s.metadata.annotations.as_ref()?.get(cluster::contour::GENERATED_BY_VERSION).cloned());
        if version.as_deref() == Some(tag) {
            current += 1;
        }
    }
    if current == 2 {
        return Ok(());
    }
    let secrets = cluster::contour::certificate_secrets(gw, spec, contour_image).map_err(|e| crate::Error::Io {
        what: format!("certificates of Gateway {namespace}/{gateway}"),
        source: std::io::Error::other(e),
    })?;
    for secret in &secrets {
        apply(client, secret).await?;
    }
    tracing::info!(gateway = %format!("{namespace}/{gateway}"), "xDS certificates made");
    Ok(())
}

/// Deletes one object if it exists (`namespace` `None` for a cluster-scoped one).
pub(super) async fn delete(client: &kube::Client, namespace: Option<&str>, api_version: &str, kind: &str, name: &str) {
    match dynamic(client, namespace, api_version, kind).delete(name, &DeleteParams::background()).await {
        Ok(_) => tracing::info!(kind, namespace, name, "deleted"),
        Err(kube::Error::Api(e)) if e.code == 404 => {}
        Err(e) => tracing::warn!(kind, namespace, name, error = %e, "deleting"),
    }
}

pub(super) fn dynamic(
    client: &kube::Client,
    namespace: Option<&str>,
    api_version: &str,
    kind: &str,
) -> kube::Api<DynamicObject> {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind));
    match namespace {
        Some(namespace) => kube::Api::namespaced_with(client.clone(), namespace, &resource),
        None => kube::Api::all_with(client.clone(), &resource),
    }
}

/// Deletes one object if it exists and carries the owner labels of Gateway `gateway`: an object
/// of that name that this provisioner did not make is left alone.
async fn delete_owned(
    client: &kube::Client,
    namespace: Option<&str>,
    (api_version, kind, name): (&str, &str, &str),
    gateway: &str,
) {
    let api = dynamic(client, namespace, api_version, kind);
    let Ok(Some(found)) = api.get_opt(name).await else { return };
    let labels = found.metadata.labels.unwrap_or_default();
    let ours = labels.get(cluster::OWNING_GATEWAY_LABEL).is_some_and(|g| g == gateway)
        && labels.get("app.kubernetes.io/managed-by").is_some_and(|m| m == cluster::MANAGED_BY_VALUE);
    if ours {
        delete(client, namespace, api_version, kind, name).await;
    }
}

/// Removes every object of a Gateway's fleet and controller (`namespace/name`): what was applied
/// for it, and by name (when it carries the Gateway's owner labels) what a provisioner before a
/// restart may have made. The Gateway's namespaced objects are owned by it too, for the cluster's
/// garbage collector; cluster-scoped ones and Roles in watched namespaces are not, and go only
/// here.
pub(super) async fn cluster_teardown(client: &kube::Client, key: &str, applied: &[Value], per_gateway: bool) {
    let (namespace, gateway) = key.split_once('/').unwrap_or_default();
    for body in applied.iter().rev() {
        let meta = &body["metadata"];
        let (api_version, kind) =
            (body["apiVersion"].as_str().unwrap_or_default(), body["kind"].as_str().unwrap_or_default());
        delete(client, meta["namespace"].as_str(), api_version, kind, meta["name"].as_str().unwrap_or_default()).await;
    }
    let fleet = cluster::fleet_name(gateway);
    let here = Some(namespace);
    for object in [
        ("apps/v1", "DaemonSet", fleet.as_str()),
        ("apps/v1", "Deployment", &fleet),
        ("v1", "Service", &fleet),
        ("v1", "ServiceAccount", &fleet),
        ("v1", "Secret", &cluster::certificate_name(gateway)),
    ] {
        delete_owned(client, here, object, gateway).await;
    }
    if per_gateway {
        let names = cluster::contour::Names::of(namespace, gateway);
        let rbac = "rbac.authorization.k8s.io/v1";
        for object in [
            ("apps/v1", "Deployment", names.controller.as_str()),
            ("v1", "Service", &names.controller),
            ("v1", "ServiceAccount", &names.controller),
            ("v1", "Secret", &names.controller_certificate),
            ("projectcontour.io/v1alpha1", "ContourConfiguration", &names.configuration),
            (rbac, "RoleBinding", &names.role_binding),
            (rbac, "Role", &names.role),
        ] {
            delete_owned(client, here, object, gateway).await;
        }
        delete_owned(client, None, (rbac, "ClusterRoleBinding", &names.cluster_role), gateway).await;
        delete_owned(client, None, (rbac, "ClusterRole", &names.cluster_role), gateway).await;
        // Roles in watched namespaces, found by their labels and name.
        let selector = format!(
            "{}={gateway},{}={namespace}",
            cluster::OWNING_GATEWAY_LABEL,
            cluster::contour::OWNING_GATEWAY_NAMESPACE_LABEL
        );
        for kind in ["RoleBinding", "Role"] {
            let list =
                dynamic(client, None, rbac, kind).list(&kube::api::ListParams::default().labels(&selector)).await;
            for o in list.map(|l| l.items).unwrap_or_default() {
                if o.metadata.name.as_deref() == Some(names.namespace_role.as_str()) {
                    delete(client, o.metadata.namespace.as_deref(), rbac, kind, &names.namespace_role).await;
                }
            }
        }
    }
    tracing::info!(gateway = %key, "deprovisioned");
}
