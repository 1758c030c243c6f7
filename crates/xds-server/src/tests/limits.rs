//! Limits: an Envoy that stops reading while the configuration churns.

use super::*;

fn one_fleet(vhost: &str) -> BTreeMap<String, FleetResources> {
    BTreeMap::from([("f".to_string(), fleet(&["a"], &["a"], vhost, 1))])
}

/// An Envoy that stops reading (stuck, or on a link that stalled) is sent at most one response
/// per type until it answers: its backlog is bounded whatever the churn, and the Envoys beside
/// it keep up with every change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_envoy_that_stops_reading_has_a_bounded_backlog_and_holds_back_no_one() {
    let server = XdsServer::default();
    server.set_fleets(one_fleet("v0"));
    server.set_ready();
    let url = start(&server).await;
    for delta in [false, true] {
        let mut stuck = FakeEnvoy::connect(&url, "f", delta).await;
        let mut live = FakeEnvoy::connect(&url, "f", delta).await;
        live.settle().await;
        for i in 1..=500 {
            server.set_fleets(one_fleet(&format!("v{i}")));
            if i % 100 == 0 {
                live.settle().await;
            }
        }
        live.settle().await;
        let route = live.model.held.get(&ResourceType::Route).and_then(|r| r.values().next()).cloned();
        let route = r::RouteConfiguration::decode(route.expect("a route").value.as_slice()).unwrap();
        assert_eq!(route.virtual_hosts[0].name, "v500", "the live Envoy has the last change");
        // Once it reads again, it gets what was sent before it stopped (at most one response
        // per type, unanswered) and then the latest configuration: not 500 changes.
        let seen = stuck.settle().await;
        assert!(seen.len() <= 2 * ResourceType::ALL.len(), "the stuck Envoy got {} responses: {seen:?}", seen.len());
        let route = stuck.model.held.get(&ResourceType::Route).and_then(|r| r.values().next()).cloned();
        let route = r::RouteConfiguration::decode(route.expect("a route").value.as_slice()).unwrap();
        assert_eq!(route.virtual_hosts[0].name, "v500", "delta {delta}: the stuck Envoy caught up");
        let waiting = seen.len();
        println!("delta {delta}: the stuck Envoy got {waiting} responses for 500 changes");
    }
}
