//! Watch events and streams, and the predicate filtering upstream's etcd3 watcher applies: an
//! object leaving the selector is seen as `DELETED`, one entering it as `ADDED`.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::selection::SelectionPredicate;
use super::value::ResourceTransformer;
use super::{Object, versioner};
use crate::status::ApiError;

/// Channel capacity of a backend watch (events are forwarded as fast as the consumer reads).
pub const WATCH_CHANNEL_CAPACITY: usize = 100;

/// One watch event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WatchEvent {
    /// The object was created, or entered the selector.
    Added(Object),
    /// The object changed (and still matches).
    Modified(Object),
    /// The object was deleted, or left the selector; its resourceVersion is the event's.
    Deleted(Object),
    /// Progress: everything up to this revision has been delivered.
    Bookmark {
        /// The revision.
        resource_version: u64,
        /// This bookmark ends the initial events of a `sendInitialEvents` watch (the
        /// `k8s.io/initial-events-end` annotation).
        initial_events_end: bool,
    },
    /// The watch failed; the stream ends after this (e.g. 410 Expired).
    Error(ApiError),
}

impl WatchEvent {
    /// The revision of the event (0 for errors).
    pub fn resource_version(&self) -> u64 {
        match self {
            WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => {
                o.resource_version
            }
            WatchEvent::Bookmark {
                resource_version, ..
            } => *resource_version,
            WatchEvent::Error(_) => 0,
        }
    }

    /// The upstream event type name (`ADDED`, `MODIFIED`, …).
    pub fn type_name(&self) -> &'static str {
        match self {
            WatchEvent::Added(_) => "ADDED",
            WatchEvent::Modified(_) => "MODIFIED",
            WatchEvent::Deleted(_) => "DELETED",
            WatchEvent::Bookmark { .. } => "BOOKMARK",
            WatchEvent::Error(_) => "ERROR",
        }
    }
}

type ProgressFn = Arc<dyn Fn() + Send + Sync>;

/// A batch of events shared by every watcher that sees all of them (the watch cache sends one
/// allocation to thousands of watchers and wakes each once per batch).
pub type EventBatch = Arc<Vec<WatchEvent>>;

enum Source {
    Events(mpsc::Receiver<WatchEvent>),
    Batches {
        rx: mpsc::Receiver<EventBatch>,
        current: Option<EventBatch>,
        next: usize,
    },
}

/// A stream of watch events. Dropping it stops the watch.
pub struct WatchStream {
    initial: VecDeque<WatchEvent>,
    source: Source,
    progress: Option<ProgressFn>,
    _stop: Option<DropGuard>,
}

impl std::fmt::Debug for WatchStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchStream")
            .field("initial", &self.initial.len())
            .finish()
    }
}

impl WatchStream {
    /// A stream reading `rx`; `stop` is cancelled when the stream is dropped.
    pub fn new(rx: mpsc::Receiver<WatchEvent>, stop: Option<CancellationToken>) -> Self {
        WatchStream {
            initial: VecDeque::new(),
            source: Source::Events(rx),
            progress: None,
            _stop: stop.map(CancellationToken::drop_guard),
        }
    }

    /// A stream reading batches of events from `rx`.
    pub fn from_batches(rx: mpsc::Receiver<EventBatch>) -> Self {
        WatchStream {
            initial: VecDeque::new(),
            source: Source::Batches {
                rx,
                current: None,
                next: 0,
            },
            progress: None,
            _stop: None,
        }
    }

    /// Events delivered before anything from the channel (synthetic initial `ADDED`s).
    pub fn with_initial(mut self, initial: VecDeque<WatchEvent>) -> Self {
        self.initial = initial;
        self
    }

    /// Sets the hook [`WatchStream::request_progress`] calls.
    pub fn with_progress(mut self, progress: Arc<dyn Fn() + Send + Sync>) -> Self {
        self.progress = Some(progress);
        self
    }

    /// A stream that yields one error and ends.
    pub fn error(err: ApiError) -> Self {
        let (_tx, rx) = mpsc::channel(1);
        WatchStream::new(rx, None).with_initial(VecDeque::from([WatchEvent::Error(err)]))
    }

    /// The next event; `None` when the watch ended.
    pub async fn next(&mut self) -> Option<WatchEvent> {
        std::future::poll_fn(|cx| self.poll_event(cx)).await
    }

    /// The next event if one is ready now (`None` when none is ready or the watch ended).
    pub fn try_next(&mut self) -> Option<WatchEvent> {
        let waker = futures::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        match self.poll_event(&mut cx) {
            Poll::Ready(ev) => ev,
            Poll::Pending => None,
        }
    }

    fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<Option<WatchEvent>> {
        if let Some(ev) = self.initial.pop_front() {
            return Poll::Ready(Some(ev));
        }
        match &mut self.source {
            Source::Events(rx) => rx.poll_recv(cx),
            Source::Batches { rx, current, next } => loop {
                if let Some(batch) = current {
                    if let Some(ev) = batch.get(*next) {
                        *next += 1;
                        return Poll::Ready(Some(ev.clone()));
                    }
                    *current = None;
                }
                match rx.poll_recv(cx) {
                    Poll::Ready(Some(batch)) => {
                        *current = Some(batch);
                        *next = 0;
                    }
                    Poll::Ready(None) => return Poll::Ready(None),
                    Poll::Pending => return Poll::Pending,
                }
            },
        }
    }

