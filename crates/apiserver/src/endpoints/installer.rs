//! The API installer (upstream `pkg/endpoints/installer.go`): one handler per group-version
//! root that serves its `APIResourceList` at the root and routes everything below it to the
//! REST handlers of the addressed resource, using the [`RequestInfo`] the handler chain
//! resolved.

use std::collections::BTreeMap;
use std::sync::Arc;

use http::StatusCode;

use crate::body::{Request, Response};
use crate::endpoints::discovery::{APIResource, storage_version_hash};
use crate::endpoints::handlers::{
    HandlerConfig, RequestParts, ResourceScope, connect, create, delete, encode, get, list, patch,
    update, watch,
};
use crate::filters::{HttpService, service_fn};
use crate::registry::rest::RestStorage;
use crate::request::RequestInfo;
use crate::request::requestinfo::RequestInfoResolver;
use crate::status::{ApiError, reason};

/// The verbs served on a collection path.
const COLLECTION_VERBS: &[&str] = &["list", "watch", "create", "deletecollection"];
/// The verbs served on an item path.
const ITEM_VERBS: &[&str] = &["get", "update", "patch", "delete", "watch"];

/// The REST handler of one group-version.
#[derive(Clone)]
pub struct GroupVersionHandler {
    root: String,
    resources: Arc<BTreeMap<String, ResourceScope>>,
    discovery: HttpService,
}

impl GroupVersionHandler {
    /// A handler for `root` (`/api/v1`, `/apis/<g>/<v>`) serving `resources` (keys `pods` or
    /// `pods/status`), with `discovery` answering the root itself.
    pub fn new(
        root: &str,
        group: &str,
        version: &str,
        resources: &BTreeMap<String, Arc<dyn RestStorage>>,
        config: &HandlerConfig,
        discovery: HttpService,
    ) -> Self {
        let resources = resources
            .iter()
            .map(|(path, storage)| {
                let (resource, subresource) = path.split_once('/').unwrap_or((path, ""));
                let scope = ResourceScope {
                    storage: storage.clone(),
                    group: group.to_string(),
                    version: version.to_string(),
                    resource: resource.to_string(),
                    subresource: subresource.to_string(),
                    config: config.clone(),
                };
                (path.clone(), scope)
            })
            .collect();
        GroupVersionHandler {
            root: root.trim_end_matches('/').to_string(),
            resources: Arc::new(resources),
            discovery,
        }
    }

    /// The handler as a service.
    pub fn service(self) -> HttpService {
        let handler = Arc::new(self);
        service_fn(move |req: Request| {
            let handler = handler.clone();
            async move { handler.serve(req).await }
        })
    }

    async fn serve(&self, req: Request) -> Response {
        let path = req.uri().path();
        if path == self.root || path.strip_suffix('/') == Some(self.root.as_str()) {
            return crate::filters::Next::new(self.discovery.clone())
                .run(req)
                .await;
        }
        let info = match req.extensions().get::<RequestInfo>() {
            Some(info) if info.is_resource_request => info.clone(),
            _ => match RequestInfoResolver::default().resolve(req.method(), req.uri()) {
                Ok(info) => info,
                Err(err) => return ApiError::internal(err).into_response(),
            },
        };
        // Errors are written in the media type the `Accept` header picks (a protobuf Status for
        // protobuf clients), as upstream's `ErrorNegotiated` does.
        let mut accept = http::HeaderMap::new();
        if let Some(value) = req.headers().get(http::header::ACCEPT) {
            accept.insert(http::header::ACCEPT, value.clone());
        }
        match self.route(info, req).await {
            Ok(response) => response,
            Err(err) => encode::error_response(&accept, err),
        }
    }

