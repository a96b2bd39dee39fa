//! PATCH (upstream `handlers/patch.go`): JSON patch, JSON merge patch, strategic merge patch
//! and server-side apply (through [`super::seams::apply`]).

use http::{StatusCode, header};
use serde_json::Value;

use super::create::{check_type, drop_patched_unknown_fields, object_name};
use super::decode::{decode_yaml, media_type, read_body, unsupported_media_type};
use super::encode::{error_response, negotiate, write_object};
use super::options::{Query, force, manager_or_user_agent, update_options, validate_patch_options};
use super::seams::{self, ApplyRequest, ManagedFieldsOperation, update_managed_fields};
use super::{RequestParts, ResourceScope};
use crate::body::{Body, Response};
use crate::endpoints::patch::{NoMeta, PatchError, SchemaPatchMeta, apply_strategic_merge_patch};
use crate::registry::ResourceInfo;
use crate::registry::rest::{RestStorage, UpdateFunc};
use crate::status::{ApiError, StatusCause, StatusDetails, reason};

/// The patch types, by `Content-Type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchType {
    /// `application/json-patch+json` (RFC 6902).
    Json,
    /// `application/merge-patch+json` (RFC 7386).
    Merge,
    /// `application/strategic-merge-patch+json`.
    StrategicMerge,
    /// `application/apply-patch+yaml` (server-side apply).
    Apply,
}

impl PatchType {
    /// The type a `Content-Type` names.
    pub fn from_content_type(content_type: Option<&str>) -> Option<Self> {
        match media_type(content_type).as_str() {
            "application/json-patch+json" => Some(PatchType::Json),
            "application/merge-patch+json" => Some(PatchType::Merge),
            "application/strategic-merge-patch+json" => Some(PatchType::StrategicMerge),
            "application/apply-patch+yaml" => Some(PatchType::Apply),
            _ => None,
        }
    }
}

/// The 415 for a patch type the resource does not take, listing the ones it does.
fn unsupported_patch(strategic: bool) -> ApiError {
    let accepted = if strategic {
        "application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml"
    } else {
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    };
    unsupported_media_type(accepted)
}

/// A strategic merge patch error as upstream's PATCH handler answers it.
fn patch_error(err: &PatchError) -> ApiError {
    let code = err.status_code();
    match code {
        StatusCode::BAD_REQUEST => ApiError::bad_request(err.to_string()),
        StatusCode::UNPROCESSABLE_ENTITY => ApiError::new(code, reason::INVALID, err.to_string()),
        _ => ApiError::new(code, "", err.to_string()),
    }
}

/// Upstream answers a JSON patch that does not apply with a generic 422.
fn json_patch_failed(err: &json_patch::PatchError) -> ApiError {
    ApiError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        reason::INVALID,
        "the server rejected our request due to an error in our request",
    )
    .with_details(StatusDetails {
        causes: vec![StatusCause {
            reason: "UnexpectedServerResponse".into(),
            message: err.to_string(),
            ..Default::default()
        }],
        ..Default::default()
    })
}

/// An applied configuration must name exactly the endpoint's group, version and kind:
/// upstream's apply (`versionCheckManager`) answers 400 `invalid object type: <gvk>` otherwise,
/// also when `apiVersion` or `kind` is missing.
fn check_apply_type(info: &ResourceInfo, applied: &Value) -> Result<(), ApiError> {
    let field = |key: &str| applied.get(key).and_then(Value::as_str).unwrap_or_default();
    let (group, version) = crate::registry::store::meta::parse_group_version(field("apiVersion"));
    let kind = field("kind");
    if group == info.group && version == info.version && kind == info.kind {
        return Ok(());
    }
    Err(ApiError::bad_request(format!(
        "invalid object type: {group}/{version}, Kind={kind}"
    )))
}

/// The decoded patch document.
enum PatchBody {
    Json(json_patch::Patch),
    Object(Value),
}

/// Upstream's cap on the operations of one JSON patch (`maxJSONPatchOperations`).
pub const MAX_JSON_PATCH_OPERATIONS: usize = 10000;

/// What Go's JSON decoder says of `bytes`, where it has an equivalent of serde_json's error.
fn json_error(bytes: &[u8], err: &serde_json::Error) -> String {
    crate::util::gojson::syntax_error_text(bytes, err).unwrap_or_else(|| err.to_string())
}

