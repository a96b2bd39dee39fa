//! PUT of an object (upstream `handlers/update.go`).

use http::{StatusCode, header};

use super::create::{check_namespace, check_times, check_type, drop_unknown_fields, object_name};
use super::decode::read_object;
use super::encode::{error_response, negotiate, write_object};
use super::options::{Query, manager_or_user_agent, update_options, validate_update_options};
use super::seams::{ManagedFieldsOperation, update_managed_fields};
use super::{RequestParts, ResourceScope};
use crate::body::{Body, Response};
use crate::registry::rest::UpdateFunc;
use crate::status::ApiError;

/// `PUT …/{name}`: 200 with the updated object, 201 when the storage created it.
pub async fn update(
    scope: &ResourceScope,
    parts: RequestParts,
    body: Body,
) -> Result<Response, ApiError> {
    let output = match negotiate(scope, &parts) {
        Ok(output) => output,
        Err(err) => return Ok(error_response(&parts.headers, err)),
    };
    let mut opts = update_options(&Query::parse(parts.query()));
    let decoder = scope.config.protobuf_decoder();
    let decoded = read_object(
        body,
        parts.header(header::CONTENT_TYPE),
        scope.config.max_request_body_bytes,
        decoder.as_ref(),
    )
    .await?;
    let mut obj = decoded.value;
    validate_update_options(&opts)?;
    check_type(scope.info(), &mut obj)?;
    check_times(scope.info(), &obj)?;
    let name = parts.info.name.clone();
    let object_name = object_name(&obj).to_string();
    if object_name != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({object_name}) does not match the name on the URL ({name})"
        )));
    }
    check_namespace(scope, &parts, &mut obj)?;
    scope.with_strategy(|strategy| {
        drop_unknown_fields(
            strategy,
            &mut obj,
            &decoded.duplicates,
            &opts.field_validation,
            &parts.ctx,
        )
    })?;
    opts.field_manager = manager_or_user_agent(
        &opts.field_manager,
        parts.header(header::USER_AGENT).unwrap_or_default(),
    );
    let manager = opts.field_manager.clone();
    let subresource = scope.subresource.clone();
    let storage = scope.storage.clone();
    let update: UpdateFunc = Box::new(move |current| {
        let mut new = obj.clone();
        update_managed_fields(
            current,
            &mut new,
            &manager,
            ManagedFieldsOperation::Update,
            &subresource,
            storage.as_ref(),
        )?;
        Ok(new)
    });
    let (updated, created) =
        super::admit::update(scope, &parts, &name, update, &opts, false).await?;
    let code = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    write_object(scope, code, updated, false, &output)
}
