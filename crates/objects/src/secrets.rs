//! What a Secret must hold to serve as a TLS certificate or a CA bundle. Shared by every front
//! end and the DAG, so all of them accept and refuse the same Secrets with the same words.

use crate::types::Secret;

/// Why a Secret cannot be used; the text follows upstream Contour's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    /// No such Secret.
    #[error("Secret not found")]
    NotFound,
    /// The Secret's type cannot hold certificates.
    #[error("secret type is not \"kubernetes.io/tls\" or \"Opaque\"")]
    WrongType,
    /// `tls.crt` is absent.
    #[error("missing TLS certificate")]
    MissingCertificate,
    /// `tls.crt` holds no PEM certificate.
    #[error("invalid TLS certificate: failed to locate certificate")]
    InvalidCertificate,
    /// `tls.key` is absent.
    #[error("missing TLS private key")]
    MissingKey,
    /// `tls.key` holds no PEM private key.
    #[error("invalid TLS private key: failed to locate private key")]
    InvalidKey,
    /// `ca.crt` is absent or empty.
    #[error("empty \"ca.crt\" key")]
    MissingCa,
    /// `ca.crt` holds no PEM certificate.
    #[error("invalid CA certificate bundle: failed to locate certificate")]
    InvalidCa,
    /// `tls.crt` holds a block that is no certificate Envoy could load.
    #[error("invalid TLS certificate: {0}")]
    BadCertificate(String),
    /// `tls.key` holds a block that is no private key Envoy could load.
    #[error("invalid TLS private key: {0}")]
    BadKey(String),
    /// `ca.crt` holds a block that is no certificate Envoy could load.
    #[error("invalid CA certificate bundle: {0}")]
    BadCa(String),
}

/// The PEM certificate chain and private key of a TLS Secret (`tls.crt`, `tls.key`).
pub fn tls_pair(secret: Option<&Secret>) -> Result<(&[u8], &[u8]), SecretError> {
    let secret = secret.ok_or(SecretError::NotFound)?;
    if !matches!(secret.type_.as_deref(), None | Some("kubernetes.io/tls" | "Opaque")) {
        return Err(SecretError::WrongType);
    }
    let data = secret.data.as_ref();
    let crt = data.and_then(|d| d.get("tls.crt")).map(|b| b.0.as_slice()).ok_or(SecretError::MissingCertificate)?;
    certificates(crt, true).map_err(|e| e.map_or(SecretError::InvalidCertificate, SecretError::BadCertificate))?;
    let key = data.and_then(|d| d.get("tls.key")).map(|b| b.0.as_slice()).ok_or(SecretError::MissingKey)?;
    private_key(key)?;
    Ok((crt, key))
}

/// The PEM CA bundle of a Secret (`ca.crt`).
pub fn ca_bundle(secret: Option<&Secret>) -> Result<&[u8], SecretError> {
    let secret = secret.ok_or(SecretError::NotFound)?;
    if !matches!(secret.type_.as_deref(), None | Some("kubernetes.io/tls" | "Opaque")) {
        return Err(SecretError::WrongType);
    }
    let ca = secret
        .data
        .as_ref()
        .and_then(|d| d.get("ca.crt"))
        .map(|b| b.0.as_slice())
        .filter(|b| !b.is_empty())
        .ok_or(SecretError::MissingCa)?;
    ca_certificates(ca)?;
    Ok(ca)
}

/// Checks a PEM CA bundle (a Secret's or a ConfigMap's `ca.crt`): every block a certificate
/// Envoy can load.
pub fn ca_certificates(pem: &[u8]) -> Result<(), SecretError> {
    certificates(pem, false).map_err(|e| e.map_or(SecretError::InvalidCa, SecretError::BadCa))
}

