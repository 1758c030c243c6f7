//! contour.yaml's settings of the services Envoy calls: global authorization, GeoIP data,
//! tracing and the rate-limit service.

use serde::Deserialize;

/// `globalExtAuth`: the authorization server every virtual host uses unless it names its own or
/// opts out.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GlobalExtAuth {
    /// The authorization server's ExtensionService, as `namespace/name`; setting it turns global
    /// authorization on. Every connection manager of the default fleet (plain HTTP too, as upstream) gets its
    /// ext_authz filter, unless its TLS virtual host names its own server; a virtual host opts out with
    /// `authorization.authPolicy.disabled: true`, and the redirect to HTTPS is never checked. A missing or
    /// invalid ExtensionService fails every HTTPProxy (`ExtensionServiceNotFound`), as upstream; a value
    /// without a namespace stops start-up. Default: none (off).
    /// ContourConfiguration: spec.globalExtAuth.extensionRef.
    pub extension_service: Option<String>,
    /// The server's protocol: `grpc`, or `http` (with `httpSettings`), as on a virtual host. Default: `grpc`.
    /// ContourConfiguration: spec.globalExtAuth.serviceType.
    pub service_type: Option<String>,
    /// Settings of an `http` server; with another `serviceType` they stop start-up.
    /// ContourConfiguration: spec.globalExtAuth.httpSettings.
    pub http_settings: Option<GlobalAuthHttpSettings>,
    /// Every route's default authorization policy: checks off, and context entries.
    /// ContourConfiguration: spec.globalExtAuth.authPolicy.
    pub auth_policy: Option<GlobalAuthPolicy>,
    /// How long a check may take: a Go duration or `infinity`; a bad value stops start-up. Default: Envoy's.
    /// ContourConfiguration: spec.globalExtAuth.responseTimeout.
    pub response_timeout: Option<String>,
    /// Lets requests through when the authorization server fails. Default: `false`.
    /// ContourConfiguration: spec.globalExtAuth.failOpen.
    pub fail_open: Option<bool>,
    /// Sends the request body to the server along with its headers. Default: off.
    /// ContourConfiguration: spec.globalExtAuth.withRequestBody.
    pub with_request_body: Option<GlobalAuthBody>,
}

/// `geoIP`: where GeoIP data comes from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GeoIp {
    /// Where GeoIP data comes from. ContourConfiguration: spec.geoIP.provider.
    pub provider: Option<GeoIpProvider>,
}

/// `geoIP.provider`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GeoIpProvider {
    /// MaxMind databases, as absolute paths on Envoy's file system; a path that is not absolute stops
    /// start-up. Without any, HTTPProxy's `geoAllowPolicy` and `geoDenyPolicy` are refused.
    /// ContourConfiguration: spec.geoIP.provider.maxMind.
    pub max_mind: Option<MaxMind>,
}

/// `geoIP.provider.maxMind`: database paths on Envoy's file system.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MaxMind {
    /// Path of the city database. Default: none.
    /// ContourConfiguration: spec.geoIP.provider.maxMind.cityDbPath.
    pub city_db_path: Option<String>,
    /// Path of the country database. Default: none.
    /// ContourConfiguration: spec.geoIP.provider.maxMind.countryDbPath.
    pub country_db_path: Option<String>,
    /// Path of the ASN database. Default: none. ContourConfiguration: spec.geoIP.provider.maxMind.asnDbPath.
    pub asn_db_path: Option<String>,
    /// Path of the ISP database. Default: none. ContourConfiguration: spec.geoIP.provider.maxMind.ispDbPath.
    pub isp_db_path: Option<String>,
    /// Path of the anonymous IP database. Default: none.
    /// ContourConfiguration: spec.geoIP.provider.maxMind.anonDbPath.
    pub anon_db_path: Option<String>,
}

/// `globalExtAuth.httpSettings`. Upstream decodes this struct without YAML tags, so its own
/// tooling writes the keys in lower case (`pathprefix`); both spellings are taken.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GlobalAuthHttpSettings {
    /// Put before the request's path in the authorization request; it must start with `/` (also spelled
    /// `pathprefix`). Default: none. ContourConfiguration: spec.globalExtAuth.httpSettings.pathPrefix.
    #[serde(alias = "pathprefix")]
    pub path_prefix: Option<String>,
    /// The client's headers sent to the authorization server, each named by a pattern (also spelled
    /// `allowedauthorizationheaders`).
    /// ContourConfiguration: spec.globalExtAuth.httpSettings.allowedAuthorizationHeaders.
    #[serde(alias = "allowedauthorizationheaders")]
    pub allowed_authorization_headers: Option<Vec<AllowedHeader>>,
    /// The authorization server's headers sent on to the backend, each named by a pattern (also spelled
    /// `allowedupstreamheaders`).
    /// ContourConfiguration: spec.globalExtAuth.httpSettings.allowedUpstreamHeaders.
    #[serde(alias = "allowedupstreamheaders")]
    pub allowed_upstream_headers: Option<Vec<AllowedHeader>>,
}

/// A header name condition of `globalExtAuth.httpSettings`: one of the four patterns (untagged
/// upstream too: `ignorecase` as well as `ignoreCase`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AllowedHeader {
    /// Names equal to this; set exactly one of `exact`, `prefix`, `suffix` and `contains`.
    pub exact: Option<String>,
    /// Names that start with this.
    pub prefix: Option<String>,
    /// Names that end with this.
    pub suffix: Option<String>,
    /// Names that contain this.
    pub contains: Option<String>,
    /// Compares without case (also spelled `ignorecase`). Default: `false`.
    #[serde(alias = "ignorecase")]
    pub ignore_case: Option<bool>,
}

