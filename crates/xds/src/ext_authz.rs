//! External authorization (`envoy.filters.http.ext_authz`): a check of every request against an
//! ExtensionService (its gRPC API, or the request itself forwarded for `serviceType: http`), in the connection manager of each TLS virtual host that has an
//! authorization server (as upstream: plain HTTP only redirects to it). Routes turn the check off
//! or add context through per-filter configuration.

use envoy_types::pb::envoy::config::core::v3::{ApiVersion, GrpcService, HttpUri, grpc_service, http_uri};
use envoy_types::pb::envoy::extensions::filters::http::ext_authz::v3::{
    AuthorizationResponse, BufferSettings, ExtAuthz, HttpService, ext_authz, ext_authz_per_route,
};
use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::HttpFilter;
use envoy_types::pb::envoy::r#type::matcher::v3::ListStringMatcher;
use envoy_types::pb::envoy::r#type::v3::HttpStatus;
use envoy_types::pb::google::protobuf::{Any, BoolValue};
use envoy_types::util::pack_any;
use prost::Message;

/// The filter's name, which per-filter configuration is keyed by.
pub(crate) const NAME: &str = "envoy.filters.http.ext_authz";

/// The filter checking requests with `authorization`'s server: 403 when the server fails,
/// unless it fails open; the route is looked up again after the check (the server may change
/// headers); the client's certificate goes along.
pub(crate) fn filter(authorization: &ir::Authorization) -> HttpFilter {
    crate::http_filter(NAME, pack_any(config(authorization)))
}

/// The filter's configuration for `authorization` (see [`filter`]).
fn config(authorization: &ir::Authorization) -> ExtAuthz {
    let (services, allowed_headers) = match &authorization.http {
        None => {
            let grpc = GrpcService {
                target_specifier: Some(grpc_service::TargetSpecifier::EnvoyGrpc(grpc_service::EnvoyGrpc {
                    cluster_name: authorization.cluster.clone(),
                    authority: authorization.authority.clone(),
                    ..Default::default()
                })),
                timeout: authorization.response_timeout_ms.map(crate::duration_ms),
                ..Default::default()
            };
            (ext_authz::Services::GrpcService(grpc), names(&authorization.grpc_allowed_headers))
        }
        Some(http) => {
            (ext_authz::Services::HttpService(http_service(authorization, http)), names(&http.allowed_headers))
        }
    };
    ExtAuthz {
        services: Some(services),
        allowed_headers,
        transport_api_version: ApiVersion::V3 as i32,
        failure_mode_allow: authorization.fail_open,
        clear_route_cache: true,
        status_on_error: Some(HttpStatus { code: 403 }),
        include_peer_certificate: true,
        with_request_body: authorization.with_request_body.map(|b| BufferSettings {
            max_request_bytes: b.max_request_bytes,
            allow_partial_message: b.allow_partial_message,
            pack_as_bytes: b.pack_as_bytes,
        }),
        ..Default::default()
    }
}

/// The name of a listener's pre-routing check (`key`: [`dag::PreRouting::key`]) in the
/// connection manager, which a virtual host of another listener turns it off by.
pub(crate) fn pre_routing_name(key: &str) -> String {
    format!("{NAME}/{key}")
}

/// A listener's pre-routing check (Gateway API ExternalAuth listener filter): [`filter`] under
/// its own name, off unless a virtual host turns it on ([`enabled`]: the hosts of its
/// listener), where the server may not change `Host` or `:authority` (such a change is ignored,
/// and the request goes on with the original), nor any other pseudo-header. The route is chosen
/// after it (the route cache is cleared when it changes headers).
pub(crate) fn pre_routing_filter(check: &dag::PreRouting) -> HttpFilter {
    use envoy_types::pb::envoy::config::common::mutation_rules::v3::HeaderMutationRules;
    let config = ExtAuthz {
        decoder_header_mutation_rules: Some(HeaderMutationRules {
            disallow_system: Some(BoolValue { value: true }),
            ..Default::default()
        }),
        ..config(&check.authorization)
    };
    HttpFilter { disabled: true, ..crate::http_filter(&pre_routing_name(&check.key()), pack_any(config)) }
}

