//! Admission checks at apply time: the validating webhook's judge and its HTTPS server.
//!
//! A proposed object (from the API server's AdmissionReview) is put into the current snapshot,
//! and the same front ends and DAG the controller runs decide what its status would say. The
//! change is denied when it would make the object invalid, or another object that is valid now:
//! an fqdn another HTTPProxy already has, an include cycle, a bad regex, a value the API does not
//! know. What only leaves the object partly served (a Service, Secret, included HTTPProxy or
//! ReferenceGrant that does not exist yet, a warning) is allowed, with admission warnings: a
//! `kubectl apply` of a directory creates objects in any order.

mod server;

use std::sync::Arc;

use ir::{Diagnostic, Severity, reason};
use objects::{Kind, Object, Snapshot};

pub use server::{Counters, serve};

/// Reasons of errors that name another object which may not exist yet, or not be permitted yet:
/// the object is then partly served until it does. The change is allowed, with a warning.
const REFERENCE_REASONS: &[&str] = &[
    // HTTPProxy and ExtensionService.
    reason::SERVICE_UNRESOLVED_REFERENCE,
    reason::SERVICE_NOT_FOUND,
    reason::INCLUDE_NOT_FOUND,
    reason::EXTENSION_SERVICE_NOT_FOUND,
    reason::SECRET_NOT_VALID,
    reason::DELEGATION_NOT_PERMITTED,
    reason::CA_CERTIFICATE_NOT_DELEGATED,
    reason::FALLBACK_NOT_DELEGATED,
    reason::REMOTE_JWKS_CA_CERTIFICATE_NOT_DELEGATED,
    reason::OIDC_CLIENT_SECRET_INVALID,
    reason::ERROR_PAGE_INVALID,
    // Gateway API.
    reason::BACKEND_NOT_FOUND,
    reason::REF_NOT_PERMITTED,
    reason::INVALID_CERTIFICATE_REF,
    reason::INVALID_CA_CERTIFICATE_REF,
    reason::INVALID_CLIENT_CERTIFICATE_REF,
    reason::NO_VALID_CA_CERTIFICATE,
    reason::TARGET_NOT_FOUND,
    reason::NOT_ALLOWED_BY_LISTENERS,
];

/// Condition types whose errors say how the object is used rather than what is wrong with it
/// (an HTTPProxy no root includes yet).
const USE_CONDITIONS: &[&str] = &["Orphaned"];

/// The answer to one proposed change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Whether the change may be stored.
    pub allowed: bool,
    /// Why not, naming each object and field at fault.
    pub message: String,
    /// What would only be partly served, one line each.
    pub warnings: Vec<String>,
}

impl Verdict {
    fn allow(warnings: Vec<String>) -> Self {
        Self { allowed: true, message: String::new(), warnings }
    }
}

/// The pipeline's front ends and DAG with their caches, and the diagnostics of the last
/// snapshot judged against (the "before" of every change).
pub struct Judge {
    options: controller::Options,
    frontends: frontends::Caches,
    dag: dag::Cache,
    before: Option<(Arc<Snapshot>, Vec<Diagnostic>)>,
}

impl Judge {
    /// A judge with the controller's settings.
    pub fn new(options: controller::Options) -> Self {
        Self { options, frontends: Default::default(), dag: Default::default(), before: None }
    }

    /// The diagnostics of the front ends and the DAG on `snapshot`.
    fn diagnostics(&mut self, snapshot: &Snapshot) -> Vec<Diagnostic> {
        let translation = frontends::translate_all(snapshot, self.options.frontends(), &mut self.frontends);
        self.dag.set_options(&self.options.dag);
        dag::build_cached(&translation.ir, snapshot, translation.diagnostics, &mut self.dag).diagnostics
    }

