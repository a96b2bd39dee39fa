//! Scenarios of the generic store over the embedded backend, directly and through the watch
//! cache, with a test strategy (the analogue of upstream's `store_test.go` tables).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use http::StatusCode;
use serde_json::{Value, json};

use super::*;
use crate::registry::rest::Preconditions as RestPreconditions;
use crate::registry::{FieldError, SelectableFields};
use crate::storage::backends::EmbeddedStorage;
use crate::storage::cacher::{Cacher, CacherConfig};

const ROOT: &str = "/registry/widgets";
const EVENT_TIMEOUT: Duration = Duration::from_secs(20);

/// A namespaced `Widget` in `example.com/v1` with a generation, a validated `spec.size` and a
/// selectable `spec.color`.
struct Widgets {
    info: ResourceInfo,
}

impl Widgets {
    fn new(namespaced: bool) -> Self {
        Widgets {
            info: ResourceInfo {
                group: "example.com".into(),
                version: "v1".into(),
                kind: "Widget".into(),
                list_kind: "WidgetList".into(),
                resource: "widgets".into(),
                singular: "widget".into(),
                namespaced,
                ..Default::default()
            },
        }
    }
}

impl Strategy for Widgets {
    fn info(&self) -> &ResourceInfo {
        &self.info
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        if let Some(top) = obj.as_object_mut() {
            top.remove("status");
        }
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        if let Some(top) = new.as_object_mut() {
            match old.get("status") {
                Some(s) => top.insert("status".into(), s.clone()),
                None => top.remove("status"),
            };
        }
    }

    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = Vec::new();
        if let Some(size) = obj.pointer("/spec/size").and_then(Value::as_i64)
            && size < 0
        {
            errs.push(FieldError::invalid(
                "spec.size",
                size,
                "must be greater than or equal to 0",
            ));
        }
        if obj.pointer("/spec/color") == Some(&json!("")) {
            errs.push(FieldError::required("spec.color", ""));
        }
        errs
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn selectable_fields(&self, obj: &Value) -> SelectableFields {
        let color = obj
            .pointer("/spec/color")
            .and_then(Value::as_str)
            .unwrap_or("");
        SelectableFields::from([("spec.color".to_string(), color.to_string())])
    }
}

/// A plain strategy (only the default field selectors).
struct Plain(ResourceInfo);

impl Strategy for Plain {
    fn info(&self) -> &ResourceInfo {
        &self.0
    }
}

struct Fixture {
    store: Store,
    _dir: tempfile::TempDir,
}

/// A store over a fresh embedded backend, behind a watch cache when `cached`; the cache has
/// loaded its first list when this returns, so watches from the resourceVersions of objects
/// the test creates next are inside its window (a cache that lists after them starts its
/// window later, and such a watch is rightly 410 Gone).
async fn open(cached: bool, strategy: SharedStrategy) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let backend: Arc<dyn Storage> = Arc::new(EmbeddedStorage::open(dir.path()).unwrap());
    let storage: Arc<dyn Storage> = if cached {
        let mut config = CacherConfig::new(ROOT);
        config.get_attrs = attrs_func(strategy.clone());
        let cacher = Arc::new(Cacher::new(backend, config));
        let deadline = tokio::time::Instant::now() + EVENT_TIMEOUT;
        while !cacher.is_ready() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "watch cache not ready"
            );
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        cacher
    } else {
        backend
    };
    Fixture {
        store: Store::new(strategy, storage, ROOT),
        _dir: dir,
    }
}

async fn widgets(cached: bool) -> Fixture {
    open(cached, Arc::new(Widgets::new(true))).await
}

fn ns(namespace: &str) -> RequestContext {
    RequestContext {
        namespace: namespace.into(),
        ..Default::default()
    }
}

fn widget(name: &str, color: &str, size: i64) -> Value {
    json!({
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name, "labels": {"color": color}},
        "spec": {"color": color, "size": size},
    })
}

fn replace_with(obj: Value) -> UpdateFunc {
    Box::new(move |_| Ok(obj.clone()))
}

fn mutate(f: impl Fn(&mut Value) + Send + 'static) -> UpdateFunc {
    Box::new(move |cur| {
        let mut v = cur.cloned().unwrap_or(Value::Null);
        f(&mut v);
        Ok(v)
    })
}

fn rv(obj: &Value) -> u64 {
    meta_str(obj, "resourceVersion").parse().unwrap()
}

fn names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| meta_str(i, "name").to_string())
        .collect()
}

async fn create(store: &Store, namespace: &str, obj: Value) -> Value {
    store
        .create(&ns(namespace), obj, &CreateOptions::default())
        .await
        .unwrap()
}

async fn next(w: &mut ObjectWatch) -> ObjectEvent {
    tokio::time::timeout(EVENT_TIMEOUT, w.next())
        .await
        .expect("no event before the deadline")
        .expect("watch ended")
}

/// Runs a scenario over the embedded backend, then through the watch cache.
macro_rules! both {
    ($name:ident) => {
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn embedded() {
                super::$name(false).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn cached() {
                super::$name(true).await;
            }
        }
    };
}

