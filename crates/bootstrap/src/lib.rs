//! Envoy's bootstrap configuration: node identity, admin endpoint, and ADS to the controller.
//!
//! Rendered as JSON from typed settings (no string templating of user input). Everything else
//! Envoy needs arrives over ADS.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// The static cluster that points at the controller's xDS server.
pub const XDS_CLUSTER: &str = "contour";

/// The static cluster that reaches Envoy's own admin interface (upstream's name).
pub const ADMIN_CLUSTER: &str = "envoy-admin";

/// Where Envoy's admin interface listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admin {
    /// A unix socket path (upstream's default, `/admin/admin.sock`).
    Unix(String),
    /// A loopback TCP port.
    Port(u16),
}

/// Client certificates for the Envoy⇄controller channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XdsTls {
    /// CA bundle that signed the controller's certificate.
    pub ca_file: String,
    /// Envoy's client certificate.
    pub cert_file: String,
    /// Envoy's client key.
    pub key_file: String,
}

/// How Envoy resolves the controller's address when it is a DNS name (upstream's
/// `--dns-lookup-family`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DnsLookupFamily {
    /// IPv4 only.
    V4,
    /// IPv6 only.
    V6,
    /// IPv6 when the name has an AAAA record, else IPv4 (Envoy's `AUTO`).
    #[default]
    Auto,
    /// Both families.
    All,
}

impl DnsLookupFamily {
    fn envoy_name(self) -> &'static str {
        match self {
            Self::V4 => "V4_ONLY",
            Self::V6 => "V6_ONLY",
            Self::Auto => "AUTO",
            Self::All => "ALL",
        }
    }
}

/// Envoy's overload manager, off unless a limit is given (upstream's `--overload-max-heap` and
/// `--overload-downstream-max-conn`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Overload {
    /// Heap size in bytes: at 95% Envoy shrinks its heap, at 98% it stops accepting requests.
    pub max_heap_bytes: Option<u64>,
    /// Open downstream connections over every listener that counts them (the stats, health and
    /// read-only admin listeners do not), beyond which new connections are refused.
    pub max_downstream_connections: Option<u64>,
}

/// Name of the SDS resource holding Envoy's xDS client certificate (upstream's name).
pub const XDS_TLS_CERTIFICATE: &str = "contour_xds_tls_certificate";
/// Name of the SDS resource holding the CA that verifies the controller (upstream's name).
pub const XDS_VALIDATION_CONTEXT: &str = "contour_xds_tls_validation_context";

/// Everything the bootstrap says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bootstrap {
    /// The controller's xDS host (IP address or DNS name).
    pub xds_address: String,
    /// The controller's xDS port.
    pub xds_port: u16,
    /// Envoy's admin endpoint.
    pub admin: Admin,
    /// The fleet (node cluster) this Envoy belongs to.
    pub fleet: String,
    /// The node id.
    pub node_id: String,
    /// Incremental (Delta) ADS, the default: only changed resources go to Envoy, and plain-HTTP
    /// virtual hosts one by one over VHDS. `false`: State-of-the-World, as upstream's bootstrap.
    pub delta: bool,
    /// mTLS to the controller, if any.
    pub tls: Option<XdsTls>,
    /// With mTLS: reference the certificate files through SDS files written under
    /// `<dir>/sds/`, so Envoy re-reads rotated certificates without a restart.
    pub resources_dir: Option<PathBuf>,
    /// How a DNS name in `xds_address` is resolved.
    pub dns_lookup_family: DnsLookupFamily,
    /// Overload manager limits.
    pub overload: Overload,
    /// The namespace Envoy runs in, reported in its node metadata.
    pub namespace: Option<String>,
}

impl Default for Bootstrap {
    fn default() -> Self {
        Self {
            xds_address: "127.0.0.1".into(),
            xds_port: 8001,
            admin: Admin::Unix("/admin/admin.sock".into()),
            fleet: "contour".into(),
            node_id: "envoy".into(),
            delta: true,
            tls: None,
            resources_dir: None,
            dns_lookup_family: DnsLookupFamily::default(),
            overload: Overload::default(),
            namespace: None,
        }
    }
}

