//! JWT verification (`envoy.filters.http.jwt_authn`): in the connection manager of each TLS
//! virtual host with providers, as upstream. Each provider is also a requirement of its own
//! name, which routes name through per-filter configuration; a route naming none is not
//! checked.

use envoy_types::pb::envoy::config::core::v3::{DataSource, HttpUri, data_source, http_uri};
use envoy_types::pb::envoy::extensions::filters::http::jwt_authn::v3::{
    JwtProvider, PerRouteConfig, RemoteJwks, jwt_provider, per_route_config,
};
use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::HttpFilter;
use envoy_types::pb::google::protobuf::Any;
use envoy_types::util::pack_any;
use prost::Message;

/// The filter's name, which per-filter configuration is keyed by.
pub(crate) const NAME: &str = "envoy.filters.http.jwt_authn";

/// `JwtAuthentication` as the wire sees it, with providers and requirements in order.
#[derive(Clone, PartialEq, Message)]
struct Authentication {
    /// `providers` (field 1).
    #[prost(message, repeated, tag = "1")]
    providers: Vec<ProviderEntry>,
    /// `requirement_map` (field 5).
    #[prost(message, repeated, tag = "5")]
    requirement_map: Vec<RequirementEntry>,
}

#[derive(Clone, PartialEq, Message)]
struct ProviderEntry {
    #[prost(string, tag = "1")]
    key: String,
    #[prost(message, optional, tag = "2")]
    value: Option<JwtProvider>,
}

/// `JwtRequirement` naming one provider (`provider_name`, field 1).
#[derive(Clone, PartialEq, Message)]
struct Requirement {
    #[prost(string, tag = "1")]
    provider_name: String,
}

#[derive(Clone, PartialEq, Message)]
struct RequirementEntry {
    #[prost(string, tag = "1")]
    key: String,
    #[prost(message, optional, tag = "2")]
    value: Option<Requirement>,
}

/// A remote server's URI, reached through its DNS cluster (JWKS, an OpenID token endpoint).
pub(crate) fn remote_uri(remote: &ir::RemoteJwks) -> HttpUri {
    HttpUri {
        uri: remote.uri.clone(),
        timeout: Some(crate::duration_ms(remote.timeout_ms)),
        http_upstream_type: Some(http_uri::HttpUpstreamType::Cluster(dag::jwks_cluster_name(remote))),
    }
}

/// The filter with these providers, each fetching its keys through its DNS cluster.
pub(crate) fn filter(providers: &[ir::JwtProvider]) -> HttpFilter {
    let provider = |p: &ir::JwtProvider| JwtProvider {
        issuer: p.issuer.clone(),
        audiences: p.audiences.clone(),
        forward: p.forward,
        jwks_source_specifier: Some(match &p.jwks {
            ir::Jwks::Remote(remote) => jwt_provider::JwksSourceSpecifier::RemoteJwks(RemoteJwks {
                http_uri: Some(remote_uri(remote)),
                cache_duration: remote.cache_duration_ms.map(crate::duration_ms),
                ..Default::default()
            }),
            ir::Jwks::Local(jwks) => jwt_provider::JwksSourceSpecifier::LocalJwks(DataSource {
                specifier: Some(data_source::Specifier::InlineString(jwks.clone())),
                ..Default::default()
            }),
        }),
        ..Default::default()
    };
    let config = Authentication {
        providers: providers.iter().map(|p| ProviderEntry { key: p.name.clone(), value: Some(provider(p)) }).collect(),
        requirement_map: providers
            .iter()
            .map(|p| RequirementEntry {
                key: p.name.clone(),
                value: Some(Requirement { provider_name: p.name.clone() }),
            })
            .collect(),
    };
    let any = Any {
        type_url: "type.googleapis.com/envoy.extensions.filters.http.jwt_authn.v3.JwtAuthentication".into(),
        value: config.encode_to_vec(),
    };
    crate::http_filter(NAME, any)
}

/// A route's requirement: the provider whose token it needs.
pub(crate) fn per_route(provider: &str) -> Any {
    pack_any(PerRouteConfig {
        requirement_specifier: Some(per_route_config::RequirementSpecifier::RequirementName(provider.into())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use envoy_types::pb::envoy::extensions::filters::http::jwt_authn::v3::{JwtAuthentication, jwt_requirement};
    use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::http_filter;

    #[test]
    fn providers_are_requirements_of_their_own_name() {
        let provider = |name: &str| ir::JwtProvider {
            name: name.into(),
            issuer: "https://issuer".into(),
            audiences: vec!["api".into()],
            jwks: ir::Jwks::Remote(ir::RemoteJwks {
                uri: "https://idp.example.com/keys".into(),
                tls: true,
                host: "idp.example.com".into(),
                port: 443,
                validation: None,
                timeout_ms: 1000,
                cache_duration_ms: None,
                dns_lookup_family: None,
            }),
            forward: true,
        };
        let f = filter(&[provider("b"), provider("a")]);
        let Some(http_filter::ConfigType::TypedConfig(any)) = f.config_type else { panic!() };
        let config = JwtAuthentication::decode(any.value.as_slice()).unwrap();
        assert_eq!(config.providers.len(), 2);
        let a = &config.providers["a"];
        assert!(a.forward);
        let Some(jwt_provider::JwksSourceSpecifier::RemoteJwks(remote)) = &a.jwks_source_specifier else { panic!() };
        let Some(http_uri::HttpUpstreamType::Cluster(cluster)) = &remote.http_uri.as_ref().unwrap().http_upstream_type
        else {
            panic!()
        };
        assert!(cluster.starts_with("dnsname/https/idp.example.com/443/"), "{cluster}");
        assert_eq!(
            config.requirement_map["b"].requires_type,
            Some(jwt_requirement::RequiresType::ProviderName("b".into()))
        );
    }
}
