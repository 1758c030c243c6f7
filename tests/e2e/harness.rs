//! One controller (in-process, fed from a directory exactly as `contour-serve --from-dir` is),
//! one real Envoy for one fleet, and helpers to write objects and send traffic.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use testkit::{Envoy, Request, Response};
use tokio::task::JoinHandle;
use xds_server::XdsServer;

pub const GATEWAY: &str = "default/gw";

pub struct Harness {
    pub server: XdsServer,
    pub counters: std::sync::Arc<controller::Counters>,
    /// Where the xDS server listens.
    pub xds_port: u16,
    /// The status writer's counters, in Kubernetes mode.
    pub status: Option<std::sync::Arc<status::Counters>>,
    pub envoy: Envoy,
    /// The relay between Envoy and the xDS server, when asked for.
    pub relay: Option<testkit::Relay>,
    dir: PathBuf,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for Harness {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// How [`Harness::launch`] runs.
struct Launch<'a> {
    delta: bool,
    /// The server sends Delta Envoys plain-HTTP virtual hosts over VHDS.
    vhds: bool,
    status_client: Option<kube::Client>,
    /// What the Kubernetes source saw of statuses, shared with the status writer.
    seen: Option<store::StatusSeen>,
    fleet: &'a str,
    tls: Option<XdsMtls>,
    options: controller::Options,
    envoy: EnvoySide,
}

impl Default for Launch<'_> {
    fn default() -> Self {
        Self {
            delta: false,
            vhds: false,
            status_client: None,
            seen: None,
            fleet: GATEWAY,
            tls: None,
            options: Default::default(),
            envoy: EnvoySide::default(),
        }
    }
}

/// Bootstrap settings and plumbing on Envoy's side of xDS.
#[derive(Default)]
pub struct EnvoySide {
    /// The overload manager's limits.
    pub overload: bootstrap::Overload,
    /// With mTLS: reference the certificates through SDS files in this directory (relative to
    /// Envoy's own directory), as `contour-bootstrap --resources-dir` does.
    pub resources_dir: Option<PathBuf>,
    /// Connect Envoy to the xDS server through a [`testkit::Relay`] the test can cut.
    pub relay: bool,
    /// The relay starts blocked ([`testkit::Relay::block`]).
    pub relay_blocked: bool,
}

/// A fresh API server with the Gateway API CRDs installed, and a client of it.
pub async fn gateway_api_server() -> anyhow::Result<(testkit::ApiServer, kube::Client)> {
    let api = testkit::ApiServer::start().await?;
    api.install_gateway_api().await?;
    let client = api.client().await?;
    Ok((api, client))
}

/// Pipeline settings for the default fleet (HTTPProxy, Ingress) on loopback ports.
pub fn default_fleet_options(http_port: u16, https_port: u16) -> controller::Options {
    controller::Options {
        httpproxy: frontends::httpproxy::Options { http_port, https_port, ..Default::default() },
        ingress: frontends::ingress::Options { http_port, https_port, ..Default::default() },
        compile: xds::CompileOptions { default_address: std::net::Ipv4Addr::LOCALHOST.into(), ..Default::default() },
        ..Default::default()
    }
}

/// Both sides of mTLS on xDS.
pub struct XdsMtls {
    /// The controller's certificates.
    pub server: std::sync::Arc<xds_server::Reloading>,
    /// Envoy's client certificate files, as the bootstrap references them.
    pub envoy: bootstrap::XdsTls,
}

/// Objects for one HTTP listener on `port` whose every request goes to the backend `web` at
/// `backend`.
pub fn single_route(port: u16, backend: SocketAddr) -> String {
    [
        gateway(&http_listener("http", port)),
        service("web", &[backend]),
        http_route("web", "  rules: [{backendRefs: [{name: web, port: 80}]}]"),
    ]
    .concat()
}

/// A GatewayClass and a Gateway `default/gw` bound to 127.0.0.1 with the given listeners (YAML
/// list items, indented by 2).
pub fn gateway(listeners: &str) -> String {
    let class = "apiVersion: gateway.networking.k8s.io/v1\nkind: GatewayClass\nmetadata: {name: contour}\nspec: {controllerName: projectcontour.io/gateway-controller}\n";
    format!("{class}{}", gateway_in("default", listeners))
}

