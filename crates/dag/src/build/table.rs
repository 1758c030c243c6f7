//! Virtual hosts, and large route tables kept between builds and patched.
//!
//! At 10k virtual hosts on one listener, grouping every route by hostname, looking every
//! virtual host up in the cache and sorting every cluster again cost more than the change a
//! build usually carries (one new app). A table of one listener with at least [`KEPT_FROM`]
//! routes is kept with what each route reaches, and the next build compares routes by identity:
//! only the hosts of routes that came, went or read a changed object are built again, and the
//! rest of the table is taken as it was.

use super::*;

/// Tables with fewer routes are built whole each time: cheap, and many (one per TLS host).
pub(super) const KEPT_FROM: usize = 64;

/// The key of a kept table: table names repeat across fleets (`http-80` of each Gateway).
pub(super) fn key(fleet: &str, table: &str) -> String {
    format!("{fleet}\n{table}")
}

/// One virtual host as built, with what it adds to its fleet.
#[derive(Debug, Clone)]
pub(crate) struct Host {
    pub vhost: Arc<VirtualHost>,
    pub uses: Arc<Uses>,
    pub diagnostics: Arc<[Diagnostic]>,
}

/// A table as the last build left it.
#[derive(Debug)]
pub(crate) struct Kept {
    /// The listener's port and scheme (redirects depend on them) and its hostname.
    listener: (u16, &'static str),
    hostname: Option<String>,
    /// Every route of the listener by identity.
    routes: FxHashMap<usize, KeptRoute>,
    /// The virtual hosts, sorted by hostname.
    hosts: Vec<Host>,
    /// Every virtual host's clusters by name, shared with the fleet built from it.
    clusters: chunkmap::ChunkMap<String, Arc<Cluster>>,
    /// How many hosts use each of `clusters`.
    uses: FxHashMap<String, usize>,
    /// The last build that used it.
    pub(super) used: u64,
}

#[derive(Debug)]
struct KeptRoute {
    /// Keeps the route alive, so its address (the key) is not reused while kept.
    _route: Arc<ir::HttpRoute>,
    /// Its place in the listener's routes.
    index: usize,
    /// The hostnames it reaches.
    hosts: Vec<String>,
    /// The last build that found it among the listener's routes.
    seen: u64,
}

/// The hostnames a route of `listener` reaches, each as often as a whole build of the table
/// files the route under it.
fn reached(listener: &ir::Listener, route: &ir::HttpRoute) -> Vec<String> {
    let mut hosts = Vec::new();
    ir::hostname::for_each_effective(listener.hostname.as_deref(), &route.hostnames, |h| hosts.push(h.into_owned()));
    hosts
}

/// Counts a host's clusters in or out of a kept table's; a cluster joins with its first user
/// and leaves with its last.
fn count(
    kept: (&mut chunkmap::ChunkMap<String, Arc<Cluster>>, &mut FxHashMap<String, usize>),
    host: &Host,
    added: bool,
) {
    let (clusters, uses) = kept;
    for c in &host.uses.clusters {
        if added {
            let n = uses.entry(c.name.clone()).or_insert(0);
            if *n == 0 {
                clusters.insert(c.name.clone(), Arc::clone(c));
            }
            *n += 1;
        } else if let Some(n) = uses.get_mut(&c.name) {
            *n -= 1;
            if *n == 0 {
                uses.remove(&c.name);
                clusters.remove(&c.name);
            }
        }
    }
}

impl Builder<'_> {
    /// Keeps a table just built whole from `listener`'s routes, for the next build to patch;
    /// returns its clusters.
    pub(super) fn keep_table(
        &mut self,
        key: String,
        listener: &ir::Listener,
        hosts: Vec<Host>,
    ) -> &chunkmap::ChunkMap<String, Arc<Cluster>> {
        let generation = self.cache.generation;
        let routes = listener
            .http_routes
            .iter()
            .enumerate()
            .map(|(index, route)| {
                let kept =
                    KeptRoute { _route: Arc::clone(route), index, hosts: reached(listener, route), seen: generation };
                (Arc::as_ptr(route) as usize, kept)
            })
            .collect();
        let mut clusters = chunkmap::ChunkMap::new();
        let mut uses = FxHashMap::default();
        for host in &hosts {
            count((&mut clusters, &mut uses), host, true);
        }
        let kept = Kept {
            listener: self.listener,
            hostname: listener.hostname.clone(),
            routes,
            hosts,
            clusters,
            uses,
            used: generation,
        };
        &self.cache.tables.entry(key).insert_entry(kept).into_mut().clusters
    }

