//! Which HTTPProxy statuses a pass looks at. The pipeline keeps an unchanged proxy's status as
//! the same `Arc`, so a pass walks the new list beside the previous one, in key order, and
//! compares pointers: only the proxies that differ (or whose last write did not settle) go on
//! to the digest comparison and the API server. At 10k proxies a new app changes one status,
//! and hashing all 10k on every pass took a sixth of the controller's CPU.

use std::collections::HashSet;
use std::sync::Arc;

use frontends::httpproxy::status::ProxyStatus;
use objects::ObjectKey;

/// The statuses as of the previous pass.
pub(crate) struct Previous {
    pub list: Arc<Vec<Arc<ProxyStatus>>>,
    /// A digest of the load balancer address written with them.
    pub address: Option<u64>,
    /// Proxies whose write did not settle in that pass: looked at again in the next.
    pub retry: HashSet<ObjectKey>,
}

/// What a pass looks at.
#[derive(Debug)]
pub(crate) enum Delta<'a> {
    /// Every proxy: no previous pass, or the address changed.
    All,
    /// Only these; the others are as they were.
    Some {
        changed: Vec<&'a Arc<ProxyStatus>>,
        /// Proxies in the previous list and not in this one.
        gone: Vec<ObjectKey>,
        /// How many are the same `Arc` as before.
        same: u64,
    },
}

/// Compares `list` with the previous pass's, both in key order (the pipeline's order).
pub(crate) fn delta<'a>(previous: Option<&Previous>, list: &'a [Arc<ProxyStatus>], address: Option<u64>) -> Delta<'a> {
    debug_assert!(list.windows(2).all(|w| w[0].key < w[1].key), "statuses in key order");
    let Some(previous) = previous.filter(|p| p.address == address) else { return Delta::All };
    let (mut changed, mut gone, mut same) = (Vec::new(), Vec::new(), 0);
    let mut before = previous.list.iter().peekable();
    for p in list {
        while let Some(b) = before.next_if(|b| b.key < p.key) {
            gone.push(b.key.clone());
        }
        match before.next_if(|b| b.key == p.key) {
            Some(b) if Arc::ptr_eq(b, p) && !previous.retry.contains(&p.key) => same += 1,
            _ => changed.push(p),
        }
    }
    gone.extend(before.map(|b| b.key.clone()));
    Delta::Some { changed, gone, same }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(name: &str, valid: bool) -> Arc<ProxyStatus> {
        Arc::new(ProxyStatus {
            key: ObjectKey::new("n", name),
            vhost: format!("{name}.example"),
            uid: name.into(),
            generation: 1,
            current_status: if valid { "valid" } else { "invalid" },
            description: String::new(),
            valid,
            reason: "Valid",
            message: String::new(),
            errors: Vec::new(),
            warnings: Vec::new(),
        })
    }

    fn names(changed: &[&Arc<ProxyStatus>]) -> Vec<String> {
        changed.iter().map(|p| p.key.name.clone()).collect()
    }

    #[test]
    fn only_proxies_whose_status_is_not_the_same_arc_are_looked_at() {
        let (a, b, c) = (status("a", true), status("b", true), status("c", true));
        let previous =
            Previous { list: Arc::new(vec![a.clone(), b.clone(), c.clone()]), address: None, retry: HashSet::new() };
        assert!(matches!(delta(None, &previous.list, None), Delta::All), "the first pass looks at every proxy");
        assert!(matches!(delta(Some(&previous), &previous.list, Some(1)), Delta::All), "so does a new address");

        // b recomputed (a new Arc, even if equal), c deleted, a0 and d new.
        let now = vec![a.clone(), status("a0", true), status("b", true), status("d", false)];
        let Delta::Some { changed, gone, same } = delta(Some(&previous), &now, None) else { panic!("a delta") };
        assert_eq!(names(&changed), ["a0", "b", "d"]);
        assert_eq!(gone, [ObjectKey::new("n", "c")]);
        assert_eq!(same, 1);

        // A proxy whose write did not settle is looked at again, though unchanged.
        let retry = Previous { retry: [ObjectKey::new("n", "a")].into(), ..previous };
        let Delta::Some { changed, gone, same } = delta(Some(&retry), &retry.list, None) else { panic!("a delta") };
        assert_eq!(names(&changed), ["a"]);
        assert!(gone.is_empty());
        assert_eq!(same, 2);
    }
}
