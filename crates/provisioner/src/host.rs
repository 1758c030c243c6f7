//! Host mode's data plane: one Envoy process per Gateway, in a directory of its own, with a
//! bootstrap naming the Gateway's fleet. With a CA ([`EnvoySettings::ca_dir`]) each Envoy gets a
//! client certificate of its own for xDS, naming its fleet alone, renewed in place (Envoy reads
//! it through SDS files, so a renewal needs no restart).

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
    /// mTLS on xDS: the directory with the installation's `cacert.pem` and `cakey.pem`
    /// (`contour-certgen --pem --keep-ca-key`), read again at each renewal.
    pub ca_dir: Option<PathBuf>,
    /// How fleet certificates are issued.
    pub issuing: crate::cluster::certificate::Issuing,
}

/// One running Envoy; killed when dropped.
#[derive(Debug)]
pub struct Envoy {
    child: Child,
    dir: PathBuf,
    /// Its fleet certificate (with mTLS on xDS).
    certificate: Option<crate::cluster::certificate::Kept>,
}

/// Where an Envoy's xDS certificates live in its directory.
const CERTS: &str = "certs";

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> crate::Error {
    let what = what.into();
    move |source| crate::Error::Io { what, source }
}

impl Envoy {
    /// Starts an Envoy for `fleet` (`namespace/name`) in `<state_dir>/<slot>`.
    pub fn start(settings: &EnvoySettings, fleet: &str, slot: &str) -> Result<Self, crate::Error> {
        let dir = settings.state_dir.join(slot);
        std::fs::create_dir_all(&dir).map_err(io(format!("creating {}", dir.display())))?;
        let certificate = match &settings.ca_dir {
            Some(ca_dir) => Some(write_certificate(&dir, &authority(ca_dir)?, fleet, &settings.issuing)?),
            None => None,
        };
        let certs = dir.join(CERTS);
        let file = |name: &str| certs.join(name).display().to_string();
        let bootstrap = bootstrap::Bootstrap {
            xds_address: settings.xds_address.clone(),
            xds_port: settings.xds_port,
            admin: bootstrap::Admin::Unix(dir.join("admin.sock").display().to_string()),
            fleet: fleet.to_string(),
            node_id: format!("{}-host", fleet.replace('/', "-")),
            namespace: fleet.split_once('/').map(|(ns, _)| ns.to_string()),
            tls: certificate.as_ref().map(|_| bootstrap::XdsTls {
                ca_file: file("cacert.pem"),
                cert_file: file("envoycert.pem"),
                key_file: file("envoykey.pem"),
            }),
            resources_dir: certificate.as_ref().map(|_| dir.join("resources")),
            ..Default::default()
        };
        for (path, json) in bootstrap.sds_files() {
            let parent = path.parent().unwrap_or(&dir);
            std::fs::create_dir_all(parent).map_err(io(format!("creating {}", parent.display())))?;
            std::fs::write(&path, json.to_string()).map_err(io(format!("writing {}", path.display())))?;
        }
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
        Ok(Self { child, dir, certificate })
    }

    /// Renews its fleet certificate in place when it is due or the CA changed; Envoy picks the
    /// new files up through SDS.
    pub fn renew_certificate(&mut self, settings: &EnvoySettings, fleet: &str) -> Result<bool, crate::Error> {
        let (Some(ca_dir), Some(kept)) = (&settings.ca_dir, &self.certificate) else { return Ok(false) };
        let authority = authority(ca_dir)?;
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
        if kept.ca == authority.cert_pem() && !settings.issuing.due(kept.not_after, now) {
            return Ok(false);
        }
        self.certificate = Some(write_certificate(&self.dir, &authority, fleet, &settings.issuing)?);
        Ok(true)
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

/// The installation's CA from `cacert.pem` and `cakey.pem` in `dir`.
fn authority(dir: &Path) -> Result<certs::Authority, crate::Error> {
    let read = |name: &str| {
        let path = dir.join(name);
        std::fs::read_to_string(&path).map_err(io(format!("reading {}", path.display())))
    };
    certs::Authority::from_pem(&read("cacert.pem")?, &read("cakey.pem")?).map_err(|e| crate::Error::Io {
        what: format!("the CA in {}", dir.display()),
        source: std::io::Error::other(e),
    })
}

/// Issues `fleet` a certificate and writes it, with the CA, into `<dir>/certs`, the three files
/// together (see [`certs::files`]): Envoy never reads a new certificate beside an old key.
fn write_certificate(
    dir: &Path,
    authority: &certs::Authority,
    fleet: &str,
    issuing: &crate::cluster::certificate::Issuing,
) -> Result<crate::cluster::certificate::Kept, crate::Error> {
    let what = || format!("the xDS client certificate of fleet {fleet}");
    let id = certs::FleetId::parse(fleet).ok_or_else(|| crate::Error::Certificate {
        what: what(),
        source: certs::Error::Parse("not namespace/name".into()),
    })?;
    let issued = authority
        .issue_fleet(&id, &issuing.trust_domain, issuing.lifetime)
        .map_err(|source| crate::Error::Certificate { what: what(), source })?;
    let not_after =
        certs::fleet::not_after(&issued.cert).map_err(|source| crate::Error::Certificate { what: what(), source })?;
    let certs_dir = dir.join(CERTS);
    std::fs::create_dir_all(&certs_dir).map_err(io(format!("creating {}", certs_dir.display())))?;
    let files = [
        ("cacert.pem", authority.cert_pem()),
        ("envoycert.pem", issued.cert.as_str()),
        ("envoykey.pem", issued.key.as_str()),
    ];
    certs::files::write_together(&certs_dir, &files, None).map_err(io(format!("writing {}", certs_dir.display())))?;
    tracing::info!(%fleet, identity = %id.uri(&issuing.trust_domain), "fleet xDS client certificate written");
    let data = certs::fleet_secret_data(authority.cert_pem(), &issued);
    Ok(crate::cluster::certificate::Kept { ca: authority.cert_pem().to_string(), not_after, data })
}
