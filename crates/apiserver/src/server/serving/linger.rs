//! Lingering close: after the server has sent everything and shut its write half, it keeps
//! reading (and discarding) what the peer still sends until the peer closes or a short time
//! has passed, and only then lets the socket go.
//!
//! Closing a socket that still has unread input makes the kernel answer with a TCP reset, and a
//! reset can make the peer discard a response it has received but not read yet: a client that
//! got a 401 (after which the server closes the connection, on HTTP/2 with a GOAWAY) would see
//! "connection reset" instead of the 401. Go's servers avoid this the same way (HTTP/1's
//! `closeWriteAndWait`, HTTP/2's wait for the client to close after a graceful GOAWAY).

use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

/// How long a closing connection waits for the peer to close (Go's HTTP/2 `goAwayTimeout`).
pub(crate) const LINGER: Duration = Duration::from_secs(1);

/// An I/O stream whose shutdown lingers as described in the module documentation.
pub(crate) struct LingeringClose<I> {
    inner: I,
    state: ShutdownState,
}

enum ShutdownState {
    /// Not shut down yet.
    Open,
    /// The write half is shut; draining input until the peer closes or the timer fires.
    Draining(Pin<Box<Sleep>>),
    /// Done: the peer closed, or the linger time passed.
    Closed,
}

impl<I> LingeringClose<I> {
    /// Wraps `inner`.
    pub(crate) fn new(inner: I) -> Self {
        Self {
            inner,
            state: ShutdownState::Open,
        }
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for LingeringClose<I> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<I: AsyncRead + AsyncWrite + Unpin> AsyncWrite for LingeringClose<I> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        loop {
            match &mut this.state {
                ShutdownState::Open => {
                    ready!(Pin::new(&mut this.inner).poll_shutdown(cx))?;
                    this.state = ShutdownState::Draining(Box::pin(tokio::time::sleep(LINGER)));
                }
                ShutdownState::Draining(timer) => {
                    if timer.as_mut().poll(cx).is_ready() {
                        this.state = ShutdownState::Closed;
                        continue;
                    }
                    let mut scratch = [0u8; 1024];
                    let mut buf = ReadBuf::new(&mut scratch);
                    match Pin::new(&mut this.inner).poll_read(cx, &mut buf) {
                        // More input: discard it and read on.
                        Poll::Ready(Ok(())) if !buf.filled().is_empty() => {}
                        // End of input, or the peer is gone: nothing left to reset.
                        Poll::Ready(_) => this.state = ShutdownState::Closed,
                        Poll::Pending => return Poll::Pending,
                    }
                }
                ShutdownState::Closed => return Poll::Ready(Ok(())),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn shutdown_waits_for_the_peer_to_close_and_drains_its_input() {
        let (server, mut peer) = tokio::io::duplex(64);
        let mut server = LingeringClose::new(server);
        server.write_all(b"response").await.unwrap();
        let mut shutdown = Box::pin(async move { server.shutdown().await });
        // The first poll shuts the write half and starts draining.
        assert!(futures::poll!(shutdown.as_mut()).is_pending());

        // The peer reads the response and the end of it...
        let mut got = Vec::new();
        peer.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, b"response");
        // ...while the server's shutdown is still pending, draining late input.
        assert!(futures::poll!(shutdown.as_mut()).is_pending());
        // (More than the pipe holds, so the writes only complete because the server drains.)
        for _ in 0..4 {
            peer.write_all(&[7u8; 40]).await.unwrap();
            assert!(futures::poll!(shutdown.as_mut()).is_pending());
        }

        drop(peer);
        shutdown.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn shutdown_gives_up_after_the_linger_time() {
        let (server, _peer) = tokio::io::duplex(64);
        let mut server = LingeringClose::new(server);
        let started = tokio::time::Instant::now();
        server.shutdown().await.unwrap();
        assert!(started.elapsed() >= LINGER);
    }

    #[tokio::test]
    async fn reads_and_writes_pass_through() {
        let (server, mut peer) = tokio::io::duplex(64);
        let mut server = LingeringClose::new(server);
        peer.write_all(b"ping").await.unwrap();
        let mut buf = [0u8; 4];
        server.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"ping");
        server.write_all(b"pong").await.unwrap();
        peer.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"pong");
    }
}
