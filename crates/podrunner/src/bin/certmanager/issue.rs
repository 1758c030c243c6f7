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
    // rcgen keeps one value per attribute type (the last unit named): subjects that differ only
    // in an earlier unit collide. Issuers are told apart by key identifiers below, as X.509
    // stacks do, so a certificate from a look-alike CA still fails as "unknown CA".
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
    // The issuer's key identifier, as Go's x509 (and so cert-manager) writes it: verifiers match
    // a certificate to its CA by it, not by the subject name alone.
    params.use_authority_key_identifier_extension = matches!(signer, Signer::Ca { .. });
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

#[cfg(test)]
mod tests {
    use super::*;

    fn ca(unit: &str) -> Bundle {
        let spec = serde_json::json!({
            "isCA": true, "commonName": "issuer",
            "subject": {"organizationalUnits": ["io", unit, "testsuite"]},
        });
        issue(&spec, &Signer::SelfSigned).unwrap()
    }

    /// `openssl verify` of `leaf` against `ca`: its output.
    fn verify(ca: &str, leaf: &str) -> String {
        static RUN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = RUN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("certmanager-standin-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("ca.pem"), ca).unwrap();
        std::fs::write(dir.join("leaf.pem"), leaf).unwrap();
        let out = std::process::Command::new("openssl")
            .args(["verify", "-CAfile", "ca.pem", "leaf.pem"])
            .current_dir(&dir)
            .output()
            .expect("openssl");
        let _ = std::fs::remove_dir_all(&dir);
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    }

    /// upstream's client-cert-auth spec: two CAs named alike; a client certificate from the other
    /// one must fail as an unknown CA, not as a bad signature from the right one.
    #[test]
    fn a_look_alike_ca_is_an_unknown_issuer() {
        let (ours, theirs) = (ca("projectcontour"), ca("notprojectcontour"));
        let client = |ca: &Bundle| {
            let spec = serde_json::json!({"commonName": "client", "usages": ["client auth"]});
            issue(&spec, &Signer::Ca { cert: ca.cert.clone(), key: ca.key.clone() }).unwrap()
        };
        assert!(verify(&ours.cert, &client(&ours).cert).contains("leaf.pem: OK"));
        let foreign = verify(&ours.cert, &client(&theirs).cert);
        assert!(foreign.contains("unable to get local issuer certificate"), "{foreign}");
    }

    #[test]
    fn go_durations_round_up_to_days() {
        assert_eq!(duration_days("2160h"), Some(90));
        assert_eq!(duration_days("1h"), Some(1));
        assert_eq!(duration_days("soon"), None);
    }
}
