//! A real kube-apiserver with etcd on loopback, with generated certificates and an admin
//! kubeconfig, and the Gateway API CRDs installed. Both processes stop when dropped.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};

/// A running API server.
pub struct ApiServer {
    /// The admin kubeconfig.
    pub kubeconfig: PathBuf,
    /// Where the server listens.
    pub address: SocketAddr,
    /// The working directory (certificates, etcd data, logs).
    pub dir: PathBuf,
    etcd: Option<tokio::process::Child>,
    apiserver: Option<tokio::process::Child>,
    etcd_args: Vec<String>,
    apiserver_args: Vec<String>,
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        for child in [self.apiserver.as_mut(), self.etcd.as_mut()].into_iter().flatten() {
            let _ = child.start_kill();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn tool(var: &str) -> anyhow::Result<PathBuf> {
    std::env::var_os(var).map(PathBuf::from).ok_or_else(|| {
        anyhow::anyhow!("{var} is not set: run the tests through hack/test, which builds the Kubernetes binaries")
    })
}

impl ApiServer {
    /// Starts etcd and kube-apiserver on free loopback ports and waits until the API answers.
    pub async fn start() -> anyhow::Result<Self> {
        let dir = std::env::temp_dir().join(format!("contour-apiserver-{}-{}", std::process::id(), crate::free_port()));
        std::fs::create_dir_all(&dir)?;
        let (etcd_client, etcd_peer, port) = (crate::free_port(), crate::free_port(), crate::free_port());
        let address = SocketAddr::from(([127, 0, 0, 1], port));
        write_pki(&dir, address)?;

        let etcd_url = format!("http://127.0.0.1:{etcd_client}");
        let peer_url = format!("http://127.0.0.1:{etcd_peer}");
        let etcd_args = vec![
            format!("--data-dir={}", dir.join("etcd").display()),
            format!("--listen-client-urls={etcd_url}"),
            format!("--advertise-client-urls={etcd_url}"),
            format!("--listen-peer-urls={peer_url}"),
            format!("--initial-advertise-peer-urls={peer_url}"),
            format!("--initial-cluster=default={peer_url}"),
            "--unsafe-no-fsync".into(),
            "--log-level=error".into(),
        ];
        let d = |name: &str| dir.join(name).display().to_string();
        let apiserver_args = vec![
            format!("--etcd-servers={etcd_url}"),
            "--bind-address=127.0.0.1".into(),
            "--advertise-address=127.0.0.1".into(),
            format!("--secure-port={port}"),
            format!("--tls-cert-file={}", d("serving.pem")),
            format!("--tls-private-key-file={}", d("serving-key.pem")),
            format!("--client-ca-file={}", d("ca.pem")),
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local".into(),
            format!("--service-account-key-file={}", d("sa.pub")),
            format!("--service-account-signing-key-file={}", d("sa-key.pem")),
            "--service-cluster-ip-range=10.96.0.0/16".into(),
            "--endpoint-reconciler-type=none".into(),
            "--authorization-mode=RBAC".into(),
            "--allow-privileged=true".into(),
            // ClusterTrustBundle (a CA source) is beta and off by default.
            "--feature-gates=ClusterTrustBundle=true".into(),
            "--runtime-config=certificates.k8s.io/v1beta1/clustertrustbundles=true".into(),
            "--v=0".into(),
        ];
        let mut server = Self {
            kubeconfig: dir.join("kubeconfig"),
            address,
            dir,
            etcd: None,
            apiserver: None,
            etcd_args,
            apiserver_args,
        };
        server.start_processes().await?;
        Ok(server)
    }

    async fn start_processes(&mut self) -> anyhow::Result<()> {
        let log = |name: &str| std::fs::File::create(self.dir.join(name));
        self.etcd = Some(
            tokio::process::Command::new(tool("CONTOUR_ETCD")?)
                .args(&self.etcd_args)
                .stdout(log("etcd.log")?)
                .stderr(log("etcd.err")?)
                .kill_on_drop(true)
                .spawn()?,
        );
        self.apiserver = Some(
            tokio::process::Command::new(tool("CONTOUR_KUBE_APISERVER")?)
                .args(&self.apiserver_args)
                .stdout(log("apiserver.log")?)
                .stderr(log("apiserver.err")?)
                .kill_on_drop(true)
                .spawn()?,
        );
        let client = self.client().await?;
        let up = crate::eventually(Duration::from_secs(60), || {
            let client = client.clone();
            async move { client.apiserver_version().await.ok() }
        })
        .await;
        anyhow::ensure!(up.is_some(), "kube-apiserver did not come up; log:\n{}", self.log());
        // The API server creates `default` and the other system namespaces just after it starts.
        let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client);
        let default = crate::eventually(Duration::from_secs(30), || {
            let namespaces = namespaces.clone();
            async move { namespaces.get_opt("default").await.ok().flatten().map(drop) }
        })
        .await;
        anyhow::ensure!(default.is_some(), "namespace default never appeared; log:\n{}", self.log());
        Ok(())
    }

    /// A kubeconfig for `system:masters` whose client certificate is X.509 version 1, made as
    /// people make them: `openssl x509 -req` without extensions.
    pub async fn v1_certificate_kubeconfig(&self) -> anyhow::Result<PathBuf> {
        let d = |name: &str| self.dir.join(name);
        let run = |args: Vec<String>| async move {
            let out = tokio::process::Command::new("openssl").args(&args).output().await?;
            anyhow::ensure!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
            anyhow::Ok(())
        };
        let p = |path: PathBuf| path.display().to_string();
        run(vec![
            "req".into(),
            "-new".into(),
            "-newkey".into(),
            "ec".into(),
            "-pkeyopt".into(),
            "ec_paramgen_curve:P-256".into(),
            "-nodes".into(),
            "-keyout".into(),
            p(d("v1-key.pem")),
            "-subj".into(),
            "/CN=v1-admin/O=system:masters".into(),
            "-out".into(),
            p(d("v1.csr")),
        ])
        .await?;
        run(vec![
            "x509".into(),
            "-req".into(),
            "-in".into(),
            p(d("v1.csr")),
            "-CA".into(),
            p(d("ca.pem")),
            "-CAkey".into(),
            p(d("ca-key.pem")),
            "-set_serial".into(),
            "7".into(),
            "-days".into(),
            "1".into(),
            "-out".into(),
            p(d("v1.pem")),
        ])
        .await?;
        let kubeconfig = d("v1-kubeconfig");
        std::fs::write(
            &kubeconfig,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: test\n  cluster:\n    server: https://{}\n    certificate-authority: {}\n\
                 users:\n- name: v1\n  user:\n    client-certificate: {}\n    client-key: {}\n\
                 contexts:\n- name: test\n  context: {{cluster: test, user: v1}}\ncurrent-context: test\n",
                self.address,
                p(d("ca.pem")),
                p(d("v1.pem")),
                p(d("v1-key.pem"))
            ),
        )?;
        Ok(kubeconfig)
    }

