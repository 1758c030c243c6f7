//! Clusters (CDS) and their load assignments (EDS).

use std::collections::HashMap;
use std::sync::Arc;

use envoy_types::pb::envoy::config::cluster::v3::{
    CircuitBreakers, Cluster, OutlierDetection, circuit_breakers, cluster,
};
use envoy_types::pb::envoy::config::core::v3::{
    HealthCheck, Http1ProtocolOptions, Http2ProtocolOptions, HttpProtocolOptions as HttpOptions, RuntimeDouble,
    TransportSocket, health_check, transport_socket,
};
use envoy_types::pb::envoy::config::endpoint::v3::{
    ClusterLoadAssignment, LbEndpoint, LocalityLbEndpoints, lb_endpoint,
};
use envoy_types::pb::envoy::extensions::transport_sockets::tls::v3::{
    CertificateValidationContext, CommonTlsContext, SdsSecretConfig, SubjectAltNameMatcher, UpstreamTlsContext,
    common_tls_context, subject_alt_name_matcher,
};
use envoy_types::pb::envoy::extensions::upstreams::http::v3::{HttpProtocolOptions, http_protocol_options};
use envoy_types::pb::envoy::r#type::matcher::v3::{StringMatcher, string_matcher};
use envoy_types::pb::envoy::r#type::v3::Int64Range;
use envoy_types::pb::envoy::r#type::v3::Percent;
use envoy_types::pb::google::protobuf::UInt32Value;
use envoy_types::util::pack_any;
use ir::{LoadBalancer, UpstreamProtocol};

use envoy_types::pb::envoy::config::core::v3::address;

use crate::settings::{ClusterOptions, DnsLookupFamily, TlsOptions};
use crate::transport::socket;
use crate::{Resource, Resources, ads, duration_ms};