impl Bootstrap {
    /// The bootstrap as Envoy's JSON.
    pub fn to_json(&self) -> Value {
        let admin_address = match &self.admin {
            Admin::Unix(path) => json!({"pipe": {"path": path}}),
            Admin::Port(port) => {
                json!({"socket_address": {"address": "127.0.0.1", "port_value": port}})
            }
        };
        let is_ip = self.xds_address.parse::<IpAddr>().is_ok();
        // Its stats are named as upstream's (`<namespace>_contour_<port>`), for their dashboards.
        let namespace = self.namespace.as_deref().unwrap_or("projectcontour");
        let mut xds = json!({
            "name": XDS_CLUSTER,
            "alt_stat_name": format!("{namespace}_{XDS_CLUSTER}_{}", self.xds_port),
            "type": if is_ip { "STATIC" } else { "STRICT_DNS" },
            "connect_timeout": "5s",
            "load_assignment": {
                "cluster_name": XDS_CLUSTER,
                "endpoints": [{"lb_endpoints": [{"endpoint": {"address": {"socket_address": {
                    "address": self.xds_address, "port_value": self.xds_port
                }}}}]}]
            },
            "typed_extension_protocol_options": {
                "envoy.extensions.upstreams.http.v3.HttpProtocolOptions": {
                    "@type": "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
                    "explicit_http_config": {"http2_protocol_options": {
                        "connection_keepalive": {"interval": "30s", "timeout": "5s"}
                    }}
                }
            },
            "upstream_connection_options": {"tcp_keepalive": {"keepalive_probes": 3, "keepalive_time": 30, "keepalive_interval": 5}},
            "circuit_breakers": {"thresholds": [
                {"priority": "HIGH", "max_connections": 100000, "max_pending_requests": 100000, "max_requests": 60000000, "max_retries": 50},
                {"priority": "DEFAULT", "max_connections": 100000, "max_pending_requests": 100000, "max_requests": 60000000, "max_retries": 50}
            ]}
        });
        if !is_ip {
            xds["dns_lookup_family"] = json!(self.dns_lookup_family.envoy_name());
        }
        if let Some(tls) = &self.tls {
            let mut context = json!({
                "tls_params": {"tls_maximum_protocol_version": "TLSv1_3", "tls_minimum_protocol_version": "TLSv1_3"}
            });
            match &self.resources_dir {
                // Envoy watches these SDS files, and the certificate files they name, for moves
                // (a Secret volume's symlink swap, certgen's rename), so rotation needs no restart.
                Some(dir) => {
                    let source = |file: &str| {
                        json!({"resource_api_version": "V3", "path_config_source": {
                            "path": sds_dir(dir).join(file).display().to_string(),
                            "watched_directory": {"path": sds_dir(dir).display().to_string()}
                        }})
                    };
                    context["tls_certificate_sds_secret_configs"] =
                        json!([{"name": XDS_TLS_CERTIFICATE, "sds_config": source(TLS_CERTIFICATE_FILE)}]);
                    context["validation_context_sds_secret_config"] =
                        json!({"name": XDS_VALIDATION_CONTEXT, "sds_config": source(VALIDATION_CONTEXT_FILE)});
                }
                None => {
                    context["tls_certificates"] = json!([tls_certificate(tls, false)]);
                    context["validation_context"] = validation_context(tls, false);
                }
            }
            xds["transport_socket"] = json!({
                "name": "envoy.transport_sockets.tls",
                "typed_config": {
                    "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext",
                    "common_tls_context": context
                }
            });
        }
        let ads = json!({"ads": {}, "resource_api_version": "V3"});
        let mut node = json!({"id": self.node_id, "cluster": self.fleet});
        if let Some(namespace) = &self.namespace {
            node["metadata"] = json!({"namespace": namespace});
        }
        let mut bootstrap = json!({
            "node": node,
            // The shutdown manager and the stats listeners reach the admin interface even when
            // the overload manager's connection limit is reached.
            "admin": {"address": admin_address, "ignore_global_conn_limit": true},
            "dynamic_resources": {
                "ads_config": {
                    "api_type": if self.delta { "DELTA_GRPC" } else { "GRPC" },
                    "transport_api_version": "V3",
                    // Envoy waits up to 30 s between reconnection attempts by default, so a
                    // controller back from a restart or an outage could wait that long for its
                    // Envoys; 5 s at most (a reconnection attempt is cheap for the controller).
                    "grpc_services": [{"envoy_grpc": {"cluster_name": XDS_CLUSTER,
                        "retry_policy": {"retry_back_off": {"base_interval": "0.5s", "max_interval": "5s"}}}}],
                    "set_node_on_first_message_only": true
                },
                "lds_config": ads,
                "cds_config": ads
            },
            // The stats/health and read-only admin listeners the controller serves reach Envoy's
            // admin interface through this cluster.
            "static_resources": {"clusters": [xds, {
                "name": ADMIN_CLUSTER,
                "type": "STATIC",
                "connect_timeout": "1s",
                "load_assignment": {"cluster_name": ADMIN_CLUSTER, "endpoints": [{"lb_endpoints": [{"endpoint": {"address": admin_address.clone()}}]}]}
            }]},
            "layered_runtime": {"layers": [
                // Regular expressions are validated by the controller; Envoy's default program
                // size limit (100) would reject ordinary patterns.
                {"name": "static", "static_layer": {"re2.max_program_size.error_level": 1_048_576, "re2.max_program_size.warn_level": 1000}},
                // Runtime keys the configuration sets (upstream's layer and resource name).
                {"name": "dynamic", "rtds_layer": {"name": "dynamic", "rtds_config": ads}},
                {"name": "admin", "admin_layer": {}}
            ]}
        });
        if let Some(overload) = self.overload.to_json() {
            bootstrap["overload_manager"] = overload;
        }
        bootstrap
    }

