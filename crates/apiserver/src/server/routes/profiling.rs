//! `/debug/pprof`: CPU profiling in Go's `profile.proto` format, so `go tool pprof` reads it
//! (upstream `routes/profiling.go` over `net/http/pprof`).
//!
//! Only the CPU profile exists here; Go's runtime profiles (heap, goroutine, …) answer 404
//! `Unknown profile` as Go does for a name it does not know, and execution traces answer 500.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use http::{HeaderValue, Method, StatusCode, header};

use crate::body::{Request, Response, full};
use crate::filters::{HttpService, service_fn};
use crate::server::mux::PathRecorderMux;

/// Profile length when `?seconds` is missing, invalid or not positive (Go's default).
pub const DEFAULT_PROFILE_SECONDS: u64 = 30;
/// The longest CPU profile we take (upstream refuses durations beyond the write timeout).
pub const MAX_PROFILE_SECONDS: u64 = 600;
/// Samples per second (Go's default CPU profile rate).
const PROFILE_FREQUENCY: i32 = 100;

/// Whether a CPU profile is being taken (one at a time, like Go).
static PROFILING: AtomicBool = AtomicBool::new(false);

fn set_header(response: &mut Response, name: header::HeaderName, value: &'static str) {
    response
        .headers_mut()
        .insert(name, HeaderValue::from_static(value));
}

/// Go pprof's `serveError`: text, `X-Go-Pprof: 1`, nosniff.
fn serve_error(code: StatusCode, text: &str) -> Response {
    let mut response = http::Response::new(full(format!("{text}\n")));
    *response.status_mut() = code;
    set_header(
        &mut response,
        header::CONTENT_TYPE,
        crate::body::TEXT_PLAIN_UTF8,
    );
    set_header(&mut response, header::X_CONTENT_TYPE_OPTIONS, "nosniff");
    response
        .headers_mut()
        .insert("x-go-pprof", HeaderValue::from_static("1"));
    response
}

fn text(body: String) -> Response {
    let mut response = http::Response::new(full(body));
    set_header(
        &mut response,
        header::CONTENT_TYPE,
        crate::body::TEXT_PLAIN_UTF8,
    );
    set_header(&mut response, header::X_CONTENT_TYPE_OPTIONS, "nosniff");
    response
}

/// Go's `http.Redirect(w, r, to, 302)` for a GET: HTML body and `Location`.
pub fn redirect_handler(to: &'static str) -> HttpService {
    service_fn(move |req: Request| {
        let mut response = if req.method() == Method::GET || req.method() == Method::HEAD {
            let mut r = http::Response::new(full(format!("<a href=\"{to}\">Found</a>.\n\n")));
            set_header(&mut r, header::CONTENT_TYPE, "text/html; charset=utf-8");
            r
        } else {
            http::Response::new(crate::body::empty())
        };
        *response.status_mut() = StatusCode::FOUND;
        set_header(&mut response, header::LOCATION, to);
        async move { response }
    })
}

fn query_value<'a>(req: &'a Request, key: &str) -> Option<&'a str> {
    req.uri().query().and_then(|q| {
        q.split('&')
            .filter_map(|kv| kv.split_once('=').or(Some((kv, ""))))
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v)
    })
}

const INDEX_PAGE: &str = "<html>\n<head>\n<title>/debug/pprof/</title>\n</head>\n<body>\n/debug/pprof/\n<br>\n<br>\nTypes of profiles available:\n<table>\n<thead><td>Count</td><td>Profile</td></thead>\n<tr><td></td><td><a href='profile'>profile</a></td></tr>\n</table>\n<br>\n<p>\nProfile Descriptions:\n<ul>\n<li><div class=profile-name>profile: </div> CPU profile. You can specify the duration in the seconds GET parameter. After you get the profile file, use the go tool pprof command to investigate the profile.</li>\n</ul>\n</p>\n</body>\n</html>\n";

