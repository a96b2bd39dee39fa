use std::io::Read;

use http::{StatusCode, header};
use http_body_util::BodyExt;
use prost::Message;
use serde_json::{Value, json};
use tower::ServiceExt;

use super::*;
use crate::body::empty;
use std::sync::Arc;

fn service() -> (OpenApiService, PathRecorderMux) {
    let svc = OpenApiService::new();
    svc.set_v2(&json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": "v1.35.0"},
        "paths": {},
        // Big enough to cross gziphandler's 1400-byte threshold.
        "definitions": {"io.k8s.api.core.v1.ConfigMap": {
            "type": "object",
            "description": "x".repeat(2000),
        }}
    }));
    svc.set_v3("api/v1", &json!({"openapi": "3.0.0", "paths": {}}));
    svc.set_v3(
        "apis/apps/v1",
        &json!({"openapi": "3.0.0", "paths": {"/apis/apps/v1/": {}}}),
    );
    let mux = PathRecorderMux::new("test");
    svc.install(&mux).unwrap();
    (svc, mux)
}

async fn send(mux: &PathRecorderMux, uri: &str, headers: &[(&str, &str)]) -> Response {
    let mut builder = http::Request::get(uri);
    for (k, v) in headers {
        builder = builder.header(*k, *v);
    }
    mux.service()
        .oneshot(builder.body(empty()).unwrap())
        .await
        .unwrap()
}

async fn body(resp: Response) -> Vec<u8> {
    resp.into_body()
        .collect()
        .await
        .unwrap()
        .to_bytes()
        .to_vec()
}

#[test]
fn etag_is_uppercase_hex_sha512() {
    let etag = compute_etag(b"");
    assert_eq!(etag.len(), 128);
    assert!(etag.starts_with("CF83E1357EEFB8BDF1542850D66D8007D620E4050B5715DC83F4A921D36CE9CE"));
}

#[tokio::test]
async fn routes_are_listed() {
    let (_, mux) = service();
    assert_eq!(
        mux.listed_paths(),
        ["/openapi/v2", "/openapi/v3", "/openapi/v3/"]
    );
}

#[tokio::test]
async fn v2_json_by_default_with_etag_and_vary() {
    let (svc, mux) = service();
    let resp = send(&mux, "/openapi/v2", &[]).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()[header::CONTENT_TYPE], "application/json");
    assert_eq!(resp.headers()[header::VARY], "Accept");
    let etag = svc.v2_etag().unwrap();
    assert_eq!(resp.headers()[header::ETAG], format!("\"{etag}\""));
    assert!(resp.headers().contains_key(header::LAST_MODIFIED));
    let bytes = body(resp).await;
    assert_eq!(compute_etag(&bytes), etag);
    let doc: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(doc["swagger"], "2.0");
}

#[tokio::test]
async fn v2_if_none_match_gives_304_without_entity_headers() {
    let (svc, mux) = service();
    let tag = format!("\"{}\"", svc.v2_etag().unwrap());
    let resp = send(&mux, "/openapi/v2", &[("if-none-match", &tag)]).await;
    assert_eq!(resp.status(), StatusCode::NOT_MODIFIED);
    assert_eq!(resp.headers()[header::ETAG], tag.as_str());
    assert!(!resp.headers().contains_key(header::CONTENT_TYPE));
    assert!(!resp.headers().contains_key(header::LAST_MODIFIED));
    assert!(body(resp).await.is_empty());

    let resp = send(&mux, "/openapi/v2", &[("if-none-match", "\"other\"")]).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let resp = send(&mux, "/openapi/v2", &[("if-none-match", "*")]).await;
    assert_eq!(resp.status(), StatusCode::NOT_MODIFIED);
}

