//! xds-server
