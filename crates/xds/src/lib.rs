//! The xDS compiler: a [`dag::Dag`] into Envoy resources, per fleet.
//!
//! Pure: protobuf messages only, no gRPC service code. Every resource carries a version that is a
//! hash of its encoded bytes, so an unchanged resource has an unchanged version and costs nothing
//! on the wire. Maps are avoided in the messages (or hold one entry) so encoding is deterministic.

pub mod accesslog;
mod cluster;
mod compression;
mod cors;
mod custom_response;
mod ext_authz;
mod geoip;
mod http3;
mod jwt;
mod listener;
mod lua;
mod matchers;
mod oauth2;
mod ordered;
pub mod per_type;
mod ratelimit;
mod rbac;
mod retry;
mod route;
mod runtime;
mod secret;
pub mod settings;
mod tcp;
mod tracer;
mod transport;
mod udp;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

use envoy_types::pb::envoy::config::core::v3::{AggregatedConfigSource, ApiVersion, ConfigSource, config_source};
use envoy_types::pb::google::protobuf::Any;
use prost::{Message, Name};
use sha2::{Digest, Sha256};

pub use cluster::{LoadAssignmentCache, load_assignments_cached, update_load_assignments};
pub use route::VHDS_ROUTE_CONFIGURATION_HEADER;
pub use runtime::RUNTIME_LAYER;
pub use settings::{ClusterOptions, ListenerOptions};
pub use tracer::{CustomTag, TagValue, Tracing};

/// The resource types the controller serves, in make-before-break order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ResourceType {
    /// RTDS: the runtime layer `dynamic` of the bootstrap (Envoy's runtime keys the
    /// configuration sets), first: nothing depends on it and Envoy waits for it at start.
    Runtime,
    /// CDS: clusters, first so routes never name a missing cluster.
    Cluster,
    /// EDS: endpoints of the clusters.
    Endpoint,
    /// SDS: certificates, before the listeners that use them.
    Secret,
    /// LDS: listeners.
    Listener,
    /// RDS: route configurations with their virtual hosts inline (State-of-the-World streams).
    Route,
    /// RDS for Delta streams: the same route configurations, naming VHDS as the source of their
    /// virtual hosts. Same type URL as [`ResourceType::Route`]; a Delta ADS stream gets these
    /// instead, so a one-host change sends one virtual host, not every host of the listener.
    RouteVhds,
    /// VHDS: the virtual hosts of [`ResourceType::RouteVhds`], each named
    /// `<route configuration>/<host>` (Envoy matches them to their route configuration by that
    /// prefix). Delta only.
    VirtualHost,
}

impl ResourceType {
    /// All types, in make-before-break order.
    pub const ALL: [ResourceType; 8] = [
        ResourceType::Runtime,
        ResourceType::Cluster,
        ResourceType::Endpoint,
        ResourceType::Secret,
        ResourceType::Listener,
        ResourceType::Route,
        ResourceType::RouteVhds,
        ResourceType::VirtualHost,
    ];

