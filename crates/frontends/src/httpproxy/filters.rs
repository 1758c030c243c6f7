//! HTTPProxy's traffic and access policies with upstream's checks and messages: CORS, IP and
//! location allow and deny lists, local rate limits, cookie rewriting. Each returns the IR policy, or the
//! message of the error upstream reports.

use std::net::IpAddr;

use api::httpproxy::{
    CORSPolicy, CookieRewritePolicy, FilterPolicies, GeoFilterPolicy, GlobalRateLimitPolicy, HeadersPolicy,
    IPFilterPolicy, LocalRateLimitPolicy,
};
use ir::{
    CookieRewrite, Cors, DescriptorEntry, GeoDimension, GeoRule, GlobalRateLimit, IpFilter, IpRule, LocalRateLimit,
    OriginMatch, reason,
};

use crate::shared::headers::{self, Variables};

/// `corsPolicy`, or why it does not parse (upstream's `PolicyDidNotParse` messages).
pub(super) fn cors(policy: &CORSPolicy) -> Result<Cors, String> {
    if policy.allow_origin.is_empty() {
        return Err("invalid allowed origin configuration with length 0".into());
    }
    let mut allow_origins = Vec::with_capacity(policy.allow_origin.len());
    for origin in &policy.allow_origin {
        allow_origins.push(allowed_origin(origin).map_err(|e| format!("invalid allowed origin {origin:?}: {e}"))?);
    }
    if policy.allow_methods.is_empty() {
        return Err("invalid allowed methods configuration with length 0".into());
    }
    let list = |values: &[String], what: &str| -> Result<Vec<String>, String> {
        match values.iter().find(|v| !valid_token(v)) {
            Some(bad) => Err(format!("invalid {what} {bad:?}")),
            None => Ok(values.to_vec()),
        }
    };
    let max_age_s = match policy.max_age.as_deref().filter(|a| !a.is_empty()) {
        None => None,
        Some(age) => {
            let d = duration::parse(age).ok_or_else(|| format!("unable to parse timeout string {age:?}"))?;
            Some(d.as_secs_f64().round() as u64)
        }
    };
    Ok(Cors {
        allow_origins,
        allow_methods: list(&policy.allow_methods, "allowed method")?,
        allow_headers: list(policy.allow_headers.as_deref().unwrap_or_default(), "allowed header")?,
        expose_headers: list(policy.expose_headers.as_deref().unwrap_or_default(), "exposed header")?,
        max_age_s,
        allow_credentials: policy.allow_credentials == Some(true),
        allow_private_network: policy.allow_private_network == Some(true),
        forward_unmatched_preflights: true,
    })
}

/// `*`, an exact origin (`scheme://host[:port]` and nothing else), or else a regular expression.
fn allowed_origin(origin: &str) -> Result<OriginMatch, String> {
    if origin == "*" || is_exact_origin(origin) {
        return Ok(OriginMatch::Exact(origin.to_string()));
    }
    crate::shared::regex::check_regex(origin.to_string())
        .map(OriginMatch::Regex)
        .map_err(|_| "allowed origin is invalid exact match and invalid regex match".to_string())
}

/// `scheme://host[:port]`: a scheme of letters, digits, `+`, `-`, `.`, then a host (and port)
/// without a path, query, fragment, user information or characters a host cannot have.
fn is_exact_origin(origin: &str) -> bool {
    let Some((scheme, host)) = origin.split_once("://") else { return false };
    let scheme_ok = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    let host_ok = !host.is_empty()
        && host.chars().all(|c| c.is_ascii_alphanumeric() || "-._~:[]".contains(c))
        && !host.starts_with(':');
    scheme_ok && host_ok
}

/// A method or header name: an HTTP token, which cannot break the comma-separated list Envoy
/// sends.
fn valid_token(value: &str) -> bool {
    !value.is_empty() && value.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Why an IP or location filter cannot be used: upstream's reason and message.
pub(super) struct IpFilterError {
    pub reason: &'static str,
    pub message: String,
    /// A location rule is at fault (not an address rule).
    pub geo: bool,
}

/// What location rules depend on: whether the virtual host terminates TLS (their filter is in
/// its connection manager), and the GeoIP databases configured.
#[derive(Clone, Copy)]
pub(super) struct GeoContext<'a> {
    pub tls: bool,
    pub databases: Option<&'a ir::GeoDatabases>,
}