async fn create_get_list_update_delete(cached: bool) {
    let f = widgets(cached).await;
    let s = &f.store;
    let created = create(s, "ns1", widget("a", "red", 1)).await;
    let m = meta(&created).unwrap();
    assert_eq!(m["namespace"], "ns1");
    assert_eq!(m["generation"], 1);
    assert_eq!(
        uuid::Uuid::parse_str(m["uid"].as_str().unwrap())
            .unwrap()
            .get_version_num(),
        4
    );
    let ts = m["creationTimestamp"].as_str().unwrap();
    assert!(
        ts.parse::<jiff::Timestamp>().is_ok() && ts.len() == 20 && ts.ends_with('Z'),
        "{ts}"
    );
    assert_eq!(created["kind"], "Widget");
    assert_eq!(created["apiVersion"], "example.com/v1");

    let got = s
        .get(&ns("ns1"), "a", &GetOptions::default())
        .await
        .unwrap();
    assert_eq!(got, created);
    let err = s
        .get(&ns("ns2"), "a", &GetOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), StatusCode::NOT_FOUND);
    assert_eq!(err.0.message, "widgets.example.com \"a\" not found");
    let details = err.0.details.clone().unwrap();
    assert_eq!(
        (
            details.name.as_str(),
            details.group.as_str(),
            details.kind.as_str()
        ),
        ("a", "example.com", "widgets")
    );

    create(s, "ns2", widget("b", "blue", 2)).await;
    let list = s.list(&ns("ns1"), &ListOptions::default()).await.unwrap();
    assert_eq!(list["kind"], "WidgetList");
    assert_eq!(list["apiVersion"], "example.com/v1");
    assert_eq!(names(&list), ["a"]);
    assert_eq!(list["items"][0]["kind"], "Widget");
    assert!(
        list["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse::<u64>()
            .unwrap()
            >= rv(&created)
    );
    let all = s.list(&ns(""), &ListOptions::default()).await.unwrap();
    assert_eq!(names(&all), ["a", "b"]);
    let empty = s.list(&ns("none"), &ListOptions::default()).await.unwrap();
    assert_eq!(empty["items"], json!([]));

    // Update with the current resourceVersion; spec changed so the generation moves.
    let mut next = created.clone();
    next["spec"]["size"] = json!(5);
    let (updated, was_created) = s
        .update(
            &ns("ns1"),
            "a",
            replace_with(next.clone()),
            &UpdateOptions::default(),
            false,
        )
        .await
        .unwrap();
    assert!(!was_created);
    assert_eq!(updated["spec"]["size"], 5);
    assert_eq!(updated["metadata"]["generation"], 2);
    assert!(rv(&updated) > rv(&created));
    assert_eq!(updated["metadata"]["uid"], created["metadata"]["uid"]);

    // Stale resourceVersion: 409 with upstream's message.
    let err = s
        .update(
            &ns("ns1"),
            "a",
            replace_with(next),
            &UpdateOptions::default(),
            false,
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), StatusCode::CONFLICT);
    assert_eq!(err.reason(), "Conflict");
    assert_eq!(
        err.0.message,
        "Operation cannot be fulfilled on widgets.example.com \"a\": the object has been modified; please apply your changes to the latest version and try again"
    );

    // Metadata-only change: no generation bump; identical update: no write.
    let (labelled, _) = s
        .update(
            &ns("ns1"),
            "a",
            mutate(|v| v["metadata"]["labels"]["extra"] = json!("x")),
            &UpdateOptions::default(),
            false,
        )
        .await
        .unwrap();
    assert_eq!(labelled["metadata"]["generation"], 2);
    let (same, _) = s
        .update(
            &ns("ns1"),
            "a",
            mutate(|_| {}),
            &UpdateOptions::default(),
            false,
        )
        .await
        .unwrap();
    assert_eq!(rv(&same), rv(&labelled));
    assert_eq!(same, labelled);

    // uid and creationTimestamp carry over when omitted; a changed uid is refused.
    let (carried, _) = s
        .update(
            &ns("ns1"),
            "a",
            mutate(|v| {
                let m = v["metadata"].as_object_mut().unwrap();
                m.remove("uid");
                m.remove("creationTimestamp");
            }),
            &UpdateOptions::default(),
            false,
        )
        .await
        .unwrap();
    assert_eq!(carried, labelled);
    let err = s
        .update(
            &ns("ns1"),
            "a",
            mutate(|v| v["metadata"]["uid"] = json!("other")),
            &UpdateOptions::default(),
            false,
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        err.0.message,
        "Widget.example.com \"a\" is invalid: metadata.uid: Invalid value: \"other\": field is immutable"
    );

    // Update of a missing object: 404 unless create-on-update is forced.
    let err = s
        .update(
            &ns("ns1"),
            "zz",
            replace_with(widget("zz", "red", 1)),
            &UpdateOptions::default(),
            false,
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), StatusCode::NOT_FOUND);
    let (made, was_created) = s
        .update(
            &ns("ns1"),
            "zz",
            replace_with(widget("zz", "red", 1)),
            &UpdateOptions::default(),
            true,
        )
        .await
        .unwrap();
    assert!(was_created);
    assert_eq!(made["metadata"]["generation"], 1);
    assert!(made["metadata"]["uid"].is_string());

    // Delete returns a Success Status naming the resource; then 404.
    let (status, now) = s
        .delete(&ns("ns1"), "a", &DeleteOptions::default())
        .await
        .unwrap();
    assert!(now);
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["status"], "Success");
    assert_eq!(status["details"]["kind"], "widgets");
    assert_eq!(status["details"]["name"], "a");
    assert_eq!(status["details"]["uid"], created["metadata"]["uid"]);
    let err = s
        .delete(&ns("ns1"), "a", &DeleteOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), StatusCode::NOT_FOUND);
    let returning = s.clone().with_return_deleted_object(true);
    let (obj, _) = returning
        .delete(&ns("ns1"), "zz", &DeleteOptions::default())
        .await
        .unwrap();
    assert_eq!(obj["kind"], "Widget");
}
both!(create_get_list_update_delete);

