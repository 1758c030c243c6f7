//! dag