/// The address and location lists of a virtual host or route: `None` when none is set. Bare
/// addresses are single-address ranges. Address and location rules of one scope are all allow
/// or all deny, and a request matches when it matches any of them.
pub(super) fn ip_filter(f: &FilterPolicies, geo: GeoContext<'_>) -> Result<Option<IpFilter>, IpFilterError> {
    let ip = ip_rules(f.ip_allow_policy.as_deref(), f.ip_deny_policy.as_deref())?;
    let locations = geo_rules(f.geo_allow_policy.as_deref(), f.geo_deny_policy.as_deref(), geo)?;
    match (ip, locations) {
        (None, None) => Ok(None),
        (Some((allow, rules)), None) => Ok(Some(IpFilter { allow, rules, geo: Vec::new() })),
        (None, Some((allow, geo))) => Ok(Some(IpFilter { allow, rules: Vec::new(), geo })),
        (Some((allow, rules)), Some((geo_allow, geo))) if allow == geo_allow => {
            Ok(Some(IpFilter { allow, rules, geo }))
        }
        (Some(_), Some(_)) => Err(IpFilterError {
            reason: reason::INCOMPATIBLE_IP_AND_GEO_FILTERS,
            message: "IP and geo rules of one scope must both be allow or both be deny".into(),
            geo: true,
        }),
    }
}

/// The one list of a scope's `<kind>AllowPolicy` and `<kind>DenyPolicy`, with whether it allows;
/// `None` when neither is set, an error when both are.
fn allow_or_deny<'p, T>(
    allow: Option<&'p [T]>,
    deny: Option<&'p [T]>,
    reason: &'static str,
    kind: &str,
    geo: bool,
) -> Result<Option<(bool, &'p [T])>, IpFilterError> {
    let (allow, deny) = (allow.unwrap_or_default(), deny.unwrap_or_default());
    match (allow.is_empty(), deny.is_empty()) {
        (false, false) => {
            let message = format!("cannot specify both `{kind}AllowPolicy` and `{kind}DenyPolicy`");
            Err(IpFilterError { reason, message, geo })
        }
        (false, true) => Ok(Some((true, allow))),
        (true, false) => Ok(Some((false, deny))),
        (true, true) => Ok(None),
    }
}

/// `ipAllowPolicy` / `ipDenyPolicy`: whether it allows, and the ranges.
fn ip_rules(
    allow: Option<&[IPFilterPolicy]>,
    deny: Option<&[IPFilterPolicy]>,
) -> Result<Option<(bool, Vec<IpRule>)>, IpFilterError> {
    let fail = |reason, message| Err(IpFilterError { reason, message, geo: false });
    let Some((is_allow, policies)) = allow_or_deny(allow, deny, reason::INCOMPATIBLE_IP_ADDRESS_FILTERS, "ip", false)?
    else {
        return Ok(None);
    };
    let mut rules = Vec::with_capacity(policies.len());
    for p in policies {
        let remote = match p.source.as_str() {
            "Remote" => true,
            "Peer" => false,
            other => {
                return fail(
                    reason::IP_FILTER_POLICY_NOT_VALID,
                    format!("{:?} is not a valid source: must be Peer or Remote", other),
                );
            }
        };
        let (address, prefix_len) = match cidr(&p.cidr) {
            Ok(range) => range,
            Err(e) => return fail(reason::INVALID_CIDR, format!("{} failed to parse: {e}", p.cidr)),
        };
        rules.push(IpRule { remote, address, prefix_len });
    }
    Ok(Some((is_allow, rules)))
}

/// `geoAllowPolicy` / `geoDenyPolicy`: whether it allows, and the locations. They need a TLS
/// virtual host and a database that fills each dimension (a rule nothing fills would never
/// match, leaving a deny list open).
fn geo_rules(
    allow: Option<&[GeoFilterPolicy]>,
    deny: Option<&[GeoFilterPolicy]>,
    context: GeoContext<'_>,
) -> Result<Option<(bool, Vec<GeoRule>)>, IpFilterError> {
    let fail = |reason, message| Err(IpFilterError { reason, message, geo: true });
    let Some((is_allow, policies)) = allow_or_deny(allow, deny, reason::INCOMPATIBLE_GEO_FILTERS, "geo", true)? else {
        return Ok(None);
    };
    if !context.tls {
        return fail(
            reason::GEO_FILTER_NOT_PERMITTED,
            "geo rules can only be defined for virtual hosts that terminate TLS".into(),
        );
    }
    let Some(databases) = context.databases else {
        let message = "geo rules need the GeoIP databases of ContourConfiguration spec.geoIP, which are not configured";
        return fail(reason::GEO_IP_NOT_CONFIGURED, message.into());
    };
    let mut rules = Vec::with_capacity(policies.len());
    for p in policies {
        let Some(dimension) = GeoDimension::ALL.into_iter().find(|d| d.name() == p.dimension) else {
            return fail(reason::GEO_FILTER_POLICY_NOT_VALID, format!("{:?} is not a valid dimension", p.dimension));
        };
        if p.value.is_empty() || p.value.chars().any(char::is_control) {
            return fail(
                reason::GEO_FILTER_POLICY_NOT_VALID,
                format!("{:?} is not a valid {} value", p.value, p.dimension),
            );
        }
        if !databases.fills(dimension) {
            let message = format!("no configured GeoIP database provides the {} dimension", p.dimension);
            return fail(reason::GEO_IP_NOT_CONFIGURED, message);
        }
        rules.push(GeoRule { dimension, value: p.value.clone() });
    }
    Ok(Some((is_allow, rules)))
}

