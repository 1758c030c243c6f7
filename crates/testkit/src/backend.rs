//! Echo backends: answer every request with what they saw, as JSON, and their own name.
//!
//! A request can ask for a slow answer (`x-echo-delay-ms`, at most 10 s), another status
//! (`x-echo-status`), or a redirect (`x-echo-redirect: /from=/to` answers a request for `/from`
//! with 302 to `/to`), and headers as ealen/echo-server adds them (`x-echo-header: Set-Cookie:a=1,
//! X-Other:2`); a flaky backend fails its first requests with 503 on its own.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::service::service_fn;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// A running echo backend; stops when dropped.
pub struct Backend {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its name, echoed in every answer (`backend` field and `x-backend` header).
    pub name: String,
    /// How many requests it received.
    pub hits: Arc<AtomicUsize>,
    task: JoinHandle<()>,
}

impl Drop for Backend {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Backend {
    /// A plain-HTTP echo backend on a free loopback port.
    pub async fn start(name: &str) -> anyhow::Result<Self> {
        Self::spawn(TcpListener::bind("127.0.0.1:0").await?, name, None, 0)
    }

    /// A plain-HTTP echo backend on a chosen address.
    pub async fn start_on(addr: std::net::SocketAddr, name: &str) -> anyhow::Result<Self> {
        Self::spawn(TcpListener::bind(addr).await?, name, None, 0)
    }

    /// An echo backend that answers its first `failures` requests with 503, then echoes.
    pub async fn start_flaky(name: &str, failures: usize) -> anyhow::Result<Self> {
        Self::spawn(TcpListener::bind("127.0.0.1:0").await?, name, None, failures)
    }

    /// [`Backend::start_flaky`] on a chosen address.
    pub async fn start_flaky_on(addr: std::net::SocketAddr, name: &str, failures: usize) -> anyhow::Result<Self> {
        Self::spawn(TcpListener::bind(addr).await?, name, None, failures)
    }

    /// Echo backends of one Service: each on its own loopback address (127.0.0.2, .3, ...), all
    /// on one free port, as a Service's endpoints are (an EndpointSlice has one port for all its
    /// addresses). `failures[i]` is how many of its first requests backend `i` answers with 503.
    pub async fn start_pool(names: &[&str], failures: &[usize]) -> anyhow::Result<Vec<Self>> {
        let port = crate::free_port();
        let mut pool = Vec::with_capacity(names.len());
        for (i, name) in names.iter().enumerate() {
            let ip = std::net::Ipv4Addr::new(127, 0, 0, 2 + u8::try_from(i)?);
            let failing = failures.get(i).copied().unwrap_or(0);
            pool.push(Self::start_flaky_on((ip, port).into(), name, failing).await?);
        }
        Ok(pool)
    }

    fn spawn(
        listener: TcpListener,
        name: &str,
        tls: Option<tokio_rustls::TlsAcceptor>,
        failures: usize,
    ) -> anyhow::Result<Self> {
        let addr = listener.local_addr()?;
        let hits = Arc::new(AtomicUsize::new(0));
        let counters = Counters { failures: Arc::new(AtomicUsize::new(failures)), hits: Arc::clone(&hits) };
        let task = tokio::spawn(serve(listener, name.to_string(), tls, counters));
        Ok(Self { addr, name: name.into(), hits, task })
    }

    /// An echo backend that speaks HTTPS with this certificate (for TLS passthrough).
    pub async fn start_tls(name: &str, cert: &crate::Issued) -> anyhow::Result<Self> {
        let acceptor = tls_acceptor(&cert.cert_pem, &cert.key_pem)?;
        Self::spawn(TcpListener::bind("127.0.0.1:0").await?, name, Some(acceptor), 0)
    }
}

impl Backend {
    /// An echo backend that speaks HTTPS with this certificate and refuses any client without a
    /// certificate signed by `client_ca_pem` (a backend behind mutual TLS).
    pub async fn start_mtls(name: &str, cert: &crate::Issued, client_ca_pem: &str) -> anyhow::Result<Self> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut roots = rustls::RootCertStore::empty();
        for ca in rustls_pemfile(client_ca_pem)? {
            roots.add(ca)?;
        }
        let verifier = rustls::server::WebPkiClientVerifier::builder(Arc::new(roots)).build()?;
        let certs = rustls_pemfile(&cert.cert_pem)?;
        let key = rustls::pki_types::PrivateKeyDer::from_pem_slice(cert.key_pem.as_bytes())?;
        let config =
            rustls::ServerConfig::builder().with_client_cert_verifier(verifier).with_single_cert(certs, key)?;
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        Self::spawn(TcpListener::bind("127.0.0.1:0").await?, name, Some(acceptor), 0)
    }
}

