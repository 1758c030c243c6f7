//! An external authorization server speaking Envoy's ext_authz gRPC API (`envoy.service.auth.v3`),
//! in the two modes of upstream's contour-authserver that tests use:
//! - htpasswd-like ([`AuthServer::start`]): HTTP Basic credentials checked against a list of
//!   users, 401 with `WWW-Authenticate` without them; on success the user and the route's
//!   authorization context reach the backend as `Auth-Username` and `Auth-Context-<key>`;
//! - `testserver` ([`serve_test_mode`]): a request whose path contains `allow` passes, with the
//!   context as `Auth-Context-<key>` headers; any other gets 401.
//!
//! [`AuthServer::start_http`] judges Basic credentials the same way as a plain HTTP server (the
//! ext_authz `http_service` protocol, HTTP/1.1 or h2c): each request Envoy forwards is answered
//! 200 with `Auth-Username` and `Auth-Path` (the path it was asked, for the path prefix), or 401.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use base64::Engine;
use envoy_types::pb::envoy::config::core::v3::{HeaderValue, HeaderValueOption};
use envoy_types::pb::envoy::service::auth::v3::authorization_server::{Authorization, AuthorizationServer};
use envoy_types::pb::envoy::service::auth::v3::{
    CheckRequest, CheckResponse, DeniedHttpResponse, OkHttpResponse, check_response,
};
use envoy_types::pb::envoy::r#type::v3::HttpStatus;
use envoy_types::pb::google::rpc::Status;

/// An HTTP Basic `Authorization` header value for `user` and `password`, as a client sends it.
pub fn basic(user: &str, password: &str) -> String {
    format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}")))
}

/// A running authorization server; stopped when dropped.
pub struct AuthServer {
    /// Where it listens.
    pub addr: SocketAddr,
    /// How many checks it answered.
    pub calls: Arc<AtomicU64>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl AuthServer {
    /// Serves the gRPC API on a free port of 127.0.0.1 for these `(user, password)` pairs.
    pub async fn start(users: &[(&str, &str)]) -> anyhow::Result<Self> {
        Self::start_on([127, 0, 0, 1].into(), users).await
    }

    /// [`AuthServer::start`] on a free port of `ip` (an address of this machine).
    pub async fn start_on(ip: std::net::IpAddr, users: &[(&str, &str)]) -> anyhow::Result<Self> {
        let listener = tokio::net::TcpListener::bind((ip, 0)).await?;
        let addr = listener.local_addr()?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
        let calls = Arc::new(AtomicU64::new(0));
        let service = Service { checker: Checker::Basic(user_map(users)), calls: Arc::clone(&calls) };
        tokio::spawn(async move {
            let _ = tonic::transport::Server::builder()
                .add_service(AuthorizationServer::new(service))
                .serve_with_incoming_shutdown(incoming, async {
                    let _ = stopped.await;
                })
                .await;
        });
        Ok(Self { addr, calls, stop: Some(stop) })
    }

    /// Serves the HTTP protocol on a free port of 127.0.0.1 for these `(user, password)` pairs.
    pub async fn start_http(users: &[(&str, &str)]) -> anyhow::Result<Self> {
        Self::start_http_on([127, 0, 0, 1].into(), users).await
    }

    /// [`AuthServer::start_http`] on a free port of `ip` (an address of this machine).
    pub async fn start_http_on(ip: std::net::IpAddr, users: &[(&str, &str)]) -> anyhow::Result<Self> {
        use hyper::{Response, StatusCode};
        let listener = tokio::net::TcpListener::bind((ip, 0)).await?;
        let addr = listener.local_addr()?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let calls = Arc::new(AtomicU64::new(0));
        let users = Arc::new(user_map(users));
        let counter = Arc::clone(&calls);
        let service = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
            counter.fetch_add(1, Ordering::Relaxed);
            let authorization = req.headers().get("authorization").and_then(|v| v.to_str().ok());
            let response = match basic_user(&users, authorization) {
                Some(user) => Response::builder()
                    .header("auth-username", user)
                    .header("auth-path", req.uri().path())
                    .header("auth-protocol", format!("{:?}", req.version()))
                    .body(String::new()),
                None => Response::builder()
                    .status(StatusCode::UNAUTHORIZED)
                    .header("www-authenticate", BASIC_CHALLENGE)
                    .body("credentials needed\n".to_string()),
            };
            async move { response }
        });
        tokio::spawn(async move {
            tokio::select! {
                _ = crate::serve::connections(listener, None, service) => {}
                _ = stopped => {}
            }
        });
        Ok(Self { addr, calls, stop: Some(stop) })
    }
}

