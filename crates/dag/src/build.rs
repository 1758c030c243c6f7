//! IR + snapshot into the DAG.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::{FxHashMap, FxHashSet};
use std::sync::Arc;

use ir::{
    Backend, BackendTarget, Diagnostic, HeaderModifier, HttpFilter, Ir, Origin, Protocol, Severity, TlsMode,
    UpstreamProtocol, reason,
};
use objects::{Kind, ObjectKey, Reads, Snapshot};

use crate::order::{RouteRank, precedence_key};

mod clusters;
mod table;
mod tls;
pub use clusters::jwks_cluster_name;

use crate::{
    BackendFilters, CaBundle, CircuitBreakers, ClientAuth, Cluster, ClusterPolicy, Dag, DagListener, DownstreamTls,
    FleetDag, ListenerKind, PreRouting, Route, RouteAction, RoutePolicy, RouteTable, TlsAction, TlsChain, TlsSecret,
    Verify, VirtualHost, WeightedCluster,
};

/// Resolves the IR against the snapshot. `diagnostics` are the front ends' findings; the DAG's
/// own are added and the whole list is returned sorted in [`Dag::diagnostics`].
pub fn build(ir: &Ir, snapshot: &Snapshot, diagnostics: Vec<Diagnostic>) -> Dag {
    build_cached(ir, snapshot, diagnostics, &mut Cache::default())
}

/// [`build`], reusing routes and virtual hosts that `cache` holds from the previous build.
pub fn build_cached(ir: &Ir, snapshot: &Snapshot, diagnostics: Vec<Diagnostic>, cache: &mut Cache) -> Dag {
    // Routes resolve Services (and CA Secrets or ConfigMaps): each cached route records what it
    // read, and is rebuilt only when one of those objects changed.
    let changed = cache.kinds.changed(snapshot, READ_KINDS);
    cache.generation += 1;
    if cache.backend_tls != ir.backend_tls {
        // A policy changes the clusters of the routes to its Services: rare, so build them all.
        cache.routes.clear();
        cache.vhosts.clear();
        cache.tables.clear();
        cache.backend_tls = ir.backend_tls.clone();
    }
    let mut b = Builder {
        snapshot,
        diagnostics,
        cache,
        changed,
        fleet: String::new(),
        reads: None,
        listener: (0, "http"),
        udp: false,
        terminated: false,
        backend_tls: &ir.backend_tls,
    };
    let mut fleets = BTreeMap::new();
    for fleet in &ir.fleets {
        fleets.insert(fleet.id.clone(), b.fleet(fleet));
    }
    let mut diagnostics = b.diagnostics;
    diagnostics.sort();
    diagnostics.dedup();
    let generation = cache.generation;
    cache.routes.retain(|_, c| c.used == generation);
    cache.vhosts.retain(|_, table| {
        table.retain(|_, c| c.used == generation);
        !table.is_empty()
    });
    cache.tables.retain(|_, t| t.used == generation);
    Dag { fleets, diagnostics }
}

/// Settings of the DAG that do not come from objects.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// ExternalName Services may be backends (upstream's `enableExternalNameService`, off by
    /// default).
    pub external_names: bool,
    /// The Secret whose certificate Envoy presents to backends it speaks TLS to
    /// (`tls.envoy-client-certificate`).
    pub client_certificate: Option<ir::ObjectRef>,
}

impl Cache {
    /// How many times a build patched a kept route table instead of building it whole.
    pub fn patched_tables(&self) -> u64 {
        self.patched
    }

    /// The settings the next builds use; a change forgets every cached route.
    pub fn set_options(&mut self, options: &Options) {
        if self.options != *options {
            *self = Cache { options: options.clone(), ..Cache::default() };
        }
    }
}

