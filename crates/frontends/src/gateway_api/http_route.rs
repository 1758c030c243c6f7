//! HTTPRoute into an IR route: matches, filters, backends and timeouts.

use gateway_api::experimental::httproutes::{
    HttpRouteRulesBackendRefsFiltersType as BackendFilterType, HttpRouteRulesFilters,
    HttpRouteRulesFiltersRequestRedirectScheme as Scheme, HttpRouteRulesFiltersType as FilterType,
    HttpRouteRulesMatches, HttpRouteRulesMatchesHeadersType as HeaderType, HttpRouteRulesMatchesPathType as PathType,
    HttpRouteRulesMatchesQueryParamsType as QueryType,
};
use ir::{
    Diagnostic, HeaderMatch, HeaderModifier, HttpFilter, HttpMatch, HttpRule, Origin, PathMatch, PathModifier,
    QueryMatch, StringMatch, reason,
};
use objects::Snapshot;
use objects::types::HTTPRoute;

use super::backends::{self, BackendRef};
use super::{ParentRef, error, origin};
use crate::shared::regex::check_regex;

/// The route's parentRefs, defaulted.
pub(super) fn parent_refs(route: &HTTPRoute) -> Vec<ParentRef> {
    super::parent_refs!(route, route.spec.parent_refs.iter().flatten())
}

