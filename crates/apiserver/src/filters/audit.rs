//! `WithAudit`: emits the audit events of a request (upstream `endpoints/filters/audit.go`).
//!
//! The policy is evaluated with the authenticated (pre-impersonation) user. At level `None`
//! the request passes untouched. Otherwise:
//! * `RequestReceived` is emitted at once (if the backend refuses it: 500);
//! * `ResponseStarted` when the response head is returned, for long-running requests only;
//! * `ResponseComplete` when the response body has been sent (or dropped, e.g. when the
//!   client went away);
//! * `Panic` when the inner handler panics (the panic is then resumed).
//!
//! At level `Request` and above, JSON request bodies are buffered (up to
//! [`MAX_REQUEST_CAPTURE`]) and recorded; at `RequestResponse`, JSON response bodies too.
//! When a JSON response is a `metav1.Status`, its status/message/reason/details are copied to
//! `responseStatus`, as upstream's response writers do.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::SystemTime;

use bytes::{Bytes, BytesMut};
use futures::FutureExt;
use futures::stream::{self, BoxStream, StreamExt};
use http::StatusCode;
use http_body::{Body as HttpBody, Frame, SizeHint};
use http_body_util::{BodyExt, BodyStream, StreamBody};

use super::{Filter, Next};
use crate::audit::auditor::apply_context;
use crate::audit::event::{
    ResponseStatus, compact_json, is_json_content_type, strip_managed_fields,
};
use crate::audit::policy::AuditAttributes;
use crate::audit::{AuditContext, Auditor, Event, Level, Stage};
use crate::body::{Body, BoxError, Request, Response, boxed, full, go_http_error};
use crate::request::{LongRunning, ReceivedTimestamp};

/// The largest request body recorded (the API's request size limit is 3 MiB).
pub const MAX_REQUEST_CAPTURE: usize = 3 * 1024 * 1024;
/// The largest response body recorded as `responseObject`.
pub const MAX_RESPONSE_CAPTURE: usize = 10 * 1024 * 1024;
/// The largest response body inspected for a `Status` when bodies are not recorded.
const MAX_STATUS_CAPTURE: usize = 64 * 1024;

/// The audit filter.
#[derive(Clone, Debug)]
pub struct AuditFilter {
    auditor: Arc<Auditor>,
}

impl AuditFilter {
    /// A filter sending events through `auditor`.
    pub fn new(auditor: Arc<Auditor>) -> Self {
        AuditFilter { auditor }
    }
}

impl Filter for AuditFilter {
    fn call(&self, req: Request, next: Next) -> impl Future<Output = Response> + Send + 'static {
        let auditor = self.auditor.clone();
        async move { audit(auditor, req, next).await }
    }
}

