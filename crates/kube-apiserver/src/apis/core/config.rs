//! ConfigMaps and Secrets: key names, the 1 MiB total size, `immutable: true`, Secret types.

use apiserver::registry::{FieldError, SelectableFields, TableColumn};
use base64::Engine;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use serde_json::{Map, Value, json};

use crate::apis::ResourceDef;
use crate::apis::json::{get, str_at};
use crate::apis::strategy::{BuiltinStrategy, info};
use crate::apis::table::{age_cell, age_column, column, name_cell, name_column};
use crate::apis::validation::config_map_key;

/// Upstream `MaxSecretSize`, the limit of ConfigMap and Secret data.
pub const MAX_DATA_SIZE: usize = 1024 * 1024;

/// The configmaps resource.
pub fn configmaps() -> ResourceDef {
    ResourceDef::new(
        BuiltinStrategy::new::<ConfigMap>(info(
            "",
            "v1",
            "ConfigMap",
            "configmaps",
            true,
            &["cm"],
            &[],
        ))
        .validate(validate_configmap)
        .validate_update(validate_configmap_update)
        .table(configmap_columns, configmap_row),
    )
}

/// The secrets resource.
pub fn secrets() -> ResourceDef {
    ResourceDef::new(
        BuiltinStrategy::new::<Secret>(info("", "v1", "Secret", "secrets", true, &[], &[]))
            .defaults(default_secret)
            .validate(validate_secret)
            .validate_update(validate_secret_update)
            .selectable(secret_fields)
            .table(secret_columns, secret_row),
    )
}

fn keys<'a>(obj: &'a Value, field: &str) -> Option<&'a Map<String, Value>> {
    obj.get(field).and_then(Value::as_object)
}

fn validate_keys(obj: &Value, field: &str, errs: &mut Vec<FieldError>) {
    for key in keys(obj, field).into_iter().flatten().map(|(k, _)| k) {
        for msg in config_map_key(key) {
            errs.push(FieldError::invalid(
                &format!("{field}[{key}]"),
                key.clone(),
                &msg,
            ));
        }
    }
}

/// The decoded size of a `binaryData`/Secret `data` value (base64 text).
fn decoded_len(value: &Value) -> usize {
    let text = value.as_str().unwrap_or_default();
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_or(text.len(), |bytes| bytes.len())
}

fn validate_configmap(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    validate_keys(obj, "data", &mut errs);
    validate_keys(obj, "binaryData", &mut errs);
    let mut total = 0;
    let data = keys(obj, "data");
    for (key, value) in data.into_iter().flatten() {
        total += key.len() + value.as_str().map_or(0, str::len);
    }
    for (key, value) in keys(obj, "binaryData").into_iter().flatten() {
        total += key.len() + decoded_len(value);
        if data.is_some_and(|d| d.contains_key(key)) {
            errs.push(FieldError::invalid(
                &format!("data[{key}]"),
                key.as_str(),
                "duplicate of key present in binaryData",
            ));
        }
    }
    if total > MAX_DATA_SIZE {
        errs.push(FieldError::too_long("", MAX_DATA_SIZE));
    }
    errs
}

fn is_immutable(obj: &Value) -> bool {
    obj.get("immutable").and_then(Value::as_bool) == Some(true)
}

/// Upstream's rules for objects that were created `immutable: true`.
fn validate_immutable(new: &Value, old: &Value, fields: &[&str]) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if !is_immutable(old) {
        return errs;
    }
    if !is_immutable(new) {
        errs.push(FieldError::forbidden(
            "immutable",
            "field is immutable when `immutable` is set",
        ));
    }
    for field in fields {
        let (a, b) = (non_empty(new.get(*field)), non_empty(old.get(*field)));
        if a != b {
            errs.push(FieldError::forbidden(
                field,
                "field is immutable when `immutable` is set",
            ));
        }
    }
    errs
}

/// An absent map and an empty one are the same (Go's nil and empty maps compare equal here).
fn non_empty(value: Option<&Value>) -> Option<&Value> {
    value.filter(|v| v.as_object().is_some_and(|m| !m.is_empty()))
}

fn validate_configmap_update(new: &Value, old: &Value) -> Vec<FieldError> {
    validate_immutable(new, old, &["data", "binaryData"])
}

