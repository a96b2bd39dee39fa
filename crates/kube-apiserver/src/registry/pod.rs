//! The pod subresources that talk to a kubelet upstream (`log`, `exec`, `attach`,
//! `portforward`; upstream `pkg/registry/core/pod/rest` and the `*Location` helpers of
//! `pkg/registry/core/pod/strategy.go`), and `ephemeralcontainers`.
//!
//! There is no kubelet: requests for pods without a node answer exactly as upstream does
//! (an empty log, `pod X does not have a host assigned`); for a pod bound to a node the node
//! is looked up as upstream's `GetConnectionInfo` does (404 when it does not exist) and the
//! kubelet connection then fails as a dial to an unreachable kubelet does.

use std::sync::{Arc, OnceLock};

use apiserver::endpoints::handlers::options::Query;
use apiserver::registry::rest::{
    BoxFuture, ConnectRequest, ConnectResponse, GetOptions, RequestContext, RestStorage,
    UpdateFunc, UpdateOptions,
};
use apiserver::registry::store::Store;
use apiserver::registry::{FieldError, ResourceInfo, SelectableFields, SharedStrategy, Strategy};
use apiserver::registry::{TableColumn, invalid};
use apiserver::status::ApiError;
use serde_json::Value;

use crate::apis::json::{array_at, str_at};

/// The store of a resource installed later than the one that needs it (nodes for pods).
pub type StoreCell = Arc<OnceLock<Store>>;

/// Which kubelet stream a connect subresource opens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    /// `pods/exec` (`PodExecOptions`).
    Exec,
    /// `pods/attach` (`PodAttachOptions`).
    Attach,
    /// `pods/portforward` (`PodPortForwardOptions`).
    PortForward,
}

impl Stream {
    fn subresource(self) -> &'static str {
        match self {
            Stream::Exec => "exec",
            Stream::Attach => "attach",
            Stream::PortForward => "portforward",
        }
    }

    fn kind(self) -> &'static str {
        match self {
            Stream::Exec => "PodExecOptions",
            Stream::Attach => "PodAttachOptions",
            Stream::PortForward => "PodPortForwardOptions",
        }
    }
}

/// The facts of a pod subresource: kind `kind` in core v1 under `pods`.
fn sub_info(pods: &ResourceInfo, kind: &str) -> ResourceInfo {
    ResourceInfo {
        group: String::new(),
        version: "v1".into(),
        kind: kind.into(),
        list_kind: String::new(),
        resource: pods.resource.clone(),
        singular: String::new(),
        namespaced: true,
        short_names: Vec::new(),
        categories: Vec::new(),
    }
}

async fn get_pod(store: &Store, ctx: &RequestContext, name: &str) -> Result<Value, ApiError> {
    store.get(ctx, name, &GetOptions::default()).await
}

/// The names of every container of the pod in upstream's visiting order (init containers,
/// containers, ephemeral containers).
fn container_names(pod: &Value) -> Vec<&str> {
    [
        "spec.initContainers",
        "spec.containers",
        "spec.ephemeralContainers",
    ]
    .iter()
    .flat_map(|list| array_at(pod, list))
    .filter_map(|c| str_at(c, "name"))
    .collect()
}

/// Upstream `validateContainer`: the container asked for must exist; none asked for is the
/// only container, or a 400 listing the choices.
pub fn validate_container(container: &str, pod: &Value) -> Result<String, ApiError> {
    let name = str_at(pod, "metadata.name").unwrap_or_default();
    if container.is_empty() {
        let containers = array_at(pod, "spec.containers");
        return match containers {
            [only] => Ok(str_at(only, "name").unwrap_or_default().to_string()),
            [] => Err(ApiError::bad_request(format!(
                "a container name must be specified for pod {name}"
            ))),
            _ => Err(ApiError::bad_request(format!(
                "a container name must be specified for pod {name}, choose one of: [{}]",
                container_names(pod).join(" ")
            ))),
        };
    }
    if container_names(pod).contains(&container) {
        Ok(container.to_string())
    } else {
        Err(ApiError::bad_request(format!(
            "container {container} is not valid for pod {name}"
        )))
    }
}

