//! Protocol tests with a recording client that behaves like Envoy: it ACKs (or NACKs) every
//! response, subscribes to the endpoints of the clusters and the routes of the listeners it holds,
//! and records every response plus any moment a route names a cluster it does not have warm.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use envoy_types::pb::envoy::config::cluster::v3::{Cluster, cluster};
use envoy_types::pb::envoy::config::endpoint::v3::ClusterLoadAssignment;
use envoy_types::pb::envoy::config::listener::v3::{Filter, FilterChain, Listener, filter};
use envoy_types::pb::envoy::config::route::v3 as r;
use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::{
    HttpConnectionManager, Rds, http_connection_manager,
};
use envoy_types::pb::envoy::service::discovery::v3::aggregated_discovery_service_client::AggregatedDiscoveryServiceClient;
use envoy_types::pb::envoy::service::discovery::v3::{DeltaDiscoveryRequest, DiscoveryRequest};
use envoy_types::pb::google::protobuf::Any;
use envoy_types::pb::google::rpc::Status as RpcStatus;
use envoy_types::util::pack_any;
use prost::Message;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use super::*;

fn cluster(name: &str) -> Resource {
    Resource::new(
        name,
        Cluster {
            name: name.into(),
            cluster_discovery_type: Some(cluster::ClusterDiscoveryType::Type(cluster::DiscoveryType::Eds as i32)),
            ..Default::default()
        },
    )
}

fn cla(name: &str, port: u32) -> Resource {
    Resource::new(name, ClusterLoadAssignment { cluster_name: format!("{name}:{port}"), ..Default::default() })
}

fn listener(name: &str, route: &str) -> Resource {
    let hcm = HttpConnectionManager {
        route_specifier: Some(http_connection_manager::RouteSpecifier::Rds(Rds {
            route_config_name: route.into(),
            ..Default::default()
        })),
        ..Default::default()
    };
    let filter = Filter { name: "hcm".into(), config_type: Some(filter::ConfigType::TypedConfig(pack_any(hcm))) };
    Resource::new(
        name,
        Listener {
            name: name.into(),
            filter_chains: vec![FilterChain { filters: vec![filter], ..Default::default() }],
            ..Default::default()
        },
    )
}

fn route(name: &str, vhost: &str, clusters: &[&str]) -> r::RouteConfiguration {
    let routes = clusters
        .iter()
        .map(|c| r::Route {
            action: Some(r::route::Action::Route(r::RouteAction {
                cluster_specifier: Some(r::route_action::ClusterSpecifier::Cluster(c.to_string())),
                ..Default::default()
            })),
            ..Default::default()
        })
        .collect();
    r::RouteConfiguration {
        name: name.into(),
        virtual_hosts: vec![r::VirtualHost { name: vhost.into(), routes, ..Default::default() }],
        ..Default::default()
    }
}

fn fleet(clusters: &[&str], route_clusters: &[&str], vhost: &str, port: u32) -> FleetResources {
    let mut f = FleetResources::default();
    for c in clusters {
        f.insert(ResourceType::Cluster, cluster(c));
        f.insert(ResourceType::Endpoint, cla(c, port));
    }
    f.insert(ResourceType::Listener, listener("http-8080", "http-8080"));
    f.insert_route_configuration(route("http-8080", vhost, route_clusters));
    f
}

/// One response as the client saw it.
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    t: ResourceType,
    names: Vec<String>,
    removed: Vec<String>,
}

#[derive(Default)]
struct EnvoyModel {
    held: BTreeMap<ResourceType, BTreeMap<String, Any>>,
    warm: BTreeSet<String>,
    violations: Vec<String>,
}

