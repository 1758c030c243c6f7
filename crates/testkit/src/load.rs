//! Steady load through Envoy, and what a user would count: requests sent at a fixed rate over
//! keep-alive HTTP/1.1 connections, the failures (no answer, or a 5xx) by kind, and latency
//! percentiles.
//!
//! A connection the server closes (Envoy draining answers `Connection: close`) is replaced before
//! the next request. A request that could not be sent at all, because the reused connection was
//! already closed by the server, is sent once more on a new connection, as HTTP clients do; those
//! are counted apart. A request sent and then cut off before its answer is a failure.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::{BodyExt as _, Empty};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use tokio::time::Instant;

/// What to send, how often.
#[derive(Debug, Clone)]
pub struct Load {
    /// Where (Envoy's listener, or a Service in front of it).
    pub addr: SocketAddr,
    /// The Host header.
    pub host: String,
    /// The path.
    pub path: String,
    /// Requests per second, over all connections.
    pub rate: u32,
    /// Connections, each sending in turn.
    pub connections: u32,
}

/// What the load saw.
#[derive(Debug, Clone, Default)]
pub struct LoadReport {
    /// Requests sent (retries not counted twice).
    pub sent: u64,
    /// Answered below 500.
    pub ok: u64,
    /// Failed, by kind (`connect`, `timeout`, `reset`, `status 503`, ...).
    pub failed: BTreeMap<String, u64>,
    /// Sent again once on a new connection after a reused one was found closed.
    pub retried: u64,
    /// Connections opened.
    pub connections: u64,
    /// How long the load ran.
    pub elapsed: Duration,
    latencies: Vec<Duration>,
}

impl LoadReport {
    /// All failures.
    pub fn failed_total(&self) -> u64 {
        self.failed.values().sum()
    }

    /// The latency below which `p` (0–100) percent of answered requests fell.
    pub fn percentile(&self, p: f64) -> Duration {
        let mut sorted = self.latencies.clone();
        sorted.sort_unstable();
        if sorted.is_empty() {
            return Duration::ZERO;
        }
        let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
        sorted[rank.min(sorted.len() - 1)]
    }