#[tokio::test]
async fn v2_protobuf_for_both_spellings_answers_the_current_name() {
    let (svc, mux) = service();
    for accept in [
        V2_PROTOBUF_DEPRECATED_CONTENT_TYPE,
        V2_PROTOBUF_CONTENT_TYPE,
        "application/com.github.proto-openapi.spec.v2@v1.0+protobuf, application/json",
    ] {
        let resp = send(&mux, "/openapi/v2", &[("accept", accept)]).await;
        assert_eq!(resp.status(), StatusCode::OK, "{accept}");
        assert_eq!(
            resp.headers()[header::CONTENT_TYPE],
            V2_PROTOBUF_CONTENT_TYPE
        );
        // The protobuf form reuses the JSON document's tag.
        assert_eq!(
            resp.headers()[header::ETAG],
            format!("\"{}\"", svc.v2_etag().unwrap())
        );
        let doc = proto::Document::decode(body(resp).await.as_slice()).unwrap();
        assert_eq!(doc.swagger, "2.0");
        assert_eq!(
            doc.definitions.unwrap().additional_properties[0].name,
            "io.k8s.api.core.v1.ConfigMap"
        );
    }
    // q-order decides.
    let resp = send(
        &mux,
        "/openapi/v2",
        &[(
            "accept",
            "application/json;q=0.5, application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
        )],
    )
    .await;
    assert_eq!(
        resp.headers()[header::CONTENT_TYPE],
        V2_PROTOBUF_CONTENT_TYPE
    );
}

#[tokio::test]
async fn v2_unacceptable_type_is_406_with_empty_body() {
    let (_, mux) = service();
    let resp = send(&mux, "/openapi/v2", &[("accept", "application/yaml")]).await;
    assert_eq!(resp.status(), StatusCode::NOT_ACCEPTABLE);
    assert_eq!(resp.headers()[header::VARY], "Accept");
    assert!(body(resp).await.is_empty());
}

#[tokio::test]
async fn v2_gzip_when_accepted() {
    let (svc, mux) = service();
    let resp = send(&mux, "/openapi/v2", &[("accept-encoding", "gzip")]).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()[header::CONTENT_ENCODING], "gzip");
    let vary: Vec<_> = resp.headers().get_all(header::VARY).iter().collect();
    assert_eq!(vary, ["Accept", "Accept-Encoding"]);
    let compressed = body(resp).await;
    let mut plain = Vec::new();
    flate2::read::GzDecoder::new(compressed.as_slice())
        .read_to_end(&mut plain)
        .unwrap();
    assert_eq!(compute_etag(&plain), svc.v2_etag().unwrap());
}

