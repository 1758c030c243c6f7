//! Roots by fqdn, kept between builds: a build with a few changed HTTPProxies moves their
//! claims and leaves the others in place, instead of filtering and sorting every proxy again.

use std::collections::BTreeSet;
use std::sync::Arc;

use objects::types::HTTPProxy;
use objects::{ObjectKey, Snapshot};

use super::Options;

/// More changed proxies than this share of all claims sort everything afresh.
const UPDATE_SHARE: usize = 16;

/// A root's claim of an fqdn.
#[derive(Debug, Clone)]
pub(super) struct Claim {
    /// Trimmed and lowercased.
    pub fqdn: String,
    pub key: ObjectKey,
    pub proxy: Arc<HTTPProxy>,
}

/// Every claim, by fqdn and then by key (claimants of one fqdn in namespace/name order).
#[derive(Debug, Default)]
pub(super) struct Claims {
    pub list: Vec<Claim>,
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
    Some(Claim { fqdn: vhost.fqdn.trim().to_ascii_lowercase(), key: key.clone(), proxy: Arc::clone(proxy) })
}

impl Claims {
    /// Every served root of `snapshot`.
    pub fn of(snapshot: &Snapshot, options: &Options) -> Self {
        let mut list: Vec<Claim> = snapshot.http_proxies.iter().filter_map(|(k, p)| claim(k, p, options)).collect();
        // Stable, and the proxies come in key order.
        list.sort_by(|a, b| a.fqdn.cmp(&b.fqdn));
        Self { list }
    }

    /// Brings the claims up to date with `snapshot`, given the keys of the HTTPProxies added,
    /// removed or replaced since they were; many changes sort afresh.
    pub fn update(&mut self, snapshot: &Snapshot, options: &Options, changed: &BTreeSet<ObjectKey>) {
        if changed.len() * UPDATE_SHARE > self.list.len() {
            *self = Self::of(snapshot, options);
            return;
        }
        self.list.retain(|c| !changed.contains(&c.key));
        for key in changed {
            let Some(claim) = snapshot.http_proxies.get_key_value(key).and_then(|(k, p)| claim(k, p, options)) else {
                continue;
            };
            let at = self.list.partition_point(|c| (c.fqdn.as_str(), &c.key) < (claim.fqdn.as_str(), &claim.key));
            self.list.insert(at, claim);
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
        claims.update(&after, &options, &changed);
        assert_eq!(listed(&claims), listed(&Claims::of(&after, &options)));
        let shared: Vec<_> = claims.list.iter().filter(|c| c.fqdn == "h09.example").map(|c| &c.key.name).collect();
        assert_eq!(shared, ["p05", "p30"], "claimants of one fqdn in key order");
    }
}
