//! `PathRecorderMux`: the non-go-restful path mux of the generic server (upstream
//! `pkg/server/mux`). It records which paths are "listed" (advertised at `/` and in the 404 index)
//! and serves exact paths, then prefixes, then a not-found handler.
//!
//! The handler table is rebuilt and swapped atomically on every change, so serving never takes a
//! lock and paths can be added while the server runs (CRDs, aggregated APIs).

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;

use crate::body::{Request, Response, go_not_found};
use crate::filters::{HttpService, Next, service_fn};

/// Errors from registering a path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MuxError {
    /// A prefix registration whose path does not end with `/` (upstream panics here).
    #[error("{mux}: {path:?} must end in a trailing slash")]
    PrefixWithoutTrailingSlash {
        /// The mux's name.
        mux: String,
        /// The rejected path.
        path: String,
    },
}

/// The immutable snapshot requests are matched against.
struct HandlerTable {
    exact: HashMap<String, HttpService>,
    /// Prefixes in match order: most `/` first, then longest, then reverse lexicographic.
    prefixes: Vec<(String, HttpService)>,
    not_found: HttpService,
}

/// The mutable registration state, changed under a lock and then published as a table.
struct Registrations {
    exact: HashMap<String, HttpService>,
    prefixes: HashMap<String, HttpService>,
    listed: BTreeSet<String>,
    not_found: HttpService,
}

struct Inner {
    name: String,
    registrations: Mutex<Registrations>,
    table: ArcSwap<HandlerTable>,
}

/// A path mux that records the paths it serves. Cloning shares the same mux.
#[derive(Clone)]
pub struct PathRecorderMux {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for PathRecorderMux {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PathRecorderMux")
            .field("name", &self.inner.name)
            .finish_non_exhaustive()
    }
}

/// Go's default `http.NotFound` handler.
fn default_not_found() -> HttpService {
    service_fn(|_req: Request| async { go_not_found() })
}

impl PathRecorderMux {
    /// An empty mux named `name` (the name only appears in log and error messages).
    pub fn new(name: impl Into<String>) -> Self {
        let not_found = default_not_found();
        let registrations = Registrations {
            exact: HashMap::new(),
            prefixes: HashMap::new(),
            listed: BTreeSet::new(),
            not_found: not_found.clone(),
        };
        let table = HandlerTable {
            exact: HashMap::new(),
            prefixes: Vec::new(),
            not_found,
        };
        PathRecorderMux {
            inner: Arc::new(Inner {
                name: name.into(),
                registrations: Mutex::new(registrations),
                table: ArcSwap::from_pointee(table),
            }),
        }
    }

    /// The mux's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Serves exactly `path` with `handler` and lists the path.
    pub fn handle(&self, path: &str, handler: HttpService) {
        self.update(|r, name| {
            r.listed.insert(path.to_owned());
            insert_logging_duplicate(&mut r.exact, name, path, handler);
        });
    }

    /// Serves exactly `path` with `handler` without listing it.
    pub fn unlisted_handle(&self, path: &str, handler: HttpService) {
        self.update(|r, name| insert_logging_duplicate(&mut r.exact, name, path, handler));
    }

    /// Serves every path starting with `path` (which must end with `/`) and lists it.
    pub fn handle_prefix(&self, path: &str, handler: HttpService) -> Result<(), MuxError> {
        self.check_prefix(path)?;
        self.update(|r, name| {
            r.listed.insert(path.to_owned());
            insert_logging_duplicate(&mut r.prefixes, name, path, handler);
        });
        Ok(())
    }

    /// Serves every path starting with `path` (which must end with `/`) without listing it.
    pub fn unlisted_handle_prefix(&self, path: &str, handler: HttpService) -> Result<(), MuxError> {
        self.check_prefix(path)?;
        self.update(|r, name| insert_logging_duplicate(&mut r.prefixes, name, path, handler));
        Ok(())
    }

    /// Removes `path` from the exact and prefix handlers and from the listed paths.
    pub fn unregister(&self, path: &str) {
        self.update(|r, _| {
            r.exact.remove(path);
            r.prefixes.remove(path);
            r.listed.remove(path);
        });
    }

