//! Gateway API route precedence within a virtual host.

use std::cmp::Ordering;

use ir::{HttpMatch, PathMatch};

/// Everything that decides where a match sits in its virtual host.
#[derive(Debug, Clone)]
pub(crate) struct Precedence<'a> {
    pub matcher: &'a HttpMatch,
    pub created: i64,
    pub namespace: &'a str,
    pub name: &'a str,
    pub rule: usize,
    pub index: usize,
}

/// Exact paths first, then regexes, then longer prefixes; then method, more headers, more
/// query parameters; then the older route, the route first by namespace/name, and rule order.
pub(crate) fn compare(a: &Precedence<'_>, b: &Precedence<'_>) -> Ordering {
    fn path_rank(p: &PathMatch) -> (u8, std::cmp::Reverse<usize>) {
        match p {
            PathMatch::Exact(v) => (0, std::cmp::Reverse(v.len())),
            PathMatch::Regex(v) => (1, std::cmp::Reverse(v.len())),
            PathMatch::Prefix(v) => (2, std::cmp::Reverse(v.trim_end_matches('/').len())),
        }
    }
    path_rank(&a.matcher.path)
        .cmp(&path_rank(&b.matcher.path))
        .then_with(|| b.matcher.method.is_some().cmp(&a.matcher.method.is_some()))
        .then_with(|| b.matcher.headers.len().cmp(&a.matcher.headers.len()))
        .then_with(|| b.matcher.query.len().cmp(&a.matcher.query.len()))
        .then_with(|| a.created.cmp(&b.created))
        .then_with(|| (a.namespace, a.name).cmp(&(b.namespace, b.name)))
        .then_with(|| (a.rule, a.index).cmp(&(b.rule, b.index)))
}
