//! Envoy's bootstrap configuration: node identity, admin endpoint, and ADS to the controller.
//!
//! Rendered as JSON from typed settings (no string templating of user input). Everything else
//! Envoy needs arrives over ADS.

use std::net::IpAddr;

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
    /// Incremental (Delta) ADS instead of State-of-the-World.
    pub delta: bool,
    /// mTLS to the controller, if any.
    pub tls: Option<XdsTls>,
}

impl Default for Bootstrap {
    fn default() -> Self {
        Self {
            xds_address: "127.0.0.1".into(),
            xds_port: 8001,
            admin: Admin::Unix("/admin/admin.sock".into()),
            fleet: "contour".into(),
            node_id: "envoy".into(),
            delta: false,
            tls: None,
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
        let mut xds = json!({
            "name": XDS_CLUSTER,
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
        if let Some(tls) = &self.tls {
            xds["transport_socket"] = json!({
                "name": "envoy.transport_sockets.tls",
                "typed_config": {
                    "@type": "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext",
                    "common_tls_context": {
                        "tls_params": {"tls_maximum_protocol_version": "TLSv1_3", "tls_minimum_protocol_version": "TLSv1_3"},
                        "tls_certificates": [{
                            "certificate_chain": {"filename": tls.cert_file},
                            "private_key": {"filename": tls.key_file}
                        }],
                        "validation_context": {
                            "trusted_ca": {"filename": tls.ca_file},
                            "match_typed_subject_alt_names": [{"san_type": "DNS", "matcher": {"exact": "contour"}}]
                        }
                    }
                }
            });
        }
        let ads = json!({"ads": {}, "resource_api_version": "V3"});
        json!({
            "node": {"id": self.node_id, "cluster": self.fleet},
            "admin": {"address": admin_address},
            "dynamic_resources": {
                "ads_config": {
                    "api_type": if self.delta { "DELTA_GRPC" } else { "GRPC" },
                    "transport_api_version": "V3",
                    "grpc_services": [{"envoy_grpc": {"cluster_name": XDS_CLUSTER}}],
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
                {"name": "admin", "admin_layer": {}}
            ]}
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delta_and_tls_change_what_they_should() {
        let plain = Bootstrap::default().to_json();
        assert_eq!(plain["dynamic_resources"]["ads_config"]["api_type"], "GRPC");
        assert_eq!(plain["static_resources"]["clusters"][0]["type"], "STATIC");
        assert!(plain["static_resources"]["clusters"][0].get("transport_socket").is_none());
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
}
