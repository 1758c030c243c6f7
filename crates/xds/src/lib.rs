//! xds
