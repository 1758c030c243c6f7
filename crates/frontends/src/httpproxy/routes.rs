//! A proxy's routes through its includes (upstream's `computeRoutes`): include checks, condition
//! merging, per-route validation and policies, placeholders for what cannot be served.

use std::sync::Arc;

use api::httpproxy::{HTTPProxy, MatchCondition, Route};
use ir::{ClusterPolicy, HttpFilter, HttpMatch, HttpRule, Origin, PathMatch, PathModifier, RoutePolicy, reason};
use objects::ObjectKey;

use super::conditions::{self, check_headers, check_paths, check_query};
use super::filters;
use super::policy;
use super::{Contribution, Translator, services};
use crate::shared::headers::{self, Variables};

/// The longest direct-response body Envoy serves by default.
const MAX_DIRECT_BODY: usize = 4096;

/// Adds the routes of `proxy` (reached with `chain` conditions) and of everything it includes to
/// `out`. A route error drops all of this proxy's routes, as upstream; include errors skip the
/// include.
pub(super) fn walk(
    t: &mut Translator<'_>,
    proxy: &HTTPProxy,
    origin: &Origin,
    chain: &[&MatchCondition],
    visited: &mut Vec<ObjectKey>,
    fqdn: &str,
    out: &mut Vec<Contribution>,
) {
    let mut found = Vec::new();
    let origin_arc = Arc::new(origin.clone());
    let created = proxy.metadata.creation_timestamp.as_ref().map(|t| t.0.as_second()).unwrap_or(0);
    let mut placeholders = Vec::new();
    let mut include_keys = Vec::new();
    for (i, include) in proxy.spec.includes.iter().flatten().enumerate() {
        let field = format!("spec.includes[{i}]");
        let own = include.conditions.as_deref().unwrap_or_default();
        let path_error = if own.iter().any(|c| conditions::set(&c.exact).is_some()) {
            Some("include: exact conditions are not allowed in includes block".to_string())
        } else if own.iter().any(|c| conditions::set(&c.regex).is_some()) {
            Some("include: regex conditions are not allowed in includes block".to_string())
        } else {
            check_paths(own).err().map(|e| format!("include: {e}"))
        };
        if let Some(message) = path_error {
            t.error(origin, "IncludeError", &field, reason::PATH_MATCH_CONDITIONS_NOT_VALID, message);
            continue;
        }
        if let Err(message) = check_headers(own) {
            t.error(origin, "RouteError", &field, reason::HEADER_MATCH_CONDITIONS_NOT_VALID, message);
            continue;
        }
        if let Err(message) = check_query(own) {
            t.error(origin, "RouteError", &field, reason::QUERY_PARAMETER_MATCH_CONDITIONS_NOT_VALID, message);
            continue;
        }
        if let Some(key) = conditions::include_key(own) {
            if include_keys.contains(&key) {
                let message = "duplicate conditions defined on an include".into();
                t.error(origin, "IncludeError", &field, reason::DUPLICATE_MATCH_CONDITIONS, message);
                continue;
            }
            include_keys.push(key);
        }
        let namespace = include.namespace.clone().unwrap_or_else(|| origin.namespace.clone());
        let key = ObjectKey::new(&namespace, &include.name);
        let target = t.lookup(&key);
        let problem = match target {
            None => Some((reason::INCLUDE_NOT_FOUND, format!("include {namespace}/{} not found", include.name))),
            Some(p) if p.spec.virtualhost.is_some() => Some((
                reason::ROOT_INCLUDES_ROOT,
                format!("root httpproxy cannot include another root httpproxy ({namespace}/{})", include.name),
            )),
            Some(_) => None,
        };
        if let Some((reason, message)) = problem {
            t.error(origin, "IncludeError", &field, reason, message);
            // Requests for the include's conditions get a 502 rather than another route's answer.
            if !own.is_empty() {
                let refs: Vec<&MatchCondition> = own.iter().collect();
                let mut rule = direct(conditions::merged_match(&refs), 502);
                if t.options.enable_stat_prefix {
                    rule.policy.stat_prefix = Some(format!("{}_{}", origin.namespace, origin.name));
                }
                placeholders.push((rule, false));
            }
            continue;
        }
        let child = target.expect("checked above");
        let child_origin = super::origin(child);
        if visited.contains(&key) {
            let cycle: Vec<String> = visited.iter().chain([&key]).map(|k| k.to_string()).collect();
            let message = format!("include creates an include cycle: {}", cycle.join(" -> "));
            t.error(&child_origin, "IncludeError", "spec.includes", reason::INCLUDE_CREATES_CYCLE, message);
            continue;
        }
        t.reach(&key);
        let merged: Vec<&MatchCondition> = chain.iter().copied().chain(own.iter()).collect();
        visited.push(key);
        walk(t, child, &child_origin, &merged, visited, fqdn, &mut found);
        visited.pop();
    }
    if !placeholders.is_empty() {
        found.push(Contribution { origin: Arc::clone(&origin_arc), created, rules: placeholders });
    }
    let mut rules = Vec::new();
    for (j, r) in proxy.spec.routes.iter().flatten().enumerate() {
        let Ok(translated) = route(t, origin, &format!("spec.routes[{j}]"), chain, r, fqdn) else {
            // Upstream drops every route of this proxy, its includes' included.
            return;
        };
        rules.push(translated);
    }
    if !rules.is_empty() {
        found.push(Contribution { origin: origin_arc, created, rules });
    }
    expand_prefix_rewrites(&mut found);
    keep_last_of_each_match(&mut found);
    out.append(&mut found);
}

