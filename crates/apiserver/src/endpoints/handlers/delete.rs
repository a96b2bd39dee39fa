//! DELETE of one object and of a collection (upstream `handlers/delete.go`).

use http::{StatusCode, header};
use serde_json::Value;

use super::decode::{body_format, decode_value, read_body};
use super::encode::{error_response, negotiate, write_object};
use super::options::{
    Query, delete_options, list_options, validate_delete_options, validate_list_options,
};
use super::{RequestParts, ResourceScope};
use crate::body::{Body, Response};
use crate::registry::rest::DeleteOptions;
use crate::status::{ApiError, Status, StatusDetails};

/// `DeleteOptions` from the body when there is one (JSON, YAML or protobuf), else from the
/// query, as upstream reads them; then validated (422).
async fn read_delete_options(
    scope: &ResourceScope,
    parts: &RequestParts,
    body: Body,
) -> Result<DeleteOptions, ApiError> {
    let bytes = read_body(body, scope.config.max_request_body_bytes).await?;
    let opts = if bytes.is_empty() {
        delete_options(&Query::parse(parts.query()))?
    } else {
        let format = body_format(parts.header(header::CONTENT_TYPE))?;
        let decoder = scope.config.protobuf_decoder();
        let value = decode_value(format, &bytes, decoder.as_ref())?;
        serde_json::from_value(value).map_err(|err| {
            ApiError::bad_request(format!(
                "couldn't decode DeleteOptions from the request body: {err}"
            ))
        })?
    };
    validate_delete_options(&opts)?;
    Ok(opts)
}

/// `DELETE …/{name}`: 200 with the deleted object (or a Success Status), 202 when it was only
/// marked for deletion and `orphanDependents=false` was asked.
pub async fn delete(
    scope: &ResourceScope,
    parts: RequestParts,
    body: Body,
) -> Result<Response, ApiError> {
    let output = match negotiate(scope, &parts) {
        Ok(output) => output,
        Err(err) => return Ok(error_response(&parts.headers, err)),
    };
    let opts = read_delete_options(scope, &parts, body).await?;
    let name = parts.info.name.clone();
    let (obj, deleted_now) = super::admit::delete(scope, &parts, &name, &opts).await?;
    let code = if !deleted_now && opts.orphan_dependents == Some(false) {
        StatusCode::ACCEPTED
    } else {
        StatusCode::OK
    };
    let obj = if obj.is_null() {
        success_status(code, &name, &scope.info().kind)
    } else {
        obj
    };
    write_object(scope, code, obj, false, &output)
}

/// `DELETE <collection>`: 200 with the list of deleted objects (or a Success Status).
pub async fn delete_collection(
    scope: &ResourceScope,
    parts: RequestParts,
    body: Body,
) -> Result<Response, ApiError> {
    let output = match negotiate(scope, &parts) {
        Ok(output) => output,
        Err(err) => return Ok(error_response(&parts.headers, err)),
    };
    let query = Query::parse(parts.query());
    let list_opts = list_options(&query)?;
    validate_list_options(&list_opts)?;
    if query
        .get("ignoreStoreReadErrorWithClusterBreakingPotential")
        .is_some_and(|v| v == "true")
    {
        return Err(crate::registry::invalid(
            &crate::registry::ResourceInfo {
                group: "meta.k8s.io".into(),
                kind: "DeleteOptions".into(),
                ..Default::default()
            },
            "",
            &[crate::registry::FieldError::invalid(
                "ignoreStoreReadErrorWithClusterBreakingPotential",
                true,
                "is not allowed with DELETECOLLECTION, try again after removing the option",
            )],
        ));
    }
    let opts = read_delete_options(scope, &parts, body).await?;
    let ctx = super::admit::delete_collection_context(scope, &parts, &opts).await?;
    let list = scope
        .storage
        .delete_collection(&ctx, &opts, &list_opts)
        .await?;
    if list.is_null() {
        let status = success_status(StatusCode::OK, "", &scope.info().kind);
        return write_object(scope, StatusCode::OK, status, false, &output);
    }
    write_object(scope, StatusCode::OK, list, true, &output)
}

/// `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","details":{…},"code":N}`.
fn success_status(code: StatusCode, name: &str, kind: &str) -> Value {
    let status = Status {
        kind: "Status".into(),
        api_version: "v1".into(),
        status: "Success".into(),
        details: Some(StatusDetails {
            name: name.into(),
            kind: kind.into(),
            ..Default::default()
        }),
        code: i32::from(code.as_u16()),
        ..Default::default()
    };
    serde_json::to_value(status).unwrap_or(Value::Null)
}
