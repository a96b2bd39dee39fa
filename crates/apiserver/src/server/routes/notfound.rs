//! The end-of-chain not-found handler (upstream `pkg/util/notfoundhandler`): while not all paths
//! are installed a miss may be a path that is about to appear, so clients are told to retry.

use http::StatusCode;

use crate::body::{Request, Response, go_not_found};
use crate::filters::{HttpService, service_fn};
use crate::request::MuxAndDiscoveryIncomplete;
use crate::status::{Status, StatusDetails, reason};

/// The 503 message while the mux and discovery are incomplete.
pub const NOT_READY_MESSAGE: &str =
    "the request has been made before all known HTTP paths have been installed, please try again";

/// Answers one unmatched request.
pub fn not_found(req: &Request) -> Response {
    if req
        .extensions()
        .get::<MuxAndDiscoveryIncomplete>()
        .is_some()
    {
        return Status::failure(
            StatusCode::SERVICE_UNAVAILABLE,
            reason::SERVICE_UNAVAILABLE,
            NOT_READY_MESSAGE,
        )
        .with_details(StatusDetails {
            retry_after_seconds: 5,
            ..StatusDetails::default()
        })
        .into_response();
    }
    go_not_found()
}

/// The not-found handler as a service.
pub fn not_found_handler() -> HttpService {
    service_fn(|req: Request| {
        let response = not_found(&req);
        async move { response }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::empty;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    #[tokio::test]
    async fn not_found_handler_cases() {
        let req = http::Request::get("/apis/g/v/foo").body(empty()).unwrap();
        let resp = not_found_handler().oneshot(req).await.unwrap();
        assert_eq!(resp.status(), StatusCode::NOT_FOUND);
        assert_eq!(resp.headers()["content-type"], "text/plain; charset=utf-8");
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(&body[..], b"404 page not found\n");

        let mut req = http::Request::get("/apis/g/v/foo").body(empty()).unwrap();
        req.extensions_mut().insert(MuxAndDiscoveryIncomplete);
        let resp = not_found_handler().oneshot(req).await.unwrap();
        assert_eq!(resp.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(resp.headers()["retry-after"], "5");
        assert_eq!(resp.headers()["content-type"], "application/json");
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(
            std::str::from_utf8(&body).unwrap(),
            "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"the request has been made before all known HTTP paths have been installed, please try again\",\"reason\":\"ServiceUnavailable\",\"details\":{\"retryAfterSeconds\":5},\"code\":503}\n"
        );
    }
}
