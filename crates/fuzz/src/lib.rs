//! Hostile objects for the pipeline.
//!
//! [`Base`] is a set of real objects (`fixtures/base.yaml`: one of each kind the controller
//! reads, using the features their users use most). A [`Case`] is a few [`Change`]s to it: one
//! field of one object replaced by a hostile value (extreme strings and numbers, regexes RE2
//! refuses or Envoy cannot compile, control characters, `\r\n` in header names), a field or a
//! list emptied, duplicated or repeated thousands of times, a value of the wrong type, or a
//! structural change (include cycles, deep include chains, 10k routes on one virtual host, a
//! duplicate fqdn). [`case`] generates cases as a `proptest` strategy, so the pure property
//! tests shrink what they find, and the end-to-end run draws the same cases from a seed.
//!
//! The objects named `sentinel` are never changed: whatever a case does to the rest, they
//! must keep serving.

pub mod corpus;
mod hostile;

use std::fmt;

use objects::Snapshot;
use proptest::prelude::*;
use serde_json::{Value, json};

pub use hostile::{NUMBERS, STRINGS};

/// The fixture every case starts from, with `%PORT%` placeholders.
const BASE: &str = include_str!("fixtures/base.yaml");

/// The ports the base objects use.
#[derive(Debug, Clone, Copy)]
pub struct Ports {
    /// The Gateway's HTTP listener.
    pub http: u16,
    /// Its HTTPS listener.
    pub https: u16,
    /// Its TLS passthrough listener.
    pub tls: u16,
    /// Its TCP listener.
    pub tcp: u16,
    /// Its UDP listener.
    pub udp: u16,
    /// The listener of the ListenerSet attached to it.
    pub set: u16,
    /// Where every EndpointSlice with a live backend points.
    pub backend: std::net::SocketAddr,
}

impl Default for Ports {
    fn default() -> Self {
        Self {
            http: 8080,
            https: 8443,
            tls: 9443,
            tcp: 9000,
            udp: 9053,
            set: 8081,
            backend: std::net::SocketAddr::from(([127, 0, 0, 1], 3000)),
        }
    }
}

/// The base objects, and every place in them a change can hit.
#[derive(Debug, Clone)]
pub struct Base {
    objects: Vec<Value>,
    sites: Vec<Site>,
    ports: Ports,
}

/// One node of one object: where a [`Change::Field`] lands.
#[derive(Debug, Clone)]
struct Site {
    object: usize,
    /// A JSON pointer into the object.
    pointer: String,
}

/// What a field change does; how it applies depends on the value found there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// A string becomes one of [`STRINGS`], a number one of [`NUMBERS`] (both picked by the
    /// change's `pick`), a boolean flips, a list gets its first item twice, an object loses a key.
    Hostile,
    /// The field goes.
    Remove,
    /// The field is `null`.
    Null,
    /// A string becomes a number and anything else a string.
    WrongType,
    /// A list or an object is emptied; a string becomes `""`; a number `0`.
    Empty,
    /// A list's first item is repeated `pick` times (at most 10,000).
    Repeat,
}

/// A change that reshapes objects rather than one field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Structure {
    /// The child HTTPProxy includes the root that includes it.
    IncludeCycle,
    /// The root HTTPProxy includes itself.
    SelfInclude,
    /// The root includes a chain of this many HTTPProxies, each including the next.
    IncludeChain(u16),
    /// The root HTTPProxy gets this many routes, each its own prefix.
    ManyRoutes(u16),
    /// The HTTPRoute gets this many rules, each its own path.
    ManyRules(u16),
    /// A second root HTTPProxy claims the root's fqdn.
    DuplicateFqdn,
    /// A second Gateway listener claims the HTTP listener's name and port.
    DuplicateListener,
}

/// One change of a [`Case`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The node at a site (an index into [`Base`]'s sites, wrapped) changes by `op`.
    Field {
        /// Which site (taken modulo the number of sites).
        site: usize,
        /// What happens there.
        op: Op,
        /// Which hostile value, or how many repeats.
        pick: usize,
    },
    /// A structural change.
    Structure(Structure),
}

