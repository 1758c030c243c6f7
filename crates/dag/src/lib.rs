//! The DAG: IR fleets resolved against Services, EndpointSlices and Secrets, ready to compile.
//!
//! [`build`] groups listeners by port, merges routes into virtual hosts in Gateway API precedence
//! order, turns backends into clusters, and loads certificates. What cannot be resolved becomes a
//! diagnostic naming the object and field; the rest keeps working.

mod build;
mod conflict;
mod dot;
mod endpoints;
mod order;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::net::IpAddr;

pub use build::{Cache, Options, build, build_cached, jwks_cluster_name};
pub use dot::to_dot;
pub use endpoints::{
    Endpoint, EndpointCache, EndpointChanges, FleetEndpoints, Locality, SliceIndex, fleet_endpoint_changes,
};
pub use ir::{
    ClusterPolicy, Diagnostic, HeaderModifier, HttpMatch, Origin, Redirect, RoutePolicy, ServicePort, UpstreamProtocol,
    UrlRewrite,
};

/// The resolved configuration of every fleet, and the problems found on the way.
#[derive(Debug, serde::Serialize, Clone, Default, PartialEq)]
pub struct Dag {
    /// Fleets by id.
    pub fleets: BTreeMap<String, FleetDag>,
    /// Problems found by the front ends and the DAG builder, sorted.
    pub diagnostics: Vec<Diagnostic>,
}

/// The resolved configuration of one fleet.
#[derive(Debug, serde::Serialize, Clone, Default, PartialEq)]
pub struct FleetDag {
    /// The fleet id.
    pub id: String,
    /// The object the fleet comes from, if any.
    pub origin: Option<Origin>,
    /// The fleet's own bind address, if it has one (host mode, static addresses).
    pub address: Option<IpAddr>,
    /// One listener per port, sorted by port.
    pub listeners: Vec<DagListener>,
    /// Upstream clusters by name. Shared: the same cluster sits in the build caches (per route
    /// and per virtual host), here, and in the xDS and endpoint caches. In shared chunks: a
    /// build patches the map a kept route table holds, and the compiler and the endpoints find
    /// what changed since the previous build by a diff that skips the chunks both share.
    #[serde(serialize_with = "as_map")]
    pub clusters: chunkmap::ChunkMap<String, std::sync::Arc<Cluster>>,
    /// TLS certificates by name.
    pub secrets: BTreeMap<String, TlsSecret>,
    /// CA bundles for verifying peers' certificates, by name (`namespace/name`).
    pub validation: BTreeMap<String, CaBundle>,
    /// The ExtensionServices whose cluster was built, by cluster name: what the global filters
    /// that name one by configuration (tracing) call.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub extensions: BTreeMap<String, std::sync::Arc<ir::ExtensionService>>,
}

/// A chunked map, serialized as a map.
fn as_map<S: serde::Serializer, K: serde::Serialize, V: serde::Serialize>(
    map: &chunkmap::ChunkMap<K, V>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_map(map.iter())
}

/// PEM CA certificates (and optionally revoked ones) used to verify a peer.
#[derive(Debug, serde::Serialize, Clone, PartialEq, Eq)]
pub struct CaBundle {
    /// The bundle's name: `namespace/name/ca` of its Secret or ConfigMap, with the CRL's
    /// `namespace/name` appended when there is one, then `/leaf-crl` and `/untrusted` for the
    /// two switches below (bundles that verify differently never share a name).
    pub name: String,
    /// PEM certificates.
    #[serde(skip)]
    pub ca: Vec<u8>,
    /// A PEM certificate revocation list.
    #[serde(skip)]
    pub crl: Option<Vec<u8>>,
    /// Check only the leaf certificate against the CRL.
    pub crl_only_leaf: bool,
    /// Ask for a certificate but accept one that does not verify (HTTPProxy's
    /// `skipClientCertValidation` with a CA: a certificate is still required, as upstream).
    pub accept_untrusted: bool,
    /// The trust store of the system Envoy runs on, read by Envoy from its own filesystem, in
    /// place of `ca`.
    pub system: bool,
}

/// One port Envoy listens on.
#[derive(Debug, serde::Serialize, Clone, PartialEq)]
pub struct DagListener {
    /// A name unique within the fleet, such as `http-8080`.
    pub name: String,
    /// The bind address; `None` means the controller's default.
    pub address: Option<IpAddr>,
    /// The port.
    pub port: u16,
    /// What the port serves.
    pub kind: ListenerKind,
}

