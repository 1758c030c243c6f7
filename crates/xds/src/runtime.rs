//! The runtime layer `dynamic` (RTDS), as upstream serves it: Envoy's runtime keys that the
//! configuration sets, over the ADS stream the bootstrap's `rtds_layer` names.

use envoy_types::pb::envoy::service::runtime::v3::Runtime;
use envoy_types::pb::google::protobuf::{Any, value};
use prost::{Message, Name};

use crate::Resource;
use crate::ordered::OrderedStruct;
use crate::settings::{ListenerOptions, RuntimeValue};

/// The name of the layer and of its one resource (upstream's).
pub const RUNTIME_LAYER: &str = "dynamic";

/// The layer of one fleet: `http.max_requests_per_io_cycle`
/// (`listener.max-requests-per-io-cycle`) and each traffic listener's connection limit
/// (`listener.max-connections-per-listener`), then `runtime-settings`.
pub(crate) fn layer(fleet: &dag::FleetDag, settings: &ListenerOptions) -> Resource {
    let number = |n: u32| value::Kind::NumberValue(f64::from(n));
    let mut entries = Vec::new();
    if let Some(n) = settings.max_requests_per_io_cycle {
        entries.push(("http.max_requests_per_io_cycle".to_string(), number(n)));
    }
    if let Some(n) = settings.max_connections_per_listener {
        for l in &fleet.listeners {
            entries.push((format!("envoy.resource_limits.listener.{}.connection_limit", l.name), number(n)));
        }
    }
    for (key, v) in &settings.runtime {
        let kind = match v {
            RuntimeValue::Bool(b) => value::Kind::BoolValue(*b),
            RuntimeValue::Number(n) => value::Kind::NumberValue(*n),
            RuntimeValue::Text(t) => value::Kind::StringValue(t.clone()),
        };
        entries.push((key.clone(), kind));
    }
    let message = OrderedRuntime { name: RUNTIME_LAYER.into(), layer: Some(OrderedStruct::new(entries)) };
    Resource::from_any(RUNTIME_LAYER, Any { type_url: Runtime::type_url(), value: message.encode_to_vec() })
}

/// `envoy.service.runtime.v3.Runtime` with its layer's keys in order (same tags).
#[derive(Clone, PartialEq, Message)]
struct OrderedRuntime {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(message, optional, tag = "2")]
    layer: Option<OrderedStruct>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layer_carries_the_limits_as_envoy_reads_them() {
        let fleet = dag::FleetDag {
            listeners: vec![dag::DagListener {
                name: "ingress_http".into(),
                address: None,
                port: 8080,
                kind: dag::ListenerKind::Tls(Vec::new()),
            }],
            ..Default::default()
        };
        let settings = ListenerOptions {
            max_requests_per_io_cycle: Some(4),
            max_connections_per_listener: Some(100),
            ..Default::default()
        };
        let resource = layer(&fleet, &settings);
        assert_eq!(&*resource.name, RUNTIME_LAYER);
        let runtime = Runtime::decode(resource.body.value.as_slice()).unwrap();
        assert_eq!(runtime.name, "dynamic");
        let fields = runtime.layer.unwrap().fields;
        assert_eq!(fields["http.max_requests_per_io_cycle"].kind, Some(value::Kind::NumberValue(4.0)));
        assert_eq!(
            fields["envoy.resource_limits.listener.ingress_http.connection_limit"].kind,
            Some(value::Kind::NumberValue(100.0))
        );
        assert_eq!(layer(&fleet, &settings), resource, "the same bytes every time");
        let empty = Runtime::decode(layer(&fleet, &ListenerOptions::default()).body.value.as_slice()).unwrap();
        assert!(empty.layer.unwrap().fields.is_empty());
    }
}
