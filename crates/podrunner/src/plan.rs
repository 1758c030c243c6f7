//! Pod → processes: the binary for each container's image, its arguments and environment as the
//! kubelet would compute them (values, field and resource references, Secret and ConfigMap keys,
//! `$(VAR)` expansion), its volumes as files in the pod's own directory with the mount points
//! they appear at (each container runs in a mount namespace of its own, so paths written inside
//! files work and pods that mount the same path never share files), its readiness probe, and
//! the pod's host ports.

use std::collections::BTreeMap;

use std::path::{Path, PathBuf};
use volumes::{config_map_data, secret_data, volume_dir, volume_files};

use k8s_openapi::api::core::v1::{ConfigMap, Container, EnvVar, LifecycleHandler, Pod, Probe, Secret};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// Why a pod cannot run here; each names the container or volume and the field.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PlanError {
    /// No local binary stands in for the image.
    #[error("container {container}: no local binary for image {image}")]
    UnknownImage {
        /// The container.
        container: String,
        /// Its image.
        image: String,
    },
    /// A Secret or ConfigMap the pod needs does not exist (and is not optional).
    #[error("{field}: {kind} {name} not found")]
    Missing {
        /// Where it is referenced, e.g. `containers[0].env[TLS_CERT]`.
        field: String,
        /// `Secret` or `ConfigMap`.
        kind: &'static str,
        /// Its name.
        name: String,
    },
    /// The Secret or ConfigMap exists but lacks the key.
    #[error("{field}: key {key} not in {kind} {name}")]
    MissingKey {
        /// Where it is referenced.
        field: String,
        /// `Secret` or `ConfigMap`.
        kind: &'static str,
        /// Its name.
        name: String,
        /// The key.
        key: String,
    },
    /// A field this runner does not implement.
    #[error("{field}: not supported by the pod runner")]
    Unsupported {
        /// The field.
        field: String,
    },
}

/// Looks up the objects a pod references, in the pod's namespace.
pub trait Lookup {
    /// The Secret `name`.
    fn secret(&self, name: &str) -> Option<&Secret>;
    /// The ConfigMap `name`.
    fn config_map(&self, name: &str) -> Option<&ConfigMap>;
    /// A token of the pod's service account for `audience` (`None`: the API server's own), as
    /// a TokenRequest bound to the pod returns it ([`token_requests`] says which to fetch).
    fn token(&self, _audience: Option<&str>) -> Option<&str> {
        None
    }
    /// Where pods reach the API server: the `default/kubernetes` Service's cluster IP and port,
    /// which every container's environment names (`KUBERNETES_SERVICE_HOST` and the rest).
    fn api_server(&self) -> Option<(&str, u16)> {
        None
    }
}

/// One service-account token a pod's projected volumes ask for.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct TokenWanted {
    /// The audience (`None`: the API server's).
    pub audience: Option<String>,
    /// Its lifetime in seconds (the API's default, one hour, when unset; at least ten minutes).
    pub expiration_seconds: i64,
}

/// The tokens `pod`'s projected volumes need, one per audience: the runtime requests them (bound
/// to the pod) before planning.
pub fn token_requests(pod: &Pod) -> Vec<TokenWanted> {
    let mut out: Vec<TokenWanted> = pod
        .spec
        .iter()
        .flat_map(|s| s.volumes.iter().flatten())
        .filter_map(|v| v.projected.as_ref())
        .flat_map(|p| p.sources.iter().flatten())
        .filter_map(|s| s.service_account_token.as_ref())
        .map(|t| TokenWanted {
            audience: t.audience.clone().filter(|a| !a.is_empty()),
            expiration_seconds: t.expiration_seconds.unwrap_or(3600).max(600),
        })
        .collect();
    out.sort();
    out.dedup_by(|a, b| a.audience == b.audience);
    out
}

/// What runs which image, by repository (the image without registry host, tag or digest, e.g.
/// `gateway-api/echo-basic`): a local binary standing in for the image, or the image itself,
/// unpacked (its root file system).
#[derive(Debug, Clone, Default)]
pub struct Images {
    sources: BTreeMap<String, ImageSource>,
}

