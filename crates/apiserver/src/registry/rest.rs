//! The interface between the REST handlers and storage of one resource (upstream
//! `k8s.io/apiserver/pkg/registry/rest`): the handlers decode requests into these options and
//! objects, call a [`RestStorage`], and encode what it returns.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ResourceInfo;
use crate::request::UserInfo;
use crate::request::warning::WarningRecorder;
use crate::status::ApiError;

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Who is asking, and where (upstream's request context).
#[derive(Clone, Debug, Default)]
pub struct RequestContext {
    /// Namespace from the URL (empty for cluster-scoped and all-namespaces requests).
    pub namespace: String,
    /// The object name from the URL (empty on collections); subresource creates such as
    /// `pods/{name}/binding` check the body's name against it (upstream `NamedCreater`).
    pub name: String,
    /// The requesting user.
    pub user: Option<Arc<UserInfo>>,
    /// Where to add `Warning` headers.
    pub warnings: Option<Arc<WarningRecorder>>,
    /// The request's audit state, where handlers and storages add annotations.
    pub audit: Option<Arc<crate::audit::AuditContext>>,
    /// The admission of this request, when the server has admission plugins: the generic
    /// store calls it at upstream's places (see [`crate::admission`]).
    pub admission: Option<Arc<crate::admission::RequestAdmission>>,
}

impl RequestContext {
    /// Adds a warning (agent `-`).
    pub fn warn(&self, text: &str) {
        if let Some(w) = &self.warnings {
            w.add("-", text);
        }
    }

    /// Adds an annotation to the request's audit event.
    pub fn add_audit_annotation(&self, key: &str, value: &str) {
        if let Some(a) = &self.audit {
            a.add_annotation(key, value);
        }
    }

    /// This context without admission: for storages that call other storages on behalf of a
    /// request whose admission already ran.
    pub fn without_admission(&self) -> RequestContext {
        RequestContext {
            admission: None,
            ..self.clone()
        }
    }
}

/// `metav1.GetOptions`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GetOptions {
    /// `""` most recent, `"0"` any, `N` not older than N.
    pub resource_version: String,
}

/// `metav1.ListOptions` (also used for watches).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ListOptions {
    /// Label selector.
    pub label_selector: String,
    /// Field selector.
    pub field_selector: String,
    /// Watch instead of list.
    pub watch: bool,
    /// Ask for bookmarks.
    pub allow_watch_bookmarks: bool,
    /// Resource version.
    pub resource_version: String,
    /// `NotOlderThan`, `Exact` or empty.
    pub resource_version_match: String,
    /// Watch timeout in seconds.
    pub timeout_seconds: Option<i64>,
    /// Page size.
    pub limit: i64,
    /// Continue token.
    #[serde(rename = "continue")]
    pub continue_: String,
    /// Start a watch with the current state (watch-list).
    pub send_initial_events: Option<bool>,
}

/// `metav1.CreateOptions`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CreateOptions {
    /// `["All"]` for a dry run.
    pub dry_run: Vec<String>,
    /// The field manager.
    pub field_manager: String,
    /// `Ignore`, `Warn` or `Strict`.
    pub field_validation: String,
}

impl CreateOptions {
    /// Whether nothing should be persisted.
    pub fn is_dry_run(&self) -> bool {
        self.dry_run.iter().any(|d| d == "All")
    }
}

/// `metav1.UpdateOptions` (PATCH uses it too, with `force`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct UpdateOptions {
    /// `["All"]` for a dry run.
    pub dry_run: Vec<String>,
    /// The field manager.
    pub field_manager: String,
    /// `Ignore`, `Warn` or `Strict`.
    pub field_validation: String,
}

impl UpdateOptions {
    /// Whether nothing should be persisted.
    pub fn is_dry_run(&self) -> bool {
        self.dry_run.iter().any(|d| d == "All")
    }
}

/// `metav1.Preconditions`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Preconditions {
    /// Required UID.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// Required resource version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
}

