//! `ApiServerHandler`: the full handler chain in front of the director, which sends API paths
//! to their registered web services and everything else to the non-API path mux (upstream
//! `pkg/server/handler.go`).

use std::sync::Arc;

use crate::body::Request;
use crate::filters::Next;
use crate::filters::{HttpService, service_fn};
use crate::server::mux::PathRecorderMux;
use arc_swap::ArcSwap;

/// The API web-service roots (`/api`, `/api/v1`, `/apis`, `/apis/<g>`, `/apis/<g>/<v>`,
/// `/version` …) and their handlers. Roots can be added while serving (custom resources).
#[derive(Clone, Default)]
pub struct ApiRoutes {
    routes: Arc<ArcSwap<Vec<(String, HttpService)>>>,
}

impl ApiRoutes {
    /// Registers (or replaces) the handler of a web-service root.
    pub fn register(&self, root: &str, handler: HttpService) {
        let root = root.trim_end_matches('/').to_string();
        self.routes.rcu(|current| {
            let mut next: Vec<(String, HttpService)> = current
                .iter()
                .filter(|(r, _)| *r != root)
                .cloned()
                .collect();
            next.push((root.clone(), handler.clone()));
            next
        });
    }

    /// Removes a root.
    pub fn unregister(&self, root: &str) {
        let root = root.trim_end_matches('/');
        self.routes.rcu(|current| {
            current
                .iter()
                .filter(|(r, _)| r != root)
                .cloned()
                .collect::<Vec<_>>()
        });
    }

    /// The registered roots in registration order.
    pub fn roots(&self) -> Vec<String> {
        self.routes.load().iter().map(|(r, _)| r.clone()).collect()
    }

    /// The handler claiming `path`, if any. `/apis` claims only `/apis` and `/apis/`; other
    /// roots claim the exact path and everything below `root/` (a path-boundary match).
    pub fn lookup(&self, path: &str) -> Option<HttpService> {
        let routes = self.routes.load();
        for (root, handler) in routes.iter() {
            let claimed = if root == "/apis" {
                path == "/apis" || path == "/apis/"
            } else {
                path == root
                    || (path.len() > root.len()
                        && path.starts_with(root.as_str())
                        && path.as_bytes()[root.len()] == b'/')
            };
            if claimed {
                return Some(handler.clone());
            }
        }
        None
    }
}

/// The handler of one generic server.
#[derive(Clone)]
pub struct ApiServerHandler {
    /// What the server serves: the handler chain around the director.
    pub full_handler_chain: HttpService,
    /// API routes, else the non-API mux. Delegating servers use it as their not-found handler.
    pub director: HttpService,
    /// API web services.
    pub api_routes: ApiRoutes,
    /// Non-API paths (`/healthz`, `/metrics`, …); unknown paths go to its not-found handler.
    pub non_api_mux: PathRecorderMux,
}

impl ApiServerHandler {
    /// Builds the handler: a director over `api_routes` and a new mux whose not-found handler
    /// is `not_found`, wrapped by `build_chain`.
    pub fn new(
        name: &str,
        not_found: HttpService,
        build_chain: impl FnOnce(HttpService) -> HttpService,
    ) -> Self {
        let non_api_mux = PathRecorderMux::new(name);
        non_api_mux.set_not_found_handler(not_found);
        let api_routes = ApiRoutes::default();
        let director = {
            let api_routes = api_routes.clone();
            let mux = non_api_mux.clone();
            service_fn(move |req: Request| {
                let target = api_routes
                    .lookup(req.uri().path())
                    .unwrap_or_else(|| mux.service());
                Next::new(target).run(req)
            })
        };
        let full_handler_chain = build_chain(director.clone());
        ApiServerHandler {
            full_handler_chain,
            director,
            api_routes,
            non_api_mux,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::with_content_type;
    use http::StatusCode;

    fn text(s: &'static str) -> HttpService {
        service_fn(move |_req| async move { with_content_type(StatusCode::OK, "text/plain", s) })
    }

    #[test]
    fn api_root_claims_path_boundaries() {
        let routes = ApiRoutes::default();
        routes.register("/apis", text("apis"));
        routes.register("/api/v1", text("v1"));
        assert!(routes.lookup("/apis").is_some());
        assert!(routes.lookup("/apis/").is_some());
        assert!(routes.lookup("/apis/apps").is_none());
        assert!(routes.lookup("/api/v1").is_some());
        assert!(routes.lookup("/api/v1/pods").is_some());
        assert!(routes.lookup("/api/v1x").is_none());
        routes.unregister("/api/v1");
        assert!(routes.lookup("/api/v1/pods").is_none());
    }
}
