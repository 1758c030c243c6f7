//! mTLS for the xDS server: TLS 1.3 only, client certificates required and verified against the
//! CA bundle, certificate files re-read when they change (certgen rotates them in place).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_rustls::TlsAcceptor;
use tracing::{debug, warn};

use crate::PeerStream;

/// The controller's certificate files.
#[derive(Debug, Clone)]
pub struct TlsFiles {
    /// CA bundle that signed Envoy's client certificates.
    pub ca: PathBuf,
    /// The server certificate chain.
    pub cert: PathBuf,
    /// The server key.
    pub key: PathBuf,
}

/// Why TLS could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file could not be read or parsed.
    #[error("{path}: {message}")]
    File {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// rustls refused the configuration.
    #[error("TLS configuration: {0}")]
    Config(#[from] rustls::Error),
    /// The client verifier could not be built.
    #[error("client verifier: {0}")]
    Verifier(#[from] rustls::server::VerifierBuilderError),
}

/// Builds server configurations from the files, again whenever one of them changed.
pub struct Reloading {
    files: TlsFiles,
    /// Clients must present a certificate from `files.ca`.
    client_auth: bool,
    current: Mutex<(Vec<Option<SystemTime>>, Arc<rustls::ServerConfig>)>,
}

fn file_error(path: &Path, message: impl ToString) -> TlsError {
    TlsError::File { path: path.display().to_string(), message: message.to_string() }
}

fn modified(files: &TlsFiles) -> Vec<Option<SystemTime>> {
    [&files.ca, &files.cert, &files.key].iter().map(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok()).collect()
}

fn build(files: &TlsFiles, client_auth: bool) -> Result<rustls::ServerConfig, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(&[&rustls::version::TLS13])?;
    let builder = if client_auth {
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_file_iter(&files.ca).map_err(|e| file_error(&files.ca, e))? {
            roots.add(cert.map_err(|e| file_error(&files.ca, e))?)?;
        }
        builder.with_client_cert_verifier(
            WebPkiClientVerifier::builder_with_provider(Arc::new(roots), Arc::clone(&provider)).build()?,
        )
    } else {
        builder.with_no_client_auth()
    };
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&files.cert)
        .map_err(|e| file_error(&files.cert, e))?
        .collect::<Result<_, _>>()
        .map_err(|e| file_error(&files.cert, e))?;
    let key = PrivateKeyDer::from_pem_file(&files.key).map_err(|e| file_error(&files.key, e))?;
    let mut config = builder.with_single_cert(chain, key)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    // Every connection proves its client certificate afresh: a resumed session would keep the
    // identity (and the CA) of its first handshake.
    config.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
    config.send_tls13_tickets = 0;
    Ok(config)
}

impl Reloading {
    /// Reads the files once; fails if they are unusable.
    pub fn new(files: TlsFiles) -> Result<Self, TlsError> {
        let config = Arc::new(build(&files, true)?);
        Ok(Self { current: Mutex::new((modified(&files), config)), files, client_auth: true })
    }

    /// HTTPS with this certificate and key, asking clients for a certificate from `ca` when one
    /// is given (a metrics server's TLS).
    pub fn https(cert: PathBuf, key: PathBuf, ca: Option<PathBuf>) -> Result<Self, TlsError> {
        let client_auth = ca.is_some();
        let files = TlsFiles { ca: ca.unwrap_or_default(), cert, key };
        let config = Arc::new(build(&files, client_auth)?);
        Ok(Self { current: Mutex::new((modified(&files), config)), files, client_auth })
    }

    /// The configuration for the next handshake: rebuilt when a file changed, the previous one
    /// kept (and a warning logged) when the new files are unusable.
    pub fn config(&self) -> Arc<rustls::ServerConfig> {
        let now = modified(&self.files);
        let mut current = self.current.lock().expect("tls lock");
        if current.0 != now {
            match build(&self.files, self.client_auth) {
                Ok(config) => *current = (now, Arc::new(config)),
                Err(e) => {
                    warn!(error = %e, "new xDS certificates are unusable; keeping the previous ones");
                    current.0 = now;
                }
            }
        }
        Arc::clone(&current.1)
    }
}

/// Accepts TCP connections and completes TLS handshakes off the accept loop; yields the
/// established streams.
pub fn accept(listener: TcpListener, tls: Arc<Reloading>) -> mpsc::Receiver<Result<PeerStream, std::io::Error>> {
    let (tx, rx) = mpsc::channel(16);
    tokio::spawn(async move {
        loop {
            let Ok((stream, peer)) = listener.accept().await else { continue };
            if tx.is_closed() {
                return;
            }
            let (sender, acceptor) = (tx.clone(), TlsAcceptor::from(tls.config()));
            tokio::spawn(async move {
                // A TCP probe (upstream's manifest checks the xDS port's readiness that way every
                // 10 s) connects and closes without a byte: not a failed handshake.
                let mut first = [0u8; 1];
                if let Ok(Ok(0)) =
                    tokio::time::timeout(std::time::Duration::from_secs(10), stream.peek(&mut first)).await
                {
                    debug!(%peer, "connection closed before a TLS handshake began (a TCP probe)");
                    return;
                }
                match tokio::time::timeout(std::time::Duration::from_secs(10), acceptor.accept(stream)).await {
                    Ok(Ok(stream)) => {
                        let _ = sender.send(Ok(PeerStream::new(stream))).await;
                    }
                    Ok(Err(e)) => warn!(%peer, error = %e, "TLS handshake failed"),
                    Err(_) => warn!(%peer, "TLS handshake timed out"),
                }
            });
        }
    });
    rx
}