/// A rule that answers directly.
fn direct(matcher: HttpMatch, status: u16) -> HttpRule {
    HttpRule {
        matches: vec![matcher],
        filters: vec![HttpFilter::DirectResponse { status, body: None }],
        backends: Vec::new(),
        request_timeout_ms: None,
        policy: RoutePolicy::default(),
    }
}

/// One route as a rule, with whether plain HTTP must redirect it to HTTPS. `Err` after recording
/// an error.
fn route(
    t: &mut Translator<'_>,
    origin: &Origin,
    field: &str,
    chain: &[&MatchCondition],
    r: &Route,
    fqdn: &str,
) -> Result<(HttpRule, bool), ()> {
    let fail = |t: &mut Translator<'_>, condition, reason, message: String| {
        t.error(origin, condition, field, reason, message);
        Err(())
    };
    let services = r.services.as_deref().unwrap_or_default();
    let actions = usize::from(!services.is_empty())
        + usize::from(r.request_redirect_policy.is_some())
        + usize::from(r.direct_response_policy.is_some());
    if actions != 1 {
        let message =
            "must set exactly one of route.services or route.requestRedirectPolicy or route.directResponsePolicy";
        return fail(t, "RouteError", reason::ROUTE_ACTION_COUNT_NOT_VALID, message.into());
    }
    let own = r.conditions.as_deref().unwrap_or_default();
    if let Err(e) = check_paths(own) {
        return fail(t, "RouteError", reason::PATH_MATCH_CONDITIONS_NOT_VALID, format!("route: {e}"));
    }
    let merged: Vec<&MatchCondition> = chain.iter().copied().chain(own.iter()).collect();
    if let Err(e) = check_headers(merged.iter().copied()) {
        return fail(t, "RouteError", reason::HEADER_MATCH_CONDITIONS_NOT_VALID, e);
    }
    if let Err(e) = check_query(merged.iter().copied()) {
        return fail(t, "RouteError", reason::QUERY_PARAMETER_MATCH_CONDITIONS_NOT_VALID, e);
    }
    let vars = Variables { namespace: &origin.namespace, service: None };
    let request = match headers::headers(r.headers.request_headers_policy.as_ref(), true, &vars) {
        Ok(h) => h,
        Err(e) => {
            return fail(t, "RouteError", reason::REQUEST_HEADERS_POLICY_INVALID, format!("{e} on request headers"));
        }
    };
    let response = match headers::headers(r.headers.response_headers_policy.as_ref(), false, &vars) {
        Ok(h) => h,
        Err(e) => {
            return fail(t, "RouteError", reason::RESPONSE_HEADER_POLICY_INVALID, format!("{e} on response headers"));
        }
    };
    let cookie_rewrites = match filters::cookie_rewrites(r.headers.cookie_rewrite_policies.as_deref()) {
        Ok(c) => c,
        Err(e) => {
            return fail(
                t,
                "RouteError",
                reason::COOKIE_REWRITE_POLICIES_INVALID,
                format!("{e} on route cookie rewrite rules"),
            );
        }
    };
    let timeouts = match crate::shared::timeouts::timeouts(r.timeout_policy.as_deref()) {
        Ok(t) => t,
        Err(e) => {
            return fail(
                t,
                "RouteError",
                reason::TIMEOUT_POLICY_NOT_VALID,
                format!("route.timeoutPolicy failed to parse: {e}"),
            );
        }
    };
    let local = r.rate_limit_policy.as_ref().and_then(|p| p.local.as_ref());
    let local_rate_limit = match local.map(|l| filters::local_rate_limit(l, format!("vhost.{fqdn}"))).transpose() {
        Ok(l) => l,
        Err(e) => {
            return fail(
                t,
                "RouteError",
                reason::RATE_LIMIT_POLICY_NOT_VALID,
                format!("route.rateLimitPolicy is invalid: {e}"),
            );
        }
    };
    let ip_filter = match filters::ip_filter(&r.filters, t.geo()) {
        Ok(i) => i,
        Err(e) => return fail(t, "IPFilterError", e.reason, e.message),
    };
    let error_pages =
        super::error_pages::pages(t, origin, "RouteError", &format!("{field}.errorPages"), r.error_pages.as_deref())?;
    let global = r.rate_limit_policy.as_ref().and_then(|p| p.global.as_ref());
    let global_rate_limit = match global.map(filters::global_rate_limit).transpose() {
        Ok(g) => g.flatten(),
        Err(e) => {
            return fail(
                t,
                "RouteError",
                reason::RATE_LIMIT_POLICY_NOT_VALID,
                format!("route.rateLimitPolicy is invalid: {e}"),
            );
        }
    };
    let ignore_host_rate_limits = global.is_some_and(|g| g.disabled == Some(true));
    // A TLS root's routes require its default provider unless they say otherwise.
    let jwt_provider = match t.jwt.as_ref().map(|j| j.route(r.jwt_verification_policy.as_deref())) {
        None => None,
        Some(Err(e)) => return fail(t, "JWTVerificationError", reason::INVALID_JWT_VERIFICATION_POLICY, e),
        Some(Ok(Some(name))) if !t.jwt.as_ref().is_some_and(|j| j.names.contains(&name)) => {
            let message = format!("Route references an undefined JWT provider {name:?}");
            return fail(t, "JWTVerificationError", reason::JWT_PROVIDER_NOT_DEFINED, message);
        }
        Some(Ok(provider)) => provider,
    };
    let (load_balancer, hash_policies, warnings) = policy::load_balancer(r.load_balancer_policy.as_deref());
    for w in warnings {
        t.warning(origin, "SpecError", &format!("{field}.loadBalancerPolicy"), reason::IGNORED_FIELD, w);
    }
    if let Some(p) = &r.request_redirect_policy {
        let invalid = |detail: &str| format!("route.requestRedirectPolicy is invalid: {detail}");
        if p.path.is_some() && p.prefix.is_some() {
            let message = invalid("cannot specify both redirect path and redirect prefix");
            return fail(t, "RouteError", reason::REQUEST_REDIRECT_POLICY, message);
        }
        let texts = [&p.hostname, &p.path, &p.prefix];
        if texts.iter().any(|v| v.as_deref().is_some_and(|v| !headers::valid_header_value(v))) {
            return fail(
                t,
                "RouteError",
                reason::REQUEST_REDIRECT_POLICY,
                invalid("control characters are not allowed"),
            );
        }
    }
    if let Some(p) = &r.direct_response_policy {
        // The schema enforces these on a cluster; files in standalone mode are not checked by it.
        if !(200..=599).contains(&p.status_code) {
            let message =
                format!("route.directResponsePolicy is invalid: status code {} is not in 200-599", p.status_code);
            return fail(t, "RouteError", reason::DIRECT_RESPONSE_POLICY_INVALID, message);
        }
        if p.body.as_ref().is_some_and(|b| b.len() > MAX_DIRECT_BODY) {
            let message = format!("route.directResponsePolicy is invalid: body longer than {MAX_DIRECT_BODY} bytes");
            return fail(t, "RouteError", reason::DIRECT_RESPONSE_POLICY_INVALID, message);
        }
    }
    let upgrade = r.permit_insecure != Some(true) || t.options.disable_permit_insecure;
    let oidc_disabled = r.oidc_policy.as_ref().and_then(|p| p.disabled) == Some(true);
    if !upgrade && t.oidc && !oidc_disabled {
        // Plain HTTP has no login: the route would be served without one.
        let message = "route.permitInsecure cannot be set on a virtual host with an OIDC login unless the route sets oidcPolicy.disabled".into();
        return fail(t, "RouteError", reason::OIDC_NOT_PERMITTED, message);
    }
    let mut matcher = conditions::merged_match(&merged);
    if let Some(authority) = crate::wildcard_authority(fqdn) {
        matcher.headers.push(authority);
    }
    let rewrite = prefix_replacement(t, origin, field, r, &matcher.path)?.map(PathModifier::Prefix);
    let rewrite = match regex_replacement(t, origin, field, r)? {
        Some(regex) => Some(regex),
        None => rewrite,
    };
    let health_check = match policy::health_check(r.health_check_policy.as_deref()) {
        Ok(h) => h,
        Err(e) => return fail(t, "RouteError", reason::HEALTH_CHECK_POLICY_INVALID, e),
    };
    let retry = match policy::retry(r.retry_policy.as_deref()) {
        Ok(retry) => retry,
        Err(e) => return fail(t, "RouteError", reason::RETRY_POLICY_INVALID, e),
    };
    let host = match &request.host {
        Some(Ok(host)) => Some(host.as_str()),
        _ => None,
    };
    let settings = services::RouteSettings { load_balancer, health_checked: health_check.is_some(), host };
    let found = services::route(t, origin, field, services, settings)?;

    let mut filters = Vec::new();
    if request.modifier != Default::default() {
        filters.push(HttpFilter::RequestHeaders(request.modifier));
    }
    if response.modifier != Default::default() {
        filters.push(HttpFilter::ResponseHeaders(response.modifier));
    }
    let (hostname, hostname_from_header) = match request.host {
        Some(Ok(host)) => (Some(host), None),
        Some(Err(header)) => (None, Some(header)),
        None => (None, None),
    };
    if let Some(m) = found.mirror {
        filters.push(HttpFilter::Mirror(ir::RequestMirror { percent: m.weight, backend: m }));
    }
    if let Some(p) = &r.request_redirect_policy {
        filters.push(HttpFilter::Redirect(ir::Redirect {
            scheme: p.scheme.clone(),
            hostname: p.hostname.clone(),
            port: p.port.and_then(|p| u16::try_from(p).ok()),
            path: p.path.clone().map(PathModifier::Full).or_else(|| p.prefix.clone().map(PathModifier::Prefix)),
            status: p.status_code.as_ref().and_then(|c| u16::try_from(c.0).ok()).unwrap_or(302),
        }));
    } else if let Some(p) = &r.direct_response_policy {
        let status = u16::try_from(p.status_code).unwrap_or(500);
        filters.push(HttpFilter::DirectResponse { status, body: p.body.clone().filter(|b| !b.is_empty()) });
    } else if found.backends.is_empty() {
        // Every service unresolved: 503 for this route, the rest keeps serving.
        filters.push(HttpFilter::DirectResponse { status: 503, body: None });
    }
    let policy = RoutePolicy {
        idle_timeout_ms: timeouts.idle,
        retry,
        websockets: r.enable_websockets == Some(true),
        hash_policies,
        internal_redirect: policy::internal_redirect(r.internal_redirect_policy.as_deref()),
        cluster: ClusterPolicy { load_balancer, health_check, idle_connection_timeout_ms: timeouts.idle_connection },
        cors: None,
        // Routes of a root with an authorization server; elsewhere `authPolicy` means nothing.
        authorization: t.auth.as_ref().map(|a| a.route(r.auth_policy.as_deref())),
        jwt_provider,
        global_rate_limit,
        ignore_host_rate_limits,
        ip_filter,
        local_rate_limit,
        cookie_rewrites,
        // Upstream's name: the object and the route's own first condition's prefix.
        stat_prefix: t.options.enable_stat_prefix.then(|| {
            let prefix = own.first().and_then(|c| c.prefix.as_deref()).filter(|p| !p.is_empty());
            let path = prefix.map_or("_", |p| p.strip_prefix('/').unwrap_or(p));
            format!("{}_httpproxy_{}_path_{path}", origin.namespace, origin.name)
        }),
        error_pages,
        oidc_disabled,
    };
    let rule = HttpRule {
        matches: vec![matcher],
        filters,
        backends: found.backends,
        request_timeout_ms: timeouts.response,
        policy,
    };
    let path = rewrite;
    let mut rule = rule;
    if path.is_some() || hostname.is_some() || hostname_from_header.is_some() {
        rule.filters.push(HttpFilter::UrlRewrite(ir::UrlRewrite { hostname, hostname_from_header, path }));
    }
    Ok((rule, upgrade))
}