    /// The xDS type URL.
    pub fn type_url(self) -> &'static str {
        match self {
            ResourceType::Runtime => "type.googleapis.com/envoy.service.runtime.v3.Runtime",
            ResourceType::Cluster => "type.googleapis.com/envoy.config.cluster.v3.Cluster",
            ResourceType::Endpoint => "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment",
            ResourceType::Secret => "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret",
            ResourceType::Listener => "type.googleapis.com/envoy.config.listener.v3.Listener",
            ResourceType::Route | ResourceType::RouteVhds => {
                "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
            }
            ResourceType::VirtualHost => "type.googleapis.com/envoy.config.route.v3.VirtualHost",
        }
    }

    /// The type for a type URL (route configurations: [`ResourceType::Route`]).
    pub fn from_type_url(url: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.type_url() == url)
    }

    /// A short name for logs and metrics (`cds`, `eds`, ...).
    pub fn short(self) -> &'static str {
        match self {
            ResourceType::Runtime => "rtds",
            ResourceType::Cluster => "cds",
            ResourceType::Endpoint => "eds",
            ResourceType::Secret => "sds",
            ResourceType::Listener => "lds",
            ResourceType::Route | ResourceType::RouteVhds => "rds",
            ResourceType::VirtualHost => "vhds",
        }
    }

    /// Whether State-of-the-World responses of this type must carry every resource (LDS, CDS);
    /// the others carry just the names the client asked for.
    pub fn is_wildcard(self) -> bool {
        matches!(self, ResourceType::Cluster | ResourceType::Listener)
    }

    /// Whether a subscribed name stands for every resource under `<name>/` (VHDS: a route
    /// configuration's name subscribes to all its virtual hosts).
    pub fn is_namespaced(self) -> bool {
        self == ResourceType::VirtualHost
    }

    /// The types a stream of this kind is served: route configurations inline for
    /// State-of-the-World, over VHDS for Delta.
    pub fn served_by(delta: bool) -> &'static [ResourceType] {
        use ResourceType::*;
        if delta {
            &[Runtime, Cluster, Endpoint, Secret, Listener, RouteVhds, VirtualHost]
        } else {
            &[Runtime, Cluster, Endpoint, Secret, Listener, Route]
        }
    }
}

/// One encoded resource with its content-hash version. Cheap to clone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    /// The resource name.
    pub name: Arc<str>,
    /// A hash of the encoded resource.
    pub version: Arc<str>,
    /// The resource, packed.
    pub body: Arc<Any>,
}

impl Resource {
    /// Packs a message and computes its version.
    pub fn new<M: Message + Name>(name: &str, message: M) -> Self {
        Self::from_any(name, envoy_types::util::pack_any(message))
    }

    /// Wraps an already-packed resource and computes its version.
    pub fn from_any(name: &str, body: Any) -> Self {
        let digest = Sha256::new().chain_update(body.type_url.as_bytes()).chain_update(&body.value).finalize();
        Self::with_digest(name, body, &digest)
    }

    /// Wraps a packed resource whose content digest the caller computed (from cached pieces).
    pub(crate) fn with_digest(name: &str, body: Any, digest: &[u8]) -> Self {
        let version: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
        Self { name: name.into(), version: version.into(), body: Arc::new(body) }
    }
}

/// Resources of one type, by name, in shared chunks: a build patches the previous map, and a
/// stream finds what changed without walking the chunks both share.
pub type Resources = chunkmap::ChunkMap<Arc<str>, Resource>;

/// Every resource of one fleet, by type.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FleetResources {
    /// Resources by type, each map shared: a fleet clones in constant time, and a stream tells an
    /// unchanged type by pointer.
    pub by_type: BTreeMap<ResourceType, Arc<Resources>>,
}

impl FleetResources {
    /// The resources of one type (empty if none).
    pub fn of(&self, t: ResourceType) -> &Resources {
        static EMPTY: Resources = Resources::new();
        self.by_type.get(&t).map_or(&EMPTY, |r| r)
    }

    /// The shared map of one type, if the fleet has any of it.
    pub fn shared(&self, t: ResourceType) -> Option<&Arc<Resources>> {
        self.by_type.get(&t)
    }

    /// Inserts a resource.
    pub fn insert(&mut self, t: ResourceType, r: Resource) {
        Arc::make_mut(self.by_type.entry(t).or_default()).insert(Arc::clone(&r.name), r);
    }

    /// Inserts a route configuration in both forms: inline for State-of-the-World streams, and
    /// over VHDS for Delta streams (see [`ResourceType::RouteVhds`]).
    pub fn insert_route_configuration(&mut self, rc: envoy_types::pb::envoy::config::route::v3::RouteConfiguration) {
        self.insert_forms(route::forms_of(rc));
    }

    fn insert_forms(&mut self, forms: route::RouteForms) {
        self.insert(ResourceType::Route, forms.inline);
        self.insert(ResourceType::RouteVhds, forms.vhds);
        for vh in forms.virtual_hosts.values() {
            self.insert(ResourceType::VirtualHost, vh.clone());
        }
    }

