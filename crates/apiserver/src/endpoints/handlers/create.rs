//! POST of a new object (upstream `handlers/create.go`), and the object checks that create,
//! update and patch share.

use http::{StatusCode, header};
use serde_json::Value;

use super::decode::read_object;
use super::encode::{error_response, negotiate, write_object};
use super::options::{Query, create_options, manager_or_user_agent, validate_create_options};
use super::seams::{ManagedFieldsOperation, update_managed_fields};
use super::{RequestParts, ResourceScope};
use crate::body::{Body, Response};
use crate::registry::rest::RequestContext;
use crate::registry::{FieldError, ResourceInfo, Strategy, invalid};
use crate::status::ApiError;

/// `POST <collection>`: 201 with the created object.
pub async fn create(
    scope: &ResourceScope,
    parts: RequestParts,
    body: Body,
) -> Result<Response, ApiError> {
    let output = match negotiate(scope, &parts) {
        Ok(output) => output,
        Err(err) => return Ok(error_response(&parts.headers, err)),
    };
    let mut opts = create_options(&Query::parse(parts.query()));
    let decoder = scope.config.protobuf_decoder();
    let decoded = read_object(
        body,
        parts.header(header::CONTENT_TYPE),
        scope.config.max_request_body_bytes,
        decoder.as_ref(),
    )
    .await?;
    let mut obj = decoded.value;
    validate_create_options(&opts)?;
    // A body of another version the storage accepts (upstream `GroupVersionAcceptor`) is
    // checked against that version.
    let accepted = obj
        .get("apiVersion")
        .and_then(Value::as_str)
        .filter(|v| *v != scope.info().api_version() && scope.storage.accepts_group_version(v))
        .map(str::to_string);
    match accepted {
        Some(api_version) => {
            let mut info = scope.info().clone();
            info.version = api_version
                .rsplit('/')
                .next()
                .unwrap_or_default()
                .to_string();
            check_type(&info, &mut obj)?;
        }
        None => check_type(scope.info(), &mut obj)?,
    }
    check_times(scope.info(), &obj)?;
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
    update_managed_fields(
        None,
        &mut obj,
        &opts.field_manager,
        ManagedFieldsOperation::Update,
        &scope.subresource,
        scope.storage.as_ref(),
    )?;
    let created = super::admit::create(scope, &parts, obj, &opts).await?;
    write_object(scope, StatusCode::CREATED, created, false, &output)
}

/// The body must be an object of the resource's kind and version; missing `apiVersion` and
/// `kind` are defaulted (upstream decodes with the endpoint's kind as default).
pub fn check_type(info: &ResourceInfo, obj: &mut Value) -> Result<(), ApiError> {
    let expected_version = info.api_version();
    let Some(map) = obj.as_object_mut() else {
        return Err(ApiError::bad_request(format!(
            "{kind} in version {version:?} cannot be handled as a {kind}: the body is not a JSON object",
            kind = info.kind,
            version = info.version
        )));
    };
    match map.get("apiVersion").and_then(Value::as_str) {
        None | Some("") => {
            map.insert("apiVersion".into(), Value::String(expected_version));
        }
        Some(version) if version != expected_version => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({version}) does not match the expected API version ({expected_version})"
            )));
        }
        Some(_) => {}
    }
    match map.get("kind").and_then(Value::as_str) {
        None | Some("") => {
            map.insert("kind".into(), Value::String(info.kind.clone()));
        }
        Some(kind) if kind != info.kind => {
            return Err(ApiError::bad_request(format!(
                "{expected} in version {version:?} cannot be handled as a {expected}: the kind in the data ({kind}) does not match the expected kind ({expected})",
                expected = info.kind,
                version = info.version
            )));
        }
        Some(_) => {}
    }
    Ok(())
}

/// The `metav1.Time` fields every object has (`metadata.creationTimestamp`,
/// `metadata.deletionTimestamp`, `metadata.managedFields[].time`) must decode as upstream's
/// typed decoding reads them: 400 `<Kind> in version "<v>" cannot be handled as a <Kind>:
/// parsing time "x" as "2006-01-02T15:04:05Z07:00": cannot parse "x" as "2006"`.
pub fn check_times(info: &ResourceInfo, obj: &Value) -> Result<(), ApiError> {
    let Some(meta) = obj.get("metadata").and_then(Value::as_object) else {
        return Ok(());
    };
    let managed = meta
        .get("managedFields")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.get("time"));
    let times = ["creationTimestamp", "deletionTimestamp"]
        .iter()
        .filter_map(|field| meta.get(*field))
        .chain(managed);
    for time in times {
        if let Err(err) = crate::util::gotime::check_time_value(time) {
            return Err(ApiError::bad_request(format!(
                "{kind} in version {version:?} cannot be handled as a {kind}: {err}",
                kind = info.kind,
                version = info.version
            )));
        }
    }
    Ok(())
}