#[derive(Debug, Clone)]
enum ImageSource {
    Binary(PathBuf),
    Root(PathBuf),
}

/// Where an image's programs are looked up: our image's PATH, then the usual ones.
const IMAGE_PATH: [&str; 3] = ["usr/local/bin", "usr/bin", "bin"];

impl Images {
    /// Runs images of `repository` with `binary` (whatever the container's command names).
    pub fn with(mut self, repository: &str, binary: impl Into<PathBuf>) -> Self {
        self.sources.insert(repository.to_string(), ImageSource::Binary(binary.into()));
        self
    }

    /// Runs images of `repository` from their unpacked root file system `root`: each container's
    /// `command[0]` is the image's program of that name (an absolute path inside the image, or a
    /// name looked up in `/usr/local/bin`, `/usr/bin` and `/bin` of the image).
    pub fn with_root(mut self, repository: &str, root: impl Into<PathBuf>) -> Self {
        self.sources.insert(repository.to_string(), ImageSource::Root(root.into()));
        self
    }

    /// The program a container runs, or why there is none.
    fn program(&self, container: &Container, field: &str) -> Result<PathBuf, PlanError> {
        self.program_of(container, container.command.iter().flatten().next(), &format!("{field}.command"))
    }

    /// The program `command` (a command's first word) names in the container's image: the
    /// binary standing in for the image whatever it names, or the program of that name in the
    /// unpacked image.
    fn program_of(&self, container: &Container, command: Option<&String>, field: &str) -> Result<PathBuf, PlanError> {
        let image = container.image.clone().unwrap_or_default();
        let unknown = || PlanError::UnknownImage { container: container.name.clone(), image: image.clone() };
        match self.sources.get(image_repository(&image)).ok_or_else(unknown)? {
            ImageSource::Binary(binary) => Ok(binary.clone()),
            ImageSource::Root(root) => {
                let Some(name) = command else {
                    return Err(PlanError::Unsupported {
                        field: format!("{field} (a container of an unpacked image needs one)"),
                    });
                };
                if let Some(absolute) = name.strip_prefix('/') {
                    return Ok(root.join(absolute));
                }
                let candidates = IMAGE_PATH.map(|dir| root.join(dir).join(name));
                Ok(candidates.iter().find(|p| p.is_file()).unwrap_or(&candidates[0]).clone())
            }
        }
    }
}

/// The repository part of an image reference: without the registry host (a first component
/// with a `.` or `:`, or `localhost`), the tag and the digest.
pub fn image_repository(image: &str) -> &str {
    let image = image.split_once('@').map_or(image, |(name, _)| name);
    let image = match image.rsplit_once(':') {
        Some((name, tag)) if !tag.contains('/') => name,
        _ => image,
    };
    match image.split_once('/') {
        Some((host, rest)) if host.contains('.') || host.contains(':') || host == "localhost" => rest,
        _ => image,
    }
}

/// A file to write before the containers start, relative to the pod's directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodFile {
    /// Path relative to the pod's directory.
    pub path: PathBuf,
    /// Contents.
    pub contents: Vec<u8>,
}

/// One container's process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerPlan {
    /// The container's name.
    pub name: String,
    /// The binary standing in for the image.
    pub program: PathBuf,
    /// `command[1..]` (a command replaces the image's entry point, which is the binary itself)
    /// followed by `args`, expanded.
    pub args: Vec<String>,
    /// The environment, in order.
    pub env: Vec<(String, String)>,
    /// Volumes, bound at their mount paths inside the container's mount namespace.
    pub mounts: Vec<Mount>,
    /// When the container counts as ready.
    pub readiness: Readiness,
    /// What runs before the container is stopped (`lifecycle.preStop`).
    pub pre_stop: Option<Hook>,
}

/// A lifecycle hook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hook {
    /// `exec`: a program of the container's image, run in the container (its namespaces, mounts
    /// and environment).
    Exec {
        /// The program.
        program: PathBuf,
        /// `command[1..]`.
        args: Vec<String>,
    },
    /// `httpGet`: a GET to the pod (any answer ends the hook).
    Http {
        /// The port, named ports resolved.
        port: u16,
        /// The path.
        path: String,
    },
    /// `sleep`: this many seconds.
    Sleep(u32),
}

