use std::collections::BTreeMap;
use std::path::Path;

use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};

use super::*;

/// The conformance suite's tls-backend pod, as kwok leaves it: IP assigned, fieldRefs, a Secret
/// volume whose files the environment names.
const TLS_BACKEND: &str = r#"
apiVersion: v1
kind: Pod
metadata:
  name: tls-backend-7d9c
  namespace: gateway-conformance-infra
  uid: 5e0c
  labels: {app: tls-backend}
spec:
  nodeName: kwok-node-0
  containers:
  - name: tls-backend
    image: registry.k8s.io/gateway-api/echo-basic:v1.6.1
    env:
    - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    - {name: NAMESPACE, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
    - {name: POD_IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}
    - {name: APP, valueFrom: {fieldRef: {fieldPath: "metadata.labels['app']"}}}
    - {name: TLS_SERVER_CERT, value: /etc/secret-volume/crt}
    - {name: TLS_SERVER_PRIVKEY, value: /etc/secret-volume/key}
    - {name: GREETING, value: "hello $(POD_NAME) $$(POD_NAME) $(UNSET)"}
    args: ["--cert=$(TLS_SERVER_CERT)"]
    volumeMounts:
    - {name: secret-volume, mountPath: /etc/secret-volume}
  volumes:
  - name: secret-volume
    secret:
      secretName: tls-checks-certificate
      items:
      - {key: tls.crt, path: crt}
      - {key: tls.key, path: key}
status:
  podIP: 10.244.0.7
"#;

#[derive(Default)]
struct Objects {
    secrets: BTreeMap<String, Secret>,
    maps: BTreeMap<String, ConfigMap>,
    /// Tokens by audience ("" for the API server's).
    tokens: BTreeMap<String, String>,
    api_server: Option<(String, u16)>,
}

impl Lookup for Objects {
    fn secret(&self, name: &str) -> Option<&Secret> {
        self.secrets.get(name)
    }
    fn config_map(&self, name: &str) -> Option<&ConfigMap> {
        self.maps.get(name)
    }
    fn token(&self, audience: Option<&str>) -> Option<&str> {
        self.tokens.get(audience.unwrap_or_default()).map(String::as_str)
    }
    fn api_server(&self) -> Option<(&str, u16)> {
        self.api_server.as_ref().map(|(h, p)| (h.as_str(), *p))
    }
}

fn objects() -> Objects {
    let secret: Secret =
        serde_yaml::from_str("metadata: {name: tls-checks-certificate}\nstringData: {tls.crt: CERT, tls.key: KEY}\n")
            .expect("secret");
    let map: ConfigMap = serde_yaml::from_str("metadata: {name: ca}\ndata: {ca: CA, other: X}\n").expect("map");
    Objects {
        secrets: [("tls-checks-certificate".to_string(), secret)].into(),
        maps: [("ca".to_string(), map)].into(),
        ..Objects::default()
    }
}

fn images() -> Images {
    Images::default().with("gateway-api/echo-basic", "/cache/echo-basic")
}

fn pod(yaml: &str) -> Pod {
    serde_yaml::from_str(yaml).expect("pod")
}

fn env<'a>(plan: &'a ContainerPlan, name: &str) -> Option<&'a str> {
    plan.env.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

#[test]
fn a_backend_pod_runs_with_its_environment_and_its_secret_as_files() {
    let plan = plan(&pod(TLS_BACKEND), &objects(), &images(), Path::new("/state/pods/5e0c")).expect("plan");
    let c = &plan.containers[0];
    assert_eq!(c.program, Path::new("/cache/echo-basic"));
    assert_eq!(env(c, "POD_NAME"), Some("tls-backend-7d9c"));
    assert_eq!(env(c, "HOSTNAME"), Some("tls-backend-7d9c"), "the runtime's variable: the pod's hostname");
    assert_eq!(env(c, "NAMESPACE"), Some("gateway-conformance-infra"));
    assert_eq!(env(c, "POD_IP"), Some("10.244.0.7"));
    assert_eq!(env(c, "APP"), Some("tls-backend"));
    // Paths stay as written: the pod's own copy of the Secret is bound at the mount path.
    assert_eq!(env(c, "TLS_SERVER_CERT"), Some("/etc/secret-volume/crt"));
    assert_eq!(c.args, vec!["--cert=/etc/secret-volume/crt".to_string()]);
    assert_eq!(
        c.mounts,
        vec![Mount {
            source: "/state/pods/5e0c/volumes/secret-volume".into(),
            target: "/etc/secret-volume".into(),
            read_only: false
        }]
    );
    assert_eq!(c.readiness, Readiness::Listening, "no probe");
    assert_eq!(env(c, "GREETING"), Some("hello tls-backend-7d9c $(POD_NAME) $(UNSET)"));
    let files: Vec<_> = plan.files.iter().map(|f| (f.path.display().to_string(), f.contents.clone())).collect();
    assert_eq!(
        files,
        vec![
            ("volumes/secret-volume/crt".to_string(), b"CERT".to_vec()),
            ("volumes/secret-volume/key".to_string(), b"KEY".to_vec())
        ]
    );
}

