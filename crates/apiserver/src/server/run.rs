//! `run`: serving and the graceful-termination sequence (upstream `RunWithContext` and
//! `NonBlockingRunWithContext`), in both shutdown modes.
//!
//! Mode A (default): at NotAcceptingNewRequest the listener closes, HTTP/2 connections get
//! GOAWAY and idle HTTP/1.1 connections close; in-flight requests drain.
//! Mode B (`shutdown_send_retry_after`): the listener stays open and new requests get 429 with
//! `Retry-After: 5` until the in-flight requests drained; then the HTTP server stops within 2 s.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::server::genericapiserver::PreparedGenericApiServer;
use crate::server::hooks::PostStartHookContext;
use crate::server::lifecycle::Signal;
use crate::server::routes::debugsocket;
use crate::server::serving::{self, ServeError};
use crate::server::systemd;
use crate::util::klog::V1;

/// Why `run` returned an error.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The listener could not be set up (bind, certificates).
    #[error(transparent)]
    Serve(#[from] ServeError),
    /// The listener stopped although no stop was requested (fatal, as upstream's panic).
    #[error("stopped listening due to error: {0}")]
    ListenerStopped(String),
    /// A post-start hook failed (fatal, as upstream's `klog.Fatalf`).
    #[error("{0}")]
    PostStartHookFailed(String),
    /// Pre-shutdown hooks failed; the server stopped without draining.
    #[error("{}", .0.join("\n"))]
    PreShutdownHooksFailed(Vec<String>),
    /// The audit backend could not start.
    #[error("failed to run the audit backend: {0}")]
    Audit(String),
}

/// The shutdown timeout of the HTTP server in mode B (upstream hard-codes 2 s).
const RETRY_AFTER_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(2);

impl PreparedGenericApiServer {
    /// Serves until `stop` is cancelled, then terminates gracefully. Returns when the HTTP
    /// server has stopped and everything drained, or at once on a fatal error.
    pub async fn run(self, stop: CancellationToken) -> Result<(), RunError> {
        let result = self.run_inner(stop).await;
        self.destroy();
        result
    }

