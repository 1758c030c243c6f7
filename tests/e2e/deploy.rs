//! The install manifests under deploy/: every one is accepted by the real kube-apiserver
//! (server-side dry-run apply, so schemas, defaults and admission all run), the certgen Job's
//! RBAC is enough for certgen, and our binaries and Envoy accept what the manifests tell them.

use std::path::{Path, PathBuf};

use k8s_openapi::api::apps::v1::DaemonSet;
use kube::api::{Api, Patch, PatchParams};
use testkit::{ApiServer, apply_yaml, dry_run_yaml, workspace_binary};

fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy")
}

/// Every `*.yaml` under `dir`, recursively, in a stable order; not the Helm chart's, which are
/// templates (deploy/helm/check renders them and compares the objects with these files).
fn yaml_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() && path.file_name().is_some_and(|n| n != "helm") {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "yaml") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Not for a cluster: a strategic-merge patch file rather than objects, or a standalone-only
/// file (loopback endpoints, which the API server refuses by design) that says so first.
fn is_not_objects(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n.to_string_lossy().ends_with("-patch.yaml"))
        || std::fs::read_to_string(path).is_ok_and(|t| t.starts_with("# Standalone only"))
}

pub(crate) fn documents(text: &str) -> Vec<serde_json::Value> {
    serde_yaml::Deserializer::from_str(text)
        .filter_map(|d| <serde_json::Value as serde::Deserialize>::deserialize(d).ok())
        .filter(|v| !v.is_null())
        .collect()
}