    /// One line: `sent N ok N failed N (kinds) retried N connections N rate R/s p50 p99 max`.
    pub fn summary(&self) -> String {
        let kinds: Vec<String> = self.failed.iter().map(|(k, n)| format!("{k}: {n}")).collect();
        let rate = self.sent as f64 / self.elapsed.as_secs_f64().max(1e-9);
        format!(
            "sent {} ok {} failed {}{} retried {} connections {} rate {rate:.0}/s p50 {:.1} ms p99 {:.1} ms max {:.1} ms",
            self.sent,
            self.ok,
            self.failed_total(),
            if kinds.is_empty() { String::new() } else { format!(" ({})", kinds.join(", ")) },
            self.retried,
            self.connections,
            ms(self.percentile(50.0)),
            ms(self.percentile(99.0)),
            ms(self.percentile(100.0)),
        )
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// How long one request may take before it counts as failed.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs `load` until `stop` resolves, then lets requests in flight finish.
pub async fn run(load: Load, stop: impl std::future::Future<Output = ()>) -> LoadReport {
    let report = Arc::new(Mutex::new(LoadReport::default()));
    let (quit, quitting) = tokio::sync::watch::channel(false);
    let connections = load.connections.max(1);
    let period = Duration::from_secs_f64(f64::from(connections) / f64::from(load.rate.max(1)));
    let started = Instant::now();
    let workers: Vec<_> = (0..connections)
        .map(|i| {
            let (load, report, mut quitting) = (load.clone(), Arc::clone(&report), quitting.clone());
            // Spread the connections' turns over one period.
            let first = started + period.mul_f64(f64::from(i) / f64::from(connections));
            tokio::spawn(async move {
                let mut ticks = tokio::time::interval_at(first, period);
                ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                let mut conn = Conn::default();
                loop {
                    tokio::select! {
                        _ = ticks.tick() => {}
                        _ = quitting.wait_for(|q| *q) => break,
                    }
                    let outcome = conn.send(&load).await;
                    record(&report, outcome);
                }
            })
        })
        .collect();
    stop.await;
    let _ = quit.send(true);
    for w in workers {
        let _ = w.await;
    }
    let mut out = std::mem::take(&mut *report.lock().expect("report lock"));
    out.elapsed = started.elapsed();
    out
}

/// One request's end.
struct Outcome {
    result: Result<(u16, Duration), String>,
    retried: bool,
    opened: u64,
}

fn record(report: &Mutex<LoadReport>, outcome: Outcome) {
    let mut r = report.lock().expect("report lock");
    r.sent += 1;
    r.connections += outcome.opened;
    r.retried += u64::from(outcome.retried);
    match outcome.result {
        Ok((status, latency)) if status < 500 => {
            r.ok += 1;
            r.latencies.push(latency);
        }
        Ok((status, _)) => *r.failed.entry(format!("status {status}")).or_default() += 1,
        Err(kind) => *r.failed.entry(kind).or_default() += 1,
    }
}

/// One keep-alive connection, opened when needed.
#[derive(Default)]
struct Conn {
    sender: Option<hyper::client::conn::http1::SendRequest<Empty<Bytes>>>,
    /// Requests answered on the current connection.
    used: u32,
}

impl Conn {
    async fn send(&mut self, load: &Load) -> Outcome {
        let started = Instant::now();
        let mut opened = 0;
        let mut retried = false;
        loop {
            if self.sender.as_ref().is_none_or(|s| s.is_closed()) {
                match tokio::time::timeout(REQUEST_TIMEOUT, connect(load.addr)).await {
                    Ok(Ok(s)) => {
                        self.sender = Some(s);
                        self.used = 0;
                        opened += 1;
                    }
                    Ok(Err(_)) => return Outcome { result: Err("connect".into()), retried, opened },
                    Err(_) => return Outcome { result: Err("connect timeout".into()), retried, opened },
                }
            }
            let reused = self.used > 0;
            let sender = self.sender.as_mut().expect("just opened");
            let request = hyper::Request::get(&load.path)
                .header(hyper::header::HOST, &load.host)
                .body(Empty::<Bytes>::new())
                .expect("a valid request");
            let answer = tokio::time::timeout(REQUEST_TIMEOUT, async {
                let response = sender.send_request(request).await?;
                let status = response.status().as_u16();
                let close = response
                    .headers()
                    .get(hyper::header::CONNECTION)
                    .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"close"));
                response.into_body().collect().await?;
                Ok::<_, hyper::Error>((status, close))
            })
            .await;
            match answer {
                Ok(Ok((status, close))) => {
                    self.used += 1;
                    if close {
                        self.sender = None;
                    }
                    return Outcome { result: Ok((status, started.elapsed())), retried, opened };
                }
                Ok(Err(e)) => {
                    self.sender = None;
                    // Never sent: the reused connection was already closed. A client sends it
                    // again on a new one.
                    if reused && !retried && e.is_canceled() {
                        retried = true;
                        continue;
                    }
                    let kind = if e.is_incomplete_message() { "closed before an answer" } else { "reset" };
                    return Outcome { result: Err(kind.into()), retried, opened };
                }
                Err(_) => {
                    self.sender = None;
                    return Outcome { result: Err("timeout".into()), retried, opened };
                }
            }
        }
    }
}

async fn connect(addr: SocketAddr) -> anyhow::Result<hyper::client::conn::http1::SendRequest<Empty<Bytes>>> {
    let stream = tokio::net::TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(connection);
    Ok(sender)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_steady_load_is_counted_and_a_dead_address_fails_every_request() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        tokio::spawn(crate::serve_echo(listener, "load".into(), None));
        let load = Load { addr, host: "load.test".into(), path: "/".into(), rate: 200, connections: 4 };
        let report = run(load.clone(), tokio::time::sleep(Duration::from_millis(500))).await;
        assert!(
            (80..=110).contains(&report.sent),
            "about 100 requests in half a second at 200/s: {}",
            report.summary()
        );
        assert_eq!((report.ok, report.failed_total()), (report.sent, 0), "{}", report.summary());
        assert_eq!(report.connections, 4, "keep-alive: one connection each");

        let dead = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let dead_addr = dead.local_addr().expect("addr");
        drop(dead);
        let report = run(Load { addr: dead_addr, ..load }, tokio::time::sleep(Duration::from_millis(200))).await;
        assert!(report.sent > 0 && report.ok == 0, "{}", report.summary());
        assert_eq!(report.failed.get("connect"), Some(&report.sent), "{}", report.summary());
    }
}