fn decode_patch(patch_type: PatchType, bytes: &[u8]) -> Result<PatchBody, ApiError> {
    match patch_type {
        PatchType::Json => {
            // Syntax first, as Go's decoder checks the whole document before decoding it.
            let value: Value = serde_json::from_slice(bytes).map_err(|err| {
                ApiError::bad_request(format!("error decoding patch: {}", json_error(bytes, &err)))
            })?;
            let ops = serde_json::from_value::<json_patch::Patch>(value)
                .map_err(|err| ApiError::bad_request(format!("error decoding patch: {err}")))?;
            if ops.0.len() > MAX_JSON_PATCH_OPERATIONS {
                return Err(ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    reason::REQUEST_ENTITY_TOO_LARGE,
                    format!(
                        "Request entity too large: The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {}",
                        ops.0.len()
                    ),
                ));
            }
            Ok(PatchBody::Json(ops))
        }
        PatchType::Merge | PatchType::StrategicMerge => {
            // Upstream's strict decoding of a merge patch says `error decoding patch: …`; a
            // strategic merge patch's says only what the JSON decoder said.
            let value: Value = serde_json::from_slice(bytes).map_err(|err| {
                let text = json_error(bytes, &err);
                ApiError::bad_request(match patch_type {
                    PatchType::StrategicMerge => text,
                    _ => format!("error decoding patch: {text}"),
                })
            })?;
            if !value.is_object() {
                return Err(ApiError::bad_request(
                    "error decoding patch: the patch is not a JSON object",
                ));
            }
            Ok(PatchBody::Object(value))
        }
        PatchType::Apply => {
            let value = decode_yaml(bytes)?;
            if !value.is_object() {
                return Err(ApiError::bad_request(
                    "error decoding patch: the applied configuration is not an object",
                ));
            }
            Ok(PatchBody::Object(value))
        }
    }
}

/// Applies a non-apply patch to `current`.
fn apply_patch(
    storage: &dyn RestStorage,
    patch_type: PatchType,
    patch: &PatchBody,
    current: &Value,
) -> Result<Value, ApiError> {
    match (patch_type, patch) {
        (PatchType::Json, PatchBody::Json(ops)) => {
            let mut doc = current.clone();
            json_patch::patch(&mut doc, ops).map_err(|err| json_patch_failed(&err))?;
            Ok(doc)
        }
        (PatchType::Merge, PatchBody::Object(patch)) => {
            let mut doc = current.clone();
            json_patch::merge(&mut doc, patch);
            Ok(doc)
        }
        (PatchType::StrategicMerge, PatchBody::Object(patch)) => {
            match storage.strategy().and_then(|s| s.patch_schema()) {
                Some((document, definition)) => {
                    let meta = SchemaPatchMeta::for_definition(&document, &definition)
                        .map_err(|err| patch_error(&err))?;
                    apply_strategic_merge_patch(current, patch, &meta)
                }
                None => apply_strategic_merge_patch(current, patch, &NoMeta),
            }
            .map_err(|err| patch_error(&err))
        }
        _ => Err(ApiError::internal("patch body does not match its type")),
    }
}

