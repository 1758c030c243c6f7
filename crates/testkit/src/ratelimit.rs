//! The real rate-limit service (envoyproxy/ratelimit, built from its Go module by
//! `tests/upstream-e2e/install`; `CONTOUR_RATELIMIT` names the binary) with its own Redis
//! (`redis-server`), both on loopback, stopped when dropped.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running rate-limit service and its Redis.
pub struct RateLimitService {
    /// Its gRPC address (what Envoy asks).
    pub grpc: SocketAddr,
    redis: Child,
    service: Child,
    dir: PathBuf,
}

impl RateLimitService {
    /// Starts Redis and the service with this configuration (the service's YAML: a domain and
    /// its descriptors), and waits until both answer.
    pub async fn start(config: &str) -> anyhow::Result<Self> {
        let binary = std::env::var("CONTOUR_RATELIMIT")
            .map_err(|_| anyhow::anyhow!("CONTOUR_RATELIMIT is not set (tests/upstream-e2e/install builds it)"))?;
        let (redis_port, grpc_port, http_port, debug_port) =
            (crate::free_port(), crate::free_port(), crate::free_port(), crate::free_port());
        let dir = std::env::temp_dir().join(format!("contour-ratelimit-{}-{grpc_port}", std::process::id()));
        std::fs::create_dir_all(dir.join("ratelimit/config"))?;
        std::fs::write(dir.join("ratelimit/config/config.yaml"), config)?;
        let redis = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &redis_port.to_string(), "--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        let redis_addr = SocketAddr::from(([127, 0, 0, 1], redis_port));
        let up = crate::eventually(Duration::from_secs(10), || async {
            tokio::net::TcpStream::connect(redis_addr).await.ok()
        })
        .await;
        let service = Command::new(binary)
            .env("USE_STATSD", "false")
            .env("LOG_LEVEL", "warn")
            .env("REDIS_SOCKET_TYPE", "tcp")
            .env("REDIS_URL", redis_addr.to_string())
            .env("RUNTIME_ROOT", &dir)
            .env("RUNTIME_SUBDIRECTORY", "ratelimit")
            .env("RUNTIME_WATCH_ROOT", "false")
            .env("RUNTIME_IGNOREDOTFILES", "true")
            .env("GRPC_HOST", "127.0.0.1")
            .env("GRPC_PORT", grpc_port.to_string())
            .env("HOST", "127.0.0.1")
            .env("PORT", http_port.to_string())
            .env("DEBUG_HOST", "127.0.0.1")
            .env("DEBUG_PORT", debug_port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        let mut me = Self { grpc: SocketAddr::from(([127, 0, 0, 1], grpc_port)), redis, service, dir };
        anyhow::ensure!(up.is_some(), "redis-server did not come up on {redis_addr}");
        let health = SocketAddr::from(([127, 0, 0, 1], http_port));
        let ready = crate::eventually(Duration::from_secs(20), || async {
            crate::request(health, &crate::Request::get("ratelimit", "/healthcheck"))
                .await
                .ok()
                .filter(|r| r.status == 200)
        })
        .await;
        if ready.is_none() {
            me.stop();
            anyhow::bail!("the rate-limit service did not become healthy");
        }
        Ok(me)
    }

    /// Stops the service (Redis stays), as a crashed or unreachable service would look.
    pub fn stop(&mut self) {
        let _ = self.service.kill();
        let _ = self.service.wait();
    }
}

impl Drop for RateLimitService {
    fn drop(&mut self) {
        self.stop();
        let _ = self.redis.kill();
        let _ = self.redis.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
