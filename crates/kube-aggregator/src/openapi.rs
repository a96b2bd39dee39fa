//! The aggregated OpenAPI documents (upstream `apiservice-openapi-controller` and
//! `apiservice-openapiv3-controller`): the aggregator serves `/openapi/v2` and `/openapi/v3`
//! itself, with the documents of the servers it delegates to (read through their handlers)
//! merged with those of the available remote APIServices.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use apiserver::body::{Request, empty};
use apiserver::endpoints::openapi::OpenApiService;
use apiserver::filters::{HttpService, Next};
use apiserver::server::mux::PathRecorderMux;
use http_body_util::BodyExt;
use serde_json::{Map, Value};

/// A remote APIService's documents.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RemoteSpecs {
    /// Its group.
    pub group: String,
    /// Its version.
    pub version: String,
    /// Its Swagger 2.0 document, if it serves one.
    pub v2: Option<Value>,
    /// Its OpenAPI 3 document of `apis/<group>/<version>`, if it serves one.
    pub v3: Option<Value>,
}

#[derive(Default)]
struct State {
    local_v2_etag: Option<String>,
    local_v2: Option<Value>,
    /// `apis/apps/v1` → (its hash in the delegate's index, the document).
    local_v3: BTreeMap<String, (String, Value)>,
    remotes: BTreeMap<String, RemoteSpecs>,
    /// What was last published: the v2 inputs, and each v3 path's document fingerprint.
    published_v2: String,
    published_v3: BTreeMap<String, String>,
    installed: bool,
}

/// The aggregator's OpenAPI documents.
#[derive(Clone)]
pub struct OpenApiAggregator {
    service: OpenApiService,
    mux: PathRecorderMux,
    delegate: HttpService,
    state: Arc<Mutex<State>>,
}

/// GETs `path` from `service` in process, asking for JSON; `(status, etag, body)`.
async fn get(service: &HttpService, path: &str) -> Option<(u16, Option<String>, Vec<u8>)> {
    let req: Request = http::Request::builder()
        .uri(path)
        .header(http::header::ACCEPT, "application/json")
        .body(empty())
        .ok()?;
    let response = Next::new(service.clone()).run(req).await;
    let status = response.status().as_u16();
    let etag = response
        .headers()
        .get(http::header::ETAG)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let body = response.into_body().collect().await.ok()?.to_bytes();
    Some((status, etag, body.to_vec()))
}

/// `local` with the paths and definitions of `remote` that `local` lacks (the remote server
/// may not redefine built-in types, as upstream's merge keeps the first definition).
pub fn merge_v2(local: &Value, remotes: &[&Value]) -> Value {
    let mut merged = local.clone();
    for remote in remotes {
        for section in ["paths", "definitions"] {
            let Some(extra) = remote.get(section).and_then(Value::as_object) else {
                continue;
            };
            let Some(target) = merged.as_object_mut().map(|m| {
                m.entry(section)
                    .or_insert_with(|| Value::Object(Map::new()))
            }) else {
                continue;
            };
            let Some(target) = target.as_object_mut() else {
                continue;
            };
            for (key, value) in extra {
                target.entry(key.clone()).or_insert_with(|| value.clone());
            }
        }
    }
    merged
}

