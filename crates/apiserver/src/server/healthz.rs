//! Health endpoints (`/healthz`, `/livez`, `/readyz`): checks, registries and their handlers
//! (upstream `pkg/server/healthz` and `pkg/server/healthz.go`).

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use http::request::Parts;
use http::{HeaderValue, StatusCode, header};

use crate::body::{Request, Response, TEXT_PLAIN_UTF8, full, go_http_error};
use crate::filters::{HttpService, service_fn};
use crate::server::mux::PathRecorderMux;

/// A named health check.
pub trait HealthChecker: Send + Sync {
    /// The check's name, used in messages and as the `<path>/<name>` sub-path.
    fn name(&self) -> &str;
    /// Runs the check; `Err` carries the reason (shown only on the individual check path).
    fn check(&self, req: &Parts) -> Result<(), String>;
    /// The group the check belongs to (upstream `GroupedHealthChecker`): `?exclude=<group>`
    /// excludes every check of the group.
    fn group(&self) -> Option<&str> {
        None
    }
}

/// A shared health check.
pub type SharedHealthChecker = Arc<dyn HealthChecker>;

/// Errors of the health registries.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HealthError {
    /// Checks were added after the endpoint was installed.
    #[error("unable to add because the {0} endpoint has already been created")]
    AlreadyInstalled(String),
}

struct NamedCheck<F> {
    name: String,
    group: Option<String>,
    check: F,
}

impl<F> HealthChecker for NamedCheck<F>
where
    F: Fn(&Parts) -> Result<(), String> + Send + Sync,
{
    fn name(&self) -> &str {
        &self.name
    }

    fn check(&self, req: &Parts) -> Result<(), String> {
        (self.check)(req)
    }

    fn group(&self) -> Option<&str> {
        self.group.as_deref()
    }
}

/// A check named `name` running `check`.
pub fn named_check<F>(name: impl Into<String>, check: F) -> SharedHealthChecker
where
    F: Fn(&Parts) -> Result<(), String> + Send + Sync + 'static,
{
    Arc::new(NamedCheck {
        name: name.into(),
        group: None,
        check,
    })
}

/// A check named `name` in group `group` (e.g. `etcd-override-0` in group `etcd`).
pub fn grouped_check<F>(
    name: impl Into<String>,
    group: impl Into<String>,
    check: F,
) -> SharedHealthChecker
where
    F: Fn(&Parts) -> Result<(), String> + Send + Sync + 'static,
{
    Arc::new(NamedCheck {
        name: name.into(),
        group: Some(group.into()),
        check,
    })
}

/// The `ping` check: always healthy.
pub fn ping_check() -> SharedHealthChecker {
    named_check("ping", |_| Ok(()))
}

/// How often the `log` check's background task proves the logger is alive.
const LOG_STAMP_PERIOD: Duration = Duration::from_secs(60);
/// A stamp this old means logging is blocked.
const LOG_BLOCKED_AFTER: Duration = Duration::from_secs(120);

/// The `log` check: the first call starts a background thread that every minute locks and
/// flushes stderr (where logs go), emits a trace event, and then stamps the time; a stamp two
/// minutes old means logging is stuck (upstream flushes klog and fails with `logging blocked`).
pub fn log_check() -> SharedHealthChecker {
    Arc::new(LogCheck)
}

struct LogCheck;

/// Seconds since the Unix epoch of the last completed log stamp (0 = never).
static LOG_STAMP: AtomicU64 = AtomicU64::new(0);
static LOG_STAMPER: OnceLock<()> = OnceLock::new();

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl HealthChecker for LogCheck {
    fn name(&self) -> &str {
        "log"
    }

    fn check(&self, _req: &Parts) -> Result<(), String> {
        LOG_STAMPER.get_or_init(|| {
            LOG_STAMP.store(unix_now(), Ordering::Relaxed);
            // A plain thread: the stamp must keep moving even if the async runtime is starved,
            // and a logger that blocks must block only this thread.
            let spawned = std::thread::Builder::new()
                .name("log-health-stamp".into())
                .spawn(|| {
                    loop {
                        std::thread::park_timeout(LOG_STAMP_PERIOD);
                        // Logs go to stderr: taking its lock and flushing blocks exactly when
                        // a log write is stuck (upstream flushes klog here).
                        let _ = std::io::Write::flush(&mut std::io::stderr().lock());
                        tracing::trace!("log health check stamp");
                        LOG_STAMP.store(unix_now(), Ordering::Relaxed);
                    }
                });
            if let Err(err) = spawned {
                tracing::error!(%err, "cannot start the log health stamp thread");
            }
        });
        let last = LOG_STAMP.load(Ordering::Relaxed);
        if unix_now().saturating_sub(last) >= LOG_BLOCKED_AFTER.as_secs() {
            return Err("logging blocked".into());
        }
        Ok(())
    }
}

