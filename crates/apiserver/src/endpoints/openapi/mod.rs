//! The OpenAPI endpoints (upstream `routes/openapi.go` over `kube-openapi` `pkg/handler` and
//! `pkg/handler3`).
//!
//! * `/openapi/v2`: one Swagger 2.0 document, as JSON or as the gnostic protobuf encoding
//!   (kubectl 1.20 only reads the latter), gzip-wrapped.
//! * `/openapi/v3`: the index of per group-version OpenAPI 3.0 documents, each linked with
//!   `?hash=<etag>`; `/openapi/v3/<gv-path>` serves one, immutable when the hash is current and
//!   301-redirected to the current hash otherwise.
//!
//! Documents are plain JSON values supplied by the server (the binary builds them from its type
//! model), given directly or as builders run on first use; [`OpenApiService`] caches their
//! bytes and ETags, computed on first request, and can be updated while serving (CRDs).

pub mod proto;
mod serve;
pub mod to_proto;

#[cfg(test)]
mod tests;

use std::borrow::Borrow;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use jiff::{SignedDuration, Timestamp};
use serde_json::Value;
use sha2::{Digest, Sha512};

use crate::body::{Request, Response, go_not_found};
use crate::endpoints::negotiation::parse_accept;
use crate::filters::service_fn;
use crate::server::mux::{MuxError, PathRecorderMux};

/// `application/json`.
pub const JSON_CONTENT_TYPE: &str = "application/json";
/// The protobuf media type `/openapi/v2` answers with.
pub const V2_PROTOBUF_CONTENT_TYPE: &str =
    "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";
/// The deprecated spelling of [`V2_PROTOBUF_CONTENT_TYPE`] that kubectl sends in `Accept`.
pub const V2_PROTOBUF_DEPRECATED_CONTENT_TYPE: &str =
    "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

/// The path prefix of the per group-version v3 documents.
const V3_PREFIX: &str = "/openapi/v3/";

/// The entity tag of a document: uppercase hex SHA-512 of its JSON bytes (kube-openapi
/// `computeETag`), unquoted.
pub fn compute_etag(data: &[u8]) -> String {
    let digest = Sha512::digest(data);
    let mut out = String::with_capacity(digest.len() * 2);
    for byte in digest {
        out.push_str(&format!("{byte:02X}"));
    }
    out
}

/// Builds a document's JSON bytes on first use.
type Builder = Box<dyn FnOnce() -> Vec<u8> + Send>;

/// A document's bytes, entity tag and (v2) protobuf form, computed once.
struct Content {
    json: Bytes,
    etag: String,
    /// The gnostic protobuf form, built on first request (v2 only).
    protobuf: OnceLock<Bytes>,
}

impl Content {
    fn new(json: Vec<u8>) -> Content {
        Content {
            etag: compute_etag(&json),
            json: Bytes::from(json),
            protobuf: OnceLock::new(),
        }
    }

    fn protobuf(&self) -> Bytes {
        self.protobuf
            .get_or_init(|| {
                let doc: Value = serde_json::from_slice(&self.json).unwrap_or(Value::Null);
                Bytes::from(to_proto::encode_v2(&doc))
            })
            .clone()
    }
}

/// One published document. Its content is built on first use (kube-openapi's lazy handlers
/// do the same), so a server starts without serialising or hashing any document; the
/// modification time is that of the registration, as when the content is built eagerly.
struct Cached {
    last_modified: Timestamp,
    content: OnceLock<Content>,
    builder: Mutex<Option<Builder>>,
}

impl Cached {
    fn lazy(builder: Builder) -> Arc<Cached> {
        Arc::new(Cached {
            last_modified: Timestamp::now(),
            content: OnceLock::new(),
            builder: Mutex::new(Some(builder)),
        })
    }

    /// A document given as a value: serialised now, hashed on first use.
    fn of(doc: &Value) -> Arc<Cached> {
        let json = json_bytes_of(doc);
        Cached::lazy(Box::new(move || json))
    }

    /// The content, building it now if needed (blocking; see [`Cached::prepared`]).
    fn content(&self) -> &Content {
        self.content.get_or_init(|| {
            // The cell runs one initializer at a time, so the builder is taken exactly once.
            let builder = self
                .builder
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take();
            Content::new(
                builder
                    .map(|build| build())
                    .unwrap_or_else(|| b"null".to_vec()),
            )
        })
    }

    fn is_ready(&self, protobuf: bool) -> bool {
        self.content
            .get()
            .is_some_and(|c| !protobuf || c.protobuf.get().is_some())
    }

