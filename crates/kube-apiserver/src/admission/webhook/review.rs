//! The AdmissionReview a webhook gets and the checks on its answer (upstream
//! `webhook/request`): `admission.k8s.io/v1`, or `v1beta1` when the webhook lists it first
//! among the versions this server speaks.

use std::collections::BTreeMap;

use apiserver::request::UserInfo;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value, json};

/// The AdmissionReview versions this server can send.
const KNOWN_VERSIONS: &[&str] = &["v1", "v1beta1"];

/// The group-version-kind and group-version-resource of a request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Gvkr {
    /// Group.
    pub group: String,
    /// Version.
    pub version: String,
    /// Kind.
    pub kind: String,
    /// Resource (plural).
    pub resource: String,
}

/// Everything an AdmissionRequest carries besides its uid.
#[derive(Clone, Debug)]
pub struct RequestFacts<'a> {
    /// What the webhook is called for (the matched version under `matchPolicy: Equivalent`).
    pub matched: &'a Gvkr,
    /// What the client asked for.
    pub requested: &'a Gvkr,
    /// The subresource.
    pub subresource: &'a str,
    /// The object's name.
    pub name: &'a str,
    /// The namespace.
    pub namespace: &'a str,
    /// `CREATE`, `UPDATE`, `DELETE` or `CONNECT`.
    pub operation: &'a str,
    /// Who asked.
    pub user: &'a UserInfo,
    /// The new object (`null` for deletes and connects).
    pub object: &'a Value,
    /// The stored object (`null` for creates and connects).
    pub old_object: &'a Value,
    /// The request's options object.
    pub options: &'a Value,
    /// Whether the request is a dry run.
    pub dry_run: bool,
}

fn gvk(g: &Gvkr) -> Value {
    json!({"group": g.group, "version": g.version, "kind": g.kind})
}

fn gvr(g: &Gvkr) -> Value {
    json!({"group": g.group, "version": g.version, "resource": g.resource})
}

/// `authentication.k8s.io/v1` UserInfo with Go's `omitempty`.
fn user_info(user: &UserInfo) -> Value {
    let mut map = Map::new();
    if !user.name.is_empty() {
        map.insert("username".into(), json!(user.name));
    }
    if !user.uid.is_empty() {
        map.insert("uid".into(), json!(user.uid));
    }
    if !user.groups.is_empty() {
        map.insert("groups".into(), json!(user.groups));
    }
    if !user.extra.is_empty() {
        let extra: BTreeMap<&String, &Vec<String>> = user.extra.iter().collect();
        map.insert("extra".into(), json!(extra));
    }
    Value::Object(map)
}

/// The `request` of an AdmissionReview without its uid (also the CEL `request` variable).
pub fn admission_request(facts: &RequestFacts<'_>) -> Map<String, Value> {
    let mut request = Map::new();
    request.insert("kind".into(), gvk(facts.matched));
    request.insert("resource".into(), gvr(facts.matched));
    if !facts.subresource.is_empty() {
        request.insert("subResource".into(), json!(facts.subresource));
    }
    request.insert("requestKind".into(), gvk(facts.requested));
    request.insert("requestResource".into(), gvr(facts.requested));
    if !facts.subresource.is_empty() {
        request.insert("requestSubResource".into(), json!(facts.subresource));
    }
    if !facts.name.is_empty() {
        request.insert("name".into(), json!(facts.name));
    }
    if !facts.namespace.is_empty() {
        request.insert("namespace".into(), json!(facts.namespace));
    }
    request.insert("operation".into(), json!(facts.operation));
    request.insert("userInfo".into(), user_info(facts.user));
    request.insert("object".into(), facts.object.clone());
    request.insert("oldObject".into(), facts.old_object.clone());
    request.insert("dryRun".into(), json!(facts.dry_run));
    request.insert("options".into(), facts.options.clone());
    request
}

/// The AdmissionReview version to send: the first of `accepted` this server knows.
pub fn review_version(accepted: &[String]) -> Option<&'static str> {
    accepted
        .iter()
        .find_map(|v| KNOWN_VERSIONS.iter().find(|k| **k == v.as_str()).copied())
}

/// The AdmissionReview body for `uid` in `version`.
pub fn review(version: &str, uid: &str, facts: &RequestFacts<'_>) -> Value {
    let mut request = Map::new();
    request.insert("uid".into(), json!(uid));
    request.extend(admission_request(facts));
    json!({
        "kind": "AdmissionReview",
        "apiVersion": format!("admission.k8s.io/{version}"),
        "request": request,
    })
}

/// A webhook's answer, checked.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Verdict {
    /// `response.allowed`.
    pub allowed: bool,
    /// The decoded `response.patch` (JSON patch bytes), empty when none.
    pub patch: Vec<u8>,
    /// `response.patchType` (`JSONPatch`), empty when none.
    pub patch_type: String,
    /// `response.status`, if any.
    pub status: Option<Value>,
    /// `response.auditAnnotations`.
    pub audit_annotations: BTreeMap<String, String>,
    /// `response.warnings`.
    pub warnings: Vec<String>,
}

