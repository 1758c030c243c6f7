//! Resources for an Envoy that takes each type on a stream of its own, as upstream's bootstrap
//! (`contour bootstrap` of upstream Contour) configures it: there is no ADS stream, so every
//! config source that says "over ADS" (EDS of a cluster, RDS of a connection manager, SDS of a
//! TLS context or of the OAuth2 filter) must name the xDS cluster over gRPC instead, as
//! upstream's resources do. Envoy refuses a resource with an ADS source when it has no ADS.

use envoy_types::pb::envoy::config::cluster::v3::Cluster;
use envoy_types::pb::envoy::config::core::v3::{
    ApiConfigSource, ApiVersion, ConfigSource, GrpcService, TransportSocket, api_config_source, config_source,
    grpc_service, transport_socket,
};
use envoy_types::pb::envoy::config::listener::v3::{FilterChain, Listener, filter};
use envoy_types::pb::envoy::extensions::filters::http::oauth2::v3::{OAuth2, o_auth2_credentials};
use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::{
    HttpConnectionManager, http_connection_manager, http_filter,
};
use envoy_types::pb::envoy::extensions::transport_sockets::quic::v3::QuicDownstreamTransport;
use envoy_types::pb::envoy::extensions::transport_sockets::tls::v3::{
    CommonTlsContext, DownstreamTlsContext, SdsSecretConfig, UpstreamTlsContext, common_tls_context,
};
use envoy_types::pb::google::protobuf::Any;
use envoy_types::util::pack_any;
use prost::{Message, Name};

use crate::{Resource, ResourceType};

/// The static cluster of the controller in upstream's bootstrap and in ours.
pub const XDS_CLUSTER: &str = "contour";

/// `resource` as an Envoy without ADS can take it. Its name and version stay those of the
/// resource as built, so what Envoy acknowledges is counted against the same configuration.
pub fn without_ads(resource_type: ResourceType, resource: &Resource) -> Resource {
    let body = match resource_type {
        ResourceType::Cluster => rewrite::<Cluster>(&resource.body, cluster),
        ResourceType::Listener => rewrite::<Listener>(&resource.body, listener),
        _ => None,
    };
    match body {
        Some(body) => Resource { body: std::sync::Arc::new(body), ..resource.clone() },
        None => resource.clone(),
    }
}

/// The gRPC source upstream's resources name: the xDS cluster, API v3.
fn grpc_source() -> ConfigSource {
    ConfigSource {
        resource_api_version: ApiVersion::V3 as i32,
        config_source_specifier: Some(config_source::ConfigSourceSpecifier::ApiConfigSource(ApiConfigSource {
            api_type: api_config_source::ApiType::Grpc as i32,
            transport_api_version: ApiVersion::V3 as i32,
            grpc_services: vec![GrpcService {
                target_specifier: Some(grpc_service::TargetSpecifier::EnvoyGrpc(grpc_service::EnvoyGrpc {
                    cluster_name: XDS_CLUSTER.into(),
                    authority: XDS_CLUSTER.into(),
                    ..Default::default()
                })),
                ..Default::default()
            }],
            ..Default::default()
        })),
        ..Default::default()
    }
}

/// Decodes `any` as `M`, lets `edit` change it, and packs it again when it did.
fn rewrite<M: Message + Name + Default>(any: &Any, edit: fn(&mut M) -> bool) -> Option<Any> {
    if any.type_url != M::type_url() {
        return None;
    }
    let mut message = M::decode(any.value.as_slice()).ok()?;
    edit(&mut message).then(|| pack_any(message))
}

/// Replaces an ADS source; whether it did.
fn source(source: &mut Option<ConfigSource>) -> bool {
    let ads = matches!(
        source.as_ref().and_then(|s| s.config_source_specifier.as_ref()),
        Some(config_source::ConfigSourceSpecifier::Ads(_))
    );
    if ads {
        *source = Some(grpc_source());
    }
    ads
}

