//! `hack/bench --limits`: contour serve's memory at the limits a shared cluster reaches, on a real
//! kube-apiserver + etcd. A benchmark, not a test: it prints figures and asserts nothing.
//!
//! - one HTTPProxy of about 1 MiB (thousands of routes): how long until its status is written,
//!   and the controller's memory with it and after it is deleted;
//! - 100k small objects the controller watches but no route uses (Services, EndpointSlices and
//!   Opaque Secrets in equal parts, as a big cluster's other tenants have): the controller's
//!   memory once it has read them all, and per object.
//!
//!   limits --contour BIN [--objects 100000]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::core::v1::{Secret, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, DeleteParams, DynamicObject, PostParams};
use kube::discovery::ApiResource;
use serde_json::{Value, json};
use testkit::ApiServer;

/// Requests to the API server at once while creating objects.
const CONCURRENCY: usize = 64;
/// How long the controller may take to write one object's status.
const STATUS_WITHIN: Duration = Duration::from_secs(60);

/// contour serve's memory at a shared cluster's limits (see the module doc).
#[derive(clap::Parser)]
#[command(name = "limits")]
struct Args {
    /// Our `contour` command (bins/contour).
    #[arg(long, value_name = "BIN")]
    contour: PathBuf,
    /// Small objects no route uses.
    #[arg(long, default_value_t = 100_000)]
    objects: usize,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let Args { contour, objects } = <Args as clap::Parser>::parse();
    anyhow::ensure!(contour.exists(), "--contour: no contour command at {}", contour.display());
    testkit::require_tools(&["CONTOUR_KUBE_APISERVER", "CONTOUR_ETCD"], "hack/bench --limits")?;

    let api = ApiServer::start().await?;
    api.install_crds(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/crds")).await?;
    let client = api.client().await?;
    let port = || testkit::free_port().to_string();
    let log = api.dir.join("contour.log");
    let mut serve = tokio::process::Command::new(&contour)
        .arg("serve")
        .arg(format!("--kubeconfig={}", api.kubeconfig.display()))
        .args(["--xds-address=127.0.0.1", "--xds-port", &port(), "--insecure", "--disable-leader-election"])
        .args(["--http-address=127.0.0.1", "--http-port", &port(), "--health-address=127.0.0.1"])
        .args(["--health-port", &port(), "--debug-http-port", &port()])
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log)?)
        .kill_on_drop(true)
        .spawn()?;
    let pid = serve.id().context("the controller's pid")?;
    let proxies = httpproxies(&client);
    let rss = || testkit::usage(pid).1;
    let mut rows: Vec<(String, String)> = Vec::new();

    create_app(&client, "app-0").await?;
    let t = Instant::now();
    valid(&proxies, "app-0").await?;
    rows.push(("started, one app".into(), format!("{:.0} MiB (status in {:.1} s)", rss(), secs(t))));

    // One HTTPProxy of about 1 MiB.
    let big = big_proxy(1 << 20);
    let bytes = big.to_string().len();
    let routes = big["spec"]["routes"].as_array().map_or(0, Vec::len);
    let t = Instant::now();
    proxies.create(&PostParams::default(), &serde_json::from_value(big)?).await?;
    valid(&proxies, "big").await?;
    let took = secs(t);
    tokio::time::sleep(Duration::from_secs(3)).await;
    rows.push((
        format!("one HTTPProxy of {:.2} MiB ({routes} routes)", bytes as f64 / 1048576.0),
        format!("{:.0} MiB (status in {took:.1} s)", rss()),
    ));
    proxies.delete("big", &DeleteParams::default()).await?;
    tokio::time::sleep(Duration::from_secs(5)).await;
    rows.push(("after it is deleted".into(), format!("{:.0} MiB", rss())));
    // Created and deleted again: memory the first one left behind is reused, not added to.
    for round in 2..=4 {
        let big = big_proxy(1 << 20);
        proxies.create(&PostParams::default(), &serde_json::from_value(big)?).await?;
        valid(&proxies, "big").await?;
        let with = rss();
        proxies.delete("big", &DeleteParams::default()).await?;
        tokio::time::sleep(Duration::from_secs(5)).await;
        rows.push((
            format!("created and deleted again ({round})"),
            format!("{with:.0} MiB with it, {:.0} MiB after", rss()),
        ));
    }
    let before = rss();

    // Small objects no route uses.
    let t = Instant::now();
    let third = objects / 3;
    create_all::<Service>(
        &client,
        third,
        |i| json!({"metadata": {"name": format!("svc-{i}")}, "spec": {"ports": [{"name": "http", "port": 80}]}}),
    )
    .await?;
    create_all::<EndpointSlice>(&client, third, |i| {
        json!({"metadata": {"name": format!("svc-{i}"), "labels": {"kubernetes.io/service-name": format!("svc-{i}")}},
            "addressType": "IPv4", "ports": [{"name": "http", "port": 8080}],
            "endpoints": [{"addresses": [format!("10.{}.{}.{}", i >> 16 & 255, i >> 8 & 255, i & 255)]}]})
    })
    .await?;
    create_all::<Secret>(&client, objects - 2 * third, |i| {
        json!({"metadata": {"name": format!("secret-{i}")}, "type": "Opaque", "data": {"token": "c2VjcmV0LXZhbHVlLW9mLTMyLWJ5dGVzLWxvbmc="}})
    })
    .await?;
    let created = secs(t);
    // A new app after them all: once its status is written, the controller has read what came
    // before (each kind's watch delivers in order).
    create_app(&client, "app-1").await?;
    valid(&proxies, "app-1").await?;
    let caught_up = secs(t);
    tokio::time::sleep(Duration::from_secs(5)).await;
    let after = rss();
    rows.push((
        format!("{objects} small objects (Services, EndpointSlices, Opaque Secrets)"),
        format!(
            "{after:.0} MiB ({:.0} bytes per object; created in {created:.0} s, read and a new app's status in {caught_up:.0} s)",
            (after - before).max(0.0) * 1048576.0 / objects as f64
        ),
    ));
    rows.push(("peak over the run".into(), format!("{:.0} MiB", testkit::usage(pid).2)));

    println!("\n| contour serve ({}) | RSS |\n|---|---|", contour.display());
    for (what, figure) in rows {
        println!("| {what} | {figure} |");
    }
    let _ = serve.start_kill();
    let _ = serve.wait().await;
    Ok(())
}

