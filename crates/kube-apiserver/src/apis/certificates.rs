//! certificates.k8s.io/v1: certificatesigningrequests, with the `status` and `approval`
//! subresources (served by `registry::csr`), upstream's validation (the request parses as a
//! signed PKCS#10 request, a well-formed signer name, usages, condition rules, the issued
//! certificate) and its table.

use apiserver::registry::{FieldError, SelectableFields};
use apiserver::util::duration::human_duration;
use base64::Engine;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use serde_json::{Value, json};
use x509_parser::prelude::FromDer;

use super::ResourceDef;
use super::docs;
use super::json::{array_at, i64_at, str_at};
use super::strategy::{BuiltinStrategy, info};
use super::table::{age_cell, age_column, column, name_cell, name_column};
use super::validation::{NameRule, dns1123_label, dns1123_subdomain};

/// The key usages upstream accepts, sorted.
pub const USAGES: [&str; 23] = [
    "any",
    "cert sign",
    "client auth",
    "code signing",
    "content commitment",
    "crl sign",
    "data encipherment",
    "decipher only",
    "digital signature",
    "email protection",
    "encipher only",
    "ipsec end system",
    "ipsec tunnel",
    "ipsec user",
    "key agreement",
    "key encipherment",
    "microsoft sgc",
    "netscape sgc",
    "ocsp signing",
    "s/mime",
    "server auth",
    "signing",
    "timestamping",
];

/// Condition types that may only be `True`.
const TRUE_ONLY: [&str; 3] = ["Approved", "Denied", "Failed"];

/// The certificatesigningrequests resource (subresources `status` and `approval`).
pub fn certificatesigningrequests() -> ResourceDef {
    let strategy = BuiltinStrategy::new::<CertificateSigningRequest>(info(
        "certificates.k8s.io",
        "v1",
        "CertificateSigningRequest",
        "certificatesigningrequests",
        false,
        &["csr"],
        &[],
    ))
    .name_rule(NameRule::Any)
    .status()
    // The spec cannot change after creation (upstream keeps the old one).
    .prepare_update(|new, old| {
        if let (Some(map), Some(spec)) = (new.as_object_mut(), old.get("spec")) {
            map.insert("spec".into(), spec.clone());
        }
    })
    .validate(validate)
    .validate_update(removed_conditions)
    .selectable(|obj| {
        let mut fields = SelectableFields::new();
        fields.insert(
            "spec.signerName".into(),
            str_at(obj, "spec.signerName").unwrap_or_default().into(),
        );
        fields
    })
    .table(
        || {
            vec![
                name_column(),
                age_column(),
                column("SignerName", "string", docs::CSR_SIGNER, 0),
                column("Requestor", "string", docs::CSR_REQUEST, 0),
                column("RequestedDuration", "string", docs::CSR_EXPIRATION, 0),
                column("Condition", "string", docs::CSR_CONDITIONS, 0),
            ]
        },
        |obj| {
            let signer = str_at(obj, "spec.signerName").filter(|s| !s.is_empty());
            let duration =
                i64_at(obj, "spec.expirationSeconds").map_or("<none>".to_string(), human_duration);
            vec![
                name_cell(obj),
                age_cell(obj),
                json!(signer.unwrap_or("<none>")),
                json!(str_at(obj, "spec.username").unwrap_or_default()),
                json!(duration),
                json!(condition_summary(obj)),
            ]
        },
    );
    ResourceDef::new(strategy).with(&["status", "approval"])
}

/// certificates.k8s.io/v1 resources.
pub fn resources() -> Vec<ResourceDef> {
    vec![certificatesigningrequests()]
}

/// Upstream `extractCSRStatus`: `Denied`, `Approved` or `Pending`, then `,Failed` and
/// `,Issued`.
pub fn condition_summary(obj: &Value) -> String {
    let has = |t: &str| {
        array_at(obj, "status.conditions")
            .iter()
            .any(|c| str_at(c, "type") == Some(t))
    };
    let mut status = if has("Denied") {
        "Denied".to_string()
    } else if has("Approved") {
        "Approved".to_string()
    } else {
        "Pending".to_string()
    };
    if has("Failed") {
        status.push_str(",Failed");
    }
    if str_at(obj, "status.certificate").is_some_and(|c| !c.is_empty()) {
        status.push_str(",Issued");
    }
    status
}