fn sds(config: &mut SdsSecretConfig) -> bool {
    source(&mut config.sds_config)
}

fn common_tls(context: &mut CommonTlsContext) -> bool {
    let mut changed = false;
    for config in &mut context.tls_certificate_sds_secret_configs {
        changed |= sds(config);
    }
    match &mut context.validation_context_type {
        Some(common_tls_context::ValidationContextType::ValidationContextSdsSecretConfig(config)) => {
            changed |= sds(config);
        }
        Some(common_tls_context::ValidationContextType::CombinedValidationContext(combined)) => {
            if let Some(config) = &mut combined.validation_context_sds_secret_config {
                changed |= sds(config);
            }
        }
        _ => {}
    }
    changed
}

fn upstream_tls(context: &mut UpstreamTlsContext) -> bool {
    context.common_tls_context.as_mut().is_some_and(common_tls)
}

fn downstream_tls(context: &mut DownstreamTlsContext) -> bool {
    context.common_tls_context.as_mut().is_some_and(common_tls)
}

fn quic(transport: &mut QuicDownstreamTransport) -> bool {
    transport.downstream_tls_context.as_mut().is_some_and(downstream_tls)
}

/// A transport socket's TLS context (upstream, downstream, or QUIC's).
fn socket(socket: &mut Option<TransportSocket>) -> bool {
    let Some(transport_socket::ConfigType::TypedConfig(any)) = socket.as_mut().and_then(|s| s.config_type.as_mut())
    else {
        return false;
    };
    let edited = rewrite::<UpstreamTlsContext>(any, upstream_tls)
        .or_else(|| rewrite::<DownstreamTlsContext>(any, downstream_tls))
        .or_else(|| rewrite::<QuicDownstreamTransport>(any, quic));
    edited.map(|e| *any = e).is_some()
}

fn cluster(cluster: &mut Cluster) -> bool {
    let mut changed = cluster.eds_cluster_config.as_mut().is_some_and(|eds| source(&mut eds.eds_config));
    changed |= socket(&mut cluster.transport_socket);
    for m in &mut cluster.transport_socket_matches {
        changed |= socket(&mut m.transport_socket);
    }
    changed
}

fn listener(listener: &mut Listener) -> bool {
    let mut changed = false;
    for chain in listener.filter_chains.iter_mut().chain(listener.default_filter_chain.as_mut()) {
        changed |= filter_chain(chain);
    }
    changed
}

fn filter_chain(chain: &mut FilterChain) -> bool {
    let mut changed = socket(&mut chain.transport_socket);
    for f in &mut chain.filters {
        if let Some(filter::ConfigType::TypedConfig(any)) = &mut f.config_type
            && let Some(edited) = rewrite::<HttpConnectionManager>(any, connection_manager)
        {
            *any = edited;
            changed = true;
        }
    }
    changed
}

fn connection_manager(manager: &mut HttpConnectionManager) -> bool {
    let mut changed = match &mut manager.route_specifier {
        Some(http_connection_manager::RouteSpecifier::Rds(rds)) => source(&mut rds.config_source),
        _ => false,
    };
    for f in &mut manager.http_filters {
        if let Some(http_filter::ConfigType::TypedConfig(any)) = &mut f.config_type
            && let Some(edited) = rewrite::<OAuth2>(any, oauth2)
        {
            *any = edited;
            changed = true;
        }
    }
    changed
}

fn oauth2(filter: &mut OAuth2) -> bool {
    let Some(credentials) = filter.config.as_mut().and_then(|c| c.credentials.as_mut()) else {
        return false;
    };
    let mut changed = credentials.token_secret.as_mut().is_some_and(sds);
    if let Some(o_auth2_credentials::TokenFormation::HmacSecret(config)) = &mut credentials.token_formation {
        changed |= sds(config);
    }
    changed
}

#[cfg(test)]
mod tests;
