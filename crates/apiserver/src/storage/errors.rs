//! Storage errors (upstream `pkg/storage/errors.go`) and their conversion to API Statuses
//! (upstream `pkg/storage/errors/storage.go` and the etcd3 store's list/watch error messages).

use http::StatusCode;

use crate::status::{ApiError, StatusCause, StatusDetails};

/// Upstream's message for a compacted list revision (etcd3 store).
pub const LIST_EXPIRED_MESSAGE: &str = "The resourceVersion for the provided list is too old.";
/// Upstream's message for a compacted watch revision (etcd3 watcher).
pub const WATCH_EXPIRED_MESSAGE: &str = "The resourceVersion for the provided watch is too old.";
/// Upstream's message for a compacted continue token when a fresh token can be offered.
pub const INCONSISTENT_CONTINUE_MESSAGE: &str = "The provided continue parameter is too old \
to display a consistent list result. You can start a new list without the continue parameter, \
or use the continue token in this response to retrieve the remainder of the results. \
Continuing with the provided token results in an inconsistent list - objects that were \
created, modified, or deleted between the time the first chunk was returned and now may show \
up in the list.";
/// Upstream's `StatusCause` type for a resource version ahead of storage.
pub const CAUSE_RESOURCE_VERSION_TOO_LARGE: &str = "ResourceVersionTooLarge";
/// etcd's error text for a request over `--max-request-bytes` (a 413 here; upstream passes it
/// through as an unknown 500 error).
pub const REQUEST_TOO_LARGE_MESSAGE: &str = "etcdserver: request is too large";

/// The operation an error happened in; it picks upstream's `Interpret*Error` mapping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// get
    Get,
    /// list
    List,
    /// create
    Create,
    /// update
    Update,
    /// delete
    Delete,
    /// watch
    Watch,
}

impl Operation {
    fn verb(self) -> &'static str {
        match self {
            Operation::Get => "get",
            Operation::List => "list",
            Operation::Create => "create",
            Operation::Update => "update",
            Operation::Delete => "delete",
            Operation::Watch => "watch",
        }
    }
}

/// An error from a [`crate::storage::Storage`] operation.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StorageError {
    /// The key does not exist (upstream `ErrCodeKeyNotFound`).
    #[error(
        "StorageError: key not found, Code: 1, Key: {key}, ResourceVersion: {resource_version}, AdditionalErrorMsg: <nil>"
    )]
    KeyNotFound {
        /// The key.
        key: String,
        /// The revision the read was served at.
        resource_version: u64,
    },
    /// Create of an existing key (`ErrCodeKeyExists`).
    #[error(
        "StorageError: key exists, Code: 2, Key: {key}, ResourceVersion: {resource_version}, AdditionalErrorMsg: <nil>"
    )]
    KeyExists {
        /// The key.
        key: String,
        /// The revision of the existing object.
        resource_version: u64,
    },
    /// A compare-and-swap lost (`ErrCodeResourceVersionConflicts`).
    #[error(
        "StorageError: resource version conflicts, Code: 3, Key: {key}, ResourceVersion: {resource_version}, AdditionalErrorMsg: <nil>"
    )]
    Conflict {
        /// The key.
        key: String,
        /// The revision the write expected.
        resource_version: u64,
    },
    /// A precondition failed, or the object is malformed (`ErrCodeInvalidObj`).
    #[error(
        "StorageError: invalid object, Code: 4, Key: {key}, ResourceVersion: 0, AdditionalErrorMsg: {message}"
    )]
    InvalidObj {
        /// The key.
        key: String,
        /// Why.
        message: String,
    },
    /// The revision asked for has been compacted.
    #[error("too old resource version: {requested} ({current})")]
    Expired {
        /// The revision asked for.
        requested: u64,
        /// The oldest revision still available (the compacted revision).
        current: u64,
        /// The exact message upstream uses in this place.
        message: String,
        /// A fresh continue token (an expired continue token on a list).
        continue_token: Option<String>,
    },
    /// A resource version ahead of what storage has seen (504 with retry).
    #[error("Too large resource version: {requested}, current: {current}")]
    TooLargeResourceVersion {
        /// The revision asked for.
        requested: u64,
        /// The current revision.
        current: u64,
        /// Seconds the client should wait.
        retry_after_seconds: i32,
    },
    /// A request rejected before reaching storage (400), e.g. an invalid continue token.
    #[error("{0}")]
    BadRequest(String),
    /// A field-level validation failure (422), e.g. an unparseable resourceVersion on watch.
    #[error("{field}: Invalid value: {value:?}: {detail}")]
    Invalid {
        /// The field path, e.g. `resourceVersion`.
        field: String,
        /// The bad value.
        value: String,
        /// Why.
        detail: String,
    },
    /// The value (with its key) exceeds the request size limit of the backend.
    #[error("etcdserver: request is too large")]
    RequestTooLarge,
    /// The backend cannot be reached (`ErrCodeUnreachable`).
    #[error(
        "StorageError: server unreachable, Code: 5, Key: {key}, ResourceVersion: 0, AdditionalErrorMsg: {message}"
    )]
    Unreachable {
        /// The key.
        key: String,
        /// The underlying error.
        message: String,
    },
    /// The backend did not answer in time (`ErrCodeTimeout`).
    #[error(
        "StorageError: request timeout, Code: 6, Key: {key}, ResourceVersion: 0, AdditionalErrorMsg: {message}"
    )]
    Timeout {
        /// The key.
        key: String,
        /// Why.
        message: String,
    },
    /// A stored value could not be decoded (`ErrCodeCorruptObj`).
    #[error(
        "StorageError: corrupt object, Code: 7, Key: {key}, ResourceVersion: 0, AdditionalErrorMsg: {message}"
    )]
    Corrupt {
        /// The key.
        key: String,
        /// Why.
        message: String,
    },
    /// Anything else (upstream `InternalError`).
    #[error("{0}")]
    Internal(String),
    /// An error already rendered as an API error by a callback (e.g. an update function).
    #[error("{0}")]
    Api(ApiError),
}

