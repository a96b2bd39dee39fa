//! A real kube-rs client and controller runtime against the real binary, on the embedded store
//! and on etcd: informer-style list-then-watch on a quiet resource, reflectors with label and
//! field selectors and watch-list (`sendInitialEvents`), and a `Controller` reconciling a
//! custom resource with server-side apply and a status update, across a server restart.

mod common;
#[path = "common/widgets.rs"]
mod widgets;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use common::etcd::EtcdServer;
use common::{ApiServer, DEADLINE, eventually, free_port};
use widgets::{create_widget, create_widget_crd, reconciled, resize_widget, run_controller};

/// Where the server keeps its data: the embedded store in its data dir, or an etcd.
enum Backend {
    Embedded,
    Etcd(EtcdServer),
}

impl Backend {
    async fn start(etcd: bool) -> Backend {
        if etcd {
            Backend::Etcd(EtcdServer::start().await)
        } else {
            Backend::Embedded
        }
    }

    fn args(&self) -> Vec<String> {
        match self {
            Backend::Embedded => Vec::new(),
            Backend::Etcd(etcd) => vec![format!("--etcd-servers={}", etcd.url())],
        }
    }
}

/// Starts the binary on `port` (0: any) with `data_dir` (PKI, kubeconfig, embedded store).
async fn start_server(backend: &Backend, data_dir: &Path, port: u16) -> ApiServer {
    ApiServer::builder()
        .data_dir(data_dir)
        .args(backend.args())
        .args([format!("--secure-port={port}")])
        .start()
        .await
}

/// A kube-rs client from the admin kubeconfig the binary wrote.
async fn kube_client(server: &ApiServer) -> kube::Client {
    let kubeconfig = Kubeconfig::read_from(server.kubeconfig()).expect("admin kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("kube config");
    kube::Client::try_from(config).expect("kube client")
}

fn configmap(name: &str, labels: Value, data: Value) -> ConfigMap {
    serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels},
        "data": data,
    }))
    .unwrap()
}

/// Names in a reflector's store.
fn names<K: kube::Resource<DynamicType = ()> + Clone>(store: &Store<K>) -> BTreeSet<String> {
    store
        .state()
        .iter()
        .filter_map(|o| o.meta().name.clone())
        .collect()
}

/// Runs a reflector over `api` with `config`; its store and the task driving it.
fn reflect(api: Api<ConfigMap>, config: watcher::Config) -> (Store<ConfigMap>, JoinHandle<()>) {
    let (reader, writer) = reflector::store();
    let task = tokio::spawn(async move {
        reflector::reflector(writer, watcher(api, config))
            .default_backoff()
            .applied_objects()
            .for_each(|_| futures::future::ready(()))
            .await;
    });
    (reader, task)
}

/// Waits until the reflector's store holds exactly `want`.
async fn store_holds(what: &str, store: &Store<ConfigMap>, want: &[&str]) {
    let want: BTreeSet<String> = want.iter().map(|s| s.to_string()).collect();
    eventually(what, || {
        let done = names(store) == want;
        async move { done.then_some(()) }
    })
    .await;
}

// ---------------------------------------------------------------- list, then watch

