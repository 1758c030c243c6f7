//! The two small HTTP servers.

use std::convert::Infallible;
use std::future::Future;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;

use crate::Telemetry;

/// Serves `/metrics`, `/healthz` (and upstream's `/health`) and `/readyz` until `shutdown`.
pub async fn serve_metrics(listener: TcpListener, t: Telemetry, shutdown: impl Future<Output = ()>) {
    serve(listener, t, shutdown, metrics).await
}

/// [`serve_metrics`] over HTTPS (`metrics.contour`'s certificate files), with client
/// certificates checked when `tls` was made with a CA.
pub async fn serve_metrics_tls(
    listener: TcpListener,
    tls: std::sync::Arc<xds_server::Reloading>,
    t: Telemetry,
    shutdown: impl Future<Output = ()>,
) {
    let mut streams = xds_server::accept_tls(listener, tls);
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            stream = streams.recv() => match stream {
                Some(Ok(stream)) => connection(stream, t.clone(), metrics),
                Some(Err(_)) => continue,
                None => return,
            },
            _ = &mut shutdown => return,
        }
    }
}

/// Serves only `/healthz`, `/health` and `/readyz` (the health server when metrics are over
/// HTTPS elsewhere) until `shutdown`.
pub async fn serve_health(listener: TcpListener, t: Telemetry, shutdown: impl Future<Output = ()>) {
    serve(listener, t, shutdown, |t, req| match req.uri().path() {
        "/metrics" => status(StatusCode::NOT_FOUND, "not found: metrics are served over HTTPS"),
        _ => metrics(t, req),
    })
    .await
}

fn metrics(t: &Telemetry, req: &Request<Incoming>) -> Response<Full<Bytes>> {
    match req.uri().path() {
        "/metrics" => ok("text/plain; version=0.0.4", crate::render(t)),
        // Liveness: the process answers. It stays healthy while the API server is away.
        "/healthz" | "/health" => ok("text/plain", "OK".into()),
        "/readyz" if t.ready() => ok("text/plain", "OK".into()),
        "/readyz" => status(StatusCode::SERVICE_UNAVAILABLE, "not ready: waiting for the first sync and build"),
        _ => status(StatusCode::NOT_FOUND, "not found"),
    }
}

/// Serves `/debug/dag` (DOT; `?format=json` for JSON) until `shutdown`.
pub async fn serve_debug(listener: TcpListener, t: Telemetry, shutdown: impl Future<Output = ()>) {
    serve(listener, t, shutdown, |t, req| {
        if req.uri().path() != "/debug/dag" {
            return status(StatusCode::NOT_FOUND, "not found");
        }
        let Some(published) = t.published.borrow().clone() else {
            return status(StatusCode::SERVICE_UNAVAILABLE, "no DAG built yet");
        };
        let dag = &*published.dag;
        if req.uri().query().is_some_and(|q| q.split('&').any(|p| p == "format=json")) {
            ok("application/json", serde_json::to_string_pretty(dag).unwrap_or_default())
        } else {
            ok("text/vnd.graphviz", dag::to_dot(dag))
        }
    })
    .await
}

type Handler = fn(&Telemetry, &Request<Incoming>) -> Response<Full<Bytes>>;

async fn serve(listener: TcpListener, t: Telemetry, shutdown: impl Future<Output = ()>, handle: Handler) {
    tokio::pin!(shutdown);
    loop {
        let (stream, _) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!(error = %e, "accepting a connection");
                    continue;
                }
            },
            _ = &mut shutdown => return,
        };
        connection(stream, t.clone(), handle);
    }
}

/// Serves one connection, plain or TLS, on a task of its own.
fn connection<S>(stream: S, t: Telemetry, handle: Handler)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    tokio::spawn(async move {
        let service = service_fn(move |req| {
            let response = handle(&t, &req);
            async move { Ok::<_, Infallible>(response) }
        });
        let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
            .serve_connection(TokioIo::new(stream), service)
            .await;
    });
}

fn ok(content_type: &str, body: String) -> Response<Full<Bytes>> {
    Response::builder().header("content-type", content_type).body(Full::new(Bytes::from(body))).expect("valid response")
}

fn status(code: StatusCode, message: &str) -> Response<Full<Bytes>> {
    let mut r = ok("text/plain", format!("{message}\n"));
    *r.status_mut() = code;
    r
}
