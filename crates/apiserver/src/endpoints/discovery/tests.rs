//! Black-box scenarios of upstream's discovery tests (`aggregated/handler_test.go`,
//! `aggregated/wrapper_test.go`, `root_test.go`) and the byte-exact documents of the spec.

use std::sync::Arc;

use http::{HeaderMap, StatusCode, header};
use http_body_util::BodyExt;
use sha2::{Digest, Sha512};

use super::aggregated_types::{APIGroupDiscoveryList, APIVersionDiscovery, DiscoveryFreshness};
use super::*;
use crate::body::empty;
use crate::filters::HttpService;
use crate::server::mux::PathRecorderMux;

const AGG_V2: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
const AGG_V2BETA1: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";
/// What kubectl 1.35 and helm 4 send.
const KUBECTL_135: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

struct Reply {
    status: StatusCode,
    headers: HeaderMap,
    body: String,
}

async fn request(
    service: &HttpService,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> Reply {
    let mut builder = http::Request::builder().method(method).uri(path);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    // `Next::run` returns a `Send` future, which the multi-threaded test needs.
    let response = crate::filters::Next::new(service.clone())
        .run(builder.body(empty()).unwrap())
        .await;
    let status = response.status();
    let headers = response.headers().clone();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    Reply {
        status,
        headers,
        body: String::from_utf8(body.to_vec()).unwrap(),
    }
}

async fn get(service: &HttpService, path: &str, accept: &str) -> Reply {
    request(service, "GET", path, &[("accept", accept)]).await
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

const CRUD_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// `deployments` and `deployments/status` as the spec's `/apis/apps/v1` example lists them.
fn deployment_resources() -> Vec<APIResource> {
    vec![
        APIResource {
            name: "deployments/status".into(),
            namespaced: true,
            kind: "Deployment".into(),
            verbs: strings(&["get", "patch", "update"]),
            ..Default::default()
        },
        APIResource {
            name: "deployments".into(),
            singular_name: "deployment".into(),
            namespaced: true,
            kind: "Deployment".into(),
            verbs: strings(CRUD_VERBS),
            short_names: strings(&["deploy"]),
            categories: strings(&["all"]),
            storage_version_hash: "8aSe+NMegvE=".into(),
            ..Default::default()
        },
    ]
}

fn manager() -> DiscoveryManager {
    DiscoveryManager::new(Addresses::new("10.0.0.1:443"))
}

fn simple(name: &str, kind: &str) -> APIResource {
    APIResource {
        name: name.into(),
        singular_name: name.trim_end_matches('s').into(),
        namespaced: true,
        kind: kind.into(),
        verbs: strings(&["get", "list"]),
        ..Default::default()
    }
}

fn decode(body: &str) -> APIGroupDiscoveryList {
    serde_json::from_str(body).unwrap()
}

fn group_names(list: &APIGroupDiscoveryList) -> Vec<String> {
    list.items.iter().map(|g| g.metadata.name.clone()).collect()
}

fn version_names(list: &APIGroupDiscoveryList, group: &str) -> Vec<String> {
    list.items
        .iter()
        .find(|g| g.metadata.name == group)
        .map(|g| g.versions.iter().map(|v| v.version.clone()).collect())
        .unwrap_or_default()
}

fn etag_of(reply: &Reply) -> String {
    reply.headers[header::ETAG].to_str().unwrap().to_string()
}

#[tokio::test]
async fn unaggregated_documents_match_spec_bytes() {
    let m = manager();
    m.add_group_version("", "v1", vec![simple("pods", "Pod")], None)
        .unwrap();
    m.add_group_version("apps", "v1", deployment_resources(), None)
        .unwrap();
    let service = m.service();

    let api = get(&service, "/api", "application/json").await;
    assert_eq!(api.status, StatusCode::OK);
    assert_eq!(api.headers[header::CONTENT_TYPE], "application/json");
    assert_eq!(
        api.body,
        "{\"kind\":\"APIVersions\",\"versions\":[\"v1\"],\"serverAddressByClientCIDRs\":[{\"clientCIDR\":\"0.0.0.0/0\",\"serverAddress\":\"10.0.0.1:443\"}]}\n"
    );

    let apis = get(&service, "/apis", "application/json, */*").await;
    assert_eq!(
        apis.body,
        "{\"kind\":\"APIGroupList\",\"groups\":[{\"name\":\"apps\",\"versions\":[{\"groupVersion\":\"apps/v1\",\"version\":\"v1\"}],\"preferredVersion\":{\"groupVersion\":\"apps/v1\",\"version\":\"v1\"},\"serverAddressByClientCIDRs\":[{\"clientCIDR\":\"0.0.0.0/0\",\"serverAddress\":\"10.0.0.1:443\"}]}]}\n"
    );

    let group = get(&service, "/apis/apps", "application/json").await;
    assert_eq!(
        group.body,
        "{\"kind\":\"APIGroup\",\"apiVersion\":\"v1\",\"name\":\"apps\",\"versions\":[{\"groupVersion\":\"apps/v1\",\"version\":\"v1\"}],\"preferredVersion\":{\"groupVersion\":\"apps/v1\",\"version\":\"v1\"}}\n"
    );

    let gv = get(&service, "/apis/apps/v1", "application/json, */*").await;
    assert_eq!(
        gv.body,
        "{\"kind\":\"APIResourceList\",\"apiVersion\":\"v1\",\"groupVersion\":\"apps/v1\",\"resources\":[{\"name\":\"deployments\",\"singularName\":\"deployment\",\"namespaced\":true,\"kind\":\"Deployment\",\"verbs\":[\"create\",\"delete\",\"deletecollection\",\"get\",\"list\",\"patch\",\"update\",\"watch\"],\"shortNames\":[\"deploy\"],\"categories\":[\"all\"],\"storageVersionHash\":\"8aSe+NMegvE=\"},{\"name\":\"deployments/status\",\"singularName\":\"\",\"namespaced\":true,\"kind\":\"Deployment\",\"verbs\":[\"get\",\"patch\",\"update\"]}]}\n"
    );

    let core = get(&service, "/api/v1", "").await;
    assert_eq!(
        core.body,
        "{\"kind\":\"APIResourceList\",\"groupVersion\":\"v1\",\"resources\":[{\"name\":\"pods\",\"singularName\":\"pod\",\"namespaced\":true,\"kind\":\"Pod\",\"verbs\":[\"get\",\"list\"]}]}\n"
    );
}

#[tokio::test]
async fn empty_verbs_are_an_array_and_extensions_is_unversioned() {
    let m = manager();
    let mut bare = simple("things", "Thing");
    bare.verbs.clear();
    m.add_group_version("extensions", "v1beta1", vec![bare], None)
        .unwrap();
    let service = m.service();
    let gv = get(&service, "/apis/extensions/v1beta1", "").await;
    assert!(
        gv.body
            .starts_with("{\"kind\":\"APIResourceList\",\"groupVersion\"")
    );
    assert!(gv.body.contains("\"verbs\":[]"));
    let group = get(&service, "/apis/extensions", "").await;
    assert!(group.body.starts_with("{\"kind\":\"APIGroup\",\"name\""));
}

#[tokio::test]
async fn aggregated_document_matches_spec_bytes() {
    let m = manager();
    // The spec's example has group/version in every responseKind, which the conversion copies
    // from the APIResource.
    let resources = deployment_resources()
        .into_iter()
        .map(|mut r| {
            r.group = "apps".into();
            r.version = "v1".into();
            r.storage_version_hash.clear();
            r
        })
        .collect();
    m.add_group_version("apps", "v1", resources, None).unwrap();
    let reply = get(&m.apis_root_service(), "/apis", KUBECTL_135).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.headers[header::CONTENT_TYPE], AGGREGATED_CONTENT_TYPE);
    assert_eq!(reply.headers[header::VARY], "Accept");
    assert_eq!(reply.headers[header::CACHE_CONTROL], "public");
    let expected = concat!(
        r#"{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":["#,
        r#"{"metadata":{"name":"apps","creationTimestamp":null},"versions":["#,
        r#"{"version":"v1","resources":["#,
        r#"{"resource":"deployments","responseKind":{"group":"apps","version":"v1","kind":"Deployment"},"#,
        r#""scope":"Namespaced","singularResource":"deployment","#,
        r#""verbs":["create","delete","deletecollection","get","list","patch","update","watch"],"#,
        r#""shortNames":["deploy"],"categories":["all"],"#,
        r#""subresources":[{"subresource":"status","responseKind":{"group":"apps","version":"v1","kind":"Deployment"},"#,
        r#""verbs":["get","patch","update"]}]}],"#,
        r#""freshness":"Current"}]}]}"#,
        "\n"
    );
    assert_eq!(reply.body, expected);

    // The ETag hashes the JSON without the type meta, as upstream's `json.Marshal` does.
    let hashed = expected.trim_end().replace(
        r#""kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","#,
        "",
    );
    let digest: String = Sha512::digest(hashed.as_bytes())
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect();
    assert_eq!(etag_of(&reply), format!("\"{digest}\""));
}

#[tokio::test]
async fn legacy_aggregated_has_one_unnamed_group() {
    let m = manager();
    m.add_group_version("", "v1", vec![simple("pods", "Pod")], None)
        .unwrap();
    m.add_group_version(
        "apps",
        "v1",
        vec![simple("deployments", "Deployment")],
        None,
    )
    .unwrap();
    let reply = get(&m.legacy_root_service(), "/api", KUBECTL_135).await;
    assert_eq!(reply.headers[header::CONTENT_TYPE], AGGREGATED_CONTENT_TYPE);
    assert!(
        reply.body.starts_with(
            r#"{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":[{"metadata":{"creationTimestamp":null},"versions":[{"version":"v1","resources":[{"resource":"pods","responseKind":{"group":"","version":"","kind":"Pod"},"scope":"Namespaced""#
        ),
        "{}",
        reply.body
    );
    let list = decode(&reply.body);
    assert_eq!(group_names(&list), vec![String::new()]);
    // `/apis` does not include the core group.
    let apis = decode(&get(&m.apis_root_service(), "/apis", AGG_V2).await.body);
    assert_eq!(group_names(&apis), vec!["apps".to_string()]);
}

// Upstream `TestBasicResponse` and `TestEtagConsistent`.
#[tokio::test]
async fn basic_response_and_consistent_etag() {
    let m = manager();
    for (group, version) in [("apps", "v1"), ("batch", "v1"), ("batch", "v1beta1")] {
        m.add_group_version(group, version, vec![simple("things", "Thing")], None)
            .unwrap();
    }
    let service = m.apis_root_service();
    let first = get(&service, "/apis", AGG_V2).await;
    let second = get(&service, "/apis", AGG_V2).await;
    assert_eq!(first.status, StatusCode::OK);
    assert_eq!(first.body, second.body);
    assert_eq!(etag_of(&first), etag_of(&second));
    let list = decode(&first.body);
    assert_eq!(list.items.len(), 2);
    assert_eq!(version_names(&list, "batch"), strings(&["v1", "v1beta1"]));
    let etag = etag_of(&first);
    assert!(etag.starts_with('"') && etag.ends_with('"'));
    assert_eq!(etag.len(), 128 + 2);
    assert!(
        etag[1..129]
            .chars()
            .all(|c| c.is_ascii_digit() || c.is_ascii_uppercase())
    );
}

// Upstream `TestEtagMatching` and `TestEtagNonMatching`.
#[tokio::test]
async fn etag_matching_is_304_and_non_matching_is_200() {
    let m = manager();
    m.add_group_version(
        "apps",
        "v1",
        vec![simple("deployments", "Deployment")],
        None,
    )
    .unwrap();
    let service = m.apis_root_service();
    let etag = etag_of(&get(&service, "/apis", AGG_V2).await);

    let cached = request(
        &service,
        "GET",
        "/apis",
        &[("accept", AGG_V2), ("if-none-match", &etag)],
    )
    .await;
    assert_eq!(cached.status, StatusCode::NOT_MODIFIED);
    assert_eq!(cached.body, "");
    assert_eq!(etag_of(&cached), etag);
    assert_eq!(cached.headers[header::VARY], "Accept");
    assert_eq!(cached.headers[header::CACHE_CONTROL], "public");

    // The comparison is on the quoted tag, as the header carries it.
    let unquoted = etag.trim_matches('"').to_string();
    for other in [unquoted.as_str(), "\"nonmatching\""] {
        let reply = request(
            &service,
            "GET",
            "/apis",
            &[("accept", AGG_V2), ("if-none-match", other)],
        )
        .await;
        assert_eq!(reply.status, StatusCode::OK, "{other}");
        assert!(!reply.body.is_empty());
    }
}

// Upstream `TestEtagOutdated`.
#[tokio::test]
async fn etag_outdated_after_add() {
    let m = manager();
    m.add_group_version(
        "apps",
        "v1",
        vec![simple("deployments", "Deployment")],
        None,
    )
    .unwrap();
    let service = m.apis_root_service();
    let old = etag_of(&get(&service, "/apis", AGG_V2).await);
    m.add_group_version("batch", "v1", vec![simple("jobs", "Job")], None)
        .unwrap();
    let reply = request(
        &service,
        "GET",
        "/apis",
        &[("accept", AGG_V2), ("if-none-match", &old)],
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_ne!(etag_of(&reply), old);
    assert_eq!(
        group_names(&decode(&reply.body)),
        strings(&["apps", "batch"])
    );
}

// Upstream `TestAddRemove` plus `root_test.go TestDiscoveryAtAPIS`/`TestDiscoveryOrdering`.
#[tokio::test]
async fn add_and_remove_are_reflected_everywhere() {
    let m = manager();
    let service = m.service();
    assert_eq!(
        get(&service, "/apis", "application/json").await.body,
        "{\"kind\":\"APIGroupList\",\"groups\":[]}\n"
    );
    assert_eq!(
        get(&service, "/apis", AGG_V2).await.body,
        "{\"kind\":\"APIGroupDiscoveryList\",\"apiVersion\":\"apidiscovery.k8s.io/v2\",\"metadata\":{},\"items\":[]}\n"
    );
    for group in ["zeta", "alpha", "mid"] {
        m.add_group_version(group, "v1", vec![simple("things", "Thing")], None)
            .unwrap();
    }
    m.add_group_version("alpha", "v2", vec![simple("things", "Thing")], None)
        .unwrap();
    let list: types::APIGroupList =
        serde_json::from_str(&get(&service, "/apis", "application/json").await.body).unwrap();
    let names: Vec<&str> = list.groups.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names, vec!["zeta", "alpha", "mid"], "insertion order");
    assert_eq!(list.groups[1].preferred_version.version, "v1");
    assert_eq!(list.groups[1].versions.len(), 2);
    let aggregated = decode(&get(&service, "/apis", AGG_V2).await.body);
    assert_eq!(group_names(&aggregated), strings(&["alpha", "mid", "zeta"]));

    assert!(m.remove_group_version("alpha", "v1"));
    assert!(!m.remove_group_version("alpha", "v1"));
    assert_eq!(
        get(&service, "/apis/alpha/v1", "").await.status,
        StatusCode::NOT_FOUND
    );
    let alpha: types::APIGroup =
        serde_json::from_str(&get(&service, "/apis/alpha", "").await.body).unwrap();
    assert_eq!(alpha.preferred_version.version, "v2");

    assert!(m.remove_group("zeta"));
    assert!(!m.remove_group("zeta"));
    assert_eq!(
        get(&service, "/apis/zeta", "").await.status,
        StatusCode::NOT_FOUND
    );
    let aggregated = decode(&get(&service, "/apis", AGG_V2).await.body);
    assert_eq!(group_names(&aggregated), strings(&["alpha", "mid"]));
    assert_eq!(version_names(&aggregated, "alpha"), strings(&["v2"]));

    // Removing the last version removes the group; re-adding appends it at the end.
    assert!(m.remove_group_version("alpha", "v2"));
    m.add_group_version("alpha", "v1", vec![simple("things", "Thing")], None)
        .unwrap();
    assert_eq!(m.groups(), strings(&["mid", "alpha"]));
}

#[test]
fn identical_add_keeps_the_cache_and_changes_invalidate_it() {
    let m = manager();
    m.add_group_version(
        "apps",
        "v1",
        vec![simple("deployments", "Deployment")],
        None,
    )
    .unwrap();
    let first = m.aggregated(false);
    m.add_group_version(
        "apps",
        "v1",
        vec![simple("deployments", "Deployment")],
        None,
    )
    .unwrap();
    assert!(Arc::ptr_eq(&first, &m.aggregated(false)));
    m.add_group_version(
        "apps",
        "v1",
        vec![simple("replicasets", "ReplicaSet")],
        None,
    )
    .unwrap();
    let second = m.aggregated(false);
    assert!(!Arc::ptr_eq(&first, &second));
    assert_ne!(first.etag, second.etag);
    assert!(m.set_group_version_priority("apps", "v1", Priority::default()));
    assert!(Arc::ptr_eq(&second, &m.aggregated(false)), "same priority");
    assert!(!m.set_group_version_priority("apps", "v9", Priority::default()));
}

// Upstream `TestVersionSortingNoPriority`: absent priorities, Kubernetes version order wins
// over insertion order.
#[tokio::test]
async fn version_sorting_without_priority() {
    let m = manager();
    for version in [
        "v1alpha1", "v2beta1", "v1", "v1beta1", "v2", "v1beta2", "custom",
    ] {
        m.add_group_version("test", version, vec![simple("things", "Thing")], None)
            .unwrap();
    }
    let list = decode(&get(&m.apis_root_service(), "/apis", AGG_V2).await.body);
    assert_eq!(
        version_names(&list, "test"),
        strings(&[
            "v2", "v1", "v2beta1", "v1beta2", "v1beta1", "v1alpha1", "custom"
        ])
    );
    // Unaggregated discovery keeps insertion order; the first version added is preferred.
    let group = m.api_group("test").unwrap();
    assert_eq!(group.preferred_version.version, "v1alpha1");
}

// Upstream `TestVersionSortingWithPriority`.
#[tokio::test]
async fn version_sorting_with_priority() {
    let m = manager();
    let with = |version_priority| {
        Some(Priority {
            group_priority_minimum: 1000,
            version_priority,
        })
    };
    m.add_group_version("test", "v1", vec![], with(10)).unwrap();
    m.add_group_version("test", "v1alpha1", vec![], with(20))
        .unwrap();
    m.add_group_version("test", "v2beta1", vec![], with(10))
        .unwrap();
    let list = decode(&get(&m.apis_root_service(), "/apis", AGG_V2).await.body);
    assert_eq!(
        version_names(&list, "test"),
        strings(&["v1alpha1", "v1", "v2beta1"])
    );
    // A version with no resources has no `resources` key.
    assert!(list.items[0].versions[0].resources.is_empty());
}

// Upstream `TestGroupVersionSortingConflictingPriority` and `TestStatelessGroupPriorityMinimum`:
// a group's priority is the highest of its versions'; ties are broken by name.
#[tokio::test]
async fn group_sorting_by_priority_then_name() {
    let m = manager();
    let priority = |group_priority_minimum| {
        Some(Priority {
            group_priority_minimum,
            version_priority: 15,
        })
    };
    m.add_group_version("low", "v1", vec![], priority(100))
        .unwrap();
    m.add_group_version("mixed", "v1", vec![], priority(100))
        .unwrap();
    m.add_group_version("mixed", "v2", vec![], priority(20000))
        .unwrap();
    m.add_group_version("b-default", "v1", vec![], None)
        .unwrap();
    m.add_group_version("a-default", "v1", vec![], None)
        .unwrap();
    let service = m.apis_root_service();
    let list = decode(&get(&service, "/apis", AGG_V2).await.body);
    assert_eq!(
        group_names(&list),
        strings(&["mixed", "a-default", "b-default", "low"])
    );
    // Removing the high-priority version drops the group's priority with it.
    assert!(m.remove_group_version("mixed", "v2"));
    let list = decode(&get(&service, "/apis", AGG_V2).await.body);
    assert_eq!(
        group_names(&list),
        strings(&["a-default", "b-default", "low", "mixed"])
    );
    // Re-adding without a priority keeps the one already set.
    m.add_group_version("low", "v1", vec![simple("x", "X")], None)
        .unwrap();
    let list = decode(&get(&service, "/apis", AGG_V2).await.body);
    assert_eq!(group_names(&list)[2..], strings(&["low", "mixed"]));
}

// Upstream `wrapper_test.go TestAggregationEnabled`, plus what the real clients send.
#[tokio::test]
async fn aggregation_accept_matrix() {
    let m = manager();
    m.add_group_version("", "v1", vec![simple("pods", "Pod")], None)
        .unwrap();
    m.add_group_version(
        "apps",
        "v1",
        vec![simple("deployments", "Deployment")],
        None,
    )
    .unwrap();
    let service = m.service();
    enum Want {
        Aggregated,
        Unaggregated,
        NotAcceptable,
    }
    let table = [
        ("", Want::Unaggregated),
        ("application/json", Want::Unaggregated),
        ("application/json, */*", Want::Unaggregated),
        ("*/*", Want::Unaggregated),
        // client-go's protobuf default with a JSON fallback: we only write JSON.
        (
            "application/vnd.kubernetes.protobuf,application/json",
            Want::Unaggregated,
        ),
        (AGG_V2, Want::Aggregated),
        (KUBECTL_135, Want::Aggregated),
        (
            &format!("{AGG_V2},application/json") as &str,
            Want::Aggregated,
        ),
        // A plain clause never satisfies the aggregated restrictions, so order does not matter.
        (
            &format!("application/json,{AGG_V2}") as &str,
            Want::Aggregated,
        ),
        (
            &format!("{AGG_V2};q=0.5,application/json") as &str,
            Want::Aggregated,
        ),
        (
            &format!("{AGG_V2};profile=nopeer") as &str,
            Want::Aggregated,
        ),
        (AGG_V2BETA1, Want::NotAcceptable),
        (
            &format!("{AGG_V2BETA1},application/json") as &str,
            Want::Unaggregated,
        ),
        (
            "application/json;g=apidiscovery.k8s.io;v=v2;as=SomethingElse",
            Want::NotAcceptable,
        ),
        ("text/html", Want::NotAcceptable),
    ];
    for (accept, want) in table {
        for (path, kind) in [("/api", "APIVersions"), ("/apis", "APIGroupList")] {
            let reply = get(&service, path, accept).await;
            match want {
                Want::Aggregated => {
                    assert_eq!(reply.status, StatusCode::OK, "{path} {accept}");
                    assert_eq!(
                        reply.headers[header::CONTENT_TYPE],
                        AGGREGATED_CONTENT_TYPE,
                        "{path} {accept}"
                    );
                    assert!(reply.body.contains("\"kind\":\"APIGroupDiscoveryList\""));
                }
                Want::Unaggregated => {
                    assert_eq!(reply.status, StatusCode::OK, "{path} {accept}");
                    assert_eq!(
                        reply.headers[header::CONTENT_TYPE],
                        "application/json",
                        "{path} {accept}"
                    );
                    assert!(
                        reply.body.starts_with(&format!("{{\"kind\":\"{kind}\"")),
                        "{path} {accept}: {}",
                        reply.body
                    );
                    assert!(!reply.headers.contains_key(header::ETAG));
                }
                Want::NotAcceptable => {
                    assert_eq!(reply.status, StatusCode::NOT_ACCEPTABLE, "{path} {accept}");
                }
            }
        }
    }
}

#[tokio::test]
async fn not_acceptable_is_indented_status() {
    let m = manager();
    let reply = get(&m.apis_root_service(), "/apis", AGG_V2BETA1).await;
    assert_eq!(reply.status, StatusCode::NOT_ACCEPTABLE);
    assert_eq!(reply.headers[header::CONTENT_TYPE], "application/json");
    assert_eq!(
        reply.body,
        "{\n  \"kind\": \"Status\",\n  \"apiVersion\": \"v1\",\n  \"metadata\": {},\n  \"status\": \"Failure\",\n  \"message\": \"only the following media types are accepted: application/json\",\n  \"reason\": \"NotAcceptable\",\n  \"code\": 406\n}"
    );
}

#[tokio::test]
async fn pretty_output_for_curl() {
    let m = manager();
    m.add_group_version(
        "apps",
        "v1",
        vec![simple("deployments", "Deployment")],
        None,
    )
    .unwrap();
    let service = m.service();
    let plain = request(
        &service,
        "GET",
        "/apis/apps",
        &[("user-agent", "curl/8.5.0")],
    )
    .await;
    assert!(plain.body.starts_with("{\n  \"kind\": \"APIGroup\",\n"));
    assert!(!plain.body.ends_with('\n'));
    let agg = request(&service, "GET", "/apis?pretty=true", &[("accept", AGG_V2)]).await;
    let compact = get(&service, "/apis", AGG_V2).await;
    assert!(
        agg.body
            .starts_with("{\n  \"kind\": \"APIGroupDiscoveryList\"")
    );
    assert_eq!(
        etag_of(&agg),
        etag_of(&compact),
        "same tag for every encoding"
    );
    assert_eq!(decode(&agg.body), decode(&compact.body));
}

#[tokio::test]
async fn routing_methods_and_addresses() {
    let m = DiscoveryManager::new(Addresses {
        default_address: "10.0.0.1:443".into(),
        cidr_rules: vec![CidrRule {
            cidr: "192.168.0.0/16".parse().unwrap(),
            address: "192.168.0.1:6443".into(),
        }],
    });
    m.add_group_version(
        "apps",
        "v1",
        vec![simple("deployments", "Deployment")],
        None,
    )
    .unwrap();
    let service = m.service();
    let post = request(&service, "POST", "/apis", &[]).await;
    assert_eq!(post.status, StatusCode::METHOD_NOT_ALLOWED);
    assert!(post.body.contains("\"reason\":\"MethodNotAllowed\""));
    for path in [
        "/apis/apps/v1/deployments",
        "/apis/nope",
        "/api/v2",
        "/apis//v1",
    ] {
        let reply = get(&service, path, "").await;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{path}");
        assert!(
            reply
                .body
                .contains("the server could not find the requested resource")
        );
    }
    assert_eq!(
        get(&service, "/apis/apps/", "").await.status,
        StatusCode::OK
    );
    assert_eq!(
        get(
            &m.group_version_service("apps", "v1"),
            "/apis/apps/v1/deployments",
            ""
        )
        .await
        .status,
        StatusCode::NOT_FOUND
    );

    let inside = request(
        &service,
        "GET",
        "/apis",
        &[("x-forwarded-for", "192.168.3.4")],
    )
    .await;
    let list: types::APIGroupList = serde_json::from_str(&inside.body).unwrap();
    let cidrs: Vec<&str> = list.groups[0]
        .server_address_by_client_cidrs
        .iter()
        .map(|a| a.client_cidr.as_str())
        .collect();
    assert_eq!(cidrs, vec!["0.0.0.0/0", "192.168.0.0/16"]);
}

#[test]
fn discovery_paths() {
    use DiscoveryPath::*;
    let table = [
        ("/api", Some(LegacyRoot)),
        ("/api/", Some(LegacyRoot)),
        ("/apis", Some(ApisRoot)),
        ("/apis/", Some(ApisRoot)),
        ("/api/v1", Some(GroupVersion(String::new(), "v1".into()))),
        ("/apis/apps", Some(Group("apps".into()))),
        (
            "/apis/apps/v1",
            Some(GroupVersion("apps".into(), "v1".into())),
        ),
        (
            "/apis/apps/v1/",
            Some(GroupVersion("apps".into(), "v1".into())),
        ),
        ("/apis/apps/v1/deployments", None),
        ("/api/v1/pods", None),
        ("/apisx", None),
        ("/", None),
    ];
    for (path, want) in table {
        assert_eq!(DiscoveryPath::parse(path), want, "{path}");
    }
}

#[test]
fn scope_mismatch_is_refused_and_changes_nothing() {
    let m = manager();
    let mut status = simple("nodes/status", "Node");
    status.namespaced = true;
    let mut nodes = simple("nodes", "Node");
    nodes.namespaced = false;
    let err = m
        .add_group_version("", "v1", vec![nodes, status], None)
        .unwrap_err();
    assert!(matches!(err, DiscoveryError::Convert(_)));
    assert!(m.groups().is_empty());
    assert!(matches!(
        m.add_group_version("x", "", vec![], None),
        Err(DiscoveryError::EmptyVersion(_))
    ));
}

#[test]
fn stale_freshness_is_served() {
    let m = manager();
    m.add_group_version_with(
        "metrics.k8s.io",
        "v1beta1",
        vec![],
        VersionOptions {
            freshness: DiscoveryFreshness::Stale,
            ..Default::default()
        },
    )
    .unwrap();
    let doc = m.aggregated(false);
    assert_eq!(
        doc.list.items[0].versions,
        vec![APIVersionDiscovery {
            version: "v1beta1".into(),
            resources: vec![],
            freshness: DiscoveryFreshness::Stale,
        }]
    );
    assert!(
        std::str::from_utf8(&doc.json)
            .unwrap()
            .contains("\"freshness\":\"Stale\"")
    );
}

// Upstream `TestConcurrentRequests`: readers and writers at once; every response's ETag is the
// hash of the document it came with.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_requests_are_consistent() {
    let m = manager();
    let service = m.apis_root_service();
    let writer = {
        let m = m.clone();
        tokio::spawn(async move {
            for i in 0..200 {
                let group = format!("g{}", i % 7);
                m.add_group_version(&group, "v1", vec![simple("things", "Thing")], None)
                    .unwrap();
                if i % 3 == 0 {
                    m.remove_group(&group);
                }
                tokio::task::yield_now().await;
            }
        })
    };
    let mut readers = Vec::new();
    for _ in 0..2 {
        let service = service.clone();
        readers.push(tokio::spawn(async move {
            for _ in 0..100 {
                let reply = get(&service, "/apis", AGG_V2).await;
                assert_eq!(reply.status, StatusCode::OK);
                let hashed = reply.body.trim_end().replace(
                    r#""kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","#,
                    "",
                );
                let digest: String = Sha512::digest(hashed.as_bytes())
                    .iter()
                    .map(|b| format!("{b:02X}"))
                    .collect();
                assert_eq!(etag_of(&reply), format!("\"{digest}\""));
            }
        }));
    }
    writer.await.unwrap();
    for reader in readers {
        reader.await.unwrap();
    }
}