/// Upstream `GetConnectionInfo` for the node a pod runs on, then the dial to its kubelet,
/// which cannot succeed here: 404 for a missing node, else the proxy's dial error.
async fn kubelet_unreachable(nodes: &StoreCell, node: &str) -> ApiError {
    let Some(store) = nodes.get() else {
        return ApiError::internal("the node registry is not installed");
    };
    let ctx = RequestContext::default();
    match store.get(&ctx, node, &GetOptions::default()).await {
        Err(err) => err,
        Ok(_) => ApiError::service_unavailable(format!(
            "error dialing backend: no kubelet serves node {node:?}"
        )),
    }
}

fn parse_i64(query: &Query, key: &str) -> Result<Option<i64>, ApiError> {
    query
        .get(key)
        .map(|v| {
            v.parse::<i64>().map_err(|_| {
                ApiError::bad_request(format!("strconv.ParseInt: parsing {v:?}: invalid syntax"))
            })
        })
        .transpose()
}

/// Upstream `ValidatePodLogOptions` for the options of the query.
fn validate_log_options(name: &str, query: &Query) -> Result<(), ApiError> {
    let mut errs = Vec::new();
    if let Some(tail) = parse_i64(query, "tailLines")?
        && tail < 0
    {
        errs.push(FieldError::invalid(
            "tailLines",
            tail,
            "must be greater than or equal to 0",
        ));
    }
    if let Some(limit) = parse_i64(query, "limitBytes")?
        && limit < 1
    {
        errs.push(FieldError::invalid(
            "limitBytes",
            limit,
            "must be greater than 0",
        ));
    }
    let since_seconds = parse_i64(query, "sinceSeconds")?;
    if since_seconds.is_some() && query.get("sinceTime").is_some() {
        errs.push(FieldError::forbidden(
            "",
            "at most one of `sinceTime` or `sinceSeconds` may be specified",
        ));
    } else if let Some(since) = since_seconds
        && since < 1
    {
        errs.push(FieldError::invalid(
            "sinceSeconds",
            since,
            "must be greater than 0",
        ));
    }
    if errs.is_empty() {
        return Ok(());
    }
    let options = ResourceInfo {
        kind: "PodLogOptions".into(),
        ..Default::default()
    };
    Err(invalid(&options, name, &errs))
}

/// `pods/log` (upstream `LogREST`): a pod without a node has no log yet, which upstream
/// answers with its null stream (204).
pub struct LogStorage {
    store: Store,
    nodes: StoreCell,
    info: ResourceInfo,
}

impl LogStorage {
    /// The log subresource over the pods' store.
    pub fn new(store: Store, nodes: StoreCell) -> Self {
        let info = sub_info(store.info(), "Pod");
        LogStorage { store, nodes, info }
    }

    async fn log(
        &self,
        ctx: &RequestContext,
        name: &str,
        query: &str,
    ) -> Result<ConnectResponse, ApiError> {
        let query = Query::parse(query);
        validate_log_options(name, &query)?;
        let pod = get_pod(&self.store, ctx, name).await?;
        validate_container(query.get("container").unwrap_or_default(), &pod)?;
        match str_at(&pod, "spec.nodeName").filter(|n| !n.is_empty()) {
            None => Ok(ConnectResponse::Empty),
            Some(node) => Err(kubelet_unreachable(&self.nodes, node).await),
        }
    }
}

impl RestStorage for LogStorage {
    fn info(&self) -> &ResourceInfo {
        &self.info
    }

    fn verbs(&self) -> Vec<&'static str> {
        vec!["connect", "get"]
    }

    fn connect<'a>(
        &'a self,
        ctx: &'a RequestContext,
        name: &'a str,
        request: &'a ConnectRequest,
    ) -> BoxFuture<'a, Result<ConnectResponse, ApiError>> {
        Box::pin(self.log(ctx, name, &request.query))
    }
}