#[tokio::test]
async fn v2_not_set_is_404() {
    let svc = OpenApiService::new();
    let mux = PathRecorderMux::new("test");
    svc.install(&mux).unwrap();
    assert_eq!(
        send(&mux, "/openapi/v2", &[]).await.status(),
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn v3_root_lists_group_versions_with_hashes() {
    let (svc, mux) = service();
    let resp = send(&mux, "/openapi/v3", &[]).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()[header::CONTENT_TYPE], "application/json");
    assert!(resp.headers().contains_key(header::ETAG));
    let doc: Value = serde_json::from_slice(&body(resp).await).unwrap();
    let etag = svc.v3_etag("api/v1").unwrap();
    assert_eq!(
        doc,
        json!({"paths": {
            "api/v1": {"serverRelativeURL": format!("/openapi/v3/api/v1?hash={etag}")},
            "apis/apps/v1": {"serverRelativeURL": format!(
                "/openapi/v3/apis/apps/v1?hash={}", svc.v3_etag("apis/apps/v1").unwrap())},
        }})
    );

    svc.remove_v3("apis/apps/v1");
    let doc: Value =
        serde_json::from_slice(&body(send(&mux, "/openapi/v3", &[]).await).await).unwrap();
    assert_eq!(doc["paths"].as_object().unwrap().len(), 1);
    assert_eq!(
        send(&mux, "/openapi/v3/apis/apps/v1", &[]).await.status(),
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn v3_group_current_hash_is_immutable() {
    let (svc, mux) = service();
    let etag = svc.v3_etag("api/v1").unwrap();
    let uri = format!("/openapi/v3/api/v1?hash={etag}&timeout=32s");
    let resp = send(&mux, &uri, &[("accept", "application/json")]).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()[header::CACHE_CONTROL], "public, immutable");
    assert_eq!(resp.headers()[header::VARY], "Accept");
    assert_eq!(resp.headers()[header::ETAG], format!("\"{etag}\""));
    let expires = resp.headers()[header::EXPIRES].to_str().unwrap().to_owned();
    assert!(expires.ends_with(" UTC"), "{expires}");
    let year: i16 = expires.split(' ').nth(3).unwrap().parse().unwrap();
    assert_eq!(
        year,
        Timestamp::now().to_zoned(jiff::tz::TimeZone::UTC).year() + 1
    );
    let doc: Value = serde_json::from_slice(&body(resp).await).unwrap();
    assert_eq!(doc["openapi"], "3.0.0");
}

#[tokio::test]
async fn v3_group_without_hash_has_no_cache_headers() {
    let (_, mux) = service();
    let resp = send(&mux, "/openapi/v3/apis/apps/v1", &[]).await;
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(!resp.headers().contains_key(header::CACHE_CONTROL));
    assert!(!resp.headers().contains_key(header::EXPIRES));
}

#[tokio::test]
async fn v3_group_stale_hash_redirects_to_the_current_one() {
    let (svc, mux) = service();
    let resp = send(&mux, "/openapi/v3/api/v1?hash=OLD", &[]).await;
    assert_eq!(resp.status(), StatusCode::MOVED_PERMANENTLY);
    let location = format!("/openapi/v3/api/v1?hash={}", svc.v3_etag("api/v1").unwrap());
    assert_eq!(resp.headers()[header::LOCATION], location.as_str());
    assert_eq!(
        String::from_utf8(body(resp).await).unwrap(),
        format!("<a href=\"{location}\">Moved Permanently</a>.\n\n")
    );
}

#[tokio::test]
async fn v3_group_etag_304_and_406() {
    let (svc, mux) = service();
    let tag = format!("\"{}\"", svc.v3_etag("api/v1").unwrap());
    let resp = send(&mux, "/openapi/v3/api/v1", &[("if-none-match", &tag)]).await;
    assert_eq!(resp.status(), StatusCode::NOT_MODIFIED);

    let resp = send(
        &mux,
        "/openapi/v3/api/v1",
        &[(
            "accept",
            "application/com.github.proto-openapi.spec.v3.v1.0+protobuf",
        )],
    )
    .await;
    assert_eq!(resp.status(), StatusCode::NOT_ACCEPTABLE);
    assert_eq!(resp.headers()[header::VARY], "Accept");

    let resp = send(
        &mux,
        "/openapi/v3/api/v1",
        &[("accept", "application/json, */*")],
    )
    .await;
    assert_eq!(resp.status(), StatusCode::OK);
}

#[tokio::test]
async fn v3_update_changes_the_hash() {
    let (svc, mux) = service();
    let old = svc.v3_etag("api/v1").unwrap();
    svc.set_v3(
        "api/v1",
        &json!({"openapi": "3.0.0", "paths": {"/api/v1/": {}}}),
    );
    let new = svc.v3_etag("api/v1").unwrap();
    assert_ne!(old, new);
    let resp = send(&mux, &format!("/openapi/v3/api/v1?hash={old}"), &[]).await;
    assert_eq!(resp.status(), StatusCode::MOVED_PERMANENTLY);
    let root: Value =
        serde_json::from_slice(&body(send(&mux, "/openapi/v3", &[]).await).await).unwrap();
    assert_eq!(
        root["paths"]["api/v1"]["serverRelativeURL"],
        format!("/openapi/v3/api/v1?hash={new}")
    );
}

/// A builder counting its runs into `runs[index]`.
fn counted(
    runs: &Arc<[std::sync::atomic::AtomicUsize; 3]>,
    index: usize,
    doc: Value,
) -> impl FnOnce() -> Value + Send + 'static {
    let runs = runs.clone();
    move || {
        runs[index].fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        doc
    }
}

fn run_counts(runs: &[std::sync::atomic::AtomicUsize; 3]) -> [usize; 3] {
    [0, 1, 2].map(|i| runs[i].load(std::sync::atomic::Ordering::SeqCst))
}

#[tokio::test]
async fn lazy_documents_are_built_once_on_first_request_and_only_those_asked_for() {
    let runs: Arc<[std::sync::atomic::AtomicUsize; 3]> = Arc::default();
    let svc = OpenApiService::new();
    let v2 = json!({"swagger": "2.0", "paths": {}, "definitions": {}});
    svc.set_v2_lazy(counted(&runs, 0, v2.clone()));
    svc.set_v3_lazy(
        "api/v1",
        counted(
            &runs,
            1,
            json!({"openapi": "3.0.0", "paths": {"/api/v1/": {}}}),
        ),
    );
    let apps = Arc::new(json!({"openapi": "3.0.0", "paths": {"/apis/apps/v1/": {}}}));
    let shared = apps.clone();
    let counter = counted(&runs, 2, Value::Null);
    svc.set_v3_lazy("apis/apps/v1", move || {
        counter();
        shared
    });
    let mux = PathRecorderMux::new("test");
    svc.install(&mux).unwrap();
    assert_eq!(run_counts(&runs), [0, 0, 0]);
    assert_eq!(svc.v3_paths(), ["api/v1", "apis/apps/v1"]);

    // One group-version: only its builder runs, once.
    for _ in 0..2 {
        let resp = send(&mux, "/openapi/v3/apis/apps/v1", &[]).await;
        assert_eq!(resp.status(), StatusCode::OK);
        let bytes = body(resp).await;
        assert_eq!(bytes, serde_json::to_vec(&*apps).unwrap());
    }
    assert_eq!(run_counts(&runs), [0, 0, 1]);

    // The index links every document by hash, so it builds the rest.
    let resp = send(&mux, "/openapi/v3", &[]).await;
    let root: Value = serde_json::from_slice(&body(resp).await).unwrap();
    assert_eq!(run_counts(&runs), [0, 1, 1]);
    let v1_etag = compute_etag(
        &serde_json::to_vec(&json!({"openapi": "3.0.0", "paths": {"/api/v1/": {}}})).unwrap(),
    );
    assert_eq!(
        root["paths"]["api/v1"]["serverRelativeURL"],
        format!("/openapi/v3/api/v1?hash={v1_etag}")
    );
    assert_eq!(svc.v3_etag("api/v1").unwrap(), v1_etag);

    // v2, in both forms, from one build.
    let resp = send(&mux, "/openapi/v2", &[("accept", V2_PROTOBUF_CONTENT_TYPE)]).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let resp = send(&mux, "/openapi/v2", &[]).await;
    assert_eq!(
        resp.headers()[header::ETAG],
        format!("\"{}\"", compute_etag(&serde_json::to_vec(&v2).unwrap()))
    );
    assert_eq!(run_counts(&runs), [1, 1, 1]);
}

#[tokio::test]
async fn a_lazy_replacement_changes_the_index_and_redirects_the_old_hash() {
    let (svc, mux) = service();
    let old = svc.v3_etag("api/v1").unwrap();
    let before: Value =
        serde_json::from_slice(&body(send(&mux, "/openapi/v3", &[]).await).await).unwrap();
    assert_eq!(
        before["paths"]["api/v1"]["serverRelativeURL"],
        format!("/openapi/v3/api/v1?hash={old}")
    );
    svc.set_v3_lazy(
        "api/v1",
        || json!({"openapi": "3.0.0", "paths": {"/api/v1/namespaces": {}}}),
    );
    svc.set_v3_lazy(
        "apis/stable.example.com/v1",
        || json!({"openapi": "3.0.0", "paths": {"/apis/stable.example.com/v1/": {}}}),
    );
    let root: Value =
        serde_json::from_slice(&body(send(&mux, "/openapi/v3", &[]).await).await).unwrap();
    let new = svc.v3_etag("api/v1").unwrap();
    assert_ne!(old, new);
    assert_eq!(
        root["paths"]["api/v1"]["serverRelativeURL"],
        format!("/openapi/v3/api/v1?hash={new}")
    );
    assert_eq!(root["paths"].as_object().unwrap().len(), 3);
    let resp = send(&mux, &format!("/openapi/v3/api/v1?hash={old}"), &[]).await;
    assert_eq!(resp.status(), StatusCode::MOVED_PERMANENTLY);
    svc.remove_v3("apis/stable.example.com/v1");
    let root: Value =
        serde_json::from_slice(&body(send(&mux, "/openapi/v3", &[]).await).await).unwrap();
    assert_eq!(root["paths"].as_object().unwrap().len(), 2);
}

#[tokio::test]
async fn the_index_keeps_its_modification_time_until_a_document_changes() {
    let (svc, mux) = service();
    let first = send(&mux, "/openapi/v3", &[]).await;
    let modified = first.headers()[header::LAST_MODIFIED].clone();
    let etag = first.headers()[header::ETAG].clone();
    let resp = send(
        &mux,
        "/openapi/v3",
        &[("if-modified-since", modified.to_str().unwrap())],
    )
    .await;
    assert_eq!(resp.status(), StatusCode::NOT_MODIFIED);
    let again = send(&mux, "/openapi/v3", &[]).await;
    assert_eq!(again.headers()[header::LAST_MODIFIED], modified);
    assert_eq!(again.headers()[header::ETAG], etag);
    drop(svc);
}