    /// Stops the API server and etcd (their data stays), as an outage would.
    pub async fn stop(&mut self) {
        for child in [self.apiserver.take(), self.etcd.take()].into_iter().flatten() {
            let mut child = child;
            let _ = child.kill().await;
        }
    }

    /// Starts them again on the same ports and data, and waits until the API answers.
    pub async fn restart(&mut self) -> anyhow::Result<()> {
        self.stop().await;
        self.start_processes().await
    }

    /// The tail of the API server's log.
    pub fn log(&self) -> String {
        let text = std::fs::read_to_string(self.dir.join("apiserver.err")).unwrap_or_default();
        text.lines().rev().take(40).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n")
    }

    /// An admin client.
    pub async fn client(&self) -> anyhow::Result<kube::Client> {
        Self::client_for(&self.kubeconfig).await
    }

    /// Writes a kubeconfig that authenticates as the ServiceAccount `namespace/account` with a
    /// fresh token, and returns its path (in the server's directory).
    pub async fn service_account_kubeconfig(&self, namespace: &str, account: &str) -> anyhow::Result<PathBuf> {
        use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
        let accounts: Api<k8s_openapi::api::core::v1::ServiceAccount> =
            Api::namespaced(self.client().await?, namespace);
        let request = TokenRequest {
            spec: Some(TokenRequestSpec { expiration_seconds: Some(3600), ..Default::default() }),
            ..Default::default()
        };
        let token = accounts.create_token_request(account, &Default::default(), &request).await?;
        let token = token.status.map(|s| s.token).ok_or_else(|| anyhow::anyhow!("no token issued"))?;
        let admin: serde_yaml::Value = serde_yaml::from_str(&std::fs::read_to_string(&self.kubeconfig)?)?;
        let cluster = &admin["clusters"][0]["cluster"];
        let config = serde_json::json!({
            "apiVersion": "v1", "kind": "Config",
            "clusters": [{"name": "test", "cluster": {
                "server": cluster["server"].as_str(),
                "certificate-authority-data": cluster["certificate-authority-data"].as_str()
            }}],
            "users": [{"name": account, "user": {"token": token}}],
            "contexts": [{"name": "test", "context": {"cluster": "test", "user": account}}],
            "current-context": "test"
        });
        let path = self.dir.join(format!("{namespace}-{account}.kubeconfig"));
        std::fs::write(&path, serde_json::to_vec(&config)?)?;
        Ok(path)
    }