/// Checks PEM certificates as upstream Contour does, and as Envoy will load them: every block
/// decodes and is an X.509 certificate, and (for a serving certificate) the first names a host.
/// `Err(None)` when there is no block at all.
fn certificates(bytes: &[u8], serving: bool) -> Result<(), Option<String>> {
    let blocks = blocks(bytes)?;
    if blocks.is_empty() {
        return Err(None);
    }
    for (i, block) in blocks.iter().enumerate() {
        if block.tag() != "CERTIFICATE" {
            return Err(Some(format!("unexpected block type '{}'", block.tag())));
        }
        let (_, cert) = x509_parser::parse_x509_certificate(block.contents()).map_err(|e| Some(e.to_string()))?;
        if serving && i == 0 && !names_a_host(&cert) {
            return Err(Some("certificate has no common name or subject alt name".into()));
        }
    }
    Ok(())
}

/// Whether a certificate has a common name or a DNS or IP subject alternative name.
fn names_a_host(cert: &x509_parser::certificate::X509Certificate<'_>) -> bool {
    use x509_parser::extensions::GeneralName;
    let common_name = cert.subject().iter_common_name().any(|cn| cn.as_str().is_ok_and(|name| !name.trim().is_empty()));
    let alt_name = cert.subject_alternative_name().ok().flatten().is_some_and(|san| {
        san.value.general_names.iter().any(|n| matches!(n, GeneralName::DNSName(_) | GeneralName::IPAddress(_)))
    });
    common_name || alt_name
}

/// Checks a PEM private key as upstream Contour does: exactly one key block (PKCS#8, PKCS#1 or
/// SEC 1) whose body is a DER structure; `EC PARAMETERS` blocks are allowed beside it.
fn private_key(bytes: &[u8]) -> Result<(), SecretError> {
    let blocks = blocks(bytes).map_err(|e| SecretError::BadKey(e.unwrap_or_default()))?;
    let mut keys = 0;
    for block in &blocks {
        match block.tag() {
            "PRIVATE KEY" | "RSA PRIVATE KEY" | "EC PRIVATE KEY" => {
                let parsed = x509_parser::der_parser::parse_der(block.contents());
                if !parsed.is_ok_and(|(rest, der)| rest.is_empty() && der.as_sequence().is_ok()) {
                    return Err(SecretError::BadKey(format!("malformed {}", block.tag())));
                }
                keys += 1;
            }
            "EC PARAMETERS" => {}
            other => return Err(SecretError::BadKey(format!("unexpected block type '{other}'"))),
        }
    }
    match keys {
        0 => Err(SecretError::InvalidKey),
        1 => Ok(()),
        _ => Err(SecretError::BadKey("multiple private keys".into())),
    }
}

/// The PEM blocks of a text (text around them is ignored); upstream's words when one does not
/// decode.
fn blocks(bytes: &[u8]) -> Result<Vec<pem::Pem>, Option<String>> {
    pem::parse_many(bytes).map_err(|_| Some("failed to parse PEM block".to_string()))
}

/// A real certificate and key for tests: `*.example.com` and `example.com`, CN
/// `fuzz.example.com`, an ECDSA P-256 key, valid until 2126.
#[cfg(any(test, feature = "testing"))]
pub mod testing {
    /// `tls.crt`, PEM.
    pub const CERT: &str = include_str!("testing/tls.crt");
    /// `tls.key`, PEM.
    pub const KEY: &str = include_str!("testing/tls.key");

