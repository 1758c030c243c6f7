//! GatewayClass status: Accepted (unless its parameters are wrong), SupportedVersion, and the
//! features we claim.

use ir::reason;
use serde_json::{Value, json};

/// The group and kind a GatewayClass's `parametersRef` may name (upstream Contour's).
pub const PARAMETERS_GROUP: &str = "projectcontour.io";
/// See [`PARAMETERS_GROUP`].
pub const PARAMETERS_KIND: &str = "ContourDeployment";

/// What a GatewayClass's `parametersRef` points at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parameters {
    /// No parametersRef.
    None,
    /// A ContourDeployment that exists.
    Found,
    /// Something we cannot use, and why.
    Invalid(String),
}

/// The `parametersRef` check that needs no lookup: `Some(namespace/name)` of the
/// ContourDeployment to look up, or the verdict.
pub fn parameters_ref(
    class: &gateway_api::gatewayclasses::GatewayClass,
) -> Result<Option<(String, String)>, Parameters> {
    let Some(p) = &class.spec.parameters_ref else { return Ok(None) };
    if p.group != PARAMETERS_GROUP || p.kind != PARAMETERS_KIND {
        return Err(Parameters::Invalid(format!(
            "spec.parametersRef: {}/{} is not supported; use {PARAMETERS_GROUP}/{PARAMETERS_KIND}",
            p.group, p.kind
        )));
    }
    let Some(namespace) = p.namespace.clone().filter(|n| !n.is_empty()) else {
        return Err(Parameters::Invalid("spec.parametersRef.namespace is required".into()));
    };
    Ok(Some((namespace, p.name.clone())))
}

/// The status we want on `class`, without transition times (see [`with_transition_times`]).
pub fn desired(generation: i64, parameters: &Parameters, supported: &[String]) -> Value {
    let accepted = match parameters {
        Parameters::Invalid(message) => cond("Accepted", false, reason::INVALID_PARAMETERS, message, generation),
        Parameters::None | Parameters::Found => {
            cond("Accepted", true, reason::ACCEPTED, "GatewayClass accepted by contour-rs", generation)
        }
    };
    let version = cond("SupportedVersion", true, reason::SUPPORTED_VERSION, "Gateway API v1 is supported", generation);
    json!({
        "conditions": [accepted, version],
        "supportedFeatures": supported.iter().map(|f| json!({"name": f})).collect::<Vec<_>>(),
    })
}

fn cond(type_: &str, status: bool, reason: &str, message: &str, generation: i64) -> Value {
    json!({
        "type": type_,
        "status": if status { "True" } else { "False" },
        "reason": reason,
        "message": message,
        "observedGeneration": generation,
    })
}

/// Whether `current` (the object's status) already says what `desired` says, transition times
/// aside.
pub fn up_to_date(current: &Value, desired: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        for c in v["conditions"].as_array_mut().into_iter().flatten() {
            if let Some(o) = c.as_object_mut() {
                o.remove("lastTransitionTime");
            }
        }
        json!({"conditions": v["conditions"], "supportedFeatures": v["supportedFeatures"]})
    };
    strip(current) == strip(desired)
}

/// `desired` with each condition's `lastTransitionTime`: kept from `current` when the
/// condition's status did not change, else `now`.
pub fn with_transition_times(current: &Value, desired: &Value, now: &str) -> Value {
    let mut out = desired.clone();
    for c in out["conditions"].as_array_mut().into_iter().flatten() {
        let before = current["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|o| o["type"] == c["type"] && o["status"] == c["status"]);
        c["lastTransitionTime"] = before.map_or_else(|| json!(now), |b| b["lastTransitionTime"].clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(yaml: &str) -> gateway_api::gatewayclasses::GatewayClass {
        serde_yaml::from_str(yaml).expect("valid")
    }

    #[test]
    fn accepted_with_features_and_generation() {
        let s = desired(3, &Parameters::None, &["Gateway".into(), "HTTPRoute".into()]);
        assert_eq!(s["conditions"][0]["type"], "Accepted");
        assert_eq!(s["conditions"][0]["status"], "True");
        assert_eq!(s["conditions"][0]["observedGeneration"], 3);
        assert_eq!(s["conditions"][1]["type"], "SupportedVersion");
        assert_eq!(s["supportedFeatures"], json!([{"name": "Gateway"}, {"name": "HTTPRoute"}]));
    }

    #[test]
    fn wrong_parameters_are_not_accepted() {
        let c = class(
            "metadata: {name: c}\nspec: {controllerName: x, parametersRef: {group: example.com, kind: Foo, name: p}}",
        );
        let Err(p) = parameters_ref(&c) else { panic!("accepted a foreign kind") };
        let s = desired(1, &p, &[]);
        assert_eq!(s["conditions"][0]["status"], "False");
        assert_eq!(s["conditions"][0]["reason"], "InvalidParameters");
        assert!(s["conditions"][0]["message"].as_str().unwrap().contains("example.com/Foo"));
        let ok = class(
            "metadata: {name: c}\nspec: {controllerName: x, parametersRef: {group: projectcontour.io, kind: ContourDeployment, name: p, namespace: ns}}",
        );
        assert_eq!(parameters_ref(&ok), Ok(Some(("ns".into(), "p".into()))));
    }

    #[test]
    fn transition_times_kept_while_status_holds() {
        let old = with_transition_times(&Value::Null, &desired(1, &Parameters::None, &[]), "t1");
        assert_eq!(old["conditions"][0]["lastTransitionTime"], "t1");
        let bumped = desired(2, &Parameters::None, &[]);
        assert!(!up_to_date(&old, &bumped), "generation changed");
        let new = with_transition_times(&old, &bumped, "t2");
        assert_eq!(new["conditions"][0]["lastTransitionTime"], "t1");
        assert!(up_to_date(&new, &bumped));
        let rejected = desired(2, &Parameters::Invalid("x".into()), &[]);
        assert_eq!(with_transition_times(&new, &rejected, "t3")["conditions"][0]["lastTransitionTime"], "t3");
    }
}