/// DAG pieces kept between builds, keyed by the identity of the IR routes they came from.
#[derive(Debug, Default)]
pub struct Cache {
    options: Options,
    kinds: objects::KindWatch,
    generation: u64,
    routes: FxHashMap<usize, CachedRoute>,
    /// By route table name, then hostname: looked up by `&str`, with nothing allocated.
    vhosts: FxHashMap<String, FxHashMap<String, CachedVhost>>,
    /// Large route tables as the last build left them, by fleet and name.
    tables: FxHashMap<String, table::Kept>,
    /// How many times a kept table was patched instead of built whole.
    patched: u64,
    /// The BackendTLSPolicies the cached routes were built with.
    backend_tls: Vec<ir::BackendTlsPolicy>,
}

#[derive(Debug)]
struct CachedRoute {
    /// Keeps the IR route alive, so its address (the key) is not reused while cached.
    _route: Arc<ir::HttpRoute>,
    parts: Arc<RouteParts>,
    /// The Services, Secrets, ConfigMaps and ClusterTrustBundles building it read.
    reads: Reads,
    used: u64,
}

/// The kinds a route's build reads object by object.
const READ_KINDS: &[Kind] = &[Kind::Service, Kind::Secret, Kind::ConfigMap, Kind::ClusterTrustBundle];

#[derive(Debug)]
struct CachedVhost {
    members: Vec<usize>,
    vhost: Arc<VirtualHost>,
    uses: Arc<Uses>,
    diagnostics: Arc<[Diagnostic]>,
    used: u64,
}

/// What routes add to their fleet besides themselves: clusters, the CA bundles that verify
/// backends, and the certificates presented to backends.
#[derive(Debug, Default)]
pub(crate) struct Uses {
    clusters: Vec<Arc<Cluster>>,
    validation: Vec<CaBundle>,
    secrets: Vec<TlsSecret>,
}

impl Uses {
    /// What a scratch fleet collected while routes were built.
    fn of(fleet: FleetDag) -> Uses {
        Uses {
            clusters: fleet.clusters.values().cloned().collect(),
            validation: fleet.validation.into_values().collect(),
            secrets: fleet.secrets.into_values().collect(),
        }
    }
}

/// What one IR route becomes: DAG routes by rule and match, what they use, problems.
#[derive(Debug)]
pub(crate) struct RouteParts {
    routes: Vec<Vec<Arc<Route>>>,
    uses: Uses,
    diagnostics: Vec<Diagnostic>,
}

struct Builder<'a> {
    snapshot: &'a Snapshot,
    diagnostics: Vec<Diagnostic>,
    cache: &'a mut Cache,
    /// What changed since the previous build.
    changed: objects::Changes,
    /// The id of the fleet being built.
    fleet: String,
    /// What the route being built has read so far (none outside routes: not cached).
    reads: Option<Reads>,
    /// The port whose routes are being built and the scheme it serves, for redirects that keep
    /// the listener's port.
    listener: (u16, &'static str),
    /// Clusters being built are for UDP: they take the Services' UDP ports.
    udp: bool,
    /// Clusters being built carry connections whose TLS a listener terminated: a TLSRoute's
    /// backends then speak TLS where a BackendTLSPolicy asks for it.
    terminated: bool,
    /// The BackendTLSPolicies that apply, sorted by Service and section.
    backend_tls: &'a [ir::BackendTlsPolicy],
}

