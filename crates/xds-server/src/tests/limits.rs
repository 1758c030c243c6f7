//! Limits: an Envoy that stops reading while the configuration churns; a burst of a thousand
//! Envoys connecting at once.

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

/// A thousand Envoys connect at once (a fleet restarted, or every Envoy back after the
/// controller was away), half on State-of-the-World and half on Delta: each gets the whole
/// configuration at the first try (an Envoy whose connection fails tries again, as Envoy does,
/// but only after a backoff).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_a_thousand_envoys_is_served() {
    const ENVOYS: usize = 1000;
    let server = XdsServer::default();
    server.set_fleets(one_fleet("v0"));
    server.set_ready();
    let url = start(&server).await;
    let started = std::time::Instant::now();
    let envoys: Vec<_> = (0..ENVOYS)
        .map(|i| {
            let url = url.clone();
            tokio::spawn(async move {
                let mut errors = Vec::new();
                for _ in 0..5 {
                    match FakeEnvoy::try_connect(&url, "f", i % 2 == 1).await {
                        Ok(mut envoy) => {
                            // Responses may be slow to start under the burst: read for up to 30 s
                            // until every type is held.
                            let deadline = std::time::Instant::now() + Duration::from_secs(30);
                            while !whole(&envoy.model.held) && std::time::Instant::now() < deadline {
                                envoy.settle().await;
                            }
                            return (envoy.model.held, errors);
                        }
                        Err(e) => errors.push(e),
                    }
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
                (BTreeMap::new(), errors)
            })
        })
        .collect();
    let (mut served, mut retried, mut errors) = (0, 0, Vec::new());
    for envoy in envoys {
        let (held, failed) = envoy.await.expect("an Envoy's task");
        served += usize::from(whole(&held));
        retried += usize::from(!failed.is_empty());
        errors.extend(failed);
    }
    let took = started.elapsed();
    println!(
        "{ENVOYS} Envoys at once: {served} got the whole configuration in {took:?}; {retried} had to reconnect; \
         the server counted {} streams; errors: {:?}",
        server.stats().streams_total,
        errors.iter().take(3).collect::<Vec<_>>()
    );
    assert_eq!(served, ENVOYS, "every Envoy gets its configuration; errors: {errors:?}");
    // With the standard library's backlog of 128, about a third were reset and had to retry.
    assert_eq!(retried, 0, "no connection is refused or reset: {errors:?}");
}

/// Whether an Envoy holds a listener, a cluster, a route and endpoints.
fn whole(held: &BTreeMap<ResourceType, BTreeMap<String, Any>>) -> bool {
    [ResourceType::Listener, ResourceType::Cluster, ResourceType::Route, ResourceType::Endpoint]
        .into_iter()
        .all(|t| held.get(&t).is_some_and(|r| !r.is_empty()))
}
