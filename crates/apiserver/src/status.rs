//! `metav1.Status`: the error (and some success) bodies of the Kubernetes API, and the typed
//! [`ApiError`] that handlers return and that renders to one.
//!
//! The compact JSON encoding keeps upstream's key order (`kind, apiVersion, metadata, status,
//! message, reason, details, code`) and ends with exactly one newline, as the Go JSON serializer
//! does; clients such as the Python client compare this text byte for byte.

use http::{HeaderValue, StatusCode, header};
use serde::{Deserialize, Serialize};

use crate::body::{Response, full};

/// `metav1.ListMeta` as it appears in a `Status` (normally empty, so it encodes as `{}`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListMeta {
    /// Deprecated self link.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub self_link: String,
    /// The resource version of the list.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
    /// The continue token, e.g. the fresh token in a 410 for an expired continue.
    #[serde(default, rename = "continue", skip_serializing_if = "String::is_empty")]
    pub continue_: String,
    /// Items remaining after this page, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remaining_item_count: Option<i64>,
}

/// One cause of a failure (`metav1.StatusCause`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusCause {
    /// Machine-readable reason, e.g. `FieldValueRequired`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Human-readable message.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// The field path, e.g. `spec.replicas`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub field: String,
}

/// `metav1.StatusDetails`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusDetails {
    /// Name of the object concerned.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// API group of the object concerned.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// Kind (or resource) of the object concerned.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// UID of the object concerned.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// Individual causes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<StatusCause>,
    /// Seconds a client should wait before retrying.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retry_after_seconds: i32,
}

fn is_zero(v: &i32) -> bool {
    *v == 0
}

/// `metav1.Status`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// Always `Status` when encoded as an API object; empty for the timeout filter's body.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Always `v1` when encoded as an API object.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// Always present; normally `{}`.
    #[serde(default)]
    pub metadata: ListMeta,
    /// `Success` or `Failure`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub status: String,
    /// Human-readable description.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// Machine-readable reason (`NotFound`, `Forbidden`, …); empty means unknown.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Extended data. Serialized whenever present, even if empty (`"details":{}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<StatusDetails>,
    /// The HTTP status code.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub code: i32,
}

/// Upstream's `metav1.StatusReason` values used by this crate.
pub mod reason {
    /// 400
    pub const BAD_REQUEST: &str = "BadRequest";
    /// 401
    pub const UNAUTHORIZED: &str = "Unauthorized";
    /// 403
    pub const FORBIDDEN: &str = "Forbidden";
    /// 404
    pub const NOT_FOUND: &str = "NotFound";
    /// 405
    pub const METHOD_NOT_ALLOWED: &str = "MethodNotAllowed";
    /// 406
    pub const NOT_ACCEPTABLE: &str = "NotAcceptable";
    /// 409 (create)
    pub const ALREADY_EXISTS: &str = "AlreadyExists";
    /// 409 (update)
    pub const CONFLICT: &str = "Conflict";
    /// 410 (a resource version that was compacted)
    pub const EXPIRED: &str = "Expired";
    /// 410
    pub const GONE: &str = "Gone";
    /// 413
    pub const REQUEST_ENTITY_TOO_LARGE: &str = "RequestEntityTooLarge";
    /// 415
    pub const UNSUPPORTED_MEDIA_TYPE: &str = "UnsupportedMediaType";
    /// 422
    pub const INVALID: &str = "Invalid";
    /// 429
    pub const TOO_MANY_REQUESTS: &str = "TooManyRequests";
    /// 500
    pub const INTERNAL_ERROR: &str = "InternalError";
    /// 503
    pub const SERVICE_UNAVAILABLE: &str = "ServiceUnavailable";
    /// 504
    pub const TIMEOUT: &str = "Timeout";
}

impl Status {
    /// A `Failure` status with the given code, reason and message.
    pub fn failure(code: StatusCode, reason: &str, message: impl Into<String>) -> Self {
        Status {
            kind: "Status".into(),
            api_version: "v1".into(),
            metadata: ListMeta::default(),
            status: "Failure".into(),
            message: message.into(),
            reason: reason.into(),
            details: None,
            code: i32::from(code.as_u16()),
        }
    }

    /// Sets the details.
    pub fn with_details(mut self, details: StatusDetails) -> Self {
        self.details = Some(details);
        self
    }

