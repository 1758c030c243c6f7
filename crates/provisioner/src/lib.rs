//! The GatewayClass provisioner: it accepts the GatewayClasses of our controller name (with the
//! features we claim), and gives each of their Gateways an Envoy fleet and a Service labelled
//! with the Gateway's name whose load-balancer status carries the Gateway's address, which
//! `contour-serve` copies into the Gateway's status.
//!
//! Host mode runs each fleet as one Envoy process on this machine, bound to an address of its
//! own from a pool (or the one the Gateway asks for), and plays the load-balancer controller
//! itself by writing that address into the Service's status. Cluster mode ([`cluster`]) runs
//! each fleet as Envoy pods in the Gateway's namespace, behind a Service of the cluster's.
//!
//! [`class`], [`cluster`], [`features`] and [`gateway`] are pure; [`host`] and [`controller`] do
//! the I/O.

pub mod class;
pub mod cluster;
pub mod controller;
pub mod features;
pub mod gateway;
pub mod host;

/// Errors of the provisioner.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The committed feature list does not parse.
    #[error("features.yaml: {0}")]
    Features(#[from] serde_yaml::Error),
    /// A Kubernetes API call failed.
    #[error("{what}: {source}")]
    Kube {
        /// What was being done.
        what: String,
        /// Why it failed.
        source: Box<kube::Error>,
    },
    /// Starting or preparing an Envoy failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// Why it failed.
        source: std::io::Error,
    },
    /// A fleet's xDS client certificate could not be issued, or the CA could not be read.
    #[error("{what}: {source}")]
    Certificate {
        /// What was being done.
        what: String,
        /// Why it failed.
        source: certs::Error,
    },
    /// The address pool is exhausted or malformed.
    #[error("address pool: {0}")]
    Pool(String),
}