    /// A PEM text escaped for a YAML double-quoted string.
    pub fn quoted(pem: &str) -> String {
        pem.replace('\n', "\\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::ByteString;

    fn secret(type_: Option<&str>, entries: &[(&str, &str)]) -> Secret {
        Secret {
            type_: type_.map(str::to_string),
            data: Some(entries.iter().map(|(k, v)| (k.to_string(), ByteString(v.as_bytes().to_vec()))).collect()),
            ..Default::default()
        }
    }

    use testing::{CERT, KEY};

    /// A PEM block with this label and body.
    fn block(label: &str, body: &str) -> String {
        format!("-----BEGIN {label}-----\n{body}\n-----END {label}-----\n")
    }

    #[test]
    fn tls_secrets_are_checked_as_upstream_words_it() {
        assert!(tls_pair(Some(&secret(Some("kubernetes.io/tls"), &[("tls.crt", CERT), ("tls.key", KEY)]))).is_ok());
        assert_eq!(tls_pair(None), Err(SecretError::NotFound));
        let wrong = secret(Some("kubernetes.io/dockerconfigjson"), &[("tls.crt", CERT), ("tls.key", KEY)]);
        assert_eq!(tls_pair(Some(&wrong)), Err(SecretError::WrongType));
        assert_eq!(tls_pair(Some(&secret(None, &[("tls.key", KEY)]))), Err(SecretError::MissingCertificate));
        assert_eq!(
            tls_pair(Some(&secret(None, &[("tls.crt", "no PEM here"), ("tls.key", KEY)]))),
            Err(SecretError::InvalidCertificate)
        );
        assert_eq!(
            tls_pair(Some(&secret(None, &[("tls.crt", KEY), ("tls.key", KEY)]))),
            Err(SecretError::BadCertificate("unexpected block type 'PRIVATE KEY'".into()))
        );
        assert_eq!(tls_pair(Some(&secret(None, &[("tls.crt", CERT)]))), Err(SecretError::MissingKey));
        assert_eq!(
            tls_pair(Some(&secret(None, &[("tls.crt", CERT), ("tls.key", CERT)]))),
            Err(SecretError::BadKey("unexpected block type 'CERTIFICATE'".into()))
        );
        assert_eq!(SecretError::WrongType.to_string(), "secret type is not \"kubernetes.io/tls\" or \"Opaque\"");
        let truncated = "-----BEGIN CERTIFICATE-----\nMIIB\n";
        assert_eq!(
            tls_pair(Some(&secret(None, &[("tls.crt", truncated), ("tls.key", KEY)]))),
            Err(SecretError::InvalidCertificate)
        );
    }

    /// What Envoy refuses to load (it NACKed these) is refused first, with upstream's words
    /// where upstream has them.
    #[test]
    fn certificates_and_keys_envoy_cannot_load_are_refused() {
        let pair =
            |crt: &str, key: &str| tls_pair(Some(&secret(None, &[("tls.crt", crt), ("tls.key", key)]))).map(drop);
        let garbage = block("CERTIFICATE", "not a certificate");
        assert_eq!(pair(&garbage, KEY), Err(SecretError::BadCertificate("failed to parse PEM block".into())));
        // Base64, but no certificate.
        let not_x509 = block("CERTIFICATE", "AAAA");
        assert!(matches!(pair(&not_x509, KEY), Err(SecretError::BadCertificate(_))), "{:?}", pair(&not_x509, KEY));
        // A good certificate followed by a bad one in the chain.
        let chain = format!("{CERT}{not_x509}");
        assert!(matches!(pair(&chain, KEY), Err(SecretError::BadCertificate(_))));
        assert_eq!(
            pair(CERT, &block("PRIVATE KEY", "not a key")),
            Err(SecretError::BadKey("failed to parse PEM block".into()))
        );
        assert_eq!(pair(CERT, &block("PRIVATE KEY", "AAAA")), Err(SecretError::BadKey("malformed PRIVATE KEY".into())));
        assert_eq!(pair(CERT, &format!("{KEY}{KEY}")), Err(SecretError::BadKey("multiple private keys".into())));
        assert_eq!(pair(CERT, "no PEM here"), Err(SecretError::InvalidKey));
    }

    #[test]
    fn ca_bundles_need_a_certificate() {
        assert!(ca_bundle(Some(&secret(None, &[("ca.crt", CERT)]))).is_ok());
        assert_eq!(ca_bundle(Some(&secret(None, &[("ca.crt", "")]))), Err(SecretError::MissingCa));
        assert_eq!(ca_bundle(Some(&secret(None, &[("ca.crt", "no PEM")]))), Err(SecretError::InvalidCa));
        assert_eq!(
            ca_bundle(Some(&secret(None, &[("ca.crt", KEY)]))),
            Err(SecretError::BadCa("unexpected block type 'PRIVATE KEY'".into()))
        );
        let garbage = block("CERTIFICATE", "AAAA");
        assert!(matches!(ca_bundle(Some(&secret(None, &[("ca.crt", &garbage)]))), Err(SecretError::BadCa(_))));
    }
}
