//! How a backend is driven (`--audit-log-mode`, `--audit-webhook-mode`, upstream
//! `AuditBatchOptions.wrapBackend`): `blocking` writes on the request path and never fails
//! the request, `blocking-strict` writes on the request path and fails a request whose
//! `RequestReceived` event could not be written, `batch` queues events for a writer thread.

use std::sync::Arc;

use super::AuditError;
use super::backend::{Backend, ShutdownFuture};
use super::buffered::{BatchConfig, BufferedBackend};
use super::event::Event;

/// The modes upstream knows, in its order.
pub const ALLOWED_MODES: [&str; 3] = ["batch", "blocking", "blocking-strict"];

/// A backend mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Buffered, written by a background thread; a full buffer drops events.
    Batch,
    /// Synchronous; errors are logged and counted but never fail a request.
    Blocking,
    /// Synchronous; an unwritten `RequestReceived` event fails the request.
    BlockingStrict,
}

impl Mode {
    /// Parses `--audit-<plugin>-mode`, with upstream's message for unknown modes.
    pub fn parse(plugin: &str, mode: &str) -> Result<Self, String> {
        match mode {
            "batch" => Ok(Mode::Batch),
            "blocking" => Ok(Mode::Blocking),
            "blocking-strict" => Ok(Mode::BlockingStrict),
            _ => Err(format!(
                "invalid audit {plugin} mode {mode}, allowed modes are {:?}",
                ALLOWED_MODES.join(",")
            )),
        }
    }

    /// Wraps a plugin backend for this mode.
    pub fn wrap(self, backend: Arc<dyn Backend>, batch: BatchConfig) -> Arc<dyn Backend> {
        match self {
            Mode::BlockingStrict => backend,
            Mode::Blocking => Arc::new(IgnoreErrors(backend)),
            Mode::Batch => Arc::new(BufferedBackend::new(backend, batch)),
        }
    }
}

/// Reports every batch as processed (upstream's `ignoreErrorsBackend`, the `blocking` mode).
#[derive(Debug)]
pub struct IgnoreErrors(pub Arc<dyn Backend>);

impl Backend for IgnoreErrors {
    fn process_events(&self, events: &[Event]) -> bool {
        self.0.process_events(events);
        true
    }

    fn run(&self) -> Result<(), AuditError> {
        self.0.run()
    }

    fn shutdown(&self) -> ShutdownFuture<'_> {
        self.0.shutdown()
    }

    fn name(&self) -> String {
        format!("ignoreErrors<{}>", self.0.name())
    }
}

/// Sends every event to each backend in turn (upstream `audit.Union`); the events count as
/// processed only if every backend processed them.
#[derive(Debug)]
pub struct Union(pub Vec<Arc<dyn Backend>>);

impl Union {
    /// The union of `backends`, or the only one.
    pub fn of(mut backends: Vec<Arc<dyn Backend>>) -> Option<Arc<dyn Backend>> {
        match backends.len() {
            0 => None,
            1 => backends.pop(),
            _ => Some(Arc::new(Union(backends))),
        }
    }
}

impl Backend for Union {
    fn process_events(&self, events: &[Event]) -> bool {
        let mut success = true;
        for backend in &self.0 {
            success = backend.process_events(events) && success;
        }
        success
    }

    fn run(&self) -> Result<(), AuditError> {
        for backend in &self.0 {
            backend.run()?;
        }
        Ok(())
    }

    fn shutdown(&self) -> ShutdownFuture<'_> {
        Box::pin(async move {
            for backend in &self.0 {
                backend.shutdown().await;
            }
        })
    }

    fn name(&self) -> String {
        let names: Vec<String> = self.0.iter().map(|b| b.name()).collect();
        format!("union[{}]", names.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::buffered::tests::{MemoryBackend, event};

    #[derive(Debug)]
    struct Failing;

    impl Backend for Failing {
        fn process_events(&self, _: &[Event]) -> bool {
            false
        }
        fn run(&self) -> Result<(), AuditError> {
            Ok(())
        }
        fn shutdown(&self) -> ShutdownFuture<'_> {
            Box::pin(async {})
        }
        fn name(&self) -> String {
            "failing".into()
        }
    }

    #[test]
    fn modes_parse_with_upstream_message() {
        assert_eq!(Mode::parse("log", "batch"), Ok(Mode::Batch));
        assert_eq!(Mode::parse("log", "blocking"), Ok(Mode::Blocking));
        assert_eq!(
            Mode::parse("webhook", "blocking-strict"),
            Ok(Mode::BlockingStrict)
        );
        assert_eq!(
            Mode::parse("webhook", "async").unwrap_err(),
            r#"invalid audit webhook mode async, allowed modes are "batch,blocking,blocking-strict""#
        );
    }

    #[test]
    fn blocking_hides_failures_and_strict_reports_them() {
        let failing: Arc<dyn Backend> = Arc::new(Failing);
        let batch = BatchConfig::log_defaults();
        assert!(
            Mode::Blocking
                .wrap(failing.clone(), batch)
                .process_events(&[event(1)])
        );
        assert!(
            !Mode::BlockingStrict
                .wrap(failing.clone(), batch)
                .process_events(&[event(1)])
        );
        assert_eq!(
            Mode::Blocking.wrap(failing.clone(), batch).name(),
            "ignoreErrors<failing>"
        );
        assert_eq!(Mode::Batch.wrap(failing, batch).name(), "buffered<failing>");
    }

    #[test]
    fn union_sends_to_all_and_fails_if_one_fails() {
        let memory = Arc::new(MemoryBackend::default());
        let union = Union::of(vec![Arc::new(Failing), memory.clone()]).unwrap();
        assert!(!union.process_events(&[event(1)]));
        assert_eq!(
            memory.events().len(),
            1,
            "the second backend still got the event"
        );
        assert_eq!(union.name(), "union[failing,memory]");
        assert_eq!(Union::of(vec![memory]).unwrap().name(), "memory");
    }
}
