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
}

/// The PEM certificate chain and private key of a TLS Secret (`tls.crt`, `tls.key`).
pub fn tls_pair(secret: Option<&Secret>) -> Result<(&[u8], &[u8]), SecretError> {
    let secret = secret.ok_or(SecretError::NotFound)?;
    if !matches!(secret.type_.as_deref(), None | Some("kubernetes.io/tls" | "Opaque")) {
        return Err(SecretError::WrongType);
    }
    let data = secret.data.as_ref();
    let crt = data.and_then(|d| d.get("tls.crt")).map(|b| b.0.as_slice()).ok_or(SecretError::MissingCertificate)?;
    if !has_block(crt, |label| label == "CERTIFICATE") {
        return Err(SecretError::InvalidCertificate);
    }
    let key = data.and_then(|d| d.get("tls.key")).map(|b| b.0.as_slice()).ok_or(SecretError::MissingKey)?;
    if !has_block(key, |label| label.ends_with("PRIVATE KEY")) {
        return Err(SecretError::InvalidKey);
    }
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
    if !has_block(ca, |label| label == "CERTIFICATE") {
        return Err(SecretError::InvalidCa);
    }
    Ok(ca)
}

/// Whether the text holds a complete PEM block whose label satisfies `label`.
fn has_block(bytes: &[u8], label: impl Fn(&str) -> bool) -> bool {
    let Ok(text) = std::str::from_utf8(bytes) else { return false };
    let mut rest = text;
    while let Some(start) = rest.find("-----BEGIN ") {
        let after = &rest[start + 11..];
        let Some(end) = after.find("-----") else { return false };
        let name = &after[..end];
        if label(name) && after.contains(&format!("-----END {name}-----")) {
            return true;
        }
        rest = &after[end..];
    }
    false
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

    const CERT: &str = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    const KEY: &str = "-----BEGIN EC PRIVATE KEY-----\nMHc\n-----END EC PRIVATE KEY-----\n";

    #[test]
    fn tls_secrets_are_checked_as_upstream_words_it() {
        assert!(tls_pair(Some(&secret(Some("kubernetes.io/tls"), &[("tls.crt", CERT), ("tls.key", KEY)]))).is_ok());
        assert_eq!(tls_pair(None), Err(SecretError::NotFound));
        let wrong = secret(Some("kubernetes.io/dockerconfigjson"), &[("tls.crt", CERT), ("tls.key", KEY)]);
        assert_eq!(tls_pair(Some(&wrong)), Err(SecretError::WrongType));
        assert_eq!(tls_pair(Some(&secret(None, &[("tls.key", KEY)]))), Err(SecretError::MissingCertificate));
        assert_eq!(
            tls_pair(Some(&secret(None, &[("tls.crt", KEY), ("tls.key", KEY)]))),
            Err(SecretError::InvalidCertificate)
        );
        assert_eq!(tls_pair(Some(&secret(None, &[("tls.crt", CERT)]))), Err(SecretError::MissingKey));
        assert_eq!(
            tls_pair(Some(&secret(None, &[("tls.crt", CERT), ("tls.key", CERT)]))),
            Err(SecretError::InvalidKey)
        );
        assert_eq!(SecretError::WrongType.to_string(), "secret type is not \"kubernetes.io/tls\" or \"Opaque\"");
        let truncated = "-----BEGIN CERTIFICATE-----\nMIIB\n";
        assert_eq!(
            tls_pair(Some(&secret(None, &[("tls.crt", truncated), ("tls.key", KEY)]))),
            Err(SecretError::InvalidCertificate)
        );
    }

    #[test]
    fn ca_bundles_need_a_certificate() {
        assert!(ca_bundle(Some(&secret(None, &[("ca.crt", CERT)]))).is_ok());
        assert_eq!(ca_bundle(Some(&secret(None, &[("ca.crt", "")]))), Err(SecretError::MissingCa));
        assert_eq!(ca_bundle(Some(&secret(None, &[("ca.crt", KEY)]))), Err(SecretError::InvalidCa));
    }
}
