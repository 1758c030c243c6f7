//! Clusters (CDS) and their load assignments (EDS).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use envoy_types::pb::envoy::config::cluster::v3::{Cluster, cluster};
use envoy_types::pb::envoy::config::core::v3::Http2ProtocolOptions;
use envoy_types::pb::envoy::config::core::v3::{Address, SocketAddress, address, socket_address};
use envoy_types::pb::envoy::config::endpoint::v3::{
    ClusterLoadAssignment, LbEndpoint, LocalityLbEndpoints, lb_endpoint,
};
use envoy_types::pb::envoy::extensions::upstreams::http::v3::{HttpProtocolOptions, http_protocol_options};
use envoy_types::util::pack_any;

use crate::{Resource, Resources, ads, duration_ms};

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

/// Encoded load assignments kept between builds, reused while a cluster's addresses are the same.
#[derive(Debug, Default)]
pub struct LoadAssignmentCache {
    by_cluster: rustc_hash::FxHashMap<String, (Arc<[SocketAddr]>, Resource)>,
}

/// The load assignments of a fleet's clusters, re-encoding only clusters whose addresses changed.
pub fn load_assignments_cached(endpoints: &dag::FleetEndpoints, cache: &mut LoadAssignmentCache) -> Resources {
    let mut out = Resources::new();
    for (name, addresses) in endpoints {
        let resource = match cache.by_cluster.get(name) {
            Some((a, r)) if Arc::ptr_eq(a, addresses) || a == addresses => r.clone(),
            _ => {
                let r = load_assignment(name, addresses);
                cache.by_cluster.insert(name.clone(), (Arc::clone(addresses), r.clone()));
                r
            }
        };
        out.insert(Arc::clone(&resource.name), resource);
    }
    out
}

pub(crate) fn load_assignment(name: &str, addresses: &[SocketAddr]) -> Resource {
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