    /// Compact JSON followed by one newline, as the default Kubernetes JSON serializer writes.
    pub fn to_json_line(&self) -> Vec<u8> {
        // Serializing a plain struct of strings and integers cannot fail.
        crate::util::gojson::to_line(self).unwrap_or_default()
    }

    /// The HTTP status code this Status carries (500 when out of range).
    pub fn http_code(&self) -> StatusCode {
        u16::try_from(self.code)
            .ok()
            .and_then(|c| StatusCode::from_u16(c).ok())
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }

    /// Renders the Status as a JSON response with its own code, setting `Retry-After` when
    /// `details.retryAfterSeconds` is positive (as upstream's `ErrorToAPIStatus` writers do).
    pub fn into_response(self) -> Response {
        let code = self.http_code();
        let retry = self
            .details
            .as_ref()
            .map(|d| d.retry_after_seconds)
            .filter(|s| *s > 0);
        let mut response = http::Response::new(full(self.to_json_line()));
        *response.status_mut() = code;
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if let Some(seconds) = retry {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

/// A typed Kubernetes API error: a `Status` waiting to be written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", .0.message)]
pub struct ApiError(pub Box<Status>);

impl ApiError {
    /// An error with the given code, reason and message.
    pub fn new(code: StatusCode, reason: &str, message: impl Into<String>) -> Self {
        ApiError(Box::new(Status::failure(code, reason, message)))
    }

    /// Adds details.
    pub fn with_details(mut self, details: StatusDetails) -> Self {
        self.0.details = Some(details);
        self
    }

    /// The HTTP code.
    pub fn code(&self) -> StatusCode {
        self.0.http_code()
    }

    /// The reason.
    pub fn reason(&self) -> &str {
        &self.0.reason
    }

    /// 400 BadRequest.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, reason::BAD_REQUEST, message)
    }

    /// 401 Unauthorized with upstream's fixed message.
    pub fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            reason::UNAUTHORIZED,
            "Unauthorized",
        )
    }

    /// 404 NotFound for `<resource>[.<group>] "<name>" not found`.
    pub fn not_found(group: &str, resource: &str, name: &str) -> Self {
        let qualified = qualified_resource(group, resource);
        Self::new(
            StatusCode::NOT_FOUND,
            reason::NOT_FOUND,
            format!("{qualified} \"{name}\" not found"),
        )
        .with_details(StatusDetails {
            name: name.into(),
            group: group.into(),
            kind: resource.into(),
            ..Default::default()
        })
    }