    /// The document with its content (and protobuf form, when asked) built. A first build
    /// runs on the blocking pool: it takes tens of milliseconds, which must not stall the
    /// requests sharing this worker.
    async fn prepared(self: Arc<Self>, protobuf: bool) -> Arc<Self> {
        if self.is_ready(protobuf) {
            return self;
        }
        let doc = self.clone();
        let build = move || {
            let content = doc.content();
            if protobuf {
                content.protobuf();
            }
        };
        if tokio::task::spawn_blocking(build).await.is_err() {
            tracing::warn!("building an OpenAPI document failed on the blocking pool");
        }
        self
    }
}

/// The JSON bytes of `doc` (serialising a `Value` cannot fail: its keys are strings).
fn json_bytes_of(doc: &Value) -> Vec<u8> {
    serde_json::to_vec(doc).unwrap_or_default()
}

#[derive(Default)]
struct State {
    v2: Option<Arc<Cached>>,
    v3: BTreeMap<String, Arc<Cached>>,
    /// When `v3` last changed (the index's modification time).
    v3_changed: Option<Timestamp>,
    /// The `/openapi/v3` index, built on request and dropped whenever `v3` changes.
    v3_root: Option<Arc<RootIndex>>,
    /// Bumped on every change of `v3`, so that an index built meanwhile is not kept.
    v3_generation: u64,
}

/// The serialised `/openapi/v3` index.
struct RootIndex {
    content: Content,
    last_modified: Timestamp,
}

impl State {
    fn v3_changed(&mut self) {
        self.v3_root = None;
        self.v3_changed = Some(Timestamp::now());
        self.v3_generation += 1;
    }
}

/// The index of `docs` (building each document's content, for its hash).
fn root_index(docs: &BTreeMap<String, Arc<Cached>>, last_modified: Timestamp) -> RootIndex {
    let paths: serde_json::Map<String, Value> = docs
        .iter()
        .map(|(path, doc)| {
            (
                path.clone(),
                serde_json::json!({
                    "serverRelativeURL": server_relative_url(path, &doc.content().etag)
                }),
            )
        })
        .collect();
    let json = serde_json::to_vec(&serde_json::json!({ "paths": paths })).unwrap_or_default();
    RootIndex {
        content: Content::new(json),
        last_modified,
    }
}

fn server_relative_url(path: &str, etag: &str) -> String {
    format!("{V3_PREFIX}{path}?hash={etag}")
}

/// The OpenAPI documents a server publishes and their HTTP handlers. Cloning shares the same
/// documents, so a handler registered once sees later updates.
///
/// Documents may be given as values ([`OpenApiService::set_v2`], [`OpenApiService::set_v3`])
/// or as builders run on first use ([`OpenApiService::set_v2_lazy`],
/// [`OpenApiService::set_v3_lazy`]); either way the bytes, ETag and protobuf form are computed
/// on first request, and the `/openapi/v3` index (which links every document by its hash) when
/// it is first requested after a change.
#[derive(Clone, Default)]
pub struct OpenApiService {
    state: Arc<RwLock<State>>,
}

impl std::fmt::Debug for OpenApiService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.read();
        f.debug_struct("OpenApiService")
            .field("v2", &state.v2.is_some())
            .field("v3", &state.v3.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// Which document a v2 or v3 request negotiated.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    Json,
    Protobuf,
}

/// The first `Accept` clause (in q-order) matching one of `offers`, goautoneg-style, with an
/// empty header meaning `*/*`. `None` → 406.
fn negotiate(headers: &HeaderMap, offers: &[(&str, Format)]) -> Option<Format> {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty())
        .unwrap_or("*/*");
    for clause in parse_accept(accept) {
        for (media_type, format) in offers {
            let (type_, sub_type) = media_type.split_once('/').unwrap_or((media_type, ""));
            if (clause.type_ == type_ || clause.type_ == "*")
                && (clause.sub_type == sub_type || clause.sub_type == "*")
            {
                return Some(*format);
            }
        }
    }
    None
}

fn not_acceptable(headers: HeaderMap) -> Response {
    let mut response = http::Response::new(crate::body::empty());
    *response.status_mut() = StatusCode::NOT_ACCEPTABLE;
    *response.headers_mut() = headers;
    response
}

fn vary_accept() -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(header::VARY, HeaderValue::from_static("Accept"));
    headers
}