/// `globalExtAuth.authPolicy`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GlobalAuthPolicy {
    /// Checks are off unless a virtual host or route turns them on. Default: `false`.
    /// ContourConfiguration: spec.globalExtAuth.authPolicy.disabled.
    pub disabled: Option<bool>,
    /// Context entries sent with every check. Default: none.
    /// ContourConfiguration: spec.globalExtAuth.authPolicy.context.
    pub context: Option<std::collections::BTreeMap<String, String>>,
}

/// `globalExtAuth.withRequestBody`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GlobalAuthBody {
    /// The most body bytes buffered and sent. Default: `1024`.
    /// ContourConfiguration: spec.globalExtAuth.withRequestBody.maxRequestBytes.
    pub max_request_bytes: Option<u32>,
    /// Sends what fits of a larger body. Default: `false`.
    /// ContourConfiguration: spec.globalExtAuth.withRequestBody.allowPartialMessage.
    pub allow_partial_message: Option<bool>,
    /// Sends the body as raw bytes rather than as text. Default: `false`.
    /// ContourConfiguration: spec.globalExtAuth.withRequestBody.packAsBytes.
    pub pack_as_bytes: Option<bool>,
}

/// `tracing`: spans of every request sent to an OpenTelemetry collector.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Tracing {
    /// Tags spans `podName` and `podNamespace`, from Envoy's `HOSTNAME` and `CONTOUR_NAMESPACE`.
    /// Default: `true`. ContourConfiguration: spec.tracing.includePodDetail.
    pub include_pod_detail: Option<bool>,
    /// The service name of the spans. Default: `contour`. ContourConfiguration: spec.tracing.serviceName.
    pub service_name: Option<String>,
    /// The percentage of requests traced, as text. As upstream, 0 means 100; an unparsable rate or one above
    /// 100 stops start-up (upstream reads it as 100, and Envoy would refuse it). Default: `100`.
    /// ContourConfiguration: spec.tracing.overallSampling.
    pub overall_sampling: Option<String>,
    /// The longest request path kept in a span's URL tag; a longer one is cut. Default: `256`.
    /// ContourConfiguration: spec.tracing.maxPathTagLength.
    pub max_path_tag_length: Option<u32>,
    /// Further tags of every span, each a literal or a request header's value; an empty or repeated `tagName`
    /// stops start-up. Default: none. ContourConfiguration: spec.tracing.customTags.
    pub custom_tags: Option<Vec<TracingCustomTag>>,
    /// The collector's ExtensionService, as `namespace/name`; required with `tracing`. Every connection
    /// manager of the default fleet traces requests with Envoy's OpenTelemetry tracer, sending spans over
    /// gRPC to it (its authority and response timeout, as upstream): a span per request and per upstream
    /// call, the trace context passed to backends. Until the ExtensionService is valid, traffic is served
    /// untraced and its own status says why, where upstream refuses to start. Default: none (off).
    /// ContourConfiguration: spec.tracing.extensionService.
    pub extension_service: Option<String>,
}

/// A tag of every span: a literal or a request header's value.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TracingCustomTag {
    /// The tag's name, required and unique. ContourConfiguration: spec.tracing.customTags[].tagName.
    pub tag_name: String,
    /// A literal value; set exactly one of this and `requestHeaderName`.
    /// ContourConfiguration: spec.tracing.customTags[].literal.
    pub literal: Option<String>,
    /// The request header whose value the tag takes; set exactly one of this and `literal`.
    /// ContourConfiguration: spec.tracing.customTags[].requestHeaderName.
    pub request_header_name: Option<String>,
}

/// `rateLimitService`: the service Envoy asks about global rate limits.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RateLimitService {
    /// The rate limit service's ExtensionService (envoyproxy/ratelimit's gRPC API), as `namespace/name`;
    /// setting it turns global rate limiting on. Every connection manager of the default fleet asks it about
    /// the descriptors of HTTPProxy's `rateLimitPolicy.global` (virtual host and route), with Envoy's default
    /// timeout (20 ms); a value without a namespace stops start-up. Default: none (off).
    /// ContourConfiguration: spec.rateLimitService.extensionService.
    pub extension_service: Option<String>,
    /// The rate limit domain of the calls. Default: empty.
    /// ContourConfiguration: spec.rateLimitService.domain.
    pub domain: Option<String>,
    /// Lets requests through when the service fails; failing closed answers 500. Default: `false`.
    /// ContourConfiguration: spec.rateLimitService.failOpen.
    pub fail_open: Option<bool>,
    /// Adds `X-RateLimit-*` headers to responses. Default: `false`.
    /// ContourConfiguration: spec.rateLimitService.enableXRateLimitHeaders.
    pub enable_x_rate_limit_headers: Option<bool>,
    /// Limited gRPC requests are answered RESOURCE_EXHAUSTED instead of UNAVAILABLE. Default: `false`.
    /// ContourConfiguration: spec.rateLimitService.enableResourceExhaustedCode.
    pub enable_resource_exhausted_code: Option<bool>,
    /// The global rate limit policy, in HTTPProxy's shape, of every virtual host without its own, unless it
    /// sets `global.disabled`. Lower-case keys of header conditions (`notpresent`, `ignorecase`,
    /// `treatmissingasempty`) are read as their camelCase spelling. Default: none.
    /// ContourConfiguration: spec.rateLimitService.defaultGlobalRateLimitPolicy.
    #[schemars(with = "Option<serde_json::Value>")]
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
