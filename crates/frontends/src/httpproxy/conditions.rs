//! Match conditions: validated per block (a route's or an include's own list) and merged along
//! the include chain into one IR match, as upstream does.

use api::httpproxy::{HeaderMatchCondition, MatchCondition, QueryParameterMatchCondition};
use ir::{HeaderMatch, HttpMatch, PathMatch, QueryMatch, StringMatch};

use crate::shared::regex::check_regex;

/// A string field that is set and not empty (upstream ignores empty strings).
pub(super) fn set(value: &Option<String>) -> Option<&str> {
    value.as_deref().filter(|v| !v.is_empty())
}

/// Checks the path conditions of one block (upstream's `pathMatchConditionsValid`).
pub(super) fn check_paths(block: &[MatchCondition]) -> Result<(), String> {
    let mut paths = 0;
    for c in block {
        for (kind, value) in [("prefix", &c.prefix), ("exact", &c.exact), ("regex", &c.regex)] {
            let Some(value) = set(value) else { continue };
            paths += 1;
            if !value.starts_with('/') {
                return Err(format!("{kind} conditions must start with /, {value} was supplied"));
            }
            if kind == "regex"
                && let Err(e) = check_regex(value.to_string())
            {
                let detail = e.rsplit(": ").next().unwrap_or_default();
                return Err(format!("supplied regex: {value} invalid. error: {detail}"));
            }
        }
    }
    if paths > 1 {
        return Err("more than one prefix, exact or regex is not allowed in a condition block".into());
    }
    Ok(())
}

/// Checks header conditions (the merged chain for routes, the own list for includes).
pub(super) fn check_headers<'a>(conditions: impl IntoIterator<Item = &'a MatchCondition>) -> Result<(), String> {
    const PRESENT: &str =
        "cannot specify contradictory 'present' and 'notpresent' conditions for the same route and header";
    const EXACT: &str = "cannot specify contradictory 'exact' and 'notexact' conditions for the same route and header";
    const CONTAINS: &str =
        "cannot specify contradictory 'contains' and 'notcontains' conditions for the same route and header";
    let headers: Vec<&HeaderMatchCondition> = conditions.into_iter().filter_map(|c| c.header.as_ref()).collect();
    let same = |a: &HeaderMatchCondition, b: &HeaderMatchCondition| a.name.eq_ignore_ascii_case(&b.name);
    for (i, h) in headers.iter().enumerate() {
        // Envoy refuses empty names and anything that is not a header token.
        if h.name.is_empty() || !h.name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~:".contains(&b)) {
            return Err(format!("invalid header name {:?}", h.name));
        }
        if let Some(regex) = set(&h.regex)
            && check_regex(regex.to_string()).is_err()
        {
            return Err("invalid regular expression specified for 'regex' condition".into());
        }
        let present = |x: &HeaderMatchCondition| x.present == Some(true);
        let not_present = |x: &HeaderMatchCondition| x.not_present == Some(true);
        let contradicts = |a: &Option<String>, b: &Option<String>| set(a).is_some() && set(a) == set(b);
        for e in headers[..i].iter().filter(|e| same(e, h)) {
            if (present(h) && not_present(e)) || (not_present(h) && present(e)) {
                return Err(PRESENT.into());
            }
            if set(&h.exact).is_some() && set(&e.exact).is_some() {
                return Err("cannot specify duplicate header 'exact match' conditions in the same route".into());
            }
            if contradicts(&h.exact, &e.not_exact) || contradicts(&h.not_exact, &e.exact) {
                return Err(EXACT.into());
            }
            if contradicts(&h.contains, &e.not_contains) || contradicts(&h.not_contains, &e.contains) {
                return Err(CONTAINS.into());
            }
        }
    }
    Ok(())
}