fn decode_bytes(obj: &Value, path: &str) -> Vec<u8> {
    str_at(obj, path)
        .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
        .unwrap_or_default()
}

/// Upstream `ParseCSR` plus the signature check.
fn check_request(pem: &[u8]) -> Result<(), String> {
    let block = x509_parser::pem::parse_x509_pem(pem)
        .ok()
        .map(|(_, p)| p)
        .filter(|p| p.label == "CERTIFICATE REQUEST")
        .ok_or("PEM block type must be CERTIFICATE REQUEST")?;
    let (_, csr) =
        x509_parser::certification_request::X509CertificationRequest::from_der(&block.contents)
            .map_err(|e| format!("x509: malformed certificate request: {e}"))?;
    csr.verify_signature()
        .map_err(|_| "x509: ECDSA verification failure".to_string())
}

/// Upstream `validateCertificate`: empty, or only `CERTIFICATE` blocks without headers that
/// parse.
fn check_certificate(pem: &[u8]) -> Result<(), String> {
    if pem.is_empty() {
        return Ok(());
    }
    let mut blocks = 0;
    for block in x509_parser::pem::Pem::iter_from_buffer(pem) {
        let Ok(block) = block else { break };
        if block.label != "CERTIFICATE" {
            return Err(format!(
                "only CERTIFICATE PEM blocks are allowed, found {:?}",
                block.label
            ));
        }
        x509_parser::parse_x509_certificate(&block.contents)
            .map_err(|e| format!("x509: malformed certificate: {e}"))?;
        blocks += 1;
    }
    if blocks == 0 {
        return Err("must contain at least one CERTIFICATE PEM block".into());
    }
    Ok(())
}

/// Upstream `ValidateSignerName`.
pub fn validate_signer_name(path: &str, signer: &str) -> Vec<FieldError> {
    if signer.is_empty() {
        return vec![FieldError::required(path, "")];
    }
    let segments: Vec<&str> = signer.split('/').collect();
    if segments.len() != 2 {
        return vec![FieldError::invalid(
            path,
            signer,
            "must be a fully qualified domain and path of the form 'example.com/signer-name'",
        )];
    }
    let mut errs = Vec::new();
    let (domain, name) = (segments[0], segments[1]);
    if domain.len() > 253 {
        errs.push(FieldError::too_long(path, 253));
    }
    let labels: Vec<&str> = domain.split('.').collect();
    for label in &labels {
        let label_errs = dns1123_label(label);
        if !label_errs.is_empty() {
            for msg in label_errs {
                errs.push(FieldError::invalid(
                    path,
                    domain,
                    &format!("validating label {label:?}: {msg}"),
                ));
            }
            break;
        }
    }
    if labels.len() < 2 {
        errs.push(FieldError::invalid(
            path,
            domain,
            "should be a domain with at least two segments separated by dots",
        ));
    }
    if name.len() > 253 + 63 + 1 {
        errs.push(FieldError::too_long(path, 253 + 63 + 1));
    }
    for msg in dns1123_subdomain(name) {
        errs.push(FieldError::invalid(path, name, &msg));
    }
    errs
}

/// Upstream `validateCertificateSigningRequest` with the strict options of a create.
pub fn validate(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Err(msg) = check_request(&decode_bytes(obj, "spec.request")) {
        errs.push(FieldError::invalid(
            "spec.request",
            json!(str_at(obj, "spec.request").unwrap_or_default()),
            &msg,
        ));
    }
    let usages = array_at(obj, "spec.usages");
    if usages.is_empty() {
        errs.push(FieldError::required("spec.usages", ""));
    }
    let mut seen = Vec::new();
    for (i, usage) in usages.iter().enumerate() {
        let usage = usage.as_str().unwrap_or_default();
        let at = format!("spec.usages[{i}]");
        if !USAGES.contains(&usage) {
            errs.push(FieldError::not_supported(&at, usage, &USAGES));
        }
        if seen.contains(&usage) {
            errs.push(FieldError::duplicate(&at, usage));
        }
        seen.push(usage);
    }
    let signer = str_at(obj, "spec.signerName").unwrap_or_default();
    if signer == "kubernetes.io/legacy-unknown" {
        errs.push(FieldError::invalid(
            "spec.signerName",
            signer,
            "the legacy signerName is not allowed via this API version",
        ));
    } else {
        errs.extend(validate_signer_name("spec.signerName", signer));
    }
    if let Some(secs) = i64_at(obj, "spec.expirationSeconds")
        && secs < 600
    {
        errs.push(FieldError::invalid(
            "spec.expirationSeconds",
            secs,
            "may not specify a duration less than 600 seconds (10 minutes)",
        ));
    }
    errs.extend(validate_conditions(obj));
    if let Err(msg) = check_certificate(&decode_bytes(obj, "status.certificate")) {
        errs.push(FieldError::invalid(
            "status.certificate",
            "<certificate data>",
            &msg,
        ));
    }
    errs
}