/// An informer on secrets, which nobody writes: LIST, a write elsewhere, then WATCH from the
/// list's resourceVersion. The watch starts at once (no 3 s freshness wait, no 504 "Too large
/// resource version") and delivers the next change.
async fn list_then_watch_on_a_quiet_resource(etcd: bool) {
    let backend = Backend::start(etcd).await;
    let tmp = tempfile::tempdir().unwrap();
    let server = start_server(&backend, &tmp.path().join("data"), 0).await;
    let client = kube_client(&server).await;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "default");
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");

    let list = secrets.list(&ListParams::default()).await.unwrap();
    let rv = list.metadata.resource_version.clone().unwrap();
    // Other resources move the store's revision past anything the secrets' cache has seen.
    for i in 0..3 {
        configmaps
            .create(
                &PostParams::default(),
                &configmap(&format!("noise-{i}"), json!({}), json!({})),
            )
            .await
            .unwrap();
    }
    let list = secrets.list(&ListParams::default()).await.unwrap();
    let rv = list.metadata.resource_version.unwrap_or(rv);

    let started = std::time::Instant::now();
    let mut events = secrets
        .watch(&WatchParams::default().timeout(60), &rv)
        .await
        .expect("watch from the list's resourceVersion")
        .boxed();
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "later"},
        "stringData": {"k": "v"},
    }))
    .unwrap();
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    let first = tokio::time::timeout(DEADLINE, events.try_next())
        .await
        .expect("no event")
        .expect("watch failed")
        .expect("watch ended");
    let elapsed = started.elapsed();
    match first {
        WatchEvent::Added(s) => assert_eq!(s.metadata.name.as_deref(), Some("later")),
        other => panic!("expected ADDED later, got {other:?}"),
    }
    assert!(
        elapsed < Duration::from_secs(2),
        "watch from {rv} took {elapsed:?} to deliver the next change"
    );
    // The server's own list-then-watch clients (the CRD controllers) do not complain either.
    assert!(
        server.stderr.find("Too large resource version").is_none()
            && server.stderr.find("watching CRDs").is_none(),
        "{}",
        server.stderr.snapshot().join("\n")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn kube_rs_list_then_watch_on_a_quiet_resource_starts_at_once_on_embedded() {
    list_then_watch_on_a_quiet_resource(false).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn kube_rs_list_then_watch_on_a_quiet_resource_starts_at_once_on_etcd() {
    list_then_watch_on_a_quiet_resource(true).await;
}

// ---------------------------------------------------------------- reflectors

/// Reflectors over configmaps: list-then-watch with a label selector, a `metadata.name` field
/// selector, and watch-list (`sendInitialEvents`) — each sees its objects and later changes.
async fn reflectors_with_selectors_and_watch_list(etcd: bool) {
    let backend = Backend::start(etcd).await;
    let tmp = tempfile::tempdir().unwrap();
    let server = start_server(&backend, &tmp.path().join("data"), 0).await;
    let client = kube_client(&server).await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let pp = PostParams::default();
    api.create(
        &pp,
        &configmap("a", json!({"app": "demo"}), json!({"n": "1"})),
    )
    .await
    .unwrap();
    api.create(&pp, &configmap("b", json!({"app": "other"}), json!({})))
        .await
        .unwrap();

    let (by_label, t1) = reflect(api.clone(), watcher::Config::default().labels("app=demo"));
    let (by_name, t2) = reflect(
        api.clone(),
        watcher::Config::default().fields("metadata.name=b"),
    );
    let (streamed, t3) = reflect(
        api.clone(),
        watcher::Config::default().labels("app").streaming_lists(),
    );
    store_holds("label selector: initial list", &by_label, &["a"]).await;
    store_holds("field selector: initial list", &by_name, &["b"]).await;
    store_holds("watch-list: initial events", &streamed, &["a", "b"]).await;

    // Changes after the initial state reach the watches.
    api.create(&pp, &configmap("c", json!({"app": "demo"}), json!({})))
        .await
        .unwrap();
    api.patch(
        "b",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"app": "demo"}}})),
    )
    .await
    .unwrap();
    store_holds(
        "label selector: watched changes",
        &by_label,
        &["a", "b", "c"],
    )
    .await;
    store_holds("watch-list: watched changes", &streamed, &["a", "b", "c"]).await;
    api.delete("b", &Default::default()).await.unwrap();
    store_holds("field selector: watched deletion", &by_name, &[]).await;
    store_holds("label selector: watched deletion", &by_label, &["a", "c"]).await;
    for t in [t1, t2, t3] {
        t.abort();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn kube_rs_reflectors_with_label_and_field_selectors_and_watch_list_on_embedded() {
    reflectors_with_selectors_and_watch_list(false).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn kube_rs_reflectors_with_label_and_field_selectors_and_watch_list_on_etcd() {
    reflectors_with_selectors_and_watch_list(true).await;
}

// ---------------------------------------------------------------- a controller

/// A kube-rs `Controller` reconciles widgets (server-side apply of a child, status update),
/// keeps doing so across a restart of the server on the same port and data, and misses no
/// change: neither one made between the stop and its re-list, nor one made right after.
async fn controller_reconciles_across_a_restart(etcd: bool) {
    let backend = Backend::start(etcd).await;
    let tmp = tempfile::tempdir().unwrap();
    let data_dir = tmp.path().join("data");
    let port = free_port();
    let mut server = start_server(&backend, &data_dir, port).await;
    let client = kube_client(&server).await;
    create_widget_crd(&client).await;

    let controller = run_controller(client.clone());
    let (configmaps, reflector_task) = reflect(
        Api::namespaced(client.clone(), "default"),
        watcher::Config::default().labels("watched=yes"),
    );
    create_widget(&client, "one", 1).await;
    reconciled(&client, "one", 1).await;
    resize_widget(&client, "one", 2).await;
    reconciled(&client, "one", 2).await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    api.create(
        &PostParams::default(),
        &configmap("before", json!({"watched": "yes"}), json!({})),
    )
    .await
    .unwrap();
    store_holds("reflector before the restart", &configmaps, &["before"]).await;

    server.stop().await;
    drop(server);
    let server = start_server(&backend, &data_dir, port).await;
    // Straight after the restart, before the controller and the reflector have re-listed
    // (their clients reconnect to the same port on their own).
    let fresh = kube_client(&server).await;
    resize_widget(&fresh, "one", 3).await;
    create_widget(&fresh, "two", 5).await;
    api.create(
        &PostParams::default(),
        &configmap("after", json!({"watched": "yes"}), json!({})),
    )
    .await
    .unwrap();
    reconciled(&client, "one", 3).await;
    reconciled(&client, "two", 5).await;
    store_holds(
        "reflector after the restart",
        &configmaps,
        &["after", "before"],
    )
    .await;
    // And later changes still arrive through the re-established watches.
    resize_widget(&client, "two", 6).await;
    reconciled(&client, "two", 6).await;
    api.delete("before", &Default::default()).await.unwrap();
    store_holds("reflector sees a deletion", &configmaps, &["after"]).await;
    controller.abort();
    reflector_task.abort();
}

#[tokio::test(flavor = "multi_thread")]
async fn kube_rs_controller_reconciles_with_apply_and_status_across_a_restart_on_embedded() {
    controller_reconciles_across_a_restart(false).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn kube_rs_controller_reconciles_with_apply_and_status_across_a_restart_on_etcd() {
    controller_reconciles_across_a_restart(true).await;
}