async fn audit(auditor: Arc<Auditor>, req: Request, next: Next) -> Response {
    let (mut parts, body) = req.into_parts();
    let attrs = AuditAttributes::from_parts(&parts);
    let config = auditor.evaluate(&attrs);
    if config.level == Level::None {
        return next.run(Request::from_parts(parts, body)).await;
    }
    let context = match parts.extensions.get::<Arc<AuditContext>>() {
        Some(c) => c.clone(),
        None => {
            // The audit-init filter normally runs first; without it, still give the
            // request an ID so its events can be correlated.
            let c = AuditContext::new(uuid::Uuid::new_v4().to_string());
            parts.extensions.insert(c.clone());
            c
        }
    };
    let received = parts
        .extensions
        .get::<ReceivedTimestamp>()
        .map(|t| t.wall)
        .unwrap_or_else(SystemTime::now);
    let long_running = parts.extensions.get::<LongRunning>().is_some_and(|l| l.0);
    let mut event = Event::from_request(&parts, &attrs, config.level, &context.audit_id, received);
    apply_context(&mut event, Some(&context));
    event.stage = Stage::RequestReceived;
    if !auditor.emit(&mut event, &config.omit_stages) {
        crate::audit::metrics::observe_rejected_request();
        let uri = parts
            .uri
            .path_and_query()
            .map(|pq| pq.as_str())
            .unwrap_or("");
        return go_http_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("Internal Server Error: {uri:?}: failed to store audit event"),
        );
    }

    // Streaming (long-running) requests are never buffered: their bodies may not end.
    let body = if config.level.at_least(Level::Request)
        && !long_running
        && is_json_content_type(parts.headers.get(http::header::CONTENT_TYPE))
        && content_length(&parts.headers).is_none_or(|n| n <= MAX_REQUEST_CAPTURE as u64)
    {
        let (body, captured) = capture_request_body(body, MAX_REQUEST_CAPTURE).await;
        if let Some(bytes) = captured.filter(|b| !b.is_empty()) {
            event.request_object = compact_json(&bytes).map(|raw| {
                if config.omit_managed_fields {
                    strip_managed_fields(raw)
                } else {
                    raw
                }
            });
        }
        body
    } else {
        body
    };

    let outcome = AssertUnwindSafe(next.run(Request::from_parts(parts, body)))
        .catch_unwind()
        .await;
    let response = match outcome {
        Ok(response) => response,
        Err(panic) => {
            event.stage = Stage::Panic;
            event.response_status = Some(ResponseStatus {
                status: "Failure".to_string(),
                reason: "InternalError".to_string(),
                message: format!("APIServer panic'd: {}", panic_message(panic.as_ref())),
                ..ResponseStatus::code(500)
            });
            apply_context(&mut event, Some(&context));
            auditor.emit(&mut event, &config.omit_stages);
            std::panic::resume_unwind(panic);
        }
    };

    let code = response.status().as_u16();
    event.response_status = Some(ResponseStatus::code(code));
    if long_running {
        apply_context(&mut event, Some(&context));
        event.stage = Stage::ResponseStarted;
        auditor.emit(&mut event, &config.omit_stages);
    }
    let capture_limit = if long_running
        || !is_json_content_type(response.headers().get(http::header::CONTENT_TYPE))
    {
        None
    } else if config.level.at_least(Level::RequestResponse) {
        Some(MAX_RESPONSE_CAPTURE)
    } else if code >= 300 || event.verb.starts_with("delete") {
        // Only failures and deletes answer with a Status worth copying; other bodies are
        // not inspected at this level.
        Some(MAX_STATUS_CAPTURE)
    } else {
        None
    };
    let completion = Completion {
        auditor,
        event,
        omit_stages: config.omit_stages,
        context,
        record_response: config.level.at_least(Level::RequestResponse),
        omit_managed_fields: config.omit_managed_fields,
        capture: capture_limit.map(|limit| Capture {
            buf: BytesMut::new(),
            limit,
            overflowed: false,
        }),
    };
    response.map(|body| {
        boxed(AuditedBody {
            inner: body,
            completion: Some(completion),
        })
    })
}

fn content_length(headers: &http::HeaderMap) -> Option<u64> {
    headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse().ok())
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

/// What remains of a request body after its beginning was read.
enum Tail {
    Done,
    Rest(Body),
    Error(BoxError),
}

/// Reads the body (up to `limit` bytes) and returns an equivalent body to pass on, plus the
/// bytes when the whole body was read without error.
async fn capture_request_body(mut body: Body, limit: usize) -> (Body, Option<Bytes>) {
    let mut frames: Vec<Frame<Bytes>> = Vec::new();
    let mut buf = BytesMut::new();
    let tail = loop {
        match body.frame().await {
            None => break Tail::Done,
            Some(Err(e)) => break Tail::Error(e),
            Some(Ok(frame)) => {
                if let Some(data) = frame.data_ref() {
                    buf.extend_from_slice(data);
                }
                let is_trailers = frame.is_trailers();
                frames.push(frame);
                if is_trailers {
                    break Tail::Done;
                }
                if buf.len() > limit {
                    break Tail::Rest(body);
                }
            }
        }
    };
    let all_data = frames.iter().all(|f| f.is_data());
    match tail {
        // The common case: a complete body without trailers is re-attached in one piece,
        // keeping an exact size hint for the handler.
        Tail::Done if all_data => {
            let bytes = buf.freeze();
            (full(bytes.clone()), Some(bytes))
        }
        Tail::Done => (replay(frames, Tail::Done), Some(buf.freeze())),
        tail => (replay(frames, tail), None),
    }
}

fn replay(frames: Vec<Frame<Bytes>>, tail: Tail) -> Body {
    let head = stream::iter(frames.into_iter().map(Ok::<_, BoxError>));
    let rest: BoxStream<'static, Result<Frame<Bytes>, BoxError>> = match tail {
        Tail::Done => stream::empty().boxed(),
        Tail::Rest(body) => StreamExt::boxed(BodyStream::new(body)),
        Tail::Error(e) => stream::once(async move { Err(e) }).boxed(),
    };
    boxed(StreamBody::new(head.chain(rest)))
}

