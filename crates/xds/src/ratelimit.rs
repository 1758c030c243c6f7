//! Rate limits counted by each Envoy (`envoy.filters.http.local_ratelimit`): installed on every
//! HTTP listener without a bucket (so it limits nothing); a virtual host's bucket is shared by
//! its routes, a route's own bucket replaces it.

use envoy_types::pb::envoy::config::core::v3::RuntimeFractionalPercent;
use envoy_types::pb::envoy::extensions::filters::http::local_ratelimit::v3::LocalRateLimit;
use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::HttpFilter;
use envoy_types::pb::envoy::r#type::v3::{FractionalPercent, HttpStatus, TokenBucket, fractional_percent};
use envoy_types::pb::google::protobuf::{Any, Duration, UInt32Value};
use envoy_types::util::pack_any;

/// The local limiter's name, which per-filter configuration is keyed by.
pub(crate) const LOCAL: &str = "envoy.filters.http.local_ratelimit";

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
        response_headers_to_add: crate::route::header_options(&ir::HeaderModifier {
            set: limit.response_headers.clone(),
            ..Default::default()
        }),
        ..Default::default()
    })
}