/// A few changes to the base objects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Case {
    /// Applied in order; a change whose site an earlier one removed does nothing.
    pub changes: Vec<Change>,
}

/// The objects a case produced, as the controller reads them.
#[derive(Debug)]
pub struct Objects {
    /// Every object that reads as its kind.
    pub snapshot: Snapshot,
    /// The objects that do not (wrong types, missing required fields): the API server, or the
    /// directory source, refuses them, with this message.
    pub unreadable: Vec<String>,
    /// Every object after the changes, readable or not, in their JSON form.
    pub json: Vec<Value>,
}

impl Base {
    /// The base objects with `ports` filled in.
    pub fn load(ports: &Ports) -> Self {
        let text = fill(BASE, ports);
        let objects: Vec<Value> = serde_yaml::Deserializer::from_str(&text)
            .map(|doc| serde::Deserialize::deserialize(doc).expect("the base fixture is YAML"))
            .filter(|v: &Value| !v.is_null())
            .collect();
        let mut sites = Vec::new();
        for (object, value) in objects.iter().enumerate() {
            if !sentinel(value) {
                collect_sites(object, value, String::new(), &mut sites);
            }
        }
        Self { objects, sites, ports: *ports }
    }

    /// `text` with the ports in place of their placeholders.
    pub fn fill(&self, text: &str) -> String {
        fill(text, &self.ports)
    }

    /// The base objects, placeholders filled.
    pub fn objects(&self) -> &[Value] {
        &self.objects
    }

    /// How many places a field change can hit.
    pub fn sites(&self) -> usize {
        self.sites.len()
    }

    /// The objects after `case`'s changes.
    pub fn apply(&self, case: &Case) -> Objects {
        let mut json = self.objects.clone();
        for change in &case.changes {
            match *change {
                Change::Field { site, op, pick } => {
                    let site = &self.sites[site % self.sites.len()];
                    change_field(&mut json[site.object], &site.pointer, op, pick);
                }
                Change::Structure(s) => reshape(&mut json, s),
            }
        }
        Objects::read(json)
    }

    /// Whether a case changes an object of `kind` (a field of one, or by its structure).
    pub fn touches(&self, case: &Case, kind: &str) -> bool {
        case.changes.iter().any(|c| match *c {
            Change::Field { site, .. } => {
                self.objects[self.sites[site % self.sites.len()].object]["kind"].as_str() == Some(kind)
            }
            Change::Structure(Structure::DuplicateListener) => kind == "Gateway",
            Change::Structure(Structure::ManyRules(_)) => kind == "HTTPRoute",
            Change::Structure(_) => kind == "HTTPProxy",
        })
    }

    /// What a case does, in words: each change's object and field.
    pub fn describe(&self, case: &Case) -> String {
        let mut out = Vec::new();
        for change in &case.changes {
            match *change {
                Change::Field { site, op, pick } => {
                    let site = &self.sites[site % self.sites.len()];
                    let o = &self.objects[site.object];
                    let mut changed = o.clone();
                    change_field(&mut changed, &site.pointer, op, pick);
                    let what = match (op, changed.pointer(&site.pointer)) {
                        (Op::Repeat, _) => format!("repeat x{}", repeats(pick)),
                        (Op::Remove, _) => "removed".to_string(),
                        (_, Some(v)) => {
                            let text = v.to_string();
                            match text.char_indices().nth(60) {
                                Some((i, _)) => format!("{op:?} {}... ({} bytes)", &text[..i], text.len()),
                                None => format!("{op:?} {text}"),
                            }
                        }
                        (_, None) => format!("{op:?}"),
                    };
                    out.push(format!(
                        "{} {}/{} {}: {what}",
                        o["kind"].as_str().unwrap_or_default(),
                        o["metadata"]["namespace"].as_str().unwrap_or_default(),
                        o["metadata"]["name"].as_str().unwrap_or_default(),
                        site.pointer
                    ));
                }
                Change::Structure(s) => out.push(format!("{s:?}")),
            }
        }
        out.join("; ")
    }
}

