//! Clusters (CDS) and their load assignments (EDS).

use std::collections::HashMap;
use std::sync::Arc;

use envoy_types::pb::envoy::config::cluster::v3::{Cluster, cluster};
use envoy_types::pb::envoy::config::core::v3::Http2ProtocolOptions;
use envoy_types::pb::envoy::config::core::v3::{Address, SocketAddress, address, socket_address};
use envoy_types::pb::envoy::config::endpoint::v3::{
    ClusterLoadAssignment, LbEndpoint, LocalityLbEndpoints, lb_endpoint,
};
use envoy_types::pb::envoy::extensions::upstreams::http::v3::{HttpProtocolOptions, http_protocol_options};
use envoy_types::util::pack_any;
use objects::Snapshot;

use crate::{Resource, ResourceType, Resources, ads, duration_ms};

/// The connect timeout of every upstream cluster (upstream Contour's default).
const CONNECT_TIMEOUT_MS: u64 = 2000;

pub(crate) fn cluster(c: &dag::Cluster) -> Resource {
    let mut typed_extension_protocol_options = HashMap::new();
    if c.http2 {
        let options = HttpProtocolOptions {
            upstream_protocol_options: Some(http_protocol_options::UpstreamProtocolOptions::ExplicitHttpConfig(
                http_protocol_options::ExplicitHttpConfig {
                    protocol_config: Some(
                        http_protocol_options::explicit_http_config::ProtocolConfig::Http2ProtocolOptions(
                            Http2ProtocolOptions::default(),
                        ),
                    ),
                },
            )),
            ..Default::default()
        };
        // One entry: encoding stays deterministic.
        typed_extension_protocol_options
            .insert("envoy.extensions.upstreams.http.v3.HttpProtocolOptions".into(), pack_any(options));
    }
    let message = Cluster {
        name: c.name.clone(),
        alt_stat_name: c.name.replace('/', "_"),
        cluster_discovery_type: Some(cluster::ClusterDiscoveryType::Type(cluster::DiscoveryType::Eds as i32)),
        eds_cluster_config: Some(cluster::EdsClusterConfig { eds_config: Some(ads()), service_name: c.name.clone() }),
        connect_timeout: Some(duration_ms(CONNECT_TIMEOUT_MS)),
        typed_extension_protocol_options,
        ..Default::default()
    };
    Resource::new(&c.name, message)
}

/// The load assignment of every cluster of a fleet, from the snapshot's EndpointSlices.
pub fn endpoints(fleet: &dag::FleetDag, snapshot: &Snapshot) -> Resources {
    let index = dag::SliceIndex::new(snapshot);
    let mut out = Resources::new();
    for c in fleet.clusters.values() {
        let r = load_assignment(&c.name, &index.endpoints(c));
        out.insert(r.name.clone(), r);
    }
    debug_assert!(out.values().all(|r| r.body.type_url == ResourceType::Endpoint.type_url()));
    out
}

/// Load assignments kept between builds: valid while no Service or EndpointSlice changed.
#[derive(Debug, Default)]
pub struct EndpointCache {
    inputs: (Vec<usize>, Vec<usize>),
    by_cluster: rustc_hash::FxHashMap<String, (dag::Cluster, Resource)>,
}

/// [`endpoints`], reusing load assignments of clusters seen before when their inputs are the same.
pub fn endpoints_cached(fleet: &dag::FleetDag, snapshot: &Snapshot, cache: &mut EndpointCache) -> Resources {
    let ptrs = |m: &mut dyn Iterator<Item = usize>| m.collect::<Vec<_>>();
    let inputs = (
        ptrs(&mut snapshot.services.values().map(|s| Arc::as_ptr(s) as usize)),
        ptrs(&mut snapshot.endpoint_slices.values().map(|s| Arc::as_ptr(s) as usize)),
    );
    if inputs != cache.inputs {
        cache.inputs = inputs;
        cache.by_cluster.clear();
    }
    let mut index = None;
    let mut out = Resources::new();
    for c in fleet.clusters.values() {
        let resource = match cache.by_cluster.get(&c.name) {
            Some((cluster, r)) if cluster == c => r.clone(),
            _ => {
                let index = index.get_or_insert_with(|| dag::SliceIndex::new(snapshot));
                let r = load_assignment(&c.name, &index.endpoints(c));
                cache.by_cluster.insert(c.name.clone(), (c.clone(), r.clone()));
                r
            }
        };
        out.insert(Arc::clone(&resource.name), resource);
    }
    out
}

pub(crate) fn load_assignment(name: &str, addresses: &[std::net::SocketAddr]) -> Resource {
    let lb_endpoints = addresses
        .iter()
        .map(|a| LbEndpoint {
            host_identifier: Some(lb_endpoint::HostIdentifier::Endpoint(
                envoy_types::pb::envoy::config::endpoint::v3::Endpoint {
                    address: Some(socket(a.ip().to_string(), a.port())),
                    ..Default::default()
                },
            )),
            ..Default::default()
        })
        .collect();
    let message = ClusterLoadAssignment {
        cluster_name: name.to_string(),
        endpoints: vec![LocalityLbEndpoints { lb_endpoints, ..Default::default() }],
        ..Default::default()
    };
    Resource::new(name, message)
}

pub(crate) fn socket(address: String, port: u16) -> Address {
    Address {
        address: Some(address::Address::SocketAddress(SocketAddress {
            address,
            port_specifier: Some(socket_address::PortSpecifier::PortValue(u32::from(port))),
            ..Default::default()
        })),
    }
}
