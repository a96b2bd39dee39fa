//! Handler tests through `install_api_groups` on a real `GenericApiServer`, served by its
//! director, with an in-memory fake storage.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{Method, StatusCode, header};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tokio::sync::broadcast;
use tower::ServiceExt;

use crate::body::{Body, Response, empty, full};
use crate::registry::rest::{
    BoxFuture, CreateOptions, DeleteOptions, GetOptions, ListOptions, ObjectEvent, ObjectWatch,
    RequestContext, RestStorage, UpdateFunc, UpdateOptions,
};
use crate::registry::{ResourceInfo, Strategy};
use crate::request::ServerShutdownSignal;
use crate::request::warning::WarningRecorder;
use crate::server::{ApiGroupInfo, ApiGroupVersion, Config, EmptyDelegate, GenericApiServer};
use crate::status::ApiError;

// ---------------------------------------------------------------- the fake storage

struct FakeStrategy {
    info: ResourceInfo,
    strategic: bool,
    schema: Option<(Arc<Value>, String)>,
}

impl Strategy for FakeStrategy {
    fn info(&self) -> &ResourceInfo {
        &self.info
    }

    /// Knows `apiVersion`, `kind`, `metadata`, `data`, `spec.replicas` and `spec.containers`.
    fn drop_unknown_fields(&self, obj: &mut Value) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(map) = obj.as_object_mut() {
            let unknown: Vec<String> = map
                .keys()
                .filter(|k| {
                    !matches!(
                        k.as_str(),
                        "apiVersion" | "kind" | "metadata" | "data" | "spec"
                    )
                })
                .cloned()
                .collect();
            for key in unknown {
                map.remove(&key);
                out.push(key);
            }
        }
        if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
            let unknown: Vec<String> = spec
                .keys()
                .filter(|k| !matches!(k.as_str(), "replicas" | "containers"))
                .cloned()
                .collect();
            for key in unknown {
                spec.remove(&key);
                out.push(format!("spec.{key}"));
            }
        }
        out
    }

    fn supports_strategic_merge_patch(&self) -> bool {
        self.strategic
    }

    fn patch_schema(&self) -> Option<(Arc<Value>, String)> {
        self.schema.clone()
    }
}

/// A HashMap-backed storage honouring dryRun, create-on-update and watches.
struct Fake {
    strategy: FakeStrategy,
    objects: Mutex<BTreeMap<(String, String), Value>>,
    rv: AtomicU64,
    events: broadcast::Sender<ObjectEvent>,
    verbs: Vec<&'static str>,
    create_on_update: bool,
    /// Deletes only mark the object (finalizers), returning it.
    graceful: bool,
    /// Deletes return no object.
    delete_returns_nothing: bool,
}

impl Fake {
    fn new(info: ResourceInfo) -> Arc<Self> {
        Arc::new(Fake {
            strategy: FakeStrategy {
                info,
                strategic: true,
                schema: None,
            },
            objects: Mutex::default(),
            rv: AtomicU64::new(1),
            events: broadcast::channel(64).0,
            verbs: vec![
                "create",
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "update",
                "watch",
            ],
            create_on_update: false,
            graceful: false,
            delete_returns_nothing: false,
        })
    }

    fn configmaps() -> Arc<Self> {
        Self::new(ResourceInfo {
            group: String::new(),
            version: "v1".into(),
            kind: "ConfigMap".into(),
            list_kind: "ConfigMapList".into(),
            resource: "configmaps".into(),
            singular: "configmap".into(),
            namespaced: true,
            short_names: vec!["cm".into()],
            categories: Vec::new(),
        })
    }

    fn widgets() -> ResourceInfo {
        ResourceInfo {
            group: "example.com".into(),
            version: "v1".into(),
            kind: "Widget".into(),
            list_kind: "WidgetList".into(),
            resource: "widgets".into(),
            singular: "widget".into(),
            namespaced: false,
            short_names: Vec::new(),
            categories: vec!["all".into()],
        }
    }

    fn key(&self, ctx: &RequestContext, name: &str) -> (String, String) {
        (ctx.namespace.clone(), name.to_string())
    }

    fn next_rv(&self) -> String {
        (self.rv.fetch_add(1, Ordering::SeqCst) + 1).to_string()
    }

    fn list_value(&self, ctx: &RequestContext) -> Value {
        let items: Vec<Value> = self
            .objects
            .lock()
            .unwrap()
            .iter()
            .filter(|((ns, _), _)| ctx.namespace.is_empty() || *ns == ctx.namespace)
            .map(|(_, v)| v.clone())
            .collect();
        json!({
            "kind": self.strategy.info.list_kind,
            "apiVersion": self.strategy.info.api_version(),
            "metadata": {"resourceVersion": self.rv.load(Ordering::SeqCst).to_string()},
            "items": items,
        })
    }
}

impl RestStorage for Fake {
    fn info(&self) -> &ResourceInfo {
        &self.strategy.info
    }

