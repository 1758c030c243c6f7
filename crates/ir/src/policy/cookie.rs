//! Rewriting the attributes of cookies a backend sets (HTTPProxy's `cookieRewritePolicies`).

/// Attribute changes for the `Set-Cookie` answers of one cookie; unset fields keep the
/// backend's attribute.
#[derive(Debug, serde::Serialize, Clone, PartialEq, Eq, Hash)]
pub struct CookieRewrite {
    /// The cookie's name.
    pub name: String,
    /// The new `Path`.
    pub path: Option<String>,
    /// The new `Domain`.
    pub domain: Option<String>,
    /// Add (true) or remove (false) `Secure`.
    pub secure: Option<bool>,
    /// The new `SameSite`: `Strict`, `Lax` or `None`.
    pub same_site: Option<String>,
}

/// `route` followed by `backend`, merged by cookie name (a backend's attribute wins), in order
/// of first appearance.
pub fn merge_cookie_rewrites(route: &[CookieRewrite], backend: &[CookieRewrite]) -> Vec<CookieRewrite> {
    let mut out: Vec<CookieRewrite> = Vec::new();
    for c in route.iter().chain(backend) {
        match out.iter_mut().find(|o| o.name == c.name) {
            Some(o) => {
                o.path = c.path.clone().or(o.path.take());
                o.domain = c.domain.clone().or(o.domain.take());
                o.secure = c.secure.or(o.secure);
                o.same_site = c.same_site.clone().or(o.same_site.take());
            }
            None => out.push(c.clone()),
        }
    }
    out
}