#[test]
fn config_maps_env_from_and_optional_references() {
    let yaml = r#"
metadata: {name: p, namespace: ns}
spec:
  containers:
  - name: c
    image: gateway-api/echo-basic@sha256:abcd
    envFrom: [{configMapRef: {name: ca}, prefix: CM_}, {secretRef: {name: absent, optional: true}}]
    env:
    - {name: CA, valueFrom: {configMapKeyRef: {name: ca, key: ca}}}
    - {name: MAYBE, valueFrom: {secretKeyRef: {name: absent, key: k, optional: true}}}
    - {name: CM_other, value: overridden}
  volumes:
  - {name: cm, configMap: {name: ca}}
  - {name: scratch, emptyDir: {}}
"#;
    let plan = plan(&pod(yaml), &objects(), &images(), Path::new("/p")).expect("plan");
    let c = &plan.containers[0];
    assert_eq!(env(c, "CM_ca"), Some("CA"));
    assert_eq!(env(c, "CM_other"), Some("overridden"), "env wins over envFrom");
    assert_eq!(env(c, "CA"), Some("CA"));
    assert_eq!(env(c, "MAYBE"), None, "an absent optional reference sets nothing");
    let paths: Vec<_> = plan.files.iter().map(|f| f.path.display().to_string()).collect();
    assert_eq!(paths, vec!["volumes/cm/ca", "volumes/cm/other"], "every key without items");
    assert_eq!(plan.dirs.len(), 2);
}

#[test]
fn what_cannot_run_is_named() {
    let unknown = TLS_BACKEND.replace("gateway-api/echo-basic:v1.6.1", "coredns/coredns:v1.12.2");
    let err = plan(&pod(&unknown), &objects(), &images(), Path::new("/p")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "container tls-backend: no local binary for image registry.k8s.io/coredns/coredns:v1.12.2"
    );
    let err = plan(&pod(TLS_BACKEND), &Objects::default(), &images(), Path::new("/p")).unwrap_err();
    assert_eq!(err.to_string(), "volumes[secret-volume]: Secret tls-checks-certificate not found");
    let missing_key = TLS_BACKEND.replace("key: tls.key", "key: tls.pem");
    let err = plan(&pod(&missing_key), &objects(), &images(), Path::new("/p")).unwrap_err();
    assert!(matches!(err, PlanError::MissingKey { ref key, .. } if key == "tls.pem"), "{err}");
    let escape = TLS_BACKEND.replace("path: key", "path: ../../etc/passwd");
    assert!(matches!(plan(&pod(&escape), &objects(), &images(), Path::new("/p")), Err(PlanError::Unsupported { .. })));
}

#[test]
fn image_repositories_drop_host_tag_and_digest() {
    assert_eq!(image_repository("registry.k8s.io/gateway-api/echo-basic:v1.6.1"), "gateway-api/echo-basic");
    assert_eq!(image_repository("localhost:5000/echo:dev"), "echo");
    assert_eq!(image_repository("gateway-api/echo-basic@sha256:00"), "gateway-api/echo-basic");
    assert_eq!(image_repository("busybox"), "busybox");
}