/// `pods/exec`, `pods/attach` and `pods/portforward` (upstream `ExecREST`, `AttachREST`,
/// `PortForwardREST`; GET and POST, with or without an upgrade).
pub struct StreamStorage {
    store: Store,
    nodes: StoreCell,
    stream: Stream,
    info: ResourceInfo,
}

impl StreamStorage {
    /// The `stream` subresource over the pods' store.
    pub fn new(store: Store, nodes: StoreCell, stream: Stream) -> Self {
        let info = sub_info(store.info(), stream.kind());
        StreamStorage {
            store,
            nodes,
            stream,
            info,
        }
    }

    /// The path of the subresource under `pods` (`exec`).
    pub fn subresource(&self) -> &'static str {
        self.stream.subresource()
    }

    async fn open(
        &self,
        ctx: &RequestContext,
        name: &str,
        query: &str,
    ) -> Result<ConnectResponse, ApiError> {
        let pod = get_pod(&self.store, ctx, name).await?;
        if self.stream != Stream::PortForward {
            let query = Query::parse(query);
            validate_container(query.get("container").unwrap_or_default(), &pod)?;
        }
        match str_at(&pod, "spec.nodeName").filter(|n| !n.is_empty()) {
            None => Err(ApiError::bad_request(format!(
                "pod {name} does not have a host assigned"
            ))),
            Some(node) => Err(kubelet_unreachable(&self.nodes, node).await),
        }
    }
}

impl RestStorage for StreamStorage {
    fn info(&self) -> &ResourceInfo {
        &self.info
    }

    fn verbs(&self) -> Vec<&'static str> {
        vec!["connect", "create", "get"]
    }

    fn connect<'a>(
        &'a self,
        ctx: &'a RequestContext,
        name: &'a str,
        request: &'a ConnectRequest,
    ) -> BoxFuture<'a, Result<ConnectResponse, ApiError>> {
        Box::pin(self.open(ctx, name, &request.query))
    }

    fn connect_options(&self, request: &ConnectRequest) -> Option<Value> {
        Some(stream_options(self.stream, &request.query))
    }
}

/// The options object a stream request is admitted with (`PodExecOptions`,
/// `PodAttachOptions`, `PodPortForwardOptions`), decoded from the query as upstream's
/// parameter codec does; values that do not parse are left out.
fn stream_options(stream: Stream, query: &str) -> Value {
    let query = Query::parse(query);
    let mut out = serde_json::Map::new();
    out.insert("kind".into(), Value::String(stream.kind().into()));
    out.insert("apiVersion".into(), Value::String("v1".into()));
    let flag = |key: &str| query.get(key).and_then(|v| v.parse::<bool>().ok());
    match stream {
        Stream::Exec | Stream::Attach => {
            for key in ["stdin", "stdout", "stderr", "tty"] {
                if let Some(v) = flag(key) {
                    out.insert(key.into(), Value::Bool(v));
                }
            }
            if let Some(c) = query.get("container") {
                out.insert("container".into(), Value::String(c.into()));
            }
            if stream == Stream::Exec {
                let command: Vec<Value> = query
                    .all("command")
                    .into_iter()
                    .map(Value::String)
                    .collect();
                if !command.is_empty() {
                    out.insert("command".into(), Value::Array(command));
                }
            }
        }
        Stream::PortForward => {
            let ports: Vec<Value> = query
                .all("ports")
                .iter()
                .flat_map(|p| p.split(','))
                .filter_map(|p| p.trim().parse::<i32>().ok())
                .map(Value::from)
                .collect();
            if !ports.is_empty() {
                out.insert("ports".into(), Value::Array(ports));
            }
        }
    }
    Value::Object(out)
}

/// The pod strategy of `pods/ephemeralcontainers` (upstream
/// `podEphemeralContainersStrategy`): an update changes only `spec.ephemeralContainers`,
/// which may only grow, each new container valid as an ephemeral container.
pub struct EphemeralContainersStrategy {
    inner: SharedStrategy,
}