/// Why an answer could not be decoded: upstream fails the call with this text (after
/// `failed to call webhook: `).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError(pub String);

/// Why a decoded answer is not acceptable (after `received invalid webhook response: `).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidResponse(pub String);

/// Decodes `response.patch` and the other fields Go's decoder types; a wrong type is a decode
/// error as in Go's `json.Unmarshal`.
fn decode_fields(response: &Map<String, Value>) -> Result<Verdict, DecodeError> {
    let type_error = |field: &str, want: &str, got: &Value| {
        DecodeError(format!(
            "json: cannot unmarshal {} into Go struct field AdmissionResponse.response.{field} of type {want}",
            go_type(got)
        ))
    };
    let mut verdict = Verdict::default();
    match response.get("allowed") {
        None | Some(Value::Null) => {}
        Some(Value::Bool(b)) => verdict.allowed = *b,
        Some(other) => return Err(type_error("allowed", "bool", other)),
    }
    match response.get("patch") {
        None | Some(Value::Null) => {}
        Some(Value::String(b64)) => {
            verdict.patch = STANDARD
                .decode(b64)
                .map_err(|e| DecodeError(format!("illegal base64 data: {e}")))?;
        }
        Some(other) => return Err(type_error("patch", "[]uint8", other)),
    }
    match response.get("patchType") {
        None | Some(Value::Null) => {}
        Some(Value::String(t)) => verdict.patch_type = t.clone(),
        Some(other) => return Err(type_error("patchType", "v1.PatchType", other)),
    }
    match response.get("status") {
        None | Some(Value::Null) => {}
        Some(v @ Value::Object(_)) => verdict.status = Some(v.clone()),
        Some(other) => return Err(type_error("status", "v1.Status", other)),
    }
    match response.get("auditAnnotations") {
        None | Some(Value::Null) => {}
        Some(Value::Object(map)) => {
            for (k, v) in map {
                let Some(v) = v.as_str() else {
                    return Err(type_error("auditAnnotations", "string", v));
                };
                verdict.audit_annotations.insert(k.clone(), v.to_string());
            }
        }
        Some(other) => {
            return Err(type_error("auditAnnotations", "map[string]string", other));
        }
    }
    match response.get("warnings") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for item in items {
                let Some(w) = item.as_str() else {
                    return Err(type_error("warnings", "string", item));
                };
                verdict.warnings.push(w.to_string());
            }
        }
        Some(other) => return Err(type_error("warnings", "[]string", other)),
    }
    Ok(verdict)
}