/// `metav1.DeleteOptions`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DeleteOptions {
    /// Grace period; 0 deletes immediately.
    pub grace_period_seconds: Option<i64>,
    /// Preconditions.
    pub preconditions: Option<Preconditions>,
    /// Deprecated; exclusive with `propagationPolicy`.
    pub orphan_dependents: Option<bool>,
    /// `Foreground`, `Background` or `Orphan`.
    pub propagation_policy: Option<String>,
    /// `["All"]` for a dry run.
    pub dry_run: Vec<String>,
}

impl DeleteOptions {
    /// Whether nothing should be persisted.
    pub fn is_dry_run(&self) -> bool {
        self.dry_run.iter().any(|d| d == "All")
    }
}

/// Computes the new object of an update from the current one (`None` when it does not exist);
/// called again after a conflict (upstream `UpdatedObjectInfo`). PATCH applies its patch here.
pub type UpdateFunc = Box<dyn FnMut(Option<&Value>) -> Result<Value, ApiError> + Send>;

/// A request to a connect subresource (upstream `rest.Connecter`, e.g. `pods/exec`, and the
/// streaming `rest.GetterWithOptions` such as `pods/log`): its verb and its query, from
/// which the storage decodes its own options (`PodExecOptions`, `PodLogOptions`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConnectRequest {
    /// The request verb (`get` for GET, `create` for POST).
    pub verb: String,
    /// The raw query string.
    pub query: String,
}

/// What a connect subresource answers when it does not fail.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConnectResponse {
    /// No output at all (upstream's null stream): `204 No Content` without a body.
    Empty,
    /// A body of `content_type`, answered with `200 OK`.
    Stream {
        /// The `Content-Type` header.
        content_type: String,
        /// The body.
        body: bytes::Bytes,
    },
}

/// A watch event as the REST layer encodes it.
#[derive(Clone, Debug, PartialEq)]
pub enum ObjectEvent {
    /// A new object (or one that entered the selector, or part of the initial state).
    Added(Value),
    /// A changed object.
    Modified(Value),
    /// A deleted object (or one that left the selector).
    Deleted(Value),
    /// A bookmark: an object of the resource's kind carrying only
    /// `metadata.resourceVersion` (and the initial-events-end annotation when it ends the
    /// initial events of a watch-list).
    Bookmark(Value),
    /// An error, as a Status; the stream ends after it.
    Error(ApiError),
}

/// A stream of watch events; dropping it ends the watch.
pub type ObjectWatch = Pin<Box<dyn futures::Stream<Item = ObjectEvent> + Send>>;

/// One resource's storage as the REST handlers see it. Every verb has a default that answers
/// 405 MethodNotAllowed, so read-only or partial resources implement only what they serve.
pub trait RestStorage: Send + Sync {
    /// The resource.
    fn info(&self) -> &ResourceInfo;

    /// The verbs served, for discovery (sorted by the caller).
    fn verbs(&self) -> Vec<&'static str>;

    /// Whether request bodies of `api_version` (`group/version`) are accepted besides the
    /// resource's own (upstream `GroupVersionAcceptor`, e.g. `policy/v1beta1` evictions).
    fn accepts_group_version(&self, api_version: &str) -> bool {
        api_version == self.info().api_version()
    }

