//! The user guide's reference pages, generated from the code so nothing is written twice:
//!
//! - every binary's flags, from its own `--help` (clap's text);
//! - every contour.yaml key, from the file's types and their doc comments;
//! - every CRD field, from the CRDs `crates/api` generates;
//! - every metric, from what the metrics endpoints render;
//! - every status reason, from the registry the code emits them from (`ir::reason`).
//!
//! `UPDATE_DOCS=1 cargo test -p docgen` rewrites the committed pages; the same test fails when
//! one is stale, and another when a link in the book leads nowhere.

mod config;
mod crds;
mod flags;
pub mod links;
pub mod metrics;
mod reasons;
mod table;

use std::path::{Path, PathBuf};

/// A generated page of the book.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// Its path under `docs/src`.
    pub path: &'static str,
    /// Its Markdown.
    pub text: String,
}

/// Why a page could not be generated.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A binary whose help the flags page needs was not found.
    #[error("{0} is not built (cargo build --workspace --bins)")]
    NotBuilt(String),
    /// A binary could not be run, or its help failed.
    #[error("{binary} {args:?}: {message}")]
    Help {
        /// The binary.
        binary: String,
        /// Its arguments.
        args: Vec<String>,
        /// What went wrong.
        message: String,
    },
}

/// Every generated page; `binary` finds a workspace binary by name (for the flags).
pub fn pages(binary: &dyn Fn(&str) -> Option<PathBuf>) -> Result<Vec<Page>, Error> {
    Ok(vec![
        Page { path: "reference/flags.md", text: flags::page(binary)? },
        Page { path: "reference/configuration.md", text: config::page() },
        Page { path: "reference/crds.md", text: crds::page() },
        Page { path: "reference/metrics.md", text: metrics::page() },
        Page { path: "reference/status-reasons.md", text: reasons::page() },
    ])
}

/// The first line of every generated page.
const GENERATED: &str = "<!-- Generated from the code by `UPDATE_DOCS=1 cargo test -p docgen`. Do not edit. -->";

/// The book's source directory in this repository.
pub fn book_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/src")
}

#[cfg(test)]
mod tests;