impl Builder<'_> {
    fn fleet(&mut self, fleet: &ir::Fleet) -> FleetDag {
        self.fleet.clone_from(&fleet.id);
        let mut out = FleetDag {
            id: fleet.id.clone(),
            origin: fleet.origin.clone(),
            address: fleet.address,
            ..Default::default()
        };
        // UDP ports are apart from TCP ones: a UDP listener may share a number with a TCP one.
        let mut ports: BTreeMap<(u16, bool), Vec<(usize, &ir::Listener)>> = BTreeMap::new();
        for (i, l) in fleet.listeners.iter().enumerate() {
            if l.port != 0 {
                ports.entry((l.port, l.protocol == Protocol::Udp)).or_default().push((i, l));
            }
        }
        for ((port, _), listeners) in ports {
            let (prefix, kind) = match listeners[0].1.protocol {
                Protocol::Http => {
                    self.listener = (port, "http");
                    let name = format!("http-{port}");
                    ("http", ListenerKind::Http(self.route_table(name, &listeners, &mut out)))
                }
                Protocol::Tcp | Protocol::Udp => {
                    // The front end lets one TCP or UDP listener have a port. Its oldest route is
                    // served; the others are checked for status.
                    let listener = listeners[0].1;
                    let Some((route, waiting)) = listener.l4_routes.split_first() else { continue };
                    self.check_l4(waiting, listener.protocol == Protocol::Udp);
                    if listener.protocol == Protocol::Udp {
                        ("udp", ListenerKind::Udp(self.udp_cluster(route, &mut out)))
                    } else {
                        let policy = ClusterPolicy::default();
                        let mut backends = Vec::new();
                        for (i, rule) in route.rules.iter().enumerate() {
                            backends.extend(self.backends(&route.origin, i, rule, &policy, &mut out));
                        }
                        ("tcp", ListenerKind::Tcp(backends))
                    }
                }
                _ => ("https", ListenerKind::Tls(self.tls_chains(fleet, port, &listeners, &mut out))),
            };
            if matches!(&kind, ListenerKind::Tls(chains) if chains.is_empty()) {
                // Nothing to serve on this port yet (no route, no usable certificate): Envoy
                // refuses a listener without filter chains, so there is none.
                continue;
            }
            out.listeners.push(DagListener { name: format!("{prefix}-{port}"), address: fleet.address, port, kind });
        }
        // Routes on listeners that are not served still get their Services checked, so their
        // status says what is wrong with them.
        for l in fleet.listeners.iter().filter(|l| l.port == 0) {
            self.check_routes(l);
        }
        for ext in &fleet.extensions {
            if self.extension_cluster(ext, &mut out) {
                out.extensions.insert(ext.cluster_name(), std::sync::Arc::clone(ext));
            }
        }
        if let Some(certificate) = &fleet.backend_certificate {
            self.present_to_backends(certificate, &mut out);
        }
        out
    }

    /// Makes every TLS cluster of a fleet present the fleet's own client certificate (a
    /// Gateway's `spec.tls.backend.clientCertificateRef`) instead of the controller-wide one.
    /// Cluster names are per fleet, so clusters shared with other fleets keep their names.
    /// Without a TLS cluster the certificate is not served at all: no Envoy would ask for it, and
    /// a resource never asked for would keep the fleet from counting as programmed.
    fn present_to_backends(&mut self, certificate: &ir::ObjectRef, out: &mut FleetDag) {
        if !out.clusters.values().any(|c| c.speaks_tls()) {
            return;
        }
        let Some(name) = self.tls_secret(certificate, out) else { return };
        out.clusters.replace_values(|_, cluster| {
            cluster
                .speaks_tls()
                .then(|| Arc::new(Cluster { client_certificate: Some(name.clone()), ..Cluster::clone(cluster) }))
        });
    }

    /// Checks the Services of a listener's routes when the listener is not served.
    fn check_routes(&mut self, l: &ir::Listener) {
        for route in l.http_routes.iter() {
            for (i, rule) in route.rules.iter().enumerate() {
                for (j, b) in rule.backends.iter().enumerate() {
                    self.check_service(&route.origin, b, format!("spec.rules[{i}].backendRefs[{j}]"));
                }
            }
        }
        for route in l.tls_routes.iter() {
            for (j, b) in route.backends.iter().enumerate() {
                self.check_service(&route.origin, b, format!("spec.rules[0].backendRefs[{j}]"));
            }
        }
        self.check_l4(&l.l4_routes, l.protocol == Protocol::Udp);
    }

    /// Checks the Services of TCP or UDP routes that are not served, on the ports of the
    /// listener's transport.
    fn check_l4(&mut self, routes: &[Arc<ir::L4Route>], udp: bool) {
        self.udp = udp;
        for route in routes {
            for (i, j, b) in route.backends() {
                self.check_service(&route.origin, b, format!("spec.rules[{i}].backendRefs[{j}]"));
            }
        }
        self.udp = false;
    }

    /// Reports a backend whose Service or port does not exist, without building anything.
    fn check_service(&mut self, origin: &Origin, backend: &ir::Backend, field: String) {
        let ir::BackendTarget::Service(sp) = &backend.target else { return };
        let service = self.snapshot.services.get(&ObjectKey::new(&sp.namespace, &sp.name));
        let has_port = service.and_then(|s| s.spec.as_ref()).and_then(|s| s.ports.as_ref()).is_some_and(|ports| {
            ports.iter().any(|p| p.port == i32::from(sp.port) && clusters::transport_matches(p, self.udp))
        });
        if !has_port {
            let message = match service {
                None => format!("Service {}/{} does not exist", sp.namespace, sp.name),
                Some(_) => format!("Service {}/{} has no port {}", sp.namespace, sp.name, sp.port),
            };
            self.error(origin, field, reason::BACKEND_NOT_FOUND, message);
        }
    }

    /// The route table of the HTTP listeners of one port: their routes grouped into virtual
    /// hosts by effective hostname. A large table of one listener is patched from the previous
    /// build's where it can (see [`table`]).
    fn route_table(&mut self, name: String, listeners: &[(usize, &ir::Listener)], out: &mut FleetDag) -> RouteTable {
        let mut table = self.route_table_of(name, listeners, out);
        pre_routing(&mut table, listeners);
        table
    }

    /// [`Builder::route_table`] without the listeners' pre-routing checks.
    fn route_table_of(&mut self, name: String, listeners: &[(usize, &ir::Listener)], out: &mut FleetDag) -> RouteTable {
        let kept = match listeners {
            [(_, listener)] if listener.http_routes.len() >= table::KEPT_FROM => Some(table::key(&self.fleet, &name)),
            _ => None,
        };
        if let Some(key) = &kept
            && let Some(table) = self.patch_table(key, &name, listeners[0].1, out)
        {
            return table;
        }
        // hostname -> the routes reaching it, in listener order; a route reaches a hostname once.
        let mut hosts: FxHashMap<Cow<'_, str>, Vec<&Arc<ir::HttpRoute>>> = FxHashMap::default();
        let mut seen: FxHashSet<(usize, String)> = FxHashSet::default();
        let shared = listeners.len() > 1;
        for (index, listener) in listeners {
            let own = ir::hostname::specificity(listener.hostname.as_deref());
            for route in listener.http_routes.iter() {
                ir::hostname::for_each_effective(listener.hostname.as_deref(), &route.hostnames, |host| {
                    // Listener isolation: requests for a host go to the most specific listener
                    // whose hostname covers it, never to a less specific one's routes.
                    let isolated = shared
                        && listeners.iter().any(|(other, l)| {
                            other != index
                                && ir::hostname::specificity(l.hostname.as_deref()) > own
                                && ir::hostname::covers(l.hostname.as_deref(), &host)
                        });
                    if isolated {
                        return;
                    }
                    // Only a route attached to two listeners of this port can reach a host twice.
                    if !shared || seen.insert((Arc::as_ptr(route) as usize, host.to_string())) {
                        hosts.entry(host).or_default().push(route);
                    }
                });
            }
        }
        let mut hosts: Vec<_> = hosts.into_iter().collect();
        hosts.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let mut built = Vec::with_capacity(hosts.len());
        for (hostname, mut routes) in hosts {
            if shared {
                // Routes from several listeners: restore the namespace/name order ties fall back to.
                routes
                    .sort_by(|a, b| (&a.origin.namespace, &a.origin.name).cmp(&(&b.origin.namespace, &b.origin.name)));
            }
            let host = self.host(&name, hostname, &routes);
            self.merge(&host.uses, &host.diagnostics, out);
            built.push(host);
        }
        let virtual_hosts = built.iter().map(|h| Arc::clone(&h.vhost)).collect();
        // The virtual hosts' clusters join the fleet's at the end, at once: a kept table's map
        // itself, so the next build's patched map shares its chunks with this one.
        match kept {
            Some(key) => add_cluster_map(self.keep_table(key, listeners[0].1, built), out),
            None => add_clusters(built.iter().flat_map(|h| &h.uses.clusters), out),
        }
        RouteTable { name, virtual_hosts, pre_routing: Vec::new() }
    }

    /// A cached route as the current listener serves it. Gateway API: a redirect naming neither
    /// scheme nor port keeps the listener's port (left out of Location when it is the scheme's
    /// own). Listener ports of other front ends are Envoy's, not what clients dialled.
    fn for_listener(&self, route: &ir::HttpRoute, built: &Arc<Route>) -> Arc<Route> {
        let (port, scheme) = self.listener;
        let well_known = matches!((port, scheme), (80, "http") | (443, "https"));
        match &built.action {
            RouteAction::Redirect(r)
                if route.origin.kind == "HTTPRoute" && r.port.is_none() && r.scheme.is_none() && !well_known =>
            {
                let mut r = r.clone();
                r.port = Some(port);
                Arc::new(Route { action: RouteAction::Redirect(r), ..Route::clone(built) })
            }
            _ => Arc::clone(built),
        }
    }

    /// Adds what a virtual host uses and its problems to the fleet, but for its clusters (see
    /// [`add_clusters`]).
    fn merge(&mut self, uses: &Uses, diagnostics: &[Diagnostic], out: &mut FleetDag) {
        for b in &uses.validation {
            if !out.validation.contains_key(&b.name) {
                out.validation.insert(b.name.clone(), b.clone());
            }
        }
        for t in &uses.secrets {
            if !out.secrets.contains_key(&t.name) {
                out.secrets.insert(t.name.clone(), t.clone());
            }
        }
        self.diagnostics.extend(diagnostics.iter().cloned());
    }

    /// The DAG routes of one IR route (per rule, per match), the clusters they use and what
    /// went wrong, from the cache when the route and the Services are unchanged.
    fn route_parts(&mut self, route: &Arc<ir::HttpRoute>) -> Arc<RouteParts> {
        let key = Arc::as_ptr(route) as usize;
        if let Some(cached) = self.cache.routes.get_mut(&key)
            && cached.reads.unchanged(self.snapshot, &self.changed)
        {
            cached.used = self.cache.generation;
            return Arc::clone(&cached.parts);
        }
        let outer = std::mem::take(&mut self.diagnostics);
        self.reads = Some(Reads::default());
        let mut scratch = FleetDag::default();
        let routes = route
            .rules
            .iter()
            .enumerate()
            .map(|(r, rule)| (0..rule.matches.len()).map(|m| Arc::new(self.route(route, r, m, &mut scratch))).collect())
            .collect();
        let mut diagnostics = std::mem::replace(&mut self.diagnostics, outer);
        let reads = self.reads.take().unwrap_or_default();
        diagnostics.sort();
        diagnostics.dedup();
        let parts = Arc::new(RouteParts { routes, uses: Uses::of(scratch), diagnostics });
        let cached =
            CachedRoute { _route: Arc::clone(route), parts: Arc::clone(&parts), reads, used: self.cache.generation };
        self.cache.routes.insert(key, cached);
        parts
    }

    fn route(&mut self, route: &ir::HttpRoute, rule_index: usize, match_index: usize, out: &mut FleetDag) -> Route {
        let rule = &route.rules[rule_index];
        let mut request_headers = HeaderModifier::default();
        let mut response_headers = HeaderModifier::default();
        let mut rewrite = None;
        let mut mirrors = Vec::new();
        let mut action = None;
        let mut cors = None;
        for filter in &rule.filters {
            match filter {
                HttpFilter::Cors(c) => cors = Some(c.clone()),
                HttpFilter::RequestHeaders(m) => merge(&mut request_headers, m),
                HttpFilter::ResponseHeaders(m) => merge(&mut response_headers, m),
                HttpFilter::UrlRewrite(r) => rewrite = Some(r.clone()),
                HttpFilter::Redirect(r) => action = Some(RouteAction::Redirect(r.clone())),
                HttpFilter::DirectResponse { status, body } => {
                    action = Some(RouteAction::Direct { status: *status, body: body.clone() })
                }
                HttpFilter::Mirror(m) => {
                    if let Some(cluster) = self
                        .backends(&route.origin, rule_index, std::slice::from_ref(&m.backend), &Default::default(), out)
                        .pop()
                        .and_then(|w| w.cluster)
                    {
                        mirrors.push((cluster, m.percent));
                    }
                }
            }
        }
        let action = action.unwrap_or_else(|| {
            let backends: Vec<_> = self
                .backends(&route.origin, rule_index, &rule.backends, &rule.policy.cluster, out)
                .into_iter()
                .filter(|b| b.weight > 0)
                .collect();
            if backends.iter().all(|b| b.cluster.is_none()) {
                // No backend, only invalid ones, or all weights zero: the Gateway API asks for 500.
                RouteAction::Direct { status: 500, body: None }
            } else {
                RouteAction::Forward { backends, rewrite, mirrors }
            }
        });
        Route {
            matcher: rule.matches[match_index].clone(),
            action,
            request_headers,
            response_headers,
            timeout_ms: rule.request_timeout_ms,
            policy: RoutePolicy {
                cluster: Default::default(),
                cors: cors.or_else(|| rule.policy.cors.clone()),
                ..rule.policy.clone()
            },
            origin: Arc::clone(&route.origin),
        }
    }

    /// Resolves backends to clusters; unresolvable ones keep their weight with no cluster.
    fn backends(
        &mut self,
        origin: &Origin,
        rule: usize,
        backends: &[Backend],
        policy: &ClusterPolicy,
        out: &mut FleetDag,
    ) -> Vec<WeightedCluster> {
        let mut result = Vec::new();
        for (j, backend) in backends.iter().enumerate() {
            let cluster = match &backend.target {
                BackendTarget::Invalid => None,
                BackendTarget::Service(sp) => {
                    let field = format!("spec.rules[{rule}].backendRefs[{j}]");
                    self.cluster(origin, sp, backend.options.as_deref(), policy, field, out)
                }
            };
            let filters = backend
                .options
                .as_ref()
                .map(|o| BackendFilters {
                    request: o.request_headers.clone(),
                    response: o.response_headers.clone(),
                    host_rewrite: o.host_rewrite.clone(),
                    cookie_rewrites: o.cookie_rewrites.clone(),
                })
                .filter(|f| *f != BackendFilters::default())
                .map(Arc::new);
            result.push(WeightedCluster { cluster, weight: backend.weight, filters });
        }
        result
    }

    fn error(&mut self, origin: &Origin, field: String, reason: &'static str, message: String) {
        let condition = if origin.kind == "HTTPProxy" { "ServiceError" } else { "" };
        self.diagnostics.push(Diagnostic {
            origin: origin.clone(),
            severity: Severity::Error,
            condition,
            field,
            reason,
            message,
        });
    }
}

