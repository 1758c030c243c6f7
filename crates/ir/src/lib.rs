//! The Gateway-API-shaped intermediate representation every front end produces and the DAG consumes.
//!
//! Plain data: no Kubernetes client, no Envoy types. Every route keeps its [`Origin`] so status and
//! diagnostics can name the object a piece of configuration came from.

mod diagnostic;
pub mod hostname;
mod http;
mod policy;
pub mod reason;

pub use diagnostic::{Diagnostic, Severity};
pub use http::{
    HeaderMatch, HeaderModifier, HttpFilter, HttpMatch, HttpRoute, HttpRule, MAX_HEADER_BYTES, MAX_HEADER_CHANGES,
    MAX_QUERY_NAME_BYTES, PathMatch, PathModifier, QueryMatch, Redirect, RequestMirror, StringMatch, UrlRewrite,
    header_name_problem, header_value_problem, regex_escape,
};
pub use policy::{
    Authorization, AuthorizationBody, BackendOptions, BackendTls, BackendTlsPolicy, CaKind, ClusterPolicy,
    CookieRewrite, Cors, CrossScheme, DescriptorEntry, ErrorPage, ExtensionService, GeoDatabases, GeoDimension,
    GeoRule, GlobalRateLimit, HashPolicy, HeaderNameMatch, HealthCheck, HttpAuthorization, InternalRedirect, IpFilter,
    IpRule, Jwks, JwtProvider, LoadBalancer, LocalRateLimit, Oidc, OriginMatch, OutlierDetection, Redacted, RemoteJwks,
    RetryPolicy, RouteAuthorization, RoutePolicy, SharedBackendOptions, SlowStart, UpstreamProtocol,
    UpstreamValidation, VirtualHostPolicy, extension_cluster_name, external_auth_cluster_name, merge_cookie_rewrites,
};

use std::net::IpAddr;
use std::sync::Arc;

/// The name of the fleet that serves Ingress and HTTPProxy objects (the bootstrap default).
pub const DEFAULT_FLEET: &str = "contour";

/// The whole intermediate representation: one entry per Envoy fleet.
#[derive(Debug, serde::Serialize, Clone, Default, PartialEq)]
pub struct Ir {
    /// Fleets, sorted by id.
    pub fleets: Vec<Fleet>,
    /// The BackendTLSPolicies that apply, sorted (Gateway API routes' backends only).
    pub backend_tls: Vec<BackendTlsPolicy>,
}

/// A set of Envoys sharing one configuration: a Gateway (`namespace/name`) or the default fleet.
#[derive(Debug, serde::Serialize, Clone, PartialEq)]
pub struct Fleet {
    /// The fleet id, matched against the Envoy node's cluster.
    pub id: String,
    /// The address listeners bind to; `None` means the controller's default.
    pub address: Option<IpAddr>,
    /// The object the fleet comes from (the Gateway), for status.
    pub origin: Option<Origin>,
    /// Listeners, in the order of the source object.
    pub listeners: Vec<Listener>,
    /// ExtensionServices the fleet's Envoys call (the default fleet's), sorted by name.
    pub extensions: Vec<Arc<ExtensionService>>,
    /// The certificate (a `kubernetes.io/tls` Secret, already checked) the fleet's Envoys present
    /// to every backend they speak TLS to (a Gateway's `spec.tls.backend.clientCertificateRef`);
    /// `None` leaves the controller-wide one.
    pub backend_certificate: Option<ObjectRef>,
}

impl Fleet {
    /// The default fleet (upstream's single configuration) with these listeners and extensions.
    pub fn default_fleet(listeners: Vec<Listener>, extensions: Vec<Arc<ExtensionService>>) -> Self {
        Fleet {
            id: DEFAULT_FLEET.into(),
            address: None,
            origin: None,
            listeners,
            extensions,
            backend_certificate: None,
        }
    }
}

