//! BackendTLSPolicy in the DAG: TLS, SNI and names on the clusters of Gateway API routes only.

use super::*;

const FIXTURE: &str = r#"
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw, namespace: infra}
spec:
  gatewayClassName: contour
  listeners: [{name: http, port: 80, protocol: HTTP}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: web, namespace: infra}
spec:
  parentRefs: [{name: gw}]
  rules:
  - matches: [{path: {type: PathPrefix, value: /a}}]
    backendRefs: [{name: tls, port: 443}]
  - matches: [{path: {type: PathPrefix, value: /b}}]
    backendRefs: [{name: tls, port: 8443}]
  - matches: [{path: {type: PathPrefix, value: /c}}]
    backendRefs: [{name: broken, port: 443}]
---
apiVersion: v1
kind: Service
metadata: {name: tls, namespace: infra}
spec: {ports: [{name: https, port: 443}, {name: other, port: 8443}]}
---
apiVersion: v1
kind: Service
metadata: {name: broken, namespace: infra}
spec: {ports: [{name: https, port: 443}]}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: ca, namespace: infra}
data: {ca.crt: "configmap\n%CERT%"}
---
apiVersion: v1
kind: Secret
metadata: {name: ca, namespace: infra}
stringData: {ca.crt: "secret\n%CERT%"}
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: service, namespace: infra}
spec:
  targetRefs: [{group: '', kind: Service, name: tls}]
  validation: {caCertificateRefs: [{group: '', kind: ConfigMap, name: ca}], hostname: service.example.com}
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: port, namespace: infra}
spec:
  targetRefs: [{group: '', kind: Service, name: tls, sectionName: https}]
  validation:
    caCertificateRefs: [{group: '', kind: ConfigMap, name: ca}]
    hostname: port.example.com
    subjectAltNames: [{type: URI, uri: 'spiffe://port/x'}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: broken, namespace: infra}
spec:
  targetRefs: [{group: '', kind: Service, name: broken}]
  validation: {caCertificateRefs: [{group: '', kind: ConfigMap, name: absent}], hostname: broken.example.com}
"#;

#[test]
fn routes_speak_tls_to_the_services_their_policies_target() {
    let dag = dag(&format!("{CLASS}{FIXTURE}"));
    let fleet = &dag.fleets["infra/gw"];
    let ListenerKind::Http(table) = &fleet.listeners[0].kind else { panic!("http") };
    let backend = |prefix: &str| {
        let route = table.virtual_hosts[0]
            .routes
            .iter()
            .find(|r| r.matcher.path == ir::PathMatch::Prefix(prefix.into()))
            .expect(prefix);
        match &route.action {
            RouteAction::Forward { backends, .. } => backends[0].cluster.clone(),
            RouteAction::Direct { status, .. } => Some(format!("direct {status}")),
            other => panic!("{other:?}"),
        }
    };
    let port = &fleet.clusters[&backend("/a").expect("a cluster")];
    assert_eq!(port.protocol, Some(ir::UpstreamProtocol::Tls));
    assert_eq!(port.sni.as_deref(), Some("port.example.com"), "the port's own policy");
    let verify = port.validation.as_ref().expect("verified");
    assert_eq!((verify.names.as_slice(), verify.uris.as_slice()), (&[][..], &["spiffe://port/x".to_string()][..]));
    assert_eq!(verify.ca, "infra/ca/configmap/ca", "the ConfigMap's CA, never a Secret of the same name");
    assert!(String::from_utf8_lossy(&fleet.validation[&verify.ca].ca).contains("configmap"));

    let service = &fleet.clusters[&backend("/b").expect("a cluster")];
    assert_eq!(service.sni.as_deref(), Some("service.example.com"), "the Service's policy for its other ports");
    assert_eq!(service.validation.as_ref().unwrap().names, ["service.example.com"]);

    assert_eq!(backend("/c").as_deref(), Some("direct 500"), "no usable CA: a 500, never plain text");
}

#[test]
fn a_policy_change_rebuilds_cached_routes() {
    let with = snapshot(&format!("{CLASS}{FIXTURE}"));
    let without = snapshot(&format!(
        "{CLASS}{}",
        FIXTURE.split("---\napiVersion: gateway.networking.k8s.io/v1\nkind: BackendTLSPolicy").next().unwrap()
    ));
    let mut cache = Cache::default();
    let mut protocols = Vec::new();
    for s in [&without, &with, &without] {
        let t = frontends::gateway_api::translate(s, &Default::default());
        let dag = build_cached(&t.ir, s, t.diagnostics, &mut cache);
        let fleet = &dag.fleets["infra/gw"];
        protocols.push(fleet.clusters.values().find(|c| c.service.name == "tls").and_then(|c| c.protocol));
    }
    assert_eq!(protocols, [None, Some(ir::UpstreamProtocol::Tls), None]);
}