/// A Gateway `<namespace>/gw` of class `contour` bound to 127.0.0.1 with the given listeners.
pub fn gateway_in(namespace: &str, listeners: &str) -> String {
    format!(
        r#"---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {{name: gw, namespace: {namespace}}}
spec:
  gatewayClassName: contour
  addresses: [{{type: IPAddress, value: 127.0.0.1}}]
  listeners:
{listeners}
"#
    )
}

/// An Envoy of `fleet` (a Delta one when `delta`) fed by the xDS server on 127.0.0.1 `xds_port`.
pub async fn fleet_envoy(xds_port: u16, fleet: &str, delta: bool) -> anyhow::Result<Envoy> {
    Envoy::start(bootstrap::Bootstrap {
        xds_address: "127.0.0.1".into(),
        xds_port,
        fleet: fleet.into(),
        node_id: format!("{}-{xds_port}", fleet.replace('/', "-")),
        delta,
        ..Default::default()
    })
    .await
}

/// An ExtensionService `default/<name>` speaking h2c to port 80 of the Service `service`.
pub fn extension_service(name: &str, service: &str) -> String {
    format!(
        "---\napiVersion: projectcontour.io/v1alpha1\nkind: ExtensionService\nmetadata: {{name: {name}, namespace: default}}\nspec: {{protocol: h2c, services: [{{name: {service}, port: 80}}]}}\n"
    )
}

/// A Service `name` (port 80) whose endpoints are the given addresses (possibly none).
pub fn service(name: &str, endpoints: &[SocketAddr]) -> String {
    service_in("default", name, endpoints)
}

/// [`service`] in `namespace`.
pub fn service_in(namespace: &str, name: &str, endpoints: &[SocketAddr]) -> String {
    let port = endpoints.first().map(|a| a.port()).unwrap_or(1);
    let addresses: Vec<String> = endpoints.iter().map(|a| format!("- addresses: [{}]", a.ip())).collect();
    let endpoints = if addresses.is_empty() {
        "endpoints: []".to_string()
    } else {
        format!("endpoints:\n{}", addresses.join("\n"))
    };
    format!(
        r#"---
apiVersion: v1
kind: Service
metadata: {{name: {name}, namespace: {namespace}}}
spec: {{ports: [{{name: http, port: 80}}]}}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {{name: {name}-1, namespace: {namespace}, labels: {{kubernetes.io/service-name: {name}}}}}
addressType: IPv4
ports: [{{name: http, port: {port}}}]
{endpoints}
"#
    )
}

