//! Problems found while translating or resolving objects, kept with the object they belong to.

use crate::Origin;

/// How bad a problem is.
#[derive(Debug, serde::Serialize, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Severity {
    /// Part of the object was not used.
    Error,
    /// The object works, but something was ignored or defaulted.
    Warning,
}

/// One problem with one object, naming the field at fault.
#[derive(Debug, serde::Serialize, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Diagnostic {
    /// The object at fault.
    pub origin: Origin,
    /// How bad it is.
    pub severity: Severity,
    /// The condition type the problem belongs to where the object's API groups them (an
    /// HTTPProxy sub-condition type such as `IncludeError`); empty otherwise.
    pub condition: &'static str,
    /// The field path, such as `spec.rules[0].backendRefs[1]`.
    pub field: String,
    /// A machine-readable reason, in the vocabulary of the object's API: one of [`crate::reason`]
    /// (such as [`crate::reason::BACKEND_NOT_FOUND`]).
    pub reason: &'static str,
    /// A human-readable message.
    pub message: String,
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {} ({})", self.origin, self.field, self.message, self.reason)
    }
}