/// Checks query parameter conditions.
pub(super) fn check_query<'a>(conditions: impl IntoIterator<Item = &'a MatchCondition>) -> Result<(), String> {
    let mut exact: Vec<&str> = Vec::new();
    for q in conditions.into_iter().filter_map(|c| c.query_parameter.as_ref()) {
        if q.name.is_empty() {
            return Err("query parameter conditions need a name".into());
        }
        if q.name.len() > ir::MAX_QUERY_NAME_BYTES {
            return Err(format!("query parameter names are at most {} bytes", ir::MAX_QUERY_NAME_BYTES));
        }
        let matchers =
            [&q.exact, &q.prefix, &q.suffix, &q.regex, &q.contains].into_iter().filter(|v| set(v).is_some()).count()
                + usize::from(q.present == Some(true));
        match matchers {
            0 => return Err("must specify at least one query parameter condition".into()),
            1 => {}
            _ => return Err("cannot specify more than one condition in the same match condition branch".into()),
        }
        if set(&q.exact).is_some() {
            if exact.contains(&q.name.as_str()) {
                return Err(
                    "cannot specify duplicate query parameter 'exact match' conditions in the same route".into()
                );
            }
            exact.push(&q.name);
        }
        if let Some(regex) = set(&q.regex)
            && check_regex(regex.to_string()).is_err()
        {
            return Err("invalid regular expression specified for 'regex' condition".into());
        }
    }
    Ok(())
}

/// The path of a merged chain: path strings concatenated, runs of `/` collapsed. A regex anywhere
/// makes it a regex; otherwise the last condition decides (an exact path, else a string prefix).
///
/// In a regex chain the included prefixes are quoted (a `.` in `/v1.0` is no wildcard) and lose
/// their trailing `/`, and a child regex after them is grouped (`/team(?:/x|/admin/.*)`), so its
/// `|` cannot reach outside the delegated prefix, as upstream merges them.
pub(super) fn merged_path<'a>(conditions: impl IntoIterator<Item = &'a MatchCondition>) -> PathMatch {
    let conditions: Vec<&MatchCondition> = conditions.into_iter().collect();
    let regex = conditions.iter().any(|c| set(&c.regex).is_some());
    let mut path = String::new();
    let mut exact = false;
    for c in conditions {
        exact = false;
        if let Some(p) = set(&c.prefix) {
            if regex {
                path.push_str(&ir::regex_escape(p.trim_end_matches('/')));
            } else {
                path.push_str(p);
            }
        } else if let Some(p) = set(&c.exact) {
            path.push_str(p);
            exact = true;
        } else if let Some(p) = set(&c.regex) {
            if path.is_empty() {
                path.push_str(p);
            } else {
                path.push_str(&format!("(?:{p})"));
            }
        }
    }
    let mut collapsed = String::with_capacity(path.len());
    for ch in path.chars() {
        if !(ch == '/' && collapsed.ends_with('/')) {
            collapsed.push(ch);
        }
    }
    match (collapsed.is_empty(), regex, exact) {
        (true, _, _) => PathMatch::StringPrefix("/".into()),
        (false, true, _) => PathMatch::Regex(collapsed),
        (false, false, true) => PathMatch::Exact(collapsed),
        (false, false, false) => PathMatch::StringPrefix(collapsed),
    }
}

/// The IR match of a merged chain (already checked).
pub(super) fn merged_match(conditions: &[&MatchCondition]) -> HttpMatch {
    HttpMatch {
        path: merged_path(conditions.iter().copied()),
        headers: conditions.iter().filter_map(|c| c.header.as_ref()).filter_map(header).collect(),
        query: conditions.iter().filter_map(|c| c.query_parameter.as_ref()).filter_map(query).collect(),
        method: None,
    }
}

