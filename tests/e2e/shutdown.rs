//! contour-shutdown-manager against the real Envoy: readiness fails at once, the request in
//! flight completes, and the ready file appears only after it; the sidecar's /shutdown answers
//! only once the ready file exists.

use std::time::{Duration, Instant};

use testkit::{Backend, Request, workspace_binary};

use crate::harness::{Harness, single_route};

#[tokio::test]
async fn shutdown_drains_envoy_before_saying_ready() -> anyhow::Result<()> {
    let web = Backend::start("web").await?;
    let port = testkit::free_port();
    let h = Harness::start(&single_route(port, web.addr), false).await?;
    h.until(port, &Request::get("x", "/"), |r| r.status == 200).await?;
    let ready = std::env::temp_dir().join(format!("contour-drained-{}-{port}", std::process::id()));
    let _ = std::fs::remove_file(&ready);

    // A long request is in flight when the pod starts stopping.
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let in_flight = tokio::spawn(async move {
        testkit::request(addr, &Request::get("x", "/slow").header("x-echo-delay-ms", "3000")).await
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = Instant::now();
    let mut shutdown = tokio::process::Command::new(workspace_binary("contour-shutdown-manager")?)
        .args(["shutdown", "--admin-address", &h.envoy.admin.to_string(), "--check-interval", "200ms"])
        .arg("--ready-file")
        .arg(&ready)
        .kill_on_drop(true)
        .spawn()?;

    // Readiness fails at once (Envoy's health checks are failed first).
    let draining = testkit::eventually(Duration::from_secs(2), || async {
        h.envoy.admin_get("/ready").await.is_err().then_some(())
    })
    .await;
    assert!(draining.is_some(), "Envoy still reports ready");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!ready.exists(), "the ready file appeared while a request was still open");

    let answer = in_flight.await??;
    assert_eq!(answer.status, 200, "the request in flight completed");
    let status = tokio::time::timeout(Duration::from_secs(10), shutdown.wait()).await??;
    assert!(status.success());
    assert!(ready.exists(), "the ready file was written after the drain");
    assert!(started.elapsed() >= Duration::from_millis(2000), "it waited for the request: {:?}", started.elapsed());
    let _ = std::fs::remove_file(&ready);
    Ok(())
}

#[tokio::test]
async fn the_sidecar_answers_shutdown_only_once_drained() -> anyhow::Result<()> {
    let port = testkit::free_port();
    let ready = std::env::temp_dir().join(format!("contour-sidecar-{}-{port}", std::process::id()));
    let _ = std::fs::remove_file(&ready);
    let _serve = tokio::process::Command::new(workspace_binary("contour-shutdown-manager")?)
        .args(["serve", "--serve-port", &port.to_string()])
        .arg("--ready-file")
        .arg(&ready)
        .kill_on_drop(true)
        .spawn()?;
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let healthy = testkit::eventually(Duration::from_secs(10), || async {
        testkit::request(addr, &Request::get("x", "/healthz")).await.ok().filter(|r| r.status == 200)
    })
    .await;
    assert!(healthy.is_some(), "/healthz");
    let waiting = tokio::spawn(async move { testkit::request(addr, &Request::get("x", "/shutdown")).await });
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(!waiting.is_finished(), "/shutdown answered before the ready file existed");
    std::fs::write(&ready, b"")?;
    let answer = tokio::time::timeout(Duration::from_secs(5), waiting).await???;
    assert_eq!(answer.status, 200);
    let _ = std::fs::remove_file(&ready);
    Ok(())
}

#[tokio::test]
async fn envoy_serves_its_stats_health_and_read_only_admin_listeners() -> anyhow::Result<()> {
    let web = Backend::start("web").await?;
    let port = testkit::free_port();
    let (stats, admin) = (testkit::free_port(), testkit::free_port());
    let mut options = crate::harness::default_fleet_options(testkit::free_port(), testkit::free_port());
    options.compile.stats_listener = Some(std::net::SocketAddr::from(([127, 0, 0, 1], stats)));
    options.compile.admin_listener = Some(std::net::SocketAddr::from(([127, 0, 0, 1], admin)));
    let h = Harness::start_with(&single_route(port, web.addr), crate::harness::GATEWAY, options).await?;
    let at = |p: u16| std::net::SocketAddr::from(([127, 0, 0, 1], p));
    let ready = h.until(stats, &Request::get("x", "/ready"), |r| r.status == 200).await?;
    assert!(ready.body.contains("LIVE"), "{}", ready.body);
    let prometheus = testkit::request(at(stats), &Request::get("x", "/stats/prometheus")).await?;
    assert!(prometheus.body.contains("envoy_server_live"), "Prometheus stats through the stats listener");
    assert_eq!(testkit::request(at(stats), &Request::get("x", "/config_dump")).await?.status, 404, "only stats");
    let info = testkit::request(at(admin), &Request::get("x", "/server_info")).await?;
    assert!(info.status == 200 && info.body.contains("\"state\""), "{info:?}");
    let mut post = Request::get("x", "/healthcheck/fail");
    post.method = "POST".into();
    assert_eq!(testkit::request(at(admin), &post).await?.status, 404, "the admin listener is read-only");
    // After the shutdown hook fails the health checks, readiness on the stats listener says so.
    let mut fail = Request::get("x", "/healthcheck/fail");
    fail.method = "POST".into();
    testkit::request(h.envoy.admin, &fail).await?;
    assert_eq!(testkit::request(at(stats), &Request::get("x", "/ready")).await?.status, 503);
    h.assert_no_nacks().await
}