    /// 404 for a path no route claims: `the server could not find the requested resource`.
    pub fn no_route() -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            reason::NOT_FOUND,
            "the server could not find the requested resource",
        )
        .with_details(StatusDetails::default())
    }

    /// 403 Forbidden as upstream's `NewForbidden`: `<resource>[.<group>] ["<name>"] is
    /// forbidden: <why>`, or `forbidden: <why>` without a resource.
    pub fn forbidden(group: &str, resource: &str, name: &str, why: &str) -> Self {
        let message = if group.is_empty() && resource.is_empty() {
            format!("forbidden: {why}")
        } else {
            let qualified = qualified_resource(group, resource);
            if name.is_empty() {
                format!("{qualified} is forbidden: {why}")
            } else {
                // Object names are validated path segments: Rust's quoting is Go's `%q`.
                format!("{qualified} {name:?} is forbidden: {why}")
            }
        };
        Self::new(StatusCode::FORBIDDEN, reason::FORBIDDEN, message).with_details(StatusDetails {
            name: name.into(),
            group: group.into(),
            kind: resource.into(),
            ..Default::default()
        })
    }

    /// 409 AlreadyExists.
    pub fn already_exists(group: &str, resource: &str, name: &str) -> Self {
        let qualified = qualified_resource(group, resource);
        Self::new(
            StatusCode::CONFLICT,
            reason::ALREADY_EXISTS,
            format!("{qualified} \"{name}\" already exists"),
        )
        .with_details(StatusDetails {
            name: name.into(),
            group: group.into(),
            kind: resource.into(),
            ..Default::default()
        })
    }

    /// 409 Conflict: `Operation cannot be fulfilled on <resource> "<name>": <why>`.
    pub fn conflict(group: &str, resource: &str, name: &str, why: &str) -> Self {
        let qualified = qualified_resource(group, resource);
        Self::new(
            StatusCode::CONFLICT,
            reason::CONFLICT,
            format!("Operation cannot be fulfilled on {qualified} \"{name}\": {why}"),
        )
        .with_details(StatusDetails {
            name: name.into(),
            group: group.into(),
            kind: resource.into(),
            ..Default::default()
        })
    }

    /// 410 Expired (e.g. `too old resource version: 5 (10)`).
    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(StatusCode::GONE, reason::EXPIRED, message)
    }

    /// 410 Gone.
    pub fn gone(message: impl Into<String>) -> Self {
        Self::new(StatusCode::GONE, reason::GONE, message)
    }

    /// 413 `Request entity too large: limit is N`.
    pub fn request_entity_too_large(limit: usize) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            reason::REQUEST_ENTITY_TOO_LARGE,
            format!("Request entity too large: limit is {limit}"),
        )
    }

    /// 422 Invalid for `<Kind>[.<group>] "<name>" is invalid: <causes>`.
    pub fn invalid(group: &str, kind: &str, name: &str, causes: Vec<StatusCause>) -> Self {
        let qualified = qualified_resource(group, kind);
        let rendered: Vec<String> = causes
            .iter()
            .map(|c| {
                if c.field.is_empty() {
                    c.message.clone()
                } else {
                    format!("{}: {}", c.field, c.message)
                }
            })
            .collect();
        let summary = match rendered.len() {
            1 => rendered[0].clone(),
            _ => format!("[{}]", rendered.join(", ")),
        };
        Self::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            reason::INVALID,
            format!("{qualified} \"{name}\" is invalid: {summary}"),
        )
        .with_details(StatusDetails {
            name: name.into(),
            group: group.into(),
            kind: kind.into(),
            causes,
            ..Default::default()
        })
    }

    /// 500 `Internal error occurred: <err>` with the error as the single cause.
    pub fn internal(err: impl std::fmt::Display) -> Self {
        let text = err.to_string();
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            reason::INTERNAL_ERROR,
            format!("Internal error occurred: {text}"),
        )
        .with_details(StatusDetails {
            causes: vec![StatusCause {
                message: text,
                ..Default::default()
            }],
            ..Default::default()
        })
    }

    /// 503 ServiceUnavailable.
    pub fn service_unavailable(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            reason::SERVICE_UNAVAILABLE,
            message,
        )
    }

    /// 504 `Timeout: <message>`, optionally asking the client to retry after some seconds.
    pub fn timeout(message: &str, retry_after_seconds: i32) -> Self {
        Self::new(
            StatusCode::GATEWAY_TIMEOUT,
            reason::TIMEOUT,
            format!("Timeout: {message}"),
        )
        .with_details(StatusDetails {
            retry_after_seconds,
            ..Default::default()
        })
    }

    /// Renders the error as a JSON Status response.
    pub fn into_response(self) -> Response {
        self.0.into_response()
    }
}

impl From<ApiError> for Status {
    fn from(err: ApiError) -> Self {
        *err.0
    }
}

/// `resource.group`, or just `resource` for the core group (upstream's `GroupResource.String`).
pub fn qualified_resource(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_matches_upstream_bytes() {
        let err = ApiError::not_found("example.com", "widgets", "foo");
        let text = String::from_utf8(err.0.to_json_line()).unwrap();
        assert_eq!(
            text,
            "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"widgets.example.com \\\"foo\\\" not found\",\"reason\":\"NotFound\",\"details\":{\"name\":\"foo\",\"group\":\"example.com\",\"kind\":\"widgets\"},\"code\":404}\n"
        );
    }

    #[test]
    fn already_exists_matches_python_client_expectation() {
        let err = ApiError::already_exists("", "services", "mock-2");
        let text = String::from_utf8(err.0.to_json_line()).unwrap();
        assert_eq!(
            text.trim_end(),
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"services \"mock-2\" already exists","reason":"AlreadyExists","details":{"name":"mock-2","kind":"services"},"code":409}"#
        );
    }

    #[test]
    fn retry_after_header_from_details() {
        let resp = ApiError::timeout("x", 1).into_response();
        assert_eq!(resp.status(), StatusCode::GATEWAY_TIMEOUT);
        assert_eq!(resp.headers()[header::RETRY_AFTER], "1");
    }

    #[test]
    fn invalid_single_cause_has_no_brackets() {
        let err = ApiError::invalid(
            "",
            "ConfigMap",
            "x",
            vec![StatusCause {
                reason: "FieldValueRequired".into(),
                message: "Required value".into(),
                field: "data".into(),
            }],
        );
        assert_eq!(
            err.0.message,
            "ConfigMap \"x\" is invalid: data: Required value"
        );
    }
}
