//! ListenerSet: listeners that other teams add to a Gateway. A ListenerSet attaches to the
//! Gateway its `parentRef` names when the Gateway's `allowedListeners` lets its namespace in
//! (by default none is). Its listeners are served by the Gateway's fleet after the Gateway's
//! own, in the spec's precedence (the Gateway's, then ListenerSets oldest first, then by
//! namespace and name): a listener that conflicts with one before it is refused, the earlier one
//! keeps serving.

use std::collections::BTreeMap;
use std::sync::Arc;

use gateway_api::gateways::{GatewayAllowedListenersNamespacesFrom as From, GatewayListeners};
use ir::{Diagnostic, Protocol, reason};
use objects::gateway::GatewayBase;
use objects::types::ListenerSet;
use objects::{ObjectKey, Snapshot};

use super::{GROUP, error, refs};

/// A ListenerSet whose `parentRef` names a Gateway.
pub(crate) struct Child<'a> {
    pub key: &'a ObjectKey,
    pub set: &'a Arc<ListenerSet>,
    /// The Gateway's `allowedListeners` lets it attach.
    pub allowed: bool,
    /// Its listeners, read as a Gateway's (the two share their fields).
    pub listeners: Vec<GatewayListeners>,
}

/// The Gateway a ListenerSet's `parentRef` names (`None` for another kind of parent).
pub fn parent(key: &ObjectKey, set: &ListenerSet) -> Option<ObjectKey> {
    let p = &set.spec.parent_ref;
    let gateway = p.group.as_deref().unwrap_or(GROUP) == GROUP && p.kind.as_deref().unwrap_or("Gateway") == "Gateway";
    gateway.then(|| ObjectKey::new(p.namespace.as_deref().unwrap_or(&key.namespace), &p.name))
}

/// The Gateway the ListenerSet `key` names as its parent, if it exists as a ListenerSet.
pub(super) fn parent_of(snapshot: &Snapshot, key: &ObjectKey) -> Option<ObjectKey> {
    snapshot.listener_sets.get(key).and_then(|set| parent(key, set))
}

/// The ListenerSets whose `parentRef` names the Gateway `key`, in precedence order.
pub(crate) fn children<'a>(snapshot: &'a Snapshot, key: &ObjectKey, gateway: &GatewayBase) -> Vec<Child<'a>> {
    let mut out: Vec<Child<'a>> = snapshot
        .listener_sets
        .iter()
        .filter(|(k, set)| parent(k, set).as_ref() == Some(key))
        .map(|(k, set)| Child {
            key: k,
            set,
            allowed: admits(gateway, &k.namespace, Some(refs::namespace_labels(snapshot, &k.namespace))),
            listeners: set.spec.listeners.iter().map(as_gateway_listener).collect(),
        })
        .collect();
    out.sort_by_cached_key(|c| {
        (c.set.metadata.creation_timestamp.as_ref().map(|t| t.0), c.key.namespace.clone(), c.key.name.clone())
    });
    out
}

/// A ListenerSet's listener read as a Gateway's.
pub fn as_gateway_listener(l: &gateway_api::listenersets::ListenerSetListeners) -> GatewayListeners {
    // The two generated types serialize alike; a listener that did not would have no protocol
    // and be refused as unsupported.
    serde_json::to_value(l).ok().and_then(|v| serde_json::from_value(v).ok()).unwrap_or_default()
}

/// Whether a Gateway lets ListenerSets of `namespace` attach (`spec.allowedListeners`; none by
/// default). `labels` are the namespace's; when they are not known (`None`), a selector admits
/// every namespace.
pub fn admits(gateway: &GatewayBase, namespace: &str, labels: Option<&BTreeMap<String, String>>) -> bool {
    let Some(namespaces) = gateway.spec.allowed_listeners.as_ref().and_then(|a| a.namespaces.as_ref()) else {
        return false;
    };
    match namespaces.from {
        None | Some(From::None) => false,
        Some(From::Same) => gateway.metadata.namespace.as_deref() == Some(namespace),
        Some(From::All) => true,
        Some(From::Selector) => {
            let Some(selector) = namespaces.selector.as_ref() else { return false };
            let Some(labels) = labels else { return true };
            let expressions = selector
                .match_expressions
                .iter()
                .flatten()
                .map(|e| (e.key.as_str(), e.operator.as_str(), e.values.as_deref().unwrap_or_default()));
            refs::selects(selector.match_labels.as_ref(), expressions, labels)
        }
    }
}

/// The name of a ListenerSet's listener in the fleet (names need only be unique per
/// ListenerSet, so the set's namespace and name come first).
pub(super) fn listener_name(set: &ObjectKey, listener: &str) -> String {
    format!("{}/{}/{}", set.namespace, set.name, listener)
}

/// Refuses the listeners from `first` on that conflict with a listener before them (the
/// Gateway's, or an earlier ListenerSet's): another protocol family on the port, a second TCP or
/// UDP listener on it, or the same hostname. `owners[i]` declared `listeners[i]` as its
/// `spec.listeners[field[i]]`.
pub(super) fn refuse_conflicts(
    listeners: &mut [ir::Listener],
    first: usize,
    owners: &[(ir::Origin, usize)],
    diagnostics: &mut Vec<Diagnostic>,
) {
    let mut served: BTreeMap<(u16, bool), Vec<usize>> = BTreeMap::new();
    for (i, l) in listeners.iter().enumerate().take(first) {
        if l.port != 0 {
            served.entry((l.port, l.protocol == Protocol::Udp)).or_default().push(i);
        }
    }
    for i in first..listeners.len() {
        let l = &listeners[i];
        if l.port == 0 {
            continue;
        }
        let port = (l.port, l.protocol == Protocol::Udp);
        let before = served.get(&port).map(Vec::as_slice).unwrap_or_default();
        let conflict = if before.iter().any(|&j| listeners[j].protocol.port_family() != l.protocol.port_family()) {
            Some((reason::PROTOCOL_CONFLICT, format!("port {} is served with another protocol", l.port)))
        } else if l.protocol.port_family() == 2 && !before.is_empty() {
            Some((reason::PROTOCOL_CONFLICT, format!("another {:?} listener uses port {}", l.protocol, l.port)))
        } else if before.iter().any(|&j| listeners[j].hostname == l.hostname) {
            Some((reason::HOSTNAME_CONFLICT, format!("another listener on port {} has the same hostname", l.port)))
        } else {
            None
        };
        match conflict {
            Some((reason, message)) => {
                let (origin, index) = &owners[i - first];
                let field = format!("spec.listeners[{index}]");
                diagnostics.push(error(origin, field, reason, message));
                listeners[i].port = 0;
            }
            None => served.entry(port).or_default().push(i),
        }
    }
}