#[tokio::test]
async fn served_through_a_path_recorder_mux() {
    let m = manager();
    let mux = PathRecorderMux::new("discovery-test");
    mux.handle("/api", m.legacy_root_service());
    mux.handle("/apis", m.apis_root_service());
    m.add_group_version("", "v1", vec![simple("pods", "Pod")], None)
        .unwrap();
    mux.handle("/api/v1", m.group_version_service("", "v1"));
    m.add_group_version(
        "apps",
        "v1",
        vec![simple("deployments", "Deployment")],
        None,
    )
    .unwrap();
    mux.handle("/apis/apps", m.group_service("apps"));
    mux.handle("/apis/apps/v1", m.group_version_service("apps", "v1"));
    let service = mux.service();

    // kubectl 1.35: two requests end discovery.
    let api = get(&service, "/api?timeout=32s", KUBECTL_135).await;
    let apis = get(&service, "/apis?timeout=32s", KUBECTL_135).await;
    assert_eq!(api.headers[header::CONTENT_TYPE], AGGREGATED_CONTENT_TYPE);
    assert_eq!(apis.headers[header::CONTENT_TYPE], AGGREGATED_CONTENT_TYPE);
    assert_eq!(version_names(&decode(&api.body), ""), strings(&["v1"]));
    assert_eq!(group_names(&decode(&apis.body)), strings(&["apps"]));

    // kubectl 1.20: unaggregated roots, then every group-version.
    for path in ["/api", "/apis", "/api/v1", "/apis/apps", "/apis/apps/v1"] {
        let reply = get(&service, path, "application/json, */*").await;
        assert_eq!(reply.status, StatusCode::OK, "{path}");
        assert_eq!(reply.headers[header::CONTENT_TYPE], "application/json");
    }
    let resources: types::APIResourceList =
        serde_json::from_str(&get(&service, "/apis/apps/v1", "").await.body).unwrap();
    assert_eq!(resources.resources[0].name, "deployments");
}

