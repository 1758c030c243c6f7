//! A pod's volumes as files: Secrets, ConfigMaps, the downward API and projected volumes (the
//! service-account token's among them), each under the volume's own directory in the pod's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{ConfigMap, DownwardAPIVolumeFile, KeyToPath, Pod, Secret, Volume, VolumeProjection};

use super::{Lookup, PlanError, PodFile, field_value};

/// Where a volume's files live, relative to the pod's directory.
pub(super) fn volume_dir(name: &str) -> PathBuf {
    Path::new("volumes").join(name)
}

/// The files of a Secret, ConfigMap or projected volume.
pub(super) fn volume_files(pod: &Pod, volume: &Volume, lookup: &dyn Lookup) -> Result<Vec<PodFile>, PlanError> {
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
    if let Some(source) = &volume.downward_api {
        return downward_files(pod, &dir, source.items.iter().flatten(), &field);
    }
    if let Some(projected) = &volume.projected {
        let mut files = Vec::new();
        for (i, source) in projected.sources.iter().flatten().enumerate() {
            files.extend(projected_files(pod, &dir, source, lookup, &format!("{field}.sources[{i}]"))?);
        }
        return Ok(files);
    }
    if volume.empty_dir.is_some() {
        return Ok(Vec::new());
    }
    Err(PlanError::Unsupported { field })
}

/// One source of a projected volume (the service-account token's volume is one: a token, the
/// cluster's CA from `kube-root-ca.crt`, the namespace from the downward API).
fn projected_files(
    pod: &Pod,
    dir: &Path,
    source: &VolumeProjection,
    lookup: &dyn Lookup,
    field: &str,
) -> Result<Vec<PodFile>, PlanError> {
    if let Some(s) = &source.secret {
        return match lookup.secret(&s.name) {
            Some(secret) => project(dir, &secret_data(secret), s.items.as_deref(), field, "Secret", &s.name),
            None if s.optional == Some(true) => Ok(Vec::new()),
            None => Err(PlanError::Missing { field: field.into(), kind: "Secret", name: s.name.clone() }),
        };
    }
    if let Some(c) = &source.config_map {
        return match lookup.config_map(&c.name) {
            Some(map) => project(dir, &config_map_data(map), c.items.as_deref(), field, "ConfigMap", &c.name),
            None if c.optional == Some(true) => Ok(Vec::new()),
            None => Err(PlanError::Missing { field: field.into(), kind: "ConfigMap", name: c.name.clone() }),
        };
    }
    if let Some(d) = &source.downward_api {
        return downward_files(pod, dir, d.items.iter().flatten(), field);
    }
    if let Some(t) = &source.service_account_token {
        let audience = t.audience.as_deref().filter(|a| !a.is_empty());
        let path = relative_path(&t.path, &format!("{field}.serviceAccountToken.path"))?;
        let token = lookup.token(audience).ok_or_else(|| PlanError::Missing {
            field: format!("{field}.serviceAccountToken"),
            kind: "ServiceAccount token",
            name: pod.spec.as_ref().and_then(|s| s.service_account_name.clone()).unwrap_or_else(|| "default".into()),
        })?;
        return Ok(vec![PodFile { path: dir.join(path), contents: token.as_bytes().to_vec() }]);
    }
    Err(PlanError::Unsupported { field: field.into() })
}

/// Downward API files: each item's field (resource fields read 0: nothing limits a process here).
fn downward_files<'a>(
    pod: &Pod,
    dir: &Path,
    items: impl Iterator<Item = &'a DownwardAPIVolumeFile>,
    field: &str,
) -> Result<Vec<PodFile>, PlanError> {
    items
        .map(|item| {
            let path = relative_path(&item.path, &format!("{field}.items[{}].path", item.path))?;
            let value = match (&item.field_ref, &item.resource_field_ref) {
                (Some(r), _) => field_value(pod, &r.field_path).ok_or_else(|| PlanError::Unsupported {
                    field: format!("{field}.items[{}].fieldRef {}", item.path, r.field_path),
                })?,
                (None, Some(_)) => "0".to_string(),
                (None, None) => return Err(PlanError::Unsupported { field: format!("{field}.items[{}]", item.path) }),
            };
            Ok(PodFile { path: dir.join(path), contents: value.into_bytes() })
        })
        .collect()
}

/// A path inside a volume: relative, without `..`.
fn relative_path<'a>(path: &'a str, field: &str) -> Result<&'a str, PlanError> {
    if path.is_empty() || path.starts_with('/') || path.split('/').any(|c| c == "..") {
        return Err(PlanError::Unsupported { field: field.into() });
    }
    Ok(path)
}

pub(super) fn secret_data(secret: &Secret) -> BTreeMap<String, Vec<u8>> {
    let mut data: BTreeMap<String, Vec<u8>> =
        secret.data.iter().flatten().map(|(k, v)| (k.clone(), v.0.clone())).collect();
    for (k, v) in secret.string_data.iter().flatten() {
        data.insert(k.clone(), v.clone().into_bytes());
    }
    data
}

pub(super) fn config_map_data(map: &ConfigMap) -> BTreeMap<String, Vec<u8>> {
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
            relative_path(&item.path, &format!("{field}.items[{}].path", item.key))?;
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