fn configmap_columns() -> Vec<TableColumn> {
    vec![
        name_column(),
        column(
            "Data",
            "string",
            "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys in the BinaryData field, this is enforced during validation process.",
            0,
        ),
        age_column(),
    ]
}

fn map_len(obj: &Value, field: &str) -> usize {
    keys(obj, field).map_or(0, Map::len)
}

fn configmap_row(obj: &Value) -> Vec<Value> {
    vec![
        name_cell(obj),
        json!(map_len(obj, "data") + map_len(obj, "binaryData")),
        age_cell(obj),
    ]
}

/// `type: Opaque`, and `stringData` folded into `data` (upstream does it when converting
/// v1 to the internal version, so `stringData` is never stored).
fn default_secret(obj: &mut Value) {
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    match map.get("type") {
        Some(Value::String(t)) if !t.is_empty() => {}
        _ => {
            map.insert("type".into(), json!("Opaque"));
        }
    }
    if let Some(Value::Object(string_data)) = map.remove("stringData") {
        let data = map
            .entry("data")
            .or_insert_with(|| Value::Object(Map::new()));
        if !data.is_object() {
            *data = Value::Object(Map::new());
        }
        if let Value::Object(data) = data {
            for (key, value) in string_data {
                let text = value.as_str().unwrap_or_default();
                data.insert(
                    key,
                    json!(base64::engine::general_purpose::STANDARD.encode(text)),
                );
            }
        }
    }
}

fn validate_secret(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    validate_keys(obj, "data", &mut errs);
    let data = keys(obj, "data");
    let total: usize = data
        .into_iter()
        .flatten()
        .map(|(k, v)| k.len() + decoded_len(v))
        .sum();
    let has = |key: &str| data.is_some_and(|d| d.contains_key(key));
    let service_account = get(obj, "metadata.annotations")
        .and_then(|a| a.get("kubernetes.io/service-account.name"))
        .and_then(Value::as_str)
        .filter(|name| !name.is_empty());
    match str_at(obj, "type").unwrap_or_default() {
        "kubernetes.io/service-account-token" if service_account.is_none() => {
            errs.push(FieldError::required(
                "metadata.annotations[kubernetes.io/service-account.name]",
                "",
            ));
        }
        "kubernetes.io/dockercfg" if !has(".dockercfg") => {
            errs.push(FieldError::required("data[.dockercfg]", ""));
        }
        "kubernetes.io/dockerconfigjson" if !has(".dockerconfigjson") => {
            errs.push(FieldError::required("data[.dockerconfigjson]", ""));
        }
        "kubernetes.io/basic-auth" if !has("username") && !has("password") => {
            errs.push(FieldError::required("data[username]", ""));
        }
        "kubernetes.io/ssh-auth" if !has("ssh-privatekey") => {
            errs.push(FieldError::required("data[ssh-privatekey]", ""));
        }
        "kubernetes.io/tls" => {
            for key in ["tls.crt", "tls.key"] {
                if !has(key) {
                    errs.push(FieldError::required(&format!("data[{key}]"), ""));
                }
            }
        }
        _ => {}
    }
    if total > MAX_DATA_SIZE {
        errs.push(FieldError::too_long("data", MAX_DATA_SIZE));
    }
    errs
}

fn validate_secret_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let (a, b) = (str_at(new, "type"), str_at(old, "type"));
    if a != b {
        errs.push(FieldError::invalid(
            "type",
            a.unwrap_or_default(),
            "field is immutable",
        ));
    }
    errs.extend(validate_immutable(new, old, &["data"]));
    errs
}

fn secret_fields(obj: &Value) -> SelectableFields {
    let mut fields = SelectableFields::new();
    fields.insert(
        "type".into(),
        str_at(obj, "type").unwrap_or_default().into(),
    );
    fields
}

fn secret_columns() -> Vec<TableColumn> {
    vec![
        name_column(),
        column(
            "Type",
            "string",
            "Used to facilitate programmatic handling of secret data. More info: https://kubernetes.io/docs/concepts/configuration/secret/#secret-types",
            0,
        ),
        column(
            "Data",
            "string",
            "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. The serialized form of the secret data is a base64 encoded string, representing the arbitrary (possibly non-string) data value here. Described in https://tools.ietf.org/html/rfc4648#section-4",
            0,
        ),
        age_column(),
    ]
}

