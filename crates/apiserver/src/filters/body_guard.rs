//! Response-body wrappers shared by filters: keeping a guard (wait-group membership, an
//! in-flight permit) alive until the response body has been fully sent or dropped.
//!
//! Go filters release such resources when the handler returns, which in Go is after the body
//! was written. Here a handler returns its response before the body streams, so the guard has
//! to travel with the body.

use std::any::Any;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};

use crate::body::{Body, BoxError, Response, boxed};

/// A body that drops `guard` once the inner body ended, failed, or was dropped.
struct GuardedBody {
    inner: Body,
    guard: Option<Box<dyn Any + Send>>,
}

impl HttpBody for GuardedBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(None) | Poll::Ready(Some(Err(_))) => self.guard = None,
            Poll::Ready(Some(Ok(_))) if self.inner.is_end_stream() => self.guard = None,
            _ => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Returns `response` with a body that keeps `guard` alive until the body has been sent in full
/// (or failed, or was dropped unsent).
pub fn hold_until_body_end<G: Send + 'static>(response: Response, guard: G) -> Response {
    let (parts, inner) = response.into_parts();
    if inner.is_end_stream() {
        // Nothing left to send: release now.
        drop(guard);
        return Response::from_parts(parts, inner);
    }
    let body = GuardedBody {
        inner,
        guard: Some(Box::new(guard)),
    };
    Response::from_parts(parts, boxed(body))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use http_body_util::BodyExt;

    use super::*;
    use crate::body::full;

    struct Flag(Arc<AtomicBool>);
    impl Drop for Flag {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    #[tokio::test]
    async fn guard_released_after_body_read() {
        let released = Arc::new(AtomicBool::new(false));
        let response =
            hold_until_body_end(http::Response::new(full("hello")), Flag(released.clone()));
        assert!(!released.load(Ordering::SeqCst));
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(bytes, "hello");
        assert!(released.load(Ordering::SeqCst));
    }

    #[tokio::test]
    async fn guard_released_when_body_dropped() {
        let released = Arc::new(AtomicBool::new(false));
        let response =
            hold_until_body_end(http::Response::new(full("hello")), Flag(released.clone()));
        drop(response);
        assert!(released.load(Ordering::SeqCst));
    }
}