/// A volume directory (or, with `subPath`, a file or directory in it) at a path in the container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// The source, absolute (inside the pod's directory).
    pub source: PathBuf,
    /// Where the container sees it.
    pub target: String,
    /// Bound read-only.
    pub read_only: bool,
}

/// A container's readiness, as its probe says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readiness {
    /// No probe (or one that runs a command, which has no binary here): ready once the process
    /// listens on a socket.
    Listening,
    /// `httpGet`: a GET of the path answered with 200–399.
    Http {
        /// The port, named ports resolved.
        port: u16,
        /// The path.
        path: String,
        /// `HTTPS` (certificates not checked, as the kubelet does).
        https: bool,
        /// The `Host` header, when set.
        host_header: Option<String>,
        /// When probing starts, how often, and how many failures turn it unready.
        timing: ProbeTiming,
    },
    /// `tcpSocket`: the port accepts a connection.
    Tcp {
        /// The port, named ports resolved.
        port: u16,
        /// Timing.
        timing: ProbeTiming,
    },
}

/// A probe's schedule, with the kubelet's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbeTiming {
    /// Seconds before the first probe.
    pub initial_delay: u32,
    /// Seconds between probes.
    pub period: u32,
    /// Seconds a probe may take.
    pub timeout: u32,
    /// Consecutive failures that make the container unready.
    pub failure_threshold: u32,
    /// Consecutive successes that make it ready again.
    pub success_threshold: u32,
}

/// A host port the pod asks for: connections to it on the host reach the pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostPort {
    /// The port on the host.
    pub host: u16,
    /// The container port it forwards to.
    pub container: u16,
}

/// Everything to do for one pod.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PodPlan {
    /// Volume contents.
    pub files: Vec<PodFile>,
    /// Volume directories to create (emptyDir and every volume), relative to the pod's directory.
    pub dirs: Vec<PathBuf>,
    /// Init containers, run one after the other to completion before the containers start.
    pub init_containers: Vec<ContainerPlan>,
    /// The containers, in order.
    pub containers: Vec<ContainerPlan>,
    /// TCP host ports.
    pub host_ports: Vec<HostPort>,
}

/// Plans `pod` (whose status carries its IP) to run from `pod_dir`.
pub fn plan(pod: &Pod, lookup: &dyn Lookup, images: &Images, pod_dir: &Path) -> Result<PodPlan, PlanError> {
    let spec = pod.spec.as_ref().ok_or_else(|| PlanError::Unsupported { field: "spec".into() })?;
    let mut out = PodPlan::default();
    for volume in spec.volumes.iter().flatten() {
        out.dirs.push(volume_dir(&volume.name));
        out.files.extend(volume_files(pod, volume, lookup)?);
    }
    for (index, container) in spec.init_containers.iter().flatten().enumerate() {
        let c = container_plan(pod, container, lookup, images, pod_dir, &format!("initContainers[{index}]"))?;
        out.init_containers.push(c);
    }
    for (index, container) in spec.containers.iter().enumerate() {
        out.containers.push(container_plan(pod, container, lookup, images, pod_dir, &format!("containers[{index}]"))?);
        for port in container.ports.iter().flatten() {
            let tcp = port.protocol.as_deref().is_none_or(|p| p == "TCP");
            let host = port.host_port.and_then(|p| u16::try_from(p).ok()).filter(|p| *p > 0);
            if let (true, Some(host), Ok(container)) = (tcp, host, u16::try_from(port.container_port)) {
                out.host_ports.push(HostPort { host, container });
            }
        }
    }
    Ok(out)
}