    fn verbs(&self) -> Vec<&'static str> {
        self.verbs.clone()
    }

    fn strategy(&self) -> Option<&dyn Strategy> {
        Some(&self.strategy)
    }

    fn get<'a>(
        &'a self,
        ctx: &'a RequestContext,
        name: &'a str,
        _opts: &'a GetOptions,
    ) -> BoxFuture<'a, Result<Value, ApiError>> {
        let found = self
            .objects
            .lock()
            .unwrap()
            .get(&self.key(ctx, name))
            .cloned();
        let info = self.info().clone();
        Box::pin(async move {
            found.ok_or_else(|| ApiError::not_found(&info.group, &info.resource, name))
        })
    }

    fn list<'a>(
        &'a self,
        ctx: &'a RequestContext,
        opts: &'a ListOptions,
    ) -> BoxFuture<'a, Result<Value, ApiError>> {
        let mut list = self.list_value(ctx);
        // Honours a `metadata.name=<name>` selector (the only one these tests send).
        if let Some(name) = opts.field_selector.strip_prefix("metadata.name=")
            && let name = name.trim_start_matches('=')
            && let Some(items) = list["items"].as_array_mut()
        {
            items.retain(|item| item["metadata"]["name"] == name);
        }
        Box::pin(async move { Ok(list) })
    }

    fn watch<'a>(
        &'a self,
        ctx: &'a RequestContext,
        opts: &'a ListOptions,
    ) -> BoxFuture<'a, Result<ObjectWatch, ApiError>> {
        let rx = self.events.subscribe();
        let mut initial = Vec::new();
        if opts.send_initial_events == Some(true) {
            if let Some(items) = self.list_value(ctx)["items"].as_array() {
                initial.extend(items.iter().cloned().map(ObjectEvent::Added));
            }
            if opts.allow_watch_bookmarks {
                initial.push(ObjectEvent::Bookmark(json!({
                    "kind": self.info().kind,
                    "apiVersion": self.info().api_version(),
                    "metadata": {
                        "resourceVersion": self.rv.load(Ordering::SeqCst).to_string(),
                        "annotations": {"k8s.io/initial-events-end": "true"},
                    },
                })));
            }
        }
        let live = futures::stream::unfold(rx, |mut rx| async move {
            loop {
                match rx.recv().await {
                    Ok(event) => return Some((event, rx)),
                    Err(broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(broadcast::error::RecvError::Closed) => return None,
                }
            }
        });
        let stream: ObjectWatch = Box::pin(futures::StreamExt::chain(
            futures::stream::iter(initial),
            live,
        ));
        Box::pin(async move { Ok(stream) })
    }

    fn create<'a>(
        &'a self,
        ctx: &'a RequestContext,
        mut obj: Value,
        opts: &'a CreateOptions,
    ) -> BoxFuture<'a, Result<Value, ApiError>> {
        let info = self.info().clone();
        let name = obj["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let result = (|| {
            let mut objects = self.objects.lock().unwrap();
            let key = self.key(ctx, &name);
            if objects.contains_key(&key) {
                return Err(ApiError::already_exists(&info.group, &info.resource, &name));
            }
            obj["metadata"]["resourceVersion"] = json!(self.next_rv());
            obj["metadata"]["uid"] = json!("uid-1");
            if !opts.is_dry_run() {
                objects.insert(key, obj.clone());
                let _ = self.events.send(ObjectEvent::Added(obj.clone()));
            }
            Ok(obj)
        })();
        Box::pin(async move { result })
    }

    fn update<'a>(
        &'a self,
        ctx: &'a RequestContext,
        name: &'a str,
        mut update: UpdateFunc,
        _opts: &'a UpdateOptions,
        force_allow_create: bool,
    ) -> BoxFuture<'a, Result<(Value, bool), ApiError>> {
        let info = self.info().clone();
        let result = (|| {
            let mut objects = self.objects.lock().unwrap();
            let key = self.key(ctx, name);
            let current = objects.get(&key).cloned();
            if current.is_none() && !(force_allow_create || self.create_on_update) {
                // The generic store lets the patch function report the missing object.
                update(None)?;
                return Err(ApiError::not_found(&info.group, &info.resource, name));
            }
            let mut new = update(current.as_ref())?;
            new["metadata"]["resourceVersion"] = json!(self.next_rv());
            objects.insert(key, new.clone());
            let event = if current.is_some() {
                ObjectEvent::Modified(new.clone())
            } else {
                ObjectEvent::Added(new.clone())
            };
            let _ = self.events.send(event);
            Ok((new, current.is_none()))
        })();
        Box::pin(async move { result })
    }

    fn delete<'a>(
        &'a self,
        ctx: &'a RequestContext,
        name: &'a str,
        _opts: &'a DeleteOptions,
    ) -> BoxFuture<'a, Result<(Value, bool), ApiError>> {
        let info = self.info().clone();
        let removed = if self.graceful {
            self.objects
                .lock()
                .unwrap()
                .get(&self.key(ctx, name))
                .cloned()
        } else {
            self.objects.lock().unwrap().remove(&self.key(ctx, name))
        };
        let (graceful, nothing) = (self.graceful, self.delete_returns_nothing);
        Box::pin(async move {
            let obj =
                removed.ok_or_else(|| ApiError::not_found(&info.group, &info.resource, name))?;
            if nothing {
                return Ok((Value::Null, true));
            }
            Ok((obj, !graceful))
        })
    }

    fn delete_collection<'a>(
        &'a self,
        ctx: &'a RequestContext,
        _delete: &'a DeleteOptions,
        _list: &'a ListOptions,
    ) -> BoxFuture<'a, Result<Value, ApiError>> {
        let list = self.list_value(ctx);
        self.objects
            .lock()
            .unwrap()
            .retain(|(ns, _), _| !ctx.namespace.is_empty() && *ns != ctx.namespace);
        Box::pin(async move { Ok(list) })
    }
}

// ---------------------------------------------------------------- the server

struct Harness {
    server: GenericApiServer,
    configmaps: Arc<Fake>,
}

fn harness_with(configure: impl FnOnce(&mut Config)) -> Harness {
    let mut config = Config::new(None);
    config.max_request_body_bytes = 1024;
    configure(&mut config);
    let server = config
        .complete()
        .new("rest-test", Arc::new(EmptyDelegate::new()))
        .unwrap();
    let configmaps = Fake::configmaps();
    let readonly = {
        let mut fake = Fake::new(ResourceInfo {
            resource: "events".into(),
            kind: "Event".into(),
            list_kind: "EventList".into(),
            version: "v1".into(),
            namespaced: true,
            ..Default::default()
        });
        Arc::get_mut(&mut fake).unwrap().verbs = vec!["get", "list"];
        fake
    };
    let mut namespaces = Fake::new(ResourceInfo {
        resource: "namespaces".into(),
        kind: "Namespace".into(),
        list_kind: "NamespaceList".into(),
        version: "v1".into(),
        namespaced: false,
        ..Default::default()
    });
    Arc::get_mut(&mut namespaces).unwrap().graceful = true;
    let core = ApiGroupInfo {
        group: String::new(),
        versions: vec![
            ApiGroupVersion::new("v1", vec![configmaps.clone(), readonly, namespaces.clone()])
                .with("configmaps/status", configmaps.clone()),
        ],
    };
    server.install_legacy_api_group("/api", core).unwrap();
    let mut widgets = Fake::new(Fake::widgets());
    {
        let fake = Arc::get_mut(&mut widgets).unwrap();
        fake.strategy.strategic = false;
        fake.create_on_update = true;
        fake.delete_returns_nothing = true;
    }
    let group = ApiGroupInfo {
        group: "example.com".into(),
        versions: vec![ApiGroupVersion::new("v1", vec![widgets])],
    };
    server.install_api_groups(&[group]).unwrap();
    Harness { server, configmaps }
}

