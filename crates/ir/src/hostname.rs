//! Gateway API hostname rules: how a listener's hostname and a route's hostnames combine.

use std::borrow::Cow;

/// The hostname a request must carry to reach a route hostname through a listener hostname, or
/// `None` when the two can never both match. `*.example.com` matches any name ending in
/// `.example.com`; with two wildcards the more specific one wins. Comparison ignores case.
pub fn intersect(listener: Option<&str>, route: &str) -> Option<String> {
    let route = route.to_ascii_lowercase();
    let Some(listener) = listener.map(str::to_ascii_lowercase) else {
        return Some(route);
    };
    if listener == route {
        return Some(route);
    }
    match (wildcard_suffix(&listener), wildcard_suffix(&route)) {
        (Some(l), Some(r)) if r.ends_with(l) => Some(route),
        (Some(l), Some(r)) if l.ends_with(r) => Some(listener),
        (Some(l), None) if route.ends_with(l) && route.len() > l.len() => Some(route),
        (None, Some(r)) if listener.ends_with(r) && listener.len() > r.len() => Some(listener),
        _ => None,
    }
}

/// Whether [`intersect`] would find a hostname, without allocating. Both names must already be
/// lower case (the front ends lower-case every hostname they read).
pub fn intersects(listener: Option<&str>, route: &str) -> bool {
    let Some(listener) = listener else { return true };
    if listener == route {
        return true;
    }
    match (wildcard_suffix(listener), wildcard_suffix(route)) {
        (Some(l), Some(r)) => r.ends_with(l) || l.ends_with(r),
        (Some(l), None) => route.ends_with(l) && route.len() > l.len(),
        (None, Some(r)) => listener.ends_with(r) && listener.len() > r.len(),
        (None, None) => false,
    }
}

/// The hostnames a route serves through a listener; `["*"]` when neither names any.
/// Sorted and without duplicates; see [`for_each_effective`] for the rules.
pub fn effective(listener: Option<&str>, route_hostnames: &[String]) -> Vec<String> {
    let mut names = Vec::new();
    for_each_effective(listener, route_hostnames, |name| names.push(name.into_owned()));
    names.sort();
    names.dedup();
    names
}

/// Calls `each` with every hostname a route serves through a listener, like [`effective`], but
/// borrowing where it can. Hostnames must already be lower case.
pub fn for_each_effective<'a>(
    listener: Option<&'a str>,
    route_hostnames: &'a [String],
    mut each: impl FnMut(Cow<'a, str>),
) {
    if route_hostnames.is_empty() {
        each(Cow::Borrowed(listener.unwrap_or("*")));
        return;
    }
    for h in route_hostnames {
        match listener {
            None => each(Cow::Borrowed(h)),
            Some(l) if l == h => each(Cow::Borrowed(h)),
            Some(l) if intersects(Some(l), h) => {
                if let Some(name) = intersect(Some(l), h) {
                    each(Cow::Owned(name));
                }
            }
            Some(_) => {}
        }
    }
}

/// What makes `name` no hostname a route or listener may carry, as the Gateway API's schema
/// defines one: a DNS subdomain (RFC 1123: lower-case labels of letters, digits and `-`, at
/// most 253 characters), optionally `*.` and such a subdomain, and never an IP address.
/// `None` when it is fine. The API server enforces this through the CRDs; objects read from a
/// directory are checked here, and Envoy refuses a virtual host whose domain breaks it.
pub fn problem(name: &str) -> Option<String> {
    if name.parse::<std::net::IpAddr>().is_ok() {
        return Some(format!("invalid hostname {name:?}: must be a DNS name, not an IP address"));
    }
    let rest = name.strip_prefix("*.").unwrap_or(name);
    let label_ok = |l: &str| {
        let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
        !l.is_empty()
            && l.len() <= 63
            && l.chars().all(|c| alnum(c) || c == '-')
            && l.starts_with(alnum)
            && l.ends_with(alnum)
    };
    if name.is_empty() || name.len() > 253 || !rest.split('.').all(label_ok) {
        let what = if name.starts_with('*') { "a wildcard DNS-1123 subdomain" } else { "a DNS-1123 subdomain" };
        return Some(format!(
            "invalid hostname {name:?}: must be {what}: lower-case alphanumeric characters, '-' or '.', \
             each label starting and ending with an alphanumeric character, at most 253 characters"
        ));
    }
    None
}