    /// The SDS files `--resources-dir` asks for, as (path, JSON) pairs; empty without mTLS or
    /// without a resources directory.
    pub fn sds_files(&self) -> Vec<(PathBuf, Value)> {
        let (Some(tls), Some(dir)) = (&self.tls, &self.resources_dir) else { return Vec::new() };
        let secret = |name: &str, key: &str, value: Value| {
            let mut secret =
                json!({"@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret", "name": name});
            secret[key] = value;
            json!({"resources": [secret]})
        };
        vec![
            (
                sds_dir(dir).join(TLS_CERTIFICATE_FILE),
                secret(XDS_TLS_CERTIFICATE, "tls_certificate", tls_certificate(tls, true)),
            ),
            (
                sds_dir(dir).join(VALIDATION_CONTEXT_FILE),
                secret(XDS_VALIDATION_CONTEXT, "validation_context", validation_context(tls, true)),
            ),
        ]
    }
}

const TLS_CERTIFICATE_FILE: &str = "xds-tls-certificate.json";
const VALIDATION_CONTEXT_FILE: &str = "xds-validation-context.json";

fn sds_dir(resources: &Path) -> PathBuf {
    resources.join("sds")
}

/// The directory holding `file`, watched for moves so a Secret volume's symlink swap counts.
fn parent_dir(file: &str) -> String {
    match Path::new(file).parent() {
        Some(p) if !p.as_os_str().is_empty() => p.display().to_string(),
        _ => ".".into(),
    }
}

/// Envoy's client certificate; `watch` (only meaningful through SDS) re-reads it on a move.
fn tls_certificate(tls: &XdsTls, watch: bool) -> Value {
    let mut certificate = json!({
        "certificate_chain": {"filename": tls.cert_file},
        "private_key": {"filename": tls.key_file}
    });
    if watch {
        certificate["watched_directory"] = json!({"path": parent_dir(&tls.cert_file)});
    }
    certificate
}