fn container_plan(
    pod: &Pod,
    container: &Container,
    lookup: &dyn Lookup,
    images: &Images,
    pod_dir: &Path,
    field: &str,
) -> Result<ContainerPlan, PlanError> {
    let program = images.program(container, field)?;
    let env = environment(pod, container, lookup, field)?;
    let expand = |s: &String| expand_vars(s, &env);
    let command = container.command.iter().flatten().skip(1);
    let args = command.chain(container.args.iter().flatten()).map(expand).collect();
    let readiness = readiness(container, container.readiness_probe.as_ref(), field)?;
    let pre_stop = container
        .lifecycle
        .as_ref()
        .and_then(|l| l.pre_stop.as_ref())
        .map(|h| hook(container, h, images, &env, &format!("{field}.lifecycle.preStop")))
        .transpose()?;
    Ok(ContainerPlan {
        name: container.name.clone(),
        program,
        args,
        env,
        mounts: mounts(container, pod_dir, field)?,
        readiness,
        pre_stop,
    })
}

fn hook(
    container: &Container,
    handler: &LifecycleHandler,
    images: &Images,
    env: &[(String, String)],
    field: &str,
) -> Result<Hook, PlanError> {
    if let Some(exec) = &handler.exec {
        let command = exec.command.as_deref().unwrap_or_default();
        let program = images.program_of(container, command.first(), &format!("{field}.exec.command"))?;
        return Ok(Hook::Exec { program, args: command.iter().skip(1).map(|a| expand_vars(a, env)).collect() });
    }
    if let Some(http) = &handler.http_get {
        let port = port_number(container, &http.port)
            .ok_or_else(|| PlanError::Unsupported { field: format!("{field}.httpGet.port") })?;
        let path = http.path.clone().filter(|p| !p.is_empty()).unwrap_or_else(|| "/".into());
        return Ok(Hook::Http { port, path });
    }
    if let Some(sleep) = &handler.sleep {
        return Ok(Hook::Sleep(u32::try_from(sleep.seconds).unwrap_or(0)));
    }
    Err(PlanError::Unsupported { field: field.into() })
}

/// A port by number or by the container's name for it.
fn port_number(container: &Container, port: &IntOrString) -> Option<u16> {
    let number = match port {
        IntOrString::Int(n) => Some(*n),
        IntOrString::String(name) => container
            .ports
            .iter()
            .flatten()
            .find(|p| p.name.as_deref() == Some(name.as_str()))
            .map(|p| p.container_port),
    };
    number.and_then(|n| u16::try_from(n).ok()).filter(|n| *n > 0)
}

/// The probe's check and schedule; a command probe falls back to "listening" (its binary is
/// part of an image that is not here).
fn readiness(container: &Container, probe: Option<&Probe>, field: &str) -> Result<Readiness, PlanError> {
    let Some(probe) = probe else { return Ok(Readiness::Listening) };
    let timing = ProbeTiming {
        initial_delay: probe.initial_delay_seconds.unwrap_or(0).max(0) as u32,
        period: probe.period_seconds.unwrap_or(10).max(1) as u32,
        timeout: probe.timeout_seconds.unwrap_or(1).max(1) as u32,
        failure_threshold: probe.failure_threshold.unwrap_or(3).max(1) as u32,
        success_threshold: probe.success_threshold.unwrap_or(1).max(1) as u32,
    };
    let port_of = |port: &IntOrString, at: &str| -> Result<u16, PlanError> {
        port_number(container, port)
            .ok_or_else(|| PlanError::Unsupported { field: format!("{field}.readinessProbe.{at}.port") })
    };
    if let Some(http) = &probe.http_get {
        let host_header =
            http.http_headers.iter().flatten().find(|h| h.name.eq_ignore_ascii_case("host")).map(|h| h.value.clone());
        return Ok(Readiness::Http {
            port: port_of(&http.port, "httpGet")?,
            path: http.path.clone().filter(|p| !p.is_empty()).unwrap_or_else(|| "/".into()),
            https: http.scheme.as_deref() == Some("HTTPS"),
            host_header,
            timing,
        });
    }
    if let Some(tcp) = &probe.tcp_socket {
        return Ok(Readiness::Tcp { port: port_of(&tcp.port, "tcpSocket")?, timing });
    }
    Ok(Readiness::Listening)
}

