//! LIST of a collection (upstream `handlers/get.go ListResource`); watches go to
//! [`super::watch`].

use http::StatusCode;

use super::encode::{Transform, error_response, negotiate, response, write_object};
use super::options::{Query, list_options, validate_list_options};
use super::{RequestParts, ResourceScope};
use crate::body::Response;
use crate::endpoints::negotiation::JSON;
use crate::status::ApiError;
use crate::util::gojson;

/// `GET <collection>`: 200 with the `<Kind>List` (or its Table / PartialObjectMetadataList).
pub async fn list(scope: &ResourceScope, parts: RequestParts) -> Result<Response, ApiError> {
    let output = match negotiate(scope, &parts) {
        Ok(output) => output,
        Err(err) => return Ok(error_response(&parts.headers, err)),
    };
    let opts = list_options(&Query::parse(parts.query()))?;
    validate_list_options(&opts)?;
    // JSON of the object itself: storages that can write the list from the stored bytes skip
    // decoding every item into a value and encoding it again (pretty output is indented from
    // the compact bytes, as Go's MarshalIndent does).
    if output.transform == Transform::None
        && output.serializer.media_type == JSON.media_type
        && let Some(body) = scope.storage.list_json(&parts.ctx, &opts).await?
    {
        let body = if output.pretty {
            gojson::indent(&body)
        } else {
            body
        };
        return Ok(response(StatusCode::OK, body, &output));
    }
    let list = scope.storage.list(&parts.ctx, &opts).await?;
    write_object(scope, StatusCode::OK, list, true, &output)
}
