//! contour.yaml's settings of the services Envoy calls: global authorization, GeoIP data,
//! tracing and the rate-limit service.

use serde::Deserialize;

/// `globalExtAuth`: the authorization server every virtual host uses unless it names its own or
/// opts out.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GlobalExtAuth {
    /// The ExtensionService, `namespace/name`.
    pub extension_service: Option<String>,
    /// `grpc` (the default) or `http`.
    pub service_type: Option<String>,
    /// Settings of an `http` server.
    pub http_settings: Option<GlobalAuthHttpSettings>,
    /// Defaults of every route: checks off, context entries.
    pub auth_policy: Option<GlobalAuthPolicy>,
    /// How long a check may take (a Go duration or `infinity`).
    pub response_timeout: Option<String>,
    /// Let requests through when the server fails.
    pub fail_open: Option<bool>,
    /// Send the request body along.
    pub with_request_body: Option<GlobalAuthBody>,
}

/// `geoIP`: where GeoIP data comes from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeoIp {
    /// The provider.
    pub provider: Option<GeoIpProvider>,
}

/// `geoIP.provider`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GeoIpProvider {
    /// MaxMind databases.
    pub max_mind: Option<MaxMind>,
}

/// `geoIP.provider.maxMind`: database paths on Envoy's file system.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MaxMind {
    /// City database.
    pub city_db_path: Option<String>,
    /// Country database.
    pub country_db_path: Option<String>,
    /// ASN database.
    pub asn_db_path: Option<String>,
    /// ISP database.
    pub isp_db_path: Option<String>,
    /// Anonymous IP database.
    pub anon_db_path: Option<String>,
}

/// `globalExtAuth.httpSettings`. Upstream decodes this struct without YAML tags, so its own
/// tooling writes the keys in lower case (`pathprefix`); both spellings are taken.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GlobalAuthHttpSettings {
    /// Put before the request's path.
    #[serde(alias = "pathprefix")]
    pub path_prefix: Option<String>,
    /// Client headers sent to the server.
    #[serde(alias = "allowedauthorizationheaders")]
    pub allowed_authorization_headers: Option<Vec<AllowedHeader>>,
    /// The server's headers sent upstream.
    #[serde(alias = "allowedupstreamheaders")]
    pub allowed_upstream_headers: Option<Vec<AllowedHeader>>,
}

/// A header name condition of `globalExtAuth.httpSettings`: one of the four patterns (untagged
/// upstream too: `ignorecase` as well as `ignoreCase`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AllowedHeader {
    /// Equal to.
    pub exact: Option<String>,
    /// Starts with.
    pub prefix: Option<String>,
    /// Ends with.
    pub suffix: Option<String>,
    /// Contains.
    pub contains: Option<String>,
    /// Compare without case.
    #[serde(alias = "ignorecase")]
    pub ignore_case: Option<bool>,
}

/// `globalExtAuth.authPolicy`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GlobalAuthPolicy {
    /// Checks off unless a virtual host or route turns them on.
    pub disabled: Option<bool>,
    /// Context entries of every check.
    pub context: Option<std::collections::BTreeMap<String, String>>,
}

/// `globalExtAuth.withRequestBody`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GlobalAuthBody {
    /// The most bytes buffered (1024).
    pub max_request_bytes: Option<u32>,
    /// Send what fits of a larger body.
    pub allow_partial_message: Option<bool>,
    /// Send the body as bytes.
    pub pack_as_bytes: Option<bool>,
}

/// `tracing`: spans of every request sent to an OpenTelemetry collector.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Tracing {
    /// Tag spans with the Envoy pod's name and namespace (true).
    pub include_pod_detail: Option<bool>,
    /// The service name of the spans (contour).
    pub service_name: Option<String>,
    /// The percentage of requests traced ("100").
    pub overall_sampling: Option<String>,
    /// The longest request path kept in the URL tag (256).
    pub max_path_tag_length: Option<u32>,
    /// Extra tags.
    pub custom_tags: Option<Vec<TracingCustomTag>>,
    /// The collector's ExtensionService, `namespace/name`.
    pub extension_service: Option<String>,
}

/// A tag of every span: a literal or a request header's value.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TracingCustomTag {
    /// The tag.
    pub tag_name: String,
    /// A literal value.
    pub literal: Option<String>,
    /// The request header whose value it takes.
    pub request_header_name: Option<String>,
}

/// `rateLimitService`: the service Envoy asks about global rate limits.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RateLimitService {
    /// The ExtensionService, `namespace/name`.
    pub extension_service: Option<String>,
    /// The rate-limit domain.
    pub domain: Option<String>,
    /// Let requests through when the service fails.
    pub fail_open: Option<bool>,
    /// Send `X-RateLimit-*` headers.
    pub enable_x_rate_limit_headers: Option<bool>,
    /// RESOURCE_EXHAUSTED for limited gRPC requests.
    pub enable_resource_exhausted_code: Option<bool>,
    /// The global rate limit policy of every virtual host without one (HTTPProxy's shape).
    pub default_global_rate_limit_policy: Option<serde_yaml::Value>,
}

impl RateLimitService {
    /// `defaultGlobalRateLimitPolicy` in the caller's type; the error says why it does not fit.
    /// The header conditions of `requestHeaderValueMatch` have no YAML tags upstream, so its
    /// tooling writes their keys in lower case (`notpresent`, `ignorecase`,
    /// `treatmissingasempty`): they are read as the HTTPProxy's camelCase keys.
    pub fn default_policy<T: serde::de::DeserializeOwned>(&self) -> Result<Option<T>, String> {
        let mut policy = self.default_global_rate_limit_policy.clone();
        if let Some(policy) = &mut policy {
            camel_case_header_conditions(policy);
        }
        policy.map(serde_yaml::from_value).transpose().map_err(|e| e.to_string())
    }
}

/// The keys of a header condition that upstream's YAML decoding spells in lower case, and the
/// HTTPProxy's spelling of each.
const LOWER_CASE_HEADER_KEYS: [(&str, &str); 2] =
    [("ignorecase", "ignoreCase"), ("treatmissingasempty", "treatMissingAsEmpty")];

/// Renames the lower-case keys of every `descriptors[].entries[].requestHeaderValueMatch.headers[]`
/// of a rate limit policy to the HTTPProxy's spelling (a key already in camelCase wins).
fn camel_case_header_conditions(policy: &mut serde_yaml::Value) {
    let Some(descriptors) = policy.get_mut("descriptors").and_then(|d| d.as_sequence_mut()) else { return };
    let entries = descriptors.iter_mut().filter_map(|d| d.get_mut("entries")?.as_sequence_mut()).flatten();
    let headers = entries.filter_map(|e| e.get_mut("requestHeaderValueMatch")?.get_mut("headers")?.as_sequence_mut());
    for header in headers.flatten().filter_map(|h| h.as_mapping_mut()) {
        for (lower, camel) in LOWER_CASE_HEADER_KEYS {
            if let Some(value) = header.remove(lower) {
                header.entry(camel.into()).or_insert(value);
            }
        }
    }
}
