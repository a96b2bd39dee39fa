use std::collections::BTreeMap;
use std::sync::Arc;

use apiserver::storage::factory::{StorageBackend, StorageOptions};
use apiserver::storage::{GetOptions, ListOptions, Storage, WatchEvent};
use bytes::Bytes;
use serde_json::{Value, json};

use super::metrics::FailureType;
use super::review::{self, check_converted, converted_objects, pick_version, restore_metadata};
use super::{ConvertingStorage, CrConverter};
use crate::seams::DnsServiceResolver;

fn widget(version: &str) -> Value {
    json!({"apiVersion": format!("example.com/{version}"), "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default", "uid": "u-1", "resourceVersion": "7",
                     "labels": {"a": "b"}},
        "spec": {"size": 1}})
}

fn crd(strategy: &str) -> Value {
    json!({"metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "conversion": {"strategy": strategy},
                 "versions": [{"name": "v1", "storage": true}, {"name": "v2"}]}})
}

#[test]
fn picks_the_first_review_version_it_speaks() {
    let v = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(pick_version(&v(&["v2", "v1beta1", "v1"])), Some("v1beta1"));
    assert_eq!(pick_version(&v(&["v1"])), Some("v1"));
    assert_eq!(pick_version(&v(&["v3"])), None);
    let req = review::request("v1beta1", "id", "example.com/v2", &[widget("v1")]);
    assert_eq!(req["apiVersion"], "apiextensions.k8s.io/v1beta1");
    assert_eq!(req["request"]["desiredAPIVersion"], "example.com/v2");
    assert_eq!(req["request"]["objects"][0]["metadata"]["name"], "w");
}

#[test]
fn v1_responses_are_checked_as_upstream() {
    let ok = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "response": {"uid": "id", "result": {"status": "Success"}, "convertedObjects": [widget("v2")]}});
    assert_eq!(
        converted_objects("v1", "id", &ok).unwrap(),
        vec![widget("v2")]
    );
    let err = |resp: &Value| converted_objects("v1", "id", resp).unwrap_err();
    let mut wrong_kind = ok.clone();
    wrong_kind["apiVersion"] = json!("apiextensions.k8s.io/v1beta1");
    assert_eq!(
        err(&wrong_kind).message,
        "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got apiextensions.k8s.io/v1beta1, Kind=ConversionReview"
    );
    assert_eq!(err(&wrong_kind).failure, FailureType::MalformedResponse);
    let mut wrong_uid = ok.clone();
    wrong_uid["response"]["uid"] = json!("other");
    assert_eq!(
        err(&wrong_uid).message,
        r#"expected response.uid="id", got "other""#
    );
    let mut no_response = ok.clone();
    no_response["response"] = Value::Null;
    assert_eq!(err(&no_response).message, "no response provided");
    let mut failed = ok.clone();
    failed["response"]["result"] = json!({"status": "Failure", "message": "cannot convert"});
    assert_eq!(err(&failed).message, "cannot convert");
    failed["response"]["result"] = json!({"status": "Failure"});
    assert_eq!(
        err(&failed).message,
        "response.result.status was 'Failure', not 'Success'"
    );
    // v1beta1 checks neither the review's type nor the uid.
    let mut beta = ok.clone();
    beta["apiVersion"] = json!("apiextensions.k8s.io/v1beta1");
    beta["response"]["uid"] = json!("whatever");
    assert_eq!(converted_objects("v1beta1", "id", &beta).unwrap().len(), 1);
}

