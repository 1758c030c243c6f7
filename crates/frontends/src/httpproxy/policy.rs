//! Route policies of HTTPProxy: retries, load balancing, health checks and internal redirects.
//! (Header changes and timeouts, which other front ends use too, are in [`crate::shared`].)

use api::httpproxy::{HTTPHealthCheckPolicy, HTTPInternalRedirectPolicy, LoadBalancerPolicy, RetryPolicy};
use ir::{CrossScheme, HashPolicy, HealthCheck, InternalRedirect, LoadBalancer};

use crate::shared::headers::{HEADER_NAME_RULE, canonical, valid_header_name};
use crate::shared::timeouts::timeout;

/// The cookie upstream Contour's `Cookie` strategy uses for session affinity.
pub(super) const SESSION_COOKIE: &str = "X-Contour-Session-Affinity";
/// The Host header of health checks when the policy names none (upstream's).
const HEALTH_CHECK_HOST: &str = "contour-envoy-healthcheck";

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