    /// A client for the kubeconfig at `path` (e.g. a ServiceAccount's).
    pub async fn client_for(path: &Path) -> anyhow::Result<kube::Client> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let kubeconfig = kube::config::Kubeconfig::read_from(path)?;
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
        // The controller's own stack (TCP_NODELAY, as Go clients): the tests and benchmarks
        // write objects as the cluster's Go controllers would, without Nagle's 40 ms.
        Ok(kubeclient::client_for(config)?)
    }

    /// Installs every CustomResourceDefinition in the YAML files of `dir` and waits until each is
    /// established.
    pub async fn install_crds(&self, dir: &Path) -> anyhow::Result<()> {
        let client = self.client().await?;
        let api: Api<CustomResourceDefinition> = Api::all(client.clone());
        let mut names = Vec::new();
        let mut files: Vec<_> = std::fs::read_dir(dir)?.flatten().map(|e| e.path()).collect();
        files.sort();
        for file in files {
            let text = std::fs::read_to_string(&file)?;
            for doc in serde_yaml::Deserializer::from_str(&text) {
                let value = <serde_yaml::Value as serde::Deserialize>::deserialize(doc)?;
                if value.get("kind").and_then(|k| k.as_str()) != Some("CustomResourceDefinition") {
                    continue;
                }
                let crd: CustomResourceDefinition = serde_yaml::from_value(value)?;
                let name = crd.metadata.name.clone().unwrap_or_default();
                api.patch(&name, &PatchParams::apply("contour-tests").force(), &Patch::Apply(&crd)).await?;
                let version = crd.spec.versions.iter().find(|v| v.served).map(|v| v.name.clone()).unwrap_or_default();
                let resource = kube::discovery::ApiResource {
                    group: crd.spec.group.clone(),
                    version: version.clone(),
                    api_version: format!("{}/{version}", crd.spec.group),
                    kind: crd.spec.names.kind.clone(),
                    plural: crd.spec.names.plural.clone(),
                };
                names.push((name, resource));
            }
        }
        for (name, resource) in names {
            // Established, and actually served: the first requests after Established can still
            // get a 404 while the API server wires the new resource up.
            let established = crate::eventually(Duration::from_secs(30), || {
                let api = api.clone();
                let name = name.clone();
                let objects: Api<kube::api::DynamicObject> = Api::all_with(client.clone(), &resource);
                async move {
                    let crd = api.get(&name).await.ok()?;
                    crd.status?
                        .conditions?
                        .iter()
                        .any(|c| c.type_ == "Established" && c.status == "True")
                        .then_some(())?;
                    objects.list(&Default::default()).await.ok().map(|_| ())
                }
            })
            .await;
            anyhow::ensure!(established.is_some(), "CRD {name} not established");
        }
        Ok(())
    }

    /// The Gateway API CRDs (from the tool cache, `CONTOUR_GATEWAY_API_CRDS`).
    pub async fn install_gateway_api(&self) -> anyhow::Result<()> {
        self.install_crds(&tool("CONTOUR_GATEWAY_API_CRDS")?).await
    }

    /// The experimental-channel TCPRoute and UDPRoute CRDs
    /// (`CONTOUR_GATEWAY_API_EXPERIMENTAL_CRDS`).
    pub async fn install_gateway_api_experimental(&self) -> anyhow::Result<()> {
        self.install_crds(&tool("CONTOUR_GATEWAY_API_EXPERIMENTAL_CRDS")?).await
    }

    /// The newest Gateway API release's experimental channel, every kind
    /// (`CONTOUR_GATEWAY_API_LATEST_CRDS`): for fields the gateway-api crate does not know yet.
    pub async fn install_gateway_api_latest(&self) -> anyhow::Result<()> {
        self.install_crds(&tool("CONTOUR_GATEWAY_API_LATEST_CRDS")?).await
    }
}

