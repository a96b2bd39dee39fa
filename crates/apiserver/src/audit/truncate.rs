//! The truncating wrapper (upstream's `truncate` plugin, `--audit-*-truncate-*`): an event
//! larger than `max_event_size` (its JSON encoding with the newline) loses its request and
//! response objects and is marked `audit.k8s.io/truncated: "true"` (levels `Request` and
//! `RequestResponse` only); an event still too large is dropped and counted as an error of
//! the `truncate` plugin. Batches are split so none exceeds `max_batch_size`.

use std::sync::Arc;

use super::AuditError;
use super::backend::{Backend, ShutdownFuture};
use super::event::Event;
use super::level::Level;
use super::metrics::handle_plugin_error;

/// The plugin name in error metrics and logs.
pub const PLUGIN_NAME: &str = "truncate";
/// The annotation marking a truncated event.
pub const ANNOTATION_KEY: &str = "audit.k8s.io/truncated";
/// Upstream's default `--audit-*-truncate-max-batch-size` (10 MiB).
pub const DEFAULT_MAX_BATCH_SIZE: i64 = 10 * 1024 * 1024;
/// Upstream's default `--audit-*-truncate-max-event-size` (100 KiB).
pub const DEFAULT_MAX_EVENT_SIZE: i64 = 100 * 1024;

/// Size limits (upstream `truncate.Config`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TruncateConfig {
    /// The largest event passed on, in encoded bytes.
    pub max_event_size: i64,
    /// The largest batch passed on, in encoded bytes.
    pub max_batch_size: i64,
}

impl Default for TruncateConfig {
    fn default() -> Self {
        TruncateConfig {
            max_event_size: DEFAULT_MAX_EVENT_SIZE,
            max_batch_size: DEFAULT_MAX_BATCH_SIZE,
        }
    }
}

/// Truncates events and splits batches for an inner backend.
#[derive(Debug)]
pub struct TruncatingBackend {
    inner: Arc<dyn Backend>,
    config: TruncateConfig,
}

impl TruncatingBackend {
    /// Wraps `inner` with the limits of `config`.
    pub fn new(inner: Arc<dyn Backend>, config: TruncateConfig) -> Self {
        TruncatingBackend { inner, config }
    }
}

/// The encoded size of an event: its JSON and the newline the encoder ends it with.
fn encoded_size(event: &Event) -> Result<i64, serde_json::Error> {
    Ok(event.to_json()?.len() as i64 + 1)
}

/// The event without its request and response objects, marked as truncated.
fn truncate(event: &Event) -> Event {
    let mut truncated = event.clone();
    truncated.request_object = None;
    truncated.response_object = None;
    truncated
        .annotations
        .insert(ANNOTATION_KEY.to_string(), "true".to_string());
    truncated
}

impl Backend for TruncatingBackend {
    fn process_events(&self, events: &[Event]) -> bool {
        let mut errors: Vec<String> = Vec::new();
        let mut impacted: Vec<Event> = Vec::new();
        let mut batch: Vec<Event> = Vec::new();
        let mut batch_size = 0i64;
        let mut success = true;
        for event in events {
            let mut event = std::borrow::Cow::Borrowed(event);
            let mut size = encoded_size(&event);
            if let Ok(n) = size
                && n > self.config.max_event_size
                && event.level.at_least(Level::Request)
            {
                event = std::borrow::Cow::Owned(truncate(&event));
                size = encoded_size(&event);
            }
            let size = match size {
                Ok(n) if n > self.config.max_event_size => {
                    errors.push("event is too large even after truncating".to_string());
                    impacted.push(event.into_owned());
                    continue;
                }
                Ok(n) => n,
                Err(e) => {
                    errors.push(e.to_string());
                    impacted.push(event.into_owned());
                    continue;
                }
            };
            if !batch.is_empty() && batch_size + size > self.config.max_batch_size {
                success = self.inner.process_events(&batch) && success;
                batch.clear();
                batch_size = 0;
            }
            batch_size += size;
            batch.push(event.into_owned());
        }
        if !batch.is_empty() {
            success = self.inner.process_events(&batch) && success;
        }
        if !impacted.is_empty() {
            handle_plugin_error(PLUGIN_NAME, &aggregate(&errors), &impacted);
        }
        success
    }

    fn run(&self) -> Result<(), AuditError> {
        self.inner.run()
    }

    fn shutdown(&self) -> ShutdownFuture<'_> {
        self.inner.shutdown()
    }

    fn name(&self) -> String {
        format!("{PLUGIN_NAME}<{}>", self.inner.name())
    }
}

/// Errors joined as upstream's `utilerrors.NewAggregate` prints them (duplicates kept).
fn aggregate(errors: &[String]) -> String {
    match errors {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::buffered::tests::{MemoryBackend, event};
    use serde_json::value::RawValue;

    fn big_event(id: usize, level: Level, object_bytes: usize) -> Event {
        let mut ev = event(id);
        ev.level = level;
        let object = format!(r#"{{"data":"{}"}}"#, "x".repeat(object_bytes));
        ev.request_object = Some(RawValue::from_string(object.clone()).unwrap());
        ev.response_object = Some(RawValue::from_string(object).unwrap());
        ev
    }

    #[test]
    fn large_events_lose_their_objects_and_are_marked() {
        let memory = Arc::new(MemoryBackend::default());
        let backend = TruncatingBackend::new(
            memory.clone(),
            TruncateConfig {
                max_event_size: 2000,
                max_batch_size: 100_000,
            },
        );
        let small = big_event(1, Level::RequestResponse, 10);
        let large = big_event(2, Level::RequestResponse, 5000);
        assert!(backend.process_events(&[small.clone(), large]));
        let events = memory.events();
        assert_eq!(events.len(), 2);
        assert!(events[0].request_object.is_some());
        assert!(!events[0].annotations.contains_key(ANNOTATION_KEY));
        assert!(events[1].request_object.is_none() && events[1].response_object.is_none());
        assert_eq!(events[1].annotations[ANNOTATION_KEY], "true");
        assert_eq!(events[1].audit_id, "id-2");
    }

    #[test]
    fn events_too_large_after_truncating_are_dropped_and_counted() {
        let memory = Arc::new(MemoryBackend::default());
        let backend = TruncatingBackend::new(
            memory.clone(),
            TruncateConfig {
                max_event_size: 100,
                max_batch_size: 100_000,
            },
        );
        let before = crate::audit::metrics::errors(PLUGIN_NAME);
        // A Metadata event is never truncated, and this one is too large as it is.
        let mut metadata = event(3);
        metadata.level = Level::Metadata;
        assert!(backend.process_events(&[metadata, big_event(4, Level::Request, 500)]));
        assert!(memory.events().is_empty());
        assert!(crate::audit::metrics::errors(PLUGIN_NAME) >= before + 2.0);
    }

    #[test]
    fn batches_are_split_by_encoded_size() {
        let memory = Arc::new(MemoryBackend::default());
        let one = encoded_size(&event(0)).unwrap();
        let backend = TruncatingBackend::new(
            memory.clone(),
            TruncateConfig {
                max_event_size: one + 10,
                max_batch_size: one * 2 + 10,
            },
        );
        let events: Vec<Event> = (0..5).map(event).collect();
        assert!(backend.process_events(&events));
        assert_eq!(*memory.batches.lock().unwrap(), [2, 2, 1]);
        assert_eq!(memory.events().len(), 5);
    }
}
