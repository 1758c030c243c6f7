//! Ingress classes, as upstream Contour decides them for Ingress and HTTPProxy alike: the
//! `projectcontour.io/ingress.class` annotation, else `kubernetes.io/ingress.class`, else the
//! object's own class field.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// The class upstream Contour answers to when no class name is configured.
pub const DEFAULT_CLASS: &str = "contour";

/// An object's class: the annotations first, then `spec_class` (`spec.ingressClassName`); an
/// empty value counts as none.
pub fn of<'a>(meta: &'a ObjectMeta, spec_class: Option<&'a str>) -> Option<&'a str> {
    let annotation = |key: &str| meta.annotations.as_ref()?.get(key).map(String::as_str).filter(|v| !v.is_empty());
    annotation("projectcontour.io/ingress.class")
        .or_else(|| annotation("kubernetes.io/ingress.class"))
        .or(spec_class)
        .filter(|c| !c.is_empty())
}

/// Whether this controller serves an object of `class`: with no class names configured, objects
/// without a class or of class `contour`; otherwise those whose class is one of `class_names`.
pub fn is_served(class: Option<&str>, class_names: &[String]) -> bool {
    match (class, class_names.is_empty()) {
        (None, true) => true,
        (Some(class), true) => class == DEFAULT_CLASS,
        (class, false) => class.is_some_and(|c| class_names.iter().any(|n| n == c)),
    }
}