/// A CA, the serving certificate, an admin client certificate, the service-account key, and the
/// kubeconfig that ties them together.
fn write_pki(dir: &Path, address: SocketAddr) -> anyhow::Result<()> {
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(DnType::CommonName, "contour-test-ca");
    let ca_key = KeyPair::generate()?;
    std::fs::write(dir.join("ca-key.pem"), ca_key.serialize_pem())?;
    let ca = CertifiedIssuer::self_signed(ca_params, ca_key)?;

    let mut serving = CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])?;
    serving.distinguished_name.push(DnType::CommonName, "kube-apiserver");
    let serving_key = KeyPair::generate()?;
    let serving_cert = serving.signed_by(&serving_key, &ca)?;

    let mut admin = CertificateParams::new(Vec::<String>::new())?;
    admin.distinguished_name.push(DnType::CommonName, "admin");
    admin.distinguished_name.push(DnType::OrganizationName, "system:masters");
    let admin_key = KeyPair::generate()?;
    let admin_cert = admin.signed_by(&admin_key, &ca)?;

    std::fs::write(dir.join("ca.pem"), ca.pem())?;
    std::fs::write(dir.join("serving.pem"), serving_cert.pem())?;
    std::fs::write(dir.join("serving-key.pem"), serving_key.serialize_pem())?;
    let sa = KeyPair::generate()?;
    std::fs::write(dir.join("sa-key.pem"), sa.serialize_pem())?;
    std::fs::write(dir.join("sa.pub"), sa.public_key_pem())?;
    let b64 = |s: &str| base64::Engine::encode(&base64::engine::general_purpose::STANDARD, s.as_bytes());
    let kubeconfig = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: test\n  cluster:\n    server: https://{address}\n    certificate-authority-data: {}\n\
         users:\n- name: admin\n  user:\n    client-certificate-data: {}\n    client-key-data: {}\n\
         contexts:\n- name: test\n  context: {{cluster: test, user: admin}}\ncurrent-context: test\n",
        b64(&ca.pem()),
        b64(&admin_cert.pem()),
        b64(&admin_key.serialize_pem())
    );
    std::fs::write(dir.join("kubeconfig"), kubeconfig)?;
    Ok(())
}

/// Creates or updates every object of a multi-document YAML text (server-side apply), whatever
/// its kind, as `kubectl apply --server-side` would.
pub async fn apply_yaml(client: &kube::Client, yaml: &str) -> anyhow::Result<()> {
    for (api, object) in objects_of(client, yaml).await? {
        let name = object.metadata.name.clone().unwrap_or_default();
        api.patch(&name, &PatchParams::apply("contour-tests").force(), &Patch::Apply(&object)).await?;
    }
    Ok(())
}

/// Server-side applies every object of a multi-document YAML text with `dryRun=All`, as
/// `kubectl apply --server-side --dry-run=server` would: the API server validates and admits
/// each (schemas, CEL rules, defaults) and stores nothing. Returns the objects it would store.
pub async fn dry_run_yaml(client: &kube::Client, yaml: &str) -> anyhow::Result<Vec<kube::api::DynamicObject>> {
    let mut out = Vec::new();
    for (api, object) in objects_of(client, yaml).await? {
        let name = object.metadata.name.clone().unwrap_or_default();
        let kind = object.types.as_ref().map(|t| t.kind.clone()).unwrap_or_default();
        let params = PatchParams::apply("contour-tests").force().dry_run();
        let stored = api
            .patch(&name, &params, &Patch::Apply(&object))
            .await
            .map_err(|e| anyhow::anyhow!("{kind} {name} refused: {e}"))?;
        out.push(stored);
    }
    Ok(out)
}

