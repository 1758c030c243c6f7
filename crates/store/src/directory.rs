//! `--from-dir`: Kubernetes objects from YAML files in a directory, reloaded when files change.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use objects::{Object, Snapshot, parse_documents};
use tracing::{info, warn};

use crate::Store;

/// A problem with one file or one object in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileProblem {
    /// The file.
    pub file: PathBuf,
    /// What is wrong, naming the document and object.
    pub message: String,
}

/// Reads a directory of YAML (or JSON) files into the store and keeps it current.
pub struct DirectorySource {
    dir: PathBuf,
    /// The objects each file produced last time it could be read; a file that stops parsing
    /// (say, half-saved) keeps serving these.
    last_good: BTreeMap<PathBuf, Vec<Object>>,
}

impl DirectorySource {
    /// A source for `dir` (read recursively; files ending in `.yaml`, `.yml` or `.json`).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into(), last_good: BTreeMap::new() }
    }

    /// Reads every file once: the snapshot and the problems found, each logged.
    pub fn load(&mut self) -> (Snapshot, Vec<FileProblem>) {
        let mut problems = Vec::new();
        let mut files = Vec::new();
        collect(&self.dir, &mut files, &mut problems);
        files.sort();
        let mut snapshot = Snapshot::default();
        let mut next_good = BTreeMap::new();
        for file in files {
            let text = match std::fs::read_to_string(&file) {
                Ok(t) => t,
                Err(e) => {
                    problems.push(FileProblem { file: file.clone(), message: format!("cannot read: {e}") });
                    continue;
                }
            };
            let mut objects = Vec::new();
            let mut unreadable = false;
            for result in parse_documents(&text) {
                match result {
                    Ok(o) => objects.push(o),
                    Err(e) => {
                        unreadable |= matches!(e, objects::ParseError::Yaml { .. });
                        problems.push(FileProblem { file: file.clone(), message: e.to_string() });
                    }
                }
            }
            if unreadable && let Some(previous) = self.last_good.get(&file) {
                problems.push(FileProblem {
                    file: file.clone(),
                    message: "keeping the objects this file had before".into(),
                });
                objects = previous.clone();
            }
            for o in &objects {
                if snapshot.insert(o.clone()) {
                    problems.push(FileProblem {
                        file: file.clone(),
                        message: format!(
                            "{:?} {} is defined more than once; the last definition wins",
                            o.kind(),
                            o.key()
                        ),
                    });
                }
            }
            next_good.insert(file, objects);
        }
        self.last_good = next_good;
        for p in &problems {
            warn!(file = %p.file.display(), "{}", p.message);
        }
        (snapshot, problems)
    }

    /// Loads the directory into the store, marks it synced, then reloads whenever a file changes
    /// (inotify, with a periodic re-read as a safety net). Runs until the store is dropped.
    pub async fn run(mut self, store: Store, resync: Duration) {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let watcher = {
            use notify::Watcher;
            let tx = tx.clone();
            let watch = notify::recommended_watcher(move |_event| {
                let _ = tx.send(());
            })
            .and_then(|mut w| w.watch(&self.dir, notify::RecursiveMode::Recursive).map(|()| w));
            match watch {
                Ok(w) => Some(w),
                Err(e) => {
                    warn!(dir = %self.dir.display(), error = %e, "cannot watch directory; re-reading it periodically instead");
                    None
                }
            }
        };
        let (snapshot, _) = self.load();
        info!(dir = %self.dir.display(), objects = count(&snapshot), "loaded directory");
        store.replace(snapshot);
        store.set_synced();
        loop {
            tokio::select! {
                event = rx.recv() => if event.is_none() { break },
                _ = tokio::time::sleep(resync) => {}
            }
            // Editors write in bursts; let the burst finish, then read once.
            tokio::time::sleep(Duration::from_millis(20)).await;
            while rx.try_recv().is_ok() {}
            let (snapshot, _) = self.load();
            store.replace(snapshot);
        }
        drop(watcher);
    }
}

fn count(s: &Snapshot) -> usize {
    objects::Kind::ALL.iter().map(|k| s.len(*k)).sum()
}

fn collect(dir: &Path, files: &mut Vec<PathBuf>, problems: &mut Vec<FileProblem>) {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            problems.push(FileProblem { file: dir.to_path_buf(), message: format!("cannot read directory: {e}") });
            return;
        }
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        if path.is_dir() {
            collect(&path, files, problems);
        } else if matches!(path.extension().and_then(|e| e.to_str()), Some("yaml" | "yml" | "json")) {
            files.push(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_broken_file_keeps_its_last_good_objects_and_others_still_load() {
        let dir = std::env::temp_dir().join(format!("store-dir-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let svc = |name: &str| {
            format!("apiVersion: v1\nkind: Service\nmetadata: {{name: {name}}}\nspec: {{ports: [{{port: 80}}]}}\n")
        };
        std::fs::write(dir.join("a.yaml"), svc("a")).unwrap();
        std::fs::write(
            dir.join("b.yaml"),
            format!("{}---\napiVersion: v1\nkind: Service\nmetadata: {{name: bad}}\nspec: {{ports: 5}}\n", svc("b")),
        )
        .unwrap();
        let mut source = DirectorySource::new(&dir);
        let (s, problems) = source.load();
        assert_eq!(s.services.len(), 2);
        assert!(
            problems.iter().any(|p| p.file.ends_with("b.yaml") && p.message.contains("Service bad")),
            "{problems:?}"
        );

        std::fs::write(dir.join("a.yaml"), "apiVersion: v1\nkind: Service\nmetadata: {name: a\n").unwrap();
        let (s, problems) = source.load();
        assert_eq!(s.services.len(), 2, "a.yaml is mid-edit: its Service stays");
        assert!(problems.iter().any(|p| p.file.ends_with("a.yaml")));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
