//! TLSRoute into an IR TLS route.

use ir::Diagnostic;
use objects::Snapshot;
use objects::types::TLSRoute;

use super::backends;
use super::{ParentRef, origin};

/// The route's parentRefs, defaulted.
pub(super) fn parent_refs(route: &TLSRoute) -> Vec<ParentRef> {
    super::parent_refs!(route, route.spec.parent_refs.iter().flatten())
}

/// Translates one TLSRoute; backends of all rules are merged (TLSRoute rules carry no matches).
pub(super) fn translate(snapshot: &Snapshot, route: &TLSRoute, diagnostics: &mut Vec<Diagnostic>) -> ir::TlsRoute {
    let origin = origin("TLSRoute", &route.metadata);
    let mut backends_out = Vec::new();
    for (i, rule) in route.spec.rules.iter().enumerate() {
        for (j, b) in rule.backend_refs.iter().enumerate() {
            let r = backends::backend_ref!(b);
            let field = format!("spec.rules[{i}].backendRefs[{j}]");
            backends_out.push(backends::translate(snapshot, &origin, "TLSRoute", r, field, diagnostics));
        }
    }
    ir::TlsRoute {
        hostnames: super::route_hostnames(&origin, &route.spec.hostnames, diagnostics),
        origin,
        created: route.metadata.creation_timestamp.as_ref().map(|t| t.0.as_second()).unwrap_or(0),
        backends: backends_out,
        policy: Default::default(),
    }
}
