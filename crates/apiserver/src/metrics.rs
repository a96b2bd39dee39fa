//! Prometheus metrics of the server (`/metrics`).

/// Counts a graceful-termination lifecycle event.
pub fn graceful_termination_event(_name: &'static str) {}
