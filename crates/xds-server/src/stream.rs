//! The state machine of one xDS stream, free of I/O so its protocol rules can be tested directly.
//!
//! It decides what to send and when: types in make-before-break order (clusters, endpoints,
//! secrets, listeners, routes), one unacknowledged response per type, listeners and routes held
//! back until Envoy has the clusters and endpoints they need, and clusters or secrets that are no
//! longer wanted removed only after listeners and routes stopped using them.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::{Duration, Instant};

use xds::{FleetResources, Resource, ResourceType, Resources};

mod walks;

use crate::fleets::same_version;
use walks::{added, difference, difference_empty, set_version};

/// How a stream speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// State-of-the-World: responses carry the whole set of a type.
    Sotw,
    /// Incremental: responses carry changes and explicit removals.
    Delta,
}

/// A request, reduced to what the state machine needs.
#[derive(Debug, Clone, Default)]
pub struct Incoming {
    /// The type the request is about.
    pub type_url: String,
    /// The nonce of the response it answers (empty for the first request of a type).
    pub nonce: String,
    /// Envoy's `error_detail` message when the request is a NACK.
    pub error: Option<String>,
    /// State-of-the-World: the full list of names wanted.
    pub names: Vec<String>,
    /// Delta: names added to the subscription.
    pub subscribe: Vec<String>,
    /// Delta: names removed from the subscription.
    pub unsubscribe: Vec<String>,
    /// Delta: the versions Envoy already has (first request after a reconnect).
    pub initial_versions: BTreeMap<String, String>,
}

/// A response to send.
#[derive(Debug, Clone, PartialEq)]
pub struct Outgoing {
    /// The type.
    pub resource_type: ResourceType,
    /// The nonce Envoy will echo.
    pub nonce: String,
    /// The version of the whole set (State-of-the-World).
    pub version_info: String,
    /// The resources.
    pub resources: Vec<Resource>,
    /// Names removed (Delta only).
    pub removed: Vec<Arc<str>>,
}

/// What a request said about an earlier response.
#[derive(Debug, Clone, PartialEq)]
pub enum Feedback {
    /// Envoy accepted these resources.
    Ack(ResourceType, Vec<Resource>),
    /// Envoy rejected a response; these are the resources it most likely rejected.
    Nack(ResourceType, Vec<Resource>, String),
}

#[derive(Debug, Default)]
struct TypeState {
    subscribed: bool,
    wildcard: bool,
    names: BTreeSet<String>,
    /// What Envoy has, as far as we know (updated when we send).
    sent: Arc<Resources>,
    /// What Envoy confirmed: `sent` once the response in flight is ACKed.
    acked: Arc<Resources>,
    /// Bumped whenever `names` or `wildcard` change, for `want_cache`.
    names_generation: u64,
    /// The last `want`, to answer the next from: a type whose served map and subscription did
    /// not change costs a pointer compare, and one that did costs a walk over what changed.
    want_cache: Option<WantCache>,
    /// The names subscribed (`true`) and unsubscribed since `want_cache`, each a real change;
    /// `None` once the subscription changed in a way the log cannot replay (the wildcard,
    /// State-of-the-World's whole lists).
    names_log: Option<Vec<(String, bool)>>,
    in_flight: Option<InFlight>,
    latest_nonce: String,
    /// Versions Envoy rejected on this stream: not sent again. The fleet serves every stream the
    /// last accepted version instead, but a stream that does not follow the served snapshot at
    /// once (VHDS, which waits for its Envoy's clusters) would otherwise send them again.
    rejected: BTreeMap<Arc<str>, Arc<str>>,
    /// Names were subscribed that have not been answered yet. Envoy waits for an answer to each
    /// (a VHDS subscription holds its listener back until one comes), even an empty one.
    answer_owed: bool,
}

/// What [`StreamState::want`] answered last.
#[derive(Debug)]
struct WantCache {
    /// The served map it was for.
    from: Arc<Resources>,
    /// The subscription it was for.
    generation: u64,
    /// The answer: `from` itself when every name of it is subscribed.
    want: Arc<Resources>,
    /// How many names of `from` are not subscribed.
    unsubscribed: usize,
}

#[derive(Debug)]
struct InFlight {
    resources: Vec<Resource>,
    previous: Arc<Resources>,
}

/// The state of one stream.
#[derive(Debug)]
pub struct StreamState {
    mode: Mode,
    /// Per-type streams order nothing across types; ADS does.
    ordered: bool,
    only: Option<ResourceType>,
    types: BTreeMap<ResourceType, TypeState>,
    eds_owed: BTreeSet<Arc<str>>,
    eds_deadline: Option<Instant>,
    eds_wait: Duration,
    nonce: u64,
    others_synced: bool,
    vhds: bool,
}

