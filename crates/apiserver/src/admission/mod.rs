//! Admission (upstream `k8s.io/apiserver/pkg/admission`): the plugins a write passes through
//! between decoding and storage. Mutating plugins run in order before the strategy defaults
//! and validates the object; validating plugins run after it, just before the write.
//!
//! The handlers attach a [`RequestAdmission`] to the request's
//! [`RequestContext`](crate::registry::rest::RequestContext); the generic store calls it at
//! upstream's places (validation after `PrepareForCreate`/`Validate`, mutation of updates after
//! the update function), and the handlers call it themselves around storages that are not the
//! generic store. A server built from the library alone installs a [`Chain`] of its own
//! plugins in [`HandlerConfig::admission`](crate::endpoints::handlers::HandlerConfig).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::audit::AuditContext;
use crate::request::UserInfo;
use crate::request::warning::WarningRecorder;
use crate::status::ApiError;

mod chain;
pub mod metrics;
mod request;

#[cfg(test)]
use request::options_object;

pub use chain::Chain;
pub use request::RequestAdmission;

/// The operation a request performs (upstream `admission.Operation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operation {
    /// POST of a new object (and an update that creates one).
    Create,
    /// PUT or PATCH of an existing object.
    Update,
    /// DELETE (and each object of a DELETECOLLECTION).
    Delete,
    /// A connect subresource (`pods/exec`, `pods/proxy` …).
    Connect,
}

impl Operation {
    /// The wire name (`CREATE`, `UPDATE`, `DELETE`, `CONNECT`).
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }

    /// The kind of the options object a request of this operation carries.
    pub fn options_kind(self) -> &'static str {
        match self {
            Operation::Create => "CreateOptions",
            Operation::Update => "UpdateOptions",
            Operation::Delete => "DeleteOptions",
            Operation::Connect => "",
        }
    }
}

/// A group, version and kind.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct GroupVersionKind {
    /// API group (empty for core).
    pub group: String,
    /// Version.
    pub version: String,
    /// Kind.
    pub kind: String,
}

/// A group, version and resource.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct GroupVersionResource {
    /// API group (empty for core).
    pub group: String,
    /// Version.
    pub version: String,
    /// Resource (plural).
    pub resource: String,
}

/// What admission knows of one request (upstream `admission.Attributes`).
#[derive(Debug)]
pub struct Attributes {
    /// The operation.
    pub operation: Operation,
    /// The kind of `object` (for `deployments/scale`, `autoscaling/v1` `Scale`).
    pub kind: GroupVersionKind,
    /// The resource the request addresses.
    pub resource: GroupVersionResource,
    /// The subresource (empty for the main resource).
    pub subresource: String,
    /// Namespace (empty for cluster-scoped resources).
    pub namespace: String,
    /// Object name (empty for a create with `generateName` before the name is generated).
    pub name: String,
    /// The new object (create, update; the options object of a connect); mutating plugins
    /// change it in place.
    pub object: Option<Value>,
    /// The current object (update, delete).
    pub old_object: Option<Value>,
    /// The request's options (`CreateOptions`, `UpdateOptions`, `DeleteOptions`, or the
    /// connect subresource's options object) as JSON with `apiVersion` and `kind`.
    pub options: Option<Value>,
    /// Whether nothing will be persisted.
    pub dry_run: bool,
    /// Who asks.
    pub user: Arc<UserInfo>,
    warnings: Option<Arc<WarningRecorder>>,
    audit: Option<Arc<AuditContext>>,
    reinvoke: bool,
    reinvocation_requested: AtomicBool,
    state: Arc<Mutex<http::Extensions>>,
}

impl Attributes {
    /// Attributes with the given facts and no warning or audit sink.
    pub fn new(
        operation: Operation,
        kind: GroupVersionKind,
        resource: GroupVersionResource,
        user: Arc<UserInfo>,
    ) -> Self {
        Attributes {
            operation,
            kind,
            resource,
            subresource: String::new(),
            namespace: String::new(),
            name: String::new(),
            object: None,
            old_object: None,
            options: None,
            dry_run: false,
            user,
            warnings: None,
            audit: None,
            reinvoke: false,
            reinvocation_requested: AtomicBool::new(false),
            state: Arc::default(),
        }
    }

    /// Sends warnings to `warnings` (the response's `Warning` headers).
    pub fn with_warnings(mut self, warnings: Option<Arc<WarningRecorder>>) -> Self {
        self.warnings = warnings;
        self
    }

