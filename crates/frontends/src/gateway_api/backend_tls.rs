//! BackendTLSPolicy: which policy applies to which Service (or Service port), whether its CA
//! certificates resolve, and the conditions its status carries.
//!
//! Policies for the same target (a Service, or a Service port by `sectionName`) conflict: the
//! oldest wins, then the first by namespace and name, as the Gateway API settles conflicts. A
//! port's own policy overrides the whole Service's. A policy whose CA certificates all fail to
//! resolve still claims its targets, so requests to them fail instead of going out unverified.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use ir::{BackendTls, BackendTlsPolicy, CaKind, ObjectRef, UpstreamValidation, reason};
use objects::types::BackendTLSPolicy;
use objects::{ObjectKey, Snapshot};

use super::refs::{self, CaCertificate};
use super::status::types::{Condition, ParentRefStatus, RouteParentStatus, RouteStatus};
use super::{GROUP, ParentRef, origin};

/// How many `status.ancestors` entries a policy may have (the CRD's `maxItems`).
const MAX_ANCESTORS: usize = 16;

/// A condition of a policy: status, reason, message.
pub type Verdict = (bool, &'static str, String);

/// What a policy's status says: `Accepted` and `ResolvedRefs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyVerdict {
    pub accepted: Verdict,
    pub resolved: Verdict,
}

/// The policies that apply, and every policy's verdict.
#[derive(Debug, Default)]
pub struct Evaluation {
    pub applied: Vec<BackendTlsPolicy>,
    pub verdicts: BTreeMap<ObjectKey, PolicyVerdict>,
}

/// Evaluates every BackendTLSPolicy of the snapshot.
pub fn evaluate(snapshot: &Snapshot) -> Evaluation {
    let mut policies: Vec<(&ObjectKey, &Arc<BackendTLSPolicy>)> = snapshot.backend_tls_policies.iter().collect();
    policies.sort_by_cached_key(|(key, p)| (p.metadata.creation_timestamp.as_ref().map(|t| t.0), (*key).clone()));
    let mut out = Evaluation::default();
    let mut claimed: BTreeSet<(String, String, Option<String>)> = BTreeSet::new();
    for (key, policy) in policies {
        let (tls, mut verdict) = validation(snapshot, key, policy);
        let mut targets = Vec::new();
        let mut conflicted = false;
        let mut missing_port = None;
        for (i, target) in policy.spec.target_refs.iter().enumerate() {
            if !target.group.is_empty() || target.kind != "Service" {
                continue;
            }
            let section = target.section_name.clone().filter(|s| !s.is_empty());
            // A section names a port of the Service; a policy does not attach to a port the
            // Service does not have (a Service not there yet is attached to, for when it comes).
            let service = snapshot.services.get(&ObjectKey::new(&key.namespace, &target.name));
            let ports = service.and_then(|s| s.spec.as_ref()).and_then(|s| s.ports.as_ref());
            if let (Some(section), Some(service)) = (&section, service)
                && !ports.into_iter().flatten().any(|p| p.name.as_deref() == Some(section.as_str()))
            {
                let name = service.metadata.name.as_deref().unwrap_or_default();
                missing_port =
                    Some(format!("spec.targetRefs[{i}].sectionName: Service {name} has no port {section:?}"));
                continue;
            }
            if claimed.contains(&(key.namespace.clone(), target.name.clone(), section.clone())) {
                conflicted = true;
            } else {
                targets.push((target.name.clone(), section));
            }
        }
        if conflicted {
            // One policy per target: a policy that loses any of its targets applies to none.
            let message = "an older BackendTLSPolicy targets the same Service and section".to_string();
            verdict.accepted = (false, reason::CONFLICTED, message);
            out.verdicts.insert(key.clone(), verdict);
            continue;
        }
        if targets.is_empty() {
            let message = missing_port.unwrap_or_else(|| "no targetRef names a core Service".to_string());
            verdict.accepted = (false, reason::TARGET_NOT_FOUND, message);
            out.verdicts.insert(key.clone(), verdict);
            continue;
        }
        for (service, section) in targets {
            claimed.insert((key.namespace.clone(), service.clone(), section.clone()));
            out.applied.push(BackendTlsPolicy {
                namespace: key.namespace.clone(),
                service,
                section,
                origin: origin("BackendTLSPolicy", &policy.metadata),
                tls: tls.clone(),
            });
        }
        out.verdicts.insert(key.clone(), verdict);
    }
    out.applied.sort();
    out
}