pub(crate) fn read(path: &Path) -> anyhow::Result<String> {
    std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

#[tokio::test]
async fn every_manifest_is_accepted_by_the_api_server() -> anyhow::Result<()> {
    let api = ApiServer::start().await?;
    api.install_gateway_api().await?;
    api.install_crds(&deploy_dir().join("crds")).await?;
    let client = api.client().await?;
    // The namespaces objects live in exist, as they would on a cluster being installed into.
    let files: Vec<PathBuf> = yaml_files(&deploy_dir()).into_iter().filter(|f| !is_not_objects(f)).collect();
    let mut namespaces = std::collections::BTreeSet::new();
    for file in &files {
        for doc in documents(&read(file)?) {
            namespaces.extend(doc["metadata"]["namespace"].as_str().map(str::to_string));
        }
    }
    for ns in namespaces {
        apply_yaml(&client, &format!("apiVersion: v1\nkind: Namespace\nmetadata: {{name: {ns}}}\n")).await?;
    }

    let mut kinds = Vec::new();
    for file in &files {
        let stored =
            dry_run_yaml(&client, &read(file)?).await.map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
        assert!(!stored.is_empty(), "{} holds no objects", file.display());
        for object in stored {
            let kind = object.types.as_ref().map(|t| t.kind.clone()).unwrap_or_default();
            kinds.push(format!("{kind}/{}", object.metadata.name.unwrap_or_default()));
        }
    }
    for expected in [
        "Namespace/projectcontour",
        "CustomResourceDefinition/httpproxies.projectcontour.io",
        "ClusterRole/contour",
        "ConfigMap/contour",
        "Job/contour-certgen",
        "Service/contour",
        "Service/envoy",
        "Deployment/contour",
        "DaemonSet/envoy",
        "Deployment/envoy",
        "HTTPProxy/www",
    ] {
        assert!(kinds.iter().any(|k| k == expected), "{expected} missing from deploy/: {kinds:?}");
    }

    // The hostNetwork variant patches the DaemonSet the API server stored.
    apply_yaml(&client, &read(&deploy_dir().join("envoy/daemonset.yaml"))?).await?;
    let patch: serde_json::Value = serde_yaml::from_str(&read(&deploy_dir().join("envoy/hostnetwork-patch.yaml"))?)?;
    let daemonsets: Api<DaemonSet> = Api::namespaced(client.clone(), "projectcontour");
    let params = PatchParams { dry_run: true, ..Default::default() };
    let patched = daemonsets.patch("envoy", &params, &Patch::Strategic(&patch)).await?;
    let pod = patched.spec.and_then(|s| s.template.spec).expect("a pod template");
    assert_eq!(pod.host_network, Some(true));
    let envoy = pod.containers.iter().find(|c| c.name == "envoy").expect("the envoy container");
    let ports: Vec<_> = envoy.ports.iter().flatten().map(|p| (p.container_port, p.host_port)).collect();
    assert!(ports.contains(&(8080, Some(8080))) && ports.contains(&(8443, Some(8443))), "{ports:?}");
    assert_eq!(pod.containers.len(), 2, "the patch keeps the shutdown-manager sidecar");

    // The certgen Job's ServiceAccount may do what certgen does, twice (create, then replace).
    apply_yaml(&client, &read(&deploy_dir().join("install/02-certgen.yaml"))?).await?;
    let kubeconfig = api.service_account_kubeconfig("projectcontour", "contour-certgen").await?;
    for _ in 0..2 {
        let out = tokio::process::Command::new(workspace_binary("contour-certgen")?)
            .args(["--kube", "--overwrite", "--secrets-format=compact", "--namespace=projectcontour", "--kubeconfig"])
            .arg(&kubeconfig)
            .output()
            .await?;
        assert!(out.status.success(), "certgen as contour-certgen: {}", String::from_utf8_lossy(&out.stderr));
    }
    let _ = std::fs::remove_file(&kubeconfig);

    // The webhook: its patch turns it on in the contour Deployment the API server stored, and
    // its Job's ServiceAccount may issue the certificate and set the caBundle, twice.
    apply_yaml(&client, &read(&deploy_dir().join("install/04-contour.yaml"))?).await?;
    let patch: serde_json::Value = serde_yaml::from_str(&read(&deploy_dir().join("webhook/contour-patch.yaml"))?)?;
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> = Api::namespaced(client.clone(), "projectcontour");
    let patched = deployments.patch("contour", &params, &Patch::Strategic(&patch)).await?;
    let pod = patched.spec.and_then(|s| s.template.spec).expect("a pod template");
    let contour = pod.containers.iter().find(|c| c.name == "contour").expect("the contour container");
    let env: Vec<_> = contour.env.iter().flatten().map(|e| e.name.as_str()).collect();
    assert!(env.contains(&"CONTOUR_WEBHOOK_CERT_FILE") && env.contains(&"CONTOUR_NAMESPACE"), "{env:?}");
    let mounts: Vec<_> = contour.volume_mounts.iter().flatten().map(|m| m.mount_path.as_str()).collect();
    assert!(mounts.contains(&"/webhook-certs") && mounts.contains(&"/certs"), "{mounts:?}");
    apply_yaml(&client, &read(&deploy_dir().join("webhook/webhook.yaml"))?).await?;
    let kubeconfig = api.service_account_kubeconfig("projectcontour", "contour-certgen-webhook").await?;
    for _ in 0..2 {
        let out = tokio::process::Command::new(workspace_binary("contour-certgen")?)
            .args([
                "--kube",
                "--overwrite",
                "--webhook-service=contour-webhook",
                "--webhook-configuration=contour-webhook",
            ])
            .args(["--namespace=projectcontour", "--kubeconfig"])
            .arg(&kubeconfig)
            .output()
            .await?;
        assert!(out.status.success(), "certgen as contour-certgen-webhook: {}", String::from_utf8_lossy(&out.stderr));
    }
    let _ = std::fs::remove_file(&kubeconfig);
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(client.clone(), "projectcontour");
    let ca = secrets.get("contour-webhook").await?.data.unwrap_or_default().remove("ca.crt").expect("ca.crt");
    let configurations: Api<k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration> =
        Api::all(client.clone());
    let configuration = configurations.get("contour-webhook").await?;
    let bundles: Vec<_> = configuration.webhooks.iter().flatten().map(|w| w.client_config.ca_bundle.clone()).collect();
    assert_eq!(bundles, [Some(ca)], "the configuration trusts the Secret's CA");
    Ok(())
}

/// Every container of every workload in `text`: (command then args), preStop exec commands too.
pub(crate) fn command_lines(text: &str) -> Vec<Vec<String>> {
    let strings = |v: &serde_json::Value| -> Vec<String> {
        v.as_array().into_iter().flatten().filter_map(|s| s.as_str().map(str::to_string)).collect()
    };
    let mut out = Vec::new();
    for doc in documents(text) {
        let pod = &doc["spec"]["template"]["spec"];
        for list in ["initContainers", "containers"] {
            for c in pod[list].as_array().into_iter().flatten() {
                out.push([strings(&c["command"]), strings(&c["args"])].concat());
                let hook = strings(&c["lifecycle"]["preStop"]["exec"]["command"]);
                if !hook.is_empty() {
                    out.push(hook);
                }
            }
        }
    }
    out
}

#[tokio::test]
async fn binaries_and_envoy_accept_what_the_manifests_tell_them() -> anyhow::Result<()> {
    let ours =
        ["contour-serve", "contour-bootstrap", "contour-certgen", "contour-shutdown-manager", "contour-provisioner"];
    let mut checked = Vec::new();
    for file in yaml_files(&deploy_dir().join("install")).into_iter().chain(yaml_files(&deploy_dir().join("envoy"))) {
        for line in command_lines(&read(&file)?) {
            let Some(binary) = line.first().filter(|b| ours.contains(&b.as_str())) else { continue };
            let args: Vec<String> =
                line[1..].iter().map(|a| a.replace("$(CONTOUR_NAMESPACE)", "projectcontour")).collect();
            // Parsing only: clap refuses an unknown flag or bad value before it reaches --help.
            let out =
                tokio::process::Command::new(workspace_binary(binary)?).args(&args).arg("--help").output().await?;
            assert!(
                out.status.success(),
                "{}: {binary} {args:?} refused: {}",
                file.display(),
                String::from_utf8_lossy(&out.stderr)
            );
            checked.push(binary.clone());
        }
    }
    for binary in ours {
        assert!(checked.iter().any(|c| c == binary), "no manifest runs {binary}");
    }

    // The ConfigMap's contour.yaml is one contour-serve accepts.
    let configmap = documents(&read(&deploy_dir().join("install/01-contour-config.yaml"))?);
    let text = configmap[0]["data"]["contour.yaml"].as_str().expect("contour.yaml in the ConfigMap");
    config::parse("contour.yaml", text).map_err(|e| anyhow::anyhow!("{e}"))?;

    // The init container's bootstrap, with the certgen Secret's files, is one Envoy accepts.
    let root = std::env::temp_dir().join(format!("contour-deploy-{}-{}", std::process::id(), testkit::free_port()));
    let (config_dir, certs) = (root.join("config"), root.join("certs"));
    std::fs::create_dir_all(&config_dir)?;
    let out =
        tokio::process::Command::new(workspace_binary("contour-certgen")?).arg("--pem").arg(&root).output().await?;
    anyhow::ensure!(out.status.success(), "certgen: {}", String::from_utf8_lossy(&out.stderr));
    std::fs::create_dir_all(&certs)?;
    for (from, to) in [("cacert.pem", "ca.crt"), ("envoycert.pem", "tls.crt"), ("envoykey.pem", "tls.key")] {
        std::fs::copy(root.join(from), certs.join(to))?;
    }
    let daemonset = read(&deploy_dir().join("envoy/daemonset.yaml"))?;
    let lines = command_lines(&daemonset);
    let local = |a: &String| {
        a.replace("/config", &config_dir.display().to_string()).replace("/certs", &certs.display().to_string())
    };
    let init = lines.iter().find(|l| l[0] == "contour-bootstrap").expect("the bootstrap init container");
    let args: Vec<String> = init[1..].iter().map(local).collect();
    let out = tokio::process::Command::new(workspace_binary("contour-bootstrap")?).args(&args).output().await?;
    anyhow::ensure!(out.status.success(), "bootstrap: {}", String::from_utf8_lossy(&out.stderr));
    assert!(config_dir.join("resources/sds/xds-tls-certificate.json").exists(), "SDS files under --resources-dir");
    let envoy = lines.iter().find(|l| l[0] == "envoy").expect("the envoy container");
    let args: Vec<String> = envoy[1..].iter().map(local).collect();
    let envoy_bin =
        std::env::var("CONTOUR_ENVOY").map_err(|_| anyhow::anyhow!("CONTOUR_ENVOY unset: run hack/test"))?;
    let out = tokio::process::Command::new(envoy_bin).args(&args).args(["--mode", "validate"]).output().await?;
    assert!(
        out.status.success(),
        "Envoy refused the manifest's bootstrap: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&root);
    Ok(())
}
