//! The listener side shared by secure and insecure serving: binding, the accept loop with TCP
//! keep-alive, and upstream's `RunServer` stop semantics (stop → listener closed → graceful
//! shutdown bounded by the shutdown timeout).

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::dynamic_certs::DynamicClientCa;
use super::{BindAddress, ServeError, TCP_KEEPALIVE};

/// The listener stopped for a reason other than the stop signal (upstream panics with
/// `Stopped listening on <addr> due to error: …`; callers treat it as fatal).
#[derive(Clone, Debug, thiserror::Error)]
#[error("Stopped listening on {addr} due to error: {message}")]
pub struct ListenerError {
    /// The listener's address.
    pub addr: SocketAddr,
    /// The accept error.
    pub message: String,
}

type ListenerState = Option<Result<(), ListenerError>>;

/// A running server.
#[derive(Clone, Debug)]
pub struct ServingHandle {
    local_addr: SocketAddr,
    listener: watch::Receiver<ListenerState>,
    done: CancellationToken,
    client_ca: Option<DynamicClientCa>,
}

impl ServingHandle {
    /// The address the listener is bound to.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Resolves once the listener is closed: `Ok(())` when that was because of the stop
    /// signal, `Err` when accepting failed (fatal for the caller).
    pub async fn listener_stopped(&self) -> Result<(), ListenerError> {
        let mut rx = self.listener.clone();
        match rx.wait_for(Option::is_some).await {
            Ok(state) => state.clone().unwrap_or(Ok(())),
            // The accept task is gone without reporting: it panicked.
            Err(_) => Err(ListenerError {
                addr: self.local_addr,
                message: "the accept loop ended unexpectedly".to_string(),
            }),
        }
    }

    /// Resolves once, after stop, every connection has finished, or at the shutdown timeout
    /// (connections still active then are left running, as Go's `Shutdown` leaves them).
    pub async fn shutdown_complete(&self) {
        self.done.cancelled().await
    }

    /// The client CA handle kept current from its file (secure serving with a client CA).
    pub fn client_ca(&self) -> Option<DynamicClientCa> {
        self.client_ca.clone()
    }
}

/// Serves one accepted connection until it ends.
pub(crate) type ConnectionFn = Arc<
    dyn Fn(TcpStream, SocketAddr, SocketAddr) -> Pin<Box<dyn Future<Output = ()> + Send>>
        + Send
        + Sync,
>;

/// Binds (or adopts) the listener.
pub(crate) async fn bind(bind: BindAddress) -> Result<TcpListener, ServeError> {
    match bind {
        BindAddress::Addr(addr) => {
            TcpListener::bind(addr)
                .await
                .map_err(|source| ServeError::Bind {
                    addr: addr.to_string(),
                    source,
                })
        }
        BindAddress::Listener(listener) => {
            listener.set_nonblocking(true)?;
            Ok(TcpListener::from_std(listener)?)
        }
    }
}

/// Accept errors after which accepting can continue (Go's `Serve` retries `Temporary` errors).
fn is_transient(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        e.kind(),
        ConnectionAborted | ConnectionReset | Interrupted | WouldBlock | TimedOut | OutOfMemory
    ) || matches!(e.raw_os_error(), Some(23 | 24 | 105 | 12)) // ENFILE, EMFILE, ENOBUFS, ENOMEM
}

/// Runs the accept loop in the background and returns its handle.
pub(crate) fn spawn(
    listener: TcpListener,
    on_connection: ConnectionFn,
    stop: CancellationToken,
    shutdown_timeout: Duration,
    client_ca: Option<DynamicClientCa>,
) -> Result<ServingHandle, ServeError> {
    let local_addr = listener.local_addr()?;
    let (tx, rx) = watch::channel::<ListenerState>(None);
    let done = CancellationToken::new();
    let handle = ServingHandle {
        local_addr,
        listener: rx,
        done: done.clone(),
        client_ca,
    };
    tokio::spawn(async move {
        let tracker = TaskTracker::new();
        let mut backoff = Duration::ZERO;
        let result = loop {
            tokio::select! {
                biased;
                _ = stop.cancelled() => break Ok(()),
                accepted = listener.accept() => match accepted {
                    Ok((stream, remote)) => {
                        backoff = Duration::ZERO;
                        let keepalive = socket2::TcpKeepalive::new()
                            .with_time(TCP_KEEPALIVE)
                            .with_interval(TCP_KEEPALIVE);
                        if let Err(e) = socket2::SockRef::from(&stream).set_tcp_keepalive(&keepalive) {
                            tracing::debug!("cannot enable TCP keep-alive: {e}");
                        }
                        // Go sets TCP_NODELAY on every connection; without it, small HTTP/2
                        // frames wait for delayed ACKs (Nagle) and throughput collapses.
                        if let Err(e) = stream.set_nodelay(true) {
                            tracing::debug!("cannot set TCP_NODELAY: {e}");
                        }
                        let local = stream.local_addr().unwrap_or(local_addr);
                        tracker.spawn(on_connection(stream, remote, local));
                    }
                    Err(e) if is_transient(&e) => {
                        backoff = (backoff * 2).clamp(Duration::from_millis(5), Duration::from_secs(1));
                        tracing::warn!("accept error: {e}; retrying in {backoff:?}");
                        tokio::select! {
                            _ = stop.cancelled() => break Ok(()),
                            _ = tokio::time::sleep(backoff) => {}
                        }
                    }
                    Err(e) => break Err(ListenerError { addr: local_addr, message: e.to_string() }),
                },
            }
        };
        // Closing the listener refuses new connections from here on.
        drop(listener);
        if result.is_ok() {
            tracing::info!("Stopped listening on {local_addr}");
        }
        let failed = result.is_err();
        let _ = tx.send(Some(result));
        if failed {
            // Upstream's server is still shut down by the stop signal alone.
            stop.cancelled().await;
        }
        tracker.close();
        // Connections observe `stop` themselves: HTTP/2 sends GOAWAY, idle HTTP/1 closes,
        // in-flight requests complete. As Go's `Shutdown`, the wait ends at the shutdown
        // timeout but active connections are not cut: they end with their requests, or with
        // the process (kube-apiserver exits once `run` returned).
        if tokio::time::timeout(shutdown_timeout, tracker.wait())
            .await
            .is_err()
        {
            tracing::error!("Failed to shutdown server: context deadline exceeded");
        }
        done.cancel();
    });
    Ok(handle)
}
