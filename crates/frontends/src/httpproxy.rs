//! The HTTPProxy front end: upstream Contour's HTTPProxy (and TLSCertificateDelegation) into the
//! default fleet, with upstream's validation rules and status vocabulary.
//!
//! Roots (proxies with a virtual host) are walked through their includes; every route keeps the
//! proxy that defined it as its origin. Problems become diagnostics whose `condition` is the
//! upstream sub-condition type, so [`status`] can render upstream's `Valid` condition.

mod auth;
mod claims;
mod conditions;
mod error_pages;

pub use auth::{global_authorization, http_settings};
mod filters;
mod jwt;
mod oidc;
mod policy;
mod routes;
mod services;
pub mod status;
mod tls;

#[cfg(test)]
mod tests;

use std::sync::Arc;

use ir::{Diagnostic, HttpRoute, HttpRule, Listener, Origin, Protocol, Severity, TlsMode, reason};
use objects::types::HTTPProxy;
use objects::{Kind, ObjectKey, Reads, Snapshot};

use crate::Translation;
use crate::shared::headers;

pub use crate::shared::{HTTP_LISTENER, HTTPS_LISTENER};
pub use services::outlier_detection;

/// Settings of the HTTPProxy front end (upstream's flags and config keys).
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Ingress classes served (`--ingress-class-name`); empty: no class or `contour`.
    pub class_names: Vec<String>,
    /// Namespaces root proxies may live in (`--root-namespaces`); empty: all.
    pub root_namespaces: Vec<String>,
    /// The port Envoy serves plain HTTP on (`--envoy-service-http-port`).
    pub http_port: u16,
    /// The port Envoy serves HTTPS on (`--envoy-service-https-port`).
    pub https_port: u16,
    /// Ignore `permitInsecure` on routes (`disablePermitInsecure`).
    pub disable_permit_insecure: bool,
    /// The certificate for clients without SNI, for virtual hosts that enable it.
    pub fallback_certificate: Option<ir::ObjectRef>,
    /// The global header policy (contour.yaml `policy`).
    pub default_headers: Option<std::sync::Arc<crate::DefaultHeaders>>,
    /// ExternalName Services may be backends (`enableExternalNameService`).
    pub enable_external_name_service: bool,
    /// The authorization server of every virtual host that names none and does not opt out
    /// (`globalExtAuth`); its `extensionRef` has a namespace.
    pub global_authorization: Option<api::httpproxy::AuthorizationServer>,
    /// The global rate limit of every virtual host without one that does not opt out
    /// (`rateLimitService.defaultGlobalRateLimitPolicy`).
    pub default_global_rate_limit: Option<api::httpproxy::GlobalRateLimitPolicy>,
    /// The GeoIP databases location rules are looked up in (ContourConfiguration `geoIP`).
    pub geoip: Option<ir::GeoDatabases>,
    /// Every route gets statistics of its own, named after its object and first prefix
    /// (ContourConfiguration `envoy.enableStatPrefix`).
    pub enable_stat_prefix: bool,
    /// Passive health checks of every service that names none (`cluster.outlier-detection`, a
    /// contour-rs extension); a service's own `outlierDetection`, `disabled` included, wins.
    pub default_outlier_detection: Option<ir::OutlierDetection>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            class_names: Vec::new(),
            root_namespaces: Vec::new(),
            http_port: 8080,
            https_port: 8443,
            disable_permit_insecure: false,
            fallback_certificate: None,
            default_headers: None,
            enable_external_name_service: false,
            global_authorization: None,
            default_global_rate_limit: None,
            geoip: None,
            enable_stat_prefix: false,
            default_outlier_detection: None,
        }
    }
}

/// Checks a timeout as HTTPProxy fields take it (a Go duration, `infinity`, or empty for the
/// default): milliseconds, `Some(0)` for none, `None` for the default.
pub fn check_timeout(text: &str) -> Result<Option<u64>, String> {
    crate::shared::timeouts::timeout(Some(text))
}

/// Checks the global header policy as a service's would be checked; the error says which
/// direction and why.
pub fn check_default_headers(defaults: &crate::DefaultHeaders) -> Result<(), String> {
    let vars = headers::Variables { namespace: "", service: None };
    headers::headers(Some(&defaults.request), true, &vars).map_err(|e| format!("request-headers: {e}"))?;
    headers::headers(Some(&defaults.response), false, &vars).map_err(|e| format!("response-headers: {e}"))?;
    Ok(())
}