struct DelayedCheck {
    inner: SharedHealthChecker,
    start_checking_at: Instant,
}

impl HealthChecker for DelayedCheck {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn check(&self, req: &Parts) -> Result<(), String> {
        // The livez grace period: report healthy without running the check until it is over.
        if Instant::now() > self.start_checking_at {
            self.inner.check(req)
        } else {
            Ok(())
        }
    }

    fn group(&self) -> Option<&str> {
        self.inner.group()
    }
}

/// Wraps `check` so it reports success until `delay` after now (the livez grace period).
pub fn delayed_check(check: SharedHealthChecker, delay: Duration) -> SharedHealthChecker {
    Arc::new(DelayedCheck {
        inner: check,
        start_checking_at: Instant::now() + delay,
    })
}

/// The checks of one health endpoint; frozen once its handler is installed.
pub struct HealthRegistry {
    path: String,
    state: Mutex<RegistryState>,
}

#[derive(Default)]
struct RegistryState {
    checks: Vec<SharedHealthChecker>,
    installed: bool,
}

impl std::fmt::Debug for HealthRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HealthRegistry")
            .field("path", &self.path)
            .field("checks", &self.check_names())
            .finish()
    }
}

impl HealthRegistry {
    /// An empty registry for the endpoint at `path` (e.g. `/readyz`).
    pub fn new(path: impl Into<String>) -> Self {
        HealthRegistry {
            path: path.into(),
            state: Mutex::new(RegistryState::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, RegistryState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Appends checks; fails once the endpoint's handler was installed.
    pub fn add_checks(
        &self,
        checks: impl IntoIterator<Item = SharedHealthChecker>,
    ) -> Result<(), HealthError> {
        let mut state = self.lock();
        if state.installed {
            return Err(HealthError::AlreadyInstalled(self.path.clone()));
        }
        state.checks.extend(checks);
        Ok(())
    }

    /// Appends checks wrapped with a grace `delay` (no wrapping when `delay` is zero).
    pub fn add_delayed_checks(
        &self,
        delay: Duration,
        checks: impl IntoIterator<Item = SharedHealthChecker>,
    ) -> Result<(), HealthError> {
        if delay.is_zero() {
            return self.add_checks(checks);
        }
        let wrapped: Vec<_> = checks
            .into_iter()
            .map(|c| delayed_check(c, delay))
            .collect();
        self.add_checks(wrapped)
    }

    /// The registered checks, in order.
    pub fn checks(&self) -> Vec<SharedHealthChecker> {
        self.lock().checks.clone()
    }

    /// The names of the registered checks, in order.
    pub fn check_names(&self) -> Vec<String> {
        self.lock()
            .checks
            .iter()
            .map(|c| c.name().to_owned())
            .collect()
    }

    /// Marks the registry installed and returns its checks.
    fn freeze(&self) -> Vec<SharedHealthChecker> {
        let mut state = self.lock();
        state.installed = true;
        state.checks.clone()
    }
}

/// Called once, on the first successful (200) root health response.
pub type FirstHealthyCallback = Box<dyn Fn() + Send + Sync>;

/// Installs the root handler at `path` and `path/<name>` for every check of `registry` (just
/// `ping` when it has none), freezing the registry.
pub fn install_handler(
    mux: &PathRecorderMux,
    path: &str,
    registry: &HealthRegistry,
    on_first_healthy: Option<FirstHealthyCallback>,
) {
    let mut checks = registry.freeze();
    if checks.is_empty() {
        checks.push(ping_check());
    }
    install_checks(mux, path, checks, on_first_healthy);
}

/// Installs the handlers for an explicit list of checks (upstream
/// `InstallPathHandlerWithHealthyFunc`).
pub fn install_checks(
    mux: &PathRecorderMux,
    path: &str,
    checks: Vec<SharedHealthChecker>,
    on_first_healthy: Option<FirstHealthyCallback>,
) {
    let checks = if checks.is_empty() {
        vec![ping_check()]
    } else {
        checks
    };
    let name = path
        .trim_start_matches('/')
        .split('/')
        .next()
        .unwrap_or_default()
        .to_owned();
    for check in &checks {
        mux.handle(
            &format!("{path}/{}", check.name()),
            check_handler(check.clone()),
        );
    }
    let root = Arc::new(RootHealth {
        name,
        checks,
        on_first_healthy,
        notified: AtomicBool::new(false),
    });
    mux.handle(
        path,
        service_fn(move |req: Request| {
            let root = root.clone();
            async move { root.handle(req) }
        }),
    );
}

/// The handler of `path/<name>`: discloses the error text, unlike the root handler.
fn check_handler(check: SharedHealthChecker) -> HttpService {
    service_fn(move |req: Request| {
        let check = check.clone();
        async move {
            let (parts, _) = req.into_parts();
            match check.check(&parts) {
                Ok(()) => ok_sniffed(),
                Err(err) => go_http_error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    &format!("internal server error: {err}"),
                ),
            }
        }
    })
}

/// `ok` as Go writes it without an explicit content type: Go sniffs `text/plain; charset=utf-8`
/// and sets no nosniff header.
fn ok_sniffed() -> Response {
    let mut response = http::Response::new(full("ok"));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(TEXT_PLAIN_UTF8),
    );
    response
}

struct RootHealth {
    name: String,
    checks: Vec<SharedHealthChecker>,
    on_first_healthy: Option<FirstHealthyCallback>,
    notified: AtomicBool,
}

/// The `exclude` query values, each value one check (or group) name.
pub fn excluded_checks(query: Option<&str>) -> BTreeSet<String> {
    query_values(query, "exclude").into_iter().collect()
}

/// Whether the query has the key at all (`?verbose` with any or no value).
fn query_has(query: Option<&str>, key: &str) -> bool {
    query_pairs(query).any(|(k, _)| k == key)
}

fn query_values(query: Option<&str>, key: &str) -> Vec<String> {
    query_pairs(query)
        .filter(|(k, _)| k == key)
        .map(|(_, v)| v)
        .collect()
}

/// Go's `url.ParseQuery` as `URL.Query()` uses it: pairs split on `&`, pairs containing `;`
/// dropped, keys and values unescaped.
fn query_pairs(query: Option<&str>) -> impl Iterator<Item = (String, String)> + '_ {
    query
        .unwrap_or_default()
        .split('&')
        .filter(|kv| !kv.is_empty() && !kv.contains(';'))
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (percent_decode(k), percent_decode(v))
        })
}

