//! The generic registry store (upstream `pkg/registry/generic/registry/store.go` with the
//! create, update and delete helpers of `pkg/registry/rest`): one [`Store`] serves every verb of
//! a resource over a [`Storage`] (normally the watch cache over the backend), with the
//! resource's behaviour coming from its [`Strategy`].
//!
//! Keys follow kube-apiserver's layout: `<root>/<namespace>/<name>` for namespaced resources and
//! `<root>/<name>` for cluster-scoped ones, `<root>` being `<prefix>/<resource>`
//! (`/registry/configmaps/default/foo`).

mod admitted;
mod delete;
mod list_json;
pub mod meta;
pub mod options;
mod status;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use serde_json::{Map, Value, json};

use self::meta::{
    finalizers, generation, is_deleting, meta, meta_mut, meta_str, set_meta_str, set_type_meta,
};
pub use self::options::{
    attrs_func, validate_delete_options, validate_list_options, validate_watch_options,
};
pub use self::status::StatusStore;
use super::rest::{
    BoxFuture, CreateOptions, DeleteOptions, GetOptions, ListOptions, ObjectEvent, ObjectWatch,
    RequestContext, RestStorage, UpdateFunc, UpdateOptions,
};
use super::{ResourceInfo, SharedStrategy, Strategy, invalid};
use crate::admission::Operation as AdmissionOp;
use crate::status::{ApiError, StatusDetails, reason};
use crate::storage::{
    self, Object, Operation, ResourceVersionMatch, Storage, StorageError, WatchEvent,
};
use crate::util::value::object;

/// Attempts at creating an object with a generated name before giving up (upstream
/// `maxNameGenerationCreateAttempts`).
const MAX_NAME_GENERATION_ATTEMPTS: usize = 8;

/// The annotation of the bookmark that ends the initial events of a watch-list.
pub const INITIAL_EVENTS_END_ANNOTATION: &str = "k8s.io/initial-events-end";

/// upstream `OptimisticLockErrorMsg`.
pub const OPTIMISTIC_LOCK_ERROR: &str =
    "the object has been modified; please apply your changes to the latest version and try again";

/// upstream `storage.ErrResourceVersionSetOnCreate`.
pub const RESOURCE_VERSION_SET_ON_CREATE: &str =
    "resourceVersion should not be set on objects to be created";

/// Which part of the object an update may change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// The resource itself.
    Main,
    /// The `/status` subresource: only `status` (and managedFields) change.
    Status,
}

/// The generic store of one resource.
#[derive(Clone)]
pub struct Store {
    strategy: SharedStrategy,
    storage: Arc<dyn Storage>,
    key_root: String,
    return_deleted_object: bool,
    mode: Mode,
    /// Name generation (tests replace it to force collisions).
    generate_name: fn(&str) -> String,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("resource", &self.strategy.info().resource)
            .field("key_root", &self.key_root)
            .finish()
    }
}

/// What an update function run decided, beyond the new object.
#[derive(Default)]
struct UpdateState {
    /// The object did not exist and is being created.
    creating: bool,
    /// The update removed the last finalizer of an object being deleted: delete it.
    delete: Option<Value>,
    /// Nothing changed: the stored bytes are kept (no write, same resourceVersion).
    unchanged: bool,
}

/// A sentinel carried through the storage's update loop to stop it.
fn stop_update() -> StorageError {
    StorageError::Internal("registry: stop update".into())
}

fn is_stop(err: &StorageError) -> bool {
    matches!(err, StorageError::Internal(m) if m == "registry: stop update")
}

impl Store {
    /// A store for the strategy's resource over `storage`, keeping objects under `key_root`
    /// (`<prefix>/<resource>`, e.g. `/registry/configmaps`; a trailing `/` is ignored).
    pub fn new(strategy: SharedStrategy, storage: Arc<dyn Storage>, key_root: &str) -> Self {
        Store {
            strategy,
            storage,
            key_root: key_root.trim_end_matches('/').to_string(),
            return_deleted_object: false,
            mode: Mode::Main,
            generate_name: meta::generate_name,
        }
    }