/// Translates one HTTPRoute. Rules with problems still produce a rule (answering 500) so that
/// a mistake is visible to clients instead of silently falling through to another route.
pub(super) fn translate(snapshot: &Snapshot, route: &HTTPRoute, diagnostics: &mut Vec<Diagnostic>) -> ir::HttpRoute {
    let origin = origin("HTTPRoute", &route.metadata);
    let mut rules = Vec::new();
    for (i, rule) in route.spec.rules.iter().flatten().enumerate() {
        let field = format!("spec.rules[{i}]");
        let mut broken = false;
        let matches =
            rule_matches(&origin, &field, rule.matches.iter().flatten().map(translate_match), diagnostics, &mut broken);
        let mut filters = Vec::new();
        for (j, f) in rule.filters.iter().flatten().enumerate() {
            let field = format!("{field}.filters[{j}]");
            match translate_filter(snapshot, &origin, f, &field, diagnostics)
                .and_then(|f| super::checked_filter(&origin, field, f, &filters, diagnostics))
            {
                Some(f) => filters.push(f),
                None => broken = true,
            }
        }
        // Each backendRef's URLRewrite, with where it was written.
        let mut rewrites: Vec<Option<(String, ir::UrlRewrite)>> = Vec::new();
        let backends = rule
            .backend_refs
            .iter()
            .flatten()
            .enumerate()
            .map(|(j, b)| {
                let r = backends::backend_ref!(b);
                let field = format!("{field}.backendRefs[{j}]");
                let mut backend = backends::translate(snapshot, &origin, "HTTPRoute", r, field.clone(), diagnostics);
                let mut options = ir::BackendOptions::default();
                let mut rewrite = None;
                for (k, f) in b.filters.iter().flatten().enumerate() {
                    if let (BackendFilterType::UrlRewrite, Some(r)) = (&f.r#type, &f.url_rewrite) {
                        rewrite = Some((format!("{field}.filters[{k}]"), url_rewrite!(r)));
                        continue;
                    }
                    let (target, modifier) = match (&f.r#type, &f.request_header_modifier, &f.response_header_modifier)
                    {
                        (BackendFilterType::RequestHeaderModifier, Some(m), _) => {
                            (&mut options.request_headers, header_modifier!(m))
                        }
                        (BackendFilterType::ResponseHeaderModifier, _, Some(m)) => {
                            (&mut options.response_headers, header_modifier!(m))
                        }
                        (other, _, _) => {
                            let message =
                                format!("backend filter type {other:?} is not supported (or lacks its field)");
                            diagnostics.push(error(
                                &origin,
                                format!("{field}.filters[{k}]"),
                                reason::UNSUPPORTED_VALUE,
                                message,
                            ));
                            continue;
                        }
                    };
                    match modifier.problem() {
                        None => *target = modifier,
                        Some(message) => diagnostics.push(error(
                            &origin,
                            format!("{field}.filters[{k}]"),
                            reason::UNSUPPORTED_VALUE,
                            message,
                        )),
                    }
                }
                if options != ir::BackendOptions::default() {
                    backend.options = Some(std::sync::Arc::new(options));
                }
                rewrites.push(rewrite);
                backend
            })
            .collect();
        if rewrites.iter().any(Option::is_some) {
            match backend_rewrite(&origin, &field, &rewrites, &filters, diagnostics) {
                Some(f) => filters.push(f),
                None => broken = true,
            }
        }
        let mut timeout = |value: Option<&str>, name: &str| {
            value.and_then(|d| {
                let parsed = parse_duration_ms(d);
                if parsed.is_none() {
                    diagnostics.push(error(
                        &origin,
                        format!("{field}.timeouts.{name}"),
                        reason::UNSUPPORTED_VALUE,
                        format!("{d:?} is not a duration"),
                    ));
                }
                parsed
            })
        };
        let timeouts = rule.timeouts.as_ref();
        let request = timeout(timeouts.and_then(|t| t.request.as_deref()), "request");
        let backend = timeout(timeouts.and_then(|t| t.backend_request.as_deref()), "backendRequest");
        let backoff = rule.retry.as_ref().and_then(|r| r.backoff.as_deref()).and_then(|d| {
            let parsed = parse_duration_ms(d);
            if parsed.is_none() {
                let message = format!("{d:?} is not a duration");
                diagnostics.push(error(&origin, format!("{field}.retry.backoff"), reason::UNSUPPORTED_VALUE, message));
            }
            parsed
        });
        let retry = rule.retry.as_ref().map(|r| retry_policy(r, backend, backoff));
        let request_timeout_ms = match (&retry, request, backend) {
            // With retries each backend request has its own limit, and the request's covers
            // them all.
            (Some(_), r, _) => r,
            // Without, one backend request is the whole request: the tighter limit wins (0
            // disables a limit).
            (None, r, None) => r,
            (None, None, b) => b,
            (None, Some(0), b) => b,
            (None, r, Some(0)) => r,
            (None, Some(r), Some(b)) => Some(r.min(b)),
        };
        let Some((matches, filters)) = broken_answers_500(matches, filters, broken) else { continue };
        // The Gateway API has no websocket switch: upgrades are allowed, as clients and backends
        // (appProtocol kubernetes.io/ws) expect.
        let policy = ir::RoutePolicy { websockets: true, retry, ..Default::default() };
        rules.push(HttpRule { matches, filters, backends, request_timeout_ms, policy });
    }
    ir::HttpRoute {
        hostnames: super::route_hostnames(&origin, route.spec.hostnames.iter().flatten(), diagnostics),
        origin: std::sync::Arc::new(origin),
        created: route.metadata.creation_timestamp.as_ref().map(|t| t.0.as_second()).unwrap_or(0),
        rules,
        vhost: None,
    }
}

/// A rule's `retry`: `attempts` retries (1 when unset) of a backend request that fails to
/// connect, is reset or refused, or outlives the rule's `backendRequest` timeout (each try gets
/// that long), and of one answered with one of `codes`; at least `backoff` apart.
fn retry_policy(
    r: &gateway_api::experimental::httproutes::HttpRouteRulesRetry,
    backend_timeout_ms: Option<u64>,
    backoff_ms: Option<u64>,
) -> ir::RetryPolicy {
    let codes: Vec<u32> = r.codes.iter().flatten().filter_map(|c| u32::try_from(*c).ok()).collect();
    let mut retry_on: Vec<String> = ["connect-failure", "refused-stream", "reset"].map(String::from).into();
    if !codes.is_empty() {
        retry_on.push("retriable-status-codes".into());
    }
    ir::RetryPolicy {
        retry_on,
        count: r.attempts.map_or(1, |a| u32::try_from(a.max(0)).unwrap_or(u32::MAX)),
        per_try_timeout_ms: backend_timeout_ms.filter(|ms| *ms > 0),
        retriable_status_codes: codes,
        backoff_ms: backoff_ms.filter(|ms| *ms > 0),
    }
}

/// A rule's matches, translated; a rule without any matches everything. A match that cannot be
/// translated is reported and marks the rule `broken`.
pub(super) fn rule_matches<'a>(
    origin: &Origin,
    field: &str,
    translated: impl Iterator<Item = Result<HttpMatch, (&'a str, String)>>,
    diagnostics: &mut Vec<Diagnostic>,
    broken: &mut bool,
) -> Vec<HttpMatch> {
    let mut matches = Vec::new();
    for (j, m) in translated.enumerate() {
        match m {
            Ok(m) => matches.push(m),
            Err((sub, message)) => {
                diagnostics.push(error(
                    origin,
                    format!("{field}.matches[{j}].{sub}"),
                    reason::UNSUPPORTED_VALUE,
                    message,
                ));
                *broken = true;
            }
        }
    }
    if matches.is_empty() && !*broken {
        matches.push(HttpMatch::default());
    }
    matches
}

/// A broken rule still answers what it would have matched, with a 500, rather than letting its
/// requests fall through to another rule; `None` when nothing is left to match.
pub(super) fn broken_answers_500(
    matches: Vec<HttpMatch>,
    filters: Vec<HttpFilter>,
    broken: bool,
) -> Option<(Vec<HttpMatch>, Vec<HttpFilter>)> {
    match broken {
        false => Some((matches, filters)),
        true if matches.is_empty() => None,
        true => Some((matches, vec![HttpFilter::DirectResponse { status: 500, body: None }])),
    }
}

fn translate_match(m: &HttpRouteRulesMatches) -> Result<HttpMatch, (&'static str, String)> {
    let path = match &m.path {
        None => PathMatch::Prefix("/".into()),
        Some(p) => {
            let value = p.value.clone().unwrap_or_else(|| "/".into());
            match p.r#type.clone().unwrap_or(PathType::PathPrefix) {
                PathType::Exact | PathType::PathPrefix if !value.starts_with('/') => {
                    return Err(("path", format!("path {value:?} must start with /")));
                }
                PathType::Exact => PathMatch::Exact(value),
                PathType::PathPrefix => PathMatch::Prefix(value),
                PathType::RegularExpression => PathMatch::Regex(check_regex(value).map_err(|e| ("path", e))?),
            }
        }
    };
    let mut headers = Vec::new();
    for h in m.headers.iter().flatten() {
        if let Some(problem) = ir::header_name_problem(&h.name) {
            return Err(("headers", problem));
        }
        let value = match h.r#type.clone().unwrap_or(HeaderType::Exact) {
            HeaderType::Exact => StringMatch::Exact(h.value.clone()),
            HeaderType::RegularExpression => {
                StringMatch::Regex(check_regex(h.value.clone()).map_err(|e| ("headers", e))?)
            }
        };
        // Header names are case-insensitive; the first condition on a name wins (Gateway API).
        let name = h.name.to_ascii_lowercase();
        if !headers.iter().any(|x: &HeaderMatch| x.name == name) {
            headers.push(HeaderMatch::new(name, value));
        }
    }
    let mut query = Vec::new();
    for q in m.query_params.iter().flatten() {
        if let Some(problem) = ir::header_name_problem(&q.name) {
            return Err(("queryParams", problem.replacen("header name", "query parameter name", 1)));
        }
        if q.name.len() > ir::MAX_QUERY_NAME_BYTES {
            let message = format!("query parameter names are at most {} bytes", ir::MAX_QUERY_NAME_BYTES);
            return Err(("queryParams", message));
        }
        let value = match q.r#type.clone().unwrap_or(QueryType::Exact) {
            QueryType::Exact => StringMatch::Exact(q.value.clone()),
            QueryType::RegularExpression => {
                StringMatch::Regex(check_regex(q.value.clone()).map_err(|e| ("queryParams", e))?)
            }
        };
        if !query.iter().any(|x: &QueryMatch| x.name == q.name) {
            query.push(QueryMatch { name: q.name.clone(), value, ignore_case: false });
        }
    }
    let method = m
        .method
        .as_ref()
        .map(|m| serde_json::to_value(m).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default());
    Ok(HttpMatch { path, headers, query, method })
}

