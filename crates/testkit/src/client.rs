//! A minimal HTTP/1.1 client: one connection per request, plain or TLS with a chosen SNI.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};

/// A request to send.
#[derive(Debug, Clone)]
pub struct Request {
    /// The method.
    pub method: String,
    /// The Host header.
    pub host: String,
    /// Path and query.
    pub path: String,
    /// Extra headers.
    pub headers: Vec<(String, String)>,
    /// The body (none when empty).
    pub body: Vec<u8>,
}

impl Request {
    /// A GET for `host` and `path`.
    pub fn get(host: &str, path: &str) -> Self {
        Self { method: "GET".into(), host: host.into(), path: path.into(), headers: Vec::new(), body: Vec::new() }
    }

    /// A POST of an HTML form's fields to `host` and `path`.
    pub fn post_form(host: &str, path: &str, fields: &[(&str, &str)]) -> Self {
        let encode = |s: &str| {
            s.bytes()
                .map(|b| match b {
                    b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
                    _ => format!("%{b:02X}"),
                })
                .collect::<String>()
        };
        let body: Vec<String> = fields.iter().map(|(k, v)| format!("{}={}", encode(k), encode(v))).collect();
        Self {
            method: "POST".into(),
            body: body.join("&").into_bytes(),
            ..Self::get(host, path).header("content-type", "application/x-www-form-urlencoded")
        }
    }

    /// Adds a header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }
}

/// What came back.
#[derive(Debug, Clone)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// Response headers (lower-case names).
    pub headers: Vec<(String, String)>,
    /// The body as text.
    pub body: String,
    /// The body's bytes, as they came (a compressed body is not text).
    pub raw: Vec<u8>,
}

impl Response {
    /// The first value of a header.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// The body parsed as the echo backend's JSON.
    pub fn echo(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

/// Sends a plain-HTTP request to `addr`.
pub async fn request(addr: SocketAddr, req: &Request) -> anyhow::Result<Response> {
    let stream = tokio::time::timeout(Duration::from_secs(5), tokio::net::TcpStream::connect(addr)).await??;
    send(stream, req).await
}

/// Sends an HTTPS request to `addr` with this SNI, trusting only `ca_pem`.
pub async fn request_tls(addr: SocketAddr, sni: &str, ca_pem: &str, req: &Request) -> anyhow::Result<Response> {
    send(tls_connect(addr, sni, ca_pem, None).await?, req).await
}

/// [`request_tls`] presenting `client` as the client certificate.
pub async fn request_mtls(
    addr: SocketAddr,
    sni: &str,
    ca_pem: &str,
    client: &crate::Issued,
    req: &Request,
) -> anyhow::Result<Response> {
    send(tls_connect(addr, sni, ca_pem, Some(client)).await?, req).await
}

/// Opens TLS to `addr` as a client without a certificate (SNI `sni`, trusting only `ca_pem`),
/// sends the HTTP/2 client preface and returns the server's first bytes; an error if the server
/// ends the session instead of answering.
pub async fn h2_preface_tls(addr: SocketAddr, sni: &str, ca_pem: &str) -> anyhow::Result<Vec<u8>> {
    h2_preface_mtls(addr, sni, ca_pem, None).await
}

/// [`h2_preface_tls`] presenting `client` as the client certificate, when given.
pub async fn h2_preface_mtls(
    addr: SocketAddr,
    sni: &str,
    ca_pem: &str,
    client: Option<&crate::Issued>,
) -> anyhow::Result<Vec<u8>> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tls_connect(addr, sni, ca_pem, client).await?;
    stream.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0").await?;
    stream.flush().await?;
    let mut buf = vec![0; 64];
    let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf)).await??;
    anyhow::ensure!(n > 0, "the server closed the session without answering");
    buf.truncate(n);
    Ok(buf)
}

async fn tls_connect(
    addr: SocketAddr,
    sni: &str,
    ca_pem: &str,
    client: Option<&crate::Issued>,
) -> anyhow::Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>> {
    use rustls::pki_types::pem::PemObject;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(cert?)?;
    }
    let builder = rustls::ClientConfig::builder().with_root_certificates(roots);
    let config = match client {
        None => builder.with_no_client_auth(),
        Some(issued) => {
            let chain = rustls::pki_types::CertificateDer::pem_slice_iter(issued.cert_pem.as_bytes())
                .collect::<Result<Vec<_>, _>>()?;
            let key = rustls::pki_types::PrivateKeyDer::from_pem_slice(issued.key_pem.as_bytes())?;
            builder.with_client_auth_cert(chain, key)?
        }
    };
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let stream = tokio::time::timeout(Duration::from_secs(5), tokio::net::TcpStream::connect(addr)).await??;
    let name = rustls::pki_types::ServerName::try_from(sni.to_string())?;
    Ok(tokio::time::timeout(Duration::from_secs(5), connector.connect(name, stream)).await??)
}

async fn send<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(
    stream: S,
    req: &Request,
) -> anyhow::Result<Response> {
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    let conn = tokio::spawn(conn);
    let mut builder =
        hyper::Request::builder().method(req.method.as_str()).uri(req.path.as_str()).header("host", &req.host);
    for (k, v) in &req.headers {
        builder = builder.header(k, v);
    }
    let response = tokio::time::timeout(
        Duration::from_secs(10),
        sender.send_request(builder.body(Full::new(Bytes::from(req.body.clone())))?),
    )
    .await??;
    let status = response.status().as_u16();
    let headers =
        response.headers().iter().map(|(k, v)| (k.to_string(), v.to_str().unwrap_or_default().to_string())).collect();
    let body = tokio::time::timeout(Duration::from_secs(10), response.into_body().collect()).await??.to_bytes();
    conn.abort();
    Ok(Response { status, headers, body: String::from_utf8_lossy(&body).into_owned(), raw: body.to_vec() })
}
