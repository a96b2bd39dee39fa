//! The debug unix socket (upstream `routes/debugsocket.go`): profiling and debug flags on a
//! local socket, with **no** authentication or authorization (file permissions guard it).

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::path::{Path, PathBuf};

use futures::FutureExt;
use hyper_util::rt::TokioIo;
use tokio::net::UnixListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::flags::{FlagSetter, install_debug_flags};
use super::profiling::install_profiling;
use crate::body::Response;
use crate::server::mux::PathRecorderMux;

/// Errors starting the debug socket.
#[derive(Debug, thiserror::Error)]
pub enum DebugSocketError {
    /// Preparing the socket path failed.
    #[error("failed to prepare debug socket {path}: {source}")]
    Prepare {
        /// The socket path.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Binding the socket failed.
    #[error("failed to listen on debug socket {path}: {source}")]
    Listen {
        /// The socket path.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

/// The routes of the debug socket: pprof (with `cmdline`) and `/debug/flags` with the given
/// flags (e.g. `v`). Profiling is always there, whatever `--profiling` says, as upstream: the
/// socket's file permissions are what guards it.
pub fn debug_socket_mux(flags: BTreeMap<String, FlagSetter>) -> PathRecorderMux {
    let mux = PathRecorderMux::new("debug-socket");
    install_profiling(&mux, true);
    install_debug_flags(&mux, flags);
    mux
}

/// Removes a stale socket file and creates the parent directory.
fn prepare(path: &Path) -> Result<(), DebugSocketError> {
    let err = |source| DebugSocketError::Prepare {
        path: path.to_owned(),
        source,
    };
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(err(e)),
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(err)?;
    }
    Ok(())
}

/// Binds `path` (removing a stale file first) and serves `mux` over HTTP/1.1 until `stop`
/// fires; then open connections are closed gracefully and the socket file is removed. The
/// returned task ends when all of that is done.
pub fn serve_mux_on_socket(
    path: impl AsRef<Path>,
    mux: PathRecorderMux,
    stop: CancellationToken,
) -> Result<JoinHandle<()>, DebugSocketError> {
    let path = path.as_ref().to_owned();
    prepare(&path)?;
    let listener = UnixListener::bind(&path).map_err(|source| DebugSocketError::Listen {
        path: path.clone(),
        source,
    })?;
    Ok(tokio::spawn(accept_loop(listener, path, mux, stop)))
}

/// Starts the debug socket at `path` with the pprof routes and `/debug/flags/v` (when
/// `verbosity` is given).
pub fn serve_debug_socket(
    path: impl AsRef<Path>,
    verbosity: Option<FlagSetter>,
    stop: CancellationToken,
) -> Result<JoinHandle<()>, DebugSocketError> {
    let flags = verbosity
        .map(|setter| BTreeMap::from([("v".to_owned(), setter)]))
        .unwrap_or_default();
    serve_mux_on_socket(path, debug_socket_mux(flags), stop)
}

type HyperResponseFuture =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<Response, Infallible>> + Send>>;

fn ok_response(response: Response) -> Result<Response, Infallible> {
    Ok(response)
}

/// Serves one request of the socket (typed helper: closures here trip rustc's higher-ranked
/// lifetime inference on the boxed body error type).
fn handle(mux: &PathRecorderMux, req: http::Request<hyper::body::Incoming>) -> HyperResponseFuture {
    let req = req.map(crate::body::boxed);
    let handler = mux.handler_for(req.uri().path());
    Box::pin(
        crate::filters::Next::new(handler)
            .run(req)
            .map(ok_response as fn(Response) -> Result<Response, Infallible>),
    )
}

async fn accept_loop(
    listener: UnixListener,
    path: PathBuf,
    mux: PathRecorderMux,
    stop: CancellationToken,
) {
    let connections = TaskTracker::new();
    loop {
        let stream = tokio::select! {
            () = stop.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(err) => {
                    tracing::warn!(%err, "debug socket accept failed");
                    continue;
                }
            },
        };
        let mux = mux.clone();
        let stop = stop.clone();
        connections.spawn(async move {
            let service = hyper::service::service_fn(move |req| handle(&mux, req));
            let conn = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service);
            let mut conn = std::pin::pin!(conn);
            tokio::select! {
                result = conn.as_mut() => {
                    if let Err(err) = result {
                        tracing::debug!(%err, "debug socket connection ended");
                    }
                    return;
                }
                () = stop.cancelled() => conn.as_mut().graceful_shutdown(),
            }
            if let Err(err) = conn.await {
                tracing::debug!(%err, "debug socket connection ended");
            }
        });
    }
    drop(listener);
    connections.close();
    connections.wait().await;
    // Go's unix listener unlinks its socket file on close.
    if let Err(err) = std::fs::remove_file(&path)
        && err.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(%err, path = %path.display(), "cannot remove debug socket");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::BoxError;
    use http_body_util::{BodyExt, Full};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicI32, Ordering};
    use tokio::net::UnixStream;

    async fn request(path: &Path, method: &str, uri: &str, body: &str) -> (u16, String) {
        let stream = UnixStream::connect(path).await.unwrap();
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .unwrap();
        tokio::spawn(conn);
        let req = http::Request::builder()
            .method(method)
            .uri(uri)
            .header("host", "localhost")
            .body(Full::new(bytes::Bytes::from(body.to_owned())))
            .unwrap();
        let resp = sender.send_request(req).await.unwrap();
        let status = resp.status().as_u16();
        let bytes = resp
            .into_body()
            .collect()
            .await
            .map_err(BoxError::from)
            .unwrap()
            .to_bytes();
        (status, String::from_utf8_lossy(&bytes).into_owned())
    }

    #[tokio::test]
    async fn serves_pprof_and_flags_until_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("debug.sock");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, b"stale").unwrap();

        let level = Arc::new(AtomicI32::new(0));
        let l = level.clone();
        let setter = super::super::flags::verbosity_setter(move |v| l.store(v, Ordering::SeqCst));
        let stop = CancellationToken::new();
        let task = serve_debug_socket(&path, Some(setter), stop.clone()).unwrap();

        let (status, body) = request(&path, "GET", "/debug/pprof", "").await;
        assert_eq!(status, 302);
        assert_eq!(body, "<a href=\"/debug/pprof/\">Found</a>.\n\n");
        assert_eq!(
            request(&path, "GET", "/debug/pprof/cmdline", "").await.0,
            200
        );
        assert_eq!(
            request(&path, "PUT", "/debug/flags/v", "3").await,
            (200, "successfully set klog.logging.verbosity to 3\n".into())
        );
        assert_eq!(level.load(Ordering::SeqCst), 3);
        assert_eq!(request(&path, "GET", "/healthz", "").await.0, 404);

        stop.cancel();
        tokio::time::timeout(std::time::Duration::from_secs(30), task)
            .await
            .unwrap()
            .unwrap();
        assert!(!path.exists());
    }

    #[tokio::test]
    async fn without_a_verbosity_setter_pprof_and_an_empty_flags_index() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("debug.sock");
        let stop = CancellationToken::new();
        let task = serve_debug_socket(&path, None, stop.clone()).unwrap();
        assert_eq!(request(&path, "GET", "/debug/pprof/", "").await.0, 200);
        assert_eq!(request(&path, "GET", "/debug/flags/", "").await.0, 200);
        assert_eq!(request(&path, "PUT", "/debug/flags/v", "3").await.0, 404);
        stop.cancel();
        task.await.unwrap();
    }
}
