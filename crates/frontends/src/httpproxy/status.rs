//! HTTPProxy status as upstream writes it: one `Valid` DetailedCondition with error and warning
//! sub-conditions, `currentStatus` and `description`. Pure; the writer lives elsewhere.

use std::collections::BTreeMap;
use std::sync::Arc;

use ir::{Diagnostic, Severity, reason};
use objects::types::HTTPProxy;
use objects::{ObjectKey, Snapshot};

use super::Options;

/// One error or warning of the `Valid` condition.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SubCondition {
    /// The sub-condition type, such as `IncludeError`.
    pub type_: &'static str,
    /// The reason, such as `IncludeNotFound`.
    pub reason: &'static str,
    /// What is wrong.
    pub message: String,
}

/// What an HTTPProxy's status should say.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ProxyStatus {
    /// The proxy.
    pub key: ObjectKey,
    /// The virtual host's fqdn for a root, empty otherwise (upstream's `vhost` metric label).
    pub vhost: String,
    /// Its uid: a proxy deleted and created again under the same name is another object.
    pub uid: String,
    /// `metadata.generation` the status describes.
    pub generation: i64,
    /// `valid`, `invalid` or `orphaned`.
    pub current_status: &'static str,
    /// The description: the condition's message, or the orphan message.
    pub description: String,
    /// Whether the `Valid` condition is True.
    pub valid: bool,
    /// `Valid` or `ErrorPresent`.
    pub reason: &'static str,
    /// The condition's message.
    pub message: String,
    /// Errors, in a stable order.
    pub errors: Vec<SubCondition>,
    /// Warnings, in a stable order.
    pub warnings: Vec<SubCondition>,
}

impl ProxyStatus {
    /// Marks the proxy invalid because Envoy refused the configuration it is part of, with
    /// Envoy's words; cleared by the next computation once Envoy accepts again.
    pub fn reject(&mut self, envoy_error: &str) {
        self.errors.push(SubCondition {
            type_: "EnvoyError",
            reason: reason::CONFIGURATION_REJECTED,
            message: format!("Envoy rejected the configuration: {envoy_error}"),
        });
        self.valid = false;
        self.current_status = "invalid";
        self.reason = reason::ERROR_PRESENT;
        self.message = "At least one error present, see Errors for details".into();
        self.description = self.message.clone();
    }
}

/// The status of every HTTPProxy of our class, from the pipeline's diagnostics.
pub fn compute(snapshot: &Snapshot, options: &Options, diagnostics: &[Diagnostic]) -> Vec<ProxyStatus> {
    let by_proxy = by_object(diagnostics, "HTTPProxy");
    let mut out = Vec::new();
    for (key, proxy) in snapshot.http_proxies.iter() {
        let class = crate::class::of(&proxy.metadata, proxy.spec.ingress_class_name.as_deref());
        if !crate::class::is_served(class, &options.class_names) {
            continue;
        }
        out.push(one(key, proxy, &by_proxy));
    }
    out
}

/// One proxy's status from its diagnostics.
fn one(key: &ObjectKey, proxy: &HTTPProxy, by_proxy: &BTreeMap<(&str, &str), Vec<&Diagnostic>>) -> ProxyStatus {
    let mut status = detailed(key, &proxy.metadata, by_proxy, "Valid HTTPProxy");
    let orphan = status.errors.iter().find(|e| e.type_ == "Orphaned").map(|e| e.message.clone());
    if orphan.is_some() {
        status.current_status = "orphaned";
    }
    status.description = orphan.unwrap_or_else(|| status.message.clone());
    status.vhost = proxy.spec.virtualhost.as_ref().map(|v| v.fqdn.to_ascii_lowercase()).unwrap_or_default();
    status
}

/// The statuses of [`compute`] kept between builds: a proxy whose object and diagnostics are
/// the same as at the previous build keeps its status, shared, without computing it again. At
/// 10k proxies computing each one's status (and its strings) was 6% of a new app's CPU.
#[derive(Debug, Default)]
pub struct StatusCache {
    options: Option<Options>,
    /// In key order, as the snapshot's proxies.
    entries: Vec<Cached>,
}

#[derive(Debug)]
struct Cached {
    proxy: Arc<HTTPProxy>,
    diagnostics: Vec<Diagnostic>,
    status: Arc<ProxyStatus>,
}

