//! Every status reason, from the registry the code emits them from (`ir::reason`).

use crate::GENERATED;
use crate::table::{cell, render};

/// The status reasons page: one row per reason, sorted by name.
pub(crate) fn page() -> String {
    let mut reasons: Vec<&ir::reason::Reason> = ir::reason::ALL.iter().collect();
    reasons.sort_by_key(|r| r.name);
    let rows: Vec<Vec<String>> =
        reasons.iter().map(|r| vec![format!("`{}`", r.name), cell(r.objects), cell(r.meaning)]).collect();
    format!(
        "{GENERATED}\n\n# Status reasons\n\nEvery reason contour-rs writes in a condition, in an HTTPProxy or \
         ExtensionService sub-condition, or in an Event, and what it means. The reasons keep the Gateway API's \
         names and upstream Contour's, so tools and alerts written for them work unchanged.\n\n*Carried by* names \
         the objects and condition types that carry a reason; for HTTPProxy and ExtensionService it names the \
         sub-condition type (an error or warning of the `Valid` condition). *route* stands for a `status.parents` \
         entry of an HTTPRoute, GRPCRoute, TLSRoute, TCPRoute or UDPRoute, *listener* for a listener's status in a \
         Gateway or a ListenerSet. The reasons of problems also appear in the webhook's denials and, in standalone \
         mode, in the log's warnings. [Status](../concepts/status.md) says what each kind gets.\n\n{}",
        render(&["Reason", "Carried by", "Meaning"], &rows)
    )
}

#[cfg(test)]
mod tests;
