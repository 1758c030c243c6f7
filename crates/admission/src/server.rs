//! The webhook's HTTPS server: AdmissionReviews in, the judge's answers out.

use std::convert::Infallible;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;

use crate::Judge;

/// The largest review read: the API server's own limit on an object is 3 MiB, and the review
/// carries the old object beside the new one.
const MAX_BODY: usize = 8 << 20;

/// What the webhook answered.
#[derive(Debug, Default)]
pub struct Counters {
    /// Reviews answered.
    pub reviews: AtomicU64,
    /// Reviews denied.
    pub denied: AtomicU64,
}

/// Serves AdmissionReviews (`POST`, any path) over HTTPS until `shutdown`, judging each against
/// the store's current snapshot. One review is judged at a time. Until the store has synced,
/// every change is allowed with a warning that it was not checked.
pub async fn serve(
    listener: TcpListener,
    tls: Arc<xds_server::Reloading>,
    store: store::Store,
    judge: Judge,
    counters: Arc<Counters>,
    shutdown: impl Future<Output = ()>,
) {
    let judge = Arc::new(Mutex::new(judge));
    let mut streams = xds_server::accept_tls(listener, tls);
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            stream = streams.recv() => match stream {
                Some(Ok(stream)) => {
                    let (store, judge, counters) = (store.clone(), Arc::clone(&judge), Arc::clone(&counters));
                    tokio::spawn(async move {
                        let service = service_fn(move |req| {
                            let (store, judge, counters) = (store.clone(), Arc::clone(&judge), Arc::clone(&counters));
                            async move { Ok::<_, Infallible>(answer(req, store, judge, counters).await) }
                        });
                        let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    });
                }
                Some(Err(_)) => continue,
                None => return,
            },
            _ = &mut shutdown => return,
        }
    }
}

async fn answer(
    req: Request<Incoming>,
    store: store::Store,
    judge: Arc<Mutex<Judge>>,
    counters: Arc<Counters>,
) -> Response<Full<Bytes>> {
    if req.method() != Method::POST {
        return plain(StatusCode::METHOD_NOT_ALLOWED, "AdmissionReviews are POSTed");
    }
    let body = match Limited::new(req.into_body(), MAX_BODY).collect().await {
        Ok(body) => body.to_bytes(),
        Err(e) => return plain(StatusCode::BAD_REQUEST, &format!("reading the review: {e}")),
    };
    let synced = store.is_synced();
    let snapshot = store.current();
    let started = std::time::Instant::now();
    let answer = tokio::task::spawn_blocking(move || {
        if !synced {
            return not_checked(&body);
        }
        let mut judge = judge.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        crate::review(&mut judge, &snapshot, &body)
    })
    .await
    .unwrap_or_else(|e| {
        tracing::error!(error = %e, "judging a review failed; allowed");
        serde_json::Value::Null
    });
    counters.reviews.fetch_add(1, Ordering::Relaxed);
    let allowed = answer["response"]["allowed"].as_bool() != Some(false);
    if !allowed {
        counters.denied.fetch_add(1, Ordering::Relaxed);
        tracing::info!(
            elapsed_us = started.elapsed().as_micros() as u64,
            message = answer["response"]["status"]["message"].as_str().unwrap_or_default(),
            "admission denied"
        );
    }
    Response::builder()
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(answer.to_string())))
        .expect("valid response")
}

/// The answer before the store has synced: allowed, saying it was not checked.
fn not_checked(body: &[u8]) -> serde_json::Value {
    let review: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    let warning = "not checked: contour is still reading the cluster's objects";
    serde_json::json!({
        "apiVersion": review["apiVersion"].as_str().unwrap_or("admission.k8s.io/v1"),
        "kind": "AdmissionReview",
        "response": {"uid": review["request"]["uid"], "allowed": true, "warnings": [warning]},
    })
}

fn plain(code: StatusCode, message: &str) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(format!("{message}\n"))));
    *r.status_mut() = code;
    r
}
