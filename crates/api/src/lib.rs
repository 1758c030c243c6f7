//! Contour's own CRDs as Rust types, field-for-field compatible with upstream's schemas
//! (projectcontour.io/v1 HTTPProxy and TLSCertificateDelegation; v1alpha1 ExtensionService,
//! ContourConfiguration and ContourDeployment). The CRD YAML under `deploy/crds/` is generated from these
//! types; a test fails when the committed YAML is stale.

mod condition;
pub mod contourconfig;
pub mod contourdeployment;
pub mod extensionservice;
pub mod httpproxy;
pub mod tlscertificatedelegation;

pub use condition::{DetailedCondition, SubCondition};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube_core::CustomResourceExt;

/// The API group of Contour's CRDs.
pub const GROUP: &str = "projectcontour.io";

/// Every CRD this crate defines.
pub fn crds() -> Vec<CustomResourceDefinition> {
    vec![
        contourconfig::ContourConfiguration::crd(),
        contourdeployment::ContourDeployment::crd(),
        extensionservice::ExtensionService::crd(),
        httpproxy::HTTPProxy::crd(),
        tlscertificatedelegation::TLSCertificateDelegation::crd(),
    ]
}

/// Every CRD as one multi-document YAML text, as committed under `deploy/crds/`.
pub fn crds_yaml() -> String {
    let mut out = String::from("# Generated from crates/api by `UPDATE_CRDS=1 cargo test -p api`. Do not edit.\n");
    for crd in crds() {
        out.push_str("---\n");
        out.push_str(&serde_yaml::to_string(&crd).expect("CRDs serialize"));
    }
    out
}

#[cfg(test)]
mod tests {
    /// The committed CRDs are what the types generate.
    #[test]
    fn committed_crds_are_current() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../deploy/crds/contour.yaml");
        let generated = super::crds_yaml();
        if std::env::var_os("UPDATE_CRDS").is_some() {
            std::fs::write(path, &generated).expect("write deploy/crds/contour.yaml");
        }
        let committed = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            committed == generated,
            "deploy/crds/contour.yaml is stale: run `UPDATE_CRDS=1 cargo test -p api` and commit it"
        );
    }
}