fn merge(into: &mut HeaderModifier, from: &HeaderModifier) {
    into.set.extend(from.set.iter().cloned());
    into.add.extend(from.add.iter().cloned());
    into.remove.extend(from.remove.iter().cloned());
}

/// Adds clusters to a fleet's, the first of a name winning (as one by one): sorted and built
/// at once. At 10k virtual hosts, a search and an insert per cluster into the growing map were
/// a tenth of a rebuild.
fn add_clusters<'a>(clusters: impl Iterator<Item = &'a Arc<Cluster>>, out: &mut FleetDag) {
    let mut all: Vec<&Arc<Cluster>> = clusters.collect();
    // Stable, so the first of each name stays first.
    all.sort_by(|a, b| a.name.cmp(&b.name));
    all.dedup_by(|later, first| later.name == first.name);
    if out.clusters.is_empty() {
        out.clusters = all.into_iter().map(|c| (c.name.clone(), Arc::clone(c))).collect();
    } else {
        for c in all {
            if !out.clusters.contains_key(&c.name) {
                out.clusters.insert(c.name.clone(), Arc::clone(c));
            }
        }
    }
}

/// Adds a kept table's clusters to a fleet's, the fleet's own winning a name: the table's map
/// is shared whole (a pointer per chunk) when the fleet has fewer, so a build of a 50k-host
/// table does not rebuild a 50k-cluster map, and its chunks stay those of the previous build.
fn add_cluster_map(clusters: &chunkmap::ChunkMap<String, Arc<Cluster>>, out: &mut FleetDag) {
    if clusters.len() > out.clusters.len() {
        let own = std::mem::replace(&mut out.clusters, clusters.clone());
        for (name, c) in own.iter() {
            out.clusters.insert(name.clone(), Arc::clone(c));
        }
    } else {
        for (name, c) in clusters.iter() {
            if !out.clusters.contains_key(name) {
                out.clusters.insert(name.clone(), Arc::clone(c));
            }
        }
    }
}

