//! frontends
