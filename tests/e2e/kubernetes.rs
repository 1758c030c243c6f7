//! Kubernetes mode against a real kube-apiserver: objects created, changed and deleted through
//! the API reach Envoy, and status appears on them.

use std::time::Duration;

use serde_json::{Value, json};
use testkit::{ApiServer, NetnsBackend, Request, apply_yaml, delete_yaml, set_status, status_history, status_of};

use crate::harness::{
    Harness, envoy_service_with_address, gateway, gateway_api_server, http_listener, http_route, service,
};

const V1: &str = "gateway.networking.k8s.io/v1";

fn condition<'a>(conditions: &'a Value, type_: &str) -> Option<&'a Value> {
    conditions.as_array()?.iter().find(|c| c["type"] == type_)
}

/// Polls `check` on an object's status for up to 15 s; returns the last status seen.
async fn status_until(
    client: &kube::Client,
    kind: &str,
    name: &str,
    check: impl Fn(&Value) -> bool,
) -> anyhow::Result<Value> {
    status_of_until(client, V1, kind, name, check).await
}

/// [`status_until`] for any API version.
pub(crate) async fn status_of_until(
    client: &kube::Client,
    api_version: &str,
    kind: &str,
    name: &str,
    check: impl Fn(&Value) -> bool,
) -> anyhow::Result<Value> {
    let mut last = Value::Null;
    for _ in 0..150 {
        last = status_of(client, api_version, kind, "default", name).await?;
        if check(&last) {
            return Ok(last);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    anyhow::bail!("{kind} {name}: status never matched; last: {last:#}")
}

#[tokio::test]
async fn objects_applied_through_the_api_reach_envoy_and_get_status() -> anyhow::Result<()> {
    let (_api, client) = gateway_api_server().await?;
    let blue = NetnsBackend::start("blue").await?;
    let green = NetnsBackend::start("green").await?;
    let port = testkit::free_port();
    let base = [gateway(&http_listener("http", port)), service("blue", &[blue.addr]), service("green", &[green.addr])]
        .concat();
    apply_yaml(&client, &base).await?;
    let route = |svc: &str| {
        http_route(
            "app",
            &format!("  hostnames: [app.example.com]\n  rules: [{{backendRefs: [{{name: {svc}, port: 80}}]}}]"),
        )
    };
    apply_yaml(&client, &route("blue")).await?;
    // Another controller already reports on this route; its entry must survive our writes.
    let foreign = json!({"parentRef": {"name": "other-gw"}, "controllerName": "example.com/other",
        "conditions": [{"type": "Accepted", "status": "True", "reason": "Accepted", "message": "theirs", "lastTransitionTime": "2026-01-01T00:00:00Z"}]});
    set_status(&client, V1, "HTTPRoute", "default", "app", json!({"parents": [foreign]})).await?;

    let h = Harness::start_kubernetes(client.clone(), true).await?;
    let req = Request::get("app.example.com", "/");
    h.until(port, &req, |r| r.header("x-backend") == Some("blue")).await?;

    // The Gateway is programmed once Envoy accepted its configuration; the listener counts the route.
    let gw = status_until(&client, "Gateway", "gw", |s| {
        condition(&s["conditions"], "Programmed").is_some_and(|c| c["status"] == "True")
    })
    .await?;
    assert_eq!(condition(&gw["conditions"], "Accepted").unwrap()["status"], "True");
    assert_eq!(gw["listeners"][0]["attachedRoutes"], 1, "{gw:#}");
    assert_eq!(gw["addresses"][0]["value"], "127.0.0.1");
    let route_status =
        status_until(&client, "HTTPRoute", "app", |s| s["parents"].as_array().is_some_and(|p| p.len() == 2)).await?;
    let ours = route_status["parents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["controllerName"] == "projectcontour.io/gateway-controller")
        .unwrap();
    assert_eq!(condition(&ours["conditions"], "Accepted").unwrap()["status"], "True");
    assert_eq!(condition(&ours["conditions"], "ResolvedRefs").unwrap()["status"], "True");
    assert_eq!(condition(&ours["conditions"], "Accepted").unwrap()["observedGeneration"], 1);
    let theirs = route_status["parents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["controllerName"] == "example.com/other")
        .unwrap();
    assert_eq!(
        (&theirs["conditions"], &theirs["parentRef"]["name"]),
        (&foreign["conditions"], &json!("other-gw")),
        "the other controller's entry is untouched"
    );

    // Status-only updates (ours, or anyone's) never reach the pipeline.
    let rebuilds = h.counters.rebuilds.load(std::sync::atomic::Ordering::Relaxed);
    set_status(&client, V1, "HTTPRoute", "default", "app", json!({"parents": [foreign]})).await?;
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(
        h.counters.rebuilds.load(std::sync::atomic::Ordering::Relaxed),
        rebuilds,
        "a status write caused a rebuild"
    );

    // A rebuild that changes no status writes nothing: the writer counts a no-op instead.
    let sc = h.status.clone().expect("status writer");
    let written =
        |c: &status::Counters| c.success.iter().map(|n| n.load(std::sync::atomic::Ordering::Relaxed)).sum::<u64>();
    let noops = |c: &status::Counters| c.noop.iter().map(|n| n.load(std::sync::atomic::Ordering::Relaxed)).sum::<u64>();
    let (before_written, before_noops) = (written(&sc), noops(&sc));
    apply_yaml(&client, &service("unrelated", &[blue.addr])).await?;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(written(&sc), before_written, "an unchanged status was written again");
    assert!(noops(&sc) > before_noops, "the no-op was not counted");

    // An update through the API moves the traffic.
    apply_yaml(&client, &route("green")).await?;
    h.until(port, &req, |r| r.header("x-backend") == Some("green")).await?;

    // A backend that does not exist: ResolvedRefs=False naming it; the rest keeps serving.
    apply_yaml(
        &client,
        &http_route("ghost", "  hostnames: [ghost.example.com]\n  rules: [{backendRefs: [{name: nowhere, port: 80}]}]"),
    )
    .await?;
    let ghost = status_until(&client, "HTTPRoute", "ghost", |s| !s["parents"].is_null()).await?;
    let refs = condition(&ghost["parents"][0]["conditions"], "ResolvedRefs").unwrap();
    assert_eq!(
        (refs["status"].as_str(), refs["reason"].as_str()),
        (Some("False"), Some("BackendNotFound")),
        "{ghost:#}"
    );
    assert_eq!(h.get(port, &Request::get("ghost.example.com", "/")).await?.status, 500);
    assert_eq!(h.get(port, &req).await?.header("x-backend"), Some("green"));

    // Deleted and created again under the same name before the next rebuild: the new object
    // (another uid, no status) still gets its status, although it says what the old one said.
    let ghost_yaml =
        http_route("ghost", "  hostnames: [ghost.example.com]\n  rules: [{backendRefs: [{name: nowhere, port: 80}]}]");
    delete_yaml(&client, &ghost_yaml).await?;
    apply_yaml(&client, &ghost_yaml).await?;
    status_until(&client, "HTTPRoute", "ghost", |s| !s["parents"].is_null()).await?;

    // A route that stops naming our Gateway loses our entry; the route beside it keeps its own.
    let elsewhere = "---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: ghost, namespace: default}
spec:
  parentRefs: [{name: other-gw}]
  hostnames: [ghost.example.com]
  rules: [{backendRefs: [{name: nowhere, port: 80}]}]
";
    apply_yaml(&client, elsewhere).await?;
    let ours_in = |s: &Value| {
        s["parents"]
            .as_array()
            .is_some_and(|p| p.iter().any(|e| e["controllerName"] == "projectcontour.io/gateway-controller"))
    };
    status_until(&client, "HTTPRoute", "ghost", |s| !ours_in(s)).await?;
    assert!(ours_in(&status_of(&client, V1, "HTTPRoute", "default", "app").await?), "app keeps our entry");
    apply_yaml(&client, &ghost_yaml).await?;
    status_until(&client, "HTTPRoute", "ghost", ours_in).await?;

    // Another controller's conditions on the Gateway and on its listener survive our writes,
    // exactly as they were, also when the Gateway changes and we write its status again.
    let stale = json!({"type": "example.com/Audited", "status": "True", "reason": "Seeded", "message": "theirs",
        "observedGeneration": 1, "lastTransitionTime": "2026-01-01T00:00:00Z"});
    let mut seeded = status_of(&client, V1, "Gateway", "default", "gw").await?;
    seeded["conditions"].as_array_mut().expect("conditions").push(stale.clone());
    seeded["listeners"][0]["conditions"].as_array_mut().expect("listener conditions").push(stale.clone());
    set_status(&client, V1, "Gateway", "default", "gw", seeded).await?;
    let hostname = http_listener("http", port).replace("protocol: HTTP,", "protocol: HTTP, hostname: '*.example.com',");
    apply_yaml(&client, &gateway(&hostname)).await?;
    let gw = status_until(&client, "Gateway", "gw", |s| {
        condition(&s["conditions"], "Programmed").is_some_and(|c| c["observedGeneration"] == 2)
            && condition(&s["listeners"][0]["conditions"], "Accepted").is_some_and(|c| c["observedGeneration"] == 2)
    })
    .await?;
    assert_eq!(condition(&gw["conditions"], "example.com/Audited"), Some(&stale), "{gw:#}");
    assert_eq!(condition(&gw["listeners"][0]["conditions"], "example.com/Audited"), Some(&stale), "{gw:#}");

    // Deleting the route takes it out of Envoy.
    delete_yaml(&client, &route("green")).await?;
    h.until(port, &req, |r| r.status == 404).await?;
    tokio::time::sleep(Duration::from_millis(200)).await;
    h.assert_no_nacks().await
}

/// The first status a starting controller writes on a Gateway is Envoy's verdict on its
/// configuration: no `Programmed: False` while its Envoy has yet to connect and load it, then
/// `True` a moment later.
#[tokio::test]
async fn a_gateways_first_status_is_envoys_verdict_not_pending() -> anyhow::Result<()> {
    let (_api, client) = gateway_api_server().await?;
    let blue = NetnsBackend::start("blue").await?;
    let port = testkit::free_port();
    let programmed = |s: &Value| condition(&s["conditions"], "Programmed").map(|c| c["status"].clone());
    let history = tokio::spawn({
        let client = client.clone();
        async move {
            status_history(&client, V1, "Gateway", "default", "gw", Duration::from_secs(30), |s| {
                programmed(s) == Some(json!("True"))
            })
            .await
        }
    });
    let objects = [gateway(&http_listener("http", port)), service("blue", &[blue.addr])].concat();
    apply_yaml(&client, &objects).await?;
    apply_yaml(&client, &http_route("app", "  rules: [{backendRefs: [{name: blue, port: 80}]}]")).await?;
    // The controller starts with the Gateway there; its Envoy is away, and back 1.5 s later.
    let h = Harness::start_kubernetes_relayed(client.clone(), true).await?;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    h.relay.as_ref().expect("a relay").unblock();
    let history = history.await??;
    let said: Vec<_> = history.iter().filter_map(programmed).collect();
    assert!(!said.contains(&json!("False")), "the Gateway said Programmed: {said:?}");
    h.until(port, &Request::get("app.example.com", "/"), |r| r.header("x-backend") == Some("blue")).await?;
    h.assert_no_nacks().await
}

/// A change does not take a Gateway's Programmed condition through False: the write after a
/// rebuild waits for the Envoy connected here to load it (here held back by a slow link) and says
/// its verdict, rather than Pending and then Programmed again.
#[tokio::test]
async fn a_gateway_stays_programmed_while_its_envoy_loads_a_change() -> anyhow::Result<()> {
    let (_api, client) = gateway_api_server().await?;
    let blue = NetnsBackend::start("blue").await?;
    let port = testkit::free_port();
    let route = |name: &str| {
        http_route(
            name,
            &format!("  hostnames: [{name}.example.com]\n  rules: [{{backendRefs: [{{name: blue, port: 80}}]}}]"),
        )
    };
    apply_yaml(&client, &[gateway(&http_listener("http", port)), service("blue", &[blue.addr]), route("a")].concat())
        .await?;
    let h = Harness::start_kubernetes_relayed(client.clone(), false).await?;
    h.until(port, &Request::get("a.example.com", "/"), |r| r.status == 200).await?;
    let programmed = |s: &Value| condition(&s["conditions"], "Programmed").is_some_and(|c| c["status"] == "True");
    let before = status_until(&client, "Gateway", "gw", programmed).await?;
    let since = |s: &Value| condition(&s["conditions"], "Programmed").map(|c| c["lastTransitionTime"].clone());
    // Condition times have a resolution of a second: a flap now would show as a later time.
    tokio::time::sleep(Duration::from_millis(1100)).await;

    // Envoy gets the change 500 ms late, past the status holdoff (200 ms).
    let relay = h.relay.as_ref().expect("a relay");
    relay.pause();
    apply_yaml(&client, &route("b")).await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    relay.resume();
    h.until(port, &Request::get("b.example.com", "/"), |r| r.status == 200).await?;
    let attached = |s: &Value| s["listeners"][0]["attachedRoutes"] == 2;
    let after = status_until(&client, "Gateway", "gw", |s| attached(s) && programmed(s)).await?;
    assert_eq!(since(&after), since(&before), "Programmed went False and back: {after:#}");
    h.assert_no_nacks().await
}

#[tokio::test]
async fn traffic_keeps_flowing_while_the_api_server_is_down_and_changes_resume_after() -> anyhow::Result<()> {
    let mut api = ApiServer::start().await?;
    api.install_gateway_api().await?;
    let client = api.client().await?;
    let blue = NetnsBackend::start("blue").await?;
    let green = NetnsBackend::start("green").await?;
    let port = testkit::free_port();
    let route = |svc: &str| http_route("app", &format!("  rules: [{{backendRefs: [{{name: {svc}, port: 80}}]}}]"));
    let yaml = [
        gateway(&http_listener("http", port)),
        service("blue", &[blue.addr]),
        service("green", &[green.addr]),
        route("blue"),
    ]
    .concat();
    apply_yaml(&client, &yaml).await?;
    let h = Harness::start_kubernetes(client.clone(), false).await?;
    let req = Request::get("app", "/");
    h.until(port, &req, |r| r.header("x-backend") == Some("blue")).await?;

    // 30 s without an API server: every request is still answered by the backend.
    api.stop().await;
    let outage = std::time::Instant::now();
    let mut answered = 0;
    while outage.elapsed() < Duration::from_secs(30) {
        let r = h.get(port, &req).await?;
        assert_eq!((r.status, r.header("x-backend")), (200, Some("blue")), "request {answered} during the outage");
        answered += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(answered > 100, "{answered} requests");

    // Back: the controller resyncs on its own and follows new changes.
    api.restart().await?;
    let client = api.client().await?;
    apply_yaml(&client, &route("green")).await?;
    h.until(port, &req, |r| r.header("x-backend") == Some("green")).await?;
    h.assert_no_nacks().await
}

#[tokio::test]
async fn contour_crds_install_and_validate_like_upstream() -> anyhow::Result<()> {
    let api = ApiServer::start().await?;
    crate::harness::install_contour_crds(&api).await?;
    let client = api.client().await?;
    let proxy = r#"
apiVersion: projectcontour.io/v1
kind: HTTPProxy
metadata: {name: full, namespace: default}
spec:
  virtualhost:
    fqdn: www.example.com
    tls: {secretName: cert, minimumProtocolVersion: "1.3"}
    corsPolicy: {allowOrigin: ["*"], allowMethods: [GET, POST], maxAge: 10m}
  includes: [{name: child, conditions: [{prefix: /child}]}]
  routes:
  - conditions: [{prefix: /api}, {header: {name: x-env, notpresent: true}}, {queryParameter: {name: debug, present: true}}]
    services:
    - {name: web, port: 80, weight: 90, protocol: h2c}
    - {name: shadow, port: 80, mirror: true}
    timeoutPolicy: {response: 30s, idle: infinity}
    retryPolicy: {count: 3, retryOn: [5xx, reset], perTryTimeout: 1s}
    loadBalancerPolicy: {strategy: RequestHash, requestHashPolicies: [{headerHashOptions: {headerName: x-user}}]}
    healthCheckPolicy: {path: /healthz, expectedStatuses: [{start: 200, end: 300}]}
    pathRewritePolicy: {replacePrefix: [{prefix: /api, replacement: /}]}
    requestHeadersPolicy: {set: [{name: x-a, value: b}], remove: [x-c]}
  - conditions: [{prefix: /old}]
    requestRedirectPolicy: {scheme: https, statusCode: 301, prefix: /new}
"#;
    apply_yaml(&client, proxy).await?;
    let status = status_of(&client, "projectcontour.io/v1", "HTTPProxy", "default", "full").await?;
    assert_eq!(status["currentStatus"], "NotReconciled", "upstream's status default: {status}");

    let refused = |yaml: &'static str| {
        let client = client.clone();
        async move { apply_yaml(&client, yaml).await.expect_err("the API server must refuse it").to_string() }
    };
    let err = refused("apiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {name: bad-fqdn}\nspec: {virtualhost: {fqdn: WWW.Example.com}}\n").await;
    assert!(err.contains("spec.virtualhost.fqdn"), "{err}");
    let err = refused("apiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {name: bad-code}\nspec: {routes: [{requestRedirectPolicy: {statusCode: 304}}]}\n").await;
    assert!(err.contains("statusCode"), "{err}");
    let err = refused("apiVersion: projectcontour.io/v1\nkind: HTTPProxy\nmetadata: {name: bad-names}\nspec: {routes: [{services: [{name: s, port: 443, validation: {caSecret: ca, subjectName: a, subjectNames: [b]}}]}]}\n").await;
    assert!(err.contains("subjectNames[0] must equal subjectName"), "{err}");
    apply_yaml(&client, "apiVersion: projectcontour.io/v1alpha1\nkind: ExtensionService\nmetadata: {name: authz}\nspec: {services: [{name: authz, port: 9443}], protocol: h2, timeoutPolicy: {response: 1s}}\n").await?;
    let err = refused("apiVersion: projectcontour.io/v1alpha1\nkind: ExtensionService\nmetadata: {name: none}\nspec: {services: []}\n").await;
    assert!(err.contains("spec.services"), "{err}");
    apply_yaml(&client, r#"
apiVersion: projectcontour.io/v1alpha1
kind: ContourConfiguration
metadata: {name: contour}
spec:
  xdsServer: {address: 0.0.0.0, port: 8001, tls: {insecure: true}}
  envoy:
    listener: {useProxyProtocol: false, maxRequestsPerConnection: 100, per-connection-buffer-limit-bytes: 32768, tls: {minimumProtocolVersion: "1.2"}}
    http: {address: 0.0.0.0, port: 8080, accessLog: /dev/stdout}
    network: {adminPort: 9001}
    cluster: {circuitBreakers: {maxConnections: 1024}}
  httpproxy: {rootNamespaces: [projectcontour]}
  gateway: {gatewayRef: {name: contour, namespace: projectcontour}}
---
apiVersion: projectcontour.io/v1alpha1
kind: ContourDeployment
metadata: {name: params}
spec:
  contour: {deployment: {replicas: 2}, watchNamespaces: [apps], disabledFeatures: [tlsroutes]}
  envoy: {workloadType: Deployment, baseID: 1, networkPublishing: {type: NodePortService}, resources: {requests: {cpu: 100m}}}
  runtimeSettings: {enableExternalNameService: false}
"#).await?;
    let err = refused("apiVersion: projectcontour.io/v1alpha1\nkind: ContourDeployment\nmetadata: {name: bad}\nspec: {contour: {disabledFeatures: [everything]}}\n").await;
    assert!(err.contains("disabledFeatures"), "{err}");
    let err = refused("apiVersion: projectcontour.io/v1alpha1\nkind: ContourDeployment\nmetadata: {name: bad-ns}\nspec: {contour: {watchNamespaces: [Bad_NS]}}\n").await;
    assert!(err.contains("watchNamespaces"), "{err}");
    let err = refused("apiVersion: projectcontour.io/v1\nkind: TLSCertificateDelegation\nmetadata: {name: d}\nspec: {delegations: [{secretName: s}]}\n").await;
    assert!(err.contains("targetNamespaces"), "{err}");
    Ok(())
}

#[tokio::test]
async fn the_store_keeps_only_what_can_matter() -> anyhow::Result<()> {
    let api = ApiServer::start().await?;
    let client = api.client().await?;
    let yaml = r#"
apiVersion: v1
kind: Secret
metadata: {name: tls, namespace: default}
type: kubernetes.io/tls
stringData: {tls.crt: c, tls.key: k}
---
apiVersion: v1
kind: Secret
metadata: {name: sh.helm.release.v1.app.v1, namespace: default}
type: helm.sh/release.v1
stringData: {release: big}
---
apiVersion: v1
kind: Secret
metadata: {name: token, namespace: default, annotations: {kubernetes.io/service-account.name: default}}
type: kubernetes.io/service-account-token
---
apiVersion: v1
kind: ConfigMap
metadata: {name: ca, namespace: default}
data: {ca.crt: bundle, other: dropped}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: app-settings, namespace: default}
data: {settings: unrelated}
"#;
    apply_yaml(&client, yaml).await?;
    let store = store::Store::new();
    let source = tokio::spawn(store::KubernetesSource::new(client, Vec::new()).run(store.clone()));
    tokio::time::timeout(Duration::from_secs(20), store.wait_synced()).await?;
    let s = store.current();
    let secrets: Vec<String> = s.secrets.keys().map(|k| k.name.clone()).collect();
    assert_eq!(secrets, ["tls"], "Helm releases and service-account tokens are never stored");
    let maps: Vec<String> = s.config_maps.keys().map(|k| k.name.clone()).collect();
    assert!(maps.contains(&"ca".to_string()) && !maps.contains(&"app-settings".to_string()), "{maps:?}");
    let ca = &s.config_maps[&objects::ObjectKey::new("default", "ca")];
    let kept: Vec<&String> = ca.data.iter().flat_map(|d| d.keys()).collect();
    assert_eq!(kept, ["ca.crt"], "only the bundle is kept");
    assert!(s.config_maps.values().all(|c| c.metadata.managed_fields.is_none()));
    assert!(s.secrets.values().all(|o| o.metadata.managed_fields.is_none() && o.metadata.resource_version.is_none()));
    source.abort();
    Ok(())
}

#[tokio::test]
async fn a_nack_shows_on_the_gateway_and_clears_when_envoy_accepts_again() -> anyhow::Result<()> {
    let (_api, client) = gateway_api_server().await?;
    let web = NetnsBackend::start("web").await?;
    let port = testkit::free_port();
    let route = |host: &str| {
        http_route("web", &format!("  hostnames: [{host}]\n  rules: [{{backendRefs: [{{name: web, port: 80}}]}}]"))
    };
    apply_yaml(
        &client,
        &[gateway(&http_listener("http", port)), service("web", &[web.addr]), route("a.example.com")].concat(),
    )
    .await?;
    let h = Harness::start_kubernetes(client.clone(), true).await?;
    h.until(port, &Request::get("a.example.com", "/"), |r| r.status == 200).await?;
    let programmed = |want: &'static str| {
        move |s: &Value| condition(&s["conditions"], "Programmed").is_some_and(|c| c["status"] == want)
    };
    status_until(&client, "Gateway", "gw", programmed("True")).await?;

    // Envoy rejects a route configuration: the Gateway says so, with Envoy's words.
    let name = format!("http-{port}");
    h.server.inject_for_test(
        crate::harness::GATEWAY,
        xds::ResourceType::Route,
        crate::harness::rejected_route_config(&name),
    );
    let gw = status_until(&client, "Gateway", "gw", programmed("False")).await?;
    let c = condition(&gw["conditions"], "Programmed").unwrap();
    assert_eq!(c["reason"], "Invalid");
    assert!(c["message"].as_str().unwrap_or_default().contains("missing )"), "{c}");
    assert_eq!(h.get(port, &Request::get("a.example.com", "/")).await?.status, 200, "the old routes still serve");

    // A new build replaces the rejected configuration; Envoy accepts it and the condition clears.
    apply_yaml(&client, &route("b.example.com")).await?;
    h.until(port, &Request::get("b.example.com", "/"), |r| r.status == 200).await?;
    status_until(&client, "Gateway", "gw", programmed("True")).await?;
    Ok(())
}

#[tokio::test]
async fn contour_serve_takes_its_ports_from_a_contour_configuration() -> anyhow::Result<()> {
    let api = ApiServer::start().await?;
    api.install_gateway_api().await?;
    crate::harness::install_contour_crds(&api).await?;
    let client = api.client().await?;
    let (metrics, xds, debug) = (testkit::free_port(), testkit::free_port(), testkit::free_port());
    apply_yaml(&client, &format!(
        "apiVersion: projectcontour.io/v1alpha1\nkind: ContourConfiguration\nmetadata: {{name: contour, namespace: default}}\n\
         spec: {{xdsServer: {{address: 127.0.0.1, port: {xds}}}, metrics: {{address: 127.0.0.1, port: {metrics}}}, health: {{address: 127.0.0.1, port: {metrics}}}, debug: {{address: 127.0.0.1, port: {debug}}}}}\n"
    )).await?;
    let mut serve = tokio::process::Command::new(testkit::workspace_binary("contour-serve")?)
        .arg("--kubeconfig")
        .arg(&api.kubeconfig)
        .args(["--contour-config-name", "contour", "--disable-leader-election"])
        .env("CONTOUR_NAMESPACE", "default")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()?;
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], metrics));
    let ready = testkit::eventually(Duration::from_secs(20), || async move {
        testkit::request(addr, &Request::get("x", "/readyz")).await.ok().filter(|r| r.status == 200)
    })
    .await;
    assert!(ready.is_some(), "contour-serve did not serve /readyz on the port the ContourConfiguration named");
    assert!(tokio::net::TcpStream::connect(("127.0.0.1", xds)).await.is_ok(), "xDS is on the configured port");
    let dag = testkit::request(([127, 0, 0, 1], debug).into(), &Request::get("x", "/debug/dag")).await?;
    assert_eq!(dag.status, 200, "the DAG is served on the configured debug port");
    serve.kill().await?;

    // A bad value stops start-up, naming the field.
    apply_yaml(&client, "apiVersion: projectcontour.io/v1alpha1\nkind: ContourConfiguration\nmetadata: {name: broken, namespace: default}\nspec: {xdsServer: {address: not-an-ip}}\n").await?;
    let out = tokio::process::Command::new(testkit::workspace_binary("contour-serve")?)
        .arg("--kubeconfig")
        .arg(&api.kubeconfig)
        .args(["--contour-config-name", "broken", "--disable-leader-election"])
        .env("CONTOUR_NAMESPACE", "default")
        .env("RUST_BACKTRACE", "0")
        .output()
        .await?;
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("spec.xdsServer.address"), "{stderr}");
    Ok(())
}

