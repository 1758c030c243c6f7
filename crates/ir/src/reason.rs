//! Every reason the product writes in a condition, an HTTPProxy sub-condition or an Event, with
//! what it means and which objects carry it: the code emits these constants, the user guide's
//! reference page is generated from [`ALL`].
//!
//! The strings are the Gateway API's and upstream Contour's: tools and alerts match on them, so
//! they never change. *route* stands for an HTTPRoute's, GRPCRoute's, TLSRoute's, TCPRoute's or
//! UDPRoute's parent entry; *listener* for a listener's status in a Gateway or a ListenerSet.

/// One reason: its string, what it means, and where it appears.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reason {
    /// The reason string, as written in the status or the Event.
    pub name: &'static str,
    /// One sentence a user can act on.
    pub meaning: &'static str,
    /// The objects and condition types (HTTPProxy sub-condition types) that carry it.
    pub objects: &'static str,
}

/// Defines each reason's constant, with its meaning as its doc, and [`ALL`].
macro_rules! reasons {
    ($($name:ident = $value:literal { objects: $objects:literal, meaning: $meaning:literal $(,)? })*) => {
        $(
            #[doc = concat!("`", $value, "`: ", $meaning)]
            #[doc = ""]
            #[doc = concat!("Carried by: ", $objects, ".")]
            pub const $name: &str = $value;
        )*

        /// Every reason, in the order of this file.
        pub const ALL: &[Reason] = &[$(Reason { name: $name, meaning: $meaning, objects: $objects }),*];

        /// Each constant's identifier with its string, to check they agree.
        #[cfg(test)]
        const IDENTIFIERS: &[(&str, &str)] = &[$((stringify!($name), $value)),*];
    };
}

