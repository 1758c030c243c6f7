//! TCP proxying (`envoy.filters.network.tcp_proxy`): TCP listeners, passed-through TLS and TLS
//! terminated in front of a TCP backend.

use envoy_types::pb::envoy::config::listener::v3::{Filter, filter};
use envoy_types::pb::envoy::extensions::filters::network::tcp_proxy::v3::{TcpProxy, tcp_proxy};
use envoy_types::util::pack_any;

use crate::route::INVALID_BACKEND_CLUSTER;

/// TCP proxying, logged like the TLS listener it serves, idle for at most upstream's 9001 s.
pub(crate) fn proxy(
    stat_prefix: &str,
    backends: &[dag::WeightedCluster],
    access_log: &[envoy_types::pb::envoy::config::accesslog::v3::AccessLog],
) -> Filter {
    let live: Vec<_> = backends.iter().filter(|b| b.weight > 0).collect();
    let specifier = match live.as_slice() {
        // Every weight is zero: connections are refused (Envoy needs a cluster to name).
        [] => tcp_proxy::ClusterSpecifier::Cluster(INVALID_BACKEND_CLUSTER.into()),
        [one] => {
            tcp_proxy::ClusterSpecifier::Cluster(one.cluster.clone().unwrap_or_else(|| INVALID_BACKEND_CLUSTER.into()))
        }
        many => tcp_proxy::ClusterSpecifier::WeightedClusters(tcp_proxy::WeightedCluster {
            clusters: many
                .iter()
                .map(|b| tcp_proxy::weighted_cluster::ClusterWeight {
                    name: b.cluster.clone().unwrap_or_else(|| INVALID_BACKEND_CLUSTER.into()),
                    weight: b.weight,
                    ..Default::default()
                })
                .collect(),
        }),
    };
    let proxy = TcpProxy {
        stat_prefix: stat_prefix.to_string(),
        cluster_specifier: Some(specifier),
        access_log: access_log.to_vec(),
        idle_timeout: Some(crate::duration_ms(9001 * 1000)),
        ..Default::default()
    };
    Filter {
        name: "envoy.filters.network.tcp_proxy".into(),
        config_type: Some(filter::ConfigType::TypedConfig(pack_any(proxy))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn specifier(backends: &[(Option<&str>, u32)]) -> tcp_proxy::ClusterSpecifier {
        let backends: Vec<_> = backends
            .iter()
            .map(|(c, weight)| dag::WeightedCluster { cluster: c.map(str::to_string), weight: *weight, filters: None })
            .collect();
        let Some(filter::ConfigType::TypedConfig(any)) = proxy("tcp-9000", &backends, &[]).config_type else {
            panic!("typed config");
        };
        let proxy: TcpProxy = prost::Message::decode(any.value.as_slice()).expect("TcpProxy");
        proxy.cluster_specifier.expect("a cluster")
    }

    #[test]
    fn connections_go_to_the_weighted_clusters_that_can_take_them() {
        use tcp_proxy::ClusterSpecifier::{Cluster, WeightedClusters};
        assert_eq!(specifier(&[(Some("a"), 1), (Some("b"), 0)]), Cluster("a".into()), "weight 0 is never chosen");
        let WeightedClusters(w) = specifier(&[(Some("a"), 70), (None, 30)]) else { panic!("weighted") };
        let clusters: Vec<_> = w.clusters.iter().map(|c| (c.name.as_str(), c.weight)).collect();
        assert_eq!(clusters, [("a", 70), (INVALID_BACKEND_CLUSTER, 30)], "an unresolved backend's share fails");
        assert_eq!(specifier(&[(Some("a"), 0)]), Cluster(INVALID_BACKEND_CLUSTER.into()), "no weight at all");
    }
}
