//! WATCH (upstream `handlers/watch.go`): a chunked stream of JSON lines
//! `{"type":"ADDED","object":{…}}` (or, for protobuf, length-prefixed `WatchEvent` messages,
//! `application/vnd.kubernetes.protobuf;stream=watch`), one frame per event, ending at `timeoutSeconds` (else a
//! random time between the minimum request timeout and twice it), when the storage ends the
//! watch, after an `ERROR` event, or when the server shuts down.

use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use http::{HeaderValue, StatusCode, header};
use http_body::Frame;
use http_body_util::StreamBody;
use tokio_util::sync::CancellationToken;

use super::encode::{Output, Transform, error_response, negotiate_with, serialize, transform};
use super::options::{Query, default_watch_list, list_options, validate_list_options};
use super::table::{is_initial_events_end, partial_object_metadata};
use super::{RequestParts, ResourceScope};
use crate::body::{BoxError, Response, boxed};
use crate::endpoints::negotiation::{JSON, PROTOBUF, not_acceptable};
use crate::endpoints::protobuf::{PROTOBUF_WATCH_MEDIA_TYPE, watch_frame};
use crate::registry::rest::{ObjectEvent, ObjectWatch};
use crate::status::{ApiError, Status};
use crate::util::gojson;

/// How long a watch lasts: `timeoutSeconds` when given, else `min × (1 + rand[0,1))` as
/// upstream spreads reconnects.
pub fn watch_timeout(timeout_seconds: Option<i64>, min_request_timeout: Duration) -> Duration {
    match timeout_seconds {
        Some(seconds) if seconds > 0 => Duration::from_secs(seconds.unsigned_abs()),
        _ => min_request_timeout.mul_f64(1.0 + rand::random::<f64>()),
    }
}

/// `GET <collection>?watch=true` (or the legacy `/watch/` paths).
pub async fn watch(scope: &ResourceScope, parts: RequestParts) -> Result<Response, ApiError> {
    // Only serializers with a stream framing can watch; YAML has none (406).
    let output = match negotiate_with(scope, &parts, &[JSON, PROTOBUF]) {
        Ok(output) => output,
        Err(_) => {
            return Ok(error_response(
                &parts.headers,
                not_acceptable(&[JSON, PROTOBUF]),
            ));
        }
    };
    let mut opts = list_options(&Query::parse(parts.query()))?;
    opts.watch = true;
    if !parts.info.name.is_empty() {
        merge_name_selector(&mut opts.field_selector, &parts.info.name)?;
    }
    default_watch_list(&mut opts);
    validate_list_options(&opts)?;
    let events = scope.storage.watch(&parts.ctx, &opts).await?;
    let timeout = watch_timeout(opts.timeout_seconds, scope.config.min_request_timeout);
    let state = WatchState {
        events,
        deadline: Box::pin(tokio::time::sleep(timeout)),
        shutdown: parts.shutdown.clone(),
        scope: scope.clone(),
        output: output.clone(),
        first: true,
        done: false,
    };
    let stream = futures::stream::unfold(state, next_frame);
    let mut response = http::Response::new(boxed(StreamBody::new(stream)));
    *response.status_mut() = StatusCode::OK;
    // Upstream appends `;stream=watch` to every media type but JSON.
    let media_type = if output.serializer == PROTOBUF {
        PROTOBUF_WATCH_MEDIA_TYPE
    } else {
        output.serializer.media_type
    };
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(media_type));
    Ok(response)
}

/// The URL name of a single-object watch becomes `metadata.name=<name>` in the field selector;
/// a selector asking for another name is a 400.
fn merge_name_selector(selector: &mut String, name: &str) -> Result<(), ApiError> {
    let wanted = format!("metadata.name={name}");
    if selector.is_empty() {
        *selector = wanted;
        return Ok(());
    }
    for requirement in selector.split(',') {
        let requirement = requirement.trim();
        if let Some(value) = requirement
            .strip_prefix("metadata.name==")
            .or_else(|| requirement.strip_prefix("metadata.name="))
            && value != name
        {
            return Err(ApiError::bad_request(
                "fieldSelector metadata.name doesn't match requested name",
            ));
        }
    }
    selector.push(',');
    selector.push_str(&wanted);
    Ok(())
}

struct WatchState {
    events: ObjectWatch,
    deadline: Pin<Box<tokio::time::Sleep>>,
    shutdown: Option<CancellationToken>,
    scope: ResourceScope,
    output: Output,
    first: bool,
    done: bool,
}

async fn shutdown_requested(token: &Option<CancellationToken>) {
    match token {
        Some(token) => token.cancelled().await,
        None => std::future::pending().await,
    }
}