    /// GET of one object.
    fn get<'a>(
        &'a self,
        _ctx: &'a RequestContext,
        _name: &'a str,
        _opts: &'a GetOptions,
    ) -> BoxFuture<'a, Result<Value, ApiError>> {
        Box::pin(async { Err(method_not_supported(self.info(), "get")) })
    }

    /// LIST: a `<Kind>List` object.
    fn list<'a>(
        &'a self,
        _ctx: &'a RequestContext,
        _opts: &'a ListOptions,
    ) -> BoxFuture<'a, Result<Value, ApiError>> {
        Box::pin(async { Err(method_not_supported(self.info(), "list")) })
    }

    /// LIST written directly as the compact JSON of the `<Kind>List` (one line, as
    /// [`gojson::to_line`](crate::util::gojson::to_line) writes it), for storages that can
    /// do that without building the list as a value. `None`: not supported, use
    /// [`list`](Self::list).
    fn list_json<'a>(
        &'a self,
        _ctx: &'a RequestContext,
        _opts: &'a ListOptions,
    ) -> BoxFuture<'a, Result<Option<Vec<u8>>, ApiError>> {
        Box::pin(async { Ok(None) })
    }

    /// WATCH.
    fn watch<'a>(
        &'a self,
        _ctx: &'a RequestContext,
        _opts: &'a ListOptions,
    ) -> BoxFuture<'a, Result<ObjectWatch, ApiError>> {
        Box::pin(async { Err(method_not_supported(self.info(), "watch")) })
    }

    /// CREATE: returns the created object.
    fn create<'a>(
        &'a self,
        _ctx: &'a RequestContext,
        _obj: Value,
        _opts: &'a CreateOptions,
    ) -> BoxFuture<'a, Result<Value, ApiError>> {
        Box::pin(async { Err(method_not_supported(self.info(), "create")) })
    }

    /// UPDATE (PUT and PATCH): returns the object and whether it was created.
    fn update<'a>(
        &'a self,
        _ctx: &'a RequestContext,
        _name: &'a str,
        _update: UpdateFunc,
        _opts: &'a UpdateOptions,
        _force_allow_create: bool,
    ) -> BoxFuture<'a, Result<(Value, bool), ApiError>> {
        Box::pin(async { Err(method_not_supported(self.info(), "update")) })
    }

    /// DELETE: returns the object and whether it was deleted immediately (false when it only
    /// got a deletionTimestamp because of finalizers or a grace period).
    fn delete<'a>(
        &'a self,
        _ctx: &'a RequestContext,
        _name: &'a str,
        _opts: &'a DeleteOptions,
    ) -> BoxFuture<'a, Result<(Value, bool), ApiError>> {
        Box::pin(async { Err(method_not_supported(self.info(), "delete")) })
    }

    /// DELETECOLLECTION: returns the `<Kind>List` of deleted objects.
    fn delete_collection<'a>(
        &'a self,
        _ctx: &'a RequestContext,
        _delete: &'a DeleteOptions,
        _list: &'a ListOptions,
    ) -> BoxFuture<'a, Result<Value, ApiError>> {
        Box::pin(async { Err(method_not_supported(self.info(), "deletecollection")) })
    }

    /// CONNECT-style subresources (their [`verbs`](Self::verbs) include `"connect"`, which
    /// discovery leaves out): every served verb on the item path comes here with the raw query.
    fn connect<'a>(
        &'a self,
        _ctx: &'a RequestContext,
        _name: &'a str,
        _request: &'a ConnectRequest,
    ) -> BoxFuture<'a, Result<ConnectResponse, ApiError>> {
        Box::pin(async { Err(method_not_supported(self.info(), "connect")) })
    }

    /// The options object a connect request is admitted with (`PodExecOptions` …); `None`
    /// for streaming reads that upstream serves as GETs (`pods/log`), which are not admitted.
    fn connect_options(&self, request: &ConnectRequest) -> Option<Value> {
        let _ = request;
        None
    }

    /// The strategy (table columns and rows, field validation) when the storage has one.
    fn strategy(&self) -> Option<&dyn super::Strategy> {
        None
    }

    /// Whether the resource's objects are stored (upstream `rest.StorageVersionProvider`):
    /// discovery gives a `storageVersionHash` only then. Reviews that are computed and
    /// answered, never kept, say no.
    fn is_stored(&self) -> bool {
        true
    }

    /// Whether the storage runs the request's admission itself (the generic store does, at
    /// upstream's places). The handlers admit around storages that do not, and pass them a
    /// context without admission.
    fn runs_admission(&self) -> bool {
        false
    }
}

/// A storage that wraps another and changes only some of its calls, as upstream's registry
/// types embed the generic store: every method passes the call on to [`inner`](Self::inner)
/// unless overridden, and the blanket impl makes every `WrappingStorage` a [`RestStorage`].
pub trait WrappingStorage: Send + Sync {
    /// The wrapped storage.
    fn inner(&self) -> &dyn RestStorage;

