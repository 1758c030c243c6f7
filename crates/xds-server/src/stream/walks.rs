//! Walks over two resource maps: what one has that the other does not, past the chunks both
//! share, and the version of a whole map.

use std::collections::BTreeSet;
use std::ops::ControlFlow;
use std::sync::Arc;

use xds::{Resource, Resources};

use crate::fleets::same_version;

/// Whether two maps hold the same names at the same versions, past the chunks they share.
pub(super) fn difference_empty(a: &Resources, b: &Resources) -> bool {
    let mut same = true;
    a.diff(b, same_version, |_, _, _| {
        same = false;
        ControlFlow::Break(())
    });
    same
}

pub(super) fn set_version(resources: &Resources) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for (n, r) in resources {
        n.hash(&mut h);
        r.version.hash(&mut h);
    }
    format!("{:016x}", h.finish())
}

/// The names `new` has and `old` does not, in key order: a walk over the chunks the two maps do
/// not share.
pub(super) fn added<'a>(old: &'a Resources, new: &'a Resources) -> impl Iterator<Item = &'a str> + 'a {
    let mut names = Vec::new();
    old.diff(
        new,
        |_, _| true,
        |name, before, _| {
            if before.is_none() {
                names.push(&**name);
            }
            ControlFlow::Continue(())
        },
    );
    names.into_iter()
}

/// What a stream must send to go from `sent` to `want`: the resources that are new, of another
/// version, or `forced`; and the names that went away, each in key order. A walk over the
/// chunks the two maps do not share: a build patches the map it served before, so a one-route
/// change at 50k clusters looks at one chunk.
pub(super) fn difference(
    sent: &Resources,
    want: &Resources,
    forced: &BTreeSet<Arc<str>>,
) -> (Vec<Resource>, Vec<Arc<str>>) {
    let (mut changed, mut removed) = (Vec::new(), Vec::new());
    sent.diff(want, same_version, |name, _, now| {
        match now {
            Some(r) => changed.push(r.clone()),
            None => removed.push(Arc::clone(name)),
        }
        ControlFlow::Continue(())
    });
    let extra: Vec<Resource> = forced
        .iter()
        .filter_map(|name| want.get(name))
        .filter(|r| sent.get(&r.name).is_some_and(|s| same_version(s, r)))
        .cloned()
        .collect();
    if !extra.is_empty() {
        changed.extend(extra);
        changed.sort_by(|a, b| a.name.cmp(&b.name));
    }
    (changed, removed)
}
