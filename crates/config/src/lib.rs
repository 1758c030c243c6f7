//! `contour.yaml` (`--config-path`): upstream Contour's configuration file, with upstream's keys.
//!
//! Every key upstream documents is read and checked; an unknown key or a bad value stops
//! start-up with a message naming the key. Keys whose feature does not exist yet are accepted
//! and kept, so existing files load unchanged.

mod cluster;
mod file;
mod listener;
mod services;

pub use cluster::*;
pub use file::*;
pub use listener::*;
pub use services::*;

/// Why the configuration cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file cannot be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A key is unknown or its value has the wrong shape.
    #[error("{path}: key {key}: {message}")]
    Parse {
        /// The file.
        path: String,
        /// The key, as a dotted path (`timeouts.request-timeout`).
        key: String,
        /// What is wrong.
        message: String,
    },
    /// A value has the right shape but is not allowed.
    #[error("{path}: key {key}: {message}")]
    Invalid {
        /// The file.
        path: String,
        /// The key.
        key: String,
        /// What is wrong.
        message: String,
    },
}

/// Reads and checks a configuration file.
pub fn load(path: &std::path::Path) -> Result<ContourConfig, Error> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| Error::Read { path: name.clone(), source })?;
    parse(&name, &text)
}

/// Parses and checks configuration text; `name` names it in errors.
pub fn parse(name: &str, text: &str) -> Result<ContourConfig, Error> {
    if text.trim().is_empty() {
        return Ok(ContourConfig::default());
    }
    let de = serde_yaml::Deserializer::from_str(text);
    let config: ContourConfig = serde_path_to_error::deserialize(de).map_err(|e| Error::Parse {
        path: name.into(),
        key: e.path().to_string(),
        message: e.inner().to_string().split(" at line").next().unwrap_or_default().to_string(),
    })?;
    config.validate().map_err(|(key, message)| Error::Invalid { path: name.into(), key, message })?;
    Ok(config)
}

#[cfg(test)]
mod tests;
