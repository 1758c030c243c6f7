//! `contour-serve`: the controller and xDS server.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use tracing::info;

mod envoy;
mod settings;

/// Watches Gateway API objects and programs Envoy over xDS.
#[derive(Debug, Parser)]
#[command(name = "contour-serve", version)]
struct Args {
    /// Read objects from YAML files in this directory (standalone mode) instead of Kubernetes.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["kubeconfig", "incluster", "watch_namespaces"])]
    from_dir: Option<PathBuf>,
    /// contour.yaml with upstream's keys; flags override it.
    #[arg(short = 'c', long, value_name = "PATH", conflicts_with = "contour_config_name")]
    config_path: Option<PathBuf>,
    /// The ContourConfiguration (in the Lease namespace, $CONTOUR_NAMESPACE) to read settings from;
    /// flags override it.
    #[arg(long, value_name = "NAME")]
    contour_config_name: Option<String>,
    /// Kubeconfig of the cluster to watch (default: in-cluster, then $KUBECONFIG, then ~/.kube/config).
    #[arg(long, env = "KUBECONFIG", value_name = "PATH")]
    kubeconfig: Option<PathBuf>,
    /// Use the in-cluster service account, ignoring any kubeconfig.
    #[arg(long)]
    incluster: bool,
    /// Ingress classes served (comma-separated); unset: Ingresses without a class or of class `contour`.
    #[arg(long, value_delimiter = ',')]
    ingress_class_name: Vec<String>,
    /// Addresses written to Ingress status instead of the Envoy Service's (comma-separated).
    #[arg(long, value_delimiter = ',')]
    ingress_status_address: Vec<String>,
    /// The Envoy Service whose load-balancer addresses go to Ingress status.
    #[arg(long, default_value = "envoy")]
    envoy_service_name: String,
    /// The Envoy Service's namespace.
    #[arg(long, env = "CONTOUR_NAMESPACE", default_value = "projectcontour")]
    envoy_service_namespace: String,
    /// Address of Envoy's stats and health listener (`/ready`, `/stats`, `/stats/prometheus`).
    #[arg(long, default_value = "0.0.0.0")]
    stats_address: IpAddr,
    /// Port of Envoy's stats and health listener.
    #[arg(long, default_value_t = 8002)]
    stats_port: u16,
    /// Loopback port of Envoy's read-only admin listener (contour.yaml `network.admin-port`).
    #[arg(skip = 9001u16)]
    envoy_admin_port: u16,
    /// Namespaces where root HTTPProxies may live (comma-separated); unset: every namespace.
    #[arg(long, value_delimiter = ',')]
    root_namespaces: Vec<String>,
    /// Ignore `permitInsecure` on HTTPProxy routes (contour.yaml `disablePermitInsecure`).
    #[arg(skip)]
    disable_permit_insecure: bool,
    /// Keep repeated slashes in request paths (contour.yaml `disableMergeSlashes`).
    #[arg(skip)]
    disable_merge_slashes: bool,
    /// The certificate for TLS clients without SNI (contour.yaml `tls.fallback-certificate`).
    #[arg(skip)]
    fallback_certificate: Option<ir::ObjectRef>,
    /// Watch only these namespaces (comma-separated); allows namespaced RBAC.
    #[arg(long, value_delimiter = ',')]
    watch_namespaces: Vec<String>,
    /// Address the xDS server listens on.
    #[arg(long, default_value = "127.0.0.1")]
    xds_address: IpAddr,
    /// Port the xDS server listens on.
    #[arg(long, default_value_t = 8001)]
    xds_port: u16,
    /// CA bundle that signed Envoy's client certificates (mTLS on xDS).
    #[arg(long, env = "CONTOUR_CAFILE", requires_all = ["contour_cert_file", "contour_key_file"], conflicts_with = "insecure")]
    contour_cafile: Option<PathBuf>,
    /// The xDS server's certificate.
    #[arg(long, env = "CONTOUR_CERT_FILE", requires = "contour_cafile")]
    contour_cert_file: Option<PathBuf>,
    /// The xDS server's key.
    #[arg(long, env = "CONTOUR_KEY_FILE", requires = "contour_cafile")]
    contour_key_file: Option<PathBuf>,
    /// Serve xDS without TLS (say so explicitly; local use and tests). Fleets are then not
    /// isolated from each other: any Envoy may receive any fleet.
    #[arg(long)]
    insecure: bool,
    /// The trust domain of fleet identities in Envoys' client certificates
    /// (`spiffe://<trust domain>/ns/<namespace>/gateway/<name>`; ours, not upstream's).
    #[arg(long, default_value = xds_server::DEFAULT_TRUST_DOMAIN)]
    xds_trust_domain: String,
    /// Address Envoy binds for listeners whose Gateway requests no address.
    #[arg(long, default_value = "0.0.0.0")]
    envoy_service_http_address: IpAddr,
    /// Port of the default fleet's HTTP listener (Ingress and HTTPProxy).
    #[arg(long, default_value_t = 8080)]
    envoy_service_http_port: u16,
    /// Address of the default fleet's HTTPS listener.
    #[arg(long, default_value = "0.0.0.0")]
    envoy_service_https_address: IpAddr,
    /// Port of the default fleet's HTTPS listener.
    #[arg(long, default_value_t = 8443)]
    envoy_service_https_port: u16,
    /// Address of the metrics server (`/metrics`).
    #[arg(long, default_value = "0.0.0.0")]
    http_address: IpAddr,
    /// Port of the metrics server.
    #[arg(long, default_value_t = 8000)]
    http_port: u16,
    /// Address of the health server (`/healthz`, `/readyz`); shared with metrics when equal.
    #[arg(long, default_value = "0.0.0.0")]
    health_address: IpAddr,
    /// Port of the health server.
    #[arg(long, default_value_t = 8000)]
    health_port: u16,
    /// Address of the debug server (`/debug/dag`).
    #[arg(long, default_value = "127.0.0.1")]
    debug_http_address: IpAddr,
    /// Port of the debug server.
    #[arg(long, default_value_t = 6060)]
    debug_http_port: u16,
    /// GatewayClasses with this controllerName are reconciled.
    #[arg(long, default_value = frontends::gateway_api::DEFAULT_CONTROLLER_NAME)]
    gateway_controller_name: String,
    /// Gateway fleets are host processes (the provisioner's host mode): their listeners, stats
    /// and admin listeners bind to the Gateway's own address.
    #[arg(long)]
    gateway_host_mode: bool,
    /// Upstream's static Gateway mode (contour.yaml `gateway.gatewayRef`): this Gateway alone is
    /// served, by the default fleet.
    #[arg(skip)]
    gateway_ref: Option<objects::ObjectKey>,
    /// Write status without a Lease (a single replica).
    #[arg(long)]
    disable_leader_election: bool,
    /// How long a leader's Lease is valid without renewal.
    #[arg(long, default_value = "15s", value_parser = duration)]
    leader_election_lease_duration: Duration,
    /// How long the leader retries renewing before it stops leading.
    #[arg(long, default_value = "10s", value_parser = duration)]
    leader_election_renew_deadline: Duration,
    /// How often replicas try to acquire or renew the Lease.
    #[arg(long, default_value = "2s", value_parser = duration)]
    leader_election_retry_period: Duration,
    /// The Lease name.
    #[arg(long, default_value = "leader-elect")]
    leader_election_resource_name: String,
    /// The Lease namespace.
    #[arg(long, env = "CONTOUR_NAMESPACE", default_value = "projectcontour")]
    leader_election_resource_namespace: String,
    /// This replica's identity in the Lease. Without it, upstream's: the pod's name (`$POD_NAME`,
    /// else `$HOSTNAME`), an underscore and a random UUID.
    #[arg(long)]
    leader_election_identity: Option<String>,
    /// Quiet time after a change before rebuilding (such as 100ms).
    #[arg(long, default_value = "100ms", value_parser = duration)]
    rebuild_holdoff: Duration,
    /// The longest a rebuild is held back while changes keep coming.
    #[arg(long, default_value = "500ms", value_parser = duration)]
    rebuild_holdoff_max: Duration,
    /// Delta Envoys get plain-HTTP virtual hosts over VHDS (`true`), or inline in the route
    /// configuration (`false`, the default: Envoy applies a change faster).
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set)]
    vhds: bool,
    /// How often the directory is re-read even without change events.
    #[arg(long, default_value = "30s", value_parser = duration)]
    resync_period: Duration,
    /// Log format.
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    log_format: String,
    /// Kinds not to watch, as upstream: extensionservices, tlsroutes, grpcroutes, tcproutes,
    /// backendtlspolicies (repeatable or comma-separated).
    #[arg(long, value_delimiter = ',', value_parser = ["extensionservices", "tlsroutes", "grpcroutes", "tcproutes", "backendtlspolicies"])]
    disable_feature: Vec<String>,
    /// Log the Kubernetes client's requests: 0 off, 1-5 debug, 6 and more trace.
    #[arg(long, default_value_t = 0)]
    kubernetes_debug: u32,
    /// Requests a second this client sends the API server, on average (unset: not throttled;
    /// set with no burst: a burst of 10, client-go's).
    #[arg(long, value_name = "QPS")]
    kubernetes_client_qps: Option<f32>,
    /// Requests the client may send at once above --kubernetes-client-qps (unset: not throttled;
    /// set with no QPS: 5 a second, client-go's).
    #[arg(long, value_name = "N")]
    kubernetes_client_burst: Option<u32>,
    /// Where Envoy writes the access log of plain-HTTP listeners (default /dev/stdout).
    #[arg(long, value_name = "PATH")]
    envoy_http_access_log: Option<String>,
    /// Where Envoy writes the access log of TLS listeners (default /dev/stdout).
    #[arg(long, value_name = "PATH")]
    envoy_https_access_log: Option<String>,
    /// Access log format: envoy (Envoy's text line, the default) or json.
    #[arg(long, value_parser = ["envoy", "json"])]
    accesslog_format: Option<String>,
    /// Expect a PROXY protocol header (v1 or v2) on every connection to Envoy's listeners.
    #[arg(long)]
    use_proxy_protocol: bool,
    /// Envoy's traffic listeners, from contour.yaml, the ContourConfiguration and the flags above.
    #[arg(skip)]
    listener: xds::ListenerOptions,
    /// contour-serve's `/metrics` over HTTPS: certificate, key and the client CA, if any
    /// (`metrics.contour`'s files).
    #[arg(skip)]
    metrics_tls: Option<(PathBuf, PathBuf, Option<PathBuf>)>,
    /// Envoy's statistics on their own address or over HTTPS (`metrics.envoy`).
    #[arg(skip)]
    envoy_metrics: Option<xds::MetricsListener>,
    /// A readiness listener the overload manager's limit applies to (`omEnforcedHealthListener`).
    #[arg(skip)]
    om_enforced_health: Option<SocketAddr>,
    /// Envoy's client certificate towards TLS backends (contour.yaml `tls.envoy-client-certificate`).
    #[arg(skip)]
    envoy_client_certificate: Option<ir::ObjectRef>,
    /// ExternalName Services may be backends (contour.yaml `enableExternalNameService`).
    #[arg(skip)]
    enable_external_name_service: bool,
    /// The authorization server of every virtual host that names none (contour.yaml
    /// `globalExtAuth`, the ContourConfiguration's `spec.globalExtAuth`).
    #[arg(skip)]
    global_ext_auth: Option<api::httpproxy::AuthorizationServer>,
    /// The rate-limit service (contour.yaml `rateLimitService`, `spec.rateLimitService`) and the
    /// default global rate limit policy of virtual hosts.
    #[arg(skip)]
    rate_limit_service: Option<(xds::RateLimitService, Option<api::httpproxy::GlobalRateLimitPolicy>)>,
    /// The GeoIP databases (contour.yaml `geoIP`, `spec.geoIP`).
    #[arg(skip)]
    geoip: Option<ir::GeoDatabases>,
    /// Spans to an OpenTelemetry collector (contour.yaml `tracing`, `spec.tracing`).
    #[arg(skip)]
    tracing: Option<xds::Tracing>,
    /// HTTPProxy routes get statistics of their own (`spec.envoy.enableStatPrefix`).
    #[arg(skip)]
    enable_stat_prefix: bool,
    /// The global header policy (contour.yaml `policy`).
    #[arg(skip)]
    default_headers: Option<std::sync::Arc<frontends::DefaultHeaders>>,
    /// The global header policy applies to Ingress too (`policy.applyToIngress`).
    #[arg(skip)]
    default_headers_on_ingress: bool,
    /// Envoy's upstream clusters, from contour.yaml and the ContourConfiguration.
    #[arg(skip)]
    cluster: xds::ClusterOptions,
    /// Log at debug level.
    #[arg(short, long)]
    debug: bool,
}