/// Routes with the same conditions: the later one wins, as upstream keys a virtual host's routes
/// by their conditions (a proxy's own routes come after its includes' and replace them).
fn keep_last_of_each_match(contributions: &mut Vec<Contribution>) {
    let mut seen = std::collections::HashSet::new();
    for c in contributions.iter_mut().rev() {
        let mut kept: Vec<_> = std::mem::take(&mut c.rules)
            .into_iter()
            .rev()
            .filter(|(rule, _)| seen.insert(rule.matches[0].clone()))
            .collect();
        kept.reverse();
        c.rules = kept;
    }
    contributions.retain(|c| !c.rules.is_empty());
}

/// Upstream's `expandPrefixMatches`: Envoy replaces a matched prefix as a string, so `/api` →
/// `/v2/` would turn `/api/x` into `/v2//x`. A prefix route with a rewrite that is the only
/// route for its prefix (trailing slash aside) is split into `/api` and `/api/`.
fn expand_prefix_rewrites(contributions: &mut [Contribution]) {
    let trimmed = |rule: &HttpRule| match &rule.matches[0].path {
        PathMatch::StringPrefix(p) if p != "/" => Some(p.trim_end_matches('/').to_string()),
        _ => None,
    };
    let mut counts: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for (rule, _) in contributions.iter().flat_map(|c| &c.rules) {
        if let Some(p) = trimmed(rule) {
            *counts.entry(p).or_default() += 1;
        }
    }
    for c in contributions {
        let mut expanded = Vec::with_capacity(c.rules.len());
        for (rule, upgrade) in std::mem::take(&mut c.rules) {
            let replacement = rule.filters.iter().find_map(|f| match f {
                HttpFilter::UrlRewrite(ir::UrlRewrite { path: Some(PathModifier::Prefix(r)), .. }) => Some(r.clone()),
                _ => None,
            });
            let (Some(prefix), Some(replacement)) = (trimmed(&rule), replacement) else {
                expanded.push((rule, upgrade));
                continue;
            };
            if counts.get(&prefix) != Some(&1) {
                expanded.push((rule, upgrade));
                continue;
            }
            let base = replacement.trim_end_matches('/').to_string();
            let bare = if base.is_empty() { "/".to_string() } else { base.clone() };
            for (path, replacement) in [(prefix.clone(), bare), (format!("{prefix}/"), format!("{base}/"))] {
                let mut split = rule.clone();
                split.matches[0].path = PathMatch::StringPrefix(path);
                for f in &mut split.filters {
                    if let HttpFilter::UrlRewrite(u) = f {
                        u.path = Some(PathModifier::Prefix(replacement.clone()));
                    }
                }
                expanded.push((split, upgrade));
            }
        }
        c.rules = expanded;
    }
}

