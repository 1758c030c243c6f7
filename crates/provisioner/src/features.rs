//! The committed list of Gateway API features we claim (`features.yaml`), with the reason for
//! every feature not claimed and every conformance test skipped.

use std::collections::BTreeMap;

/// `features.yaml`, compiled in.
pub const FEATURES_YAML: &str = include_str!("../features.yaml");

/// The parsed list.
#[derive(Debug, Clone, serde::Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Features {
    /// Claimed features, published in `GatewayClass.status.supportedFeatures`.
    pub supported: Vec<String>,
    /// Features not claimed, with the reason.
    pub unsupported: BTreeMap<String, String>,
    /// Conformance tests skipped, with the reason.
    pub skip_tests: BTreeMap<String, String>,
}

impl Features {
    /// The committed list.
    pub fn committed() -> Result<Self, crate::Error> {
        Ok(serde_yaml::from_str(FEATURES_YAML)?)
    }

    /// The claimed features, sorted as the GatewayClass status wants them.
    pub fn supported_sorted(&self) -> Vec<String> {
        let mut out = self.supported.clone();
        out.sort();
        out.dedup();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn committed_list_is_consistent() {
        let f = Features::committed().expect("features.yaml parses");
        assert!(f.supported.iter().all(|s| !f.unsupported.contains_key(s)), "claimed and unclaimed at once");
        assert!(f.supported.contains(&"Gateway".to_string()) && f.supported.contains(&"HTTPRoute".to_string()));
        assert!(f.unsupported.values().chain(f.skip_tests.values()).all(|r| !r.trim().is_empty()), "reasons");
        // The suite's release (v1.7.0) defines 64 features; every one is either claimed or explained.
        assert_eq!(f.supported.len() + f.unsupported.len(), 64);
        assert!(f.supported_sorted().windows(2).all(|w| w[0] < w[1]));
    }
}
