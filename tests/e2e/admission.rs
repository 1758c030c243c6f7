//! The admission webhook, called by the real kube-apiserver: `kubectl apply` of an object that
//! would be invalid fails with the controller's own message; what is only partly served is
//! applied, with kubectl printing the warnings.

use std::time::Duration;

use testkit::{ApiServer, Ca, Request, apply_yaml};

/// The webhook as deploy/install registers it, calling `url` (failurePolicy Ignore: the cluster
/// never depends on it).
fn webhook_configuration(url: &str, ca_pem: &str) -> String {
    use base64::Engine;
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    format!(
        "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {{name: contour}}
webhooks:
- name: validation.projectcontour.io
  clientConfig: {{url: '{url}', caBundle: {ca}}}
  rules:
  - {{apiGroups: [projectcontour.io], apiVersions: ['*'], operations: [CREATE, UPDATE], resources: [httpproxies]}}
  - {{apiGroups: [networking.k8s.io], apiVersions: ['*'], operations: [CREATE, UPDATE], resources: [ingresses]}}
  - {{apiGroups: [gateway.networking.k8s.io], apiVersions: ['*'], operations: [CREATE, UPDATE], resources: [gateways, httproutes, grpcroutes, tlsroutes]}}
  failurePolicy: Ignore
  sideEffects: None
  admissionReviewVersions: [v1]
  timeoutSeconds: 5
"
    )
}

fn proxy(namespace: &str, name: &str, fqdn: &str, service: &str) -> String {
    format!(
        "apiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {{name: {name}, namespace: {namespace}}}\nspec:\n  virtualhost: {{fqdn: {fqdn}}}\n  routes: [{{services: [{{name: {service}, port: 80}}]}}]\n"
    )
}

