//! Ordering, resends, NACKs, fleets and reconnects, as the recording client sees them.

use super::*;

fn types(seen: &[Seen]) -> Vec<ResourceType> {
    seen.iter().map(|s| s.t).collect()
}

/// A server whose Delta streams send plain-HTTP virtual hosts over VHDS: these tests hold the
/// Delta path to make-before-break across its two streams.
fn vhds_server() -> XdsServer {
    XdsServer::new(Options { vhds: true, ..Options::default() })
}

fn fleets(id: &str, f: FleetResources) -> BTreeMap<String, FleetResources> {
    BTreeMap::from([(id.to_string(), f)])
}

use ResourceType::{Cluster as CDS, Endpoint as EDS, Listener as LDS, Route as RDS, VirtualHost as VHDS};

/// What a new Envoy receives: Delta adds the virtual hosts on their own stream.
fn initial(delta: bool) -> Vec<ResourceType> {
    if delta { vec![CDS, EDS, LDS, RDS, VHDS] } else { vec![CDS, EDS, LDS, RDS] }
}

async fn make_before_break(delta: bool) {
    let server = vhds_server();
    server.set_fleets(fleets("f", fleet(&["a"], &["a"], "v1", 1)));
    server.set_ready();
    let url = start(&server).await;
    let mut envoy = FakeEnvoy::connect(&url, "f", delta).await;
    let first = envoy.settle().await;
    assert_eq!(types(&first), initial(delta), "initial order");

    // Swap the route from cluster a to a new cluster b.
    server.set_fleets(fleets("f", fleet(&["b"], &["b"], "v2", 1)));
    let swap = envoy.settle().await;
    // Delta: the route configuration stays; its virtual host changes over VHDS, a stream of its
    // own, which waits for the new cluster and holds back the old one's removal.
    let expected: &[ResourceType] = if delta { &[CDS, EDS, VHDS, CDS, EDS] } else { &[CDS, EDS, RDS, CDS] };
    assert_eq!(types(&swap), expected, "add clusters, endpoints, switch routes, then remove: {swap:?}");
    let last = swap.last().unwrap();
    if delta {
        assert_eq!((&swap[0].names, &swap[0].removed), (&vec!["b".to_string()], &vec![]), "{swap:?}");
        assert_eq!((&swap[2].names, &swap[2].removed), (&vec!["http-8080/v2".into()], &vec!["http-8080/v1".into()]));
        assert_eq!((&swap[3].removed, &last.removed), (&vec!["a".to_string()], &vec!["a".to_string()]));
    } else {
        assert_eq!(swap[0].names, ["a", "b"], "old cluster kept at first: {swap:?}");
        assert_eq!(last.names, ["b"]);
    }
    assert!(envoy.model.violations.is_empty(), "{:?}", envoy.model.violations);
    assert_eq!(server.stats().nacks_total(), 0);
}

#[tokio::test]
async fn sotw_orders_make_before_break() {
    make_before_break(false).await;
}

#[tokio::test]
async fn delta_orders_make_before_break() {
    make_before_break(true).await;
}

#[tokio::test]
async fn delta_resends_nothing_unchanged_and_endpoint_changes_push_eds_only() {
    resends_nothing_unchanged(true).await;
}

/// State-of-the-World too: endpoints are not a wildcard type, so a response carries only the
/// load assignments that changed.
#[tokio::test]
async fn sotw_resends_nothing_unchanged_and_endpoint_changes_push_only_the_changed_endpoints() {
    resends_nothing_unchanged(false).await;
}

