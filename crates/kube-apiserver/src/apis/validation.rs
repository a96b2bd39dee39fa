//! Upstream's name and metadata validation (`apimachinery/pkg/util/validation` and
//! `apimachinery/pkg/api/validation`), with its messages.

use apiserver::registry::FieldError;
pub use apiserver::registry::names::{dns1035_label, dns1123_label, dns1123_subdomain};
use apiserver::registry::names::{max_len_error, regex_error};
use serde_json::Value;

use super::json::{get, str_at};

/// How a resource's `metadata.name` is validated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameRule {
    /// A DNS-1123 subdomain (most resources).
    Subdomain,
    /// A DNS-1123 label (namespaces).
    Label,
    /// A DNS-1035 label (services).
    Dns1035Label,
    /// A path segment: not `.`/`..`, no `/` or `%` (RBAC objects).
    PathSegment,
    /// Any non-empty name; the resource validates it itself (IP addresses) or not at all
    /// (certificate signing requests).
    Any,
}

const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const CONFIG_KEY_FMT: &str = "[-._a-zA-Z0-9]+";

/// Upstream `IsValidPathSegmentName`.
pub fn path_segment(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s == "." || s == ".." {
        errs.push(format!("may not be '{s}'"));
    }
    for bad in ["/", "%"] {
        if s.contains(bad) {
            errs.push(format!("may not contain '{bad}'"));
        }
    }
    errs
}

fn matches_qualified_part(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// Upstream `IsQualifiedName` (label keys, annotation keys, finalizers).
pub fn qualified_name(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = s.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                errs.extend(
                    dns1123_subdomain(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            name
        }
        _ => {
            errs.push(format!(
                "{} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(
                    "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
                    QUALIFIED_NAME_FMT,
                    &["MyName", "my.name", "123-abc"],
                )
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push(format!("name part {}", max_len_error(63)));
    }
    if !name.is_empty() && !matches_qualified_part(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"],
            )
        ));
    }
    errs
}

