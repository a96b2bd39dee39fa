//! GET of one object (upstream `handlers/get.go`).

use http::StatusCode;

use super::encode::{error_response, negotiate, write_object};
use super::options::{Query, get_options};
use super::{RequestParts, ResourceScope};
use crate::body::Response;
use crate::status::ApiError;

/// `GET …/{name}`: 200 with the object in the negotiated encoding.
pub async fn get(scope: &ResourceScope, parts: RequestParts) -> Result<Response, ApiError> {
    let output = match negotiate(scope, &parts) {
        Ok(output) => output,
        Err(err) => return Ok(error_response(&parts.headers, err)),
    };
    let opts = get_options(&Query::parse(parts.query()));
    let obj = scope
        .storage
        .get(&parts.ctx, &parts.info.name, &opts)
        .await?;
    write_object(scope, StatusCode::OK, obj, false, &output)
}
