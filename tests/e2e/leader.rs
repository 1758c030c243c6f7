//! Two contour-serve replicas on one Lease: the leader is killed, then paused past its lease;
//! the other takes over status writes within the lease duration, and a resumed leader that lost
//! the Lease writes nothing.

use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use kube::api::Api;
use testkit::{ApiServer, Request, apply_yaml, signal, status_of, workspace_binary};

use crate::harness::{gateway, gateway_api_server, http_listener, http_route};

const LEASE: Duration = Duration::from_secs(3);

struct Replica {
    child: tokio::process::Child,
    metrics: u16,
}

impl Replica {
    fn start(api: &ApiServer, identity: &str) -> anyhow::Result<Self> {
        let metrics = testkit::free_port();
        let child = tokio::process::Command::new(workspace_binary("contour-serve")?)
            .arg("--kubeconfig")
            .arg(&api.kubeconfig)
            .args(["--xds-port", &testkit::free_port().to_string()])
            .args(["--http-address", "127.0.0.1", "--http-port", &metrics.to_string()])
            .args(["--health-address", "127.0.0.1", "--health-port", &metrics.to_string()])
            .args(["--debug-http-port", &testkit::free_port().to_string()])
            .args(["--leader-election-lease-duration", "3s", "--leader-election-renew-deadline", "2s"])
            .args(["--leader-election-retry-period", "500ms", "--leader-election-resource-namespace", "default"])
            .args(["--leader-election-identity", identity])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()?;
        Ok(Self { child, metrics })
    }

    fn pid(&self) -> u32 {
        self.child.id().unwrap_or_default()
    }

    /// Successful status writes so far (all kinds).
    async fn writes(&self) -> anyhow::Result<u64> {
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], self.metrics));
        let body = testkit::request(addr, &Request::get("x", "/metrics")).await?.body;
        Ok(body
            .lines()
            .filter(|l| l.starts_with("contour_status_update_success_total{"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum::<f64>() as u64)
    }
}

async fn holder(client: &kube::Client) -> Option<String> {
    let api: Api<Lease> = Api::namespaced(client.clone(), "default");
    api.get_opt("leader-elect").await.ok()??.spec?.holder_identity
}

async fn wait_holder(client: &kube::Client, who: &str, within: Duration) -> anyhow::Result<Duration> {
    let started = Instant::now();
    while started.elapsed() < within {
        if holder(client).await.as_deref() == Some(who) {
            return Ok(started.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    anyhow::bail!("{who} did not take the Lease within {within:?}; holder: {:?}", holder(client).await)
}

async fn wait_route_status(client: &kube::Client, name: &str) -> anyhow::Result<()> {
    for _ in 0..100 {
        if !status_of(client, "gateway.networking.k8s.io/v1", "HTTPRoute", "default", name).await?["parents"].is_null()
        {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    anyhow::bail!("HTTPRoute {name} never got status")
}

fn route(name: &str) -> String {
    http_route(
        name,
        &format!("  hostnames: [{name}.example.com]\n  rules: [{{backendRefs: [{{name: nowhere, port: 80}}]}}]"),
    )
}

#[tokio::test]
async fn the_survivor_takes_over_status_and_a_paused_leader_stops_writing() -> anyhow::Result<()> {
    let (api, client) = gateway_api_server().await?;
    apply_yaml(&client, &[gateway(&http_listener("http", testkit::free_port())), route("one")].concat()).await?;

    let mut a = Replica::start(&api, "a")?;
    wait_holder(&client, "a", Duration::from_secs(20)).await?;
    let b = Replica::start(&api, "b")?;
    wait_route_status(&client, "one").await?;

    // The leader dies: the survivor holds the Lease within a lease duration (plus a retry).
    a.child.kill().await?;
    let took = wait_holder(&client, "b", LEASE * 3).await?;
    assert!(took <= LEASE + Duration::from_secs(2), "takeover took {took:?}");
    apply_yaml(&client, &route("two")).await?;
    wait_route_status(&client, "two").await?;

    // The new leader is paused past its lease; a fresh replica takes over.
    let c = Replica::start(&api, "c")?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let b_writes = b.writes().await?;
    signal(b.pid(), "STOP")?;
    wait_holder(&client, "c", LEASE * 3).await?;
    signal(b.pid(), "CONT")?;
    // A change after the resume: only the leader writes it.
    apply_yaml(&client, &route("three")).await?;
    wait_route_status(&client, "three").await?;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(b.writes().await?, b_writes, "the paused replica wrote status after losing the Lease");
    assert!(c.writes().await? > 0);
    assert_eq!(holder(&client).await.as_deref(), Some("c"), "the resumed replica did not take the Lease back");

    // SIGTERM: the leader hands the Lease over on its way out, so the next one need not wait it out.
    let mut c = c;
    signal(c.pid(), "TERM")?;
    let exited = tokio::time::timeout(Duration::from_secs(10), c.child.wait()).await??;
    assert!(exited.success(), "contour-serve exited with {exited}");
    let took = wait_holder(&client, "b", LEASE * 3).await?;
    assert!(took < LEASE, "the Lease was not released on SIGTERM (takeover took {took:?})");
    Ok(())
}