/// Go's `url.QueryUnescape`, lenient: invalid escapes are kept literally.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Go's `%q` of each name, comma-joined.
pub fn format_quoted(names: &[String]) -> String {
    names
        .iter()
        .map(|n| go_quote(n))
        .collect::<Vec<_>>()
        .join(",")
}

/// Go's `strconv.Quote` for the printable strings check names are.
fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

impl RootHealth {
    fn handle(&self, req: Request) -> Response {
        let started = Instant::now();
        let (parts, _) = req.into_parts();
        let response = self.respond(&parts);
        // Upstream instruments the root health handlers with the request metrics, under the
        // path as subresource and an empty component.
        let labels = crate::metrics::RequestMetricLabels::non_resource(
            parts.method.as_str(),
            parts.uri.path(),
            parts.uri.query(),
            "",
        );
        crate::metrics::observe_request_labels(
            &labels,
            response.status().as_u16(),
            started.elapsed(),
        );
        response
    }

    fn respond(&self, parts: &Parts) -> Response {
        let query = parts.uri.query();
        let excluded = excluded_checks(query);
        let mut unmatched = excluded.clone();
        let mut lines = String::new();
        let mut failed: Vec<&str> = Vec::new();
        let mut failure_log = String::new();
        for check in &self.checks {
            let name = check.name();
            if excluded.contains(name) {
                unmatched.remove(name);
                lines.push_str(&format!("[+]{name} excluded: ok\n"));
                continue;
            }
            if let Some(group) = check.group().filter(|g| excluded.contains(*g)) {
                unmatched.remove(group);
                lines.push_str(&format!("[+]{name} excluded with {group}: ok\n"));
                continue;
            }
            match check.check(parts) {
                Ok(()) => {
                    crate::metrics::observe_healthcheck(name, &self.name, true);
                    lines.push_str(&format!("[+]{name} ok\n"));
                }
                Err(err) => {
                    crate::metrics::observe_healthcheck(name, &self.name, false);
                    // The root endpoint is public: the reason is only logged.
                    lines.push_str(&format!("[-]{name} failed: reason withheld\n"));
                    failure_log.push_str(&format!("[-]{name} failed: {err}\n"));
                    failed.push(name);
                }
            }
        }
        if !unmatched.is_empty() {
            let names: Vec<String> = unmatched.into_iter().collect();
            let quoted = format_quoted(&names);
            lines.push_str(&format!(
                "warn: some health checks cannot be excluded: no matches for {quoted}\n"
            ));
            tracing::debug!(
                "cannot exclude some health checks, no health checks are installed matching {quoted}"
            );
        }
        if !failed.is_empty() {
            tracing::info!(
                "{} check failed: {}\n{}",
                failed.join(","),
                self.name,
                failure_log
            );
            return go_http_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                &format!("{lines}{} check failed", self.name),
            );
        }
        if let Some(callback) = &self.on_first_healthy
            && !self.notified.swap(true, Ordering::SeqCst)
        {
            callback();
        }
        let body = if query_has(query, "verbose") {
            format!("{lines}{} check passed\n", self.name)
        } else {
            "ok".to_owned()
        };
        let mut response = http::Response::new(full(body));
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(TEXT_PLAIN_UTF8),
        );
        headers.insert(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        );
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::empty;
    use http_body_util::BodyExt;
    use std::sync::atomic::AtomicUsize;
    use tower::ServiceExt;

    async fn call(mux: &PathRecorderMux, method: &str, uri: &str) -> Response {
        let req = http::Request::builder()
            .method(method)
            .uri(uri)
            .body(empty())
            .unwrap();
        mux.service().oneshot(req).await.unwrap()
    }

    async fn get(mux: &PathRecorderMux, uri: &str) -> (StatusCode, String) {
        let resp = call(mux, "GET", uri).await;
        let status = resp.status();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    fn bad_check() -> SharedHealthChecker {
        named_check("bad", |_| Err("this will fail".into()))
    }

    #[tokio::test]
    async fn install_handler_root_ok() {
        let mux = PathRecorderMux::new("test");
        install_handler(&mux, "/healthz", &HealthRegistry::new("/healthz"), None);
        let resp = call(&mux, "GET", "/healthz").await;
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(resp.headers()["content-type"], "text/plain; charset=utf-8");
        assert_eq!(resp.headers()["x-content-type-options"], "nosniff");
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(&body[..], b"ok");
        assert_eq!(mux.listed_paths(), vec!["/healthz", "/healthz/ping"]);
    }

    #[tokio::test]
    async fn any_method_is_accepted() {
        let mux = PathRecorderMux::new("test");
        install_checks(&mux, "/livez", vec![], None);
        for method in ["POST", "DELETE", "PUT", "HEAD"] {
            assert_eq!(call(&mux, method, "/livez").await.status(), StatusCode::OK);
        }
    }

    async fn multiple_checks(prefix: &str, name: &str) {
        let table: &[(&str, String, StatusCode, bool)] = &[
            (
                "?verbose",
                format!("[+]ping ok\n{name} check passed\n"),
                StatusCode::OK,
                false,
            ),
            ("?exclude=dontexist", "ok".into(), StatusCode::OK, false),
            ("?exclude=bad", "ok".into(), StatusCode::OK, true),
            (
                "?verbose=true&exclude=bad",
                format!("[+]ping ok\n[+]bad excluded: ok\n{name} check passed\n"),
                StatusCode::OK,
                true,
            ),
            (
                "?verbose=true&exclude=dontexist",
                format!(
                    "[+]ping ok\nwarn: some health checks cannot be excluded: no matches for \"dontexist\"\n{name} check passed\n"
                ),
                StatusCode::OK,
                false,
            ),
            (
                "?verbose&exclude=dontexist",
                format!(
                    "[+]ping ok\nwarn: some health checks cannot be excluded: no matches for \"dontexist\"\n{name} check passed\n"
                ),
                StatusCode::OK,
                false,
            ),
            ("/ping", "ok".into(), StatusCode::OK, false),
            ("", "ok".into(), StatusCode::OK, false),
            (
                "?verbose",
                format!("[+]ping ok\n[-]bad failed: reason withheld\n{name} check failed\n"),
                StatusCode::INTERNAL_SERVER_ERROR,
                true,
            ),
            ("/ping", "ok".into(), StatusCode::OK, true),
            (
                "/bad",
                "internal server error: this will fail\n".into(),
                StatusCode::INTERNAL_SERVER_ERROR,
                true,
            ),
            (
                "",
                format!("[+]ping ok\n[-]bad failed: reason withheld\n{name} check failed\n"),
                StatusCode::INTERNAL_SERVER_ERROR,
                true,
            ),
        ];
        for (suffix, want_body, want_status, add_bad) in table {
            let mux = PathRecorderMux::new("test");
            let mut checks = vec![ping_check()];
            if *add_bad {
                checks.push(bad_check());
            }
            install_checks(&mux, prefix, checks, None);
            let uri = format!("{prefix}{suffix}");
            let (status, body) = get(&mux, &uri).await;
            assert_eq!(status, *want_status, "{uri}");
            assert_eq!(&body, want_body, "{uri}");
        }
    }

    #[tokio::test]
    async fn multiple_checks_table() {
        multiple_checks("/healthz", "healthz").await;
    }

    #[tokio::test]
    async fn multiple_path_checks_table() {
        multiple_checks("/foo", "foo").await;
        multiple_checks("/readyz/nested", "readyz").await;
    }

    #[tokio::test]
    async fn failure_headers_and_check_path_headers() {
        let mux = PathRecorderMux::new("test");
        install_checks(&mux, "/readyz", vec![ping_check(), bad_check()], None);
        let resp = call(&mux, "GET", "/readyz").await;
        assert_eq!(resp.headers()["content-type"], "text/plain; charset=utf-8");
        assert_eq!(resp.headers()["x-content-type-options"], "nosniff");
        let resp = call(&mux, "GET", "/readyz/ping").await;
        assert_eq!(resp.status(), StatusCode::OK);
        assert!(resp.headers().get("x-content-type-options").is_none());
        let resp = call(&mux, "GET", "/readyz/bad?verbose&exclude=bad").await;
        assert_eq!(resp.status(), StatusCode::INTERNAL_SERVER_ERROR);
    }

    #[tokio::test]
    async fn group_exclusion() {
        let mux = PathRecorderMux::new("test");
        let failing = |_: &Parts| Err("down".to_string());
        install_checks(
            &mux,
            "/readyz",
            vec![
                ping_check(),
                grouped_check("etcd", "etcd", failing),
                grouped_check("etcd-override-0", "etcd", failing),
            ],
            None,
        );
        let (status, body) = get(&mux, "/readyz?verbose&exclude=etcd").await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(
            body,
            "[+]ping ok\n[+]etcd excluded: ok\n[+]etcd-override-0 excluded with etcd: ok\nreadyz check passed\n"
        );
        let (status, _) = get(&mux, "/readyz?exclude=etcd-override-0").await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    }

    #[tokio::test]
    async fn unknown_excludes_sorted_and_quoted() {
        let mux = PathRecorderMux::new("test");
        install_checks(&mux, "/healthz", vec![], None);
        let (_, body) = get(&mux, "/healthz?verbose&exclude=b&exclude=a&exclude=ping").await;
        assert_eq!(
            body,
            "[+]ping excluded: ok\nwarn: some health checks cannot be excluded: no matches for \"a\",\"b\"\nhealthz check passed\n"
        );
    }

    #[tokio::test]
    async fn delayed_health_check() {
        let failing = named_check("test", |_| Err("fail".into()));
        let req = http::Request::get("/").body(()).unwrap().into_parts().0;
        let delayed = delayed_check(failing.clone(), Duration::from_secs(3600));
        assert_eq!(delayed.name(), "test");
        assert_eq!(delayed.check(&req), Ok(()));

        let short = delayed_check(failing, Duration::from_millis(5));
        let deadline = Instant::now() + Duration::from_secs(10);
        while short.check(&req).is_ok() {
            assert!(Instant::now() < deadline, "grace period never ended");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        assert_eq!(short.check(&req), Err("fail".into()));
    }

    #[tokio::test]
    async fn install_path_handler_with_healthy_func() {
        let healthy = Arc::new(AtomicBool::new(false));
        let calls = Arc::new(AtomicUsize::new(0));
        let mux = PathRecorderMux::new("test");
        let h = healthy.clone();
        let check = named_check("toggle", move |_| {
            if h.load(Ordering::SeqCst) {
                Ok(())
            } else {
                Err("not yet".into())
            }
        });
        let c = calls.clone();
        let callback: FirstHealthyCallback = Box::new(move || {
            c.fetch_add(1, Ordering::SeqCst);
        });
        install_checks(&mux, "/readyz", vec![check], Some(callback));
        assert_eq!(
            get(&mux, "/readyz").await.0,
            StatusCode::INTERNAL_SERVER_ERROR
        );
        assert_eq!(calls.load(Ordering::SeqCst), 0);
        healthy.store(true, Ordering::SeqCst);
        assert_eq!(get(&mux, "/readyz").await.0, StatusCode::OK);
        assert_eq!(get(&mux, "/readyz?verbose").await.0, StatusCode::OK);
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn get_excluded_checks() {
        let cases: &[(Option<&str>, &[&str])] = &[
            (None, &[]),
            (Some("exclude=etcd"), &["etcd"]),
            (Some("exclude=etcd&exclude=foo"), &["etcd", "foo"]),
            (Some("exclude=etcd&exclude=etcd"), &["etcd"]),
            (Some("exclude=a%2Cb"), &["a,b"]),
            (Some("verbose&exclude="), &[""]),
        ];
        for (query, want) in cases {
            let got: Vec<String> = excluded_checks(*query).into_iter().collect();
            assert_eq!(got, *want, "{query:?}");
        }
    }

    #[test]
    fn checker_names_and_format_quoted() {
        let registry = HealthRegistry::new("/healthz");
        registry
            .add_checks([named_check("b", |_| Ok(())), ping_check(), log_check()])
            .unwrap();
        assert_eq!(registry.check_names(), vec!["b", "ping", "log"]);
        let names: Vec<String> = ["b", "a", "q\"x"].iter().map(|s| s.to_string()).collect();
        assert_eq!(format_quoted(&names), r#""b","a","q\"x""#);
    }

    #[test]
    fn add_after_install_fails() {
        let mux = PathRecorderMux::new("test");
        let registry = HealthRegistry::new("/livez");
        registry.add_checks([ping_check()]).unwrap();
        registry
            .add_delayed_checks(Duration::from_secs(5), [log_check()])
            .unwrap();
        install_handler(&mux, "/livez", &registry, None);
        assert_eq!(
            mux.listed_paths(),
            vec!["/livez", "/livez/log", "/livez/ping"]
        );
        let err = registry.add_checks([ping_check()]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "unable to add because the /livez endpoint has already been created"
        );
    }

    #[test]
    fn log_check_passes_while_logging_works() {
        let req = http::Request::get("/").body(()).unwrap().into_parts().0;
        assert_eq!(log_check().check(&req), Ok(()));
        assert_eq!(log_check().name(), "log");
    }
}
