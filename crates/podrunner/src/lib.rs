//! The local conformance cluster's pod runner: every pod kwok places on the fake node runs as a
//! real process in its own network namespace, so backends answer at their pod IPs.
//!
//! [`plan`] is the pure part: a Pod, the Secrets and ConfigMaps it references, and the local
//! binaries that stand in for images become what to run and which files to write first.

mod plan;
pub mod process;

pub use plan::{
    ContainerPlan, Hook, HostPort, Images, Lookup, Mount, PlanError, PodFile, PodPlan, ProbeTiming, Readiness,
    TokenWanted, image_repository, plan, token_requests,
};