/// The TLS a policy asks for (`None` when no CA certificate resolves) and its conditions.
fn validation(snapshot: &Snapshot, key: &ObjectKey, policy: &BackendTLSPolicy) -> (Option<BackendTls>, PolicyVerdict) {
    let v = &policy.spec.validation;
    let mut usable: Vec<(ObjectRef, CaKind)> = Vec::new();
    let mut problem: Option<(&'static str, String)> = None;
    for (i, r) in v.ca_certificate_refs.iter().flatten().enumerate() {
        let field = format!("spec.validation.caCertificateRefs[{i}]");
        // A ClusterTrustBundle has no namespace.
        let namespace = if refs::cluster_trust_bundle(&r.group, &r.kind) { "" } else { key.namespace.as_str() };
        match refs::ca_certificate(snapshot, &r.group, &r.kind, namespace, &r.name) {
            CaCertificate::Usable(kind) => {
                usable.push((ObjectRef { namespace: namespace.to_string(), name: r.name.clone() }, kind))
            }
            CaCertificate::Unusable => {
                let at = refs::ca_location(&r.kind);
                let message = format!("{field}: {} {} has no PEM CA certificate {at}", r.kind, r.name);
                problem.get_or_insert((reason::INVALID_CA_CERTIFICATE_REF, message));
            }
            CaCertificate::WrongKind => {
                let message = format!("{field}: {}/{} is not {}", r.group, r.kind, refs::CA_KINDS);
                problem.get_or_insert((reason::INVALID_KIND, message));
            }
        }
    }
    let accepted = (true, reason::ACCEPTED, "Accepted".to_string());
    let resolved = match &problem {
        Some((reason, message)) => (false, *reason, message.clone()),
        None => (true, reason::RESOLVED_REFS, "Resolved all the object references".to_string()),
    };
    match v.well_known_ca_certificates.as_deref().filter(|_| usable.is_empty()) {
        None => {}
        // The system's trust store: Envoy reads it from its own filesystem.
        Some("System") => usable.push((ObjectRef { namespace: String::new(), name: "system".into() }, CaKind::System)),
        Some(known) => {
            let message = format!("spec.validation.wellKnownCACertificates: {known:?} is not supported (only System)");
            return (None, PolicyVerdict { accepted: (false, reason::INVALID, message), resolved });
        }
    }
    // Several usable CAs: the first one verifies (Envoy takes one bundle per cluster).
    let Some((ca, ca_kind)) = usable.into_iter().next() else {
        let message = "no CA certificate reference resolves".to_string();
        return (None, PolicyVerdict { accepted: (false, reason::NO_VALID_CA_CERTIFICATE, message), resolved });
    };
    let hostname = v.hostname.to_ascii_lowercase();
    // The server name sent (SNI), which Envoy takes only as a DNS name of at most 255 bytes.
    if let Some(problem) = ir::hostname::problem(&hostname) {
        let message = format!("spec.validation.hostname: {problem}");
        return (None, PolicyVerdict { accepted: (false, reason::INVALID, message), resolved });
    }
    use gateway_api::backendtlspolicies::BackendTlsPolicyValidationSubjectAltNamesType as SanType;
    let (mut subject_names, mut subject_uris) = (Vec::new(), Vec::new());
    // The field of the SAN's type counts; the other is ignored, as the spec says.
    for san in v.subject_alt_names.iter().flatten() {
        match san.r#type {
            SanType::Hostname => subject_names.extend(san.hostname.clone()),
            SanType::Uri => subject_uris.extend(san.uri.clone()),
        }
    }
    // Without subjectAltNames the certificate must carry the hostname; with them, only them.
    if subject_names.is_empty() && subject_uris.is_empty() {
        subject_names.push(hostname.clone());
    }
    let validation = UpstreamValidation { ca, ca_kind, subject_names, subject_uris };
    let tls = BackendTls { validation, sni: hostname };
    (Some(tls), PolicyVerdict { accepted, resolved })
}