fn duration(text: &str) -> Result<Duration, String> {
    frontends::gateway_api::parse_duration_ms(text)
        .map(Duration::from_millis)
        .ok_or_else(|| format!("{text:?} is not a duration such as 100ms, 5s or 1m"))
}

fn main() -> anyhow::Result<()> {
    use clap::{CommandFactory, FromArgMatches};
    one_malloc_arena();
    let matches = Args::command().get_matches();
    let mut args = Args::from_arg_matches(&matches)?;
    let explicit: settings::Explicit = matches
        .ids()
        .filter(|id| {
            matches!(
                matches.value_source(id.as_str()),
                Some(clap::parser::ValueSource::CommandLine | clap::parser::ValueSource::EnvVariable)
            )
        })
        .map(|id| id.to_string())
        .collect();
    settings::apply_file(&mut args, &explicit)?;
    // One TLS implementation everywhere: ring.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        let base = if args.debug { "debug" } else { "info" };
        match args.kubernetes_debug {
            0 => tracing_subscriber::EnvFilter::new(base),
            1..=5 => tracing_subscriber::EnvFilter::new(format!("{base},kube_client=debug")),
            _ => tracing_subscriber::EnvFilter::new(format!("{base},kube_client=trace,hyper_util=debug")),
        }
    });
    // Colour only for a terminal: a log file or a pipe gets plain text.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let logs = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(ansi);
    if args.log_format == "json" {
        logs.json().init();
    } else {
        logs.init();
    }
    tokio::runtime::Builder::new_multi_thread().enable_all().build()?.block_on(run(args, explicit))
}