/// A route's regular expression replacement of the path (`pathRewritePolicy.replaceRegex`, ours),
/// checked as RE2 will read it: the pattern, and the substitution's group references.
fn regex_replacement(
    t: &mut Translator<'_>,
    origin: &Origin,
    field: &str,
    r: &Route,
) -> Result<Option<PathModifier>, ()> {
    let Some(policy) = r.path_rewrite_policy.as_ref() else { return Ok(None) };
    let Some(regex) = &policy.replace_regex else { return Ok(None) };
    let field = format!("{field}.pathRewritePolicy.replaceRegex");
    let problem = if policy.replace_prefix.as_ref().is_some_and(|p| !p.is_empty()) {
        Some("replaceRegex and replacePrefix cannot both be set".to_string())
    } else {
        match crate::shared::regex::check_regex(regex.pattern.clone()) {
            Err(e) => Some(e),
            Ok(_) => crate::shared::regex::substitution_problem(&regex.pattern, &regex.substitution),
        }
    };
    if let Some(message) = problem {
        t.error(origin, "PathRewriteError", &field, reason::REGEX_REWRITE_INVALID, message);
        return Err(());
    }
    Ok(Some(PathModifier::Regex { pattern: regex.pattern.clone(), substitution: regex.substitution.clone() }))
}

