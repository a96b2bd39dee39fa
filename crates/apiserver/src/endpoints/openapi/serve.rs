//! Serving a cached document the way Go's `http.ServeContent` does for the OpenAPI handlers:
//! `Etag`, `Last-Modified`, `If-None-Match` / `If-Modified-Since` → 304, `HEAD` without a body,
//! and the optional gzip wrapper of `/openapi/v2` (NYTimes `gziphandler`, minimum size 1400).

use std::io::Write;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use jiff::Timestamp;

use crate::body::{Response, empty, full};

/// gziphandler's `DefaultMinSize`: smaller bodies are sent uncompressed.
const GZIP_MIN_SIZE: usize = 1400;

/// `http.TimeFormat` (`Mon, 02 Jan 2006 15:04:05 GMT`).
pub(crate) fn http_date(ts: Timestamp) -> String {
    ts.to_zoned(jiff::tz::TimeZone::UTC)
        .strftime("%a, %d %b %Y %H:%M:%S GMT")
        .to_string()
}

/// Go's `time.RFC1123` of a UTC time (`Mon, 02 Jan 2006 15:04:05 UTC`), as `Expires` is written.
pub(crate) fn rfc1123_utc(ts: Timestamp) -> String {
    ts.to_zoned(jiff::tz::TimeZone::UTC)
        .strftime("%a, %d %b %Y %H:%M:%S UTC")
        .to_string()
}

/// A document ready to be served.
pub(crate) struct Content<'a> {
    /// The `Content-Type` of `data`.
    pub content_type: &'static str,
    /// The bytes.
    pub data: Bytes,
    /// The unquoted entity tag.
    pub etag: &'a str,
    /// When the document last changed.
    pub last_modified: Timestamp,
}

/// Whether `If-None-Match` matches `etag` (weak comparison, `*` matches anything).
fn none_match(headers: &HeaderMap, quoted_etag: &str) -> Option<bool> {
    let values: Vec<&str> = headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    if values.is_empty() {
        return None;
    }
    Some(
        values
            .iter()
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .any(|tag| tag == "*" || tag.trim_start_matches("W/") == quoted_etag),
    )
}

/// Whether `If-Modified-Since` says the client's copy is current (second precision, as Go).
fn not_modified_since(headers: &HeaderMap, last_modified: Timestamp) -> bool {
    let Some(since) = headers
        .get(header::IF_MODIFIED_SINCE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| jiff::fmt::rfc2822::parse(v).ok())
    else {
        return false;
    };
    last_modified.as_second() <= since.timestamp().as_second()
}

/// Serves `content` for `req`, adding `Etag` and `Last-Modified` to `headers` already set by the
/// caller (`Vary`, caching headers).
pub(crate) fn serve_content<B>(
    req: &http::Request<B>,
    mut headers: HeaderMap,
    content: Content<'_>,
) -> Response {
    let quoted = format!("\"{}\"", content.etag);
    if let Ok(value) = HeaderValue::from_str(&quoted) {
        headers.insert(header::ETAG, value);
    }
    let is_get_or_head = req.method() == Method::GET || req.method() == Method::HEAD;
    let not_modified = match none_match(req.headers(), &quoted) {
        Some(matched) => matched && is_get_or_head,
        None => is_get_or_head && not_modified_since(req.headers(), content.last_modified),
    };
    if not_modified {
        // Go's writeNotModified drops the entity headers, and Last-Modified when an Etag is set.
        headers.remove(header::CONTENT_TYPE);
        headers.remove(header::CONTENT_LENGTH);
        headers.remove(header::CONTENT_ENCODING);
        let mut response = http::Response::new(empty());
        *response.status_mut() = StatusCode::NOT_MODIFIED;
        *response.headers_mut() = headers;
        return response;
    }
    if let Ok(value) = HeaderValue::from_str(&http_date(content.last_modified)) {
        headers.insert(header::LAST_MODIFIED, value);
    }
    if !headers.contains_key(header::CONTENT_TYPE) {
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(content.content_type),
        );
    }
    headers.insert(
        header::CONTENT_LENGTH,
        HeaderValue::from(content.data.len()),
    );
    let body = if req.method() == Method::HEAD {
        empty()
    } else {
        full(content.data)
    };
    let mut response = http::Response::new(body);
    *response.headers_mut() = headers;
    response
}

/// Whether the client accepts gzip (`Accept-Encoding` lists `gzip`).
pub(crate) fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|enc| enc.split(';').next().unwrap_or_default().trim() == "gzip")
}

/// The gzip wrapper of `/openapi/v2`: `Vary: Accept-Encoding` whenever the client accepts gzip,
/// and a compressed body when it is at least [`GZIP_MIN_SIZE`] bytes.
pub(crate) async fn gzip_response(accepts: bool, response: Response) -> Response {
    use http_body_util::BodyExt;

    if !accepts {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    parts
        .headers
        .append(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    let data = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => Bytes::new(),
    };
    if data.len() < GZIP_MIN_SIZE {
        return http::Response::from_parts(parts, full(data));
    }
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    match encoder.write_all(&data).and_then(|()| encoder.finish()) {
        Ok(compressed) => {
            parts
                .headers
                .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
            parts.headers.remove(header::CONTENT_LENGTH);
            http::Response::from_parts(parts, full(compressed))
        }
        Err(err) => {
            tracing::warn!(%err, "cannot gzip the OpenAPI document, sending it uncompressed");
            http::Response::from_parts(parts, full(data))
        }
    }
}

/// Go's `http.Redirect` for a `GET`: the status, `Location`, and a tiny HTML body.
pub(crate) fn redirect<B>(
    req: &http::Request<B>,
    mut headers: HeaderMap,
    location: &str,
    code: StatusCode,
) -> Response {
    if let Ok(value) = HeaderValue::from_str(location) {
        headers.insert(header::LOCATION, value);
    }
    let body = if req.method() == Method::GET || req.method() == Method::HEAD {
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        );
        if req.method() == Method::GET {
            let text = format!(
                "<a href=\"{}\">{}</a>.\n\n",
                html_escape(location),
                code.canonical_reason().unwrap_or_default()
            );
            full(text)
        } else {
            empty()
        }
    } else {
        empty()
    };
    let mut response = http::Response::new(body);
    *response.status_mut() = code;
    *response.headers_mut() = headers;
    response
}

/// Go's `html.EscapeString` subset used by `http.Redirect`.
fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '\'' => out.push_str("&#39;"),
            '"' => out.push_str("&#34;"),
            c => out.push(c),
        }
    }
    out
}