    /// Whether DELETE returns the deleted object (upstream `ReturnDeletedObject`, e.g. pods)
    /// instead of a `Success` Status with the object's name, group, resource and uid.
    pub fn with_return_deleted_object(mut self, yes: bool) -> Self {
        self.return_deleted_object = yes;
        self
    }

    /// The key root, without a trailing `/`.
    pub fn key_root(&self) -> &str {
        &self.key_root
    }

    /// The storage.
    pub fn storage(&self) -> &Arc<dyn Storage> {
        &self.storage
    }

    /// The shared strategy.
    pub fn shared_strategy(&self) -> &SharedStrategy {
        &self.strategy
    }

    fn res(&self) -> &ResourceInfo {
        self.strategy.info()
    }

    /// The key of an object (upstream `NamespaceKeyFunc` / `NoNamespaceKeyFunc`): 400 without
    /// a namespace (namespaced resources) or with an empty or unusable name.
    pub fn key(&self, namespace: &str, name: &str) -> Result<String, ApiError> {
        if self.res().namespaced && namespace.is_empty() {
            return Err(ApiError::bad_request("Namespace parameter required."));
        }
        if name.is_empty() {
            return Err(ApiError::bad_request("Name parameter required."));
        }
        let msgs = meta::path_segment_errors(name, false);
        if !msgs.is_empty() {
            return Err(ApiError::bad_request(format!(
                "Name parameter invalid: {name:?}: {}",
                msgs.join(";")
            )));
        }
        Ok(if self.res().namespaced {
            format!("{}/{namespace}/{name}", self.key_root)
        } else {
            format!("{}/{name}", self.key_root)
        })
    }

    /// The prefix of a collection: one namespace, or everything.
    fn collection_key(&self, namespace: &str) -> String {
        if self.res().namespaced && !namespace.is_empty() {
            format!("{}/{namespace}/", self.key_root)
        } else {
            format!("{}/", self.key_root)
        }
    }

    fn api_err(&self, err: StorageError, op: Operation, name: &str) -> ApiError {
        err.to_api_error(op, &self.res().group, &self.res().resource, name)
    }

    fn not_found(&self, name: &str) -> ApiError {
        ApiError::not_found(&self.res().group, &self.res().resource, name)
    }

    /// A stored object as the API returns it (with kind and apiVersion).
    fn decode(&self, obj: &Object) -> Result<Value, ApiError> {
        let mut value: Value = serde_json::from_slice(&obj.value).map_err(ApiError::internal)?;
        set_type_meta(&mut value, &self.res().kind, &self.res().api_version());
        Ok(value)
    }

    fn encode(value: &Value) -> Result<Bytes, ApiError> {
        serde_json::to_vec(value)
            .map(Bytes::from)
            .map_err(ApiError::internal)
    }