type FrameResult = Result<Frame<Bytes>, BoxError>;

async fn next_frame(mut state: WatchState) -> Option<(FrameResult, WatchState)> {
    loop {
        if state.done {
            return None;
        }
        let event = tokio::select! {
            biased;
            _ = shutdown_requested(&state.shutdown) => return None,
            _ = &mut state.deadline => return None,
            event = state.events.next() => event?,
        };
        if matches!(event, ObjectEvent::Error(_)) {
            state.done = true;
        }
        match encode_event(&state.scope, &state.output, event, state.first) {
            Ok(Some(line)) => {
                state.first = false;
                return Some((Ok(Frame::data(Bytes::from(line))), state));
            }
            Ok(None) => continue,
            Err(err) => {
                tracing::warn!("dropping a watch event that could not be encoded: {err}");
                continue;
            }
        }
    }
}

/// One event as a JSON line (or a protobuf frame), after the requested transform.
pub fn encode_event(
    scope: &ResourceScope,
    output: &Output,
    event: ObjectEvent,
    first: bool,
) -> Result<Option<Vec<u8>>, ApiError> {
    let (kind, object) = match event {
        ObjectEvent::Added(o) => ("ADDED", o),
        ObjectEvent::Modified(o) => ("MODIFIED", o),
        ObjectEvent::Deleted(o) => ("DELETED", o),
        ObjectEvent::Bookmark(o) => ("BOOKMARK", o),
        ObjectEvent::Error(err) => {
            let status: Status = err.into();
            if output.serializer == PROTOBUF {
                let value = serde_json::to_value(&status).map_err(ApiError::internal)?;
                return Ok(Some(watch_frame("ERROR", &serialize(&value, output)?)));
            }
            let object = gojson::to_line(&status).map_err(ApiError::internal)?;
            return Ok(Some(frame_line("ERROR", &object)));
        }
    };
    let object = match &output.transform {
        // The initial-events-end bookmark is always reduced to its metadata.
        Transform::Table(version) if kind == "BOOKMARK" && is_initial_events_end(&object) => {
            partial_object_metadata(&object, version)
        }
        Transform::PartialObjectMetadata(version)
        | Transform::PartialObjectMetadataList(version) => {
            partial_object_metadata(&object, version)
        }
        _ => transform(scope, object, false, output, first)?,
    };
    let encoded = serialize(
        &object,
        &Output {
            pretty: false,
            ..output.clone()
        },
    )?;
    if output.serializer == PROTOBUF {
        return Ok(Some(watch_frame(kind, &encoded)));
    }
    Ok(Some(frame_line(kind, &encoded)))
}

/// `{"type":"<kind>","object":<object>}\n` (upstream's `WatchEvent` key order).
fn frame_line(kind: &str, object_line: &[u8]) -> Vec<u8> {
    let object = object_line.strip_suffix(b"\n").unwrap_or(object_line);
    let mut line = Vec::with_capacity(object.len() + kind.len() + 24);
    line.extend_from_slice(b"{\"type\":\"");
    line.extend_from_slice(kind.as_bytes());
    line.extend_from_slice(b"\",\"object\":");
    line.extend_from_slice(object);
    line.extend_from_slice(b"}\n");
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeout_from_parameter_or_randomised() {
        assert_eq!(
            watch_timeout(Some(5), Duration::from_secs(1800)),
            Duration::from_secs(5)
        );
        for _ in 0..20 {
            let t = watch_timeout(None, Duration::from_secs(100));
            assert!(t >= Duration::from_secs(100) && t < Duration::from_secs(200));
        }
        assert!(watch_timeout(Some(0), Duration::from_secs(10)) >= Duration::from_secs(10));
    }

    #[test]
    fn name_selector_merge() {
        let mut s = String::new();
        merge_name_selector(&mut s, "a").unwrap();
        assert_eq!(s, "metadata.name=a");
        let mut s = "metadata.name=b".to_string();
        let err = merge_name_selector(&mut s, "a").unwrap_err();
        assert_eq!(
            err.0.message,
            "fieldSelector metadata.name doesn't match requested name"
        );
        let mut s = "metadata.namespace=x".to_string();
        merge_name_selector(&mut s, "a").unwrap();
        assert_eq!(s, "metadata.namespace=x,metadata.name=a");
    }

    #[test]
    fn frame_keeps_type_first() {
        assert_eq!(
            frame_line("ADDED", b"{\"a\":1}\n"),
            b"{\"type\":\"ADDED\",\"object\":{\"a\":1}}\n".to_vec()
        );
    }
}