impl StreamState {
    /// A new stream. `only` restricts it to one type (the per-type services).
    pub fn new(mode: Mode, only: Option<ResourceType>, eds_wait: Duration) -> Self {
        Self {
            mode,
            ordered: only.is_none(),
            only,
            types: ResourceType::ALL.into_iter().map(|t| (t, TypeState::default())).collect(),
            eds_owed: BTreeSet::new(),
            eds_deadline: None,
            eds_wait,
            nonce: 0,
            others_synced: true,
            vhds: false,
        }
    }

    /// Delta ADS with plain-HTTP route configurations' virtual hosts over VHDS instead of
    /// inline (see [`crate::Options::vhds`]).
    pub fn with_vhds(mut self) -> Self {
        self.vhds = true;
        self
    }

    /// When [`StreamState::pump`] should run again even without news.
    pub fn deadline(&self) -> Option<Instant> {
        self.eds_deadline.filter(|_| !self.eds_owed.is_empty())
    }

    /// Takes in a request: ACK or NACK of an earlier response, and subscription changes.
    pub fn on_request(&mut self, req: &Incoming) -> Result<Option<Feedback>, String> {
        let mut t =
            ResourceType::from_type_url(&req.type_url).ok_or_else(|| format!("unknown type {}", req.type_url))?;
        // Delta ADS gets route configurations whose virtual hosts come over VHDS.
        if t == ResourceType::Route && self.mode == Mode::Delta && self.ordered && self.vhds {
            t = ResourceType::RouteVhds;
        }
        if self.only.is_some_and(|o| o != t) {
            return Err(format!("type {} not served on this stream", req.type_url));
        }
        let mode = self.mode;
        let ts = self.types.get_mut(&t).expect("all types present");
        let first = !ts.subscribed;
        let mut feedback = None;
        if !req.nonce.is_empty() {
            if req.nonce != ts.latest_nonce {
                // A stale nonce: Envoy has not seen our latest response yet. State-of-the-World
                // requests are ignored whole; Delta subscription changes still count.
                if mode == Mode::Sotw {
                    return Ok(None);
                }
            } else if let Some(flight) = ts.in_flight.take() {
                if let Some(error) = &req.error {
                    let suspects = suspects(&flight, &ts.acked, error);
                    ts.rejected.extend(suspects.iter().map(|r| (Arc::clone(&r.name), Arc::clone(&r.version))));
                    ts.sent = flight.previous;
                    // Envoy keeps what it had; so do we.
                    let sent = Arc::make_mut(&mut ts.sent);
                    for r in ts.acked.iter() {
                        sent.insert(Arc::clone(r.0), r.1.clone());
                    }
                    if t == ResourceType::Cluster {
                        for r in &flight.resources {
                            self.eds_owed.remove(&r.name);
                        }
                    }
                    feedback = Some(Feedback::Nack(t, suspects, error.clone()));
                } else {
                    // Envoy has what we sent: the whole set (State-of-the-World wildcard types),
                    // or its changes on top of what it had.
                    ts.acked = Arc::clone(&ts.sent);
                    feedback = Some(Feedback::Ack(t, flight.resources));
                }
            }
        }
        ts.subscribed = true;
        match mode {
            Mode::Sotw => {
                let wildcard = t.is_wildcard() && (req.names.is_empty() || req.names.iter().any(|n| n == "*"));
                let names: BTreeSet<String> = req.names.iter().cloned().collect();
                if wildcard != ts.wildcard || names != ts.names {
                    ts.wildcard = wildcard;
                    ts.names = names;
                    ts.names_generation += 1;
                    ts.names_log = None;
                }
                if !ts.wildcard && ts.sent.keys().any(|n| !ts.names.contains(&**n)) {
                    let names = &ts.names;
                    Arc::make_mut(&mut ts.sent).retain(|n, _| names.contains(&**n));
                }
            }
            Mode::Delta => {
                // An ACK changes no subscription: `want` stays cached.
                if first || !req.subscribe.is_empty() || !req.unsubscribe.is_empty() {
                    ts.names_generation += 1;
                }
                if first {
                    // VHDS subscribes with no names and filters the answer itself.
                    ts.wildcard = (t.is_wildcard() || t.is_namespaced()) && req.subscribe.is_empty();
                    ts.answer_owed |= t.is_namespaced();
                    ts.names_log = None;
                }
                for name in &req.subscribe {
                    if name == "*" {
                        ts.wildcard = true;
                        ts.names_log = None;
                    } else if ts.names.insert(name.clone()) {
                        ts.answer_owed |= t.is_namespaced();
                        ts.log_names(name, true);
                    }
                }
                for name in &req.unsubscribe {
                    if name == "*" {
                        ts.wildcard = false;
                        ts.names_log = None;
                    }
                    if ts.names.remove(name) {
                        ts.log_names(name, false);
                    }
                    if t.is_namespaced() {
                        Arc::make_mut(&mut ts.sent).retain(|n, _| namespace(n) != name);
                        Arc::make_mut(&mut ts.acked).retain(|n, _| namespace(n) != name);
                    } else {
                        Arc::make_mut(&mut ts.sent).remove(name.as_str());
                        Arc::make_mut(&mut ts.acked).remove(name.as_str());
                    }
                }
                // After a reconnect Envoy tells us what it has; do not send it again. Versions
                // are content hashes, so what it has counts as accepted (a controller that
                // restarted learns here that Envoy runs its configuration).
                let mut held = Vec::new();
                for (name, version) in &req.initial_versions {
                    let resource = Resource {
                        name: name.as_str().into(),
                        version: version.as_str().into(),
                        body: Arc::new(Default::default()),
                    };
                    Arc::make_mut(&mut ts.sent).insert(Arc::clone(&resource.name), resource.clone());
                    Arc::make_mut(&mut ts.acked).insert(Arc::clone(&resource.name), resource.clone());
                    held.push(resource);
                }
                if feedback.is_none() && !held.is_empty() {
                    feedback = Some(Feedback::Ack(t, held));
                }
            }
        }
        Ok(feedback)
    }

