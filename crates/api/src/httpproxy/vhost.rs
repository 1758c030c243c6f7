//! The virtual host of a root HTTPProxy: FQDN, TLS, authorization, CORS, JWT and filters.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{DURATION, DURATION_OR_INFINITY, DURATION_OR_ZERO, RateLimitPolicy, UpstreamValidation};

// Policies most virtual hosts leave unset are boxed, as a route's are (memory at 10k proxies).
/// The fully qualified domain name and the settings that apply to all of its routes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VirtualHost {
    /// The fully qualified domain name; `*.` may lead for a wildcard.
    #[schemars(pattern(r"^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"))]
    pub fqdn: String,
    /// TLS termination or passthrough.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<Box<TLS>>,
    /// External authorization for every route.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authorization: Option<Box<AuthorizationServer>>,
    /// CORS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cors_policy: Option<Box<CORSPolicy>>,
    /// Rate limits for every route.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit_policy: Option<Box<RateLimitPolicy>>,
    /// JWT providers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jwt_providers: Option<Vec<JWTProvider>>,
    /// Address and location filters.
    #[serde(flatten)]
    pub filters: FilterPolicies,
    /// OpenID Connect login for every route (TLS virtual hosts only): a browser without a
    /// session is sent to the provider to log in, and comes back with a session cookie. A
    /// contour-rs extension: upstream Contour has no such field.
    #[serde(default, rename = "oidc", skip_serializing_if = "Option::is_none")]
    pub oidc: Option<Box<super::OIDC>>,
    /// Custom error pages: answers with these status codes get this body instead, for every
    /// route (a route's own pages are tried first). A contour-rs extension: upstream Contour
    /// has no such field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 16))]
    pub error_pages: Option<Vec<super::ErrorPage>>,
}

/// Address and location filters, on a virtual host or a route (a route's replace the host's).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FilterPolicies {
    /// Addresses allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_allow_policy: Option<Vec<IPFilterPolicy>>,
    /// Addresses denied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_deny_policy: Option<Vec<IPFilterPolicy>>,
    /// Locations allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub geo_allow_policy: Option<Vec<GeoFilterPolicy>>,
    /// Locations denied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub geo_deny_policy: Option<Vec<GeoFilterPolicy>>,
}

/// TLS settings of a virtual host.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[allow(clippy::upper_case_acronyms)]
pub struct TLS {
    /// The certificate Secret, `name` or `namespace/name` (delegated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_name: Option<String>,
    /// `1.2` (default) or `1.3`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimum_protocol_version: Option<String>,
    /// `1.2` or `1.3` (default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maximum_protocol_version: Option<String>,
    /// Pass TLS through to the backend, routing by SNI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passthrough: Option<bool>,
    /// Client certificate validation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_validation: Option<DownstreamValidation>,
    /// Serve the fallback certificate to clients without SNI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_fallback_certificate: Option<bool>,
    /// Serve HTTP/3 over QUIC on the same port (UDP), with the same certificate, and advertise
    /// it with `alt-svc` on HTTP/1.1 and HTTP/2 responses. `true` or `false` overrides the
    /// installation's `listener.http3.enabled`; unset follows it, where QUIC can serve the host:
    /// TLS 1.3 allowed, no client validation, no passthrough (`true` with one of those is
    /// refused). A contour-rs extension: upstream Contour has no such field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http3: Option<bool>,
}

/// Client certificate validation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DownstreamValidation {
    /// The Secret holding the CA bundle (`ca.crt`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub ca_secret: Option<String>,
    /// Ask for a client certificate but do not verify it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip_client_cert_validation: Option<bool>,
    /// Which certificate details go to the backend (`x-forwarded-client-cert`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forward_client_certificate: Option<ClientCertificateDetails>,
    /// The Secret holding a certificate revocation list (`crl.pem`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub crl_secret: Option<String>,
    /// Check only the leaf certificate against the CRL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crl_only_verify_leaf_cert: Option<bool>,
    /// Accept clients without a certificate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub optional_client_certificate: Option<bool>,
}

/// Which client certificate details are forwarded.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ClientCertificateDetails {
    /// The subject.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<bool>,
    /// The certificate, URL-encoded PEM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert: Option<bool>,
    /// The whole chain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain: Option<bool>,
    /// DNS SANs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dns: Option<bool>,
    /// URI SANs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uri: Option<bool>,
}

/// An external authorization server.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{"message": "httpSettings can only be set when serviceType is 'http'", "rule": "!has(self.httpSettings) || self.serviceType == 'http'"}]))]
pub struct AuthorizationServer {
    /// The ExtensionService that authorizes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extension_ref: Option<ExtensionServiceReference>,
    /// `grpc` (default) or `http`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["http", "grpc"], "default" = "grpc"))]
    pub service_type: Option<String>,
    /// Settings of an HTTP authorization server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_settings: Option<HTTPAuthorizationServerSettings>,
    /// The policy for this virtual host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_policy: Option<AuthorizationPolicy>,
    /// How long to wait for the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(DURATION_OR_INFINITY))]
    pub response_timeout: Option<String>,
    /// Let requests through when the server fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fail_open: Option<bool>,
    /// Send the request body to the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub with_request_body: Option<AuthorizationServerBufferSettings>,
}