    /// Table `name` of `listener` patched from the kept one: `None` (and the kept table
    /// forgotten) when there is none or it cannot be patched (another listener, routes
    /// reordered), so the caller builds it whole.
    pub(super) fn patch_table(
        &mut self,
        key: &str,
        name: &str,
        listener: &ir::Listener,
        out: &mut FleetDag,
    ) -> Option<RouteTable> {
        let mut kept = self.cache.tables.remove(key)?;
        if kept.listener != self.listener || kept.hostname != listener.hostname {
            return None;
        }
        let generation = self.cache.generation;
        // The hosts to build again: those of routes that came, went, or read what changed.
        let mut dirty: FxHashSet<String> = FxHashSet::default();
        let mut came = Vec::new();
        let mut last = None;
        for (index, route) in listener.http_routes.iter().enumerate() {
            let id = Arc::as_ptr(route) as usize;
            let Some(known) = kept.routes.get_mut(&id) else {
                let hosts = reached(listener, route);
                dirty.extend(hosts.iter().cloned());
                came.push((id, KeptRoute { _route: Arc::clone(route), index, hosts, seen: generation }));
                continue;
            };
            // Members keep their listener order within a host only if the order is the same.
            if known.seen == generation || last.is_some_and(|l| known.index < l) {
                return None;
            }
            last = Some(known.index);
            known.index = index;
            known.seen = generation;
            match self.cache.routes.get_mut(&id) {
                Some(cached) if cached.reads.unchanged(self.snapshot, &self.changed) => cached.used = generation,
                _ => dirty.extend(known.hosts.iter().cloned()),
            }
        }
        if kept.routes.len() + came.len() != listener.http_routes.len() {
            kept.routes.retain(|_, r| {
                if r.seen != generation {
                    dirty.extend(r.hosts.iter().cloned());
                }
                r.seen == generation
            });
        }
        kept.routes.extend(came);
        if !dirty.is_empty() {
            self.rebuild_hosts(&mut kept, name, listener, dirty);
        }
        for host in &kept.hosts {
            self.merge(&host.uses, &host.diagnostics, out);
        }
        add_cluster_map(&kept.clusters, out);
        let table = RouteTable {
            name: name.to_string(),
            virtual_hosts: kept.hosts.iter().map(|h| Arc::clone(&h.vhost)).collect(),
            pre_routing: Vec::new(),
        };
        kept.used = generation;
        self.cache.tables.insert(key.to_string(), kept);
        self.cache.patched += 1;
        Some(table)
    }

