//! CORS (`envoy.filters.http.cors`): installed on every HTTP listener with no policy of its own;
//! virtual hosts and routes carry theirs as per-filter configuration.

use envoy_types::pb::envoy::extensions::filters::http::cors::v3::{Cors, CorsPolicy};
use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::HttpFilter;
use envoy_types::pb::envoy::r#type::matcher::v3::{StringMatcher, string_matcher};
use envoy_types::pb::google::protobuf::{Any, BoolValue};
use envoy_types::util::pack_any;

/// The filter's name, which per-filter configuration is keyed by.
pub(crate) const NAME: &str = "envoy.filters.http.cors";

/// The listener's filter: inert until a virtual host or route has a policy.
pub(crate) fn filter() -> HttpFilter {
    crate::http_filter(NAME, pack_any(Cors::default()))
}

/// A virtual host's or route's policy.
pub(crate) fn per_route(policy: &ir::Cors) -> Any {
    let origin = |m: &ir::OriginMatch| match m {
        // Envoy treats an exact `*` as any origin.
        ir::OriginMatch::Exact(o) => {
            StringMatcher { match_pattern: Some(string_matcher::MatchPattern::Exact(o.clone())), ignore_case: true }
        }
        ir::OriginMatch::Regex(r) => StringMatcher {
            match_pattern: Some(string_matcher::MatchPattern::SafeRegex(crate::matchers::regex(r))),
            ignore_case: false,
        },
    };
    pack_any(CorsPolicy {
        allow_origin_string_match: policy.allow_origins.iter().map(origin).collect(),
        allow_methods: policy.allow_methods.join(","),
        allow_headers: policy.allow_headers.join(","),
        expose_headers: policy.expose_headers.join(","),
        max_age: policy.max_age_s.map(|s| s.to_string()).unwrap_or_default(),
        allow_credentials: Some(BoolValue { value: policy.allow_credentials }),
        allow_private_network_access: Some(BoolValue { value: policy.allow_private_network }),
        // Envoy's default forwards them: leave it unset then, as upstream's configuration does.
        forward_not_matching_preflights: (!policy.forward_unmatched_preflights).then_some(BoolValue { value: false }),
        ..Default::default()
    })
}