    /// [`RestStorage::info`].
    fn info(&self) -> &ResourceInfo {
        self.inner().info()
    }

    /// [`RestStorage::verbs`].
    fn verbs(&self) -> Vec<&'static str> {
        self.inner().verbs()
    }

    /// [`RestStorage::accepts_group_version`].
    fn accepts_group_version(&self, api_version: &str) -> bool {
        self.inner().accepts_group_version(api_version)
    }

    /// [`RestStorage::get`].
    fn get<'a>(
        &'a self,
        ctx: &'a RequestContext,
        name: &'a str,
        opts: &'a GetOptions,
    ) -> BoxFuture<'a, Result<Value, ApiError>> {
        self.inner().get(ctx, name, opts)
    }

    /// [`RestStorage::list`].
    fn list<'a>(
        &'a self,
        ctx: &'a RequestContext,
        opts: &'a ListOptions,
    ) -> BoxFuture<'a, Result<Value, ApiError>> {
        self.inner().list(ctx, opts)
    }

    /// [`RestStorage::list_json`]: passed on only while the wrapper keeps the inner `list`
    /// (override both, or neither).
    fn list_json<'a>(
        &'a self,
        ctx: &'a RequestContext,
        opts: &'a ListOptions,
    ) -> BoxFuture<'a, Result<Option<Vec<u8>>, ApiError>> {
        self.inner().list_json(ctx, opts)
    }

    /// [`RestStorage::watch`].
    fn watch<'a>(
        &'a self,
        ctx: &'a RequestContext,
        opts: &'a ListOptions,
    ) -> BoxFuture<'a, Result<ObjectWatch, ApiError>> {
        self.inner().watch(ctx, opts)
    }

    /// [`RestStorage::create`].
    fn create<'a>(
        &'a self,
        ctx: &'a RequestContext,
        obj: Value,
        opts: &'a CreateOptions,
    ) -> BoxFuture<'a, Result<Value, ApiError>> {
        self.inner().create(ctx, obj, opts)
    }

    /// [`RestStorage::update`].
    fn update<'a>(
        &'a self,
        ctx: &'a RequestContext,
        name: &'a str,
        update: UpdateFunc,
        opts: &'a UpdateOptions,
        force_allow_create: bool,
    ) -> BoxFuture<'a, Result<(Value, bool), ApiError>> {
        self.inner()
            .update(ctx, name, update, opts, force_allow_create)
    }

    /// [`RestStorage::delete`].
    fn delete<'a>(
        &'a self,
        ctx: &'a RequestContext,
        name: &'a str,
        opts: &'a DeleteOptions,
    ) -> BoxFuture<'a, Result<(Value, bool), ApiError>> {
        self.inner().delete(ctx, name, opts)
    }

    /// [`RestStorage::delete_collection`].
    fn delete_collection<'a>(
        &'a self,
        ctx: &'a RequestContext,
        delete: &'a DeleteOptions,
        list: &'a ListOptions,
    ) -> BoxFuture<'a, Result<Value, ApiError>> {
        self.inner().delete_collection(ctx, delete, list)
    }

    /// [`RestStorage::connect`].
    fn connect<'a>(
        &'a self,
        ctx: &'a RequestContext,
        name: &'a str,
        request: &'a ConnectRequest,
    ) -> BoxFuture<'a, Result<ConnectResponse, ApiError>> {
        self.inner().connect(ctx, name, request)
    }

    /// [`RestStorage::connect_options`].
    fn connect_options(&self, request: &ConnectRequest) -> Option<Value> {
        self.inner().connect_options(request)
    }

    /// [`RestStorage::strategy`].
    fn strategy(&self) -> Option<&dyn super::Strategy> {
        self.inner().strategy()
    }

    /// [`RestStorage::is_stored`].
    fn is_stored(&self) -> bool {
        self.inner().is_stored()
    }

    /// [`RestStorage::runs_admission`].
    fn runs_admission(&self) -> bool {
        self.inner().runs_admission()
    }
}

