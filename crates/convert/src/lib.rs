//! `contour convert`: HTTPProxy and Ingress objects (with upstream's annotations) into Gateway
//! API objects that the same controller serves the same way.
//!
//! The objects go through the controller's own front ends first, so what comes out is what the
//! controller makes of them: includes flattened with their conditions joined, the HTTP-to-HTTPS
//! redirects of TLS hosts, upstream's defaults. That intermediate representation is then written
//! as Gateway API objects: a Gateway (unless one is named), HTTPRoutes, TLSRoutes,
//! ReferenceGrants and BackendTLSPolicies. Objects of other kinds pass through unchanged, so the
//! output applies as it is. Every field without a Gateway API equivalent is named in the
//! report, with its object.

mod emit;
mod input;
mod matches;
mod report;

use serde_json::Value;

/// What to convert to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// An existing Gateway (`namespace`, `name`) the routes attach to; `None` writes one.
    pub gateway: Option<(String, String)>,
    /// The namespace of the Gateway written when `gateway` is `None`.
    pub gateway_namespace: String,
    /// The name of the Gateway written when `gateway` is `None`.
    pub gateway_name: String,
    /// The GatewayClass of the Gateway written.
    pub gateway_class: String,
    /// The port of the HTTP listener.
    pub http_port: u16,
    /// The port of the HTTPS and TLS listeners.
    pub https_port: u16,
    /// The Ingress (and HTTPProxy) classes converted; empty: no class, or `contour`, as the
    /// controller's default.
    pub ingress_class_names: Vec<String>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            gateway: None,
            gateway_namespace: "projectcontour".into(),
            gateway_name: "contour".into(),
            gateway_class: "contour".into(),
            http_port: 80,
            https_port: 443,
            ingress_class_names: Vec::new(),
        }
    }
}

/// The converted objects and what could not be converted.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Conversion {
    /// The objects to apply: those of other kinds as they came, then the Gateway API ones.
    pub objects: Vec<Value>,
    /// Fields without a Gateway API equivalent, and other things a user must know.
    pub report: Vec<Finding>,
}

/// One field (or object) the conversion could not carry over, or carried over differently.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Finding {
    /// The object: `Kind namespace/name`.
    pub object: String,
    /// The field, such as `spec.routes[0].retryPolicy`; empty for the whole object.
    pub field: String,
    /// What happened to it.
    pub message: String,
}

impl Finding {
    pub(crate) fn new(object: impl Into<String>, field: impl Into<String>, message: impl Into<String>) -> Self {
        Self { object: object.into(), field: field.into(), message: message.into() }
    }
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.field.is_empty() {
            write!(f, "{}: {}", self.object, self.message)
        } else {
            write!(f, "{}: {}: {}", self.object, self.field, self.message)
        }
    }
}

/// Why nothing could be converted.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The input is not YAML.
    #[error("{source_name}: document {index}: not valid YAML: {message}")]
    Yaml {
        /// Where the text came from.
        source_name: String,
        /// The document's index in its source, from 0.
        index: usize,
        /// The parser's message.
        message: String,
    },
    /// An object could not be written as YAML.
    #[error("writing YAML: {0}")]
    Write(String),
    /// The placeholder certificate could not be made.
    #[error("making a placeholder certificate: {0}")]
    Certificate(String),
}

/// Every object (mapping) of a multi-document YAML text; lists (`kind: List`) are unpacked.
pub fn read_yaml(text: &str, source_name: &str) -> Result<Vec<Value>, Error> {
    let mut out = Vec::new();
    for (index, document) in serde_yaml::Deserializer::from_str(text).enumerate() {
        let value: Value = serde::Deserialize::deserialize(document).map_err(|e: serde_yaml::Error| Error::Yaml {
            source_name: source_name.to_string(),
            index,
            message: e.to_string(),
        })?;
        match value {
            Value::Null => {}
            Value::Object(ref map) if map.get("kind").and_then(Value::as_str) == Some("List") => {
                out.extend(map.get("items").and_then(Value::as_array).into_iter().flatten().cloned());
            }
            other => out.push(other),
        }
    }
    Ok(out)
}

/// The objects as one multi-document YAML text.
pub fn to_yaml(objects: &[Value]) -> Result<String, Error> {
    let mut out = String::new();
    for o in objects {
        out += "---\n";
        out += &serde_yaml::to_string(o).map_err(|e| Error::Write(e.to_string()))?;
    }
    Ok(out)
}

/// Converts the HTTPProxies and Ingresses among `objects`; the others pass through.
pub fn convert(objects: Vec<Value>, options: &Options) -> Result<Conversion, Error> {
    let mut report = Vec::new();
    let input = input::read(objects, options, &mut report)?;
    for object in &input.converted {
        report::fields(object, &mut report);
    }
    let translation = input::translate(&input.snapshot, options);
    for d in &translation.diagnostics {
        if d.severity == ir::Severity::Error {
            report.push(Finding::new(d.origin.to_string(), d.field.clone(), format!("{} (not converted)", d.message)));
        }
    }
    let mut objects = input.passthrough;
    objects.extend(emit::objects(&translation.ir, &input.snapshot, options, &mut report));
    report.sort();
    report.dedup();
    Ok(Conversion { objects, report })
}

#[cfg(test)]
mod tests;
