//! Fleet identities: which Gateway's Envoy fleet an xDS client certificate may speak for.
//!
//! A fleet certificate names its fleet in a URI SAN, `spiffe://<trust domain>/ns/<namespace>/gateway/<name>`;
//! contour-serve reads it from the verified peer certificate and serves that fleet only. A
//! certificate without one (upstream's `envoy` certificate) may receive the default fleet only.

use rcgen::{
    CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, Issuer, KeyPair, KeyUsagePurpose, SanType,
};
use x509_parser::extensions::GeneralName;

use crate::Error;

/// The trust domain of fleet identities unless configured otherwise (`--xds-trust-domain`).
pub const DEFAULT_TRUST_DOMAIN: &str = "projectcontour.io";

/// A Gateway's fleet, as a certificate names it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FleetId {
    /// The Gateway's namespace.
    pub namespace: String,
    /// The Gateway's name.
    pub name: String,
}

impl FleetId {
    /// The fleet `namespace/name` (the Envoy node cluster a Gateway's Envoys name). `None` for
    /// anything else, the default fleet among them.
    pub fn parse(fleet: &str) -> Option<Self> {
        let (namespace, name) = fleet.split_once('/')?;
        (segment(namespace) && segment(name)).then(|| Self { namespace: namespace.into(), name: name.into() })
    }

    /// The fleet's name as Envoy's node cluster says it: `namespace/name`.
    pub fn fleet(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// The URI SAN of the fleet's certificates.
    pub fn uri(&self, trust_domain: &str) -> String {
        format!("spiffe://{trust_domain}/ns/{}/gateway/{}", self.namespace, self.name)
    }

    /// The fleet a URI SAN names, when it is a fleet identity of `trust_domain`.
    pub fn from_uri(uri: &str, trust_domain: &str) -> Option<Self> {
        let path = uri.strip_prefix("spiffe://")?.strip_prefix(trust_domain)?.strip_prefix("/ns/")?;
        let (namespace, rest) = path.split_once('/')?;
        let name = rest.strip_prefix("gateway/")?;
        (segment(namespace) && segment(name)).then(|| Self { namespace: namespace.into(), name: name.into() })
    }
}

impl std::fmt::Display for FleetId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// A Kubernetes namespace or object name: no slashes, nothing empty.
fn segment(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
}

/// Who a verified xDS client certificate says its holder is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// What log lines call the certificate: its URI SAN, else its common name.
    pub subject: String,
    /// What it may receive.
    pub claim: Claim,
}

/// What a certificate's names let it receive. Fails closed: only a certificate with no URI SAN
/// at all counts as the installation's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// No URI SAN: a certificate of the whole installation (upstream's `envoy`), which may
    /// receive the default fleet only.
    Installation,
    /// Exactly one URI SAN, a fleet identity of the trust domain: that fleet only.
    Fleet(FleetId),
    /// URI SANs that are not exactly one fleet identity of the trust domain (another trust
    /// domain, another shape, several): nothing.
    Unrecognised,
}

/// The identity in a DER certificate (already verified against the CA by the TLS handshake).
pub fn identity(der: &[u8], trust_domain: &str) -> Result<Identity, Error> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).map_err(|e| Error::Parse(e.to_string()))?;
    let san = cert.subject_alternative_name().map_err(|e| Error::Parse(format!("subject alternative names: {e}")))?;
    let uris: Vec<String> = san
        .iter()
        .flat_map(|s| s.value.general_names.iter())
        .filter_map(|n| match n {
            GeneralName::URI(uri) => Some(uri.to_string()),
            _ => None,
        })
        .collect();
    let claim = match uris.as_slice() {
        [] => Claim::Installation,
        [uri] => FleetId::from_uri(uri, trust_domain).map_or(Claim::Unrecognised, Claim::Fleet),
        _ => Claim::Unrecognised,
    };
    let common_name = cert.subject().iter_common_name().next().and_then(|cn| cn.as_str().ok()).map(str::to_string);
    let subject = match (uris.as_slice(), common_name) {
        ([], Some(cn)) => format!("CN={cn}"),
        ([], None) => cert.subject().to_string(),
        (uris, _) => uris.join(","),
    };
    Ok(Identity { subject, claim })
}

