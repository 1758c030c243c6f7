//! Front ends: Kubernetes objects of one API family into the IR, plus diagnostics for what they reject.
//!
//! Each front end is a pure function of a [`objects::Snapshot`]. Gateway API makes one fleet per
//! Gateway; HTTPProxy (and Ingress) make the default fleet.

pub mod class;
pub mod delegation;
pub mod extension;
pub mod gateway_api;
pub mod httpproxy;
pub mod ingress;
pub mod shared;

/// Upstream's global header policy (contour.yaml `policy`, ContourConfiguration `spec.policy`):
/// header changes on every HTTPProxy service, and on every Ingress backend when `applyToIngress`
/// is set. A service's own policy wins header by header; removals add up.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DefaultHeaders {
    /// Changes to requests sent to backends (a `Host` here rewrites it where the service does not).
    pub request: api::httpproxy::HeadersPolicy,
    /// Changes to responses.
    pub response: api::httpproxy::HeadersPolicy,
}

/// Every front end's cache, for [`translate_all`].
#[derive(Debug, Default)]
pub struct Caches {
    gateway_api: gateway_api::Cache,
    httpproxy: httpproxy::Cache,
    ingress: ingress::Cache,
}

/// Every front end's settings.
#[derive(Debug, Clone, Copy)]
pub struct AllOptions<'a> {
    /// The Gateway API front end's.
    pub gateway_api: &'a gateway_api::Options,
    /// The HTTPProxy front end's.
    pub httpproxy: &'a httpproxy::Options,
    /// The Ingress front end's.
    pub ingress: &'a ingress::Options,
}

/// Every front end on one snapshot, merged: Gateway API, HTTPProxy, Ingress, the
/// ExtensionServices, and the default fleet, which always exists (empty or not, as upstream's
/// single configuration does: its Envoys get their stats and admin listeners, and so turn ready,
/// before any route). Each front end reuses what `caches` holds for unchanged objects.
pub fn translate_all(snapshot: &objects::Snapshot, options: AllOptions<'_>, caches: &mut Caches) -> Translation {
    let mut translation = gateway_api::translate_cached(snapshot, options.gateway_api, &mut caches.gateway_api);
    translation.merge(httpproxy::translate_cached(snapshot, options.httpproxy, &mut caches.httpproxy));
    translation.merge(ingress::translate_cached(snapshot, options.ingress, &mut caches.ingress));
    translation.merge(extension::translate(snapshot));
    translation.merge(Translation {
        ir: ir::Ir { fleets: vec![ir::Fleet::default_fleet(Vec::new(), Vec::new())], backend_tls: Vec::new() },
        diagnostics: Vec::new(),
    });
    translation
}

/// What a front end produces: fleets for the IR and the problems it found, per object.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Translation {
    /// The IR fleets.
    pub ir: ir::Ir,
    /// Problems, each naming its object and field.
    pub diagnostics: Vec<ir::Diagnostic>,
}

impl Translation {
    /// Adds another front end's translation. Fleets with the same id (the default fleet, from
    /// HTTPProxy and Ingress) become one; their listeners of the same name become one, so routes
    /// for the same host merge into one virtual host, as upstream merges them.
    pub fn merge(&mut self, other: Translation) {
        for fleet in other.ir.fleets {
            match self.ir.fleets.iter_mut().find(|f| f.id == fleet.id) {
                None => self.ir.fleets.push(fleet),
                Some(into) => {
                    into.extensions.extend(fleet.extensions);
                    into.backend_certificate = into.backend_certificate.take().or(fleet.backend_certificate);
                    for listener in fleet.listeners {
                        match into.listeners.iter_mut().find(|l| l.name == listener.name) {
                            None => into.listeners.push(listener),
                            Some(l) => {
                                l.http_routes.extend(listener.http_routes);
                                l.tls_routes.extend(listener.tls_routes);
                                l.l4_routes.extend(listener.l4_routes);
                            }
                        }
                    }
                }
            }
        }
        self.ir.fleets.sort_by(|a, b| a.id.cmp(&b.id));
        self.ir.backend_tls.extend(other.ir.backend_tls);
        self.ir.backend_tls.sort();
        self.diagnostics.extend(other.diagnostics);
    }
}