#[test]
fn a_gateway_presents_its_own_client_certificate_to_tls_backends() {
    let more = client_gateway("mtls")
        + r#"
---
apiVersion: v1
kind: Service
metadata: {name: plain, namespace: infra}
spec: {ports: [{name: http, port: 80}]}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: both, namespace: infra}
spec:
  parentRefs: [{name: gw}, {name: mtls}]
  hostnames: [both.example.com]
  rules:
  - matches: [{path: {type: PathPrefix, value: /tls}}]
    backendRefs: [{name: tls, port: 443}]
  - backendRefs: [{name: plain, port: 80}]
"#;
    let dag = dag(&format!("{CLASS}{FIXTURE}{more}"));
    let certificates = |fleet: &str| {
        let fleet = &dag.fleets[fleet];
        let mut of: Vec<(String, Option<String>)> = fleet
            .clusters
            .values()
            .filter(|c| c.service.name != "broken")
            .map(|c| (format!("{}/{}", c.service.name, c.service.port), c.client_certificate.clone()))
            .collect();
        of.sort();
        (of, fleet.secrets.contains_key("infra/client"))
    };
    let mtls = Some("infra/client".to_string());
    assert_eq!(
        certificates("infra/mtls"),
        (vec![("plain/80".into(), None), ("tls/443".into(), mtls)], true),
        "TLS clusters present the Gateway's certificate, plain ones nothing"
    );
    let (plain_gateway, has_secret) = certificates("infra/gw");
    assert!(plain_gateway.iter().all(|(_, c)| c.is_none()), "{plain_gateway:?}");
    assert!(!has_secret, "another Gateway's fleet never receives the certificate");
}

/// A Gateway `name` in `infra` presenting the client certificate `infra/client` to its TLS
/// backends, and that Secret.
fn client_gateway(name: &str) -> String {
    format!(
        r#"
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {{name: {name}, namespace: infra}}
spec:
  gatewayClassName: contour
  tls: {{backend: {{clientCertificateRef: {{name: client}}}}}}
  listeners: [{{name: http, port: 80, protocol: HTTP}}]
---
apiVersion: v1
kind: Secret
metadata: {{name: client, namespace: infra}}
type: kubernetes.io/tls
stringData: {{tls.crt: "%CERT%", tls.key: "%KEY%"}}
"#
    )
}

/// A Gateway's client certificate with no TLS backend to present it to is not served: its
/// Envoys would never ask for it, and an unasked-for resource keeps the fleet from counting as
/// programmed.
#[test]
fn a_client_certificate_without_tls_backends_is_not_served() {
    let more = client_gateway("idle");
    let dag = dag(&format!("{CLASS}{FIXTURE}{more}"));
    let fleet = &dag.fleets["infra/idle"];
    assert!(fleet.secrets.is_empty(), "{:?}", fleet.secrets.keys().collect::<Vec<_>>());
}

#[test]
fn a_tlsroute_speaks_tls_to_its_backend_only_behind_a_terminating_listener() {
    let more = r#"
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: tls, namespace: infra}
spec:
  gatewayClassName: contour
  listeners:
  - {name: terminate, port: 8443, protocol: TLS, hostname: tls.example.com,
     tls: {mode: Terminate, certificateRefs: [{name: serving}]}}
  - {name: passthrough, port: 443, protocol: TLS, hostname: pass.example.com, tls: {mode: Passthrough}}
---
apiVersion: v1
kind: Secret
metadata: {name: serving, namespace: infra}
type: kubernetes.io/tls
stringData: {tls.crt: "%CERT%", tls.key: "%KEY%"}
---
apiVersion: gateway.networking.k8s.io/v1
kind: TLSRoute
metadata: {name: terminated, namespace: infra}
spec:
  parentRefs: [{name: tls, sectionName: terminate}]
  hostnames: [tls.example.com]
  rules: [{backendRefs: [{name: tls, port: 443}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: TLSRoute
metadata: {name: passed, namespace: infra}
spec:
  parentRefs: [{name: tls, sectionName: passthrough}]
  hostnames: [pass.example.com]
  rules: [{backendRefs: [{name: tls, port: 443}]}]
"#;
    let dag = dag(&format!("{CLASS}{FIXTURE}{more}"));
    let fleet = &dag.fleets["infra/tls"];
    let cluster_of = |port: u16| {
        let listener = fleet.listeners.iter().find(|l| l.port == port).expect("listener");
        let ListenerKind::Tls(chains) = &listener.kind else { panic!("tls") };
        let backends = match &chains[0].action {
            TlsAction::TerminateTcp { backends, .. } | TlsAction::Passthrough { backends } => backends,
            other => panic!("{other:?}"),
        };
        fleet.clusters[backends[0].cluster.as_ref().expect("a cluster")].clone()
    };
    let terminated = cluster_of(8443);
    assert_eq!(terminated.protocol, Some(ir::UpstreamProtocol::Tls), "re-encrypted to the backend");
    assert_eq!(terminated.sni.as_deref(), Some("port.example.com"), "SNI is the policy's hostname");
    assert!(terminated.validation.is_some(), "the backend's certificate is verified");
    let passed = cluster_of(443);
    assert_eq!(
        (passed.protocol, passed.sni.as_deref()),
        (None, None),
        "a passed-through stream is the client's own TLS"
    );
}
