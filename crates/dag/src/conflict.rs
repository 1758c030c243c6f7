//! Gateway API rules whose matches repeat an older rule's on the same virtual host.
//!
//! Upstream Contour drops such a rule and reports it on the route: Accepted=False with reason
//! RuleMatchConflict when every rule of the route is dropped, PartiallyInvalid=True with reason
//! RuleMatchPartiallyConflict when some are. Precedence would send the traffic to the older rule
//! anyway; dropping the rule and saying so tells its author why it never sees a request.

use std::sync::Arc;

use ir::HttpMatch;
use rustc_hash::FxHashMap;

/// Route kinds whose rules are checked (HTTPProxy and Ingress have their own duplicate rules).
fn checked(kind: &str) -> bool {
    matches!(kind, "HTTPRoute" | "GRPCRoute")
}

/// A rule dropped because a match of it repeats one kept before.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Conflict {
    /// The dropped rule: (position in `routes`, rule index).
    pub rule: (usize, usize),
    /// The kept rule it repeats, the same way.
    pub kept: (usize, usize),
}

/// The rules to drop. Routes are taken oldest first (then by namespace/name), rules in order; a
/// rule is dropped when any of its matches equals, condition for condition, a match of a rule
/// kept before it from a route of the same kind whose own hostname is as specific for the host
/// (`ranks`, per route). A route with a more specific hostname does not conflict with one with
/// a less specific hostname: it takes precedence over it.
pub(crate) fn conflicting_rules(routes: &[&Arc<ir::HttpRoute>], ranks: &[(u8, usize)]) -> Vec<Conflict> {
    let mut order: Vec<usize> = (0..routes.len()).filter(|&i| checked(routes[i].origin.kind)).collect();
    order.sort_by(|&a, &b| {
        let key = |i: usize| (routes[i].created, &routes[i].origin.namespace, &routes[i].origin.name);
        key(a).cmp(&key(b))
    });
    type Key<'a> = (&'a str, (u8, usize), HttpMatch);
    let mut kept: FxHashMap<Key<'_>, (usize, usize)> = FxHashMap::default();
    let mut dropped = Vec::new();
    for i in order {
        let route = routes[i];
        for (r, rule) in route.rules.iter().enumerate() {
            let keys: Vec<Key<'_>> = rule.matches.iter().map(|m| (route.origin.kind, ranks[i], canonical(m))).collect();
            match keys.iter().find_map(|k| kept.get(k)) {
                Some(&earlier) => dropped.push(Conflict { rule: (i, r), kept: earlier }),
                None => kept.extend(keys.into_iter().map(|k| (k, (i, r)))),
            }
        }
    }
    dropped
}

/// A match with its conditions in name order, so the order they were written in does not matter.
fn canonical(m: &HttpMatch) -> HttpMatch {
    let mut m = m.clone();
    m.headers.sort_by(|a, b| a.name.cmp(&b.name));
    m.query.sort_by(|a, b| a.name.cmp(&b.name));
    m
}