    /// Judges `object` put into `current` (replacing the object of the same key, if any).
    pub fn judge(&mut self, current: &Arc<Snapshot>, object: Object) -> Verdict {
        let (kind, key) = (object.kind(), object.key());
        // An HTTPProxy is judged among the HTTPProxies it can affect or be affected by (its
        // neighbourhood): what the rest say does not change with it, and leaving them out
        // keeps an answer at 10k HTTPProxies to about a millisecond.
        let (current, before) = match neighbourhood(current, &object) {
            Some(reduced) => {
                let reduced = Arc::new(reduced);
                let diagnostics = self.diagnostics(&reduced);
                (reduced, diagnostics)
            }
            None => match &self.before {
                Some((snapshot, diagnostics)) if Arc::ptr_eq(snapshot, current) => {
                    (Arc::clone(current), diagnostics.clone())
                }
                _ => {
                    let diagnostics = self.diagnostics(current);
                    self.before = Some((Arc::clone(current), diagnostics.clone()));
                    (Arc::clone(current), diagnostics)
                }
            },
        };
        let mut proposed = Snapshot::clone(&current);
        proposed.insert(object);
        let after = self.diagnostics(&proposed);
        let is_object = |d: &Diagnostic| {
            d.origin.kind == kind.name() && d.origin.namespace == key.namespace && d.origin.name == key.name
        };
        let same = |a: &Diagnostic, b: &Diagnostic| {
            (a.origin.kind, &a.origin.namespace, &a.origin.name, &a.field, a.reason, &a.message)
                == (b.origin.kind, &b.origin.namespace, &b.origin.name, &b.field, b.reason, &b.message)
        };
        let refused = |d: &Diagnostic| {
            d.severity == Severity::Error
                && !REFERENCE_REASONS.contains(&d.reason)
                && !USE_CONDITIONS.contains(&d.condition)
        };
        let line = |d: &Diagnostic| format!("{}: {} ({})", d.field, d.message, d.reason);
        let own: Vec<&Diagnostic> = after.iter().filter(|d| is_object(d)).collect();
        let mut errors: Vec<String> = own.iter().filter(|d| refused(d)).map(|d| line(d)).collect();
        let mut warnings: Vec<String> = own.iter().filter(|d| !refused(d)).map(|d| line(d)).collect();
        // Other objects this change would break, unless the object's own errors already say it
        // (both HTTPProxies of a duplicate fqdn are invalid).
        for d in after.iter().filter(|d| !is_object(d) && refused(d)) {
            if !own.iter().any(|o| o.reason == d.reason) && !before.iter().any(|b| same(b, d)) {
                errors.push(format!("it would make {} invalid: {}", d.origin, line(d)));
            }
        }
        errors.dedup();
        warnings.dedup();
        if errors.is_empty() {
            return Verdict::allow(warnings);
        }
        let name = if key.namespace.is_empty() { key.name.clone() } else { format!("{}/{}", key.namespace, key.name) };
        Verdict { allowed: false, message: format!("{} {name}: {}", kind.name(), errors.join("; ")), warnings }
    }
}

/// For an HTTPProxy, `current` with only the HTTPProxies whose validity can depend on it or it
/// on them: the proposed object's and the stored version's include trees taken as one
/// undirected graph (parents, children, and the children's siblings, whose conditions may
/// clash), and every HTTPProxy of an fqdn in it. Other kinds: `None` (judged on everything,
/// where the front ends' caches keep a one-object change cheap; a subset would miss them).
fn neighbourhood(current: &Snapshot, object: &Object) -> Option<Snapshot> {
    use std::collections::BTreeSet;
    let Object::HttpProxy(proposed) = object else { return None };
    let key = object.key();
    let fqdn = |p: &api::httpproxy::HTTPProxy| p.spec.virtualhost.as_ref().map(|v| v.fqdn.to_ascii_lowercase());
    // The objects an HTTPProxy includes, by key.
    let includes = |p: &api::httpproxy::HTTPProxy, namespace: &str| {
        let tcp = p.spec.tcpproxy.as_ref().and_then(|t| t.include.as_ref().or(t.includes.as_ref()));
        let http = p.spec.includes.iter().flatten().map(|i| (i.name.clone(), i.namespace.clone()));
        http.chain(tcp.map(|i| (i.name.clone(), i.namespace.clone())))
            .map(|(name, ns)| objects::ObjectKey { namespace: ns.unwrap_or_else(|| namespace.to_string()), name })
            .collect::<Vec<_>>()
    };
    let mut family: BTreeSet<objects::ObjectKey> = BTreeSet::from([key.clone()]);
    let mut hosts: BTreeSet<String> = fqdn(proposed).into_iter().collect();
    family.extend(includes(proposed, &key.namespace));
    if let Some(stored) = current.http_proxies.get(&key) {
        hosts.extend(fqdn(stored));
        family.extend(includes(stored, &key.namespace));
    }
    // Every include, as an edge (only HTTPProxies that include something allocate).
    let edges: Vec<(objects::ObjectKey, objects::ObjectKey)> = current
        .http_proxies
        .iter()
        .filter(|(_, p)| p.spec.includes.as_ref().is_some_and(|i| !i.is_empty()) || p.spec.tcpproxy.is_some())
        .flat_map(|(k, p)| includes(p, &k.namespace).into_iter().map(move |c| (k.clone(), c)))
        .collect();
    // To a fixpoint: the HTTPProxies of the family's fqdns (a scan of all, again only when an
    // fqdn joined), and both ends of every include touching the family. Bounded: a round that
    // goes on added a member or an fqdn, and there are finitely many.
    let mut scanned = 0;
    loop {
        let before = (family.len(), hosts.len());
        if hosts.len() > scanned {
            scanned = hosts.len();
            for (k, p) in current.http_proxies.iter() {
                let host = p.spec.virtualhost.as_ref().map(|v| v.fqdn.as_str());
                if host.is_some_and(|h| hosts.iter().any(|f| f.eq_ignore_ascii_case(h))) {
                    family.insert(k.clone());
                }
            }
        }
        for (parent, child) in &edges {
            if family.contains(parent) || family.contains(child) {
                family.insert(parent.clone());
                family.insert(child.clone());
            }
        }
        hosts.extend(family.iter().filter_map(|k| current.http_proxies.get(k)).filter_map(|p| fqdn(p)));
        if (family.len(), hosts.len()) == before {
            break;
        }
    }
    let mut reduced = current.clone();
    reduced.http_proxies = Arc::new(
        family.iter().filter_map(|k| current.http_proxies.get(k).map(|p| (k.clone(), Arc::clone(p)))).collect(),
    );
    Some(reduced)
}