    /// Sends audit annotations to `audit`.
    pub fn with_audit(mut self, audit: Option<Arc<AuditContext>>) -> Self {
        self.audit = audit;
        self
    }

    /// Adds a `Warning` header to the response (agent `-`).
    pub fn warn(&self, text: &str) {
        if let Some(w) = &self.warnings {
            w.add("-", text);
        }
    }

    /// Adds an annotation to the request's audit event (plugins prefix their keys, as
    /// upstream's `<plugin>/<key>` or `<domain>/<key>`).
    pub fn add_annotation(&self, key: &str, value: &str) {
        if let Some(a) = &self.audit {
            a.add_annotation(key, value);
        }
    }

    /// Adds an annotation that only audit events of `level` or above carry (upstream's
    /// `AddAnnotationWithLevel`).
    pub fn add_annotation_with_level(&self, key: &str, value: &str, level: crate::audit::Level) {
        if let Some(a) = &self.audit {
            a.add_annotation_with_level(key, value, level);
        }
    }

    /// The audit context, for plugins that read the audit level or annotations.
    pub fn audit(&self) -> Option<&Arc<AuditContext>> {
        self.audit.as_ref()
    }

    /// Whether this is the second run of the mutating plugins (upstream
    /// `ReinvocationContext.IsReinvoke`).
    pub fn is_reinvoke(&self) -> bool {
        self.reinvoke
    }

    /// Asks the chain to run the mutating plugins once more after this pass (upstream
    /// `ReinvocationContext.SetShouldReinvoke`).
    pub fn request_reinvocation(&self) {
        self.reinvocation_requested.store(true, Ordering::Relaxed);
    }

    /// Whether a plugin asked for reinvocation in the current pass.
    pub fn reinvocation_requested(&self) -> bool {
        self.reinvocation_requested.load(Ordering::Relaxed)
    }

    pub(crate) fn start_reinvocation(&mut self) {
        self.reinvoke = true;
        self.reinvocation_requested.store(false, Ordering::Relaxed);
    }

    /// State plugins keep across the passes of one request (upstream
    /// `ReinvocationContext.Value`/`SetValue`), by type.
    pub fn state(&self) -> &Mutex<http::Extensions> {
        &self.state
    }

    /// The name to report: the object's name, else its `generateName` (names are generated
    /// after admission), else `Unknown` (upstream `extractResourceName`).
    pub fn reported_name(&self) -> String {
        if !self.name.is_empty() {
            return self.name.clone();
        }
        let meta = self.object.as_ref().and_then(|o| o.get("metadata"));
        let field = |f: &str| {
            meta.and_then(|m| m.get(f))
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        field("name")
            .or_else(|| field("generateName"))
            .unwrap_or_else(|| "Unknown".to_string())
    }
}

/// One admission plugin (upstream `admission.Interface` with `MutationInterface` and
/// `ValidationInterface`).
#[async_trait::async_trait]
pub trait Plugin: Send + Sync {
    /// The plugin's name (`NamespaceLifecycle`), the `name` label of its metrics.
    fn name(&self) -> &str;

    /// Whether the plugin looks at requests of `operation`.
    fn handles(&self, operation: Operation) -> bool;

    /// Whether [`admit`](Self::admit) may change objects (the plugin runs in the mutating
    /// phase).
    fn mutates(&self) -> bool {
        false
    }

    /// Whether [`validate`](Self::validate) runs (the plugin runs in the validating phase).
    fn validates(&self) -> bool {
        false
    }

    /// The mutating phase: may change `attrs.object`; an error refuses the request.
    async fn admit(&self, attrs: &mut Attributes) -> Result<(), ApiError> {
        let _ = attrs;
        Ok(())
    }

    /// The validating phase: an error refuses the request.
    async fn validate(&self, attrs: &Attributes) -> Result<(), ApiError> {
        let _ = attrs;
        Ok(())
    }
}

/// Upstream `admission.NewForbidden`: 403 `<resource>[.<group>] "<name>" is forbidden:
/// <message>`, with the name as [`Attributes::reported_name`] gives it.
pub fn forbidden(attrs: &Attributes, message: &str) -> ApiError {
    ApiError::forbidden(
        &attrs.resource.group,
        &attrs.resource.resource,
        &attrs.reported_name(),
        message,
    )
}

#[cfg(test)]
mod tests;
