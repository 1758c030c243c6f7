//! ExtensionService (projectcontour.io/v1alpha1): each valid one becomes an extension of the
//! default fleet (a cluster `extension/<namespace>/<name>`), with upstream's checks. HTTPProxy's
//! authorization refers to them through [`resolve`].

use std::sync::Arc;

use ir::{Diagnostic, ExtensionService, LoadBalancer, ObjectRef, ServicePort, Severity, UpstreamProtocol};
use objects::{ObjectKey, Snapshot};

use crate::Translation;

/// Why an ExtensionService cannot be used: the sub-condition type, reason and message of its
/// `Valid` condition.
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

/// Every ExtensionService: the valid ones as extensions of the default fleet, the others as
/// diagnostics naming their field.
pub fn translate(snapshot: &Snapshot) -> Translation {
    let mut extensions = Vec::new();
    let mut diagnostics = Vec::new();
    for key in snapshot.extension_services.keys() {
        match resolve(snapshot, &key.namespace, &key.name) {
            Some(Ok(ext)) => extensions.push(Arc::new(ext)),
            Some(Err(invalid)) => {
                let object = &snapshot.extension_services[key];
                diagnostics.push(Diagnostic {
                    origin: crate::gateway_api::origin("ExtensionService", &object.metadata),
                    severity: Severity::Error,
                    condition: invalid.condition,
                    field: invalid.field.into(),
                    reason: invalid.reason,
                    message: invalid.message,
                })
            }
            None => {}
        }
    }
    let fleets = if extensions.is_empty() {
        Vec::new()
    } else {
        vec![ir::Fleet { id: ir::DEFAULT_FLEET.into(), address: None, origin: None, listeners: Vec::new(), extensions }]
    };
    Translation { ir: ir::Ir { fleets }, diagnostics }
}

/// The ExtensionService `namespace/name` checked: `None` when it does not exist.
pub fn resolve(snapshot: &Snapshot, namespace: &str, name: &str) -> Option<Result<ExtensionService, Invalid>> {
    let object = snapshot.extension_services.get(&ObjectKey::new(namespace, name))?;
    Some(check(snapshot, namespace, name, &object.spec))
}

/// An ExtensionService's spec, checked in upstream's order.
fn check(
    snapshot: &Snapshot,
    namespace: &str,
    name: &str,
    spec: &api::extensionservice::ExtensionServiceSpec,
) -> Result<ExtensionService, Invalid> {
    let invalid = |condition, field, reason, message: String| Err(Invalid { condition, field, reason, message });
    let protocol = match spec.protocol.as_deref() {
        None | Some("") | Some("h2") => UpstreamProtocol::H2,
        Some("h2c") => UpstreamProtocol::H2c,
        Some(other) => {
            return invalid(
                "SpecError",
                "spec.protocol",
                "UnsupportedProtocol",
                format!("unsupported protocol {other:?}"),
            );
        }
    };
    let target = match spec.services.as_slice() {
        [] => return invalid("ServiceError", "spec.services", "ServiceUnresolvedReference", "no services".into()),
        [one] => one,
        // One cluster here is one Service port; weighted Services are not supported yet.
        _ => {
            let message = "more than one service is not supported by this controller yet".into();
            return invalid("ServiceError", "spec.services", "NotSupported", message);
        }
    };
    let unresolved = |why: String| {
        let message = format!("unresolved service \"{namespace}/{}\": {why}", target.name);
        invalid("ServiceError", "spec.services", "ServiceUnresolvedReference", message)
    };
    let Ok(port) = u16::try_from(target.port) else {
        return unresolved(format!("port {} is invalid", target.port));
    };
    let Some(service) = snapshot.services.get(&ObjectKey::new(namespace, &target.name)) else {
        return unresolved("service not found".into());
    };
    let service_spec = service.spec.as_ref();
    if service_spec.and_then(|s| s.external_name.as_ref()).is_some() {
        let message = format!("Service \"{namespace}/{}\" is of unsupported type \"ExternalName\".", target.name);
        return invalid("ServiceError", "spec.services", "UnsupportedServiceType", message);
    }
    if !service_spec.and_then(|s| s.ports.as_ref()).is_some_and(|ps| ps.iter().any(|p| p.port == target.port)) {
        return unresolved(format!("port {port} not found"));
    }
    let timeouts = crate::httpproxy::timeouts(spec.timeout_policy.as_ref()).map_err(|e| Invalid {
        condition: "SpecError",
        field: "spec.timeoutPolicy",
        reason: "TimeoutPolicyNotValid",
        message: format!("spec.timeoutPolicy failed to parse: {e}"),
    })?;
    let validation = match &spec.validation {
        None => None,
        Some(v) => {
            if protocol != UpstreamProtocol::H2 {
                let message = "upstream TLS validation not supported for \"h2c\" protocol".into();
                return invalid("SpecError", "spec.validation", "InconsistentProtocol", message);
            }
            let (ca_namespace, ca_name) = crate::delegation::resolve(&v.ca_secret, namespace);
            if !crate::delegation::permitted(snapshot, ca_namespace, ca_name, namespace) {
                let message = format!(
                    "service.UpstreamValidation.CACertificate Secret {:?} is not configured for certificate delegation",
                    v.ca_secret
                );
                return invalid("TLSError", "spec.validation", "CACertificateNotDelegated", message);
            }
            let subject_names = crate::httpproxy::subject_names(v).map_err(|detail| Invalid {
                condition: "SpecError",
                field: "spec.validation",
                reason: "TLSUpstreamValidation",
                message: format!("TLS upstream validation policy error: {detail}"),
            })?;
            let ca = ObjectRef { namespace: ca_namespace.into(), name: ca_name.into() };
            Some(ir::UpstreamValidation { ca, subject_names })
        }
    };
    let load_balancer = match spec.load_balancer_policy.as_ref().and_then(|p| p.strategy.as_deref()) {
        Some("WeightedLeastRequest") => LoadBalancer::WeightedLeastRequest,
        Some("Random") => LoadBalancer::Random,
        _ => LoadBalancer::RoundRobin,
    };
    let cb = spec.circuit_breaker_policy.as_ref();
    Ok(ExtensionService {
        origin: ObjectRef { namespace: namespace.into(), name: name.into() },
        service: ServicePort { namespace: namespace.into(), name: target.name.clone(), port },
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
    })
}
