//! Every contour.yaml key, from the file's types (`crates/config`) and their doc comments.

use serde_json::Value;

use crate::GENERATED;
use crate::table::{cell, render};

/// The contour.yaml page.
pub(crate) fn page() -> String {
    let schema = serde_json::to_value(schemars::schema_for!(config::ContourConfig)).unwrap_or_default();
    let mut rows = Vec::new();
    let top = resolve(&schema, &schema);
    for (key, field) in top["properties"].as_object().into_iter().flatten() {
        walk(&schema, key, field, &mut rows);
    }
    format!(
        "{GENERATED}\n\n# contour.yaml and ContourConfiguration\n\n\
         `contour-serve` reads its settings from three places, in this order of precedence: its \
         [flags](flags.md), a ContourConfiguration resource (`--contour-config-name`, its fields in \
         [CRD fields](crds.md#contourconfiguration-projectcontouriov1alpha1)), and a contour.yaml file \
         (`--config-path`). The file's keys are upstream Contour's, spelled as upstream spells them, and are mapped \
         onto the resource's fields as upstream maps them. An unknown key or a bad value stops start-up with one \
         error naming the key. Every key takes effect; none is only parsed. Keys described as \"a contour-rs \
         extension\" are ours; a file without them behaves as upstream.\n\n{}",
        render(&["Key", "Type", "Default", "ContourConfiguration", "Flag", "Effect"], &rows)
    )
}

/// Adds the key at `path` with schema `field`, and the keys below it.
fn walk(root: &Value, path: &str, field: &Value, rows: &mut Vec<Vec<String>>) {
    let target = resolve(root, field);
    let description = field["description"].as_str().or(target["description"].as_str()).unwrap_or_default();
    let [effect, default, resource, flag] = labelled(&cell(description));
    rows.push(vec![format!("`{path}`"), type_of(root, field), default, resource, flag, effect]);
    let (below, suffix) = match (target.get("items"), target.get("additionalProperties")) {
        (Some(items), _) => (resolve(root, items), "[]"),
        (None, Some(values)) if values.is_object() => (resolve(root, values), ".*"),
        _ => (target, ""),
    };
    for (key, child) in below["properties"].as_object().into_iter().flatten() {
        walk(root, &format!("{path}{suffix}.{key}"), child, rows);
    }
}

/// A key's doc comment split into what it does and its `Default:`, `ContourConfiguration:` and
/// `Flag:` parts, each written last in the comment in that order (or left out).
fn labelled(text: &str) -> [String; 4] {
    let mut parts = [String::new(), String::new(), String::new(), String::new()];
    let mut rest = text;
    for (i, label) in [" Flag: ", " ContourConfiguration: ", " Default: "].into_iter().enumerate() {
        if let Some(at) = rest.rfind(label) {
            parts[3 - i] = rest[at + label.len()..].trim_end_matches('.').to_string();
            rest = &rest[..at];
        }
    }
    parts[0] = rest.trim().to_string();
    if parts[2].starts_with("spec.") {
        parts[2] = format!("`{}`", parts[2]);
    }
    parts
}

/// `schema` with its `$ref` followed and an optional value's `null` alternative dropped.
fn resolve<'a>(root: &'a Value, schema: &'a Value) -> &'a Value {
    if let Some(name) = schema["$ref"].as_str().and_then(|r| r.strip_prefix("#/$defs/")) {
        return resolve(root, &root["$defs"][name]);
    }
    if let Some(choices) = schema["anyOf"].as_array() {
        let real: Vec<&Value> = choices.iter().filter(|c| c["type"] != "null").collect();
        if real.len() == 1 {
            return resolve(root, real[0]);
        }
    }
    schema
}

/// A key's type in a few words.
fn type_of(root: &Value, schema: &Value) -> String {
    let schema = resolve(root, schema);
    let values: Vec<String> = match (&schema["enum"], &schema["oneOf"], &schema["const"]) {
        (Value::Array(values), _, _) => values.iter().map(literal).collect(),
        (_, Value::Array(choices), _) if choices.iter().all(|c| c.get("const").is_some()) => {
            choices.iter().map(|c| literal(&c["const"])).collect()
        }
        (_, _, Value::Null) => Vec::new(),
        (_, _, value) => vec![literal(value)],
    };
    if !values.is_empty() {
        return format!("one of {}", values.join(", "));
    }
    if let Some(choices) = schema["anyOf"].as_array().or(schema["oneOf"].as_array()) {
        let kinds: Vec<String> = choices.iter().filter(|c| c["type"] != "null").map(|c| type_of(root, c)).collect();
        return kinds.join(" or ");
    }
    let kind = match &schema["type"] {
        Value::Array(kinds) => kinds.iter().filter_map(Value::as_str).find(|k| *k != "null").unwrap_or("any"),
        Value::String(kind) => kind,
        _ => "any",
    };
    match kind {
        "array" => format!("list of {}", type_of(root, &schema["items"])),
        "object" => match schema.get("additionalProperties") {
            Some(values) if values.is_object() => format!("map of {}", type_of(root, values)),
            _ => "mapping".into(),
        },
        "integer" | "number" => "number".into(),
        other => other.into(),
    }
}

fn literal(value: &Value) -> String {
    format!("`{}`", value.as_str().map_or_else(|| value.to_string(), str::to_string))
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_key_of_the_file_is_listed_with_its_description() {
        let page = super::page();
        for key in ["`accesslog-format`", "`timeouts.request-timeout`", "`tls.cipher-suites`", "`runtime-settings`"] {
            assert!(page.contains(&format!("| {key} |")), "{key} missing");
        }
        assert!(page.contains("| `debug` | boolean | `false` |  | -d/--debug | Logs at debug level."), "{page}");
    }

    #[test]
    fn a_comment_splits_into_effect_default_field_and_flag() {
        let parts = super::labelled("Does X. Default: `8000`. ContourConfiguration: spec.a.b. Flag: --port.");
        assert_eq!(parts, ["Does X.", "`8000`", "`spec.a.b`", "--port"].map(String::from));
        let parts = super::labelled("Does Y. Flag: --y.");
        assert_eq!(parts, ["Does Y.", "", "", "--y"].map(String::from));
    }
}
