//! The floor: what the API server and Envoy themselves need, whatever the controller.
//!
//! - A bare client listing every object of the kinds a controller watches: the lists run at
//!   once, paged as the controllers' watches page them (500), served from the API server's watch
//!   cache (`resourceVersion=0`), and read as bytes (only each page's `continue` is parsed).
//! - A cold Envoy against a control plane that already holds the final configuration: the
//!   controller's Envoy is stopped and started again, and the time runs from its start to the
//!   last route served.
//!
//! Start → served over the sum of the two is how close a controller comes to the floor.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use kube::api::ListParams;
use serde::Deserialize;
use testkit::Request;

use crate::Running;
use crate::apps::Routes;

/// The collections a bare client lists for `routes`: the apps' own kinds and the small ones
/// every controller also watches.
fn collections(routes: Routes) -> Vec<&'static str> {
    let mut paths =
        vec!["/api/v1/services", "/apis/discovery.k8s.io/v1/endpointslices", "/api/v1/namespaces", "/api/v1/secrets"];
    match routes {
        Routes::Httpproxy => paths.push("/apis/projectcontour.io/v1/httpproxies"),
        Routes::Httproute => paths.extend([
            "/apis/gateway.networking.k8s.io/v1/httproutes",
            "/apis/gateway.networking.k8s.io/v1/gateways",
            "/apis/gateway.networking.k8s.io/v1/gatewayclasses",
            "/apis/gateway.networking.k8s.io/v1beta1/referencegrants",
        ]),
    }
    paths
}

#[derive(Deserialize)]
struct Page {
    metadata: PageMeta,
}

#[derive(Deserialize)]
struct PageMeta {
    #[serde(rename = "continue", default)]
    next: Option<String>,
}

/// How long a fresh client takes to list every collection of [`collections`], all at once.
pub async fn list_time(client: &kube::Client, routes: Routes) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let lists = collections(routes).into_iter().map(|path| async move {
        let mut params = ListParams::default().match_any().limit(500);
        loop {
            let request = kube::core::Request::new(path).list(&params)?;
            let text = client.request_text(request).await?;
            match serde_json::from_str::<Page>(&text)?.metadata.next.filter(|c| !c.is_empty()) {
                Some(token) => params = params.continue_token(&token),
                None => return anyhow::Ok(()),
            }
        }
    });
    futures::future::try_join_all(lists).await?;
    Ok(started.elapsed())
}

/// Stops the run's Envoy and starts it again: the time from its start to `last` served on
/// `listener`, or `None` after `timeout`.
pub async fn cold_envoy(run: &mut Running, listener: SocketAddr, last: &str, timeout: Duration) -> Option<Duration> {
    let (bootstrap, args) = run.envoy_args.clone();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    // Nothing answers once it is stopped: the first 200 is the fresh Envoy's.
    let started = run.envoy.restart_file(&bootstrap, &args).await.ok()?;
    testkit::eventually(timeout, || async {
        let r = testkit::request(listener, &Request::get(last, "/")).await.ok()?;
        (r.status == 200).then(|| started.elapsed())
    })
    .await
}