/// The per-filter configuration that turns a pre-routing check on for a virtual host.
pub(crate) fn enabled() -> Any {
    use envoy_types::pb::envoy::config::route::v3::FilterConfig;
    use envoy_types::pb::envoy::extensions::filters::http::ext_authz::v3::{CheckSettings, ExtAuthzPerRoute};
    let on =
        ExtAuthzPerRoute { r#override: Some(ext_authz_per_route::Override::CheckSettings(CheckSettings::default())) };
    pack_any(FilterConfig { config: Some(pack_any(on)), is_optional: false, disabled: false })
}

/// The HTTP protocol: the request goes to the cluster under the path prefix, with the `Host`
/// of the calls; the timeout is Envoy's gRPC default unless set, as the URI requires one.
fn http_service(authorization: &ir::Authorization, http: &ir::HttpAuthorization) -> HttpService {
    HttpService {
        server_uri: Some(HttpUri {
            uri: format!("http://{}", authorization.authority),
            timeout: Some(crate::duration_ms(authorization.response_timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS))),
            http_upstream_type: Some(http_uri::HttpUpstreamType::Cluster(authorization.cluster.clone())),
        }),
        path_prefix: http.path_prefix.clone(),
        authorization_response: names(&http.allowed_upstream_headers)
            .map(|allowed| AuthorizationResponse { allowed_upstream_headers: Some(allowed), ..Default::default() }),
        ..Default::default()
    }
}

/// Envoy's default time for a check (ext_authz's gRPC default, 200 ms).
const DEFAULT_TIMEOUT_MS: u64 = 200;

/// Header name conditions as a list, `None` when there is none.
fn names(list: &[ir::HeaderNameMatch]) -> Option<ListStringMatcher> {
    (!list.is_empty()).then(|| ListStringMatcher {
        patterns: list.iter().map(|m| crate::matchers::string_match(&m.pattern, m.ignore_case)).collect(),
    })
}

/// `ExtAuthzPerRoute` as the wire sees it, with the context entries in order (prost's map
/// would write them in a different order in every process).
#[derive(Clone, PartialEq, Message)]
struct PerRoute {
    /// `disabled` (one of the `override` choices).
    #[prost(bool, optional, tag = "1")]
    disabled: Option<bool>,
    /// `check_settings` (the other).
    #[prost(message, optional, tag = "2")]
    check_settings: Option<CheckSettings>,
}

/// `CheckSettings` with `context_extensions` in order.
#[derive(Clone, PartialEq, Message)]
struct CheckSettings {
    #[prost(message, repeated, tag = "1")]
    context_extensions: Vec<ContextEntry>,
}

/// One `context_extensions` entry.
#[derive(Clone, PartialEq, Message)]
struct ContextEntry {
    #[prost(string, tag = "1")]
    key: String,
    #[prost(string, tag = "2")]
    value: String,
}

/// A route's override: checks off, or context entries; `None` when it changes nothing.
pub(crate) fn per_route(route: &ir::RouteAuthorization) -> Option<Any> {
    let config = if route.disabled {
        PerRoute { disabled: Some(true), check_settings: None }
    } else if !route.context.is_empty() {
        let entries = route.context.iter().map(|(k, v)| ContextEntry { key: k.clone(), value: v.clone() }).collect();
        PerRoute { disabled: None, check_settings: Some(CheckSettings { context_extensions: entries }) }
    } else {
        return None;
    };
    Some(Any {
        type_url: "type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthzPerRoute".into(),
        value: config.encode_to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use envoy_types::pb::envoy::extensions::filters::http::ext_authz::v3::{ExtAuthzPerRoute, ext_authz_per_route};

    #[test]
    fn route_overrides_decode_as_envoy_reads_them() {
        let decode = |r: &ir::RouteAuthorization| {
            per_route(r).map(|any| ExtAuthzPerRoute::decode(any.value.as_slice()).unwrap().r#override.unwrap())
        };
        let off = ir::RouteAuthorization { disabled: true, ..Default::default() };
        assert_eq!(decode(&off), Some(ext_authz_per_route::Override::Disabled(true)));
        let context: std::collections::BTreeMap<String, String> =
            [("b", "2"), ("a", "1")].into_iter().map(|(k, v)| (k.into(), v.into())).collect();
        let with = ir::RouteAuthorization { disabled: false, context };
        let Some(ext_authz_per_route::Override::CheckSettings(s)) = decode(&with) else { panic!() };
        assert_eq!(s.context_extensions.len(), 2);
        assert_eq!(s.context_extensions["a"], "1");
        assert_eq!(decode(&ir::RouteAuthorization::default()), None);
    }
}
