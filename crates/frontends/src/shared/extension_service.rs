//! ExtensionService checks in upstream's order, shared by the ExtensionService front end (its
//! status and its cluster) and HTTPProxy's authorization (which refers to one).

use ir::{ExtensionService, LoadBalancer, ObjectRef, ServicePort, UpstreamProtocol, reason};
use objects::{ObjectKey, Snapshot};

/// Something wrong with an ExtensionService: the sub-condition type, field, reason and message
/// of its `Valid` condition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    /// The condition type, such as `ServiceError`.
    pub condition: &'static str,
    /// The field at fault.
    pub field: &'static str,
    /// Upstream's reason.
    pub reason: &'static str,
    /// What is wrong.
    pub message: String,
}

/// An ExtensionService checked: usable when there are no errors.
#[derive(Debug, Default)]
pub(crate) struct Checked {
    pub(crate) extension: Option<ExtensionService>,
    pub(crate) errors: Vec<Invalid>,
    pub(crate) warnings: Vec<Invalid>,
}

/// The ExtensionService `namespace/name` checked: `None` when it does not exist, its first
/// error when it has any.
pub fn resolve(snapshot: &Snapshot, namespace: &str, name: &str) -> Option<Result<ExtensionService, Invalid>> {
    let object = snapshot.extension_services.get(&ObjectKey::new(namespace, name))?;
    let mut checked = check(snapshot, namespace, name, &object.spec);
    Some(match (checked.extension, checked.errors.is_empty()) {
        (Some(ext), true) => Ok(ext),
        _ => Err(checked.errors.swap_remove(0)),
    })
}

