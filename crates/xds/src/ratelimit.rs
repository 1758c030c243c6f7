//! Rate limits. Counted by each Envoy (`envoy.filters.http.local_ratelimit`): installed on every
//! HTTP listener without a bucket (so it limits nothing); a virtual host's bucket is shared by
//! its routes, a route's own bucket replaces it. Counted by the rate-limit service
//! (`envoy.filters.http.ratelimit`, with `rateLimitService`): every connection manager of the
//! default fleet asks it about the descriptors of the virtual host and the route.

use envoy_types::pb::envoy::config::core::v3::RuntimeFractionalPercent;
use envoy_types::pb::envoy::extensions::filters::http::local_ratelimit::v3::LocalRateLimit;
use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::HttpFilter;
use envoy_types::pb::envoy::r#type::v3::{FractionalPercent, HttpStatus, TokenBucket, fractional_percent};
use envoy_types::pb::google::protobuf::{Any, Duration, UInt32Value};
use envoy_types::util::pack_any;

/// The local limiter's name, which per-filter configuration is keyed by.
pub(crate) const LOCAL: &str = "envoy.filters.http.local_ratelimit";
/// The global limiter's name.
pub(crate) const GLOBAL: &str = "envoy.filters.http.ratelimit";

/// The global limiter, asking `service` (as upstream configures it).
pub(crate) fn global_filter(service: &crate::RateLimitService) -> HttpFilter {
    use envoy_types::pb::envoy::config::core::v3::{ApiVersion, GrpcService, grpc_service};
    use envoy_types::pb::envoy::config::ratelimit::v3::RateLimitServiceConfig;
    use envoy_types::pb::envoy::extensions::filters::http::ratelimit::v3::{RateLimit, rate_limit};
    let grpc = GrpcService {
        target_specifier: Some(grpc_service::TargetSpecifier::EnvoyGrpc(grpc_service::EnvoyGrpc {
            cluster_name: service.cluster.clone(),
            authority: service.cluster.replace('/', "."),
            ..Default::default()
        })),
        ..Default::default()
    };
    let headers = if service.x_ratelimit_headers {
        rate_limit::XRateLimitHeadersRfcVersion::DraftVersion03
    } else {
        rate_limit::XRateLimitHeadersRfcVersion::Off
    };
    let config = RateLimit {
        domain: service.domain.clone(),
        timeout: service.timeout_ms.map(crate::duration_ms),
        failure_mode_deny: !service.fail_open,
        rate_limited_as_resource_exhausted: service.resource_exhausted,
        rate_limit_service: Some(RateLimitServiceConfig {
            grpc_service: Some(grpc),
            transport_api_version: ApiVersion::V3 as i32,
        }),
        enable_x_ratelimit_headers: headers as i32,
        ..Default::default()
    };
    crate::http_filter(GLOBAL, pack_any(config))
}

/// A route's override: the virtual host's descriptors are not sent.
pub(crate) fn ignore_host_limits() -> Any {
    use envoy_types::pb::envoy::extensions::filters::http::ratelimit::v3::{RateLimitPerRoute, rate_limit_per_route};
    pack_any(RateLimitPerRoute {
        vh_rate_limits: rate_limit_per_route::VhRateLimitsOptions::Ignore as i32,
        ..Default::default()
    })
}

/// The descriptors of a global limit as Envoy's rate-limit actions.
pub(crate) fn rate_limits(limit: &ir::GlobalRateLimit) -> Vec<envoy_types::pb::envoy::config::route::v3::RateLimit> {
    use envoy_types::pb::envoy::config::route::v3::{RateLimit, rate_limit::Action, rate_limit::action};
    use envoy_types::pb::google::protobuf::BoolValue;
    let action = |entry: &ir::DescriptorEntry| {
        let specifier = match entry {
            ir::DescriptorEntry::GenericKey { key, value } => action::ActionSpecifier::GenericKey(action::GenericKey {
                descriptor_key: key.clone(),
                descriptor_value: value.clone(),
                ..Default::default()
            }),
            ir::DescriptorEntry::RequestHeader { header_name, descriptor_key } => {
                action::ActionSpecifier::RequestHeaders(action::RequestHeaders {
                    header_name: header_name.clone(),
                    descriptor_key: descriptor_key.clone(),
                    ..Default::default()
                })
            }
            ir::DescriptorEntry::HeaderValueMatch { headers, expect_match, value } => {
                action::ActionSpecifier::HeaderValueMatch(action::HeaderValueMatch {
                    descriptor_value: value.clone(),
                    expect_match: Some(BoolValue { value: *expect_match }),
                    headers: headers.iter().map(crate::matchers::header_matcher).collect(),
                    ..Default::default()
                })
            }
            ir::DescriptorEntry::RemoteAddress => action::ActionSpecifier::RemoteAddress(action::RemoteAddress {}),
        };
        Action { action_specifier: Some(specifier) }
    };
    limit
        .descriptors
        .iter()
        .map(|entries| RateLimit { actions: entries.iter().map(action).collect(), ..Default::default() })
        .collect()
}

/// The listener's local limiter: no bucket, so no limit until a virtual host or route has one.
pub(crate) fn local_filter() -> HttpFilter {
    crate::http_filter(LOCAL, pack_any(LocalRateLimit { stat_prefix: "http".into(), ..Default::default() }))
}

/// A virtual host's or route's bucket, enabled and enforced for every request.
pub(crate) fn local_per_route(limit: &ir::LocalRateLimit) -> Any {
    let all = || {
        Some(RuntimeFractionalPercent {
            default_value: Some(FractionalPercent {
                numerator: 100,
                denominator: fractional_percent::DenominatorType::Hundred as i32,
            }),
            ..Default::default()
        })
    };
    pack_any(LocalRateLimit {
        stat_prefix: limit.stat_prefix.clone(),
        status: limit.status.map(|code| HttpStatus { code: i32::from(code) }),
        token_bucket: Some(TokenBucket {
            max_tokens: limit.max_tokens,
            tokens_per_fill: Some(UInt32Value { value: limit.tokens_per_fill }),
            fill_interval: Some(Duration { seconds: i64::from(limit.fill_interval_s), nanos: 0 }),
        }),
        filter_enabled: all(),
        filter_enforced: all(),
        response_headers_to_add: crate::matchers::header_options(&ir::HeaderModifier {
            set: limit.response_headers.clone(),
            ..Default::default()
        }),
        ..Default::default()
    })
}