/// glibc gives every thread that allocates an arena of its own, up to eight per core, and
/// memory freed in one arena serves no other. The controller's work is one pipeline at a time,
/// so one arena is enough: peak RSS at 10k HTTPProxies drops from about 290 to 257 MiB with the
/// same CPU. glibc reads `MALLOC_ARENA_MAX` only at start, so the process starts itself again
/// with it set, once; a value already in the environment decides, and so does a failed exec.
/// The mmap threshold is fixed at glibc's default on the same start.
fn one_malloc_arena() {
    use std::os::unix::process::CommandExt;
    if !cfg!(target_env = "gnu") || std::env::var_os("MALLOC_ARENA_MAX").is_some() {
        return;
    }
    let Ok(exe) = std::env::current_exe() else { return };
    let mut args = std::env::args_os();
    let mut command = std::process::Command::new(exe);
    if let Some(arg0) = args.next() {
        command.arg0(arg0);
    }
    command.args(args).env("MALLOC_ARENA_MAX", "1");
    // A fixed mmap threshold: glibc otherwise raises it after freeing a large block, so the
    // large buffers of a build (encoded route tables, watch pages) come from the heap and
    // leave holes in it. About 10 MiB less RSS at 10k HTTPProxies.
    if std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_none() {
        command.env("MALLOC_MMAP_THRESHOLD_", "131072");
    }
    let _ = command.exec();
}

