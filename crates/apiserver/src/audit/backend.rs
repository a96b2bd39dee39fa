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
    /// backend is shut down, or a synchronous write failed); errors are logged and counted
    /// here. Must not block on slow I/O when the backend is buffered.
    fn process_events(&self, events: &[Event]) -> bool;

    /// Starts processing `events` in the background, for backends that send concurrently
    /// (the webhook), and returns the task to wait for; `Err` hands the events back when
    /// the backend has no such path (then call [`Backend::process_events`]).
    fn spawn_events(
        &self,
        events: Vec<Event>,
    ) -> Result<tokio::task::JoinHandle<bool>, Vec<Event>> {
        Err(events)
    }

    /// Starts the backend's background work (called once, before serving).
    fn run(&self) -> Result<(), AuditError>;

    /// Stops the backend: everything accepted before is written before the future resolves.
    fn shutdown(&self) -> ShutdownFuture<'_>;

    /// The backend's name, as upstream's `String()` prints it (`log`, `buffered<log>` …).
    fn name(&self) -> String;
}
