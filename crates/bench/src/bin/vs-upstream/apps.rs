//! The benchmark's objects: per app a Service, an EndpointSlice and a route (a root HTTPProxy,
//! or an HTTPRoute of the one Gateway), and how to tell they are all accepted.

use std::net::IpAddr;

use kube::api::{Api, DynamicObject, PostParams};
use kube::discovery::ApiResource;
use serde_json::{Value, json};

/// The namespace of every object.
pub const NAMESPACE: &str = "default";
/// The Gateway the HTTPRoutes attach to.
pub const GATEWAY: &str = "bench";

/// Which API the routes are written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Routes {
    /// A root HTTPProxy per app.
    Httpproxy,
    /// An HTTPRoute per app, on one Gateway's HTTP listener.
    Httproute,
}

impl Routes {
    /// The kind, for the tables.
    pub fn kind(self) -> &'static str {
        match self {
            Routes::Httpproxy => "HTTPProxy",
            Routes::Httproute => "HTTPRoute",
        }
    }

    /// What "accepted" means for the kind, for the tables.
    pub fn accepted(self) -> &'static str {
        match self {
            Routes::Httpproxy => "every HTTPProxy status valid",
            Routes::Httproute => "every HTTPRoute Accepted",
        }
    }

    /// The route of app `name`.
    pub fn route(self, name: &str) -> Value {
        match self {
            Routes::Httpproxy => json!({"apiVersion": "projectcontour.io/v1", "kind": "HTTPProxy",
                "metadata": {"name": name, "namespace": NAMESPACE},
                "spec": {"virtualhost": {"fqdn": host(name)}, "routes": [{"services": [{"name": name, "port": 80}]}]}}),
            Routes::Httproute => json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
                "metadata": {"name": name, "namespace": NAMESPACE},
                "spec": {"parentRefs": [{"name": GATEWAY}], "hostnames": [host(name)],
                    "rules": [{"backendRefs": [{"name": name, "port": 80}]}]}}),
        }
    }

    /// A merge patch narrowing app `name`'s route to `/v2` (so `/` answers 404).
    pub fn narrowed(self, name: &str) -> Value {
        match self {
            Routes::Httpproxy => {
                json!({"spec": {"routes": [{"conditions": [{"prefix": "/v2"}], "services": [{"name": name, "port": 80}]}]}})
            }
            Routes::Httproute => json!({"spec": {"rules": [{
                "matches": [{"path": {"type": "PathPrefix", "value": "/v2"}}],
                "backendRefs": [{"name": name, "port": 80}]}]}}),
        }
    }

    /// Whether a route's status says it is served.
    fn is_accepted(self, route: &DynamicObject) -> bool {
        match self {
            Routes::Httpproxy => route.data["status"]["currentStatus"] == "valid",
            Routes::Httproute => route.data["status"]["parents"].as_array().is_some_and(|parents| {
                parents.iter().any(|p| {
                    p["conditions"]
                        .as_array()
                        .is_some_and(|c| c.iter().any(|c| c["type"] == "Accepted" && c["status"] == "True"))
                })
            }),
        }
    }
}

/// The Service, EndpointSlice and route of app `name`, sending to `backend`.
///
/// The Service is headless: no controller reads a Service's cluster IP, and kube-apiserver 1.36
/// allocates one by listing every IPAddress object it holds, so at tens of thousands of Services
/// each create costs the API server more CPU than the controllers' work the run measures, on the
/// cores they share.
pub fn app(routes: Routes, name: &str, backend: IpAddr) -> [Value; 3] {
    [
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"clusterIP": "None", "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}}),
        endpoint_slice(name, backend),
        routes.route(name),
    ]
}

pub fn endpoint_slice(name: &str, backend: IpAddr) -> Value {
    json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"kubernetes.io/service-name": name}},
        "addressType": "IPv4", "ports": [{"name": "http", "port": 8080}],
        "endpoints": [{"addresses": [backend.to_string()], "conditions": {"ready": true}}]})
}

/// A GatewayClass of `controller` and the Gateway `bench` of it with one HTTP listener on `port`.
pub fn gateway(controller: &str, port: u16) -> [Value; 2] {
    [
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "GatewayClass",
            "metadata": {"name": GATEWAY}, "spec": {"controllerName": controller}}),
        json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
            "metadata": {"name": GATEWAY, "namespace": NAMESPACE},
            "spec": {"gatewayClassName": GATEWAY, "listeners": [{"name": "http", "protocol": "HTTP", "port": port,
                "allowedRoutes": {"namespaces": {"from": "Same"}}}]}}),
    ]
}

pub fn host(name: &str) -> String {
    format!("{name}.bench.test")
}

pub fn resource(object: &Value) -> ApiResource {
    let (api_version, kind) = (object["apiVersion"].as_str().unwrap_or(""), object["kind"].as_str().unwrap_or(""));
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let plural = match kind {
        "Service" => "services",
        "EndpointSlice" => "endpointslices",
        "HTTPRoute" => "httproutes",
        "Gateway" => "gateways",
        "GatewayClass" => "gatewayclasses",
        "Namespace" => "namespaces",
        _ => "httpproxies",
    };
    ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: api_version.into(),
        kind: kind.into(),
        plural: plural.into(),
    }
}

/// Creates an object (cluster-scoped when it has no namespace).
pub async fn create(client: &kube::Client, object: &Value) -> anyhow::Result<()> {
    let ar = resource(object);
    let api: Api<DynamicObject> = match object["metadata"]["namespace"].as_str() {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
        None => Api::all_with(client.clone(), &ar),
    };
    let o: DynamicObject = serde_json::from_value(object.clone())?;
    api.create(&PostParams::default(), &o).await?;
    Ok(())
}

/// Returns once `n` routes of the kind are accepted. It follows a watch (one list, then each
/// status update as it comes) instead of listing the routes again and again: at 50k routes a
/// list every 250 ms took the CPU the controller and Envoy under measure need.
pub async fn until_accepted(routes: Routes, api: &Api<DynamicObject>, n: usize) {
    use futures::StreamExt;
    use kube::runtime::watcher;
    let mut accepted = std::collections::HashSet::new();
    let mut events = watcher::watcher(api.clone(), watcher::Config::default().page_size(1000)).boxed();
    while let Some(event) = events.next().await {
        match event {
            Ok(watcher::Event::Apply(route) | watcher::Event::InitApply(route)) => {
                let name = route.metadata.name.clone().unwrap_or_default();
                if routes.is_accepted(&route) {
                    accepted.insert(name);
                } else {
                    accepted.remove(&name);
                }
            }
            Ok(watcher::Event::Delete(route)) => {
                accepted.remove(route.metadata.name.as_deref().unwrap_or_default());
            }
            Ok(watcher::Event::Init) => accepted.clear(),
            Ok(watcher::Event::InitDone) => {}
            // The watch starts again from a list.
            Err(_) => tokio::time::sleep(std::time::Duration::from_millis(250)).await,
        }
        if accepted.len() >= n {
            return;
        }
    }
}
