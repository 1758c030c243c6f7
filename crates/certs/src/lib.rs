//! Certificates for the Envoy ⇄ controller xDS channel, as upstream's certgen makes them: a CA,
//! the controller's serving certificate (`contour`) and Envoy's client certificate (`envoy`),
//! and the Secrets that carry them (upstream's `legacy` and `compact` layouts). Beyond upstream:
//! fleet certificates ([`fleet`]), which name the one Gateway fleet their Envoys may receive.

pub mod files;
pub mod fleet;

pub use fleet::{Authority, Claim, DEFAULT_TRUST_DOMAIN, FleetId, Identity, Issued};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use serde_json::{Value, json};

/// The names the controller's certificate carries; `contour-bootstrap` sends `contour` as SNI.
const CONTOUR: &str = "contour";
/// The names Envoy's certificate carries.
const ENVOY: &str = "envoy";

/// Why certificates could not be made.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Key generation or signing failed.
    #[error("generating certificates: {0}")]
    Generate(#[from] rcgen::Error),
    /// A certificate could not be read.
    #[error("reading a certificate: {0}")]
    Parse(String),
}

/// The Secret that keeps the CA's certificate and private key (`ca.crt`, `ca.key`), so fleet
/// certificates can be issued after certgen ran. It has no `tls.crt` or `tls.key`, so no TLS
/// listener can serve it, and contour-serve drops every `ca.key` it watches.
pub const CA_SECRET: &str = "contourca";

/// A CA and the two certificates it signed, in PEM.
#[derive(Debug, Clone)]
pub struct Certificates {
    /// The CA certificate.
    pub ca: String,
    /// The controller's serving certificate.
    pub contour_cert: String,
    /// Its key.
    pub contour_key: String,
    /// Envoy's client certificate.
    pub envoy_cert: String,
    /// Its key.
    pub envoy_key: String,
    /// The CA's private key.
    pub ca_key: String,
}

impl Certificates {
    /// The CA, to issue fleet certificates with.
    pub fn authority(&self) -> Result<Authority, Error> {
        Authority::from_pem(&self.ca, &self.ca_key)
    }
}

/// Sets a certificate's validity: from now for `lifetime`.
pub(crate) fn valid_for(params: &mut CertificateParams, lifetime: std::time::Duration) {
    let now = std::time::SystemTime::now();
    params.not_before = now.into();
    params.not_after = (now + lifetime).into();
}

/// Makes a fresh CA and the controller's and Envoy's certificates, valid for `lifetime_days`.
/// Each leaf names its service in `namespace` (`contour`, `contour.<ns>`, `contour.<ns>.svc`,
/// `contour.<ns>.svc.cluster.local`, and the same for `envoy`).
pub fn generate(namespace: &str, lifetime_days: u32) -> Result<Certificates, Error> {
    let lifetime = days(lifetime_days);
    let ca = new_ca("Project Contour CA", lifetime)?;
    let ca_key = ca.key().serialize_pem();
    let (contour_cert, contour_key) =
        service_leaf(&ca, CONTOUR, namespace, ExtendedKeyUsagePurpose::ServerAuth, lifetime)?;
    let (envoy_cert, envoy_key) = service_leaf(&ca, ENVOY, namespace, ExtendedKeyUsagePurpose::ClientAuth, lifetime)?;
    Ok(Certificates { ca: ca.pem(), contour_cert, contour_key, envoy_cert, envoy_key, ca_key })
}

/// The admission webhook's serving certificate for the Service `service` in `namespace`, from a
/// CA of its own (the API server trusts it through the webhook configuration's `caBundle`; it
/// signs nothing else, and its key is not kept).
#[derive(Debug, Clone)]
pub struct WebhookCertificates {
    /// The CA certificate (the `caBundle`).
    pub ca: String,
    /// The serving certificate.
    pub cert: String,
    /// Its key.
    pub key: String,
}

/// Makes [`WebhookCertificates`] valid for `lifetime_days`, naming the Service as Envoy's and
/// the controller's certificates name theirs.
pub fn generate_webhook(service: &str, namespace: &str, lifetime_days: u32) -> Result<WebhookCertificates, Error> {
    let lifetime = days(lifetime_days);
    let ca = new_ca("Project Contour webhook CA", lifetime)?;
    let (cert, key) = service_leaf(&ca, service, namespace, ExtendedKeyUsagePurpose::ServerAuth, lifetime)?;
    Ok(WebhookCertificates { ca: ca.pem(), cert, key })
}

fn days(n: u32) -> std::time::Duration {
    std::time::Duration::from_secs(u64::from(n) * 86_400)
}

/// A fresh self-signed CA.
fn new_ca(common_name: &str, lifetime: std::time::Duration) -> Result<CertifiedIssuer<'static, KeyPair>, Error> {
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    params.distinguished_name = name(common_name);
    valid_for(&mut params, lifetime);
    Ok(CertifiedIssuer::self_signed(params, KeyPair::generate()?)?)
}

/// A certificate and key (PEM) for the Service `service` in `namespace`, by each name a client
/// may use for it.
fn service_leaf(
    ca: &CertifiedIssuer<'static, KeyPair>,
    service: &str,
    namespace: &str,
    usage: ExtendedKeyUsagePurpose,
    lifetime: std::time::Duration,
) -> Result<(String, String), Error> {
    let names = vec![
        service.to_string(),
        format!("{service}.{namespace}"),
        format!("{service}.{namespace}.svc"),
        format!("{service}.{namespace}.svc.cluster.local"),
    ];
    let mut params = CertificateParams::new(names)?;
    params.distinguished_name = name(service);
    params.extended_key_usages = vec![usage];
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
    valid_for(&mut params, lifetime);
    let key = KeyPair::generate()?;
    let cert = params.signed_by(&key, ca)?;
    Ok((cert.pem(), key.serialize_pem()))
}

