//! The input objects as the controller would read them: which are converted, which pass
//! through, and placeholders for the Services and Secrets they name but the input lacks (they
//! are in the cluster, and only their names and ports matter to the conversion).

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Secret, Service, ServicePort, ServiceSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use objects::{Object, ObjectKey, Snapshot};
use serde_json::Value;

use crate::{Error, Finding, Options};

/// The input, sorted out.
pub(crate) struct Input {
    /// What the front ends read: every object of a kind the controller knows, plus placeholders.
    pub snapshot: Snapshot,
    /// Objects written back as they came.
    pub passthrough: Vec<Value>,
    /// The HTTPProxies and Ingresses converted, as they came.
    pub converted: Vec<Value>,
}

/// `Kind namespace/name` of an input object, for the report.
pub(crate) fn describe(object: &Value) -> String {
    let text = |p: &str| object.pointer(p).and_then(Value::as_str).unwrap_or_default();
    let namespace = match text("/metadata/namespace") {
        "" => "default",
        ns => ns,
    };
    format!("{} {namespace}/{}", text("/kind"), text("/metadata/name"))
}

fn is_converted_kind(object: &Value) -> bool {
    let api_version = object.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
    let group = api_version.rsplit_once('/').map(|(g, _)| g).unwrap_or_default();
    matches!(
        (group, object.get("kind").and_then(Value::as_str).unwrap_or_default()),
        ("projectcontour.io", "HTTPProxy") | ("networking.k8s.io", "Ingress")
    )
}

/// Sorts the objects out and fills the snapshot.
pub(crate) fn read(objects: Vec<Value>, options: &Options, report: &mut Vec<Finding>) -> Result<Input, Error> {
    let mut snapshot = Snapshot::default();
    let mut passthrough = Vec::new();
    let mut candidates = Vec::new();
    for object in objects {
        if !is_converted_kind(&object) {
            // Kinds the controller does not read (Deployments, ...) only pass through.
            if let Ok(parsed) = objects::parse_json(object.clone()) {
                snapshot.insert(parsed);
            }
            passthrough.push(object);
            continue;
        }
        match objects::parse_json(object.clone()) {
            Ok(parsed) => candidates.push((object, parsed)),
            Err(e) => {
                report.push(Finding::new(describe(&object), "", format!("not readable, left as it is: {e}")));
                passthrough.push(object);
            }
        }
    }
    for (_, parsed) in &candidates {
        snapshot.insert(parsed.clone());
    }
    let mut converted = Vec::new();
    for (object, parsed) in candidates {
        let served = match &parsed {
            Object::Ingress(i) => frontends::ingress::is_ours(&snapshot, i, &options.ingress_class_names),
            Object::HttpProxy(p) => frontends::class::is_served(
                frontends::class::of(&p.metadata, p.spec.ingress_class_name.as_deref()),
                &options.ingress_class_names,
            ),
            _ => true,
        };
        if served {
            converted.push(object);
        } else {
            let message = "of another ingress class (see --ingress-class-name), left as it is";
            report.push(Finding::new(describe(&object), "", message));
            snapshot.remove(parsed.kind(), &ObjectKey::of(parsed.meta()));
            passthrough.push(object);
        }
    }
    placeholders(&mut snapshot, &converted, report)?;
    Ok(Input { snapshot, passthrough, converted })
}

/// The front ends' translation of the snapshot: the default fleet, as the controller builds it.
pub(crate) fn translate(snapshot: &Snapshot, options: &Options) -> frontends::Translation {
    let proxies = frontends::httpproxy::Options {
        class_names: options.ingress_class_names.clone(),
        http_port: options.http_port,
        https_port: options.https_port,
        ..Default::default()
    };
    let ingresses = frontends::ingress::Options {
        class_names: options.ingress_class_names.clone(),
        http_port: options.http_port,
        https_port: options.https_port,
        default_headers: None,
    };
    let mut translation = frontends::httpproxy::translate(snapshot, &proxies);
    translation.merge(frontends::ingress::translate(snapshot, &ingresses));
    translation
}

/// A port a converted object names: by number, or by name (which only the Service resolves).
enum PortRef {
    Number(i32),
    Name(String),
}

/// A Service a converted object names: namespace, name, port, and the field naming it.
type ServiceRef = (String, String, PortRef, String);