/// The object's namespace must match the URL's (400 otherwise); an empty one is set from the
/// URL for namespaced resources.
pub fn check_namespace(
    scope: &ResourceScope,
    parts: &RequestParts,
    obj: &mut Value,
) -> Result<(), ApiError> {
    let url_namespace = parts.info.namespace.as_str();
    let meta = metadata_mut(obj)?;
    let object_namespace = meta
        .get("namespace")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if !object_namespace.is_empty() && object_namespace != url_namespace {
        // Cluster-scoped objects carry no namespace; upstream clears one later, it does not
        // reject it here.
        if !scope.info().namespaced {
            return Ok(());
        }
        return Err(ApiError::bad_request(format!(
            "the namespace of the object ({object_namespace}) does not match the namespace on the request ({url_namespace})"
        )));
    }
    if object_namespace.is_empty() && scope.info().namespaced && !url_namespace.is_empty() {
        meta.insert("namespace".into(), Value::String(url_namespace.to_string()));
    }
    Ok(())
}

/// `metadata` of `obj` as a map (created when missing or not an object); 400 when `obj` is
/// not an object at all.
pub fn metadata_mut(obj: &mut Value) -> Result<&mut serde_json::Map<String, Value>, ApiError> {
    let root = obj
        .as_object_mut()
        .ok_or_else(|| ApiError::bad_request("the body is not a JSON object"))?;
    let meta = root.entry("metadata").or_insert(Value::Null);
    if !meta.is_object() {
        *meta = Value::Object(Default::default());
    }
    meta.as_object_mut()
        .ok_or_else(|| ApiError::bad_request("metadata is not a JSON object"))
}

/// `metadata.name` of `obj` (empty when missing).
pub fn object_name(obj: &Value) -> &str {
    obj.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Drops the fields of a create or update body that the type does not declare (they are
/// never stored) and applies `fieldValidation` to them and to duplicate fields: `Strict` → 400
/// `<Kind> in version "<v>" cannot be handled as a <Kind>: strict decoding error: duplicate
/// field "x", unknown field "spec.x", …`; `Warn` (the default) → one `Warning` per field;
/// `Ignore` → nothing.
pub fn drop_unknown_fields(
    strategy: &dyn Strategy,
    obj: &mut Value,
    duplicates: &[String],
    field_validation: &str,
    ctx: &RequestContext,
) -> Result<(), ApiError> {
    let unknown = strategy.drop_unknown_fields(obj);
    if field_validation == "Ignore" || (unknown.is_empty() && duplicates.is_empty()) {
        return Ok(());
    }
    let texts: Vec<String> = duplicates
        .iter()
        .map(|f| format!("duplicate field {f:?}"))
        .chain(unknown.iter().map(|f| format!("unknown field {f:?}")))
        .collect();
    if field_validation == "Strict" {
        let info = strategy.info();
        return Err(ApiError::bad_request(format!(
            "{kind} in version {version:?} cannot be handled as a {kind}: strict decoding error: {errors}",
            kind = info.kind,
            version = info.version,
            errors = texts.join(", ")
        )));
    }
    for text in &texts {
        ctx.warn(text);
    }
    Ok(())
}

/// Drops the fields of a patched object that the type does not declare, with
/// `fieldValidation`: `Strict` → 422 ` "" is invalid: patch: Invalid value: "<patched JSON>":
/// strict decoding error: …` (upstream reports it against an empty GroupKind and name, with
/// the object as patched), `Warn` → warnings.
pub fn drop_patched_unknown_fields(
    strategy: &dyn Strategy,
    obj: &mut Value,
    field_validation: &str,
    ctx: &RequestContext,
) -> Result<(), ApiError> {
    let strict = field_validation == "Strict";
    let as_patched = strict.then(|| serde_json::to_string(obj).unwrap_or_default());
    let unknown = strategy.drop_unknown_fields(obj);
    if unknown.is_empty() || field_validation == "Ignore" {
        return Ok(());
    }
    let texts: Vec<String> = unknown
        .iter()
        .map(|f| format!("unknown field {f:?}"))
        .collect();
    if let Some(patched) = as_patched {
        return Err(invalid(
            &ResourceInfo::default(),
            "",
            &[FieldError::invalid(
                "patch",
                patched,
                &format!("strict decoding error: {}", texts.join(", ")),
            )],
        ));
    }
    for text in &texts {
        ctx.warn(text);
    }
    Ok(())
}