fn secs(since: Instant) -> f64 {
    since.elapsed().as_secs_f64()
}

fn httpproxies(client: &kube::Client) -> Api<DynamicObject> {
    let resource = ApiResource {
        group: "projectcontour.io".into(),
        version: "v1".into(),
        api_version: "projectcontour.io/v1".into(),
        kind: "HTTPProxy".into(),
        plural: "httpproxies".into(),
    };
    Api::namespaced_with(client.clone(), "default", &resource)
}

/// A Service, its EndpointSlice and a root HTTPProxy.
async fn create_app(client: &kube::Client, name: &str) -> anyhow::Result<()> {
    let service = json!({"metadata": {"name": name}, "spec": {"ports": [{"name": "http", "port": 80}]}});
    Api::<Service>::default_namespaced(client.clone())
        .create(&PostParams::default(), &serde_json::from_value(service)?)
        .await?;
    let proxy = json!({"apiVersion": "projectcontour.io/v1", "kind": "HTTPProxy", "metadata": {"name": name},
        "spec": {"virtualhost": {"fqdn": format!("{name}.limits.test")}, "routes": [{"services": [{"name": name, "port": 80}]}]}});
    httpproxies(client).create(&PostParams::default(), &serde_json::from_value(proxy)?).await?;
    Ok(())
}

/// A root HTTPProxy `big` with as many routes as fit in about `bytes`.
fn big_proxy(bytes: usize) -> Value {
    let route = |i: usize| {
        json!({"conditions": [{"prefix": format!("/path-{i:06}")}, {"header": {"name": "x-tenant", "exact": format!("tenant-{i}")}}],
            "services": [{"name": "app-0", "port": 80}],
            "requestHeadersPolicy": {"set": [{"name": "x-route", "value": format!("route-{i}")}]}})
    };
    let per_route = route(0).to_string().len() + 1;
    let routes: Vec<Value> = (0..bytes / per_route).map(route).collect();
    json!({"apiVersion": "projectcontour.io/v1", "kind": "HTTPProxy", "metadata": {"name": "big"},
        "spec": {"virtualhost": {"fqdn": "big.limits.test"}, "routes": routes}})
}

/// Creates `count` objects of `K` in `default`, `CONCURRENCY` at a time.
async fn create_all<K>(client: &kube::Client, count: usize, object: impl Fn(usize) -> Value) -> anyhow::Result<()>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::Serialize
        + serde::de::DeserializeOwned,
{
    let api = Api::<K>::default_namespaced(client.clone());
    futures::stream::iter((0..count).map(|i| {
        let (api, value) = (api.clone(), object(i));
        async move {
            let k: K = serde_json::from_value(value)?;
            api.create(&PostParams::default(), &k).await?;
            anyhow::Ok(())
        }
    }))
    .buffer_unordered(CONCURRENCY)
    .try_collect::<()>()
    .await
}

/// Waits until the HTTPProxy `name` has a status of `valid`.
async fn valid(proxies: &Api<DynamicObject>, name: &str) -> anyhow::Result<()> {
    let seen = testkit::eventually(STATUS_WITHIN, || async {
        let p = proxies.get(name).await.ok()?;
        (p.data["status"]["currentStatus"] == "valid").then_some(())
    })
    .await;
    anyhow::ensure!(seen.is_some(), "HTTPProxy {name}: no valid status within {STATUS_WITHIN:?}");
    eprintln!("HTTPProxy {name} valid");
    Ok(())
}