    /// Asks the backend for a progress notification (a bookmark with the current revision), as
    /// upstream's `RequestWatchProgress`. A no-op when the backend has none.
    pub fn request_progress(&self) {
        if let Some(p) = &self.progress {
            p();
        }
    }
}

impl futures::Stream for WatchStream {
    type Item = WatchEvent;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<WatchEvent>> {
        self.poll_event(cx)
    }
}

/// A change as a backend sees it: values are stored bytes (without resourceVersion).
#[derive(Clone, Debug)]
pub struct RawEvent {
    /// The key.
    pub key: String,
    /// The revision of the change.
    pub rev: u64,
    /// The new value (`None` for a delete).
    pub value: Option<Bytes>,
    /// The previous value (`None` for a create).
    pub prev: Option<Bytes>,
}

impl RawEvent {
    /// The event with its values read through `transformer` (stored bytes to plain ones); a
    /// value no provider reads ends the watch with upstream's internal error.
    pub fn untransformed(&self, transformer: &ResourceTransformer) -> Result<RawEvent, ApiError> {
        let read = |v: &Option<Bytes>| -> Result<Option<Bytes>, ApiError> {
            v.as_ref()
                .map(|raw| {
                    transformer
                        .from_storage(&self.key, raw.clone())
                        .map(|u| u.data)
                        .map_err(ApiError::internal)
                })
                .transpose()
        };
        Ok(RawEvent {
            key: self.key.clone(),
            rev: self.rev,
            value: read(&self.value)?,
            prev: read(&self.prev)?,
        })
    }
}

fn object(key: &str, value: &[u8], rev: u64) -> Result<Object, ApiError> {
    let value = versioner::set_resource_version(value, rev).map_err(ApiError::internal)?;
    Ok(Object {
        key: key.to_string(),
        value,
        resource_version: rev,
    })
}

/// Turns a raw change into what a watcher with `pred` sees (upstream `watchChan.transform`);
/// `None` when the watcher sees nothing.
pub fn transform(ev: &RawEvent, pred: &SelectionPredicate) -> Option<Result<WatchEvent, ApiError>> {
    let wrap = |r: Result<Object, ApiError>, f: fn(Object) -> WatchEvent| Some(r.map(f));
    match (&ev.value, &ev.prev) {
        (None, Some(prev)) => {
            if !pred.matches(prev) {
                return None;
            }
            wrap(object(&ev.key, prev, ev.rev), WatchEvent::Deleted)
        }
        (None, None) => None,
        (Some(cur), None) => {
            if !pred.matches(cur) {
                return None;
            }
            wrap(object(&ev.key, cur, ev.rev), WatchEvent::Added)
        }
        (Some(cur), Some(prev)) => {
            if pred.is_empty() {
                return wrap(object(&ev.key, cur, ev.rev), WatchEvent::Modified);
            }
            match (pred.matches(cur), pred.matches(prev)) {
                (true, true) => wrap(object(&ev.key, cur, ev.rev), WatchEvent::Modified),
                (true, false) => wrap(object(&ev.key, cur, ev.rev), WatchEvent::Added),
                (false, true) => wrap(object(&ev.key, prev, ev.rev), WatchEvent::Deleted),
                (false, false) => None,
            }
        }
    }
}

/// Whether `key` is watched by a watch on `watched` (a prefix when `recursive`).
pub fn key_matches(watched: &str, recursive: bool, key: &str) -> bool {
    if recursive {
        key.starts_with(watched)
    } else {
        key == watched
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::selection::{FieldSelector, LabelSelector};

    fn obj(label: &str) -> Bytes {
        Bytes::from(format!(
            r#"{{"metadata":{{"name":"a","labels":{{"l":"{label}"}}}}}}"#
        ))
    }

    #[test]
    fn selector_transitions() {
        let pred = SelectionPredicate::new(
            LabelSelector::parse("l=in").unwrap(),
            FieldSelector::everything(),
        );
        let ev = |value: Option<Bytes>, prev: Option<Bytes>| RawEvent {
            key: "/k".into(),
            rev: 9,
            value,
            prev,
        };
        let kind = |e: &RawEvent| transform(e, &pred).map(|r| r.unwrap().type_name());
        assert_eq!(kind(&ev(Some(obj("in")), None)), Some("ADDED"));
        assert_eq!(kind(&ev(Some(obj("out")), None)), None);
        assert_eq!(
            kind(&ev(Some(obj("in")), Some(obj("in")))),
            Some("MODIFIED")
        );
        assert_eq!(kind(&ev(Some(obj("in")), Some(obj("out")))), Some("ADDED"));
        assert_eq!(
            kind(&ev(Some(obj("out")), Some(obj("in")))),
            Some("DELETED")
        );
        assert_eq!(kind(&ev(Some(obj("out")), Some(obj("out")))), None);
        assert_eq!(kind(&ev(None, Some(obj("in")))), Some("DELETED"));
        let deleted = transform(&ev(Some(obj("out")), Some(obj("in"))), &pred)
            .unwrap()
            .unwrap();
        // The object that left carries the event's revision.
        assert_eq!(deleted.resource_version(), 9);
    }
}
