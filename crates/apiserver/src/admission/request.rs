//! The admission of one request: the chain with the request's facts, attached to its
//! [`RequestContext`](crate::registry::rest::RequestContext) by the handlers and called by
//! the storage (or the handlers) with the objects.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{Attributes, Chain, GroupVersionKind, GroupVersionResource, Operation};
use crate::audit::AuditContext;
use crate::request::UserInfo;
use crate::request::warning::WarningRecorder;
use crate::status::ApiError;

/// The chain and what it needs to know of one request besides the objects.
#[derive(Clone, Debug)]
pub struct RequestAdmission {
    /// The server's plugins.
    pub chain: Arc<Chain>,
    /// The kind of the objects the request writes.
    pub kind: GroupVersionKind,
    /// The resource addressed.
    pub resource: GroupVersionResource,
    /// The subresource addressed (empty for the main resource).
    pub subresource: String,
    /// The request's options object (`CreateOptions`, `UpdateOptions`, `DeleteOptions`, or a
    /// connect subresource's options) as JSON, without `apiVersion`/`kind`.
    pub options: Value,
    /// Whether nothing is persisted.
    pub dry_run: bool,
    /// Who asks.
    pub user: Arc<UserInfo>,
    /// Where warnings go.
    pub warnings: Option<Arc<WarningRecorder>>,
    /// Where audit annotations go.
    pub audit: Option<Arc<AuditContext>>,
}

/// The options of `operation` as upstream passes them to admission: with `apiVersion:
/// meta.k8s.io/v1` and the kind; an update that creates passes its options as
/// `CreateOptions`.
pub(super) fn options_object(operation: Operation, options: &Value) -> Option<Value> {
    let kind = operation.options_kind();
    if kind.is_empty() {
        return Some(options.clone()).filter(|o| !o.is_null());
    }
    let mut out = serde_json::Map::new();
    out.insert("kind".into(), json!(kind));
    out.insert("apiVersion".into(), json!("meta.k8s.io/v1"));
    if let Some(fields) = options.as_object() {
        for (k, v) in fields {
            let empty = v.is_null() || v.as_array().is_some_and(|a| a.is_empty()) || v == "";
            // Options that only DeleteOptions carry do not survive the conversion of an
            // update that creates.
            if !empty && k != "kind" && k != "apiVersion" {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    Some(Value::Object(out))
}

impl RequestAdmission {
    /// Whether any plugin looks at `operation`.
    pub fn handles(&self, operation: Operation) -> bool {
        !self.chain.is_empty_for(operation)
    }

    fn attributes(
        &self,
        operation: Operation,
        namespace: &str,
        name: &str,
        object: Option<Value>,
        old_object: Option<Value>,
    ) -> Attributes {
        let mut attrs = Attributes::new(
            operation,
            self.kind.clone(),
            self.resource.clone(),
            self.user.clone(),
        )
        .with_warnings(self.warnings.clone())
        .with_audit(self.audit.clone());
        attrs.subresource = self.subresource.clone();
        attrs.namespace = namespace.to_string();
        attrs.name = name.to_string();
        attrs.object = object;
        attrs.old_object = old_object;
        attrs.options = options_object(operation, &self.options);
        attrs.dry_run = self.dry_run;
        attrs
    }

    /// The mutating phase over `object` (changed in place), with `old` for updates.
    pub async fn admit(
        &self,
        operation: Operation,
        namespace: &str,
        name: &str,
        object: &mut Value,
        old: Option<&Value>,
    ) -> Result<(), ApiError> {
        if !self.handles(operation) {
            return Ok(());
        }
        let mut attrs = self.attributes(
            operation,
            namespace,
            name,
            Some(std::mem::take(object)),
            old.cloned(),
        );
        let result = self.chain.admit(&mut attrs).await;
        *object = attrs.object.take().unwrap_or(Value::Null);
        result
    }

    /// The validating phase over `object` (create, update, connect) and `old` (update,
    /// delete).
    pub async fn validate(
        &self,
        operation: Operation,
        namespace: &str,
        name: &str,
        object: Option<&mut Value>,
        old: Option<&Value>,
    ) -> Result<(), ApiError> {
        if !self.handles(operation) {
            return Ok(());
        }
        match object {
            Some(object) => {
                let attrs = self.attributes(
                    operation,
                    namespace,
                    name,
                    Some(std::mem::take(object)),
                    old.cloned(),
                );
                let result = self.chain.validate(&attrs).await;
                *object = attrs.object.unwrap_or(Value::Null);
                result
            }
            None => {
                let attrs = self.attributes(operation, namespace, name, None, old.cloned());
                self.chain.validate(&attrs).await
            }
        }
    }

    /// The mutating phase of a request without objects (DELETE and DELETECOLLECTION).
    pub async fn admit_without_object(
        &self,
        operation: Operation,
        namespace: &str,
        name: &str,
    ) -> Result<(), ApiError> {
        if !self.handles(operation) {
            return Ok(());
        }
        let mut attrs = self.attributes(operation, namespace, name, None, None);
        self.chain.admit(&mut attrs).await
    }

    /// Both phases, for requests whose storage does not call admission itself.
    pub async fn admit_and_validate(
        &self,
        operation: Operation,
        namespace: &str,
        name: &str,
        object: &mut Value,
        old: Option<&Value>,
    ) -> Result<(), ApiError> {
        self.admit(operation, namespace, name, object, old).await?;
        self.validate(operation, namespace, name, Some(object), old)
            .await
    }
}