/// An ExtensionService's spec, checked in upstream's order: like upstream, every Service is
/// checked and reported, and a bad TLS validation stops the check.
pub(crate) fn check(
    snapshot: &Snapshot,
    namespace: &str,
    name: &str,
    spec: &api::extensionservice::ExtensionServiceSpec,
) -> Checked {
    let mut out = Checked::default();
    let issue = |condition, field, reason, message: String| Invalid { condition, field, reason, message };
    let timeouts = match crate::shared::timeouts::timeouts(spec.timeout_policy.as_ref()) {
        Ok(t) => t,
        Err(e) => {
            let message = format!("spec.timeoutPolicy failed to parse: {e}");
            out.errors.push(issue("SpecError", "spec.timeoutPolicy", reason::TIMEOUT_POLICY_NOT_VALID, message));
            Default::default()
        }
    };
    let strategy = spec.load_balancer_policy.as_ref().and_then(|p| p.strategy.as_deref());
    let load_balancer = match strategy {
        Some("WeightedLeastRequest") => LoadBalancer::WeightedLeastRequest,
        Some("Random") => LoadBalancer::Random,
        Some(hashing @ ("Cookie" | "RequestHash")) => {
            let message = format!(
                "ignoring field \".Spec.LoadBalancerPolicy\"; {hashing} load balancer policy is not supported for ExtensionClusters"
            );
            out.warnings.push(issue("SpecError", "spec.loadBalancerPolicy", reason::IGNORED_FIELD, message));
            LoadBalancer::RoundRobin
        }
        _ => LoadBalancer::RoundRobin,
    };
    if spec.timeout_policy.as_ref().and_then(|t| t.idle.as_deref()).is_some_and(|i| !i.is_empty()) {
        let message =
            "ignoring field \".Spec.TimeoutPolicy.Idle\"; idle timeouts are not supported for ExtensionClusters";
        out.warnings.push(issue("SpecError", "spec.timeoutPolicy.idle", reason::IGNORED_FIELD, message.into()));
    }
    // `http/1.1` (upstream main's, what an HTTP authorization server speaks) is HTTP/1.1 in
    // clear text: no protocol option, as a plain Service's cluster.
    let protocol = match spec.protocol.as_deref() {
        None | Some("") | Some("h2") => Some(UpstreamProtocol::H2),
        Some("h2c") => Some(UpstreamProtocol::H2c),
        Some("http/1.1") => None,
        Some(other) => {
            let message = format!("unsupported protocol {other:?}");
            out.errors.push(issue("SpecError", "spec.protocol", reason::UNSUPPORTED_PROTOCOL, message));
            return out;
        }
    };
    let validation = match &spec.validation {
        None => None,
        Some(v) => {
            let (ca_namespace, ca_name) = crate::delegation::resolve(&v.ca_secret, namespace);
            if !crate::delegation::permitted(snapshot, ca_namespace, ca_name, namespace) {
                let message = format!(
                    "service.UpstreamValidation.CACertificate Secret {:?} is not configured for certificate delegation",
                    v.ca_secret
                );
                out.errors.push(issue("TLSError", "spec.validation", reason::CA_CERTIFICATE_NOT_DELEGATED, message));
                return out;
            }
            let subject_names = match crate::shared::subject_names(v) {
                Ok(names) => names,
                Err(detail) => {
                    let message = format!("TLS upstream validation policy error: {detail}");
                    out.errors.push(issue("SpecError", "spec.validation", reason::TLS_UPSTREAM_VALIDATION, message));
                    return out;
                }
            };
            if protocol != Some(UpstreamProtocol::H2) {
                let name = spec.protocol.as_deref().unwrap_or_default();
                let message = format!("upstream TLS validation not supported for {name:?} protocol");
                out.errors.push(issue("SpecError", "spec.validation", reason::INCONSISTENT_PROTOCOL, message));
            }
            let ca = ObjectRef { namespace: ca_namespace.into(), name: ca_name.into() };
            Some(ir::UpstreamValidation { ca, ca_kind: ir::CaKind::Secret, subject_names, subject_uris: Vec::new() })
        }
    };
    let mut services = Vec::new();
    for target in &spec.services {
        match service(snapshot, namespace, target) {
            Ok(port) => services.push(port),
            Err(invalid) => out.errors.push(invalid),
        }
    }
    if spec.services.is_empty() {
        out.errors.push(issue(
            "ServiceError",
            "spec.services",
            reason::SERVICE_UNRESOLVED_REFERENCE,
            "no services".into(),
        ));
    }
    let cb = spec.circuit_breaker_policy.as_ref();
    out.extension = Some(ExtensionService {
        origin: ObjectRef { namespace: namespace.into(), name: name.into() },
        services,
        protocol,
        validation,
        response_timeout_ms: timeouts.response,
        idle_connection_timeout_ms: timeouts.idle_connection,
        load_balancer,
        circuit_breakers: [
            cb.and_then(|c| c.max_connections),
            cb.and_then(|c| c.max_pending_requests),
            cb.and_then(|c| c.max_requests),
            cb.and_then(|c| c.max_retries),
            cb.and_then(|c| c.per_host_max_connections),
        ],
        cluster: None,
    });
    out
}

/// One of an ExtensionService's Services: a Service of its own namespace, not ExternalName,
/// with the port.
fn service(
    snapshot: &Snapshot,
    namespace: &str,
    target: &api::extensionservice::ExtensionServiceTarget,
) -> Result<ServicePort, Invalid> {
    let unresolved = |why: String| Invalid {
        condition: "ServiceError",
        field: "spec.services",
        reason: reason::SERVICE_UNRESOLVED_REFERENCE,
        message: format!("unresolved service \"{namespace}/{}\": {why}", target.name),
    };
    let Ok(port) = u16::try_from(target.port) else {
        return Err(unresolved(format!("port {} is invalid", target.port)));
    };
    let Some(service) = snapshot.services.get(&ObjectKey::new(namespace, &target.name)) else {
        return Err(unresolved("service not found".into()));
    };
    let service_spec = service.spec.as_ref();
    if service_spec.and_then(|s| s.external_name.as_ref()).is_some() {
        return Err(Invalid {
            condition: "ServiceError",
            field: "spec.services",
            reason: reason::UNSUPPORTED_SERVICE_TYPE,
            message: format!("Service \"{namespace}/{}\" is of unsupported type \"ExternalName\".", target.name),
        });
    }
    if !service_spec.and_then(|s| s.ports.as_ref()).is_some_and(|ps| ps.iter().any(|p| p.port == target.port)) {
        return Err(unresolved(format!("port {port} not found")));
    }
    Ok(ServicePort { namespace: namespace.into(), name: target.name.clone(), port })
}