async fn create_checks(cached: bool) {
    let f = widgets(cached).await;
    let s = &f.store;
    // Namespace defaulting and mismatch.
    let mut obj = widget("a", "red", 1);
    obj["metadata"]["namespace"] = json!("other");
    let err = s
        .create(&ns("ns1"), obj, &CreateOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), StatusCode::BAD_REQUEST);
    assert_eq!(
        err.0.message,
        "the namespace of the provided object does not match the namespace sent on the request"
    );
    // Name required.
    let mut obj = widget("", "red", 1);
    obj["metadata"].as_object_mut().unwrap().remove("name");
    let err = s
        .create(&ns("ns1"), obj, &CreateOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        err.0.message,
        "Widget.example.com \"\" is invalid: metadata.name: Required value: name or generateName is required"
    );
    // Strategy validation: the 422 body shape.
    let err = s
        .create(&ns("ns1"), widget("bad", "", -1), &CreateOptions::default())
        .await
        .unwrap_err();
    let body: Value = serde_json::from_slice(&err.0.to_json_line()).unwrap();
    assert_eq!(
        body,
        json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "Widget.example.com \"bad\" is invalid: [spec.size: Invalid value: -1: must be greater than or equal to 0, spec.color: Required value]",
            "reason": "Invalid",
            "details": {
                "name": "bad",
                "group": "example.com",
                "kind": "Widget",
                "causes": [
                    {"reason": "FieldValueInvalid", "message": "Invalid value: -1: must be greater than or equal to 0", "field": "spec.size"},
                    {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.color"}
                ]
            },
            "code": 422
        })
    );
    // System fields from the client are replaced or dropped.
    let mut obj = widget("a", "red", 1);
    obj["metadata"]["resourceVersion"] = json!("12345");
    let err = s
        .create(&ns("ns1"), obj.clone(), &CreateOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(err.reason(), "");
    assert_eq!(
        err.0.message,
        "resourceVersion should not be set on objects to be created"
    );
    obj["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("resourceVersion");
    obj["metadata"]["uid"] = json!("mine");
    obj["metadata"]["deletionTimestamp"] = json!("2020-01-01T00:00:00Z");
    obj["metadata"]["generation"] = json!(7);
    obj["status"] = json!({"ready": true});
    let created = create(s, "ns1", obj).await;
    assert_ne!(created["metadata"]["uid"], "mine");
    assert!(created["metadata"].get("deletionTimestamp").is_none());
    assert_eq!(created["metadata"]["generation"], 1);
    assert!(created.get("status").is_none());
    // AlreadyExists.
    let err = s
        .create(&ns("ns1"), widget("a", "red", 1), &CreateOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), StatusCode::CONFLICT);
    assert_eq!(err.reason(), "AlreadyExists");
    assert_eq!(err.0.message, "widgets.example.com \"a\" already exists");
    // Cluster-scoped objects lose their namespace.
    let cluster = open(cached, Arc::new(Widgets::new(false))).await;
    let mut obj = widget("c", "red", 1);
    obj["metadata"]["namespace"] = json!("ns1");
    let made = create(&cluster.store, "", obj).await;
    assert!(made["metadata"].get("namespace").is_none());
    assert_eq!(cluster.store.key("", "c").unwrap(), "/registry/widgets/c");
    assert_eq!(s.key("ns1", "c").unwrap(), "/registry/widgets/ns1/c");
    assert_eq!(
        s.key("", "c").unwrap_err().0.message,
        "Namespace parameter required."
    );
}
both!(create_checks);

async fn generate_name(cached: bool) {
    let f = widgets(cached).await;
    let s = &f.store;
    let mut seen = BTreeSet::new();
    for _ in 0..5 {
        let mut obj = widget("", "red", 1);
        obj["metadata"] = json!({"generateName": "gen-"});
        let made = create(s, "ns1", obj).await;
        let name = meta_str(&made, "name").to_string();
        assert!(name.starts_with("gen-") && name.len() == 9, "{name}");
        assert_eq!(made["metadata"]["generateName"], "gen-");
        seen.insert(name);
    }
    assert_eq!(seen.len(), 5);
}
both!(generate_name);