impl Objects {
    /// Reads every object as the controller would.
    fn read(json: Vec<Value>) -> Self {
        let mut snapshot = Snapshot::default();
        let mut unreadable = Vec::new();
        for value in &json {
            match objects::parse_json(value.clone()) {
                Ok(object) => {
                    snapshot.insert(object);
                }
                Err(e) => unreadable.push(e.to_string()),
            }
        }
        Objects { snapshot, unreadable, json }
    }

    /// Every object as one multi-document YAML text: a failing case, ready to become a fixture.
    pub fn yaml(&self) -> String {
        self.json.iter().map(|v| serde_yaml::to_string(v).unwrap_or_default()).collect::<Vec<_>>().join("---\n")
    }
}

impl fmt::Display for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.changes)
    }
}

/// Cases of one to three changes; field changes are the most common, hostile values the
/// most common of those.
pub fn case(base: &Base) -> impl Strategy<Value = Case> + use<> {
    let sites = base.sites();
    let op = prop_oneof![
        8 => Just(Op::Hostile),
        1 => Just(Op::Remove),
        1 => Just(Op::Null),
        1 => Just(Op::WrongType),
        1 => Just(Op::Empty),
        1 => Just(Op::Repeat),
    ];
    let field = (0..sites, op, 0..usize::MAX).prop_map(|(site, op, pick)| Change::Field { site, op, pick });
    let structure = prop_oneof![
        Just(Structure::IncludeCycle),
        Just(Structure::SelfInclude),
        (2u16..200).prop_map(Structure::IncludeChain),
        prop_oneof![Just(100u16), Just(1000), Just(10000)].prop_map(Structure::ManyRoutes),
        prop_oneof![Just(16u16), Just(1000)].prop_map(Structure::ManyRules),
        Just(Structure::DuplicateFqdn),
        Just(Structure::DuplicateListener),
    ]
    .prop_map(Change::Structure);
    let change = prop_oneof![12 => field, 1 => structure];
    proptest::collection::vec(change, 1..=3).prop_map(|changes| Case { changes })
}

fn fill(text: &str, ports: &Ports) -> String {
    text.replace("%HTTP%", &ports.http.to_string())
        .replace("%HTTPS%", &ports.https.to_string())
        .replace("%TLS%", &ports.tls.to_string())
        .replace("%TCP%", &ports.tcp.to_string())
        .replace("%UDP%", &ports.udp.to_string())
        .replace("%SET%", &ports.set.to_string())
        .replace("%BACKEND%", &ports.backend.port().to_string())
        .replace("%BACKEND_IP%", &ports.backend.ip().to_string())
}

/// Whether an object is one of the sentinels no change may touch.
fn sentinel(object: &Value) -> bool {
    object["metadata"]["name"].as_str().is_some_and(|n| n.starts_with("sentinel"))
}