/// Checks a fleet certificate and key as kept in a Secret or on disk: the certificate is signed
/// by `ca_pem`, valid now, and `key_pem` is its key.
pub fn verify_pair(cert_pem: &str, key_pem: &str, ca_pem: &str, now: i64) -> Result<(), Error> {
    let (leaf_der, ca_der) = (pem_block(cert_pem)?, pem_block(ca_pem)?);
    let (_, leaf) = x509_parser::parse_x509_certificate(&leaf_der).map_err(|e| Error::Parse(e.to_string()))?;
    let (_, ca) = x509_parser::parse_x509_certificate(&ca_der).map_err(|e| Error::Parse(e.to_string()))?;
    leaf.verify_signature(Some(ca.public_key())).map_err(|e| Error::Parse(format!("not signed by the CA: {e}")))?;
    if leaf.validity().not_before.timestamp() > now {
        return Err(Error::Parse("not valid yet".into()));
    }
    let key = rcgen::KeyPair::from_pem(key_pem)?;
    if key.public_key_raw() != &*leaf.public_key().subject_public_key.data {
        return Err(Error::Parse("the key is not the certificate's".into()));
    }
    Ok(())
}

/// [`identity`] of a PEM certificate.
pub fn identity_pem(cert_pem: &str, trust_domain: &str) -> Result<Identity, Error> {
    identity(&pem_block(cert_pem)?, trust_domain)
}

/// When a PEM certificate expires, as seconds since the Unix epoch.
pub fn not_after(cert_pem: &str) -> Result<i64, Error> {
    let block = pem_block(cert_pem)?;
    let (_, cert) = x509_parser::parse_x509_certificate(&block).map_err(|e| Error::Parse(e.to_string()))?;
    Ok(cert.validity().not_after.timestamp())
}

fn pem_block(pem: &str) -> Result<Vec<u8>, Error> {
    let (_, block) = x509_parser::pem::parse_x509_pem(pem.as_bytes()).map_err(|e| Error::Parse(e.to_string()))?;
    Ok(block.contents)
}

/// The installation's CA, able to issue fleet certificates.
pub struct Authority {
    cert_pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl std::fmt::Debug for Authority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authority").finish_non_exhaustive()
    }
}

/// A client certificate and its key, in PEM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issued {
    /// The certificate.
    pub cert: String,
    /// Its private key.
    pub key: String,
}

impl Authority {
    /// The CA of a certificate and key in PEM (certgen's `cacert.pem` and `cakey.pem`).
    pub fn from_pem(cert_pem: &str, key_pem: &str) -> Result<Self, Error> {
        let key = KeyPair::from_pem(key_pem)?;
        let issuer = Issuer::from_ca_cert_pem(cert_pem, key)?;
        Ok(Self { cert_pem: cert_pem.to_string(), issuer })
    }

    /// The CA certificate in PEM.
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// A client certificate for `fleet`, valid for `lifetime` from now.
    pub fn issue_fleet(
        &self,
        fleet: &FleetId,
        trust_domain: &str,
        lifetime: std::time::Duration,
    ) -> Result<Issued, Error> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        let uri = fleet.uri(trust_domain);
        params.subject_alt_names =
            vec![SanType::URI(uri.as_str().try_into().map_err(|_| Error::Parse(format!("{uri:?} is no URI")))?)];
        let mut dn = DistinguishedName::new();
        dn.push(DnType::OrganizationName, "Project Contour");
        dn.push(DnType::CommonName, format!("envoy {fleet}"));
        params.distinguished_name = dn;
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
        crate::valid_for(&mut params, lifetime);
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &self.issuer)?;
        Ok(Issued { cert: cert.pem(), key: key.serialize_pem() })
    }
}

#[cfg(test)]
mod tests;