impl StorageError {
    /// An internal error from any displayable cause.
    pub fn internal(err: impl std::fmt::Display) -> Self {
        StorageError::Internal(err.to_string())
    }

    /// True for [`StorageError::KeyNotFound`].
    pub fn is_not_found(&self) -> bool {
        matches!(self, StorageError::KeyNotFound { .. })
    }

    /// True for [`StorageError::Conflict`].
    pub fn is_conflict(&self) -> bool {
        matches!(self, StorageError::Conflict { .. })
    }

    /// True for [`StorageError::Expired`].
    pub fn is_expired(&self) -> bool {
        matches!(self, StorageError::Expired { .. })
    }

    /// True when the backend is down (the request may be retried).
    pub fn is_unreachable(&self) -> bool {
        matches!(
            self,
            StorageError::Unreachable { .. } | StorageError::Timeout { .. }
        )
    }

    /// Converts to the API error upstream's registry returns for this operation on the object
    /// `name` of `resource` in `group` (the `Interpret*Error` functions of
    /// `pkg/storage/errors`).
    pub fn to_api_error(&self, op: Operation, group: &str, resource: &str, name: &str) -> ApiError {
        match self {
            StorageError::KeyNotFound { .. } => match op {
                Operation::Create => ApiError::internal(self),
                Operation::List => ApiError::not_found(group, resource, ""),
                _ => ApiError::not_found(group, resource, name),
            },
            StorageError::KeyExists { .. } => match op {
                Operation::Update | Operation::Delete => {
                    ApiError::conflict(group, resource, name, &self.to_string())
                }
                _ => ApiError::already_exists(group, resource, name),
            },
            StorageError::Conflict { .. } | StorageError::InvalidObj { .. } => {
                ApiError::conflict(group, resource, name, &self.to_string())
            }
            StorageError::Expired {
                message,
                continue_token,
                ..
            } => {
                let mut err = ApiError::expired(message.clone());
                if let Some(token) = continue_token {
                    err.0.metadata.continue_ = token.clone();
                }
                err
            }
            StorageError::TooLargeResourceVersion {
                retry_after_seconds,
                ..
            } => ApiError::timeout(&self.to_string(), *retry_after_seconds).with_details(
                StatusDetails {
                    retry_after_seconds: *retry_after_seconds,
                    causes: vec![StatusCause {
                        reason: CAUSE_RESOURCE_VERSION_TOO_LARGE.into(),
                        message: "Too large resource version".into(),
                        field: String::new(),
                    }],
                    ..Default::default()
                },
            ),
            StorageError::BadRequest(message) => ApiError::bad_request(message.clone()),
            StorageError::Invalid {
                field,
                value,
                detail,
            } => {
                let cause = StatusCause {
                    reason: "FieldValueInvalid".into(),
                    message: format!("Invalid value: {value:?}: {detail}"),
                    field: field.clone(),
                };
                ApiError::invalid(group, resource, name, vec![cause])
            }
            StorageError::RequestTooLarge => {
                // Upstream returns etcd's gRPC error unchanged, which its response writer turns
                // into a 500 (kubernetes/kubernetes#112152); the client's object is too large,
                // so here it is a 413 with etcd's text.
                ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    crate::status::reason::REQUEST_ENTITY_TOO_LARGE,
                    REQUEST_TOO_LARGE_MESSAGE,
                )
            }
            StorageError::Unreachable { .. } | StorageError::Timeout { .. } => {
                server_timeout(group, resource, op.verb(), 2)
            }
            StorageError::Corrupt { .. } | StorageError::Internal(_) => ApiError::internal(self),
            StorageError::Api(err) => err.clone(),
        }
    }
}

