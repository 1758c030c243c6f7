//! Gateway API route precedence within a virtual host.

use std::cmp::Reverse;

use ir::{HttpMatch, PathMatch};

/// A sort key: the route whose own hostname is more specific for the host first (see
/// [`ir::hostname::route_specificity`]); then exact paths, then regexes, then longer prefixes;
/// then a method, more headers, more query parameters; then the older route; then `member` (the
/// route's position in namespace/name order), rule and match order.
pub(crate) type PrecedenceKey =
    (Reverse<(u8, usize)>, u8, Reverse<usize>, bool, Reverse<usize>, Reverse<usize>, i64, usize, usize, usize);

/// Where a match sits among the routes of one host: the route's hostname specificity for the
/// host, its creation time and its position in namespace/name order.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RouteRank {
    pub hostname: (u8, usize),
    pub created: i64,
    pub member: usize,
}

/// The precedence key of one match of one route.
pub(crate) fn precedence_key(m: &HttpMatch, route: RouteRank, rule: usize, index: usize) -> PrecedenceKey {
    let (rank, len) = match &m.path {
        PathMatch::Exact(v) => (0, v.len()),
        PathMatch::Regex(v) => (1, v.len()),
        PathMatch::Prefix(v) => (2, v.trim_end_matches('/').len()),
        PathMatch::StringPrefix(v) => (2, v.len()),
    };
    (
        Reverse(route.hostname),
        rank,
        Reverse(len),
        m.method.is_none(),
        Reverse(m.headers.len()),
        Reverse(m.query.len()),
        route.created,
        route.member,
        rule,
        index,
    )
}