/// The kind of an AdmissionReview's `request.kind` (`group`, `kind`), when the controller reads it.
fn kind_of(group: &str, name: &str) -> Option<Kind> {
    Kind::ALL.iter().copied().find(|k| k.group() == group && k.name() == name)
}

/// Answers one AdmissionReview (`admission.k8s.io/v1`) against `snapshot`: the response review,
/// as the API server expects it. Kinds the controller does not read, deletions and objects it
/// cannot parse are allowed (the API server's schema validation has the last word on those).
pub fn review(judge: &mut Judge, snapshot: &Arc<Snapshot>, body: &[u8]) -> serde_json::Value {
    let review: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    let request = &review["request"];
    let verdict = judge_request(judge, snapshot, request);
    let mut response = serde_json::json!({"uid": request["uid"], "allowed": verdict.allowed});
    if !verdict.allowed {
        response["status"] = serde_json::json!({"code": 422, "reason": reason::INVALID, "message": verdict.message});
    }
    if !verdict.warnings.is_empty() {
        response["warnings"] = serde_json::json!(verdict.warnings);
    }
    let api_version = review["apiVersion"].as_str().unwrap_or("admission.k8s.io/v1");
    serde_json::json!({"apiVersion": api_version, "kind": "AdmissionReview", "response": response})
}

fn judge_request(judge: &mut Judge, snapshot: &Arc<Snapshot>, request: &serde_json::Value) -> Verdict {
    let (group, name) =
        (request["kind"]["group"].as_str().unwrap_or(""), request["kind"]["kind"].as_str().unwrap_or(""));
    let Some(kind) = kind_of(group, name) else { return Verdict::allow(Vec::new()) };
    if !matches!(request["operation"].as_str(), Some("CREATE" | "UPDATE")) {
        return Verdict::allow(Vec::new());
    }
    let mut json = request["object"].clone();
    if !json.is_object() {
        return Verdict::allow(Vec::new());
    }
    // A new object has no namespace or creation time yet: it gets the request's, and now (the
    // oldest object wins a conflict, so a new one must not look older than the rest).
    if let Some(namespace) = request["namespace"].as_str().filter(|n| !n.is_empty() && kind.namespaced())
        && json["metadata"]["namespace"].as_str().is_none_or(str::is_empty)
    {
        json["metadata"]["namespace"] = namespace.into();
    }
    let mut object = match Object::from_json(kind, json) {
        Ok(object) => object,
        Err(e) => return Verdict::allow(vec![format!("not checked: the object does not parse ({e})")]),
    };
    if object.meta().creation_timestamp.is_none() {
        let now = k8s_openapi::jiff::Timestamp::now();
        object.meta_mut().creation_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(now));
    }
    judge.judge(snapshot, object)
}

#[cfg(test)]
mod tests;
