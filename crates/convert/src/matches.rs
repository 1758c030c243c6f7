//! IR matches and filters written as HTTPRoute `matches` and `filters`.
//!
//! Gateway API compares header and query values only exactly or by regular expression, and
//! paths by whole segments: HTTPProxy's string prefixes, prefix and contains conditions and
//! case-insensitive values become regular expressions that match the same requests.

use ir::{HeaderMatch, HttpFilter, HttpMatch, PathMatch, PathModifier, QueryMatch, StringMatch, regex_escape};
use serde_json::{Value, json};

/// What a value condition becomes: `Exact` or `RegularExpression`, and the value.
fn value_match(value: &StringMatch, ignore_case: bool) -> (&'static str, String) {
    let case = if ignore_case { "(?i)" } else { "" };
    match value {
        StringMatch::Exact(v) if !ignore_case => ("Exact", v.clone()),
        StringMatch::Exact(v) => ("RegularExpression", format!("{case}{}", regex_escape(v))),
        StringMatch::Regex(r) => ("RegularExpression", r.clone()),
        StringMatch::Prefix(v) => ("RegularExpression", format!("{case}{}.*", regex_escape(v))),
        StringMatch::Suffix(v) => ("RegularExpression", format!("{case}.*{}", regex_escape(v))),
        StringMatch::Contains(v) => ("RegularExpression", format!("{case}.*{}.*", regex_escape(v))),
        StringMatch::Present => ("RegularExpression", ".*".into()),
    }
}

fn header(h: &HeaderMatch) -> Value {
    let (kind, value) = value_match(&h.value, h.ignore_case);
    json!({"type": kind, "name": h.name, "value": value})
}

fn query(q: &QueryMatch) -> Value {
    let (kind, value) = value_match(&q.value, q.ignore_case);
    json!({"type": kind, "name": q.name, "value": value})
}

/// The path conditions one IR path condition becomes (two for a string prefix: its whole
/// segments, and the longer names it also matches). `prefix_rewrite`: the rule replaces the
/// matched prefix, which Gateway API allows only after a `PathPrefix` match.
fn paths(path: &PathMatch, prefix_rewrite: bool) -> Vec<Value> {
    let prefix = |v: &str| json!({"type": "PathPrefix", "value": v});
    let regex = |v: String| json!({"type": "RegularExpression", "value": v});
    match path {
        PathMatch::Exact(v) => vec![json!({"type": "Exact", "value": v})],
        PathMatch::Prefix(v) => vec![prefix(v)],
        PathMatch::Regex(r) => vec![regex(r.clone())],
        PathMatch::StringPrefix(v) if v == "/" => vec![prefix(v)],
        PathMatch::StringPrefix(v) if prefix_rewrite => vec![prefix(v.trim_end_matches('/'))],
        PathMatch::StringPrefix(v) if v.ends_with('/') => vec![regex(format!("{}.*", regex_escape(v)))],
        PathMatch::StringPrefix(v) => vec![prefix(v), regex(format!("{}[^/].*", regex_escape(v)))],
    }
}

/// Why a header condition cannot be written, if it cannot: negation, a missing header taken as
/// empty, a pseudo-header.
pub(crate) fn header_problem(h: &HeaderMatch) -> Option<String> {
    if h.name.starts_with(':') {
        Some(format!("a condition on the pseudo-header {} has no Gateway API equivalent", h.name))
    } else if h.invert {
        Some(format!("a negated condition on header {} has no Gateway API equivalent", h.name))
    } else if h.missing_as_empty {
        Some(format!("treating a missing header {} as empty has no Gateway API equivalent", h.name))
    } else {
        None
    }
}

/// The HTTPRoute matches of one IR match (without the conditions `skip` leaves out).
pub(crate) fn matches(m: &HttpMatch, prefix_rewrite: bool, skip: impl Fn(&HeaderMatch) -> bool) -> Vec<Value> {
    let headers: Vec<Value> =
        m.headers.iter().filter(|h| !skip(h) && header_problem(h).is_none()).map(header).collect();
    let query: Vec<Value> = m.query.iter().map(query).collect();
    paths(&m.path, prefix_rewrite)
        .into_iter()
        .map(|path| {
            let mut out = json!({"path": path});
            if !headers.is_empty() {
                out["headers"] = Value::Array(headers.clone());
            }
            if !query.is_empty() {
                out["queryParams"] = Value::Array(query.clone());
            }
            if let Some(method) = &m.method {
                out["method"] = json!(method);
            }
            out
        })
        .collect()
}

fn modifier(m: &ir::HeaderModifier) -> Value {
    let pairs = |v: &[(String, String)]| v.iter().map(|(n, v)| json!({"name": n, "value": v})).collect::<Vec<_>>();
    let mut out = json!({});
    if !m.set.is_empty() {
        out["set"] = Value::Array(pairs(&m.set));
    }
    if !m.add.is_empty() {
        out["add"] = Value::Array(pairs(&m.add));
    }
    if !m.remove.is_empty() {
        out["remove"] = json!(m.remove);
    }
    out
}

/// A header change as a filter of `kind` (`RequestHeaderModifier` or `ResponseHeaderModifier`).
pub(crate) fn header_filter(kind: &str, m: &ir::HeaderModifier) -> Value {
    let mut field = kind.to_string();
    field[..1].make_ascii_lowercase();
    json!({"type": kind, field: modifier(m)})
}