/// The prefix replacement that applies to a route (`pathRewritePolicy.replacePrefix`): the one
/// naming the route's prefix exactly, else the one without a prefix.
fn prefix_replacement(
    t: &mut Translator<'_>,
    origin: &Origin,
    field: &str,
    r: &Route,
    path: &PathMatch,
) -> Result<Option<String>, ()> {
    let replacements = r.path_rewrite_policy.as_ref().and_then(|p| p.replace_prefix.as_deref()).unwrap_or_default();
    if replacements.is_empty() {
        return Ok(None);
    }
    let field = format!("{field}.pathRewritePolicy");
    let PathMatch::StringPrefix(prefix) = path else {
        let message = "cannot specify prefix replacements without a prefix condition".into();
        t.error(origin, "PrefixReplaceError", &field, reason::MUST_HAVE_PREFIX, message);
        return Err(());
    };
    let mut seen: Vec<&str> = Vec::new();
    let mut empty = false;
    for rp in replacements {
        if let Some(problem) = ir::header_value_problem(&rp.replacement) {
            let message = format!("invalid replacement {:?}: {problem}", rp.replacement);
            t.error(origin, "PrefixReplaceError", &field, reason::INVALID_REPLACEMENT, message);
            return Err(());
        }
        match rp.prefix.as_deref().filter(|p| !p.is_empty()) {
            None if empty => {
                t.error(
                    origin,
                    "PrefixReplaceError",
                    &field,
                    reason::AMBIGUOUS_REPLACEMENT,
                    "ambiguous prefix replacement".into(),
                );
                return Err(());
            }
            None => empty = true,
            Some(p) if seen.contains(&p) => {
                let message = format!("duplicate replacement prefix '{p}'");
                t.error(origin, "PrefixReplaceError", &field, reason::DUPLICATE_REPLACEMENT, message);
                return Err(());
            }
            Some(p) => seen.push(p),
        }
    }
    let exact = replacements.iter().find(|rp| rp.prefix.as_deref() == Some(prefix.as_str()));
    let default = replacements.iter().find(|rp| rp.prefix.as_deref().is_none_or(str::is_empty));
    Ok(exact.or(default).map(|rp| rp.replacement.clone()))
}
