//! The audit backend contract (upstream `audit.Backend`): started before the server serves,
//! fed events by the audit filters, shut down after in-flight requests drained.

use std::future::Future;
use std::pin::Pin;

use super::AuditError;
use super::event::Event;

/// A boxed future returned by [`Backend::shutdown`].
pub type ShutdownFuture<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// Where audit events go.
pub trait Backend: Send + Sync + std::fmt::Debug {
    /// Hands events to the backend. Returns `false` when they could not be accepted (the
    /// backend is shut down, or a synchronous write failed); errors are logged here.
    /// Must not block on slow I/O when the backend is buffered.
    fn process_events(&self, events: &[Event]) -> bool;

    /// Starts the backend's background work (called once, before serving).
    fn run(&self) -> Result<(), AuditError>;

    /// Stops the backend: everything accepted before is written before the future resolves.
    fn shutdown(&self) -> ShutdownFuture<'_>;

    /// The backend's name, for logs (`log`, `buffered<log>` …).
    fn name(&self) -> String;
}