/// `/debug/pprof/` and every `/debug/pprof/<name>` without its own route.
pub fn index_handler() -> HttpService {
    service_fn(|req: Request| {
        let name = req
            .uri()
            .path()
            .strip_prefix("/debug/pprof/")
            .unwrap_or_default()
            .to_owned();
        async move {
            if name.is_empty() {
                let mut response = http::Response::new(full(INDEX_PAGE));
                set_header(
                    &mut response,
                    header::CONTENT_TYPE,
                    "text/html; charset=utf-8",
                );
                set_header(&mut response, header::X_CONTENT_TYPE_OPTIONS, "nosniff");
                response
            } else {
                serve_error(StatusCode::NOT_FOUND, "Unknown profile")
            }
        }
    })
}

/// Clears [`PROFILING`] when the profile ends, including when the client goes away and the
/// handler future is dropped.
struct ProfilingSlot;

impl ProfilingSlot {
    fn acquire() -> Option<Self> {
        PROFILING
            .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
            .ok()
            .map(|_| ProfilingSlot)
    }
}

impl Drop for ProfilingSlot {
    fn drop(&mut self) {
        PROFILING.store(false, Ordering::SeqCst);
    }
}

/// Errors while producing a CPU profile.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// The profiler failed.
    #[error("{0}")]
    Pprof(#[from] pprof::Error),
    /// Compressing the profile failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Takes a CPU profile for `duration` and returns it gzip-compressed (`profile.proto`).
pub async fn cpu_profile(duration: Duration) -> Result<Vec<u8>, ProfileError> {
    use pprof::protos::Message;
    let guard = pprof::ProfilerGuardBuilder::default()
        .frequency(PROFILE_FREQUENCY)
        // Unwinding through these from the signal handler is unsafe or useless.
        .blocklist(&["libc", "libgcc", "pthread", "vdso"])
        .build()?;
    tokio::time::sleep(duration).await;
    let report = guard.report().build()?;
    drop(guard);
    let profile = report.pprof()?;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(&profile.encode_to_vec())?;
    Ok(encoder.finish()?)
}

/// `/debug/pprof/profile?seconds=N`.
pub fn profile_handler() -> HttpService {
    service_fn(|req: Request| {
        let seconds = query_value(&req, "seconds")
            .and_then(|s| s.parse::<i64>().ok())
            .filter(|s| *s > 0)
            .map_or(DEFAULT_PROFILE_SECONDS, |s| s.unsigned_abs());
        async move {
            if seconds > MAX_PROFILE_SECONDS {
                return serve_error(
                    StatusCode::BAD_REQUEST,
                    "profile duration exceeds server's WriteTimeout",
                );
            }
            let Some(_slot) = ProfilingSlot::acquire() else {
                return serve_error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "Could not enable CPU profiling: cpu profiling already in use",
                );
            };
            match cpu_profile(Duration::from_secs(seconds)).await {
                Ok(bytes) => {
                    let mut response = http::Response::new(full(bytes));
                    set_header(
                        &mut response,
                        header::CONTENT_TYPE,
                        "application/octet-stream",
                    );
                    set_header(
                        &mut response,
                        header::CONTENT_DISPOSITION,
                        "attachment; filename=\"profile\"",
                    );
                    set_header(&mut response, header::X_CONTENT_TYPE_OPTIONS, "nosniff");
                    response
                }
                Err(err) => serve_error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    &format!("Could not enable CPU profiling: {err}"),
                ),
            }
        }
    })
}

/// `/debug/pprof/symbol`: reports symbol lookup as available; addresses are not resolved.
pub fn symbol_handler() -> HttpService {
    service_fn(|_req: Request| async { text("num_symbols: 1\n".to_owned()) })
}

/// `/debug/pprof/trace`: Go execution traces have no equivalent here.
pub fn trace_handler() -> HttpService {
    service_fn(|_req: Request| async {
        serve_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "Could not enable tracing: execution traces are not supported by this server",
        )
    })
}

