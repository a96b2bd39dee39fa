//! CertificateSigningRequests: the requestor recorded on create, and the `status` and
//! `approval` subresources (upstream's `csrStatusStrategy` and `csrApprovalStrategy`), which
//! update the stored object through the generic status store after their own preparation and
//! validation.

use std::sync::Arc;

use apiserver::registry::invalid;
use apiserver::registry::rest::{
    BoxFuture, CreateOptions, RequestContext, RestStorage, UpdateFunc, UpdateOptions,
    WrappingStorage,
};
use apiserver::registry::store::meta::now_rfc3339;
use apiserver::status::ApiError;
use serde_json::Value;

use crate::apis::certificates::{
    prepare_approval_update, prepare_status_update, set_requestor, validate_approval_update,
    validate_status_update,
};

/// The main `certificatesigningrequests` resource: the generic store, except that a create
/// records the requesting user in `spec.username`, `uid`, `groups` and `extra`.
pub struct CsrStorage {
    inner: Arc<dyn RestStorage>,
}

impl CsrStorage {
    /// Wraps the resource's storage.
    pub fn new(inner: Arc<dyn RestStorage>) -> Self {
        CsrStorage { inner }
    }
}

impl WrappingStorage for CsrStorage {
    fn inner(&self) -> &dyn RestStorage {
        self.inner.as_ref()
    }

    fn create<'a>(
        &'a self,
        ctx: &'a RequestContext,
        mut obj: Value,
        opts: &'a CreateOptions,
    ) -> BoxFuture<'a, Result<Value, ApiError>> {
        set_requestor(&mut obj, ctx.user.as_deref());
        self.inner.create(ctx, obj, opts)
    }
}

/// Which subresource a [`CsrSubresource`] serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CsrSubresourceKind {
    /// `/status`: conditions other than Approved/Denied, and the certificate.
    Status,
    /// `/approval`: the conditions only.
    Approval,
}

/// `certificatesigningrequests/status` or `/approval` over the resource's status store.
pub struct CsrSubresource {
    inner: Arc<dyn RestStorage>,
    kind: CsrSubresourceKind,
}

impl CsrSubresource {
    /// The subresource `kind` over `status_store` (the generic status subresource, which
    /// writes only `status`).
    pub fn new(status_store: Arc<dyn RestStorage>, kind: CsrSubresourceKind) -> Self {
        CsrSubresource {
            inner: status_store,
            kind,
        }
    }
}

impl WrappingStorage for CsrSubresource {
    fn inner(&self) -> &dyn RestStorage {
        self.inner.as_ref()
    }

    fn update<'a>(
        &'a self,
        ctx: &'a RequestContext,
        name: &'a str,
        mut update: UpdateFunc,
        opts: &'a UpdateOptions,
        force_allow_create: bool,
    ) -> BoxFuture<'a, Result<(Value, bool), ApiError>> {
        let kind = self.kind;
        let info = self.inner.info().clone();
        let name_owned = name.to_string();
        let wrapped: UpdateFunc = Box::new(move |cur: Option<&Value>| {
            let new = update(cur)?;
            let Some(old) = cur else {
                return Ok(new);
            };
            let now = now_rfc3339();
            let (prepared, errs) = match kind {
                CsrSubresourceKind::Approval => {
                    let p = prepare_approval_update(&new, old, &now);
                    let errs = validate_approval_update(&p, old);
                    (p, errs)
                }
                CsrSubresourceKind::Status => {
                    let p = prepare_status_update(&new, old, &now);
                    let errs = validate_status_update(&p, old);
                    (p, errs)
                }
            };
            if !errs.is_empty() {
                return Err(invalid(&info, &name_owned, &errs));
            }
            Ok(prepared)
        });
        self.inner
            .update(ctx, name, wrapped, opts, force_allow_create)
    }
}
