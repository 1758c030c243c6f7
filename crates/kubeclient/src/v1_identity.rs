//! The TLS stack for a client certificate rustls' pairing check cannot parse (X.509 v1).
//!
//! The client's usual stack (`crate::stack`) over a rustls configuration whose client
//! certificate is offered as given.

use std::sync::Arc;

use base64::Engine;
use rustls::client::ResolvesClientCert;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::sign::CertifiedKey;
use secrecy::ExposeSecret;

use crate::Error;

/// The TLS connector, with the configuration's server trust and its client certificate as given.
pub(crate) fn https(config: &kube::Config) -> Result<crate::stack::Https, Error> {
    let identity = |m: String| Error::Identity(m);
    let auth = &config.auth_info;
    let cert_pem = load(auth.client_certificate_data.as_deref(), auth.client_certificate.as_deref())
        .map_err(|e| identity(format!("reading it: {e}")))?
        .ok_or_else(|| identity("none is configured".into()))?;
    let key_pem = load(auth.client_key_data.as_ref().map(|s| s.expose_secret()), auth.client_key.as_deref())
        .map_err(|e| identity(format!("reading its key: {e}")))?
        .ok_or_else(|| identity("its key is not configured".into()))?;
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|e| identity(format!("not PEM: {e}")))?;
    let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| identity(format!("its key is not PEM: {e}")))?;
    let provider = rustls::crypto::CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::ring::default_provider()));
    let signer =
        provider.key_provider.load_private_key(key).map_err(|e| identity(format!("its key is not usable: {e}")))?;
    let resolver = Arc::new(Offer(Arc::new(CertifiedKey::new(chain, signer))));

    let mut roots = rustls::RootCertStore::empty();
    for der in config.root_cert.iter().flatten() {
        roots.add(CertificateDer::from(der.clone())).map_err(|e| identity(format!("the cluster's CA: {e}")))?;
    }
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| identity(e.to_string()))?
        .with_root_certificates(roots)
        .with_client_cert_resolver(resolver);
    Ok(hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .wrap_connector(crate::stack::tcp(config)))
}

/// Inline base64 data, else the file.
fn load(data: Option<&str>, file: Option<&str>) -> Result<Option<Vec<u8>>, String> {
    if let Some(data) = data {
        return base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .map(Some)
            .map_err(|e| format!("its base64 data: {e}"));
    }
    match file {
        Some(path) => std::fs::read(path).map(Some).map_err(|e| format!("{path}: {e}")),
        None => Ok(None),
    }
}

/// Offers the one certificate whatever the server asks.
#[derive(Debug)]
struct Offer(Arc<CertifiedKey>);

impl ResolvesClientCert for Offer {
    fn resolve(&self, _: &[&[u8]], _: &[rustls::SignatureScheme]) -> Option<Arc<CertifiedKey>> {
        Some(Arc::clone(&self.0))
    }

    fn has_certs(&self) -> bool {
        true
    }
}
