//! A buffering wrapper around a backend (upstream's `buffered` plugin): events go into a
//! bounded queue and a dedicated writer thread hands them to the inner backend in batches, so
//! the request path never waits for the disk. A full queue drops events (logged), as
//! upstream's batch mode does.

use std::sync::{Arc, Mutex, RwLock};

use tokio::sync::{mpsc, watch};

use super::AuditError;
use super::backend::{Backend, ShutdownFuture};
use super::event::Event;

/// Upstream's default buffer size for the batching backend.
pub const DEFAULT_BUFFER_SIZE: usize = 10_000;
/// Upstream's default maximum batch size.
pub const DEFAULT_MAX_BATCH_SIZE: usize = 400;

/// Buffers events for an inner backend.
#[derive(Debug)]
pub struct BufferedBackend {
    inner: Arc<dyn Backend>,
    max_batch: usize,
    sender: RwLock<Option<mpsc::Sender<Event>>>,
    receiver: Mutex<Option<mpsc::Receiver<Event>>>,
    done_tx: Mutex<Option<watch::Sender<bool>>>,
    done: watch::Receiver<bool>,
}

impl BufferedBackend {
    /// Wraps `inner` with a queue of `buffer_size` events, written in batches of at most
    /// `max_batch`.
    pub fn new(inner: Arc<dyn Backend>, buffer_size: usize, max_batch: usize) -> Self {
        let (tx, rx) = mpsc::channel(buffer_size.max(1));
        let (done_tx, done) = watch::channel(false);
        BufferedBackend {
            inner,
            max_batch: max_batch.max(1),
            sender: RwLock::new(Some(tx)),
            receiver: Mutex::new(Some(rx)),
            done_tx: Mutex::new(Some(done_tx)),
            done,
        }
    }

    /// Wraps `inner` with upstream's default sizes.
    pub fn with_defaults(inner: Arc<dyn Backend>) -> Self {
        Self::new(inner, DEFAULT_BUFFER_SIZE, DEFAULT_MAX_BATCH_SIZE)
    }

    /// Starts the writer thread unless it already runs.
    fn start_writer(&self) -> Result<(), AuditError> {
        let Some(mut rx) = self.receiver.lock().ok().and_then(|mut r| r.take()) else {
            return Ok(());
        };
        let Some(done_tx) = self.done_tx.lock().ok().and_then(|mut d| d.take()) else {
            return Ok(());
        };
        let inner = self.inner.clone();
        let max_batch = self.max_batch;
        std::thread::Builder::new()
            .name("audit-writer".into())
            .spawn(move || {
                let mut batch = Vec::with_capacity(max_batch);
                // blocking_recv returns None once every sender is gone and the queue is
                // empty: that is the end of shutdown.
                while let Some(first) = rx.blocking_recv() {
                    batch.push(first);
                    while batch.len() < max_batch {
                        match rx.try_recv() {
                            Ok(ev) => batch.push(ev),
                            Err(_) => break,
                        }
                    }
                    inner.process_events(&batch);
                    batch.clear();
                }
                let _ = done_tx.send(true);
            })
            .map(|_| ())
            .map_err(|e| AuditError::Run {
                backend: self.name(),
                message: e.to_string(),
            })
    }
}

impl Backend for BufferedBackend {
    fn process_events(&self, events: &[Event]) -> bool {
        let Ok(guard) = self.sender.read() else {
            return false;
        };
        let Some(tx) = guard.as_ref() else {
            tracing::error!(
                "Error in audit plugin 'buffered' affecting {} audit events: audit backend shut down",
                events.len()
            );
            return false;
        };
        for (i, event) in events.iter().enumerate() {
            if tx.try_send(event.clone()).is_err() {
                tracing::error!(
                    "Error in audit plugin 'buffered' affecting {} audit events: audit buffer queue blocked",
                    events.len() - i
                );
                // Upstream reports success: the event is dropped, the request goes on.
                return true;
            }
        }
        true
    }

    fn run(&self) -> Result<(), AuditError> {
        self.inner.run()?;
        self.start_writer()
    }

    fn shutdown(&self) -> ShutdownFuture<'_> {
        Box::pin(async move {
            // Dropping the only sender lets the writer drain the queue and stop.
            if let Ok(mut sender) = self.sender.write() {
                sender.take();
            }
            // A backend that never ran still writes what it accepted.
            if let Err(e) = self.start_writer() {
                tracing::error!("{e}");
                return;
            }
            let mut done = self.done.clone();
            let _ = done.wait_for(|d| *d).await;
            self.inner.shutdown().await;
        })
    }

    fn name(&self) -> String {
        format!("buffered<{}>", self.inner.name())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::audit::level::{Level, Stage};
    use crate::audit::log::LogBackend;
    use crate::audit::rotate::RotationConfig;

    /// A backend that records events in memory.
    #[derive(Debug, Default)]
    pub(crate) struct MemoryBackend {
        pub(crate) events: Mutex<Vec<Event>>,
    }

    impl MemoryBackend {
        pub(crate) fn events(&self) -> Vec<Event> {
            self.events.lock().unwrap().clone()
        }
    }

    impl Backend for MemoryBackend {
        fn process_events(&self, events: &[Event]) -> bool {
            self.events.lock().unwrap().extend_from_slice(events);
            true
        }
        fn run(&self) -> Result<(), AuditError> {
            Ok(())
        }
        fn shutdown(&self) -> ShutdownFuture<'_> {
            Box::pin(async {})
        }
        fn name(&self) -> String {
            "memory".into()
        }
    }

    pub(crate) fn event(id: usize) -> Event {
        let parts = http::Request::builder()
            .uri("/healthz")
            .body(())
            .unwrap()
            .into_parts()
            .0;
        let attrs = crate::audit::policy::AuditAttributes::from_parts(&parts);
        let mut ev = Event::from_request(
            &parts,
            &attrs,
            Level::Metadata,
            &format!("id-{id}"),
            std::time::SystemTime::now(),
        );
        ev.stage = Stage::ResponseComplete;
        ev
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn shutdown_flushes_everything_to_disk() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let log = LogBackend::new(path.to_str().unwrap(), RotationConfig::default()).unwrap();
        let buffered = BufferedBackend::new(Arc::new(log), 1000, 7);
        buffered.run().unwrap();
        for i in 0..500 {
            assert!(buffered.process_events(&[event(i)]));
        }
        buffered.shutdown().await;
        let text = std::fs::read_to_string(&path).unwrap();
        let ids: Vec<String> = text
            .lines()
            .map(|l| serde_json::from_str::<Event>(l).unwrap().audit_id)
            .collect();
        assert_eq!(ids, (0..500).map(|i| format!("id-{i}")).collect::<Vec<_>>());
        // After shutdown nothing is accepted any more.
        assert!(!buffered.process_events(&[event(0)]));
    }

    #[tokio::test]
    async fn shutdown_without_run_still_writes() {
        let memory = Arc::new(MemoryBackend::default());
        let buffered = BufferedBackend::new(memory.clone(), 10, 3);
        for i in 0..5 {
            buffered.process_events(&[event(i)]);
        }
        buffered.shutdown().await;
        assert_eq!(memory.events().len(), 5);
    }

    #[tokio::test]
    async fn full_queue_drops_without_blocking() {
        let memory = Arc::new(MemoryBackend::default());
        let buffered = BufferedBackend::new(memory.clone(), 2, 3);
        for i in 0..5 {
            assert!(buffered.process_events(&[event(i)]));
        }
        buffered.shutdown().await;
        assert_eq!(memory.events().len(), 2);
    }
}
