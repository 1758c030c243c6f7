//! Ingress (networking.k8s.io/v1). So far: which Ingresses are ours, by ingress class, as
//! upstream decides it. The translation into the IR comes with its own issue.

use objects::types::Ingress;

pub use crate::class::DEFAULT_CLASS;

/// An Ingress's class: the `projectcontour.io/ingress.class` annotation, else the
/// `kubernetes.io/ingress.class` annotation, else `spec.ingressClassName`.
pub fn class_of(ingress: &Ingress) -> Option<&str> {
    crate::class::of(&ingress.metadata, ingress.spec.as_ref().and_then(|s| s.ingress_class_name.as_deref()))
}

/// Whether this controller serves an Ingress (see [`crate::class::is_served`]).
pub fn is_ours(ingress: &Ingress, class_names: &[String]) -> bool {
    crate::class::is_served(class_of(ingress), class_names)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ingress(yaml: &str) -> Ingress {
        match objects::parse_documents(yaml).remove(0).unwrap() {
            objects::Object::Ingress(i) => i,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn classes_as_upstream_decides_them() {
        let none = ingress("apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: a}\nspec: {}\n");
        let contour = ingress(
            "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: b}\nspec: {ingressClassName: contour}\n",
        );
        let other = ingress(
            "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: c, annotations: {kubernetes.io/ingress.class: other}}\nspec: {ingressClassName: contour}\n",
        );
        assert!(is_ours(&none, &[]) && is_ours(&contour, &[]) && !is_ours(&other, &[]));
        let names = vec!["other".to_string()];
        assert!(!is_ours(&none, &names) && !is_ours(&contour, &names) && is_ours(&other, &names));
    }
}
