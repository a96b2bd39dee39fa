//! The aggregator's `/apis`: upstream's aggregator lists the groups by their APIServices'
//! priorities (highest `groupPriorityMinimum` first, versions by `versionPriority`, the first
//! being preferred) rather than in installation order; the aggregated document is already
//! ordered that way.

use apiserver::body::{Request, Response, full};
use apiserver::endpoints::discovery::handlers::wants_aggregated;
use apiserver::endpoints::discovery::types::APIGroupList;
use apiserver::endpoints::discovery::{DiscoveryManager, DiscoveryPath};
use apiserver::filters::{HttpService, service_fn};
use http::header::CONTENT_TYPE;
use http_body_util::BodyExt;

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
            reordered(response, &manager).await
        }
    })
}

async fn reordered(response: Response, manager: &DiscoveryManager) -> Response {
    let is_json = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if response.status() != http::StatusCode::OK || !is_json {
        return response;
    }
    let (parts, body) = response.into_parts();
    let Ok(collected) = body.collect().await else {
        return Response::from_parts(parts, full(Vec::new()));
    };
    let bytes = collected.to_bytes();
    let Ok(mut list) = serde_json::from_slice::<APIGroupList>(&bytes) else {
        return Response::from_parts(parts, full(bytes));
    };
    order_by_priority(&mut list, manager);
    let pretty = bytes.windows(3).any(|w| w == b"\n  ");
    let encoded = if pretty {
        serde_json::to_vec_pretty(&list)
    } else {
        serde_json::to_vec(&list)
    };
    let Ok(mut out) = encoded else {
        return Response::from_parts(parts, full(bytes));
    };
    if bytes.ends_with(b"\n") {
        out.push(b'\n');
    }
    let mut parts = parts;
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
    }
}