async fn run(mut args: Args, explicit: settings::Explicit) -> anyhow::Result<()> {
    // In Kubernetes mode the client comes first: a ContourConfiguration may move the ports.
    let client = match &args.from_dir {
        Some(dir) => {
            anyhow::ensure!(dir.is_dir(), "--from-dir {}: no such directory", dir.display());
            None
        }
        None => match kubeclient::connect_limited(
            args.kubeconfig.as_deref(),
            args.incluster,
            kubeclient::Limits::from_settings(args.kubernetes_client_qps.map(f64::from), args.kubernetes_client_burst),
        )
        .await
        {
            Ok(client) => Some(client),
            Err(e @ kubeclient::Error::Infer(_)) => anyhow::bail!("{e}, or --from-dir DIR for standalone mode"),
            Err(e) => return Err(e.into()),
        },
    };
    if let Some(client) = &client {
        settings::apply_resource(&mut args, &explicit, client).await?;
    }
    settings::apply_flags(&mut args, &explicit);
    let options = controller::Options {
        gateway_api: frontends::gateway_api::Options {
            controller_name: args.gateway_controller_name.clone(),
            host_mode: args.gateway_host_mode,
            static_gateway: args.gateway_ref.clone(),
            envoy_service: Some(objects::ObjectKey::new(&args.envoy_service_namespace, &args.envoy_service_name)),
        },
        httpproxy: frontends::httpproxy::Options {
            class_names: args.ingress_class_name.clone(),
            root_namespaces: args.root_namespaces.clone(),
            http_port: args.envoy_service_http_port,
            https_port: args.envoy_service_https_port,
            disable_permit_insecure: args.disable_permit_insecure,
            fallback_certificate: args.fallback_certificate.clone(),
            default_headers: args.default_headers.clone(),
            enable_external_name_service: args.enable_external_name_service,
            global_authorization: args.global_ext_auth.clone(),
            default_global_rate_limit: args.rate_limit_service.as_ref().and_then(|(_, d)| d.clone()),
            enable_stat_prefix: args.enable_stat_prefix,
            geoip: args.geoip.clone(),
        },
        ingress: frontends::ingress::Options {
            class_names: args.ingress_class_name.clone(),
            http_port: args.envoy_service_http_port,
            https_port: args.envoy_service_https_port,
            default_headers: args.default_headers.clone().filter(|_| args.default_headers_on_ingress),
        },
        compile: xds::CompileOptions {
            default_address: args.envoy_service_http_address,
            stats_listener: Some(SocketAddr::new(args.stats_address, args.stats_port)),
            admin_listener: Some(SocketAddr::new(std::net::Ipv4Addr::LOCALHOST.into(), args.envoy_admin_port)),
            om_enforced_health_listener: args.om_enforced_health,
            metrics_listener: args.envoy_metrics.clone(),
            merge_slashes: !args.disable_merge_slashes,
            vhds: args.vhds,
            listener: args.listener.clone(),
            cluster: args.cluster.clone(),
            global_authorization: args.global_ext_auth.as_ref().and_then(frontends::httpproxy::global_authorization),
            rate_limit_service: args.rate_limit_service.as_ref().map(|(s, _)| s.clone()),
            geoip: args.geoip.clone(),
            tracing: args.tracing.clone(),
        },
        dag: dag::Options {
            external_names: args.enable_external_name_service,
            client_certificate: args.envoy_client_certificate.clone(),
        },
        holdoff: args.rebuild_holdoff,
        holdoff_max: args.rebuild_holdoff_max,
    };
    let store = store::Store::new();
    // Upstream's Envoy manifests name the controller's namespace as their node cluster.
    let server = xds_server::XdsServer::new(xds_server::Options {
        default_fleet_aliases: vec![args.leader_election_resource_namespace.clone()],
        vhds: args.vhds,
        trust_domain: args.xds_trust_domain.clone(),
        ..Default::default()
    });
    let xds_addr = SocketAddr::new(args.xds_address, args.xds_port);
    let xds_listener = xds_server::listen(xds_addr).with_context(|| format!("binding xDS on {xds_addr}"))?;
    info!(%xds_addr, "contour-serve starting");

    let (gateway_api, httpproxy) = (options.gateway_api.clone(), options.httpproxy.clone());
    let controller = controller::Controller::new(options, server.clone());
    let (shutdown_tx, shutdown) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        shutdown_signal().await;
        shutdown_tx.send_replace(true);
    });

    let (release, status_counters) = match &args.from_dir {
        Some(dir) => {
            info!(dir = %dir.display(), "standalone mode: reading objects from a directory");
            tokio::spawn(store::DirectorySource::new(dir).run(store.clone(), args.resync_period));
            (None, None)
        }
        None => {
            let client = client.clone().context("Kubernetes mode needs a client")?;
            info!(namespaces = ?args.watch_namespaces, "Kubernetes mode");
            let (leadership, release) = leadership(&args, &client, shutdown.clone());
            let envoy_service = objects::ObjectKey::new(&args.envoy_service_namespace, &args.envoy_service_name);
            let ingress = status::IngressStatusOptions {
                class_names: args.ingress_class_name.clone(),
                envoy_service: Some(envoy_service.clone()),
                static_addresses: args.ingress_status_address.clone(),
            };
            let seen = store::StatusSeen::of_kinds(&status::KINDS);
            let options = status::Options { gateway_api, httpproxy, ingress, seen: Some(seen.clone()) };
            let (_, counters) =
                status::spawn(client.clone(), controller.published(), server.clone(), options, leadership);
            let source = store::KubernetesSource::new(client, args.watch_namespaces.clone())
                .keep_service_status(envoy_service)
                .status_seen(seen)
                .disable(disabled_kinds(&args.disable_feature));
            let store = store.clone();
            tokio::spawn(async move {
                if let Err(e) = source.run(store).await {
                    tracing::error!(error = %e, "the Kubernetes source stopped");
                }
            });
            (release, Some(counters))
        }
    };

    let telemetry = telemetry::Telemetry {
        version: env!("CARGO_PKG_VERSION"),
        counters: controller.counters(),
        xds: server.clone(),
        store: store.clone(),
        status: status_counters,
        published: controller.published(),
    };
    serve_telemetry(&args, telemetry).await?;
    tokio::spawn(controller.run(store.clone()));
    let mut stopping = shutdown.clone();
    let stop = async move {
        let _ = stopping.wait_for(|s| *s).await;
    };
    match (&args.contour_cafile, &args.contour_cert_file, &args.contour_key_file) {
        (Some(ca), Some(cert), Some(key)) => {
            let files = xds_server::TlsFiles { ca: ca.clone(), cert: cert.clone(), key: key.clone() };
            let tls = std::sync::Arc::new(xds_server::Reloading::new(files).context("xDS TLS")?);
            info!(trust_domain = %args.xds_trust_domain, "xDS over mTLS (TLS 1.3, client certificates required; each Envoy receives only the fleet its certificate names)");
            xds_server::serve_tls(server, xds_listener, tls, stop).await.context("xDS server")?;
        }
        _ => {
            if !args.insecure {
                tracing::warn!(
                    "xDS is served without TLS: pass --contour-cafile/--contour-cert-file/--contour-key-file, or --insecure to say it is meant"
                );
            }
            tracing::warn!(
                "fleets are not isolated: without mTLS on xDS any Envoy that reaches the xDS port receives any fleet it names, private keys included"
            );
            xds_server::serve(server, xds_listener, stop).await.context("xDS server")?;
        }
    }
    if let Some(task) = release {
        // Give the election a moment to hand the Lease over.
        let _ = tokio::time::timeout(Duration::from_secs(3), task).await;
    }
    info!("contour-serve stopped");
    Ok(())
}

