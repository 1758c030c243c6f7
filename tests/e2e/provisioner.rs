//! contour-provisioner in cluster mode against a real API server, as the ServiceAccount of
//! deploy/rbac/provisioner.yaml and holding its Lease: a Gateway of our class gets its fleet's
//! objects (ServiceAccount, certificate Secret, workload, Service) as its
//! ContourDeployment says; they follow the Gateway's listeners and the ContourDeployment, a bad
//! ContourDeployment shows on the GatewayClass, and a deleted Gateway leaves nothing behind.
//! Without `--xds-address`, as upstream's provisioner manifest runs it and with upstream's
//! provisioner RBAC, each Gateway gets a controller of its own, which goes with the Gateway too.

use std::time::Duration;

use serde_json::Value;
use testkit::{ApiServer, apply_yaml, delete_yaml};

const CLASS: &str = "
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: contour}
spec:
  controllerName: projectcontour.io/gateway-controller
  parametersRef: {group: projectcontour.io, kind: ContourDeployment, name: params, namespace: default}
";

fn parameters(envoy: &str) -> String {
    format!(
        "apiVersion: projectcontour.io/v1alpha1\nkind: ContourDeployment\nmetadata: {{name: params, namespace: default}}\nspec:\n  envoy: {envoy}\n"
    )
}

fn gateway(listeners: &str) -> String {
    named_gateway("edge", listeners)
}

fn named_gateway(name: &str, listeners: &str) -> String {
    format!(
        "apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\nmetadata: {{name: {name}, namespace: default}}\nspec:\n  gatewayClassName: contour\n  listeners: {listeners}\n"
    )
}

/// The provisioner as deploy/install/05-provisioner.yaml runs it, with its RBAC's ServiceAccount.
async fn provisioner(api: &ApiServer, metrics: u16) -> anyhow::Result<tokio::process::Child> {
    let kubeconfig = api.service_account_kubeconfig("projectcontour", "contour-gateway-provisioner").await?;
    Ok(tokio::process::Command::new(testkit::workspace_binary("contour-provisioner")?)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["--mode", "cluster", "--ca-secret", "projectcontour/contourca", "--resync-seconds", "1"])
        .args(["--xds-address", "contour.projectcontour"])
        .args(["--enable-leader-election", "--leader-election-namespace", "projectcontour"])
        .args(["--contour-image", "contour-rs:test", "--metrics-addr", &format!("127.0.0.1:{metrics}")])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()?)
}

/// An object of the test's namespace (or a cluster-scoped one) as JSON, `None` when it does not
/// exist.
async fn object(client: &kube::Client, api_version: &str, kind: &str, name: &str) -> anyhow::Result<Option<Value>> {
    testkit::object_of(client, api_version, kind, "default", name).await
}

/// Waits up to 30 s for `check` to hold on the object in `default` (`None`: it does not exist).
async fn until(
    client: &kube::Client,
    api_version: &str,
    kind: &str,
    name: &str,
    what: &str,
    check: impl Fn(Option<&Value>) -> bool,
) -> anyhow::Result<Option<Value>> {
    until_in(client, api_version, kind, "default", name, what, check).await
}