/// Upstream `IsValidLabelValue`.
pub fn label_value(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push(max_len_error(63));
    }
    if !s.is_empty() && !matches_qualified_part(s) {
        errs.push(regex_error(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// Upstream `IsConfigMapKey` (ConfigMap and Secret data keys).
pub fn config_map_key(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 253 {
        errs.push(max_len_error(253));
    }
    let ok = !s.is_empty()
        && s.bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'));
    if !ok {
        errs.push(regex_error(
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
            CONFIG_KEY_FMT,
            &["key.name", "KEY_NAME", "key-name"],
        ));
    }
    if s == "." {
        errs.push("must not be '.'".to_string());
    } else if s == ".." {
        errs.push("must not be '..'".to_string());
    } else if s.starts_with("..") {
        errs.push("must not start with '..'".to_string());
    }
    errs
}

/// Errors of `value` under `rule`.
pub fn name_errors(rule: NameRule, value: &str) -> Vec<String> {
    match rule {
        NameRule::Subdomain => dns1123_subdomain(value),
        NameRule::Label => dns1123_label(value),
        NameRule::Dns1035Label => dns1035_label(value),
        NameRule::PathSegment => path_segment(value),
        NameRule::Any => Vec::new(),
    }
}

/// Field errors for `value` at `field` under `rule` (one `Invalid` per message).
pub fn validate_name_at(rule: NameRule, field: &str, value: &str) -> Vec<FieldError> {
    name_errors(rule, value)
        .iter()
        .map(|msg| FieldError::invalid(field, value, msg))
        .collect()
}

/// Upstream's limit on the total size of annotations.
const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

/// Upstream `ValidateObjectMeta`: name (required unless generated), generateName, labels,
/// annotations, finalizers.
pub fn validate_object_meta(obj: &Value, rule: NameRule) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let name = str_at(obj, "metadata.name");
    if let Some(generate) = str_at(obj, "metadata.generateName").filter(|g| !g.is_empty()) {
        // upstream masks a trailing dash before validating the prefix.
        let masked = match generate.strip_suffix('-') {
            Some(stem) if !stem.is_empty() => format!("{stem}a"),
            _ => generate.to_string(),
        };
        for msg in name_errors(rule, &masked) {
            errs.push(FieldError::invalid("metadata.generateName", generate, &msg));
        }
    }
    match name.filter(|n| !n.is_empty()) {
        None => errs.push(FieldError::required(
            "metadata.name",
            "name or generateName is required",
        )),
        Some(name) => errs.extend(validate_name_at(rule, "metadata.name", name)),
    }
    errs.extend(validate_labels(
        get(obj, "metadata.labels"),
        "metadata.labels",
    ));
    if let Some(Value::Object(annotations)) = get(obj, "metadata.annotations") {
        let mut total = 0;
        for (key, value) in annotations {
            for msg in qualified_name(&key.to_lowercase()) {
                errs.push(FieldError::invalid(
                    "metadata.annotations",
                    key.as_str(),
                    &msg,
                ));
            }
            total += key.len() + value.as_str().map_or(0, str::len);
        }
        if total > TOTAL_ANNOTATION_SIZE_LIMIT {
            errs.push(FieldError::too_long(
                "metadata.annotations",
                TOTAL_ANNOTATION_SIZE_LIMIT,
            ));
        }
    }
    errs.extend(apiserver::registry::store::meta::validate_owner_references(
        obj,
    ));
    if let Some(Value::Array(finalizers)) = get(obj, "metadata.finalizers") {
        for (i, finalizer) in finalizers.iter().enumerate() {
            let text = finalizer.as_str().unwrap_or_default();
            for msg in qualified_name(text) {
                errs.push(FieldError::invalid(
                    &format!("metadata.finalizers[{i}]"),
                    text,
                    &msg,
                ));
            }
        }
    }
    errs
}

/// Upstream `ValidateLabels` for the map at `field`.
pub fn validate_labels(labels: Option<&Value>, field: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(Value::Object(labels)) = labels {
        for (key, value) in labels {
            for msg in qualified_name(key) {
                errs.push(FieldError::invalid(field, key.as_str(), &msg));
            }
            let text = value.as_str().unwrap_or_default();
            for msg in label_value(text) {
                errs.push(FieldError::invalid(field, text, &msg));
            }
        }
    }
    errs
}

/// Upstream's `field is immutable` error when `new` differs from `old` at `path`.
pub fn immutable(new: &Value, old: &Value, path: &str) -> Option<FieldError> {
    let (a, b) = (get(new, path), get(old, path));
    (a != b).then(|| {
        FieldError::invalid(
            path,
            a.cloned().unwrap_or(Value::Null),
            "field is immutable",
        )
    })
}

/// `must be greater than or equal to 0` for a negative integer at `path`.
pub fn non_negative(obj: &Value, path: &str) -> Option<FieldError> {
    let v = get(obj, path)?.as_i64()?;
    (v < 0).then(|| FieldError::invalid(path, v, "must be greater than or equal to 0"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn subdomain_message_is_upstreams() {
        let errs = validate_object_meta(&json!({"metadata": {"name": "Foo"}}), NameRule::Subdomain);
        assert_eq!(errs.len(), 1);
        assert_eq!(
            errs[0].to_string(),
            "metadata.name: Invalid value: \"Foo\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        );
    }

    #[test]
    fn label_message_has_upstreams_double_space() {
        assert_eq!(
            dns1123_label("a.b"),
            vec![
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
            ]
        );
        assert!(dns1123_label("abc-1").is_empty());
        assert_eq!(
            dns1123_label(&"a".repeat(64))[0],
            "must be no more than 63 characters"
        );
        assert!(dns1035_label("1abc")[0].starts_with("a DNS-1035 label"));
    }

    #[test]
    fn names_accepted_and_refused() {
        for ok in ["a", "a.b", "a-b.c-d", "0"] {
            assert!(dns1123_subdomain(ok).is_empty(), "{ok}");
        }
        for bad in ["", "-a", "a-", "a..b", "A", "a_b", ".a"] {
            assert!(!dns1123_subdomain(bad).is_empty(), "{bad}");
        }
        assert_eq!(path_segment(".."), vec!["may not be '..'"]);
        assert_eq!(
            path_segment("a/b%"),
            vec!["may not contain '/'", "may not contain '%'"]
        );
    }

    #[test]
    fn name_required() {
        let errs = validate_object_meta(&json!({"metadata": {}}), NameRule::Subdomain);
        assert_eq!(
            errs[0].to_string(),
            "metadata.name: Required value: name or generateName is required"
        );
    }

    #[test]
    fn labels_and_annotations() {
        let obj = json!({"metadata": {"name": "x",
            "labels": {"app": "ok", "bad key": "v", "k": "-bad"},
            "annotations": {"example.com/ok": "x", "/nope": "y"}}});
        let errs: Vec<String> = validate_object_meta(&obj, NameRule::Subdomain)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(errs.len(), 3, "{errs:#?}");
        assert!(errs[0].starts_with("metadata.labels: Invalid value: \"bad key\": name part must consist of alphanumeric characters"));
        assert!(errs[1].starts_with(
            "metadata.labels: Invalid value: \"-bad\": a valid label must be an empty string"
        ));
        assert_eq!(
            errs[2],
            "metadata.annotations: Invalid value: \"/nope\": prefix part must be non-empty"
        );
    }

    #[test]
    fn config_keys() {
        assert!(config_map_key("key.name_1-x").is_empty());
        assert_eq!(config_map_key("..a"), vec!["must not start with '..'"]);
        assert!(config_map_key("a b")[0].starts_with("a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex"));
    }
}
