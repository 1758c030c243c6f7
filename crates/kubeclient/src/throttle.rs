//! Client-side throttling (upstream's `kubernetesClientQPS` / `kubernetesClientBurst`): a token
//! bucket in front of every request, as client-go's rate limiter: `burst` requests may go at
//! once, then `qps` a second. Long watches cost one token when they start.
//!
//! The limit is taken in `poll_ready`, so the client's buffer holds requests back while the
//! bucket is empty; nothing is dropped.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::time::Instant;

/// Requests a second and the burst above it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Requests a second, on average.
    pub qps: f64,
    /// Requests that may go at once after a quiet period (at least 1).
    pub burst: u32,
}

impl Limits {
    /// client-go's defaults for the one of the two not given (5 a second, a burst of 10), as
    /// upstream passes only what is set; `None` when neither is.
    pub fn from_settings(qps: Option<f64>, burst: Option<u32>) -> Option<Self> {
        let qps = qps.filter(|q| *q > 0.0);
        let burst = burst.filter(|b| *b > 0);
        if qps.is_none() && burst.is_none() {
            return None;
        }
        Some(Self { qps: qps.unwrap_or(5.0), burst: burst.unwrap_or(10) })
    }
}

/// The shared bucket: tokens may go below zero, each one a request already waiting its turn.
#[derive(Debug)]
struct Bucket {
    limits: Limits,
    tokens: f64,
    at: Instant,
}

impl Bucket {
    /// Takes a token; how long its request must wait for it.
    fn reserve(&mut self, now: Instant) -> Duration {
        let burst = f64::from(self.limits.burst.max(1));
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.limits.qps).min(burst);
        self.at = now;
        self.tokens -= 1.0;
        if self.tokens >= 0.0 { Duration::ZERO } else { Duration::from_secs_f64(-self.tokens / self.limits.qps) }
    }
}

/// The layer; without limits it passes every request straight through.
#[derive(Debug, Clone)]
pub struct ThrottleLayer {
    bucket: Option<Arc<Mutex<Bucket>>>,
}

impl ThrottleLayer {
    /// A layer for these limits (`None`: no throttling).
    pub fn new(limits: Option<Limits>) -> Self {
        let bucket = limits.map(|limits| {
            Arc::new(Mutex::new(Bucket { limits, tokens: f64::from(limits.burst.max(1)), at: Instant::now() }))
        });
        Self { bucket }
    }
}

impl<S> tower::Layer<S> for ThrottleLayer {
    type Service = Throttle<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Throttle { inner, bucket: self.bucket.clone(), wait: None, reserved: false }
    }
}

/// The service: a request waits for its token, then goes.
pub struct Throttle<S> {
    inner: S,
    bucket: Option<Arc<Mutex<Bucket>>>,
    wait: Option<Pin<Box<tokio::time::Sleep>>>,
    reserved: bool,
}

impl<S, R> tower::Service<R> for Throttle<S>
where
    S: tower::Service<R>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        if let Some(bucket) = &self.bucket
            && !self.reserved
        {
            let now = Instant::now();
            let wait = bucket.lock().unwrap_or_else(std::sync::PoisonError::into_inner).reserve(now);
            self.reserved = true;
            if !wait.is_zero() {
                self.wait = Some(Box::pin(tokio::time::sleep_until(now + wait)));
            }
        }
        if let Some(wait) = &mut self.wait {
            ready!(wait.as_mut().poll(cx));
            self.wait = None;
        }
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: R) -> Self::Future {
        self.reserved = false;
        self.inner.call(request)
    }
}

#[cfg(test)]
mod tests {
    use tower::{Service, ServiceExt};

    use super::*;

    #[test]
    fn the_defaults_are_client_gos_for_what_is_not_set() {
        assert_eq!(Limits::from_settings(None, None), None);
        assert_eq!(Limits::from_settings(Some(0.0), Some(0)), None, "zero means unset, as upstream");
        assert_eq!(Limits::from_settings(Some(50.0), None), Some(Limits { qps: 50.0, burst: 10 }));
        assert_eq!(Limits::from_settings(None, Some(100)), Some(Limits { qps: 5.0, burst: 100 }));
    }

    /// Sends `n` requests one after another; the (paused) time they took.
    async fn send(layer: &ThrottleLayer, n: usize) -> Duration {
        let mut service =
            tower::Layer::layer(layer, tower::service_fn(|()| async { Ok::<_, std::convert::Infallible>(()) }));
        let start = Instant::now();
        for _ in 0..n {
            service.ready().await.expect("ready").call(()).await.expect("answered");
        }
        start.elapsed()
    }

    #[tokio::test(start_paused = true)]
    async fn a_burst_goes_at_once_then_qps_a_second() {
        let layer = ThrottleLayer::new(Some(Limits { qps: 10.0, burst: 5 }));
        assert!(send(&layer, 5).await < Duration::from_millis(1), "the burst");
        // Five more: one every 100 ms.
        let took = send(&layer, 5).await;
        assert!((Duration::from_millis(499)..Duration::from_millis(520)).contains(&took), "{took:?}");
        // After a quiet second the bucket is full again, and no fuller than the burst.
        tokio::time::sleep(Duration::from_secs(10)).await;
        assert!(send(&layer, 5).await < Duration::from_millis(1));
        let took = send(&layer, 1).await;
        assert!(took >= Duration::from_millis(99), "{took:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn clones_share_one_bucket_and_no_limits_means_none() {
        let layer = ThrottleLayer::new(Some(Limits { qps: 1.0, burst: 1 }));
        let (a, b) = (layer.clone(), layer);
        assert!(send(&a, 1).await < Duration::from_millis(1));
        assert!(send(&b, 1).await >= Duration::from_millis(999), "the other clone waits for the shared token");
        assert!(send(&ThrottleLayer::new(None), 1000).await < Duration::from_millis(1));
    }
}