    /// What to send now, given the fleet's served configuration.
    pub fn pump(&mut self, served: &FleetResources, now: Instant) -> Vec<Outgoing> {
        if self.eds_deadline.is_some_and(|d| now >= d) {
            self.eds_owed.clear();
            self.eds_deadline = None;
        }
        let fleet_empty = ResourceType::ALL.iter().all(|t| served.of(*t).is_empty());
        let mut out = Vec::new();
        let mut hold_dependents = false;
        let dependents_synced = ResourceType::ALL
            .into_iter()
            .filter(|t| !matches!(t, ResourceType::Cluster | ResourceType::Endpoint | ResourceType::Secret))
            .all(|t| self.synced(t, served))
            && self.others_synced;
        for t in ResourceType::ALL {
            if self.only.is_some_and(|o| o != t) {
                continue;
            }
            let prerequisite = matches!(t, ResourceType::Cluster | ResourceType::Endpoint | ResourceType::Secret);
            if self.ordered && !prerequisite && (hold_dependents || !self.eds_owed.is_empty()) {
                continue;
            }
            let ts = &self.types[&t];
            if !ts.subscribed {
                continue;
            }
            if ts.in_flight.is_some() {
                hold_dependents |= self.ordered && prerequisite;
                continue;
            }
            let keep_stale = self.ordered && prerequisite && !dependents_synced;
            let current = served.of(t);
            let ts = self.types.get_mut(&t).expect("all types present");
            ts.rejected.retain(|n, v| current.get(n).is_some_and(|r| r.version == *v));
            let mut want = self.want(t, served);
            let ts = &self.types[&t];
            // Anything sent that is no longer wanted (one walk over both maps, not a lookup each).
            if keep_stale && !Arc::ptr_eq(&want, &ts.sent) && added(&want, &ts.sent).next().is_some() {
                let wanted = Arc::make_mut(&mut want);
                for (name, r) in ts.sent.iter() {
                    if !wanted.contains_key(name) {
                        wanted.insert(Arc::clone(name), r.clone());
                    }
                }
            }
            let forced: BTreeSet<Arc<str>> = if t == ResourceType::Endpoint {
                self.eds_owed.iter().filter(|n| want.contains_key(*n)).cloned().collect()
            } else {
                BTreeSet::new()
            };
            if t == ResourceType::Endpoint {
                // Owed names Envoy does not ask for (any more) and cannot get: stop waiting.
                let names = &ts.names;
                let subscribed = |n: &str| ts.wildcard || names.contains(n);
                self.eds_owed.retain(|n| !subscribed(n) || want.contains_key(n));
            }
            let ts = &self.types[&t];
            // What Envoy has is what it should have: nothing to compare.
            let same = Arc::ptr_eq(&want, &ts.sent) && forced.is_empty();
            let (changed, removed) = if same { (Vec::new(), Vec::new()) } else { difference(&ts.sent, &want, &forced) };
            // State-of-the-World removes non-wildcard resources implicitly: nothing to say.
            let implicit = self.mode == Mode::Sotw && !t.is_wildcard();
            // Envoy's initialization waits for a first answer to its wildcard subscriptions (CDS,
            // LDS), even an empty one; without it a fleet with no clusters would wait out the
            // initial fetch timeout before asking for listeners. (A fleet with no configuration at
            // all, one the controller does not know, still gets nothing.)
            let first_owed = (t.is_wildcard() && ts.latest_nonce.is_empty() && !fleet_empty) || ts.answer_owed;
            if changed.is_empty() && (removed.is_empty() || implicit) && !first_owed {
                let ts = self.types.get_mut(&t).expect("all types present");
                if implicit && !removed.is_empty() {
                    Arc::make_mut(&mut ts.sent).retain(|n, _| want.contains_key(n));
                }
                if removed.is_empty() {
                    // The same content: share the map, so the next pump compares pointers.
                    ts.sent = want;
                }
                continue;
            }
            let resources = match self.mode {
                // Endpoints are not a wildcard type: a State-of-the-World response may carry only
                // the load assignments that changed (Envoy keeps the others, as with Delta), so a
                // one-pod change sends one, not every cluster's.
                Mode::Sotw if t == ResourceType::Endpoint => changed.clone(),
                Mode::Sotw => want.values().cloned().collect(),
                Mode::Delta => changed.clone(),
            };
            let removed = if self.mode == Mode::Delta { removed } else { Vec::new() };
            self.nonce += 1;
            let nonce = self.nonce.to_string();
            // State-of-the-World's version of the whole set; Delta has per-resource versions.
            let version_info = if self.mode == Mode::Sotw { set_version(&want) } else { nonce.clone() };
            let ts = self.types.get_mut(&t).expect("all types present");
            ts.answer_owed = false;
            let previous = std::mem::replace(&mut ts.sent, want);
            ts.in_flight = Some(InFlight { resources: resources.clone(), previous });
            ts.latest_nonce = nonce.clone();
            match t {
                ResourceType::Cluster => {
                    self.eds_owed.extend(changed.iter().map(|r| Arc::clone(&r.name)));
                    self.eds_deadline = Some(now + self.eds_wait);
                }
                ResourceType::Endpoint => {
                    for r in &resources {
                        self.eds_owed.remove(&r.name);
                    }
                }
                _ => {}
            }
            hold_dependents |= self.ordered && prerequisite;
            out.push(Outgoing { resource_type: t, nonce, version_info, resources, removed });
        }
        out
    }

