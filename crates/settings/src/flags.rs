//! The flags, with upstream's names and defaults, and the settings they start from: fields
//! without a flag (`#[arg(skip)]`) come from contour.yaml or the ContourConfiguration only.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

/// The flags given on the command line or through the environment, by their field names
/// (`xds_port`): the file and the resource do not override them.
pub type Explicit = std::collections::BTreeSet<String>;

/// Watches Gateway API objects and programs Envoy over xDS.
#[derive(Debug, Parser)]
#[command(name = "contour-serve", version)]
pub struct Settings {
    /// Read objects from YAML files in this directory (standalone mode) instead of Kubernetes.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["kubeconfig", "incluster", "watch_namespaces"])]
    pub from_dir: Option<PathBuf>,
    /// contour.yaml with upstream's keys; flags override it.
    #[arg(short = 'c', long, value_name = "PATH", conflicts_with = "contour_config_name")]
    pub config_path: Option<PathBuf>,
    /// The ContourConfiguration (in the Lease namespace, $CONTOUR_NAMESPACE) to read settings from;
    /// flags override it.
    #[arg(long, value_name = "NAME")]
    pub contour_config_name: Option<String>,
    /// Kubeconfig of the cluster to watch (default: in-cluster, then $KUBECONFIG, then ~/.kube/config).
    #[arg(long, env = "KUBECONFIG", value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// Use the in-cluster service account, ignoring any kubeconfig.
    #[arg(long)]
    pub incluster: bool,
    /// Ingress classes served (comma-separated); unset: Ingresses without a class or of class `contour`.
    #[arg(long, value_delimiter = ',')]
    pub ingress_class_name: Vec<String>,
    /// Addresses written to Ingress status instead of the Envoy Service's (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub ingress_status_address: Vec<String>,
    /// The Envoy Service whose load-balancer addresses go to Ingress status.
    #[arg(long, default_value = "envoy")]
    pub envoy_service_name: String,
    /// The Envoy Service's namespace.
    #[arg(long, env = "CONTOUR_NAMESPACE", default_value = "projectcontour")]
    pub envoy_service_namespace: String,
    /// Address of Envoy's stats and health listener (`/ready`, `/stats`, `/stats/prometheus`).
    #[arg(long, default_value = "0.0.0.0")]
    pub stats_address: IpAddr,
    /// Port of Envoy's stats and health listener.
    #[arg(long, default_value_t = 8002)]
    pub stats_port: u16,
    /// Loopback port of Envoy's read-only admin listener (contour.yaml `network.admin-port`).
    #[arg(skip = 9001u16)]
    pub envoy_admin_port: u16,
    /// Namespaces where root HTTPProxies may live (comma-separated); unset: every namespace.
    #[arg(long, value_delimiter = ',')]
    pub root_namespaces: Vec<String>,
    /// Ignore `permitInsecure` on HTTPProxy routes (contour.yaml `disablePermitInsecure`).
    #[arg(skip)]
    pub disable_permit_insecure: bool,
    /// Keep repeated slashes in request paths (contour.yaml `disableMergeSlashes`).
    #[arg(skip)]
    pub disable_merge_slashes: bool,
    /// The certificate for TLS clients without SNI (contour.yaml `tls.fallback-certificate`).
    #[arg(skip)]
    pub fallback_certificate: Option<ir::ObjectRef>,
    /// Watch only these namespaces (comma-separated); allows namespaced RBAC.
    #[arg(long, value_delimiter = ',')]
    pub watch_namespaces: Vec<String>,
    /// Address the xDS server listens on.
    #[arg(long, default_value = "127.0.0.1")]
    pub xds_address: IpAddr,
    /// Port the xDS server listens on.
    #[arg(long, default_value_t = 8001)]
    pub xds_port: u16,
    /// CA bundle that signed Envoy's client certificates (mTLS on xDS).
    #[arg(long, env = "CONTOUR_CAFILE", requires_all = ["contour_cert_file", "contour_key_file"], conflicts_with = "insecure")]
    pub contour_cafile: Option<PathBuf>,
    /// The xDS server's certificate.
    #[arg(long, env = "CONTOUR_CERT_FILE", requires = "contour_cafile")]
    pub contour_cert_file: Option<PathBuf>,
    /// The xDS server's key.
    #[arg(long, env = "CONTOUR_KEY_FILE", requires = "contour_cafile")]
    pub contour_key_file: Option<PathBuf>,
    /// Serve xDS without TLS (say so explicitly; local use and tests). Fleets are then not
    /// isolated from each other: any Envoy may receive any fleet.
    #[arg(long)]
    pub insecure: bool,
    /// The trust domain of fleet identities in Envoys' client certificates
    /// (`spiffe://<trust domain>/ns/<namespace>/gateway/<name>`; ours, not upstream's).
    #[arg(long, default_value = certs::DEFAULT_TRUST_DOMAIN)]
    pub xds_trust_domain: String,
    /// Address Envoy binds for listeners whose Gateway requests no address.
    #[arg(long, default_value = "0.0.0.0")]
    pub envoy_service_http_address: IpAddr,
    /// Port of the default fleet's HTTP listener (Ingress and HTTPProxy).
    #[arg(long, default_value_t = 8080)]
    pub envoy_service_http_port: u16,
    /// Address of the default fleet's HTTPS listener.
    #[arg(long, default_value = "0.0.0.0")]
    pub envoy_service_https_address: IpAddr,
    /// Port of the default fleet's HTTPS listener.
    #[arg(long, default_value_t = 8443)]
    pub envoy_service_https_port: u16,
    /// Address of the metrics server (`/metrics`).
    #[arg(long, default_value = "0.0.0.0")]
    pub http_address: IpAddr,
    /// Port of the metrics server.
    #[arg(long, default_value_t = 8000)]
    pub http_port: u16,
    /// Address of the health server (`/healthz`, `/readyz`); shared with metrics when equal.
    #[arg(long, default_value = "0.0.0.0")]
    pub health_address: IpAddr,
    /// Port of the health server.
    #[arg(long, default_value_t = 8000)]
    pub health_port: u16,
    /// Address of the debug server (`/debug/dag`).
    #[arg(long, default_value = "127.0.0.1")]
    pub debug_http_address: IpAddr,
    /// Port of the debug server.
    #[arg(long, default_value_t = 6060)]
    pub debug_http_port: u16,
    /// Address of the admission webhook's HTTPS server (ours: upstream Contour has no webhook).
    #[arg(long, default_value = "0.0.0.0")]
    pub webhook_address: IpAddr,
    /// Port of the admission webhook's HTTPS server.
    #[arg(long, default_value_t = 9443)]
    pub webhook_port: u16,
    /// The admission webhook's serving certificate; with --webhook-key-file it turns the
    /// webhook on (Kubernetes mode).
    #[arg(long, env = "CONTOUR_WEBHOOK_CERT_FILE", value_name = "PATH", requires = "webhook_key_file")]
    pub webhook_cert_file: Option<PathBuf>,
    /// The admission webhook's key.
    #[arg(long, env = "CONTOUR_WEBHOOK_KEY_FILE", value_name = "PATH", requires = "webhook_cert_file")]
    pub webhook_key_file: Option<PathBuf>,
    /// GatewayClasses with this controllerName are reconciled.
    #[arg(long, default_value = frontends::gateway_api::DEFAULT_CONTROLLER_NAME)]
    pub gateway_controller_name: String,
    /// Gateway fleets are host processes (the provisioner's host mode): their listeners, stats
    /// and admin listeners bind to the Gateway's own address.
    #[arg(long)]
    pub gateway_host_mode: bool,
    /// Upstream's static Gateway mode (contour.yaml `gateway.gatewayRef`): this Gateway alone is
    /// served, by the default fleet.
    #[arg(skip)]
    pub gateway_ref: Option<objects::ObjectKey>,
    /// Write status without a Lease (a single replica).
    #[arg(long)]
    pub disable_leader_election: bool,
    /// How long a leader's Lease is valid without renewal.
    #[arg(long, default_value = "15s", value_parser = duration)]
    pub leader_election_lease_duration: Duration,
    /// How long the leader retries renewing before it stops leading.
    #[arg(long, default_value = "10s", value_parser = duration)]
    pub leader_election_renew_deadline: Duration,
    /// How often replicas try to acquire or renew the Lease.
    #[arg(long, default_value = "2s", value_parser = duration)]
    pub leader_election_retry_period: Duration,
    /// The Lease name.
    #[arg(long, default_value = "leader-elect")]
    pub leader_election_resource_name: String,
    /// The Lease namespace.
    #[arg(long, env = "CONTOUR_NAMESPACE", default_value = "projectcontour")]
    pub leader_election_resource_namespace: String,
    /// This replica's identity in the Lease. Without it, upstream's: the pod's name (`$POD_NAME`,
    /// else `$HOSTNAME`), an underscore and a random UUID.
    #[arg(long)]
    pub leader_election_identity: Option<String>,
    /// Quiet time after a change before rebuilding (such as 100ms).
    #[arg(long, default_value = "100ms", value_parser = duration)]
    pub rebuild_holdoff: Duration,
    /// The longest a rebuild is held back while changes keep coming.
    #[arg(long, default_value = "500ms", value_parser = duration)]
    pub rebuild_holdoff_max: Duration,
    /// Delta Envoys get plain-HTTP virtual hosts over VHDS (`true`), or inline in the route
    /// configuration (`false`, the default: Envoy applies a change faster).
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set)]
    pub vhds: bool,
    /// How often the directory is re-read even without change events.
    #[arg(long, default_value = "30s", value_parser = duration)]
    pub resync_period: Duration,
    /// Log format.
    #[arg(long, default_value = "text", value_parser = ["text", "json"])]
    pub log_format: String,
    /// Kinds not to watch, as upstream: extensionservices, tlsroutes, grpcroutes, tcproutes,
    /// backendtlspolicies (repeatable or comma-separated).
    #[arg(long, value_delimiter = ',', value_parser = ["extensionservices", "tlsroutes", "grpcroutes", "tcproutes", "backendtlspolicies"])]
    pub disable_feature: Vec<String>,
    /// Log the Kubernetes client's requests: 0 off, 1-5 debug, 6 and more trace.
    #[arg(long, default_value_t = 0)]
    pub kubernetes_debug: u32,
    /// Requests a second this client sends the API server, on average (unset: not throttled;
    /// set with no burst: a burst of 10, client-go's).
    #[arg(long, value_name = "QPS")]
    pub kubernetes_client_qps: Option<f32>,
    /// Requests the client may send at once above --kubernetes-client-qps (unset: not throttled;
    /// set with no QPS: 5 a second, client-go's).
    #[arg(long, value_name = "N")]
    pub kubernetes_client_burst: Option<u32>,
    /// Where Envoy writes the access log of plain-HTTP listeners (default /dev/stdout).
    #[arg(long, value_name = "PATH")]
    pub envoy_http_access_log: Option<String>,
    /// Where Envoy writes the access log of TLS listeners (default /dev/stdout).
    #[arg(long, value_name = "PATH")]
    pub envoy_https_access_log: Option<String>,
    /// Access log format: envoy (Envoy's text line, the default) or json.
    #[arg(long, value_parser = ["envoy", "json"])]
    pub accesslog_format: Option<String>,
    /// Expect a PROXY protocol header (v1 or v2) on every connection to Envoy's listeners.
    #[arg(long)]
    pub use_proxy_protocol: bool,
    /// Envoy's traffic listeners, from contour.yaml, the ContourConfiguration and the flags above.
    #[arg(skip)]
    pub listener: xds::ListenerOptions,
    /// contour-serve's `/metrics` over HTTPS: certificate, key and the client CA, if any
    /// (`metrics.contour`'s files).
    #[arg(skip)]
    pub metrics_tls: Option<(PathBuf, PathBuf, Option<PathBuf>)>,
    /// Envoy's statistics on their own address or over HTTPS (`metrics.envoy`).
    #[arg(skip)]
    pub envoy_metrics: Option<xds::MetricsListener>,
    /// A readiness listener the overload manager's limit applies to (`omEnforcedHealthListener`).
    #[arg(skip)]
    pub om_enforced_health: Option<SocketAddr>,
    /// Envoy's client certificate towards TLS backends (contour.yaml `tls.envoy-client-certificate`).
    #[arg(skip)]
    pub envoy_client_certificate: Option<ir::ObjectRef>,
    /// ExternalName Services may be backends (contour.yaml `enableExternalNameService`).
    #[arg(skip)]
    pub enable_external_name_service: bool,
    /// The authorization server of every virtual host that names none (contour.yaml
    /// `globalExtAuth`, the ContourConfiguration's `spec.globalExtAuth`).
    #[arg(skip)]
    pub global_ext_auth: Option<api::httpproxy::AuthorizationServer>,
    /// The rate-limit service (contour.yaml `rateLimitService`, `spec.rateLimitService`) and the
    /// default global rate limit policy of virtual hosts.
    #[arg(skip)]
    pub rate_limit_service: Option<(xds::RateLimitService, Option<api::httpproxy::GlobalRateLimitPolicy>)>,
    /// The GeoIP databases (contour.yaml `geoIP`, `spec.geoIP`).
    #[arg(skip)]
    pub geoip: Option<ir::GeoDatabases>,
    /// Spans to an OpenTelemetry collector (contour.yaml `tracing`, `spec.tracing`).
    #[arg(skip)]
    pub tracing: Option<xds::Tracing>,
    /// HTTPProxy routes get statistics of their own (`spec.envoy.enableStatPrefix`).
    #[arg(skip)]
    pub enable_stat_prefix: bool,
    /// The global header policy (contour.yaml `policy`).
    #[arg(skip)]
    pub default_headers: Option<std::sync::Arc<frontends::DefaultHeaders>>,
    /// The global header policy applies to Ingress too (`policy.applyToIngress`).
    #[arg(skip)]
    pub default_headers_on_ingress: bool,
    /// Envoy's upstream clusters, from contour.yaml and the ContourConfiguration.
    #[arg(skip)]
    pub cluster: xds::ClusterOptions,
    /// Log at debug level.
    #[arg(short, long)]
    pub debug: bool,
}

