//! Gateway API status: what the Gateway, its listeners and the routes' parent entries should say,
//! computed from the objects and from what the pipeline found (diagnostics, attachments, and
//! whether the fleet's Envoys accepted the configuration). Pure; the writer lives elsewhere.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use ir::{Diagnostic, reason};
use objects::{ObjectKey, Snapshot};

use super::l4_route::L4Kind;
use super::{GROUP, Options, ParentRef};

pub(super) mod types;

pub use types::{
    Condition, FleetState, GatewayStatus, ListenerStatus, ParentRefStatus, RouteParentStatus, RouteStatus, StatusSet,
    digest,
};

fn cond(
    type_: &'static str,
    status: bool,
    reason: &'static str,
    message: impl Into<String>,
    generation: i64,
) -> Condition {
    Condition { type_, status, reason, message: message.into(), observed_generation: generation }
}

/// Computes status. `attached` counts the routes attached to each `(fleet, listener)`;
/// `diagnostics` are the pipeline's (front end and DAG); `fleet` says how the Envoys are doing.
pub fn compute(
    snapshot: &Snapshot,
    options: &Options,
    diagnostics: &[Diagnostic],
    attached: &BTreeMap<(String, String), u32>,
    fleet: impl Fn(&str) -> FleetState,
) -> StatusSet {
    compute_cached(snapshot, options, diagnostics, attached, fleet, &mut RouteCache::default())
}

