//! The named lifecycle signals of graceful termination (upstream `lifecycle_signals.go`).
//!
//! Each signal is one-shot and idempotent: the first [`Signal::fire`] wakes every waiter; later
//! calls do nothing. Waiting on a fired signal returns at once. The `[graceful-termination]`
//! log lines are written by `run`, where upstream writes them.

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use tokio_util::sync::CancellationToken;

/// A named, one-shot, awaitable signal.
#[derive(Clone, Debug)]
pub struct Signal {
    name: &'static str,
    token: CancellationToken,
    fired: Arc<AtomicBool>,
    observer: Option<Arc<dyn SignalObserver>>,
}

/// Observes signals as they fire (used by tests to record the order, and by metrics).
pub trait SignalObserver: Send + Sync + std::fmt::Debug {
    /// Called once, when `name` fires.
    fn fired(&self, name: &'static str);
}

impl Signal {
    /// A new, unfired signal.
    pub fn new(name: &'static str) -> Self {
        Signal {
            name,
            token: CancellationToken::new(),
            fired: Arc::new(AtomicBool::new(false)),
            observer: None,
        }
    }

    fn observed(name: &'static str, observer: Arc<dyn SignalObserver>) -> Self {
        Signal {
            name,
            token: CancellationToken::new(),
            fired: Arc::new(AtomicBool::new(false)),
            observer: Some(observer),
        }
    }

    /// The signal's name, e.g. `ShutdownInitiated`.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Fires the signal (idempotent). Returns whether this call fired it (false when it had
    /// fired already). Logging is the caller's: upstream logs the shutdown events where they
    /// happen, and never HasBeenReady or MuxAndDiscoveryComplete as shutdown events.
    pub fn fire(&self) -> bool {
        self.fire_logging(|_| {})
    }

    /// Fires the signal like [`Signal::fire`], calling `log` with its name first when this call
    /// fires it, before any waiter wakes: what waiters log afterwards comes after that line.
    pub fn fire_logging(&self, log: impl FnOnce(&'static str)) -> bool {
        if self.fired.swap(true, Ordering::SeqCst) {
            return false;
        }
        log(self.name);
        // Record before waking waiters, so what they do next is recorded after this.
        crate::metrics::graceful_termination_event(self.name);
        if let Some(observer) = &self.observer {
            observer.fired(self.name);
        }
        self.token.cancel();
        true
    }

    /// Whether the signal has fired.
    pub fn signaled(&self) -> bool {
        self.token.is_cancelled()
    }

    /// Waits until the signal fires.
    pub async fn wait(&self) {
        self.token.cancelled().await
    }

    /// The underlying token (cancelled when the signal fires).
    pub fn token(&self) -> CancellationToken {
        self.token.clone()
    }
}

/// All lifecycle signals of one server.
#[derive(Clone, Debug)]
pub struct LifecycleSignals {
    /// Fired as soon as the stop context is cancelled (SIGTERM).
    pub shutdown_initiated: Signal,
    /// Fired when the shutdown delay has elapsed after ShutdownInitiated.
    pub after_shutdown_delay_duration: Signal,
    /// Fired when all pre-shutdown hooks have returned (even with errors).
    pub pre_shutdown_hooks_stopped: Signal,
    /// Fired when both the delay has passed and the pre-shutdown hooks have stopped.
    pub not_accepting_new_requests: Signal,
    /// Fired when non-long-running requests and (if enabled) watches have drained.
    pub in_flight_requests_drained: Signal,
    /// Fired when the HTTP server has stopped listening.
    pub http_server_stopped_listening: Signal,
    /// Fired the first time /readyz answers 200.
    pub has_been_ready: Signal,
    /// Fired when every registered mux-and-discovery-complete signal has fired.
    pub mux_and_discovery_complete: Signal,
}

impl Default for LifecycleSignals {
    fn default() -> Self {
        Self::new(None)
    }
}

impl LifecycleSignals {
    /// New, unfired signals, optionally observed.
    pub fn new(observer: Option<Arc<dyn SignalObserver>>) -> Self {
        let make = |name| match &observer {
            Some(o) => Signal::observed(name, o.clone()),
            None => Signal::new(name),
        };
        LifecycleSignals {
            shutdown_initiated: make("ShutdownInitiated"),
            after_shutdown_delay_duration: make("AfterShutdownDelayDuration"),
            pre_shutdown_hooks_stopped: make("PreShutdownHooksStopped"),
            not_accepting_new_requests: make("NotAcceptingNewRequest"),
            in_flight_requests_drained: make("InFlightRequestsDrained"),
            http_server_stopped_listening: make("HTTPServerStoppedListening"),
            has_been_ready: make("HasBeenReady"),
            mux_and_discovery_complete: make("MuxAndDiscoveryComplete"),
        }
    }
}

/// A [`SignalObserver`] that records the order signals fired in, with timestamps.
#[derive(Debug, Default)]
pub struct SignalRecorder {
    events: Mutex<Vec<(&'static str, Instant)>>,
}

impl SignalRecorder {
    /// A new recorder.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// The names recorded so far, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.events
            .lock()
            .map(|e| e.iter().map(|(n, _)| *n).collect())
            .unwrap_or_default()
    }
}

impl SignalObserver for SignalRecorder {
    fn fired(&self, name: &'static str) {
        if let Ok(mut events) = self.events.lock() {
            events.push((name, Instant::now()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn fire_is_idempotent_and_wakes_waiters() {
        let recorder = SignalRecorder::new();
        let signals = LifecycleSignals::new(Some(recorder.clone()));
        let s = signals.shutdown_initiated.clone();
        let waiter = tokio::spawn(async move { s.wait().await });
        signals.shutdown_initiated.fire();
        signals.shutdown_initiated.fire();
        waiter.await.unwrap();
        assert!(signals.shutdown_initiated.signaled());
        assert_eq!(recorder.names(), vec!["ShutdownInitiated"]);
    }
}