/// Upstream's Envoy DaemonSet: the bootstrap init container, probes on named and numbered
/// ports, host ports, and `$(VAR)` in arguments.
#[test]
fn init_containers_probes_and_host_ports() {
    let yaml = r#"
metadata: {name: envoy-x, namespace: projectcontour}
spec:
  initContainers:
  - name: envoy-initconfig
    image: ghcr.io/projectcontour/contour:v1.33.8
    command: [contour]
    args: [bootstrap, /config/envoy.json, --xds-address=contour]
    volumeMounts: [{name: envoy-config, mountPath: /config}, {name: certs, mountPath: /certs, readOnly: true}]
    env: [{name: CONTOUR_NAMESPACE, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}]
  containers:
  - name: envoy
    image: docker.io/envoyproxy/envoy:distroless-v1.38.9
    command: [envoy]
    args: [-c, /config/envoy.json, --service-cluster $(CONTOUR_NAMESPACE)]
    env: [{name: CONTOUR_NAMESPACE, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}]
    ports:
    - {name: http, containerPort: 8080, hostPort: 80, protocol: TCP}
    - {name: https, containerPort: 8443, hostPort: 443}
    - {name: metrics, containerPort: 8002}
    readinessProbe: {httpGet: {path: /ready, port: 8002}, initialDelaySeconds: 3, periodSeconds: 4}
    volumeMounts: [{name: envoy-config, mountPath: /config}, {name: envoy-admin, mountPath: /admin}]
  - name: shutdown-manager
    image: ghcr.io/projectcontour/contour:v1.33.8
    command: [/bin/contour]
    args: [envoy, shutdown-manager]
    ports: [{name: sdm, containerPort: 8090}]
    readinessProbe: {tcpSocket: {port: sdm}}
  volumes:
  - {name: envoy-config, emptyDir: {}}
  - {name: envoy-admin, emptyDir: {}}
  - {name: certs, emptyDir: {}}
"#;
    let images = images().with("projectcontour/contour", "/bin/contour-rs").with("envoyproxy/envoy", "/bin/envoy");
    let plan = plan(&pod(yaml), &objects(), &images, Path::new("/p")).expect("plan");
    let init = &plan.init_containers[0];
    assert_eq!(init.program, Path::new("/bin/contour-rs"));
    assert_eq!(init.args, ["bootstrap", "/config/envoy.json", "--xds-address=contour"]);
    assert_eq!(init.mounts[1], Mount { source: "/p/volumes/certs".into(), target: "/certs".into(), read_only: true });
    let envoy = &plan.containers[0];
    assert_eq!(envoy.args, ["-c", "/config/envoy.json", "--service-cluster projectcontour"]);
    let timing = ProbeTiming { initial_delay: 3, period: 4, timeout: 1, failure_threshold: 3, success_threshold: 1 };
    assert_eq!(
        envoy.readiness,
        Readiness::Http { port: 8002, path: "/ready".into(), https: false, host_header: None, timing }
    );
    assert!(matches!(plan.containers[1].readiness, Readiness::Tcp { port: 8090, .. }), "named port resolved");
    assert_eq!(plan.host_ports, [HostPort { host: 80, container: 8080 }, HostPort { host: 443, container: 8443 }]);

    let escape = yaml.replace("mountPath: /admin}", "mountPath: /admin, subPath: ../../etc}");
    assert!(matches!(plan_of(&escape, &images), Err(PlanError::Unsupported { field }) if field.contains("subPath")));
}

fn plan_of(yaml: &str, images: &Images) -> Result<PodPlan, PlanError> {
    plan(&pod(yaml), &objects(), images, Path::new("/p"))
}

#[test]
fn an_unpacked_image_runs_the_program_its_command_names() {
    let root = std::env::temp_dir().join(format!("podrunner-rootfs-{}", std::process::id()));
    std::fs::create_dir_all(root.join("usr/local/bin")).expect("rootfs");
    std::fs::write(root.join("usr/local/bin/contour-bootstrap"), b"").expect("program");
    let images = Images::default().with_root("contour-rs", &root);
    let yaml = r#"
metadata: {name: envoy-x, namespace: projectcontour}
spec:
  initContainers:
  - {name: init, image: contour-rs:latest, command: [contour-bootstrap], args: [/config/envoy.json]}
  containers:
  - {name: absolute, image: registry.example.com/contour-rs:v1, command: [/bin/contour, serve]}
  - {name: none, image: contour-rs:latest}
"#;
    let err = plan(&pod(yaml), &objects(), &images, Path::new("/state/pods/x")).expect_err("no command");
    assert_eq!(
        err,
        PlanError::Unsupported { field: "containers[1].command (a container of an unpacked image needs one)".into() }
    );
    let yaml = yaml.replace("  - {name: none, image: contour-rs:latest}\n", "");
    let p = plan(&pod(&yaml), &objects(), &images, Path::new("/state/pods/x")).expect("plan");
    let _ = std::fs::remove_dir_all(&root);
    assert_eq!(p.init_containers[0].program, root.join("usr/local/bin/contour-bootstrap"), "found on the image's PATH");
    assert_eq!(p.init_containers[0].args, ["/config/envoy.json"]);
    assert_eq!(p.containers[0].program, root.join("bin/contour"), "an absolute path inside the image");
    assert_eq!(p.containers[0].args, ["serve"]);
}

