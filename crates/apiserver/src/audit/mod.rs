//! Auditing: policy, events, backends and the audit filters.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// The audit state of one request, created by the audit-init filter and stored in the
/// request's extensions as `Arc<AuditContext>`. Filters and handlers add annotations to it.
#[derive(Debug, Default)]
pub struct AuditContext {
    /// The audit ID (the `Audit-ID` request header, or a new UUID).
    pub audit_id: String,
    annotations: Mutex<BTreeMap<String, String>>,
}

impl AuditContext {
    /// A context for the given audit ID.
    pub fn new(audit_id: String) -> Arc<Self> {
        Arc::new(AuditContext {
            audit_id,
            annotations: Mutex::default(),
        })
    }

    /// Adds an annotation to the request's audit event (first value for a key wins, as
    /// upstream logs and ignores duplicates).
    pub fn add_annotation(&self, key: &str, value: &str) {
        if let Ok(mut annotations) = self.annotations.lock() {
            annotations
                .entry(key.to_string())
                .or_insert_with(|| value.to_string());
        }
    }

    /// The annotations added so far.
    pub fn annotations(&self) -> BTreeMap<String, String> {
        self.annotations
            .lock()
            .map(|a| a.clone())
            .unwrap_or_default()
    }
}

/// Emits the audit event of a request whose authentication failed (upstream's
/// `WithFailedAuthenticationAudit`), called by the authentication filter before its 401.
pub trait FailedAuthenticationAuditor: Send + Sync {
    /// `message` is `Authentication failed, attempted: <methods>` or
    /// `Authentication failed, no credentials provided`.
    fn audit_failed_authentication(&self, request: &http::request::Parts, message: &str);
}