async fn resends_nothing_unchanged(delta: bool) {
    let server = vhds_server();
    server.set_fleets(fleets("f", fleet(&["a", "b"], &["a", "b"], "v1", 1)));
    server.set_ready();
    let url = start(&server).await;
    let mut envoy = FakeEnvoy::connect(&url, "f", delta).await;
    envoy.settle().await;

    server.set_fleets(fleets("f", fleet(&["a", "b"], &["a", "b"], "v1", 1)));
    assert_eq!(envoy.settle().await, [], "an identical build sends nothing");

    server.set_fleets(fleets("f", fleet(&["a", "b"], &["a", "b"], "v2", 1)));
    let seen = envoy.settle().await;
    let changed = if delta {
        Seen { t: VHDS, names: vec!["http-8080/v2".into()], removed: vec!["http-8080/v1".into()] }
    } else {
        Seen { t: RDS, names: vec!["http-8080".into()], removed: vec![] }
    };
    assert_eq!(seen, [changed], "only the changed route");

    let mut eds = Resources::new();
    for (name, port) in [("a", 1), ("b", 2)] {
        let r = cla(name, port);
        eds.insert(r.name.clone(), r);
    }
    server.set_endpoints("f", Arc::new(eds));
    let seen = envoy.settle().await;
    assert_eq!(seen, [Seen { t: EDS, names: vec!["b".into()], removed: vec![] }], "only the changed endpoints");
}

#[tokio::test]
async fn a_nack_keeps_the_last_accepted_version() {
    for delta in [false, true] {
        let server = vhds_server();
        server.set_fleets(fleets("f", fleet(&["a"], &["a"], "good", 1)));
        server.set_ready();
        let url = start(&server).await;
        let mut envoy = FakeEnvoy::connect(&url, "f", delta).await;
        envoy.reject_vhost = Some("poison".into());
        envoy.settle().await;

        server.set_fleets(fleets("f", fleet(&["a"], &["a"], "poison", 1)));
        envoy.settle().await;
        assert_eq!(envoy.nacks_sent, 1, "the bad route is sent once, not again and again");
        let (t, name) = if delta { (VHDS, "http-8080/poison") } else { (RDS, "http-8080") };
        assert_eq!(server.stats().nacks[&t], 1);
        let rejections = server.rejections();
        assert_eq!(rejections.len(), 1);
        assert_eq!(
            (rejections[0].name.as_str(), rejections[0].error.as_str()),
            (name, "route http-8080: poisoned virtual host")
        );

        // A new Envoy gets the last accepted version, not the rejected one.
        let mut late = FakeEnvoy::connect(&url, "f", delta).await;
        late.reject_vhost = Some("poison".into());
        assert_eq!(types(&late.settle().await), initial(delta));
        assert_eq!(late.nacks_sent, 0);

        // A fixed build clears the rejection.
        server.set_fleets(fleets("f", fleet(&["a"], &["a"], "fixed", 1)));
        envoy.settle().await;
        assert!(server.rejections().is_empty());
    }
}

#[tokio::test]
async fn an_unknown_fleet_gets_nothing_and_is_counted() {
    let server = vhds_server();
    server.set_fleets(fleets("f", fleet(&["a"], &["a"], "v1", 1)));
    server.set_ready();
    let url = start(&server).await;
    let mut envoy = FakeEnvoy::connect(&url, "someone-else", false).await;
    assert_eq!(envoy.settle().await, []);
    assert_eq!(server.stats().unknown_fleet, 1);
}

/// Upstream's Envoy manifests name the controller's namespace as node cluster.
#[tokio::test]
async fn an_alias_of_the_default_fleet_gets_the_default_fleet() {
    let options = Options { default_fleet_aliases: vec!["projectcontour".into()], ..Options::default() };
    let server = XdsServer::new(options);
    server.set_fleets(fleets(crate::DEFAULT_FLEET, fleet(&["a"], &["a"], "v1", 1)));
    server.set_ready();
    let url = start(&server).await;
    let mut envoy = FakeEnvoy::connect(&url, "projectcontour", false).await;
    assert_eq!(types(&envoy.settle().await), [CDS, EDS, LDS, RDS]);
    let mut other = FakeEnvoy::connect(&url, "other-namespace", false).await;
    assert_eq!(other.settle().await, [], "only the alias maps to the default fleet");
    assert_eq!(server.stats().unknown_fleet, 1);
}