#[tokio::test]
async fn our_ingresses_get_the_envoy_service_address() -> anyhow::Result<()> {
    let (_api, client) = gateway_api_server().await?;
    let yaml = r#"
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: ours, namespace: default}
spec: {defaultBackend: {service: {name: web, port: {number: 80}}}}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: theirs, namespace: default, annotations: {kubernetes.io/ingress.class: nginx}}
spec: {defaultBackend: {service: {name: web, port: {number: 80}}}}
"#;
    apply_yaml(&client, yaml).await?;
    envoy_service_with_address(&client, "192.0.2.50").await?;
    let _h = Harness::start_kubernetes(client.clone(), false).await?;
    let ours = status_of_until(&client, "networking.k8s.io/v1", "Ingress", "ours", |s| {
        !s["loadBalancer"]["ingress"].is_null()
    })
    .await?;
    assert_eq!(ours["loadBalancer"]["ingress"][0]["ip"], "192.0.2.50", "{ours}");
    let theirs = status_of(&client, "networking.k8s.io/v1", "Ingress", "default", "theirs").await?;
    assert!(theirs["loadBalancer"]["ingress"].is_null(), "another class's Ingress is left alone: {theirs}");

    // The Service's address changes: the Ingress follows.
    set_status(
        &client,
        "v1",
        "Service",
        "default",
        "envoy",
        json!({"loadBalancer": {"ingress": [{"hostname": "lb.example.net"}]}}),
    )
    .await?;
    status_of_until(&client, "networking.k8s.io/v1", "Ingress", "ours", |s| {
        s["loadBalancer"]["ingress"][0]["hostname"] == "lb.example.net"
    })
    .await?;
    Ok(())
}