fn duration(text: &str) -> Result<Duration, String> {
    frontends::gateway_api::parse_duration_ms(text)
        .map(Duration::from_millis)
        .ok_or_else(|| format!("{text:?} is not a duration such as 100ms, 5s or 1m"))
}

impl Settings {
    /// The flags in `args` (the program's name first), with the fields they did not set at
    /// their defaults, and which of them were given.
    pub fn from_args<I, T>(args: I) -> Result<(Self, Explicit), clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        use clap::{CommandFactory, FromArgMatches};
        let matches = Self::command().try_get_matches_from(args)?;
        let settings = Self::from_arg_matches(&matches)?;
        let explicit = matches
            .ids()
            .filter(|id| {
                matches!(
                    matches.value_source(id.as_str()),
                    Some(clap::parser::ValueSource::CommandLine | clap::parser::ValueSource::EnvVariable)
                )
            })
            .map(|id| id.to_string())
            .collect();
        Ok((settings, explicit))
    }

    /// Every setting at its default, as if no flag were given and no environment variable set.
    pub fn defaults() -> Self {
        use clap::{CommandFactory, FromArgMatches};
        let command = Self::command().mut_args(|a| a.env(None::<&'static str>));
        let matches = command.try_get_matches_from(["contour-serve"]).expect("no flag is required");
        Self::from_arg_matches(&matches).expect("every default parses")
    }

    /// Applies the flags that override what the file or the resource said about Envoy's
    /// listeners (access logs, PROXY protocol): call it after those.
    pub fn apply_flags(&mut self, explicit: &Explicit) {
        use xds::accesslog::Format;
        let log = &mut self.listener.access_log;
        if explicit.contains("accesslog_format") {
            match self.accesslog_format.as_deref() {
                Some("json") if !matches!(log.format, Format::Json(_)) => {
                    log.format = Format::Json(
                        xds::accesslog::json_fields(&xds::accesslog::DEFAULT_JSON_FIELDS).expect("upstream's fields"),
                    );
                }
                Some("envoy") if !matches!(log.format, Format::Envoy(_)) => log.format = Format::Envoy(None),
                _ => {}
            }
        }
        if let Some(path) = self.envoy_http_access_log.clone().filter(|_| explicit.contains("envoy_http_access_log")) {
            log.http_path = path;
        }
        if let Some(path) = self.envoy_https_access_log.clone().filter(|_| explicit.contains("envoy_https_access_log"))
        {
            log.https_path = path;
        }
        if explicit.contains("use_proxy_protocol") {
            self.listener.use_proxy_protocol = self.use_proxy_protocol;
        }
    }
}