/// Upstream `validateConditions`.
fn validate_conditions(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let (mut approved, mut denied) = (false, false);
    let mut seen: Vec<&str> = Vec::new();
    for (i, c) in array_at(obj, "status.conditions").iter().enumerate() {
        let at = format!("status.conditions[{i}]");
        let kind = str_at(c, "type").unwrap_or_default();
        if kind.is_empty() {
            errs.push(FieldError::required(&format!("{at}.type"), ""));
        }
        let allowed: &[&str] = if TRUE_ONLY.contains(&kind) {
            &["True"]
        } else {
            &["False", "True", "Unknown"]
        };
        match str_at(c, "status").unwrap_or_default() {
            "" => errs.push(FieldError::required(&format!("{at}.status"), "")),
            s if !allowed.contains(&s) => errs.push(FieldError::not_supported(
                &format!("{at}.status"),
                s,
                allowed,
            )),
            _ => {}
        }
        match kind {
            "Approved" => {
                approved = true;
                if denied {
                    errs.push(FieldError::invalid(
                        &format!("{at}.type"),
                        kind,
                        "Approved and Denied conditions are mutually exclusive",
                    ));
                }
            }
            "Denied" => {
                denied = true;
                if approved {
                    errs.push(FieldError::invalid(
                        &format!("{at}.type"),
                        kind,
                        "Approved and Denied conditions are mutually exclusive",
                    ));
                }
            }
            _ => {}
        }
        if seen.contains(&kind) {
            errs.push(FieldError::duplicate(&format!("{at}.type"), kind));
        }
        seen.push(kind);
    }
    errs
}

fn conditions_of<'a>(obj: &'a Value, kind: &str) -> Vec<&'a Value> {
    array_at(obj, "status.conditions")
        .iter()
        .filter(|c| str_at(c, "type") == Some(kind))
        .collect()
}

/// Upstream's update rule for every path: Approved, Denied and Failed conditions are never
/// removed.
pub fn removed_conditions(new: &Value, old: &Value) -> Vec<FieldError> {
    TRUE_ONLY
        .iter()
        .filter(|t| conditions_of(new, t).len() < conditions_of(old, t).len())
        .map(|t| {
            FieldError::forbidden(
                "status.conditions",
                &format!("updates may not remove a condition of type {t:?}"),
            )
        })
        .collect()
}

/// The update rules of the `status` subresource: Approved/Denied conditions unchanged (the
/// subresource preserves them; see [`prepare_status_update`]), an issued certificate never
/// replaced.
pub fn validate_status_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = removed_conditions(new, old);
    errs.extend(approval_conditions_unchanged(new, old));
    let (new_cert, old_cert) = (
        str_at(new, "status.certificate").unwrap_or_default(),
        str_at(old, "status.certificate").unwrap_or_default(),
    );
    if new_cert != old_cert && !old_cert.is_empty() {
        errs.push(FieldError::forbidden(
            "status.certificate",
            "updates may not modify existing certificate content",
        ));
    }
    errs
}

/// The update rules of the `approval` subresource (conditions may be added, not removed; the
/// certificate is kept by [`prepare_approval_update`]).
pub fn validate_approval_update(new: &Value, old: &Value) -> Vec<FieldError> {
    removed_conditions(new, old)
}

fn approval_conditions_unchanged(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for t in ["Approved", "Denied"] {
        let (n, o) = (conditions_of(new, t), conditions_of(old, t));
        if n.len() > o.len() {
            errs.push(FieldError::forbidden(
                "status.conditions",
                &format!("updates may not add a condition of type {t:?}"),
            ));
        } else if n.len() == o.len() && n != o {
            errs.push(FieldError::forbidden(
                "status.conditions",
                &format!("updates may not modify a condition of type {t:?}"),
            ));
        }
    }
    errs
}

