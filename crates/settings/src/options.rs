//! The options each stage is given, from the resolved settings.

use std::net::SocketAddr;

use crate::Settings;

impl Settings {
    /// The front ends', the DAG's and the compiler's options.
    pub fn controller_options(&self) -> controller::Options {
        controller::Options {
            gateway_api: frontends::gateway_api::Options {
                controller_name: self.gateway_controller_name.clone(),
                host_mode: self.gateway_host_mode,
                static_gateway: self.gateway_ref.clone(),
                envoy_service: Some(self.envoy_service()),
            },
            httpproxy: frontends::httpproxy::Options {
                class_names: self.ingress_class_name.clone(),
                root_namespaces: self.root_namespaces.clone(),
                http_port: self.envoy_service_http_port,
                https_port: self.envoy_service_https_port,
                disable_permit_insecure: self.disable_permit_insecure,
                fallback_certificate: self.fallback_certificate.clone(),
                default_headers: self.default_headers.clone(),
                enable_external_name_service: self.enable_external_name_service,
                global_authorization: self.global_ext_auth.clone(),
                default_global_rate_limit: self.rate_limit_service.as_ref().and_then(|(_, d)| d.clone()),
                enable_stat_prefix: self.enable_stat_prefix,
                geoip: self.geoip.clone(),
                default_outlier_detection: self.cluster.default_outlier_detection,
            },
            ingress: frontends::ingress::Options {
                class_names: self.ingress_class_name.clone(),
                http_port: self.envoy_service_http_port,
                https_port: self.envoy_service_https_port,
                default_headers: self.default_headers.clone().filter(|_| self.default_headers_on_ingress),
            },
            compile: xds::CompileOptions {
                default_address: self.envoy_service_http_address,
                stats_listener: Some(SocketAddr::new(self.stats_address, self.stats_port)),
                admin_listener: Some(SocketAddr::new(std::net::Ipv4Addr::LOCALHOST.into(), self.envoy_admin_port)),
                om_enforced_health_listener: self.om_enforced_health,
                metrics_listener: self.envoy_metrics.clone(),
                merge_slashes: !self.disable_merge_slashes,
                vhds: self.vhds,
                listener: self.listener.clone(),
                cluster: self.cluster.clone(),
                global_authorization: self
                    .global_ext_auth
                    .as_ref()
                    .and_then(frontends::httpproxy::global_authorization),
                rate_limit_service: self.rate_limit_service.as_ref().map(|(s, _)| s.clone()),
                geoip: self.geoip.clone(),
                tracing: self.tracing.clone(),
            },
            dag: dag::Options {
                external_names: self.enable_external_name_service,
                client_certificate: self.envoy_client_certificate.clone(),
            },
            holdoff: self.rebuild_holdoff,
            holdoff_max: self.rebuild_holdoff_max,
        }
    }

    /// The Envoy Service whose addresses go to Ingress status and the static Gateway's.
    pub fn envoy_service(&self) -> objects::ObjectKey {
        objects::ObjectKey::new(&self.envoy_service_namespace, &self.envoy_service_name)
    }

    /// The kinds upstream's `--disable-feature` values name, not to be watched.
    pub fn disabled_kinds(&self) -> Vec<objects::Kind> {
        use objects::Kind;
        self.disable_feature
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

    /// Where the metrics, health and debug servers listen.
    pub fn telemetry_addresses(&self) -> TelemetryAddresses {
        TelemetryAddresses {
            metrics: SocketAddr::new(self.http_address, self.http_port),
            health: SocketAddr::new(self.health_address, self.health_port),
            debug: SocketAddr::new(self.debug_http_address, self.debug_http_port),
        }
    }
}

/// Where contour-serve's own HTTP servers listen; metrics and health share a server when their
/// addresses are equal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TelemetryAddresses {
    /// `/metrics`.
    pub metrics: SocketAddr,
    /// `/healthz`, `/readyz`.
    pub health: SocketAddr,
    /// `/debug/dag`.
    pub debug: SocketAddr,
}