/// A request or response header modifier (distinct generated types with the same fields).
macro_rules! header_modifier {
    ($m:expr) => {
        HeaderModifier {
            set: $m
                .set
                .iter()
                .flatten()
                .map(|h| (h.name.clone(), crate::shared::headers::literal_header_value(&h.value)))
                .collect(),
            add: $m
                .add
                .iter()
                .flatten()
                .map(|h| (h.name.clone(), crate::shared::headers::literal_header_value(&h.value)))
                .collect(),
            remove: $m.remove.clone().unwrap_or_default(),
        }
    };
}
pub(super) use header_modifier;

/// A URLRewrite filter (of a rule or of a backendRef) as an IR rewrite.
macro_rules! url_rewrite {
    ($r:expr) => {
        ir::UrlRewrite {
            hostname: $r.hostname.clone(),
            path: $r
                .path
                .as_ref()
                .and_then(|p| path_modifier(p.replace_full_path.clone(), p.replace_prefix_match.clone())),
            ..Default::default()
        }
    };
}
use url_rewrite;

/// The rule filter a URLRewrite on backendRefs (`rewrites`, per backendRef) becomes. Envoy
/// rewrites a request's path and host per route, before a weighted backend is picked, so the
/// rewrite is honoured when every backendRef of the rule carries the same one and the rule has
/// none of its own; otherwise the rule is refused (`None`, with a diagnostic naming the filter)
/// rather than sending some requests to a path their backend was not written for.
fn backend_rewrite(
    origin: &Origin,
    rule: &str,
    rewrites: &[Option<(String, ir::UrlRewrite)>],
    filters: &[HttpFilter],
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<HttpFilter> {
    let (field, first) = rewrites.iter().flatten().next()?;
    let problem = if filters.iter().any(|f| matches!(f, HttpFilter::UrlRewrite(_))) {
        Some((
            field.clone(),
            "the rule has a URLRewrite filter of its own; a backendRef cannot rewrite again".to_string(),
        ))
    } else {
        let differs = |r: &Option<(String, ir::UrlRewrite)>| r.as_ref().is_none_or(|(_, r)| r != first);
        rewrites.iter().position(differs).map(|at| {
            let field = rewrites[at].as_ref().map_or_else(|| format!("{rule}.backendRefs[{at}]"), |(f, _)| f.clone());
            let message = format!(
                "backendRefs[{at}] does not have the same URLRewrite as the rule's other backendRefs; \
                 a URLRewrite on backendRefs is supported when every backendRef of the rule has the same one"
            );
            (field, message)
        })
    };
    match problem {
        None => {
            super::checked_filter(origin, field.clone(), HttpFilter::UrlRewrite(first.clone()), filters, diagnostics)
        }
        Some((field, message)) => {
            diagnostics.push(error(origin, field, reason::UNSUPPORTED_VALUE, message));
            None
        }
    }
}

fn translate_filter(
    snapshot: &Snapshot,
    origin: &Origin,
    f: &HttpRouteRulesFilters,
    field: &str,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<HttpFilter> {
    let missing = |diagnostics: &mut Vec<Diagnostic>, what: &str| {
        diagnostics.push(error(
            origin,
            field.to_string(),
            reason::UNSUPPORTED_VALUE,
            format!("filter type {what} needs its field"),
        ));
        None
    };
    match f.r#type {
        FilterType::RequestHeaderModifier => {
            let Some(m) = &f.request_header_modifier else {
                return missing(diagnostics, "RequestHeaderModifier");
            };
            Some(HttpFilter::RequestHeaders(header_modifier!(m)))
        }
        FilterType::ResponseHeaderModifier => {
            let Some(m) = &f.response_header_modifier else {
                return missing(diagnostics, "ResponseHeaderModifier");
            };
            Some(HttpFilter::ResponseHeaders(header_modifier!(m)))
        }
        FilterType::RequestRedirect => {
            let Some(r) = &f.request_redirect else {
                return missing(diagnostics, "RequestRedirect");
            };
            Some(HttpFilter::Redirect(ir::Redirect {
                scheme: r.scheme.as_ref().map(|s| match s {
                    Scheme::Http => "http".into(),
                    Scheme::Https => "https".into(),
                }),
                hostname: r.hostname.clone(),
                port: r.port.and_then(|p| u16::try_from(p).ok()),
                path: r
                    .path
                    .as_ref()
                    .and_then(|p| path_modifier(p.replace_full_path.clone(), p.replace_prefix_match.clone())),
                status: r.status_code.and_then(|s| u16::try_from(s).ok()).unwrap_or(302),
            }))
        }
        FilterType::UrlRewrite => {
            let Some(r) = &f.url_rewrite else {
                return missing(diagnostics, "URLRewrite");
            };
            Some(HttpFilter::UrlRewrite(url_rewrite!(r)))
        }
        FilterType::RequestMirror => {
            let Some(m) = &f.request_mirror else {
                return missing(diagnostics, "RequestMirror");
            };
            let b = &m.backend_ref;
            let r = BackendRef {
                group: b.group.as_deref(),
                kind: b.kind.as_deref(),
                name: &b.name,
                namespace: b.namespace.as_deref(),
                port: b.port,
                weight: None,
            };
            let backend = backends::translate(
                snapshot,
                origin,
                "HTTPRoute",
                r,
                format!("{field}.requestMirror.backendRef"),
                diagnostics,
            );
            let percent = match (&m.percent, &m.fraction) {
                (Some(p), _) => (*p).clamp(0, 100) as u32,
                (None, Some(f)) => {
                    let d = f.denominator.unwrap_or(100).max(1);
                    ((f.numerator.max(0) as i64 * 100) / d as i64).clamp(0, 100) as u32
                }
                (None, None) => 100,
            };
            Some(HttpFilter::Mirror(ir::RequestMirror { backend, percent }))
        }
        FilterType::Cors => {
            let Some(c) = &f.cors else { return missing(diagnostics, "CORS") };
            match cors(c) {
                Ok(c) => Some(HttpFilter::Cors(c)),
                Err(message) => {
                    diagnostics.push(error(origin, format!("{field}.cors"), reason::UNSUPPORTED_VALUE, message));
                    None
                }
            }
        }
        FilterType::ExtensionRef | FilterType::ExternalAuth => {
            diagnostics.push(error(
                origin,
                field.to_string(),
                reason::UNSUPPORTED_VALUE,
                format!("filter type {:?} is not supported", f.r#type),
            ));
            None
        }
    }
}

/// The CORS filter: `*` or `scheme://host[:port]` origins, where a `*` in the host matches any
/// characters (`https://*.example.com`); methods, headers and exposed headers may be `*`; the
/// preflight answer is cached for 5 s unless `maxAge` says otherwise.
fn cors(c: &gateway_api::experimental::httproutes::HttpRouteRulesFiltersCors) -> Result<ir::Cors, String> {
    let mut allow_origins = Vec::new();
    for origin in c.allow_origins.iter().flatten() {
        let matcher = if origin == "*" || !origin.contains('*') {
            ir::OriginMatch::Exact(origin.clone())
        } else {
            let pattern: Vec<String> = origin.split('*').map(ir::regex_escape).collect();
            ir::OriginMatch::Regex(check_regex(pattern.join(".*"))?)
        };
        allow_origins.push(matcher);
    }
    let tokens = |values: &Option<Vec<String>>, what: &str| -> Result<Vec<String>, String> {
        let values = values.clone().unwrap_or_default();
        match values.iter().find(|v| v.is_empty() || !v.bytes().all(|b| b.is_ascii_graphic() && b != b',')) {
            Some(bad) => Err(format!("invalid {what} {bad:?}")),
            None => Ok(values),
        }
    };
    let max_age_s = match c.max_age {
        None => 5,
        Some(age) if age >= 0 => age as u64,
        Some(age) => return Err(format!("invalid maxAge {age}")),
    };
    Ok(ir::Cors {
        allow_origins,
        allow_methods: tokens(&c.allow_methods, "allowed method")?,
        allow_headers: tokens(&c.allow_headers, "allowed header")?,
        expose_headers: tokens(&c.expose_headers, "exposed header")?,
        max_age_s: Some(max_age_s),
        allow_credentials: c.allow_credentials == Some(true),
        allow_private_network: false,
        forward_unmatched_preflights: false,
    })
}

fn path_modifier(full: Option<String>, prefix: Option<String>) -> Option<PathModifier> {
    full.map(PathModifier::Full).or_else(|| prefix.map(PathModifier::Prefix))
}

/// Parses a Gateway API duration (`1h`, `30s`, `250ms`, `1h30m`) into milliseconds.
pub fn parse_duration_ms(text: &str) -> Option<u64> {
    let mut total = 0u64;
    let mut rest = text;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit())?;
        let value: u64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let (unit, len) = if rest.starts_with("ms") {
            (1, 2)
        } else if rest.starts_with('h') {
            (3_600_000, 1)
        } else if rest.starts_with('m') {
            (60_000, 1)
        } else if rest.starts_with('s') {
            (1000, 1)
        } else {
            return None;
        };
        total = total.checked_add(value.checked_mul(unit)?)?;
        rest = &rest[len..];
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gateway_api::experimental::httproutes::HttpRouteRulesFiltersCors;

    #[test]
    fn cors_origins_with_a_wildcard_become_regexes_and_max_age_defaults_to_five_seconds() {
        let c = HttpRouteRulesFiltersCors {
            allow_origins: Some(vec!["*".into(), "https://www.foo.com".into(), "https://*.bar.com".into()]),
            allow_methods: Some(vec!["GET".into(), "*".into()]),
            allow_credentials: Some(true),
            ..Default::default()
        };
        let translated = cors(&c).unwrap();
        assert_eq!(
            translated.allow_origins,
            [
                ir::OriginMatch::Exact("*".into()),
                ir::OriginMatch::Exact("https://www.foo.com".into()),
                ir::OriginMatch::Regex(r"https://.*\.bar\.com".into()),
            ]
        );
        assert_eq!((translated.max_age_s, translated.allow_credentials), (Some(5), true));
        assert_eq!(translated.allow_methods, ["GET", "*"]);
        let bad = HttpRouteRulesFiltersCors { allow_headers: Some(vec!["x-a, x-b".into()]), ..Default::default() };
        assert!(cors(&bad).is_err(), "a header list cannot hide in one entry");
    }
}
