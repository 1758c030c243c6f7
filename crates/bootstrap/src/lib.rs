//! bootstrap
