//! Custom error pages (HTTPProxy `errorPages`, a contour-rs extension): Envoy's custom response
//! filter, on the connection managers of listeners with pages (inert there) and configured per
//! virtual host and per route. A
//! route's pages are tried first, then its virtual host's (the filter's own order). An answer
//! without `x-envoy-upstream-service-time`, which Envoy's router adds to every backend answer,
//! is Envoy's own: pages that leave the backends' answers alone match only those.

use envoy_types::pb::envoy::config::core::v3::{DataSource, data_source};
use envoy_types::pb::envoy::extensions::filters::http::custom_response::v3::CustomResponse;
use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::HttpFilter;
use envoy_types::pb::envoy::extensions::http::custom_response::local_response_policy::v3::LocalResponsePolicy;
use envoy_types::pb::envoy::r#type::matcher::v3::{HttpResponseHeaderMatchInput, HttpResponseStatusCodeMatchInput};
use envoy_types::pb::google::protobuf::Any;
use envoy_types::pb::xds::core::v3::TypedExtensionConfig;
use envoy_types::pb::xds::r#type::matcher::v3::matcher::matcher_list::predicate::{
    MatchType, PredicateList, SinglePredicate, single_predicate,
};
use envoy_types::pb::xds::r#type::matcher::v3::matcher::matcher_list::{FieldMatcher, Predicate};
use envoy_types::pb::xds::r#type::matcher::v3::matcher::{MatcherList, MatcherType, OnMatch, on_match};
use envoy_types::pb::xds::r#type::matcher::v3::{Matcher, RegexMatcher, StringMatcher, regex_matcher, string_matcher};
use envoy_types::util::pack_any;

/// The filter's name, which virtual hosts and routes configure it under.
pub(crate) const NAME: &str = "envoy.filters.http.custom_response";

/// The header Envoy's router adds to every answer from a backend.
const FROM_BACKEND: &str = "x-envoy-upstream-service-time";

/// The filter of a connection manager: no pages until a virtual host or route has some.
pub(crate) fn filter() -> HttpFilter {
    crate::http_filter(NAME, pack_any(CustomResponse::default()))
}

/// The pages of a virtual host or route, in order: the first that covers an answer replaces it.
pub(crate) fn per_route(pages: &[ir::ErrorPage]) -> Any {
    let matchers = pages.iter().enumerate().map(|(i, page)| field_matcher(i, page)).collect();
    pack_any(CustomResponse {
        custom_response_matcher: Some(Matcher {
            matcher_type: Some(MatcherType::MatcherList(MatcherList { matchers })),
            on_no_match: None,
        }),
    })
}

fn field_matcher(index: usize, page: &ir::ErrorPage) -> FieldMatcher {
    let status =
        single("status", pack_any(HttpResponseStatusCodeMatchInput {}), format!("^({})$", codes_regex(&page.ranges)));
    let predicate = if page.from_backend {
        status
    } else {
        let backend =
            single("backend", pack_any(HttpResponseHeaderMatchInput { header_name: FROM_BACKEND.into() }), ".*".into());
        let own = Predicate { match_type: Some(MatchType::NotMatcher(Box::new(backend))) };
        Predicate { match_type: Some(MatchType::AndMatcher(PredicateList { predicate: vec![status, own] })) }
    };
    let policy = LocalResponsePolicy {
        body: Some(DataSource {
            specifier: Some(data_source::Specifier::InlineString(page.body.clone())),
            ..Default::default()
        }),
        response_headers_to_add: crate::matchers::header_options(&ir::HeaderModifier {
            // Header values are Envoy formats: a `%` is itself only doubled.
            set: vec![("content-type".into(), page.content_type.replace('%', "%%"))],
            ..Default::default()
        }),
        ..Default::default()
    };
    FieldMatcher {
        predicate: Some(predicate),
        on_match: Some(OnMatch {
            keep_matching: false,
            on_match: Some(on_match::OnMatch::Action(TypedExtensionConfig {
                name: format!("error-page-{index}"),
                typed_config: Some(pack_any(policy)),
            })),
        }),
    }
}

/// A predicate: the input's value matches `regex`.
fn single(name: &str, input: Any, regex: String) -> Predicate {
    Predicate {
        match_type: Some(MatchType::SinglePredicate(SinglePredicate {
            input: Some(TypedExtensionConfig { name: name.into(), typed_config: Some(input) }),
            matcher: Some(single_predicate::Matcher::ValueMatch(StringMatcher {
                match_pattern: Some(string_matcher::MatchPattern::SafeRegex(RegexMatcher {
                    regex,
                    engine_type: Some(regex_matcher::EngineType::GoogleRe2(Default::default())),
                })),
                ignore_case: false,
            })),
        })),
    }
}

/// An alternation that matches exactly the three-digit codes of `ranges`: one term per run of
/// tens (`50[3-9]`), so even 100-599 stays short.
fn codes_regex(ranges: &[(u16, u16)]) -> String {
    let mut terms = Vec::new();
    for &(start, end) in ranges {
        for tens in start / 10..=end / 10 {
            let lo = start.max(tens * 10) % 10;
            let hi = end.min(tens * 10 + 9) % 10;
            terms.push(if lo == hi { format!("{tens}{lo}") } else { format!("{tens}[{lo}-{hi}]") });
        }
    }
    terms.join("|")
}

/// Whether a virtual host's pages answer requests no route matched (404): they then get a last
/// route that answers 404 itself, so the pages apply.
pub(crate) fn covers_no_route(pages: &[ir::ErrorPage]) -> bool {
    pages.iter().any(|p| p.covers(404))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_codes_regex_matches_exactly_the_ranges() {
        let re = |ranges: &[(u16, u16)]| regex::Regex::new(&format!("^({})$", codes_regex(ranges))).unwrap();
        let all: Vec<u16> = (100..=599).collect();
        for ranges in [&[(404, 404)][..], &[(500, 599)], &[(503, 517), (404, 404)], &[(100, 599)], &[(429, 431)]] {
            let r = re(ranges);
            for code in &all {
                let want = ranges.iter().any(|&(a, b)| (a..=b).contains(code));
                assert_eq!(r.is_match(&code.to_string()), want, "{code} in {ranges:?}");
            }
        }
        assert_eq!(codes_regex(&[(500, 599)]).split('|').count(), 10);
    }
}