/// `apierrors.NewServerTimeout`: 500 `ServerTimeout` asking the client to retry.
pub fn server_timeout(group: &str, resource: &str, verb: &str, retry: i32) -> ApiError {
    let qualified = crate::status::qualified_resource(group, resource);
    ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "ServerTimeout",
        format!(
            "The {verb} operation against {qualified} could not be completed at this time, please try again."
        ),
    )
    .with_details(StatusDetails {
        name: verb.into(),
        group: group.into(),
        kind: resource.into(),
        retry_after_seconds: retry,
        ..Default::default()
    })
}

impl From<StorageError> for ApiError {
    /// A conversion for callers that do not know the resource: the resource and name are taken
    /// from the key (`<prefix>/<resource>/[<namespace>/]<name>`) as a best effort.
    fn from(err: StorageError) -> Self {
        let (resource, name) = match &err {
            StorageError::KeyNotFound { key, .. }
            | StorageError::KeyExists { key, .. }
            | StorageError::Conflict { key, .. }
            | StorageError::InvalidObj { key, .. } => resource_and_name(key),
            _ => (String::new(), String::new()),
        };
        err.to_api_error(Operation::Get, "", &resource, &name)
    }
}

/// Best-effort `(resource, name)` of a `/registry/<resource>/…/<name>` key.
fn resource_and_name(key: &str) -> (String, String) {
    let parts: Vec<&str> = key.split('/').filter(|p| !p.is_empty()).collect();
    let name = parts.last().copied().unwrap_or_default().to_string();
    let resource = parts.get(1).copied().unwrap_or_default().to_string();
    (resource, name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::reason;

    #[test]
    fn expired_list_is_410() {
        let err = StorageError::Expired {
            requested: 1,
            current: 5,
            message: LIST_EXPIRED_MESSAGE.into(),
            continue_token: Some("tok".into()),
        };
        let api = err.to_api_error(Operation::List, "", "pods", "");
        assert_eq!(api.code(), StatusCode::GONE);
        assert_eq!(api.reason(), "Expired");
        assert_eq!(api.0.message, LIST_EXPIRED_MESSAGE);
        assert_eq!(api.0.metadata.continue_, "tok");
    }

    #[test]
    fn too_large_rv_is_504_with_retry() {
        let err = StorageError::TooLargeResourceVersion {
            requested: 10,
            current: 5,
            retry_after_seconds: 1,
        };
        let api = err.to_api_error(Operation::Get, "", "pods", "x");
        assert_eq!(api.code(), StatusCode::GATEWAY_TIMEOUT);
        assert_eq!(
            api.0.message,
            "Timeout: Too large resource version: 10, current: 5"
        );
        let details = api.0.details.unwrap();
        assert_eq!(details.retry_after_seconds, 1);
        assert_eq!(details.causes[0].reason, "ResourceVersionTooLarge");
    }

    #[test]
    fn not_found_and_exists() {
        let nf = StorageError::KeyNotFound {
            key: "/registry/pods/ns/a".into(),
            resource_version: 0,
        };
        let api: ApiError = nf.into();
        assert_eq!(api.code(), StatusCode::NOT_FOUND);
        assert_eq!(api.0.message, "pods \"a\" not found");
        let ex = StorageError::KeyExists {
            key: "/registry/pods/ns/a".into(),
            resource_version: 0,
        };
        let api = ex.to_api_error(Operation::Create, "", "pods", "a");
        assert_eq!(api.reason(), reason::ALREADY_EXISTS);
    }

    #[test]
    fn unreachable_is_server_timeout() {
        let err = StorageError::Unreachable {
            key: "k".into(),
            message: "down".into(),
        };
        let api = err.to_api_error(Operation::List, "", "pods", "");
        assert_eq!(api.code(), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(
            api.0.message,
            "The list operation against pods could not be completed at this time, please try again."
        );
    }
}