/// Translates every HTTPProxy of our class into listeners of the default fleet.
pub fn translate(snapshot: &Snapshot, options: &Options) -> Translation {
    translate_cached(snapshot, options, &mut Cache::default())
}

/// Root translations kept between builds, so an unchanged tree costs a few pointer comparisons.
///
/// A root's entry is reused while every proxy, Service and Secret its translation read is the
/// same `Arc` (or still absent) and no TLSCertificateDelegation changed. A new app's Service
/// therefore costs only the roots that name it.
#[derive(Debug, Default)]
pub struct Cache {
    options: Option<Options>,
    delegations: Vec<usize>,
    kinds: objects::KindWatch,
    /// Roots by fqdn with their cached translations, updated from the proxies that changed.
    claims: Option<claims::Claims>,
}

/// The kinds a root's translation reads object by object (ConfigMaps: error pages).
const READ_KINDS: &[Kind] = &[Kind::HttpProxy, Kind::Service, Kind::Secret, Kind::ExtensionService, Kind::ConfigMap];

#[derive(Debug, Default)]
struct CachedRoot {
    /// Every proxy, Service, Secret and ConfigMap read (the root first), with the identity found.
    reads: Reads,
    output: Arc<RootOutput>,
}

/// What one root contributes.
#[derive(Debug, Default)]
struct RootOutput {
    http_routes: Vec<Arc<HttpRoute>>,
    secure: Vec<Listener>,
    fallback_routes: Vec<Arc<HttpRoute>>,
    diagnostics: Vec<Diagnostic>,
    /// Non-root proxies reached through an include.
    reached: Vec<ObjectKey>,
}