/// Whether a parentRef (a Gateway or a ListenerSet) names a listener that terminates TLS: the
/// one its sectionName names, else any of them.
fn terminates(snapshot: &Snapshot, parent: &ParentRef) -> bool {
    use gateway_api::gateways::{GatewayListeners, GatewayListenersTlsMode as Mode};
    let key = ObjectKey::new(&parent.namespace, &parent.name);
    let listeners: Vec<GatewayListeners> = match parent.kind.as_str() {
        "Gateway" => snapshot.gateways.get(&key).map(|g| g.spec.listeners.clone()).unwrap_or_default(),
        "ListenerSet" => snapshot
            .listener_sets
            .get(&key)
            .map(|ls| ls.spec.listeners.iter().map(super::listener_set::as_gateway_listener).collect())
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    listeners.iter().any(|l| {
        let passthrough = matches!(l.tls.as_ref().and_then(|t| t.mode.as_ref()), Some(Mode::Passthrough));
        l.protocol == "TLS" && !passthrough && parent.section_name.as_deref().is_none_or(|s| s == l.name)
    })
}

/// The status of every BackendTLSPolicy that one of `gateways` (ours) reaches: an ancestor entry
/// per Gateway with an HTTPRoute or GRPCRoute sending to a Service the policy targets, or a
/// TLSRoute doing so through a listener that terminates TLS.
pub(super) fn status(snapshot: &Snapshot, gateways: &[&ObjectKey]) -> Vec<RouteStatus> {
    if snapshot.backend_tls_policies.is_empty() {
        return Vec::new();
    }
    // (namespace, Service) -> our Gateways whose routes send to it.
    let mut reached: BTreeMap<(String, String), BTreeSet<ObjectKey>> = BTreeMap::new();
    let mut reach = |route_namespace: &str, parents: Vec<ParentRef>, services: Vec<(Option<&str>, &str)>| {
        // A route attached through a ListenerSet reaches the ListenerSet's Gateway.
        let ours: Vec<ObjectKey> = parents
            .iter()
            .filter(|p| p.group == GROUP)
            .filter_map(|p| {
                let key = ObjectKey::new(&p.namespace, &p.name);
                match p.kind.as_str() {
                    "Gateway" => Some(key),
                    "ListenerSet" => super::listener_set::parent_of(snapshot, &key),
                    _ => None,
                }
            })
            .filter(|k| gateways.contains(&k))
            .collect();
        if ours.is_empty() {
            return;
        }
        for (namespace, name) in services {
            let key = (namespace.unwrap_or(route_namespace).to_string(), name.to_string());
            reached.entry(key).or_default().extend(ours.iter().cloned());
        }
    };
    let is_service = |group: Option<&str>, kind: Option<&str>| {
        group.unwrap_or("").is_empty() && kind.unwrap_or("Service") == "Service"
    };
    // The two kinds' generated types differ but share these fields.
    macro_rules! reach_all {
        ($routes:expr, $parents:path) => {
            for r in $routes.values() {
                let rules = r.spec.rules.iter().flatten();
                let backends = rules.flat_map(|rule| rule.backend_refs.iter().flatten());
                let services = backends
                    .filter(|b| is_service(b.group.as_deref(), b.kind.as_deref()))
                    .map(|b| (b.namespace.as_deref(), b.name.as_str()))
                    .collect();
                reach(r.metadata.namespace.as_deref().unwrap_or_default(), $parents(r), services);
            }
        };
    }
    reach_all!(snapshot.http_routes, super::http_route::parent_refs);
    reach_all!(snapshot.grpc_routes, super::grpc_route::parent_refs);
    // A TLSRoute reaches its Services through a Gateway only where a listener it attaches to
    // terminates TLS: passed-through connections go to the backend as the client sent them.
    for r in snapshot.tls_routes.values() {
        let parents = super::tls_route::parent_refs(r).into_iter().filter(|p| terminates(snapshot, p)).collect();
        let backends = r.spec.rules.iter().flat_map(|rule| rule.backend_refs.iter());
        let services = backends
            .filter(|b| is_service(b.group.as_deref(), b.kind.as_deref()))
            .map(|b| (b.namespace.as_deref(), b.name.as_str()))
            .collect();
        reach(r.metadata.namespace.as_deref().unwrap_or_default(), parents, services);
    }
    let evaluation = evaluate(snapshot);
    let mut out = Vec::new();
    for (key, policy) in snapshot.backend_tls_policies.iter() {
        let Some(verdict) = evaluation.verdicts.get(key) else { continue };
        let mut ancestors: BTreeSet<&ObjectKey> = BTreeSet::new();
        for target in policy.spec.target_refs.iter().filter(|t| t.group.is_empty() && t.kind == "Service") {
            ancestors.extend(reached.get(&(key.namespace.clone(), target.name.clone())).into_iter().flatten());
        }
        if ancestors.is_empty() {
            continue;
        }
        let generation = policy.metadata.generation.unwrap_or(0);
        let condition = |type_: &'static str, (status, reason, message): &Verdict| Condition {
            type_,
            status: *status,
            reason,
            message: message.clone(),
            observed_generation: generation,
        };
        // The CRD allows 16 ancestors; the first 16 Gateways by name are reported.
        let parents = ancestors
            .into_iter()
            .take(MAX_ANCESTORS)
            .map(|gateway| RouteParentStatus {
                parent: ParentRefStatus {
                    group: GROUP.into(),
                    kind: "Gateway".into(),
                    namespace: gateway.namespace.clone(),
                    name: gateway.name.clone(),
                    section_name: None,
                    port: None,
                },
                conditions: vec![
                    condition("Accepted", &verdict.accepted),
                    condition("ResolvedRefs", &verdict.resolved),
                ],
            })
            .collect();
        let uid = policy.metadata.uid.clone().unwrap_or_default();
        out.push(RouteStatus::new("BackendTLSPolicy", key.clone(), uid, parents));
    }
    out
}
