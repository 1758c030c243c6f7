//! The project's own binaries, run as separate processes (to kill or pause them).

use std::path::PathBuf;

/// The path of a workspace binary: `$CONTOUR_<NAME>` if set, else next to the test binary.
pub fn workspace_binary(name: &str) -> anyhow::Result<PathBuf> {
    let var = format!("CONTOUR_{}", name.trim_start_matches("contour-").replace('-', "_").to_uppercase());
    if let Some(p) = std::env::var_os(&var) {
        return Ok(p.into());
    }
    // Test binaries live in target/<profile>/deps, the workspace's binaries one level up; a
    // workspace binary finds the others beside it.
    let exe = std::env::current_exe()?;
    let dir = exe.parent();
    [dir, dir.and_then(|d| d.parent())]
        .into_iter()
        .flatten()
        .map(|d| d.join(name))
        .find(|p| p.exists())
        .ok_or_else(|| anyhow::anyhow!("{name} not built (cargo build --bins), or set {var}"))
}

/// Sends a signal (`STOP`, `CONT`, `TERM`, `KILL`) to a process.
pub fn signal(pid: u32, name: &str) -> anyhow::Result<()> {
    let status = std::process::Command::new("kill").arg(format!("-{name}")).arg(pid.to_string()).status()?;
    anyhow::ensure!(status.success(), "kill -{name} {pid}: {status}");
    Ok(())
}