/// `.example.com` for `*.example.com`.
fn wildcard_suffix(name: &str) -> Option<&str> {
    name.strip_prefix('*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostnames_are_dns_subdomains_or_wildcards_of_one() {
        for ok in ["example.com", "*.example.com", "a-b.c0.example", "xn--bcher-kva.example.com", "localhost"] {
            assert_eq!(problem(ok), None, "{ok}");
        }
        let long = "a.".repeat(127) + "com";
        for bad in ["", "*", "*.", "foo.*.example.com", "-a.example.com", "a..b", "Example.com", "bücher.de", &long] {
            assert!(problem(bad).is_some(), "{bad:?}");
        }
        assert!(problem("10.0.0.1").unwrap().contains("not an IP address"));
        assert!(problem("::1").is_some());
    }

    #[test]
    fn intersections_follow_the_gateway_api() {
        assert_eq!(intersect(None, "Foo.example.com").as_deref(), Some("foo.example.com"));
        assert_eq!(intersect(Some("*.example.com"), "a.example.com").as_deref(), Some("a.example.com"));
        assert_eq!(intersect(Some("*.example.com"), "a.b.example.com").as_deref(), Some("a.b.example.com"));
        assert_eq!(intersect(Some("*.example.com"), "example.com"), None);
        assert_eq!(intersect(Some("a.example.com"), "*.example.com").as_deref(), Some("a.example.com"));
        assert_eq!(intersect(Some("*.example.com"), "*.a.example.com").as_deref(), Some("*.a.example.com"));
        assert_eq!(intersect(Some("*.a.example.com"), "*.example.com").as_deref(), Some("*.a.example.com"));
        assert_eq!(intersect(Some("a.example.com"), "b.example.com"), None);
        assert_eq!(effective(None, &[]), vec!["*".to_string()]);
        for (l, r) in
            [("*.example.com", "a.example.com"), ("a.example.com", "b.example.com"), ("*.example.com", "example.com")]
        {
            assert_eq!(intersects(Some(l), r), intersect(Some(l), r).is_some(), "{l} {r}");
        }
        assert_eq!(effective(Some("x.io"), &[]), vec!["x.io".to_string()]);
    }
}

/// Whether a listener hostname (`None`: any host) covers every host `host` stands for (`host`
/// may be a wildcard itself).
pub fn covers(listener: Option<&str>, host: &str) -> bool {
    match listener {
        None => true,
        Some(l) => match l.strip_prefix("*.") {
            Some(suffix) => host == l || host.ends_with(&format!(".{suffix}")),
            None => host == l,
        },
    }
}

/// How specific a listener hostname is: any host < wildcards (longer is more specific) < exact.
pub fn specificity(listener: Option<&str>) -> (u8, usize) {
    match listener {
        None => (0, 0),
        Some(l) if l.starts_with("*.") => (1, l.len()),
        Some(l) => (2, l.len()),
    }
}

/// How specific a route's own hostnames are for a host it reaches: the most specific of them
/// that covers `host`, ranked as [`specificity`] ranks listener hostnames; a route without
/// hostnames ranks lowest. Among routes that reach the same host (through one listener, where
/// the listener's hostname may be what they intersect to), the Gateway API gives precedence to
/// the route with the more specific hostname of its own, before comparing matches.
pub fn route_specificity(route_hostnames: &[String], host: &str) -> (u8, usize) {
    route_hostnames
        .iter()
        .filter(|h| covers(Some(h.as_str()), host))
        .map(|h| specificity(Some(h)))
        .max()
        .unwrap_or((0, 0))
}

#[cfg(test)]
mod isolation_tests {
    use super::*;

    #[test]
    fn covering_and_specificity() {
        assert!(covers(None, "a.example.com"));
        assert!(covers(Some("*.example.com"), "*.foo.example.com"));
        assert!(covers(Some("*.example.com"), "abc.foo.example.com"));
        assert!(!covers(Some("*.foo.example.com"), "*.example.com"));
        assert!(!covers(Some("*.example.com"), "example.com"));
        assert!(covers(Some("abc.example.com"), "abc.example.com"));
        assert!(specificity(Some("abc.foo.example.com")) > specificity(Some("*.foo.example.com")));
        assert!(specificity(Some("*.foo.example.com")) > specificity(Some("*.example.com")));
        assert!(specificity(Some("*.example.com")) > specificity(None));
    }

    #[test]
    fn a_route_ranks_by_its_most_specific_hostname_covering_the_host() {
        let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let host = "abc.example.com";
        let exact = route_specificity(&names(&["abc.example.com", "*.com"]), host);
        let wide = route_specificity(&names(&["*.example.com", "*.com"]), host);
        let wider = route_specificity(&names(&["*.com"]), host);
        assert_eq!(exact, (2, 15));
        assert!(exact > wide && wide > wider && wider > route_specificity(&[], host));
        // A hostname that does not cover the host is not counted.
        assert_eq!(route_specificity(&names(&["other.example.com", "*.com"]), host), wider);
        // A wildcard host is reached by wildcards only.
        assert_eq!(route_specificity(&names(&["*.example.com"]), "*.example.com"), (1, 13));
    }
}