/// `/debug/pprof/cmdline`: the arguments joined by NUL (debug socket only).
pub fn cmdline_handler() -> HttpService {
    service_fn(|_req: Request| async { text(std::env::args().collect::<Vec<_>>().join("\0")) })
}

/// Installs the profiling routes (all unlisted). `with_cmdline` adds `/debug/pprof/cmdline`,
/// which the secure port does not expose.
pub fn install_profiling(mux: &PathRecorderMux, with_cmdline: bool) {
    mux.unlisted_handle("/debug/pprof", redirect_handler("/debug/pprof/"));
    if let Err(err) = mux.unlisted_handle_prefix("/debug/pprof/", index_handler()) {
        // The literal above ends with a slash; this cannot happen.
        tracing::error!(%err, "cannot install the pprof index");
    }
    mux.unlisted_handle("/debug/pprof/profile", profile_handler());
    mux.unlisted_handle("/debug/pprof/symbol", symbol_handler());
    mux.unlisted_handle("/debug/pprof/trace", trace_handler());
    if with_cmdline {
        mux.unlisted_handle("/debug/pprof/cmdline", cmdline_handler());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::empty;
    use http_body_util::BodyExt;
    use std::io::Read;
    use tower::ServiceExt;

    async fn get(mux: &PathRecorderMux, uri: &str) -> Response {
        let req = http::Request::get(uri).body(empty()).unwrap();
        mux.service().oneshot(req).await.unwrap()
    }

    async fn body(resp: Response) -> Vec<u8> {
        resp.into_body()
            .collect()
            .await
            .unwrap()
            .to_bytes()
            .to_vec()
    }

    #[tokio::test]
    async fn routes() {
        let mux = PathRecorderMux::new("test");
        install_profiling(&mux, false);
        assert!(mux.listed_paths().is_empty());

        let resp = get(&mux, "/debug/pprof").await;
        assert_eq!(resp.status(), StatusCode::FOUND);
        assert_eq!(resp.headers()["location"], "/debug/pprof/");
        assert_eq!(
            body(resp).await,
            b"<a href=\"/debug/pprof/\">Found</a>.\n\n"
        );

        let resp = get(&mux, "/debug/pprof/").await;
        assert_eq!(resp.status(), StatusCode::OK);
        assert!(
            String::from_utf8(body(resp).await)
                .unwrap()
                .contains("profile")
        );

        let resp = get(&mux, "/debug/pprof/cmdline").await;
        assert_eq!(resp.status(), StatusCode::NOT_FOUND);
        assert_eq!(resp.headers()["x-go-pprof"], "1");
        assert_eq!(body(resp).await, b"Unknown profile\n");

        let resp = get(&mux, "/debug/pprof/profile?seconds=100000").await;
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST);

        let resp = get(&mux, "/debug/pprof/symbol").await;
        assert_eq!(body(resp).await, b"num_symbols: 1\n");

        let with_cmdline = PathRecorderMux::new("socket");
        install_profiling(&with_cmdline, true);
        assert_eq!(
            get(&with_cmdline, "/debug/pprof/cmdline").await.status(),
            StatusCode::OK
        );
    }

    #[tokio::test]
    async fn cpu_profile_is_gzipped_protobuf() {
        let mux = PathRecorderMux::new("test");
        install_profiling(&mux, false);
        let resp = get(&mux, "/debug/pprof/profile?seconds=1").await;
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(resp.headers()["content-type"], "application/octet-stream");
        let bytes = body(resp).await;
        assert_eq!(&bytes[..2], &[0x1f, 0x8b], "gzip magic");
        let mut decoded = Vec::new();
        flate2::read::GzDecoder::new(&bytes[..])
            .read_to_end(&mut decoded)
            .unwrap();
        use pprof::protos::Message;
        let profile = pprof::protos::Profile::decode(&decoded[..]).unwrap();
        assert!(!profile.sample_type.is_empty());
    }
}
