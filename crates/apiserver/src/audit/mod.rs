//! Auditing: policy, events, backends and the audit filters.
//!
//! * [`policy`]: the `audit.k8s.io` `Policy` file and the rule evaluator;
//! * [`event`]: the `audit.k8s.io/v1` `Event` written by backends;
//! * [`backend`], [`log`] (with [`rotate`] and [`format`]), [`webhook`]: where events go;
//! * [`mode`], [`buffered`], [`truncate`]: how they get there (`--audit-*-mode`, batching,
//!   truncation, several backends at once);
//! * [`metrics`]: upstream's `apiserver_audit_*` metrics;
//! * [`auditor`]: the evaluator and backend bundled for the filters, built from the
//!   `--audit-*` flags.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::request::UserInfo;

pub mod auditor;
pub mod backend;
pub mod buffered;
pub mod event;
pub mod format;
pub mod level;
pub mod log;
pub mod metrics;
pub mod mode;
pub mod policy;
pub mod rotate;
pub mod truncate;
pub mod webhook;

pub use auditor::{AuditOptions, Auditor, BatchOptions, TruncateOptions};
pub use backend::Backend;
pub use event::Event;
pub use level::{Level, Stage};
pub use policy::{Policy, PolicyRuleEvaluator, RequestAuditConfig};

/// Errors of the audit subsystem: loading the policy, opening the log, running the backend.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// The policy file could not be read.
    #[error("failed to read audit policy file {path:?}: {source}")]
    ReadPolicy {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The policy file could not be decoded or is invalid.
    #[error("failed decoding audit policy file {path:?}: {message}")]
    InvalidPolicy {
        /// The file (or `<bytes>` when decoded from memory).
        path: String,
        /// What is wrong.
        message: String,
    },
    /// An `--audit-log-*` option is invalid.
    #[error("{0}")]
    InvalidOption(String),
    /// The audit log could not be opened or written.
    #[error("audit log {path:?}: {source}")]
    Log {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The backend could not be started.
    #[error("failed to start audit backend {backend}: {message}")]
    Run {
        /// The backend's name.
        backend: String,
        /// Why.
        message: String,
    },
}

/// The audit state of one request, created by the audit-init filter and stored in the
/// request's extensions as `Arc<AuditContext>`. Filters and handlers add annotations to it.
#[derive(Debug, Default)]
pub struct AuditContext {
    /// The audit ID (the `Audit-ID` request header, or a new UUID).
    pub audit_id: String,
    /// Each annotation with the lowest event level that carries it.
    annotations: Mutex<BTreeMap<String, (String, Level)>>,
    impersonated_user: Mutex<Option<UserInfo>>,
}

impl AuditContext {
    /// A context for the given audit ID.
    pub fn new(audit_id: String) -> Arc<Self> {
        Arc::new(AuditContext {
            audit_id,
            annotations: Mutex::default(),
            impersonated_user: Mutex::default(),
        })
    }

    /// Adds an annotation to the request's audit event (first value for a key wins, as
    /// upstream logs and ignores duplicates).
    pub fn add_annotation(&self, key: &str, value: &str) {
        self.add_annotation_with_level(key, value, Level::Metadata);
    }

    /// Adds an annotation that only events of `level` or above carry (upstream's
    /// `AddAuditAnnotationWithLevel`, e.g. a webhook's patch at `Request`).
    pub fn add_annotation_with_level(&self, key: &str, value: &str, level: Level) {
        if let Ok(mut annotations) = self.annotations.lock() {
            annotations
                .entry(key.to_string())
                .or_insert_with(|| (value.to_string(), level));
        }
    }

    /// The annotations added so far.
    pub fn annotations(&self) -> BTreeMap<String, String> {
        self.annotations_at(Level::RequestResponse)
    }

    /// The annotations an event of `level` carries.
    pub fn annotations_at(&self, level: Level) -> BTreeMap<String, String> {
        self.annotations
            .lock()
            .map(|a| {
                a.iter()
                    .filter(|(_, (_, min))| *min <= level)
                    .map(|(k, (v, _))| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Records the user the request impersonates (called by the impersonation filter); it
    /// becomes the event's `impersonatedUser`.
    pub fn set_impersonated_user(&self, user: UserInfo) {
        if let Ok(mut slot) = self.impersonated_user.lock() {
            *slot = Some(user);
        }
    }

    /// The impersonated user, if the impersonation filter recorded one.
    pub fn impersonated_user(&self) -> Option<UserInfo> {
        self.impersonated_user
            .lock()
            .ok()
            .and_then(|slot| slot.clone())
    }
}

/// Emits the audit event of a request whose authentication failed (upstream's
/// `WithFailedAuthenticationAudit`), called by the authentication filter before its 401.
pub trait FailedAuthenticationAuditor: Send + Sync {
    /// `message` is `Authentication failed, attempted: <methods>` or
    /// `Authentication failed, no credentials provided`.
    fn audit_failed_authentication(&self, request: &http::request::Parts, message: &str);
}

#[cfg(test)]
mod context_tests {
    use super::*;

    #[test]
    fn leveled_annotations_are_carried_only_by_events_of_their_level_or_above() {
        let context = AuditContext::new("id".into());
        context.add_annotation("plain", "1");
        context.add_annotation_with_level("patch", "2", Level::Request);
        assert_eq!(context.annotations_at(Level::Metadata).len(), 1);
        let request = context.annotations_at(Level::Request);
        assert_eq!(request.get("plain").map(String::as_str), Some("1"));
        assert_eq!(request.get("patch").map(String::as_str), Some("2"));
        assert_eq!(context.annotations_at(Level::RequestResponse).len(), 2);
    }
}