pub(crate) fn cluster(c: &dag::Cluster, settings: &ClusterOptions) -> Resource {
    use http_protocol_options::explicit_http_config::ProtocolConfig;
    let http2 = matches!(c.protocol, Some(UpstreamProtocol::H2 | UpstreamProtocol::H2c));
    let idle = c.policy.idle_connection_timeout_ms;
    let max_requests = settings.max_requests_per_connection;
    let mut typed_extension_protocol_options = HashMap::new();
    if http2 || idle.is_some() || max_requests.is_some() {
        let protocol_config = if http2 {
            ProtocolConfig::Http2ProtocolOptions(Http2ProtocolOptions::default())
        } else {
            ProtocolConfig::HttpProtocolOptions(Http1ProtocolOptions::default())
        };
        let common = HttpOptions {
            idle_timeout: idle.map(duration_ms),
            max_requests_per_connection: max_requests.map(|value| UInt32Value { value }),
            ..Default::default()
        };
        let options = HttpProtocolOptions {
            common_http_protocol_options: (common != HttpOptions::default()).then_some(common),
            upstream_protocol_options: Some(http_protocol_options::UpstreamProtocolOptions::ExplicitHttpConfig(
                http_protocol_options::ExplicitHttpConfig { protocol_config: Some(protocol_config) },
            )),
            ..Default::default()
        };
        // One entry: encoding stays deterministic.
        typed_extension_protocol_options
            .insert("envoy.extensions.upstreams.http.v3.HttpProtocolOptions".into(), pack_any(options));
    }
    let lb_policy = match c.policy.load_balancer {
        LoadBalancer::RoundRobin => cluster::LbPolicy::RoundRobin,
        LoadBalancer::WeightedLeastRequest => cluster::LbPolicy::LeastRequest,
        LoadBalancer::Random => cluster::LbPolicy::Random,
        LoadBalancer::RequestHash => cluster::LbPolicy::RingHash,
    };
    // An ExternalName Service: Envoy resolves the name itself (logical DNS when asked for every
    // address family, as upstream), at the Service's port.
    let (discovery, eds_cluster_config, load_assignment) = match &c.external_name {
        None => (
            cluster::DiscoveryType::Eds,
            Some(cluster::EdsClusterConfig { eds_config: Some(ads()), service_name: c.name.clone() }),
            None,
        ),
        Some(host) => {
            let discovery = match dns_lookup_family(c, settings) {
                DnsLookupFamily::All => cluster::DiscoveryType::LogicalDns,
                _ => cluster::DiscoveryType::StrictDns,
            };
            let endpoint = dag::Endpoint {
                address: std::net::SocketAddr::from(([0, 0, 0, 0], c.service.port)),
                health_port: None,
                locality: None,
            };
            let mut assignment = load_assignment_message(&c.name, std::slice::from_ref(&endpoint));
            set_host(&mut assignment, host);
            (discovery, None, Some(assignment))
        }
    };
    let message = Cluster {
        name: c.name.clone(),
        // Stats name the Service port (`namespace_name_port`), as upstream's, whatever the settings.
        alt_stat_name: format!("{}_{}_{}", c.service.namespace, c.service.name, c.service.port),
        cluster_discovery_type: Some(cluster::ClusterDiscoveryType::Type(discovery as i32)),
        eds_cluster_config,
        load_assignment,
        connect_timeout: Some(duration_ms(u64::try_from(settings.connect_timeout.as_millis()).unwrap_or(u64::MAX))),
        dns_lookup_family: match dns_lookup_family(c, settings) {
            DnsLookupFamily::Auto => cluster::DnsLookupFamily::Auto,
            DnsLookupFamily::V4 => cluster::DnsLookupFamily::V4Only,
            DnsLookupFamily::V6 => cluster::DnsLookupFamily::V6Only,
            DnsLookupFamily::All => cluster::DnsLookupFamily::All,
        } as i32,
        per_connection_buffer_limit_bytes: settings
            .per_connection_buffer_limit_bytes
            .map(|value| UInt32Value { value }),
        lb_policy: lb_policy as i32,
        lb_config: c.slow_start.map(|s| {
            let config = Some(cluster::SlowStartConfig {
                slow_start_window: Some(duration_ms(s.window_ms)),
                aggression: Some(RuntimeDouble {
                    default_value: f64::from(s.aggression_milli) / 1000.0,
                    runtime_key: String::new(),
                }),
                min_weight_percent: Some(Percent { value: f64::from(s.min_weight_percent) }),
            });
            match c.policy.load_balancer {
                LoadBalancer::WeightedLeastRequest => {
                    cluster::LbConfig::LeastRequestLbConfig(cluster::LeastRequestLbConfig {
                        slow_start_config: config,
                        ..Default::default()
                    })
                }
                _ => cluster::LbConfig::RoundRobinLbConfig(cluster::RoundRobinLbConfig { slow_start_config: config }),
            }
        }),
        circuit_breakers: circuit_breakers(&c.circuit_breakers.or(&settings.circuit_breakers)),
        health_checks: c.policy.health_check.iter().map(health_check).collect(),
        outlier_detection: c.outlier_detection.as_ref().map(outlier_detection),
        // As upstream: no panic mode. When every endpoint fails its health checks, requests get
        // a 503 instead of being sent to the failing endpoints anyway.
        common_lb_config: Some(cluster::CommonLbConfig {
            healthy_panic_threshold: Some(Percent { value: 0.0 }),
            // Localities weigh the backends of a UDPRoute (see `load_assignment_message`).
            locality_config_specifier: (!c.locality_weights.is_empty()).then(|| {
                cluster::common_lb_config::LocalityConfigSpecifier::LocalityWeightedLbConfig(Default::default())
            }),
            ..Default::default()
        }),
        typed_extension_protocol_options,
        transport_socket: upstream_tls(c, &settings.upstream_tls),
        ..Default::default()
    };
    Resource::new(&c.name, message)
}

/// The cluster's own DNS lookup family (a JWKS server's), else `cluster.dns-lookup-family`.
fn dns_lookup_family(c: &dag::Cluster, settings: &crate::ClusterOptions) -> DnsLookupFamily {
    match c.dns_lookup_family.as_deref() {
        Some("auto") => DnsLookupFamily::Auto,
        Some("v4") => DnsLookupFamily::V4,
        Some("v6") => DnsLookupFamily::V6,
        Some("all") => DnsLookupFamily::All,
        _ => settings.dns_lookup_family,
    }
}

fn circuit_breakers(b: &dag::CircuitBreakers) -> Option<CircuitBreakers> {
    if *b == dag::CircuitBreakers::default() {
        return None;
    }
    let value = |v: Option<u32>| v.map(|value| UInt32Value { value });
    Some(CircuitBreakers {
        thresholds: vec![circuit_breakers::Thresholds {
            max_connections: value(b.max_connections),
            max_pending_requests: value(b.max_pending_requests),
            max_requests: value(b.max_requests),
            max_retries: value(b.max_retries),
            ..Default::default()
        }],
        per_host_thresholds: b
            .per_host_max_connections
            .map(|n| circuit_breakers::Thresholds { max_connections: value(Some(n)), ..Default::default() })
            .into_iter()
            .collect(),
    })
}

