//! Route policies of HTTPProxy: header changes (with upstream's dynamic values), timeouts,
//! retries, load balancing, health checks and internal redirects.

use api::httpproxy::{
    HTTPHealthCheckPolicy, HTTPInternalRedirectPolicy, HeadersPolicy, LoadBalancerPolicy, RetryPolicy, TimeoutPolicy,
};
use ir::{CrossScheme, HashPolicy, HeaderModifier, HealthCheck, InternalRedirect, LoadBalancer};

/// The cookie upstream Contour's `Cookie` strategy uses for session affinity.
pub(super) const SESSION_COOKIE: &str = "X-Contour-Session-Affinity";
/// The Host header of health checks when the policy names none (upstream's).
const HEALTH_CHECK_HOST: &str = "contour-envoy-healthcheck";

/// Envoy's header variables that may appear in header values; any other `%` is escaped.
const ENVOY_VARIABLES: &[&str] = &[
    "DOWNSTREAM_REMOTE_ADDRESS",
    "DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT",
    "DOWNSTREAM_DIRECT_REMOTE_ADDRESS",
    "DOWNSTREAM_DIRECT_REMOTE_ADDRESS_WITHOUT_PORT",
    "DOWNSTREAM_LOCAL_ADDRESS",
    "DOWNSTREAM_LOCAL_ADDRESS_WITHOUT_PORT",
    "DOWNSTREAM_LOCAL_PORT",
    "DOWNSTREAM_LOCAL_URI_SAN",
    "DOWNSTREAM_PEER_URI_SAN",
    "DOWNSTREAM_LOCAL_SUBJECT",
    "DOWNSTREAM_PEER_SUBJECT",
    "DOWNSTREAM_PEER_ISSUER",
    "DOWNSTREAM_TLS_SESSION_ID",
    "DOWNSTREAM_TLS_CIPHER",
    "DOWNSTREAM_TLS_VERSION",
    "DOWNSTREAM_PEER_FINGERPRINT_256",
    "DOWNSTREAM_PEER_FINGERPRINT_1",
    "DOWNSTREAM_PEER_SERIAL",
    "DOWNSTREAM_PEER_CERT",
    "DOWNSTREAM_PEER_CERT_V_START",
    "DOWNSTREAM_PEER_CERT_V_END",
    "HOSTNAME",
    "PROTOCOL",
    "REQUESTED_SERVER_NAME",
    "RESPONSE_FLAGS",
    "RESPONSE_CODE_DETAILS",
    "START_TIME",
    "TLS_JA3_FINGERPRINT",
    "TLS_JA4_FINGERPRINT",
    "UPSTREAM_REMOTE_ADDRESS",
    "UPSTREAM_LOCAL_ADDRESS",
];

/// Values substituted for upstream's own variables in header values.
pub(crate) struct Variables<'a> {
    pub namespace: &'a str,
    /// `(name, port)` of the Service, for per-service policies.
    pub service: Option<(&'a str, u16)>,
}

/// A Gateway API header value for Envoy: Envoy's own variables pass, as upstream lets them,
/// and every other `%` is a literal one.
pub(crate) fn literal_header_value(value: &str) -> String {
    header_value_with(value, None)
}

/// A header value with upstream's variables replaced and unknown `%…%` escaped for Envoy.
fn header_value(value: &str, vars: &Variables<'_>) -> String {
    header_value_with(value, Some(vars))
}