/// The kinds upstream's `--disable-feature` values name.
fn disabled_kinds(features: &[String]) -> Vec<objects::Kind> {
    use objects::Kind;
    features
        .iter()
        .filter_map(|f| match f.as_str() {
            "extensionservices" => Some(Kind::ExtensionService),
            "tlsroutes" => Some(Kind::TlsRoute),
            "grpcroutes" => Some(Kind::GrpcRoute),
            "tcproutes" => Some(Kind::TcpRoute),
            "backendtlspolicies" => Some(Kind::BackendTlsPolicy),
            _ => None,
        })
        .collect()
}

/// Binds the metrics/health and debug servers; metrics over HTTPS when configured, with health
/// then on its own plain-HTTP server.
async fn serve_telemetry(args: &Args, telemetry: telemetry::Telemetry) -> anyhow::Result<()> {
    let metrics_addr = SocketAddr::new(args.http_address, args.http_port);
    let health_addr = SocketAddr::new(args.health_address, args.health_port);
    let debug_addr = SocketAddr::new(args.debug_http_address, args.debug_http_port);
    let bind = |addr: SocketAddr| async move {
        tokio::net::TcpListener::bind(addr).await.with_context(|| format!("binding {addr}"))
    };
    match &args.metrics_tls {
        Some((cert, key, ca)) => {
            anyhow::ensure!(
                health_addr != metrics_addr,
                "metrics over HTTPS need the health server on an address or port of its own (--health-address, --health-port)"
            );
            let tls = xds_server::Reloading::https(cert.clone(), key.clone(), ca.clone()).context("metrics TLS")?;
            let listener = bind(metrics_addr).await?;
            let t = telemetry.clone();
            tokio::spawn(telemetry::serve_metrics_tls(listener, std::sync::Arc::new(tls), t, std::future::pending()));
            tokio::spawn(telemetry::serve_health(bind(health_addr).await?, telemetry.clone(), std::future::pending()));
        }
        None => {
            let mut http = vec![metrics_addr];
            if health_addr != metrics_addr {
                http.push(health_addr);
            }
            for addr in http {
                let t = telemetry.clone();
                tokio::spawn(telemetry::serve_metrics(bind(addr).await?, t, std::future::pending()));
            }
        }
    }
    tokio::spawn(telemetry::serve_debug(bind(debug_addr).await?, telemetry, std::future::pending()));
    Ok(())
}