/// What a port serves.
#[derive(Debug, serde::Serialize, Clone, PartialEq)]
pub enum ListenerKind {
    /// Plain HTTP, routed by Host header.
    Http(RouteTable),
    /// TLS, chosen by SNI: terminated HTTPS or passed-through TLS.
    Tls(Vec<TlsChain>),
    /// Plain TCP (a TCPRoute): every connection goes to the weighted clusters.
    Tcp(Vec<WeightedCluster>),
    /// UDP (a UDPRoute): every session goes to the cluster, whose localities carry the
    /// backends' weights; `None` when no backend can take traffic.
    Udp(Option<String>),
}

/// One SNI-selected branch of a TLS port.
#[derive(Debug, serde::Serialize, Clone, PartialEq)]
pub struct TlsChain {
    /// SNI names this chain serves; empty means any.
    pub server_names: Vec<String>,
    /// What happens to the connection.
    pub action: TlsAction,
}

/// What a TLS chain does with a connection.
#[derive(Debug, serde::Serialize, Clone, PartialEq)]
pub enum TlsAction {
    /// Terminate TLS with these certificates and route the HTTP inside.
    Terminate {
        /// Secret names (keys of [`FleetDag::secrets`]).
        secrets: Vec<String>,
        /// Protocol versions and client certificates.
        settings: DownstreamTls,
        /// The routes for the decrypted HTTP.
        routes: RouteTable,
    },
    /// Terminate TLS and forward the decrypted stream (HTTPProxy's tcpproxy with a certificate).
    TerminateTcp {
        /// Secret names (keys of [`FleetDag::secrets`]).
        secrets: Vec<String>,
        /// Protocol versions and client certificates.
        settings: DownstreamTls,
        /// Weighted clusters.
        backends: Vec<WeightedCluster>,
    },
    /// Forward the encrypted stream.
    Passthrough {
        /// Weighted clusters.
        backends: Vec<WeightedCluster>,
    },
}

/// How terminated TLS is negotiated with clients.
#[derive(Debug, serde::Serialize, Clone, Default, PartialEq, Eq)]
pub struct DownstreamTls {
    /// The lowest version accepted (`None`: 1.2).
    pub min_version: Option<ir::TlsVersion>,
    /// The highest version accepted (`None`: 1.3).
    pub max_version: Option<ir::TlsVersion>,
    /// Client certificate checks, if any.
    pub client: Option<ClientAuth>,
    /// HTTP/3 over QUIC too: `Some(true)` on, `Some(false)` off, `None` as the installation's
    /// setting says.
    pub http3: Option<bool>,
}

/// Client certificate checks of a TLS chain.
#[derive(Debug, serde::Serialize, Clone, PartialEq, Eq)]
pub struct ClientAuth {
    /// The validation context (a key of [`FleetDag::validation`]); `None` accepts any certificate.
    pub validation: Option<String>,
    /// Let clients without a certificate in.
    pub optional: bool,
    /// Which certificate details reach the backend.
    pub forward: ir::ForwardClientCert,
}

/// A named set of virtual hosts: one Envoy RouteConfiguration.
#[derive(Debug, serde::Serialize, Clone, PartialEq)]
pub struct RouteTable {
    /// The RouteConfiguration name.
    pub name: String,
    /// Virtual hosts, sorted by hostname; shared with the next build when unchanged.
    pub virtual_hosts: Vec<std::sync::Arc<VirtualHost>>,
    /// The checks of its listeners that run before a route is chosen, in listener order
    /// (Gateway API listener filters); each runs only for its own listener's hosts.
    pub pre_routing: Vec<PreRouting>,
}

/// One check of a listener that runs before a route is chosen.
#[derive(Debug, serde::Serialize, Clone, PartialEq)]
pub struct PreRouting {
    /// The listener's name.
    pub listener: String,
    /// Its place among the listener's checks.
    pub index: usize,
    /// The authorization server asked.
    pub authorization: ir::Authorization,
}

impl PreRouting {
    /// Its name within the connection manager: unique among the checks of a fleet.
    pub fn key(&self) -> String {
        format!("{}/{}", self.listener, self.index)
    }
}

