//! Each Gateway fleet's xDS client certificate in cluster mode: the installation's CA from its
//! Secret, and the fleet's certificate kept while it is good, issued again when it is not.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Secret;
use objects::types::Gateway;

use super::{ClusterSettings, State, kube_err};
use crate::cluster;

impl State {
    /// The installation's CA, from its Secret (`ca.crt`, `ca.key`).
    pub(super) async fn authority(&self, settings: &ClusterSettings) -> Result<certs::Authority, crate::Error> {
        let (namespace, name) = &settings.ca;
        let what = format!("Secret {namespace}/{name} (contour-certgen --keep-ca-key)");
        let api: kube::Api<Secret> = kube::Api::namespaced(self.client.clone(), namespace);
        let secret = api.get(name).await.map_err(kube_err(what.clone()))?;
        let data = secret.data.unwrap_or_default();
        let text = |key: &str| data.get(key).and_then(|v| String::from_utf8(v.0.clone()).ok()).unwrap_or_default();
        certs::Authority::from_pem(&text("ca.crt"), &text("ca.key"))
            .map_err(|source| crate::Error::Certificate { what, source })
    }

    /// The data of the Gateway fleet's client certificate Secret (base64): the one it has while
    /// that one is from the current CA, names this fleet alone and is not due for renewal;
    /// otherwise a new one.
    pub(super) async fn fleet_certificate(
        &mut self,
        key: &str,
        gw: &Gateway,
        authority: &certs::Authority,
        issuing: &cluster::certificate::Issuing,
    ) -> Result<BTreeMap<String, String>, crate::Error> {
        use cluster::certificate::{issue, still_good};
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
        if let Some(kept) = self.certificates.get(key)
            && kept.ca == authority.cert_pem()
            && !issuing.due(kept.not_after, now)
        {
            return Ok(kept.data.clone());
        }
        let namespace = gw.metadata.namespace.clone().unwrap_or_default();
        let fleet = certs::FleetId::parse(key).ok_or_else(|| crate::Error::Certificate {
            what: format!("Gateway {key}"),
            source: certs::Error::Parse("its namespace and name make no fleet name".into()),
        })?;
        let name = cluster::certificate_name(gw.metadata.name.as_deref().unwrap_or_default());
        let api: kube::Api<Secret> = kube::Api::namespaced(self.client.clone(), &namespace);
        let found = api.get_opt(&name).await.map_err(kube_err(format!("Secret {namespace}/{name}")))?;
        let data: BTreeMap<String, Vec<u8>> =
            found.and_then(|s| s.data).unwrap_or_default().into_iter().map(|(k, v)| (k, v.0)).collect();
        let kept = match still_good(&data, authority.cert_pem(), &fleet, issuing, now) {
            Some(kept) => kept,
            None => {
                let kept = issue(authority, &fleet, issuing).map_err(|source| crate::Error::Certificate {
                    what: format!("the xDS client certificate of Gateway {key}"),
                    source,
                })?;
                tracing::info!(gateway = %key, identity = %fleet.uri(&issuing.trust_domain), "fleet xDS client certificate issued");
                kept
            }
        };
        let data = kept.data.clone();
        self.certificates.insert(key.to_string(), kept);
        Ok(data)
    }
}
