//! Certificate files written together, as the kubelet writes a Secret volume: each name in the
//! directory is a symlink into `..data`, itself a symlink to a version directory. A write makes
//! a new version holding every file and swaps `..data` with one rename, so a reader (Envoy
//! watching the directory for moves, contour-serve re-reading per handshake) never finds a new
//! certificate beside an old key.

use std::io;
use std::path::Path;

/// The symlink to the current version.
const DATA: &str = "..data";

/// Writes `files` (name, contents) into `dir` together, keeping the other files of the current
/// version. `mode` is the new files' permission bits (unix), such as `0o600` for keys. Plain
/// files written before (the layout of earlier versions) are taken over as they are first.
pub fn write_together(dir: &Path, files: &[(&str, &str)], mode: Option<u32>) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    if std::fs::symlink_metadata(dir.join(DATA)).is_err() {
        adopt(dir, files)?;
    }
    let current = std::fs::read_link(dir.join(DATA))?;
    let version = format!("..{}", unique());
    std::fs::create_dir(dir.join(&version))?;
    for entry in std::fs::read_dir(dir.join(&current))? {
        let entry = entry?;
        if !files.iter().any(|(name, _)| entry.file_name() == *name) {
            std::fs::copy(entry.path(), dir.join(&version).join(entry.file_name()))?;
        }
    }
    for (name, text) in files {
        write_new(&dir.join(&version).join(name), text, mode)?;
    }
    swap(dir, DATA, Path::new(&version))?;
    for (name, _) in files {
        link(dir, name)?;
    }
    std::fs::remove_dir_all(dir.join(current))
}

/// The first version: the plain files of `files`' names that exist, as they are, each name
/// then replaced by its link (same contents, so a reader sees no change).
fn adopt(dir: &Path, files: &[(&str, &str)]) -> io::Result<()> {
    let version = format!("..{}", unique());
    std::fs::create_dir(dir.join(&version))?;
    for (name, _) in files {
        let plain = dir.join(name);
        if std::fs::symlink_metadata(&plain).is_ok_and(|m| m.is_file()) {
            std::fs::copy(&plain, dir.join(&version).join(name))?;
        }
    }
    swap(dir, DATA, Path::new(&version))?;
    for (name, _) in files {
        if dir.join(&version).join(name).exists() {
            link(dir, name)?;
        }
    }
    Ok(())
}

/// `name` → `..data/name`, replacing a plain file in one rename.
fn link(dir: &Path, name: &str) -> io::Result<()> {
    let path = dir.join(name);
    if std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Ok(());
    }
    swap(dir, name, &Path::new(DATA).join(name))
}

/// Points the symlink `dir/name` at `target`, in one rename.
fn swap(dir: &Path, name: &str, target: &Path) -> io::Result<()> {
    let tmp = dir.join(format!(".{name}.{}.tmp", unique()));
    std::os::unix::fs::symlink(target, &tmp)?;
    std::fs::rename(tmp, dir.join(name))
}

fn write_new(path: &Path, text: &str, mode: Option<u32>) -> io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    if let Some(mode) = mode {
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, mode);
    }
    options.open(path)?.write_all(text.as_bytes())
}

/// A name no other write of this process or another has used.
fn unique() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
    format!("{nanos}-{}-{}", std::process::id(), COUNT.fetch_add(1, Ordering::Relaxed))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(dir: &Path, name: &str) -> String {
        std::fs::read_to_string(dir.join(name)).expect(name)
    }

    #[test]
    fn files_are_swapped_together_and_plain_files_taken_over() {
        let dir = std::env::temp_dir().join(format!("certs-files-{}", unique()));
        std::fs::create_dir_all(&dir).unwrap();
        // An earlier layout: plain files.
        std::fs::write(dir.join("cert.pem"), "cert 1").unwrap();
        std::fs::write(dir.join("key.pem"), "key 1").unwrap();

        write_together(&dir, &[("cert.pem", "cert 2"), ("key.pem", "key 2")], Some(0o600)).unwrap();
        assert_eq!((read(&dir, "cert.pem"), read(&dir, "key.pem")), ("cert 2".into(), "key 2".into()));
        let before = std::fs::read_link(dir.join(DATA)).unwrap();
        for name in ["cert.pem", "key.pem"] {
            assert!(std::fs::symlink_metadata(dir.join(name)).unwrap().file_type().is_symlink(), "{name}");
        }
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(dir.join("key.pem")).unwrap().permissions().mode() & 0o777, 0o600);

        // One file more, the others kept; the old version is gone.
        write_together(&dir, &[("ca.pem", "ca 3")], None).unwrap();
        assert_eq!(read(&dir, "ca.pem"), "ca 3");
        assert_eq!(read(&dir, "cert.pem"), "cert 2");
        assert_ne!(std::fs::read_link(dir.join(DATA)).unwrap(), before, "a new version");
        let versions =
            std::fs::read_dir(&dir).unwrap().filter(|e| e.as_ref().unwrap().file_type().unwrap().is_dir()).count();
        assert_eq!(versions, 1, "only the current version is kept");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