impl EnvoyModel {
    fn apply(&mut self, t: ResourceType, sotw: bool, resources: Vec<(String, Any)>, removed: &[String]) {
        let held = self.held.entry(t).or_default();
        let previous = held.clone();
        if sotw && t.is_wildcard() {
            held.clear();
        }
        for n in removed {
            held.remove(n);
        }
        for (n, body) in resources {
            if t == ResourceType::Cluster {
                // A changed cluster warms again until its endpoints arrive.
                if previous.get(&n) != Some(&body) {
                    self.warm.remove(&n);
                }
            }
            if t == ResourceType::Endpoint {
                self.warm.insert(n.clone());
            }
            held.insert(n, body);
        }
        // The invariant the ordering exists for: every route names a warm cluster Envoy has.
        let clusters: BTreeSet<&String> =
            self.held.get(&ResourceType::Cluster).map(|m| m.keys().collect()).unwrap_or_default();
        let inline = self.held.get(&ResourceType::Route).into_iter().flatten().flat_map(|(rname, body)| {
            let rc = r::RouteConfiguration::decode(body.value.as_slice()).unwrap();
            rc.virtual_hosts.into_iter().map(move |vh| (rname.clone(), vh))
        });
        let over_vhds = self
            .held
            .get(&ResourceType::VirtualHost)
            .into_iter()
            .flatten()
            .map(|(name, body)| (name.clone(), r::VirtualHost::decode(body.value.as_slice()).unwrap()));
        for (rname, vh) in inline.chain(over_vhds) {
            {
                for route in &vh.routes {
                    if let Some(r::route::Action::Route(a)) = &route.action
                        && let Some(r::route_action::ClusterSpecifier::Cluster(c)) = &a.cluster_specifier
                        && (!clusters.contains(c) || !self.warm.contains(c))
                    {
                        self.violations.push(format!("route {rname} names {c}, which is missing or warming"));
                    }
                }
            }
        }
    }

    fn wanted(&self, t: ResourceType) -> BTreeSet<String> {
        match t {
            ResourceType::Endpoint => {
                self.held.get(&ResourceType::Cluster).map(|m| m.keys().cloned().collect()).unwrap_or_default()
            }
            // Route configurations whose virtual hosts come over VHDS.
            ResourceType::VirtualHost => self
                .held
                .get(&ResourceType::Route)
                .into_iter()
                .flatten()
                .filter(|(_, body)| r::RouteConfiguration::decode(body.value.as_slice()).unwrap().vhds.is_some())
                .map(|(name, _)| name.clone())
                .collect(),
            ResourceType::Route => self
                .held
                .get(&ResourceType::Listener)
                .into_iter()
                .flatten()
                .filter_map(|(_, body)| {
                    let l = Listener::decode(body.value.as_slice()).ok()?;
                    let Some(filter::ConfigType::TypedConfig(any)) =
                        &l.filter_chains.first()?.filters.first()?.config_type
                    else {
                        return None;
                    };
                    let hcm = HttpConnectionManager::decode(any.value.as_slice()).ok()?;
                    match hcm.route_specifier? {
                        http_connection_manager::RouteSpecifier::Rds(rds) => Some(rds.route_config_name),
                        _ => None,
                    }
                })
                .collect(),
            _ => BTreeSet::new(),
        }
    }
}

/// A client speaking State-of-the-World or Delta ADS like Envoy does.
struct FakeEnvoy {
    delta: bool,
    sotw_tx: Option<mpsc::Sender<DiscoveryRequest>>,
    delta_tx: Option<mpsc::Sender<DeltaDiscoveryRequest>>,
    sotw_rx: Option<tonic::Streaming<envoy_types::pb::envoy::service::discovery::v3::DiscoveryResponse>>,
    delta_rx: Option<tonic::Streaming<envoy_types::pb::envoy::service::discovery::v3::DeltaDiscoveryResponse>>,
    /// Delta: the VHDS stream, opened (as Envoy does) once a route configuration names VHDS.
    vhds_tx: Option<mpsc::Sender<DeltaDiscoveryRequest>>,
    vhds_rx: Option<tonic::Streaming<envoy_types::pb::envoy::service::discovery::v3::DeltaDiscoveryResponse>>,
    url: String,
    node: Option<envoy_types::pb::envoy::config::core::v3::Node>,
    model: EnvoyModel,
    subscribed: BTreeMap<ResourceType, BTreeSet<String>>,
    nonces: BTreeMap<ResourceType, String>,
    seen: Vec<Seen>,
    nacks_sent: usize,
    reject_vhost: Option<String>,
}

async fn start(server: &XdsServer) -> String {
    let listener = listen(([127, 0, 0, 1], 0).into()).unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve(server.clone(), listener, std::future::pending()));
    format!("http://{addr}")
}

impl FakeEnvoy {
    async fn connect(url: &str, fleet: &str, delta: bool) -> Self {
        Self::try_connect(url, fleet, delta).await.unwrap()
    }

