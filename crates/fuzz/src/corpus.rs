//! The committed bad-input corpus (`crates/fuzz/corpus`): every hostile case the generator
//! found, and hand-written ones, each with what it must produce.
//!
//! A case file holds objects that replace their namesakes among the base objects (or join
//! them), with `%PORT%` placeholders as the base fixture has, after comment lines of the form
//! `# expect: <Kind> <namespace>/<name> <field> <reason>` (a diagnostic, so a status
//! condition, on that object whose field starts with `<field>`), `# expect: unreadable <text>`
//! (the object is refused as the API server would refuse it) or `# expect: none` (accepted as
//! it is).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::{Base, Objects};

/// One corpus case.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The file name, without `.yaml`.
    pub name: String,
    /// What it must produce.
    pub expect: Vec<Expect>,
    /// The objects, as written.
    text: String,
}

/// What a corpus case must produce.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expect {
    /// A diagnostic on an object.
    Diagnostic {
        /// Its kind.
        kind: String,
        /// `namespace/name`.
        object: String,
        /// The start of the field it names.
        field: String,
        /// Its reason.
        reason: String,
    },
    /// An object refused before the pipeline, with this in the message.
    Unreadable(String),
}

/// Where the corpus lives.
pub fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus")
}

/// Every case of the corpus, by name.
pub fn load() -> Vec<Entry> {
    let mut paths: Vec<PathBuf> =
        std::fs::read_dir(dir()).map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect()).unwrap_or_default();
    paths.retain(|p| p.extension().is_some_and(|e| e == "yaml"));
    paths.sort();
    paths
        .iter()
        .map(|p| {
            let text = std::fs::read_to_string(p).unwrap_or_default();
            let name = p.file_stem().unwrap_or_default().to_string_lossy().into_owned();
            let expect = text.lines().filter_map(|l| l.strip_prefix("# expect: ")).filter_map(parse_expect).collect();
            Entry { name, expect, text }
        })
        .collect()
}

/// Whether two objects are the same one: kind, namespace and name.
pub fn same_object(a: &Value, b: &Value) -> bool {
    a["kind"] == b["kind"]
        && a["metadata"]["name"] == b["metadata"]["name"]
        && a["metadata"]["namespace"] == b["metadata"]["namespace"]
}

fn parse_expect(line: &str) -> Option<Expect> {
    let words: Vec<&str> = line.split_whitespace().collect();
    match words.as_slice() {
        ["none"] => None,
        ["unreadable", rest @ ..] => Some(Expect::Unreadable(rest.join(" "))),
        [kind, object, field, reason] => Some(Expect::Diagnostic {
            kind: kind.to_string(),
            object: object.to_string(),
            field: field.to_string(),
            reason: reason.to_string(),
        }),
        _ => panic!("unreadable expectation {line:?}"),
    }
}

impl Entry {
    /// Whether the case replaces the Gateway (whose sentinel it may then take down).
    pub fn changes_gateway(&self) -> bool {
        self.text.lines().any(|l| l.trim() == "kind: Gateway" || l.trim() == "kind: GatewayClass")
    }

    /// This case's own objects, their placeholders filled.
    pub fn documents(&self, base: &Base) -> Vec<Value> {
        let text = base.fill(&self.text);
        serde_yaml::Deserializer::from_str(&text)
            .map(|doc| serde::Deserialize::deserialize(doc).expect("corpus cases are YAML"))
            .filter(|v: &Value| !v.is_null())
            .collect()
    }

    /// The base objects with this case's in place.
    pub fn objects(&self, base: &Base) -> Objects {
        let mut json = base.objects.clone();
        for value in self.documents(base) {
            match json.iter().position(|o| same_object(o, &value)) {
                Some(i) => json[i] = value,
                None => json.push(value),
            }
        }
        Objects::read(json)
    }

    /// Which expectations `objects` and the `diagnostics` of their build do not meet.
    pub fn unmet(&self, objects: &Objects, diagnostics: &[ir::Diagnostic]) -> Vec<String> {
        let mut out = Vec::new();
        for e in &self.expect {
            let met = match e {
                Expect::Unreadable(text) => objects.unreadable.iter().any(|u| u.contains(text.as_str())),
                Expect::Diagnostic { kind, object, field, reason } => diagnostics.iter().any(|d| {
                    d.origin.kind == kind
                        && format!("{}/{}", d.origin.namespace, d.origin.name) == *object
                        && d.field.starts_with(field.as_str())
                        && d.reason == reason
                }),
            };
            if !met {
                out.push(format!("{}: expected {e:?}", self.name));
            }
        }
        if !out.is_empty() {
            let seen: Vec<String> = diagnostics.iter().map(|d| format!("  {d} [{}]", d.field)).collect();
            out.push(format!("diagnostics:\n{}\nunreadable: {:?}", seen.join("\n"), objects.unreadable));
        }
        out
    }
}