fn user_map(users: &[(&str, &str)]) -> BTreeMap<String, String> {
    users.iter().map(|(u, p)| (u.to_string(), p.to_string())).collect()
}

/// The challenge of a 401.
const BASIC_CHALLENGE: &str = "Basic realm=\"default\", charset=\"UTF-8\"";

impl Drop for AuthServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// The gRPC service: a checker and its call counter.
struct Service {
    checker: Checker,
    calls: Arc<AtomicU64>,
}

/// How requests are judged.
enum Checker {
    /// Basic credentials of these users (name → password).
    Basic(BTreeMap<String, String>),
    /// contour-authserver's `testserver`: paths containing `allow` pass.
    Test,
}

/// contour-authserver's `testserver`, over TLS with these certificate and key files (upstream's
/// e2e suites deploy it with `--tls-cert-path` and `--tls-key-path`) or in clear text (h2c)
/// without them, until the process ends.
pub async fn serve_test_mode(
    address: SocketAddr,
    tls: Option<(std::path::PathBuf, std::path::PathBuf)>,
) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(address).await?;
    let server = tonic::transport::Server::builder()
        .add_service(AuthorizationServer::new(Service { checker: Checker::Test, calls: Arc::default() }));
    match tls {
        Some((cert, key)) => {
            let tls = std::sync::Arc::new(xds_server::Reloading::https(cert, key, None)?);
            let incoming = tokio_stream::wrappers::ReceiverStream::new(xds_server::accept_tls(listener, tls));
            server.serve_with_incoming(incoming).await?;
        }
        None => server.serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)).await?,
    }
    Ok(())
}

/// The user whose credentials the `Authorization` header carries, if they are right.
fn basic_user(users: &BTreeMap<String, String>, header: Option<&str>) -> Option<String> {
    let encoded = header?.strip_prefix("Basic ")?;
    let decoded = base64::engine::general_purpose::STANDARD.decode(encoded.trim()).ok()?;
    let (user, password) = std::str::from_utf8(&decoded).ok()?.split_once(':')?;
    (users.get(user)? == password).then(|| user.to_string())
}

fn header(key: &str, value: &str) -> HeaderValueOption {
    HeaderValueOption {
        header: Some(HeaderValue { key: key.into(), value: value.into(), ..Default::default() }),
        ..Default::default()
    }
}

#[tonic::async_trait]
impl Authorization for Service {
    async fn check(
        &self,
        request: tonic::Request<CheckRequest>,
    ) -> Result<tonic::Response<CheckResponse>, tonic::Status> {
        let attributes = request.into_inner().attributes.unwrap_or_default();
        let http = attributes.request.and_then(|r| r.http).unwrap_or_default();
        self.calls.fetch_add(1, Ordering::Relaxed);
        let passed = match &self.checker {
            Checker::Basic(users) => basic_user(users, http.headers.get("authorization").map(String::as_str)).map(Some),
            Checker::Test => http.path.contains("allow").then_some(None),
        };
        let response = match passed {
            Some(user) => {
                let mut headers: Vec<HeaderValueOption> = user.iter().map(|u| header("Auth-Username", u)).collect();
                let context: BTreeMap<_, _> = attributes.context_extensions.into_iter().collect();
                headers.extend(context.iter().map(|(k, v)| header(&format!("Auth-Context-{k}"), v)));
                CheckResponse {
                    status: Some(Status { code: 0, ..Default::default() }),
                    http_response: Some(check_response::HttpResponse::OkResponse(OkHttpResponse {
                        headers,
                        ..Default::default()
                    })),
                    ..Default::default()
                }
            }
            None => CheckResponse {
                // UNAUTHENTICATED
                status: Some(Status { code: 16, ..Default::default() }),
                http_response: Some(check_response::HttpResponse::DeniedResponse(DeniedHttpResponse {
                    status: Some(HttpStatus { code: 401 }),
                    headers: vec![header("WWW-Authenticate", BASIC_CHALLENGE)],
                    body: String::new(),
                })),
                ..Default::default()
            },
        };
        Ok(tonic::Response::new(response))
    }
}
