//! What Gateway API status says, as plain data: the Gateway's, its listeners', and each route's
//! (and BackendTLSPolicy's) parent entries.

use std::sync::Arc;

use objects::ObjectKey;

/// One condition, in the Gateway API's vocabulary.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Condition {
    /// The type, such as `Accepted`.
    pub type_: &'static str,
    /// True or False.
    pub status: bool,
    /// A CamelCase reason.
    pub reason: &'static str,
    /// A human-readable message.
    pub message: String,
    /// The generation of the object this condition describes.
    pub observed_generation: i64,
}

/// What a Gateway's status should say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatewayStatus {
    /// The Gateway.
    pub key: ObjectKey,
    /// Its uid: a Gateway deleted and created again under the same name is another object.
    pub uid: String,
    /// Accepted and Programmed.
    pub conditions: Vec<Condition>,
    /// Addresses the Gateway is reachable on.
    pub addresses: Vec<super::super::addresses::StatusAddress>,
    /// One entry per listener, in spec order.
    pub listeners: Vec<ListenerStatus>,
    /// How many ListenerSets are attached (`attachedListenerSets`), for a Gateway that allows
    /// any (`spec.allowedListeners`); `None` leaves the field out.
    pub attached_listener_sets: Option<i32>,
}

/// What one listener's status should say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerStatus {
    /// The listener name.
    pub name: String,
    /// Route kinds the listener accepts.
    pub supported_kinds: Vec<&'static str>,
    /// How many routes attached.
    pub attached_routes: i32,
    /// Accepted, Programmed, ResolvedRefs, Conflicted.
    pub conditions: Vec<Condition>,
}

/// What a route's `status.parents` entries for our Gateways should say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteStatus {
    /// `HTTPRoute`, `GRPCRoute`, `TLSRoute`, `TCPRoute` or `UDPRoute`.
    pub kind: &'static str,
    /// The route.
    pub key: ObjectKey,
    /// Its uid (see [`GatewayStatus::uid`]).
    pub uid: String,
    /// One entry per parentRef naming one of our Gateways.
    pub parents: Vec<RouteParentStatus>,
    /// [`digest`] of `parents`, computed once.
    pub digest: u64,
}

impl RouteStatus {
    /// A route's (or policy's) entries, with their digest.
    pub fn new(kind: &'static str, key: ObjectKey, uid: String, parents: Vec<RouteParentStatus>) -> Self {
        let digest = digest(&parents);
        Self { kind, key, uid, parents, digest }
    }
}

/// A digest of a route's (or a BackendTLSPolicy's) entries: the same entries give the same
/// digest in every process.
pub fn digest(parents: &[RouteParentStatus]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    parents.hash(&mut h);
    h.finish()
}

/// One `status.parents` entry.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RouteParentStatus {
    /// The parentRef as the route wrote it (defaults filled in).
    pub parent: ParentRefStatus,
    /// Accepted and ResolvedRefs.
    pub conditions: Vec<Condition>,
}

/// A parentRef in a status entry.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ParentRefStatus {
    /// Group (`gateway.networking.k8s.io`).
    pub group: String,
    /// Kind (`Gateway`).
    pub kind: String,
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// Section name, if the route named one.
    pub section_name: Option<String>,
    /// Port, if the route named one.
    pub port: Option<i32>,
}

/// Everything status should say, for every object of ours.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatusSet {
    /// Gateways of our GatewayClasses.
    pub gateways: Vec<GatewayStatus>,
    /// ListenerSets whose parent is one of those Gateways (no addresses).
    pub listener_sets: Vec<GatewayStatus>,
    /// Routes with at least one parentRef to one of those Gateways, in the order of (kind,
    /// key); a route that did not change keeps its `Arc` from one computation to the next.
    pub routes: Vec<Arc<RouteStatus>>,
    /// BackendTLSPolicies those Gateways' routes reach: their `status.ancestors` entries (kind
    /// `BackendTLSPolicy`, the ancestors as parents).
    pub policies: Vec<RouteStatus>,
}

/// Whether a fleet's Envoys run its configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FleetState {
    /// Every resource was accepted by at least one Envoy.
    Programmed,
    /// No Envoy has accepted the current configuration yet.
    Pending,
    /// Envoy rejected part of it; the message is Envoy's.
    Rejected(String),
}