/// [`translate`], reusing what `cache` holds from the previous build.
pub fn translate_cached(snapshot: &Snapshot, options: &Options, cache: &mut Cache) -> Translation {
    let delegations = snapshot.identities(Kind::TlsCertificateDelegation);
    if cache.options.as_ref() != Some(options) || cache.delegations != delegations {
        *cache = Cache { options: Some(options.clone()), delegations, ..Default::default() };
    }
    let changed = cache.kinds.changed(snapshot, READ_KINDS);
    match (&mut cache.claims, changed.keys(Kind::HttpProxy)) {
        (Some(_), _) if !changed.includes(Kind::HttpProxy) => {}
        (Some(claims), Some(keys)) => claims.update(snapshot, options, keys),
        _ => cache.claims = Some(claims::Claims::of(snapshot, options)),
    }
    let claims = cache.claims.as_mut().expect("claims just made");
    let mut diagnostics = Vec::new();
    let error = |diagnostics: &mut Vec<Diagnostic>, proxy: &HTTPProxy, condition, field: &str, reason, message| {
        diagnostics.push(Diagnostic {
            origin: origin(proxy),
            severity: Severity::Error,
            condition,
            field: field.into(),
            reason,
            message,
        })
    };

    // Roots by fqdn; every claimant of a shared fqdn loses (upstream's rule).
    let mut http = Listener {
        name: HTTP_LISTENER.into(),
        port: options.http_port,
        protocol: Protocol::Http,
        hostname: None,
        tls: None,
        http_routes: Vec::with_capacity(claims.list.len()),
        tls_routes: Vec::new(),
        l4_routes: Vec::new(),
        pre_routing: Vec::new(),
    };
    let mut secure = Vec::new();
    let mut fallback_routes = Vec::new();
    for group in claims.list.chunk_by_mut(|a, b| a.fqdn_hash == b.fqdn_hash && a.fqdn == b.fqdn) {
        if group.len() > 1 {
            let names: Vec<String> = group.iter().map(|c| c.key.to_string()).collect();
            for claim in group {
                // Not checked against this build's changes, so not to be trusted later.
                claim.root = None;
                let message = format!("fqdn {:?} is used in multiple HTTPProxies: {}", claim.fqdn, names.join(", "));
                let field = "spec.virtualhost.fqdn";
                error(&mut diagnostics, &claim.proxy, "VirtualHostError", field, reason::DUPLICATE_VHOST, message);
            }
            continue;
        }
        let claim = &mut group[0];
        if !claim.root.as_ref().is_some_and(|c| c.reads.unchanged(snapshot, &changed)) {
            let (key, proxy) = snapshot.http_proxies.get_key_value(&claim.key).expect("a claim's proxy exists");
            let mut reads = Reads::default();
            reads.record(snapshot, Kind::HttpProxy, key);
            let mut t = Translator {
                snapshot,
                options,
                out: RootOutput::default(),
                reads: std::cell::RefCell::new(reads),
                auth: None,
                jwt: None,
                tls: false,
                oidc: false,
            };
            t.root(key, proxy, &claim.fqdn);
            claim.root = Some(CachedRoot { reads: t.reads.into_inner(), output: Arc::new(t.out) });
        }
        let out = &claim.root.as_ref().expect("just checked or made").output;
        http.http_routes.extend(out.http_routes.iter().cloned());
        secure.extend(out.secure.iter().cloned());
        fallback_routes.extend(out.fallback_routes.iter().cloned());
        diagnostics.extend(out.diagnostics.iter().cloned());
    }
    // Proxies without a virtual host that no root reaches are orphans. Only those are looked
    // for in what the roots reached: at 10k roots and no includes, nothing is.
    if !claims.children.is_empty() {
        let mut unreached: rustc_hash::FxHashSet<&ObjectKey> = claims.children.iter().collect();
        for reached in claims.list.iter().filter_map(|c| c.root.as_ref()).flat_map(|c| c.output.reached.iter()) {
            unreached.remove(reached);
        }
        for (key, proxy) in claims.children.iter().filter_map(|k| snapshot.http_proxies.get_key_value(k)) {
            if unreached.contains(key) {
                let message = "this HTTPProxy is not part of a delegation chain from a root HTTPProxy".into();
                error(&mut diagnostics, proxy, "Orphaned", "metadata", reason::ORPHANED, message);
            }
        }
    }
    let mut listeners = Vec::new();
    if !http.http_routes.is_empty() {
        listeners.push(http);
    }
    listeners.extend(secure);
    // Clients without SNI (or with an unknown name) get the fallback certificate and the
    // virtual hosts that enabled it.
    if let Some(certificate) = options.fallback_certificate.clone().filter(|_| !fallback_routes.is_empty()) {
        listeners.push(Listener {
            name: format!("{HTTPS_LISTENER}/fallback"),
            port: options.https_port,
            protocol: Protocol::Https,
            hostname: None,
            tls: Some(ir::ListenerTls::new(TlsMode::Terminate, vec![certificate])),
            http_routes: fallback_routes,
            tls_routes: Vec::new(),
            l4_routes: Vec::new(),
            pre_routing: Vec::new(),
        });
    }
    let fleets = if listeners.is_empty() { Vec::new() } else { vec![ir::Fleet::default_fleet(listeners, Vec::new())] };
    Translation { ir: ir::Ir { fleets, ..Default::default() }, diagnostics }
}

/// The origin of an HTTPProxy.
pub(crate) fn origin(proxy: &HTTPProxy) -> Origin {
    crate::shared::origin("HTTPProxy", &proxy.metadata)
}

/// The routes one proxy of a tree contributes: its own rules, each marked whether plain HTTP
/// must answer it with a redirect to HTTPS.
struct Contribution {
    origin: Arc<Origin>,
    created: i64,
    rules: Vec<(HttpRule, bool)>,
}

/// Translates one root and records what it read.
struct Translator<'a> {
    snapshot: &'a Snapshot,
    options: &'a Options,
    out: RootOutput,
    /// What the translation read, for the cache.
    reads: std::cell::RefCell<Reads>,
    /// The root's authorization defaults, when it has an authorization server.
    auth: Option<auth::Inherited>,
    /// The root's JWT providers, when it terminates TLS.
    jwt: Option<jwt::Inherited>,
    /// The root terminates TLS.
    tls: bool,
    /// The root has an OpenID Connect login: no route may be served without it unawares.
    oidc: bool,
}