#[tokio::test]
async fn kubectl_apply_of_a_clashing_httpproxy_fails_with_the_controllers_message() -> anyhow::Result<()> {
    let api = ApiServer::start().await?;
    api.install_gateway_api().await?;
    crate::harness::install_contour_crds(&api).await?;
    let client = api.client().await?;
    let ca = Ca::new()?;
    let issued = ca.issue(&["127.0.0.1"])?;
    let (cert, key) = (api.dir.join("webhook.crt"), api.dir.join("webhook.key"));
    std::fs::write(&cert, &issued.cert_pem)?;
    std::fs::write(&key, &issued.key_pem)?;
    let (webhook, metrics, xds, debug) =
        (testkit::free_port(), testkit::free_port(), testkit::free_port(), testkit::free_port());
    let log = std::fs::File::create(api.dir.join("serve.log"))?;
    let mut serve = tokio::process::Command::new(testkit::workspace_binary("contour-serve")?)
        .arg("--kubeconfig")
        .arg(&api.kubeconfig)
        .args(["--disable-leader-election", "--insecure", "--webhook-address", "127.0.0.1"])
        .args(["--webhook-port", &webhook.to_string(), "--xds-port", &xds.to_string()])
        .args(["--http-port", &metrics.to_string(), "--health-port", &metrics.to_string()])
        .args(["--debug-http-port", &debug.to_string()])
        .arg("--webhook-cert-file")
        .arg(&cert)
        .arg("--webhook-key-file")
        .arg(&key)
        .env("CONTOUR_NAMESPACE", "default")
        .stdout(std::process::Stdio::null())
        .stderr(log)
        .kill_on_drop(true)
        .spawn()?;
    let health = std::net::SocketAddr::from(([127, 0, 0, 1], metrics));
    let ready = testkit::eventually(Duration::from_secs(20), || async move {
        testkit::request(health, &Request::get("x", "/readyz")).await.ok().filter(|r| r.status == 200)
    })
    .await;
    anyhow::ensure!(ready.is_some(), "contour-serve never ready");
    let url = format!("https://127.0.0.1:{webhook}/validate");
    apply_yaml(&client, &webhook_configuration(&url, &ca.pem())).await?;
    apply_yaml(&client, "apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a}\n").await?;
    apply_yaml(&client, "apiVersion: v1\nkind: Namespace\nmetadata: {name: team-b}\n").await?;
    apply_yaml(
        &client,
        "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: team-a}\nspec: {ports: [{port: 80}]}\n",
    )
    .await?;
    apply_yaml(&client, &proxy("team-a", "shop", "shop.example.com", "web")).await?;

    let kubectl = std::env::var("CONTOUR_KUBECTL")
        .map_err(|_| anyhow::anyhow!("CONTOUR_KUBECTL is not set: run the tests through hack/test"))?;
    let apply = |name: &str, yaml: String| {
        let file = api.dir.join(format!("{name}.yaml"));
        let (kubectl, kubeconfig) = (kubectl.clone(), api.kubeconfig.clone());
        async move {
            std::fs::write(&file, yaml)?;
            let out = tokio::process::Command::new(kubectl)
                .arg("--kubeconfig")
                .arg(kubeconfig)
                .arg("apply")
                .arg("-f")
                .arg(&file)
                .output()
                .await?;
            anyhow::Ok((out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned()))
        }
    };

    // Another team's HTTPProxy for the same fqdn: refused, as long as the webhook has seen the
    // owner (the API server calls it as soon as the configuration exists; the controller's
    // store follows the owner's creation within moments).
    let clash = proxy("team-b", "shop", "shop.example.com", "web");
    let mut refused = None;
    for _ in 0..50 {
        let (ok, stderr) = apply("clash", clash.clone()).await?;
        if !ok {
            refused = Some(stderr);
            break;
        }
        // Allowed before the webhook saw the owner: take it back and try again.
        let out = tokio::process::Command::new(&kubectl)
            .arg("--kubeconfig")
            .arg(&api.kubeconfig)
            .args(["-n", "team-b", "delete", "httpproxy", "shop", "--ignore-not-found"])
            .output()
            .await?;
        anyhow::ensure!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let stderr = refused.ok_or_else(|| {
        let log = std::fs::read_to_string(api.dir.join("serve.log")).unwrap_or_default();
        anyhow::anyhow!("the clashing HTTPProxy was never refused; contour-serve's log:\n{log}")
    })?;
    assert!(stderr.contains("admission webhook \"validation.projectcontour.io\" denied the request"), "{stderr}");
    assert!(
        stderr.contains(
            "HTTPProxy team-b/shop: spec.virtualhost.fqdn: fqdn \"shop.example.com\" is used in multiple HTTPProxies: team-a/shop, team-b/shop (DuplicateVhost)"
        ),
        "{stderr}"
    );

    // A bad regex is refused too, naming the field.
    let regex = proxy("team-b", "regex", "regex.example.com", "web")
        .replace("routes: [{", "routes: [{conditions: [{regex: '/(unclosed'}], ");
    let (ok, stderr) = apply("regex", regex).await?;
    assert!(!ok && stderr.contains("spec.routes[0]") && stderr.contains("PathMatchConditionsNotValid"), "{stderr}");

    // A route to a Service that does not exist yet is applied, with the warning printed.
    let (ok, stderr) = apply("early", proxy("team-b", "early", "early.example.com", "later")).await?;
    assert!(ok, "{stderr}");
    assert!(stderr.contains("Warning:") && stderr.contains("ServiceUnresolvedReference"), "{stderr}");

    // The owner itself may change.
    let (ok, stderr) = apply("owner", proxy("team-a", "shop", "shop.example.com", "web2")).await?;
    assert!(ok, "{stderr}");

    // The answers are counted on /metrics.
    let metrics = testkit::request(health, &Request::get("x", "/metrics")).await?.body;
    let value =
        |name: &str| metrics.lines().find_map(|l| l.strip_prefix(name)?.trim().parse::<f64>().ok()).unwrap_or_default();
    assert!(value("contour_admission_denied_total") >= 2.0, "{metrics}");
    assert!(value("contour_admission_reviews_total") >= 4.0, "{metrics}");
    serve.kill().await?;
    Ok(())
}
