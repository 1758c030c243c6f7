//! Roots by fqdn, kept between builds: a build with a few changed HTTPProxies moves their
//! claims and leaves the others in place, instead of filtering and sorting every proxy again.
//! Each claim carries its root's cached translation, and the served proxies without a virtual
//! host (the candidates for orphans) are kept beside them, so a build walks neither the
//! snapshot's proxies nor a map keyed by name.

use std::collections::BTreeSet;
use std::sync::Arc;

use objects::types::HTTPProxy;
use objects::{ObjectKey, Snapshot};

use super::Options;

/// More changed proxies than this share of all claims sort everything afresh.
const UPDATE_SHARE: usize = 16;

/// A root's claim of an fqdn.
#[derive(Debug)]
pub(super) struct Claim {
    /// Trimmed and lowercased.
    pub fqdn: String,
    /// A hash of `fqdn`, beside it in the list: each build groups 50k claims by fqdn, and
    /// comparing the strings themselves cost a cache miss each.
    pub fqdn_hash: u64,
    pub key: ObjectKey,
    pub proxy: Arc<HTTPProxy>,
    /// The root's translation, when the last build made or checked it.
    pub root: Option<super::CachedRoot>,
}

/// Every claim, by fqdn and then by key (claimants of one fqdn in namespace/name order).
#[derive(Debug, Default)]
pub(super) struct Claims {
    pub list: Vec<Claim>,
    /// Served proxies without a virtual host: reached through includes, or orphans.
    pub children: BTreeSet<ObjectKey>,
}

/// Whether `proxy` is one this controller serves (its ingress class).
pub(super) fn served(proxy: &HTTPProxy, options: &Options) -> bool {
    crate::class::is_served(
        crate::class::of(&proxy.metadata, proxy.spec.ingress_class_name.as_deref()),
        &options.class_names,
    )
}

/// The claim of a served proxy with a virtual host.
fn claim(key: &ObjectKey, proxy: &Arc<HTTPProxy>, options: &Options) -> Option<Claim> {
    let vhost = proxy.spec.virtualhost.as_ref()?;
    if !served(proxy, options) {
        return None;
    }
    let fqdn = vhost.fqdn.trim().to_ascii_lowercase();
    let fqdn_hash = {
        use std::hash::{Hash, Hasher};
        let mut h = rustc_hash::FxHasher::default();
        fqdn.hash(&mut h);
        h.finish()
    };
    Some(Claim { fqdn, fqdn_hash, key: key.clone(), proxy: Arc::clone(proxy), root: None })
}

/// Whether `proxy` is a served proxy without a virtual host.
fn child(proxy: &HTTPProxy, options: &Options) -> bool {
    proxy.spec.virtualhost.is_none() && served(proxy, options)
}

impl Claims {
    /// Every served root of `snapshot`.
    pub fn of(snapshot: &Snapshot, options: &Options) -> Self {
        let mut list: Vec<Claim> = snapshot.http_proxies.iter().filter_map(|(k, p)| claim(k, p, options)).collect();
        // Stable, and the proxies come in key order.
        list.sort_by(|a, b| a.fqdn.cmp(&b.fqdn));
        let children =
            snapshot.http_proxies.iter().filter(|(_, p)| child(p, options)).map(|(k, _)| k.clone()).collect();
        Self { list, children }
    }

    /// Brings the claims up to date with `snapshot`, given the keys of the HTTPProxies added,
    /// removed or replaced since they were; many changes sort afresh.
    pub fn update(&mut self, snapshot: &Snapshot, options: &Options, changed: &BTreeSet<ObjectKey>) {
        if changed.len() * UPDATE_SHARE > self.list.len() {
            let before = std::mem::replace(self, Self::of(snapshot, options));
            self.keep_roots(before.list);
            return;
        }
        self.list.retain(|c| !changed.contains(&c.key));
        for key in changed {
            self.children.remove(key);
            let Some((key, proxy)) = snapshot.http_proxies.get_key_value(key) else { continue };
            if child(proxy, options) {
                self.children.insert(key.clone());
            }
            let Some(claim) = claim(key, proxy, options) else {
                continue;
            };
            let at = self.list.partition_point(|c| (c.fqdn.as_str(), &c.key) < (claim.fqdn.as_str(), &claim.key));
            self.list.insert(at, claim);
        }
    }

