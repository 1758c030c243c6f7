//! Kubernetes Events for Ingress problems: Ingress has no conditions, so what the front end
//! refused (an invalid annotation, a backend that does not resolve) is reported as a Warning
//! Event on the Ingress, once per problem while it lasts.

use std::collections::HashSet;

use ir::Diagnostic;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use objects::{ObjectKey, Snapshot};
use tracing::warn;

/// Publishes Events for Ingress diagnostics, each once while it lasts.
pub struct IngressEvents {
    recorder: Recorder,
    /// What was published and still holds: (Ingress, field, message).
    published: HashSet<(ObjectKey, String, String)>,
}

impl IngressEvents {
    /// A publisher reporting as `controller` (this replica: `instance`).
    pub fn new(client: kube::Client, controller: &str, instance: Option<String>) -> Self {
        let reporter = Reporter { controller: controller.into(), instance };
        Self { recorder: Recorder::new(client, reporter), published: HashSet::new() }
    }

    /// Publishes the Ingress diagnostics not published yet; forgets those that went away, so a
    /// problem that comes back is reported again.
    pub async fn publish(&mut self, snapshot: &Snapshot, diagnostics: &[Diagnostic]) {
        let mut now = HashSet::new();
        for d in diagnostics.iter().filter(|d| d.origin.kind == "Ingress") {
            let key = ObjectKey::new(&d.origin.namespace, &d.origin.name);
            let entry = (key.clone(), d.field.clone(), d.message.clone());
            if !self.published.contains(&entry) {
                let Some(ingress) = snapshot.ingresses.get(&key) else { continue };
                let reference = ObjectReference {
                    api_version: Some("networking.k8s.io/v1".into()),
                    kind: Some("Ingress".into()),
                    namespace: Some(key.namespace.clone()),
                    name: Some(key.name.clone()),
                    uid: ingress.metadata.uid.clone(),
                    ..Default::default()
                };
                let event = Event {
                    // Everything reported is something to fix: a Warning, whatever its severity.
                    type_: EventType::Warning,
                    reason: d.reason.into(),
                    note: Some(truncate(format!("{}: {}", d.field, d.message))),
                    action: "Translate".into(),
                    secondary: None,
                };
                if let Err(e) = self.recorder.publish(&event, &reference).await {
                    warn!(ingress = %key, error = %e, "could not record an Event");
                    continue;
                }
            }
            now.insert(entry);
        }
        self.published = now;
    }
}

/// Event notes are at most 1 kB.
fn truncate(mut note: String) -> String {
    if note.len() > 1024 {
        let mut end = 1021;
        while !note.is_char_boundary(end) {
            end -= 1;
        }
        note.truncate(end);
        note.push_str("...");
    }
    note
}