#[tokio::test]
async fn nothing_is_served_before_the_first_build() {
    let server = vhds_server();
    let url = start(&server).await;
    let mut envoy = FakeEnvoy::connect(&url, "f", true).await;
    assert_eq!(envoy.settle().await, []);
    server.set_fleets(fleets("f", fleet(&["a"], &["a"], "v1", 1)));
    server.set_ready();
    assert_eq!(types(&envoy.settle().await), initial(true));
}

/// A State-of-the-World clusters stream of its own (an Envoy without ADS) for fleet `f`: where
/// requests go, the responses, and the first one.
async fn clusters_stream(
    url: &str,
    node_id: &str,
) -> (
    mpsc::Sender<DiscoveryRequest>,
    tonic::Streaming<envoy_types::pb::envoy::service::discovery::v3::DiscoveryResponse>,
    envoy_types::pb::envoy::service::discovery::v3::DiscoveryResponse,
) {
    use envoy_types::pb::envoy::service::cluster::v3::cluster_discovery_service_client::ClusterDiscoveryServiceClient;
    let mut client = ClusterDiscoveryServiceClient::connect(url.to_string()).await.unwrap();
    let node = Some(envoy_types::pb::envoy::config::core::v3::Node {
        id: node_id.into(),
        cluster: "f".into(),
        ..Default::default()
    });
    let (tx, rx) = mpsc::channel(4);
    tx.send(DiscoveryRequest { node, type_url: CDS.type_url().into(), ..Default::default() }).await.unwrap();
    let mut responses = client.stream_clusters(ReceiverStream::new(rx)).await.unwrap().into_inner();
    let first = tokio::time::timeout(Duration::from_secs(5), responses.message()).await.unwrap().unwrap().unwrap();
    (tx, responses, first)
}

#[tokio::test]
async fn per_type_services_serve_their_type_only() {
    let server = vhds_server();
    server.set_fleets(fleets("f", fleet(&["a", "b"], &["a"], "v1", 1)));
    server.set_ready();
    let (tx, mut responses, first) = clusters_stream(&start(&server).await, "cds").await;
    let names: Vec<String> = first.resources.iter().map(|a| name_of(CDS, a)).collect();
    assert_eq!(names, ["a", "b"]);

    // Another type on this stream is refused rather than served.
    tx.send(DiscoveryRequest { type_url: LDS.type_url().into(), response_nonce: first.nonce, ..Default::default() })
        .await
        .unwrap();
    let refused = tokio::time::timeout(Duration::from_secs(5), responses.message()).await.unwrap();
    assert!(refused.is_err(), "{refused:?}");
}

/// An Envoy without ADS may hold its per-type streams on different replicas: a replica judges
/// the fleet by the types its streams serve, not by types another replica serves (a leader
/// holding only the clusters stream of an Envoy whose routes come from the other replica would
/// otherwise report Pending forever).
#[tokio::test]
async fn a_replica_judges_a_fleet_by_the_types_its_streams_serve() {
    let server = vhds_server();
    server.set_fleets(fleets("f", fleet(&["a"], &["a"], "v1", 1)));
    server.set_ready();
    let (tx, _responses, first) = clusters_stream(&start(&server).await, "cds-only").await;
    assert_eq!(server.programming("f"), Programming::Pending, "the clusters are not accepted yet");
    let ack = DiscoveryRequest {
        type_url: CDS.type_url().into(),
        version_info: first.version_info,
        response_nonce: first.nonce,
        ..Default::default()
    };
    tx.send(ack).await.unwrap();
    // Listeners, routes and endpoints are no Envoy's here, and none of this replica's to judge.
    let programmed = within_5s(|| server.programming("f") == Programming::Programmed).await;
    assert!(programmed, "{:?}", server.programming("f"));
    drop(tx);
}

