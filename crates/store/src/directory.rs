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
    /// What each file held when it was last read, keyed by path. A file whose stamp (size,
    /// modification time, inode) is unchanged is not read again; a file that stops parsing (say,
    /// half-saved) keeps serving the objects it had before.
    files: BTreeMap<PathBuf, FileState>,
    /// The problems that span files (duplicate definitions) at the last load, logged on change.
    shared_problems: Vec<FileProblem>,
}

/// One file as last read.
struct FileState {
    stamp: Option<Stamp>,
    objects: Vec<Object>,
    problems: Vec<String>,
}

/// What identifies a file's content without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<std::time::SystemTime>,
    inode: u64,
}

impl Stamp {
    fn of(path: &Path) -> Option<Stamp> {
        // Through symlinks (a ConfigMap volume's files are links into a swapped directory).
        let meta = std::fs::metadata(path).ok()?;
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(&meta);
        #[cfg(not(unix))]
        let inode = 0;
        Some(Stamp { len: meta.len(), modified: meta.modified().ok(), inode })
    }
}

impl DirectorySource {
    /// A source for `dir` (read recursively; files ending in `.yaml`, `.yml` or `.json`).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into(), files: BTreeMap::new(), shared_problems: Vec::new() }
    }

    /// Reads the directory: the snapshot and every problem it has. Files unchanged since the
    /// last load are not read again, and a problem is logged only when it is new (once per
    /// change of its file, not once per load).
    pub fn load(&mut self) -> (Snapshot, Vec<FileProblem>) {
        self.reload().unwrap_or_else(|| self.assemble())
    }

    /// Like [`load`](Self::load), but `None` when no file was added, removed or changed since
    /// the last load (nothing read, nothing to hand on).
    fn reload(&mut self) -> Option<(Snapshot, Vec<FileProblem>)> {
        let mut dir_problems = Vec::new();
        let mut paths = Vec::new();
        collect(&self.dir, &mut paths, &mut dir_problems);
        paths.sort();
        let mut changed = paths.len() != self.files.len() || !dir_problems.is_empty();
        let mut next = BTreeMap::new();
        for path in paths {
            let stamp = Stamp::of(&path);
            let previous = self.files.remove(&path);
            let state = match previous {
                Some(state) if stamp.is_some() && state.stamp == stamp => state,
                previous => {
                    changed = true;
                    let state = read_file(&path, stamp, previous.as_ref());
                    if previous.is_none_or(|p| p.problems != state.problems) {
                        for message in &state.problems {
                            warn!(file = %path.display(), "{message}");
                        }
                    }
                    state
                }
            };
            next.insert(path, state);
        }
        changed |= !self.files.is_empty(); // files removed
        self.files = next;
        for p in &dir_problems {
            warn!(file = %p.file.display(), "{}", p.message);
        }
        if !changed {
            return None;
        }
        let (snapshot, mut problems) = self.assemble();
        problems.extend(dir_problems);
        Some((snapshot, problems))
    }

    /// The snapshot of every file's objects, and all problems; logs cross-file problems that
    /// are new since the last time.
    fn assemble(&mut self) -> (Snapshot, Vec<FileProblem>) {
        let mut snapshot = Snapshot::default();
        let mut problems = Vec::new();
        let mut shared = Vec::new();
        for (file, state) in &self.files {
            problems.extend(state.problems.iter().map(|m| FileProblem { file: file.clone(), message: m.clone() }));
            for o in &state.objects {
                if snapshot.insert(o.clone()) {
                    shared.push(FileProblem {
                        file: file.clone(),
                        message: format!(
                            "{:?} {} is defined more than once; the last definition wins",
                            o.kind(),
                            o.key()
                        ),
                    });
                }
            }
        }
        for p in shared.iter().filter(|p| !self.shared_problems.contains(p)) {
            warn!(file = %p.file.display(), "{}", p.message);
        }
        self.shared_problems = shared.clone();
        problems.extend(shared);
        (snapshot, problems)
    }

    /// Loads the directory into the store, marks it synced, then reloads whenever a file is
    /// created, changed, removed or renamed (inotify; opening and reading files, our own reads
    /// included, are not changes), with a periodic check of every file's stamp as a safety net.
    /// Runs until the store is dropped.
    pub async fn run(mut self, store: Store, resync: Duration) {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let watcher = {
            use notify::Watcher;
            let tx = tx.clone();
            let watch = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                if event.as_ref().is_ok_and(|e| !is_change(&e.kind)) {
                    return;
                }
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
            if let Some((snapshot, _)) = self.reload() {
                store.replace(snapshot);
            }
        }
        drop(watcher);
    }
}

/// Whether a watch event can mean different content: not an open, read, close or access-time
/// update, which every read of the directory (ours too) causes.
fn is_change(kind: &notify::EventKind) -> bool {
    use notify::EventKind;
    use notify::event::{MetadataKind, ModifyKind};
    !matches!(kind, EventKind::Access(_) | EventKind::Modify(ModifyKind::Metadata(MetadataKind::AccessTime)))
}