/// The routes for one hostname.
#[derive(Debug, serde::Serialize, Clone, PartialEq)]
pub struct VirtualHost {
    /// The hostname, `*.example.com`, or `*` for any.
    pub hostname: String,
    /// Routes in match order; shared with the next build when unchanged.
    pub routes: Vec<std::sync::Arc<Route>>,
    /// CORS, IP filter and rate limit of the whole host.
    pub policy: Option<std::sync::Arc<ir::VirtualHostPolicy>>,
    /// The [`PreRouting`] checks (by key) run for this host: those of the listener that owns it.
    pub pre_routing: Vec<String>,
}

/// One match and what to do with requests that satisfy it.
#[derive(Debug, serde::Serialize, Clone, PartialEq)]
pub struct Route {
    /// The conditions.
    pub matcher: HttpMatch,
    /// The action.
    pub action: RouteAction,
    /// Request header changes.
    pub request_headers: HeaderModifier,
    /// Response header changes.
    pub response_headers: HeaderModifier,
    /// The request timeout in milliseconds; `Some(0)` disables it.
    pub timeout_ms: Option<u64>,
    /// Idle timeout, retries, websockets, hashing, internal redirects.
    pub policy: RoutePolicy,
    /// The route object this came from.
    pub origin: std::sync::Arc<Origin>,
}

/// What a route does.
#[derive(Debug, serde::Serialize, Clone, PartialEq)]
pub enum RouteAction {
    /// Forward to weighted clusters.
    Forward {
        /// Weighted clusters; a `None` cluster stands for an invalid backend (answered with 500).
        backends: Vec<WeightedCluster>,
        /// Host and path rewrite.
        rewrite: Option<UrlRewrite>,
        /// Mirrors: cluster name and percent.
        mirrors: Vec<(String, u32)>,
    },
    /// Answer with a redirect.
    Redirect(Redirect),
    /// Answer directly.
    Direct {
        /// HTTP status.
        status: u16,
        /// Body.
        body: Option<String>,
    },
}

/// A cluster and its share of traffic.
#[derive(Debug, serde::Serialize, Clone, PartialEq, Eq)]
pub struct WeightedCluster {
    /// The cluster name, or `None` for a backend that could not be resolved.
    pub cluster: Option<String>,
    /// The relative weight.
    pub weight: u32,
    /// Per-backend request changes (the other backend options live on the cluster).
    pub filters: Option<std::sync::Arc<BackendFilters>>,
}

/// What changes about requests to one backend of a route, and its answers.
#[derive(Debug, serde::Serialize, Clone, Default, PartialEq, Eq)]
pub struct BackendFilters {
    /// Request header changes.
    pub request: HeaderModifier,
    /// Response header changes.
    pub response: HeaderModifier,
    /// The Host header sent to this backend.
    pub host_rewrite: Option<String>,
    /// Attribute changes of the cookies this backend sets (applied after the route's).
    pub cookie_rewrites: Vec<ir::CookieRewrite>,
}

/// How a backend's certificate is verified.
#[derive(Debug, serde::Serialize, Clone, PartialEq, Eq)]
pub struct Verify {
    /// The CA bundle, a key of [`FleetDag::validation`].
    pub ca: String,
    /// DNS subject alternative names, one of which (or of `uris`) the certificate must carry.
    pub names: Vec<String>,
    /// URI subject alternative names.
    pub uris: Vec<String>,
}

