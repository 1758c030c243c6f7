//! The cluster's load balancer, as a cloud's would publish it: every `LoadBalancer` Service of no
//! `loadBalancerClass` (others have a controller of their own) gets its cluster IP as its load-balancer address (`status.loadBalancer.ingress`), which the runner
//! already serves on every port from the host and from pods. A Service that asks for a
//! `loadBalancerIP` of its own still gets its cluster IP (there is no pool of outside addresses
//! here). Controllers that publish a Gateway's or an Ingress's address from its Service read it
//! there.

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::Service;
use kube::api::{Patch, PatchParams};
use kube::runtime::{WatchStreamExt as _, watcher};
use serde_json::json;

/// The address `service` should publish, when it is a `LoadBalancer` Service with a cluster IP
/// and publishes another (or none).
fn wanted(service: &Service) -> Option<String> {
    let spec = service.spec.as_ref()?;
    if spec.type_.as_deref() != Some("LoadBalancer") || spec.load_balancer_class.is_some() {
        return None;
    }
    let ip = spec.cluster_ip.clone().filter(|ip| ip.parse::<std::net::Ipv4Addr>().is_ok())?;
    let published = service
        .status
        .as_ref()
        .and_then(|s| s.load_balancer.as_ref())
        .and_then(|lb| lb.ingress.as_ref())
        .and_then(|i| i.first())
        .and_then(|i| i.ip.clone());
    (published.as_deref() != Some(ip.as_str())).then_some(ip)
}

/// Publishes the address of every `LoadBalancer` Service until the process ends.
pub async fn publish(client: kube::Client) {
    let api = kube::Api::<Service>::all(client.clone());
    let mut events = watcher::watcher(api, watcher::Config::default()).default_backoff().boxed();
    while let Some(event) = events.next().await {
        let service = match event {
            Ok(watcher::Event::Apply(s) | watcher::Event::InitApply(s)) => s,
            Ok(_) => continue,
            Err(e) => {
                tracing::warn!(error = %e, "Service watch (load balancer)");
                continue;
            }
        };
        let Some(ip) = wanted(&service) else { continue };
        let namespace = service.metadata.namespace.clone().unwrap_or_default();
        let name = service.metadata.name.clone().unwrap_or_default();
        let api = kube::Api::<Service>::namespaced(client.clone(), &namespace);
        let status = json!({"status": {"loadBalancer": {"ingress": [{"ip": ip, "ipMode": "VIP"}]}}});
        match api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&status)).await {
            Ok(_) => tracing::info!(service = %format!("{namespace}/{name}"), %ip, "load-balancer address published"),
            Err(e) => {
                tracing::warn!(service = %format!("{namespace}/{name}"), error = %e, "publishing the load-balancer address")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service(yaml: &str) -> Service {
        serde_yaml::from_str(yaml).expect("a Service")
    }

    #[test]
    fn load_balancer_services_publish_their_cluster_ip_once() {
        let lb = service("metadata: {name: envoy}\nspec: {type: LoadBalancer, clusterIP: 10.96.0.9}");
        assert_eq!(wanted(&lb).as_deref(), Some("10.96.0.9"));
        let published = service(
            "metadata: {name: envoy}\nspec: {type: LoadBalancer, clusterIP: 10.96.0.9}\nstatus: {loadBalancer: {ingress: [{ip: 10.96.0.9}]}}",
        );
        assert_eq!(wanted(&published), None, "nothing to write once published");
        let plain = service("metadata: {name: contour}\nspec: {type: ClusterIP, clusterIP: 10.96.0.8}");
        assert_eq!(wanted(&plain), None);
        let headless = service("metadata: {name: h}\nspec: {type: LoadBalancer, clusterIP: None}");
        assert_eq!(wanted(&headless), None);
        let classed = service(
            "metadata: {name: gw}\nspec: {type: LoadBalancer, clusterIP: 10.96.0.7, loadBalancerClass: projectcontour.io/host-provisioner}",
        );
        assert_eq!(wanted(&classed), None, "another controller's");
    }
}
