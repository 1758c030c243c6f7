//! cert-manager-standin: the part of cert-manager upstream Contour's e2e suites use, for a
//! cluster where cert-manager's controller cannot be built (its `cmd/controller` module is not
//! on the Go module proxy). It issues `cert-manager.io/v1` Certificates from `selfSigned` and
//! `ca` Issuers and ClusterIssuers into `kubernetes.io/tls` Secrets (`tls.crt`, `tls.key`,
//! `ca.crt`), and marks Issuers and Certificates Ready, as cert-manager does. Everything else
//! (ACME, Vault, renewal, CertificateRequests) is out of its scope.
//!
//! Runs on the host with a kubeconfig; polls, which is plenty at a test cluster's scale.

mod issue;

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Context as _;
use clap::Parser;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use serde_json::{Value, json};

/// Issues cert-manager Certificates from selfSigned and CA issuers.
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// The namespace ClusterIssuers' CA Secrets live in (cert-manager's cluster resource
    /// namespace).
    #[arg(long, default_value = "cert-manager")]
    cluster_resource_namespace: String,
    /// How often Certificates and Issuers are looked at.
    #[arg(long, default_value = "500")]
    poll_millis: u64,
}

fn resource(kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("cert-manager.io", "v1", kind), plural)
}

fn main() -> anyhow::Result<()> {
    podrunner::process::init_logs();
    let args = Args::parse();
    tokio::runtime::Builder::new_multi_thread().enable_all().build()?.block_on(run(args))
}

async fn run(args: Args) -> anyhow::Result<()> {
    let client = kube::Client::try_default().await.context("no kubeconfig")?;
    let certificates: Api<DynamicObject> = Api::all_with(client.clone(), &resource("Certificate", "certificates"));
    let issuers: Api<DynamicObject> = Api::all_with(client.clone(), &resource("Issuer", "issuers"));
    let cluster_issuers: Api<DynamicObject> =
        Api::all_with(client.clone(), &resource("ClusterIssuer", "clusterissuers"));
    tracing::info!("issuing cert-manager.io/v1 Certificates from selfSigned and ca issuers");
    let mut stop = std::pin::pin!(podrunner::process::shutdown());
    loop {
        if let Err(e) = pass(&client, &args, &certificates, &issuers, &cluster_issuers).await {
            tracing::warn!(error = format!("{e:#}"), "pass failed; retrying");
        }
        tokio::select! {
            _ = &mut stop => return Ok(()),
            _ = tokio::time::sleep(Duration::from_millis(args.poll_millis)) => {}
        }
    }
}

