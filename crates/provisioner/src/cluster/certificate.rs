//! Each Gateway fleet's own xDS client certificate (`envoycert-<gateway>`), issued from the
//! installation's CA and naming that fleet alone, so one tenant's Envoys can never receive
//! another's configuration. Pure: what a Secret holds and the time in, a decision out.

use std::collections::BTreeMap;
use std::time::Duration;

/// How fleet certificates are issued.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issuing {
    /// The trust domain of the fleet identity (contour-serve's `--xds-trust-domain`).
    pub trust_domain: String,
    /// How long a certificate is valid; it is renewed once less than a third is left.
    pub lifetime: Duration,
}

impl Default for Issuing {
    fn default() -> Self {
        Self { trust_domain: certs::DEFAULT_TRUST_DOMAIN.into(), lifetime: Duration::from_secs(30 * 86_400) }
    }
}

impl Issuing {
    /// Whether a certificate expiring at `not_after` (Unix seconds) is due for renewal at `now`.
    pub fn due(&self, not_after: i64, now: i64) -> bool {
        not_after - now < (self.lifetime.as_secs() / 3) as i64
    }
}

/// A fleet certificate as kept: the CA that issued it, when it expires, and the Secret's data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    /// The issuing CA's certificate (PEM).
    pub ca: String,
    /// Expiry, Unix seconds.
    pub not_after: i64,
    /// The Secret's `data` (base64): `ca.crt`, `tls.crt`, `tls.key`.
    pub data: BTreeMap<String, String>,
}

/// The certificate in a Secret's (decoded) data, when it is one to keep: signed by `ca` (and its
/// `ca.crt` the CA's certificate), with its own key, naming `fleet` and nothing else, valid now
/// and not due for renewal.
pub fn still_good(
    data: &BTreeMap<String, Vec<u8>>,
    ca: &str,
    fleet: &certs::FleetId,
    issuing: &Issuing,
    now: i64,
) -> Option<Kept> {
    let text = |key: &str| data.get(key).and_then(|v| String::from_utf8(v.clone()).ok());
    let (ca_crt, cert, key) = (text("ca.crt")?, text("tls.crt")?, text("tls.key")?);
    if ca_crt != ca {
        return None;
    }
    let identity = certs::fleet::identity_pem(&cert, &issuing.trust_domain).ok()?;
    if identity.claim != certs::Claim::Fleet(fleet.clone()) {
        return None;
    }
    certs::fleet::verify_pair(&cert, &key, ca, now).ok()?;
    let not_after = certs::fleet::not_after(&cert).ok()?;
    if issuing.due(not_after, now) {
        return None;
    }
    let data = certs::fleet_secret_data(ca, &certs::Issued { cert, key });
    Some(Kept { ca: ca.to_string(), not_after, data })
}

/// A new certificate for `fleet` from `authority`.
pub fn issue(authority: &certs::Authority, fleet: &certs::FleetId, issuing: &Issuing) -> Result<Kept, certs::Error> {
    let issued = authority.issue_fleet(fleet, &issuing.trust_domain, issuing.lifetime)?;
    let not_after = certs::fleet::not_after(&issued.cert)?;
    let data = certs::fleet_secret_data(authority.cert_pem(), &issued);
    Ok(Kept { ca: authority.cert_pem().to_string(), not_after, data })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(kept: &Kept) -> BTreeMap<String, Vec<u8>> {
        use base64::Engine as _;
        kept.data
            .iter()
            .map(|(k, v)| (k.clone(), base64::engine::general_purpose::STANDARD.decode(v).unwrap()))
            .collect()
    }

    #[test]
    fn a_certificate_is_kept_until_a_third_of_its_life_is_left_or_the_ca_changes() {
        let installation = certs::generate("projectcontour", 1).unwrap();
        let ca = installation.authority().unwrap();
        let fleet = certs::FleetId::parse("tenant-a/gw").unwrap();
        let issuing = Issuing::default();
        let kept = issue(&ca, &fleet, &issuing).unwrap();
        let now = kept.not_after - 30 * 86_400 + 60;
        let data = decoded(&kept);
        assert_eq!(still_good(&data, ca.cert_pem(), &fleet, &issuing, now), Some(kept.clone()));
        // Twenty-one days on, nine are left: renewed.
        assert_eq!(still_good(&data, ca.cert_pem(), &fleet, &issuing, now + 21 * 86_400), None);
        // Another fleet's Secret, or a rotated CA: renewed.
        let other = certs::FleetId::parse("tenant-b/gw").unwrap();
        assert_eq!(still_good(&data, ca.cert_pem(), &other, &issuing, now), None);
        let rotated = certs::generate("projectcontour", 1).unwrap();
        assert_eq!(still_good(&data, &rotated.ca, &fleet, &issuing, now), None);
        // The installation's copied certificate (no fleet identity) is replaced.
        let copied = BTreeMap::from([
            ("ca.crt".to_string(), installation.ca.clone().into_bytes()),
            ("tls.crt".into(), installation.envoy_cert.clone().into_bytes()),
            ("tls.key".into(), installation.envoy_key.clone().into_bytes()),
        ]);
        assert_eq!(still_good(&copied, ca.cert_pem(), &fleet, &issuing, now), None);
        // A certificate of this fleet with another key (a tenant edited the Secret): renewed.
        let mut edited = data.clone();
        edited.insert("tls.key".into(), copied["tls.key"].clone());
        assert_eq!(still_good(&edited, ca.cert_pem(), &fleet, &issuing, now), None);
    }
}