    /// The number of resources and their encoded bytes, as a State-of-the-World stream gets
    /// them (route configurations with their virtual hosts inline).
    pub fn size(&self) -> (usize, usize) {
        ResourceType::served_by(false)
            .iter()
            .flat_map(|t| self.of(*t).values())
            .fold((0, 0), |(n, b), r| (n + 1, b + r.body.value.len()))
    }
}

/// Settings of the compiler that do not come from objects.
#[derive(Debug, Clone)]
pub struct CompileOptions {
    /// The bind address for listeners whose fleet names none.
    pub default_address: IpAddr,
    /// Envoy's stats and health listener (`/ready`, `/stats`, `/stats/prometheus`), upstream's
    /// 0.0.0.0:8002 in a cluster; `None` serves none.
    pub stats_listener: Option<std::net::SocketAddr>,
    /// Envoy's read-only admin listener, upstream's 127.0.0.1:9001; `None` serves none.
    pub admin_listener: Option<std::net::SocketAddr>,
    /// Envoy's statistics on an address of their own or over HTTPS (`metrics.envoy`); `None`
    /// serves them beside `/ready` on [`CompileOptions::stats_listener`].
    pub metrics_listener: Option<MetricsListener>,
    /// A second readiness listener (`/ready`) that the overload manager's connection limit does
    /// apply to (upstream's `omEnforcedHealthListener`): it stops answering when Envoy is full.
    pub om_enforced_health_listener: Option<std::net::SocketAddr>,
    /// Merge repeated slashes in request paths before routing (upstream's default; contour.yaml
    /// `disableMergeSlashes: true` turns it off).
    pub merge_slashes: bool,
    /// Everything else about the listeners that carry traffic.
    pub listener: ListenerOptions,
    /// How upstream clusters are built.
    pub cluster: ClusterOptions,
    /// The authorization server checking every request of the default fleet whose virtual host
    /// has none of its own (`globalExtAuth`).
    pub global_authorization: Option<ir::Authorization>,
    /// The rate-limit service the default fleet asks about global limits (`rateLimitService`).
    pub rate_limit_service: Option<RateLimitService>,
    /// The GeoIP databases of location rules (ContourConfiguration `geoIP`).
    pub geoip: Option<ir::GeoDatabases>,
    /// Spans of the default fleet's requests to an OpenTelemetry collector (`tracing`), once its
    /// ExtensionService is valid.
    pub tracing: Option<Tracing>,
    /// Also encode each plain-HTTP route table's virtual hosts as VHDS resources, for a server
    /// that serves them (`contour-serve --vhds=true`). Off, only the inline form is made: at 10k
    /// virtual hosts the second form's encodings alone held 3 MiB nothing read.
    pub vhds: bool,
}

/// Upstream's `rateLimitService`: where Envoy asks, in which domain, and what happens when it
/// cannot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateLimitService {
    /// The ExtensionService's cluster, `extension/<namespace>/<name>`.
    pub cluster: String,
    /// The rate-limit domain of the descriptors.
    pub domain: String,
    /// Let requests through when the service cannot answer (otherwise they get 500).
    pub fail_open: bool,
    /// How long an answer may take, in milliseconds; `None` is Envoy's default (20 ms).
    pub timeout_ms: Option<u64>,
    /// Send `X-RateLimit-*` headers (draft 03).
    pub x_ratelimit_headers: bool,
    /// Answer gRPC requests over the limit with RESOURCE_EXHAUSTED instead of UNAVAILABLE.
    pub resource_exhausted: bool,
}

impl Default for CompileOptions {
    fn default() -> Self {
        Self {
            default_address: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            stats_listener: None,
            admin_listener: None,
            om_enforced_health_listener: None,
            metrics_listener: None,
            merge_slashes: true,
            listener: ListenerOptions::default(),
            cluster: ClusterOptions::default(),
            global_authorization: None,
            rate_limit_service: None,
            geoip: None,
            tracing: None,
            vhds: false,
        }
    }
}