/// A controller's pod as the ServiceAccount admission plugin leaves it: the projected volume
/// with the token, the cluster's CA and the namespace, mounted where in-cluster clients look.
const IN_CLUSTER: &str = r#"
metadata: {name: contour-5f8d-x2x4k, namespace: projectcontour, uid: 77aa}
spec:
  serviceAccountName: contour
  containers:
  - name: contour
    image: gateway-api/echo-basic:v1
    volumeMounts:
    - {name: kube-api-access-abcde, mountPath: /var/run/secrets/kubernetes.io/serviceaccount, readOnly: true}
  volumes:
  - name: kube-api-access-abcde
    projected:
      sources:
      - serviceAccountToken: {expirationSeconds: 3607, path: token}
      - configMap: {name: kube-root-ca.crt, items: [{key: ca.crt, path: ca.crt}]}
      - downwardAPI: {items: [{path: namespace, fieldRef: {apiVersion: v1, fieldPath: metadata.namespace}}]}
      - serviceAccountToken: {audience: vault, expirationSeconds: 60, path: vault/token}
status: {podIP: 10.244.1.9}
"#;

#[test]
fn in_cluster_pods_get_their_token_ca_namespace_and_the_api_servers_address() {
    let p = pod(IN_CLUSTER);
    assert_eq!(
        token_requests(&p),
        vec![
            TokenWanted { audience: None, expiration_seconds: 3607 },
            TokenWanted { audience: Some("vault".into()), expiration_seconds: 600 },
        ],
        "one token per audience, at least ten minutes"
    );
    let ca: ConfigMap = serde_yaml::from_str("metadata: {name: kube-root-ca.crt}\ndata: {ca.crt: CA}\n").expect("map");
    let objects = Objects {
        maps: [("kube-root-ca.crt".to_string(), ca)].into(),
        tokens: [(String::new(), "TOKEN".to_string()), ("vault".to_string(), "VAULT".to_string())].into(),
        api_server: Some(("10.96.0.1".into(), 443)),
        ..Objects::default()
    };
    let plan = plan(&p, &objects, &images(), Path::new("/p")).expect("plan");
    let files: Vec<_> = plan
        .files
        .iter()
        .map(|f| (f.path.display().to_string(), String::from_utf8_lossy(&f.contents).into_owned()))
        .collect();
    let dir = "volumes/kube-api-access-abcde";
    assert_eq!(
        files,
        vec![
            (format!("{dir}/token"), "TOKEN".to_string()),
            (format!("{dir}/ca.crt"), "CA".to_string()),
            (format!("{dir}/namespace"), "projectcontour".to_string()),
            (format!("{dir}/vault/token"), "VAULT".to_string()),
        ]
    );
    let c = &plan.containers[0];
    assert_eq!(env(c, "KUBERNETES_SERVICE_HOST"), Some("10.96.0.1"));
    assert_eq!(env(c, "KUBERNETES_SERVICE_PORT"), Some("443"));
    assert_eq!(env(c, "KUBERNETES_PORT_443_TCP"), Some("tcp://10.96.0.1:443"));
    assert_eq!(c.mounts[0].target, "/var/run/secrets/kubernetes.io/serviceaccount");

    // Without the token (not issued yet), the pod waits, naming what it waits for.
    let without = Objects { tokens: BTreeMap::new(), ..objects };
    let err = plan_of_with(&p, &without).expect_err("no token");
    assert_eq!(
        err.to_string(),
        "volumes[kube-api-access-abcde].sources[0].serviceAccountToken: ServiceAccount token contour not found"
    );
}

fn plan_of_with(p: &Pod, objects: &Objects) -> Result<PodPlan, PlanError> {
    plan(p, objects, &images(), Path::new("/p"))
}
