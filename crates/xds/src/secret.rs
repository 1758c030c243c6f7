//! TLS certificates (SDS).

use envoy_types::pb::envoy::config::core::v3::{DataSource, data_source};
use envoy_types::pb::envoy::extensions::transport_sockets::tls::v3::{Secret, TlsCertificate, secret};

use crate::Resource;

pub(crate) fn secret(s: &dag::TlsSecret) -> Resource {
    let inline = |bytes: &[u8]| DataSource {
        specifier: Some(data_source::Specifier::InlineBytes(bytes.to_vec())),
        ..Default::default()
    };
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