#[tokio::test]
async fn experimental_routes_are_watched_when_their_crds_exist() -> anyhow::Result<()> {
    let (api, client) = gateway_api_server().await?;
    // Without the experimental CRDs, TCPRoute and UDPRoute are skipped and the rest syncs.
    let store = store::Store::new();
    let source = tokio::spawn(store::KubernetesSource::new(client.clone(), Vec::new()).run(store.clone()));
    tokio::time::timeout(Duration::from_secs(20), store.wait_synced()).await?;
    source.abort();

    api.install_gateway_api_experimental().await?;
    let routes = r#"
apiVersion: gateway.networking.k8s.io/v1alpha2
kind: TCPRoute
metadata: {name: db, namespace: default}
spec: {parentRefs: [{name: gw}], rules: [{backendRefs: [{name: db, port: 5432}]}]}
---
apiVersion: gateway.networking.k8s.io/v1alpha2
kind: UDPRoute
metadata: {name: dns, namespace: default}
spec: {parentRefs: [{name: gw}], rules: [{backendRefs: [{name: dns, port: 53}]}]}
"#;
    apply_yaml(&client, routes).await?;
    let store = store::Store::new();
    let source = tokio::spawn(store::KubernetesSource::new(client, Vec::new()).run(store.clone()));
    tokio::time::timeout(Duration::from_secs(20), store.wait_synced()).await?;
    let s = store.current();
    let names = |keys: Vec<&objects::ObjectKey>| keys.into_iter().map(|k| k.name.clone()).collect::<Vec<_>>();
    assert_eq!(names(s.tcp_routes.keys().collect()), ["db"]);
    assert_eq!(names(s.udp_routes.keys().collect()), ["dns"]);
    assert!(s.tcp_routes.values().all(|r| r.metadata.managed_fields.is_none()));
    source.abort();
    Ok(())
}