/// The header condition upstream adds to every route of a wildcard host (HTTPProxy and Ingress),
/// so that `*.example.com` matches exactly one DNS label (Envoy's own wildcard domains match any
/// number of labels). `None` for a host without a wildcard.
pub fn wildcard_authority(host: &str) -> Option<ir::HeaderMatch> {
    // `*.example.com` only: `*` alone is the catch-all virtual host.
    let suffix = host.strip_prefix('*').filter(|s| s.starts_with('.'))?;
    let escaped: String = suffix.chars().flat_map(|c| (c == '.').then_some('\\').into_iter().chain([c])).collect();
    let pattern = format!("^[a-z0-9]([-a-z0-9]*[a-z0-9])?{escaped}(:[0-9]+)?");
    Some(ir::HeaderMatch::new(":authority", ir::StringMatch::Regex(pattern)))
}

/// The same rule answering with a 301 to HTTPS: plain HTTP on a TLS virtual host (HTTPProxy) or
/// with `force-ssl-redirect` (Ingress).
pub(crate) fn https_redirect(rule: &ir::HttpRule) -> ir::HttpRule {
    let redirect = ir::Redirect { scheme: Some("https".into()), status: 301, ..Default::default() };
    ir::HttpRule {
        matches: rule.matches.clone(),
        filters: vec![ir::HttpFilter::Redirect(redirect)],
        backends: Vec::new(),
        request_timeout_ms: None,
        policy: Default::default(),
    }
}

/// Shared test fixtures: a real certificate and key (`objects::secrets::testing`), base64.
#[cfg(test)]
pub(crate) mod fixtures {
    /// `tls.crt`, base64.
    pub const CERT: &str = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJzekNDQVZxZ0F3SUJBZ0lVRjZxdnVZODhmRHdYMkZ0TG4rdXJTd3kreHVFd0NnWUlLb1pJemowRUF3SXcKR3pFWk1CY0dBMVVFQXd3UVpuVjZlaTVsZUdGdGNHeGxMbU52YlRBZ0Z3MHlOakV4TWpVd016RXhOVFZhR0E4eQpNVEkyTVRFd01UQXpNVEUxTlZvd0d6RVpNQmNHQTFVRUF3d1FablY2ZWk1bGVHRnRjR3hsTG1OdmJUQlpNQk1HCkJ5cUdTTTQ5QWdFR0NDcUdTTTQ5QXdFSEEwSUFCT3ZOK3NWQk5YNTdXRm1HR1lZSWJiN3NHUGRTcEYyaDF6YW4KRGlOSllQdFhBOU5nUklld0Q2SW5YSUVOZGw1U1hQZldoYUk0SlJRSFNtMU01WXRoVlhTamVqQjRNQjBHQTFVZApEZ1FXQkJUMmx2ai9KQ2h3WDUyNVo4MVJRL1JIdTVLaVhUQWZCZ05WSFNNRUdEQVdnQlQybHZqL0pDaHdYNTI1Clo4MVJRL1JIdTVLaVhUQVBCZ05WSFJNQkFmOEVCVEFEQVFIL01DVUdBMVVkRVFRZU1CeUNEU291WlhoaGJYQnMKWlM1amIyMkNDMlY0WVcxd2JHVXVZMjl0TUFvR0NDcUdTTTQ5QkFNQ0EwY0FNRVFDSUcvWGJnTEpYR2xLQ1FMRQpNUzdjUFB5YnFKNG85TDM4VHh3QmhNdm54NHRzQWlBZDNhSkNHMStxbjBQK1lEQm5MY2d6V2ZlelB4K1pCd2NYCndqaU5yS2NiVGc9PQotLS0tLUVORCBDRVJUSUZJQ0FURS0tLS0tCg==";
    /// `tls.key`, base64.
    pub const KEY: &str = "LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0tCk1JR0hBZ0VBTUJNR0J5cUdTTTQ5QWdFR0NDcUdTTTQ5QXdFSEJHMHdhd0lCQVFRZ3ZyTDlhNjVhTFJwR1l3RnUKL29UeW1VQ0xpV2FuZ0VIMExHR2t6dHZDaDZHaFJBTkNBQVRyemZyRlFUVitlMWhaaGhtR0NHMis3QmozVXFSZApvZGMycHc0alNXRDdWd1BUWUVTSHNBK2lKMXlCRFhaZVVsejMxb1dpT0NVVUIwcHRUT1dMWVZWMAotLS0tLUVORCBQUklWQVRFIEtFWS0tLS0tCg==";

    /// A `kubernetes.io/tls` Secret (with `extra` data entries, `key: value, ...`).
    pub fn tls_secret(namespace: &str, name: &str, extra: &str) -> String {
        let extra = if extra.is_empty() { String::new() } else { format!(", {extra}") };
        format!(
            "---\napiVersion: v1\nkind: Secret\nmetadata: {{name: {name}, namespace: {namespace}}}\ntype: kubernetes.io/tls\ndata: {{tls.crt: {CERT}, tls.key: {KEY}{extra}}}\n"
        )
    }
}
