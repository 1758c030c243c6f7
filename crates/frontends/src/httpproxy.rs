//! The HTTPProxy front end: upstream Contour's HTTPProxy (and TLSCertificateDelegation) into the
//! default fleet, with upstream's validation rules and status vocabulary.
//!
//! Roots (proxies with a virtual host) are walked through their includes; every route keeps the
//! proxy that defined it as its origin. Problems become diagnostics whose `condition` is the
//! upstream sub-condition type, so [`status`] can render upstream's `Valid` condition.

mod conditions;
mod policy;
mod routes;
mod services;
pub mod status;
mod tls;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use ir::{Diagnostic, HttpFilter, HttpRoute, HttpRule, Listener, Origin, Protocol, Severity, TlsMode};
use objects::types::HTTPProxy;
use objects::{ObjectKey, Snapshot};

use crate::Translation;

/// The listener name of the default fleet's plain-HTTP port (upstream's name).
pub const HTTP_LISTENER: &str = "ingress_http";
/// The prefix of the default fleet's HTTPS listener names (one per TLS virtual host).
pub const HTTPS_LISTENER: &str = "ingress_https";

/// Settings of the HTTPProxy front end (upstream's flags and config keys).
#[derive(Debug, Clone)]
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
        }
    }
}

/// Translates every HTTPProxy of our class into listeners of the default fleet.
pub fn translate(snapshot: &Snapshot, options: &Options) -> Translation {
    let proxies: BTreeMap<&ObjectKey, &Arc<HTTPProxy>> = snapshot
        .http_proxies
        .iter()
        .filter(|(_, p)| {
            crate::class::is_served(
                crate::class::of(&p.metadata, p.spec.ingress_class_name.as_deref()),
                &options.class_names,
            )
        })
        .collect();
    let mut t = Translator {
        snapshot,
        options,
        proxies: &proxies,
        diagnostics: Vec::new(),
        reached: BTreeSet::new(),
        fallback_routes: Vec::new(),
    };

    // fqdn -> roots claiming it; every claimant of a shared fqdn loses (upstream's rule).
    let mut claims: BTreeMap<String, Vec<&ObjectKey>> = BTreeMap::new();
    for (key, proxy) in &proxies {
        if let Some(vhost) = &proxy.spec.virtualhost {
            claims.entry(vhost.fqdn.trim().to_ascii_lowercase()).or_default().push(key);
        }
    }
    let mut http = Listener {
        name: HTTP_LISTENER.into(),
        port: options.http_port,
        protocol: Protocol::Http,
        hostname: None,
        tls: None,
        http_routes: Vec::new(),
        tls_routes: Vec::new(),
    };
    let mut secure = Vec::new();
    for (fqdn, keys) in &claims {
        if keys.len() > 1 && !fqdn.is_empty() {
            let names: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
            for key in keys {
                let origin = origin(proxies[key]);
                t.error(
                    &origin,
                    "VirtualHostError",
                    "spec.virtualhost.fqdn",
                    "DuplicateVhost",
                    format!("fqdn {fqdn:?} is used in multiple HTTPProxies: {}", names.join(", ")),
                );
            }
            continue;
        }
        for key in keys {
            t.root(key, proxies[key], fqdn, &mut http, &mut secure);
        }
    }
    for (key, proxy) in &proxies {
        if proxy.spec.virtualhost.is_none() && !t.reached.contains(*key) {
            t.error(
                &origin(proxy),
                "Orphaned",
                "metadata",
                "Orphaned",
                "this HTTPProxy is not part of a delegation chain from a root HTTPProxy".into(),
            );
        }
    }
    let Translator { diagnostics, fallback_routes, .. } = t;
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
        });
    }
    let fleets = if listeners.is_empty() {
        Vec::new()
    } else {
        vec![ir::Fleet { id: ir::DEFAULT_FLEET.into(), address: None, origin: None, listeners }]
    };
    Translation { ir: ir::Ir { fleets }, diagnostics }
}

/// The origin of an HTTPProxy.
pub(crate) fn origin(proxy: &HTTPProxy) -> Origin {
    crate::gateway_api::origin("HTTPProxy", &proxy.metadata)
}

/// The routes one proxy of a tree contributes: its own rules, each marked whether plain HTTP
/// must answer it with a redirect to HTTPS.
struct Contribution {
    origin: Arc<Origin>,
    created: i64,
    rules: Vec<(HttpRule, bool)>,
}

struct Translator<'a> {
    snapshot: &'a Snapshot,
    options: &'a Options,
    proxies: &'a BTreeMap<&'a ObjectKey, &'a Arc<HTTPProxy>>,
    diagnostics: Vec<Diagnostic>,
    /// Non-root proxies reached through an include.
    reached: BTreeSet<ObjectKey>,
    /// Routes of TLS virtual hosts that serve clients without SNI with the fallback certificate.
    fallback_routes: Vec<Arc<HttpRoute>>,
}

