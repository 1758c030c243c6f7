//! Tracing (upstream's `tracing`): every connection manager of the default fleet samples
//! requests and sends their spans to an OpenTelemetry collector, an ExtensionService, over gRPC.

use envoy_types::pb::envoy::config::core::v3::{GrpcService, grpc_service};
use envoy_types::pb::envoy::config::trace::v3::{OpenTelemetryConfig, tracing::http};
use envoy_types::pb::envoy::extensions::filters::network::http_connection_manager::v3::http_connection_manager;
use envoy_types::pb::envoy::r#type::tracing::v3::{CustomTag as EnvoyTag, custom_tag};
use envoy_types::pb::envoy::r#type::v3::Percent;
use envoy_types::pb::google::protobuf::{BoolValue, UInt32Value};
use envoy_types::util::pack_any;

/// The tracer's settings, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Tracing {
    /// The collector's ExtensionService cluster, `extension/<namespace>/<name>`.
    pub cluster: String,
    /// The spans' `service.name`.
    pub service_name: String,
    /// The percentage of requests traced, 0 to 100.
    pub overall_sampling: f64,
    /// The longest request path kept in the `http.url` tag.
    pub max_path_tag_length: u32,
    /// Tags every span carries.
    pub custom_tags: Vec<CustomTag>,
}

/// A tag of every span.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomTag {
    /// The tag's name.
    pub name: String,
    /// Where its value comes from.
    pub value: TagValue,
}

/// Where a tag's value comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TagValue {
    /// Always this.
    Literal(String),
    /// This environment variable of the Envoy process.
    Environment(String),
    /// This request header.
    RequestHeader(String),
}

/// The connection manager's tracing towards `collector`, as upstream configures it: Envoy's
/// OpenTelemetry tracer calling the collector with the ExtensionService's authority and response
/// timeout, and a span for every upstream request besides the downstream one.
pub(crate) fn config(tracing: &Tracing, collector: &ir::ExtensionService) -> http_connection_manager::Tracing {
    let grpc = GrpcService {
        target_specifier: Some(grpc_service::TargetSpecifier::EnvoyGrpc(grpc_service::EnvoyGrpc {
            cluster_name: tracing.cluster.clone(),
            authority: collector.authority(),
            ..Default::default()
        })),
        timeout: collector.response_timeout_ms.map(crate::duration_ms),
        ..Default::default()
    };
    let provider = envoy_types::pb::envoy::config::trace::v3::tracing::Http {
        name: "envoy.tracers.opentelemetry".into(),
        config_type: Some(http::ConfigType::TypedConfig(pack_any(OpenTelemetryConfig {
            grpc_service: Some(grpc),
            service_name: tracing.service_name.clone(),
            ..Default::default()
        }))),
    };
    http_connection_manager::Tracing {
        overall_sampling: Some(Percent { value: tracing.overall_sampling }),
        max_path_tag_length: Some(UInt32Value { value: tracing.max_path_tag_length }),
        custom_tags: tracing.custom_tags.iter().map(custom_tag).collect(),
        provider: Some(provider),
        spawn_upstream_span: Some(BoolValue { value: true }),
        ..Default::default()
    }
}

