//! The aggregator's `/apis`: upstream's aggregator lists the groups by their APIServices'
//! priorities (highest `groupPriorityMinimum` first, versions by `versionPriority`, the first
//! being preferred) rather than in installation order; the aggregated document is already
//! ordered that way.

use apiserver::body::{Request, Response, full};
use apiserver::endpoints::discovery::handlers::wants_aggregated;
use apiserver::endpoints::discovery::types::{APIGroup, APIGroupList};
use apiserver::endpoints::discovery::{DiscoveryManager, DiscoveryPath};
use apiserver::filters::{HttpService, Next, service_fn};
use http::header::CONTENT_TYPE;
use http_body_util::BodyExt;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Orders `list` like the aggregated discovery document of `manager` (priority order).
pub fn order_by_priority(list: &mut APIGroupList, manager: &DiscoveryManager) {
    let aggregated = manager.aggregated(false);
    let order: Vec<(String, Vec<String>)> = aggregated
        .list
        .items
        .iter()
        .map(|g| {
            (
                g.metadata.name.clone(),
                g.versions.iter().map(|v| v.version.clone()).collect(),
            )
        })
        .collect();
    let position = |name: &str| order.iter().position(|(g, _)| g == name);
    list.groups
        .sort_by_key(|g| position(&g.name).unwrap_or(usize::MAX));
    for group in &mut list.groups {
        let Some(index) = position(&group.name) else {
            continue;
        };
        let versions = &order[index].1;
        group.versions.sort_by_key(|v| {
            versions
                .iter()
                .position(|x| *x == v.version)
                .unwrap_or(usize::MAX)
        });
        if let Some(first) = group.versions.first() {
            group.preferred_version = first.clone();
        }
    }
}

/// Orders the versions of `group` by priority (the preferred version first).
pub fn order_versions_by_priority(group: &mut APIGroup, manager: &DiscoveryManager) {
    let aggregated = manager.aggregated(false);
    let Some(entry) = aggregated
        .list
        .items
        .iter()
        .find(|g| g.metadata.name == group.name)
    else {
        return;
    };
    let order: Vec<&str> = entry.versions.iter().map(|v| v.version.as_str()).collect();
    group.versions.sort_by_key(|v| {
        order
            .iter()
            .position(|x| *x == v.version)
            .unwrap_or(usize::MAX)
    });
    if let Some(first) = group.versions.first() {
        group.preferred_version = first.clone();
    }
}

/// The `/apis/<group>` handler of a group with remote versions: the discovery manager's, with
/// the versions in priority order (upstream's aggregator group handler).
pub fn group_service(manager: DiscoveryManager, group: &str) -> HttpService {
    let group = group.to_string();
    service_fn(move |req: Request| {
        let manager = manager.clone();
        let group = group.clone();
        async move {
            let path = DiscoveryPath::Group(group.clone());
            let reorder = req.method() == http::Method::GET
                && DiscoveryPath::parse(req.uri().path()).as_ref() == Some(&path);
            let response = Next::new(manager.group_service(&group)).run(req).await;
            if !reorder {
                return response;
            }
            rewrite_json(response, |g: &mut APIGroup| {
                order_versions_by_priority(g, &manager)
            })
            .await
        }
    })
}

/// The `/apis` handler: the discovery manager's, with unaggregated JSON lists re-ordered by
/// priority.
pub fn apis_service(manager: DiscoveryManager) -> HttpService {
    service_fn(move |req: Request| {
        let manager = manager.clone();
        async move {
            let path = DiscoveryPath::ApisRoot;
            let reorder = req.method() == http::Method::GET && !wants_aggregated(&req);
            let response = manager.serve(&path, &req);
            if !reorder {
                return response;
            }
            rewrite_json(response, |list: &mut APIGroupList| {
                order_by_priority(list, &manager)
            })
            .await
        }
    })
}

/// Re-encodes a 200 JSON `response` after `change` (other responses pass unchanged),
/// keeping its indentation and trailing newline.
async fn rewrite_json<T: Serialize + DeserializeOwned>(
    response: Response,
    change: impl FnOnce(&mut T),
) -> Response {
    let is_json = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if response.status() != http::StatusCode::OK || !is_json {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(collected) = body.collect().await else {
        return Response::from_parts(parts, full(Vec::new()));
    };
    let bytes = collected.to_bytes();
    let Ok(mut value) = serde_json::from_slice::<T>(&bytes) else {
        return Response::from_parts(parts, full(bytes));
    };
    change(&mut value);
    let pretty = bytes.windows(3).any(|w| w == b"\n  ");
    let encoded = if pretty {
        serde_json::to_vec_pretty(&value)
    } else {
        serde_json::to_vec(&value)
    };
    let Ok(mut out) = encoded else {
        return Response::from_parts(parts, full(bytes));
    };
    if bytes.ends_with(b"\n") {
        out.push(b'\n');
    }
    parts.headers.remove(http::header::CONTENT_LENGTH);
    Response::from_parts(parts, full(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use apiserver::endpoints::discovery::{APIResource, Addresses, Priority};

    fn resource(name: &str, kind: &str) -> APIResource {
        APIResource {
            name: name.into(),
            singular_name: name.trim_end_matches('s').into(),
            namespaced: true,
            kind: kind.into(),
            verbs: vec!["get".into(), "list".into()],
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn apis_lists_groups_by_priority() {
        let manager = DiscoveryManager::new(Addresses::new("127.0.0.1:443"));
        let add = |group: &str, version: &str, gpm: i32, vp: i32| {
            manager
                .add_group_version(
                    group,
                    version,
                    vec![resource("things", "Thing")],
                    Some(Priority {
                        group_priority_minimum: gpm,
                        version_priority: vp,
                    }),
                )
                .unwrap();
        };
        add("apps", "v1", 17800, 15);
        add("wardle.example.com", "v1alpha1", 1000, 15);
        add("wardle.example.com", "v1", 1000, 20);
        add("apiregistration.k8s.io", "v1", 18000, 15);
        let service = apis_service(manager.clone());
        let req = http::Request::builder()
            .uri("/apis")
            .header("accept", "application/json")
            .body(apiserver::body::empty())
            .unwrap();
        let response = apiserver::filters::Next::new(service).run(req).await;
        assert_eq!(response.status(), 200);
        let body = response.into_body().collect().await.unwrap().to_bytes();
        let list: APIGroupList = serde_json::from_slice(&body).unwrap();
        let names: Vec<&str> = list.groups.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(
            names,
            ["apiregistration.k8s.io", "apps", "wardle.example.com"]
        );
        assert_eq!(list.groups[2].preferred_version.version, "v1");
        assert_eq!(list.groups[2].versions[1].version, "v1alpha1");

        let service = group_service(manager.clone(), "wardle.example.com");
        let req = http::Request::builder()
            .uri("/apis/wardle.example.com")
            .body(apiserver::body::empty())
            .unwrap();
        let response = apiserver::filters::Next::new(service).run(req).await;
        let body = response.into_body().collect().await.unwrap().to_bytes();
        let group: APIGroup = serde_json::from_slice(&body).unwrap();
        assert_eq!(group.kind, "APIGroup");
        assert_eq!(group.preferred_version.version, "v1");
        assert_eq!(group.versions[0].version, "v1");
    }
}