/// Every Service and TLS Secret (namespace, name) a converted object names.
fn references(object: &Value) -> (Vec<ServiceRef>, Vec<(String, String)>) {
    let namespace = object.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("default").to_string();
    let mut services = Vec::new();
    let mut secrets = Vec::new();
    let text = |v: &Value, p: &str| v.pointer(p).and_then(Value::as_str).map(str::to_string);
    let items = |v: &Value, p: &str| v.pointer(p).and_then(Value::as_array).cloned().unwrap_or_default();
    let secret = |name: String, namespace: &str| match name.split_once('/') {
        Some((ns, n)) => (ns.to_string(), n.to_string()),
        None => (namespace.to_string(), name),
    };
    if object.get("kind").and_then(Value::as_str) == Some("HTTPProxy") {
        for (i, route) in items(object, "/spec/routes").iter().enumerate() {
            for (j, s) in items(route, "/services").iter().enumerate() {
                if let (Some(name), Some(port)) = (text(s, "/name"), s.get("port").and_then(Value::as_i64)) {
                    let field = format!("spec.routes[{i}].services[{j}]");
                    services.push((namespace.clone(), name, PortRef::Number(port as i32), field));
                }
            }
        }
        for (j, s) in items(object, "/spec/tcpproxy/services").iter().enumerate() {
            if let (Some(name), Some(port)) = (text(s, "/name"), s.get("port").and_then(Value::as_i64)) {
                let field = format!("spec.tcpproxy.services[{j}]");
                services.push((namespace.clone(), name, PortRef::Number(port as i32), field));
            }
        }
        secrets.extend(text(object, "/spec/virtualhost/tls/secretName").map(|n| secret(n, &namespace)));
        for path in
            ["/spec/virtualhost/tls/clientValidation/caSecret", "/spec/virtualhost/tls/clientValidation/crlSecret"]
        {
            secrets.extend(text(object, path).map(|n| secret(n, &namespace)));
        }
        for route in items(object, "/spec/routes") {
            for s in items(&route, "/services") {
                secrets.extend(text(&s, "/validation/caSecret").map(|n| secret(n, &namespace)));
            }
        }
    } else {
        let mut backend = |b: &Value, field: String| {
            let Some(name) = text(b, "/service/name") else { return };
            let port = match (b.pointer("/service/port/number").and_then(Value::as_i64), text(b, "/service/port/name"))
            {
                (Some(n), _) => PortRef::Number(n as i32),
                (None, Some(name)) => PortRef::Name(name),
                (None, None) => return,
            };
            services.push((namespace.clone(), name, port, field));
        };
        if let Some(b) = object.pointer("/spec/defaultBackend") {
            backend(b, "spec.defaultBackend".into());
        }
        for (i, rule) in items(object, "/spec/rules").iter().enumerate() {
            for (j, path) in items(rule, "/http/paths").iter().enumerate() {
                if let Some(b) = path.get("backend") {
                    backend(b, format!("spec.rules[{i}].http.paths[{j}].backend"));
                }
            }
        }
        let cert_namespace = text(object, "/metadata/annotations/projectcontour.io~1tls-cert-namespace");
        for t in items(object, "/spec/tls") {
            if let Some(name) = text(&t, "/secretName") {
                secrets.push(match &cert_namespace {
                    Some(ns) if !name.contains('/') => (ns.clone(), name),
                    _ => secret(name, &namespace),
                });
            }
        }
    }
    (services, secrets)
}

/// Adds a Service for every one a converted object names that the input lacks (with the ports
/// named), and a TLS Secret with a throwaway certificate for every Secret it lacks.
fn placeholders(snapshot: &mut Snapshot, converted: &[Value], report: &mut Vec<Finding>) -> Result<(), Error> {
    let mut services: BTreeMap<(String, String), Vec<i32>> = BTreeMap::new();
    let mut secrets = Vec::new();
    for object in converted {
        let (refs, names) = references(object);
        for (namespace, name, port, field) in refs {
            if snapshot.services.get(&ObjectKey::new(&namespace, &name)).is_some() {
                continue;
            }
            match port {
                PortRef::Number(n) => services.entry((namespace, name)).or_default().push(n),
                PortRef::Name(port) => report.push(Finding::new(
                    describe(object),
                    field,
                    format!(
                        "Service {namespace}/{name} is not in the input, so its port {port:?} has no number: \
                         give the Service too, or the port by number (not converted)"
                    ),
                )),
            }
        }
        secrets.extend(names.into_iter().filter(|(ns, n)| snapshot.secrets.get(&ObjectKey::new(ns, n)).is_none()));
    }
    for ((namespace, name), mut ports) in services {
        ports.sort_unstable();
        ports.dedup();
        let service = Service {
            metadata: ObjectMeta { name: Some(name), namespace: Some(namespace), ..Default::default() },
            spec: Some(ServiceSpec {
                ports: Some(
                    ports
                        .into_iter()
                        .map(|port| ServicePort { port, name: Some(format!("p{port}")), ..Default::default() })
                        .collect(),
                ),
                ..Default::default()
            }),
            ..Default::default()
        };
        snapshot.insert(Object::Service(service));
    }
    if secrets.is_empty() {
        return Ok(());
    }
    let pem = placeholder_certificate()?;
    for (namespace, name) in secrets {
        let data = [("tls.crt", &pem.0), ("tls.key", &pem.1), ("ca.crt", &pem.0)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), ByteString(v.as_bytes().to_vec())))
            .collect();
        let secret = Secret {
            metadata: ObjectMeta { name: Some(name), namespace: Some(namespace), ..Default::default() },
            type_: Some("kubernetes.io/tls".into()),
            data: Some(data),
            ..Default::default()
        };
        snapshot.insert(Object::Secret(secret));
    }
    Ok(())
}

/// A self-signed certificate and key (PEM) standing in for Secrets in the cluster: the front
/// ends check a Secret before they serve its host. Never written out.
fn placeholder_certificate() -> Result<(String, String), Error> {
    let certified = rcgen::generate_simple_self_signed(vec!["placeholder.invalid".to_string()])
        .map_err(|e| Error::Certificate(e.to_string()))?;
    Ok((certified.cert.pem(), certified.signing_key.serialize_pem()))
}