impl Translator<'_> {
    fn error(&mut self, origin: &Origin, condition: &'static str, field: &str, reason: &'static str, message: String) {
        self.diagnostics.push(Diagnostic {
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
        self.diagnostics.push(Diagnostic {
            origin: origin.clone(),
            severity: Severity::Warning,
            condition,
            field: field.into(),
            reason,
            message,
        });
    }

    /// One root proxy: its checks in upstream's order, then its routes through the tree.
    fn root(
        &mut self,
        key: &ObjectKey,
        proxy: &Arc<HTTPProxy>,
        fqdn: &str,
        http: &mut Listener,
        secure: &mut Vec<Listener>,
    ) {
        let origin = origin(proxy);
        let spec = &proxy.spec;
        let vhost = spec.virtualhost.as_ref().expect("roots have a virtual host");
        if fqdn.is_empty() {
            let message = "Spec.VirtualHost.Fqdn must be specified".into();
            return self.error(&origin, "VirtualHostError", "spec.virtualhost.fqdn", "FQDNNotSpecified", message);
        }
        if !valid_fqdn(fqdn) {
            let message =
                format!("Spec.VirtualHost.Fqdn {fqdn:?} is not a valid DNS name (a leading \"*.\" is allowed)");
            return self.error(&origin, "VirtualHostError", "spec.virtualhost.fqdn", "FQDNNotValid", message);
        }
        let roots = &self.options.root_namespaces;
        if !roots.is_empty() && !roots.contains(&key.namespace) {
            let message = "root HTTPProxy cannot be defined in this namespace".into();
            return self.error(
                &origin,
                "RootNamespaceError",
                "metadata.namespace",
                "RootProxyNotAllowedInNamespace",
                message,
            );
        }
        let none = |len: Option<usize>| len.unwrap_or(0) == 0;
        if none(spec.routes.as_ref().map(Vec::len))
            && none(spec.includes.as_ref().map(Vec::len))
            && spec.tcpproxy.is_none()
        {
            let message = "HTTPProxy.Spec must have at least one Route, Include, or a TCPProxy".into();
            return self.error(&origin, "SpecError", "spec", "NothingDefined", message);
        }
        let Ok(tls) = tls::virtual_host(self, &origin, vhost) else { return };

        if let Some(tcp) = &spec.tcpproxy {
            let Some(tls) = &tls else {
                let message =
                    "Spec.TCPProxy requires that either Spec.TLS.Passthrough or Spec.TLS.SecretName be set".into();
                return self.error(&origin, "TCPProxyError", "spec.tcpproxy", "TLSMustBeConfigured", message);
            };
            let Some(listener) = services::tcp_proxy(self, proxy, &origin, tcp, tls, fqdn) else { return };
            secure.push(listener);
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
                .map(|(rule, upgrade)| if enforce_tls && *upgrade { https_redirect(rule) } else { rule.clone() })
                .collect();
            http.http_routes.push(Arc::new(HttpRoute {
                origin: Arc::clone(&c.origin),
                created: c.created,
                hostnames: host.clone(),
                rules: plain,
            }));
            secure_routes.push(Arc::new(HttpRoute {
                origin: c.origin,
                created: c.created,
                hostnames: host.clone(),
                rules: c.rules.into_iter().map(|(rule, _)| rule).collect(),
            }));
        }
        if let Some(tls) = tls
            && tls.mode == TlsMode::Terminate
            && spec.tcpproxy.is_none()
            && !secure_routes.is_empty()
        {
            if vhost.tls.as_ref().and_then(|t| t.enable_fallback_certificate) == Some(true) {
                self.fallback_routes.extend(secure_routes.iter().cloned());
            }
            secure.push(Listener {
                name: format!("{HTTPS_LISTENER}/{fqdn}"),
                port: self.options.https_port,
                protocol: Protocol::Https,
                hostname: Some(fqdn.to_string()),
                tls: Some(tls),
                http_routes: secure_routes,
                tls_routes: Vec::new(),
            });
        }
    }
}

/// The same rule answering with a 301 to HTTPS, for plain HTTP on a TLS virtual host.
fn https_redirect(rule: &HttpRule) -> HttpRule {
    HttpRule {
        matches: rule.matches.clone(),
        filters: vec![HttpFilter::Redirect(ir::Redirect {
            scheme: Some("https".into()),
            status: 301,
            ..Default::default()
        })],
        backends: Vec::new(),
        request_timeout_ms: None,
        policy: Default::default(),
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