/// Response bytes kept for the event.
struct Capture {
    buf: BytesMut,
    limit: usize,
    overflowed: bool,
}

/// The pending `ResponseComplete` event; emitted when the body ends or is dropped.
struct Completion {
    auditor: Arc<Auditor>,
    event: Event,
    omit_stages: Vec<Stage>,
    context: Arc<AuditContext>,
    record_response: bool,
    omit_managed_fields: bool,
    capture: Option<Capture>,
}

impl Completion {
    fn observe(&mut self, data: &Bytes) {
        if let Some(capture) = &mut self.capture
            && !capture.overflowed
        {
            if capture.buf.len() + data.len() > capture.limit {
                capture.overflowed = true;
                capture.buf = BytesMut::new();
            } else {
                capture.buf.extend_from_slice(data);
            }
        }
    }

    fn finish(mut self) {
        if let Some(capture) = self.capture.take()
            && !capture.overflowed
            && !capture.buf.is_empty()
        {
            if let Some(status) = &mut self.event.response_status {
                status.merge_status_body(&capture.buf);
            }
            if self.record_response {
                self.event.response_object = compact_json(&capture.buf).map(|raw| {
                    if self.omit_managed_fields {
                        strip_managed_fields(raw)
                    } else {
                        raw
                    }
                });
            }
        }
        apply_context(&mut self.event, Some(&self.context));
        self.event.stage = Stage::ResponseComplete;
        self.auditor.emit(&mut self.event, &self.omit_stages);
    }
}

/// A response body that emits `ResponseComplete` when it ends, fails, or is dropped.
struct AuditedBody {
    inner: Body,
    completion: Option<Completion>,
}

impl AuditedBody {
    fn complete(&mut self) {
        if let Some(completion) = self.completion.take() {
            completion.finish();
        }
    }
}

