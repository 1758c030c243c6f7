//! `contour-certgen`: the CA and certificates for the Envoy ⇄ controller xDS channel, as PEM
//! files, Secret YAML, or Secrets created in the cluster (upstream's `contour certgen`).
//!
//! Without `--overwrite`, certificates that already exist are left alone (and it says so): the
//! whole set, so that a half-present set never mixes two CAs.
//!
//! Beyond upstream: `--keep-ca-key` keeps the CA's key (`cakey.pem`, or the Opaque Secret
//! `contourca`), `--fleet NAMESPACE/NAME` issues, from that CA, a client certificate that
//! may receive that Gateway's fleet only, and `--webhook-service` the admission webhook's.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::Parser;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, PostParams};

#[derive(Parser, Debug)]
#[command(name = "contour-certgen", about = "Generate the TLS certificates for gRPC (xDS) between Envoy and Contour")]
struct Args {
    /// Create the Secrets in the cluster.
    #[arg(long)]
    kube: bool,
    /// Write the Secrets as YAML files into the output directory.
    #[arg(long)]
    yaml: bool,
    /// Write the certificates as PEM files into the output directory.
    #[arg(long)]
    pem: bool,
    /// Use the in-cluster service account.
    #[arg(long)]
    incluster: bool,
    /// Kubeconfig to use (default: $KUBECONFIG, then ~/.kube/config).
    #[arg(long, env = "KUBECONFIG", value_name = "PATH")]
    kubeconfig: Option<PathBuf>,
    /// Namespace of the Secrets (and of the names in the certificates).
    #[arg(long, env = "CONTOUR_NAMESPACE", default_value = "projectcontour")]
    namespace: String,
    /// Replace existing files or Secrets.
    #[arg(long)]
    overwrite: bool,
    /// Certificate lifetime in days.
    #[arg(long, default_value_t = 365)]
    certificate_lifetime: u32,
    /// Appended to the Secrets' names (`contourcert<suffix>`, ...).
    #[arg(long, default_value = "", allow_hyphen_values = true)]
    secrets_name_suffix: String,
    /// `legacy` (contourcert, envoycert and cacert) or `compact` (ca.crt inside each).
    #[arg(long, default_value = "legacy", value_parser = ["legacy", "compact"])]
    secrets_format: String,
    /// Also keep the CA's private key (`cakey.pem`, or the Opaque Secret `contourca`), so that
    /// fleet certificates can be issued later (`--fleet`, or the provisioner).
    #[arg(long)]
    keep_ca_key: bool,
    /// Issue a client certificate for this Gateway's fleet (`NAMESPACE/NAME`) from the kept CA
    /// instead of a new set: `envoycert.pem`, `envoykey.pem` and `cacert.pem`, or the Secret
    /// `envoycert-NAME` in the Gateway's namespace. The CA comes from the Secret `contourca` in
    /// `--namespace` with `--kube`, else from `--ca-dir`.
    #[arg(long, value_name = "NAMESPACE/NAME", value_parser = fleet_id)]
    fleet: Option<certs::FleetId>,
    /// With `--fleet` and `--pem` or `--yaml`: the directory holding `cacert.pem` and
    /// `cakey.pem`. The fleet's files go to the output directory, which must be another one.
    #[arg(long, value_name = "DIR")]
    ca_dir: Option<PathBuf>,
    /// With `--fleet`: the trust domain of the fleet identity.
    #[arg(long, default_value = certs::DEFAULT_TRUST_DOMAIN)]
    xds_trust_domain: String,
    /// Issue the admission webhook's serving certificate for this Service (in `--namespace`)
    /// instead of the xDS set, from a CA of its own: `webhookcacert.pem`, `webhookcert.pem` and
    /// `webhookkey.pem`, or the Secret of the same name as the Service (`ca.crt`, `tls.crt`,
    /// `tls.key`). Ours: upstream Contour has no webhook.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["fleet", "keep_ca_key"])]
    webhook_service: Option<String>,
    /// With `--webhook-service` and `--kube`: the ValidatingWebhookConfiguration whose webhooks
    /// get the CA as their `caBundle` (the Secret's CA when it already exists).
    #[arg(long, value_name = "NAME", requires = "webhook_service")]
    webhook_configuration: Option<String>,
    /// Where PEM and YAML files go.
    #[arg(default_value = "certs")]
    outputdir: PathBuf,
}

fn fleet_id(value: &str) -> Result<certs::FleetId, String> {
    certs::FleetId::parse(value).ok_or_else(|| format!("{value:?} is not NAMESPACE/NAME"))
}