fn harness() -> Harness {
    harness_with(|_| {})
}

struct Call {
    method: Method,
    uri: String,
    headers: Vec<(header::HeaderName, String)>,
    body: Body,
    recorder: Option<Arc<WarningRecorder>>,
    shutdown: Option<tokio_util::sync::CancellationToken>,
}

fn call(method: Method, uri: &str) -> Call {
    Call {
        method,
        uri: uri.to_string(),
        headers: Vec::new(),
        body: empty(),
        recorder: None,
        shutdown: None,
    }
}

impl Call {
    fn header(mut self, name: header::HeaderName, value: &str) -> Self {
        self.headers.push((name, value.to_string()));
        self
    }

    fn json(self, value: Value) -> Self {
        self.raw(
            serde_json::to_vec(&value).unwrap(),
            Some("application/json"),
        )
    }

    fn raw(mut self, body: impl Into<Bytes>, content_type: Option<&str>) -> Self {
        self.body = full(body.into());
        match content_type {
            Some(ct) => self.header(header::CONTENT_TYPE, ct),
            None => self,
        }
    }

    async fn send(self, h: &Harness) -> Response {
        let mut builder = http::Request::builder().method(self.method).uri(&self.uri);
        for (name, value) in &self.headers {
            builder = builder.header(name, value);
        }
        let mut req = builder.body(self.body).unwrap();
        if let Some(recorder) = self.recorder {
            req.extensions_mut().insert(recorder);
        }
        if let Some(token) = self.shutdown {
            req.extensions_mut().insert(ServerShutdownSignal(token));
        }
        h.server
            .handler()
            .director
            .clone()
            .oneshot(req)
            .await
            .unwrap()
    }
}

async fn body_text(resp: Response) -> String {
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8(bytes.to_vec()).unwrap()
}

async fn body_json(resp: Response) -> Value {
    serde_json::from_str(&body_text(resp).await).unwrap()
}

fn cm(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"a": "1"}})
}

async fn create_cm(h: &Harness, name: &str) {
    let resp = call(Method::POST, "/api/v1/namespaces/default/configmaps")
        .json(cm(name))
        .send(h)
        .await;
    assert_eq!(resp.status(), StatusCode::CREATED);
}

const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

// ---------------------------------------------------------------- installation and discovery

#[tokio::test]
async fn discovery_documents_for_installed_groups() {
    let h = harness();
    let resp = call(Method::GET, "/api/v1").send(&h).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let doc = body_json(resp).await;
    assert_eq!(doc["kind"], "APIResourceList");
    assert_eq!(doc["groupVersion"], "v1");
    let names: Vec<&str> = doc["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["configmaps", "configmaps/status", "events", "namespaces"]
    );
    let cm = &doc["resources"][0];
    assert_eq!(
        cm["verbs"],
        json!([
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch"
        ])
    );
    assert_eq!(cm["shortNames"], json!(["cm"]));
    assert_eq!(cm["singularName"], "configmap");
    assert_eq!(cm["namespaced"], true);
    assert_eq!(
        cm["storageVersionHash"],
        crate::endpoints::discovery::storage_version_hash("", "v1", "ConfigMap")
    );
    assert_eq!(doc["resources"][1]["singularName"], "");
    assert!(doc["resources"][1].get("storageVersionHash").is_none());

    let apis = body_json(call(Method::GET, "/apis").send(&h).await).await;
    assert_eq!(apis["groups"][0]["name"], "example.com");
    assert_eq!(apis["groups"][0]["preferredVersion"]["version"], "v1");
    let group = body_json(call(Method::GET, "/apis/example.com").send(&h).await).await;
    assert_eq!(group["kind"], "APIGroup");
    let gv = body_json(call(Method::GET, "/apis/example.com/v1").send(&h).await).await;
    assert_eq!(gv["resources"][0]["categories"], json!(["all"]));
    let legacy = body_json(call(Method::GET, "/api").send(&h).await).await;
    assert_eq!(legacy["versions"], json!(["v1"]));
}

#[tokio::test]
async fn install_errors_as_upstream() {
    let h = harness();
    let err = h
        .server
        .install_legacy_api_group("/core", ApiGroupInfo::default())
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "\"/core\" is not in the allowed legacy API prefixes: [/api]"
    );
    let no_versions = ApiGroupInfo {
        group: "x.io".into(),
        versions: Vec::new(),
    };
    assert!(
        h.server
            .install_api_groups(&[no_versions])
            .unwrap_err()
            .to_string()
            .starts_with("no version priority set for")
    );
    let empty_group = ApiGroupInfo {
        group: String::new(),
        versions: vec![ApiGroupVersion::new("v1", Vec::new())],
    };
    assert!(
        h.server
            .install_api_groups(&[empty_group])
            .unwrap_err()
            .to_string()
            .starts_with("cannot register handler with an empty group for")
    );
    let upper = ApiGroupInfo {
        group: "x.io".into(),
        versions: vec![ApiGroupVersion::new("v1", Vec::new()).with("Foos", Fake::configmaps())],
    };
    assert_eq!(
        h.server
            .install_api_groups(&[upper])
            .unwrap_err()
            .to_string(),
        "resource names must be lowercase only, not \"Foos\""
    );
}

// ---------------------------------------------------------------- routing and get