/// [`compute`], reusing what `routes` holds for routes that did not change since it was last
/// given to this function.
pub fn compute_cached(
    snapshot: &Snapshot,
    options: &Options,
    diagnostics: &[Diagnostic],
    attached: &BTreeMap<(String, String), u32>,
    fleet: impl Fn(&str) -> FleetState,
    routes: &mut RouteCache,
) -> StatusSet {
    let mut by_object: ByObject<'_> = BTreeMap::new();
    for d in diagnostics {
        by_object.entry((d.origin.kind, d.origin.namespace.as_str(), d.origin.name.as_str())).or_default().push(d);
    }
    let none = Vec::new();
    let mut out = StatusSet::default();
    let mut ours: Vec<&ObjectKey> = Vec::new();
    for (key, gateway) in snapshot.gateways.iter() {
        if !options.serves(snapshot, key, gateway) {
            continue;
        }
        ours.push(key);
        let generation = gateway.metadata.generation.unwrap_or(0);
        let found = by_object.get(&("Gateway", key.namespace.as_str(), key.name.as_str())).unwrap_or(&none);
        let fleet_id = options.fleet_id(key);
        let mut listeners = Vec::new();
        let mut valid_listeners = 0;
        let mut refused_listeners = 0;
        let mut unresolved_listeners = 0;
        for (i, spec) in gateway.spec.listeners.iter().enumerate() {
            let count = attached.get(&(fleet_id.clone(), spec.name.clone())).copied().unwrap_or(0);
            let (status, verdict) = listener_status(found, i, spec, spec.name.clone(), count, generation, false);
            refused_listeners += usize::from(verdict.refused);
            unresolved_listeners += usize::from(verdict.unresolved);
            valid_listeners += usize::from(verdict.ok);
            listeners.push(status);
        }
        // The ListenerSets naming the Gateway: those it allows count as attached once accepted.
        let mut attached_sets = 0;
        for child in super::listener_set::children(snapshot, key, gateway) {
            let state = || fleet(&fleet_id);
            let status = listener_set_status(&by_object, &child, attached, &fleet_id, state);
            attached_sets += i32::from(status.conditions.first().is_some_and(|c| c.status));
            out.listener_sets.push(status);
        }
        let super::addresses::Assignment { addresses, assigned } =
            super::addresses::assign(snapshot, options, key, gateway);
        let mut conditions = Vec::new();
        if valid_listeners == 0 && !gateway.spec.listeners.is_empty() {
            conditions.push(cond("Accepted", false, reason::LISTENERS_NOT_VALID, "No listener is valid", generation));
        } else if let Some(d) = found.iter().find(|d| d.reason == reason::INVALID_PARAMETERS) {
            conditions.push(cond("Accepted", false, reason::INVALID_PARAMETERS, d.message.clone(), generation));
        } else if let Some(d) = found.iter().find(|d| d.reason == reason::UNSUPPORTED_ADDRESS) {
            conditions.push(cond("Accepted", false, reason::UNSUPPORTED_ADDRESS, d.message.clone(), generation));
        } else if refused_listeners > 0 {
            let message = format!("{refused_listeners} listener(s) not accepted; the others are served");
            conditions.push(cond("Accepted", true, reason::LISTENERS_NOT_VALID, message, generation));
        } else {
            conditions.push(cond("Accepted", true, reason::ACCEPTED, "Gateway accepted", generation));
        }
        let unusable = found.iter().find(|d| d.reason == reason::ADDRESS_NOT_USABLE);
        let programmed = if let Some(d) = unusable {
            cond("Programmed", false, reason::ADDRESS_NOT_USABLE, format!("{}: {}", d.field, d.message), generation)
        } else if addresses.is_empty() && !(options.static_gateway.is_some() && no_spec_addresses(gateway)) {
            // A static Gateway that asks for no address is programmed without one, as upstream
            // does: its Envoy Service may have no load balancer at all.
            cond(
                "Programmed",
                false,
                reason::ADDRESS_NOT_ASSIGNED,
                "No address assigned to the Gateway yet",
                generation,
            )
        } else {
            programmed(fleet(&fleet_id), "Waiting for an Envoy of this Gateway to accept its configuration", generation)
        };
        conditions.push(programmed);
        // References of the Gateway itself, and a summary of its listeners'.
        let backend = found.iter().find(|d| d.field.starts_with("spec.tls.backend"));
        conditions.push(match backend {
            Some(d) => cond("ResolvedRefs", false, d.reason, d.message.clone(), generation),
            None if unresolved_listeners > 0 => {
                let message = format!("{unresolved_listeners} listener(s) have unresolved references");
                cond("ResolvedRefs", false, reason::LISTENERS_NOT_RESOLVED, message, generation)
            }
            None => cond("ResolvedRefs", true, reason::RESOLVED_REFS, "References resolved", generation),
        });
        if let Some((status, reason, message)) = assigned {
            conditions.push(cond("AddressesAssigned", status, reason, message, generation));
        }
        if super::listeners::insecure_frontend(gateway) {
            let message = "a frontend validation lets clients in without a valid certificate (AllowInsecureFallback)";
            conditions.push(cond(
                "InsecureFrontendValidationMode",
                true,
                reason::CONFIGURATION_CHANGED,
                message,
                generation,
            ));
        }
        let uid = gateway.metadata.uid.clone().unwrap_or_default();
        let attached_listener_sets = gateway.spec.allowed_listeners.is_some().then_some(attached_sets);
        out.gateways.push(GatewayStatus {
            key: key.clone(),
            uid,
            conditions,
            addresses,
            listeners,
            attached_listener_sets,
        });
    }

    let sets: Vec<&ObjectKey> = out.listener_sets.iter().filter(|s| !s.listeners.is_empty()).map(|s| &s.key).collect();
    // The entries depend on which parents are ours: when that changes, every route is computed.
    let parents: Vec<(&'static str, ObjectKey)> = ours
        .iter()
        .map(|k| ("Gateway", (*k).clone()))
        .chain(sets.iter().map(|k| ("ListenerSet", (*k).clone())))
        .collect();
    if routes.parents != parents {
        *routes = RouteCache { parents, kinds: BTreeMap::new() };
    }
    let is_ours = |p: &ParentRef| {
        let named = |keys: &[&ObjectKey]| keys.iter().any(|k| k.namespace == p.namespace && k.name == p.name);
        p.group == GROUP && ((p.kind == "Gateway" && named(&ours)) || (p.kind == "ListenerSet" && named(&sets)))
    };
    let rules = |r: Option<usize>| r.unwrap_or(0);
    let walk = Walk { by_object: &by_object, is_ours: &is_ours };
    // In the order of (kind, key).
    walk.kind("GRPCRoute", &snapshot.grpc_routes, routes, &mut out.routes, |r| {
        (&r.metadata, super::grpc_route::parent_refs(r), rules(r.spec.rules.as_ref().map(Vec::len)))
    });
    walk.kind("HTTPRoute", &snapshot.http_routes, routes, &mut out.routes, |r| {
        (&r.metadata, super::http_route::parent_refs(r), rules(r.spec.rules.as_ref().map(Vec::len)))
    });
    walk.kind("TCPRoute", &snapshot.tcp_routes, routes, &mut out.routes, |r| (&r.metadata, L4Kind::parent_refs(r), 0));
    walk.kind("TLSRoute", &snapshot.tls_routes, routes, &mut out.routes, |r| {
        (&r.metadata, super::tls_route::parent_refs(r), 0)
    });
    walk.kind("UDPRoute", &snapshot.udp_routes, routes, &mut out.routes, |r| (&r.metadata, L4Kind::parent_refs(r), 0));
    out.policies = super::backend_tls::status(snapshot, &ours);
    out
}

/// The diagnostics of each object, by (kind, namespace, name).
type ByObject<'a> = BTreeMap<(&'a str, &'a str, &'a str), Vec<&'a Diagnostic>>;

