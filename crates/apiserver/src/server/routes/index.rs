//! `/` and `/index.html`: the sorted list of paths the server serves (upstream `routes/index.go`),
//! and the same document with 404 as the end-of-chain handler (`IndexLister`).

use std::collections::BTreeSet;
use std::sync::Arc;

use http::StatusCode;
use serde::Serialize;

use super::write_raw_json;
use crate::body::Request;
use crate::filters::{HttpService, service_fn};
use crate::server::mux::PathRecorderMux;

/// Yields the listed paths of a server and its delegates.
pub type ListedPathsProvider = Arc<dyn Fn() -> Vec<String> + Send + Sync>;

/// `metav1.RootPaths`.
#[derive(Serialize)]
struct RootPaths {
    paths: Vec<String>,
}

fn root_paths_handler(code: StatusCode, provider: ListedPathsProvider) -> HttpService {
    service_fn(move |_req: Request| {
        // Sorted and de-duplicated: the union of this server's and its delegates' paths.
        let paths: BTreeSet<String> = provider().into_iter().collect();
        let body = RootPaths {
            paths: paths.into_iter().collect(),
        };
        async move { write_raw_json(code, &body) }
    })
}

/// 200 with `{"paths":[…]}` (any method, like upstream).
pub fn index_handler(provider: ListedPathsProvider) -> HttpService {
    root_paths_handler(StatusCode::OK, provider)
}

/// 404 with `{"paths":[…]}`: the not-found handler of a server with `EnableIndex` and no custom
/// end-of-chain handler.
pub fn index_lister_not_found(provider: ListedPathsProvider) -> HttpService {
    root_paths_handler(StatusCode::NOT_FOUND, provider)
}

/// Installs `/` and `/index.html` (unlisted).
pub fn install_index(mux: &PathRecorderMux, provider: ListedPathsProvider) {
    let handler = index_handler(provider);
    mux.unlisted_handle("/", handler.clone());
    mux.unlisted_handle("/index.html", handler);
}

/// A provider listing the paths of `mux`.
pub fn mux_paths(mux: &PathRecorderMux) -> ListedPathsProvider {
    let mux = mux.clone();
    Arc::new(move || mux.listed_paths())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::empty;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    async fn call(svc: HttpService, path: &str) -> (StatusCode, String, String) {
        let req = http::Request::get(path).body(empty()).unwrap();
        let resp = svc.oneshot(req).await.unwrap();
        let status = resp.status();
        let ct = resp.headers()["content-type"].to_str().unwrap().to_owned();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        (status, ct, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn index_lists_sorted_union() {
        let mux = PathRecorderMux::new("test");
        mux.handle("/version", index_handler(Arc::new(Vec::new)));
        mux.handle("/apis", index_handler(Arc::new(Vec::new)));
        let mux_provider = mux_paths(&mux);
        let provider: ListedPathsProvider = Arc::new(move || {
            let mut paths = mux_provider();
            paths.push("/healthz".into());
            paths.push("/apis".into());
            paths
        });
        install_index(&mux, provider.clone());
        let want = "{\n  \"paths\": [\n    \"/apis\",\n    \"/healthz\",\n    \"/version\"\n  ]\n}";
        for path in ["/", "/index.html"] {
            assert_eq!(
                call(mux.service(), path).await,
                (StatusCode::OK, "application/json".into(), want.into())
            );
        }
        assert!(!mux.listed_paths().contains(&"/".to_string()));
        mux.set_not_found_handler(index_lister_not_found(provider));
        assert_eq!(
            call(mux.service(), "/nope").await,
            (
                StatusCode::NOT_FOUND,
                "application/json".into(),
                want.into()
            )
        );
    }

    #[tokio::test]
    async fn empty_index() {
        let (_, _, body) = call(index_handler(Arc::new(Vec::new)), "/").await;
        assert_eq!(body, "{\n  \"paths\": []\n}");
    }
}