    async fn route(&self, mut info: RequestInfo, req: Request) -> Result<Response, ApiError> {
        let key = if info.subresource.is_empty() {
            info.resource.clone()
        } else {
            format!("{}/{}", info.resource, info.subresource)
        };
        let scope = self.resources.get(&key).ok_or_else(ApiError::no_route)?;
        if !scope.info().namespaced && !info.namespace.is_empty() {
            // `/api/v1/namespaces/<name>` resolves with the name as namespace; any other
            // namespaced path of a cluster-scoped resource has no route.
            if info.resource != "namespaces" {
                return Err(ApiError::no_route());
            }
            info.namespace.clear();
        }
        // The path decides between item and collection routes, as go-restful's routes do. A
        // list or watch with `fieldSelector=metadata.name=<name>` carries that name in its
        // request info (upstream sets it for authorization) but is a collection request: the
        // handlers see only the path's name and apply the selector like any other.
        if info.parts.len() < 2 {
            info.name.clear();
        }
        // A namespaced resource without a namespace only lists and watches (all namespaces).
        let all_namespaces = scope.info().namespaced && info.namespace.is_empty();
        let verb = info.verb.clone();
        check_route(scope, &verb, !info.name.is_empty(), all_namespaces)?;
        let (head, body) = req.into_parts();
        let parts = RequestParts::new(&http::Request::from_parts(head, crate::body::empty()), info);
        if !scope.subresource.is_empty() && scope.storage.verbs().contains(&"connect") {
            return connect::connect(scope, parts).await;
        }
        match verb.as_str() {
            "get" => get::get(scope, parts).await,
            "list" => list::list(scope, parts).await,
            "watch" => watch::watch(scope, parts).await,
            "create" => create::create(scope, parts, body).await,
            "update" => update::update(scope, parts, body).await,
            "patch" => patch::patch(scope, parts, body).await,
            "delete" => delete::delete(scope, parts, body).await,
            "deletecollection" => delete::delete_collection(scope, parts, body).await,
            _ => Err(method_not_allowed()),
        }
    }
}

/// Whether the resource has a route for `verb` on the addressed path: 404 when nothing is
/// served there, 405 when other methods are.
fn check_route(
    scope: &ResourceScope,
    verb: &str,
    on_item: bool,
    all_namespaces: bool,
) -> Result<(), ApiError> {
    let verbs = scope.storage.verbs();
    let served = |v: &str| verbs.contains(&v) || (v == "watch" && verbs.contains(&"list"));
    let path_verbs: &[&str] = if all_namespaces && on_item {
        &[]
    } else if all_namespaces {
        &["list", "watch"]
    } else if on_item && scope.subresource.is_empty() {
        ITEM_VERBS
    } else if on_item {
        // Subresources serve list/create on the item path too.
        &["get", "update", "patch", "delete", "create", "list"]
    } else {
        COLLECTION_VERBS
    };
    if path_verbs.contains(&verb) && served(verb) {
        return Ok(());
    }
    if path_verbs.iter().any(|v| served(v)) {
        Err(method_not_allowed())
    } else {
        Err(ApiError::no_route())
    }
}

/// go-restful's 405 for a method without a route on an existing path.
fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        reason::METHOD_NOT_ALLOWED,
        "the server does not allow this method on the requested resource",
    )
    .with_details(Default::default())
}

/// The discovery entry of one installed resource path (verbs sorted; `singularName`,
/// `shortNames` and `categories` only for top-level resources, `storageVersionHash` only for
/// stored top-level ones).
/// `group`/`version` are set when the kind lives elsewhere than the served `served_group`/
/// `served_version` (e.g. `autoscaling/v1 Scale` under `apps/v1`).
pub fn api_resource(
    path: &str,
    storage: &dyn RestStorage,
    served_group: &str,
    served_version: &str,
) -> APIResource {
    let info = storage.info();
    let foreign = info.group != served_group || info.version != served_version;
    let top_level = !path.contains('/');
    let mut verbs: Vec<String> = storage
        .verbs()
        .into_iter()
        .filter(|v| *v != "connect")
        .map(str::to_string)
        .collect();
    verbs.sort();
    verbs.dedup();
    APIResource {
        name: path.to_string(),
        singular_name: if top_level {
            info.singular.clone()
        } else {
            String::new()
        },
        namespaced: info.namespaced,
        group: if foreign {
            info.group.clone()
        } else {
            String::new()
        },
        version: if foreign {
            info.version.clone()
        } else {
            String::new()
        },
        kind: info.kind.clone(),
        verbs,
        short_names: if top_level {
            info.short_names.clone()
        } else {
            Vec::new()
        },
        categories: if top_level {
            info.categories.clone()
        } else {
            Vec::new()
        },
        storage_version_hash: if top_level && storage.is_stored() {
            storage_version_hash(&info.group, &info.version, &info.kind)
        } else {
            String::new()
        },
    }
}
