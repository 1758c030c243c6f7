//! The real Envoy binary, run from a bootstrap with its admin interface on a free loopback port.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bootstrap::{Admin, Bootstrap};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// How many Envoys may run at once in one test process: two for each test thread
/// (`RUST_TEST_THREADS`, else the CPU count, as libtest decides) and one more, so that a test
/// waiting for another Envoy never waits on tests that each hold some and wait for more.
fn max_concurrent() -> usize {
    let threads = std::env::var("RUST_TEST_THREADS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .or_else(|| std::thread::available_parallelism().ok().map(usize::from))
        .unwrap_or(1);
    2 * threads.max(1) + 1
}

/// A running Envoy; killed when dropped.
pub struct Envoy {
    /// The admin interface.
    pub admin: SocketAddr,
    /// The working directory (bootstrap and log).
    pub dir: PathBuf,
    child: tokio::process::Child,
    _permit: OwnedSemaphorePermit,
}

impl Drop for Envoy {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn binary() -> anyhow::Result<PathBuf> {
    match std::env::var_os("CONTOUR_ENVOY") {
        Some(p) => Ok(PathBuf::from(p)),
        None => anyhow::bail!("CONTOUR_ENVOY is not set: run the tests through hack/test, which installs Envoy"),
    }
}

/// One of the [`max_concurrent`] places for an Envoy in this process.
async fn slot() -> anyhow::Result<OwnedSemaphorePermit> {
    static SLOTS: OnceLock<Arc<Semaphore>> = OnceLock::new();
    Ok(Arc::clone(SLOTS.get_or_init(|| Arc::new(Semaphore::new(max_concurrent())))).acquire_owned().await?)
}

impl Envoy {
    /// Starts Envoy with this bootstrap (its admin setting is replaced by a free port) and
    /// waits until its admin interface answers.
    pub async fn start(mut bootstrap: Bootstrap) -> anyhow::Result<Self> {
        let permit = slot().await?;
        let admin_port = crate::free_port();
        bootstrap.admin = Admin::Port(admin_port);
        let dir = std::env::temp_dir().join(format!("contour-envoy-{}-{admin_port}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        // A relative resources directory lives in this Envoy's own directory.
        if let Some(resources) = bootstrap.resources_dir.take() {
            bootstrap.resources_dir = Some(dir.join(resources));
        }
        for (path, json) in bootstrap.sds_files() {
            std::fs::create_dir_all(path.parent().unwrap_or(&dir))?;
            std::fs::write(&path, serde_json::to_vec_pretty(&json)?)?;
        }
        let config = dir.join("bootstrap.json");
        std::fs::write(&config, serde_json::to_vec_pretty(&bootstrap.to_json())?)?;
        Self::spawn(&config, admin_port, dir, permit).await
    }

    /// Starts Envoy from a bootstrap file someone else wrote, with extra command-line arguments
    /// such as `--service-cluster`, without waiting for it. Its admin interface is whatever the
    /// file says; [`Envoy::admin`] is `stats`, the stats listener the controller gives it, where
    /// [`Envoy::counter_sum`] reads once the controller has configured it.
    pub async fn start_file(config: &std::path::Path, stats: SocketAddr, args: &[&str]) -> anyhow::Result<Self> {
        let permit = slot().await?;
        let dir = std::env::temp_dir().join(format!("contour-envoy-{}-{}", std::process::id(), stats.port()));
        std::fs::create_dir_all(&dir)?;
        let child = Self::command(config, &dir, args)?.spawn()?;
        Ok(Self { admin: stats, dir, child, _permit: permit })
    }

    /// Stops this Envoy (started by [`Envoy::start_file`]) and starts a fresh one from `config`
    /// with `args`, in the same directory: a cold Envoy against a control plane that already
    /// holds the configuration. Returns when the fresh one was started.
    pub async fn restart_file(
        &mut self,
        config: &std::path::Path,
        args: &[&str],
    ) -> anyhow::Result<std::time::Instant> {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
        let started = std::time::Instant::now();
        self.child = Self::command(config, &self.dir, args)?.spawn()?;
        Ok(started)
    }

    fn command(
        config: &std::path::Path,
        dir: &std::path::Path,
        args: &[&str],
    ) -> anyhow::Result<tokio::process::Command> {
        let mut command = tokio::process::Command::new(binary()?);
        command
            .arg("-c")
            .arg(config)
            .args(["--disable-hot-restart", "--concurrency", "1", "--log-level", "warn", "--drain-time-s", "1"])
            // Access log lines reach their file within 100 ms, not Envoy's default 10 s.
            .args(["--file-flush-interval-msec", "100"])
            .args(args)
            .arg("--log-path")
            .arg(dir.join("envoy.log"))
            .stdin(std::process::Stdio::null())
            // What an Envoy pod's environment has (upstream's tracing tags read them).
            .env("HOSTNAME", dir.file_name().unwrap_or_default())
            .env("CONTOUR_NAMESPACE", "projectcontour")
            // Access logs (upstream's configuration writes them to stdout) stay out of the output.
            .stdout(std::fs::File::create(dir.join("stdout.log"))?)
            .kill_on_drop(true);
        Ok(command)
    }

    async fn spawn(
        config: &std::path::Path,
        admin_port: u16,
        dir: PathBuf,
        permit: OwnedSemaphorePermit,
    ) -> anyhow::Result<Self> {
        let child = Self::command(config, &dir, &[])?.spawn()?;
        let envoy = Self { admin: SocketAddr::from(([127, 0, 0, 1], admin_port)), dir, child, _permit: permit };
        let up =
            crate::eventually(Duration::from_secs(30), || async { envoy.admin_get("/server_info").await.ok() }).await;
        anyhow::ensure!(up.is_some(), "Envoy admin did not come up; log:\n{}", envoy.log());
        Ok(envoy)
    }

    /// Envoy's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("envoy.log")).unwrap_or_default()
    }

    /// What Envoy wrote to its standard output so far: the access log, where upstream's
    /// configuration sends it.
    pub fn stdout(&self) -> String {
        std::fs::read_to_string(self.dir.join("stdout.log")).unwrap_or_default()
    }

    /// Waits (at most 10 s) for a line of standard output that `accept` likes, and returns it.
    pub async fn stdout_line(&self, accept: impl Fn(&str) -> bool) -> Option<String> {
        crate::eventually(Duration::from_secs(10), || {
            let found = self.stdout().lines().find(|l| accept(l)).map(str::to_string);
            async move { found }
        })
        .await
    }

    /// GETs an admin path and returns the body.
    pub async fn admin_get(&self, path: &str) -> anyhow::Result<String> {
        let r = crate::request(self.admin, &crate::Request::get("admin", path)).await?;
        anyhow::ensure!(r.status == 200, "admin {path}: {}", r.status);
        Ok(r.body)
    }

    /// The sum of every counter whose name contains `needle`. Envoy filters them (a regular
    /// expression, where a `.` of the needle matches itself among others): at 50k clusters
    /// every stat as JSON takes longer than a request's timeout.
    pub async fn counter_sum(&self, needle: &str) -> anyhow::Result<u64> {
        let body = self.admin_get(&format!("/stats?format=json&filter={}", stat_filter(needle))).await?;
        let json: serde_json::Value = serde_json::from_str(&body)?;
        Ok(json["stats"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|s| s["name"].as_str().is_some_and(|n| n.contains(needle)))
            .filter_map(|s| s["value"].as_u64())
            .sum())
    }

    /// The time Envoy has spent applying configuration updates, in milliseconds, over all xDS
    /// subscriptions (the sums of its `update_duration` histograms).
    pub async fn update_time_ms(&self) -> anyhow::Result<f64> {
        let body = self.admin_get("/stats/prometheus?usedonly&filter=update_duration").await?;
        Ok(body
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| {
                let (name, value) = l.rsplit_once(' ')?;
                let metric = name.split('{').next()?;
                metric.ends_with("update_duration_sum").then(|| value.parse::<f64>().ok()).flatten()
            })
            .sum())
    }

    /// Configuration updates Envoy rejected, over all xDS subscriptions.
    pub async fn rejected_updates(&self) -> anyhow::Result<u64> {
        self.counter_sum("update_rejected").await
    }
}

/// `needle` as Envoy's stats `filter` parameter: its longest run of letters, digits, `_`, `-`
/// and `.` (all of it, for a stat name), which needs no escaping in a query and matches a
/// superset of the names containing `needle`.
fn stat_filter(needle: &str) -> String {
    needle
        .split(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
        .max_by_key(|s| s.len())
        .unwrap_or("")
        .to_string()
}