/// Installs the project's CRDs (`deploy/crds`: HTTPProxy, ExtensionService and the others) on `api`.
pub async fn install_contour_crds(api: &testkit::ApiServer) -> anyhow::Result<()> {
    api.install_crds(std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/crds"))).await
}

/// Creates the Envoy Service `default/envoy` (type LoadBalancer) with `ip` as its load-balancer
/// address, as a cloud controller would.
pub async fn envoy_service_with_address(client: &kube::Client, ip: &str) -> anyhow::Result<()> {
    let yaml = "apiVersion: v1\nkind: Service\nmetadata: {name: envoy, namespace: default}\nspec: {type: LoadBalancer, ports: [{name: http, port: 80}]}\n";
    testkit::apply_yaml(client, yaml).await?;
    let lb = serde_json::json!({"loadBalancer": {"ingress": [{"ip": ip}]}});
    testkit::set_status(client, "v1", "Service", "default", "envoy", lb).await
}

impl Harness {
    /// Starts the controller on `yaml` (read from a directory, as `--from-dir`) and an Envoy for
    /// the `default/gw` fleet.
    pub async fn start(yaml: &str, delta: bool) -> anyhow::Result<Self> {
        Self::from_dir(yaml, Launch { delta, ..Launch::default() }).await
    }

    /// [`Harness::start`] with a Delta Envoy that gets its plain-HTTP virtual hosts over VHDS
    /// (`contour-serve --vhds=true`).
    pub async fn start_vhds(yaml: &str) -> anyhow::Result<Self> {
        Self::from_dir(yaml, Launch { delta: true, vhds: true, ..Launch::default() }).await
    }

    /// [`Harness::start`] with mTLS on xDS: the server uses `tls.server`, Envoy `tls.envoy`.
    pub async fn start_mtls(yaml: &str, tls: XdsMtls) -> anyhow::Result<Self> {
        Self::start_envoy_side(yaml, Default::default(), Some(tls), EnvoySide::default()).await
    }

    /// [`Harness::start`] with pipeline `options`, mTLS (when given) and `envoy`'s bootstrap
    /// settings.
    pub async fn start_envoy_side(
        yaml: &str,
        options: controller::Options,
        tls: Option<XdsMtls>,
        envoy: EnvoySide,
    ) -> anyhow::Result<Self> {
        Self::from_dir(yaml, Launch { tls, envoy, options, ..Launch::default() }).await
    }

    /// Starts the controller on `yaml` and an Envoy of the default fleet (`contour`), which
    /// serves HTTPProxy and Ingress on 127.0.0.1 `http_port` and `https_port`.
    pub async fn start_default_fleet(yaml: &str, http_port: u16, https_port: u16) -> anyhow::Result<Self> {
        Self::start_with(yaml, ir::DEFAULT_FLEET, default_fleet_options(http_port, https_port)).await
    }

    /// Starts the controller on `yaml` with `options`, mTLS on xDS, and an Envoy of `fleet`.
    pub async fn start_fleet_mtls(
        yaml: &str,
        fleet: &str,
        options: controller::Options,
        tls: XdsMtls,
    ) -> anyhow::Result<Self> {
        Self::from_dir(yaml, Launch { fleet, options, tls: Some(tls), ..Launch::default() }).await
    }

    /// Starts the controller on `yaml` with `options` and an Envoy of `fleet`.
    pub async fn start_with(yaml: &str, fleet: &str, options: controller::Options) -> anyhow::Result<Self> {
        Self::from_dir(yaml, Launch { fleet, options, ..Launch::default() }).await
    }

    /// Starts the controller watching a cluster (as `contour-serve` without `--from-dir`) and
    /// an Envoy for the `default/gw` fleet.
    pub async fn start_kubernetes(client: kube::Client, delta: bool) -> anyhow::Result<Self> {
        Self::start_kubernetes_with(client, Vec::new(), GATEWAY, delta).await
    }

    /// [`Harness::start_kubernetes`] on Delta xDS, Envoy connected through a relay the test can
    /// block ([`Harness::relay`]); blocked from the start, Envoy cannot connect until it is
    /// unblocked.
    pub async fn start_kubernetes_relayed(client: kube::Client, blocked: bool) -> anyhow::Result<Self> {
        let envoy = EnvoySide { relay: true, relay_blocked: blocked, ..Default::default() };
        let launch = Launch { delta: true, status_client: Some(client), envoy, ..Launch::default() };
        Self::watch_cluster(Vec::new(), launch).await
    }

    /// [`Harness::start_kubernetes`] watching only `namespaces`, with Envoy in `fleet`.
    pub async fn start_kubernetes_with(
        client: kube::Client,
        namespaces: Vec<String>,
        fleet: &str,
        delta: bool,
    ) -> anyhow::Result<Self> {
        let launch = Launch { delta, status_client: Some(client), fleet, ..Launch::default() };
        Self::watch_cluster(namespaces, launch).await
    }

    /// Starts the controller watching a cluster, writing status, with an Envoy of the default
    /// fleet serving HTTPProxy and Ingress on 127.0.0.1 `http_port` and `https_port`.
    pub async fn start_kubernetes_default_fleet(
        client: kube::Client,
        http_port: u16,
        https_port: u16,
    ) -> anyhow::Result<Self> {
        let options = default_fleet_options(http_port, https_port);
        let launch = Launch { status_client: Some(client), fleet: ir::DEFAULT_FLEET, options, ..Launch::default() };
        Self::watch_cluster(Vec::new(), launch).await
    }

    /// Kubernetes mode with Envoy in the Gateway's fleet on Delta xDS, and the default fleet's
    /// listeners on 127.0.0.1 `http_port` and `https_port` for a second Envoy ([`fleet_envoy`]).
    pub async fn start_kubernetes_gateway_and_default(
        client: kube::Client,
        http_port: u16,
        https_port: u16,
    ) -> anyhow::Result<Self> {
        let options = default_fleet_options(http_port, https_port);
        let launch = Launch { delta: true, status_client: Some(client), options, ..Launch::default() };
        Self::watch_cluster(Vec::new(), launch).await
    }

    /// A directory source (as `--from-dir`) holding `yaml`, then [`Harness::launch`].
    async fn from_dir(yaml: &str, launch: Launch<'_>) -> anyhow::Result<Self> {
        let dir = std::env::temp_dir().join(format!("contour-e2e-{}-{}", std::process::id(), testkit::free_port()));
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join("objects.yaml"), yaml)?;
        let store = store::Store::new();
        let source = tokio::spawn(store::DirectorySource::new(&dir).run(store.clone(), Duration::from_secs(30)));
        Self::launch(store, source, dir, launch).await
    }

    /// The Kubernetes source for `launch.status_client`'s cluster, then [`Harness::launch`].
    async fn watch_cluster(namespaces: Vec<String>, mut launch: Launch<'_>) -> anyhow::Result<Self> {
        let client = launch.status_client.clone().expect("a cluster to watch");
        let store = store::Store::new();
        let seen = store::StatusSeen::of_kinds(&status::KINDS);
        launch.seen = Some(seen.clone());
        let source = store::KubernetesSource::new(client, namespaces)
            .keep_service_status(objects::ObjectKey::new("default", "envoy"))
            .status_seen(seen);
        let watching = store.clone();
        let source = tokio::spawn(async move {
            if let Err(e) = source.run(watching).await {
                eprintln!("Kubernetes source stopped: {e}");
            }
        });
        let dir = std::env::temp_dir().join(format!("contour-e2e-{}-{}", std::process::id(), testkit::free_port()));
        std::fs::create_dir_all(&dir)?;
        Self::launch(store, source, dir, launch).await
    }

    async fn launch(
        store: store::Store,
        source: JoinHandle<()>,
        dir: PathBuf,
        launch: Launch<'_>,
    ) -> anyhow::Result<Self> {
        let Launch { delta, vhds, status_client, seen, fleet, tls, mut options, envoy } = launch;
        options.compile.vhds = vhds;
        let server = XdsServer::new(xds_server::Options { vhds, ..Default::default() });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let xds_port = listener.local_addr()?.port();
        let mut tasks = vec![source];
        let httpproxy = options.httpproxy.clone();
        let controller = controller::Controller::new(options, server.clone());
        let counters = controller.counters();
        let mut status_counters = None;
        if let Some(client) = status_client {
            let leadership = election::Leadership::always();
            // The Envoy Service of these tests is `default/envoy`.
            let ingress = status::IngressStatusOptions {
                envoy_service: Some(objects::ObjectKey::new("default", "envoy")),
                ..Default::default()
            };
            let options = status::Options { ingress, httpproxy, seen, ..Default::default() };
            let (writer, counters) = status::spawn(client, controller.published(), server.clone(), options, leadership);
            tasks.push(writer);
            status_counters = Some(counters);
        }
        tasks.push(tokio::spawn(controller.run(store.clone())));
        let serving = server.clone();
        let (server_tls, envoy_tls) = match tls {
            Some(t) => (Some(t.server), Some(t.envoy)),
            None => (None, None),
        };
        tasks.push(tokio::spawn(async move {
            let _ = match server_tls {
                Some(tls) => xds_server::serve_tls(serving, listener, tls, std::future::pending()).await,
                None => xds_server::serve(serving, listener, std::future::pending()).await,
            };
        }));

        let relay = match envoy.relay {
            true => Some(testkit::Relay::start(SocketAddr::from(([127, 0, 0, 1], xds_port))).await?),
            false => None,
        };
        if let Some(relay) = relay.as_ref().filter(|_| envoy.relay_blocked) {
            relay.block();
        }
        let envoy = Envoy::start(bootstrap::Bootstrap {
            xds_address: "127.0.0.1".into(),
            xds_port: relay.as_ref().map_or(xds_port, |r| r.addr.port()),
            fleet: fleet.into(),
            node_id: format!("e2e-{xds_port}"),
            delta,
            tls: envoy_tls,
            resources_dir: envoy.resources_dir,
            overload: envoy.overload,
            ..Default::default()
        })
        .await?;
        Ok(Self { server, counters, status: status_counters, envoy, relay, xds_port, dir, tasks })
    }

    /// Replaces every object with those in `yaml`, as an editor saving the file would.
    pub fn write(&self, yaml: &str) -> anyhow::Result<()> {
        let tmp = self.dir.join(".objects.yaml.tmp");
        std::fs::write(&tmp, yaml)?;
        std::fs::rename(&tmp, self.dir.join("objects.yaml"))?;
        Ok(())
    }

    /// Waits until a request gets an answer `accept` likes; returns it. Fails after 15 s.
    pub async fn until(
        &self,
        port: u16,
        req: &Request,
        accept: impl Fn(&Response) -> bool,
    ) -> anyhow::Result<Response> {
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
        loop {
            let r = testkit::request(addr, req).await;
            if let Ok(r) = &r
                && accept(r)
            {
                return Ok(r.clone());
            }
            if tokio::time::Instant::now() >= deadline {
                anyhow::bail!("no acceptable answer for {req:?}; last: {r:?}\nenvoy log:\n{}", self.envoy.log());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until an HTTPS request to 127.0.0.1 `port` with SNI `sni`, trusting only `ca_pem`
    /// (and presenting `client` when given), gets any answer; fails after 15 s with Envoy's log.
    pub async fn until_tls(
        &self,
        port: u16,
        sni: &str,
        ca_pem: &str,
        client: Option<&testkit::Issued>,
        req: &Request,
    ) -> anyhow::Result<Response> {
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let answer = testkit::eventually(Duration::from_secs(15), || async {
            match client {
                Some(c) => testkit::request_mtls(addr, sni, ca_pem, c, req).await.ok(),
                None => testkit::request_tls(addr, sni, ca_pem, req).await.ok(),
            }
        })
        .await;
        answer.ok_or_else(|| anyhow::anyhow!("no TLS answer for {sni}; envoy log:\n{}", self.envoy.log()))
    }

    /// Sends one request to the Gateway listener on `port`.
    pub async fn get(&self, port: u16, req: &Request) -> anyhow::Result<Response> {
        testkit::request(SocketAddr::from(([127, 0, 0, 1], port)), req).await
    }

    /// Every test ends here: the controller saw no NACK and Envoy rejected no update.
    pub async fn assert_no_nacks(&self) -> anyhow::Result<()> {
        let stats = self.server.stats();
        anyhow::ensure!(stats.nacks_total() == 0, "controller counted NACKs: {:?}", stats.nacks);
        let rejected = self.envoy.rejected_updates().await?;
        anyhow::ensure!(rejected == 0, "Envoy rejected {rejected} updates; log:\n{}", self.envoy.log());
        Ok(())
    }
}

/// An HTTP listener item for [`gateway`].
pub fn http_listener(name: &str, port: u16) -> String {
    format!("  - {{name: {name}, port: {port}, protocol: HTTP, allowedRoutes: {{namespaces: {{from: All}}}}}}")
}

/// An HTTPRoute attached to `default/gw`, with `spec` lines after parentRefs (indented by 2).
pub fn http_route(name: &str, spec: &str) -> String {
    format!(
        r#"---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {{name: {name}, namespace: default}}
spec:
  parentRefs: [{{name: gw}}]
{spec}
"#
    )
}

/// A RouteConfiguration Envoy must reject (its regex does not compile), named `name`.
pub fn rejected_route_config(name: &str) -> xds::Resource {
    use envoy_types::pb::envoy::config::route::v3 as r;
    xds::Resource::new(
        name,
        r::RouteConfiguration {
            name: name.into(),
            virtual_hosts: vec![broken_virtual_host("broken")],
            ..Default::default()
        },
    )
}

/// The same for a Delta Envoy: the catch-all virtual host of route configuration `name`, over
/// VHDS (`<name>/*`).
pub fn rejected_virtual_host(name: &str) -> xds::Resource {
    let name = format!("{name}/*");
    xds::Resource::new(&name.clone(), broken_virtual_host(&name))
}

fn broken_virtual_host(name: &str) -> envoy_types::pb::envoy::config::route::v3::VirtualHost {
    use envoy_types::pb::envoy::config::route::v3 as r;
    use envoy_types::pb::envoy::r#type::matcher::v3::RegexMatcher;
    let broken = r::Route {
        r#match: Some(r::RouteMatch {
            path_specifier: Some(r::route_match::PathSpecifier::SafeRegex(RegexMatcher {
                regex: "(unclosed".into(),
                ..Default::default()
            })),
            ..Default::default()
        }),
        action: Some(r::route::Action::DirectResponse(r::DirectResponseAction { status: 418, ..Default::default() })),
        ..Default::default()
    };
    r::VirtualHost { name: name.into(), domains: vec!["*".into()], routes: vec![broken], ..Default::default() }
}

/// `contour serve` as a user runs it (through the `contour` command, with `CONTOUR_NAMESPACE`
/// set, as upstream's manifests do): standalone on a directory holding `objects`, with
/// contour.yaml `config` when given, every port its own, the default fleet's listeners on
/// 127.0.0.1.
pub struct Serve {
    pub child: tokio::process::Child,
    pub xds: u16,
    pub stats: u16,
    /// The default fleet's HTTPS port.
    pub https: u16,
    /// contour-serve's own `/metrics` and its health server.
    pub metrics: u16,
    pub health: u16,
    /// The default fleet's HTTP port.
    pub http: u16,
    /// contour-serve's debug server (`/debug/dag`), at its default address.
    pub debug: u16,
    dir: PathBuf,
}

impl Serve {
    pub fn start(objects: &str, config: Option<&str>, args: &[&str]) -> anyhow::Result<Self> {
        let port = testkit::free_port;
        let (xds, metrics, stats, http, https, health, debug) =
            (port(), port(), port(), port(), port(), port(), port());
        let dir = std::env::temp_dir().join(format!("contour-serve-{}-{xds}", std::process::id()));
        let objects_dir = dir.join("objects");
        std::fs::create_dir_all(&objects_dir)?;
        std::fs::write(objects_dir.join("objects.yaml"), objects)?;
        let mut command = tokio::process::Command::new(testkit::workspace_binary("contour")?);
        command
            .arg("serve")
            .arg(format!("--from-dir={}", objects_dir.display()))
            .args(["--insecure", &format!("--xds-port={xds}"), "--http-address=127.0.0.1"])
            .args([&format!("--http-port={metrics}"), "--health-address=127.0.0.1", &format!("--health-port={health}")])
            .args([
                &format!("--debug-http-port={debug}"),
                "--stats-address=127.0.0.1",
                &format!("--stats-port={stats}"),
            ])
            .args(["--envoy-service-http-address=127.0.0.1", "--envoy-service-https-address=127.0.0.1"])
            .args([&format!("--envoy-service-http-port={http}"), &format!("--envoy-service-https-port={https}")])
            .args(args)
            .env("CONTOUR_NAMESPACE", "projectcontour")
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(dir.join("serve.log"))?)
            .kill_on_drop(true);
        if let Some(config) = config {
            let path = dir.join("contour.yaml");
            std::fs::write(&path, config)?;
            command.arg(format!("--config-path={}", path.display()));
        }
        let child = command.spawn()?;
        Ok(Self { child, xds, stats, http, https, metrics, health, debug, dir })
    }

    /// An Envoy of upstream's manifests (node cluster `projectcontour`: the default fleet).
    pub async fn envoy(&self) -> anyhow::Result<Envoy> {
        Envoy::start(bootstrap::Bootstrap { xds_port: self.xds, fleet: "projectcontour".into(), ..Default::default() })
            .await
    }

    /// What the controller logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("serve.log")).unwrap_or_default()
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