/// The PEM files, in upstream's names.
const PEM_FILES: [&str; 5] = ["cacert.pem", "contourcert.pem", "contourkey.pem", "envoycert.pem", "envoykey.pem"];
/// The CA's key, with `--keep-ca-key`.
const CA_KEY_FILE: &str = "cakey.pem";

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let args = Args::parse();
    if !(args.kube || args.yaml || args.pem) {
        bail!("nothing to do: choose at least one of --pem, --yaml, --kube");
    }
    if let Some(fleet) = &args.fleet {
        return issue_fleet(&args, fleet).await;
    }
    if let Some(service) = &args.webhook_service {
        return issue_webhook(&args, service).await;
    }
    let certs = certs::generate(&args.namespace, args.certificate_lifetime)?;
    let format =
        if args.secrets_format == "compact" { certs::SecretsFormat::Compact } else { certs::SecretsFormat::Legacy };
    let secrets = certs::secrets(&certs, format, &args.namespace, &args.secrets_name_suffix, args.keep_ca_key);
    if args.pem {
        let texts = [&certs.ca, &certs.contour_cert, &certs.contour_key, &certs.envoy_cert, &certs.envoy_key];
        let mut files: Vec<(String, &str)> =
            PEM_FILES.iter().zip(texts).map(|(name, text)| (name.to_string(), text.as_str())).collect();
        if args.keep_ca_key {
            files.push((CA_KEY_FILE.into(), &certs.ca_key));
        }
        write_files(&args.outputdir, &files, args.overwrite)?;
    }
    if args.yaml {
        let documents: Vec<(String, String)> = secrets
            .iter()
            .map(|s| {
                Ok((format!("{}.yaml", s["metadata"]["name"].as_str().unwrap_or("secret")), serde_yaml::to_string(s)?))
            })
            .collect::<anyhow::Result<_>>()?;
        let files: Vec<(String, &str)> = documents.iter().map(|(n, t)| (n.clone(), t.as_str())).collect();
        write_files(&args.outputdir, &files, args.overwrite)?;
    }
    if args.kube {
        write_secrets(&args, &args.namespace, &secrets).await?;
    }
    Ok(())
}

/// `--fleet`: a client certificate for one Gateway's fleet, from the kept CA.
async fn issue_fleet(args: &Args, fleet: &certs::FleetId) -> anyhow::Result<()> {
    let lifetime = std::time::Duration::from_secs(u64::from(args.certificate_lifetime) * 86_400);
    let authority = if args.kube {
        let client = kubeclient::connect(args.kubeconfig.as_deref(), args.incluster).await?;
        let api: Api<Secret> = Api::namespaced(client, &args.namespace);
        let name = format!("{}{}", certs::CA_SECRET, args.secrets_name_suffix);
        let secret = api.get(&name).await.with_context(|| {
            format!("reading secret/{name} in {} (written by contour-certgen --keep-ca-key)", args.namespace)
        })?;
        let data = secret.data.unwrap_or_default();
        let text = |key: &str| -> anyhow::Result<String> {
            let value = data.get(key).with_context(|| format!("secret/{name} has no {key}"))?;
            Ok(String::from_utf8(value.0.clone())?)
        };
        certs::Authority::from_pem(&text("ca.crt")?, &text("ca.key")?)?
    } else {
        let dir = args.ca_dir.as_deref().context("--fleet without --kube needs --ca-dir, the directory of the CA")?;
        let read = |file: &str| {
            std::fs::read_to_string(dir.join(file)).with_context(|| format!("reading {}", dir.join(file).display()))
        };
        certs::Authority::from_pem(&read("cacert.pem")?, &read(CA_KEY_FILE)?)
            .with_context(|| format!("the CA in {}", dir.display()))?
    };
    // The installation's own envoycert.pem lives beside the CA: never written over.
    if (args.pem || args.yaml) && args.outputdir.join(CA_KEY_FILE).exists() {
        bail!(
            "{} holds the installation's CA; write the fleet's certificate into another directory",
            args.outputdir.display()
        );
    }
    let issued = authority.issue_fleet(fleet, &args.xds_trust_domain, lifetime)?;
    println!("a certificate for fleet {fleet} ({})", fleet.uri(&args.xds_trust_domain));
    if args.pem {
        let files = [
            ("cacert.pem".to_string(), authority.cert_pem()),
            ("envoycert.pem".into(), issued.cert.as_str()),
            ("envoykey.pem".into(), issued.key.as_str()),
        ];
        write_files(&args.outputdir, &files, args.overwrite)?;
    }
    let secret = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/tls",
        "metadata": {"name": format!("envoycert-{}", fleet.name), "namespace": fleet.namespace, "labels": {"app": "contour"}},
        "data": certs::fleet_secret_data(authority.cert_pem(), &issued),
    });
    if args.yaml {
        let text = serde_yaml::to_string(&secret)?;
        write_files(&args.outputdir, &[(format!("envoycert-{}.yaml", fleet.name), text.as_str())], args.overwrite)?;
    }
    if args.kube {
        write_secrets(args, &fleet.namespace, &[secret]).await?;
    }
    Ok(())
}

