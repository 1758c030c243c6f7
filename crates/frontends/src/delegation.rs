//! TLSCertificateDelegation: whether a namespace may use a Secret of another namespace.

use objects::{ObjectKey, Snapshot};

/// Whether objects in `target_namespace` may use Secret `namespace/name`: always within one
/// namespace, otherwise only when a TLSCertificateDelegation in the Secret's namespace names the
/// Secret and the target namespace (or is exactly `["*"]`).
pub fn permitted(snapshot: &Snapshot, namespace: &str, name: &str, target_namespace: &str) -> bool {
    namespace == target_namespace
        || snapshot
            .tls_certificate_delegations
            .range(ObjectKey::new(namespace, "")..)
            .take_while(|(k, _)| k.namespace == namespace)
            .flat_map(|(_, d)| &d.spec.delegations)
            .any(|d| {
                // `*` means every namespace only on its own, as upstream reads it.
                let everyone = d.target_namespaces.len() == 1 && d.target_namespaces[0] == "*";
                d.secret_name == name && (everyone || d.target_namespaces.iter().any(|t| t == target_namespace))
            })
}

/// A Secret reference written `name` or `namespace/name`, resolved against `namespace`.
pub fn resolve<'a>(reference: &'a str, namespace: &'a str) -> (&'a str, &'a str) {
    match reference.split_once('/') {
        Some((ns, name)) => (ns, name),
        None => (namespace, reference),
    }
}
