use super::*;

const DAY: std::time::Duration = std::time::Duration::from_secs(86_400);

fn der(pem: &str) -> Vec<u8> {
    pem_block(pem).unwrap()
}

#[test]
fn fleet_names_and_uris_round_trip() {
    let id = FleetId::parse("tenant-a/gw").unwrap();
    assert_eq!(id.fleet(), "tenant-a/gw");
    assert_eq!(id.uri("projectcontour.io"), "spiffe://projectcontour.io/ns/tenant-a/gateway/gw");
    assert_eq!(FleetId::from_uri(&id.uri("projectcontour.io"), "projectcontour.io"), Some(id.clone()));
    // Another trust domain, another shape, or a smuggled slash name no fleet.
    assert_eq!(FleetId::from_uri(&id.uri("example.org"), "projectcontour.io"), None);
    assert_eq!(FleetId::from_uri("spiffe://projectcontour.io.evil/ns/a/gateway/b", "projectcontour.io"), None);
    assert_eq!(FleetId::from_uri("spiffe://projectcontour.io/ns/a/sa/b", "projectcontour.io"), None);
    assert_eq!(FleetId::from_uri("spiffe://projectcontour.io/ns/a/gateway/b/c", "projectcontour.io"), None);
    assert_eq!(FleetId::from_uri("spiffe://projectcontour.io/ns//gateway/b", "projectcontour.io"), None);
    // The default fleet and its aliases are no Gateway fleet.
    assert_eq!(FleetId::parse("contour"), None);
    assert_eq!(FleetId::parse("a/b/c"), None);
}

#[test]
fn a_fleet_certificate_names_its_fleet_and_the_installation_one_names_none() {
    let certs = crate::generate("projectcontour", 1).unwrap();
    let ca = certs.authority().unwrap();
    let id = FleetId::parse("tenant-a/gw").unwrap();
    let issued = ca.issue_fleet(&id, DEFAULT_TRUST_DOMAIN, DAY).unwrap();
    let found = identity(&der(&issued.cert), DEFAULT_TRUST_DOMAIN).unwrap();
    assert_eq!(found.claim, Claim::Fleet(id.clone()));
    assert_eq!(found.subject, "spiffe://projectcontour.io/ns/tenant-a/gateway/gw");
    // Read under another trust domain it is no fleet identity, and no installation certificate
    // either: it gets nothing (a mismatched --xds-trust-domain never opens the default fleet).
    assert_eq!(identity(&der(&issued.cert), "example.org").unwrap().claim, Claim::Unrecognised);
    let envoy = identity(&der(&certs.envoy_cert), DEFAULT_TRUST_DOMAIN).unwrap();
    assert_eq!(envoy, Identity { subject: "CN=envoy".into(), claim: Claim::Installation });
}

#[test]
fn a_certificate_with_uri_names_that_are_not_one_fleet_gets_nothing() {
    let certs = crate::generate("projectcontour", 1).unwrap();
    let ca = certs.authority().unwrap();
    let issue = |uris: &[&str]| {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.subject_alt_names = uris.iter().map(|u| SanType::URI((*u).try_into().unwrap())).collect();
        let key = KeyPair::generate().unwrap();
        der(&params.signed_by(&key, &ca.issuer).unwrap().pem())
    };
    let a = "spiffe://projectcontour.io/ns/a/gateway/gw";
    for uris in [
        &["spiffe://cluster.local/ns/a/sa/envoy"][..],
        &[a, "spiffe://projectcontour.io/ns/b/gateway/gw"],
        &["spiffe://projectcontour.io/ns/A/gateway/gw"],
    ] {
        assert_eq!(identity(&issue(uris), DEFAULT_TRUST_DOMAIN).unwrap().claim, Claim::Unrecognised, "{uris:?}");
    }
    assert_eq!(
        identity(&issue(&[a]), DEFAULT_TRUST_DOMAIN).unwrap().claim,
        Claim::Fleet(FleetId::parse("a/gw").unwrap())
    );
}

#[test]
fn a_fleet_certificate_chains_to_the_installation_ca_and_expires_when_asked() {
    let certs = crate::generate("projectcontour", 1).unwrap();
    // The CA as certgen leaves it on disk or in its Secret: certificate and key in PEM.
    let ca = Authority::from_pem(&certs.ca, &certs.ca_key).unwrap();
    let issued = ca.issue_fleet(&FleetId::parse("b/gw").unwrap(), DEFAULT_TRUST_DOMAIN, 30 * DAY).unwrap();
    let leaf_der = der(&issued.cert);
    let (_, leaf) = x509_parser::parse_x509_certificate(&leaf_der).unwrap();
    let ca_der = der(&certs.ca);
    let (_, ca_cert) = x509_parser::parse_x509_certificate(&ca_der).unwrap();
    assert_eq!(leaf.issuer(), ca_cert.subject());
    leaf.verify_signature(Some(ca_cert.public_key())).expect("signed by the installation's CA");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    let expires = not_after(&issued.cert).unwrap() - now;
    assert!((30 * 86_400 - 60..=30 * 86_400 + 60).contains(&expires), "expires in {expires} s");
    verify_pair(&issued.cert, &issued.key, &certs.ca, now).expect("a good pair");
    let other = ca.issue_fleet(&FleetId::parse("b/gw").unwrap(), DEFAULT_TRUST_DOMAIN, DAY).unwrap();
    assert!(verify_pair(&issued.cert, &other.key, &certs.ca, now).is_err(), "another certificate's key");
    let foreign = crate::generate("projectcontour", 1).unwrap();
    assert!(verify_pair(&issued.cert, &issued.key, &foreign.ca, now).is_err(), "another CA");
    assert!(verify_pair(&issued.cert, &issued.key, &certs.ca, now - 3600).is_err(), "not valid yet");
}
