//! `/debug/flags`: runtime-settable debug flags, today only `v` (log verbosity) (upstream
//! `routes/flags.go`).

use std::collections::BTreeMap;
use std::sync::Arc;

use http::{HeaderValue, Method, StatusCode, header};

use crate::body::{Request, Response, full, read_limited};
use crate::filters::{HttpService, service_fn};
use crate::server::mux::PathRecorderMux;

/// Sets a flag from the request body; `Ok` is the message echoed to the client, `Err` a 400.
pub type FlagSetter = Arc<dyn Fn(&str) -> Result<String, String> + Send + Sync>;

/// Largest flag value accepted (the body of a PUT).
const MAX_FLAG_BODY: usize = 64 * 1024;

/// Upstream `writePlainText`: `text/plain` (no charset), nosniff, text plus newline.
fn plain_text(code: StatusCode, text: &str) -> Response {
    let mut response = http::Response::new(full(format!("{text}\n")));
    *response.status_mut() = code;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

/// Upstream `StringFlagPutHandler`: `PUT` passes the body to `setter`; other methods get
/// 406 `unsupported http method`.
pub fn string_flag_put_handler(setter: FlagSetter) -> HttpService {
    service_fn(move |req: Request| {
        let setter = setter.clone();
        async move {
            if req.method() != Method::PUT {
                return plain_text(StatusCode::NOT_ACCEPTABLE, "unsupported http method");
            }
            let body = match read_limited(req.into_body(), MAX_FLAG_BODY).await {
                Ok(Some(bytes)) => bytes,
                Ok(None) => {
                    return plain_text(
                        StatusCode::BAD_REQUEST,
                        "error reading request body: request body too large",
                    );
                }
                Err(err) => {
                    return plain_text(
                        StatusCode::BAD_REQUEST,
                        &format!("error reading request body: {err}"),
                    );
                }
            };
            match setter(&String::from_utf8_lossy(&body)) {
                Ok(message) => plain_text(StatusCode::OK, &message),
                Err(err) => plain_text(StatusCode::BAD_REQUEST, &err),
            }
        }
    })
}

/// A setter for the `v` flag in klog's words: parses a 32-bit integer level and hands it to
/// `apply` (upstream `logs.GlogSetter`).
pub fn verbosity_setter<F>(apply: F) -> FlagSetter
where
    F: Fn(i32) + Send + Sync + 'static,
{
    Arc::new(move |value: &str| match value.parse::<i32>() {
        Ok(level) => {
            apply(level);
            Ok(format!(
                "successfully set klog.logging.verbosity to {value}"
            ))
        }
        Err(err) => {
            let why = match err.kind() {
                std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow => {
                    "value out of range"
                }
                _ => "invalid syntax",
            };
            Err(format!(
                "failed set klog.logging.verbosity {value}: strconv.ParseInt: parsing \"{value}\": {why}"
            ))
        }
    })
}

fn flags_index(names: Vec<String>) -> HttpService {
    service_fn(move |_req: Request| {
        let mut page = String::from(
            "<html>\n<head>\n<title>/debug/flags/</title>\n</head>\n<body>\n/debug/flags/<br>\n<br>\nflags:<br>\n<table>\n",
        );
        for name in &names {
            page.push_str(&format!("<tr><a href=\"{name}\">{name}</a><br>\n"));
        }
        page.push_str("</table>\n<br>\nfull flags configurable<br>\n</body>\n</html>\n");
        let mut response = http::Response::new(full(page));
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        );
        async move { response }
    })
}

/// Installs `/debug/flags`, `/debug/flags/` (index) and `/debug/flags/<name>` per flag
/// (all unlisted).
pub fn install_debug_flags(mux: &PathRecorderMux, flags: BTreeMap<String, FlagSetter>) {
    let index = flags_index(flags.keys().cloned().collect());
    mux.unlisted_handle("/debug/flags", index.clone());
    mux.unlisted_handle("/debug/flags/", index);
    for (name, setter) in flags {
        mux.unlisted_handle(
            &format!("/debug/flags/{name}"),
            string_flag_put_handler(setter),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::full as body_full;
    use http_body_util::BodyExt;
    use std::sync::atomic::{AtomicI32, Ordering};
    use tower::ServiceExt;

    async fn call(mux: &PathRecorderMux, method: Method, body: &str) -> (StatusCode, String) {
        let req = http::Request::builder()
            .method(method)
            .uri("/debug/flags/v")
            .body(body_full(body.to_owned()))
            .unwrap();
        let resp = mux.service().oneshot(req).await.unwrap();
        assert_eq!(resp.headers()["content-type"], "text/plain");
        assert_eq!(resp.headers()["x-content-type-options"], "nosniff");
        let status = resp.status();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn verbosity_flag() {
        let level = Arc::new(AtomicI32::new(0));
        let l = level.clone();
        let mux = PathRecorderMux::new("test");
        let mut flags = BTreeMap::new();
        flags.insert(
            "v".to_owned(),
            verbosity_setter(move |v| l.store(v, Ordering::SeqCst)),
        );
        install_debug_flags(&mux, flags);
        assert_eq!(
            call(&mux, Method::PUT, "4").await,
            (
                StatusCode::OK,
                "successfully set klog.logging.verbosity to 4\n".into()
            )
        );
        assert_eq!(level.load(Ordering::SeqCst), 4);
        assert_eq!(
            call(&mux, Method::PUT, "x").await,
            (
                StatusCode::BAD_REQUEST,
                "failed set klog.logging.verbosity x: strconv.ParseInt: parsing \"x\": invalid syntax\n"
                    .into()
            )
        );
        assert_eq!(
            call(&mux, Method::GET, "").await,
            (
                StatusCode::NOT_ACCEPTABLE,
                "unsupported http method\n".into()
            )
        );
        assert!(mux.listed_paths().is_empty());
        let req = http::Request::get("/debug/flags/")
            .body(crate::body::empty())
            .unwrap();
        let resp = mux.service().oneshot(req).await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
    }
}
