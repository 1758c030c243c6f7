//! Gateway API route precedence within a virtual host.

use std::cmp::Reverse;

use ir::{HttpMatch, PathMatch};

/// A sort key: exact paths first, then regexes, then longer prefixes; then a method, more
/// headers, more query parameters; then the older route; then `member` (the route's position in
/// namespace/name order), rule and match order.
pub(crate) type PrecedenceKey = (u8, Reverse<usize>, bool, Reverse<usize>, Reverse<usize>, i64, usize, usize, usize);

/// The precedence key of one match of one route.
pub(crate) fn precedence_key(m: &HttpMatch, created: i64, member: usize, rule: usize, index: usize) -> PrecedenceKey {
    let (rank, len) = match &m.path {
        PathMatch::Exact(v) => (0, v.len()),
        PathMatch::Regex(v) => (1, v.len()),
        PathMatch::Prefix(v) => (2, v.trim_end_matches('/').len()),
        PathMatch::StringPrefix(v) => (2, v.len()),
    };
    (
        rank,
        Reverse(len),
        m.method.is_none(),
        Reverse(m.headers.len()),
        Reverse(m.query.len()),
        created,
        member,
        rule,
        index,
    )
}