    /// Sets the handler for requests no path matches (default: Go's 404 `404 page not found`).
    pub fn set_not_found_handler(&self, handler: HttpService) {
        self.update(|r, _| r.not_found = handler);
    }

    /// The listed paths, sorted.
    pub fn listed_paths(&self) -> Vec<String> {
        self.lock().listed.iter().cloned().collect()
    }

    /// The handler that serves `path` right now.
    pub fn handler_for(&self, path: &str) -> HttpService {
        let table = self.inner.table.load();
        if let Some(handler) = table.exact.get(path) {
            return handler.clone();
        }
        table
            .prefixes
            .iter()
            .find(|(prefix, _)| path.starts_with(prefix.as_str()))
            .map(|(_, handler)| handler.clone())
            .unwrap_or_else(|| table.not_found.clone())
    }

    /// Routes one request.
    pub async fn serve(&self, req: Request) -> Response {
        Next::new(self.handler_for(req.uri().path())).run(req).await
    }

    /// The mux as a service; it always consults the current handler table.
    pub fn service(&self) -> HttpService {
        let mux = self.clone();
        service_fn(move |req: Request| Next::new(mux.handler_for(req.uri().path())).run(req))
    }

    fn check_prefix(&self, path: &str) -> Result<(), MuxError> {
        if path.ends_with('/') {
            Ok(())
        } else {
            Err(MuxError::PrefixWithoutTrailingSlash {
                mux: self.inner.name.clone(),
                path: path.to_owned(),
            })
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Registrations> {
        // A panic while holding the lock leaves consistent data (every update is a plain insert
        // or remove), so a poisoned lock is still usable.
        self.inner
            .registrations
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Applies `change` and publishes the new table while still holding the lock, so concurrent
    /// registrations cannot publish out of order.
    fn update(&self, change: impl FnOnce(&mut Registrations, &str)) {
        let mut registrations = self.lock();
        change(&mut registrations, &self.inner.name);
        let mut prefixes: Vec<(String, HttpService)> = registrations
            .prefixes
            .iter()
            .map(|(p, h)| (p.clone(), h.clone()))
            .collect();
        prefixes.sort_by(|(a, _), (b, _)| prefix_priority(b).cmp(&prefix_priority(a)));
        self.inner.table.store(Arc::new(HandlerTable {
            exact: registrations.exact.clone(),
            prefixes,
            not_found: registrations.not_found.clone(),
        }));
    }
}

/// Upstream's `byPrefixPriority` key: number of `/`, then length, then the string itself;
/// matching walks prefixes from the highest key down.
fn prefix_priority(prefix: &str) -> (usize, usize, &str) {
    (prefix.matches('/').count(), prefix.len(), prefix)
}

/// Registering a path twice replaces the handler; upstream logs an error and carries on.
fn insert_logging_duplicate(
    map: &mut HashMap<String, HttpService>,
    mux: &str,
    path: &str,
    handler: HttpService,
) {
    if map.insert(path.to_owned(), handler).is_some() {
        tracing::error!(
            mux,
            path,
            "duplicate path registration, replacing the previous handler"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::{empty, full};
    use http::StatusCode;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    fn named(name: &'static str) -> HttpService {
        service_fn(move |_req: Request| async move { http::Response::new(full(name)) })
    }

    async fn get(mux: &PathRecorderMux, path: &str) -> (StatusCode, String) {
        let req = http::Request::get(path).body(empty()).unwrap();
        let resp = mux.service().oneshot(req).await.unwrap();
        let status = resp.status();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn secret_handlers() {
        let mux = PathRecorderMux::new("test");
        mux.unlisted_handle("/secret", named("secret"));
        mux.unlisted_handle_prefix("/secretPrefix/", named("secretPrefix"))
            .unwrap();
        assert!(mux.listed_paths().is_empty());
        mux.handle("/nonswagger", named("nonswagger"));
        mux.handle_prefix("/publicPrefix/", named("public"))
            .unwrap();
        assert_eq!(mux.listed_paths(), vec!["/nonswagger", "/publicPrefix/"]);
        assert_eq!(get(&mux, "/secret").await.1, "secret");
        assert_eq!(get(&mux, "/secretPrefix/x").await.1, "secretPrefix");
    }

    #[tokio::test]
    async fn unregister_handlers() {
        let mux = PathRecorderMux::new("test");
        mux.unlisted_handle("/secret", named("secret"));
        mux.handle("/nonswagger", named("first"));
        assert_eq!(mux.listed_paths(), vec!["/nonswagger"]);
        mux.unregister("/nonswagger");
        assert!(mux.listed_paths().is_empty());
        assert_eq!(
            get(&mux, "/nonswagger").await,
            (StatusCode::NOT_FOUND, "404 page not found\n".into())
        );
        mux.handle("/nonswagger", named("second"));
        assert_eq!(mux.listed_paths(), vec!["/nonswagger"]);
        assert_eq!(get(&mux, "/nonswagger").await.1, "second");
        mux.unregister("/secret");
        assert_eq!(get(&mux, "/secret").await.0, StatusCode::NOT_FOUND);
    }

    #[tokio::test]
    async fn prefix_handlers() {
        let mux = PathRecorderMux::new("test");
        mux.unlisted_handle_prefix("/secretPrefix/", named("secretPrefix"))
            .unwrap();
        mux.handle_prefix("/publicPrefix/", named("publicPrefix"))
            .unwrap();
        mux.handle_prefix("/publicPrefix/but/more/precise/", named("precise"))
            .unwrap();
        mux.handle("/publicPrefix/exactmatch", named("exact"));
        mux.handle("/otherPublic/exactmatchslash/", named("slash"));
        mux.set_not_found_handler(named("fallthrough"));

        let listed = mux.listed_paths();
        assert!(!listed.contains(&"/secretPrefix/".to_string()));
        assert!(listed.contains(&"/publicPrefix/".to_string()));

        let table = [
            ("/secretPrefix/", "secretPrefix"),
            ("/secretPrefix/foo", "secretPrefix"),
            ("/secretPrefix", "fallthrough"),
            ("/publicPrefix", "fallthrough"),
            ("/publicPrefix/", "publicPrefix"),
            ("/publicPrefix/foo", "publicPrefix"),
            ("/publicPrefix/exactmatch", "exact"),
            ("/publicPrefix/exactmatch/", "publicPrefix"),
            ("/publicPrefix/exactmatch/more", "publicPrefix"),
            ("/publicPrefix/but/more/precise/", "precise"),
            ("/publicPrefix/but/more/precise/deeper", "precise"),
            ("/publicPrefix/but/more/precise", "publicPrefix"),
            ("/otherPublic/exactmatchslash/", "slash"),
            ("/otherPublic/exactmatchslash", "fallthrough"),
            ("/otherPublic/exactmatchslash/more", "fallthrough"),
        ];
        for (path, want) in table {
            assert_eq!(get(&mux, path).await.1, want, "path {path}");
        }
    }

    #[test]
    fn prefix_must_end_with_slash() {
        let mux = PathRecorderMux::new("test");
        let err = mux.handle_prefix("/nope", named("x")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "test: \"/nope\" must end in a trailing slash"
        );
        assert!(mux.unlisted_handle_prefix("/nope", named("x")).is_err());
        assert!(mux.listed_paths().is_empty());
    }

    #[tokio::test]
    async fn duplicate_registration_replaces() {
        let mux = PathRecorderMux::new("test");
        mux.handle("/a", named("one"));
        mux.handle("/a", named("two"));
        assert_eq!(get(&mux, "/a").await.1, "two");
        assert_eq!(mux.listed_paths(), vec!["/a"]);
    }

    #[tokio::test]
    async fn service_sees_later_registrations() {
        let mux = PathRecorderMux::new("test");
        let service = mux.service();
        mux.handle("/late", named("late"));
        let req = http::Request::get("/late").body(empty()).unwrap();
        let resp = service.oneshot(req).await.unwrap();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(&body[..], b"late");
    }

    #[test]
    fn prefix_order() {
        let mut keys = vec!["/a/", "/a/b/", "/ab/", "/a/c/", "/abc/"];
        keys.sort_by(|a, b| prefix_priority(b).cmp(&prefix_priority(a)));
        assert_eq!(keys, vec!["/a/c/", "/a/b/", "/abc/", "/ab/", "/a/"]);
    }
}