/// `PATCH …/{name}`: 200 with the patched object; apply creates a missing object (201), the
/// other types answer 404 for it.
pub async fn patch(
    scope: &ResourceScope,
    parts: RequestParts,
    body: Body,
) -> Result<Response, ApiError> {
    let output = match negotiate(scope, &parts) {
        Ok(output) => output,
        Err(err) => return Ok(error_response(&parts.headers, err)),
    };
    let strategic = scope.with_strategy(|s| s.supports_strategic_merge_patch());
    let patch_type = match PatchType::from_content_type(parts.header(header::CONTENT_TYPE)) {
        Some(PatchType::StrategicMerge) if !strategic => return Err(unsupported_patch(false)),
        Some(patch_type) => patch_type,
        None => return Err(unsupported_patch(strategic)),
    };
    let query = Query::parse(parts.query());
    let mut opts = update_options(&query);
    let force = force(&query);
    let is_apply = patch_type == PatchType::Apply;
    validate_patch_options(&opts, force, is_apply)?;
    let bytes = read_body(body, scope.config.max_request_body_bytes).await?;
    let patch = decode_patch(patch_type, &bytes)?;
    if !is_apply {
        opts.field_manager = manager_or_user_agent(
            &opts.field_manager,
            parts.header(header::USER_AGENT).unwrap_or_default(),
        );
    }

    let name = parts.info.name.clone();
    let storage = scope.storage.clone();
    let info = scope.info().clone();
    let subresource = scope.subresource.clone();
    let manager = opts.field_manager.clone();
    let validation = opts.field_validation.clone();
    let ctx = parts.ctx.clone();
    let namespace = parts.info.namespace.clone();
    let force = force.unwrap_or(false);
    let url_name = name.clone();
    let update: UpdateFunc = Box::new(move |current| {
        let mut patched = match (&patch, current) {
            (PatchBody::Object(applied), _) if is_apply => {
                check_apply_type(&info, applied)?;
                let mut applied = applied.clone();
                check_type(&info, &mut applied)?;
                let run = |strategy: &dyn crate::registry::Strategy| {
                    seams::apply(ApplyRequest {
                        current,
                        applied: &applied,
                        manager: &manager,
                        force,
                        subresource: &subresource,
                        strategy,
                    })
                };
                match storage.strategy() {
                    Some(strategy) => run(strategy)?,
                    None => run(&super::PlainStrategy(&info))?,
                }
            }
            (_, None) => {
                return Err(ApiError::not_found(&info.group, &info.resource, &url_name));
            }
            (patch, Some(current)) => apply_patch(storage.as_ref(), patch_type, patch, current)?,
        };
        let patched_name = object_name(&patched).to_string();
        if patched_name != url_name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({patched_name}) does not match the name on the URL ({url_name})"
            )));
        }
        if info.namespaced {
            let meta = super::create::metadata_mut(&mut patched)?;
            match meta.get("namespace").and_then(Value::as_str) {
                None | Some("") => {
                    meta.insert("namespace".into(), Value::String(namespace.clone()));
                }
                Some(ns) if ns != namespace => {
                    return Err(ApiError::bad_request(format!(
                        "the namespace of the object ({ns}) does not match the namespace on the request ({namespace})"
                    )));
                }
                Some(_) => {}
            }
        }
        if let Some(strategy) = storage.strategy() {
            drop_patched_unknown_fields(strategy, &mut patched, &validation, &ctx)?;
        }
        let operation = if is_apply {
            ManagedFieldsOperation::Apply
        } else {
            ManagedFieldsOperation::Update
        };
        update_managed_fields(
            current,
            &mut patched,
            &manager,
            operation,
            &subresource,
            storage.as_ref(),
        )?;
        Ok(patched)
    });
    let (obj, created) =
        super::admit::update(scope, &parts, &name, update, &opts, is_apply).await?;
    let code = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    write_object(scope, code, obj, false, &output)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types_select_patch_types() {
        assert_eq!(
            PatchType::from_content_type(Some("application/merge-patch+json; charset=utf-8")),
            Some(PatchType::Merge)
        );
        assert_eq!(
            PatchType::from_content_type(Some("application/apply-patch+yaml")),
            Some(PatchType::Apply)
        );
        assert_eq!(PatchType::from_content_type(Some("application/json")), None);
        assert_eq!(PatchType::from_content_type(None), None);
    }

    #[test]
    fn json_patch_operation_cap_is_413() {
        let op = r#"{"op":"test","path":"/a","value":1}"#;
        let many = format!("[{}]", vec![op; MAX_JSON_PATCH_OPERATIONS + 1].join(","));
        let err = decode_patch(PatchType::Json, many.as_bytes())
            .err()
            .unwrap();
        assert_eq!(err.code(), StatusCode::PAYLOAD_TOO_LARGE);
        let ok = format!("[{}]", [op; 3].join(","));
        assert!(decode_patch(PatchType::Json, ok.as_bytes()).is_ok());
        assert_eq!(
            decode_patch(PatchType::Merge, b"[1]").err().unwrap().code(),
            StatusCode::BAD_REQUEST
        );
    }

    #[test]
    fn strategic_errors_map_to_upstream_codes() {
        assert_eq!(
            patch_error(&PatchError::BadJsonDoc).code(),
            StatusCode::BAD_REQUEST
        );
        assert_eq!(
            patch_error(&PatchError::NoListOfLists).code(),
            StatusCode::UNPROCESSABLE_ENTITY
        );
        let err = patch_error(&PatchError::NoElements);
        assert_eq!(err.code(), StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(err.reason(), "");
    }
}
