//! Cross-namespace permission (ReferenceGrant) and label selectors.

use std::collections::BTreeMap;

use ir::CaKind;
use objects::{ObjectKey, Snapshot};

/// Whether a ReferenceGrant in `to_namespace` lets objects of `from_group/from_kind` in
/// `from_namespace` refer to `to_group/to_kind` named `to_name`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn granted(
    snapshot: &Snapshot,
    from_group: &str,
    from_kind: &str,
    from_namespace: &str,
    to_group: &str,
    to_kind: &str,
    to_namespace: &str,
    to_name: &str,
) -> bool {
    let start = objects::ObjectKey::new(to_namespace, "");
    snapshot.reference_grants.range(start..).take_while(|(k, _)| k.namespace == to_namespace).any(|(_, grant)| {
        grant.spec.from.iter().any(|f| f.group == from_group && f.kind == from_kind && f.namespace == from_namespace)
            && grant
                .spec
                .to
                .iter()
                .any(|t| t.group == to_group && t.kind == to_kind && t.name.as_deref().is_none_or(|n| n == to_name))
    })
}

/// Whether labels satisfy a label selector (matchLabels AND every matchExpression).
pub(crate) fn selects<'a>(
    match_labels: Option<&BTreeMap<String, String>>,
    expressions: impl IntoIterator<Item = (&'a str, &'a str, &'a [String])>,
    labels: &BTreeMap<String, String>,
) -> bool {
    let labels_match = match_labels.into_iter().flatten().all(|(k, v)| labels.get(k) == Some(v));
    labels_match
        && expressions.into_iter().all(|(key, operator, values)| match operator {
            "In" => labels.get(key).is_some_and(|v| values.contains(v)),
            "NotIn" => labels.get(key).is_none_or(|v| !values.contains(v)),
            "Exists" => labels.contains_key(key),
            "DoesNotExist" => !labels.contains_key(key),
            _ => false,
        })
}

/// The labels of a namespace (none when it is unknown).
pub(crate) fn namespace_labels<'a>(snapshot: &'a Snapshot, namespace: &str) -> &'a BTreeMap<String, String> {
    static EMPTY: BTreeMap<String, String> = BTreeMap::new();
    snapshot.namespaces.get(&ObjectKey::new("", namespace)).and_then(|n| n.metadata.labels.as_ref()).unwrap_or(&EMPTY)
}

/// What a CA certificate reference (`caCertificateRefs`) names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CaCertificate {
    /// A ConfigMap or Secret with a PEM certificate under `ca.crt`, or a ClusterTrustBundle.
    Usable(CaKind),
    /// One that does not exist or has no PEM certificate (see [`ca_location`]).
    Unusable,
    /// Neither a core ConfigMap, a core Secret nor a ClusterTrustBundle.
    WrongKind,
}

/// The kinds a CA certificate reference may name, for messages.
pub(crate) const CA_KINDS: &str = "a ConfigMap, Secret or ClusterTrustBundle";

/// Whether a reference names a ClusterTrustBundle (`certificates.k8s.io`): cluster-scoped, so
/// it has no namespace and needs no ReferenceGrant.
pub(crate) fn cluster_trust_bundle(group: &str, kind: &str) -> bool {
    group == "certificates.k8s.io" && kind == "ClusterTrustBundle"
}

/// Where a CA reference's certificates are read, for messages.
pub(crate) fn ca_location(kind: &str) -> &'static str {
    match kind {
        "ClusterTrustBundle" => "in spec.trustBundle",
        _ => "under ca.crt",
    }
}

/// Resolves a CA certificate reference to `group/kind` `namespace/name`.
pub(crate) fn ca_certificate(
    snapshot: &Snapshot,
    group: &str,
    kind: &str,
    namespace: &str,
    name: &str,
) -> CaCertificate {
    let key = ObjectKey::new(namespace, name);
    let usable = match (group, kind) {
        ("", "ConfigMap") => {
            let pem = snapshot.config_maps.get(&key).and_then(|c| c.data.as_ref()?.get("ca.crt"));
            pem.is_some_and(|pem| objects::secrets::ca_certificates(pem.as_bytes()).is_ok())
                .then_some(CaKind::ConfigMap)
        }
        ("", "Secret") => {
            objects::secrets::ca_bundle(snapshot.secrets.get(&key).map(|s| &**s)).is_ok().then_some(CaKind::Secret)
        }
        (group, kind) if cluster_trust_bundle(group, kind) => {
            let bundle = snapshot.cluster_trust_bundles.get(&ObjectKey::new("", name));
            bundle
                .is_some_and(|b| objects::secrets::ca_certificates(b.spec.trust_bundle.as_bytes()).is_ok())
                .then_some(CaKind::ClusterTrustBundle)
        }
        _ => return CaCertificate::WrongKind,
    };
    usable.map_or(CaCertificate::Unusable, CaCertificate::Usable)
}