/// Route statuses of the last computation, kept for routes that did not change: each pass
/// walks the routes beside them, in key order, comparing pointers and the route's (usually no)
/// diagnostics, and computes only the routes that differ. At 50,000 HTTPRoutes computing every
/// route's entries took 100 ms or more per pass.
#[derive(Debug, Default)]
pub struct RouteCache {
    /// The Gateways and ListenerSets of ours the entries were computed against.
    parents: Vec<(&'static str, ObjectKey)>,
    /// Per route kind, in key order.
    kinds: BTreeMap<&'static str, Vec<CachedRoute>>,
}

#[derive(Debug)]
struct CachedRoute {
    key: ObjectKey,
    /// The route as computed from: the same `Arc` is the same object at the same generation.
    route: Arc<dyn std::any::Any + Send + Sync>,
    diagnostics: Vec<Diagnostic>,
    /// None when no parentRef names a parent of ours.
    status: Option<Arc<RouteStatus>>,
}

/// What computing the routes' entries reads besides the route.
struct Walk<'a, 'd, F: Fn(&ParentRef) -> bool> {
    by_object: &'a ByObject<'d>,
    is_ours: &'a F,
}

impl<F: Fn(&ParentRef) -> bool> Walk<'_, '_, F> {
    /// The entries of every route of `kind` in `objects` into `out`, from `cache` where the
    /// route and its diagnostics are what they were. `read` gives a route's metadata, its
    /// parentRefs and how many rules it has.
    fn kind<T: Send + Sync + 'static>(
        &self,
        kind: &'static str,
        objects: &objects::Objects<T>,
        cache: &mut RouteCache,
        out: &mut Vec<Arc<RouteStatus>>,
        read: impl Fn(&T) -> (&ObjectMeta, Vec<ParentRef>, usize),
    ) {
        let none = Vec::new();
        let mut previous = cache.kinds.remove(kind).unwrap_or_default().into_iter().peekable();
        let mut entries = Vec::with_capacity(objects.len());
        for (key, route) in objects.iter() {
            let found = self.by_object.get(&(kind, key.namespace.as_str(), key.name.as_str())).unwrap_or(&none);
            while previous.next_if(|e| e.key < *key).is_some() {}
            let kept = previous.next_if(|e| e.key == *key).filter(|e| {
                std::ptr::addr_eq(Arc::as_ptr(&e.route), Arc::as_ptr(route))
                    && e.diagnostics.iter().eq(found.iter().copied())
            });
            let entry = kept.unwrap_or_else(|| {
                let (meta, parents, rule_count) = read(route);
                let status = route_status(kind, key, meta, &parents, rule_count, found, self.is_ours);
                CachedRoute {
                    key: key.clone(),
                    route: Arc::clone(route) as Arc<dyn std::any::Any + Send + Sync>,
                    diagnostics: found.iter().map(|d| (*d).clone()).collect(),
                    status: status.map(Arc::new),
                }
            });
            out.extend(entry.status.clone());
            entries.push(entry);
        }
        cache.kinds.insert(kind, entries);
    }
}

