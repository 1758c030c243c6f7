//! A Certificate's spec into a certificate and key, self-signed or signed by a CA.

use anyhow::Context as _;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose,
    SanType,
};
use serde_json::Value;

/// Who signs.
pub enum Signer {
    /// The certificate signs itself.
    SelfSigned,
    /// A CA from a Secret, PEM.
    Ca {
        /// `tls.crt`.
        cert: String,
        /// `tls.key`.
        key: String,
    },
}

/// What goes into the Secret and the Certificate's status.
pub struct Bundle {
    pub cert: String,
    pub key: String,
    pub ca: String,
    pub not_before: String,
    pub not_after: String,
}

/// Issues what `spec` asks for: commonName, subject organizations and units, dnsNames,
/// ipAddresses, emailAddresses, uris, isCA, usages and duration (default 90 days).
pub fn issue(spec: &Value, signer: &Signer) -> anyhow::Result<Bundle> {
    let strings = |v: &Value| -> Vec<String> {
        v.as_array().into_iter().flatten().filter_map(|s| s.as_str().map(str::to_string)).collect()
    };
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    if let Some(cn) = spec["commonName"].as_str() {
        params.distinguished_name.push(DnType::CommonName, cn);
    }
    for o in strings(&spec["subject"]["organizations"]) {
        params.distinguished_name.push(DnType::OrganizationName, o);
    }
    for ou in strings(&spec["subject"]["organizationalUnits"]) {
        params.distinguished_name.push(DnType::OrganizationalUnitName, ou);
    }
    for dns in strings(&spec["dnsNames"]) {
        params.subject_alt_names.push(SanType::DnsName(dns.try_into().context("dnsNames")?));
    }
    for ip in strings(&spec["ipAddresses"]) {
        params.subject_alt_names.push(SanType::IpAddress(ip.parse().context("ipAddresses")?));
    }
    for email in strings(&spec["emailAddresses"]) {
        params.subject_alt_names.push(SanType::Rfc822Name(email.try_into().context("emailAddresses")?));
    }
    for uri in strings(&spec["uris"]) {
        params.subject_alt_names.push(SanType::URI(uri.try_into().context("uris")?));
    }
    let is_ca = spec["isCA"].as_bool().unwrap_or(false);
    if is_ca {
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    }
    // cert-manager's default usages: digital signature and key encipherment.
    let mut usages = strings(&spec["usages"]);
    if usages.is_empty() {
        usages = vec!["digital signature".into(), "key encipherment".into()];
    }
    for u in &usages {
        match u.as_str() {
            "digital signature" | "signing" => params.key_usages.push(KeyUsagePurpose::DigitalSignature),
            "key encipherment" => params.key_usages.push(KeyUsagePurpose::KeyEncipherment),
            "cert sign" => params.key_usages.push(KeyUsagePurpose::KeyCertSign),
            "crl sign" => params.key_usages.push(KeyUsagePurpose::CrlSign),
            "server auth" => params.extended_key_usages.push(ExtendedKeyUsagePurpose::ServerAuth),
            "client auth" => params.extended_key_usages.push(ExtendedKeyUsagePurpose::ClientAuth),
            _ => {}
        }
    }
    if is_ca && !params.key_usages.contains(&KeyUsagePurpose::KeyCertSign) {
        params.key_usages.push(KeyUsagePurpose::KeyCertSign);
    }
    params.key_usages.dedup();
    let now = time::OffsetDateTime::now_utc();
    let days = spec["duration"].as_str().and_then(duration_days).unwrap_or(90);
    params.not_before = now - time::Duration::minutes(5);
    params.not_after = now + time::Duration::days(days);
    let key = KeyPair::generate().context("generating a key")?;
    let (cert, ca) = match signer {
        Signer::SelfSigned => {
            let cert = params.self_signed(&key)?.pem();
            (cert.clone(), cert)
        }
        Signer::Ca { cert: ca_cert, key: ca_key } => {
            let ca_key = KeyPair::from_pem(ca_key).context("the CA Secret's tls.key")?;
            let issuer = Issuer::from_ca_cert_pem(ca_cert, ca_key).context("the CA Secret's tls.crt")?;
            (params.signed_by(&key, &issuer)?.pem(), ca_cert.clone())
        }
    };
    let rfc3339 =
        |t: time::OffsetDateTime| t.format(&time::format_description::well_known::Rfc3339).unwrap_or_default();
    Ok(Bundle {
        cert,
        key: key.serialize_pem(),
        ca,
        not_before: rfc3339(params.not_before),
        not_after: rfc3339(params.not_after),
    })
}

/// Days in a Go duration such as `2160h` (rounded up); `None` when unreadable.
fn duration_days(text: &str) -> Option<i64> {
    let hours: f64 = text.strip_suffix('h')?.parse().ok()?;
    Some(((hours / 24.0).ceil() as i64).max(1))
}