/// The listeners' pre-routing checks (Gateway API listener filters), in listener order, each
/// run only for the hosts its listener owns: the most specific listener whose hostname covers a
/// host owns it, as listener isolation routes it. A request for a host the table does not know
/// is checked by none (and answered 404).
fn pre_routing(table: &mut RouteTable, listeners: &[(usize, &ir::Listener)]) {
    table.pre_routing = listeners
        .iter()
        .flat_map(|(_, l)| {
            l.pre_routing.iter().enumerate().map(|(index, a)| PreRouting {
                listener: l.name.clone(),
                index,
                authorization: a.clone(),
            })
        })
        .collect();
    if table.pre_routing.is_empty() {
        return;
    }
    for vh in &mut table.virtual_hosts {
        let owner = listeners
            .iter()
            .map(|(_, l)| l)
            .filter(|l| ir::hostname::covers(l.hostname.as_deref(), &vh.hostname))
            .max_by_key(|l| ir::hostname::specificity(l.hostname.as_deref()));
        let Some(owner) = owner else { continue };
        let run: Vec<String> =
            table.pre_routing.iter().filter(|p| p.listener == owner.name).map(PreRouting::key).collect();
        if !run.is_empty() {
            *vh = Arc::new(VirtualHost { pre_routing: run, ..VirtualHost::clone(vh) });
        }
    }
}