/// Where Envoy serves its statistics when not beside `/ready`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricsListener {
    /// The address and port.
    pub address: std::net::SocketAddr,
    /// HTTPS with these files, when given.
    pub tls: Option<MetricsTls>,
}

/// The files (in Envoy's filesystem) of the statistics listener's HTTPS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricsTls {
    /// The certificate chain.
    pub cert_file: String,
    /// Its private key.
    pub key_file: String,
    /// The CA that scrapers' client certificates must chain to; `None` asks for none.
    pub ca_file: Option<String>,
}

/// Compiles every fleet except its endpoints (see [`load_assignments_cached`], which an endpoint-only
/// change calls alone).
pub fn compile(dag: &dag::Dag, options: &CompileOptions) -> BTreeMap<String, FleetResources> {
    compile_cached(dag, options, &mut Cache::default())
}

/// Encoded pieces kept between builds; see [`compile_cached`].
#[derive(Debug, Default)]
pub struct Cache {
    routes: route::RouteCache,
    /// Each fleet's clusters as last compiled, by fleet id.
    clusters: rustc_hash::FxHashMap<String, CompiledClusters>,
    builds: u64,
}

/// A fleet's clusters as the last build compiled them: the DAG's map and the resources made
/// from it. The next build patches the resources with what differs between the two DAG maps.
#[derive(Debug)]
struct CompiledClusters {
    options: ClusterOptions,
    dag: chunkmap::ChunkMap<String, Arc<dag::Cluster>>,
    resources: Arc<Resources>,
    used: u64,
}

impl Cache {
    /// How many times a build patched a kept route configuration instead of encoding it whole.
    pub fn patched_route_configurations(&self) -> u64 {
        self.routes.patched
    }
}

/// [`compile`], re-encoding only the routes, virtual hosts and clusters the DAG did not share
/// with the previous build.
pub fn compile_cached(dag: &dag::Dag, options: &CompileOptions, cache: &mut Cache) -> BTreeMap<String, FleetResources> {
    cache.routes.set_metadata(options.listener.access_log.uses_route_metadata());
    cache.builds += 1;
    let out: BTreeMap<String, FleetResources> =
        dag.fleets.iter().map(|(id, fleet)| (id.clone(), compile_fleet(fleet, options, cache))).collect();
    cache.routes.sweep();
    let build = cache.builds;
    cache.clusters.retain(|_, c| c.used == build);
    out
}

/// A fleet's cluster resources: the previous build's patched with the clusters that differ
/// between its DAG map and this one (the chunks both share are skipped), or all encoded.
fn fleet_clusters(fleet: &dag::FleetDag, options: &CompileOptions, cache: &mut Cache) -> Arc<Resources> {
    let build = cache.builds;
    if let Some(kept) = cache.clusters.get_mut(&fleet.id)
        && kept.options == options.cluster
    {
        let mut changes = Vec::new();
        kept.dag.diff(
            &fleet.clusters,
            |a, b| Arc::ptr_eq(a, b) || a == b,
            |name, _, now| {
                changes.push((name, now));
                std::ops::ControlFlow::Continue(())
            },
        );
        if !changes.is_empty() {
            let resources = Arc::make_mut(&mut kept.resources);
            for (name, now) in changes {
                match now {
                    Some(c) => {
                        let r = cluster::cluster(c, &options.cluster);
                        resources.insert(Arc::clone(&r.name), r);
                    }
                    None => {
                        resources.remove(name.as_str());
                    }
                }
            }
        }
        kept.dag = fleet.clusters.clone();
        kept.used = build;
        return Arc::clone(&kept.resources);
    }
    let resources: Resources = fleet
        .clusters
        .values()
        .map(|c| {
            let r = cluster::cluster(c, &options.cluster);
            (Arc::clone(&r.name), r)
        })
        .collect();
    let kept = CompiledClusters {
        options: options.cluster.clone(),
        dag: fleet.clusters.clone(),
        resources: Arc::new(resources),
        used: build,
    };
    let resources = Arc::clone(&kept.resources);
    cache.clusters.insert(fleet.id.clone(), kept);
    resources
}

