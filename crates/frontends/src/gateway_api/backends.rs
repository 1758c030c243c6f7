//! backendRefs of any route kind into IR backends, checking kind, port and ReferenceGrants.

use ir::{Backend, BackendTarget, Diagnostic, Origin, ServicePort, reason};
use objects::Snapshot;

use super::{error, refs};

/// A backendRef as every route kind spells it.
pub(super) struct BackendRef<'a> {
    pub group: Option<&'a str>,
    pub kind: Option<&'a str>,
    pub name: &'a str,
    pub namespace: Option<&'a str>,
    pub port: Option<i32>,
    pub weight: Option<i32>,
}

/// The [`BackendRef`] of any route kind's generated backendRef type (they share these fields).
macro_rules! backend_ref {
    ($b:expr) => {
        $crate::gateway_api::backends::BackendRef {
            group: $b.group.as_deref(),
            kind: $b.kind.as_deref(),
            name: &$b.name,
            namespace: $b.namespace.as_deref(),
            port: $b.port,
            weight: $b.weight,
        }
    };
}
pub(super) use backend_ref;

/// The IR backend for a backendRef. A reference that cannot be used becomes
/// [`BackendTarget::Invalid`] (its share of requests gets 500) and a diagnostic.
pub(super) fn translate(
    snapshot: &Snapshot,
    origin: &Origin,
    route_kind: &str,
    r: BackendRef<'_>,
    field: String,
    diagnostics: &mut Vec<Diagnostic>,
) -> Backend {
    let weight = r.weight.unwrap_or(1).max(0) as u32;
    let invalid = Backend { target: BackendTarget::Invalid, weight, options: None };
    let (group, kind) = (r.group.unwrap_or(""), r.kind.unwrap_or("Service"));
    if !group.is_empty() || kind != "Service" {
        diagnostics.push(error(
            origin,
            field,
            reason::INVALID_KIND,
            format!("backend kind {group}/{kind} is not supported"),
        ));
        return invalid;
    }
    let namespace = r.namespace.unwrap_or(&origin.namespace);
    if namespace != origin.namespace
        && !refs::granted(snapshot, super::GROUP, route_kind, &origin.namespace, "", "Service", namespace, r.name)
    {
        diagnostics.push(error(
            origin,
            field,
            reason::REF_NOT_PERMITTED,
            format!("no ReferenceGrant in {namespace} allows Service {}", r.name),
        ));
        return invalid;
    }
    let Some(port) = r.port.and_then(|p| u16::try_from(p).ok()).filter(|p| *p != 0) else {
        diagnostics.push(error(
            origin,
            format!("{field}.port"),
            reason::UNSUPPORTED_VALUE,
            "a Service backend needs a port".into(),
        ));
        return invalid;
    };
    Backend {
        target: BackendTarget::Service(ServicePort { namespace: namespace.into(), name: r.name.into(), port }),
        weight,
        options: None,
    }
}