/// [`compute`], reusing what `cache` holds for proxies that did not change: one walk over the
/// proxies beside the previous statuses, comparing pointers and (usually no) diagnostics.
pub fn compute_cached(
    snapshot: &Snapshot,
    options: &Options,
    diagnostics: &[Diagnostic],
    cache: &mut StatusCache,
) -> Vec<Arc<ProxyStatus>> {
    if cache.options.as_ref() != Some(options) {
        *cache = StatusCache { options: Some(options.clone()), entries: Vec::new() };
    }
    let by_proxy = by_object(diagnostics, "HTTPProxy");
    let mut previous = std::mem::take(&mut cache.entries).into_iter().peekable();
    let mut entries = Vec::with_capacity(snapshot.http_proxies.len());
    for (key, proxy) in snapshot.http_proxies.iter() {
        let class = crate::class::of(&proxy.metadata, proxy.spec.ingress_class_name.as_deref());
        if !crate::class::is_served(class, &options.class_names) {
            continue;
        }
        let mine = by_proxy.get(&(key.namespace.as_str(), key.name.as_str()));
        while previous.next_if(|e| e.status.key < *key).is_some() {}
        let kept = previous
            .next_if(|e| e.status.key == *key)
            .filter(|e| Arc::ptr_eq(&e.proxy, proxy) && e.diagnostics.iter().eq(mine.into_iter().flatten().copied()));
        entries.push(match kept {
            Some(e) => e,
            None => Cached {
                proxy: Arc::clone(proxy),
                diagnostics: mine.into_iter().flatten().map(|d| (*d).clone()).collect(),
                status: Arc::new(one(key, proxy, &by_proxy)),
            },
        });
    }
    cache.entries = entries;
    cache.entries.iter().map(|e| Arc::clone(&e.status)).collect()
}

/// The status of every ExtensionService (upstream's: a `Valid` condition with its errors and
/// warnings); `current_status`, `description` and `vhost` are not part of it.
pub fn extensions(snapshot: &Snapshot, diagnostics: &[Diagnostic]) -> Vec<ProxyStatus> {
    let by_object = by_object(diagnostics, "ExtensionService");
    snapshot
        .extension_services
        .iter()
        .map(|(key, ext)| detailed(key, &ext.metadata, &by_object, "Valid ExtensionService"))
        .collect()
}

/// The diagnostics of one kind, by object.
fn by_object<'d>(diagnostics: &'d [Diagnostic], kind: &str) -> BTreeMap<(&'d str, &'d str), Vec<&'d Diagnostic>> {
    let mut out: BTreeMap<(&str, &str), Vec<&Diagnostic>> = BTreeMap::new();
    for d in diagnostics.iter().filter(|d| d.origin.kind == kind) {
        out.entry((d.origin.namespace.as_str(), d.origin.name.as_str())).or_default().push(d);
    }
    out
}

/// An object's `Valid` condition from its diagnostics: `valid` message when there is no error.
fn detailed(
    key: &ObjectKey,
    metadata: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    by_object: &BTreeMap<(&str, &str), Vec<&Diagnostic>>,
    valid_message: &str,
) -> ProxyStatus {
    let mine = by_object.get(&(key.namespace.as_str(), key.name.as_str())).into_iter().flatten();
    let (mut errors, mut warnings) = (Vec::new(), Vec::new());
    for d in mine {
        let sub = SubCondition {
            type_: if d.condition.is_empty() { "ServiceError" } else { d.condition },
            reason: d.reason,
            message: d.message.clone(),
        };
        let list = if d.severity == Severity::Error { &mut errors } else { &mut warnings };
        if !list.contains(&sub) {
            list.push(sub);
        }
    }
    let (current_status, valid, reason, message) = if errors.is_empty() {
        ("valid", true, reason::VALID, valid_message.to_string())
    } else {
        ("invalid", false, reason::ERROR_PRESENT, "At least one error present, see Errors for details".to_string())
    };
    ProxyStatus {
        key: key.clone(),
        vhost: String::new(),
        uid: metadata.uid.clone().unwrap_or_default(),
        generation: metadata.generation.unwrap_or(0),
        current_status,
        description: message.clone(),
        valid,
        reason,
        message,
        errors,
        warnings,
    }
}