impl<'a> Translator<'a> {
    /// What location rules of the current root depend on.
    fn geo(&self) -> filters::GeoContext<'a> {
        filters::GeoContext { tls: self.tls, databases: self.options.geoip.as_ref() }
    }

    /// Another proxy by key, remembering the read for the cache.
    fn lookup(&mut self, key: &ObjectKey) -> Option<&'a Arc<HTTPProxy>> {
        self.reads.get_mut().record(self.snapshot, Kind::HttpProxy, key);
        self.snapshot.http_proxies.get(key).filter(|p| claims::served(p, self.options))
    }

    /// A Service by namespace and name, remembering the read for the cache.
    fn service(&self, namespace: &str, name: &str) -> Option<&'a Arc<objects::types::Service>> {
        let key = ObjectKey::new(namespace, name);
        self.reads.borrow_mut().record(self.snapshot, Kind::Service, &key);
        self.snapshot.services.get(&key)
    }

    /// A Secret by namespace and name, remembering the read for the cache.
    fn secret(&self, namespace: &str, name: &str) -> Option<&'a Arc<objects::types::Secret>> {
        let key = ObjectKey::new(namespace, name);
        self.reads.borrow_mut().record(self.snapshot, Kind::Secret, &key);
        self.snapshot.secrets.get(&key)
    }

    fn config_map(&self, namespace: &str, name: &str) -> Option<&'a Arc<objects::types::ConfigMap>> {
        let key = ObjectKey::new(namespace, name);
        self.reads.borrow_mut().record(self.snapshot, Kind::ConfigMap, &key);
        self.snapshot.config_maps.get(&key)
    }

    /// Marks a non-root proxy as reached through an include.
    fn reach(&mut self, key: &ObjectKey) {
        self.out.reached.push(key.clone());
    }

    fn error(&mut self, origin: &Origin, condition: &'static str, field: &str, reason: &'static str, message: String) {
        self.out.diagnostics.push(Diagnostic {
            origin: origin.clone(),
            severity: Severity::Error,
            condition,
            field: field.into(),
            reason,
            message,
        });
    }

    fn warning(
        &mut self,
        origin: &Origin,
        condition: &'static str,
        field: &str,
        reason: &'static str,
        message: String,
    ) {
        self.out.diagnostics.push(Diagnostic {
            origin: origin.clone(),
            severity: Severity::Warning,
            condition,
            field: field.into(),
            reason,
            message,
        });
    }

    /// One root proxy: its checks in upstream's order, then its routes through the tree.
    fn root(&mut self, key: &ObjectKey, proxy: &Arc<HTTPProxy>, fqdn: &str) {
        let origin = origin(proxy);
        let spec = &proxy.spec;
        let vhost = spec.virtualhost.as_ref().expect("roots have a virtual host");
        if fqdn.is_empty() {
            let message = "Spec.VirtualHost.Fqdn must be specified".into();
            return self.error(
                &origin,
                "VirtualHostError",
                "spec.virtualhost.fqdn",
                reason::FQDN_NOT_SPECIFIED,
                message,
            );
        }
        if !valid_fqdn(fqdn) {
            let message =
                format!("Spec.VirtualHost.Fqdn {fqdn:?} is not a valid DNS name (a leading \"*.\" is allowed)");
            return self.error(&origin, "VirtualHostError", "spec.virtualhost.fqdn", reason::FQDN_NOT_VALID, message);
        }
        let roots = &self.options.root_namespaces;
        if !roots.is_empty() && !roots.contains(&key.namespace) {
            let message = "root HTTPProxy cannot be defined in this namespace".into();
            return self.error(
                &origin,
                "RootNamespaceError",
                "metadata.namespace",
                reason::ROOT_PROXY_NOT_ALLOWED_IN_NAMESPACE,
                message,
            );
        }
        let none = |len: Option<usize>| len.unwrap_or(0) == 0;
        if none(spec.routes.as_ref().map(Vec::len))
            && none(spec.includes.as_ref().map(Vec::len))
            && spec.tcpproxy.is_none()
        {
            let message = "HTTPProxy.Spec must have at least one Route, Include, or a TCPProxy".into();
            return self.error(&origin, "SpecError", "spec", reason::NOTHING_DEFINED, message);
        }
        let Ok(()) = auth::require_tls(self, &origin, vhost) else { return };
        let Ok(()) = jwt::require_tls(self, &origin, vhost) else { return };
        let Ok(tls) = tls::virtual_host(self, &origin, vhost) else { return };
        let terminates = tls.as_ref().is_some_and(|t| t.mode == TlsMode::Terminate);
        self.tls = terminates;
        let Ok(vhost_policy) = self.vhost_policy(&origin, vhost, fqdn) else { return };
        let Ok(authorization) = auth::virtual_host(self, &origin, vhost) else { return };
        let Ok(global) = auth::global(self, &origin, vhost, authorization.is_some()) else { return };
        self.auth = authorization.as_ref().map(|(_, inherited)| inherited.clone()).or(global);
        let Ok((jwt_providers, jwt)) = jwt::providers(self, &origin, vhost) else { return };
        self.jwt = terminates.then_some(jwt);
        let Ok(oidc) = oidc::virtual_host(self, &origin, vhost, fqdn) else { return };
        if oidc.is_some() && spec.tcpproxy.is_some() {
            // The TCP proxy would forward every connection without the login.
            let message = "Spec.VirtualHost.OIDC cannot be combined with Spec.TCPProxy".into();
            return self.error(&origin, "OIDCError", "spec.virtualhost.oidc", reason::OIDC_NOT_PERMITTED, message);
        }
        self.oidc = oidc.is_some();
        // Only the TLS side checks requests, as upstream: its connection manager has the filters.
        let secure_policy = if authorization.is_none() && jwt_providers.is_empty() && oidc.is_none() {
            vhost_policy.clone()
        } else {
            Some(Arc::new(ir::VirtualHostPolicy {
                authorization: authorization.map(|(a, _)| a),
                jwt_providers,
                oidc,
                ..vhost_policy.as_deref().cloned().unwrap_or_default()
            }))
        };

        if let Some(tcp) = &spec.tcpproxy {
            let Some(tls) = &tls else {
                let message =
                    "Spec.TCPProxy requires that either Spec.TLS.Passthrough or Spec.TLS.SecretName be set".into();
                return self.error(&origin, "TCPProxyError", "spec.tcpproxy", reason::TLS_MUST_BE_CONFIGURED, message);
            };
            let Ok(listener) = services::tcp_proxy(self, proxy, &origin, tcp, tls, fqdn) else { return };
            self.out.secure.extend(listener);
        }

        let mut visited = vec![key.clone()];
        let mut contributions = Vec::new();
        routes::walk(self, proxy, &origin, &[], &mut visited, fqdn, &mut contributions);

        let enforce_tls = tls.is_some();
        let host = vec![fqdn.to_string()];
        let mut secure_routes = Vec::new();
        for c in contributions {
            let plain: Vec<HttpRule> = c
                .rules
                .iter()
                .map(|(rule, upgrade)| {
                    if !(enforce_tls && *upgrade) {
                        return rule.clone();
                    }
                    let mut redirect = crate::https_redirect(rule);
                    // The redirect to HTTPS is never checked (upstream's), global server or not.
                    if self.auth.is_some() {
                        redirect.policy.authorization =
                            Some(ir::RouteAuthorization { disabled: true, ..Default::default() });
                    }
                    redirect
                })
                .collect();
            self.out.http_routes.push(Arc::new(HttpRoute {
                origin: Arc::clone(&c.origin),
                created: c.created,
                hostnames: host.clone(),
                rules: plain,
                vhost: vhost_policy.clone(),
            }));
            secure_routes.push(Arc::new(HttpRoute {
                origin: c.origin,
                created: c.created,
                hostnames: host.clone(),
                rules: c.rules.into_iter().map(|(rule, _)| rule).collect(),
                vhost: secure_policy.clone(),
            }));
        }
        if let Some(tls) = tls
            && tls.mode == TlsMode::Terminate
            && spec.tcpproxy.is_none()
            && !secure_routes.is_empty()
        {
            if vhost.tls.as_ref().and_then(|t| t.enable_fallback_certificate) == Some(true) {
                self.out.fallback_routes.extend(secure_routes.iter().cloned());
            }
            self.out.secure.push(Listener {
                name: format!("{HTTPS_LISTENER}/{fqdn}"),
                port: self.options.https_port,
                protocol: Protocol::Https,
                hostname: Some(fqdn.to_string()),
                tls: Some(tls),
                http_routes: secure_routes,
                tls_routes: Vec::new(),
                l4_routes: Vec::new(),
                pre_routing: Vec::new(),
            });
        }
    }
}