/// The CA that signed the controller's certificate, and the name it must carry.
fn validation_context(tls: &XdsTls, watch: bool) -> Value {
    let mut context = json!({
        "trusted_ca": {"filename": tls.ca_file},
        "match_typed_subject_alt_names": [{"san_type": "DNS", "matcher": {"exact": "contour"}}]
    });
    if watch {
        context["watched_directory"] = json!({"path": parent_dir(&tls.ca_file)});
    }
    context
}

impl Overload {
    /// Envoy's `overload_manager`, or `None` when no limit is set (upstream's thresholds).
    fn to_json(self) -> Option<Value> {
        let mut monitors = Vec::new();
        let mut actions = Vec::new();
        if let Some(bytes) = self.max_heap_bytes {
            monitors.push(json!({"name": "envoy.resource_monitors.fixed_heap", "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.resource_monitors.fixed_heap.v3.FixedHeapConfig",
                "max_heap_size_bytes": bytes
            }}));
            let trigger =
                |value: f64| json!([{"name": "envoy.resource_monitors.fixed_heap", "threshold": {"value": value}}]);
            actions.push(json!({"name": "envoy.overload_actions.shrink_heap", "triggers": trigger(0.95)}));
            actions.push(json!({"name": "envoy.overload_actions.stop_accepting_requests", "triggers": trigger(0.98)}));
        }
        if let Some(connections) = self.max_downstream_connections {
            monitors.push(json!({"name": "envoy.resource_monitors.global_downstream_max_connections", "typed_config": {
                "@type": "type.googleapis.com/envoy.extensions.resource_monitors.downstream_connections.v3.DownstreamConnectionsConfig",
                "max_active_downstream_connections": connections
            }}));
        }
        (!monitors.is_empty())
            .then(|| json!({"refresh_interval": "0.25s", "resource_monitors": monitors, "actions": actions}))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delta_and_tls_change_what_they_should() {
        let plain = Bootstrap { delta: false, ..Default::default() }.to_json();
        assert_eq!(plain["dynamic_resources"]["ads_config"]["api_type"], "GRPC");
        assert_eq!(Bootstrap::default().to_json()["dynamic_resources"]["ads_config"]["api_type"], "DELTA_GRPC");
        assert_eq!(plain["static_resources"]["clusters"][0]["type"], "STATIC");
        assert!(plain["static_resources"]["clusters"][0].get("transport_socket").is_none());
        let grpc = &plain["dynamic_resources"]["ads_config"]["grpc_services"][0]["envoy_grpc"];
        assert_eq!(grpc["retry_policy"]["retry_back_off"]["max_interval"], "5s", "reconnects within 5 s, not 30");
        let port = Bootstrap::default().xds_port;
        assert_eq!(
            plain["static_resources"]["clusters"][0]["alt_stat_name"],
            format!("projectcontour_contour_{port}"),
            "upstream's stat name for the xDS cluster"
        );
        let admin = &plain["static_resources"]["clusters"][1];
        assert_eq!(admin["name"], ADMIN_CLUSTER);
        let endpoint = &admin["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"]["address"];
        assert_eq!(endpoint["pipe"]["path"], "/admin/admin.sock", "the admin socket, for the stats listeners");
        let b = Bootstrap {
            delta: true,
            xds_address: "contour.projectcontour".into(),
            admin: Admin::Port(9001),
            tls: Some(XdsTls { ca_file: "ca.pem".into(), cert_file: "c.pem".into(), key_file: "k.pem".into() }),
            ..Default::default()
        }
        .to_json();
        assert_eq!(b["dynamic_resources"]["ads_config"]["api_type"], "DELTA_GRPC");
        assert_eq!(b["static_resources"]["clusters"][0]["type"], "STRICT_DNS");
        assert_eq!(b["admin"]["address"]["socket_address"]["port_value"], 9001);
        let tls = &b["static_resources"]["clusters"][0]["transport_socket"]["typed_config"]["common_tls_context"];
        assert_eq!(tls["validation_context"]["trusted_ca"]["filename"], "ca.pem");
        assert_eq!(tls["tls_certificates"][0]["certificate_chain"]["filename"], "c.pem");
        assert_eq!(tls["tls_certificates"][0]["private_key"]["filename"], "k.pem");
    }

