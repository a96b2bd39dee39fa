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
//! model); [`OpenApiService`] caches their bytes and ETags and can be updated while serving (CRDs).

pub mod proto;
mod serve;
pub mod to_proto;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock, RwLock};

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

/// One cached document.
struct Cached {
    json: Bytes,
    etag: String,
    last_modified: Timestamp,
    /// The gnostic protobuf form, built on first request (v2 only).
    protobuf: OnceLock<Bytes>,
}

impl Cached {
    fn new(json: Vec<u8>) -> Arc<Cached> {
        Arc::new(Cached {
            etag: compute_etag(&json),
            json: Bytes::from(json),
            last_modified: Timestamp::now(),
            protobuf: OnceLock::new(),
        })
    }

    fn of(doc: &Value) -> Arc<Cached> {
        // Serialising a `Value` cannot fail (its keys are strings).
        Cached::new(serde_json::to_vec(doc).unwrap_or_default())
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

#[derive(Default)]
struct State {
    v2: Option<Arc<Cached>>,
    v3: BTreeMap<String, Arc<Cached>>,
    /// The `/openapi/v3` index, rebuilt whenever `v3` changes.
    v3_root: Option<Arc<Cached>>,
}

impl State {
    fn rebuild_root(&mut self) {
        let paths: serde_json::Map<String, Value> = self
            .v3
            .iter()
            .map(|(path, doc)| {
                (
                    path.clone(),
                    serde_json::json!({ "serverRelativeURL": server_relative_url(path, &doc.etag) }),
                )
            })
            .collect();
        self.v3_root = Some(Cached::of(&serde_json::json!({ "paths": paths })));
    }
}

fn server_relative_url(path: &str, etag: &str) -> String {
    format!("{V3_PREFIX}{path}?hash={etag}")
}

/// The OpenAPI documents a server publishes and their HTTP handlers. Cloning shares the same
/// documents, so a handler registered once sees later updates.
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

    /// Replaces (or adds) the OpenAPI 3.0 document of one group-version path, given without the
    /// leading `/` (`api/v1`, `apis/apps/v1`, `apis/apps`, `version` …).
    pub fn set_v3(&self, path: &str, doc: &Value) {
        let cached = Cached::of(doc);
        let mut state = self.write();
        state
            .v3
            .insert(path.trim_start_matches('/').to_owned(), cached);
        state.rebuild_root();
    }

    /// Removes the OpenAPI 3.0 document of a group-version path.
    pub fn remove_v3(&self, path: &str) {
        let mut state = self.write();
        state.v3.remove(path.trim_start_matches('/'));
        state.rebuild_root();
    }

    /// The unquoted ETag of the v2 document, if one is set.
    pub fn v2_etag(&self) -> Option<String> {
        self.read().v2.as_ref().map(|d| d.etag.clone())
    }

    /// The unquoted ETag of a v3 document, if it exists.
    pub fn v3_etag(&self, path: &str) -> Option<String> {
        self.read()
            .v3
            .get(path.trim_start_matches('/'))
            .map(|d| d.etag.clone())
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
                async move { this.serve_v3_root(&req) }
            }),
        );
        let this = self.clone();
        mux.handle_prefix(
            V3_PREFIX,
            service_fn(move |req: Request| {
                let this = this.clone();
                async move { this.serve_v3_group(&req) }
            }),
        )
    }

    /// Serves `/openapi/v2`: JSON or gnostic protobuf by `Accept`, `Vary: Accept`, ETag
    /// preconditions, gzip when accepted; 404 while no document is set.
    pub async fn serve_v2(&self, req: Request) -> Response {
        let gzip = serve::accepts_gzip(req.headers());
        let response = self.serve_v2_uncompressed(&req);
        serve::gzip_response(gzip, response).await
    }

    fn serve_v2_uncompressed(&self, req: &Request) -> Response {
        let Some(doc) = self.read().v2.clone() else {
            return go_not_found();
        };
        let headers = vary_accept();
        let offers = [
            (JSON_CONTENT_TYPE, Format::Json),
            (V2_PROTOBUF_DEPRECATED_CONTENT_TYPE, Format::Protobuf),
            (V2_PROTOBUF_CONTENT_TYPE, Format::Protobuf),
        ];
        let (content_type, data) = match negotiate(req.headers(), &offers) {
            Some(Format::Json) => (JSON_CONTENT_TYPE, doc.json.clone()),
            Some(Format::Protobuf) => (V2_PROTOBUF_CONTENT_TYPE, doc.protobuf()),
            None => return not_acceptable(headers),
        };
        serve::serve_content(
            req,
            headers,
            serve::Content {
                content_type,
                data,
                etag: &doc.etag,
                last_modified: doc.last_modified,
            },
        )
    }

    /// Serves the `/openapi/v3` index.
    pub fn serve_v3_root(&self, req: &Request) -> Response {
        let root = {
            let mut state = self.write();
            if state.v3_root.is_none() {
                state.rebuild_root();
            }
            state.v3_root.clone()
        };
        let Some(root) = root else {
            return go_not_found();
        };
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(JSON_CONTENT_TYPE),
        );
        serve::serve_content(
            req,
            headers,
            serve::Content {
                content_type: JSON_CONTENT_TYPE,
                data: root.json.clone(),
                etag: &root.etag,
                last_modified: root.last_modified,
            },
        )
    }

    /// Serves `/openapi/v3/<gv-path>`: JSON only (a protobuf-only `Accept` gets 406), `Vary:
    /// Accept`, ETag preconditions, and the `?hash=` contract (current → `Cache-Control:
    /// public, immutable` and `Expires` a year ahead; stale → 301 to the current hash). An
    /// unknown path gets 404 (kube-openapi answers an empty 200, which no client can use).
    pub fn serve_v3_group(&self, req: &Request) -> Response {
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
        if let Some(hash) = query_param(req.uri(), "hash").filter(|h| !h.is_empty()) {
            if hash != doc.etag {
                if let Ok(value) = HeaderValue::from_str(&format!("\"{}\"", doc.etag)) {
                    headers.insert(header::ETAG, value);
                }
                return serve::redirect(
                    req,
                    headers,
                    &server_relative_url(&path, &doc.etag),
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
                data: doc.json.clone(),
                etag: &doc.etag,
                last_modified: doc.last_modified,
            },
        )
    }
}

/// The first value of query parameter `name` (form-decoded enough for a hex hash).
fn query_param(uri: &http::Uri, name: &str) -> Option<String> {
    uri.query()?.split('&').find_map(|pair| {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        (key == name).then(|| value.to_owned())
    })
}