/// An address range `a.b.c.d/n` or `x::y/n`, or one address; the host bits are cleared.
fn cidr(text: &str) -> Result<(IpAddr, u8), String> {
    let (address, len) = match text.split_once('/') {
        Some((a, l)) => (a, Some(l)),
        None => (text, None),
    };
    let address: IpAddr = address.parse().map_err(|_| format!("invalid CIDR address: {text}"))?;
    let max = if address.is_ipv4() { 32 } else { 128 };
    let len = match len {
        None => max,
        // Digits only: `u8::parse` would take `+8`, which Go refuses.
        Some(l) => l
            .parse::<u8>()
            .ok()
            .filter(|n| *n <= max && l.bytes().all(|b| b.is_ascii_digit()))
            .ok_or_else(|| format!("invalid CIDR address: {text}"))?,
    };
    let masked = match address {
        IpAddr::V4(a) => IpAddr::V4((u32::from(a) & u32::MAX.checked_shl(u32::from(32 - len)).unwrap_or(0)).into()),
        IpAddr::V6(a) => IpAddr::V6((u128::from(a) & u128::MAX.checked_shl(u32::from(128 - len)).unwrap_or(0)).into()),
    };
    Ok((masked, len))
}

/// `rateLimitPolicy.local`, with upstream's checks; `stat_prefix` names the limiter's statistics.
pub(super) fn local_rate_limit(policy: &LocalRateLimitPolicy, stat_prefix: String) -> Result<LocalRateLimit, String> {
    if policy.requests == 0 {
        return Err(format!("invalid requests value {} in local rate limit policy", policy.requests));
    }
    let fill_interval_s = match policy.unit.as_str() {
        "second" => 1,
        "minute" => 60,
        "hour" => 3600,
        other => return Err(format!("invalid unit {other:?} in local rate limit policy")),
    };
    let status = match policy.response_status_code {
        None | Some(0) => None,
        Some(code @ 400..=599) => Some(code as u16),
        Some(code) => return Err(format!("invalid response status code {code} in local rate limit policy")),
    };
    let headers = HeadersPolicy { set: policy.response_headers_to_add.clone(), remove: None };
    let vars = Variables { namespace: "", service: None };
    let headers = headers::headers(Some(&headers), false, &vars)?;
    let max_tokens = policy.requests.saturating_add(policy.burst.unwrap_or(0));
    Ok(LocalRateLimit {
        max_tokens,
        tokens_per_fill: policy.requests,
        fill_interval_s,
        status,
        response_headers: headers.modifier.set,
        stat_prefix,
    })
}

/// `rateLimitPolicy.global`: `None` when disabled or without descriptors; each entry must set
/// exactly one field (upstream's check and message).
pub(super) fn global_rate_limit(policy: &GlobalRateLimitPolicy) -> Result<Option<GlobalRateLimit>, String> {
    if policy.disabled == Some(true) {
        return Ok(None);
    }
    let mut descriptors = Vec::new();
    for d in policy.descriptors.iter().flatten() {
        let mut entries = Vec::new();
        for e in &d.entries {
            let set = usize::from(e.generic_key.is_some())
                + usize::from(e.request_header.is_some())
                + usize::from(e.request_header_value_match.is_some())
                + usize::from(e.remote_address.is_some());
            if set != 1 {
                return Err("rate limit descriptor entry must have exactly one field set".into());
            }
            let entry = if let Some(g) = &e.generic_key {
                DescriptorEntry::GenericKey { key: g.key.clone().unwrap_or_default(), value: g.value.clone() }
            } else if let Some(h) = &e.request_header {
                DescriptorEntry::RequestHeader {
                    header_name: h.header_name.clone(),
                    descriptor_key: h.descriptor_key.clone(),
                }
            } else if let Some(m) = &e.request_header_value_match {
                let headers = m.headers.iter().flatten().filter_map(super::conditions::header).collect();
                DescriptorEntry::HeaderValueMatch {
                    headers,
                    expect_match: m.expect_match.unwrap_or(true),
                    value: m.value.clone(),
                }
            } else {
                DescriptorEntry::RemoteAddress
            };
            entries.push(entry);
        }
        descriptors.push(entries);
    }
    Ok((!descriptors.is_empty()).then_some(GlobalRateLimit { descriptors }))
}

