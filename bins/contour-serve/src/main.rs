//! `contour-serve`: the controller and xDS server.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::Context;
use api::contourconfig::ContourConfiguration;
use settings::{Explicit, Settings};
use tracing::info;

fn main() -> anyhow::Result<()> {
    one_malloc_arena();
    let (mut settings, explicit) = Settings::from_args(std::env::args_os()).unwrap_or_else(|e| e.exit());
    if let Some(path) = settings.config_path.clone() {
        let file = config::load(&path)?;
        settings.apply_file(&file, &path.display().to_string(), &explicit)?;
    }
    // One TLS implementation everywhere: ring.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        let base = if settings.debug { "debug" } else { "info" };
        match settings.kubernetes_debug {
            0 => tracing_subscriber::EnvFilter::new(base),
            1..=5 => tracing_subscriber::EnvFilter::new(format!("{base},kube_client=debug")),
            _ => tracing_subscriber::EnvFilter::new(format!("{base},kube_client=trace,hyper_util=debug")),
        }
    });
    // Colour only for a terminal: a log file or a pipe gets plain text.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let logs = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(ansi);
    if settings.log_format == "json" {
        logs.json().init();
    } else {
        logs.init();
    }
    tokio::runtime::Builder::new_multi_thread().enable_all().build()?.block_on(run(settings, explicit))
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

async fn run(mut args: Settings, explicit: Explicit) -> anyhow::Result<()> {
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
    if let (Some(client), Some(name)) = (&client, args.contour_config_name.clone()) {
        let namespace = args.leader_election_resource_namespace.clone();
        let api: kube::Api<ContourConfiguration> = kube::Api::namespaced(client.clone(), &namespace);
        let resource =
            api.get(&name).await.with_context(|| format!("reading ContourConfiguration {namespace}/{name}"))?;
        args.apply_resource(&resource.spec, &format!("{namespace}/{name}"), &explicit)?;
    }
    args.apply_flags(&explicit);
    let options = args.controller_options();
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
    let judge = admission::Judge::new(options.clone());
    let controller = controller::Controller::new(options, server.clone());
    let (shutdown_tx, shutdown) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        shutdown_signal().await;
        shutdown_tx.send_replace(true);
    });

    let mut admission_counters = None;
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
            let envoy_service = args.envoy_service();
            let ingress = status::IngressStatusOptions {
                class_names: args.ingress_class_name.clone(),
                envoy_service: Some(envoy_service.clone()),
                static_addresses: args.ingress_status_address.clone(),
            };
            let seen = store::StatusSeen::of_kinds(&status::KINDS);
            let options = status::Options { gateway_api, httpproxy, ingress, seen: Some(seen.clone()) };
            let (_, counters) =
                status::spawn(client.clone(), controller.published(), server.clone(), options, leadership);
            if let (Some(cert), Some(key)) = (args.webhook_cert_file.clone(), args.webhook_key_file.clone()) {
                let addr = SocketAddr::new(args.webhook_address, args.webhook_port);
                let listener = tokio::net::TcpListener::bind(addr)
                    .await
                    .with_context(|| format!("binding the webhook on {addr}"))?;
                let counters = std::sync::Arc::new(admission::Counters::default());
                tokio::spawn(webhook(listener, cert, key, store.clone(), judge, std::sync::Arc::clone(&counters)));
                admission_counters = Some(counters);
            }
            let source = store::KubernetesSource::new(client, args.watch_namespaces.clone())
                .keep_service_status(envoy_service)
                .status_seen(seen)
                .disable(args.disabled_kinds());
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
        admission: admission_counters,
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

/// Binds the metrics/health and debug servers; metrics over HTTPS when configured, with health
/// then on its own plain-HTTP server.
async fn serve_telemetry(args: &Settings, telemetry: telemetry::Telemetry) -> anyhow::Result<()> {
    let settings::TelemetryAddresses { metrics: metrics_addr, health: health_addr, debug: debug_addr } =
        args.telemetry_addresses();
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

/// The admission webhook on `listener`. The Secret may be filled after start (an optional
/// volume the webhook's certgen Job writes): the webhook starts once its files are there.
async fn webhook(
    listener: tokio::net::TcpListener,
    cert: std::path::PathBuf,
    key: std::path::PathBuf,
    store: store::Store,
    judge: admission::Judge,
    counters: std::sync::Arc<admission::Counters>,
) {
    if !(cert.exists() && key.exists()) {
        info!(cert = %cert.display(), "admission webhook waiting for its certificate files");
        while !(cert.exists() && key.exists()) {
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
    }
    match xds_server::Reloading::https(cert, key, None) {
        Ok(tls) => {
            info!(addr = ?listener.local_addr().ok(), "admission webhook serving (every replica answers)");
            admission::serve(listener, std::sync::Arc::new(tls), store, judge, counters, std::future::pending()).await;
        }
        Err(e) => tracing::error!(error = %e, "the admission webhook's certificate is unusable; not serving it"),
    }
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
    args: &Settings,
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