/// An upstream cluster: one port of one Service, with one set of settings.
#[derive(Debug, serde::Serialize, Clone, PartialEq, Eq)]
pub struct Cluster {
    /// The cluster name: `namespace/service/port`, plus a hash of the settings when they are
    /// not the defaults, so that routes asking for different settings get different clusters.
    pub name: String,
    /// The Service port.
    pub service: ServicePort,
    /// The Service port's name, matched against EndpointSlice ports.
    pub port_name: String,
    /// The protocol spoken upstream when not plain HTTP/1.1.
    pub protocol: Option<UpstreamProtocol>,
    /// Load balancing, health checks, connection idle timeout.
    pub policy: ClusterPolicy,
    /// Upstream TLS verification: the CA and the names to match.
    pub validation: Option<Verify>,
    /// Slow start for new endpoints.
    pub slow_start: Option<ir::SlowStart>,
    /// Passive health checks of its endpoints.
    pub outlier_detection: Option<ir::OutlierDetection>,
    /// The name of the Service port health checks go to, when not the traffic port.
    pub health_port_name: Option<String>,
    /// The server name sent when speaking TLS to the backend.
    pub sni: Option<String>,
    /// Limits from the Service's `projectcontour.io/max-*` annotations.
    pub circuit_breakers: CircuitBreakers,
    /// The DNS name of an ExternalName Service (`enableExternalNameService`): Envoy resolves it
    /// itself instead of taking endpoints over EDS.
    pub external_name: Option<String>,
    /// The secret (a key of [`FleetDag::secrets`]) whose certificate Envoy presents to the
    /// backend over TLS.
    pub client_certificate: Option<String>,
    /// How an `external_name` is resolved (`auto`, `v4`, `v6`, `all`) when not as
    /// `cluster.dns-lookup-family` says (a JWKS server's `dnsLookupFamily`).
    pub dns_lookup_family: Option<String>,
    /// Further Service ports whose endpoints join this cluster's, each with its port name (an
    /// ExtensionService with several Services; upstream gives each a locality of one cluster).
    pub more_services: Vec<(ServicePort, String)>,
    /// The weight of each Service port of [`Cluster::services`], in that order, when each is a
    /// locality of its own (a UDPRoute's backends); empty for one locality.
    pub locality_weights: Vec<u32>,
}

impl Cluster {
    /// Every Service port whose endpoints the cluster takes, with its port name.
    pub fn services(&self) -> impl Iterator<Item = (&ServicePort, &str)> {
        std::iter::once((&self.service, self.port_name.as_str()))
            .chain(self.more_services.iter().map(|(s, name)| (s, name.as_str())))
    }

    /// Whether Envoy speaks TLS to the cluster's endpoints (and so may present a certificate).
    pub fn speaks_tls(&self) -> bool {
        matches!(self.protocol, Some(UpstreamProtocol::Tls | UpstreamProtocol::H2)) || self.validation.is_some()
    }
}

/// Connection and request limits of a cluster (upstream's Service annotations); `None` keeps
/// Envoy's default.
#[derive(Debug, serde::Serialize, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct CircuitBreakers {
    /// `projectcontour.io/max-connections`.
    pub max_connections: Option<u32>,
    /// `projectcontour.io/max-pending-requests`.
    pub max_pending_requests: Option<u32>,
    /// `projectcontour.io/max-requests`.
    pub max_requests: Option<u32>,
    /// `projectcontour.io/max-retries`.
    pub max_retries: Option<u32>,
    /// `projectcontour.io/per-host-max-connections`.
    pub per_host_max_connections: Option<u32>,
}

impl CircuitBreakers {
    /// These limits, each unset one taken from `defaults` (upstream's global circuit-breaker
    /// defaults fill in what a Service leaves unset, field by field).
    pub fn or(&self, defaults: &CircuitBreakers) -> CircuitBreakers {
        CircuitBreakers {
            max_connections: self.max_connections.or(defaults.max_connections),
            max_pending_requests: self.max_pending_requests.or(defaults.max_pending_requests),
            max_requests: self.max_requests.or(defaults.max_requests),
            max_retries: self.max_retries.or(defaults.max_retries),
            per_host_max_connections: self.per_host_max_connections.or(defaults.per_host_max_connections),
        }
    }
}

/// A TLS certificate and key, or one secret value (`generic`, such as an OpenID client's
/// secret). Its `Debug` leaves the key and the value out.
#[derive(serde::Serialize, Clone, PartialEq, Eq)]
pub struct TlsSecret {
    /// The secret name, `namespace/name`.
    pub name: String,
    /// PEM certificate chain.
    #[serde(skip)]
    pub certificate_chain: Vec<u8>,
    /// PEM private key, or the generic secret's value; never serialized.
    #[serde(skip)]
    pub private_key: Vec<u8>,
    /// A generic secret: `private_key` is its value, and there is no certificate.
    pub generic: bool,
}

impl std::fmt::Debug for TlsSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsSecret")
            .field("name", &self.name)
            .field("certificate_chain", &format_args!("{} bytes", self.certificate_chain.len()))
            .field("private_key", &format_args!("<redacted>"))
            .field("generic", &self.generic)
            .finish()
    }
}