    /// Upstream `EnsureObjectNamespaceMatchesRequestNamespace` for the resource's scope.
    fn ensure_namespace(&self, ctx: &RequestContext, obj: &mut Value) -> Result<(), ApiError> {
        let expected = if self.res().namespaced {
            ctx.namespace.as_str()
        } else {
            ""
        };
        let have = meta_str(obj, "namespace").to_string();
        if have == expected {
            Ok(())
        } else if have.is_empty() || expected.is_empty() {
            set_meta_str(obj, "namespace", expected)
        } else {
            Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ))
        }
    }

    /// Everything a create does before the write (upstream `FillObjectMetaSystemFields`, the
    /// name generation of `Store.create` and `rest.BeforeCreate`).
    fn before_create(&self, ctx: &RequestContext, obj: &mut Value) -> Result<(), ApiError> {
        let uid = uuid::Uuid::new_v4().to_string();
        let m = meta_mut(obj)?;
        m.insert("uid".into(), Value::String(uid));
        m.insert(
            "creationTimestamp".into(),
            Value::String(meta::now_rfc3339()),
        );
        for field in [
            "resourceVersion",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "selfLink",
        ] {
            m.remove(field);
        }
        let name = meta_str(obj, "name");
        let base = meta_str(obj, "generateName");
        if name.is_empty() && !base.is_empty() {
            let generated = (self.generate_name)(base);
            set_meta_str(obj, "name", &generated)?;
        }
        self.ensure_namespace(ctx, obj)?;
        set_type_meta(obj, &self.res().kind, &self.res().api_version());
        self.strategy.prepare_for_create(obj);
        if self.strategy.tracks_generation() {
            meta_mut(obj)?.insert("generation".into(), json!(1));
        }
        let name = meta_str(obj, "name").to_string();
        let errs = self.strategy.validate(obj);
        if !errs.is_empty() {
            return Err(invalid(self.res(), &name, &errs));
        }
        // Common ObjectMeta checks run after the strategy's, so specific messages win.
        let errs = meta::validate_object_meta(obj, self.res().namespaced);
        if !errs.is_empty() {
            return Err(invalid(self.res(), &name, &errs));
        }
        Ok(())
    }

    async fn create_once(
        &self,
        ctx: &RequestContext,
        mut obj: Value,
        dry_run: bool,
    ) -> Result<Value, ApiError> {
        self.before_create(ctx, &mut obj)?;
        let name = meta_str(&obj, "name").to_string();
        if let Some(adm) = &ctx.admission {
            adm.validate(
                AdmissionOp::Create,
                &ctx.namespace,
                &name,
                Some(&mut obj),
                None,
            )
            .await?;
        }
        let key = self.key(meta_str(&obj, "namespace"), &name)?;
        let existing = if dry_run {
            let got = self
                .storage
                .get(
                    &key,
                    storage::GetOptions {
                        ignore_not_found: true,
                        ..Default::default()
                    },
                )
                .await
                .map_err(|e| self.api_err(e, Operation::Get, &name))?;
            match got {
                // Dry run: everything but the write; the object has no resourceVersion.
                None => return Ok(obj),
                Some(existing) => existing,
            }
        } else {
            match self.storage.create(&key, Self::encode(&obj)?).await {
                Ok(created) => return self.decode(&created),
                Err(e) if matches!(e, StorageError::KeyExists { .. }) => {
                    let got = self.storage.get(&key, storage::GetOptions::default()).await;
                    match got {
                        Ok(Some(existing)) => existing,
                        _ => return Err(self.api_err(e, Operation::Create, &name)),
                    }
                }
                Err(e) => return Err(self.api_err(e, Operation::Create, &name)),
            }
        };
        let mut err = ApiError::already_exists(&self.res().group, &self.res().resource, &name);
        if self.decode(&existing).is_ok_and(|v| is_deleting(&v)) {
            err.0.message = format!("object is being deleted: {}", err.0.message);
        }
        Err(err)
    }

    async fn create_inner(
        &self,
        ctx: &RequestContext,
        obj: Value,
        opts: &CreateOptions,
    ) -> Result<Value, ApiError> {
        if !obj.is_object() {
            return Err(ApiError::bad_request("the object is not a JSON object"));
        }
        // Upstream's storage refuses a create carrying a resourceVersion with a plain error,
        // which the API renders as a 500 with an unknown reason.
        if storage::versioner::parse_resource_version(meta_str(&obj, "resourceVersion"))
            .is_ok_and(|rv| rv != 0)
        {
            return Err(ApiError::new(
                http::StatusCode::INTERNAL_SERVER_ERROR,
                "",
                RESOURCE_VERSION_SET_ON_CREATE,
            ));
        }
        let generated =
            meta_str(&obj, "name").is_empty() && !meta_str(&obj, "generateName").is_empty();
        if !generated {
            return self.create_once(ctx, obj, opts.is_dry_run()).await;
        }
        let mut last = None;
        for _ in 0..MAX_NAME_GENERATION_ATTEMPTS {
            match self.create_once(ctx, obj.clone(), opts.is_dry_run()).await {
                Err(e) if e.reason() == reason::ALREADY_EXISTS => last = Some(e),
                other => return other,
            }
        }
        // Upstream `CheckGeneratedNameError`: a generated name that keeps colliding is an
        // AlreadyExists the client may retry.
        let name = last
            .and_then(|e| e.0.details.map(|d| d.name))
            .unwrap_or_default();
        Err(self.generate_name_conflict(&name))
    }

    /// Upstream `NewGenerateNameConflict`.
    fn generate_name_conflict(&self, name: &str) -> ApiError {
        let qualified = crate::status::qualified_resource(&self.res().group, &self.res().resource);
        ApiError::new(
            http::StatusCode::CONFLICT,
            reason::ALREADY_EXISTS,
            format!(
                "{qualified} {name:?} already exists, the server was not able to generate a unique name for the object"
            ),
        )
        .with_details(StatusDetails {
            name: name.to_string(),
            group: self.res().group.clone(),
            kind: self.res().resource.clone(),
            retry_after_seconds: 1,
            ..Default::default()
        })
    }

    /// The `/status` subresource's update: the old object with the new `status` (and
    /// managedFields, which the field manager maintains per subresource).
    fn status_only(new: &Value, old: &Value) -> Value {
        let mut out = old.clone();
        if let Some(top) = out.as_object_mut() {
            match new.get("status") {
                Some(s) => {
                    top.insert("status".into(), s.clone());
                }
                None => {
                    top.remove("status");
                }
            }
            if let Some(m) = top.get_mut("metadata").and_then(Value::as_object_mut) {
                let new_meta = meta(new);
                for field in ["managedFields", "resourceVersion"] {
                    match new_meta.and_then(|nm| nm.get(field)) {
                        Some(v) => {
                            m.insert(field.into(), v.clone());
                        }
                        None => {
                            m.remove(field);
                        }
                    }
                }
            }
        }
        out
    }

    /// Upstream `rest.BeforeUpdate` plus the strategies' generation bump.
    fn before_update(
        &self,
        ctx: &RequestContext,
        obj: &mut Value,
        old: &Value,
    ) -> Result<(), ApiError> {
        if self.mode == Mode::Status {
            *obj = Self::status_only(obj, old);
        }
        self.ensure_namespace(ctx, obj)?;
        let old_meta = meta(old).cloned().unwrap_or_default();
        let m = meta_mut(obj)?;
        // Requests cannot set the generation.
        match old_meta.get("generation") {
            Some(g) => m.insert("generation".into(), g.clone()),
            None => m.remove("generation"),
        };
        set_type_meta(obj, &self.res().kind, &self.res().api_version());
        if self.mode == Mode::Main {
            self.strategy.prepare_for_update(obj, old);
        }
        let m = meta_mut(obj)?;
        let empty = |v: Option<&Value>| v.is_none_or(|v| v.is_null() || v == "");
        if empty(m.get("uid"))
            && let Some(uid) = old_meta.get("uid")
        {
            m.insert("uid".into(), uid.clone());
        }
        for field in ["creationTimestamp", "deletionTimestamp"] {
            if let Some(v) = old_meta.get(field).filter(|v| !v.is_null()) {
                m.insert(field.into(), v.clone());
            }
        }
        if empty(m.get("deletionGracePeriodSeconds"))
            && let Some(v) = old_meta.get("deletionGracePeriodSeconds")
        {
            m.insert("deletionGracePeriodSeconds".into(), v.clone());
        }
        if self.mode == Mode::Main
            && self.strategy.tracks_generation()
            && generation(obj) == generation(old)
            && meta::differs_outside_meta_and_status(obj, old)
        {
            let next = generation(old) + 1;
            meta_mut(obj)?.insert("generation".into(), json!(next));
        }
        let name = meta_str(obj, "name").to_string();
        let mut errs = meta::validate_object_meta_update(obj, old, self.res().namespaced);
        errs.extend(self.strategy.validate_update(obj, old));
        if !errs.is_empty() {
            return Err(invalid(self.res(), &name, &errs));
        }
        Ok(())
    }

    /// One run of the update function against the current object (the body of upstream's
    /// `GuaranteedUpdate` callback in `Store.Update`).
    fn try_update(
        &self,
        ctx: &RequestContext,
        name: &str,
        current: Option<&Object>,
        update: &mut UpdateFunc,
        force_allow_create: bool,
        state: &mut UpdateState,
    ) -> Result<Value, ApiError> {
        *state = UpdateState::default();
        let existing = current.map(|o| self.decode(o)).transpose()?;
        let obj = self.run_update_func(name, existing.as_ref(), update, force_allow_create)?;
        self.finish_update(ctx, name, obj, existing, current, state)
    }

    /// The update function on the current object (`None` when it does not exist).
    fn run_update_func(
        &self,
        name: &str,
        existing: Option<&Value>,
        update: &mut UpdateFunc,
        force_allow_create: bool,
    ) -> Result<Value, ApiError> {
        let allow_create = self.mode == Mode::Main
            && (self.strategy.allow_create_on_update() || force_allow_create);
        if existing.is_none() && !allow_create {
            return Err(self.not_found(name));
        }
        let obj = update(existing)?;
        if !obj.is_object() {
            return Err(ApiError::bad_request("the object is not a JSON object"));
        }
        Ok(obj)
    }

    /// What an update does with the new object once the update function (and mutating
    /// admission) produced it: the resourceVersion checks and the strategy's preparation and
    /// validation (`before_create` when the update creates).
    fn finish_update(
        &self,
        ctx: &RequestContext,
        name: &str,
        mut obj: Value,
        existing: Option<Value>,
        current: Option<&Object>,
        state: &mut UpdateState,
    ) -> Result<Value, ApiError> {
        let new_rv = storage::versioner::parse_resource_version(meta_str(&obj, "resourceVersion"))
            .map_err(|e| self.api_err(e, Operation::Update, name))?;
        let (Some(old), Some(cur)) = (existing, current) else {
            state.creating = true;
            self.before_create(ctx, &mut obj)?;
            return Ok(obj);
        };
        if new_rv == 0 && self.strategy.allow_unconditional_update() {
            set_meta_str(
                &mut obj,
                "resourceVersion",
                &cur.resource_version.to_string(),
            )?;
        } else if new_rv == 0 {
            // Upstream names the resource in the kind position here.
            let info = ResourceInfo {
                group: self.res().group.clone(),
                kind: self.res().resource.clone(),
                ..Default::default()
            };
            return Err(invalid(
                &info,
                name,
                &[super::FieldError::invalid(
                    "metadata.resourceVersion",
                    0,
                    "must be specified for an update",
                )],
            ));
        } else if new_rv != cur.resource_version {
            return Err(ApiError::conflict(
                &self.res().group,
                &self.res().resource,
                name,
                OPTIMISTIC_LOCK_ERROR,
            ));
        }
        self.before_update(ctx, &mut obj, &old)?;
        if should_delete_during_update(&obj, &old) {
            state.delete = Some(obj.clone());
        } else if obj == old {
            state.unchanged = true;
        }
        Ok(obj)
    }

    async fn update_inner(
        &self,
        ctx: &RequestContext,
        name: &str,
        mut update: UpdateFunc,
        opts: &UpdateOptions,
        force_allow_create: bool,
    ) -> Result<(Value, bool), ApiError> {
        if let Some(adm) = ctx
            .admission
            .as_ref()
            .filter(|a| a.handles(AdmissionOp::Update) || a.handles(AdmissionOp::Create))
        {
            return self
                .update_admitted(ctx, adm, name, update, opts, force_allow_create)
                .await;
        }
        let key = self.key(&ctx.namespace, name)?;
        let mut state = UpdateState::default();
        if opts.is_dry_run() {
            let current = self
                .storage
                .get(
                    &key,
                    storage::GetOptions {
                        ignore_not_found: true,
                        ..Default::default()
                    },
                )
                .await
                .map_err(|e| self.api_err(e, Operation::Get, name))?;
            let obj = self.try_update(
                ctx,
                name,
                current.as_ref(),
                &mut update,
                force_allow_create,
                &mut state,
            )?;
            if state.unchanged
                && let Some(cur) = &current
            {
                return Ok((self.decode(cur)?, false));
            }
            return Ok((obj, state.creating));
        }
        let mut last: Option<Value> = None;
        let result = {
            let mut run = |cur: Option<&Object>| -> storage::Result<Bytes> {
                let obj = self
                    .try_update(ctx, name, cur, &mut update, force_allow_create, &mut state)
                    .map_err(StorageError::Api)?;
                if state.delete.is_some() {
                    return Err(stop_update());
                }
                if state.unchanged
                    && let Some(cur) = cur
                {
                    // The stored bytes again: storage sees no change and does not write.
                    return Ok(cur.value.clone());
                }
                let bytes = Self::encode(&obj).map_err(StorageError::Api)?;
                last = Some(obj);
                Ok(bytes)
            };
            self.storage
                .guaranteed_update(&key, true, None, &mut run)
                .await
        };
        match result {
            Ok(stored) => Ok((self.decode(&stored)?, state.creating)),
            Err(e) if is_stop(&e) => {
                let obj = state.delete.take().or(last).unwrap_or(Value::Null);
                match self.storage.delete(&key, None, None).await {
                    // Another request may have deleted it first.
                    Ok(_) | Err(StorageError::KeyNotFound { .. }) => Ok((obj, false)),
                    Err(e) => Err(self.api_err(e, Operation::Delete, name)),
                }
            }
            Err(e) => {
                let op = if state.creating {
                    Operation::Create
                } else {
                    Operation::Update
                };
                Err(self.api_err(e, op, name))
            }
        }
    }

    /// Reads the page a LIST asks for.
    async fn list_page(
        &self,
        ctx: &RequestContext,
        opts: &ListOptions,
    ) -> Result<storage::ListResult, ApiError> {
        validate_list_options(opts)?;
        let predicate =
            options::predicate(&self.strategy, &opts.label_selector, &opts.field_selector)?;
        let namespace = self.narrowed_namespace(ctx, &predicate);
        let key = self.collection_key(&namespace);
        let sopts = storage::ListOptions {
            resource_version: opts.resource_version.clone(),
            resource_version_match: ResourceVersionMatch::parse(&opts.resource_version_match)
                .unwrap_or_default(),
            predicate,
            limit: opts.limit,
            continue_token: opts.continue_.clone(),
            recursive: true,
            ..Default::default()
        };
        self.storage
            .list(&key, sopts)
            .await
            .map_err(|e| self.api_err(e, Operation::List, ""))
    }

    /// The list's `metadata`: resourceVersion, continue and remainingItemCount.
    fn list_meta(page: &storage::ListResult) -> Map<String, Value> {
        let mut list_meta = Map::new();
        list_meta.insert(
            "resourceVersion".into(),
            Value::String(page.resource_version.to_string()),
        );
        if let Some(token) = &page.continue_token {
            list_meta.insert("continue".into(), Value::String(token.clone()));
        }
        if let Some(n) = page.remaining_item_count {
            list_meta.insert("remainingItemCount".into(), json!(n));
        }
        list_meta
    }

    async fn list_inner(
        &self,
        ctx: &RequestContext,
        opts: &ListOptions,
    ) -> Result<Value, ApiError> {
        let page = self.list_page(ctx, opts).await?;
        let items = page
            .items
            .iter()
            .map(|o| self.decode(o))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(object([
            ("kind", Value::String(self.res().list_kind.clone())),
            ("apiVersion", Value::String(self.res().api_version())),
            ("metadata", Value::Object(Self::list_meta(&page))),
            ("items", Value::Array(items)),
        ]))
    }

    async fn list_json_inner(
        &self,
        ctx: &RequestContext,
        opts: &ListOptions,
    ) -> Result<Option<Vec<u8>>, ApiError> {
        let page = self.list_page(ctx, opts).await?;
        let res = self.res();
        let api_version = res.api_version();
        let ty = list_json::ListType {
            list_kind: &res.list_kind,
            kind: &res.kind,
            api_version: &api_version,
        };
        list_json::write_list(&ty, &Self::list_meta(&page), &page.items, |o| {
            self.decode(o)
        })
        .map(Some)
    }

    /// A request across namespaces whose field selector names one namespace reads only that
    /// namespace (upstream `ListPredicate` / `WatchPredicate`).
    fn narrowed_namespace(
        &self,
        ctx: &RequestContext,
        predicate: &storage::SelectionPredicate,
    ) -> String {
        if !ctx.namespace.is_empty() || !self.res().namespaced {
            return ctx.namespace.clone();
        }
        match predicate.field.requires_exact_match("metadata.namespace") {
            Some(ns)
                if !ns.is_empty()
                    && meta::validate_object_meta(
                        &json!({"metadata": {"name": "x", "namespace": ns}}),
                        true,
                    )
                    .is_empty() =>
            {
                ns.to_string()
            }
            _ => String::new(),
        }
    }

    async fn watch_inner(
        &self,
        ctx: &RequestContext,
        opts: &ListOptions,
    ) -> Result<ObjectWatch, ApiError> {
        validate_watch_options(opts)?;
        let predicate =
            options::predicate(&self.strategy, &opts.label_selector, &opts.field_selector)?;
        let namespace = self.narrowed_namespace(ctx, &predicate);
        let key = self.collection_key(&namespace);
        let sopts = storage::ListOptions {
            resource_version: opts.resource_version.clone(),
            resource_version_match: ResourceVersionMatch::parse(&opts.resource_version_match)
                .unwrap_or_default(),
            predicate,
            recursive: true,
            allow_watch_bookmarks: opts.allow_watch_bookmarks,
            send_initial_events: opts.send_initial_events,
            progress_notify: true,
            ..Default::default()
        };
        let stream = self
            .storage
            .watch(&key, sopts)
            .await
            .map_err(|e| self.api_err(e, Operation::Watch, ""))?;
        let me = self.clone();
        let bookmarks = opts.allow_watch_bookmarks;
        Ok(Box::pin(stream.filter_map(move |ev| {
            futures::future::ready(me.translate(ev, bookmarks))
        })))
    }

    /// A storage watch event as the REST layer sends it.
    fn translate(&self, ev: WatchEvent, bookmarks: bool) -> Option<ObjectEvent> {
        let decode = |o: &Object| self.decode(o);
        Some(match ev {
            WatchEvent::Added(o) => decode(&o).map_or_else(ObjectEvent::Error, ObjectEvent::Added),
            WatchEvent::Modified(o) => {
                decode(&o).map_or_else(ObjectEvent::Error, ObjectEvent::Modified)
            }
            WatchEvent::Deleted(o) => {
                decode(&o).map_or_else(ObjectEvent::Error, ObjectEvent::Deleted)
            }
            WatchEvent::Bookmark {
                resource_version,
                initial_events_end,
            } => {
                // Progress notifications reach only watchers that asked for bookmarks.
                if !bookmarks {
                    return None;
                }
                ObjectEvent::Bookmark(self.bookmark(resource_version, initial_events_end))
            }
            WatchEvent::Error(e) => ObjectEvent::Error(e),
        })
    }

    /// A bookmark object: the kind with only `metadata.resourceVersion` (and the
    /// initial-events-end annotation).
    pub fn bookmark(&self, resource_version: u64, initial_events_end: bool) -> Value {
        let mut m = Map::new();
        m.insert(
            "resourceVersion".into(),
            Value::String(resource_version.to_string()),
        );
        if initial_events_end {
            m.insert(
                "annotations".into(),
                json!({ INITIAL_EVENTS_END_ANNOTATION: "true" }),
            );
        }
        json!({
            "kind": self.res().kind,
            "apiVersion": self.res().api_version(),
            "metadata": m,
        })
    }

    async fn delete_collection_inner(
        &self,
        ctx: &RequestContext,
        delete: &DeleteOptions,
        list: &ListOptions,
    ) -> Result<Value, ApiError> {
        validate_delete_options(delete)?;
        let listed = self.list_inner(ctx, list).await?;
        let items = listed
            .get("items")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for item in &items {
            let item_ctx = RequestContext {
                namespace: meta_str(item, "namespace").to_string(),
                ..ctx.clone()
            };
            match self
                .delete_inner(&item_ctx, meta_str(item, "name"), delete)
                .await
            {
                // Deleted concurrently: that is what we wanted.
                Err(e) if e.code() == http::StatusCode::NOT_FOUND => {}
                Err(e) => return Err(e),
                Ok(_) => {}
            }
        }
        Ok(listed)
    }

    fn served_verbs(&self) -> Vec<&'static str> {
        match self.mode {
            Mode::Main => vec![
                "create",
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "update",
                "watch",
            ],
            Mode::Status => vec!["get", "patch", "update"],
        }
    }

    async fn get_inner(
        &self,
        ctx: &RequestContext,
        name: &str,
        opts: &GetOptions,
    ) -> Result<Value, ApiError> {
        let key = self.key(&ctx.namespace, name)?;
        let got = self
            .storage
            .get(
                &key,
                storage::GetOptions {
                    resource_version: opts.resource_version.clone(),
                    ignore_not_found: false,
                },
            )
            .await
            .map_err(|e| self.api_err(e, Operation::Get, name))?;
        match got {
            Some(o) => self.decode(&o),
            None => Err(self.not_found(name)),
        }
    }
}

