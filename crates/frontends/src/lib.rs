//! Front ends: Kubernetes objects of one API family into the IR, plus diagnostics for what they reject.
//!
//! Each front end is a pure function of a [`objects::Snapshot`]. The Gateway API front end lives here
//! now; HTTPProxy and Ingress join it as sibling modules and merge their fleets into the same [`ir::Ir`].

pub mod gateway_api;
pub mod ingress;

/// What a front end produces: fleets for the IR and the problems it found, per object.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Translation {
    /// The IR fleets.
    pub ir: ir::Ir,
    /// Problems, each naming its object and field.
    pub diagnostics: Vec<ir::Diagnostic>,
}