#[tokio::test]
async fn routing_404_and_405() {
    let h = harness();
    let resp = call(Method::GET, "/api/v1/namespaces/default/nothings")
        .send(&h)
        .await;
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    let body = body_json(resp).await;
    assert_eq!(
        body["message"],
        "the server could not find the requested resource"
    );
    // events serve get and list only.
    let resp = call(Method::POST, "/api/v1/namespaces/default/events")
        .json(json!({}))
        .send(&h)
        .await;
    assert_eq!(resp.status(), StatusCode::METHOD_NOT_ALLOWED);
    // PUT on a collection path.
    let resp = call(Method::PUT, "/api/v1/namespaces/default/configmaps")
        .json(json!({}))
        .send(&h)
        .await;
    assert_eq!(resp.status(), StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test]
async fn get_missing_is_the_canonical_404() {
    let h = harness();
    let resp = call(Method::GET, "/apis/example.com/v1/widgets/foo")
        .send(&h)
        .await;
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    assert_eq!(resp.headers()[header::CONTENT_TYPE], "application/json");
    assert_eq!(
        body_text(resp).await,
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"widgets.example.com \\\"foo\\\" not found\",\"reason\":\"NotFound\",\"details\":{\"name\":\"foo\",\"group\":\"example.com\",\"kind\":\"widgets\"},\"code\":404}\n"
    );
}

#[tokio::test]
async fn get_json_pretty_and_yaml() {
    let h = harness();
    create_cm(&h, "a").await;
    let resp = call(Method::GET, "/api/v1/namespaces/default/configmaps/a")
        .send(&h)
        .await;
    assert_eq!(resp.status(), StatusCode::OK);
    let text = body_text(resp).await;
    assert!(text.ends_with("}\n") && !text.contains("\n "), "{text}");
    let resp = call(
        Method::GET,
        "/api/v1/namespaces/default/configmaps/a?pretty=true",
    )
    .send(&h)
    .await;
    assert!(body_text(resp).await.contains("\n  \"apiVersion\""));
    let resp = call(Method::GET, "/api/v1/namespaces/default/configmaps/a")
        .header(header::ACCEPT, "application/yaml")
        .send(&h)
        .await;
    assert_eq!(resp.headers()[header::CONTENT_TYPE], "application/yaml");
    let text = body_text(resp).await;
    assert!(text.contains("kind: ConfigMap"), "{text}");
    let resp = call(Method::GET, "/api/v1/namespaces/default/configmaps/a")
        .header(header::ACCEPT, "text/html")
        .send(&h)
        .await;
    assert_eq!(resp.status(), StatusCode::NOT_ACCEPTABLE);
    assert_eq!(
        body_json(resp).await["message"],
        "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
    );
}

// ---------------------------------------------------------------- list, Table, partial metadata

#[tokio::test]
async fn list_as_table_and_partial_metadata() {
    let h = harness();
    create_cm(&h, "a").await;
    create_cm(&h, "b").await;
    let resp = call(
        Method::GET,
        "/api/v1/namespaces/default/configmaps?limit=500",
    )
    .header(header::ACCEPT, TABLE)
    .send(&h)
    .await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()[header::CONTENT_TYPE], "application/json");
    let table = body_json(resp).await;
    assert_eq!(table["kind"], "Table");
    assert_eq!(table["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(table["columnDefinitions"][0]["name"], "Name");
    assert_eq!(table["rows"].as_array().unwrap().len(), 2);
    assert_eq!(table["rows"][0]["cells"][0], "a");
    assert_eq!(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");

    let resp = call(
        Method::GET,
        "/api/v1/namespaces/default/configmaps/a?includeObject=Object",
    )
    .header(header::ACCEPT, TABLE)
    .send(&h)
    .await;
    let table = body_json(resp).await;
    assert_eq!(table["rows"][0]["object"]["data"]["a"], "1");

    let resp = call(
        Method::GET,
        "/api/v1/namespaces/default/configmaps?includeObject=bogus",
    )
    .header(header::ACCEPT, TABLE)
    .send(&h)
    .await;
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);

    let resp = call(Method::GET, "/api/v1/namespaces/default/configmaps")
        .header(
            header::ACCEPT,
            "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
        )
        .send(&h)
        .await;
    let list = body_json(resp).await;
    assert_eq!(list["kind"], "PartialObjectMetadataList");
    assert!(list["items"][0].get("data").is_none());

    let resp = call(Method::GET, "/api/v1/namespaces/default/configmaps")
        .header(
            header::ACCEPT,
            "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io",
        )
        .send(&h)
        .await;
    assert_eq!(resp.status(), StatusCode::NOT_ACCEPTABLE);
    assert!(
        body_json(resp).await["message"]
            .as_str()
            .unwrap()
            .starts_with("you requested PartialObjectMetadata, but the requested object is a list")
    );

    // A transform the endpoint cannot do falls back to the next clause.
    let resp = call(Method::GET, "/api/v1/namespaces/default/configmaps")
        .header(
            header::ACCEPT,
            "application/json;as=Other;v=v1;g=meta.k8s.io, application/json",
        )
        .send(&h)
        .await;
    assert_eq!(body_json(resp).await["kind"], "ConfigMapList");
}

#[tokio::test]
async fn list_option_validation_is_422() {
    let h = harness();
    let resp = call(
        Method::GET,
        "/api/v1/namespaces/default/configmaps?resourceVersionMatch=Exact",
    )
    .send(&h)
    .await;
    assert_eq!(resp.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let resp = call(Method::GET, "/api/v1/namespaces/default/configmaps?limit=x")
        .send(&h)
        .await;
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
}

// ---------------------------------------------------------------- create

#[tokio::test]
async fn create_json_yaml_and_no_content_type() {
    let h = harness();
    let resp = call(Method::POST, "/api/v1/namespaces/default/configmaps")
        .raw(serde_json::to_vec(&cm("plain")).unwrap(), None)
        .send(&h)
        .await;
    assert_eq!(resp.status(), StatusCode::CREATED);
    let created = body_json(resp).await;
    assert_eq!(created["metadata"]["namespace"], "default");

    let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: yml\ndata:\n  a: \"1\"\n";
    let resp = call(Method::POST, "/api/v1/namespaces/default/configmaps")
        .raw(yaml, Some("application/yaml"))
        .send(&h)
        .await;
    assert_eq!(resp.status(), StatusCode::CREATED);
    assert_eq!(body_json(resp).await["metadata"]["name"], "yml");

    let resp = call(Method::POST, "/api/v1/namespaces/default/configmaps")
        .json(cm("plain"))
        .send(&h)
        .await;
    assert_eq!(resp.status(), StatusCode::CONFLICT);
    assert_eq!(
        body_text(resp).await,
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"configmaps \\\"plain\\\" already exists\",\"reason\":\"AlreadyExists\",\"details\":{\"name\":\"plain\",\"kind\":\"configmaps\"},\"code\":409}\n"
    );
}

#[tokio::test]
async fn create_413_415_and_protobuf_hook() {
    let h = harness();
    let resp = call(Method::POST, "/api/v1/namespaces/default/configmaps")
        .raw(vec![b' '; 1025], Some("application/json"))
        .send(&h)
        .await;
    assert_eq!(resp.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(
        body_json(resp).await["message"],
        "Request entity too large: limit is 1024"
    );
    let resp = call(Method::POST, "/api/v1/namespaces/default/configmaps")
        .raw("x", Some("text/plain"))
        .send(&h)
        .await;
    assert_eq!(resp.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let resp = call(Method::POST, "/api/v1/namespaces/default/configmaps")
        .raw("k8s\0", Some("application/vnd.kubernetes.protobuf"))
        .send(&h)
        .await;
    assert_eq!(resp.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);

    h.server.set_protobuf_decoder(Arc::new(|bytes: &[u8]| {
        assert!(bytes.starts_with(b"k8s\0"));
        Ok(cm("from-pb"))
    }));
    let resp = call(Method::POST, "/api/v1/namespaces/default/configmaps")
        .raw("k8s\0", Some("application/vnd.kubernetes.protobuf"))
        .header(
            header::ACCEPT,
            "application/vnd.kubernetes.protobuf,application/json",
        )
        .send(&h)
        .await;
    assert_eq!(resp.status(), StatusCode::CREATED);
    // A built-in kind is answered in the protobuf the client prefers.
    assert_eq!(
        resp.headers()[header::CONTENT_TYPE],
        "application/vnd.kubernetes.protobuf"
    );
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    assert!(body.starts_with(b"k8s\0"));
}

#[tokio::test]
async fn create_checks_version_namespace_and_dry_run() {
    let h = harness();
    let mut wrong = cm("x");
    wrong["apiVersion"] = json!("apps/v1");
    let resp = call(Method::POST, "/api/v1/namespaces/default/configmaps")
        .json(wrong)
        .send(&h)
        .await;
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    assert_eq!(
        body_json(resp).await["message"],
        "the API version in the data (apps/v1) does not match the expected API version (v1)"
    );
    let mut other_ns = cm("x");
    other_ns["metadata"]["namespace"] = json!("other");
    let resp = call(Method::POST, "/api/v1/namespaces/default/configmaps")
        .json(other_ns)
        .send(&h)
        .await;
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    assert_eq!(
        body_json(resp).await["message"],
        "the namespace of the object (other) does not match the namespace on the request (default)"
    );
    let resp = call(
        Method::POST,
        "/api/v1/namespaces/default/configmaps?dryRun=All",
    )
    .json(cm("dry"))
    .send(&h)
    .await;
    assert_eq!(resp.status(), StatusCode::CREATED);
    let resp = call(Method::GET, "/api/v1/namespaces/default/configmaps/dry")
        .send(&h)
        .await;
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    let resp = call(
        Method::POST,
        "/api/v1/namespaces/default/configmaps?dryRun=Some",
    )
    .json(cm("dry"))
    .send(&h)
    .await;
    assert_eq!(resp.status(), StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn field_validation_strict_warn_ignore() {
    let h = harness();
    let mut body = cm("v");
    body["spec"] = json!({"x": 1, "replicas": 1});
    let resp = call(
        Method::POST,
        "/api/v1/namespaces/default/configmaps?fieldValidation=Strict",
    )
    .json(body.clone())
    .send(&h)
    .await;
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    assert_eq!(
        body_json(resp).await["message"],
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: unknown field \"spec.x\""
    );
    let recorder = WarningRecorder::new();
    let mut warn = call(Method::POST, "/api/v1/namespaces/default/configmaps").json(body.clone());
    warn.recorder = Some(recorder.clone());
    assert_eq!(warn.send(&h).await.status(), StatusCode::CREATED);
    assert_eq!(
        recorder.header_values(),
        ["299 - \"unknown field \\\"spec.x\\\"\""]
    );

    let recorder = WarningRecorder::new();
    let mut body2 = body.clone();
    body2["metadata"]["name"] = json!("v2");
    let mut ignore = call(
        Method::POST,
        "/api/v1/namespaces/default/configmaps?fieldValidation=Ignore",
    )
    .json(body2);
    ignore.recorder = Some(recorder.clone());
    assert_eq!(ignore.send(&h).await.status(), StatusCode::CREATED);
    assert!(recorder.header_values().is_empty());
}

// ---------------------------------------------------------------- update

#[tokio::test]
async fn update_ok_name_mismatch_and_create_on_update() {
    let h = harness();
    create_cm(&h, "u").await;
    let mut changed = cm("u");
    changed["data"]["a"] = json!("2");
    let resp = call(Method::PUT, "/api/v1/namespaces/default/configmaps/u")
        .json(changed)
        .send(&h)
        .await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(body_json(resp).await["data"]["a"], "2");

    let resp = call(Method::PUT, "/api/v1/namespaces/default/configmaps/other")
        .json(cm("u"))
        .send(&h)
        .await;
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    assert_eq!(
        body_json(resp).await["message"],
        "the name of the object (u) does not match the name on the URL (other)"
    );

    let widget =
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}});
    let resp = call(Method::PUT, "/apis/example.com/v1/widgets/w")
        .json(widget.clone())
        .send(&h)
        .await;
    assert_eq!(resp.status(), StatusCode::CREATED);
    let resp = call(Method::PUT, "/apis/example.com/v1/widgets/w")
        .json(widget)
        .send(&h)
        .await;
    assert_eq!(resp.status(), StatusCode::OK);
}

// ---------------------------------------------------------------- patch

async fn patch(h: &Harness, uri: &str, content_type: &str, body: &str) -> Response {
    call(Method::PATCH, uri)
        .raw(body.to_string(), Some(content_type))
        .send(h)
        .await
}

#[tokio::test]
async fn patch_types() {
    let h = harness();
    create_cm(&h, "p").await;
    let uri = "/api/v1/namespaces/default/configmaps/p";
    let resp = patch(
        &h,
        uri,
        "application/merge-patch+json",
        r#"{"data":{"b":"2"}}"#,
    )
    .await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(body_json(resp).await["data"], json!({"a": "1", "b": "2"}));

    let resp = patch(
        &h,
        uri,
        "application/json-patch+json",
        r#"[{"op":"replace","path":"/data/a","value":"9"}]"#,
    )
    .await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(body_json(resp).await["data"]["a"], "9");

    let resp = patch(
        &h,
        uri,
        "application/json-patch+json",
        r#"[{"op":"remove","path":"/data/missing"}]"#,
    )
    .await;
    assert_eq!(resp.status(), StatusCode::UNPROCESSABLE_ENTITY);

    let resp = patch(
        &h,
        uri,
        "application/strategic-merge-patch+json",
        r#"{"data":{"c":"3","b":null}}"#,
    )
    .await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(body_json(resp).await["data"], json!({"a": "9", "c": "3"}));

    let resp = patch(&h, uri, "text/plain", "{}").await;
    assert_eq!(resp.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);

    let resp = patch(
        &h,
        "/apis/example.com/v1/widgets/w",
        "application/strategic-merge-patch+json",
        "{}",
    )
    .await;
    assert_eq!(resp.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_eq!(
        body_json(resp).await["message"],
        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    );

    let resp = patch(
        &h,
        "/api/v1/namespaces/default/configmaps/none",
        "application/merge-patch+json",
        "{}",
    )
    .await;
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);

    let resp = patch(
        &h,
        &format!("{uri}?force=true"),
        "application/merge-patch+json",
        "{}",
    )
    .await;
    assert_eq!(resp.status(), StatusCode::UNPROCESSABLE_ENTITY);

    let resp = patch(
        &h,
        uri,
        "application/merge-patch+json",
        r#"{"metadata":{"name":"q"}}"#,
    )
    .await;
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn apply_creates_then_updates() {
    let h = harness();
    let uri = "/api/v1/namespaces/default/configmaps/s?fieldManager=kubectl&force=false";
    let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: s\ndata:\n  k: v\n";
    let resp = patch(&h, uri, "application/apply-patch+yaml", yaml).await;
    assert_eq!(resp.status(), StatusCode::CREATED);
    let created = body_json(resp).await;
    assert_eq!(created["metadata"]["namespace"], "default");
    let resp = patch(
        &h,
        uri,
        "application/apply-patch+yaml",
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"s"},"data":{"k":"w"}}"#,
    )
    .await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(body_json(resp).await["data"]["k"], "w");
    let resp = patch(
        &h,
        "/api/v1/namespaces/default/configmaps/s",
        "application/apply-patch+yaml",
        yaml,
    )
    .await;
    assert_eq!(resp.status(), StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn strict_patch_is_422() {
    let h = harness();
    create_cm(&h, "f").await;
    let resp = patch(
        &h,
        "/api/v1/namespaces/default/configmaps/f?fieldValidation=Strict",
        "application/merge-patch+json",
        r#"{"unknown":1}"#,
    )
    .await;
    assert_eq!(resp.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let message = body_json(resp).await["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        message.starts_with(" \"\" is invalid: patch: Invalid value: \"{"),
        "{message}"
    );
    assert!(
        message.ends_with("strict decoding error: unknown field \"unknown\""),
        "{message}"
    );
}

// ---------------------------------------------------------------- delete

#[tokio::test]
async fn delete_and_deletecollection() {
    let h = harness();
    create_cm(&h, "d").await;
    create_cm(&h, "e").await;
    let resp = call(Method::DELETE, "/api/v1/namespaces/default/configmaps/d")
        .json(json!({"propagationPolicy": "Background"}))
        .send(&h)
        .await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(body_json(resp).await["metadata"]["name"], "d");
    let resp = call(Method::DELETE, "/api/v1/namespaces/default/configmaps/d")
        .send(&h)
        .await;
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    let resp = call(Method::DELETE, "/api/v1/namespaces/default/configmaps/e")
        .json(json!({"propagationPolicy": "Sideways"}))
        .send(&h)
        .await;
    assert_eq!(resp.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let resp = call(Method::DELETE, "/api/v1/namespaces/default/configmaps/e")
        .raw("{", Some("application/json"))
        .send(&h)
        .await;
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    let resp = call(Method::DELETE, "/api/v1/namespaces/default/configmaps")
        .send(&h)
        .await;
    assert_eq!(resp.status(), StatusCode::OK);
    let list = body_json(resp).await;
    assert_eq!(list["kind"], "ConfigMapList");
    assert_eq!(list["items"][0]["metadata"]["name"], "e");
    assert!(h.configmaps.objects.lock().unwrap().is_empty());
}

// ---------------------------------------------------------------- watch

async fn next_line(body: &mut Body) -> Option<Value> {
    let frame = tokio::time::timeout(Duration::from_secs(20), body.frame())
        .await
        .expect("watch event in time")?
        .unwrap();
    let data = frame.into_data().unwrap();
    let text = std::str::from_utf8(&data).unwrap();
    assert!(text.ends_with('\n'));
    assert!(text.starts_with("{\"type\":"), "{text}");
    Some(serde_json::from_str(text).unwrap())
}

#[tokio::test]
async fn watch_list_initial_events_then_changes_then_shutdown() {
    let h = harness();
    create_cm(&h, "w1").await;
    let shutdown = tokio_util::sync::CancellationToken::new();
    let mut c = call(
        Method::GET,
        "/api/v1/namespaces/default/configmaps?watch=true&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=600",
    );
    c.shutdown = Some(shutdown.clone());
    let resp = c.send(&h).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()[header::CONTENT_TYPE], "application/json");
    let mut body = resp.into_body();
    let first = next_line(&mut body).await.unwrap();
    assert_eq!(first["type"], "ADDED");
    assert_eq!(first["object"]["metadata"]["name"], "w1");
    let bookmark = next_line(&mut body).await.unwrap();
    assert_eq!(bookmark["type"], "BOOKMARK");
    assert_eq!(
        bookmark["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    create_cm(&h, "w2").await;
    let added = next_line(&mut body).await.unwrap();
    assert_eq!(added["type"], "ADDED");
    assert_eq!(added["object"]["metadata"]["name"], "w2");
    shutdown.cancel();
    assert!(next_line(&mut body).await.is_none());
}

#[tokio::test]
async fn watch_as_table_and_timeout() {
    let h = harness();
    create_cm(&h, "t1").await;
    create_cm(&h, "t2").await;
    let resp = call(
        Method::GET,
        "/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=0&timeoutSeconds=1",
    )
    .header(header::ACCEPT, TABLE)
    .send(&h)
    .await;
    assert_eq!(resp.status(), StatusCode::OK);
    let mut body = resp.into_body();
    let first = next_line(&mut body).await.unwrap();
    assert_eq!(first["object"]["kind"], "Table");
    assert!(first["object"]["columnDefinitions"].is_array());
    assert_eq!(first["object"]["rows"][0]["cells"][0], "t1");
    let second = next_line(&mut body).await.unwrap();
    assert!(second["object"]["columnDefinitions"].is_null());
    // timeoutSeconds=1 ends the stream cleanly.
    assert!(next_line(&mut body).await.is_none());
}

#[tokio::test]
async fn watch_yaml_is_406() {
    let h = harness();
    let resp = call(
        Method::GET,
        "/api/v1/namespaces/default/configmaps?watch=true",
    )
    .header(header::ACCEPT, "application/yaml")
    .send(&h)
    .await;
    assert_eq!(resp.status(), StatusCode::NOT_ACCEPTABLE);
    assert_eq!(
        body_json(resp).await["message"],
        "only the following media types are accepted: application/json, application/vnd.kubernetes.protobuf"
    );
}

#[tokio::test]
async fn legacy_watch_path_for_one_object() {
    let h = harness();
    create_cm(&h, "one").await;
    let resp = call(
        Method::GET,
        "/api/v1/watch/namespaces/default/configmaps/one?timeoutSeconds=1",
    )
    .send(&h)
    .await;
    assert_eq!(resp.status(), StatusCode::OK);
    let mut body = resp.into_body();
    let first = next_line(&mut body).await.unwrap();
    assert_eq!(first["type"], "ADDED");
}

#[tokio::test]
async fn metadata_name_field_selector_is_a_collection_request() {
    let h = harness();
    create_cm(&h, "one").await;
    create_cm(&h, "two").await;
    for uri in [
        "/api/v1/namespaces/default/configmaps?fieldSelector=metadata.name%3Done",
        "/api/v1/configmaps?fieldSelector=metadata.name%3Done",
        "/api/v1/configmaps?fieldSelector=metadata.name==one",
    ] {
        let resp = call(Method::GET, uri).send(&h).await;
        assert_eq!(resp.status(), StatusCode::OK, "{uri}");
        let body = body_json(resp).await;
        assert_eq!(body["kind"], "ConfigMapList", "{uri}");
        let names: Vec<&Value> = body["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| &i["metadata"]["name"])
            .collect();
        assert_eq!(names, [&json!("one")], "{uri}");
    }
    // Cluster-scoped, and a name nothing has: an empty list, not a 404.
    let resp = call(
        Method::GET,
        "/apis/example.com/v1/widgets?fieldSelector=metadata.name%3Dnone",
    )
    .send(&h)
    .await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(body_json(resp).await["kind"], "WidgetList");
    // A watch scoped to one object by the selector is a collection watch.
    let resp = call(
        Method::GET,
        "/api/v1/configmaps?watch=true&fieldSelector=metadata.name%3Dtwo&timeoutSeconds=1",
    )
    .send(&h)
    .await;
    assert_eq!(resp.status(), StatusCode::OK);
    // deletecollection never takes a name from the selector.
    let resp = call(
        Method::POST,
        "/api/v1/namespaces/default/configmaps?fieldSelector=metadata.name%3Done",
    )
    .json(cm("three"))
    .send(&h)
    .await;
    assert_eq!(resp.status(), StatusCode::CREATED);
}

#[tokio::test]
async fn namespaces_and_all_namespaces_paths() {
    let h = harness();
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}});
    let resp = call(Method::POST, "/api/v1/namespaces")
        .json(ns)
        .send(&h)
        .await;
    assert_eq!(resp.status(), StatusCode::CREATED);
    let resp = call(Method::GET, "/api/v1/namespaces/team").send(&h).await;
    assert_eq!(resp.status(), StatusCode::OK);
    // Graceful deletion with orphanDependents=false is 202, else 200.
    let resp = call(
        Method::DELETE,
        "/api/v1/namespaces/team?orphanDependents=false",
    )
    .send(&h)
    .await;
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let resp = call(Method::DELETE, "/api/v1/namespaces/team")
        .send(&h)
        .await;
    assert_eq!(resp.status(), StatusCode::OK);

    create_cm(&h, "anywhere").await;
    let resp = call(Method::GET, "/api/v1/configmaps").send(&h).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(
        body_json(resp).await["items"][0]["metadata"]["name"],
        "anywhere"
    );
    let resp = call(Method::POST, "/api/v1/configmaps")
        .json(cm("x"))
        .send(&h)
        .await;
    assert_eq!(resp.status(), StatusCode::METHOD_NOT_ALLOWED);
    let resp = call(Method::GET, "/api/v1/configmaps/anywhere")
        .send(&h)
        .await;
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    let resp = call(
        Method::GET,
        "/apis/example.com/v1/namespaces/default/widgets",
    )
    .send(&h)
    .await;
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn delete_without_object_answers_success_status() {
    let h = harness();
    let widget =
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "gone"}});
    let resp = call(Method::PUT, "/apis/example.com/v1/widgets/gone")
        .json(widget)
        .send(&h)
        .await;
    assert_eq!(resp.status(), StatusCode::CREATED);
    let resp = call(Method::DELETE, "/apis/example.com/v1/widgets/gone")
        .send(&h)
        .await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(
        body_text(resp).await,
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Success\",\"details\":{\"name\":\"gone\",\"kind\":\"Widget\"},\"code\":200}\n"
    );
}

#[test]
fn error_events_carry_a_status() {
    let h = harness();
    let _ = &h.configmaps;
    let scope = crate::endpoints::handlers::ResourceScope {
        storage: h.configmaps.clone(),
        group: String::new(),
        version: "v1".into(),
        resource: "configmaps".into(),
        subresource: String::new(),
        config: Default::default(),
    };
    let output = crate::endpoints::handlers::encode::Output {
        serializer: crate::endpoints::negotiation::JSON,
        pretty: false,
        transform: crate::endpoints::handlers::encode::Transform::None,
        include: Default::default(),
        gzip: false,
    };
    let line = crate::endpoints::handlers::watch::encode_event(
        &scope,
        &output,
        ObjectEvent::Error(ApiError::expired("too old resource version: 1 (5)")),
        true,
    )
    .unwrap()
    .unwrap();
    assert_eq!(
        String::from_utf8(line).unwrap(),
        "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"too old resource version: 1 (5)\",\"reason\":\"Expired\",\"code\":410}}\n"
    );
}

#[tokio::test]
async fn through_the_default_handler_chain() {
    let h = harness();
    let mut body = cm("chain");
    body["spec"] = json!({"bogus": true});
    let req = http::Request::builder()
        .method(Method::POST)
        .uri("/api/v1/namespaces/default/configmaps?fieldManager=test")
        .header(header::CONTENT_TYPE, "application/json")
        .body(full(serde_json::to_vec(&body).unwrap()))
        .unwrap();
    let resp = h
        .server
        .handler()
        .full_handler_chain
        .clone()
        .oneshot(req)
        .await
        .unwrap();
    let status = resp.status();
    let warnings: Vec<String> = resp
        .headers()
        .get_all(header::WARNING)
        .iter()
        .map(|v| v.to_str().unwrap().to_string())
        .collect();
    let text = body_text(resp).await;
    assert_eq!(status, StatusCode::CREATED, "{text}");
    assert_eq!(warnings, ["299 - \"unknown field \\\"spec.bogus\\\"\""]);
}

#[tokio::test]
async fn strategic_merge_patch_uses_the_schema_merge_keys() {
    let h = harness();
    let mut things = Fake::new(ResourceInfo {
        group: "smp.io".into(),
        version: "v1".into(),
        kind: "Thing".into(),
        list_kind: "ThingList".into(),
        resource: "things".into(),
        namespaced: true,
        ..Default::default()
    });
    let document = json!({"definitions": {
        "Thing": {"properties": {"spec": {"$ref": "#/definitions/Spec"}}},
        "Spec": {"properties": {"containers": {
            "type": "array",
            "items": {"type": "object"},
            "x-kubernetes-patch-strategy": "merge",
            "x-kubernetes-patch-merge-key": "name",
        }}},
    }});
    Arc::get_mut(&mut things).unwrap().strategy.schema =
        Some((Arc::new(document), "Thing".to_string()));
    h.server
        .install_api_groups(&[ApiGroupInfo {
            group: "smp.io".into(),
            versions: vec![ApiGroupVersion::new("v1", vec![things])],
        }])
        .unwrap();
    let thing = json!({"apiVersion": "smp.io/v1", "kind": "Thing", "metadata": {"name": "t"},
        "spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "1"}]}});
    let resp = call(Method::POST, "/apis/smp.io/v1/namespaces/default/things")
        .json(thing)
        .send(&h)
        .await;
    assert_eq!(resp.status(), StatusCode::CREATED);
    let resp = patch(
        &h,
        "/apis/smp.io/v1/namespaces/default/things/t",
        "application/strategic-merge-patch+json",
        r#"{"spec":{"containers":[{"name":"b","image":"2"}]}}"#,
    )
    .await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(
        body_json(resp).await["spec"]["containers"],
        json!([{"name": "a", "image": "1"}, {"name": "b", "image": "2"}])
    );
}

#[tokio::test]
async fn large_responses_are_gzipped_when_accepted() {
    let h = harness_with(|c| c.max_request_body_bytes = 1 << 20);
    let mut big = cm("big");
    big["data"]["a"] = json!("x".repeat(200 * 1024));
    let resp = call(Method::POST, "/api/v1/namespaces/default/configmaps")
        .json(big)
        .send(&h)
        .await;
    assert_eq!(resp.status(), StatusCode::CREATED);
    let resp = call(Method::GET, "/api/v1/namespaces/default/configmaps/big")
        .header(header::ACCEPT_ENCODING, "gzip")
        .send(&h)
        .await;
    assert_eq!(resp.headers()[header::CONTENT_ENCODING], "gzip");
    assert_eq!(resp.headers()[header::VARY], "Accept-Encoding");
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    let mut text = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut text)
        .unwrap();
    assert!(text.contains("\"name\":\"big\""));
    let resp = call(Method::GET, "/api/v1/namespaces/default/configmaps/big")
        .send(&h)
        .await;
    assert!(resp.headers().get(header::CONTENT_ENCODING).is_none());
    create_cm(&h, "small").await;
    let resp = call(Method::GET, "/api/v1/namespaces/default/configmaps/small")
        .header(header::ACCEPT_ENCODING, "gzip")
        .send(&h)
        .await;
    assert!(resp.headers().get(header::CONTENT_ENCODING).is_none());
}

#[tokio::test]
async fn duplicate_fields_are_reported_before_unknown_ones() {
    let h = harness();
    let body = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dup"},"data":{"a":"1","a":"2"},"unknown":1}"#;
    let resp = call(
        Method::POST,
        "/api/v1/namespaces/default/configmaps?fieldValidation=Strict",
    )
    .raw(body, Some("application/json"))
    .send(&h)
    .await;
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    assert_eq!(
        body_json(resp).await["message"],
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: duplicate field \"data.a\", unknown field \"unknown\""
    );
    let recorder = WarningRecorder::new();
    let mut warn = call(Method::POST, "/api/v1/namespaces/default/configmaps").raw(body, None);
    warn.recorder = Some(recorder.clone());
    let resp = warn.send(&h).await;
    assert_eq!(resp.status(), StatusCode::CREATED);
    assert_eq!(body_json(resp).await["data"]["a"], "2");
    assert_eq!(
        recorder.header_values(),
        [
            "299 - \"duplicate field \\\"data.a\\\"\"",
            "299 - \"unknown field \\\"unknown\\\"\""
        ]
    );
}
