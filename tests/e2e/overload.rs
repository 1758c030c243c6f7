//! Envoy's overload manager from contour-bootstrap's limits: connections beyond
//! `--overload-downstream-max-conn` are refused while readiness still answers.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use testkit::{Backend, Request};

use crate::harness::{EnvoySide, Harness, single_route};

/// Opens a connection and sends one keep-alive request; returns the connection and what it read
/// (empty when Envoy closed it without answering).
async fn keep_alive_request(addr: SocketAddr) -> anyhow::Result<(TcpStream, String)> {
    let mut stream = TcpStream::connect(addr).await?;
    stream.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").await?;
    let mut buf = vec![0u8; 4096];
    let read = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf)).await;
    let n = match read {
        Ok(Ok(n)) => n,
        Ok(Err(_)) => 0, // reset
        Err(_) => anyhow::bail!("no answer and no close within 5 s"),
    };
    Ok((stream, String::from_utf8_lossy(&buf[..n]).into_owned()))
}

#[tokio::test]
async fn connections_beyond_the_limit_are_refused_and_readiness_still_answers() -> anyhow::Result<()> {
    let web = Backend::start("web").await?;
    let (port, stats, enforced) = (testkit::free_port(), testkit::free_port(), testkit::free_port());
    let mut options = crate::harness::default_fleet_options(testkit::free_port(), testkit::free_port());
    options.compile.stats_listener = Some(SocketAddr::from(([127, 0, 0, 1], stats)));
    // Upstream's `omEnforcedHealthListener`: a readiness listener that does count.
    options.compile.om_enforced_health_listener = Some(SocketAddr::from(([127, 0, 0, 1], enforced)));
    let side = EnvoySide {
        overload: bootstrap::Overload { max_downstream_connections: Some(2), ..Default::default() },
        ..Default::default()
    };
    let h = Harness::start_envoy_side(&single_route(port, web.addr), options, None, side).await?;
    h.until(port, &Request::get("x", "/"), |r| r.status == 200).await?;
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let enforced = SocketAddr::from(([127, 0, 0, 1], enforced));
    let ready = testkit::request(enforced, &Request::get("x", "/ready")).await?;
    assert_eq!(ready.status, 200, "the enforced readiness listener answers below the limit");

    let (_first, answer) = keep_alive_request(addr).await?;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let (second, answer) = keep_alive_request(addr).await?;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let (_third, answer) = keep_alive_request(addr).await?;
    assert!(answer.is_empty(), "a third connection was served: {answer}");
    assert!(h.envoy.counter_sum("downstream_global_cx_overflow").await? >= 1, "Envoy counted the overflow");
    // Probes are not traffic: readiness answers at the limit.
    let ready = testkit::request(SocketAddr::from(([127, 0, 0, 1], stats)), &Request::get("x", "/ready")).await?;
    assert_eq!(ready.status, 200, "readiness at the connection limit");
    let (_probe, answer) = keep_alive_request(enforced).await?;
    assert!(answer.is_empty(), "the enforced readiness listener is full too: {answer}");

    // A connection freed is a connection available.
    drop(second);
    let served = testkit::eventually(Duration::from_secs(5), || async {
        keep_alive_request(addr).await.ok().filter(|(_, a)| a.starts_with("HTTP/1.1 200")).map(drop)
    })
    .await;
    assert!(served.is_some(), "no connection served after one closed");
    h.assert_no_nacks().await
}