fn compile_fleet(fleet: &dag::FleetDag, options: &CompileOptions, cache: &mut Cache) -> FleetResources {
    let mut out = FleetResources::default();
    let clusters = fleet_clusters(fleet, options, cache);
    if !clusters.is_empty() {
        out.by_type.insert(ResourceType::Cluster, clusters);
    }
    for s in fleet.secrets.values() {
        out.insert(ResourceType::Secret, secret::secret(s));
    }
    for b in fleet.validation.values() {
        out.insert(ResourceType::Secret, secret::validation(b));
    }
    for s in options.metrics_listener.iter().filter_map(|m| m.tls.as_ref()).flat_map(secret::metrics) {
        out.insert(ResourceType::Secret, s);
    }
    out.insert(ResourceType::Runtime, runtime::layer(fleet, &options.listener));
    for listener in listener::envoy_listeners(options, fleet.address) {
        out.insert(ResourceType::Listener, listener);
    }
    // VHDS virtual hosts: a table's map as it comes (patched from the previous build's), or
    // the tables' maps merged when several have some.
    let mut virtual_hosts: Vec<Resources> = Vec::new();
    for l in &fleet.listeners {
        let (listeners, tables) = listener::listener(l, options, fleet);
        for listener in listeners {
            out.insert(ResourceType::Listener, listener);
        }
        for (table, vhds, alt_svc) in tables {
            let forms = route::route_configuration(&fleet.id, table, vhds && options.vhds, alt_svc, &mut cache.routes);
            out.insert(ResourceType::Route, forms.inline);
            out.insert(ResourceType::RouteVhds, forms.vhds);
            if !forms.virtual_hosts.is_empty() {
                virtual_hosts.push(forms.virtual_hosts);
            }
        }
    }
    let map = match virtual_hosts.len() {
        0 => None,
        1 => virtual_hosts.pop(),
        // Of a name in several, the last table's, as inserting one by one would keep.
        _ => Some(virtual_hosts.iter().flat_map(|m| m.iter().map(|(n, r)| (Arc::clone(n), r.clone()))).collect()),
    };
    if let Some(map) = map {
        out.by_type.insert(ResourceType::VirtualHost, Arc::new(map));
    }
    out
}

/// A config source that says "over the same ADS stream".
pub(crate) fn ads() -> ConfigSource {
    ConfigSource {
        resource_api_version: ApiVersion::V3 as i32,
        config_source_specifier: Some(config_source::ConfigSourceSpecifier::Ads(AggregatedConfigSource {})),
        ..Default::default()
    }
}

/// A protobuf duration from milliseconds, capped at the largest duration Envoy accepts
/// (10,000 years) so that no value can make it refuse the configuration.
pub(crate) fn duration_ms(ms: u64) -> envoy_types::pb::google::protobuf::Duration {
    const MAX_MS: u64 = 315_576_000_000 * 1000;
    let ms = ms.min(MAX_MS);
    envoy_types::pb::google::protobuf::Duration { seconds: (ms / 1000) as i64, nanos: ((ms % 1000) * 1_000_000) as i32 }
}

/// A connection manager as a listener's network filter.
pub(crate) fn connection_manager_filter(
    hcm: envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::HttpConnectionManager,
) -> envoy_types::pb::envoy::config::listener::v3::Filter {
    use envoy_types::pb::envoy::config::listener::v3::{Filter, filter};
    Filter {
        name: "envoy.filters.network.http_connection_manager".into(),
        config_type: Some(filter::ConfigType::TypedConfig(envoy_types::util::pack_any(hcm))),
    }
}

/// An HTTP filter of a connection manager, configured by `config`.
pub(crate) fn http_filter(
    name: &str,
    config: envoy_types::pb::google::protobuf::Any,
) -> envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::HttpFilter {
    use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::{HttpFilter, http_filter};
    HttpFilter {
        name: name.into(),
        config_type: Some(http_filter::ConfigType::TypedConfig(config)),
        ..Default::default()
    }
}