impl EphemeralContainersStrategy {
    /// Wraps the pods' strategy.
    pub fn new(inner: SharedStrategy) -> Self {
        EphemeralContainersStrategy { inner }
    }
}

/// Upstream `dropNonEphemeralContainerUpdates`: the stored pod with the new ephemeral
/// containers (and the new metadata but for what `ResetObjectMetaForStatus` keeps).
fn drop_non_ephemeral_updates(new: &mut Value, old: &Value) {
    let ephemeral = new.pointer("/spec/ephemeralContainers").cloned();
    let mut merged = old.clone();
    if let (Some(m), Some(new_meta)) = (
        merged.get_mut("metadata").and_then(Value::as_object_mut),
        new.get("metadata").and_then(Value::as_object),
    ) {
        for field in ["managedFields", "resourceVersion"] {
            match new_meta.get(field) {
                Some(v) => m.insert(field.into(), v.clone()),
                None => m.remove(field),
            };
        }
    }
    if let Some(spec) = merged.get_mut("spec").and_then(Value::as_object_mut) {
        match ephemeral {
            Some(list) => spec.insert("ephemeralContainers".into(), list),
            None => spec.remove("ephemeralContainers"),
        };
    }
    *new = merged;
}

/// The fields an ephemeral container may not set, as upstream's validation names them.
const FORBIDDEN_EPHEMERAL_FIELDS: [&str; 7] = [
    "ports",
    "lifecycle",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "resizePolicy",
    "restartPolicy",
];

/// Upstream `ValidatePodEphemeralContainersUpdate` for the fields clients rely on.
fn validate_ephemeral_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let new_list = array_at(new, "spec.ephemeralContainers");
    let old_list = array_at(old, "spec.ephemeralContainers");
    // Existing ephemeral containers may be neither removed nor changed.
    for old_c in old_list {
        let name = str_at(old_c, "name").unwrap_or_default();
        match new_list
            .iter()
            .position(|c| str_at(c, "name") == Some(name))
        {
            None => errs.push(FieldError::forbidden(
                "spec.ephemeralContainers",
                &format!("existing ephemeral containers {name:?} may not be removed"),
            )),
            Some(i) if new_list[i] != *old_c => errs.push(FieldError::forbidden(
                &format!("spec.ephemeralContainers[{i}]"),
                &format!("existing ephemeral containers {name:?} may not be changed"),
            )),
            Some(_) => {}
        }
    }
    let mut names: Vec<&str> = ["spec.initContainers", "spec.containers"]
        .iter()
        .flat_map(|l| array_at(new, l))
        .filter_map(|c| str_at(c, "name"))
        .collect();
    let regular = names.clone();
    for (i, c) in new_list.iter().enumerate() {
        let at = format!("spec.ephemeralContainers[{i}]");
        let name = str_at(c, "name").unwrap_or_default();
        if name.is_empty() {
            errs.push(FieldError::required(&format!("{at}.name"), ""));
        } else {
            for msg in crate::apis::validation::dns1123_label(name) {
                errs.push(FieldError::invalid(&format!("{at}.name"), name, &msg));
            }
            if names.contains(&name) {
                errs.push(FieldError::duplicate(&format!("{at}.name"), name));
            }
            names.push(name);
        }
        if str_at(c, "image").is_none_or(|i| i.trim().is_empty()) {
            errs.push(FieldError::required(&format!("{at}.image"), ""));
        }
        for field in FORBIDDEN_EPHEMERAL_FIELDS {
            if c.get(field).is_some_and(|v| !v.is_null()) {
                errs.push(FieldError::forbidden(
                    &format!("{at}.{field}"),
                    "cannot be set for an Ephemeral Container",
                ));
            }
        }
        if c.get("resources")
            .and_then(Value::as_object)
            .is_some_and(|r| !r.is_empty())
        {
            errs.push(FieldError::forbidden(
                &format!("{at}.resources"),
                "cannot be set for an Ephemeral Container",
            ));
        }
        if let Some(target) = str_at(c, "targetContainerName").filter(|t| !t.is_empty())
            && !regular.contains(&target)
        {
            errs.push(FieldError::not_found(
                &format!("{at}.targetContainerName"),
                target,
            ));
        }
    }
    errs
}