/// The container's environment: `envFrom` first, then `env` in order, each value expanded with
/// the variables before it (the kubelet's rules).
fn environment(
    pod: &Pod,
    container: &Container,
    lookup: &dyn Lookup,
    field: &str,
) -> Result<Vec<(String, String)>, PlanError> {
    // The container runtime's own: the pod's hostname (its own UTS namespace has it too).
    let mut env: Vec<(String, String)> = vec![("HOSTNAME".into(), hostname(pod))];
    // The kubelet's variables for the `kubernetes` Service, in every container.
    if let Some((host, port)) = lookup.api_server() {
        let url = format!("tcp://{host}:{port}");
        env.extend([
            ("KUBERNETES_SERVICE_HOST".into(), host.to_string()),
            ("KUBERNETES_SERVICE_PORT".into(), port.to_string()),
            ("KUBERNETES_SERVICE_PORT_HTTPS".into(), port.to_string()),
            ("KUBERNETES_PORT".into(), url.clone()),
            (format!("KUBERNETES_PORT_{port}_TCP"), url),
            (format!("KUBERNETES_PORT_{port}_TCP_PROTO"), "tcp".into()),
            (format!("KUBERNETES_PORT_{port}_TCP_PORT"), port.to_string()),
            (format!("KUBERNETES_PORT_{port}_TCP_ADDR"), host.to_string()),
        ]);
    }
    let set = |env: &mut Vec<(String, String)>, name: String, value: String| {
        env.retain(|(k, _)| *k != name);
        env.push((name, value));
    };
    for (i, source) in container.env_from.iter().flatten().enumerate() {
        let prefix = source.prefix.clone().unwrap_or_default();
        let at = format!("{field}.envFrom[{i}]");
        let data = if let Some(r) = &source.secret_ref {
            match lookup.secret(&r.name) {
                Some(s) => secret_data(s),
                None if r.optional == Some(true) => continue,
                None => return Err(PlanError::Missing { field: at, kind: "Secret", name: r.name.clone() }),
            }
        } else if let Some(r) = &source.config_map_ref {
            match lookup.config_map(&r.name) {
                Some(m) => config_map_data(m),
                None if r.optional == Some(true) => continue,
                None => return Err(PlanError::Missing { field: at, kind: "ConfigMap", name: r.name.clone() }),
            }
        } else {
            continue;
        };
        for (k, v) in data {
            set(&mut env, format!("{prefix}{k}"), String::from_utf8_lossy(&v).into_owned());
        }
    }
    for var in container.env.iter().flatten() {
        let at = format!("{field}.env[{}]", var.name);
        if let Some(value) = env_value(pod, var, lookup, &at)? {
            let value = expand_vars(&value, &env);
            set(&mut env, var.name.clone(), value);
        }
    }
    Ok(env)
}

/// The pod's hostname: `spec.hostname`, else its name (at most 63 characters, as the kubelet
/// cuts it).
fn hostname(pod: &Pod) -> String {
    let name = pod
        .spec
        .as_ref()
        .and_then(|s| s.hostname.clone())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| pod.metadata.name.clone().unwrap_or_default());
    name.chars().take(63).collect::<String>().trim_end_matches(['-', '.']).to_string()
}

/// One variable's value; `None` when an optional reference is absent.
fn env_value(pod: &Pod, var: &EnvVar, lookup: &dyn Lookup, field: &str) -> Result<Option<String>, PlanError> {
    let Some(from) = &var.value_from else { return Ok(Some(var.value.clone().unwrap_or_default())) };
    if let Some(r) = &from.field_ref {
        return field_value(pod, &r.field_path)
            .map(Some)
            .ok_or_else(|| PlanError::Unsupported { field: format!("{field}.valueFrom.fieldRef {}", r.field_path) });
    }
    if let Some(r) = &from.secret_key_ref {
        let data = lookup.secret(&r.name).map(secret_data);
        return key_value(data, "Secret", &r.name, &r.key, r.optional == Some(true), field);
    }
    if let Some(r) = &from.config_map_key_ref {
        let data = lookup.config_map(&r.name).map(config_map_data);
        return key_value(data, "ConfigMap", &r.name, &r.key, r.optional == Some(true), field);
    }
    // Resource fields (limits and requests): nothing here limits a process; report none.
    if from.resource_field_ref.is_some() {
        return Ok(Some("0".into()));
    }
    Err(PlanError::Unsupported { field: format!("{field}.valueFrom") })
}