    /// One virtual host of table `name` from the routes reaching it, in order: the cached one
    /// while its routes are the same and unchanged, or built.
    pub(super) fn host(&mut self, name: &str, hostname: Cow<'_, str>, routes: &[&Arc<ir::HttpRoute>]) -> Host {
        let generation = self.cache.generation;
        let (snapshot, changed, cache) = (self.snapshot, &self.changed, &mut *self.cache);
        if let Some(cached) = cache.vhosts.get_mut(name).and_then(|t| t.get_mut(hostname.as_ref()))
            && cached.members.iter().copied().eq(routes.iter().map(|r| Arc::as_ptr(r) as usize))
            && cached.members.iter().all(|m| cache.routes.get(m).is_some_and(|r| r.reads.unchanged(snapshot, changed)))
        {
            cached.used = generation;
            for member in &cached.members {
                if let Some(entry) = cache.routes.get_mut(member) {
                    entry.used = generation;
                }
            }
            return table::Host {
                vhost: Arc::clone(&cached.vhost),
                uses: Arc::clone(&cached.uses),
                diagnostics: Arc::clone(&cached.diagnostics),
            };
        }
        let members: Vec<usize> = routes.iter().map(|r| Arc::as_ptr(r) as usize).collect();
        let hostname = hostname.into_owned();
        let parts: Vec<Arc<RouteParts>> = routes.iter().map(|r| self.route_parts(r)).collect();
        let mut uses = FleetDag::default();
        let mut diagnostics = Vec::new();
        for p in &parts {
            let u = &p.uses;
            uses.clusters.extend(u.clusters.iter().map(|c| (c.name.clone(), Arc::clone(c))));
            uses.validation.extend(u.validation.iter().map(|b| (b.name.clone(), b.clone())));
            uses.secrets.extend(u.secrets.iter().map(|t| (t.name.clone(), t.clone())));
            diagnostics.extend(p.diagnostics.iter().cloned());
        }
        // The JWKS servers a TLS host's providers fetch keys from.
        for provider in routes.iter().filter_map(|r| r.vhost.as_ref()).flat_map(|p| &p.jwt_providers) {
            if let ir::Jwks::Remote(remote) = &provider.jwks {
                self.jwks_cluster(remote, &mut uses);
            }
        }
        // The token endpoint of a TLS host's login, and its secrets.
        for oidc in routes.iter().filter_map(|r| r.vhost.as_ref()).filter_map(|p| p.oidc.as_ref()) {
            self.jwks_cluster(&oidc.token_endpoint, &mut uses);
            for (name, value) in [(oidc.client_secret_sds(), &oidc.client_secret), (oidc.hmac_sds(), &oidc.hmac_secret)]
            {
                let secret = TlsSecret {
                    name: name.clone(),
                    certificate_chain: Vec::new(),
                    private_key: value.0.clone(),
                    generic: true,
                };
                uses.secrets.insert(name, secret);
            }
        }
        let uses = Arc::new(Uses::of(uses));
        // Routes whose own hostname is more specific for this host come first.
        let ranks: Vec<(u8, usize)> =
            routes.iter().map(|r| ir::hostname::route_specificity(&r.hostnames, &hostname)).collect();
        let conflicts = crate::conflict::conflicting_rules(routes, &ranks);
        let dropped: FxHashSet<(usize, usize)> = conflicts.iter().map(|c| c.rule).collect();
        for c in &conflicts {
            let (route, kept) = (routes[c.rule.0], routes[c.kept.0]);
            diagnostics.push(Diagnostic {
                origin: Origin::clone(&route.origin),
                severity: Severity::Error,
                condition: "",
                field: format!("spec.rules[{}]", c.rule.1),
                reason: ir::reason::RULE_MATCH_CONFLICT,
                message: format!(
                    "dropped from host {:?}: a match repeats one of {} {}/{} spec.rules[{}], which takes precedence",
                    hostname, kept.origin.kind, kept.origin.namespace, kept.origin.name, c.kept.1
                ),
            });
        }
        let diagnostics: Arc<[Diagnostic]> = diagnostics.into();
        // Precedence as a plain key; ties fall back to member order (namespace/name), rule, match.
        let mut entries = Vec::new();
        for (i, (route, p)) in routes.iter().zip(&parts).enumerate() {
            for (r, rule) in route.rules.iter().enumerate() {
                if dropped.contains(&(i, r)) {
                    continue;
                }
                for (m, matcher) in rule.matches.iter().enumerate() {
                    let built = self.for_listener(route, &p.routes[r][m]);
                    let rank = RouteRank { hostname: ranks[i], created: route.created, member: i };
                    entries.push((precedence_key(matcher, rank, r, m), built));
                }
            }
        }
        entries.sort_unstable_by_key(|e| e.0);
        // HTTPProxy gives each fqdn one root, so at most one policy reaches a host.
        let policy = routes.iter().find_map(|r| r.vhost.clone());
        let vhost = Arc::new(VirtualHost {
            hostname: hostname.clone(),
            routes: entries.into_iter().map(|(_, r)| r).collect(),
            policy,
            pre_routing: Vec::new(),
        });
        let cached = CachedVhost {
            members,
            vhost: Arc::clone(&vhost),
            uses: Arc::clone(&uses),
            diagnostics: Arc::clone(&diagnostics),
            used: generation,
        };
        match self.cache.vhosts.get_mut(name) {
            Some(table) => table.insert(hostname, cached),
            None => self.cache.vhosts.entry(name.to_string()).or_default().insert(hostname, cached),
        };
        table::Host { vhost, uses, diagnostics }
    }

    /// Builds the `dirty` hosts of a kept table again from the listener's routes now reaching
    /// them, in listener order; a host no route reaches any more goes.
    fn rebuild_hosts(&mut self, kept: &mut Kept, name: &str, listener: &ir::Listener, dirty: FxHashSet<String>) {
        let mut members: BTreeMap<String, Vec<&Arc<ir::HttpRoute>>> =
            dirty.into_iter().map(|h| (h, Vec::new())).collect();
        for route in listener.http_routes.iter() {
            let Some(known) = kept.routes.get(&(Arc::as_ptr(route) as usize)) else { continue };
            for host in &known.hosts {
                if let Some(routes) = members.get_mut(host) {
                    routes.push(route);
                }
            }
        }
        for (hostname, routes) in members {
            let at = kept.hosts.binary_search_by(|h| h.vhost.hostname.as_str().cmp(&hostname));
            if let Ok(i) = at {
                count((&mut kept.clusters, &mut kept.uses), &kept.hosts[i], false);
            }
            if routes.is_empty() {
                if let Ok(i) = at {
                    kept.hosts.remove(i);
                }
                if let Some(table) = self.cache.vhosts.get_mut(name) {
                    table.remove(&hostname);
                }
                continue;
            }
            let host = self.host(name, Cow::Owned(hostname), &routes);
            count((&mut kept.clusters, &mut kept.uses), &host, true);
            match at {
                Ok(i) => kept.hosts[i] = host,
                Err(i) => kept.hosts.insert(i, host),
            }
        }
    }
}