impl Strategy for EphemeralContainersStrategy {
    fn info(&self) -> &ResourceInfo {
        self.inner.info()
    }
    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        drop_non_ephemeral_updates(new, old);
        // Defaults of the new containers (`imagePullPolicy`, termination message).
        self.inner.prepare_for_update(new, old);
    }
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        validate_ephemeral_update(new, old)
    }
    fn drop_unknown_fields(&self, obj: &mut Value) -> Vec<String> {
        self.inner.drop_unknown_fields(obj)
    }
    fn tracks_generation(&self) -> bool {
        self.inner.tracks_generation()
    }
    fn selectable_fields(&self, obj: &Value) -> SelectableFields {
        self.inner.selectable_fields(obj)
    }
    fn table_columns(&self) -> Vec<TableColumn> {
        self.inner.table_columns()
    }
    fn table_row(&self, obj: &Value) -> Vec<Value> {
        self.inner.table_row(obj)
    }
    fn patch_schema(&self) -> Option<(Arc<Value>, String)> {
        self.inner.patch_schema()
    }
}

/// `pods/ephemeralcontainers`: get, update and patch of the pod through
/// [`EphemeralContainersStrategy`].
pub struct EphemeralContainersStorage {
    store: Store,
}

impl EphemeralContainersStorage {
    /// The subresource over the pods' store (same storage, the ephemeral strategy).
    pub fn new(pods: &Store) -> Self {
        let strategy: SharedStrategy = Arc::new(EphemeralContainersStrategy::new(
            pods.shared_strategy().clone(),
        ));
        EphemeralContainersStorage {
            store: Store::new(strategy, pods.storage().clone(), pods.key_root()),
        }
    }
}

impl RestStorage for EphemeralContainersStorage {
    fn info(&self) -> &ResourceInfo {
        self.store.info()
    }