/// One route's entries for the parents of ours it names; None when it names none.
fn route_status(
    kind: &'static str,
    key: &ObjectKey,
    meta: &ObjectMeta,
    parents: &[ParentRef],
    rule_count: usize,
    found: &[&Diagnostic],
    is_ours: &impl Fn(&ParentRef) -> bool,
) -> Option<RouteStatus> {
    let generation = meta.generation.unwrap_or(0);
    // Rules dropped because their matches repeat an older rule's (the DAG finds them per
    // virtual host): all of them and the route is not accepted, some and it is partly invalid.
    let dropped: BTreeSet<&str> =
        found.iter().filter(|d| d.reason == reason::RULE_MATCH_CONFLICT).map(|d| d.field.as_str()).collect();
    let all_dropped = rule_count > 0 && dropped.len() >= rule_count;
    let mut entries = Vec::new();
    for (i, parent) in parents.iter().enumerate() {
        if !is_ours(parent) {
            continue;
        }
        let field = format!("spec.parentRefs[{i}]");
        let accepted = match found.iter().find(|d| d.field == field) {
            Some(d) => cond("Accepted", false, d.reason, d.message.clone(), generation),
            None => match found.iter().find(|d| d.reason == reason::UNSUPPORTED_VALUE) {
                Some(d) => cond(
                    "Accepted",
                    false,
                    reason::UNSUPPORTED_VALUE,
                    format!("{}: {}", d.field, d.message),
                    generation,
                ),
                None if all_dropped => {
                    cond("Accepted", false, reason::RULE_MATCH_CONFLICT, conflict_message(kind), generation)
                }
                None => cond("Accepted", true, reason::ACCEPTED, "Accepted by the Gateway", generation),
            },
        };
        let resolved = match found.iter().find(|d| {
            (d.field.starts_with("spec.rules")
                && matches!(d.reason, reason::BACKEND_NOT_FOUND | reason::REF_NOT_PERMITTED | reason::INVALID_KIND))
                || d.field.starts_with("spec.hostnames")
        }) {
            Some(d) => cond("ResolvedRefs", false, d.reason, format!("{}: {}", d.field, d.message), generation),
            None => cond("ResolvedRefs", true, reason::RESOLVED_REFS, "References resolved", generation),
        };
        entries.push(RouteParentStatus {
            parent: ParentRefStatus {
                group: parent.group.clone(),
                kind: parent.kind.clone(),
                namespace: parent.namespace.clone(),
                name: parent.name.clone(),
                section_name: parent.section_name.clone(),
                port: parent.port,
            },
            conditions: if dropped.is_empty() || all_dropped {
                vec![accepted, resolved]
            } else {
                let partly = cond(
                    "PartiallyInvalid",
                    true,
                    reason::RULE_MATCH_PARTIALLY_CONFLICT,
                    partial_conflict_message(kind),
                    generation,
                );
                vec![accepted, resolved, partly]
            },
        });
    }
    (!entries.is_empty()).then(|| RouteStatus::new(kind, key.clone(), meta.uid.clone().unwrap_or_default(), entries))
}

/// `Programmed` as the fleet's Envoys say: accepted, not yet (`pending` says what is awaited), or
/// rejected.
fn programmed(state: FleetState, pending: &str, generation: i64) -> Condition {
    match state {
        FleetState::Programmed => {
            cond("Programmed", true, reason::PROGRAMMED, "Envoy accepted the configuration", generation)
        }
        FleetState::Pending => cond("Programmed", false, reason::PENDING, pending, generation),
        FleetState::Rejected(error) => {
            cond("Programmed", false, reason::INVALID, format!("Envoy rejected the configuration: {error}"), generation)
        }
    }
}

