//! The request and response types every handler and filter speaks, and small response builders.

use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};
use http_body_util::{BodyExt, Empty, Full, combinators::UnsyncBoxBody};

/// A boxed error, as bodies and services report them.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The body type used for requests and responses throughout the server.
pub type Body = UnsyncBoxBody<Bytes, BoxError>;

/// A request as seen by filters and handlers.
pub type Request = http::Request<Body>;

/// A response as produced by filters and handlers.
pub type Response = http::Response<Body>;

/// A body holding `bytes` in full.
pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed_unsync()
}

/// An empty body.
pub fn empty() -> Body {
    Empty::<Bytes>::new()
        .map_err(|never| match never {})
        .boxed_unsync()
}

/// Boxes any body whose error converts into [`BoxError`].
pub fn boxed<B>(body: B) -> Body
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    body.map_err(Into::into).boxed_unsync()
}

/// `text/plain; charset=utf-8`, the content type Go's `http.Error` sets.
pub const TEXT_PLAIN_UTF8: &str = "text/plain; charset=utf-8";

/// The equivalent of Go's `http.Error`: status `code`, `text/plain; charset=utf-8`,
/// `X-Content-Type-Options: nosniff`, and `message` followed by one newline.
pub fn go_http_error(code: StatusCode, message: &str) -> Response {
    let mut text = String::with_capacity(message.len() + 1);
    text.push_str(message);
    text.push('\n');
    let mut response = http::Response::new(full(text));
    *response.status_mut() = code;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(TEXT_PLAIN_UTF8),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

/// A response with the given status, content type and body.
pub fn with_content_type(
    code: StatusCode,
    content_type: &'static str,
    body: impl Into<Bytes>,
) -> Response {
    let mut response = http::Response::new(full(body));
    *response.status_mut() = code;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// Go's `http.NotFound`: 404 with body `404 page not found\n`.
pub fn go_not_found() -> Response {
    go_http_error(StatusCode::NOT_FOUND, "404 page not found")
}

/// Reads a whole body into memory, at most `limit` bytes (0 = unlimited). Returns `Ok(None)`
/// when the body is larger than the limit.
pub async fn read_limited(body: Body, limit: usize) -> Result<Option<Bytes>, BoxError> {
    let mut body = body;
    let mut buf = bytes::BytesMut::new();
    while let Some(frame) = body.frame().await {
        let frame = frame?;
        if let Ok(data) = frame.into_data() {
            buf.extend_from_slice(&data);
            if limit > 0 && buf.len() > limit {
                return Ok(None);
            }
        }
    }
    Ok(Some(buf.freeze()))
}