fn name(common_name: &str) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, "Project Contour");
    dn.push(DnType::CommonName, common_name);
    dn
}

/// How the Secrets are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretsFormat {
    /// `contourcert` and `envoycert` (kubernetes.io/tls) plus `cacert` (Opaque, `cacert.pem`).
    Legacy,
    /// `contourcert` and `envoycert`, each with `ca.crt` (cert-manager's layout).
    Compact,
}

/// The Secrets for `certs` in `namespace`, names ending in `suffix`, as JSON objects; with
/// `keep_ca_key`, the CA's key too ([`CA_SECRET`]).
pub fn secrets(
    certs: &Certificates,
    format: SecretsFormat,
    namespace: &str,
    suffix: &str,
    keep_ca_key: bool,
) -> Vec<Value> {
    use std::collections::BTreeMap;
    let b64 = |text: &str| base64(text.as_bytes());
    let secret = |name: &str, type_: &str, data: BTreeMap<&str, String>| {
        json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "type": type_,
            "metadata": {"name": format!("{name}{suffix}"), "namespace": namespace, "labels": {"app": "contour"}},
            "data": data,
        })
    };
    let tls = |cert: &str, key: &str| {
        let mut data = BTreeMap::from([("tls.crt", b64(cert)), ("tls.key", b64(key))]);
        if format == SecretsFormat::Compact {
            data.insert("ca.crt", b64(&certs.ca));
        }
        data
    };
    let mut out = vec![
        secret("contourcert", "kubernetes.io/tls", tls(&certs.contour_cert, &certs.contour_key)),
        secret("envoycert", "kubernetes.io/tls", tls(&certs.envoy_cert, &certs.envoy_key)),
    ];
    if format == SecretsFormat::Legacy {
        out.push(secret("cacert", "Opaque", BTreeMap::from([("cacert.pem", b64(&certs.ca))])));
    }
    if keep_ca_key {
        out.push(secret(
            CA_SECRET,
            "Opaque",
            BTreeMap::from([("ca.crt", b64(&certs.ca)), ("ca.key", b64(&certs.ca_key))]),
        ));
    }
    out
}

/// The data of a fleet's client certificate Secret (upstream's `envoycert-<gateway>`, compact
/// layout: `ca.crt`, `tls.crt`, `tls.key`), base64.
pub fn fleet_secret_data(ca_pem: &str, issued: &Issued) -> std::collections::BTreeMap<String, String> {
    [("ca.crt", ca_pem), ("tls.crt", &issued.cert), ("tls.key", &issued.key)]
        .into_iter()
        .map(|(k, v)| (k.to_string(), base64(v.as_bytes())))
        .collect()
}

/// The webhook's Secret (`kubernetes.io/tls` with `ca.crt`), as a JSON object.
pub fn webhook_secret(certs: &WebhookCertificates, name: &str, namespace: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/tls",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": "contour"}},
        "data": {"ca.crt": base64(certs.ca.as_bytes()), "tls.crt": base64(certs.cert.as_bytes()), "tls.key": base64(certs.key.as_bytes())},
    })
}

/// Standard base64 with padding (Secret `data`).
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn certificates_and_both_secret_layouts() {
        let certs = generate("projectcontour", 30).unwrap();
        assert!(certs.ca.contains("BEGIN CERTIFICATE") && certs.contour_key.contains("PRIVATE KEY"));
        let legacy = secrets(&certs, SecretsFormat::Legacy, "projectcontour", "", false);
        let names: Vec<_> = legacy.iter().map(|s| s["metadata"]["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["contourcert", "envoycert", "cacert"]);
        assert_eq!(legacy[2]["type"], "Opaque");
        assert!(legacy[0]["data"].get("ca.crt").is_none());
        let compact = secrets(&certs, SecretsFormat::Compact, "x", "-gw", true);
        let names: Vec<_> = compact.iter().map(|s| s["metadata"]["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["contourcert-gw", "envoycert-gw", "contourca-gw"]);
        assert_eq!(compact[2]["type"], "Opaque", "the CA's key is never a TLS Secret a listener could serve");
        assert_eq!(compact[2]["data"]["ca.key"], base64(certs.ca_key.as_bytes()));
        assert_eq!(compact[0]["data"]["ca.crt"], base64(certs.ca.as_bytes()));
        assert_eq!(compact[0]["metadata"]["namespace"], "x");
    }

    #[test]
    fn the_webhook_certificate_names_its_service_and_has_a_ca_of_its_own() {
        let xds = generate("projectcontour", 30).unwrap();
        let webhook = generate_webhook("contour-webhook", "projectcontour", 30).unwrap();
        assert_ne!(webhook.ca, xds.ca);
        let (_, pem) = x509_parser::pem::parse_x509_pem(webhook.cert.as_bytes()).unwrap();
        let cert = pem.parse_x509().unwrap();
        let names: Vec<String> = cert
            .subject_alternative_name()
            .unwrap()
            .unwrap()
            .value
            .general_names
            .iter()
            .map(|n| n.to_string())
            .collect();
        assert!(names.contains(&"DNSName(contour-webhook.projectcontour.svc)".to_string()), "{names:?}");
        let secret = webhook_secret(&webhook, "contour-webhook", "projectcontour");
        assert_eq!(secret["data"]["ca.crt"], base64(webhook.ca.as_bytes()));
        assert_eq!(secret["type"], "kubernetes.io/tls");
    }

    #[test]
    fn base64_pads_like_the_standard() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
    }
}
