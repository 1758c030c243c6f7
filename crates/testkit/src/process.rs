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

/// CPU seconds (user + system) and RSS / peak RSS (MiB) of a process.
pub fn usage(pid: u32) -> (f64, f64, f64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> =
        stat.rsplit_once(')').map(|(_, rest)| rest.split_whitespace().collect()).unwrap_or_default();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
    // After the command: state is field 0, utime 11, stime 12; 100 ticks a second on Linux.
    let cpu = (ticks(11) + ticks(12)) / 100.0;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kib = |field: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(field))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (cpu, kib("VmRSS:") / 1024.0, kib("VmHWM:") / 1024.0)
}