/// Upstream's bootstrap takes each type on a stream of its own and has no ADS: its clusters get
/// their endpoints from the xDS cluster over gRPC, and its runtime layer comes over RTDS.
#[tokio::test]
async fn an_envoy_without_ads_gets_grpc_sources_and_its_runtime_layer() {
    use envoy_types::pb::envoy::config::core::v3::{AggregatedConfigSource, ConfigSource, config_source, grpc_service};
    use envoy_types::pb::envoy::service::cluster::v3::cluster_discovery_service_client::ClusterDiscoveryServiceClient;
    use envoy_types::pb::envoy::service::runtime::v3::runtime_discovery_service_client::RuntimeDiscoveryServiceClient;
    let server = vhds_server();
    let mut f = fleet(&[], &[], "v1", 1);
    let ads = ConfigSource {
        config_source_specifier: Some(config_source::ConfigSourceSpecifier::Ads(AggregatedConfigSource {})),
        ..Default::default()
    };
    let eds = Cluster {
        name: "a".into(),
        eds_cluster_config: Some(cluster::EdsClusterConfig { eds_config: Some(ads), service_name: "a".into() }),
        ..Default::default()
    };
    f.insert(CDS, Resource::new("a", eds));
    f.insert(ResourceType::Runtime, Resource::new("dynamic", xds_runtime("dynamic")));
    server.set_fleets(fleets("f", f));
    server.set_ready();
    let url = start(&server).await;
    let node = Some(envoy_types::pb::envoy::config::core::v3::Node {
        id: "upstream-bootstrap".into(),
        cluster: "f".into(),
        ..Default::default()
    });
    let first =
        |t: ResourceType| DiscoveryRequest { node: node.clone(), type_url: t.type_url().into(), ..Default::default() };

    let mut cds = ClusterDiscoveryServiceClient::connect(url.clone()).await.unwrap();
    let (tx, rx) = mpsc::channel(4);
    tx.send(first(CDS)).await.unwrap();
    let mut responses = cds.stream_clusters(ReceiverStream::new(rx)).await.unwrap().into_inner();
    let answer = tokio::time::timeout(Duration::from_secs(5), responses.message()).await.unwrap().unwrap().unwrap();
    let cluster = Cluster::decode(answer.resources[0].value.as_slice()).unwrap();
    let source = cluster.eds_cluster_config.unwrap().eds_config.unwrap();
    let Some(config_source::ConfigSourceSpecifier::ApiConfigSource(api)) = source.config_source_specifier else {
        panic!("{source:?}")
    };
    let xds_cluster =
        grpc_service::EnvoyGrpc { cluster_name: "contour".into(), authority: "contour".into(), ..Default::default() };
    assert_eq!(api.grpc_services[0].target_specifier, Some(grpc_service::TargetSpecifier::EnvoyGrpc(xds_cluster)));

    let mut rtds = RuntimeDiscoveryServiceClient::connect(url).await.unwrap();
    let (tx, rx) = mpsc::channel(4);
    let mut ask = first(ResourceType::Runtime);
    ask.resource_names = vec!["dynamic".into()];
    tx.send(ask).await.unwrap();
    let mut responses = rtds.stream_runtime(ReceiverStream::new(rx)).await.unwrap().into_inner();
    let answer = tokio::time::timeout(Duration::from_secs(5), responses.message()).await.unwrap().unwrap().unwrap();
    assert_eq!(answer.resources.iter().map(|a| name_of(ResourceType::Runtime, a)).collect::<Vec<_>>(), ["dynamic"]);
}

fn xds_runtime(name: &str) -> envoy_types::pb::envoy::service::runtime::v3::Runtime {
    envoy_types::pb::envoy::service::runtime::v3::Runtime { name: name.into(), ..Default::default() }
}