#[test]
fn converted_objects_keep_identity_and_get_metadata_back() {
    let label = "example.com/v1, Kind=Widget";
    let original = widget("v1");
    // The webhook changed the resourceVersion and a label, and dropped an annotation:
    // labels and annotations are its to change, the rest comes back from the original.
    let mut out = widget("v2");
    out["metadata"]["resourceVersion"] = json!("999");
    out["metadata"]["labels"] = json!({"a": "c"});
    let checked = check_converted(
        std::slice::from_ref(&original),
        vec![out],
        "example.com/v2",
        label,
        false,
    )
    .unwrap();
    assert_eq!(checked[0]["metadata"]["resourceVersion"], "7");
    assert_eq!(checked[0]["metadata"]["labels"], json!({"a": "c"}));
    assert_eq!(checked[0]["apiVersion"], "example.com/v2");

    let fails = |out: Value, list: bool| {
        check_converted(
            std::slice::from_ref(&original),
            vec![out],
            "example.com/v2",
            label,
            list,
        )
        .unwrap_err()
    };
    let mut renamed = widget("v2");
    renamed["metadata"]["name"] = json!("x");
    let e = fails(renamed.clone(), false);
    assert_eq!(
        e.message,
        "conversion webhook for example.com/v1, Kind=Widget returned invalid object: must have the same name: w != x"
    );
    assert_eq!(e.failure, FailureType::InvalidConvertedObject);
    assert_eq!(
        fails(renamed, true).message,
        "conversion webhook for example.com/v1, Kind=Widget returned invalid converted object at index 1: must have the same name: w != x"
    );
    assert_eq!(
        fails(widget("v1"), false).message,
        "conversion webhook for example.com/v1, Kind=Widget returned invalid object at index 0: invalid groupVersion (expected example.com/v2, received example.com/v1)"
    );
    let mut bad_label = widget("v2");
    bad_label["metadata"]["labels"] = json!({"a": "not valid!"});
    assert!(
        fails(bad_label, false)
            .message
            .starts_with("conversion webhook for example.com/v1, Kind=Widget returned invalid metadata: metadata.labels: Invalid value: \"not valid!\""),
    );
    let e = check_converted(
        std::slice::from_ref(&original),
        vec![],
        "example.com/v2",
        label,
        false,
    )
    .unwrap_err();
    assert_eq!(
        e.message,
        "conversion webhook for example.com/v1, Kind=Widget returned 0 objects, expected 1"
    );
    assert_eq!(e.failure, FailureType::PartialResponse);
    let mut no_meta = widget("v2");
    no_meta.as_object_mut().unwrap().remove("metadata");
    assert_eq!(
        restore_metadata(&original, &mut no_meta).unwrap_err(),
        "missing metadata in converted object"
    );
    let mut not_string = widget("v2");
    not_string["metadata"]["annotations"] = json!({"k": 1});
    assert_eq!(
        restore_metadata(&original, &mut not_string).unwrap_err(),
        "metadata.annotations[k] must be a string, but is int64 in converted object"
    );
}

#[tokio::test]
async fn none_strategy_rewrites_api_version_and_refuses_unknown_versions() {
    let c = CrConverter::new(&crd("None"), BTreeMap::new(), Arc::new(DnsServiceResolver)).unwrap();
    assert!(!c.is_webhook());
    let out = c.convert_one(widget("v1"), "v2").await.unwrap();
    assert_eq!(out["apiVersion"], "example.com/v2");
    assert_eq!(out["spec"], json!({"size": 1}));
    let err = c.convert_one(widget("v9"), "v2").await.unwrap_err();
    assert_eq!(
        err.0,
        "request to convert CR from an invalid group/version: example.com/v9"
    );
    assert_eq!(err.to_api_error().0.code, 500);
    let err = c.convert_one(widget("v1"), "v9").await.unwrap_err();
    assert_eq!(
        err.0,
        "request to convert CR to an invalid group/version: example.com/v9"
    );
    let list = c
        .convert(vec![widget("v2"), widget("v7")], "v1")
        .await
        .unwrap_err();
    assert_eq!(
        list.0,
        "request to convert CR list failed, list index 1 has invalid group/version: example.com/v7"
    );
    assert!(
        CrConverter::new(&crd("Magic"), BTreeMap::new(), Arc::new(DnsServiceResolver)).is_err()
    );
}