/// One look at everything: Issuers marked Ready, Certificates issued where they are not yet.
async fn pass(
    client: &kube::Client,
    args: &Args,
    certificates: &Api<DynamicObject>,
    issuers: &Api<DynamicObject>,
    cluster_issuers: &Api<DynamicObject>,
) -> anyhow::Result<()> {
    let lp = ListParams::default();
    let issuers = issuers.list(&lp).await?.items;
    let cluster_issuers = cluster_issuers.list(&lp).await?.items;
    for issuer in issuers.iter().chain(&cluster_issuers) {
        if !ready(issuer) {
            let namespaced = issuer.metadata.namespace.is_some();
            let kind = if namespaced { ("Issuer", "issuers") } else { ("ClusterIssuer", "clusterissuers") };
            let api: Api<DynamicObject> = match &issuer.metadata.namespace {
                Some(ns) => Api::namespaced_with(client.clone(), ns, &resource(kind.0, kind.1)),
                None => Api::all_with(client.clone(), &resource(kind.0, kind.1)),
            };
            set_ready(&api, issuer, "True", "IssuerReady", "issuer is ready", None).await?;
        }
    }
    let by_key: BTreeMap<(String, String), &DynamicObject> = issuers
        .iter()
        .map(|i| ((i.metadata.namespace.clone().unwrap_or_default(), name(i)), i))
        .chain(cluster_issuers.iter().map(|i| ((String::new(), name(i)), i)))
        .collect();
    for certificate in certificates.list(&lp).await?.items {
        let namespace = certificate.metadata.namespace.clone().unwrap_or_default();
        let secrets: Api<Secret> = Api::namespaced(client.clone(), &namespace);
        let secret_name = certificate.data["spec"]["secretName"].as_str().unwrap_or_default().to_string();
        let issued = ready(&certificate) && secrets.get_opt(&secret_name).await?.is_some();
        if issued || secret_name.is_empty() {
            continue;
        }
        let api: Api<DynamicObject> =
            Api::namespaced_with(client.clone(), &namespace, &resource("Certificate", "certificates"));
        let issuer_ref = &certificate.data["spec"]["issuerRef"];
        let cluster = issuer_ref["kind"].as_str() == Some("ClusterIssuer");
        let key = (if cluster { String::new() } else { namespace.clone() }, str_of(&issuer_ref["name"]));
        let Some(issuer) = by_key.get(&key) else {
            set_ready(&api, &certificate, "False", "IssuerNotFound", "the issuer does not exist (yet)", None).await?;
            continue;
        };
        let signer = if issuer.data["spec"]["selfSigned"].is_object() {
            issue::Signer::SelfSigned
        } else if let Some(ca_secret) = issuer.data["spec"]["ca"]["secretName"].as_str() {
            let ca_namespace = if cluster { args.cluster_resource_namespace.as_str() } else { namespace.as_str() };
            let ca: Api<Secret> = Api::namespaced(client.clone(), ca_namespace);
            let Some(secret) = ca.get_opt(ca_secret).await? else {
                set_ready(&api, &certificate, "False", "Pending", "the CA Secret does not exist (yet)", None).await?;
                continue;
            };
            let data = secret.data.unwrap_or_default();
            let pem = |k: &str| data.get(k).map(|b| String::from_utf8_lossy(&b.0).into_owned()).unwrap_or_default();
            issue::Signer::Ca { cert: pem("tls.crt"), key: pem("tls.key") }
        } else {
            set_ready(
                &api,
                &certificate,
                "False",
                "UnsupportedIssuer",
                "only selfSigned and ca issuers are issued here",
                None,
            )
            .await?;
            continue;
        };
        match issue::issue(&certificate.data["spec"], &signer) {
            Ok(bundle) => {
                write_secret(&secrets, &secret_name, &name(&certificate), &bundle).await?;
                set_ready(
                    &api,
                    &certificate,
                    "True",
                    "Ready",
                    "Certificate is up to date and has not expired",
                    Some(&bundle),
                )
                .await?;
                tracing::info!(certificate = %format!("{namespace}/{}", name(&certificate)), secret = %secret_name, "issued");
            }
            Err(e) => {
                set_ready(&api, &certificate, "False", "Failed", &format!("{e:#}"), None).await?;
            }
        }
    }
    Ok(())
}

fn name(o: &DynamicObject) -> String {
    o.metadata.name.clone().unwrap_or_default()
}

fn str_of(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_string()
}

/// Whether the object's Ready condition is True for its current generation.
fn ready(o: &DynamicObject) -> bool {
    let generation = o.metadata.generation.unwrap_or(0);
    o.data["status"]["conditions"].as_array().into_iter().flatten().any(|c| {
        c["type"] == "Ready"
            && c["status"] == "True"
            && c["observedGeneration"].as_i64().unwrap_or(generation) == generation
    })
}

async fn set_ready(
    api: &Api<DynamicObject>,
    o: &DynamicObject,
    status: &str,
    reason: &str,
    message: &str,
    bundle: Option<&issue::Bundle>,
) -> anyhow::Result<()> {
    let now = k8s_openapi::jiff::Timestamp::now().to_string();
    let mut body = json!({"status": {"conditions": [{
        "type": "Ready", "status": status, "reason": reason, "message": message,
        "lastTransitionTime": now, "observedGeneration": o.metadata.generation.unwrap_or(0),
    }]}});
    if let Some(b) = bundle {
        body["status"]["notBefore"] = json!(b.not_before);
        body["status"]["notAfter"] = json!(b.not_after);
        body["status"]["revision"] = json!(1);
    }
    api.patch_status(&name(o), &PatchParams::default(), &Patch::Merge(&body)).await?;
    Ok(())
}

async fn write_secret(api: &Api<Secret>, name: &str, certificate: &str, bundle: &issue::Bundle) -> anyhow::Result<()> {
    let secret: Secret = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": name, "annotations": {"cert-manager.io/certificate-name": certificate}},
        "type": "kubernetes.io/tls",
        "stringData": {"tls.crt": bundle.cert, "tls.key": bundle.key, "ca.crt": bundle.ca},
    }))?;
    match api.create(&PostParams::default(), &secret).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 409 => {
            let patch = json!({"type": "kubernetes.io/tls", "data": null,
                "stringData": {"tls.crt": bundle.cert, "tls.key": bundle.key, "ca.crt": bundle.ca}});
            api.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await?;
            Ok(())
        }
        Err(e) => Err(e.into()),
    }
}
