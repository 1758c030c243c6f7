//! State-of-the-World and Delta messages to and from the state machine's terms.

use envoy_types::pb::envoy::config::core::v3::Node;
use envoy_types::pb::envoy::service::discovery::v3::{
    DeltaDiscoveryRequest, DeltaDiscoveryResponse, DiscoveryRequest, DiscoveryResponse, Resource as WireResource,
};
use envoy_types::pb::google::protobuf::Any;

use crate::stream::{Incoming, Mode, Outgoing};

/// One flavour of the xDS protocol.
pub(crate) trait Protocol: Send + 'static {
    type Req: Send + 'static;
    type Resp: Send + 'static;
    const MODE: Mode;
    fn node(req: &Self::Req) -> Option<&Node>;
    fn incoming(req: Self::Req) -> Incoming;
    fn outgoing(out: Outgoing) -> Self::Resp;
}

pub(crate) struct Sotw;
pub(crate) struct Delta;

impl Protocol for Sotw {
    type Req = DiscoveryRequest;
    type Resp = DiscoveryResponse;
    const MODE: Mode = Mode::Sotw;

    fn node(req: &DiscoveryRequest) -> Option<&Node> {
        req.node.as_ref()
    }

    fn incoming(req: DiscoveryRequest) -> Incoming {
        Incoming {
            type_url: req.type_url,
            nonce: req.response_nonce,
            error: req.error_detail.map(|s| s.message),
            names: req.resource_names,
            ..Default::default()
        }
    }

    fn outgoing(out: Outgoing) -> DiscoveryResponse {
        DiscoveryResponse {
            version_info: out.version_info,
            resources: out.resources.iter().map(|r| Any::clone(&r.body)).collect(),
            type_url: out.resource_type.type_url().into(),
            nonce: out.nonce,
            ..Default::default()
        }
    }
}

impl Protocol for Delta {
    type Req = DeltaDiscoveryRequest;
    type Resp = DeltaDiscoveryResponse;
    const MODE: Mode = Mode::Delta;

    fn node(req: &DeltaDiscoveryRequest) -> Option<&Node> {
        req.node.as_ref()
    }

    fn incoming(req: DeltaDiscoveryRequest) -> Incoming {
        Incoming {
            type_url: req.type_url,
            nonce: req.response_nonce,
            error: req.error_detail.map(|s| s.message),
            subscribe: req.resource_names_subscribe,
            unsubscribe: req.resource_names_unsubscribe,
            initial_versions: req.initial_resource_versions.into_iter().collect(),
            ..Default::default()
        }
    }

    fn outgoing(out: Outgoing) -> DeltaDiscoveryResponse {
        DeltaDiscoveryResponse {
            system_version_info: out.version_info,
            resources: out
                .resources
                .iter()
                .map(|r| WireResource {
                    name: r.name.to_string(),
                    version: r.version.to_string(),
                    resource: Some(Any::clone(&r.body)),
                    ..Default::default()
                })
                .collect(),
            type_url: out.resource_type.type_url().into(),
            removed_resources: out.removed.iter().map(|n| n.to_string()).collect(),
            nonce: out.nonce,
            ..Default::default()
        }
    }
}
