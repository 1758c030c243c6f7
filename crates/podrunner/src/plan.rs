//! Pod → processes: the binary for each container's image, its arguments and environment as the
//! kubelet would compute them (values, field and resource references, Secret and ConfigMap keys,
//! `$(VAR)` expansion), and its volumes as files in the pod's own directory. Paths under a
//! volume's mount path are rewritten into that directory, so pods that mount the same path never
//! share files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{ConfigMap, Container, EnvVar, KeyToPath, Pod, Secret, Volume};

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
}

/// Which local binary runs which image, by repository (the image without registry host, tag
/// or digest, e.g. `gateway-api/echo-basic`).
#[derive(Debug, Clone, Default)]
pub struct Images {
    binaries: BTreeMap<String, PathBuf>,
}

impl Images {
    /// Runs images of `repository` with `binary`.
    pub fn with(mut self, repository: &str, binary: impl Into<PathBuf>) -> Self {
        self.binaries.insert(repository.to_string(), binary.into());
        self
    }

    fn binary(&self, image: &str) -> Option<&Path> {
        self.binaries.get(image_repository(image)).map(PathBuf::as_path)
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
}

/// Everything to do for one pod.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PodPlan {
    /// Volume contents.
    pub files: Vec<PodFile>,
    /// Volume directories to create (emptyDir and every volume), relative to the pod's directory.
    pub dirs: Vec<PathBuf>,
    /// The containers, in order (init containers are not run).
    pub containers: Vec<ContainerPlan>,
}

/// Where a volume's files live, relative to the pod's directory.
fn volume_dir(name: &str) -> PathBuf {
    Path::new("volumes").join(name)
}

/// Plans `pod` (whose status carries its IP) to run from `pod_dir`.
pub fn plan(pod: &Pod, lookup: &dyn Lookup, images: &Images, pod_dir: &Path) -> Result<PodPlan, PlanError> {
    let spec = pod.spec.as_ref().ok_or_else(|| PlanError::Unsupported { field: "spec".into() })?;
    let mut out = PodPlan::default();
    for volume in spec.volumes.iter().flatten() {
        out.dirs.push(volume_dir(&volume.name));
        out.files.extend(volume_files(volume, lookup)?);
    }
    for (index, container) in spec.containers.iter().enumerate() {
        let image = container.image.clone().unwrap_or_default();
        let program = images
            .binary(&image)
            .ok_or_else(|| PlanError::UnknownImage { container: container.name.clone(), image: image.clone() })?;
        let field = format!("containers[{index}]");
        let env = environment(pod, container, lookup, &field)?;
        let mounts = mounts(container, pod_dir);
        let expand = |s: &String| rewrite_paths(&expand_vars(s, &env), &mounts);
        let command = container.command.iter().flatten().skip(1);
        let args = command.chain(container.args.iter().flatten()).map(expand).collect();
        let env = env.iter().map(|(k, v)| (k.clone(), rewrite_paths(v, &mounts))).collect();
        out.containers.push(ContainerPlan { name: container.name.clone(), program: program.to_path_buf(), args, env });
    }
    Ok(out)
}

/// The files of a Secret, ConfigMap or projected volume.
fn volume_files(volume: &Volume, lookup: &dyn Lookup) -> Result<Vec<PodFile>, PlanError> {
    let field = format!("volumes[{}]", volume.name);
    let dir = volume_dir(&volume.name);
    if let Some(source) = &volume.secret {
        let name = source.secret_name.clone().unwrap_or_default();
        let Some(secret) = lookup.secret(&name) else {
            return match source.optional {
                Some(true) => Ok(Vec::new()),
                _ => Err(PlanError::Missing { field, kind: "Secret", name }),
            };
        };
        let data: BTreeMap<String, Vec<u8>> = secret_data(secret);
        return project(&dir, &data, source.items.as_deref(), &field, "Secret", &name);
    }
    if let Some(source) = &volume.config_map {
        let name = source.name.clone();
        let Some(map) = lookup.config_map(&name) else {
            return match source.optional {
                Some(true) => Ok(Vec::new()),
                _ => Err(PlanError::Missing { field, kind: "ConfigMap", name }),
            };
        };
        return project(&dir, &config_map_data(map), source.items.as_deref(), &field, "ConfigMap", &name);
    }
    if volume.empty_dir.is_some() || volume.projected.is_some() {
        // Projected volumes carry the service-account token, which no process here uses.
        return Ok(Vec::new());
    }
    Err(PlanError::Unsupported { field })
}

