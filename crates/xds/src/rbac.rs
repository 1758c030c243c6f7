//! IP and location allow and deny lists through RBAC (`envoy.filters.http.rbac`): installed on every HTTP
//! listener with no rules (everything allowed); virtual hosts and routes carry their lists as
//! per-filter configuration. A refused request gets 403.

use envoy_types::pb::envoy::config::core::v3::CidrRange;
use envoy_types::pb::envoy::config::rbac::v3::{Permission, Policy, Principal, Rbac, permission, principal, rbac};
use envoy_types::pb::envoy::config::route::v3::{HeaderMatcher, header_matcher};
use envoy_types::pb::envoy::extensions::filters::http::rbac::v3::{Rbac as RbacFilter, RbacPerRoute};
use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::HttpFilter;
use envoy_types::pb::envoy::r#type::matcher::v3::{StringMatcher, string_matcher};
use envoy_types::pb::google::protobuf::{Any, UInt32Value};
use envoy_types::util::pack_any;

/// The filter's name, which per-filter configuration is keyed by.
pub(crate) const NAME: &str = "envoy.filters.http.rbac";

/// The listener's filter: no rules, so every request passes until a list applies.
pub(crate) fn filter() -> HttpFilter {
    crate::http_filter(NAME, pack_any(RbacFilter::default()))
}

/// A virtual host's or route's list. `Remote` compares the client address Envoy derives from
/// `X-Forwarded-For` (with the trusted hops) and the PROXY protocol; `Peer` the connection's;
/// location rules compare the headers the GeoIP lookup filled.
pub(crate) fn per_route(filter: &ir::IpFilter) -> Any {
    let locations = filter.geo.iter().map(|rule| Principal {
        identifier: Some(principal::Identifier::Header(HeaderMatcher {
            name: rule.dimension.header().into(),
            header_match_specifier: Some(header_matcher::HeaderMatchSpecifier::StringMatch(StringMatcher {
                match_pattern: Some(string_matcher::MatchPattern::Exact(rule.value.clone())),
                ..Default::default()
            })),
            ..Default::default()
        })),
    });
    let principals = filter
        .rules
        .iter()
        .map(|rule| {
            let range = CidrRange {
                address_prefix: rule.address.to_string(),
                prefix_len: Some(UInt32Value { value: u32::from(rule.prefix_len) }),
            };
            let identifier = if rule.remote {
                principal::Identifier::RemoteIp(range)
            } else {
                principal::Identifier::DirectRemoteIp(range)
            };
            Principal { identifier: Some(identifier) }
        })
        .chain(locations)
        .collect();
    let policy = Policy {
        permissions: vec![Permission { rule: Some(permission::Rule::Any(true)) }],
        principals,
        ..Default::default()
    };
    let action = if filter.allow { rbac::Action::Allow } else { rbac::Action::Deny };
    let rules = Rbac {
        action: action as i32,
        // One entry: a one-entry map encodes the same in every process.
        policies: [("ip-rules".to_string(), policy)].into_iter().collect(),
        ..Default::default()
    };
    pack_any(RbacPerRoute { rbac: Some(RbacFilter { rules: Some(rules), ..Default::default() }) })
}