fn health_check(h: &ir::HealthCheck) -> HealthCheck {
    HealthCheck {
        timeout: Some(duration_ms(u64::from(h.timeout_s) * 1000)),
        interval: Some(duration_ms(u64::from(h.interval_s) * 1000)),
        unhealthy_threshold: Some(UInt32Value { value: h.unhealthy_threshold }),
        healthy_threshold: Some(UInt32Value { value: h.healthy_threshold }),
        health_checker: Some(if h.tcp {
            // A connect is the check: no payload sent, none expected.
            health_check::HealthChecker::TcpHealthCheck(health_check::TcpHealthCheck::default())
        } else {
            health_check::HealthChecker::HttpHealthCheck(health_check::HttpHealthCheck {
                host: h.host.clone(),
                path: h.path.clone(),
                expected_statuses: h
                    .expected_statuses
                    .iter()
                    .map(|&(start, end)| Int64Range { start: i64::from(start), end: i64::from(end) })
                    .collect(),
                ..Default::default()
            })
        }),
        ..Default::default()
    }
}

/// TLS towards the backend for the `tls` and `h2` protocols, verifying its certificate when the
/// cluster names a CA.
fn upstream_tls(c: &dag::Cluster, tls: &TlsOptions) -> Option<TransportSocket> {
    if !matches!(c.protocol, Some(UpstreamProtocol::Tls | UpstreamProtocol::H2)) && c.validation.is_none() {
        return None;
    }
    let validation_context_type = c.validation.as_ref().map(|v| {
        let san = |san_type: subject_alt_name_matcher::SanType, name: &String| SubjectAltNameMatcher {
            san_type: san_type as i32,
            matcher: Some(StringMatcher {
                match_pattern: Some(string_matcher::MatchPattern::Exact(name.clone())),
                ..Default::default()
            }),
            ..Default::default()
        };
        // Any one name matches (Envoy's rule for the list).
        let names = v.names.iter().map(|n| san(subject_alt_name_matcher::SanType::Dns, n));
        let uris = v.uris.iter().map(|n| san(subject_alt_name_matcher::SanType::Uri, n));
        common_tls_context::ValidationContextType::CombinedValidationContext(
            common_tls_context::CombinedCertificateValidationContext {
                default_validation_context: Some(CertificateValidationContext {
                    match_typed_subject_alt_names: names.chain(uris).collect(),
                    ..Default::default()
                }),
                validation_context_sds_secret_config: Some(SdsSecretConfig {
                    name: v.ca.clone(),
                    sds_config: Some(ads()),
                }),
                ..Default::default()
            },
        )
    });
    let alpn = if c.protocol == Some(UpstreamProtocol::H2) { vec!["h2".to_string()] } else { Vec::new() };
    let context = UpstreamTlsContext {
        common_tls_context: Some(CommonTlsContext {
            alpn_protocols: alpn,
            validation_context_type,
            tls_params: Some(crate::transport::tls_parameters(tls.min_version, tls.max_version, tls)),
            tls_certificate_sds_secret_configs: c
                .client_certificate
                .iter()
                .map(|name| SdsSecretConfig { name: name.clone(), sds_config: Some(ads()) })
                .collect(),
            ..Default::default()
        }),
        sni: c.sni.clone().unwrap_or_default(),
        ..Default::default()
    };
    Some(TransportSocket {
        name: "envoy.transport_sockets.tls".into(),
        config_type: Some(transport_socket::ConfigType::TypedConfig(pack_any(context))),
    })
}

/// Encoded load assignments kept between builds, reused while a cluster's addresses are the same.
#[derive(Debug, Default)]
pub struct LoadAssignmentCache {
    /// Per cluster: its addresses, their encoding, and the generation that last used it.
    by_cluster: rustc_hash::FxHashMap<String, (Arc<[dag::Endpoint]>, Resource, u64)>,
    generation: u64,
}

impl LoadAssignmentCache {
    /// Ends a full build: forgets the clusters it did not use (they were kept for ever before,
    /// one entry per cluster name ever served).
    pub fn sweep(&mut self) {
        let generation = self.generation;
        self.by_cluster.retain(|_, (_, _, used)| *used == generation);
        self.generation += 1;
    }
}