fn secret_data(secret: &Secret) -> BTreeMap<String, Vec<u8>> {
    let mut data: BTreeMap<String, Vec<u8>> =
        secret.data.iter().flatten().map(|(k, v)| (k.clone(), v.0.clone())).collect();
    for (k, v) in secret.string_data.iter().flatten() {
        data.insert(k.clone(), v.clone().into_bytes());
    }
    data
}

fn config_map_data(map: &ConfigMap) -> BTreeMap<String, Vec<u8>> {
    let mut data: BTreeMap<String, Vec<u8>> =
        map.data.iter().flatten().map(|(k, v)| (k.clone(), v.clone().into_bytes())).collect();
    for (k, v) in map.binary_data.iter().flatten() {
        data.insert(k.clone(), v.0.clone());
    }
    data
}

/// Every key as a file, or only `items` (key → path), as the kubelet projects them.
fn project(
    dir: &Path,
    data: &BTreeMap<String, Vec<u8>>,
    items: Option<&[KeyToPath]>,
    field: &str,
    kind: &'static str,
    name: &str,
) -> Result<Vec<PodFile>, PlanError> {
    let Some(items) = items else {
        return Ok(data.iter().map(|(k, v)| PodFile { path: dir.join(k), contents: v.clone() }).collect());
    };
    items
        .iter()
        .map(|item| {
            if item.path.split('/').any(|c| c == "..") || item.path.starts_with('/') {
                return Err(PlanError::Unsupported { field: format!("{field}.items[{}].path", item.key) });
            }
            let contents = data.get(&item.key).ok_or_else(|| PlanError::MissingKey {
                field: field.to_string(),
                kind,
                name: name.to_string(),
                key: item.key.clone(),
            })?;
            Ok(PodFile { path: dir.join(&item.path), contents: contents.clone() })
        })
        .collect()
}

/// The container's environment: `envFrom` first, then `env` in order, each value expanded with
/// the variables before it (the kubelet's rules).
fn environment(
    pod: &Pod,
    container: &Container,
    lookup: &dyn Lookup,
    field: &str,
) -> Result<Vec<(String, String)>, PlanError> {
    let mut env: Vec<(String, String)> = Vec::new();
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

/// (mount path, directory it maps to) for each of the container's volume mounts, longest first.
fn mounts(container: &Container, pod_dir: &Path) -> Vec<(String, String)> {
    let mut mounts: Vec<(String, String)> = container
        .volume_mounts
        .iter()
        .flatten()
        .map(|m| {
            let mut dir = pod_dir.join(volume_dir(&m.name));
            if let Some(sub) = m.sub_path.as_deref().filter(|s| !s.is_empty()) {
                dir = dir.join(sub);
            }
            (m.mount_path.trim_end_matches('/').to_string(), dir.display().to_string())
        })
        .collect();
    mounts.sort_by_key(|(path, _)| std::cmp::Reverse(path.len()));
    mounts
}

/// A path under a mount path, wherever it stands in a value (`/etc/x/crt`, `--cert=/etc/x/crt`),
/// names the same path in the pod's directory.
fn rewrite_paths(value: &str, mounts: &[(String, String)]) -> String {
    let is_path_char = |c: char| c.is_alphanumeric() || matches!(c, '/' | '.' | '-' | '_');
    let mut out = String::with_capacity(value.len());
    let mut i = 0;
    'scan: while i < value.len() {
        let before = value[..i].chars().next_back();
        if before.is_none_or(|c| !is_path_char(c)) {
            for (mount, dir) in mounts {
                if let Some(rest) = value[i..].strip_prefix(mount.as_str())
                    && rest.chars().next().is_none_or(|c| c == '/' || !is_path_char(c))
                {
                    out.push_str(dir);
                    i += mount.len();
                    continue 'scan;
                }
            }
        }
        let c = value[i..].chars().next().expect("in bounds");
        out.push(c);
        i += c.len_utf8();
    }
    out
}

#[cfg(test)]
mod tests;