    async fn run_inner(&self, stop: CancellationToken) -> Result<(), RunError> {
        let inner = self.server.inner.clone();
        let config = &inner.config;
        let signals = config.lifecycle_signals.clone();

        // Everything that listens stops on this token: in mode A when the server no longer
        // accepts requests, in mode B once in-flight requests drained.
        let stop_http = CancellationToken::new();

        // Debug socket errors are only logged, as upstream.
        if let Some(path) = &config.debug_socket_path
            && let Err(err) =
                debugsocket::serve_debug_socket(path, config.verbosity_setter.clone(), stop.clone())
        {
            tracing::error!("failed to serve the debug socket {}: {err}", path.display());
        }

        // MuxAndDiscoveryComplete: all registered signals, in turn; abandoned on stop.
        {
            let pending: Vec<_> = inner
                .mux_complete_signals
                .lock()
                .map(|s| s.values().cloned().collect())
                .unwrap_or_default();
            let complete = signals.mux_and_discovery_complete.clone();
            let stop = stop.clone();
            tokio::spawn(async move {
                for signal in pending {
                    tokio::select! {
                        _ = signal.wait() => {}
                        _ = stop.cancelled() => {
                            tracing::info!(target: V1, "haven't completed {}, stop requested", complete.name());
                            return;
                        }
                    }
                }
                complete.fire();
                tracing::info!(
                    target: V1,
                    "{} has all endpoints registered and discovery information is complete",
                    complete.name()
                );
            });
        }

        // ShutdownInitiated, then the shutdown delay.
        {
            let signals = signals.clone();
            let stop = stop.clone();
            let delay = config.shutdown_delay_duration;
            tokio::spawn(async move {
                stop.cancelled().await;
                fire_logged(&signals.shutdown_initiated);
                tokio::time::sleep(delay).await;
                fire_logged(&signals.after_shutdown_delay_duration);
            });
        }

        let retry_after_mode = config.shutdown_send_retry_after;
        let shutdown_timeout = if retry_after_mode {
            tracing::info!(
                target: V1,
                shutdownTimeout = ?RETRY_AFTER_SHUTDOWN_TIMEOUT,
                "[graceful-termination] using HTTP Server shutdown timeout"
            );
            RETRY_AFTER_SHUTDOWN_TIMEOUT
        } else {
            config.request_timeout
        };
        {
            let signals = signals.clone();
            let stop_http = stop_http.clone();
            tokio::spawn(async move {
                if retry_after_mode {
                    signals.in_flight_requests_drained.wait().await;
                } else {
                    signals.not_accepting_new_requests.wait().await;
                }
                stop_http.cancel();
            });
        }

        if let Some(auditor) = &config.auditor {
            auditor.run().map_err(|e| RunError::Audit(e.to_string()))?;
        }

        // Serve. Without secure serving there is no listener; the sequence still runs, and
        // the server counts as stopped listening once it would have closed (a deliberate
        // difference from upstream, which blocks forever there).
        let (fatal_tx, mut fatal_rx) = tokio::sync::mpsc::unbounded_channel::<RunError>();
        let secure_info = inner.secure_serving.lock().ok().and_then(|mut s| s.take());
        let serving = match secure_info {
            Some(info) => Some(
                serving::serve(
                    info,
                    inner.handler.full_handler_chain.clone(),
                    stop_http.clone(),
                    shutdown_timeout,
                )
                .await?,
            ),
            None => None,
        };
        if let Some(handle) = &serving {
            // Said by the server that serves, not by the delegates whose chains only exist.
            if config.authenticator.is_none() {
                tracing::warn!("no authenticator configured: requests are served unauthenticated");
            }
            tracing::info!("Serving securely on {}", handle.local_addr());
        }

        // HTTPServerStoppedListening.
        let listener_done = CancellationToken::new();
        {
            let signals = signals.clone();
            let stop_http = stop_http.clone();
            let listener_done = listener_done.clone();
            let fatal_tx = fatal_tx.clone();
            let listener = serving.clone();
            tokio::spawn(async move {
                match listener {
                    Some(handle) => {
                        let result = handle.listener_stopped().await;
                        if let Err(err) = result
                            && !stop_http.is_cancelled()
                        {
                            let _ = fatal_tx.send(RunError::ListenerStopped(err.to_string()));
                            return;
                        }
                    }
                    None => stop_http.cancelled().await,
                }
                fire_logged(&signals.http_server_stopped_listening);
                listener_done.cancel();
            });
        }

        // Post-start hooks get the context of the HTTP server (upstream's stopHTTPServerCtx),
        // not the stop signal: controllers keep running through the shutdown delay and, in
        // mode B, the drain. Then READY=1, once the hooks are launched (not finished), as
        // upstream.
        let (hook_fail_tx, mut hook_fail_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
        let mut loopback = config.loopback.clone();
        if let Some(s) = &serving {
            loopback.host = format!("https://{}", loopback_address(s.local_addr()));
        }
        inner.post_start_hooks.run(
            PostStartHookContext {
                loopback,
                stop: stop_http.clone(),
            },
            hook_fail_tx,
        );
        if config.systemd_notify
            && let Err(err) = systemd::notify_ready()
        {
            tracing::error!("Unable to send systemd daemon successful start message: {err}");
        }

        // NotAcceptingNewRequest once the delay passed and the pre-shutdown hooks stopped.
        {
            let signals = signals.clone();
            tokio::spawn(async move {
                signals.after_shutdown_delay_duration.wait().await;
                signals.pre_shutdown_hooks_stopped.wait().await;
                fire_logged(&signals.not_accepting_new_requests);
            });
        }

        // InFlightRequestsDrained once non-long-running requests and watches drained.
        {
            let signals = signals.clone();
            let requests = config.non_long_running_request_wait_group.clone();
            let watches = config.watch_request_wait_group.clone();
            let grace = config.shutdown_watch_termination_grace_period;
            tokio::spawn(async move {
                signals.not_accepting_new_requests.wait().await;
                let drain_requests = async {
                    requests.wait().await;
                    tracing::info!(
                        target: V1,
                        "[graceful-termination] in-flight non long-running request(s) have drained"
                    );
                };
                let drain_watches = async {
                    if grace.is_zero() {
                        tracing::info!(
                            target: V1,
                            "[graceful-termination] not going to wait for active watch request(s) to drain"
                        );
                        return;
                    }
                    let (before, after, result) = watches.wait(grace).await;
                    let error = match result {
                        Ok(()) => "<nil>".to_string(),
                        Err(err) => err.to_string(),
                    };
                    tracing::info!(
                        target: V1,
                        duration = ?grace,
                        activeWatchesBefore = before,
                        activeWatchesAfter = after,
                        error = %error,
                        "[graceful-termination] active watch request(s) have drained"
                    );
                };
                tokio::join!(drain_requests, drain_watches);
                fire_logged(&signals.in_flight_requests_drained);
            });
        }

        // Upstream exits the process on these; here `run` returns, so serving must end too
        // rather than carry on in the background.
        let fatal = |err: RunError| {
            stop_http.cancel();
            config.watches_end.cancel();
            Err(err)
        };
        tracing::info!(target: V1, "[graceful-termination] waiting for shutdown to be initiated");
        tokio::select! {
            _ = stop.cancelled() => {}
            Some(err) = fatal_rx.recv() => return fatal(err),
            Some(failure) = hook_fail_rx.recv() => return fatal(RunError::PostStartHookFailed(failure)),
        }

        // Also fired by the delay task; firing (or waiting for) it here guarantees the hooks
        // start after it and after its log line.
        fire_logged(&signals.shutdown_initiated);
        signals.shutdown_initiated.wait().await;
        let hooks_result = inner.pre_shutdown_hooks.run().await;
        signals.pre_shutdown_hooks_stopped.fire_logging(|name| {
            tracing::info!(target: V1, name, "[graceful-termination] pre-shutdown hooks completed");
        });
        if let Err(errors) = hooks_result {
            return fatal(RunError::PreShutdownHooksFailed(errors));
        }

        signals.in_flight_requests_drained.wait().await;
        if let Some(auditor) = &config.auditor {
            auditor.shutdown().await;
            tracing::info!(target: V1, "[graceful-termination] audit backend shutdown completed");
        }
        // Watches that were not drained (grace 0) end now, with the server.
        config.watches_end.cancel();
        tokio::select! {
            _ = listener_done.cancelled() => {}
            Some(err) = fatal_rx.recv() => return fatal(err),
        }
        if let Some(s) = serving {
            s.shutdown_complete().await;
        }
        tracing::info!(target: V1, "[graceful-termination] apiserver is exiting");
        Ok(())
    }
}

/// Upstream's line for a lifecycle event, at V(1).
fn log_shutdown_event(name: &'static str) {
    tracing::info!(target: V1, name, "[graceful-termination] shutdown event");
}

/// Fires `signal` and, the first time, logs it as a shutdown event before its waiters wake
/// (so the log's order is the signals' order).
fn fire_logged(signal: &Signal) {
    signal.fire_logging(log_shutdown_event);
}

/// The address loopback clients use: the listener's port on 127.0.0.1 (or ::1) when it
/// listens on all addresses.
fn loopback_address(addr: std::net::SocketAddr) -> String {
    let ip = if addr.ip().is_unspecified() {
        if addr.is_ipv4() {
            std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST)
        } else {
            std::net::IpAddr::V6(std::net::Ipv6Addr::LOCALHOST)
        }
    } else {
        addr.ip()
    };
    std::net::SocketAddr::new(ip, addr.port()).to_string()
}