/// A TLS acceptor presenting this PEM certificate chain and key, asking for no client certificate.
pub fn tls_acceptor(cert_pem: &str, key_pem: &str) -> anyhow::Result<tokio_rustls::TlsAcceptor> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let certs = rustls_pemfile(cert_pem)?;
    let key = rustls::pki_types::PrivateKeyDer::from_pem_slice(key_pem.as_bytes())?;
    let config = rustls::ServerConfig::builder().with_no_client_auth().with_single_cert(certs, key)?;
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

fn rustls_pemfile(pem: &str) -> anyhow::Result<Vec<rustls::pki_types::CertificateDer<'static>>> {
    use rustls::pki_types::pem::PemObject;
    Ok(rustls::pki_types::CertificateDer::pem_slice_iter(pem.as_bytes()).collect::<Result<Vec<_>, _>>()?)
}

use rustls::pki_types::pem::PemObject as _;

/// Serves the echo protocol on a listener until the task is aborted.
pub async fn serve_echo(listener: TcpListener, name: String, tls: Option<tokio_rustls::TlsAcceptor>) {
    serve(listener, name, tls, Counters::default()).await
}

/// Requests still to fail, and requests seen.
#[derive(Clone, Default)]
struct Counters {
    failures: Arc<AtomicUsize>,
    hits: Arc<AtomicUsize>,
}

async fn serve(listener: TcpListener, name: String, tls: Option<tokio_rustls::TlsAcceptor>, counters: Counters) {
    let name: Arc<str> = name.into();
    let service = service_fn(move |req| echo(Arc::clone(&name), counters.clone(), req));
    crate::serve::connections(listener, tls, service).await
}

async fn echo(
    name: Arc<str>,
    counters: Counters,
    req: hyper::Request<Incoming>,
) -> Result<hyper::Response<Full<Bytes>>, Infallible> {
    counters.hits.fetch_add(1, Ordering::SeqCst);
    let number = |header: &str| req.headers().get(header).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if let Some(ms) = number("x-echo-delay-ms") {
        tokio::time::sleep(std::time::Duration::from_millis(ms.min(10_000))).await;
    }
    let failing = counters.failures.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok();
    let status = if failing { 503 } else { number("x-echo-status").and_then(|s| u16::try_from(s).ok()).unwrap_or(200) };
    let headers: serde_json::Map<String, serde_json::Value> = req
        .headers()
        .iter()
        .map(|(k, v)| (k.to_string(), serde_json::Value::String(v.to_str().unwrap_or_default().to_string())))
        .collect();
    let body = serde_json::json!({
        "backend": &*name,
        "method": req.method().as_str(),
        "path": req.uri().path_and_query().map(|p| p.as_str()).unwrap_or("/"),
        "host": req.headers().get("host").and_then(|h| h.to_str().ok()).unwrap_or_default(),
        "headers": headers,
    });
    let redirect = req.headers().get("x-echo-redirect").and_then(|v| v.to_str().ok()).and_then(|v| v.split_once('='));
    let location = redirect.filter(|(from, _)| req.uri().path() == *from).map(|(_, to)| to.to_string());
    let status = if location.is_some() { 302 } else { status };
    let mut response = hyper::Response::builder()
        .status(status)
        .header("x-backend", &*name)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .expect("valid response");
    if let Some(location) = location.and_then(|l| hyper::header::HeaderValue::from_str(&l).ok()) {
        response.headers_mut().insert(hyper::header::LOCATION, location);
    }
    // ealen/echo-server's `x-echo-header: Name:value, Name:value` adds those headers.
    for asked in req.headers().get_all("x-echo-header").iter().filter_map(|v| v.to_str().ok()) {
        for (name, value) in asked.split(',').filter_map(|h| h.split_once(':')) {
            if let (Ok(name), Ok(value)) = (
                hyper::header::HeaderName::from_bytes(name.trim().as_bytes()),
                hyper::header::HeaderValue::from_str(value.trim()),
            ) {
                response.headers_mut().append(name, value);
            }
        }
    }
    Ok(response)
}
