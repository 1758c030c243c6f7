//! The object store and its sources.
//!
//! The store holds the current [`Snapshot`] and signals every change; sources fill it. The
//! directory source (`--from-dir`) is here; the Kubernetes watches feed the same store.

mod directory;
pub mod kubernetes;
pub mod seen;

use std::sync::Arc;

use objects::Snapshot;
use tokio::sync::watch;

pub use directory::{DirectorySource, FileProblem};
pub use kubernetes::KubernetesSource;
pub use seen::{Seen, StatusSeen};

/// The current snapshot of every object, with a change signal. Cheap to clone.
#[derive(Clone)]
pub struct Store {
    snapshot: watch::Sender<Arc<Snapshot>>,
    synced: watch::Sender<bool>,
}

impl Default for Store {
    fn default() -> Self {
        Self::new()
    }
}

impl Store {
    /// An empty, unsynced store.
    pub fn new() -> Self {
        Self { snapshot: watch::channel(Arc::new(Snapshot::default())).0, synced: watch::channel(false).0 }
    }

    /// A receiver that sees every new snapshot.
    pub fn subscribe(&self) -> watch::Receiver<Arc<Snapshot>> {
        self.snapshot.subscribe()
    }

    /// The current snapshot.
    pub fn current(&self) -> Arc<Snapshot> {
        Arc::clone(&self.snapshot.borrow())
    }

    /// Replaces the snapshot; subscribers are woken only if it differs. Objects equal to the
    /// current ones keep the current `Arc`s, which lets the pipeline skip them.
    pub fn replace(&self, mut snapshot: Snapshot) {
        snapshot.share_unchanged(&self.current());
        self.replace_shared(snapshot);
    }

    /// [`Store::replace`] for a source whose unchanged objects already are the current
    /// snapshot's `Arc`s: skips the pass that looks every object up in the current snapshot.
    pub fn replace_shared(&self, snapshot: Snapshot) {
        self.snapshot.send_if_modified(|current| {
            if current.changed_kinds(&snapshot).is_empty() {
                false
            } else {
                *current = Arc::new(snapshot);
                true
            }
        });
    }

    /// Marks every source as having delivered its initial state.
    pub fn set_synced(&self) {
        self.synced.send_replace(true);
    }

    /// Whether every source has delivered its initial state.
    pub fn is_synced(&self) -> bool {
        *self.synced.borrow()
    }

    /// Waits until every source has delivered its initial state.
    pub async fn wait_synced(&self) {
        let mut rx = self.synced.subscribe();
        let _ = rx.wait_for(|s| *s).await;
    }
}