/// Go's name of a JSON value's type in `json: cannot unmarshal <type>`.
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Upstream `VerifyAdmissionResponse` for an answer to a review of `version` with `uid`.
pub fn verify(
    version: &str,
    uid: &str,
    mutating: bool,
    answer: &Value,
) -> Result<Result<Verdict, InvalidResponse>, DecodeError> {
    let Some(top) = answer.as_object() else {
        return Err(DecodeError(format!(
            "json: cannot unmarshal {} into Go value of type struct {{ APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }}",
            go_type(answer)
        )));
    };
    let api_version = top.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = top.get("kind").and_then(Value::as_str).unwrap_or("");
    if kind.is_empty() {
        return Err(DecodeError(format!(
            "Object 'Kind' is missing in '{answer}'"
        )));
    }
    let response = match top.get("response") {
        None | Some(Value::Null) => None,
        Some(Value::Object(map)) => Some(map),
        Some(other) => {
            return Err(DecodeError(format!(
                "json: cannot unmarshal {} into Go struct field AdmissionReview.response of type v1.AdmissionResponse",
                go_type(other)
            )));
        }
    };
    let Some(response) = response else {
        return Ok(Err(InvalidResponse("webhook response was absent".into())));
    };
    let verdict = decode_fields(response)?;
    if version == "v1beta1" {
        // upstream does not check the uid, kind or patch type of v1beta1 answers.
        let mut verdict = verdict;
        if mutating && !verdict.patch.is_empty() {
            verdict.patch_type = "JSONPatch".into();
        } else {
            verdict.patch.clear();
            verdict.patch_type.clear();
        }
        return Ok(Ok(verdict));
    }
    let got_uid = response.get("uid").and_then(Value::as_str).unwrap_or("");
    if got_uid != uid {
        return Ok(Err(InvalidResponse(format!(
            "expected response.uid={uid:?}, got {got_uid:?}"
        ))));
    }
    let (group, got_version) = match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    };
    if group != "admission.k8s.io" || got_version != "v1" || kind != "AdmissionReview" {
        return Ok(Err(InvalidResponse(format!(
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {group}/{got_version}, Kind={kind}"
        ))));
    }
    let has_patch_type = response.get("patchType").is_some_and(|v| !v.is_null());
    if mutating {
        if !verdict.patch.is_empty() && !has_patch_type {
            return Ok(Err(InvalidResponse(
                "webhook returned response.patch but not response.patchType".into(),
            )));
        }
        if verdict.patch.is_empty() && has_patch_type {
            return Ok(Err(InvalidResponse(
                "webhook returned response.patchType but not response.patch".into(),
            )));
        }
        if has_patch_type && verdict.patch_type.is_empty() {
            return Ok(Err(InvalidResponse(format!(
                "webhook returned invalid response.patchType of {:?}",
                verdict.patch_type
            ))));
        }
    } else {
        if !verdict.patch.is_empty() {
            return Ok(Err(InvalidResponse(
                "validating webhook may not return response.patch".into(),
            )));
        }
        if has_patch_type {
            return Ok(Err(InvalidResponse(
                "validating webhook may not return response.patchType".into(),
            )));
        }
    }
    Ok(Ok(verdict))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts_review(version: &str) -> Value {
        let gvkr = Gvkr {
            group: String::new(),
            version: "v1".into(),
            kind: "ConfigMap".into(),
            resource: "configmaps".into(),
        };
        let user = UserInfo {
            name: "alice".into(),
            groups: vec!["system:authenticated".into()],
            ..Default::default()
        };
        let object = json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "cm"}});
        let options = json!({"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"});
        review(
            version,
            "u-1",
            &RequestFacts {
                matched: &gvkr,
                requested: &gvkr,
                subresource: "",
                name: "cm",
                namespace: "default",
                operation: "CREATE",
                user: &user,
                object: &object,
                old_object: &Value::Null,
                options: &options,
                dry_run: false,
            },
        )
    }

    #[test]
    fn reviews_carry_upstream_fields() {
        let r = facts_review("v1");
        assert_eq!(r["apiVersion"], "admission.k8s.io/v1");
        let req = &r["request"];
        assert_eq!(req["uid"], "u-1");
        assert_eq!(
            req["kind"],
            json!({"group": "", "version": "v1", "kind": "ConfigMap"})
        );
        assert_eq!(
            req["requestResource"],
            json!({"group": "", "version": "v1", "resource": "configmaps"})
        );
        assert!(req.get("subResource").is_none());
        assert_eq!(
            req["userInfo"],
            json!({"username": "alice", "groups": ["system:authenticated"]})
        );
        assert_eq!(req["oldObject"], Value::Null);
        assert_eq!(req["dryRun"], false);
        assert_eq!(req["options"]["kind"], "CreateOptions");
        assert_eq!(
            facts_review("v1beta1")["apiVersion"],
            "admission.k8s.io/v1beta1"
        );
        assert_eq!(
            review_version(&["v2".into(), "v1beta1".into(), "v1".into()]),
            Some("v1beta1")
        );
        assert_eq!(review_version(&["v2".into()]), None);
    }

    fn answer(response: Value) -> Value {
        json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})
    }

    #[test]
    fn answers_are_checked_as_upstream() {
        let ok = verify(
            "v1",
            "u",
            false,
            &answer(json!({"uid": "u", "allowed": true})),
        )
        .unwrap()
        .unwrap();
        assert!(ok.allowed);
        assert_eq!(
            verify(
                "v1",
                "u",
                false,
                &answer(json!({"uid": "x", "allowed": true}))
            )
            .unwrap()
            .unwrap_err()
            .0,
            "expected response.uid=\"u\", got \"x\""
        );
        assert_eq!(
            verify(
                "v1",
                "u",
                false,
                &json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"})
            )
            .unwrap()
            .unwrap_err()
            .0,
            "webhook response was absent"
        );
        let patch = STANDARD.encode(br#"[{"op":"add","path":"/x","value":1}]"#);
        assert_eq!(
            verify(
                "v1",
                "u",
                false,
                &answer(
                    json!({"uid": "u", "allowed": true, "patch": patch, "patchType": "JSONPatch"})
                )
            )
            .unwrap()
            .unwrap_err()
            .0,
            "validating webhook may not return response.patch"
        );
        assert_eq!(
            verify(
                "v1",
                "u",
                true,
                &answer(json!({"uid": "u", "allowed": true, "patch": patch}))
            )
            .unwrap()
            .unwrap_err()
            .0,
            "webhook returned response.patch but not response.patchType"
        );
        let mutated = verify(
            "v1",
            "u",
            true,
            &answer(
                json!({"uid": "u", "allowed": true, "patch": patch, "patchType": "JSONPatch",
                           "warnings": ["careful"], "auditAnnotations": {"k": "v"}}),
            ),
        )
        .unwrap()
        .unwrap();
        assert_eq!(mutated.patch_type, "JSONPatch");
        assert_eq!(mutated.warnings, ["careful"]);
        assert_eq!(mutated.audit_annotations["k"], "v");
        assert!(
            verify(
                "v1",
                "u",
                true,
                &answer(json!({"uid": "u", "allowed": "yes"}))
            )
            .is_err()
        );
        assert!(verify("v1", "u", true, &json!([1])).is_err());
        // v1beta1: no uid check, any patch is a JSON patch.
        let beta = verify(
            "v1beta1",
            "u",
            true,
            &json!({"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview",
                    "response": {"uid": "other", "allowed": true, "patch": patch}}),
        )
        .unwrap()
        .unwrap();
        assert_eq!(beta.patch_type, "JSONPatch");
    }
}