    #[test]
    fn resources_dir_moves_the_certificates_into_watched_sds_files() {
        let tls = XdsTls {
            ca_file: "/certs/ca.crt".into(),
            cert_file: "/certs/tls.crt".into(),
            key_file: "/certs/tls.key".into(),
        };
        let b = Bootstrap { tls: Some(tls), resources_dir: Some("/config/resources".into()), ..Default::default() };
        let context =
            &b.to_json()["static_resources"]["clusters"][0]["transport_socket"]["typed_config"]["common_tls_context"];
        assert!(context.get("tls_certificates").is_none(), "no inline certificate: {context}");
        let sds = &context["tls_certificate_sds_secret_configs"][0];
        assert_eq!(sds["name"], XDS_TLS_CERTIFICATE);
        assert_eq!(sds["sds_config"]["path_config_source"]["path"], "/config/resources/sds/xds-tls-certificate.json");
        assert_eq!(context["validation_context_sds_secret_config"]["name"], XDS_VALIDATION_CONTEXT);
        let files = b.sds_files();
        assert_eq!(files.len(), 2);
        let certificate = &files[0].1["resources"][0];
        assert_eq!(files[0].0, std::path::Path::new("/config/resources/sds/xds-tls-certificate.json"));
        assert_eq!(certificate["name"], XDS_TLS_CERTIFICATE);
        assert_eq!(certificate["tls_certificate"]["private_key"]["filename"], "/certs/tls.key");
        // A Secret volume swaps a symlink in the certificates' directory: that is what is watched.
        assert_eq!(certificate["tls_certificate"]["watched_directory"]["path"], "/certs");
        let validation = &files[1].1["resources"][0]["validation_context"];
        assert_eq!(validation["trusted_ca"]["filename"], "/certs/ca.crt");
        assert_eq!(validation["match_typed_subject_alt_names"][0]["matcher"]["exact"], "contour");
        // Without mTLS there is nothing to write.
        assert!(Bootstrap { resources_dir: Some("/r".into()), ..Default::default() }.sds_files().is_empty());
    }

    #[test]
    fn overload_manager_only_with_a_limit() {
        assert!(Bootstrap::default().to_json().get("overload_manager").is_none());
        let b = Bootstrap {
            overload: Overload { max_heap_bytes: Some(1 << 30), max_downstream_connections: Some(50_000) },
            ..Default::default()
        };
        let om = &b.to_json()["overload_manager"];
        assert_eq!(om["resource_monitors"][0]["typed_config"]["max_heap_size_bytes"], 1u64 << 30);
        assert_eq!(om["resource_monitors"][1]["typed_config"]["max_active_downstream_connections"], 50_000);
        assert_eq!(om["actions"][0]["name"], "envoy.overload_actions.shrink_heap");
        assert_eq!(om["actions"][0]["triggers"][0]["threshold"]["value"], 0.95);
        assert_eq!(om["actions"][1]["triggers"][0]["threshold"]["value"], 0.98);
    }

    #[test]
    fn dns_lookup_family_only_for_names() {
        let by_ip = Bootstrap { dns_lookup_family: DnsLookupFamily::V4, ..Default::default() }.to_json();
        assert!(by_ip["static_resources"]["clusters"][0].get("dns_lookup_family").is_none());
        let by_name =
            Bootstrap { xds_address: "contour".into(), dns_lookup_family: DnsLookupFamily::V4, ..Default::default() };
        assert_eq!(by_name.to_json()["static_resources"]["clusters"][0]["dns_lookup_family"], "V4_ONLY");
    }
}
