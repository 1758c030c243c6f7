//! ExtensionService (projectcontour.io/v1alpha1): each valid one becomes an extension of the
//! default fleet (a cluster `extension/<namespace>/<name>`), with upstream's checks
//! ([`crate::shared::extension_service`], which HTTPProxy's authorization uses too).

use std::sync::Arc;

use ir::{Diagnostic, Severity};
use objects::Snapshot;

use crate::Translation;
use crate::shared::extension_service::check;
pub use crate::shared::extension_service::{Invalid, resolve};

/// Every ExtensionService: the valid ones as extensions of the default fleet, and every error
/// and warning as a diagnostic naming its field (their status).
pub fn translate(snapshot: &Snapshot) -> Translation {
    let mut extensions = Vec::new();
    let mut diagnostics = Vec::new();
    for (key, object) in snapshot.extension_services.iter() {
        let checked = check(snapshot, &key.namespace, &key.name, &object.spec);
        let origin = crate::shared::origin("ExtensionService", &object.metadata);
        let issues = [(Severity::Error, &checked.errors), (Severity::Warning, &checked.warnings)];
        for (severity, list) in issues {
            diagnostics.extend(list.iter().map(|i| Diagnostic {
                origin: origin.clone(),
                severity,
                condition: i.condition,
                field: i.field.into(),
                reason: i.reason,
                message: i.message.clone(),
            }));
        }
        if let (Some(ext), true) = (checked.extension, checked.errors.is_empty()) {
            extensions.push(Arc::new(ext));
        }
    }
    let fleets =
        if extensions.is_empty() { Vec::new() } else { vec![ir::Fleet::default_fleet(Vec::new(), extensions)] };
    Translation { ir: ir::Ir { fleets, ..Default::default() }, diagnostics }
}

#[cfg(test)]
mod tests;
