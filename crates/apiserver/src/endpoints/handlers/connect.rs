//! Connect subresources (upstream `handlers/rest.go` `ConnectResource`, and the streaming
//! answer of `responsewriters.StreamObject`): the storage decides from the verb and the raw
//! query; failures are `Status` errors written as any other.

use http::{HeaderValue, StatusCode, header};

use super::{RequestParts, ResourceScope};
use crate::body::{Response, empty, full};
use crate::registry::rest::{ConnectRequest, ConnectResponse};
use crate::status::ApiError;

/// `GET`/`POST …/{name}/{subresource}` of a connect subresource.
pub async fn connect(scope: &ResourceScope, parts: RequestParts) -> Result<Response, ApiError> {
    let request = ConnectRequest {
        verb: parts.info.verb.clone(),
        query: parts.query().to_string(),
    };
    let options = scope.storage.connect_options(&request);
    let ctx = super::admit::connect(scope, &parts, options).await?;
    let answer = scope
        .storage
        .connect(&ctx, &parts.info.name, &request)
        .await?;
    Ok(match answer {
        // Upstream's null stream: 204 and nothing else.
        ConnectResponse::Empty => {
            let mut response = http::Response::new(empty());
            *response.status_mut() = StatusCode::NO_CONTENT;
            response
        }
        ConnectResponse::Stream { content_type, body } => {
            let mut response = http::Response::new(full(body));
            let value = HeaderValue::from_str(&content_type)
                .unwrap_or(HeaderValue::from_static("application/octet-stream"));
            response.headers_mut().insert(header::CONTENT_TYPE, value);
            response
        }
    })
}