fn secret_row(obj: &Value) -> Vec<Value> {
    vec![
        name_cell(obj),
        json!(str_at(obj, "type").unwrap_or_default()),
        json!(map_len(obj, "data")),
        age_cell(obj),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(errs: Vec<FieldError>) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn configmap_keys_and_size() {
        let def = configmaps();
        let cm = json!({"metadata": {"name": "c", "namespace": "d"},
                        "data": {"ok.key": "v", "bad key": "v"}});
        let errs = strings(def.strategy.validate(&cm));
        assert_eq!(errs.len(), 1);
        assert!(errs[0].starts_with("data[bad key]: Invalid value: \"bad key\": a valid config key must consist of alphanumeric characters, '-', '_' or '.'"));
        let big = json!({"metadata": {"name": "c"}, "data": {"a": "x".repeat(MAX_DATA_SIZE)}});
        let errs = strings(def.strategy.validate(&big));
        assert_eq!(errs, vec!["Too long: may not be more than 1048576 bytes"]);
    }

    #[test]
    fn configmap_immutable() {
        let def = configmaps();
        let old = json!({"metadata": {"name": "c"}, "immutable": true, "data": {"a": "1"}});
        let changed = json!({"metadata": {"name": "c"}, "immutable": true, "data": {"a": "2"}});
        assert_eq!(
            strings(def.strategy.validate_update(&changed, &old)),
            vec!["data: Forbidden: field is immutable when `immutable` is set"]
        );
        let unset = json!({"metadata": {"name": "c"}, "data": {"a": "1"}});
        assert_eq!(
            strings(def.strategy.validate_update(&unset, &old)),
            vec!["immutable: Forbidden: field is immutable when `immutable` is set"]
        );
        assert!(def.strategy.validate_update(&old, &old).is_empty());
    }

    #[test]
    fn configmap_table_and_unknown_fields() {
        let def = configmaps();
        let cm = json!({"metadata": {"name": "c"}, "data": {"a": "1"}, "binaryData": {"b": "AA=="},
                        "extra": 1});
        let row = def.strategy.table_row(&cm);
        assert_eq!(row[0], "c");
        assert_eq!(row[1], 2);
        assert_eq!(row[2], "<unknown>");
        let names: Vec<String> = def
            .strategy
            .table_columns()
            .into_iter()
            .map(|c| c.name)
            .collect();
        assert_eq!(names, vec!["Name", "Data", "Age"]);
        let mut cm = cm;
        assert_eq!(def.strategy.drop_unknown_fields(&mut cm), vec!["extra"]);
        assert!(cm.get("extra").is_none());
    }

    #[test]
    fn secret_defaults_and_string_data() {
        let def = secrets();
        let mut secret = json!({"metadata": {"name": "s"}, "stringData": {"user": "admin"}});
        def.strategy.prepare_for_create(&mut secret);
        assert_eq!(secret["type"], "Opaque");
        assert_eq!(secret["data"]["user"], "YWRtaW4=");
        assert!(secret.get("stringData").is_none());
        assert!(def.strategy.validate(&secret).is_empty());
        assert_eq!(def.strategy.selectable_fields(&secret)["type"], "Opaque");
        let row = def.strategy.table_row(&secret);
        assert_eq!(
            (row[1].clone(), row[2].clone()),
            (json!("Opaque"), json!(1))
        );
    }

    #[test]
    fn secret_type_is_immutable_and_tls_needs_keys() {
        let def = secrets();
        let old = json!({"metadata": {"name": "s"}, "type": "Opaque"});
        let new = json!({"metadata": {"name": "s"}, "type": "kubernetes.io/tls",
                         "data": {"tls.crt": "AA==", "tls.key": "AA=="}});
        assert_eq!(
            strings(def.strategy.validate_update(&new, &old)),
            vec!["type: Invalid value: \"kubernetes.io/tls\": field is immutable"]
        );
        let tls = json!({"metadata": {"name": "s"}, "type": "kubernetes.io/tls", "data": {}});
        assert_eq!(
            strings(def.strategy.validate(&tls)),
            vec![
                "data[tls.crt]: Required value",
                "data[tls.key]: Required value"
            ]
        );
        let bad = json!({"metadata": {"name": "s"}, "data": {"a": "not base64!"}});
        assert_eq!(def.strategy.validate(&bad)[0].field, "data.a");
    }
}