/// One key of a Secret's or ConfigMap's `data` (`None` when the object is absent); `None`
/// when it or the key is absent and the reference is optional.
fn key_value(
    data: Option<BTreeMap<String, Vec<u8>>>,
    kind: &'static str,
    name: &str,
    key: &str,
    optional: bool,
    field: &str,
) -> Result<Option<String>, PlanError> {
    let Some(mut data) = data else {
        return match optional {
            true => Ok(None),
            false => Err(PlanError::Missing { field: field.into(), kind, name: name.into() }),
        };
    };
    match data.remove(key) {
        Some(v) => Ok(Some(String::from_utf8_lossy(&v).into_owned())),
        None if optional => Ok(None),
        None => Err(PlanError::MissingKey { field: field.into(), kind, name: name.into(), key: key.into() }),
    }
}

/// The downward API fields a process can ask for.
fn field_value(pod: &Pod, path: &str) -> Option<String> {
    let meta = &pod.metadata;
    let status = pod.status.as_ref();
    let spec = pod.spec.as_ref();
    let keyed = |prefix: &str, map: Option<&BTreeMap<String, String>>| -> Option<String> {
        let key = path.strip_prefix(prefix)?.strip_suffix("']")?;
        Some(map.and_then(|m| m.get(key)).cloned().unwrap_or_default())
    };
    match path {
        "metadata.name" => meta.name.clone(),
        "metadata.namespace" => meta.namespace.clone(),
        "metadata.uid" => meta.uid.clone(),
        "spec.nodeName" => spec.and_then(|s| s.node_name.clone()),
        "spec.serviceAccountName" => spec.and_then(|s| s.service_account_name.clone()),
        "status.podIP" => status.and_then(|s| s.pod_ip.clone()),
        "status.hostIP" => status.and_then(|s| s.host_ip.clone()),
        _ => keyed("metadata.labels['", meta.labels.as_ref())
            .or_else(|| keyed("metadata.annotations['", meta.annotations.as_ref())),
    }
}

/// `$(VAR)` replaced by the variable's value when it is defined; `$$` is a literal `$`; anything
/// else is left as written (the kubelet's expansion).
fn expand_vars(text: &str, env: &[(String, String)]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let tail = &rest[at + 1..];
        if let Some(after) = tail.strip_prefix('$') {
            out.push('$');
            rest = after;
        } else if let Some(inner) = tail.strip_prefix('(')
            && let Some(end) = inner.find(')')
            && let Some((_, value)) = env.iter().find(|(k, _)| *k == inner[..end])
        {
            out.push_str(value);
            rest = &inner[end + 1..];
        } else {
            out.push('$');
            rest = tail;
        }
    }
    out.push_str(rest);
    out
}

/// Each of the container's volume mounts: the volume's directory in the pod (or the `subPath`
/// in it) at the mount path.
fn mounts(container: &Container, pod_dir: &Path, field: &str) -> Result<Vec<Mount>, PlanError> {
    container
        .volume_mounts
        .iter()
        .flatten()
        .map(|m| {
            let mut source = pod_dir.join(volume_dir(&m.name));
            if let Some(sub) = m.sub_path.as_deref().filter(|s| !s.is_empty()) {
                if sub.starts_with('/') || sub.split('/').any(|c| c == "..") {
                    return Err(PlanError::Unsupported { field: format!("{field}.volumeMounts[{}].subPath", m.name) });
                }
                source = source.join(sub);
            }
            if !m.mount_path.starts_with('/') {
                return Err(PlanError::Unsupported { field: format!("{field}.volumeMounts[{}].mountPath", m.name) });
            }
            Ok(Mount { source, target: m.mount_path.clone(), read_only: m.read_only.unwrap_or(false) })
        })
        .collect()
}

mod volumes;

#[cfg(test)]
mod tests;
