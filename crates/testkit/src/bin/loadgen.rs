//! A steady HTTP load for the suites' scripts: `loadgen ADDR HOST RATE CONNECTIONS [SECONDS]`
//! sends GET / with that Host at RATE requests per second over CONNECTIONS keep-alive
//! connections to ADDR, until SECONDS have passed or it gets SIGTERM or SIGINT; then it prints
//! one line (testkit::LoadReport::summary) and exits 0 if no request failed, 1 otherwise.

use std::time::Duration;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [addr, host, rate, connections, rest @ ..] = args.as_slice() else {
        anyhow::bail!("usage: loadgen ADDR HOST RATE CONNECTIONS [SECONDS]");
    };
    let load = testkit::Load {
        addr: addr.parse()?,
        host: host.clone(),
        path: "/".into(),
        rate: rate.parse()?,
        connections: connections.parse()?,
    };
    let seconds: Option<u64> = rest.first().map(|s| s.parse()).transpose()?;
    let report = tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async move {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        let stop = async move {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
                _ = tokio::time::sleep(seconds.map_or(Duration::MAX, Duration::from_secs)) => {}
            }
        };
        anyhow::Ok(testkit::load::run(load, stop).await)
    })?;
    println!("loadgen: {}", report.summary());
    std::process::exit(i32::from(report.failed_total() > 0))
}
