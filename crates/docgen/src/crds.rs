//! Every field of our CRDs, from the CRDs `crates/api` generates (their doc comments are the
//! descriptions `kubectl explain` shows).

use serde_json::Value;

use crate::GENERATED;
use crate::table::{cell, render};

/// The CRD fields page.
pub(crate) fn page() -> String {
    let mut out = format!(
        "{GENERATED}\n\n# CRD fields\n\nEvery field of the CRDs in `deploy/crds/contour.yaml`, with the description \
         `kubectl explain` shows. A field marked *required* must be set when its parent is. Descriptions that say \
         \"a contour-rs extension\" are ours: upstream Contour's CRDs have no such field, and an object without it \
         behaves exactly as upstream.\n"
    );
    for crd in api::crds() {
        let crd = serde_json::to_value(&crd).unwrap_or_default();
        let kind = crd["spec"]["names"]["kind"].as_str().unwrap_or_default();
        let group = crd["spec"]["group"].as_str().unwrap_or_default();
        for version in crd["spec"]["versions"].as_array().into_iter().flatten() {
            let name = version["name"].as_str().unwrap_or_default();
            let schema = &version["schema"]["openAPIV3Schema"];
            out.push_str(&format!("\n## {kind} ({group}/{name})\n\n"));
            if let Some(text) = schema["description"].as_str() {
                out.push_str(&format!("{}\n\n", text.trim()));
            }
            let mut rows = Vec::new();
            for top in ["spec", "status"] {
                if let Some(s) = schema["properties"].get(top) {
                    walk(top, s, false, &mut rows);
                }
            }
            out.push_str(&render(&["Field", "Type", "Description"], &rows));
        }
    }
    out
}

/// Adds `schema` at `path` and everything below it.
fn walk(path: &str, schema: &Value, required: bool, rows: &mut Vec<Vec<String>>) {
    let mut kind = type_of(schema);
    if required {
        kind.push_str(", *required*");
    }
    let description = schema["description"].as_str().unwrap_or_default();
    rows.push(vec![format!("`{path}`"), kind, cell(description)]);
    let (below, suffix) = match (schema.get("items"), schema.get("additionalProperties")) {
        (Some(items), _) => (items, "[]"),
        (None, Some(values)) if values.is_object() => (values, ".*"),
        _ => (schema, ""),
    };
    let required: Vec<&str> = below["required"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    if let Some(properties) = below["properties"].as_object() {
        for (name, child) in properties {
            walk(&format!("{path}{suffix}.{name}"), child, required.contains(&name.as_str()), rows);
        }
    }
}

/// A field's type in a few words.
fn type_of(schema: &Value) -> String {
    if schema["x-kubernetes-int-or-string"] == Value::Bool(true) {
        return "integer or string".into();
    }
    let base = match schema["type"].as_str().unwrap_or("any") {
        "array" => format!("array of {}", type_of(&schema["items"])),
        "object" => match schema.get("additionalProperties") {
            Some(values) if values.is_object() => format!("map of {}", type_of(values)),
            _ => "object".into(),
        },
        other => match schema["format"].as_str() {
            Some(format) => format!("{other} ({format})"),
            None => other.into(),
        },
    };
    match schema["enum"].as_array() {
        Some(values) => {
            let values: Vec<String> =
                values.iter().map(|v| format!("`{}`", v.as_str().unwrap_or(&v.to_string()))).collect();
            format!("{base}: {}", values.join(", "))
        }
        None => base,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn nested_fields_get_paths_types_and_required_marks() {
        let schema = json!({"type": "object", "description": "the spec", "required": ["routes"], "properties": {
            "routes": {"type": "array", "items": {"type": "object", "required": ["name"], "properties": {
                "name": {"type": "string", "description": "its name"},
                "port": {"x-kubernetes-int-or-string": true}}}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "policy": {"type": "string", "enum": ["a", "b"]}}});
        let mut rows = Vec::new();
        super::walk("spec", &schema, false, &mut rows);
        let rows: Vec<String> = rows.iter().map(|r| r.join(" | ")).collect();
        assert_eq!(
            rows,
            [
                "`spec` | object | the spec",
                "`spec.labels` | map of string | ",
                "`spec.policy` | string: `a`, `b` | ",
                "`spec.routes` | array of object, *required* | ",
                "`spec.routes[].name` | string, *required* | its name",
                "`spec.routes[].port` | integer or string | ",
            ]
        );
    }
}