/// Leadership from a Lease, or always with `--disable-leader-election`; the task releases the
/// Lease on shutdown.
/// A version-4 UUID from the kernel's randomness (what upstream appends to its Lease identity).
fn random_uuid() -> String {
    use std::io::Read as _;
    let mut b = [0u8; 16];
    if std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut b)).is_err() {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
        b = (nanos ^ u128::from(std::process::id()) << 64).to_be_bytes();
    }
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &h[0..8], &h[8..12], &h[12..16], &h[16..20], &h[20..32])
}

fn leadership(
    args: &Args,
    client: &kube::Client,
    shutdown: tokio::sync::watch::Receiver<bool>,
) -> (election::Leadership, Option<tokio::task::JoinHandle<()>>) {
    if args.disable_leader_election {
        return (election::Leadership::always(), None);
    }
    let identity = args.leader_election_identity.clone().unwrap_or_else(|| {
        let pod = std::env::var("POD_NAME")
            .or_else(|_| std::env::var("HOSTNAME"))
            .unwrap_or_else(|_| format!("contour-{}", std::process::id()));
        format!("{pod}_{}", random_uuid())
    });
    let options = election::Options {
        name: args.leader_election_resource_name.clone(),
        namespace: args.leader_election_resource_namespace.clone(),
        identity,
        lease_duration: args.leader_election_lease_duration,
        renew_deadline: args.leader_election_renew_deadline,
        retry_period: args.leader_election_retry_period,
    };
    let mut stop = shutdown;
    let (leadership, task) = election::spawn(client.clone(), options, async move {
        let _ = stop.wait_for(|s| *s).await;
    });
    (leadership, Some(task))
}

async fn shutdown_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    info!("shutting down");
}