fn from(source: Source) -> VersionOptions {
    VersionOptions {
        source,
        ..Default::default()
    }
}

// Upstream `TestMultipleSources`: versions of one group from several sources are merged.
#[tokio::test]
async fn multiple_sources_merge_into_one_group() {
    let m = manager();
    m.add_group_version_with(
        "stable.example.com",
        "v1",
        vec![simple("crontabs", "CronTab")],
        from(Source::Crd),
    )
    .unwrap();
    m.add_group_version_with(
        "stable.example.com",
        "v2",
        vec![simple("crontabs", "CronTab")],
        from(Source::Aggregator),
    )
    .unwrap();
    let list = decode(&get(&m.apis_root_service(), "/apis", AGG_V2).await.body);
    assert_eq!(group_names(&list), strings(&["stable.example.com"]));
    assert_eq!(
        version_names(&list, "stable.example.com"),
        strings(&["v2", "v1"])
    );
    let group = m.api_group("stable.example.com").unwrap();
    assert_eq!(group.versions.len(), 2);

    // Removing one source's version leaves the other.
    assert!(!m.remove_group("stable.example.com"), "nothing built in");
    assert!(m.remove_group_from(Source::Crd, "stable.example.com"));
    let list = decode(&get(&m.apis_root_service(), "/apis", AGG_V2).await.body);
    assert_eq!(version_names(&list, "stable.example.com"), strings(&["v2"]));
}

// Upstream `TestSourcePrecedence`: for the same group-version the lowest source wins, and the
// other shows again once the winner is removed.
#[tokio::test]
async fn lowest_source_wins_for_a_duplicated_group_version() {
    let m = manager();
    m.add_group_version_with(
        "apps",
        "v1",
        vec![simple("fromcrds", "FromCrd")],
        from(Source::Crd),
    )
    .unwrap();
    m.add_group_version("apps", "v1", vec![simple("builtins", "Builtin")], None)
        .unwrap();
    let service = m.service();
    let list = decode(&get(&service, "/apis", AGG_V2).await.body);
    assert_eq!(list.items[0].versions.len(), 1);
    assert_eq!(list.items[0].versions[0].resources[0].resource, "builtins");
    let resources: types::APIResourceList =
        serde_json::from_str(&get(&service, "/apis/apps/v1", "").await.body).unwrap();
    assert_eq!(resources.resources[0].name, "builtins");
    assert_eq!(m.api_group("apps").unwrap().versions.len(), 1);

    assert!(m.remove_group_version("apps", "v1"));
    let list = decode(&get(&service, "/apis", AGG_V2).await.body);
    assert_eq!(list.items[0].versions[0].resources[0].resource, "fromcrds");
}