    fn verbs(&self) -> Vec<&'static str> {
        vec!["get", "patch", "update"]
    }

    fn get<'a>(
        &'a self,
        ctx: &'a RequestContext,
        name: &'a str,
        opts: &'a GetOptions,
    ) -> BoxFuture<'a, Result<Value, ApiError>> {
        self.store.get(ctx, name, opts)
    }

    fn update<'a>(
        &'a self,
        ctx: &'a RequestContext,
        name: &'a str,
        update: UpdateFunc,
        opts: &'a UpdateOptions,
        _force_allow_create: bool,
    ) -> BoxFuture<'a, Result<(Value, bool), ApiError>> {
        // Subresources never create on update.
        self.store.update(ctx, name, update, opts, false)
    }

    fn strategy(&self) -> Option<&dyn Strategy> {
        self.store.strategy()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exec_options_come_from_the_query_as_upstreams_parameter_codec_reads_them() {
        let opts = stream_options(
            Stream::Exec,
            "command=ls&command=-l&container=c&stdin=true&tty=false&stdout=yes",
        );
        assert_eq!(
            opts,
            serde_json::json!({"kind": "PodExecOptions", "apiVersion": "v1", "stdin": true,
                "tty": false, "container": "c", "command": ["ls", "-l"]})
        );
        let opts = stream_options(Stream::PortForward, "ports=80,443&ports=x");
        assert_eq!(opts["ports"], serde_json::json!([80, 443]));
    }
    use serde_json::json;

    fn pod(containers: &[&str]) -> Value {
        let list: Vec<Value> = containers
            .iter()
            .map(|n| json!({"name": n, "image": "busybox"}))
            .collect();
        json!({"metadata": {"name": "web"}, "spec": {"containers": list,
            "initContainers": [{"name": "init", "image": "busybox"}]}})
    }

    #[test]
    fn container_is_chosen_as_upstream() {
        assert_eq!(validate_container("", &pod(&["a"])).unwrap(), "a");
        assert_eq!(validate_container("init", &pod(&["a"])).unwrap(), "init");
        let err = validate_container("", &pod(&["a", "b"])).unwrap_err();
        assert_eq!(
            err.0.message,
            "a container name must be specified for pod web, choose one of: [init a b]"
        );
        assert_eq!(err.reason(), "BadRequest");
        let err = validate_container("zz", &pod(&["a"])).unwrap_err();
        assert_eq!(err.0.message, "container zz is not valid for pod web");
        let err = validate_container("", &pod(&[])).unwrap_err();
        assert_eq!(
            err.0.message,
            "a container name must be specified for pod web"
        );
    }

    #[test]
    fn log_options_are_validated_as_upstream() {
        let err =
            validate_log_options("web", &Query::parse("tailLines=-1&limitBytes=0")).unwrap_err();
        assert_eq!(
            err.0.message,
            "PodLogOptions \"web\" is invalid: [tailLines: Invalid value: -1: must be greater than or equal to 0, limitBytes: Invalid value: 0: must be greater than 0]"
        );
        let err = validate_log_options(
            "web",
            &Query::parse("sinceSeconds=5&sinceTime=2020-01-01T00:00:00Z"),
        )
        .unwrap_err();
        assert!(
            err.0
                .message
                .contains("at most one of `sinceTime` or `sinceSeconds` may be specified"),
            "{}",
            err.0.message
        );
        let err = validate_log_options("web", &Query::parse("tailLines=x")).unwrap_err();
        assert_eq!(err.code(), http::StatusCode::BAD_REQUEST);
        assert!(validate_log_options("web", &Query::parse("tailLines=10&follow=true")).is_ok());
    }

    #[test]
    fn ephemeral_updates_may_only_add_valid_containers() {
        let old = json!({"spec": {"containers": [{"name": "app", "image": "x"}],
            "ephemeralContainers": [{"name": "dbg", "image": "busybox"}]}});
        let mut new = old.clone();
        new["spec"]["ephemeralContainers"] = json!([
            {"name": "dbg", "image": "busybox:2"},
            {"name": "app", "image": "", "ports": [{"containerPort": 80}], "targetContainerName": "nope"}
        ]);
        let errs: Vec<String> = validate_ephemeral_update(&new, &old)
            .iter()
            .map(|e| e.to_string())
            .collect();
        assert_eq!(
            errs,
            vec![
                "spec.ephemeralContainers[0]: Forbidden: existing ephemeral containers \"dbg\" may not be changed",
                "spec.ephemeralContainers[1].name: Duplicate value: \"app\"",
                "spec.ephemeralContainers[1].image: Required value",
                "spec.ephemeralContainers[1].ports: Forbidden: cannot be set for an Ephemeral Container",
                "spec.ephemeralContainers[1].targetContainerName: Not found: \"nope\"",
            ]
        );
        let mut removed = old.clone();
        removed["spec"]["ephemeralContainers"] = json!([]);
        let errs = validate_ephemeral_update(&removed, &old);
        assert_eq!(
            errs[0].to_string(),
            "spec.ephemeralContainers: Forbidden: existing ephemeral containers \"dbg\" may not be removed"
        );
    }

    #[test]
    fn only_ephemeral_containers_change() {
        let old = json!({"metadata": {"name": "p", "labels": {"a": "b"}, "resourceVersion": "5"},
            "spec": {"containers": [{"name": "app", "image": "x"}]}, "status": {"phase": "Running"}});
        let mut new = json!({"metadata": {"name": "p", "labels": {"a": "changed"}, "resourceVersion": "5"},
            "spec": {"containers": [{"name": "app", "image": "y"}],
                "ephemeralContainers": [{"name": "dbg", "image": "busybox"}]},
            "status": {"phase": "Failed"}});
        drop_non_ephemeral_updates(&mut new, &old);
        assert_eq!(new["metadata"]["labels"]["a"], "b");
        assert_eq!(new["spec"]["containers"][0]["image"], "x");
        assert_eq!(new["status"]["phase"], "Running");
        assert_eq!(new["spec"]["ephemeralContainers"][0]["name"], "dbg");
    }
}