/// Answers 421 Misdirected Request, on the connections of a terminating listener, to requests
/// for hosts that are not its own (a client reusing a connection for another host, or a Host
/// that differs from the SNI): any host outside its hostname, and hosts of more specific
/// listeners of the same port. A listener without a hostname only refuses the other listeners'
/// hosts. A host the table already routes is left as it is.
pub(crate) fn misdirected(
    table: &mut RouteTable,
    origin: Option<&Origin>,
    own: &ir::Listener,
    listeners: &[(usize, &ir::Listener)],
) {
    let mine = own.hostname.as_deref();
    let others = listeners
        .iter()
        .map(|(_, l)| l)
        .filter(|l| l.name != own.name && l.tls.as_ref().is_some_and(|t| t.mode == TlsMode::Terminate))
        .filter_map(|l| l.hostname.as_deref())
        .filter(|h| Some(*h) != mine && ir::hostname::covers(mine, h))
        .filter(|h| ir::hostname::specificity(Some(h)) > ir::hostname::specificity(mine));
    let mut hosts: Vec<&str> = mine.map(|_| "*").into_iter().chain(others).collect();
    hosts.sort_unstable();
    hosts.dedup();
    hosts.retain(|h| table.virtual_hosts.iter().all(|vh| vh.hostname != *h));
    if hosts.is_empty() {
        return;
    }
    let origin = Arc::new(origin.cloned().unwrap_or(Origin {
        kind: "Listener",
        namespace: String::new(),
        name: own.name.clone(),
        generation: 0,
    }));
    let route = Arc::new(Route {
        matcher: ir::HttpMatch::default(),
        action: RouteAction::Direct { status: 421, body: None },
        request_headers: Default::default(),
        response_headers: Default::default(),
        timeout_ms: None,
        policy: Default::default(),
        origin,
    });
    for host in hosts {
        let vh = VirtualHost {
            hostname: host.to_string(),
            routes: vec![Arc::clone(&route)],
            policy: None,
            pre_routing: Vec::new(),
        };
        table.virtual_hosts.push(Arc::new(vh));
    }
    table.virtual_hosts.sort_by(|a, b| a.hostname.cmp(&b.hostname));
}