/// One listener of a fleet: a port, a protocol, an optional hostname and the routes attached to it.
#[derive(Debug, serde::Serialize, Clone, PartialEq)]
pub struct Listener {
    /// The listener name, unique within its fleet.
    pub name: String,
    /// The port Envoy binds.
    pub port: u16,
    /// What the listener speaks.
    pub protocol: Protocol,
    /// Only requests (or SNI names) matching this hostname are served; `None` matches all.
    pub hostname: Option<String>,
    /// TLS settings for HTTPS and TLS listeners.
    pub tls: Option<ListenerTls>,
    /// HTTP routes attached to this listener.
    pub http_routes: Vec<Arc<HttpRoute>>,
    /// TLS routes attached to this listener: SNI routing for passthrough, or the TCP stream
    /// inside terminated TLS.
    pub tls_routes: Vec<Arc<TlsRoute>>,
    /// TCP or UDP routes attached to a TCP or UDP listener, oldest first: the first one is
    /// served, the others wait for it to go.
    pub l4_routes: Vec<Arc<L4Route>>,
    /// Checks every request of an HTTP or HTTPS listener goes through, in order, before a route
    /// is chosen (Gateway API listener `filters.requests`: ExternalAuth).
    pub pre_routing: Vec<Authorization>,
}

/// The protocol of a listener.
#[derive(Debug, serde::Serialize, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Protocol {
    /// Plain-text HTTP.
    Http,
    /// HTTP over terminated TLS.
    Https,
    /// TLS, terminated or passed through, routed by SNI.
    Tls,
    /// Plain TCP.
    Tcp,
    /// UDP.
    Udp,
}

impl Protocol {
    /// The family of listeners that may share a port: 0 plain HTTP, 1 TLS (HTTPS and TLS), 2 TCP
    /// and UDP (each alone on its port).
    pub fn port_family(self) -> u8 {
        match self {
            Protocol::Http => 0,
            Protocol::Https | Protocol::Tls => 1,
            Protocol::Tcp | Protocol::Udp => 2,
        }
    }
}

/// TLS settings of a listener.
#[derive(Debug, serde::Serialize, Clone, PartialEq)]
pub struct ListenerTls {
    /// Terminate TLS in Envoy, or pass it through to the backend.
    pub mode: TlsMode,
    /// Certificates (Secrets of type `kubernetes.io/tls`), already checked for permission.
    pub certificates: Vec<ObjectRef>,
    /// The lowest TLS version accepted (`1.2` when `None`).
    pub min_version: Option<TlsVersion>,
    /// The highest TLS version accepted (`1.3` when `None`).
    pub max_version: Option<TlsVersion>,
    /// Verification of client certificates.
    pub client_validation: Option<ClientValidation>,
    /// HTTP/3 over QUIC beside TCP: `Some(true)` on, `Some(false)` off, `None` as the
    /// installation's setting says (HTTPProxy `tls.http3`, a contour-rs extension).
    pub http3: Option<bool>,
}

impl ListenerTls {
    /// TLS with these certificates and every other setting at its default.
    pub fn new(mode: TlsMode, certificates: Vec<ObjectRef>) -> Self {
        Self { mode, certificates, min_version: None, max_version: None, client_validation: None, http3: None }
    }
}

/// A TLS protocol version.
#[derive(Debug, serde::Serialize, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TlsVersion {
    /// TLS 1.2.
    V1_2,
    /// TLS 1.3.
    V1_3,
}

/// How client certificates are asked for and checked (downstream mTLS).
#[derive(Debug, serde::Serialize, Clone, Default, PartialEq, Eq)]
pub struct ClientValidation {
    /// The object whose `ca.crt` client certificates must chain to; `None` with `skip_verify`.
    pub ca: Option<ObjectRef>,
    /// Whether `ca` is a Secret (HTTPProxy) or a ConfigMap (a Gateway's frontend validation).
    pub ca_kind: CaKind,
    /// The Secret whose `crl.pem` lists revoked certificates.
    pub crl: Option<ObjectRef>,
    /// Check only the leaf certificate against the CRL.
    pub crl_only_leaf: bool,
    /// Ask for a certificate but accept any.
    pub skip_verify: bool,
    /// Let clients without a certificate in.
    pub optional: bool,
    /// Which details of the client certificate reach the backend (`x-forwarded-client-cert`).
    pub forward: ForwardClientCert,
}

