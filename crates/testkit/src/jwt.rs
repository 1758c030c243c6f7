//! JSON Web Tokens for tests: RS256 and ES256 signers, and a JWKS server over HTTPS that
//! publishes their public keys, as an identity provider would.

use std::net::SocketAddr;
use std::sync::Arc;

use base64::Engine;
use http_body_util::Full;
use hyper::body::Bytes;
use hyper::service::service_fn;
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, KeyPair, RsaKeyPair};
use rustls::pki_types::pem::PemObject;

/// A fixed RSA key (ring cannot generate RSA keys): test data, never a secret.
const RSA_KEY_PEM: &str = include_str!("fixtures/jwt-rs256.pem");

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

enum Key {
    Es256(EcdsaKeyPair),
    Rs256(RsaKeyPair),
}

/// Signs tokens with one key, named `kid` in its JWK.
pub struct Signer {
    kid: String,
    key: Key,
}

impl Signer {
    /// A new P-256 key (ES256).
    pub fn es256(kid: &str) -> anyhow::Result<Self> {
        let rng = SystemRandom::new();
        let alg = &signature::ECDSA_P256_SHA256_FIXED_SIGNING;
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(alg, &rng).map_err(|_| anyhow::anyhow!("P-256 key generation"))?;
        let pair =
            EcdsaKeyPair::from_pkcs8(alg, pkcs8.as_ref(), &rng).map_err(|e| anyhow::anyhow!("P-256 key: {e}"))?;
        Ok(Self { kid: kid.into(), key: Key::Es256(pair) })
    }

    /// The fixed RSA key (RS256).
    pub fn rs256(kid: &str) -> anyhow::Result<Self> {
        let der = rustls::pki_types::PrivatePkcs8KeyDer::from_pem_slice(RSA_KEY_PEM.as_bytes())?;
        let pair = RsaKeyPair::from_pkcs8(der.secret_pkcs8_der()).map_err(|e| anyhow::anyhow!("RSA key: {e}"))?;
        Ok(Self { kid: kid.into(), key: Key::Rs256(pair) })
    }

    /// The public key as a JWK.
    pub fn jwk(&self) -> serde_json::Value {
        match &self.key {
            Key::Es256(pair) => {
                // The uncompressed point: 0x04, then x and y.
                let point = pair.public_key().as_ref();
                serde_json::json!({
                    "kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": self.kid,
                    "x": b64(&point[1..33]), "y": b64(&point[33..65]),
                })
            }
            Key::Rs256(pair) => {
                let public: ring::rsa::PublicKeyComponents<Vec<u8>> = pair.public().into();
                serde_json::json!({
                    "kty": "RSA", "alg": "RS256", "use": "sig", "kid": self.kid,
                    "n": b64(&public.n), "e": b64(&public.e),
                })
            }
        }
    }

    /// A signed token carrying `claims`.
    pub fn token(&self, claims: &serde_json::Value) -> anyhow::Result<String> {
        let alg = match self.key {
            Key::Es256(_) => "ES256",
            Key::Rs256(_) => "RS256",
        };
        let header = serde_json::json!({"alg": alg, "typ": "JWT", "kid": self.kid});
        let input = format!("{}.{}", b64(header.to_string().as_bytes()), b64(claims.to_string().as_bytes()));
        let rng = SystemRandom::new();
        let signature = match &self.key {
            Key::Es256(pair) => {
                pair.sign(&rng, input.as_bytes()).map_err(|_| anyhow::anyhow!("ES256 signing"))?.as_ref().to_vec()
            }
            Key::Rs256(pair) => {
                let mut out = vec![0; pair.public().modulus_len()];
                pair.sign(&signature::RSA_PKCS1_SHA256, &rng, input.as_bytes(), &mut out)
                    .map_err(|_| anyhow::anyhow!("RS256 signing"))?;
                out
            }
        };
        Ok(format!("{input}.{}", b64(&signature)))
    }
}

/// Seconds since the epoch, for `exp` and `iat` claims.
pub fn now_s() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

/// An HTTPS server answering every request with a JWKS; stopped when dropped.
pub struct JwksServer {
    /// Where it listens (127.0.0.1).
    pub addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl JwksServer {
    /// Serves `{"keys": [...]}` with these keys over HTTPS with `cert`.
    pub async fn start(cert: &crate::Issued, keys: Vec<serde_json::Value>) -> anyhow::Result<Self> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let chain = rustls::pki_types::CertificateDer::pem_slice_iter(cert.cert_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()?;
        let key = rustls::pki_types::PrivateKeyDer::from_pem_slice(cert.key_pem.as_bytes())?;
        let config = rustls::ServerConfig::builder().with_no_client_auth().with_single_cert(chain, key)?;
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let body: Bytes = serde_json::json!({ "keys": keys }).to_string().into();
        let service = service_fn(move |_req| {
            let body = body.clone();
            async move { hyper::Response::builder().header("content-type", "application/json").body(Full::new(body)) }
        });
        let task = tokio::spawn(crate::serve::connections(listener, Some(acceptor), service));
        Ok(Self { addr, task })
    }
}

impl Drop for JwksServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}