impl OpenApiAggregator {
    /// Documents copied from `delegate` (the unprotected handler of the next server of the
    /// chain) and served on `mux` (the aggregator's non-API mux) once the first copy is made.
    pub fn new(mux: PathRecorderMux, delegate: HttpService) -> Self {
        OpenApiAggregator {
            service: OpenApiService::new(),
            mux,
            delegate,
            state: Arc::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Re-reads the delegate's documents that changed, then republishes. Until a remote
    /// APIService has documents this does nothing: `/openapi/*` then falls through to the
    /// delegate, whose documents are built only when first requested (copying them here would
    /// build them all at start-up).
    pub async fn sync_local(&self) {
        {
            let state = self.lock();
            if state.remotes.is_empty() && !state.installed {
                return;
            }
        }
        let known_etag = self.lock().local_v2_etag.clone();
        if let Some((200, etag, body)) = get(&self.delegate, "/openapi/v2").await
            && (etag.is_none() || etag != known_etag)
            && let Ok(doc) = serde_json::from_slice::<Value>(&body)
        {
            let mut state = self.lock();
            state.local_v2 = Some(doc);
            state.local_v2_etag = etag;
        }
        if let Some((200, _, body)) = get(&self.delegate, "/openapi/v3").await
            && let Ok(index) = serde_json::from_slice::<Value>(&body)
        {
            let paths = index
                .get("paths")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            let mut fresh = BTreeMap::new();
            for (path, entry) in paths {
                let url = entry
                    .get("serverRelativeURL")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                let known = self.lock().local_v3.get(&path).cloned();
                match known {
                    Some((hash, doc)) if hash == url => {
                        fresh.insert(path, (hash, doc));
                    }
                    _ => {
                        let target = format!("/openapi/v3/{path}");
                        if let Some((200, _, body)) = get(&self.delegate, &target).await
                            && let Ok(doc) = serde_json::from_slice::<Value>(&body)
                        {
                            fresh.insert(path, (url, doc));
                        }
                    }
                }
            }
            self.lock().local_v3 = fresh;
        }
        self.publish();
    }

    /// Sets the documents of a remote APIService.
    pub fn set_remote(&self, name: &str, specs: RemoteSpecs) {
        let changed = {
            let mut state = self.lock();
            let changed = state.remotes.get(name) != Some(&specs);
            state.remotes.insert(name.to_string(), specs);
            changed
        };
        if changed {
            self.publish();
        }
    }

    /// Drops the documents of a remote APIService.
    pub fn remove_remote(&self, name: &str) {
        let removed = self.lock().remotes.remove(name).is_some();
        if removed {
            self.publish();
        }
    }

    fn publish(&self) {
        let mut state = self.lock();
        let Some(local) = state.local_v2.as_ref() else {
            return;
        };
        // Documents are re-encoded only when something changed (their Last-Modified stays).
        let remote_v2: Vec<&Value> = state
            .remotes
            .values()
            .filter_map(|r| r.v2.as_ref())
            .collect();
        let v2_fingerprint = format!(
            "{:?}{}",
            state.local_v2_etag,
            remote_v2.iter().map(|v| v.to_string()).collect::<String>()
        );
        if state.published_v2 != v2_fingerprint || state.local_v2_etag.is_none() {
            self.service.set_v2(&merge_v2(local, &remote_v2));
        }
        let mut wanted: BTreeMap<String, (String, &Value)> = state
            .local_v3
            .iter()
            .map(|(path, (hash, doc))| (path.clone(), (hash.clone(), doc)))
            .collect();
        for remote in state.remotes.values() {
            if let Some(doc) = &remote.v3 {
                wanted.insert(
                    format!("apis/{}/{}", remote.group, remote.version),
                    (doc.to_string(), doc),
                );
            }
        }
        for path in state.published_v3.keys() {
            if !wanted.contains_key(path) {
                self.service.remove_v3(path);
            }
        }
        for (path, (fingerprint, doc)) in &wanted {
            if state.published_v3.get(path) != Some(fingerprint) {
                self.service.set_v3(path, doc);
            }
        }
        let published: BTreeMap<String, String> = wanted
            .into_iter()
            .map(|(path, (fingerprint, _))| (path, fingerprint))
            .collect();
        state.published_v3 = published;
        state.published_v2 = v2_fingerprint;
        if !state.installed {
            match self.service.install(&self.mux) {
                Ok(()) => state.installed = true,
                Err(err) => tracing::warn!("serving the aggregated OpenAPI documents: {err}"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn remote_documents_add_what_is_missing() {
        let local = json!({"swagger": "2.0", "paths": {"/api/v1/pods": {}},
                           "definitions": {"io.k8s.api.core.v1.Pod": {"type": "object"}}});
        let remote = json!({"paths": {"/apis/wardle.example.com/v1alpha1/flunders": {"get": {}}},
                            "definitions": {"io.k8s.api.core.v1.Pod": {"type": "string"},
                                            "com.example.wardle.v1alpha1.Flunder": {}}});
        let merged = merge_v2(&local, &[&remote]);
        assert_eq!(
            merged["definitions"]["io.k8s.api.core.v1.Pod"]["type"],
            "object"
        );
        assert!(merged["definitions"]["com.example.wardle.v1alpha1.Flunder"].is_object());
        assert!(merged["paths"]["/apis/wardle.example.com/v1alpha1/flunders"].is_object());
        assert!(merged["paths"]["/api/v1/pods"].is_object());
    }
}