/// [`until`] in another namespace.
async fn until_in(
    client: &kube::Client,
    api_version: &str,
    kind: &str,
    namespace: &str,
    name: &str,
    what: &str,
    check: impl Fn(Option<&Value>) -> bool,
) -> anyhow::Result<Option<Value>> {
    let mut last = None;
    for _ in 0..150 {
        last = testkit::object_of(client, api_version, kind, namespace, name).await?;
        if check(last.as_ref()) {
            return Ok(last);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    anyhow::bail!("{kind} {namespace}/{name}: never {what}; last: {last:#?}")
}

/// A Secret's `data` value, decoded.
fn secret_text(secret: &Value, key: &str) -> String {
    use base64::Engine as _;
    let encoded = secret["data"][key].as_str().unwrap_or_default();
    String::from_utf8(base64::engine::general_purpose::STANDARD.decode(encoded).unwrap_or_default()).unwrap_or_default()
}

fn service_ports(svc: Option<&Value>) -> Vec<(String, i64, i64)> {
    svc.and_then(|s| s["spec"]["ports"].as_array())
        .into_iter()
        .flatten()
        .map(|p| {
            let n = |k: &str| p[k].as_i64().unwrap_or_default();
            (p["name"].as_str().unwrap_or_default().to_string(), n("port"), n("targetPort"))
        })
        .collect()
}

#[tokio::test]
async fn cluster_mode_provisions_each_gateways_fleet_and_cleans_up() -> anyhow::Result<()> {
    let api = ApiServer::start().await?;
    api.install_gateway_api().await?;
    crate::harness::install_contour_crds(&api).await?;
    let client = api.client().await?;
    apply_yaml(&client, "apiVersion: v1\nkind: Namespace\nmetadata: {name: projectcontour}\n").await?;
    apply_yaml(&client, include_str!("../../deploy/rbac/provisioner.yaml")).await?;
    // What `contour-certgen --keep-ca-key` leaves: the installation's certificates and its CA.
    let installation = certs::generate("projectcontour", 1)?;
    for secret in certs::secrets(&installation, certs::SecretsFormat::Compact, "projectcontour", "", true) {
        apply_yaml(&client, &serde_json::to_string(&secret)?).await?;
    }
    apply_yaml(&client, &[CLASS, "---\n", &parameters("{workloadType: Deployment, deployment: {replicas: 3}, networkPublishing: {type: ClusterIPService}, logLevel: debug}")].concat()).await?;
    apply_yaml(&client, &gateway("[{name: http, port: 80, protocol: HTTP}]")).await?;
    let other = named_gateway("other", "[{name: http, port: 8080, protocol: HTTP}]");
    apply_yaml(&client, &other).await?;
    let metrics = testkit::free_port();
    let mut running = provisioner(&api, metrics).await?;

    // The fleet, as the ContourDeployment says.
    let deployment = until(&client, "apps/v1", "Deployment", "envoy-edge", "created", |d| d.is_some()).await?;
    let deployment = deployment.unwrap_or_default();
    assert_eq!(deployment["spec"]["replicas"], 3);
    let pod = &deployment["spec"]["template"]["spec"];
    let init_args: Vec<&str> =
        pod["initContainers"][0]["args"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    assert!(init_args.contains(&"--fleet=default/edge"), "{init_args:?}");
    assert_eq!(pod["initContainers"][0]["image"], "contour-rs:test");
    let envoy_args: Vec<&str> =
        pod["containers"][1]["args"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    assert!(envoy_args.windows(2).any(|w| w == ["--log-level", "debug"]), "{envoy_args:?}");
    assert_eq!(deployment["metadata"]["ownerReferences"][0]["name"], "edge");
    // Our binaries accept what the fleet's pods tell them (parsing only).
    for line in crate::deploy::command_lines(&serde_json::to_string(&deployment)?) {
        let Some(binary) = line.first().filter(|b| *b == "contour" || b.starts_with("contour-")) else { continue };
        let out = tokio::process::Command::new(testkit::workspace_binary(binary)?)
            .args(&line[1..])
            .arg("--help")
            .output()
            .await?;
        assert!(out.status.success(), "{line:?} refused: {}", String::from_utf8_lossy(&out.stderr));
    }
    // Each fleet's certificate is its own, from the installation's CA, naming its fleet alone.
    for gateway in ["edge", "other"] {
        let name = format!("envoycert-{gateway}");
        let secret = until(&client, "v1", "Secret", &name, "created", |s| s.is_some()).await?.unwrap_or_default();
        let (ca, cert) = (secret_text(&secret, "ca.crt"), secret_text(&secret, "tls.crt"));
        assert_eq!(ca, installation.ca, "{name}: the installation's CA");
        let identity = certs::fleet::identity_pem(&cert, certs::DEFAULT_TRUST_DOMAIN)?;
        assert_eq!(identity.subject, format!("spiffe://projectcontour.io/ns/default/gateway/{gateway}"));
        let fleet = certs::FleetId::parse(&format!("default/{gateway}")).expect("a fleet name");
        assert_eq!(identity.claim, certs::Claim::Fleet(fleet), "{name} names its fleet alone");
        assert_ne!(cert, installation.envoy_cert, "{name} is no copy of the installation's certificate");
    }
    // Reconciled every second, it is kept, not issued again.
    let issued = secret_text(&object(&client, "v1", "Secret", "envoycert-edge").await?.unwrap_or_default(), "tls.crt");
    tokio::time::sleep(Duration::from_secs(3)).await;
    let kept = secret_text(&object(&client, "v1", "Secret", "envoycert-edge").await?.unwrap_or_default(), "tls.crt");
    assert_eq!(issued, kept, "the fleet's certificate was issued again");
    assert!(object(&client, "v1", "ServiceAccount", "envoy-edge").await?.is_some());
    let svc = until(&client, "v1", "Service", "envoy-edge", "created", |s| s.is_some()).await?;
    assert_eq!(svc.as_ref().map(|s| s["spec"]["type"].clone()), Some("ClusterIP".into()));
    assert_eq!(service_ports(svc.as_ref()), [("http-80".to_string(), 80, 80)]);
    until(&client, "v1", "Service", "envoy-other", "created", |s| s.is_some()).await?;
    let scraped = testkit::request(([127, 0, 0, 1], metrics).into(), &testkit::Request::get("x", "/metrics")).await?;
    let text = scraped.body.clone();
    for line in
        ["contour_provisioner_gateways 2", "contour_provisioner_is_leader 1", "contour_provisioner_errors_total 0"]
    {
        assert!(text.lines().any(|l| l == line), "{line} in\n{text}");
    }

    // A listener more: the Service follows.
    apply_yaml(
        &client,
        &gateway(
            "[{name: http, port: 80, protocol: HTTP}, {name: tls, port: 443, protocol: TLS, tls: {mode: Passthrough}}]",
        ),
    )
    .await?;
    until(&client, "v1", "Service", "envoy-edge", "given port 443", |s| service_ports(s).len() == 2).await?;

    // The ContourDeployment asks for a DaemonSet: it replaces the Deployment.
    apply_yaml(&client, &parameters("{workloadType: DaemonSet}")).await?;
    until(&client, "apps/v1", "DaemonSet", "envoy-edge", "created", |d| d.is_some()).await?;
    until(&client, "apps/v1", "Deployment", "envoy-edge", "deleted", |d| d.is_none()).await?;

    // A bad ContourDeployment shows on the class, with upstream's reason.
    apply_yaml(&client, &parameters("{logLevel: loud}")).await?;
    let class = until(&client, "gateway.networking.k8s.io/v1", "GatewayClass", "contour", "refused", |c| {
        c.and_then(|c| c["status"]["conditions"].as_array())
            .is_some_and(|conds| conds.iter().any(|c| c["type"] == "Accepted" && c["status"] == "False"))
    })
    .await?
    .unwrap_or_default();
    let accepted =
        class["status"]["conditions"].as_array().into_iter().flatten().find(|c| c["type"] == "Accepted").cloned();
    let accepted = accepted.unwrap_or_default();
    assert_eq!(accepted["reason"], "InvalidParameters");
    assert!(accepted["message"].as_str().is_some_and(|m| m.contains("spec.envoy.logLevel \"loud\"")), "{accepted}");
    apply_yaml(&client, &parameters("{}")).await?;
    until(&client, "apps/v1", "DaemonSet", "envoy-edge", "kept", |d| d.is_some()).await?;

    // The Gateway goes, and its fleet with it.
    delete_yaml(&client, &gateway("[]")).await?;
    for (api_version, kind, name) in [
        ("apps/v1", "DaemonSet", "envoy-edge"),
        ("v1", "Service", "envoy-edge"),
        ("v1", "ServiceAccount", "envoy-edge"),
        ("v1", "Secret", "envoycert-edge"),
    ] {
        until(&client, api_version, kind, name, "deleted", |o| o.is_none()).await?;
    }
    let installation_secrets =
        kube::Api::<k8s_openapi::api::core::v1::Secret>::namespaced(client.clone(), "projectcontour");
    assert!(installation_secrets.get_opt("envoycert").await?.is_some(), "the installation's own Secret stays");

    // A Gateway deleted while the provisioner is down loses its fleet when it is back (once it
    // holds the Lease again: the killed one never released it).
    running.kill().await?;
    delete_yaml(&client, &other).await?;
    let _running = provisioner(&api, testkit::free_port()).await?;
    until(&client, "v1", "Service", "envoy-other", "deleted", |s| s.is_none()).await?;
    until(&client, "apps/v1", "DaemonSet", "envoy-other", "deleted", |d| d.is_none()).await?;
    Ok(())
}

/// Upstream's provisioner RBAC (examples/gateway-provisioner of the pinned contour module): its
/// namespace, ServiceAccount, ClusterRole, Role and bindings.
fn upstream_provisioner_rbac() -> anyhow::Result<String> {
    let dir = std::env::var("CONTOUR_UPSTREAM")
        .map_err(|_| anyhow::anyhow!("CONTOUR_UPSTREAM is not set: run the tests through hack/test"))?;
    let dir = std::path::Path::new(&dir).join("examples/gateway-provisioner");
    let files = ["00-common.yaml", "01-roles.yaml", "02-rolebindings.yaml"];
    Ok(files.iter().map(|f| crate::deploy::read(&dir.join(f))).collect::<anyhow::Result<Vec<_>>>()?.join("\n---\n"))
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array().into_iter().flatten().filter_map(Value::as_str).collect()
}

#[tokio::test]
async fn without_an_installation_each_gateway_gets_a_controller_of_its_own_and_takes_it_along() -> anyhow::Result<()> {
    let api = ApiServer::start().await?;
    api.install_gateway_api().await?;
    crate::harness::install_contour_crds(&api).await?;
    let client = api.client().await?;
    apply_yaml(&client, &upstream_provisioner_rbac()?).await?;
    apply_yaml(&client, "apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a}\n").await?;
    let params = "apiVersion: projectcontour.io/v1alpha1\nkind: ContourDeployment\nmetadata: {name: params, namespace: default}\nspec:\n  contour: {watchNamespaces: [team-a], disabledFeatures: [tlsroutes], replicas: 1}\n  runtimeSettings: {envoy: {listener: {useProxyProtocol: true}}}\n";
    apply_yaml(&client, &[CLASS, "---\n", params].concat()).await?;
    apply_yaml(&client, &gateway("[{name: http, port: 80, protocol: HTTP}]")).await?;
    let other = named_gateway("other", "[{name: http, port: 8080, protocol: HTTP}]");
    apply_yaml(&client, &other).await?;
    // As upstream's manifest runs it: no --xds-address, upstream's ServiceAccount and RBAC.
    let kubeconfig = api.service_account_kubeconfig("projectcontour", "contour-gateway-provisioner").await?;
    let start = || {
        tokio::process::Command::new(testkit::workspace_binary("contour-provisioner")?)
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["--mode", "cluster", "--resync-seconds", "1", "--metrics-addr", "0"])
            .args(["--contour-image", "ghcr.io/projectcontour/contour:v1.33.8"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(anyhow::Error::from)
    };
    let mut running = start()?;

    // The Gateway's controller: upstream's flags, its namespaces (the Gateway's own added), its
    // disabled kinds, its ContourConfiguration.
    let controller = until(&client, "apps/v1", "Deployment", "contour-edge", "created", |d| d.is_some()).await?;
    let controller = controller.unwrap_or_default();
    assert_eq!(controller["spec"]["replicas"], 1);
    let container = &controller["spec"]["template"]["spec"]["containers"][0];
    let args = strings(&container["args"]);
    for want in [
        "serve",
        "--contour-config-name=contourconfig-edge",
        "--leader-election-resource-name=leader-elect-edge",
        "--envoy-service-name=envoy-edge",
        "--watch-namespaces=team-a,default",
        "--disable-feature=tlsroutes",
    ] {
        assert!(args.contains(&want), "{want} in {args:?}");
    }
    // The provisioner writes a Gateway's objects one after another: each is waited for.
    let created = |o: Option<&Value>| o.is_some();
    let configuration =
        until(&client, "projectcontour.io/v1alpha1", "ContourConfiguration", "contourconfig-edge", "created", created)
            .await?
            .unwrap_or_default();
    assert_eq!(
        configuration["spec"]["gateway"]["gatewayRef"],
        serde_json::json!({"namespace": "default", "name": "edge"})
    );
    assert_eq!(configuration["spec"]["envoy"]["listener"]["useProxyProtocol"], true);
    assert!(until(&client, "v1", "Service", "contour-edge", "created", created).await?.is_some());
    // RBAC for what it watches only; the binding names its ServiceAccount.
    let rbac = "rbac.authorization.k8s.io/v1";
    let cluster_role = until(&client, rbac, "ClusterRole", "contour-default-edge", "created", created).await?;
    let rules = cluster_role.unwrap_or_default()["rules"].clone();
    let granted: Vec<&str> = rules.as_array().into_iter().flatten().flat_map(|r| strings(&r["resources"])).collect();
    assert_eq!(granted, ["gatewayclasses", "gatewayclasses/status", "namespaces", "clustertrustbundles"]);
    for namespace in ["team-a", "default"] {
        let role =
            until_in(&client, rbac, "Role", namespace, "contour-resources-default-edge", "created", created).await?;
        let role = role.ok_or_else(|| anyhow::anyhow!("no Role in {namespace}"))?;
        let resources: Vec<&str> =
            role["rules"].as_array().into_iter().flatten().flat_map(|r| strings(&r["resources"])).collect();
        assert!(resources.contains(&"httproutes") && !resources.contains(&"tlsroutes"), "{resources:?}");
    }
    // Its certificates, from one CA of its own, made once.
    let serving =
        until(&client, "v1", "Secret", "contourcert-edge", "created", |s| s.is_some()).await?.unwrap_or_default();
    let client_cert = until(&client, "v1", "Secret", "envoycert-edge", "created", created).await?.unwrap_or_default();
    assert_eq!(serving["data"]["ca.crt"], client_cert["data"]["ca.crt"]);
    // The fleet dials it, on upstream's ports (listener port + 8000).
    let fleet =
        until(&client, "apps/v1", "DaemonSet", "envoy-edge", "created", |d| d.is_some()).await?.unwrap_or_default();
    let bootstrap = strings(&fleet["spec"]["template"]["spec"]["initContainers"][0]["args"]);
    assert!(bootstrap.contains(&"--xds-address=contour-edge.default"), "{bootstrap:?}");
    let svc = until(&client, "v1", "Service", "envoy-edge", "created", created).await?;
    assert_eq!(service_ports(svc.as_ref()), [("http-80".to_string(), 80, 8080)]);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let again = object(&client, "v1", "Secret", "contourcert-edge").await?.unwrap_or_default();
    assert_eq!(again["data"]["tls.crt"], serving["data"]["tls.crt"], "reconciles keep the certificates");

    // The Gateway goes: its controller, its RBAC in every namespace and cluster-wide, its
    // certificates and its fleet go too.
    delete_yaml(&client, &gateway("[]")).await?;
    for (api_version, kind, name) in [
        ("apps/v1", "Deployment", "contour-edge"),
        ("v1", "Service", "contour-edge"),
        ("v1", "ServiceAccount", "contour-edge"),
        ("v1", "Secret", "contourcert-edge"),
        ("v1", "Secret", "envoycert-edge"),
        ("projectcontour.io/v1alpha1", "ContourConfiguration", "contourconfig-edge"),
        ("rbac.authorization.k8s.io/v1", "Role", "contour-edge"),
        ("rbac.authorization.k8s.io/v1", "RoleBinding", "contour-rolebinding-edge"),
        ("rbac.authorization.k8s.io/v1", "ClusterRole", "contour-default-edge"),
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "contour-default-edge"),
        ("apps/v1", "DaemonSet", "envoy-edge"),
        ("v1", "Service", "envoy-edge"),
    ] {
        until(&client, api_version, kind, name, "deleted", |o| o.is_none()).await?;
    }
    for kind in ["Role", "RoleBinding"] {
        let left = testkit::object_of(
            &client,
            "rbac.authorization.k8s.io/v1",
            kind,
            "team-a",
            "contour-resources-default-edge",
        )
        .await?;
        assert!(left.is_none(), "{kind} in team-a left behind");
    }

    // A Gateway that goes while the provisioner is down: the cluster's garbage collector takes
    // what it owned (done here by hand: this API server runs no controllers); the provisioner,
    // back, finds its ClusterRole and Roles by their labels and removes them, and leaves alone an
    // object of one of its names that it did not make.
    let role = "rbac.authorization.k8s.io/v1";
    until(&client, role, "ClusterRole", "contour-default-other", "created", |o| o.is_some()).await?;
    running.kill().await?;
    delete_yaml(&client, &other).await?;
    let owned = "apiVersion: v1\nkind: Service\nmetadata: {name: envoy-other, namespace: default}\n---\n\
                 apiVersion: v1\nkind: Service\nmetadata: {name: contour-other, namespace: default}\n---\n\
                 apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: contour-other, namespace: default}\n---\n\
                 apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: envoy-other, namespace: default}\n---\n\
                 apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: contour-other, namespace: default}\n";
    delete_yaml(&client, owned).await?;
    let theirs = "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: contour-other, namespace: default, labels: {team: a}}\n";
    apply_yaml(&client, theirs).await?;
    let _running = start()?;
    until(&client, role, "ClusterRole", "contour-default-other", "deleted", |o| o.is_none()).await?;
    until(&client, role, "ClusterRoleBinding", "contour-default-other", "deleted", |o| o.is_none()).await?;
    for kind in ["Role", "RoleBinding"] {
        let gone = |o: Option<&Value>| o.is_none();
        let left = until_in(&client, role, kind, "team-a", "contour-resources-default-other", "deleted", gone).await;
        assert!(left.is_ok(), "{kind} in team-a left behind: {left:?}");
    }
    let kept = object(&client, "v1", "ServiceAccount", "contour-other").await?;
    assert!(kept.is_some_and(|a| a["metadata"]["labels"]["team"] == "a"), "an object not ours is left alone");
    Ok(())
}