/// The load assignments of a fleet's clusters, re-encoding only clusters whose addresses changed.
pub fn load_assignments_cached(endpoints: &dag::FleetEndpoints, cache: &mut LoadAssignmentCache) -> Resources {
    // In name order: the map is built in one pass, not searched per entry.
    endpoints
        .iter()
        .map(|(name, endpoints)| {
            let generation = cache.generation;
            let resource = match cache.by_cluster.get_mut(name) {
                Some((e, r, used)) if Arc::ptr_eq(e, endpoints) || e == endpoints => {
                    *used = generation;
                    r.clone()
                }
                _ => {
                    let r = load_assignment(name, endpoints);
                    cache.by_cluster.insert(name.clone(), (Arc::clone(endpoints), r.clone(), generation));
                    r
                }
            };
            (Arc::clone(&resource.name), resource)
        })
        .collect()
}

/// Replaces the load assignments of the clusters in `changed` within `resources` (the rest stay
/// as they are, shared), re-encoding only those whose addresses changed.
pub fn update_load_assignments(
    resources: &mut Arc<Resources>,
    changed: &dag::FleetEndpoints,
    cache: &mut LoadAssignmentCache,
) {
    if changed.is_empty() {
        return;
    }
    let map = Arc::make_mut(resources);
    for (name, resource) in load_assignments_cached(changed, cache).iter() {
        map.insert(Arc::clone(name), resource.clone());
    }
}

pub(crate) fn load_assignment(name: &str, endpoints: &[dag::Endpoint]) -> Resource {
    Resource::new(name, load_assignment_message(name, endpoints))
}

/// Points the single endpoint of `assignment` at `host` (a DNS name) instead of its address.
fn set_host(assignment: &mut ClusterLoadAssignment, host: &str) {
    let endpoint = assignment.endpoints.iter_mut().flat_map(|l| l.lb_endpoints.iter_mut()).next();
    if let Some(lb_endpoint::HostIdentifier::Endpoint(e)) = endpoint.and_then(|e| e.host_identifier.as_mut())
        && let Some(address::Address::SocketAddress(a)) = e.address.as_mut().and_then(|a| a.address.as_mut())
    {
        a.address = host.to_string();
    }
}

/// The endpoints in one locality, or, when they carry localities (a UDPRoute's backends), one
/// locality per backend with its weight. A backend without endpoints has no locality, so its
/// share goes to the others.
fn load_assignment_message(name: &str, endpoints: &[dag::Endpoint]) -> ClusterLoadAssignment {
    let mut groups: Vec<(Option<dag::Locality>, Vec<LbEndpoint>)> = Vec::new();
    for e in endpoints {
        match groups.iter_mut().find(|(l, _)| *l == e.locality) {
            Some((_, group)) => group.push(lb_endpoint_of(e)),
            None => groups.push((e.locality, vec![lb_endpoint_of(e)])),
        }
    }
    if groups.is_empty() {
        groups.push((None, Vec::new()));
    }
    let endpoints = groups
        .into_iter()
        .map(|(locality, lb_endpoints)| LocalityLbEndpoints {
            locality: locality.map(|l| envoy_types::pb::envoy::config::core::v3::Locality {
                sub_zone: format!("backend-{}", l.index),
                ..Default::default()
            }),
            load_balancing_weight: locality.map(|l| UInt32Value { value: l.weight }),
            lb_endpoints,
            ..Default::default()
        })
        .collect();
    ClusterLoadAssignment { cluster_name: name.to_string(), endpoints, ..Default::default() }
}

fn lb_endpoint_of(e: &dag::Endpoint) -> LbEndpoint {
    use envoy_types::pb::envoy::config::endpoint::v3::{Endpoint, endpoint::HealthCheckConfig};
    LbEndpoint {
        host_identifier: Some(lb_endpoint::HostIdentifier::Endpoint(Endpoint {
            address: Some(socket(e.address.ip().to_string(), e.address.port())),
            health_check_config: e
                .health_port
                .map(|port| HealthCheckConfig { port_value: u32::from(port), ..Default::default() }),
            ..Default::default()
        })),
        ..Default::default()
    }
}