/// Upstream `populateConditionTimestamps`: `lastUpdateTime` now when unset;
/// `lastTransitionTime` from an old condition of the same type and status, else now.
fn populate_timestamps(new: &mut Value, old: &Value, now: &str) {
    let old_conditions = array_at(old, "status.conditions").to_vec();
    let Some(conditions) = super::json::array_mut(new, "status.conditions") else {
        return;
    };
    for c in conditions.iter_mut() {
        let Some(map) = c.as_object_mut() else {
            continue;
        };
        let unset = |v: Option<&Value>| v.is_none_or(|v| v.is_null() || v == "");
        if unset(map.get("lastUpdateTime")) {
            map.insert("lastUpdateTime".into(), json!(now));
        }
        if unset(map.get("lastTransitionTime")) {
            let previous = old_conditions.iter().find_map(|o| {
                (o.get("type") == map.get("type") && o.get("status") == map.get("status"))
                    .then(|| o.get("lastTransitionTime").filter(|t| !unset(Some(t))))
                    .flatten()
            });
            map.insert(
                "lastTransitionTime".into(),
                previous.cloned().unwrap_or(json!(now)),
            );
        }
    }
}

fn set_status_field(obj: &mut Value, key: &str, value: Option<Value>) {
    let Some(top) = obj.as_object_mut() else {
        return;
    };
    let status = top.entry("status").or_insert_with(|| json!({}));
    if !status.is_object() {
        *status = json!({});
    }
    if let Some(status) = status.as_object_mut() {
        match value {
            Some(v) => status.insert(key.into(), v),
            None => status.remove(key),
        };
    }
}

/// Upstream `csrApprovalStrategy.PrepareForUpdate`: only the conditions change.
pub fn prepare_approval_update(new: &Value, old: &Value, now: &str) -> Value {
    let mut out = old.clone();
    if let (Some(out_map), Some(meta)) = (out.as_object_mut(), new.get("metadata")) {
        out_map.insert("metadata".into(), meta.clone());
    }
    set_status_field(
        &mut out,
        "conditions",
        new.pointer("/status/conditions").cloned(),
    );
    populate_timestamps(&mut out, old, now);
    out
}

/// Upstream `csrStatusStrategy.PrepareForUpdate`: the spec and the Approved/Denied condition
/// instances are the old ones.
pub fn prepare_status_update(new: &Value, old: &Value, now: &str) -> Value {
    let mut out = new.clone();
    if let (Some(map), Some(spec)) = (out.as_object_mut(), old.get("spec")) {
        map.insert("spec".into(), spec.clone());
    }
    let mut conditions: Vec<Value> = array_at(new, "status.conditions")
        .iter()
        .filter(|c| !matches!(str_at(c, "type"), Some("Approved" | "Denied")))
        .cloned()
        .collect();
    conditions.extend(
        array_at(old, "status.conditions")
            .iter()
            .filter(|c| matches!(str_at(c, "type"), Some("Approved" | "Denied")))
            .cloned(),
    );
    set_status_field(
        &mut out,
        "conditions",
        (!conditions.is_empty()).then_some(Value::Array(conditions)),
    );
    populate_timestamps(&mut out, old, now);
    out
}