/// `--webhook-service`: the admission webhook's serving certificate, and with
/// `--webhook-configuration` its CA in the webhook configuration.
async fn issue_webhook(args: &Args, service: &str) -> anyhow::Result<()> {
    let certs = certs::generate_webhook(service, &args.namespace, args.certificate_lifetime)?;
    if args.pem {
        let files = [
            ("webhookcacert.pem".to_string(), certs.ca.as_str()),
            ("webhookcert.pem".into(), certs.cert.as_str()),
            ("webhookkey.pem".into(), certs.key.as_str()),
        ];
        write_files(&args.outputdir, &files, args.overwrite)?;
    }
    let name = format!("{service}{}", args.secrets_name_suffix);
    let secret = certs::webhook_secret(&certs, &name, &args.namespace);
    if args.yaml {
        let text = serde_yaml::to_string(&secret)?;
        write_files(&args.outputdir, &[(format!("{name}.yaml"), text.as_str())], args.overwrite)?;
    }
    if !args.kube {
        return Ok(());
    }
    write_secrets(args, &args.namespace, &[secret]).await?;
    let Some(configuration) = &args.webhook_configuration else { return Ok(()) };
    // The Secret's CA as it is now: a Secret left alone keeps its own.
    let client = kubeclient::connect(args.kubeconfig.as_deref(), args.incluster).await?;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &args.namespace);
    let stored = secrets.get(&name).await.with_context(|| format!("reading secret/{name}"))?;
    let ca =
        stored.data.unwrap_or_default().remove("ca.crt").with_context(|| format!("secret/{name} has no ca.crt"))?;
    use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
    let api: Api<ValidatingWebhookConfiguration> = Api::all(client);
    let mut current = api
        .get(configuration)
        .await
        .with_context(|| format!("reading validatingwebhookconfiguration/{configuration}"))?;
    for webhook in current.webhooks.iter_mut().flatten() {
        webhook.client_config.ca_bundle = Some(ca.clone());
    }
    api.replace(configuration, &PostParams::default(), &current)
        .await
        .with_context(|| format!("setting the caBundle of validatingwebhookconfiguration/{configuration}"))?;
    println!("validatingwebhookconfiguration/{configuration}: caBundle set");
    Ok(())
}

/// Writes every file, or none when any exists and `overwrite` is off.
fn write_files(dir: &Path, files: &[(String, &str)], overwrite: bool) -> anyhow::Result<()> {
    let existing: Vec<&str> = files.iter().filter(|(n, _)| dir.join(n).exists()).map(|(n, _)| n.as_str()).collect();
    if !existing.is_empty() && !overwrite {
        println!("{} already exist in {}; left alone (--overwrite replaces them)", existing.join(", "), dir.display());
        return Ok(());
    }
    // Written together (a new version directory swapped in with one rename, as the kubelet
    // writes a Secret volume): a reader (Envoy watches these files for moves, contour-serve
    // re-reads them per handshake) never finds a new certificate beside an old key. Keys are
    // private: every file is readable by the owner only.
    let named: Vec<(&str, &str)> = files.iter().map(|(n, t)| (n.as_str(), *t)).collect();
    certs::files::write_together(dir, &named, Some(0o600)).with_context(|| format!("writing {}", dir.display()))?;
    for (name, _) in files {
        println!("{} written", dir.join(name).display());
    }
    Ok(())
}

/// Creates each Secret; one that exists is replaced with `--overwrite` and left alone without it,
/// as upstream's certgen does. Needs only `create` and `update` on Secrets (upstream's Role).
async fn write_secrets(args: &Args, namespace: &str, secrets: &[serde_json::Value]) -> anyhow::Result<()> {
    let client = kubeclient::connect(args.kubeconfig.as_deref(), args.incluster).await?;
    let api: Api<Secret> = Api::namespaced(client, namespace);
    for s in secrets {
        let secret: Secret = serde_json::from_value(s.clone())?;
        let name = secret.metadata.name.clone().unwrap_or_default();
        match api.create(&PostParams::default(), &secret).await {
            Ok(_) => println!("secret/{name} created"),
            Err(kube::Error::Api(e)) if e.code == 409 && !args.overwrite => {
                println!("secret/{name} already exists in {namespace}; left alone (--overwrite replaces it)");
            }
            Err(kube::Error::Api(e)) if e.code == 409 => {
                api.replace(&name, &PostParams::default(), &secret)
                    .await
                    .with_context(|| format!("replacing secret/{name}"))?;
                println!("secret/{name} replaced");
            }
            Err(e) => return Err(e).with_context(|| format!("creating secret/{name}")),
        }
    }
    Ok(())
}