fn header_value_with(value: &str, vars: Option<&Variables<'_>>) -> String {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(start) = rest.find('%') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let Some(end) = after.find('%') else {
            out.push_str("%%");
            rest = after;
            continue;
        };
        let name = &after[..end];
        let replacement = match (name, vars) {
            ("CONTOUR_NAMESPACE", Some(vars)) => Some(vars.namespace.to_string()),
            ("CONTOUR_SERVICE_NAME", Some(vars)) => vars.service.map(|(n, _)| n.to_string()),
            ("CONTOUR_SERVICE_PORT", Some(vars)) => vars.service.map(|(_, p)| p.to_string()),
            _ => None,
        };
        // Envoy refuses an operator whose argument list does not close.
        let call = |prefix: &str| name.starts_with(prefix) && name.ends_with(')');
        if let Some(r) = replacement {
            out.push_str(&r);
            rest = &after[end + 1..];
        } else if ENVOY_VARIABLES.contains(&name)
            || call("REQ(")
            || call("UPSTREAM_METADATA(")
            || call("DYNAMIC_METADATA(")
        {
            out.push('%');
            out.push_str(name);
            out.push('%');
            rest = &after[end + 1..];
        } else {
            // Not a variable Envoy should expand: a literal percent sign.
            out.push_str("%%");
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// `x-foo` → `X-Foo`, as Go's `http.CanonicalHeaderKey`.
fn canonical(name: &str) -> String {
    let mut upper = true;
    name.chars()
        .map(|c| {
            let out = if upper { c.to_ascii_uppercase() } else { c.to_ascii_lowercase() };
            upper = c == '-';
            out
        })
        .collect()
}

fn valid_header_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// No line breaks or other control characters (Envoy refuses them; they would split headers).
pub(super) fn valid_header_value(value: &str) -> bool {
    !value.bytes().any(|b| b.is_ascii_control() && b != b'\t') && ir::header_value_problem(value).is_none()
}

const HEADER_NAME_RULE: &str = "[a valid HTTP header must consist of alphanumeric characters or '-' (e.g. 'X-Header-Name', regex used for validation is '[-A-Za-z0-9]+')]";

/// A checked header policy: the modifier, and the Host rewrite a request policy may carry
/// (a literal, or `Err(header)` for `%REQ(header)%`).
pub(crate) struct Headers {
    pub modifier: HeaderModifier,
    pub host: Option<Result<String, String>>,
}

impl Headers {
    /// Adds the global policy's changes under these: a header this policy sets keeps its value,
    /// removals add up, and the global Host applies when this policy sets none.
    pub(crate) fn with_defaults(mut self, defaults: Headers) -> Headers {
        for (name, value) in defaults.modifier.set {
            if !self.modifier.set.iter().any(|(n, _)| *n == name) {
                self.modifier.set.push((name, value));
            }
        }
        for name in defaults.modifier.remove {
            if !self.modifier.remove.contains(&name) {
                self.modifier.remove.push(name);
            }
        }
        if self.host.is_none() {
            self.host = defaults.host;
        }
        self
    }
}

/// Checks and converts a headers policy; `request` allows a Host rewrite.
pub(crate) fn headers(policy: Option<&HeadersPolicy>, request: bool, vars: &Variables<'_>) -> Result<Headers, String> {
    let mut out = Headers { modifier: HeaderModifier::default(), host: None };
    let Some(policy) = policy else { return Ok(out) };
    let mut seen: Vec<String> = Vec::new();
    for h in policy.set.iter().flatten() {
        let key = canonical(&h.name);
        if seen.contains(&key) {
            return Err(format!("duplicate header addition: {key:?}"));
        }
        seen.push(key.clone());
        if key == "Host" {
            if !request {
                return Err(format!("rewriting {key:?} header is not supported"));
            }
            let value = h.value.trim();
            out.host = Some(match value.strip_prefix("%REQ(").and_then(|v| v.strip_suffix(")%")) {
                Some(header) => Err(header.to_string()),
                None => Ok(value.to_string()),
            });
            continue;
        }
        if !valid_header_name(&h.name) {
            return Err(format!("invalid set header {key:?}: {HEADER_NAME_RULE}"));
        }
        if !valid_header_value(&h.value) {
            return Err(format!("invalid set header {key:?}: [a header value must not contain control characters]"));
        }
        out.modifier.set.push((key, header_value(&h.value, vars)));
    }
    let mut removed: Vec<String> = Vec::new();
    for name in policy.remove.iter().flatten() {
        let key = canonical(name);
        if removed.contains(&key) {
            return Err(format!("duplicate header removal: {key:?}"));
        }
        if !valid_header_name(name) {
            return Err(format!("invalid remove header {key:?}: {HEADER_NAME_RULE}"));
        }
        removed.push(key.clone());
        out.modifier.remove.push(key);
    }
    Ok(out)
}

/// A Go duration (`1h2m`, `1.5s`, `250ms`, `10us`), `infinity`/`infinite` (disabled: `Some(0)`),
/// or empty/`0` for the default (`None`).
pub(crate) fn timeout(text: Option<&str>) -> Result<Option<u64>, String> {
    let Some(text) = text.map(str::trim).filter(|t| !t.is_empty() && *t != "0") else { return Ok(None) };
    if matches!(text, "infinity" | "infinite") {
        return Ok(Some(0));
    }
    go_duration_ms(text)
        .map(Some)
        .ok_or_else(|| format!("unable to parse timeout string {text:?}: time: invalid duration {text:?}"))
}

/// Milliseconds of a Go duration, rounded up so that a small non-zero value stays non-zero.
pub(super) fn go_duration_ms(text: &str) -> Option<u64> {
    duration::parse(text).map(|d| d.as_nanos().div_ceil(1_000_000) as u64)
}

/// Response, idle and idle-connection timeouts.
#[derive(Default)]
pub(crate) struct Timeouts {
    pub response: Option<u64>,
    pub idle: Option<u64>,
    pub idle_connection: Option<u64>,
}

pub(crate) fn timeouts(policy: Option<&TimeoutPolicy>) -> Result<Timeouts, String> {
    let Some(p) = policy else { return Ok(Timeouts { response: None, idle: None, idle_connection: None }) };
    Ok(Timeouts {
        response: timeout(p.response.as_deref()).map_err(|e| format!("error parsing response timeout: {e}"))?,
        idle: timeout(p.idle.as_deref()).map_err(|e| format!("error parsing idle timeout: {e}"))?,
        idle_connection: timeout(p.idle_connection.as_deref())
            .map_err(|e| format!("error parsing idle connection timeout: {e}"))?,
    })
}

/// The `retryOn` values upstream's schema allows (Envoy silently ignores any other).
const RETRY_ON: [&str; 13] = [
    "5xx",
    "gateway-error",
    "reset",
    "connect-failure",
    "retriable-4xx",
    "refused-stream",
    "retriable-status-codes",
    "retriable-headers",
    "cancelled",
    "deadline-exceeded",
    "internal",
    "resource-exhausted",
    "unavailable",
];

/// Retries: `count` 0 or unset means 1, -1 means none; `retryOn` defaults to `5xx`, and a
/// value outside upstream's list is refused.
pub(super) fn retry(policy: Option<&RetryPolicy>) -> Result<Option<ir::RetryPolicy>, String> {
    let Some(p) = policy else { return Ok(None) };
    if let Some(bad) = p.retry_on.iter().flatten().find(|r| !RETRY_ON.contains(&r.0.as_str())) {
        return Err(format!("invalid retryOn value {:?}: must be one of {}", bad.0, RETRY_ON.join(", ")));
    }
    let count = match p.count {
        Some(-1) => 0,
        Some(n) if n > 0 => u32::try_from(n).unwrap_or(u32::MAX),
        _ => 1,
    };
    let mut retry_on: Vec<String> = p.retry_on.iter().flatten().map(|r| r.0.clone()).collect();
    if retry_on.is_empty() {
        retry_on.push("5xx".into());
    }
    Ok(Some(ir::RetryPolicy {
        retry_on,
        count,
        per_try_timeout_ms: timeout(p.per_try_timeout.as_deref()).ok().flatten(),
        retriable_status_codes: p.retriable_status_codes.clone().unwrap_or_default(),
        backoff_ms: None,
    }))
}

/// The load balancer and hash policies, and warnings for hash policies that were dropped.
pub(super) fn load_balancer(policy: Option<&LoadBalancerPolicy>) -> (LoadBalancer, Vec<HashPolicy>, Vec<String>) {
    let Some(p) = policy else { return (LoadBalancer::RoundRobin, Vec::new(), Vec::new()) };
    match p.strategy.as_deref() {
        Some("WeightedLeastRequest") => (LoadBalancer::WeightedLeastRequest, Vec::new(), Vec::new()),
        Some("Random") => (LoadBalancer::Random, Vec::new(), Vec::new()),
        Some("Cookie") => {
            (LoadBalancer::RequestHash, vec![HashPolicy::Cookie { name: SESSION_COOKIE.into() }], Vec::new())
        }
        Some("RequestHash") => {
            let mut policies = Vec::new();
            let mut warnings = Vec::new();
            let mut source_ip = false;
            for h in p.request_hash_policies.iter().flatten() {
                let terminal = h.terminal.unwrap_or(false);
                let ip = h.hash_source_ip.unwrap_or(false);
                let set = usize::from(ip)
                    + usize::from(h.header_hash_options.is_some())
                    + usize::from(h.query_parameter_hash_options.is_some());
                if set != 1 {
                    warnings.push("ignoring invalid request hash policy, must set exactly one of hashSourceIP or headerHashOptions or queryParameterHashOptions".into());
                    continue;
                }
                if ip {
                    if source_ip {
                        warnings
                            .push("ignoring invalid request hash policy, hashSourceIP specified multiple times".into());
                        continue;
                    }
                    source_ip = true;
                    policies.push(HashPolicy::SourceIp { terminal });
                } else if let Some(o) = &h.header_hash_options {
                    let name = canonical(&o.header_name);
                    if !valid_header_name(&o.header_name) {
                        warnings.push(format!("ignoring invalid header hash policy options with invalid header name {name:?}: {HEADER_NAME_RULE}"));
                    } else if policies.iter().any(|p| matches!(p, HashPolicy::Header { name: n, .. } if *n == name)) {
                        warnings.push(format!(
                            "ignoring invalid header hash policy options with duplicated header name {name}"
                        ));
                    } else {
                        policies.push(HashPolicy::Header { name, terminal });
                    }
                } else if let Some(o) = &h.query_parameter_hash_options {
                    let name = o.parameter_name.clone();
                    if name.is_empty() {
                        warnings.push("ignoring invalid query parameter hash policy options with an invalid empty query parameter name".into());
                    } else if policies
                        .iter()
                        .any(|p| matches!(p, HashPolicy::QueryParameter { name: n, .. } if *n == name))
                    {
                        warnings.push(format!("ignoring invalid query parameter hash policy options with duplicated query parameter name {name}"));
                    } else {
                        policies.push(HashPolicy::QueryParameter { name, terminal });
                    }
                }
            }
            if policies.is_empty() {
                warnings.push("ignoring invalid request hash policy options, setting load balancer strategy to default RoundRobin".into());
                return (LoadBalancer::RoundRobin, Vec::new(), warnings);
            }
            (LoadBalancer::RequestHash, policies, warnings)
        }
        _ => (LoadBalancer::RoundRobin, Vec::new(), Vec::new()),
    }
}

/// Active HTTP health checking with upstream's defaults.
pub(super) fn health_check(policy: Option<&HTTPHealthCheckPolicy>) -> Result<Option<HealthCheck>, String> {
    let Some(p) = policy else { return Ok(None) };
    let positive =
        |v: Option<i64>, default: u32| v.filter(|v| *v > 0).map_or(default, |v| v.min(i64::from(u32::MAX)) as u32);
    if p.path.is_empty() {
        return Err("invalid health check path: it must not be empty".into());
    }
    for (what, value) in [("path", Some(&p.path)), ("host", p.host.as_ref())] {
        if let Some(problem) = value.and_then(|v| ir::header_value_problem(v)) {
            return Err(format!("invalid health check {what}: {problem}"));
        }
    }
    let mut expected_statuses = Vec::new();
    for r in p.expected_statuses.iter().flatten() {
        if !(100..=599).contains(&r.start) {
            return Err("invalid expected status range: start must be in the range [100, 599]".into());
        }
        if !(101..=600).contains(&r.end) {
            return Err("invalid expected status range: end must be in the range [101, 600]".into());
        }
        if r.start >= r.end {
            return Err("invalid expected status range: start must be less than end".into());
        }
        expected_statuses.push((r.start as u32, r.end as u32));
    }
    Ok(Some(HealthCheck {
        tcp: false,
        path: p.path.clone(),
        host: p.host.clone().filter(|h| !h.is_empty()).unwrap_or_else(|| HEALTH_CHECK_HOST.into()),
        interval_s: positive(p.interval_seconds, 5),
        timeout_s: positive(p.timeout_seconds, 2),
        unhealthy_threshold: positive(p.unhealthy_threshold_count, 3),
        healthy_threshold: positive(p.healthy_threshold_count, 2),
        expected_statuses,
    }))
}

/// A tcpproxy's active health check: a TCP connect, with upstream's defaults.
pub(super) fn tcp_health_check(policy: Option<&api::httpproxy::TCPHealthCheckPolicy>) -> Option<HealthCheck> {
    let p = policy?;
    let positive =
        |v: Option<i64>, default: u32| v.filter(|v| *v > 0).map_or(default, |v| v.min(i64::from(u32::MAX)) as u32);
    let count = |v: Option<u32>, default: u32| v.filter(|v| *v > 0).unwrap_or(default);
    Some(HealthCheck {
        tcp: true,
        path: String::new(),
        host: String::new(),
        interval_s: positive(p.interval_seconds, 5),
        timeout_s: positive(p.timeout_seconds, 2),
        unhealthy_threshold: count(p.unhealthy_threshold_count, 3),
        healthy_threshold: count(p.healthy_threshold_count, 2),
        expected_statuses: Vec::new(),
    })
}

/// Internal redirects Envoy follows for the client.
pub(super) fn internal_redirect(policy: Option<&HTTPInternalRedirectPolicy>) -> Option<InternalRedirect> {
    let p = policy?;
    Some(InternalRedirect {
        max: p.max_internal_redirects.unwrap_or(1),
        codes: p.redirect_response_codes.iter().flatten().map(|c| c.0).collect(),
        cross_scheme: match p.allow_cross_scheme_redirect.as_deref() {
            Some("Always") => CrossScheme::Always,
            Some("SafeOnly") => CrossScheme::SafeOnly,
            _ => CrossScheme::Never,
        },
        deny_repeated_route: p.deny_repeated_route_redirect.unwrap_or(false),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        assert_eq!(go_duration_ms("1h2m3s"), Some(3_723_000));
        assert_eq!(go_duration_ms("1.5s"), Some(1500));
        assert_eq!(go_duration_ms("250ms"), Some(250));
        assert_eq!(go_duration_ms("10us"), Some(1));
        assert_eq!(go_duration_ms("5m"), Some(300_000));
        assert_eq!(go_duration_ms("s"), None);
        assert_eq!(go_duration_ms("10x"), None);
        assert_eq!(go_duration_ms("2562047h"), Some(9_223_369_200_000));
        assert_eq!(go_duration_ms("100000000h"), None, "beyond Go's range");
        assert_eq!(timeout(Some("infinity")), Ok(Some(0)));
        assert_eq!(timeout(Some("0")), Ok(None));
        assert!(timeout(Some("forever")).unwrap_err().contains("unable to parse timeout string \"forever\""));
    }

    #[test]
    fn header_values_keep_envoy_variables_and_escape_the_rest() {
        let vars = Variables { namespace: "ns", service: Some(("svc", 80)) };
        assert_eq!(
            header_value("%CONTOUR_NAMESPACE%/%CONTOUR_SERVICE_NAME%:%CONTOUR_SERVICE_PORT%", &vars),
            "ns/svc:80"
        );
        assert_eq!(header_value("%HOSTNAME% %REQ(x-a)%", &vars), "%HOSTNAME% %REQ(x-a)%");
        assert_eq!(header_value("100% sure", &vars), "100%% sure");
        assert_eq!(header_value("%UNKNOWN%", &vars), "%%UNKNOWN%%");
        assert_eq!(header_value("%REQ(x%", &vars), "%%REQ(x%%");
        assert_eq!(literal_header_value("%CONTOUR_NAMESPACE% %REQ(x-a)% 5%"), "%%CONTOUR_NAMESPACE%% %REQ(x-a)% 5%%");
        assert_eq!(canonical("x-forwarded-FOR"), "X-Forwarded-For");
    }
}
