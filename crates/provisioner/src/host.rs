//! Host mode's data plane: one Envoy process per Gateway, in a directory of its own, with a
//! bootstrap naming the Gateway's fleet.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::process::{Child, Command};

/// How host-mode Envoys are started.
#[derive(Debug, Clone)]
pub struct EnvoySettings {
    /// The Envoy binary.
    pub envoy: PathBuf,
    /// Where each Envoy's directory (bootstrap, admin socket, log) is made.
    pub state_dir: PathBuf,
    /// The controller's xDS address and port.
    pub xds_address: String,
    /// See `xds_address`.
    pub xds_port: u16,
    /// Envoy's `--log-level`.
    pub log_level: String,
}

/// One running Envoy; killed when dropped.
#[derive(Debug)]
pub struct Envoy {
    child: Child,
    dir: PathBuf,
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> crate::Error {
    let what = what.into();
    move |source| crate::Error::Io { what, source }
}

impl Envoy {
    /// Starts an Envoy for `fleet` (`namespace/name`) in `<state_dir>/<slot>`.
    pub fn start(settings: &EnvoySettings, fleet: &str, slot: &str) -> Result<Self, crate::Error> {
        let dir = settings.state_dir.join(slot);
        std::fs::create_dir_all(&dir).map_err(io(format!("creating {}", dir.display())))?;
        let bootstrap = bootstrap::Bootstrap {
            xds_address: settings.xds_address.clone(),
            xds_port: settings.xds_port,
            admin: bootstrap::Admin::Unix(dir.join("admin.sock").display().to_string()),
            fleet: fleet.to_string(),
            node_id: format!("{}-host", fleet.replace('/', "-")),
            namespace: fleet.split_once('/').map(|(ns, _)| ns.to_string()),
            ..Default::default()
        };
        let path = dir.join("envoy.json");
        std::fs::write(&path, bootstrap.to_json().to_string()).map_err(io(format!("writing {}", path.display())))?;
        let child = Command::new(&settings.envoy)
            .arg("-c")
            .arg(&path)
            .args(["--disable-hot-restart", "--concurrency", "1", "--drain-time-s", "1"])
            .args(["--log-level", &settings.log_level])
            .arg("--log-path")
            .arg(dir.join("envoy.log"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(io(format!("starting {}", settings.envoy.display())))?;
        Ok(Self { child, dir })
    }

    /// Whether it still runs.
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Its directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Stops it and waits until it has exited (its ports are free afterwards).
    pub async fn stop(mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
        let _ = tokio::fs::remove_dir_all(&self.dir).await;
    }
}
