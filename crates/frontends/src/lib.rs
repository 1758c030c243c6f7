//! Front ends: Kubernetes objects of one API family into the IR, plus diagnostics for what they reject.
//!
//! Each front end is a pure function of a [`objects::Snapshot`]. Gateway API makes one fleet per
//! Gateway; HTTPProxy (and Ingress) make the default fleet.

pub mod class;
pub mod delegation;
pub mod gateway_api;
pub mod httpproxy;
pub mod ingress;

/// What a front end produces: fleets for the IR and the problems it found, per object.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Translation {
    /// The IR fleets.
    pub ir: ir::Ir,
    /// Problems, each naming its object and field.
    pub diagnostics: Vec<ir::Diagnostic>,
}