    /// The resources of a type this stream should have, before ordering concerns. An unchanged
    /// type and subscription cost a pointer compare; otherwise the last answer is patched with
    /// what changed in the served map (a walk over the chunks the two maps do not share) and in
    /// the subscription. A new cluster at 50k costs a few entries, not a filtered copy of every
    /// load assignment.
    fn want(&mut self, t: ResourceType, served: &FleetResources) -> Arc<Resources> {
        let ts = self.types.get_mut(&t).expect("all types present");
        let namespaced = t.is_namespaced();
        let (Some(source), true) = (served.shared(t), ts.rejected.is_empty()) else {
            ts.want_cache = None;
            ts.names_log = None;
            return Arc::new(ts.filter(served.of(t), namespaced));
        };
        if let Some(c) = &ts.want_cache
            && Arc::ptr_eq(&c.from, source)
            && c.generation == ts.names_generation
        {
            return Arc::clone(&c.want);
        }
        let names = &ts.names;
        let subscribed = |name: &str| names.contains(if namespaced { namespace(name) } else { name });
        let log = ts.names_log.take().filter(|log| log.is_empty() || !namespaced);
        let (want, unsubscribed) = match (ts.wildcard, ts.want_cache.take(), log) {
            (true, _, _) => (Arc::clone(source), 0),
            (false, Some(c), Some(log)) => {
                let mut want = Arc::unwrap_or_clone(c.want);
                let mut unsubscribed = c.unsubscribed;
                // The subscription's changes, on the map the last answer was for.
                for (name, now) in log {
                    if let Some((n, r)) = c.from.get_key_value(name.as_str()) {
                        if now {
                            unsubscribed -= 1;
                            want.insert(Arc::clone(n), r.clone());
                        } else {
                            unsubscribed += 1;
                            want.remove(name.as_str());
                        }
                    }
                }
                // Then the served map's changes.
                c.from.diff(source, same_version, |name, before, now| {
                    match (subscribed(name), now) {
                        (true, Some(r)) => {
                            want.insert(Arc::clone(name), r.clone());
                        }
                        (true, None) => {
                            want.remove(name);
                        }
                        (false, Some(_)) if before.is_none() => unsubscribed += 1,
                        (false, None) => unsubscribed -= 1,
                        (false, Some(_)) => {}
                    }
                    ControlFlow::Continue(())
                });
                (Arc::new(want), unsubscribed)
            }
            _ => {
                let want = ts.filter(source, namespaced);
                let unsubscribed = source.len() - want.len();
                (Arc::new(want), unsubscribed)
            }
        };
        // Nothing filtered out: the served map itself, so the next call and the diff against what
        // was sent can tell unchanged chunks by pointer.
        let want = if unsubscribed == 0 { Arc::clone(source) } else { want };
        ts.want_cache = Some(WantCache {
            from: Arc::clone(source),
            generation: ts.names_generation,
            want: Arc::clone(&want),
            unsubscribed,
        });
        ts.names_log = Some(Vec::new());
        want
    }