impl OpenApiService {
    /// A service with no documents yet.
    pub fn new() -> Self {
        Self::default()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        // Every update replaces whole entries, so a poisoned lock still holds consistent data.
        self.state.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Replaces the Swagger 2.0 document served at `/openapi/v2`.
    pub fn set_v2(&self, doc: &Value) {
        let cached = Cached::of(doc);
        self.write().v2 = Some(cached);
    }

    /// Replaces the Swagger 2.0 document with one `build` makes on first use (a request, or
    /// [`OpenApiService::v2_etag`]). `build` may return the document or a shared handle to it
    /// (`Arc<Value>`).
    pub fn set_v2_lazy<F, D>(&self, build: F)
    where
        F: FnOnce() -> D + Send + 'static,
        D: Borrow<Value>,
    {
        let cached = Cached::lazy(Box::new(move || json_bytes_of(build().borrow())));
        self.write().v2 = Some(cached);
    }

    /// Replaces (or adds) the OpenAPI 3.0 document of one group-version path, given without the
    /// leading `/` (`api/v1`, `apis/apps/v1`, `apis/apps`, `version` …).
    pub fn set_v3(&self, path: &str, doc: &Value) {
        self.insert_v3(path, Cached::of(doc));
    }

    /// Replaces (or adds) the OpenAPI 3.0 document of one group-version path with one `build`
    /// makes on first use: a request for it, a request for the `/openapi/v3` index, or
    /// [`OpenApiService::v3_etag`].
    pub fn set_v3_lazy<F, D>(&self, path: &str, build: F)
    where
        F: FnOnce() -> D + Send + 'static,
        D: Borrow<Value>,
    {
        self.insert_v3(
            path,
            Cached::lazy(Box::new(move || json_bytes_of(build().borrow()))),
        );
    }

    fn insert_v3(&self, path: &str, cached: Arc<Cached>) {
        let mut state = self.write();
        state
            .v3
            .insert(path.trim_start_matches('/').to_owned(), cached);
        state.v3_changed();
    }

    /// Removes the OpenAPI 3.0 document of a group-version path.
    pub fn remove_v3(&self, path: &str) {
        let mut state = self.write();
        state.v3.remove(path.trim_start_matches('/'));
        state.v3_changed();
    }

    /// The unquoted ETag of the v2 document, if one is set (building it if needed).
    pub fn v2_etag(&self) -> Option<String> {
        let doc = self.read().v2.clone()?;
        Some(doc.content().etag.clone())
    }

    /// The unquoted ETag of a v3 document, if it exists (building it if needed).
    pub fn v3_etag(&self, path: &str) -> Option<String> {
        let doc = self.read().v3.get(path.trim_start_matches('/')).cloned()?;
        Some(doc.content().etag.clone())
    }

    /// The group-version paths that have a v3 document, sorted.
    pub fn v3_paths(&self) -> Vec<String> {
        self.read().v3.keys().cloned().collect()
    }

    /// Registers `/openapi/v2`, `/openapi/v3` and the prefix `/openapi/v3/` on `mux` (all
    /// listed, as upstream).
    pub fn install(&self, mux: &PathRecorderMux) -> Result<(), MuxError> {
        let this = self.clone();
        mux.handle(
            "/openapi/v2",
            service_fn(move |req: Request| {
                let this = this.clone();
                async move { this.serve_v2(req).await }
            }),
        );
        let this = self.clone();
        mux.handle(
            "/openapi/v3",
            service_fn(move |req: Request| {
                let this = this.clone();
                async move { this.serve_v3_root(req).await }
            }),
        );
        let this = self.clone();
        mux.handle_prefix(
            V3_PREFIX,
            service_fn(move |req: Request| {
                let this = this.clone();
                async move { this.serve_v3_group(req).await }
            }),
        )
    }

    /// Serves `/openapi/v2`: JSON or gnostic protobuf by `Accept`, `Vary: Accept`, ETag
    /// preconditions, gzip when accepted; 404 while no document is set.
    pub async fn serve_v2(&self, req: Request) -> Response {
        let gzip = serve::accepts_gzip(req.headers());
        let response = self.serve_v2_uncompressed(&without_body(req)).await;
        serve::gzip_response(gzip, response).await
    }

    async fn serve_v2_uncompressed(&self, req: &http::Request<()>) -> Response {
        let Some(doc) = self.read().v2.clone() else {
            return go_not_found();
        };
        let headers = vary_accept();
        let offers = [
            (JSON_CONTENT_TYPE, Format::Json),
            (V2_PROTOBUF_DEPRECATED_CONTENT_TYPE, Format::Protobuf),
            (V2_PROTOBUF_CONTENT_TYPE, Format::Protobuf),
        ];
        let Some(format) = negotiate(req.headers(), &offers) else {
            return not_acceptable(headers);
        };
        let doc = doc.prepared(format == Format::Protobuf).await;
        let content = doc.content();
        let (content_type, data) = match format {
            Format::Json => (JSON_CONTENT_TYPE, content.json.clone()),
            Format::Protobuf => (V2_PROTOBUF_CONTENT_TYPE, content.protobuf()),
        };
        serve::serve_content(
            req,
            headers,
            serve::Content {
                content_type,
                data,
                etag: &content.etag,
                last_modified: doc.last_modified,
            },
        )
    }

    /// The `/openapi/v3` index, built (with every document it links) if needed.
    async fn v3_root(&self) -> Arc<RootIndex> {
        let (docs, generation, changed) = {
            let state = self.read();
            if let Some(root) = &state.v3_root {
                return root.clone();
            }
            (state.v3.clone(), state.v3_generation, state.v3_changed)
        };
        let last_modified = changed.unwrap_or_else(Timestamp::now);
        let build = move || Arc::new(root_index(&docs, last_modified));
        let root = match tokio::task::spawn_blocking(build).await {
            Ok(root) => root,
            Err(_) => {
                tracing::warn!("building the OpenAPI v3 index failed on the blocking pool");
                let docs = self.read().v3.clone();
                Arc::new(root_index(&docs, last_modified))
            }
        };
        let mut state = self.write();
        if state.v3_generation == generation {
            state.v3_root = Some(root.clone());
        }
        root
    }

    /// Serves the `/openapi/v3` index.
    pub async fn serve_v3_root(&self, req: Request) -> Response {
        let req = without_body(req);
        let root = self.v3_root().await;
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(JSON_CONTENT_TYPE),
        );
        serve::serve_content(
            &req,
            headers,
            serve::Content {
                content_type: JSON_CONTENT_TYPE,
                data: root.content.json.clone(),
                etag: &root.content.etag,
                last_modified: root.last_modified,
            },
        )
    }

