//! End-to-end: the real Envoy against the real xDS server, real requests.

mod admission;
mod certgen;
mod config;
mod convert;
mod deploy;
mod dropin;
mod extensions;
mod fleet_identity;
mod fuzz;
mod gateway_addresses;
mod harness;
mod httpproxy;
mod ingress;
mod isolation;
mod kubernetes;
mod leader;
mod lifecycle;
mod listener_filters;
mod oidc;
mod overload;
mod policies;
mod provisioner;
mod rbac;
mod routing;
mod shutdown;
mod tls;