/// Deletes every object of a multi-document YAML text (missing ones are fine).
pub async fn delete_yaml(client: &kube::Client, yaml: &str) -> anyhow::Result<()> {
    for (api, object) in objects_of(client, yaml).await? {
        let name = object.metadata.name.clone().unwrap_or_default();
        match api.delete(&name, &Default::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

async fn objects_of(
    client: &kube::Client,
    yaml: &str,
) -> anyhow::Result<Vec<(Api<kube::api::DynamicObject>, kube::api::DynamicObject)>> {
    let mut out = Vec::new();
    for doc in serde_yaml::Deserializer::from_str(yaml) {
        let value = <serde_yaml::Value as serde::Deserialize>::deserialize(doc)?;
        if value.is_null() {
            continue;
        }
        let object: kube::api::DynamicObject = serde_yaml::from_value(value)?;
        let types = object.types.clone().ok_or_else(|| anyhow::anyhow!("object without apiVersion/kind"))?;
        let gvk = kube::api::GroupVersionKind::try_from(&types)?;
        let (resource, capabilities) = kube::discovery::pinned_kind(client, &gvk).await?;
        let api = if capabilities.scope == kube::discovery::Scope::Namespaced {
            let ns = object.metadata.namespace.clone().unwrap_or_else(|| "default".into());
            Api::namespaced_with(client.clone(), &ns, &resource)
        } else {
            Api::all_with(client.clone(), &resource)
        };
        out.push((api, object));
    }
    Ok(out)
}

/// The API of objects of any kind (`apiVersion`, `kind`), in `namespace` when the kind is
/// namespaced.
async fn dynamic_api(
    client: &kube::Client,
    api_version: &str,
    kind: &str,
    namespace: &str,
) -> anyhow::Result<Api<kube::api::DynamicObject>> {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let gvk = kube::api::GroupVersionKind::gvk(group, version, kind);
    let (resource, capabilities) = kube::discovery::pinned_kind(client, &gvk).await?;
    Ok(if capabilities.scope == kube::discovery::Scope::Namespaced {
        Api::namespaced_with(client.clone(), namespace, &resource)
    } else {
        Api::all_with(client.clone(), &resource)
    })
}

/// An object of any kind as JSON; `None` when it does not exist.
pub async fn object_of(
    client: &kube::Client,
    api_version: &str,
    kind: &str,
    namespace: &str,
    name: &str,
) -> anyhow::Result<Option<serde_json::Value>> {
    let api = dynamic_api(client, api_version, kind, namespace).await?;
    Ok(api.get_opt(name).await?.map(|o| serde_json::to_value(o).unwrap_or_default()))
}

/// The `status` of an object of any kind, as JSON (`Null` when it has none).
pub async fn status_of(
    client: &kube::Client,
    api_version: &str,
    kind: &str,
    namespace: &str,
    name: &str,
) -> anyhow::Result<serde_json::Value> {
    let api = dynamic_api(client, api_version, kind, namespace).await?;
    Ok(api.get_status(name).await?.data.get("status").cloned().unwrap_or_default())
}

/// Every `status` an object is seen with, from now (its current one first) until `done` holds
/// for one or `timeout` passes: a watch, so no write in between is missed.
pub async fn status_history(
    client: &kube::Client,
    api_version: &str,
    kind: &str,
    namespace: &str,
    name: &str,
    timeout: Duration,
    done: impl Fn(&serde_json::Value) -> bool,
) -> anyhow::Result<Vec<serde_json::Value>> {
    use futures::TryStreamExt;
    let api = dynamic_api(client, api_version, kind, namespace).await?;
    let params = kube::api::WatchParams::default().fields(&format!("metadata.name={name}"));
    let mut events = Box::pin(api.watch(&params, "0").await?);
    let mut seen = Vec::new();
    let watching = async {
        while let Some(event) = events.try_next().await? {
            if let kube::api::WatchEvent::Added(o) | kube::api::WatchEvent::Modified(o) = event {
                let status = o.data.get("status").cloned().unwrap_or_default();
                let finished = done(&status);
                seen.push(status);
                if finished {
                    return Ok(());
                }
            }
        }
        anyhow::bail!("{kind} {name}: the watch ended")
    };
    match tokio::time::timeout(timeout, watching).await {
        Ok(result) => result.map(|()| seen),
        Err(_) => anyhow::bail!("{kind} {name}: no status matched in {timeout:?}; seen: {seen:#?}"),
    }
}

/// Replaces the `status` of an object (as another controller would write it).
pub async fn set_status(
    client: &kube::Client,
    api_version: &str,
    kind: &str,
    namespace: &str,
    name: &str,
    status: serde_json::Value,
) -> anyhow::Result<()> {
    let api = dynamic_api(client, api_version, kind, namespace).await?;
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(serde_json::json!({"status": status}))).await?;
    Ok(())
}