/// Upstream's create preparation: the requesting user's identity is recorded in the spec.
pub fn set_requestor(obj: &mut Value, user: Option<&apiserver::request::UserInfo>) {
    let Some(spec) = super::json::object_at(obj, "spec") else {
        return;
    };
    for key in ["username", "uid", "groups", "extra"] {
        spec.remove(key);
    }
    let Some(user) = user else {
        return;
    };
    spec.insert("username".into(), json!(user.name));
    if !user.uid.is_empty() {
        spec.insert("uid".into(), json!(user.uid));
    }
    if !user.groups.is_empty() {
        spec.insert("groups".into(), json!(user.groups));
    }
    if !user.extra.is_empty() {
        spec.insert("extra".into(), json!(user.extra));
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A PEM certificate request signed by a fresh key.
    pub fn request_pem() -> String {
        let key = rcgen::KeyPair::generate().unwrap();
        let params = rcgen::CertificateParams::new(vec!["node1".to_string()]).unwrap();
        params.serialize_request(&key).unwrap().pem().unwrap()
    }

    fn csr(signer: &str, usages: Value) -> Value {
        let request = base64::engine::general_purpose::STANDARD.encode(request_pem());
        json!({"metadata": {"name": "c"}, "spec": {"request": request, "signerName": signer, "usages": usages}})
    }

    #[test]
    fn valid_request_passes_and_prints_pending() {
        let def = certificatesigningrequests();
        let c = csr(
            "kubernetes.io/kube-apiserver-client",
            json!(["client auth"]),
        );
        assert!(
            def.strategy.validate(&c).is_empty(),
            "{:?}",
            def.strategy.validate(&c)
        );
        assert_eq!(def.strategy.table_row(&c)[5], json!("Pending"));
    }

    #[test]
    fn request_signer_and_usages_rules_as_upstream() {
        let mut c = csr(
            "example.com",
            json!(["client auth", "client auth", "bogus"]),
        );
        c["spec"]["request"] = json!(base64::engine::general_purpose::STANDARD.encode("junk"));
        let errs: Vec<String> = validate(&c).iter().map(ToString::to_string).collect();
        assert!(
            errs[0].ends_with(": PEM block type must be CERTIFICATE REQUEST"),
            "{errs:?}"
        );
        assert!(
            errs.iter()
                .any(|e| e.starts_with("spec.usages[1]: Duplicate value: \"client auth\""))
        );
        assert!(
            errs.iter()
                .any(|e| e.starts_with("spec.usages[2]: Unsupported value: \"bogus\""))
        );
        assert!(errs.iter().any(|e| e == "spec.signerName: Invalid value: \"example.com\": must be a fully qualified domain and path of the form 'example.com/signer-name'"));
        let missing = csr("", json!([]));
        let errs: Vec<String> = validate(&missing).iter().map(ToString::to_string).collect();
        assert_eq!(
            errs,
            vec![
                "spec.usages: Required value",
                "spec.signerName: Required value"
            ]
        );
        let short = csr("example/x", json!(["any"]));
        assert_eq!(
            validate(&short)[0].to_string(),
            "spec.signerName: Invalid value: \"example\": should be a domain with at least two segments separated by dots"
        );
    }

    #[test]
    fn condition_rules_as_upstream() {
        let mut c = csr("example.com/s", json!(["any"]));
        c["status"] = json!({"conditions": [
            {"type": "Approved", "status": "True"}, {"type": "Denied", "status": "False"}]});
        let errs: Vec<String> = validate(&c).iter().map(ToString::to_string).collect();
        assert_eq!(
            errs,
            vec![
                "status.conditions[1].status: Unsupported value: \"False\": supported values: \"True\"",
                "status.conditions[1].type: Invalid value: \"Denied\": Approved and Denied conditions are mutually exclusive"
            ]
        );
    }

    #[test]
    fn approval_changes_only_conditions_and_status_keeps_approval() {
        let mut old = csr("example.com/s", json!(["any"]));
        old["status"] = json!({});
        let mut new = old.clone();
        new["spec"]["usages"] = json!(["server auth"]);
        new["status"] = json!({"certificate": "Zm9v", "conditions": [{"type": "Approved", "status": "True", "reason": "KubectlApprove"}]});
        let approved = prepare_approval_update(&new, &old, "2024-01-01T00:00:00Z");
        assert_eq!(approved["spec"], old["spec"]);
        assert_eq!(approved["status"].get("certificate"), None);
        assert_eq!(
            approved["status"]["conditions"][0]["lastUpdateTime"],
            "2024-01-01T00:00:00Z"
        );
        assert!(validate_approval_update(&approved, &old).is_empty());
        assert_eq!(condition_summary(&approved), "Approved");
        // the status subresource cannot drop the approval.
        let mut dropped = approved.clone();
        dropped["status"]["conditions"] = json!([]);
        let kept = prepare_status_update(&dropped, &approved, "t");
        assert_eq!(
            kept["status"]["conditions"],
            approved["status"]["conditions"]
        );
        // and approval cannot remove it either.
        let removed = prepare_approval_update(&dropped, &approved, "t");
        assert_eq!(
            validate_approval_update(&removed, &approved)[0].to_string(),
            "status.conditions: Forbidden: updates may not remove a condition of type \"Approved\""
        );
    }
}