/// Settings of an HTTP authorization server.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HTTPAuthorizationServerSettings {
    /// Prefix of the authorization request path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_prefix: Option<String>,
    /// Client headers sent to the authorization server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_authorization_headers: Option<Vec<HTTPAuthorizationServerAllowedHeaders>>,
    /// Authorization server headers sent upstream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_upstream_headers: Option<Vec<HTTPAuthorizationServerAllowedHeaders>>,
}

/// A header name matcher.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{"message": "only one of prefix, suffix, exact, and contains should be set in the allowedHeader", "rule": "(has(self.exact) ? 1 : 0) + (has(self.prefix) ? 1 : 0) + (has(self.suffix) ? 1 : 0) + (has(self.contains) ? 1 : 0) == 1"}]))]
pub struct HTTPAuthorizationServerAllowedHeaders {
    /// Equal to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exact: Option<String>,
    /// Starts with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// Ends with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suffix: Option<String>,
    /// Contains.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contains: Option<String>,
    /// Ignore case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore_case: Option<bool>,
}

/// Request body buffering for authorization.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuthorizationServerBufferSettings {
    /// The most body bytes buffered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1), extend("default" = 1024))]
    pub max_request_bytes: Option<u32>,
    /// Send a partial body when it is larger.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_partial_message: Option<bool>,
    /// Send the body as bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pack_as_bytes: Option<bool>,
}

/// Authorization on or off, with context for the server.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AuthorizationPolicy {
    /// No authorization.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disabled: Option<bool>,
    /// Context sent to the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<BTreeMap<String, String>>,
}

/// A reference to an ExtensionService.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExtensionServiceReference {
    /// `projectcontour.io/v1alpha1` when empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub api_version: Option<String>,
    /// The namespace (default: the referrer's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub namespace: Option<String>,
    /// The name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub name: Option<String>,
}

/// Cross-origin resource sharing.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CORSPolicy {
    /// Allow credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_credentials: Option<bool>,
    /// Origins allowed: `*`, exact origins or regexes.
    #[schemars(length(min = 1))]
    pub allow_origin: Vec<String>,
    /// Methods allowed.
    #[schemars(length(min = 1), inner(pattern(CORS_HEADER_VALUE)))]
    pub allow_methods: Vec<String>,
    /// Headers allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1), inner(pattern(CORS_HEADER_VALUE)))]
    pub allow_headers: Option<Vec<String>>,
    /// Headers exposed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1), inner(pattern(CORS_HEADER_VALUE)))]
    pub expose_headers: Option<Vec<String>>,
    /// How long the preflight may be cached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(DURATION_OR_ZERO))]
    pub max_age: Option<String>,
    /// Allow private network requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_private_network: Option<bool>,
}

/// A header name or method token.
const CORS_HEADER_VALUE: &str = r"^[a-zA-Z0-9!#$%&'*+.^_`|~-]+$";

/// A JWT provider.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{"message": "exactly one of remoteJWKS or localJWKS must be set", "rule": "(has(self.remoteJWKS) && !has(self.localJWKS)) || (!has(self.remoteJWKS) && has(self.localJWKS))"}]))]
pub struct JWTProvider {
    /// The provider's name.
    #[schemars(length(min = 1))]
    pub name: String,
    /// Verify every route with this provider unless it says otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<bool>,
    /// The expected issuer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
    /// The expected audiences.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audiences: Option<Vec<String>>,
    /// Keys fetched over HTTP(S).
    #[serde(default, rename = "remoteJWKS", skip_serializing_if = "Option::is_none")]
    pub remote_jwks: Option<RemoteJWKS>,
    /// Keys from a Secret.
    #[serde(default, rename = "localJWKS", skip_serializing_if = "Option::is_none")]
    pub local_jwks: Option<LocalJWKS>,
    /// Forward the JWT upstream.
    #[serde(default, rename = "forwardJWT", skip_serializing_if = "Option::is_none")]
    pub forward_jwt: Option<bool>,
}

/// Keys fetched from a URI.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RemoteJWKS {
    /// Where the keys are.
    #[schemars(length(min = 1))]
    pub uri: String,
    /// How to verify the server's certificate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation: Option<UpstreamValidation>,
    /// How long to wait.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(DURATION))]
    pub timeout: Option<String>,
    /// How long to cache the keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(pattern(DURATION))]
    pub cache_duration: Option<String>,
    /// `auto`, `v4` or `v6`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["auto", "v4", "v6"]))]
    pub dns_lookup_family: Option<String>,
}

/// Keys from a Secret.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalJWKS {
    /// The Secret.
    #[schemars(length(min = 1))]
    pub secret_name: String,
    /// The key in it.
    #[schemars(length(min = 1))]
    pub key: String,
}

/// An address range allowed or denied.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct IPFilterPolicy {
    /// `Peer` (the connection) or `Remote` (after proxies).
    #[schemars(extend("enum" = ["Peer", "Remote"]))]
    pub source: String,
    /// The CIDR.
    pub cidr: String,
}

/// A location allowed or denied.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GeoFilterPolicy {
    /// What is compared.
    #[schemars(extend("enum" = ["country", "region", "city", "asn", "isp", "anon", "anonVpn", "anonTor", "anonHosting", "anonProxy"]))]
    pub dimension: String,
    /// The value.
    #[schemars(length(min = 1))]
    pub value: String,
}
