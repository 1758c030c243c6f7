//! contour-serve's settings: flags, contour.yaml (`--config-path`) and the ContourConfiguration
//! resource (`--contour-config-name`) resolved into one typed value, [`Settings`], and from it
//! the options every stage is given ([`Settings::controller_options`]).
//!
//! Precedence is upstream Contour's: a flag given on the command line (or through its
//! environment variable) wins over the file or the resource, which win over the defaults. A bad
//! value stops start-up with an [`Error`] naming the key as the user wrote it (`tls.cipher-suites`
//! in the file, `spec.envoy.listener.tls.cipherSuites` in the resource).
//!
//! Nothing here reads a file or the API server: the binary reads contour.yaml and the resource
//! and hands over what it read. The flags' environment variables (`CONTOUR_NAMESPACE`, ...) are
//! read as the binary parses its arguments ([`Settings::from_args`]).

/// Returns [`Error::Invalid`] with a formatted message (in scope in every module below, which
/// are declared after it).
macro_rules! invalid {
    ($($arg:tt)*) => {
        return Err($crate::Error::Invalid(format!($($arg)*)))
    };
}

mod checks;
mod envoy;
mod file;
mod flags;
mod options;
mod resource;
mod services;
#[cfg(test)]
mod tests;

use envoy::Source;
pub use flags::{Explicit, Settings};
pub use options::TelemetryAddresses;
pub use resource::check_resource;

/// A result whose error is [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why the settings cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// contour.yaml cannot be read or has an unknown key or a value of the wrong shape.
    #[error(transparent)]
    File(#[from] config::Error),
    /// A value has the right shape but cannot be used; the message starts with its key.
    #[error("{0}")]
    Invalid(String),
    /// A bad value, with where it was written: the file's path or the resource's name.
    #[error("{origin}: {error}")]
    In {
        /// `contour.yaml`'s path, or `ContourConfiguration namespace/name`.
        origin: String,
        /// What is wrong.
        error: Box<Error>,
    },
}

impl Error {
    /// `self`, said to be in `origin`.
    pub fn within(self, origin: impl Into<String>) -> Self {
        Error::In { origin: origin.into(), error: Box::new(self) }
    }
}
