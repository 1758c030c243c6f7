//! Header changes with upstream's dynamic values (`%CONTOUR_NAMESPACE%` and friends) and
//! Envoy's own variables: HTTPProxy's header policies, the global header policy on Ingress
//! backends, and Gateway API's literal header values.

use api::httpproxy::HeadersPolicy;
use ir::HeaderModifier;

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
pub(crate) fn canonical(name: &str) -> String {
    let mut upper = true;
    name.chars()
        .map(|c| {
            let out = if upper { c.to_ascii_uppercase() } else { c.to_ascii_lowercase() };
            upper = c == '-';
            out
        })
        .collect()
}

pub(crate) fn valid_header_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// No line breaks or other control characters (Envoy refuses them; they would split headers).
pub(crate) fn valid_header_value(value: &str) -> bool {
    !value.bytes().any(|b| b.is_ascii_control() && b != b'\t') && ir::header_value_problem(value).is_none()
}

pub(crate) const HEADER_NAME_RULE: &str = "[a valid HTTP header must consist of alphanumeric characters or '-' (e.g. 'X-Header-Name', regex used for validation is '[-A-Za-z0-9]+')]";

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

/// The global header policy alone as a backend's options (for Ingress backends, which have no
/// policy of their own); `None` when it changes nothing or cannot be used.
pub(crate) fn backend_headers(
    defaults: &crate::DefaultHeaders,
    namespace: &str,
    service: &str,
    port: u16,
) -> Option<ir::BackendOptions> {
    let vars = Variables { namespace, service: Some((service, port)) };
    let request = headers(Some(&defaults.request), true, &vars).ok()?;
    let response = headers(Some(&defaults.response), false, &vars).ok()?;
    let options = ir::BackendOptions {
        request_headers: request.modifier,
        response_headers: response.modifier,
        host_rewrite: request.host.and_then(Result::ok),
        ..Default::default()
    };
    (options != ir::BackendOptions::default()).then_some(options)
}

#[cfg(test)]
mod tests {
    use super::*;

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