impl<T: WrappingStorage> RestStorage for T {
    fn info(&self) -> &ResourceInfo {
        WrappingStorage::info(self)
    }
    fn verbs(&self) -> Vec<&'static str> {
        WrappingStorage::verbs(self)
    }
    fn accepts_group_version(&self, api_version: &str) -> bool {
        WrappingStorage::accepts_group_version(self, api_version)
    }
    fn get<'a>(
        &'a self,
        ctx: &'a RequestContext,
        name: &'a str,
        opts: &'a GetOptions,
    ) -> BoxFuture<'a, Result<Value, ApiError>> {
        WrappingStorage::get(self, ctx, name, opts)
    }
    fn list<'a>(
        &'a self,
        ctx: &'a RequestContext,
        opts: &'a ListOptions,
    ) -> BoxFuture<'a, Result<Value, ApiError>> {
        WrappingStorage::list(self, ctx, opts)
    }
    fn list_json<'a>(
        &'a self,
        ctx: &'a RequestContext,
        opts: &'a ListOptions,
    ) -> BoxFuture<'a, Result<Option<Vec<u8>>, ApiError>> {
        WrappingStorage::list_json(self, ctx, opts)
    }
    fn watch<'a>(
        &'a self,
        ctx: &'a RequestContext,
        opts: &'a ListOptions,
    ) -> BoxFuture<'a, Result<ObjectWatch, ApiError>> {
        WrappingStorage::watch(self, ctx, opts)
    }
    fn create<'a>(
        &'a self,
        ctx: &'a RequestContext,
        obj: Value,
        opts: &'a CreateOptions,
    ) -> BoxFuture<'a, Result<Value, ApiError>> {
        WrappingStorage::create(self, ctx, obj, opts)
    }
    fn update<'a>(
        &'a self,
        ctx: &'a RequestContext,
        name: &'a str,
        update: UpdateFunc,
        opts: &'a UpdateOptions,
        force_allow_create: bool,
    ) -> BoxFuture<'a, Result<(Value, bool), ApiError>> {
        WrappingStorage::update(self, ctx, name, update, opts, force_allow_create)
    }
    fn delete<'a>(
        &'a self,
        ctx: &'a RequestContext,
        name: &'a str,
        opts: &'a DeleteOptions,
    ) -> BoxFuture<'a, Result<(Value, bool), ApiError>> {
        WrappingStorage::delete(self, ctx, name, opts)
    }
    fn delete_collection<'a>(
        &'a self,
        ctx: &'a RequestContext,
        delete: &'a DeleteOptions,
        list: &'a ListOptions,
    ) -> BoxFuture<'a, Result<Value, ApiError>> {
        WrappingStorage::delete_collection(self, ctx, delete, list)
    }
    fn connect<'a>(
        &'a self,
        ctx: &'a RequestContext,
        name: &'a str,
        request: &'a ConnectRequest,
    ) -> BoxFuture<'a, Result<ConnectResponse, ApiError>> {
        WrappingStorage::connect(self, ctx, name, request)
    }
    fn connect_options(&self, request: &ConnectRequest) -> Option<Value> {
        WrappingStorage::connect_options(self, request)
    }
    fn strategy(&self) -> Option<&dyn super::Strategy> {
        WrappingStorage::strategy(self)
    }

    fn is_stored(&self) -> bool {
        WrappingStorage::is_stored(self)
    }

    fn runs_admission(&self) -> bool {
        WrappingStorage::runs_admission(self)
    }
}

/// 405 `<verb> is not supported on resources of kind "<resource>[.<group>]"`.
pub fn method_not_supported(info: &ResourceInfo, verb: &str) -> ApiError {
    let qualified = crate::status::qualified_resource(&info.group, &info.resource);
    ApiError::new(
        http::StatusCode::METHOD_NOT_ALLOWED,
        crate::status::reason::METHOD_NOT_ALLOWED,
        format!("{verb} is not supported on resources of kind {qualified:?}"),
    )
    .with_details(crate::status::StatusDetails {
        group: info.group.clone(),
        kind: info.resource.clone(),
        ..Default::default()
    })
}