/// Upstream `shouldDeleteDuringUpdate`: the update removed the last finalizer of an object
/// whose deletion (without a pending grace period) was requested.
fn should_delete_during_update(new: &Value, old: &Value) -> bool {
    if !finalizers(new).is_empty() || finalizers(old).is_empty() || !is_deleting(old) {
        return false;
    }
    let grace = meta(old)
        .and_then(|m| m.get("deletionGracePeriodSeconds"))
        .and_then(Value::as_i64);
    grace.is_none_or(|g| g == 0)
}

impl RestStorage for Store {
    fn info(&self) -> &ResourceInfo {
        self.res()
    }

    fn verbs(&self) -> Vec<&'static str> {
        self.served_verbs()
    }

    fn get<'a>(
        &'a self,
        ctx: &'a RequestContext,
        name: &'a str,
        opts: &'a GetOptions,
    ) -> BoxFuture<'a, Result<Value, ApiError>> {
        Box::pin(self.get_inner(ctx, name, opts))
    }

    fn list<'a>(
        &'a self,
        ctx: &'a RequestContext,
        opts: &'a ListOptions,
    ) -> BoxFuture<'a, Result<Value, ApiError>> {
        Box::pin(self.list_inner(ctx, opts))
    }

    fn list_json<'a>(
        &'a self,
        ctx: &'a RequestContext,
        opts: &'a ListOptions,
    ) -> BoxFuture<'a, Result<Option<Vec<u8>>, ApiError>> {
        Box::pin(self.list_json_inner(ctx, opts))
    }

    fn watch<'a>(
        &'a self,
        ctx: &'a RequestContext,
        opts: &'a ListOptions,
    ) -> BoxFuture<'a, Result<ObjectWatch, ApiError>> {
        Box::pin(self.watch_inner(ctx, opts))
    }

    fn create<'a>(
        &'a self,
        ctx: &'a RequestContext,
        obj: Value,
        opts: &'a CreateOptions,
    ) -> BoxFuture<'a, Result<Value, ApiError>> {
        Box::pin(self.create_inner(ctx, obj, opts))
    }

    fn update<'a>(
        &'a self,
        ctx: &'a RequestContext,
        name: &'a str,
        update: UpdateFunc,
        opts: &'a UpdateOptions,
        force_allow_create: bool,
    ) -> BoxFuture<'a, Result<(Value, bool), ApiError>> {
        Box::pin(self.update_inner(ctx, name, update, opts, force_allow_create))
    }

    fn delete<'a>(
        &'a self,
        ctx: &'a RequestContext,
        name: &'a str,
        opts: &'a DeleteOptions,
    ) -> BoxFuture<'a, Result<(Value, bool), ApiError>> {
        Box::pin(self.delete_inner(ctx, name, opts))
    }

    fn delete_collection<'a>(
        &'a self,
        ctx: &'a RequestContext,
        delete: &'a DeleteOptions,
        list: &'a ListOptions,
    ) -> BoxFuture<'a, Result<Value, ApiError>> {
        Box::pin(self.delete_collection_inner(ctx, delete, list))
    }

    fn strategy(&self) -> Option<&dyn Strategy> {
        Some(self.strategy.as_ref())
    }

    fn runs_admission(&self) -> bool {
        true
    }
}