    /// Serves `/openapi/v3/<gv-path>`: JSON only (a protobuf-only `Accept` gets 406), `Vary:
    /// Accept`, ETag preconditions, and the `?hash=` contract (current → `Cache-Control:
    /// public, immutable` and `Expires` a year ahead; stale → 301 to the current hash). An
    /// unknown path gets 404 (kube-openapi answers an empty 200, which no client can use).
    pub async fn serve_v3_group(&self, req: Request) -> Response {
        let req = &without_body(req);
        let path = req
            .uri()
            .path()
            .strip_prefix(V3_PREFIX)
            .unwrap_or_default()
            .to_owned();
        let mut headers = vary_accept();
        if negotiate(req.headers(), &[(JSON_CONTENT_TYPE, Format::Json)]).is_none() {
            return not_acceptable(headers);
        }
        let Some(doc) = self.read().v3.get(&path).cloned() else {
            return go_not_found();
        };
        let doc = doc.prepared(false).await;
        let content = doc.content();
        if let Some(hash) = query_param(req.uri(), "hash").filter(|h| !h.is_empty()) {
            if hash != content.etag {
                if let Ok(value) = HeaderValue::from_str(&format!("\"{}\"", content.etag)) {
                    headers.insert(header::ETAG, value);
                }
                return serve::redirect(
                    req,
                    headers,
                    &server_relative_url(&path, &content.etag),
                    StatusCode::MOVED_PERMANENTLY,
                );
            }
            headers.insert(
                header::CACHE_CONTROL,
                HeaderValue::from_static("public, immutable"),
            );
            let expires = Timestamp::now()
                .to_zoned(jiff::tz::TimeZone::UTC)
                .checked_add(jiff::Span::new().years(1))
                .map(|z| z.timestamp())
                .unwrap_or_else(|_| {
                    Timestamp::now()
                        .checked_add(SignedDuration::from_hours(24 * 365))
                        .unwrap_or(Timestamp::MAX)
                });
            if let Ok(value) = HeaderValue::from_str(&serve::rfc1123_utc(expires)) {
                headers.insert(header::EXPIRES, value);
            }
        }
        serve::serve_content(
            req,
            headers,
            serve::Content {
                content_type: JSON_CONTENT_TYPE,
                data: content.json.clone(),
                etag: &content.etag,
                last_modified: doc.last_modified,
            },
        )
    }
}

/// The request without its body (the documents are served from method, URI and headers;
/// a body is not `Sync`, so it could not be held across the build of a document).
fn without_body(req: Request) -> http::Request<()> {
    let (parts, _) = req.into_parts();
    http::Request::from_parts(parts, ())
}

/// The first value of query parameter `name` (form-decoded enough for a hex hash).
fn query_param(uri: &http::Uri, name: &str) -> Option<String> {
    uri.query()?.split('&').find_map(|pair| {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        (key == name).then(|| value.to_owned())
    })
}