impl Translator<'_> {
    /// The virtual host's CORS, IP filter and local rate limit, checked in upstream's order;
    /// `Err` after recording why the virtual host cannot be served.
    fn vhost_policy(
        &mut self,
        origin: &Origin,
        vhost: &api::httpproxy::VirtualHost,
        fqdn: &str,
    ) -> Result<Option<Arc<ir::VirtualHostPolicy>>, ()> {
        let f = &vhost.filters;
        if f.ip_allow_policy.as_ref().is_some_and(|p| !p.is_empty())
            && f.ip_deny_policy.as_ref().is_some_and(|p| !p.is_empty())
        {
            let message =
                "Spec.VirtualHost.IPAllowFilterPolicy and Spec.VirtualHost.IPDenyFilterPolicy cannot both be defined"
                    .into();
            self.error(origin, "IPFilterError", "spec.virtualhost", reason::INCOMPATIBLE_IP_ADDRESS_FILTERS, message);
            return Err(());
        }
        let cors = match vhost.cors_policy.as_deref().map(filters::cors).transpose() {
            Ok(c) => c,
            Err(e) => {
                let message = format!("Spec.VirtualHost.CORSPolicy: {e}");
                self.error(origin, "CORSError", "spec.virtualhost.corsPolicy", reason::POLICY_DID_NOT_PARSE, message);
                return Err(());
            }
        };
        let local = vhost.rate_limit_policy.as_ref().and_then(|p| p.local.as_ref());
        let local_rate_limit = match local.map(|l| filters::local_rate_limit(l, format!("vhost.{fqdn}"))).transpose() {
            Ok(l) => l,
            Err(e) => {
                let message = format!("Spec.VirtualHost.RateLimitPolicy is invalid: {e}");
                let field = "spec.virtualhost.rateLimitPolicy";
                self.error(origin, "VirtualHostError", field, reason::RATE_LIMIT_POLICY_NOT_VALID, message);
                return Err(());
            }
        };
        let own_global = vhost.rate_limit_policy.as_ref().and_then(|p| p.global.as_ref());
        let global_rate_limit = match own_global.map(filters::global_rate_limit).transpose() {
            Ok(Some(Some(g))) => Some(g),
            Ok(_) => {
                // The default applies unless the host opts out (`global.disabled`).
                let opted_out = own_global.is_some_and(|g| g.disabled == Some(true));
                let default = self.options.default_global_rate_limit.as_ref().filter(|_| !opted_out);
                match default.map(filters::global_rate_limit).transpose() {
                    Ok(g) => g.flatten(),
                    Err(e) => {
                        let message = format!("Default Global RateLimit Policy is invalid: {e}");
                        let field = "spec.virtualhost.rateLimitPolicy";
                        self.error(origin, "VirtualHostError", field, reason::RATE_LIMIT_POLICY_NOT_VALID, message);
                        return Err(());
                    }
                }
            }
            Err(e) => {
                let message = format!("Spec.VirtualHost.RateLimitPolicy is invalid: {e}");
                let field = "spec.virtualhost.rateLimitPolicy";
                self.error(origin, "VirtualHostError", field, reason::RATE_LIMIT_POLICY_NOT_VALID, message);
                return Err(());
            }
        };
        let ip_filter = match filters::ip_filter(f, self.geo()) {
            Ok(i) => i,
            Err(e) => {
                let policies = if e.geo {
                    "Spec.VirtualHost.GeoAllowPolicy or Spec.VirtualHost.GeoDenyPolicy"
                } else {
                    "Spec.VirtualHost.IPAllowFilterPolicy or Spec.VirtualHost.IPDenyFilterPolicy"
                };
                let message = format!("{policies} is invalid: {}", e.message);
                self.error(origin, "IPFilterError", "spec.virtualhost", e.reason, message);
                return Err(());
            }
        };
        let error_pages = error_pages::pages(
            self,
            origin,
            "VirtualHostError",
            "spec.virtualhost.errorPages",
            vhost.error_pages.as_deref(),
        )?;
        let policy = ir::VirtualHostPolicy {
            cors,
            ip_filter,
            local_rate_limit,
            authorization: None,
            jwt_providers: Vec::new(),
            global_rate_limit,
            error_pages,
            oidc: None,
        };
        Ok((policy != ir::VirtualHostPolicy::default()).then(|| Arc::new(policy)))
    }
}

/// A DNS name, optionally with one leading `*.` label.
fn valid_fqdn(fqdn: &str) -> bool {
    let name = fqdn.strip_prefix("*.").unwrap_or(fqdn);
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}
