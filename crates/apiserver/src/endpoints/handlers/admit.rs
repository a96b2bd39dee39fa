//! Admission around the storage calls of the handlers (upstream's `admit` calls in
//! `handlers/create.go`, `update.go`, `patch.go`, `delete.go` and `rest.go`): the request's
//! [`RequestAdmission`] is built here and either handed to a storage that runs it at
//! upstream's places (the generic store) or run here around one that does not.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;
use serde_json::Value;

use super::{RequestParts, ResourceScope};
use crate::admission::{GroupVersionKind, GroupVersionResource, Operation, RequestAdmission};
use crate::registry::rest::{
    CreateOptions, DeleteOptions, GetOptions, RequestContext, UpdateFunc, UpdateOptions,
};
use crate::status::ApiError;

/// How often an update through a storage without admission is recomputed when the object
/// changed between its admission and its write.
const MAX_ADMITTED_UPDATE_ATTEMPTS: usize = 16;

/// The request's admission, when the server has a chain: the resource's kind, the addressed
/// resource and subresource, the options and the requester.
pub fn request_admission(
    scope: &ResourceScope,
    parts: &RequestParts,
    options: &impl Serialize,
    dry_run: bool,
) -> Option<Arc<RequestAdmission>> {
    let chain = scope.config.admission.load_full()?;
    let info = scope.info();
    Some(Arc::new(RequestAdmission {
        chain,
        kind: GroupVersionKind {
            group: info.group.clone(),
            version: info.version.clone(),
            kind: info.kind.clone(),
        },
        resource: GroupVersionResource {
            group: scope.group.clone(),
            version: scope.version.clone(),
            resource: scope.resource.clone(),
        },
        subresource: scope.subresource.clone(),
        options: serde_json::to_value(options).unwrap_or(Value::Null),
        dry_run,
        user: parts.ctx.user.clone().unwrap_or_default(),
        warnings: parts.ctx.warnings.clone(),
        audit: parts.ctx.audit.clone(),
    }))
}

/// The context for the storage call: with the admission when the storage runs it, without
/// when the handler did.
fn storage_context(
    scope: &ResourceScope,
    ctx: &RequestContext,
    adm: &Option<Arc<RequestAdmission>>,
) -> RequestContext {
    RequestContext {
        admission: adm.clone().filter(|_| scope.storage.runs_admission()),
        ..ctx.clone()
    }
}

/// CREATE: mutating admission here (after the managed fields), validating admission in the
/// storage, or here when the storage does not run it.
pub async fn create(
    scope: &ResourceScope,
    parts: &RequestParts,
    mut obj: Value,
    opts: &CreateOptions,
) -> Result<Value, ApiError> {
    let adm = request_admission(scope, parts, opts, opts.is_dry_run());
    if let Some(adm) = &adm {
        let name = super::create::object_name(&obj).to_string();
        let namespace = &parts.ctx.namespace;
        adm.admit(Operation::Create, namespace, &name, &mut obj, None)
            .await?;
        if !scope.storage.runs_admission() {
            adm.validate(Operation::Create, namespace, &name, Some(&mut obj), None)
                .await?;
        }
    }
    let ctx = storage_context(scope, &parts.ctx, &adm);
    scope.storage.create(&ctx, obj, opts).await
}

