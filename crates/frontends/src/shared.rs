//! What the front ends share, so that none imports another: the default fleet's listener names,
//! object origins, regular-expression checks, header changes, timeouts, upstream validation names
//! and ExtensionService checks.

pub mod extension_service;
pub mod headers;
pub mod regex;
pub mod timeouts;

use ir::Origin;

/// The listener name of the default fleet's plain-HTTP port (upstream's name).
pub const HTTP_LISTENER: &str = "ingress_http";
/// The prefix of the default fleet's HTTPS listener names (one per TLS virtual host).
pub const HTTPS_LISTENER: &str = "ingress_https";

/// The origin of an object from its metadata.
pub(crate) fn origin(kind: &'static str, meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> Origin {
    Origin {
        kind,
        namespace: meta.namespace.clone().unwrap_or_default(),
        name: meta.name.clone().unwrap_or_default(),
        generation: meta.generation.unwrap_or(0),
    }
}

/// The names an upstream certificate must carry: `subjectNames`, or the deprecated `subjectName`
/// alone; both set, the first of the list must be the single one (upstream's rules and
/// messages).
pub(crate) fn subject_names(v: &api::httpproxy::UpstreamValidation) -> Result<Vec<String>, String> {
    let mut names = v.subject_names.clone().unwrap_or_default();
    if names.is_empty() && !v.subject_name.is_empty() {
        names.push(v.subject_name.clone());
    }
    if names.is_empty() {
        return Err("missing subject alternative name".into());
    }
    if !v.subject_name.is_empty() && names[0] != v.subject_name {
        return Err(format!(
            "first entry of SubjectNames ({}) does not match SubjectName ({})",
            names[0], v.subject_name
        ));
    }
    Ok(names)
}