static COLLIDING_CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// The first three generated names collide with `<base>taken`; later ones are unique.
fn colliding(base: &str) -> String {
    let n = COLLIDING_CALLS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    if n < 3 {
        format!("{base}taken")
    } else {
        format!("{base}{n:05}")
    }
}

fn always_taken(base: &str) -> String {
    format!("{base}taken")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generate_name_retries_on_collision() {
    let f = widgets(false).await;
    let gen_obj = || {
        let mut obj = widget("", "red", 1);
        obj["metadata"] = json!({"generateName": "g-"});
        obj
    };
    create(&f.store, "ns1", widget("g-taken", "red", 1)).await;
    let mut retrying = f.store.clone();
    retrying.generate_name = colliding;
    let made = create(&retrying, "ns1", gen_obj()).await;
    assert_eq!(meta_str(&made, "name"), "g-00003");
    let mut stuck = f.store.clone();
    stuck.generate_name = always_taken;
    let err = stuck
        .create(&ns("ns1"), gen_obj(), &CreateOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), StatusCode::CONFLICT);
    assert_eq!(err.reason(), "AlreadyExists");
    assert_eq!(
        err.0.message,
        "widgets.example.com \"g-taken\" already exists, the server was not able to generate a unique name for the object"
    );
    assert_eq!(err.0.details.unwrap().retry_after_seconds, 1);
    // A chosen name that exists is a plain AlreadyExists.
    let err = f
        .store
        .create(
            &ns("ns1"),
            widget("g-taken", "red", 1),
            &CreateOptions::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(
        err.0.message,
        "widgets.example.com \"g-taken\" already exists"
    );
}

async fn selectors_and_pagination(cached: bool) {
    let f = widgets(cached).await;
    let s = &f.store;
    for (i, color) in ["red", "blue", "red", "green", "red"].iter().enumerate() {
        create(
            s,
            if i % 2 == 0 { "ns1" } else { "ns2" },
            widget(&format!("w{i}"), color, 1),
        )
        .await;
    }
    let list = |label: &str, field: &str| ListOptions {
        label_selector: label.into(),
        field_selector: field.into(),
        ..Default::default()
    };
    let got = s.list(&ns(""), &list("color=red", "")).await.unwrap();
    assert_eq!(names(&got), ["w0", "w2", "w4"]);
    let got = s.list(&ns(""), &list("", "spec.color=blue")).await.unwrap();
    assert_eq!(names(&got), ["w1"]);
    let got = s
        .list(&ns(""), &list("", "metadata.namespace=ns2"))
        .await
        .unwrap();
    assert_eq!(names(&got), ["w1", "w3"]);
    let got = s
        .list(&ns("ns1"), &list("", "metadata.name!=w2"))
        .await
        .unwrap();
    assert_eq!(names(&got), ["w0", "w4"]);

    // Unknown field labels: the strategy's conversion message, or the default one.
    let err = s.list(&ns(""), &list("", "spec.size=1")).await.unwrap_err();
    assert_eq!(err.code(), StatusCode::BAD_REQUEST);
    assert_eq!(err.0.message, "field label not supported: spec.size");
    let plain = open(
        cached,
        Arc::new(Plain(ResourceInfo {
            version: "v1".into(),
            kind: "Widget".into(),
            list_kind: "WidgetList".into(),
            resource: "widgets".into(),
            namespaced: true,
            ..Default::default()
        })),
    )
    .await;
    let err = plain
        .store
        .list(&ns(""), &list("", "spec.color=x"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), StatusCode::BAD_REQUEST);
    assert_eq!(
        err.0.message,
        "\"spec.color\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
    );
    let err = s.list(&ns(""), &list("a in (", "")).await.unwrap_err();
    assert_eq!(err.code(), StatusCode::BAD_REQUEST);

    // Pagination.
    let mut opts = ListOptions {
        limit: 2,
        ..Default::default()
    };
    let mut pages = Vec::new();
    loop {
        let page = s.list(&ns(""), &opts).await.unwrap();
        pages.push(names(&page));
        match page["metadata"].get("continue").and_then(Value::as_str) {
            Some(token) => {
                assert!(page["metadata"]["remainingItemCount"].as_i64().unwrap() > 0);
                opts.continue_ = token.to_string();
            }
            None => break,
        }
    }
    assert_eq!(pages, [vec!["w0", "w2"], vec!["w4", "w1"], vec!["w3"]]);

    // Option validation.
    let err = s
        .list(
            &ns(""),
            &ListOptions {
                resource_version_match: "Exact".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        err.0.message,
        "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"
    );
    let err = s
        .list(
            &ns(""),
            &ListOptions {
                continue_: "x".into(),
                resource_version: "5".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), StatusCode::BAD_REQUEST);

    // deletecollection by selector returns what it deleted.
    let deleted = s
        .delete_collection(
            &ns("ns1"),
            &DeleteOptions::default(),
            &list("color=red", ""),
        )
        .await
        .unwrap();
    assert_eq!(names(&deleted), ["w0", "w2", "w4"]);
    let left = s.list(&ns(""), &ListOptions::default()).await.unwrap();
    assert_eq!(names(&left), ["w1", "w3"]);
}
both!(selectors_and_pagination);

async fn watch_translation(cached: bool) {
    let f = widgets(cached).await;
    let s = &f.store;
    let a = create(s, "ns1", widget("a", "red", 1)).await;
    create(s, "ns1", widget("b", "blue", 1)).await;

    // Watch-list: initial ADDEDs, then the initial-events-end bookmark.
    let mut w = s
        .watch(
            &ns("ns1"),
            &ListOptions {
                watch: true,
                send_initial_events: Some(true),
                resource_version_match: "NotOlderThan".into(),
                allow_watch_bookmarks: true,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let mut initial = BTreeSet::new();
    let end = loop {
        match next(&mut w).await {
            ObjectEvent::Added(o) => {
                assert_eq!(o["kind"], "Widget");
                initial.insert(meta_str(&o, "name").to_string());
            }
            ObjectEvent::Bookmark(b)
                if b.pointer("/metadata/annotations/k8s.io~1initial-events-end")
                    == Some(&json!("true")) =>
            {
                break b;
            }
            ObjectEvent::Bookmark(_) => {}
            other => panic!("unexpected {other:?}"),
        }
    };
    assert_eq!(initial, BTreeSet::from(["a".to_string(), "b".to_string()]));
    assert_eq!(end["kind"], "Widget");
    assert_eq!(end["apiVersion"], "example.com/v1");
    assert_eq!(end["metadata"].as_object().unwrap().len(), 2);
    assert!(end["metadata"]["resourceVersion"].is_string());

    // Changes after a resourceVersion, filtered by a label selector: an object leaving the
    // selector is DELETED.
    let mut w = s
        .watch(
            &ns("ns1"),
            &ListOptions {
                watch: true,
                resource_version: meta_str(&a, "resourceVersion").to_string(),
                label_selector: "color=red".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let (moved, _) = s
        .update(
            &ns("ns1"),
            "a",
            mutate(|v| v["spec"]["size"] = json!(2)),
            &UpdateOptions::default(),
            false,
        )
        .await
        .unwrap();
    s.update(
        &ns("ns1"),
        "a",
        mutate(|v| v["metadata"]["labels"]["color"] = json!("blue")),
        &UpdateOptions::default(),
        false,
    )
    .await
    .unwrap();
    match next(&mut w).await {
        ObjectEvent::Modified(o) => {
            assert_eq!(o, moved);
        }
        other => panic!("unexpected {other:?}"),
    }
    match next(&mut w).await {
        ObjectEvent::Deleted(o) => assert_eq!(meta_str(&o, "name"), "a"),
        other => panic!("unexpected {other:?}"),
    }

    // A delete is seen with the deleted object.
    let mut w = s
        .watch(
            &ns("ns1"),
            &ListOptions {
                watch: true,
                resource_version: meta_str(&moved, "resourceVersion").to_string(),
                field_selector: "metadata.name=b".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    s.delete(&ns("ns1"), "b", &DeleteOptions::default())
        .await
        .unwrap();
    match next(&mut w).await {
        ObjectEvent::Deleted(o) => {
            assert_eq!(meta_str(&o, "name"), "b");
            assert_eq!(o["kind"], "Widget");
        }
        other => panic!("unexpected {other:?}"),
    }

    // Watch option validation.
    let err = s
        .watch(
            &ns("ns1"),
            &ListOptions {
                watch: true,
                send_initial_events: Some(true),
                ..Default::default()
            },
        )
        .await
        .err()
        .unwrap();
    assert_eq!(err.code(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        err.0.message,
        "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"
    );
}
both!(watch_translation);

#[test]
fn bookmark_objects() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let _guard = rt.enter();
    let f = rt.block_on(widgets(false));
    assert_eq!(
        f.store.bookmark(7, false),
        json!({"kind":"Widget","apiVersion":"example.com/v1","metadata":{"resourceVersion":"7"}})
    );
    assert_eq!(
        f.store.bookmark(7, true),
        json!({"kind":"Widget","apiVersion":"example.com/v1","metadata":{"resourceVersion":"7","annotations":{"k8s.io/initial-events-end":"true"}}})
    );
    // Bookmarks are dropped for watchers that did not ask for them.
    assert!(
        f.store
            .translate(
                WatchEvent::Bookmark {
                    resource_version: 3,
                    initial_events_end: false
                },
                false
            )
            .is_none()
    );
}

async fn finalizers_and_graceful_deletion(cached: bool) {
    let f = widgets(cached).await;
    let s = &f.store;
    let mut obj = widget("a", "red", 1);
    obj["metadata"]["finalizers"] = json!(["example.com/hold"]);
    let created = create(s, "ns1", obj).await;

    let (marked, now) = s
        .delete(&ns("ns1"), "a", &DeleteOptions::default())
        .await
        .unwrap();
    assert!(!now);
    assert!(marked["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(marked["metadata"]["deletionGracePeriodSeconds"], 0);
    assert_eq!(marked["metadata"]["generation"], 2);
    assert_eq!(marked["metadata"]["uid"], created["metadata"]["uid"]);
    let still = s
        .get(&ns("ns1"), "a", &GetOptions::default())
        .await
        .unwrap();
    assert_eq!(still, marked);

    let err = s
        .create(&ns("ns1"), widget("a", "red", 1), &CreateOptions::default())
        .await
        .unwrap_err();
    assert_eq!(
        err.0.message,
        "object is being deleted: widgets.example.com \"a\" already exists"
    );
    // A second delete keeps it marked.
    let (again, now) = s
        .delete(&ns("ns1"), "a", &DeleteOptions::default())
        .await
        .unwrap();
    assert!(!now);
    assert_eq!(
        again["metadata"]["deletionTimestamp"],
        marked["metadata"]["deletionTimestamp"]
    );

    // No new finalizers once deleting; an update cannot clear the deletionTimestamp.
    let err = s
        .update(
            &ns("ns1"),
            "a",
            mutate(|v| v["metadata"]["finalizers"] = json!(["example.com/hold", "x.io/new"])),
            &UpdateOptions::default(),
            false,
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(err.0.message.contains("no new finalizers can be added if the object is being deleted, found new finalizers []string{\"x.io/new\"}"), "{}", err.0.message);
    let (kept, _) = s
        .update(
            &ns("ns1"),
            "a",
            mutate(|v| {
                v["metadata"]
                    .as_object_mut()
                    .unwrap()
                    .remove("deletionTimestamp");
                v["metadata"]["labels"]["x"] = json!("y");
            }),
            &UpdateOptions::default(),
            false,
        )
        .await
        .unwrap();
    assert_eq!(
        kept["metadata"]["deletionTimestamp"],
        marked["metadata"]["deletionTimestamp"]
    );

    // Removing the last finalizer deletes it.
    let (last, created_flag) = s
        .update(
            &ns("ns1"),
            "a",
            mutate(|v| {
                v["metadata"].as_object_mut().unwrap().remove("finalizers");
            }),
            &UpdateOptions::default(),
            false,
        )
        .await
        .unwrap();
    assert!(!created_flag);
    assert_eq!(meta_str(&last, "name"), "a");
    let err = s
        .get(&ns("ns1"), "a", &GetOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), StatusCode::NOT_FOUND);

    // Preconditions.
    let b = create(s, "ns1", widget("b", "red", 1)).await;
    let opts = |uid: Option<&str>, rv: Option<&str>| DeleteOptions {
        preconditions: Some(RestPreconditions {
            uid: uid.map(str::to_string),
            resource_version: rv.map(str::to_string),
        }),
        ..Default::default()
    };
    let err = s
        .delete(&ns("ns1"), "b", &opts(Some("nope"), None))
        .await
        .unwrap_err();
    assert_eq!(err.code(), StatusCode::CONFLICT);
    assert_eq!(
        err.0.message,
        format!(
            "Operation cannot be fulfilled on Widget.example.com \"b\": the UID in the precondition (nope) does not match the UID in record ({}). The object might have been deleted and then recreated",
            meta_str(&b, "uid")
        )
    );
    let err = s
        .delete(&ns("ns1"), "b", &opts(None, Some("1")))
        .await
        .unwrap_err();
    assert_eq!(err.code(), StatusCode::CONFLICT);
    let (_, now) = s
        .delete(
            &ns("ns1"),
            "b",
            &opts(
                Some(meta_str(&b, "uid")),
                Some(meta_str(&b, "resourceVersion")),
            ),
        )
        .await
        .unwrap();
    assert!(now);

    // propagationPolicy is accepted; a bad one is 422.
    create(s, "ns1", widget("c", "red", 1)).await;
    let err = s
        .delete(
            &ns("ns1"),
            "c",
            &DeleteOptions {
                propagation_policy: Some("Sideways".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), StatusCode::UNPROCESSABLE_ENTITY);
    let (_, now) = s
        .delete(
            &ns("ns1"),
            "c",
            &DeleteOptions {
                propagation_policy: Some("Foreground".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(now);
}
both!(finalizers_and_graceful_deletion);

async fn status_subresource(cached: bool) {
    let f = widgets(cached).await;
    let s = &f.store;
    let status = StatusStore::new(s);
    assert_eq!(status.verbs(), ["get", "patch", "update"]);
    let created = create(s, "ns1", widget("a", "red", 1)).await;
    // The main resource ignores status changes.
    let (main, _) = s
        .update(
            &ns("ns1"),
            "a",
            mutate(|v| v["status"] = json!({"ready": true})),
            &UpdateOptions::default(),
            false,
        )
        .await
        .unwrap();
    assert!(main.get("status").is_none());
    assert_eq!(rv(&main), rv(&created));
    // The status subresource changes only status.
    let (updated, _) = status
        .update(
            &ns("ns1"),
            "a",
            mutate(|v| {
                v["status"] = json!({"ready": true});
                v["spec"]["size"] = json!(99);
                v["metadata"]["labels"]["sneaky"] = json!("yes");
            }),
            &UpdateOptions::default(),
            false,
        )
        .await
        .unwrap();
    assert_eq!(updated["status"], json!({"ready": true}));
    assert_eq!(updated["spec"]["size"], 1);
    assert!(updated["metadata"]["labels"].get("sneaky").is_none());
    assert_eq!(updated["metadata"]["generation"], 1);
    let got = status
        .get(&ns("ns1"), "a", &GetOptions::default())
        .await
        .unwrap();
    assert_eq!(got, updated);
    // It never creates.
    let err = status
        .update(
            &ns("ns1"),
            "zz",
            replace_with(widget("zz", "red", 1)),
            &UpdateOptions::default(),
            true,
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), StatusCode::NOT_FOUND);
}
both!(status_subresource);

async fn dry_run(cached: bool) {
    let f = widgets(cached).await;
    let s = &f.store;
    let dry = vec!["All".to_string()];
    let made = s
        .create(
            &ns("ns1"),
            widget("a", "red", 1),
            &CreateOptions {
                dry_run: dry.clone(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(made["metadata"]["uid"].is_string());
    assert!(made["metadata"].get("resourceVersion").is_none());
    let err = s
        .get(&ns("ns1"), "a", &GetOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), StatusCode::NOT_FOUND);
    // Dry-run validation still applies.
    let err = s
        .create(
            &ns("ns1"),
            widget("b", "red", -1),
            &CreateOptions {
                dry_run: dry.clone(),
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), StatusCode::UNPROCESSABLE_ENTITY);

    let real = create(s, "ns1", widget("a", "red", 1)).await;
    let err = s
        .create(
            &ns("ns1"),
            widget("a", "red", 1),
            &CreateOptions {
                dry_run: dry.clone(),
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert_eq!(err.reason(), "AlreadyExists");
    let (changed, _) = s
        .update(
            &ns("ns1"),
            "a",
            mutate(|v| v["spec"]["size"] = json!(3)),
            &UpdateOptions {
                dry_run: dry.clone(),
                ..Default::default()
            },
            false,
        )
        .await
        .unwrap();
    assert_eq!(changed["spec"]["size"], 3);
    assert_eq!(changed["metadata"]["generation"], 2);
    let (_, now) = s
        .delete(
            &ns("ns1"),
            "a",
            &DeleteOptions {
                dry_run: dry,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(now);
    let got = s
        .get(&ns("ns1"), "a", &GetOptions::default())
        .await
        .unwrap();
    assert_eq!(got, real);
}
both!(dry_run);

async fn unconditional_and_conditional_updates(cached: bool) {
    let f = widgets(cached).await;
    let s = &f.store;
    create(s, "ns1", widget("a", "red", 1)).await;
    // No resourceVersion: unconditional (the strategy allows it).
    let (updated, _) = s
        .update(
            &ns("ns1"),
            "a",
            replace_with(widget("a", "red", 4)),
            &UpdateOptions::default(),
            false,
        )
        .await
        .unwrap();
    assert_eq!(updated["spec"]["size"], 4);
    // Body name differing from the URL name: the name is immutable.
    let err = s
        .update(
            &ns("ns1"),
            "a",
            replace_with(widget("b", "red", 4)),
            &UpdateOptions::default(),
            false,
        )
        .await
        .unwrap_err();
    assert_eq!(err.code(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        err.0.message,
        "Widget.example.com \"b\" is invalid: metadata.name: Invalid value: \"b\": field is immutable"
    );
}
both!(unconditional_and_conditional_updates);

/// A `Widget` deleted gracefully as pods are: the period comes from the request or
/// `spec.grace`, and is 0 unless `spec.bound`.
struct GracefulWidgets(Widgets);

impl Strategy for GracefulWidgets {
    fn info(&self) -> &ResourceInfo {
        &self.0.info
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn supports_graceful_delete(&self) -> bool {
        true
    }

    fn check_graceful_delete(&self, obj: &Value, opts: &mut DeleteOptions) -> bool {
        let mut period = opts
            .grace_period_seconds
            .or_else(|| obj.pointer("/spec/grace").and_then(Value::as_i64))
            .unwrap_or(0);
        if obj.pointer("/spec/bound") != Some(&json!(true)) {
            period = 0;
        }
        opts.grace_period_seconds = Some(period);
        true
    }
}

async fn graceful(cached: bool) -> Fixture {
    open(cached, Arc::new(GracefulWidgets(Widgets::new(true)))).await
}

fn grace(seconds: i64) -> DeleteOptions {
    DeleteOptions {
        grace_period_seconds: Some(seconds),
        ..Default::default()
    }
}

fn deletion_deadline(obj: &Value) -> jiff::Timestamp {
    meta_str(obj, "deletionTimestamp").parse().unwrap()
}

async fn graceful_delete_sets_a_deadline_that_later_deletes_only_shorten(cached: bool) {
    let f = graceful(cached).await;
    let s = &f.store;
    let mut obj = widget("a", "red", 1);
    obj["spec"]["bound"] = json!(true);
    obj["spec"]["grace"] = json!(30);
    create(s, "ns1", obj).await;

    let before = jiff::Timestamp::now();
    let (marked, gone) = s
        .delete(&ns("ns1"), "a", &DeleteOptions::default())
        .await
        .unwrap();
    assert!(!gone);
    assert_eq!(marked["metadata"]["deletionGracePeriodSeconds"], 30);
    assert_eq!(marked["metadata"]["generation"], 2);
    // The deadline is the deletion time plus the grace period (second precision).
    let deadline = deletion_deadline(&marked);
    let lower = before
        .checked_add(jiff::SignedDuration::from_secs(29))
        .unwrap();
    let upper = jiff::Timestamp::now()
        .checked_add(jiff::SignedDuration::from_secs(31))
        .unwrap();
    assert!(deadline >= lower && deadline <= upper, "{deadline}");

    // A longer period, or none, leaves the pending deletion as it is (no write); the answer
    // is what a finished delete answers (a Status here, the object where it is returned).
    let returning = s.clone().with_return_deleted_object(true);
    for opts in [grace(60), DeleteOptions::default()] {
        let (status, gone) = s.delete(&ns("ns1"), "a", &opts).await.unwrap();
        assert!(!gone);
        assert_eq!(status["status"], "Success", "{status}");
        let (same, gone) = returning.delete(&ns("ns1"), "a", &opts).await.unwrap();
        assert!(!gone);
        assert_eq!(same, marked);
    }
    // A shorter one moves the deadline back by the difference.
    let (shorter, gone) = s.delete(&ns("ns1"), "a", &grace(10)).await.unwrap();
    assert!(!gone);
    assert_eq!(shorter["metadata"]["deletionGracePeriodSeconds"], 10);
    assert_eq!(
        deletion_deadline(&marked)
            .duration_since(deletion_deadline(&shorter))
            .as_secs(),
        20
    );
    assert!(rv(&shorter) > rv(&marked));
    // Zero removes it.
    let (last, gone) = s.delete(&ns("ns1"), "a", &grace(0)).await.unwrap();
    assert!(gone);
    assert_eq!(last["kind"], "Status");
    let err = s
        .get(&ns("ns1"), "a", &GetOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), StatusCode::NOT_FOUND);
}
both!(graceful_delete_sets_a_deadline_that_later_deletes_only_shorten);

async fn graceful_delete_of_zero_marks_then_removes(cached: bool) {
    let f = graceful(cached).await;
    let s = f.store.clone().with_return_deleted_object(true);
    // Not bound: the strategy asks for 0 even though the object has a grace period.
    let mut obj = widget("a", "red", 1);
    obj["spec"]["grace"] = json!(30);
    let created = create(&s, "ns1", obj).await;
    let mut w = s
        .watch(
            &ns("ns1"),
            &ListOptions {
                resource_version: meta_str(&created, "resourceVersion").into(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let (deleted, gone) = s
        .delete(&ns("ns1"), "a", &DeleteOptions::default())
        .await
        .unwrap();
    assert!(gone);
    assert_eq!(deleted["metadata"]["deletionGracePeriodSeconds"], 0);
    // Upstream writes the deletion mark before removing the object.
    match next(&mut w).await {
        ObjectEvent::Modified(o) => assert_eq!(o["metadata"]["deletionGracePeriodSeconds"], 0),
        other => panic!("{other:?}"),
    }
    match next(&mut w).await {
        ObjectEvent::Deleted(o) => assert_eq!(meta_str(&o, "name"), "a"),
        other => panic!("{other:?}"),
    }

    // A dry run answers as the delete would and keeps the object.
    create(&s, "ns1", widget("b", "red", 1)).await;
    let dry = DeleteOptions {
        dry_run: vec!["All".into()],
        ..Default::default()
    };
    let (answer, gone) = s.delete(&ns("ns1"), "b", &dry).await.unwrap();
    assert!(gone);
    assert!(answer["metadata"]["deletionTimestamp"].is_string());
    let kept = s
        .get(&ns("ns1"), "b", &GetOptions::default())
        .await
        .unwrap();
    assert!(kept["metadata"].get("deletionTimestamp").is_none());
}
both!(graceful_delete_of_zero_marks_then_removes);

async fn graceful_delete_with_finalizers_keeps_the_object(cached: bool) {
    let f = graceful(cached).await;
    let s = &f.store;
    let mut obj = widget("a", "red", 1);
    obj["metadata"]["finalizers"] = json!(["example.com/hold"]);
    create(s, "ns1", obj).await;
    let (marked, gone) = s.delete(&ns("ns1"), "a", &grace(0)).await.unwrap();
    assert!(!gone);
    assert_eq!(marked["metadata"]["deletionGracePeriodSeconds"], 0);
    // Removing the finalizer of an object whose grace period is over deletes it.
    s.update(
        &ns("ns1"),
        "a",
        mutate(|v| {
            v["metadata"].as_object_mut().unwrap().remove("finalizers");
        }),
        &UpdateOptions::default(),
        false,
    )
    .await
    .unwrap();
    let err = s
        .get(&ns("ns1"), "a", &GetOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), StatusCode::NOT_FOUND);
}
both!(graceful_delete_with_finalizers_keeps_the_object);