/// UPDATE and PATCH: the storage admits the new object when it runs admission; otherwise the
/// object is read, computed and admitted here, and written only if it did not change
/// meanwhile (recomputed when it did).
pub async fn update(
    scope: &ResourceScope,
    parts: &RequestParts,
    name: &str,
    mut update: UpdateFunc,
    opts: &UpdateOptions,
    force_allow_create: bool,
) -> Result<(Value, bool), ApiError> {
    let adm = request_admission(scope, parts, opts, opts.is_dry_run());
    let ctx = storage_context(scope, &parts.ctx, &adm);
    let Some(adm) = adm.filter(|a| {
        !scope.storage.runs_admission()
            && (a.handles(Operation::Update) || a.handles(Operation::Create))
    }) else {
        return scope
            .storage
            .update(&ctx, name, update, opts, force_allow_create)
            .await;
    };
    let namespace = &parts.ctx.namespace;
    for _ in 0..MAX_ADMITTED_UPDATE_ATTEMPTS {
        let current = match scope.storage.get(&ctx, name, &GetOptions::default()).await {
            Ok(current) => Some(current),
            Err(e) if e.code() == http::StatusCode::NOT_FOUND => None,
            Err(e) => return Err(e),
        };
        let mut obj = update(current.as_ref())?;
        let op = if current.is_some() {
            Operation::Update
        } else {
            Operation::Create
        };
        adm.admit_and_validate(op, namespace, name, &mut obj, current.as_ref())
            .await?;
        let admitted_version = current.as_ref().map(resource_version);
        let raced = Arc::new(AtomicBool::new(false));
        let raced_in = raced.clone();
        let write: UpdateFunc = Box::new(move |now| {
            if now.map(resource_version) != admitted_version {
                raced_in.store(true, Ordering::Relaxed);
                return Err(ApiError::conflict("", "", "", "changed since admission"));
            }
            Ok(obj.clone())
        });
        match scope
            .storage
            .update(&ctx, name, write, opts, force_allow_create)
            .await
        {
            Err(_) if raced.load(Ordering::Relaxed) => continue,
            other => return other,
        }
    }
    Err(ApiError::conflict(
        &scope.info().group,
        &scope.info().resource,
        name,
        "the object kept changing while it was admitted; please retry",
    ))
}

fn resource_version(obj: &Value) -> String {
    obj.pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// DELETE: mutating admission without objects here; validating admission with the current
/// object in the storage, or here when the storage does not run it.
pub async fn delete(
    scope: &ResourceScope,
    parts: &RequestParts,
    name: &str,
    opts: &DeleteOptions,
) -> Result<(Value, bool), ApiError> {
    let adm = request_admission(scope, parts, opts, opts.is_dry_run());
    let ctx = storage_context(scope, &parts.ctx, &adm);
    if let Some(adm) = &adm {
        let namespace = &parts.ctx.namespace;
        adm.admit_without_object(Operation::Delete, namespace, name)
            .await?;
        if !scope.storage.runs_admission() && adm.handles(Operation::Delete) {
            let current = scope
                .storage
                .get(&ctx, name, &GetOptions::default())
                .await?;
            adm.validate(Operation::Delete, namespace, name, None, Some(&current))
                .await?;
        }
    }
    scope.storage.delete(&ctx, name, opts).await
}

/// The context of a DELETECOLLECTION: mutating admission once without objects; each object's
/// deletion is validated by the storage.
pub async fn delete_collection_context(
    scope: &ResourceScope,
    parts: &RequestParts,
    opts: &DeleteOptions,
) -> Result<RequestContext, ApiError> {
    let adm = request_admission(scope, parts, opts, opts.is_dry_run());
    if let Some(adm) = &adm {
        adm.admit_without_object(Operation::Delete, &parts.ctx.namespace, "")
            .await?;
    }
    Ok(storage_context(scope, &parts.ctx, &adm))
}

/// CONNECT: both phases over the subresource's options object, when the storage names one
/// (streaming reads such as `pods/log` are GETs upstream and are not admitted).
pub async fn connect(
    scope: &ResourceScope,
    parts: &RequestParts,
    options: Option<Value>,
) -> Result<RequestContext, ApiError> {
    let Some(mut options) = options else {
        return Ok(parts.ctx.without_admission());
    };
    let adm = request_admission(scope, parts, &Value::Null, false);
    if let Some(adm) = &adm {
        let namespace = &parts.ctx.namespace;
        let name = &parts.info.name;
        adm.admit_and_validate(Operation::Connect, namespace, name, &mut options, None)
            .await?;
    }
    Ok(parts.ctx.without_admission())
}