fn custom_tag(tag: &CustomTag) -> EnvoyTag {
    let r#type = match &tag.value {
        TagValue::Literal(value) => custom_tag::Type::Literal(custom_tag::Literal { value: value.clone() }),
        TagValue::Environment(name) => {
            custom_tag::Type::Environment(custom_tag::Environment { name: name.clone(), ..Default::default() })
        }
        TagValue::RequestHeader(name) => {
            custom_tag::Type::RequestHeader(custom_tag::Header { name: name.clone(), ..Default::default() })
        }
    };
    EnvoyTag { tag: tag.name.clone(), r#type: Some(r#type) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collector(timeout: Option<u64>, subject: Option<&str>) -> ir::ExtensionService {
        ir::ExtensionService {
            origin: ir::ObjectRef { namespace: "obs".into(), name: "otel".into() },
            services: Vec::new(),
            protocol: Some(ir::UpstreamProtocol::H2c),
            validation: subject.map(|s| ir::UpstreamValidation {
                ca: ir::ObjectRef { namespace: "obs".into(), name: "ca".into() },
                ca_kind: ir::CaKind::Secret,
                subject_names: vec![s.into()],
                subject_uris: Vec::new(),
            }),
            response_timeout_ms: timeout,
            idle_connection_timeout_ms: None,
            load_balancer: Default::default(),
            circuit_breakers: [None; 5],
            cluster: None,
        }
    }

    fn settings() -> Tracing {
        Tracing {
            cluster: "extension/obs/otel".into(),
            service_name: "contour".into(),
            overall_sampling: 42.5,
            max_path_tag_length: 64,
            custom_tags: vec![
                CustomTag { name: "podName".into(), value: TagValue::Environment("HOSTNAME".into()) },
                CustomTag { name: "team".into(), value: TagValue::Literal("web".into()) },
                CustomTag { name: "agent".into(), value: TagValue::RequestHeader("user-agent".into()) },
            ],
        }
    }

    fn otel(t: &http_connection_manager::Tracing) -> OpenTelemetryConfig {
        let provider = t.provider.as_ref().expect("a provider");
        assert_eq!(provider.name, "envoy.tracers.opentelemetry");
        let Some(http::ConfigType::TypedConfig(any)) = &provider.config_type else { panic!("typed config") };
        prost::Message::decode(any.value.as_slice()).expect("an OpenTelemetryConfig")
    }

    #[test]
    fn the_tracer_calls_the_collector_with_its_authority_and_timeout() {
        let t = config(&settings(), &collector(Some(1500), None));
        assert_eq!(t.overall_sampling.map(|p| p.value), Some(42.5));
        assert_eq!(t.max_path_tag_length.map(|v| v.value), Some(64));
        assert_eq!(t.spawn_upstream_span.map(|v| v.value), Some(true));
        let exporter = otel(&t);
        assert_eq!(exporter.service_name, "contour");
        let grpc = exporter.grpc_service.expect("gRPC");
        assert_eq!(grpc.timeout.map(|d| (d.seconds, d.nanos)), Some((1, 500_000_000)));
        let Some(grpc_service::TargetSpecifier::EnvoyGrpc(envoy)) = grpc.target_specifier else { panic!("Envoy gRPC") };
        assert_eq!(
            (envoy.cluster_name.as_str(), envoy.authority.as_str()),
            ("extension/obs/otel", "extension.obs.otel")
        );
        // The verified subject name is the authority, as upstream.
        let t = config(&settings(), &collector(None, Some("otel.example.com")));
        let grpc = otel(&t).grpc_service.expect("gRPC");
        assert_eq!(grpc.timeout, None);
        let Some(grpc_service::TargetSpecifier::EnvoyGrpc(envoy)) = grpc.target_specifier else { panic!("Envoy gRPC") };
        assert_eq!(envoy.authority, "otel.example.com");
    }

    #[test]
    fn custom_tags_keep_their_order_and_source() {
        let t = config(&settings(), &collector(None, None));
        let tags: Vec<(String, String)> = t
            .custom_tags
            .iter()
            .map(|tag| {
                let source = match tag.r#type.as_ref().expect("a type") {
                    custom_tag::Type::Literal(l) => format!("literal {}", l.value),
                    custom_tag::Type::Environment(e) => format!("env {}", e.name),
                    custom_tag::Type::RequestHeader(h) => format!("header {}", h.name),
                    other => format!("{other:?}"),
                };
                (tag.tag.clone(), source)
            })
            .collect();
        let expected = [("podName", "env HOSTNAME"), ("team", "literal web"), ("agent", "header user-agent")];
        assert_eq!(tags, expected.map(|(a, b)| (a.to_string(), b.to_string())));
    }
}