/// `cookieRewritePolicies` of a route or service (upstream's `CookieRewritePoliciesInvalid`
/// messages).
pub(super) fn cookie_rewrites(policies: Option<&[CookieRewritePolicy]>) -> Result<Vec<CookieRewrite>, String> {
    let mut out: Vec<CookieRewrite> = Vec::new();
    for p in policies.unwrap_or_default() {
        if out.iter().any(|c| c.name == p.name) {
            return Err(format!("duplicate cookie rewrite rule for cookie {:?}", p.name));
        }
        if p.name.is_empty() || !p.name.bytes().all(|b| b.is_ascii_graphic() && !b"()<>@,;:\\\"/[]?={}".contains(&b)) {
            return Err(format!("invalid cookie name {:?}", p.name));
        }
        let attribute = |value: Option<&String>, what: &str| -> Result<Option<String>, String> {
            match value {
                Some(v) if v.is_empty() || v.bytes().any(|b| b == b';' || b.is_ascii_control()) => {
                    Err(format!("invalid {what} {v:?} for cookie {:?}", p.name))
                }
                v => Ok(v.cloned()),
            }
        };
        let path = attribute(p.path_rewrite.as_ref().map(|r| &r.value), "path")?;
        let domain = attribute(p.domain_rewrite.as_ref().map(|r| &r.value), "domain")?;
        let same_site = match p.same_site.as_deref() {
            None => None,
            Some(s @ ("Strict" | "Lax" | "None")) => Some(s.to_string()),
            Some(other) => return Err(format!("invalid sameSite {other:?} for cookie {:?}", p.name)),
        };
        if path.is_none() && domain.is_none() && p.secure.is_none() && same_site.is_none() {
            return Err(format!("no attributes rewritten for cookie {:?}", p.name));
        }
        out.push(CookieRewrite { name: p.name.clone(), path, domain, secure: p.secure, same_site });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_exact_only_as_scheme_and_host() {
        let m = |o: &str| allowed_origin(o);
        assert_eq!(m("*"), Ok(OriginMatch::Exact("*".into())));
        assert_eq!(m("https://a.example.com"), Ok(OriginMatch::Exact("https://a.example.com".into())));
        assert_eq!(m("http://a.example.com:8080"), Ok(OriginMatch::Exact("http://a.example.com:8080".into())));
        assert_eq!(m("https://a.example.com/"), Ok(OriginMatch::Regex("https://a.example.com/".into())));
        assert_eq!(m(r"https://.*\.example\.com"), Ok(OriginMatch::Regex(r"https://.*\.example\.com".into())));
        assert!(m("https://(a.example.com").is_err());
    }

    #[test]
    fn cidrs_parse_as_go_does_and_lose_their_host_bits() {
        assert_eq!(cidr("10.1.2.3/8"), Ok(("10.0.0.0".parse().unwrap(), 8)));
        assert_eq!(cidr("10.1.2.3"), Ok(("10.1.2.3".parse().unwrap(), 32)));
        assert_eq!(cidr("10.1.2.3/0"), Ok(("0.0.0.0".parse().unwrap(), 0)));
        assert_eq!(cidr("2001:db8::1/32"), Ok(("2001:db8::".parse().unwrap(), 32)));
        assert_eq!(cidr("::1"), Ok(("::1".parse().unwrap(), 128)));
        for bad in ["10.1.2.3/33", "10.1.2/8", "::1/129", "10.0.0.0/+8", "10.0.0.0/", "nope"] {
            assert!(cidr(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn local_limits_add_the_burst_and_check_the_unit_and_code() {
        let p = |requests, unit: &str, burst, code| LocalRateLimitPolicy {
            requests,
            unit: unit.into(),
            burst,
            response_status_code: code,
            response_headers_to_add: None,
        };
        let l = local_rate_limit(&p(5, "minute", Some(2), Some(503)), "vhost.a".into()).unwrap();
        assert_eq!((l.max_tokens, l.tokens_per_fill, l.fill_interval_s, l.status), (7, 5, 60, Some(503)));
        assert!(local_rate_limit(&p(0, "second", None, None), String::new()).is_err());
        assert!(local_rate_limit(&p(1, "day", None, None), String::new()).is_err());
        assert!(local_rate_limit(&p(1, "second", None, Some(200)), String::new()).is_err());
        assert_eq!(
            local_rate_limit(&p(u32::MAX, "second", Some(9), None), String::new()).unwrap().max_tokens,
            u32::MAX
        );
    }
}