#[tokio::test]
async fn webhook_without_a_known_review_version_fails_before_calling() {
    let mut webhook = crd("Webhook");
    webhook["spec"]["conversion"]["webhook"] = json!({
        "conversionReviewVersions": ["v2"],
        "clientConfig": {"url": "https://127.0.0.1:1/convert"}});
    let c = CrConverter::new(&webhook, BTreeMap::new(), Arc::new(DnsServiceResolver)).unwrap();
    assert!(c.is_webhook());
    assert_eq!(
        c.convert_one(widget("v1"), "v2").await.unwrap_err().0,
        "no supported conversion review versions"
    );
    // Objects already in the asked version never reach the webhook.
    assert_eq!(
        c.convert_one(widget("v2"), "v2").await.unwrap(),
        widget("v2")
    );
}

fn api_version(obj: &apiserver::storage::Object) -> String {
    let v: Value = serde_json::from_slice(&obj.value).unwrap();
    v["apiVersion"].as_str().unwrap_or_default().to_string()
}

#[tokio::test]
async fn a_served_version_stores_in_the_storage_version() {
    let dir = tempfile::tempdir().unwrap();
    let backend = StorageBackend::open(&StorageOptions {
        data_dir: dir.path().join("data"),
        ..Default::default()
    })
    .await
    .unwrap();
    let inner: Arc<dyn Storage> = backend.storage.clone();
    let converter = Arc::new(
        CrConverter::new(&crd("None"), BTreeMap::new(), Arc::new(DnsServiceResolver)).unwrap(),
    );
    let v2 = ConvertingStorage::new(inner.clone(), converter, "v2", "v1");
    let key = "/registry/example.com/widgets/default/w";
    let mut obj = widget("v2");
    obj["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("resourceVersion");
    let created = v2
        .create(key, Bytes::from(serde_json::to_vec(&obj).unwrap()))
        .await
        .unwrap();
    assert_eq!(api_version(&created), "example.com/v2");
    let stored = inner
        .get(key, GetOptions::default())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(api_version(&stored), "example.com/v1");

    let mut watch = v2
        .watch(
            "/registry/example.com/widgets/",
            ListOptions {
                resource_version: created.resource_version.to_string(),
                recursive: true,
                ..Default::default()
            },
        )
        .await
        .unwrap();

    // An update sees the served version and writes the storage version.
    let mut seen = String::new();
    let mut update = |cur: Option<&apiserver::storage::Object>| {
        let cur = cur.expect("exists");
        seen = api_version(cur);
        let mut v: Value = serde_json::from_slice(&cur.value).unwrap();
        v["spec"]["size"] = json!(2);
        Ok(Bytes::from(serde_json::to_vec(&v).unwrap()))
    };
    let updated = v2
        .guaranteed_update(key, false, None, &mut update)
        .await
        .unwrap();
    assert_eq!(seen, "example.com/v2");
    assert_eq!(api_version(&updated), "example.com/v2");
    let stored = inner
        .get(key, GetOptions::default())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(api_version(&stored), "example.com/v1");
    assert_eq!(stored.resource_version, updated.resource_version);

    // Handing back what it was given changes nothing.
    let mut same =
        |cur: Option<&apiserver::storage::Object>| Ok(cur.expect("exists").value.clone());
    let unchanged = v2
        .guaranteed_update(key, false, None, &mut same)
        .await
        .unwrap();
    assert_eq!(unchanged.resource_version, updated.resource_version);

    let list = v2
        .list(
            "/registry/example.com/widgets/",
            ListOptions {
                recursive: true,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(list.items.len(), 1);
    assert_eq!(api_version(&list.items[0]), "example.com/v2");

    let event = tokio::time::timeout(std::time::Duration::from_secs(10), watch.next())
        .await
        .unwrap()
        .unwrap();
    match event {
        WatchEvent::Modified(o) => assert_eq!(api_version(&o), "example.com/v2"),
        other => panic!("{other:?}"),
    }

    // A missing key is the backend's not-found.
    let mut never = |_: Option<&apiserver::storage::Object>| Ok(Bytes::new());
    let err = v2
        .guaranteed_update(
            "/registry/example.com/widgets/default/none",
            false,
            None,
            &mut never,
        )
        .await
        .unwrap_err();
    assert!(err.is_not_found(), "{err:?}");
}
