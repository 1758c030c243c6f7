//! TLS certificates (SDS).

use envoy_types::pb::envoy::config::core::v3::{DataSource, data_source};
use envoy_types::pb::envoy::extensions::transport_sockets::tls::v3::{
    CertificateValidationContext, GenericSecret, Secret, TlsCertificate,
    certificate_validation_context::TrustChainVerification, secret,
};

use crate::Resource;

fn inline(bytes: &[u8]) -> DataSource {
    DataSource { specifier: Some(data_source::Specifier::InlineBytes(bytes.to_vec())), ..Default::default() }
}

/// Where Envoy finds the system's trust store (`ca-certificates` on Debian and Ubuntu, the
/// distributions Envoy's images are built on).
pub(crate) const SYSTEM_CA_FILE: &str = "/etc/ssl/certs/ca-certificates.crt";

/// A CA bundle as a validation context secret.
pub(crate) fn validation(b: &dag::CaBundle) -> Resource {
    let message = Secret {
        name: b.name.clone(),
        r#type: Some(secret::Type::ValidationContext(CertificateValidationContext {
            trusted_ca: Some(if b.system { file(SYSTEM_CA_FILE) } else { inline(&b.ca) }),
            crl: b.crl.as_deref().map(inline),
            only_verify_leaf_cert_crl: b.crl_only_leaf,
            trust_chain_verification: if b.accept_untrusted {
                TrustChainVerification::AcceptUntrusted
            } else {
                TrustChainVerification::VerifyTrustChain
            } as i32,
            ..Default::default()
        })),
    };
    Resource::new(&b.name, message)
}

pub(crate) fn secret(s: &dag::TlsSecret) -> Resource {
    if s.generic {
        let message = Secret {
            name: s.name.clone(),
            r#type: Some(secret::Type::GenericSecret(GenericSecret {
                secret: Some(inline(&s.private_key)),
                ..Default::default()
            })),
        };
        return Resource::new(&s.name, message);
    }
    let message = Secret {
        name: s.name.clone(),
        r#type: Some(secret::Type::TlsCertificate(TlsCertificate {
            certificate_chain: Some(inline(&s.certificate_chain)),
            private_key: Some(inline(&s.private_key)),
            ..Default::default()
        })),
    };
    Resource::new(&s.name, message)
}

/// The SDS name of the statistics listener's certificate (upstream's).
pub(crate) const METRICS_CERTIFICATE: &str = "metrics-tls-certificate";
/// The SDS name of the CA that signs scrapers' client certificates (upstream's).
pub(crate) const METRICS_CA: &str = "metrics-ca-certificate";

fn file(path: &str) -> DataSource {
    DataSource { specifier: Some(data_source::Specifier::Filename(path.to_string())), ..Default::default() }
}

/// The statistics listener's certificate and CA as secrets that name files in Envoy's own
/// filesystem, as upstream's do: Envoy reads them where the pod mounts them.
pub(crate) fn metrics(tls: &crate::MetricsTls) -> Vec<Resource> {
    let certificate = Secret {
        name: METRICS_CERTIFICATE.into(),
        r#type: Some(secret::Type::TlsCertificate(TlsCertificate {
            certificate_chain: Some(file(&tls.cert_file)),
            private_key: Some(file(&tls.key_file)),
            ..Default::default()
        })),
    };
    let mut out = vec![Resource::new(METRICS_CERTIFICATE, certificate)];
    if let Some(ca) = &tls.ca_file {
        let validation = Secret {
            name: METRICS_CA.into(),
            r#type: Some(secret::Type::ValidationContext(CertificateValidationContext {
                trusted_ca: Some(file(ca)),
                ..Default::default()
            })),
        };
        out.push(Resource::new(METRICS_CA, validation));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trusted_ca(bundle: &dag::CaBundle) -> Option<data_source::Specifier> {
        let resource = validation(bundle);
        let secret: Secret = prost::Message::decode(resource.body.value.as_slice()).expect("a Secret");
        let Some(secret::Type::ValidationContext(context)) = secret.r#type else { panic!("a validation context") };
        context.trusted_ca.and_then(|ca| ca.specifier)
    }

    #[test]
    fn a_bundle_is_inline_and_the_system_trust_store_a_file_of_envoys() {
        let mut bundle = dag::CaBundle {
            name: "infra/ca/configmap/ca".into(),
            ca: b"PEM".to_vec(),
            crl: None,
            crl_only_leaf: false,
            accept_untrusted: false,
            system: false,
        };
        assert_eq!(trusted_ca(&bundle), Some(data_source::Specifier::InlineBytes(b"PEM".to_vec())));
        bundle.system = true;
        assert_eq!(trusted_ca(&bundle), Some(data_source::Specifier::Filename(SYSTEM_CA_FILE.into())));
    }
}
