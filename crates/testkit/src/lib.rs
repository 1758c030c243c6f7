//! Real parts for tests: the Envoy binary, echo backends (HTTP and TLS), an HTTP(S) client,
//! certificates, and free loopback ports. Everything started here stops when dropped.

mod apiserver;
mod authz;
mod backend;
mod certs;
mod client;
mod envoy;
mod h3;
mod jwt;
pub mod load;
pub mod mmdb;
mod netns;
mod oidc;
mod otlp;
mod process;
mod ratelimit;
mod relay;
mod serve;

pub use apiserver::{
    ApiServer, apply_yaml, delete_yaml, dry_run_yaml, object_of, set_status, status_history, status_of,
};
pub use authz::{AuthServer, basic, serve_test_mode};
pub use backend::{Backend, serve_echo, tls_acceptor};
pub use certs::{Ca, Issued};
pub use client::{Request, Response, h2_preface_mtls, h2_preface_tls, request, request_mtls, request_tls};
pub use envoy::Envoy;
pub use h3::request_h3;
pub use jwt::{JwksServer, Signer, now_s};
pub use load::{Load, LoadReport};
pub use netns::NetnsBackend;
pub use oidc::{OIDC_CLIENT, OIDC_USER, OidcProvider};
pub use otlp::{OtlpCollector, Span};
pub use process::{signal, usage, workspace_binary};
pub use ratelimit::RateLimitService;
pub use relay::Relay;

use std::net::TcpListener;
use std::time::Duration;

/// Checks, before a tool starts any work, that the real parts it needs are installed: each
/// variable (`CONTOUR_ENVOY`, `CONTOUR_KUBE_APISERVER`, ...) names an existing file. The error
/// names `script`, the command that installs them.
pub fn require_tools(vars: &[&str], script: &str) -> anyhow::Result<()> {
    let missing: Vec<String> = vars
        .iter()
        .filter_map(|var| match std::env::var_os(var) {
            None => Some(format!("{var} is not set")),
            Some(path) if !std::path::Path::new(&path).is_file() => {
                Some(format!("{var} names {}, which does not exist", std::path::Path::new(&path).display()))
            }
            Some(_) => None,
        })
        .collect();
    anyhow::ensure!(missing.is_empty(), "{}: run it through {script}, which installs them", missing.join("; "));
    Ok(())
}

/// A port that was free a moment ago on 127.0.0.1, for something else to bind.
///
/// Taken below the kernel's ephemeral range (32768 and up), where outgoing connections of the
/// API server, etcd and Envoy would otherwise grab a port between our check and its use; a
/// per-process sequence keeps two tests of one run from getting the same port.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    const LOW: u32 = 20000;
    const SPAN: u32 = 12000;
    let seed = std::process::id().wrapping_mul(7919);
    for _ in 0..SPAN {
        let port = (LOW + (seed.wrapping_add(NEXT.fetch_add(1, Ordering::Relaxed))) % SPAN) as u16;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free loopback port between {LOW} and {}", LOW + SPAN)
}

/// Polls `check` every 50 ms until it returns `Some`, for at most `timeout`.
pub async fn eventually<T, F, Fut>(timeout: Duration, mut check: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(v) = check().await {
            return Some(v);
        }
        if tokio::time::Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