    /// [`FakeEnvoy::connect`], failing as Envoy's connection would (the caller retries).
    async fn try_connect(url: &str, fleet: &str, delta: bool) -> Result<Self, String> {
        let mut client =
            AggregatedDiscoveryServiceClient::connect(url.to_string()).await.map_err(|e| format!("{e:?}"))?;
        let node = Some(envoy_types::pb::envoy::config::core::v3::Node {
            id: "fake".into(),
            cluster: fleet.into(),
            ..Default::default()
        });
        let mut me = FakeEnvoy {
            delta,
            sotw_tx: None,
            delta_tx: None,
            sotw_rx: None,
            delta_rx: None,
            vhds_tx: None,
            vhds_rx: None,
            url: url.to_string(),
            node: node.clone(),
            model: EnvoyModel::default(),
            subscribed: BTreeMap::new(),
            nonces: BTreeMap::new(),
            seen: Vec::new(),
            nacks_sent: 0,
            reject_vhost: None,
        };
        if delta {
            let (tx, rx) = mpsc::channel(64);
            for t in [ResourceType::Cluster, ResourceType::Listener] {
                tx.send(DeltaDiscoveryRequest {
                    node: node.clone(),
                    type_url: t.type_url().into(),
                    ..Default::default()
                })
                .await
                .unwrap();
            }
            let stream =
                client.delta_aggregated_resources(ReceiverStream::new(rx)).await.map_err(|e| format!("{e:?}"))?;
            me.delta_rx = Some(stream.into_inner());
            me.delta_tx = Some(tx);
        } else {
            let (tx, rx) = mpsc::channel(64);
            for t in [ResourceType::Cluster, ResourceType::Listener] {
                tx.send(DiscoveryRequest { node: node.clone(), type_url: t.type_url().into(), ..Default::default() })
                    .await
                    .unwrap();
            }
            let stream =
                client.stream_aggregated_resources(ReceiverStream::new(rx)).await.map_err(|e| format!("{e:?}"))?;
            me.sotw_rx = Some(stream.into_inner());
            me.sotw_tx = Some(tx);
        }
        Ok(me)
    }

    /// Handles responses until none arrives for a while; returns what was seen in that time.
    async fn settle(&mut self) -> Vec<Seen> {
        let start = self.seen.len();
        for _ in 0..200 {
            let got = if self.delta {
                let (ads, vhds) = (self.delta_rx.as_mut().unwrap(), self.vhds_rx.as_mut());
                let next = async {
                    tokio::select! {
                        m = ads.message() => m,
                        m = async { match vhds { Some(rx) => rx.message().await, None => std::future::pending().await } } => m,
                    }
                };
                match tokio::time::timeout(Duration::from_millis(300), next).await {
                    Ok(m) => m.unwrap().map(|m| {
                        let t = ResourceType::from_type_url(&m.type_url).unwrap();
                        let res = m.resources.into_iter().map(|r| (r.name, r.resource.unwrap())).collect();
                        (t, m.nonce, m.system_version_info, res, m.removed_resources)
                    }),
                    Err(_) => None,
                }
            } else {
                let rx = self.sotw_rx.as_mut().unwrap();
                match tokio::time::timeout(Duration::from_millis(300), rx.message()).await {
                    Ok(m) => m.unwrap().map(|m| {
                        let t = ResourceType::from_type_url(&m.type_url).unwrap();
                        let res = m.resources.into_iter().map(|a| (name_of(t, &a), a)).collect();
                        (t, m.nonce, m.version_info, res, Vec::new())
                    }),
                    Err(_) => None,
                }
            };
            let Some((t, nonce, version, resources, removed)) = got else {
                break;
            };
            self.handle(t, nonce, version, resources, removed).await;
        }
        self.seen[start..].to_vec()
    }

    async fn handle(
        &mut self,
        t: ResourceType,
        nonce: String,
        version: String,
        resources: Vec<(String, Any)>,
        removed: Vec<String>,
    ) {
        self.seen.push(Seen { t, names: resources.iter().map(|(n, _)| n.clone()).collect(), removed: removed.clone() });
        let hosts = |a: &Any| match t {
            ResourceType::Route => r::RouteConfiguration::decode(a.value.as_slice()).unwrap().virtual_hosts,
            ResourceType::VirtualHost => vec![r::VirtualHost::decode(a.value.as_slice()).unwrap()],
            _ => Vec::new(),
        };
        let poisoned = self.reject_vhost.as_ref().is_some_and(|bad| {
            resources
                .iter()
                .any(|(_, a)| hosts(a).iter().any(|v| v.name == *bad || v.name.ends_with(&format!("/{bad}"))))
        });
        let error = poisoned.then(|| RpcStatus {
            code: 3,
            message: "route http-8080: poisoned virtual host".into(),
            ..Default::default()
        });
        if poisoned {
            self.nacks_sent += 1;
        } else {
            self.model.apply(t, !self.delta, resources, &removed);
        }
        self.nonces.insert(t, nonce.clone());
        self.send(t, Some(nonce), Some(version), error).await;
        for dependent in [ResourceType::Endpoint, ResourceType::Route, ResourceType::VirtualHost] {
            let want = self.model.wanted(dependent);
            if self.subscribed.get(&dependent) != Some(&want) {
                self.send(dependent, None, None, None).await;
            }
        }
    }