impl HttpBody for AuditedBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let (Some(data), Some(completion)) = (frame.data_ref(), &mut this.completion) {
                    completion.observe(data);
                }
            }
            Poll::Ready(None) | Poll::Ready(Some(Err(_))) => this.complete(),
            Poll::Pending => {}
        }
        if this.inner.is_end_stream() {
            this.complete();
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

impl Drop for AuditedBody {
    fn drop(&mut self) {
        // A body never polled to its end (client gone, handler aborted) still yields
        // the ResponseComplete event.
        self.complete();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::buffered::tests::MemoryBackend;
    use crate::audit::policy::{Policy, PolicyRule};
    use crate::body::{empty, with_content_type};
    use crate::filters::audit_init::{AUDIT_ID_HEADER, AuditInitFilter};
    use crate::filters::{FilterLayer, HttpService, service_fn};
    use crate::request::{AuthenticatedUser, RequestInfo, UserInfo};
    use tower::{Layer, ServiceExt};

    fn auditor(level: Level, omit: Vec<Stage>) -> (Arc<Auditor>, Arc<MemoryBackend>) {
        let memory = Arc::new(MemoryBackend::default());
        let policy = Policy {
            rules: vec![PolicyRule {
                level: Some(level),
                omit_stages: omit,
                ..Default::default()
            }],
            ..Default::default()
        };
        (Auditor::new(policy, memory.clone()), memory)
    }

    fn chain(auditor: Arc<Auditor>, handler: HttpService) -> HttpService {
        let audited = FilterLayer::new(AuditFilter::new(auditor)).layer(handler);
        FilterLayer::new(AuditInitFilter::new()).layer(audited)
    }

    fn request(method: &str, uri: &str, long_running: bool) -> http::request::Builder {
        let mut b = http::Request::builder().method(method).uri(uri);
        let ext = b.extensions_mut().unwrap();
        ext.insert(RequestInfo {
            is_resource_request: true,
            path: uri.split('?').next().unwrap().to_string(),
            verb: if long_running { "watch" } else { "get" }.into(),
            api_prefix: "api".into(),
            api_version: "v1".into(),
            namespace: "default".into(),
            resource: "pods".into(),
            ..Default::default()
        });
        ext.insert(LongRunning(long_running));
        ext.insert(AuthenticatedUser(Arc::new(UserInfo {
            name: "admin".into(),
            groups: vec!["system:masters".into()],
            ..Default::default()
        })));
        b
    }

    fn stages(events: &[Event]) -> Vec<(Stage, Option<u16>)> {
        events
            .iter()
            .map(|e| (e.stage, e.response_status.as_ref().map(|s| s.code)))
            .collect()
    }

    fn ok_handler() -> HttpService {
        service_fn(|req: Request| async move {
            let ctx = req.extensions().get::<Arc<AuditContext>>().unwrap();
            ctx.add_annotation("authorization.k8s.io/decision", "allow");
            ctx.set_impersonated_user(UserInfo {
                name: "bob".into(),
                ..Default::default()
            });
            with_content_type(StatusCode::OK, "application/json", r#"{"kind":"Pod"}"#)
        })
    }

    #[tokio::test]
    async fn normal_request_stages() {
        let (auditor, memory) = auditor(Level::Metadata, vec![]);
        let svc = chain(auditor, ok_handler());
        let resp = svc
            .oneshot(
                request("GET", "/api/v1/namespaces/default/pods?limit=1", false)
                    .body(empty())
                    .unwrap(),
            )
            .await
            .unwrap();
        let audit_id = resp.headers()[AUDIT_ID_HEADER]
            .to_str()
            .unwrap()
            .to_string();
        // ResponseComplete comes only once the body is sent.
        assert_eq!(
            stages(&memory.events()),
            vec![(Stage::RequestReceived, None)]
        );
        resp.into_body().collect().await.unwrap();
        let events = memory.events();
        assert_eq!(
            stages(&events),
            vec![
                (Stage::RequestReceived, None),
                (Stage::ResponseComplete, Some(200))
            ]
        );
        let complete = &events[1];
        assert_eq!(complete.audit_id, audit_id);
        assert_eq!(complete.verb, "get");
        assert_eq!(
            complete.request_uri,
            "/api/v1/namespaces/default/pods?limit=1"
        );
        assert_eq!(complete.user.username, "admin");
        assert_eq!(complete.impersonated_user.as_ref().unwrap().username, "bob");
        assert_eq!(
            complete.annotations["authorization.k8s.io/decision"],
            "allow"
        );
        assert_eq!(complete.object_ref.as_ref().unwrap().resource, "pods");
        assert!(complete.response_object.is_none(), "no bodies at Metadata");
        assert!(events[0].annotations.is_empty() && events[0].impersonated_user.is_none());
        assert_eq!(
            events[0].stage_timestamp,
            events[0].request_received_timestamp
        );
    }

    #[tokio::test]
    async fn long_running_request_stages() {
        let (auditor, memory) = auditor(Level::Metadata, vec![]);
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<Frame<Bytes>, BoxError>>(1);
        let rx = Arc::new(std::sync::Mutex::new(Some(rx)));
        let handler = service_fn(move |_req: Request| {
            let rx = rx.lock().unwrap().take().unwrap();
            async move {
                let stream = futures::stream::unfold(rx, |mut rx| async move {
                    rx.recv().await.map(|item| (item, rx))
                });
                http::Response::new(boxed(StreamBody::new(stream)))
            }
        });
        let svc = chain(auditor, handler);
        let resp = svc
            .oneshot(
                request("GET", "/api/v1/pods?watch=true", true)
                    .body(empty())
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(
            stages(&memory.events()),
            vec![
                (Stage::RequestReceived, None),
                (Stage::ResponseStarted, Some(200))
            ]
        );
        let mut body = resp.into_body();
        tx.send(Ok(Frame::data(Bytes::from_static(b"{}\n"))))
            .await
            .unwrap();
        body.frame().await.unwrap().unwrap();
        assert_eq!(memory.events().len(), 2);
        drop(tx);
        assert!(body.frame().await.is_none());
        assert_eq!(
            stages(&memory.events()),
            vec![
                (Stage::RequestReceived, None),
                (Stage::ResponseStarted, Some(200)),
                (Stage::ResponseComplete, Some(200))
            ]
        );
    }

    #[tokio::test]
    async fn panic_is_audited_and_resumed() {
        let (auditor, memory) = auditor(Level::Metadata, vec![]);
        let handler = service_fn(|_req: Request| async move {
            if true {
                panic!("boom");
            }
            http::Response::new(empty())
        });
        let svc = chain(auditor, handler);
        let outcome = AssertUnwindSafe(
            svc.oneshot(request("GET", "/api/v1/pods", false).body(empty()).unwrap()),
        )
        .catch_unwind()
        .await;
        let Err(panic) = outcome else {
            panic!("the panic propagates")
        };
        assert_eq!(panic_message(panic.as_ref()), "boom");
        let events = memory.events();
        assert_eq!(
            stages(&events),
            vec![(Stage::RequestReceived, None), (Stage::Panic, Some(500))]
        );
        let status = events[1].response_status.as_ref().unwrap();
        assert_eq!(status.message, "APIServer panic'd: boom");
        assert_eq!(status.reason, "InternalError");
        assert_eq!(status.status, "Failure");
    }

    #[tokio::test]
    async fn level_none_emits_nothing_but_keeps_audit_id() {
        let (auditor, memory) = auditor(Level::None, vec![]);
        let svc = chain(auditor, ok_handler());
        let resp = svc
            .oneshot(
                request("GET", "/api/v1/pods", false)
                    .header("Audit-ID", "given")
                    .body(empty())
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(resp.headers()[AUDIT_ID_HEADER], "given");
        resp.into_body().collect().await.unwrap();
        assert!(memory.events().is_empty());
    }

    #[tokio::test]
    async fn omitted_stages_are_skipped() {
        let (auditor, memory) = auditor(Level::Metadata, vec![Stage::RequestReceived]);
        let svc = chain(auditor, ok_handler());
        let resp = svc
            .oneshot(request("GET", "/api/v1/pods", false).body(empty()).unwrap())
            .await
            .unwrap();
        resp.into_body().collect().await.unwrap();
        assert_eq!(
            stages(&memory.events()),
            vec![(Stage::ResponseComplete, Some(200))]
        );
    }

    #[tokio::test]
    async fn dropped_body_still_completes() {
        let (auditor, memory) = auditor(Level::Metadata, vec![]);
        let svc = chain(auditor, ok_handler());
        let resp = svc
            .oneshot(request("GET", "/api/v1/pods", false).body(empty()).unwrap())
            .await
            .unwrap();
        drop(resp);
        assert_eq!(
            stages(&memory.events()),
            vec![
                (Stage::RequestReceived, None),
                (Stage::ResponseComplete, Some(200))
            ]
        );
    }

    #[tokio::test]
    async fn request_and_response_bodies_are_recorded() {
        let (auditor, memory) = auditor(Level::RequestResponse, vec![]);
        let handler = service_fn(|req: Request| async move {
            let body = req.into_body().collect().await.unwrap().to_bytes();
            assert_eq!(&body[..], b"{\"kind\": \"Pod\",\n \"metadata\": {}}");
            with_content_type(
                StatusCode::CONFLICT,
                "application/json",
                r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods \"x\" already exists","reason":"AlreadyExists","details":{"name":"x","kind":"pods"},"code":409}"#,
            )
        });
        let svc = chain(auditor, handler);
        let resp = svc
            .oneshot(
                request("POST", "/api/v1/namespaces/default/pods", false)
                    .header("Content-Type", "application/json")
                    .body(full("{\"kind\": \"Pod\",\n \"metadata\": {}}"))
                    .unwrap(),
            )
            .await
            .unwrap();
        resp.into_body().collect().await.unwrap();
        let events = memory.events();
        assert!(
            events[0].request_object.is_none(),
            "not known at RequestReceived"
        );
        let complete = &events[1];
        assert_eq!(
            complete.request_object.as_ref().unwrap().get(),
            r#"{"kind":"Pod","metadata":{}}"#
        );
        assert!(
            complete
                .response_object
                .as_ref()
                .unwrap()
                .get()
                .contains("AlreadyExists")
        );
        let json = complete.to_json().unwrap();
        assert!(
            json.contains(r#""responseStatus":{"metadata":{},"status":"Failure","message":"pods \"x\" already exists","reason":"AlreadyExists","details":{"name":"x","kind":"pods"},"code":409}"#),
            "{json}"
        );
    }

    #[tokio::test]
    async fn omit_managed_fields_strips_bodies() {
        let memory = Arc::new(MemoryBackend::default());
        let policy = Policy {
            omit_managed_fields: true,
            rules: vec![PolicyRule {
                level: Some(Level::RequestResponse),
                ..Default::default()
            }],
            ..Default::default()
        };
        let handler = service_fn(|_req: Request| async move {
            with_content_type(
                StatusCode::OK,
                "application/json",
                r#"{"kind":"Pod","metadata":{"name":"p","managedFields":[{}]}}"#,
            )
        });
        let svc = chain(Auditor::new(policy, memory.clone()), handler);
        let resp = svc
            .oneshot(
                request("PUT", "/api/v1/namespaces/default/pods/p", false)
                    .header("Content-Type", "application/json")
                    .body(full(r#"{"metadata":{"managedFields":[],"name":"p"}}"#))
                    .unwrap(),
            )
            .await
            .unwrap();
        resp.into_body().collect().await.unwrap();
        let complete = &memory.events()[1];
        assert_eq!(
            complete.request_object.as_ref().unwrap().get(),
            r#"{"metadata":{"name":"p"}}"#
        );
        assert_eq!(
            complete.response_object.as_ref().unwrap().get(),
            r#"{"kind":"Pod","metadata":{"name":"p"}}"#
        );
    }

    #[tokio::test]
    async fn metadata_level_records_status_but_no_bodies() {
        let (auditor, memory) = auditor(Level::Metadata, vec![]);
        let handler = service_fn(|_req: Request| async move {
            with_content_type(
                StatusCode::FORBIDDEN,
                "application/json",
                r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"denied","reason":"Forbidden","code":403}"#,
            )
        });
        let svc = chain(auditor, handler);
        let resp = svc
            .oneshot(
                request("POST", "/api/v1/namespaces/default/pods", false)
                    .header("Content-Type", "application/json")
                    .body(full("{}"))
                    .unwrap(),
            )
            .await
            .unwrap();
        resp.into_body().collect().await.unwrap();
        let complete = &memory.events()[1];
        assert!(complete.request_object.is_none() && complete.response_object.is_none());
        let status = complete.response_status.as_ref().unwrap();
        assert_eq!((status.code, status.message.as_str()), (403, "denied"));
    }

    #[tokio::test]
    async fn large_request_bodies_pass_through_uncaptured() {
        let (auditor, memory) = auditor(Level::Request, vec![]);
        let size = MAX_REQUEST_CAPTURE + 10;
        let handler = service_fn(move |req: Request| async move {
            let body = req.into_body().collect().await.unwrap().to_bytes();
            assert_eq!(body.len(), size);
            http::Response::new(empty())
        });
        let svc = chain(auditor, handler);
        let chunks: Vec<Result<Frame<Bytes>, BoxError>> = (0..size / 1024 + 1)
            .map(|i| {
                let n = if i == size / 1024 { size % 1024 } else { 1024 };
                Ok(Frame::data(Bytes::from(vec![b' '; n])))
            })
            .collect();
        let body = boxed(StreamBody::new(futures::stream::iter(chunks)));
        let resp = svc
            .oneshot(
                request("POST", "/api/v1/namespaces/default/pods", false)
                    .header("Content-Type", "application/json")
                    .body(body)
                    .unwrap(),
            )
            .await
            .unwrap();
        resp.into_body().collect().await.unwrap();
        assert!(memory.events()[1].request_object.is_none());
    }

    #[derive(Debug)]
    struct Refusing;

    impl crate::audit::Backend for Refusing {
        fn process_events(&self, _: &[Event]) -> bool {
            false
        }
        fn run(&self) -> Result<(), crate::audit::AuditError> {
            Ok(())
        }
        fn shutdown(&self) -> crate::audit::backend::ShutdownFuture<'_> {
            Box::pin(async {})
        }
        fn name(&self) -> String {
            "refusing".into()
        }
    }

    #[tokio::test]
    async fn unstored_request_received_is_a_500() {
        let policy = Policy {
            rules: vec![PolicyRule {
                level: Some(Level::Metadata),
                ..Default::default()
            }],
            ..Default::default()
        };
        let svc = chain(Auditor::new(policy, Arc::new(Refusing)), ok_handler());
        let resp = svc
            .oneshot(
                request("GET", "/api/v1/pods?x=1", false)
                    .body(empty())
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert!(resp.headers().contains_key(AUDIT_ID_HEADER));
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(
            &body[..],
            b"Internal Server Error: \"/api/v1/pods?x=1\": failed to store audit event\n"
        );
    }
}
