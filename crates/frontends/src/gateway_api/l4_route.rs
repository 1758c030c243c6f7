//! TCPRoute and UDPRoute into IR layer-4 routes. The two kinds have the same shape: rules of
//! weighted backendRefs and no matches.

use std::sync::Arc;

use ir::Diagnostic;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use objects::Snapshot;
use objects::types::{TCPRoute, UDPRoute};

use super::backends;
use super::{ParentRef, origin};

/// What the front end reads of either kind.
pub(super) trait L4Kind {
    /// `TCPRoute` or `UDPRoute`.
    const KIND: &'static str;
    fn meta(&self) -> &ObjectMeta;
    fn parent_refs(&self) -> Vec<ParentRef>;
    fn translate(&self, snapshot: &Snapshot, diagnostics: &mut Vec<Diagnostic>) -> ir::L4Route;
}

macro_rules! l4_kind {
    ($ty:ty, $kind:literal) => {
        impl L4Kind for $ty {
            const KIND: &'static str = $kind;

            fn meta(&self) -> &ObjectMeta {
                &self.metadata
            }

            fn parent_refs(&self) -> Vec<ParentRef> {
                super::parent_refs!(self, self.spec.parent_refs.iter().flatten())
            }

            fn translate(&self, snapshot: &Snapshot, diagnostics: &mut Vec<Diagnostic>) -> ir::L4Route {
                let origin = origin($kind, &self.metadata);
                let mut rules = Vec::with_capacity(self.spec.rules.len());
                for (i, rule) in self.spec.rules.iter().enumerate() {
                    let mut out = Vec::with_capacity(rule.backend_refs.len());
                    for (j, b) in rule.backend_refs.iter().enumerate() {
                        let r = backends::backend_ref!(b);
                        let field = format!("spec.rules[{i}].backendRefs[{j}]");
                        out.push(backends::translate(snapshot, &origin, $kind, r, field, diagnostics));
                    }
                    rules.push(out);
                }
                ir::L4Route { origin, rules }
            }
        }
    };
}

l4_kind!(TCPRoute, "TCPRoute");
l4_kind!(UDPRoute, "UDPRoute");

/// The order in which routes of one listener claim it: the oldest first, then by namespace and
/// name (the Gateway API's rule for conflicting routes).
pub(super) fn claim_order<'a, T: L4Kind + 'a>(routes: impl Iterator<Item = &'a Arc<T>>) -> Vec<&'a Arc<T>> {
    let mut out: Vec<&Arc<T>> = routes.collect();
    out.sort_by_cached_key(|r| {
        let m = r.meta();
        (m.creation_timestamp.as_ref().map(|t| t.0), m.namespace.clone(), m.name.clone())
    });
    out
}