fn collect_sites(object: usize, value: &Value, pointer: String, out: &mut Vec<Site>) {
    // What an object is, and which Gateway it is (its fleet), stay put.
    let fixed = ["/apiVersion", "/kind"];
    if !pointer.is_empty() && !fixed.contains(&pointer.as_str()) {
        out.push(Site { object, pointer: pointer.clone() });
    }
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                let escaped = k.replace('~', "~0").replace('/', "~1");
                collect_sites(object, v, format!("{pointer}/{escaped}"), out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                collect_sites(object, v, format!("{pointer}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// How many times [`Op::Repeat`] repeats for a pick.
fn repeats(pick: usize) -> usize {
    [2, 3, 100, 1000, 10000][pick % 5]
}

fn change_field(object: &mut Value, pointer: &str, op: Op, pick: usize) {
    if op == Op::Remove {
        let (parent, last) = pointer.rsplit_once('/').unwrap_or(("", pointer));
        let last = last.replace("~1", "/").replace("~0", "~");
        match object.pointer_mut(parent) {
            Some(Value::Object(map)) => {
                map.remove(&last);
            }
            Some(Value::Array(items)) => {
                if let Ok(i) = last.parse::<usize>()
                    && i < items.len()
                {
                    items.remove(i);
                }
            }
            _ => {}
        }
        return;
    }
    let Some(node) = object.pointer_mut(pointer) else { return };
    *node = match (op, &*node) {
        (Op::Null, _) => Value::Null,
        (Op::WrongType, Value::String(_)) => json!(80),
        (Op::WrongType, _) => json!("80"),
        (Op::Empty, Value::Array(_)) => json!([]),
        (Op::Empty, Value::Object(_)) => json!({}),
        (Op::Empty, Value::Number(_)) => json!(0),
        (Op::Empty, _) => json!(""),
        (Op::Repeat, Value::Array(items)) if !items.is_empty() => Value::Array(vec![items[0].clone(); repeats(pick)]),
        (Op::Repeat, Value::String(s)) => Value::String(s.repeat(repeats(pick).min(1000))),
        (_, Value::String(_)) => Value::String(hostile::string(pick)),
        (_, Value::Number(_)) => NUMBERS[pick % NUMBERS.len()].clone_value(),
        (_, Value::Bool(b)) => Value::Bool(!b),
        (_, Value::Array(items)) if !items.is_empty() => {
            let mut items = items.clone();
            items.push(items[0].clone());
            Value::Array(items)
        }
        (_, Value::Object(map)) if !map.is_empty() => {
            let mut map = map.clone();
            let key = map.keys().nth(pick % map.len()).cloned().unwrap_or_default();
            map.remove(&key);
            Value::Object(map)
        }
        (_, other) => other.clone(),
    };
}

/// The index of the first object of `kind` named `name`.
fn find(json: &[Value], kind: &str, name: &str) -> Option<usize> {
    json.iter().position(|o| o["kind"] == kind && o["metadata"]["name"] == name)
}

fn reshape(json: &mut Vec<Value>, s: Structure) {
    let (Some(root), Some(child)) = (find(json, "HTTPProxy", "root"), find(json, "HTTPProxy", "child")) else {
        return;
    };
    let proxy = |name: String, spec: Value| {
        json!({"apiVersion": "projectcontour.io/v1", "kind": "HTTPProxy",
               "metadata": {"name": name, "namespace": "default"}, "spec": spec})
    };
    match s {
        Structure::IncludeCycle => {
            json[child]["spec"]["includes"] = json!([{"name": "root", "namespace": "default"}]);
        }
        Structure::SelfInclude => {
            json[root]["spec"]["includes"] = json!([{"name": "root", "conditions": [{"prefix": "/self"}]}]);
        }
        Structure::IncludeChain(depth) => {
            json[root]["spec"]["includes"] = json!([{"name": "chain-0", "conditions": [{"prefix": "/chain"}]}]);
            for i in 0..depth {
                let spec = if i + 1 < depth {
                    json!({"includes": [{"name": format!("chain-{}", i + 1), "conditions": [{"prefix": format!("/{i}")}]}]})
                } else {
                    json!({"routes": [{"services": [{"name": "web", "port": 80}]}]})
                };
                json.push(proxy(format!("chain-{i}"), spec));
            }
        }
        Structure::ManyRoutes(n) => {
            let routes: Vec<Value> = (0..n)
                .map(|i| json!({"conditions": [{"prefix": format!("/r{i}")}], "services": [{"name": "web", "port": 80}]}))
                .collect();
            json[root]["spec"]["routes"] = Value::Array(routes);
        }
        Structure::ManyRules(n) => {
            if let Some(web) = find(json, "HTTPRoute", "web") {
                let rules: Vec<Value> = (0..n)
                    .map(|i| {
                        json!({"matches": [{"path": {"type": "PathPrefix", "value": format!("/rule{i}")}}],
                                    "backendRefs": [{"name": "web", "port": 80}]})
                    })
                    .collect();
                json[web]["spec"]["rules"] = Value::Array(rules);
            }
        }
        Structure::DuplicateFqdn => {
            let spec = json[root]["spec"].clone();
            json.push(proxy("root-twin".into(), spec));
        }
        Structure::DuplicateListener => {
            if let Some(gw) = find(json, "Gateway", "gw")
                && let Some(first) = json[gw]["spec"]["listeners"][0].as_object().cloned()
                && let Some(listeners) = json[gw]["spec"]["listeners"].as_array_mut()
            {
                let mut twin = first;
                twin.insert("protocol".into(), json!("TCP"));
                listeners.push(Value::Object(twin));
            }
        }
    }
}

#[cfg(test)]
mod tests;