/// A header condition; `None` when it asks for nothing (every matcher unset, empty or false).
pub(super) fn header(h: &HeaderMatchCondition) -> Option<HeaderMatch> {
    let ignore_case = h.ignore_case.unwrap_or(false);
    let missing_as_empty = h.treat_missing_as_empty.unwrap_or(false);
    let (value, invert) = if h.present == Some(true) {
        (StringMatch::Present, false)
    } else if h.not_present == Some(true) {
        (StringMatch::Present, true)
    } else if let Some(v) = set(&h.contains) {
        (StringMatch::Contains(v.into()), false)
    } else if let Some(v) = set(&h.not_contains) {
        (StringMatch::Contains(v.into()), true)
    } else if let Some(v) = set(&h.exact) {
        (StringMatch::Exact(v.into()), false)
    } else if let Some(v) = set(&h.not_exact) {
        (StringMatch::Exact(v.into()), true)
    } else if let Some(v) = set(&h.regex) {
        (StringMatch::Regex(v.into()), false)
    } else {
        return None;
    };
    Some(HeaderMatch { name: h.name.to_ascii_lowercase(), value, ignore_case, invert, missing_as_empty })
}

fn query(q: &QueryParameterMatchCondition) -> Option<QueryMatch> {
    let value = if let Some(v) = set(&q.exact) {
        StringMatch::Exact(v.into())
    } else if let Some(v) = set(&q.prefix) {
        StringMatch::Prefix(v.into())
    } else if let Some(v) = set(&q.suffix) {
        StringMatch::Suffix(v.into())
    } else if let Some(v) = set(&q.regex) {
        StringMatch::Regex(v.into())
    } else if let Some(v) = set(&q.contains) {
        StringMatch::Contains(v.into())
    } else if q.present == Some(true) {
        StringMatch::Present
    } else {
        return None;
    };
    Some(QueryMatch { name: q.name.clone(), value, ignore_case: q.ignore_case.unwrap_or(false) })
}

/// The identity of an include's own conditions for duplicate detection; `None` for the
/// catch-all (prefix `/` and nothing else), which is never a duplicate.
pub(super) fn include_key(block: &[MatchCondition]) -> Option<(PathMatch, Vec<HeaderMatch>, Vec<QueryMatch>)> {
    let refs: Vec<&MatchCondition> = block.iter().collect();
    let m = merged_match(&refs);
    if m.path == PathMatch::StringPrefix("/".into()) && m.headers.is_empty() && m.query.is_empty() {
        return None;
    }
    let mut headers = m.headers;
    headers.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
    let mut query = m.query;
    query.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
    Some((m.path, headers, query))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain(conditions: &[&str]) -> PathMatch {
        let parsed: Vec<MatchCondition> =
            conditions.iter().map(|c| serde_json::from_str(c).expect("condition")).collect();
        merged_path(parsed.iter())
    }

    /// Upstream's e2e `include-regex-condition` cases: a child regex stays inside its prefix.
    #[test]
    fn a_child_regex_is_grouped_under_its_quoted_prefix() {
        let under = |prefix: &str, regex: &str| {
            chain(&[&format!(r#"{{"prefix": "{prefix}"}}"#), &format!(r#"{{"regex": "{regex}"}}"#)])
        };
        assert_eq!(under("/echo1", "/x|/admin/.*"), PathMatch::Regex("/echo1(?:/x|/admin/.*)".into()));
        assert_eq!(under("/echo1/", "/us-west-1/.*"), PathMatch::Regex("/echo1(?:/us-west-1/.*)".into()));
        assert_eq!(under("/v1.0", "/us-west-1/.*"), PathMatch::Regex("/v1\\.0(?:/us-west-1/.*)".into()));
        // Envoy matches a route regex against the whole path.
        let matches = |pattern: &PathMatch, path: &str| match pattern {
            PathMatch::Regex(r) => regex::Regex::new(&format!("^(?:{r})$")).expect("valid").is_match(path),
            _ => false,
        };
        let admin = under("/echo1", "/x|/admin/.*");
        assert!(matches(&admin, "/echo1/admin/secret") && matches(&admin, "/echo1/x"));
        assert!(!matches(&admin, "/admin/secret"), "the alternation cannot leave /echo1");
        assert!(!matches(&under("/v1.0", "/us-west-1/.*"), "/v1X0/us-west-1/test"), "the dot is literal");
        // Without a regex the chain is a plain string prefix, as before.
        assert_eq!(chain(&[r#"{"prefix": "/a/"}"#, r#"{"prefix": "/b"}"#]), PathMatch::StringPrefix("/a/b".into()));
    }
}