fn path_modifier(p: &PathModifier) -> Result<Value, String> {
    match p {
        PathModifier::Full(v) => Ok(json!({"type": "ReplaceFullPath", "replaceFullPath": v})),
        PathModifier::Prefix(v) => Ok(json!({"type": "ReplacePrefixMatch", "replacePrefixMatch": v})),
        PathModifier::Regex { .. } => Err("a path rewrite by regular expression has no Gateway API equivalent".into()),
    }
}

/// The HTTPRoute filter of one IR filter, or why there is none. `backend_ref` writes a
/// mirror's target.
pub(crate) fn filter(f: &HttpFilter, backend_ref: impl Fn(&ir::Backend) -> Option<Value>) -> Result<Value, String> {
    Ok(match f {
        HttpFilter::RequestHeaders(m) => header_filter("RequestHeaderModifier", m),
        HttpFilter::ResponseHeaders(m) => header_filter("ResponseHeaderModifier", m),
        HttpFilter::Redirect(r) => {
            let mut out = json!({"statusCode": r.status});
            if let Some(s) = &r.scheme {
                out["scheme"] = json!(s);
            }
            if let Some(h) = &r.hostname {
                out["hostname"] = json!(h);
            }
            if let Some(p) = r.port {
                out["port"] = json!(p);
            }
            if let Some(p) = &r.path {
                out["path"] = path_modifier(p)?;
            }
            json!({"type": "RequestRedirect", "requestRedirect": out})
        }
        HttpFilter::UrlRewrite(u) => {
            if u.hostname_from_header.is_some() {
                return Err("a Host taken from another request header has no Gateway API equivalent".into());
            }
            let mut out = json!({});
            if let Some(h) = &u.hostname {
                out["hostname"] = json!(h);
            }
            if let Some(p) = &u.path {
                out["path"] = path_modifier(p)?;
            }
            json!({"type": "URLRewrite", "urlRewrite": out})
        }
        HttpFilter::Mirror(m) => {
            let target = backend_ref(&m.backend).ok_or("a mirror to no valid Service is not converted")?;
            let mut out = json!({"backendRef": target});
            if m.percent < 100 {
                out["percent"] = json!(m.percent);
            }
            json!({"type": "RequestMirror", "requestMirror": out})
        }
        HttpFilter::Cors(_) => return Err("a CORS policy is not converted".into()),
        HttpFilter::DirectResponse { status, .. } => {
            return Err(format!("a direct response ({status}) has no Gateway API equivalent"));
        }
    })
}

/// Whether a rule replaces the prefix its match matched (redirect or rewrite).
pub(crate) fn rewrites_prefix(filters: &[HttpFilter]) -> bool {
    filters.iter().any(|f| match f {
        HttpFilter::Redirect(r) => matches!(r.path, Some(PathModifier::Prefix(_))),
        HttpFilter::UrlRewrite(u) => matches!(u.path, Some(PathModifier::Prefix(_))),
        _ => false,
    })
}

/// A duration in Gateway API's format (at most five digits per unit): `1h2m3s4ms`.
pub(crate) fn duration(ms: u64) -> String {
    if ms == 0 {
        return "0s".into();
    }
    let mut out = String::new();
    let (h, rest) = (ms / 3_600_000, ms % 3_600_000);
    let (m, rest) = (rest / 60_000, rest % 60_000);
    let (s, rest) = (rest / 1000, rest % 1000);
    for (n, unit) in [(h.min(99_999), "h"), (m, "m"), (s, "s"), (rest, "ms")] {
        if n > 0 {
            out += &format!("{n}{unit}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_prefixes_match_whole_segments_and_longer_names() {
        let m = HttpMatch { path: PathMatch::StringPrefix("/api".into()), ..Default::default() };
        let out = matches(&m, false, |_| false);
        assert_eq!(out[0]["path"], json!({"type": "PathPrefix", "value": "/api"}));
        assert_eq!(out[1]["path"], json!({"type": "RegularExpression", "value": "/api[^/].*"}));
        let m = HttpMatch { path: PathMatch::StringPrefix("/a.b/".into()), ..Default::default() };
        assert_eq!(matches(&m, false, |_| false)[0]["path"]["value"], "/a\\.b/.*");
        let m = HttpMatch { path: PathMatch::StringPrefix("/api/".into()), ..Default::default() };
        assert_eq!(matches(&m, true, |_| false), vec![json!({"path": {"type": "PathPrefix", "value": "/api"}})]);
    }

    #[test]
    fn header_conditions_become_exact_or_regular_expressions() {
        let mut h = HeaderMatch::new("x-team", StringMatch::Contains("o.s".into()));
        assert_eq!(header(&h), json!({"type": "RegularExpression", "name": "x-team", "value": ".*o\\.s.*"}));
        h.value = StringMatch::Exact("MiXeD".into());
        h.ignore_case = true;
        assert_eq!(header(&h)["value"], "(?i)MiXeD");
        h.ignore_case = false;
        assert_eq!(header(&h)["type"], "Exact");
        h.value = StringMatch::Present;
        assert_eq!(header(&h)["value"], ".*");
        h.invert = true;
        assert!(header_problem(&h).unwrap().contains("negated"));
    }

    #[test]
    fn durations_keep_to_five_digits_a_unit() {
        assert_eq!(duration(0), "0s");
        assert_eq!(duration(1500), "1s500ms");
        assert_eq!(duration(90_000), "1m30s");
        assert_eq!(duration(7_200_000), "2h");
    }
}
