//! Multi-document YAML (or JSON) of Kubernetes objects into typed [`Object`]s.

use serde::Deserialize;

use crate::{Kind, Object};

/// Why one document could not be read. Other documents of the same file are unaffected.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    /// The text is not YAML.
    #[error("document {index}: not valid YAML: {source}")]
    Yaml {
        /// The 0-based document index within the file.
        index: usize,
        /// The parser's error.
        #[source]
        source: serde_yaml::Error,
    },
    /// `apiVersion` or `kind` is missing.
    #[error("document {index}: missing apiVersion or kind")]
    MissingKind {
        /// The 0-based document index within the file.
        index: usize,
    },
    /// The kind is not one the controller reads.
    #[error("document {index}: {api_version} {kind} {name}: kind not supported")]
    Unsupported {
        /// The 0-based document index within the file.
        index: usize,
        /// The document's `apiVersion`.
        api_version: String,
        /// The document's `kind`.
        kind: String,
        /// The document's `metadata.name`.
        name: String,
    },
    /// The object's name or namespace is not one the API server accepts.
    #[error("document {index}: {kind}: {field} {problem}")]
    Metadata {
        /// The 0-based document index within the file.
        index: usize,
        /// The document's `kind`.
        kind: String,
        /// `metadata.name` or `metadata.namespace`.
        field: &'static str,
        /// What is wrong with it.
        problem: String,
    },
    /// The object does not match its kind's schema.
    #[error("document {index}: {kind} {name}: {source}")]
    Schema {
        /// The 0-based document index within the file.
        index: usize,
        /// The document's `kind`.
        kind: String,
        /// The document's `metadata.name`.
        name: String,
        /// What did not match.
        #[source]
        source: serde_json::Error,
    },
}

/// Reads every document of a multi-document YAML text. Objects without a namespace land in
/// `default`, as `kubectl apply` would put them; a Secret's `stringData` is merged into `data`.
pub fn parse_documents(text: &str) -> Vec<Result<Object, ParseError>> {
    let mut out = Vec::new();
    for (index, doc) in serde_yaml::Deserializer::from_str(text).enumerate() {
        let value = match serde_yaml::Value::deserialize(doc) {
            Ok(serde_yaml::Value::Null) => continue,
            Ok(v) => v,
            Err(source) => {
                out.push(Err(ParseError::Yaml { index, source }));
                // A syntax error leaves the rest of the stream unreadable.
                break;
            }
        };
        out.push(parse_value(index, value));
    }
    out
}

fn parse_value(index: usize, value: serde_yaml::Value) -> Result<Object, ParseError> {
    let json: serde_json::Value = serde_json::to_value(&value).map_err(|source| ParseError::Schema {
        index,
        kind: String::new(),
        name: String::new(),
        source,
    })?;
    parse_json_at(index, json)
}

/// Reads one object from its JSON form, as [`parse_documents`] reads each document.
pub fn parse_json(json: serde_json::Value) -> Result<Object, ParseError> {
    parse_json_at(0, json)
}

fn parse_json_at(index: usize, mut json: serde_json::Value) -> Result<Object, ParseError> {
    let text = |field: &str| json.get(field).and_then(|v| v.as_str()).unwrap_or_default().to_string();
    let (api_version, kind) = (text("apiVersion"), text("kind"));
    if api_version.is_empty() || kind.is_empty() {
        return Err(ParseError::MissingKind { index });
    }
    let name = json.pointer("/metadata/name").and_then(|v| v.as_str()).unwrap_or_default().to_string();
    let group = api_version.rsplit_once('/').map(|(g, _)| g).unwrap_or("");
    let schema = |source| ParseError::Schema { index, kind: kind.clone(), name: name.clone(), source };
    let Some(k) = Kind::ALL.iter().copied().find(|k| k.group() == group && k.name() == kind) else {
        return Err(ParseError::Unsupported { index, api_version, kind, name });
    };
    // ClusterTrustBundle's v1alpha1 and v1 carry the fields read at v1beta1, the version of its
    // type, which accepts no other apiVersion (the watch reads them the same way).
    if k == Kind::ClusterTrustBundle {
        json["apiVersion"] = serde_json::Value::String("certificates.k8s.io/v1beta1".into());
    }
    let mut object = Object::from_json(k, json).map_err(schema)?;
    normalize(&mut object);
    let meta = object.meta();
    let invalid =
        |field: &'static str, problem: String| ParseError::Metadata { index, kind: kind.clone(), field, problem };
    if let Some(problem) = dns_subdomain(meta.name.as_deref().unwrap_or_default()) {
        return Err(invalid("metadata.name", problem));
    }
    if let Some(problem) = meta.namespace.as_deref().and_then(dns_label) {
        return Err(invalid("metadata.namespace", problem));
    }
    Ok(object)
}

/// What makes `name` no DNS subdomain (RFC 1123), the API server's rule for object names.
fn dns_subdomain(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("is required".into());
    }
    if name.len() > 253 {
        return Some(format!("must be no more than 253 characters, not {}", name.len()));
    }
    name.split('.').find_map(|label| label_problem(label, name))
}

/// What makes `name` no DNS label (RFC 1123), the API server's rule for namespaces.
fn dns_label(name: &str) -> Option<String> {
    if name.len() > 63 {
        return Some(format!("must be no more than 63 characters, not {}", name.len()));
    }
    label_problem(name, name)
}

fn label_problem(label: &str, whole: &str) -> Option<String> {
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    let ok = label.chars().all(|c| alnum(c) || c == '-')
        && label.chars().next().is_some_and(alnum)
        && label.chars().last().is_some_and(alnum);
    (!ok).then(|| {
        format!("{whole:?} must consist of lower case alphanumeric characters, '-' or '.', and start and end with one")
    })
}

fn normalize(object: &mut Object) {
    let namespaced = object.kind().namespaced();
    let meta = object.meta_mut();
    if namespaced && meta.namespace.as_deref().unwrap_or_default().is_empty() {
        meta.namespace = Some("default".into());
    }
    if meta.generation.is_none() {
        meta.generation = Some(1);
    }
    if let Object::Secret(secret) = object
        && let Some(strings) = secret.string_data.take()
    {
        let data = secret.data.get_or_insert_with(Default::default);
        for (k, v) in strings {
            data.insert(k, k8s_openapi::ByteString(v.into_bytes()));
        }
    }
}
