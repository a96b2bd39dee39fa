//! Insecure serving (upstream `deprecated_insecure_serving.go`): plain HTTP/1.1 with the same
//! header limits, timeouts and stop semantics as secure serving.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::accept::{self, ConnectionFn, ServingHandle};
use super::conn::{ConnShared, Protocol, serve_connection};
use super::{BindAddress, DEFAULT_HTTP2_MAX_STREAMS, ServeError};
use crate::filters::HttpService;
use crate::request::ConnectionInfo;

/// The handle of an insecure server (the same shape as the secure one).
pub type InsecureHandle = ServingHandle;

/// Starts plain-HTTP serving on `bind` until `stop` fires; then shuts down like [`super::serve`].
pub async fn serve_insecure(
    bind: BindAddress,
    handler: HttpService,
    stop: CancellationToken,
    shutdown_timeout: Duration,
) -> Result<InsecureHandle, ServeError> {
    let listener = accept::bind(bind).await?;
    let shared = Arc::new(ConnShared::new(
        handler,
        stop.clone(),
        DEFAULT_HTTP2_MAX_STREAMS,
    ));
    let on_connection: ConnectionFn = Arc::new(move |stream, remote, local| {
        let info = ConnectionInfo {
            remote_addr: Some(remote),
            local_addr: Some(local),
            tls: false,
            peer_certificates: None,
            close_connection: CancellationToken::new(),
        };
        Box::pin(serve_connection(
            stream,
            Protocol::Http1,
            info,
            shared.clone(),
        ))
    });
    accept::spawn(listener, on_connection, stop, shutdown_timeout, None)
}
