//! Envoy's string, regex and header matchers and header mutations, as routes and the filters
//! (CORS, external authorization, rate limits) build them from the IR.

use envoy_types::pb::envoy::config::core::v3::{HeaderValue, HeaderValueOption, header_value_option};
use envoy_types::pb::envoy::config::route::v3 as r;
use envoy_types::pb::envoy::r#type::matcher::v3::{RegexMatcher, StringMatcher, string_matcher};
use ir::StringMatch;

/// A header condition as Envoy matches it.
pub(crate) fn header_matcher(h: &ir::HeaderMatch) -> r::HeaderMatcher {
    r::HeaderMatcher {
        name: h.name.clone(),
        header_match_specifier: Some(match &h.value {
            StringMatch::Present => r::header_matcher::HeaderMatchSpecifier::PresentMatch(true),
            value => r::header_matcher::HeaderMatchSpecifier::StringMatch(string_match(value, h.ignore_case)),
        }),
        invert_match: h.invert,
        treat_missing_header_as_empty: h.missing_as_empty,
    }
}

/// Headers to set and add, as Envoy takes them (a Host header is a host rewrite instead).
pub(crate) fn header_options(m: &ir::HeaderModifier) -> Vec<HeaderValueOption> {
    let option = |(key, value): &(String, String), action: header_value_option::HeaderAppendAction| HeaderValueOption {
        header: Some(HeaderValue { key: key.clone(), value: value.clone(), ..Default::default() }),
        append_action: action as i32,
        ..Default::default()
    };
    m.set
        .iter()
        .map(|h| option(h, header_value_option::HeaderAppendAction::OverwriteIfExistsOrAdd))
        .chain(m.add.iter().map(|h| option(h, header_value_option::HeaderAppendAction::AppendIfExistsOrAdd)))
        .filter(|o| o.header.as_ref().is_none_or(|h| !is_host(&h.key)))
        .collect()
}

/// `Host` (or `:authority`), which Envoy refuses among headers to add: setting it is a host
/// rewrite, as upstream translates a Host header modifier.
pub(crate) fn is_host(name: &str) -> bool {
    name.eq_ignore_ascii_case("host") || name == ":authority"
}

/// A string condition as Envoy matches it.
pub(crate) fn string_match(m: &StringMatch, ignore_case: bool) -> StringMatcher {
    use string_matcher::MatchPattern;
    let pattern = match m {
        StringMatch::Exact(v) => MatchPattern::Exact(v.clone()),
        StringMatch::Regex(v) => MatchPattern::SafeRegex(regex(v)),
        StringMatch::Prefix(v) => MatchPattern::Prefix(v.clone()),
        StringMatch::Suffix(v) => MatchPattern::Suffix(v.clone()),
        StringMatch::Contains(v) => MatchPattern::Contains(v.clone()),
        // Callers map presence to Envoy's present_match; as a string condition it is "any value".
        StringMatch::Present => MatchPattern::SafeRegex(regex(".*")),
    };
    let ignore_case = ignore_case && !matches!(m, StringMatch::Regex(_));
    StringMatcher { match_pattern: Some(pattern), ignore_case }
}

pub(crate) fn regex(pattern: &str) -> RegexMatcher {
    RegexMatcher { regex: pattern.to_string(), ..Default::default() }
}