reasons! {
    // The Gateway API's: GatewayClass, Gateway, ListenerSet and listeners.
    ACCEPTED = "Accepted" {
        objects: "GatewayClass, Gateway, ListenerSet, listener, route and BackendTLSPolicy Accepted",
        meaning: "The object is valid and this controller serves it.",
    }
    PROGRAMMED = "Programmed" {
        objects: "Gateway, ListenerSet and listener Programmed",
        meaning: "An Envoy of the Gateway's fleet accepted the configuration (for a listener: the listener is served).",
    }
    RESOLVED_REFS = "ResolvedRefs" {
        objects: "Gateway, listener, route and BackendTLSPolicy ResolvedRefs",
        meaning: "Every reference of the object resolves.",
    }
    PENDING = "Pending" {
        objects: "Gateway and ListenerSet Programmed",
        meaning: "No Envoy of the fleet has accepted or rejected the configuration yet: wait, or check that the \
                  fleet's Envoys run and are connected to the controller.",
    }
    INVALID = "Invalid" {
        objects: "Gateway, ListenerSet and listener Programmed; BackendTLSPolicy Accepted; the webhook's denial",
        meaning: "Something is not valid and the message says what: Envoy rejected the fleet's configuration \
                  (Gateway, ListenerSet), the listener is not served for the reason its other conditions give, \
                  the BackendTLSPolicy asks for well-known CA certificates other than `System` or has an invalid \
                  hostname, or the webhook refused the change.",
    }
    SUPPORTED_VERSION = "SupportedVersion" {
        objects: "GatewayClass SupportedVersion",
        meaning: "The installed Gateway API version is one this controller supports.",
    }
    INVALID_PARAMETERS = "InvalidParameters" {
        objects: "GatewayClass and Gateway Accepted",
        meaning: "The `parametersRef` does not name a projectcontour.io ContourDeployment (a GatewayClass's also \
                  needs its namespace): point it at one.",
    }
    LISTENERS_NOT_VALID = "ListenersNotValid" {
        objects: "Gateway Accepted; ListenerSet Accepted and Programmed",
        meaning: "Some listeners (Accepted True) or all of them (False) are not served: each listener's conditions \
                  say why.",
    }
    LISTENERS_NOT_RESOLVED = "ListenersNotResolved" {
        objects: "Gateway ResolvedRefs",
        meaning: "Some listeners have references that do not resolve: each listener's ResolvedRefs says which.",
    }
    UNSUPPORTED_ADDRESS = "UnsupportedAddress" {
        objects: "Gateway Accepted",
        meaning: "A `spec.addresses` entry has a type other than IPAddress or Hostname, or an IPAddress value that \
                  is not an IP address.",
    }
    ADDRESS_NOT_USABLE = "AddressNotUsable" {
        objects: "Gateway Programmed",
        meaning: "A `spec.addresses` entry cannot be used: a Hostname (only IP addresses are assigned), or in host \
                  mode an address other than a loopback address.",
    }
    ADDRESS_NOT_ASSIGNED = "AddressNotAssigned" {
        objects: "Gateway Programmed",
        meaning: "The Gateway has no address yet: wait for its Service's load balancer to get one, or check the \
                  Service.",
    }
    ADDRESSES_ASSIGNED = "AddressesAssigned" {
        objects: "Gateway AddressesAssigned",
        meaning: "Every address the Gateway asks for is assigned.",
    }
    NOT_ASSIGNED = "NotAssigned" {
        objects: "Gateway AddressesAssigned",
        meaning: "None of the addresses the Gateway asks for can be assigned: the message says why for each entry.",
    }
    PARTIALLY_ASSIGNED = "PartiallyAssigned" {
        objects: "Gateway AddressesAssigned",
        meaning: "Some of the addresses the Gateway asks for are assigned and others are not: the message says why \
                  for each of the others.",
    }
    CONFIGURATION_CHANGED = "ConfigurationChanged" {
        objects: "Gateway InsecureFrontendValidationMode",
        meaning: "A frontend TLS validation uses AllowInsecureFallback, so clients without a valid certificate get \
                  in: the backends must check them.",
    }
    NOT_ALLOWED = "NotAllowed" {
        objects: "ListenerSet Accepted and Programmed",
        meaning: "The parent Gateway's `allowedListeners` does not admit ListenerSets of this namespace.",
    }
    NO_CONFLICTS = "NoConflicts" {
        objects: "listener Conflicted",
        meaning: "The listener does not conflict with another one.",
    }
    PROTOCOL_CONFLICT = "ProtocolConflict" {
        objects: "listener Conflicted; a ListenerSet's listener Accepted and Programmed",
        meaning: "Another listener on the same port uses a protocol that cannot share it (HTTP, HTTPS or TLS, TCP \
                  and UDP each need ports of their own, and a TCP or UDP listener a port to itself): move one to \
                  another port.",
    }
    HOSTNAME_CONFLICT = "HostnameConflict" {
        objects: "listener Conflicted; a ListenerSet's listener Accepted and Programmed; TLSRoute ResolvedRefs",
        meaning: "Another listener on the same port has the same hostname, or another TLSRoute already serves the \
                  same server name on the port: make the hostnames differ.",
    }
    UNSUPPORTED_PROTOCOL = "UnsupportedProtocol" {
        objects: "listener Accepted; HTTPProxy ServiceError; ExtensionService SpecError",
        meaning: "The protocol is not supported: a listener protocol other than HTTP, HTTPS, TLS, TCP or UDP, an \
                  HTTPProxy service protocol other than h2, h2c or tls, or an ExtensionService protocol other than \
                  h2, h2c or http/1.1.",
    }
    PORT_UNAVAILABLE = "PortUnavailable" {
        objects: "listener Accepted",
        meaning: "The listener's port is 0 or out of range.",
    }
    INVALID_ROUTE_KINDS = "InvalidRouteKinds" {
        objects: "listener ResolvedRefs",
        meaning: "`allowedRoutes.kinds` names a route kind the listener's protocol cannot carry.",
    }
    INVALID_TLS_CONFIG = "InvalidTLSConfig" {
        objects: "listener (the webhook and the log; its ResolvedRefs says InvalidCertificateRef)",
        meaning: "An HTTPS or TLS listener has no `tls` block: add one with a certificate.",
    }
    INVALID_CERTIFICATE_REF = "InvalidCertificateRef" {
        objects: "listener ResolvedRefs",
        meaning: "A `certificateRefs` entry does not name a usable `kubernetes.io/tls` Secret (another kind, \
                  missing, or no valid certificate and key), or the listener has no usable certificate at all.",
    }
    INVALID_CA_CERTIFICATE_KIND = "InvalidCACertificateKind" {
        objects: "listener ResolvedRefs",
        meaning: "A frontend validation's `caCertificateRefs` entry names a kind other than a ConfigMap, Secret or \
                  ClusterTrustBundle.",
    }
    INVALID_CA_CERTIFICATE_REF = "InvalidCACertificateRef" {
        objects: "listener and BackendTLSPolicy ResolvedRefs",
        meaning: "A CA certificate reference names an object that does not exist or holds no PEM CA certificate.",
    }
    NO_VALID_CA_CERTIFICATE = "NoValidCACertificate" {
        objects: "listener and BackendTLSPolicy Accepted",
        meaning: "No CA certificate reference of the listener's frontend validation or of the policy resolves, so \
                  nothing could verify certificates: fix the references.",
    }
    INVALID_CLIENT_CERTIFICATE_REF = "InvalidClientCertificateRef" {
        objects: "Gateway ResolvedRefs",
        meaning: "`spec.tls.backend.clientCertificateRef` does not name a usable `kubernetes.io/tls` Secret, so \
                  Envoy presents no client certificate to backends.",
    }

    // The Gateway API's: routes and policies.
    NO_MATCHING_PARENT = "NoMatchingParent" {
        objects: "route Accepted",
        meaning: "The parentRef's `sectionName` or `port` matches no listener of the Gateway or ListenerSet.",
    }
    NOT_ALLOWED_BY_LISTENERS = "NotAllowedByListeners" {
        objects: "route Accepted",
        meaning: "The listeners the parentRef matches do not allow routes of this kind or from this namespace \
                  (`allowedRoutes`).",
    }
    NO_MATCHING_LISTENER_HOSTNAME = "NoMatchingListenerHostname" {
        objects: "route Accepted",
        meaning: "None of the route's hostnames matches the hostname of a listener the parentRef selects.",
    }
    UNSUPPORTED_VALUE = "UnsupportedValue" {
        objects: "route and listener Accepted; Ingress Event",
        meaning: "A field has a value this controller does not support, named in the message: a filter or match it \
                  cannot apply, a backend without a port, an ExternalName Service while those are disabled, or \
                  a listener's invalid hostname or unsupported filter.",
    }
    BACKEND_NOT_FOUND = "BackendNotFound" {
        objects: "route and listener ResolvedRefs",
        meaning: "A backend names a Service that does not exist or a port it does not have: create the Service or \
                  fix the reference.",
    }
    REF_NOT_PERMITTED = "RefNotPermitted" {
        objects: "route, listener and Gateway ResolvedRefs",
        meaning: "A reference to another namespace is not allowed by a ReferenceGrant there: add one.",
    }
    INVALID_KIND = "InvalidKind" {
        objects: "route, listener and BackendTLSPolicy ResolvedRefs",
        meaning: "A reference names a kind that cannot be used there: a backend other than a core Service, or a CA \
                  certificate other than a ConfigMap, Secret or ClusterTrustBundle.",
    }
    DEGRADED = "Degraded" {
        objects: "route ResolvedRefs",
        meaning: "One of the route's hostnames is not a valid hostname: it is left out and the others are served.",
    }
    RULE_MATCH_CONFLICT = "RuleMatchConflict" {
        objects: "route Accepted",
        meaning: "Every rule of the route repeats a match of an older route's rule on the same host, so all are \
                  dropped: change the matches or remove the duplicate.",
    }
    RULE_MATCH_PARTIALLY_CONFLICT = "RuleMatchPartiallyConflict" {
        objects: "route PartiallyInvalid",
        meaning: "Some rules of the route repeat a match of an older route's rule on the same host and are dropped; \
                  the others are served.",
    }
    TARGET_NOT_FOUND = "TargetNotFound" {
        objects: "BackendTLSPolicy Accepted",
        meaning: "No `targetRefs` entry names a core Service, or its `sectionName` names a port the Service does not \
                  have.",
    }
    CONFLICTED = "Conflicted" {
        objects: "BackendTLSPolicy Accepted",
        meaning: "An older BackendTLSPolicy targets the same Service and section, and a policy that loses any of \
                  its targets applies to none: target each Service port once.",
    }

    // Upstream Contour's: HTTPProxy and ExtensionService, the Valid condition and its sub-conditions.
    VALID = "Valid" {
        objects: "HTTPProxy and ExtensionService Valid",
        meaning: "The object has no error and is served.",
    }
    ERROR_PRESENT = "ErrorPresent" {
        objects: "HTTPProxy and ExtensionService Valid",
        meaning: "The object has at least one error, each listed in the condition's errors.",
    }
    CONFIGURATION_REJECTED = "ConfigurationRejected" {
        objects: "HTTPProxy EnvoyError",
        meaning: "Envoy rejected the configuration of the fleet this HTTPProxy is part of; the message quotes Envoy.",
    }
    ORPHANED = "Orphaned" {
        objects: "HTTPProxy Orphaned",
        meaning: "The HTTPProxy has no virtual host and no root HTTPProxy includes it, so nothing serves it.",
    }
    DUPLICATE_VHOST = "DuplicateVhost" {
        objects: "HTTPProxy VirtualHostError",
        meaning: "Another root HTTPProxy has the same fqdn, and every one of them is refused until one remains.",
    }
    FQDN_NOT_SPECIFIED = "FQDNNotSpecified" {
        objects: "HTTPProxy VirtualHostError",
        meaning: "`spec.virtualhost.fqdn` is empty.",
    }
    FQDN_NOT_VALID = "FQDNNotValid" {
        objects: "HTTPProxy VirtualHostError",
        meaning: "`spec.virtualhost.fqdn` is not a valid DNS name (a leading `*.` is allowed).",
    }
    ROOT_PROXY_NOT_ALLOWED_IN_NAMESPACE = "RootProxyNotAllowedInNamespace" {
        objects: "HTTPProxy RootNamespaceError",
        meaning: "The root HTTPProxy is in a namespace that `--root-namespaces` does not list.",
    }
    NOTHING_DEFINED = "NothingDefined" {
        objects: "HTTPProxy SpecError and TCPProxyError",
        meaning: "The HTTPProxy has no routes, includes or tcpproxy, or its tcpproxy has neither services nor an \
                  include.",
    }
    TLS_MUST_BE_CONFIGURED = "TLSMustBeConfigured" {
        objects: "HTTPProxy TCPProxyError",
        meaning: "`spec.tcpproxy` needs `spec.virtualhost.tls` with `passthrough` or a `secretName`.",
    }
    NO_SERVICES_AND_INCLUDE = "NoServicesAndInclude" {
        objects: "HTTPProxy TCPProxyError",
        meaning: "A tcpproxy sets both services and an include: keep one.",
    }
    INCLUDE_NOT_FOUND = "IncludeNotFound" {
        objects: "HTTPProxy IncludeError and TCPProxyIncludeError",
        meaning: "An include names an HTTPProxy that does not exist or that this controller does not serve; \
                  requests for the include's conditions get a 502 meanwhile.",
    }
    ROOT_INCLUDES_ROOT = "RootIncludesRoot" {
        objects: "HTTPProxy IncludeError and TCPProxyIncludeError",
        meaning: "An include names a root HTTPProxy (one with a virtual host), which cannot be included.",
    }
    INCLUDE_CREATES_CYCLE = "IncludeCreatesCycle" {
        objects: "HTTPProxy IncludeError and TCPProxyIncludeError",
        meaning: "The includes form a cycle, named in the message: break it.",
    }
    DUPLICATE_MATCH_CONDITIONS = "DuplicateMatchConditions" {
        objects: "HTTPProxy IncludeError",
        meaning: "Two includes of the HTTPProxy have the same conditions.",
    }
    PATH_MATCH_CONDITIONS_NOT_VALID = "PathMatchConditionsNotValid" {
        objects: "HTTPProxy IncludeError and RouteError",
        meaning: "A path condition is invalid: a path not starting with `/`, a regex RE2 rejects, more than one \
                  prefix, exact or regex condition in a block, or an exact or regex condition on an include.",
    }
    HEADER_MATCH_CONDITIONS_NOT_VALID = "HeaderMatchConditionsNotValid" {
        objects: "HTTPProxy RouteError",
        meaning: "A header condition of a route or include is invalid or contradicts another one.",
    }
    QUERY_PARAMETER_MATCH_CONDITIONS_NOT_VALID = "QueryParameterMatchConditionsNotValid" {
        objects: "HTTPProxy RouteError",
        meaning: "A query parameter condition of a route or include is invalid or contradicts another one.",
    }
    ROUTE_ACTION_COUNT_NOT_VALID = "RouteActionCountNotValid" {
        objects: "HTTPProxy RouteError",
        meaning: "A route sets more or fewer than one of `services`, `requestRedirectPolicy` and \
                  `directResponsePolicy`.",
    }
    REQUEST_REDIRECT_POLICY = "RequestRedirectPolicy" {
        objects: "HTTPProxy RouteError",
        meaning: "A route's `requestRedirectPolicy` sets both `path` and `prefix`, or a value with control \
                  characters.",
    }
    DIRECT_RESPONSE_POLICY_INVALID = "DirectResponsePolicyInvalid" {
        objects: "HTTPProxy RouteError",
        meaning: "A route's `directResponsePolicy` has a status code outside 200-599 or a body that is too long.",
    }
    TIMEOUT_POLICY_NOT_VALID = "TimeoutPolicyNotValid" {
        objects: "HTTPProxy RouteError; ExtensionService SpecError",
        meaning: "A `timeoutPolicy` duration does not parse.",
    }
    RETRY_POLICY_INVALID = "RetryPolicyInvalid" {
        objects: "HTTPProxy RouteError",
        meaning: "A route's `retryPolicy` is invalid, such as a `retryOn` value Envoy does not know.",
    }
    HEALTH_CHECK_POLICY_INVALID = "HealthCheckPolicyInvalid" {
        objects: "HTTPProxy RouteError",
        meaning: "A route's `healthCheckPolicy` is invalid: an empty path, an invalid host, or an expected status \
                  range outside 100-600.",
    }
    RATE_LIMIT_POLICY_NOT_VALID = "RateLimitPolicyNotValid" {
        objects: "HTTPProxy VirtualHostError and RouteError",
        meaning: "A `rateLimitPolicy` of the virtual host or a route, or the configuration's default global rate \
                  limit policy, is invalid.",
    }
    REQUEST_HEADERS_POLICY_INVALID = "RequestHeadersPolicyInvalid" {
        objects: "HTTPProxy ServiceError and RouteError",
        meaning: "A `requestHeadersPolicy` sets or removes a header it cannot (an invalid name or value, or a \
                  service copying Host from a request header, which only routes can).",
    }
    RESPONSE_HEADERS_POLICY_INVALID = "ResponseHeadersPolicyInvalid" {
        objects: "HTTPProxy ServiceError",
        meaning: "A service's `responseHeadersPolicy` sets or removes a header it cannot (an invalid name or value).",
    }
    RESPONSE_HEADER_POLICY_INVALID = "ResponseHeaderPolicyInvalid" {
        objects: "HTTPProxy RouteError",
        meaning: "A route's `responseHeadersPolicy` sets or removes a header it cannot (an invalid name or value).",
    }
    COOKIE_REWRITE_POLICIES_INVALID = "CookieRewritePoliciesInvalid" {
        objects: "HTTPProxy RouteError",
        meaning: "A route's or service's `cookieRewritePolicies` is invalid: a repeated or invalid cookie name, an \
                  invalid path, domain or SameSite value, or nothing to rewrite.",
    }
    ERROR_PAGE_INVALID = "ErrorPageInvalid" {
        objects: "HTTPProxy VirtualHostError and RouteError",
        meaning: "An `errorPages` entry cannot be served: a status code outside 100-599, a body that is missing, too \
                  large or in a ConfigMap that does not exist or lacks the error pages label or key, or an invalid \
                  content type.",
    }
    REGEX_REWRITE_INVALID = "RegexRewriteInvalid" {
        objects: "HTTPProxy PathRewriteError",
        meaning: "`pathRewritePolicy.replaceRegex` has a pattern RE2 rejects or a substitution naming a group the \
                  pattern lacks, or is set with `replacePrefix`.",
    }
    MUST_HAVE_PREFIX = "MustHavePrefix" {
        objects: "HTTPProxy PrefixReplaceError",
        meaning: "A route replaces a prefix but has no prefix condition to replace.",
    }
    INVALID_REPLACEMENT = "InvalidReplacement" {
        objects: "HTTPProxy PrefixReplaceError",
        meaning: "A prefix replacement is not a valid header value.",
    }
    AMBIGUOUS_REPLACEMENT = "AmbiguousReplacement" {
        objects: "HTTPProxy PrefixReplaceError",
        meaning: "More than one prefix replacement has no prefix: keep one.",
    }
    DUPLICATE_REPLACEMENT = "DuplicateReplacement" {
        objects: "HTTPProxy PrefixReplaceError",
        meaning: "Two prefix replacements name the same prefix.",
    }
    IGNORED_FIELD = "IgnoredField" {
        objects: "HTTPProxy SpecError and TCPProxyError warnings; ExtensionService SpecError warnings",
        meaning: "A field is ignored and the default applies (a warning): an invalid hash policy, a load-balancing \
                  strategy that does not apply to a tcpproxy or an ExtensionService, or an ExtensionService's idle \
                  timeout.",
    }
    ONLY_ONE_MIRROR = "OnlyOneMirror" {
        objects: "HTTPProxy ServiceError",
        meaning: "More than one service of a route is marked `mirror`.",
    }
    SERVICE_PORT_INVALID = "ServicePortInvalid" {
        objects: "HTTPProxy ServiceError; Ingress Event",
        meaning: "A service port is outside 1-65535 (HTTPProxy), or the Service has no such port (Ingress).",
    }
    SERVICE_UNRESOLVED_REFERENCE = "ServiceUnresolvedReference" {
        objects: "HTTPProxy ServiceError and TCPProxyError; ExtensionService ServiceError",
        meaning: "A service does not exist, has no such (TCP) port, or is an ExternalName Service while those are \
                  disabled, or an ExtensionService names no service: create it or fix the reference.",
    }
    SLOW_START_INVALID = "SlowStartInvalid" {
        objects: "HTTPProxy ServiceError",
        meaning: "A `slowStartPolicy` has an invalid window or aggression, or the route's load-balancing strategy \
                  is neither RoundRobin nor WeightedLeastRequest.",
    }
    OUTLIER_DETECTION_INVALID = "OutlierDetectionInvalid" {
        objects: "HTTPProxy ServiceError",
        meaning: "A service's `outlierDetection` has a duration that does not parse, a zero interval, or a \
                  `maxEjectionPercent` over 100.",
    }
    TLS_UPSTREAM_VALIDATION = "TLSUpstreamValidation" {
        objects: "HTTPProxy ServiceError; ExtensionService SpecError",
        meaning: "An upstream `validation` has a CA Secret without a valid PEM CA bundle, or invalid subject names.",
    }
    CA_CERTIFICATE_NOT_DELEGATED = "CACertificateNotDelegated" {
        objects: "HTTPProxy and ExtensionService TLSError",
        meaning: "An upstream validation's `caSecret` is in another namespace whose TLSCertificateDelegation does \
                  not cover this one.",
    }
    INCOMPATIBLE_IP_ADDRESS_FILTERS = "IncompatibleIPAddressFilters" {
        objects: "HTTPProxy IPFilterError",
        meaning: "The virtual host or a route sets both `ipAllowPolicy` and `ipDenyPolicy`: keep one.",
    }
    IP_FILTER_POLICY_NOT_VALID = "IPFilterPolicyNotValid" {
        objects: "HTTPProxy IPFilterError",
        meaning: "An IP filter's `source` is neither Peer nor Remote.",
    }
    INVALID_CIDR = "InvalidCIDR" {
        objects: "HTTPProxy IPFilterError",
        meaning: "An IP filter's `cidr` is not an address or an address range.",
    }
    INCOMPATIBLE_GEO_FILTERS = "IncompatibleGeoFilters" {
        objects: "HTTPProxy IPFilterError",
        meaning: "The virtual host or a route sets both `geoAllowPolicy` and `geoDenyPolicy`: keep one.",
    }
    INCOMPATIBLE_IP_AND_GEO_FILTERS = "IncompatibleIPAndGeoFilters" {
        objects: "HTTPProxy IPFilterError",
        meaning: "The IP and geo rules of one virtual host or route are not both allow rules or both deny rules.",
    }
    GEO_FILTER_NOT_PERMITTED = "GeoFilterNotPermitted" {
        objects: "HTTPProxy IPFilterError",
        meaning: "Geo rules are set on a virtual host that does not terminate TLS.",
    }
    GEO_IP_NOT_CONFIGURED = "GeoIPNotConfigured" {
        objects: "HTTPProxy IPFilterError",
        meaning: "Geo rules need GeoIP databases that provide their dimension, and ContourConfiguration \
                  `spec.geoIP` configures none.",
    }
    GEO_FILTER_POLICY_NOT_VALID = "GeoFilterPolicyNotValid" {
        objects: "HTTPProxy IPFilterError",
        meaning: "A geo rule names an unknown dimension or has an empty or invalid value.",
    }
    POLICY_DID_NOT_PARSE = "PolicyDidNotParse" {
        objects: "HTTPProxy CORSError",
        meaning: "`spec.virtualhost.corsPolicy` is invalid; the message names the field.",
    }
    TLS_CONFIG_NOT_VALID = "TLSConfigNotValid" {
        objects: "HTTPProxy TLSError",
        meaning: "`spec.virtualhost.tls` sets both or neither of `passthrough` and `secretName`, or a minimum \
                  protocol version above the maximum.",
    }
    TLS_INCOMPATIBLE_FEATURES = "TLSIncompatibleFeatures" {
        objects: "HTTPProxy TLSError",
        meaning: "`spec.virtualhost.tls` combines features that exclude each other: passthrough with the fallback \
                  certificate or client validation, http3 with passthrough, client validation or TLS 1.2 at most, \
                  or the fallback certificate with client validation, authorization or JWT providers.",
    }
    DELEGATION_NOT_PERMITTED = "DelegationNotPermitted" {
        objects: "HTTPProxy TLSError; Ingress Event",
        meaning: "A TLS Secret is in another namespace whose TLSCertificateDelegation does not cover this one.",
    }
    SECRET_NOT_VALID = "SecretNotValid" {
        objects: "HTTPProxy TLSError; Ingress Event",
        meaning: "The TLS Secret does not exist or holds no valid certificate and key.",
    }
    FALLBACK_NOT_PRESENT = "FallbackNotPresent" {
        objects: "HTTPProxy TLSError",
        meaning: "The virtual host enables the fallback certificate but the configuration names none \
                  (`tls.fallback-certificate`).",
    }
    FALLBACK_NOT_DELEGATED = "FallbackNotDelegated" {
        objects: "HTTPProxy TLSError",
        meaning: "The fallback certificate's Secret is in a namespace whose TLSCertificateDelegation does not cover \
                  this HTTPProxy's.",
    }
    FALLBACK_NOT_VALID = "FallbackNotValid" {
        objects: "HTTPProxy TLSError",
        meaning: "The fallback certificate's Secret does not exist or holds no valid certificate and key.",
    }
    CLIENT_VALIDATION_INVALID = "ClientValidationInvalid" {
        objects: "HTTPProxy TLSError",
        meaning: "`spec.virtualhost.tls.clientValidation` is invalid: no CA Secret while certificates are \
                  verified, or a CA or CRL Secret that is missing or holds no PEM CA certificate or CRL.",
    }
    AUTH_NOT_PERMITTED = "AuthNotPermitted" {
        objects: "HTTPProxy AuthError",
        meaning: "An authorization server is set on a root HTTPProxy that does not terminate TLS.",
    }
    AUTH_HTTP_SETTINGS_INVALID = "AuthHTTPSettingsInvalid" {
        objects: "HTTPProxy AuthError",
        meaning: "The authorization's `serviceType` is unknown, or its `httpSettings` are set for gRPC or are \
                  invalid (a path prefix or header name).",
    }
    AUTH_BAD_RESOURCE_VERSION = "AuthBadResourceVersion" {
        objects: "HTTPProxy AuthError",
        meaning: "The authorization's `extensionRef` has an `apiVersion` other than projectcontour.io/v1alpha1.",
    }
    EXTENSION_SERVICE_NOT_FOUND = "ExtensionServiceNotFound" {
        objects: "HTTPProxy AuthError",
        meaning: "The authorization's `extensionRef` names an ExtensionService that does not exist or is not \
                  valid.",
    }
    AUTH_RESPONSE_TIMEOUT_INVALID = "AuthResponseTimeoutInvalid" {
        objects: "HTTPProxy AuthError",
        meaning: "The authorization's `responseTimeout` does not parse.",
    }
    JWT_VERIFICATION_NOT_PERMITTED = "JWTVerificationNotPermitted" {
        objects: "HTTPProxy JWTVerificationError",
        meaning: "JWT providers are set on a root HTTPProxy that does not terminate TLS.",
    }
    DUPLICATE_PROVIDER_NAME = "DuplicateProviderName" {
        objects: "HTTPProxy JWTVerificationError",
        meaning: "Two JWT providers have the same name.",
    }
    MULTIPLE_DEFAULT_PROVIDERS_SPECIFIED = "MultipleDefaultProvidersSpecified" {
        objects: "HTTPProxy JWTVerificationError",
        meaning: "More than one JWT provider is marked `default`.",
    }
    JWKS_SOURCE_CONFLICT = "JWKSSourceConflict" {
        objects: "HTTPProxy JWTVerificationError",
        meaning: "A JWT provider sets both `remoteJWKS` and `localJWKS`: keep one.",
    }
    JWKS_SOURCE_MISSING = "JWKSSourceMissing" {
        objects: "HTTPProxy JWTVerificationError",
        meaning: "A JWT provider sets neither `remoteJWKS` nor `localJWKS`.",
    }
    LOCAL_JWKS_INVALID = "LocalJWKSInvalid" {
        objects: "HTTPProxy JWTVerificationError",
        meaning: "A provider's `localJWKS` Secret does not exist, lacks the key, or holds no valid JWKS.",
    }
    REMOTE_JWKS_URI_INVALID = "RemoteJWKSURIInvalid" {
        objects: "HTTPProxy JWTVerificationError",
        meaning: "A provider's `remoteJWKS.uri` is not a URL.",
    }
    REMOTE_JWKS_SCHEME_INVALID = "RemoteJWKSSchemeInvalid" {
        objects: "HTTPProxy JWTVerificationError",
        meaning: "A provider's `remoteJWKS.uri` has a scheme other than http or https.",
    }
    REMOTE_JWKS_PORT_INVALID = "RemoteJWKSPortInvalid" {
        objects: "HTTPProxy JWTVerificationError",
        meaning: "A provider's `remoteJWKS.uri` has an invalid port.",
    }
    REMOTE_JWKS_UPSTREAM_VALIDATION_INVALID = "RemoteJWKSUpstreamValidationInvalid" {
        objects: "HTTPProxy JWTVerificationError",
        meaning: "A provider's `remoteJWKS.validation` is set for an http URI, or has a CA Secret without a valid \
                  CA bundle or invalid subject names.",
    }
    REMOTE_JWKS_CA_CERTIFICATE_NOT_DELEGATED = "RemoteJWKSCACertificateNotDelegated" {
        objects: "HTTPProxy JWTVerificationError",
        meaning: "A provider's `remoteJWKS.validation.caSecret` is in another namespace whose \
                  TLSCertificateDelegation does not cover this one.",
    }
    REMOTE_JWKS_TIMEOUT_INVALID = "RemoteJWKSTimeoutInvalid" {
        objects: "HTTPProxy JWTVerificationError",
        meaning: "A provider's `remoteJWKS.timeout` does not parse.",
    }
    REMOTE_JWKS_CACHE_DURATION_INVALID = "RemoteJWKSCacheDurationInvalid" {
        objects: "HTTPProxy JWTVerificationError",
        meaning: "A provider's `remoteJWKS.cacheDuration` does not parse.",
    }
    REMOTE_JWKS_DNS_LOOKUP_FAMILY_INVALID = "RemoteJWKSDNSLookupFamilyInvalid" {
        objects: "HTTPProxy JWTVerificationError",
        meaning: "A provider's `remoteJWKS.dnsLookupFamily` is not auto, all, v4 or v6.",
    }
    INVALID_JWT_VERIFICATION_POLICY = "InvalidJWTVerificationPolicy" {
        objects: "HTTPProxy JWTVerificationError",
        meaning: "A route's `jwtVerificationPolicy` sets both `require` and `disabled`.",
    }
    JWT_PROVIDER_NOT_DEFINED = "JWTProviderNotDefined" {
        objects: "HTTPProxy JWTVerificationError",
        meaning: "A route's `jwtVerificationPolicy.require` names a provider the virtual host does not define.",
    }
    OIDC_NOT_PERMITTED = "OIDCNotPermitted" {
        objects: "HTTPProxy OIDCError and RouteError",
        meaning: "The OIDC login cannot protect everything it should: the root does not terminate TLS, enables the \
                  fallback certificate or has a tcpproxy, or a route sets `permitInsecure` without \
                  `oidcPolicy.disabled`.",
    }
    OIDC_ENDPOINT_INVALID = "OIDCEndpointInvalid" {
        objects: "HTTPProxy OIDCError",
        meaning: "An OIDC endpoint (authorization, token or end session) is not an http or https URL.",
    }
    OIDC_INVALID = "OIDCInvalid" {
        objects: "HTTPProxy OIDCError",
        meaning: "The OIDC settings are invalid: an empty client ID or one with spaces, a redirect or logout path \
                  that is not a plain absolute path (or both the same), or an invalid scope.",
    }
    OIDC_CLIENT_SECRET_INVALID = "OIDCClientSecretInvalid" {
        objects: "HTTPProxy OIDCError",
        meaning: "The OIDC `clientSecretName` Secret does not exist or has no (or an empty) client secret key.",
    }
    UNSUPPORTED_SERVICE_TYPE = "UnsupportedServiceType" {
        objects: "ExtensionService ServiceError",
        meaning: "An ExtensionService names an ExternalName Service, which it cannot use.",
    }
    INCONSISTENT_PROTOCOL = "InconsistentProtocol" {
        objects: "ExtensionService SpecError",
        meaning: "An ExtensionService validates its upstream's certificate but its protocol is not h2 (TLS).",
    }

    // Ingress: Warning Events on the Ingress.
    INVALID_ANNOTATION = "InvalidAnnotation" {
        objects: "Ingress Event",
        meaning: "An annotation has a value the controller cannot use, so it is ignored.",
    }
    INVALID_PATH = "InvalidPath" {
        objects: "Ingress Event",
        meaning: "A path does not start with `/`, or an ImplementationSpecific path is a regular expression RE2 \
                  rejects; the path is not served.",
    }
    UNSUPPORTED_BACKEND = "UnsupportedBackend" {
        objects: "Ingress Event",
        meaning: "A backend is not a Service (a resource backend), which is not supported; the path is not served.",
    }
    SERVICE_NOT_FOUND = "ServiceNotFound" {
        objects: "Ingress Event",
        meaning: "A backend names a Service that does not exist; the path is not served until it does.",
    }

    // The controller itself.
    LEADER_ELECTION = "LeaderElection" {
        objects: "Lease Event",
        meaning: "The replica named in the message became leader and writes status from now on.",
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn names_are_unique() {
        let mut seen = BTreeSet::new();
        let repeated: Vec<&str> = ALL.iter().map(|r| r.name).filter(|n| !seen.insert(*n)).collect();
        assert!(repeated.is_empty(), "reasons defined twice: {repeated:?}");
    }

    #[test]
    fn every_reason_says_what_it_means_and_where() {
        for r in ALL {
            assert!(!r.meaning.trim().is_empty() && r.meaning.ends_with('.'), "{}: meaning {:?}", r.name, r.meaning);
            assert!(!r.objects.trim().is_empty(), "{}: no objects", r.name);
            assert!(r.name.chars().next().is_some_and(|c| c.is_ascii_uppercase()), "{} is not CamelCase", r.name);
            assert!(r.name.chars().all(|c| c.is_ascii_alphanumeric()), "{} is not CamelCase", r.name);
        }
    }

    #[test]
    fn identifiers_spell_their_reason() {
        for (identifier, name) in IDENTIFIERS {
            assert_eq!(identifier.replace('_', ""), name.to_ascii_uppercase(), "{identifier} = {name:?}");
        }
    }
}