/// What a listener's conditions say, for its owner's own conditions.
struct ListenerVerdict {
    /// Not accepted, or in conflict.
    refused: bool,
    /// Some reference does not resolve.
    unresolved: bool,
    /// Served as declared.
    ok: bool,
}

/// A listener's status from the problems found with `spec.listeners[index]` of its owner. A
/// ListenerSet's listener that conflicts with an earlier one is not accepted at all (`refuse`);
/// a Gateway's own keeps `Accepted` and says `Conflicted`.
fn listener_status(
    found: &[&Diagnostic],
    index: usize,
    spec: &gateway_api::gateways::GatewayListeners,
    name: String,
    attached_routes: u32,
    generation: i64,
    refuse: bool,
) -> (ListenerStatus, ListenerVerdict) {
    let prefix = format!("spec.listeners[{index}]");
    let problems: Vec<&&Diagnostic> =
        found.iter().filter(|d| d.field == prefix || d.field.starts_with(&format!("{prefix}."))).collect();
    // The first of `reasons` (most specific first) that any problem has.
    let reason_of = |reasons: &[&str]| {
        reasons.iter().find_map(|r| problems.iter().find(|d| d.reason == *r)).map(|d| (d.reason, d.message.clone()))
    };
    let mut conditions = Vec::new();
    let conflict = reason_of(&[reason::PROTOCOL_CONFLICT, reason::HOSTNAME_CONFLICT]);
    // An invalid hostname is upstream's `Programmed=False`, `Invalid`; the spec's reason for not
    // accepting a listener for a field's value is `UnsupportedValue`.
    let mut unaccepted = reason_of(&[
        reason::UNSUPPORTED_PROTOCOL,
        reason::PORT_UNAVAILABLE,
        reason::NO_VALID_CA_CERTIFICATE,
        reason::INVALID,
    ])
    .map(|(r, m)| (if r == reason::INVALID { reason::UNSUPPORTED_VALUE } else { r }, m));
    if refuse && unaccepted.is_none() {
        unaccepted = conflict.clone();
    }
    let unresolved = reason_of(&[
        reason::INVALID_ROUTE_KINDS,
        reason::REF_NOT_PERMITTED,
        reason::BACKEND_NOT_FOUND,
        reason::INVALID_KIND,
        reason::INVALID_CERTIFICATE_REF,
        reason::INVALID_CA_CERTIFICATE_KIND,
        reason::INVALID_CA_CERTIFICATE_REF,
        reason::INVALID_TLS_CONFIG,
        reason::UNSUPPORTED_VALUE,
    ]);
    match &unaccepted {
        Some((reason, message)) => conditions.push(cond("Accepted", false, reason, message.clone(), generation)),
        None => conditions.push(cond("Accepted", true, reason::ACCEPTED, "Listener accepted", generation)),
    }
    match &conflict {
        Some((reason, message)) => conditions.push(cond("Conflicted", true, reason, message.clone(), generation)),
        None => conditions.push(cond("Conflicted", false, reason::NO_CONFLICTS, "No conflicts", generation)),
    }
    match &unresolved {
        Some((reason, message)) => {
            let reason = match *reason {
                // A listener filter's server: the reasons a route's backend gets.
                reason::REF_NOT_PERMITTED
                | reason::INVALID_ROUTE_KINDS
                | reason::INVALID_CA_CERTIFICATE_KIND
                | reason::INVALID_CA_CERTIFICATE_REF
                | reason::BACKEND_NOT_FOUND
                | reason::INVALID_KIND => reason,
                _ => reason::INVALID_CERTIFICATE_REF,
            };
            conditions.push(cond("ResolvedRefs", false, reason, message.clone(), generation));
        }
        None => conditions.push(cond("ResolvedRefs", true, reason::RESOLVED_REFS, "References resolved", generation)),
    }
    let ok = unaccepted.is_none() && conflict.is_none() && unresolved.is_none();
    if ok {
        conditions.push(cond("Programmed", true, reason::PROGRAMMED, "Listener programmed", generation));
    } else {
        // A refused conflicting listener says why; others are simply not served.
        let reason = conflict.as_ref().filter(|_| refuse).map_or(reason::INVALID, |(r, _)| *r);
        conditions.push(cond("Programmed", false, reason, "Listener is not served", generation));
    }
    let verdict =
        ListenerVerdict { refused: unaccepted.is_some() || conflict.is_some(), unresolved: unresolved.is_some(), ok };
    let supported_kinds = super::listeners::supported_kinds(spec).0;
    let status = ListenerStatus { name, supported_kinds, attached_routes: attached_routes as i32, conditions };
    (status, verdict)
}