/// Reads and parses one file. When it no longer parses as YAML, the objects it had before stay.
fn read_file(path: &Path, stamp: Option<Stamp>, previous: Option<&FileState>) -> FileState {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => return FileState { stamp, objects: Vec::new(), problems: vec![format!("cannot read: {e}")] },
    };
    let mut objects = Vec::new();
    let mut problems = Vec::new();
    let mut unreadable = false;
    for result in parse_documents(&text) {
        match result {
            Ok(o) => objects.push(o),
            Err(e) => {
                unreadable |= matches!(e, objects::ParseError::Yaml { .. });
                problems.push(e.to_string());
            }
        }
    }
    if unreadable && let Some(previous) = previous {
        problems.push("keeping the objects this file had before".into());
        objects = previous.objects.clone();
    }
    FileState { stamp, objects, problems }
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

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("store-dir-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn service(name: &str) -> String {
        format!("apiVersion: v1\nkind: Service\nmetadata: {{name: {name}}}\nspec: {{ports: [{{port: 80}}]}}\n")
    }

    #[test]
    fn only_a_change_of_the_files_makes_a_new_snapshot() {
        let dir = scratch("reload");
        std::fs::write(dir.join("a.yaml"), service("a")).unwrap();
        let mut source = DirectorySource::new(&dir);
        assert_eq!(source.load().0.services.len(), 1);
        assert!(source.reload().is_none(), "nothing changed");

        std::fs::write(dir.join("b.yaml"), service("b")).unwrap();
        assert_eq!(source.reload().expect("a file added").0.services.len(), 2);
        assert!(source.reload().is_none());

        std::fs::write(dir.join("a.yaml"), service("a2")).unwrap();
        let (s, _) = source.reload().expect("a file rewritten");
        assert!(s.services.keys().any(|k| k.name == "a2"), "{:?}", s.services.keys().collect::<Vec<_>>());

        std::fs::remove_file(dir.join("b.yaml")).unwrap();
        assert_eq!(source.reload().expect("a file removed").0.services.len(), 1);
        assert!(source.reload().is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn opening_and_reading_a_file_is_not_a_change() {
        use notify::EventKind;
        use notify::event::{AccessKind, AccessMode, CreateKind, DataChange, MetadataKind, ModifyKind, RenameMode};
        assert!(!is_change(&EventKind::Access(AccessKind::Open(AccessMode::Any))));
        assert!(!is_change(&EventKind::Access(AccessKind::Close(AccessMode::Read))));
        assert!(!is_change(&EventKind::Modify(ModifyKind::Metadata(MetadataKind::AccessTime))));
        assert!(is_change(&EventKind::Create(CreateKind::File)));
        assert!(is_change(&EventKind::Modify(ModifyKind::Data(DataChange::Any))));
        assert!(is_change(&EventKind::Modify(ModifyKind::Name(RenameMode::To))));
        assert!(is_change(&EventKind::Remove(notify::event::RemoveKind::File)));
        assert!(is_change(&EventKind::Any));
    }

    thread_local! {
        static CAPTURED: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }

    /// Log lines written on this thread, for counting. One global subscriber for the whole test
    /// binary: a scoped one races with other tests' first use of the same log statements.
    struct Captured;

    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            CAPTURED.with(|c| c.borrow_mut().extend_from_slice(buf));
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn capture_logs() {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            let subscriber = tracing_subscriber::fmt().with_writer(|| Captured).with_ansi(false).finish();
            tracing::subscriber::set_global_default(subscriber).expect("the only global subscriber");
        });
        CAPTURED.with(|c| c.borrow_mut().clear());
    }

    fn count_logged(needle: &str) -> usize {
        CAPTURED.with(|c| String::from_utf8_lossy(&c.borrow()).matches(needle).count())
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_running_source_rests_and_warns_once_per_change_of_a_broken_file() {
        capture_logs();

        let dir = scratch("run");
        std::fs::write(dir.join("good.yaml"), service("good")).unwrap();
        std::fs::write(dir.join("broken.yaml"), "apiVersion: v1\nkind: Service\nmetadata: {name: x\n").unwrap();
        let store = Store::new();
        // A short resync, so the safety net runs several times while the test waits.
        let task = tokio::spawn(DirectorySource::new(&dir).run(store.clone(), Duration::from_millis(50)));
        store.wait_synced().await;
        assert_eq!(store.current().services.len(), 1);
        let changes = store.subscribe();
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert_eq!(count_logged("broken.yaml"), 1, "one warning for one broken file");
        assert!(!changes.has_changed().unwrap(), "no change handed on while nothing changed");

        std::fs::write(dir.join("broken.yaml"), "apiVersion: v1\nkind: Service\nmetadata: [\n").unwrap();
        tokio::time::sleep(Duration::from_millis(600)).await;
        // Its new parse error, and that it keeps what it had (nothing): once each.
        assert_eq!(count_logged("broken.yaml"), 3, "warned again once, for its new content");

        std::fs::write(dir.join("broken.yaml"), service("fixed")).unwrap();
        for _ in 0..100 {
            if store.current().services.len() == 2 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(store.current().services.len(), 2, "the fixed file's Service is served");
        task.abort();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
