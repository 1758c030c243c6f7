//! GRPCRoute into an IR HTTP route: a gRPC method is the HTTP/2 path `/<service>/<method>`, so
//! method matches become path matches, and backends speak HTTP/2 (clear text unless the
//! Service says otherwise).

use std::sync::Arc;

use gateway_api::grpcroutes::{
    GrpcRouteRulesFilters, GrpcRouteRulesFiltersType as FilterType, GrpcRouteRulesMatches,
    GrpcRouteRulesMatchesHeadersType as HeaderType, GrpcRouteRulesMatchesMethodType as MethodType,
};
use ir::{Diagnostic, HeaderMatch, HeaderModifier, HttpFilter, HttpMatch, HttpRule, PathMatch, StringMatch, reason};
use objects::Snapshot;
use objects::types::GRPCRoute;

use super::backends;
use super::http_route::{broken_answers_500, header_modifier, rule_matches};
use super::{ParentRef, error, origin};
use crate::shared::regex::check_regex;

/// The route's parentRefs, defaulted.
pub(super) fn parent_refs(route: &GRPCRoute) -> Vec<ParentRef> {
    super::parent_refs!(route, route.spec.parent_refs.iter().flatten())
}

/// Characters a gRPC service or method name may contain, for regular expressions matching any.
const NAME: &str = "[^/]+";

/// Translates one GRPCRoute. As for HTTPRoute, a rule with problems answers 500 rather than
/// letting its requests fall through to another route.
pub(super) fn translate(snapshot: &Snapshot, route: &GRPCRoute, diagnostics: &mut Vec<Diagnostic>) -> ir::HttpRoute {
    let origin = origin("GRPCRoute", &route.metadata);
    let mut rules = Vec::new();
    for (i, rule) in route.spec.rules.iter().flatten().enumerate() {
        let field = format!("spec.rules[{i}]");
        let mut broken = false;
        let matches =
            rule_matches(&origin, &field, rule.matches.iter().flatten().map(translate_match), diagnostics, &mut broken);
        let mut filters = Vec::new();
        for (j, f) in rule.filters.iter().flatten().enumerate() {
            let checked = |f, diagnostics: &mut Vec<Diagnostic>| {
                super::checked_filter(&origin, format!("{field}.filters[{j}]"), f, &filters, diagnostics)
            };
            match translate_filter(f) {
                Some(f) => match checked(f, diagnostics) {
                    Some(f) => filters.push(f),
                    None => broken = true,
                },
                None => {
                    diagnostics.push(error(
                        &origin,
                        format!("{field}.filters[{j}]"),
                        reason::UNSUPPORTED_VALUE,
                        format!("filter type {:?} is not supported", f.r#type),
                    ));
                    broken = true;
                }
            }
        }
        let backends = rule
            .backend_refs
            .iter()
            .flatten()
            .enumerate()
            .map(|(j, b)| {
                let r = backends::backend_ref!(b);
                let mut backend = backends::translate(
                    snapshot,
                    &origin,
                    "GRPCRoute",
                    r,
                    format!("{field}.backendRefs[{j}]"),
                    diagnostics,
                );
                // gRPC needs HTTP/2 to the backend, whatever the Service's appProtocol says.
                let mut options = backend.options.as_deref().cloned().unwrap_or_default();
                if options.protocol.is_none() {
                    options.protocol = Some(ir::UpstreamProtocol::H2c);
                    backend.options = Some(Arc::new(options));
                }
                backend
            })
            .collect();
        let Some((matches, filters)) = broken_answers_500(matches, filters, broken) else { continue };
        rules.push(HttpRule { matches, filters, backends, request_timeout_ms: None, policy: Default::default() });
    }
    ir::HttpRoute {
        hostnames: super::route_hostnames(&origin, route.spec.hostnames.iter().flatten(), diagnostics),
        origin: Arc::new(origin),
        created: route.metadata.creation_timestamp.as_ref().map(|t| t.0.as_second()).unwrap_or(0),
        rules,
        vhost: None,
    }
}

fn translate_match(m: &GrpcRouteRulesMatches) -> Result<HttpMatch, (&'static str, String)> {
    let path = match &m.method {
        None => PathMatch::Prefix("/".into()),
        Some(method) => {
            let service = method.service.as_deref().filter(|s| !s.is_empty());
            let name = method.method.as_deref().filter(|s| !s.is_empty());
            match (method.r#type.clone().unwrap_or(MethodType::Exact), service, name) {
                (_, None, None) => return Err(("method", "one of service and method is required".into())),
                (MethodType::Exact, Some(s), Some(m)) => PathMatch::Exact(format!("/{s}/{m}")),
                (MethodType::Exact, Some(s), None) => PathMatch::StringPrefix(format!("/{s}/")),
                (MethodType::Exact, None, Some(m)) => PathMatch::Regex(format!("/{NAME}/{}", regex_syntax::escape(m))),
                (MethodType::RegularExpression, s, m) => {
                    let s = s.map(str::to_string).unwrap_or_else(|| NAME.into());
                    let m = m.map(str::to_string).unwrap_or_else(|| NAME.into());
                    check_regex(s.clone()).map_err(|e| ("method.service", e))?;
                    check_regex(m.clone()).map_err(|e| ("method.method", e))?;
                    PathMatch::Regex(format!("/(?:{s})/(?:{m})"))
                }
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
        let name = h.name.to_ascii_lowercase();
        if !headers.iter().any(|x: &HeaderMatch| x.name == name) {
            headers.push(HeaderMatch::new(name, value));
        }
    }
    Ok(HttpMatch { path, headers, query: Vec::new(), method: None })
}

fn translate_filter(f: &GrpcRouteRulesFilters) -> Option<HttpFilter> {
    match f.r#type {
        FilterType::RequestHeaderModifier => {
            Some(HttpFilter::RequestHeaders(header_modifier!(f.request_header_modifier.as_ref()?)))
        }
        FilterType::ResponseHeaderModifier => {
            Some(HttpFilter::ResponseHeaders(header_modifier!(f.response_header_modifier.as_ref()?)))
        }
        FilterType::RequestMirror | FilterType::ExtensionRef => None,
    }
}