#[tokio::test]
async fn a_fleet_without_clusters_gets_an_empty_cds_answer_at_once() {
    // Envoy's initialization waits for a first CDS answer before it asks for listeners.
    for delta in [false, true] {
        let server = vhds_server();
        server.set_fleets(fleets("f", fleet(&[], &[], "v1", 1)));
        server.set_ready();
        let url = start(&server).await;
        let mut envoy = FakeEnvoy::connect(&url, "f", delta).await;
        let seen = envoy.settle().await;
        assert_eq!(seen.first(), Some(&Seen { t: CDS, names: vec![], removed: vec![] }), "delta {delta}");
        assert!(types(&seen).contains(&LDS), "then the listeners (delta {delta}): {seen:?}");
    }
}

/// A restarted controller meets an Envoy that kept its configuration: over Delta, Envoy names
/// the versions it holds, which count as accepted (versions are content hashes), so the fleet is
/// Programmed without anything sent again.
#[tokio::test]
async fn a_delta_envoy_that_reconnects_with_the_current_versions_is_programmed_without_resends() {
    let server = vhds_server();
    let f = fleet(&["a"], &["a"], "v1", 1);
    server.set_fleets(fleets("f", f.clone()));
    server.set_ready();
    let url = start(&server).await;
    let node = Some(envoy_types::pb::envoy::config::core::v3::Node {
        id: "kept".into(),
        cluster: "f".into(),
        ..Default::default()
    });
    let held = |t: ResourceType| -> std::collections::HashMap<String, String> {
        f.of(t).values().map(|r| (r.name.to_string(), r.version.to_string())).collect()
    };
    let request = |t: ResourceType, subscribe: Vec<String>, versions| DeltaDiscoveryRequest {
        node: node.clone(),
        type_url: t.type_url().into(),
        resource_names_subscribe: subscribe,
        initial_resource_versions: versions,
        ..Default::default()
    };
    let (tx, rx) = mpsc::channel(8);
    tx.send(request(CDS, vec![], held(CDS))).await.unwrap();
    tx.send(request(LDS, vec![], held(LDS))).await.unwrap();
    tx.send(request(EDS, vec!["a".into()], held(EDS))).await.unwrap();
    tx.send(request(RDS, vec!["http-8080".into()], held(ResourceType::RouteVhds))).await.unwrap();
    let mut client = AggregatedDiscoveryServiceClient::connect(url.clone()).await.unwrap();
    let mut ads = client.delta_aggregated_resources(ReceiverStream::new(rx)).await.unwrap().into_inner();
    let (vtx, vrx) = mpsc::channel(8);
    vtx.send(request(VHDS, vec![], held(VHDS))).await.unwrap();
    use envoy_types::pb::envoy::service::route::v3::virtual_host_discovery_service_client::VirtualHostDiscoveryServiceClient;
    let mut vhds_request = tonic::Request::new(ReceiverStream::new(vrx));
    vhds_request.metadata_mut().insert(xds::VHDS_ROUTE_CONFIGURATION_HEADER, "http-8080".parse().unwrap());
    let mut vhds = VirtualHostDiscoveryServiceClient::connect(url).await.unwrap();
    let mut vhds = vhds.delta_virtual_hosts(vhds_request).await.unwrap().into_inner();

    let programmed = within_5s(|| server.programming("f") == Programming::Programmed).await;
    assert!(programmed, "{:?}", server.programming("f"));
    // Whatever was answered carried no resource: Envoy had them all.
    for stream in [&mut ads, &mut vhds] {
        while let Ok(Ok(Some(m))) = tokio::time::timeout(Duration::from_millis(200), stream.message()).await {
            assert!(m.resources.is_empty(), "{} sent again: {:?}", m.type_url, m.resources);
        }
    }
}

/// Polls `done` for up to five seconds.
async fn within_5s(done: impl Fn() -> bool) -> bool {
    for _ in 0..100 {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}