/// Passive health checks: ejection on consecutive server errors (and, split apart, on
/// consecutive failures to reach the endpoint) only; the success-rate, failure-percentage and
/// gateway-failure checks Envoy has besides stay off.
fn outlier_detection(o: &ir::OutlierDetection) -> OutlierDetection {
    let count = |value: u32| Some(UInt32Value { value });
    let enforced = |on: bool| count(if on { 100 } else { 0 });
    OutlierDetection {
        consecutive_5xx: count(o.consecutive_server_errors),
        enforcing_consecutive_5xx: enforced(o.consecutive_server_errors > 0),
        interval: Some(duration_ms(o.interval_ms)),
        base_ejection_time: Some(duration_ms(o.base_ejection_ms)),
        max_ejection_time: Some(duration_ms(o.max_ejection_ms)),
        max_ejection_time_jitter: (o.jitter_ms > 0).then(|| duration_ms(o.jitter_ms)),
        max_ejection_percent: count(o.max_ejection_percent),
        // One endpoint can always be ejected, whatever the percentage of a small pool.
        always_eject_one_host: Some(envoy_types::pb::google::protobuf::BoolValue { value: true }),
        split_external_local_origin_errors: o.split_local_origin,
        consecutive_local_origin_failure: count(o.consecutive_local_origin_failures),
        enforcing_consecutive_local_origin_failure: enforced(o.split_local_origin),
        enforcing_success_rate: enforced(false),
        enforcing_local_origin_success_rate: enforced(false),
        enforcing_consecutive_gateway_failure: enforced(false),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint(address: &str, locality: Option<(u32, u32)>) -> dag::Endpoint {
        dag::Endpoint {
            address: address.parse().unwrap(),
            health_port: None,
            locality: locality.map(|(index, weight)| dag::Locality { index, weight }),
        }
    }

    #[test]
    fn endpoints_of_weighted_backends_are_localities_with_their_weights() {
        let endpoints = [
            endpoint("10.0.0.1:53", Some((0, 70))),
            endpoint("10.0.0.2:53", Some((1, 30))),
            endpoint("10.0.0.3:53", Some((0, 70))),
        ];
        let assignment = load_assignment_message("udproute/ns/dns", &endpoints);
        let localities: Vec<_> = assignment
            .endpoints
            .iter()
            .map(|l| {
                let zone = l.locality.as_ref().map(|l| l.sub_zone.clone()).unwrap_or_default();
                (zone, l.load_balancing_weight.map(|w| w.value), l.lb_endpoints.len())
            })
            .collect();
        assert_eq!(localities, [("backend-0".to_string(), Some(70), 2), ("backend-1".to_string(), Some(30), 1)]);
    }

    #[test]
    fn load_assignments_are_reused_while_used_and_forgotten_after_a_build_without_them() {
        let mut cache = LoadAssignmentCache::default();
        let web: Arc<[dag::Endpoint]> = vec![endpoint("10.0.0.1:80", None)].into();
        let api: Arc<[dag::Endpoint]> = vec![endpoint("10.0.0.2:80", None)].into();
        let both = dag::FleetEndpoints::from([("ns/web/80".into(), Arc::clone(&web)), ("ns/api/80".into(), api)]);
        let first = load_assignments_cached(&both, &mut cache);
        cache.sweep();
        let only_web = dag::FleetEndpoints::from([("ns/web/80".into(), web)]);
        let second = load_assignments_cached(&only_web, &mut cache);
        assert!(Arc::ptr_eq(&first["ns/web/80"].body, &second["ns/web/80"].body), "the same encoding");
        assert_eq!(cache.by_cluster.len(), 2, "kept until the build ends");
        cache.sweep();
        assert_eq!(cache.by_cluster.keys().collect::<Vec<_>>(), ["ns/web/80"]);
    }

    #[test]
    fn plain_endpoints_share_one_locality_without_weight() {
        let assignment =
            load_assignment_message("ns/web/80", &[endpoint("10.0.0.1:80", None), endpoint("10.0.0.2:80", None)]);
        assert_eq!(assignment.endpoints.len(), 1);
        assert_eq!(assignment.endpoints[0].lb_endpoints.len(), 2);
        assert!(assignment.endpoints[0].locality.is_none() && assignment.endpoints[0].load_balancing_weight.is_none());
        let empty = load_assignment_message("ns/web/80", &[]);
        assert_eq!(empty.endpoints.len(), 1, "no endpoints: one empty locality, as before");
    }
}