/// A ListenerSet's status: `NotAllowed` when its Gateway does not let it attach; otherwise each
/// listener's, and `ListenersNotValid` when none is served.
fn listener_set_status(
    by_object: &BTreeMap<(&str, &str, &str), Vec<&Diagnostic>>,
    child: &super::listener_set::Child<'_>,
    attached: &BTreeMap<(String, String), u32>,
    fleet_id: &str,
    fleet: impl Fn() -> FleetState,
) -> GatewayStatus {
    let generation = child.set.metadata.generation.unwrap_or(0);
    let uid = child.set.metadata.uid.clone().unwrap_or_default();
    let key = child.key.clone();
    let both = |status, reason, message: &str| {
        vec![
            cond("Accepted", status, reason, message.to_string(), generation),
            cond("Programmed", status, reason, message.to_string(), generation),
        ]
    };
    if !child.allowed {
        let message = "the parent Gateway's allowedListeners does not admit this namespace";
        let conditions = both(false, reason::NOT_ALLOWED, message);
        return GatewayStatus {
            key,
            uid,
            conditions,
            addresses: Vec::new(),
            listeners: Vec::new(),
            attached_listener_sets: None,
        };
    }
    let none = Vec::new();
    let found = by_object.get(&("ListenerSet", key.namespace.as_str(), key.name.as_str())).unwrap_or(&none);
    let mut listeners = Vec::new();
    let mut valid = 0;
    for (i, spec) in child.listeners.iter().enumerate() {
        let name = super::listener_set::listener_name(&key, &spec.name);
        let count = attached.get(&(fleet_id.to_string(), name)).copied().unwrap_or(0);
        let (status, verdict) = listener_status(found, i, spec, spec.name.clone(), count, generation, true);
        valid += usize::from(verdict.ok);
        listeners.push(status);
    }
    let conditions = if valid == 0 {
        both(false, reason::LISTENERS_NOT_VALID, "No listener is valid")
    } else {
        let accepted = cond("Accepted", true, reason::ACCEPTED, "ListenerSet accepted", generation);
        vec![accepted, programmed(fleet(), "Waiting for an Envoy of the parent Gateway", generation)]
    };
    GatewayStatus { key, uid, conditions, addresses: Vec::new(), listeners, attached_listener_sets: None }
}

/// Accepted=False's message when every rule is dropped, in upstream's words (tools compare it).
fn conflict_message(kind: &str) -> String {
    format!("{kind}'s Match has conflict with other {kind}'s Match")
}

/// PartiallyInvalid's message, in upstream's words.
fn partial_conflict_message(kind: &str) -> String {
    format!(
        "Dropped Rule: some of {kind}'s rule(s) has(ve) been dropped because of conflict against other {kind}'s rule(s)"
    )
}

pub use super::addresses::GATEWAY_NAME_LABEL;

fn no_spec_addresses(gateway: &objects::types::Gateway) -> bool {
    gateway.spec.addresses.as_ref().is_none_or(Vec::is_empty)
}

/// Routes attached per `(fleet, listener)`, from the IR.
pub fn attached_routes(ir: &ir::Ir) -> BTreeMap<(String, String), u32> {
    let mut out = BTreeMap::new();
    for fleet in &ir.fleets {
        for l in &fleet.listeners {
            out.insert(
                (fleet.id.clone(), l.name.clone()),
                (l.http_routes.len() + l.tls_routes.len() + l.l4_routes.len()) as u32,
            );
        }
    }
    out
}