    /// Narrows a subscription to one namespace: a VHDS stream serves the route configuration its
    /// gRPC metadata names, not every route configuration's virtual hosts.
    pub fn scope_to(&mut self, t: ResourceType, namespace: &str) {
        let ts = self.types.get_mut(&t).expect("all types present");
        ts.wildcard = false;
        ts.names = BTreeSet::from([namespace.to_string()]);
        ts.names_generation += 1;
        ts.names_log = None;
        ts.answer_owed = true;
    }

    /// Whether Envoy has this snapshot's clusters, endpoints and secrets: nothing of them
    /// unacknowledged, and the endpoints of every new cluster sent. What the VHDS stream of the
    /// same Envoy waits for before it sends virtual hosts that may use them.
    pub fn prerequisites_in_envoy(&self) -> bool {
        self.types[&ResourceType::Cluster].subscribed
            && self.eds_owed.is_empty()
            && [ResourceType::Cluster, ResourceType::Endpoint, ResourceType::Secret]
                .iter()
                .all(|t| self.types[t].in_flight.is_none())
    }

    /// Tells an ordered stream whether the Envoy's other streams (VHDS) are done with what the
    /// clusters: until then clusters and secrets no longer wanted are kept.
    pub fn set_others_synced(&mut self, synced: bool) {
        self.others_synced = synced;
    }

    /// Whether a type is sent, acknowledged and current.
    pub fn synced(&mut self, t: ResourceType, served: &FleetResources) -> bool {
        if !self.types[&t].subscribed {
            return true;
        }
        let want = self.want(t, served);
        let ts = &self.types[&t];
        ts.in_flight.is_none() && (Arc::ptr_eq(&ts.acked, &want) || difference_empty(&ts.acked, &want))
    }
}

impl TypeState {
    /// What this subscription wants of `map`, by a walk over all of it. What Envoy refused stays
    /// what it has: the last accepted version, or nothing.
    fn filter(&self, map: &Resources, namespaced: bool) -> Resources {
        map.iter()
            .filter(|(name, _)| self.wildcard || self.names.contains(if namespaced { namespace(name) } else { name }))
            .filter_map(|(n, r)| match self.rejected.get(n) {
                Some(v) if *v == r.version => self.acked.get(n).map(|a| (Arc::clone(n), a.clone())),
                _ => Some((Arc::clone(n), r.clone())),
            })
            .collect()
    }

    /// Notes a real change of the subscription for [`StreamState::want`]. A long log costs more
    /// to replay than a walk: past a bound it is dropped.
    fn log_names(&mut self, name: &str, subscribed: bool) {
        if let Some(log) = &mut self.names_log {
            if log.len() < 4096 {
                log.push((name.to_string(), subscribed));
            } else {
                self.names_log = None;
            }
        }
    }
}

/// The resources of a rejected response that Envoy most likely refused: those that changed, and
/// of those, the ones its message names (when it names any).
fn suspects(flight: &InFlight, acked: &Resources, error: &str) -> Vec<Resource> {
    let changed: Vec<Resource> = flight
        .resources
        .iter()
        .filter(|r| acked.get(&r.name).is_none_or(|a| a.version != r.version))
        .cloned()
        .collect();
    let named: Vec<Resource> = changed.iter().filter(|r| error.contains(&*r.name)).cloned().collect();
    if named.is_empty() { changed } else { named }
}

/// The route configuration a VHDS resource name (`<route configuration>/<host>`) belongs to.
fn namespace(name: &str) -> &str {
    name.rfind('/').map_or("", |i| &name[..i])
}

#[cfg(test)]
mod tests;