    /// Moves the cached translations of `before`'s claims (sorted as these are) to the same
    /// claims here: a root's cache checks its own reads, the proxy among them.
    fn keep_roots(&mut self, before: Vec<Claim>) {
        let mut before = before.into_iter().peekable();
        for claim in &mut self.list {
            while let Some(old) = before.next_if(|o| (o.fqdn.as_str(), &o.key) <= (claim.fqdn.as_str(), &claim.key)) {
                if old.key == claim.key && old.fqdn == claim.fqdn {
                    claim.root = old.root;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proxy(name: &str, fqdn: Option<&str>) -> String {
        let vhost = fqdn.map(|f| format!("  virtualhost: {{fqdn: {f}}}\n")).unwrap_or_default();
        format!(
            "apiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {{name: {name}, namespace: n}}\nspec:\n{vhost}  routes: []\n---\n"
        )
    }

    fn listed(claims: &Claims) -> Vec<(String, String)> {
        claims.list.iter().map(|c| (c.fqdn.clone(), c.key.name.clone())).collect()
    }

    #[test]
    fn updated_claims_are_the_claims_sorted_afresh() {
        let options = Options::default();
        let mut yaml: String =
            (0..40).map(|i| proxy(&format!("p{i:02}"), Some(&format!("h{:02}.example", 39 - i)))).collect();
        yaml.push_str(&proxy("child", None));
        let before = Snapshot::from_yaml(&yaml).expect("fixture");
        let mut claims = Claims::of(&before, &options);
        assert_eq!(claims.list.len(), 40, "a proxy without a virtual host claims nothing");
        assert_eq!(claims.list[0].fqdn, "h00.example");

        // p05 moves to another fqdn (upper case, shared with p30), p06 goes, p40 comes, child
        // becomes a root.
        let after_yaml = yaml
            .replace(&proxy("p05", Some("h34.example")), &proxy("p05", Some(" H09.Example ")))
            .replace(&proxy("p06", Some("h33.example")), "")
            .replace(&proxy("child", None), &proxy("child", Some("h99.example")))
            + &proxy("p40", Some("a.example"));
        let after = Snapshot::from_yaml(&after_yaml).expect("fixture");
        let changed: BTreeSet<ObjectKey> =
            ["p05", "p06", "p40", "child"].into_iter().map(|n| ObjectKey::new("n", n)).collect();
        assert_eq!(claims.children, BTreeSet::from([ObjectKey::new("n", "child")]));
        for claim in &mut claims.list {
            claim.root = Some(super::super::CachedRoot::default());
        }
        // Four changes of 40 claims: sorted afresh, the unchanged roots' caches moved over.
        claims.update(&after, &options, &changed);
        let cached: Vec<&str> = claims.list.iter().filter(|c| c.root.is_some()).map(|c| c.key.name.as_str()).collect();
        assert_eq!(cached.len(), 38, "every claim but the changed ones keeps its root: {cached:?}");
        assert!(!cached.iter().any(|n| ["p05", "p40", "child"].contains(n)));
        let fresh = Claims::of(&after, &options);
        assert_eq!(listed(&claims), listed(&fresh));
        assert!(claims.children.is_empty(), "the child became a root");
        assert_eq!(claims.children, fresh.children);
        let shared: Vec<_> = claims.list.iter().filter(|c| c.fqdn == "h09.example").map(|c| &c.key.name).collect();
        assert_eq!(shared, ["p05", "p30"], "claimants of one fqdn in key order");
    }
}
