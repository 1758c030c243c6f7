//! The accept loop of the tests' HTTP servers: each connection served by hyper (HTTP/1.1, or
//! HTTP/2 with prior knowledge or ALPN), over TLS when an acceptor is given.

use hyper::body::{Body, Incoming};
use hyper::service::Service;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Serves every connection of `listener` with a clone of `service` until the task is dropped.
pub(crate) async fn connections<S, B>(listener: TcpListener, tls: Option<tokio_rustls::TlsAcceptor>, service: S)
where
    S: Service<hyper::Request<Incoming>, Response = hyper::Response<B>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
        let (tls, service) = (tls.clone(), service.clone());
        tokio::spawn(async move {
            let builder = hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new());
            match tls {
                Some(acceptor) => {
                    if let Ok(stream) = acceptor.accept(stream).await {
                        let _ = builder.serve_connection(TokioIo::new(stream), service).await;
                    }
                }
                None => {
                    let _ = builder.serve_connection(TokioIo::new(stream), service).await;
                }
            }
        });
    }
}