    async fn send(
        &mut self,
        t: ResourceType,
        nonce: Option<String>,
        version: Option<String>,
        error: Option<RpcStatus>,
    ) {
        let acking = nonce.is_some();
        let nonce = nonce.or_else(|| self.nonces.get(&t).cloned()).unwrap_or_default();
        let want = if t.is_wildcard() { BTreeSet::new() } else { self.model.wanted(t) };
        if t == ResourceType::VirtualHost && (!self.delta || (want.is_empty() && self.vhds_tx.is_none())) {
            return;
        }
        let before = self.subscribed.insert(t, want.clone()).unwrap_or_default();
        if t == ResourceType::VirtualHost {
            // As Envoy: one VHDS stream per route configuration (one here), named in its gRPC
            // metadata; the first request subscribes to no names, later ones only ACK.
            let req = DeltaDiscoveryRequest {
                node: self.node.clone(),
                type_url: t.type_url().into(),
                response_nonce: nonce,
                error_detail: error,
                ..Default::default()
            };
            if let Some(tx) = &self.vhds_tx {
                if acking {
                    tx.send(req).await.unwrap();
                }
            } else {
                use envoy_types::pb::envoy::service::route::v3::virtual_host_discovery_service_client::VirtualHostDiscoveryServiceClient;
                let mut client = VirtualHostDiscoveryServiceClient::connect(self.url.clone()).await.unwrap();
                let (tx, rx) = mpsc::channel(64);
                tx.send(req).await.unwrap();
                let mut request = tonic::Request::new(ReceiverStream::new(rx));
                let route_configuration = want.first().expect("a route configuration over VHDS").parse().unwrap();
                request.metadata_mut().insert(xds::VHDS_ROUTE_CONFIGURATION_HEADER, route_configuration);
                self.vhds_rx = Some(client.delta_virtual_hosts(request).await.unwrap().into_inner());
                self.vhds_tx = Some(tx);
            }
        } else if self.delta {
            let req = DeltaDiscoveryRequest {
                type_url: t.type_url().into(),
                response_nonce: nonce,
                error_detail: error,
                resource_names_subscribe: want.difference(&before).cloned().collect(),
                resource_names_unsubscribe: before.difference(&want).cloned().collect(),
                ..Default::default()
            };
            self.delta_tx.as_ref().unwrap().send(req).await.unwrap();
        } else {
            let req = DiscoveryRequest {
                type_url: t.type_url().into(),
                response_nonce: nonce,
                version_info: version.unwrap_or_default(),
                error_detail: error,
                resource_names: want.into_iter().collect(),
                ..Default::default()
            };
            self.sotw_tx.as_ref().unwrap().send(req).await.unwrap();
        }
    }
}

fn name_of(t: ResourceType, a: &Any) -> String {
    match t {
        ResourceType::Cluster => Cluster::decode(a.value.as_slice()).unwrap().name,
        ResourceType::Endpoint => {
            let cla = ClusterLoadAssignment::decode(a.value.as_slice()).unwrap();
            cla.cluster_name.split(':').next().unwrap().to_string()
        }
        ResourceType::Listener => Listener::decode(a.value.as_slice()).unwrap().name,
        ResourceType::Route | ResourceType::RouteVhds => {
            r::RouteConfiguration::decode(a.value.as_slice()).unwrap().name
        }
        ResourceType::VirtualHost => r::VirtualHost::decode(a.value.as_slice()).unwrap().name,
        ResourceType::Runtime => {
            envoy_types::pb::envoy::service::runtime::v3::Runtime::decode(a.value.as_slice()).unwrap().name
        }
        ResourceType::Secret => String::new(),
    }
}

/// The protocol cases, run against the client above.
mod cases;
mod limits;