/// Details of the client certificate forwarded in `x-forwarded-client-cert`; none by default.
#[derive(Debug, serde::Serialize, Clone, Copy, Default, PartialEq, Eq)]
pub struct ForwardClientCert {
    /// The subject.
    pub subject: bool,
    /// The whole certificate, URL-encoded PEM.
    pub cert: bool,
    /// The whole chain, URL-encoded PEM.
    pub chain: bool,
    /// DNS subject alternative names.
    pub dns: bool,
    /// URI subject alternative names.
    pub uri: bool,
}

/// Whether Envoy terminates TLS or passes it through.
#[derive(Debug, serde::Serialize, Clone, Copy, PartialEq, Eq)]
pub enum TlsMode {
    /// Envoy terminates TLS with the listener's certificates.
    Terminate,
    /// Envoy routes by SNI and forwards the encrypted stream.
    Passthrough,
}

/// A TLS route: SNI hostnames forwarded to backends without terminating TLS.
#[derive(Debug, serde::Serialize, Clone, PartialEq)]
pub struct TlsRoute {
    /// The object this route comes from.
    pub origin: Origin,
    /// SNI hostnames this route serves; empty means the listener's hostname.
    pub hostnames: Vec<String>,
    /// Creation time (seconds since the epoch): of two routes claiming a server name, the older
    /// one wins, after hostname specificity.
    pub created: i64,
    /// Where the traffic goes.
    pub backends: Vec<Backend>,
    /// Load balancing and health checks of the backends' clusters.
    pub policy: ClusterPolicy,
}

/// A TCPRoute or UDPRoute: every connection (or UDP session) of its listener goes to its
/// backends, split by weight.
#[derive(Debug, serde::Serialize, Clone, PartialEq)]
pub struct L4Route {
    /// The object this route comes from.
    pub origin: Origin,
    /// Where the traffic goes, per rule (the rules of these kinds carry no matches).
    pub rules: Vec<Vec<Backend>>,
}

impl L4Route {
    /// Every backend of every rule, with its rule's index.
    pub fn backends(&self) -> impl Iterator<Item = (usize, usize, &Backend)> {
        self.rules.iter().enumerate().flat_map(|(i, r)| r.iter().enumerate().map(move |(j, b)| (i, j, b)))
    }
}

/// A weighted backend of a route.
#[derive(Debug, serde::Serialize, Clone, PartialEq, Eq, Hash)]
pub struct Backend {
    /// Where the traffic goes, or why it cannot go anywhere.
    pub target: BackendTarget,
    /// The relative share of traffic.
    pub weight: u32,
    /// Protocol, upstream TLS, per-backend header changes; `None` for the defaults.
    pub options: SharedBackendOptions,
}

/// The destination of a backend.
#[derive(Debug, serde::Serialize, Clone, PartialEq, Eq, Hash)]
pub enum BackendTarget {
    /// A port of a Kubernetes Service.
    Service(ServicePort),
    /// A reference the front end could not accept; its share of traffic is answered with 500.
    Invalid,
}

/// A port of a Kubernetes Service.
#[derive(Debug, serde::Serialize, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ServicePort {
    /// The Service's namespace.
    pub namespace: String,
    /// The Service's name.
    pub name: String,
    /// The Service port number.
    pub port: u16,
}

/// A namespaced reference to an object.
#[derive(Debug, serde::Serialize, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectRef {
    /// Namespace of the object.
    pub namespace: String,
    /// Name of the object.
    pub name: String,
}

/// Where a piece of configuration came from.
#[derive(Debug, serde::Serialize, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Origin {
    /// The object kind, such as `HTTPRoute`.
    pub kind: &'static str,
    /// The object's namespace (empty for cluster-scoped kinds).
    pub namespace: String,
    /// The object's name.
    pub name: String,
    /// `metadata.generation` of the object that was read.
    pub generation: i64,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.namespace.is_empty() {
            write!(f, "{} {}", self.kind, self.name)
        } else {
            write!(f, "{} {}/{}", self.kind, self.namespace, self.name)
        }
    }
}
