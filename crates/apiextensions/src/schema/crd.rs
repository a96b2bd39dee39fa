//! Validation of CustomResourceDefinition objects (upstream
//! `pkg/apis/apiextensions/validation/validation.go`) and their v1 defaults
//! (`pkg/apis/apiextensions/v1/defaults.go`).
//!
//! Upstream validates the internal form of a CRD: when every version of a v1 CRD has the
//! same schema (or subresources, or printer columns), conversion hoists it to the top level,
//! so its errors are reported under `spec.validation`, `spec.subresources` and
//! `spec.additionalPrinterColumns`. Paths here follow that.

use apiserver::registry::FieldError;
use serde_json::{Map, Value};

use super::Structural;
use super::names::{dns1035_label, dns1123_subdomain};
use super::node::{Additional, Node};
use super::path::{idx, key, sub};
use super::validate::too_many;

const PRINTER_TYPES: &str = "boolean,date,integer,number,string";
const PRINTER_FORMATS: &str = "byte,date,date-time,double,float,int32,int64,password";
const OPENAPI_TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];
const ROOT_FIELDS_WITH_STATUS: &str = "[Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example XPreserveUnknownFields XValidations]";
const APPROVAL: &str = "api-approved.kubernetes.io";
const MAX_SELECTABLE_FIELDS: usize = 8;

/// Applies the v1 defaults (upstream `SetDefaults_CustomResourceDefinition`): singular and
/// listKind from kind, conversion strategy `None`, webhook service port 443, and
/// `status.storedVersions` from the storage version when empty.
pub fn default_crd(crd: &mut Value) {
    let Some(obj) = crd.as_object_mut() else {
        return;
    };
    let spec = obj
        .entry("spec")
        .or_insert_with(|| Value::Object(Map::new()));
    let mut storage = None;
    if let Some(spec) = spec.as_object_mut() {
        if let Some(Value::Object(names)) = spec.get_mut("names") {
            let kind = str_of(names.get("kind")).to_string();
            if str_of(names.get("singular")).is_empty() {
                names.insert("singular".into(), Value::String(kind.to_lowercase()));
            }
            if str_of(names.get("listKind")).is_empty() && !kind.is_empty() {
                names.insert("listKind".into(), Value::String(format!("{kind}List")));
            }
        }
        let conversion = spec
            .entry("conversion")
            .or_insert_with(|| serde_json::json!({"strategy": "None"}));
        if let Some(Value::Object(service)) = conversion
            .pointer_mut("/webhook/clientConfig/service")
            .filter(|s| s.is_object())
            && !service.contains_key("port")
        {
            service.insert("port".into(), Value::from(443));
        }
        storage = arr_of(spec.get("versions"))
            .iter()
            .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
            .map(|v| str_of(v.get("name")).to_string());
    }
    let status = obj
        .entry("status")
        .or_insert_with(|| Value::Object(Map::new()));
    if let (Some(status), Some(storage)) = (status.as_object_mut(), storage)
        && arr_of(status.get("storedVersions")).is_empty()
    {
        status.insert("storedVersions".into(), serde_json::json!([storage]));
    }
}

fn str_of(v: Option<&Value>) -> &str {
    v.and_then(Value::as_str).unwrap_or("")
}

fn arr_of(v: Option<&Value>) -> &[Value] {
    v.and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

fn strings_of(v: Option<&Value>) -> Vec<String> {
    arr_of(v)
        .iter()
        .map(|s| s.as_str().unwrap_or("").to_string())
        .collect()
}

/// A present, non-null field.
fn get<'a>(v: &'a Value, k: &str) -> Option<&'a Value> {
    v.get(k).filter(|x| !x.is_null())
}

/// The parts of a version that conversion hoists when identical across versions.
struct Hoisted<'a> {
    schema: Option<&'a Value>,
    subresources: Option<&'a Value>,
    columns: Option<&'a Value>,
    selectable: Option<&'a Value>,
}

fn hoist<'a>(versions: &'a [Value], field: &str) -> (bool, Option<&'a Value>) {
    let Some(first) = versions.first() else {
        return (false, None);
    };
    let value = get(first, field);
    let empty = |v: Option<&Value>| v.is_none_or(|x| x.as_array().is_some_and(Vec::is_empty));
    let identical = versions.iter().all(|v| {
        let other = get(v, field);
        other == value || (empty(other) && empty(value))
    });
    (identical, if identical { value } else { None })
}

/// Validates a whole CustomResourceDefinition (apiextensions.k8s.io/v1) as upstream's
/// create (`old` = None) or update validation does, including [`Structural::new`] and the
/// checks of defaults for every version's schema. Expects the v1 defaults applied (see
/// [`default_crd`]), as upstream's decoder applies them before validation.
pub fn validate_crd(crd: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = crd.get("spec").cloned().unwrap_or(Value::Null);
    let group = str_of(spec.get("group"));
    let plural = str_of(spec.pointer("/names/plural"));

    // metadata.name: a DNS subdomain equal to <plural>.<group>.
    let name = str_of(crd.pointer("/metadata/name"));
    if name.is_empty() {
        if str_of(crd.pointer("/metadata/generateName")).is_empty() {
            errs.push(FieldError::required(
                "metadata.name",
                "name or generateName is required",
            ));
        }
    } else {
        for msg in dns1123_subdomain(name) {
            errs.push(FieldError::invalid("metadata.name", name, &msg));
        }
        if name != format!("{plural}.{group}") {
            errs.push(FieldError::invalid(
                "metadata.name",
                name,
                r#"must be spec.names.plural+"."+spec.group"#,
            ));
        }
    }

    let established = old.is_some_and(|o| {
        arr_of(o.pointer("/status/conditions"))
            .iter()
            .any(|c| str_of(c.get("type")) == "Established" && str_of(c.get("status")) == "True")
    });
    validate_spec(&spec, &mut errs);
    if let Some(old) = old {
        let old_spec = old.get("spec").cloned().unwrap_or(Value::Null);
        let mut immutable = |path: &str, pointer: &str| {
            let new = spec.pointer(pointer).cloned().unwrap_or(Value::Null);
            if Some(&new) != old_spec.pointer(pointer)
                && !(new.is_null() && old_spec.pointer(pointer).is_none())
            {
                let shown = if new.is_null() {
                    Value::String(String::new())
                } else {
                    new
                };
                errs.push(FieldError::invalid(path, shown, "field is immutable"));
            }
        };
        if established {
            immutable("spec.scope", "/scope");
            immutable("spec.names.kind", "/names/kind");
        }
        immutable("spec.group", "/group");
        immutable("spec.names.plural", "/names/plural");
    }

    // status.
    if let Some(accepted) = crd.pointer("/status/acceptedNames") {
        validate_names(accepted, "status.acceptedNames", &mut errs);
    }
    let stored = strings_of(crd.pointer("/status/storedVersions"));
    let versions = arr_of(spec.get("versions"));
    validate_stored_versions(&stored, versions, &mut errs);

    // API approval for protected groups.
    let protected = group == "k8s.io"
        || group.ends_with(".k8s.io")
        || group == "kubernetes.io"
        || group.ends_with(".kubernetes.io");
    if protected {
        let approval = |o: &Value| {
            let a = str_of(
                o.pointer("/metadata/annotations")
                    .and_then(|m| m.get(APPROVAL)),
            );
            approval_state(a)
        };
        let new_state = approval(crd);
        let unchanged = old.is_some_and(|o| approval(o).0 == new_state.0);
        let path = key("metadata.annotations", APPROVAL);
        let value = str_of(
            crd.pointer("/metadata/annotations")
                .and_then(|m| m.get(APPROVAL)),
        );
        if !unchanged {
            match new_state.0 {
                "missing" => errs.push(FieldError::required(&path, &new_state.1)),
                "invalid" => errs.push(FieldError::invalid(&path, value, &new_state.1)),
                _ => {}
            }
        }
    }

    // preserveUnknownFields may only stay true on CRDs that had it.
    let old_preserve = old
        .and_then(|o| o.pointer("/spec/preserveUnknownFields"))
        .and_then(Value::as_bool)
        == Some(true);
    if !old_preserve && spec.get("preserveUnknownFields").and_then(Value::as_bool) == Some(true) {
        errs.push(FieldError::invalid(
            "spec.preserveUnknownFields",
            true,
            "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
        ));
    }
    errs
}

fn approval_state(annotation: &str) -> (&'static str, String) {
    let is_url = annotation.split_once("://").is_some_and(|(scheme, rest)| {
        !scheme.is_empty()
            && !rest.is_empty()
            && !rest.starts_with('/')
            && !annotation.contains(' ')
    });
    if annotation.is_empty() {
        (
            "missing",
            format!(
                "protected groups must have approval annotation \"{APPROVAL}\", see https://github.com/kubernetes/enhancements/pull/1111"
            ),
        )
    } else if annotation.starts_with("unapproved") {
        ("bypassed", String::new())
    } else if is_url {
        ("approved", String::new())
    } else {
        (
            "invalid",
            format!(
                "protected groups must have approval annotation \"{APPROVAL}\" with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111"
            ),
        )
    }
}

fn validate_stored_versions(stored: &[String], versions: &[Value], errs: &mut Vec<FieldError>) {
    let path = "status.storedVersions";
    let shown = Value::from(stored.to_vec());
    if stored.is_empty() {
        errs.push(FieldError::invalid(
            path,
            shown,
            "must have at least one stored version",
        ));
        return;
    }
    let mut remaining: Vec<(usize, &String)> = stored.iter().enumerate().collect();
    for v in versions {
        let name = str_of(v.get("name"));
        let present = stored.iter().any(|s| s == name);
        if v.get("storage").and_then(Value::as_bool) == Some(true) && !present {
            errs.push(FieldError::invalid(
                path,
                shown.clone(),
                &format!("must have the storage version {name}"),
            ));
        }
        remaining.retain(|(_, s)| s.as_str() != name);
    }
    // Upstream keeps the last index of a repeated stored version.
    let mut reported: Vec<&String> = Vec::new();
    for (i, s) in remaining.iter().rev() {
        if reported.contains(s) {
            continue;
        }
        reported.push(s);
        errs.push(FieldError::invalid(
            &idx(path, *i),
            s.as_str(),
            &format!("missing from spec.versions; {s} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in {s} and removes {s} from status.storedVersions"),
        ));
    }
}

fn validate_spec(spec: &Value, errs: &mut Vec<FieldError>) {
    let group = str_of(spec.get("group"));
    if group.is_empty() {
        errs.push(FieldError::required("spec.group", ""));
    } else {
        let e = dns1123_subdomain(group);
        if !e.is_empty() {
            errs.push(FieldError::invalid("spec.group", group, &e.join(",")));
        } else if group.split('.').count() < 2 {
            errs.push(FieldError::invalid(
                "spec.group",
                group,
                "should be a domain with at least one dot",
            ));
        }
    }
    enum_string(
        "spec.scope",
        str_of(spec.get("scope")),
        &["Cluster", "Namespaced"],
        errs,
    );

    let versions = arr_of(spec.get("versions"));
    let preserve = spec.get("preserveUnknownFields").and_then(Value::as_bool) == Some(true);
    let (schema_same, top_schema) = hoist(versions, "schema");
    let (sub_same, top_sub) = hoist(versions, "subresources");
    let (cols_same, top_cols) = hoist(versions, "additionalPrinterColumns");
    let (sel_same, top_sel) = hoist(versions, "selectableFields");
    let top_schema = top_schema.filter(|s| get(s, "openAPIV3Schema").is_some());
    let hoisted = Hoisted {
        schema: top_schema,
        subresources: top_sub,
        columns: top_cols,
        selectable: top_sel,
    };

    // Every version needs a schema (unless a shared one is hoisted).
    if hoisted.schema.is_none() {
        for (i, v) in versions.iter().enumerate() {
            if v.pointer("/schema/openAPIV3Schema")
                .is_none_or(Value::is_null)
            {
                errs.push(FieldError::required(
                    &format!("spec.versions[{i}].schema.openAPIV3Schema"),
                    "schemas are required",
                ));
            }
        }
    }
    let has_defaults = versions.iter().any(|v| {
        v.pointer("/schema/openAPIV3Schema")
            .is_some_and(schema_has_defaults)
    });
    if has_defaults && preserve {
        errs.push(FieldError::invalid(
            "spec.preserveUnknownFields",
            true,
            "must be false in order to use defaults in the schema",
        ));
    }

    let any_status = versions.iter().any(|v| {
        v.pointer("/subresources/status")
            .is_some_and(|s| !s.is_null())
    });
    let mut storage = 0;
    let mut names: Vec<&str> = Vec::new();
    let mut unique = true;
    for (i, v) in versions.iter().enumerate() {
        let vpath = format!("spec.versions[{i}]");
        if v.get("storage").and_then(Value::as_bool) == Some(true) {
            storage += 1;
        }
        let name = str_of(v.get("name"));
        if names.contains(&name) {
            unique = false;
        } else {
            names.push(name);
        }
        let e = dns1035_label(name);
        if !e.is_empty() {
            errs.push(FieldError::invalid(
                &sub(&vpath, "name"),
                name,
                &e.join(","),
            ));
        }
        validate_version(
            v,
            &vpath,
            !schema_same,
            !sub_same,
            !cols_same,
            !sel_same,
            errs,
        );
    }
    let shown = Value::Array(versions.to_vec());
    if !unique {
        errs.push(FieldError::invalid(
            "spec.versions",
            shown.clone(),
            "must contain unique version names",
        ));
    }
    if storage != 1 {
        errs.push(FieldError::invalid(
            "spec.versions",
            shown,
            "must have exactly one version marked as storage version",
        ));
    }

    let names_v = spec.get("names").cloned().unwrap_or(Value::Null);
    for f in ["plural", "singular", "kind", "listKind"] {
        if str_of(names_v.get(f)).is_empty() {
            errs.push(FieldError::required(&format!("spec.names.{f}"), ""));
        }
    }
    validate_names(&names_v, "spec.names", errs);

    if let Some(schema) = hoisted.schema {
        validate_validation(schema, any_status, "spec.validation", errs);
    }
    if let Some(s) = hoisted.subresources {
        validate_subresources(s, "spec.subresources", errs);
    }
    for (i, c) in arr_of(hoisted.columns).iter().enumerate() {
        validate_column(c, &idx("spec.additionalPrinterColumns", i), errs);
    }
    if let Some(sel) = hoisted.selectable.filter(|s| !arr_of(Some(s)).is_empty()) {
        match top_schema_structural(hoisted.schema) {
            Some(s) => validate_selectable(sel, &s, "spec.selectableFields", errs),
            None => errs.push(FieldError::invalid(
                "spec.selectableFields",
                "",
                "may only be set when validations.schema is included",
            )),
        }
    }

    let conversion = spec.get("conversion");
    let strategy = conversion.map(|c| str_of(c.get("strategy"))).unwrap_or("");
    if conversion.is_some_and(|c| !c.is_null()) && strategy != "None" && preserve {
        errs.push(FieldError::invalid(
            "spec.conversion.strategy",
            strategy,
            "must be None if spec.preserveUnknownFields is true",
        ));
    }
    if let Some(c) = conversion.filter(|c| !c.is_null()) {
        validate_conversion(c, errs);
    }
}

fn top_schema_structural(schema: Option<&Value>) -> Option<Structural> {
    let s = schema?.get("openAPIV3Schema")?;
    Node::parse(s, "").ok().map(Structural::from_node)
}

fn schema_has_defaults(s: &Value) -> bool {
    match s {
        Value::Object(m) => {
            m.get("default").is_some_and(|d| !d.is_null())
                || m.iter()
                    .filter(|(k, _)| *k != "default" && *k != "example" && *k != "enum")
                    .any(|(_, v)| schema_has_defaults(v))
        }
        Value::Array(a) => a.iter().any(schema_has_defaults),
        _ => false,
    }
}

fn enum_string(path: &str, value: &str, accepted: &[&str], errs: &mut Vec<FieldError>) {
    if value.is_empty() {
        errs.push(FieldError::required(path, ""));
    } else if !accepted.contains(&value) {
        errs.push(FieldError::not_supported(path, value, accepted));
    }
}

fn validate_version(
    v: &Value,
    vpath: &str,
    own_schema: bool,
    own_sub: bool,
    own_cols: bool,
    own_sel: bool,
    errs: &mut Vec<FieldError>,
) {
    let deprecated = v.get("deprecated").and_then(Value::as_bool) == Some(true);
    if let Some(w) = v.get("deprecationWarning").filter(|w| !w.is_null()) {
        let w = w.as_str().unwrap_or("");
        let p = sub(vpath, "deprecationWarning");
        if !deprecated {
            errs.push(FieldError::invalid(
                &p,
                w,
                "can only be set for deprecated versions",
            ));
        } else {
            if w.len() > 256 {
                errs.push(FieldError::invalid(&p, w, "must be <= 256 characters long"));
            }
            if w.is_empty() {
                errs.push(FieldError::invalid(&p, w, "must not be an empty string"));
            }
            if let Some((i, _)) = w.char_indices().find(|(_, c)| c.is_control()) {
                errs.push(FieldError::invalid(
                    &p,
                    w,
                    &format!("must only contain printable UTF-8 characters; non-printable character found at index {i}"),
                ));
            }
        }
    }
    let status = v
        .pointer("/subresources/status")
        .is_some_and(|s| !s.is_null());
    if own_schema && let Some(schema) = get(v, "schema") {
        validate_validation(schema, status, &sub(vpath, "schema"), errs);
    }
    if own_sub && let Some(s) = get(v, "subresources") {
        validate_subresources(s, &sub(vpath, "subresources"), errs);
    }
    if own_cols {
        for (i, c) in arr_of(v.get("additionalPrinterColumns")).iter().enumerate() {
            validate_column(c, &idx(&sub(vpath, "additionalPrinterColumns"), i), errs);
        }
    }
    if own_sel && let Some(sel) = get(v, "selectableFields").filter(|s| !arr_of(Some(s)).is_empty())
    {
        let path = sub(vpath, "selectableFields");
        match top_schema_structural(get(v, "schema")) {
            Some(s) => validate_selectable(sel, &s, &path, errs),
            None => errs.push(FieldError::invalid(
                &path,
                "",
                "may only be set when `version.schema.openAPIV3Schema` is not included",
            )),
        }
    }
}

fn validate_names(names: &Value, path: &str, errs: &mut Vec<FieldError>) {
    for f in ["plural", "singular"] {
        let v = str_of(names.get(f));
        let e = dns1035_label(v);
        if !v.is_empty() && !e.is_empty() {
            errs.push(FieldError::invalid(&sub(path, f), v, &e.join(",")));
        }
    }
    for f in ["kind", "listKind"] {
        let v = str_of(names.get(f));
        let e = dns1035_label(&v.to_lowercase());
        if !v.is_empty() && !e.is_empty() {
            errs.push(FieldError::invalid(
                &sub(path, f),
                v,
                &format!(
                    "may have mixed case, but should otherwise match: {}",
                    e.join(",")
                ),
            ));
        }
    }
    for (i, s) in strings_of(names.get("shortNames")).iter().enumerate() {
        let e = dns1035_label(s);
        if !e.is_empty() {
            errs.push(FieldError::invalid(
                &idx(&sub(path, "shortNames"), i),
                s.as_str(),
                &e.join(","),
            ));
        }
    }
    let kind = str_of(names.get("kind"));
    let list_kind = str_of(names.get("listKind"));
    if !kind.is_empty() && kind == list_kind {
        errs.push(FieldError::invalid(
            &sub(path, "listKind"),
            list_kind,
            "kind and listKind may not be the same",
        ));
    }
    for (i, c) in strings_of(names.get("categories")).iter().enumerate() {
        let e = dns1035_label(c);
        if !e.is_empty() {
            errs.push(FieldError::invalid(
                &idx(&sub(path, "categories"), i),
                c.as_str(),
                &e.join(","),
            ));
        }
    }
}

fn simple_json_path(s: &str, path: &str, errs: &mut Vec<FieldError>) -> bool {
    if s.is_empty() {
        errs.push(FieldError::invalid(path, s, "must not be empty"));
        false
    } else if !s.starts_with('.') {
        errs.push(FieldError::invalid(
            path,
            s,
            "must be a simple json path starting with .",
        ));
        false
    } else {
        true
    }
}

fn validate_subresources(s: &Value, path: &str, errs: &mut Vec<FieldError>) {
    let Some(scale) = get(s, "scale") else {
        return;
    };
    for (field, prefix, under) in [
        (
            "specReplicasPath",
            ".spec.",
            "should be a json path under .spec",
        ),
        (
            "statusReplicasPath",
            ".status.",
            "should be a json path under .status",
        ),
    ] {
        let p = format!("{path}.scale.{field}");
        let v = str_of(scale.get(field));
        if v.is_empty() {
            errs.push(FieldError::required(&p, ""));
        } else if simple_json_path(v, &p, errs) && !v.starts_with(prefix) {
            errs.push(FieldError::invalid(&p, v, under));
        }
    }
    let sel = str_of(scale.get("labelSelectorPath"));
    let p = format!("{path}.scale.labelSelectorPath");
    if !sel.is_empty()
        && simple_json_path(sel, &p, errs)
        && !sel.starts_with(".spec.")
        && !sel.starts_with(".status.")
    {
        errs.push(FieldError::invalid(
            &p,
            sel,
            "should be a json path under either .spec or .status",
        ));
    }
}

fn validate_column(c: &Value, path: &str, errs: &mut Vec<FieldError>) {
    if str_of(c.get("name")).is_empty() {
        errs.push(FieldError::required(&sub(path, "name"), ""));
    }
    let t = str_of(c.get("type"));
    let types_msg = format!("must be one of {PRINTER_TYPES}");
    if t.is_empty() {
        errs.push(FieldError::required(&sub(path, "type"), &types_msg));
    } else if !PRINTER_TYPES.split(',').any(|x| x == t) {
        errs.push(FieldError::invalid(&sub(path, "type"), t, &types_msg));
    }
    let f = str_of(c.get("format"));
    if !f.is_empty() && !PRINTER_FORMATS.split(',').any(|x| x == f) {
        errs.push(FieldError::invalid(
            &sub(path, "format"),
            f,
            &format!("must be one of {PRINTER_FORMATS}"),
        ));
    }
    let jp = str_of(c.get("jsonPath"));
    if jp.is_empty() {
        errs.push(FieldError::required(&sub(path, "JSONPath"), ""));
    } else {
        simple_json_path(jp, &sub(path, "JSONPath"), errs);
    }
}

/// Resolves a selectable field's `.a.b` path through the schema (no array steps).
fn resolve<'a>(jp: &str, s: &'a Node) -> Result<(String, &'a Node), String> {
    let Some(rest) = jp.strip_prefix('.') else {
        return Err("must start with '.'".to_string());
    };
    let mut node = s;
    let mut first = String::new();
    for (i, step) in rest.split('.').enumerate() {
        if step.is_empty() || step.contains('[') {
            return Err(format!("unexpected path step in {jp}"));
        }
        if i == 0 {
            first = step.to_string();
        }
        node = match node.properties.get(step) {
            Some(n) => n,
            None => match &node.additional_properties {
                Some(Additional::Schema(n)) => n,
                _ => return Err("does not refer to a valid field".to_string()),
            },
        };
    }
    Ok((first, node))
}

fn validate_selectable(sel: &Value, s: &Structural, path: &str, errs: &mut Vec<FieldError>) {
    let mut seen: Vec<String> = Vec::new();
    for (i, f) in arr_of(Some(sel)).iter().enumerate() {
        let p = sub(&idx(path, i), "jsonPath");
        let jp = str_of(f.get("jsonPath"));
        if jp.is_empty() {
            errs.push(FieldError::required(&p, ""));
            continue;
        }
        let (root, node) = match resolve(jp, &s.root) {
            Ok(r) => r,
            Err(e) => {
                errs.push(FieldError::invalid(
                    &p,
                    jp,
                    &format!("is an invalid path: {e}"),
                ));
                continue;
            }
        };
        if root == "metadata" {
            errs.push(FieldError::invalid(
                &p,
                jp,
                "must not point to fields in metadata",
            ));
        }
        if !matches!(node.type_.as_str(), "string" | "boolean" | "integer") {
            errs.push(FieldError::invalid(
                &p,
                jp,
                "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
            ));
        }
        if seen.iter().any(|s| s == jp) {
            errs.push(FieldError::duplicate(&p, jp));
        } else {
            seen.push(jp.to_string());
        }
    }
    if seen.len() > MAX_SELECTABLE_FIELDS {
        errs.push(too_many(path, seen.len(), MAX_SELECTABLE_FIELDS as i64));
    }
}

fn validate_conversion(c: &Value, errs: &mut Vec<FieldError>) {
    let strategy = str_of(c.get("strategy"));
    enum_string(
        "spec.conversion.strategy",
        strategy,
        &["None", "Webhook"],
        errs,
    );
    let webhook = get(c, "webhook");
    let client = webhook.and_then(|w| get(w, "clientConfig"));
    let review = webhook.map(|w| strings_of(w.get("conversionReviewVersions")));
    if strategy == "Webhook" {
        let cc_path = "spec.conversion.webhookClientConfig";
        match client {
            None => errs.push(FieldError::required(
                cc_path,
                "required when strategy is set to Webhook",
            )),
            Some(cc) => {
                let url = get(cc, "url");
                let service = get(cc, "service");
                match (url, service) {
                    (Some(u), None) => {
                        validate_webhook_url(str_of(Some(u)), &sub(cc_path, "url"), errs)
                    }
                    (None, Some(s)) => validate_webhook_service(s, &sub(cc_path, "service"), errs),
                    _ => errs.push(FieldError::required(
                        cc_path,
                        "exactly one of url or service is required",
                    )),
                }
            }
        }
        let versions = review.unwrap_or_default();
        let p = "spec.conversion.conversionReviewVersions";
        if versions.is_empty() {
            errs.push(FieldError::required(p, ""));
        } else {
            let mut seen: Vec<&str> = Vec::new();
            let mut accepted = false;
            for (i, v) in versions.iter().enumerate() {
                if seen.contains(&v.as_str()) {
                    errs.push(FieldError::invalid(
                        &idx(p, i),
                        v.as_str(),
                        "duplicate version",
                    ));
                    continue;
                }
                seen.push(v);
                for e in dns1035_label(v) {
                    errs.push(FieldError::invalid(&idx(p, i), v.as_str(), &e));
                }
                accepted |= v == "v1" || v == "v1beta1";
            }
            if !accepted {
                errs.push(FieldError::invalid(
                    p,
                    Value::from(versions.clone()),
                    "must include at least one of v1, v1beta1",
                ));
            }
        }
    } else {
        if client.is_some() {
            errs.push(FieldError::forbidden(
                "spec.conversion.webhookClientConfig",
                "should not be set when strategy is not set to Webhook",
            ));
        }
        if review.is_some_and(|r| !r.is_empty()) {
            errs.push(FieldError::forbidden(
                "spec.conversion.conversionReviewVersions",
                "should not be set when strategy is not set to Webhook",
            ));
        }
    }
}

/// Upstream `webhook.ValidateWebhookURL` (with https required), over the parts Go's
/// `url.Parse` finds (scheme, user, host, query, fragment).
fn validate_webhook_url(url: &str, path: &str, errs: &mut Vec<FieldError>) {
    const FORM: &str = "; desired format: https://host[/path]";
    let (rest, fragment) = url.split_once('#').unwrap_or((url, ""));
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (scheme, rest) = match rest.split_once(':') {
        Some((s, r))
            if s.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c)) =>
        {
            (s, r)
        }
        _ => ("", rest),
    };
    let (user, host) = match rest.strip_prefix("//") {
        Some(r) => {
            let authority = r.split('/').next().unwrap_or("");
            match authority.rsplit_once('@') {
                Some((u, h)) => (Some(u), h),
                None => (None, authority),
            }
        }
        None => (None, ""),
    };
    if scheme != "https" {
        errs.push(FieldError::invalid(
            path,
            scheme,
            &format!("'https' is the only allowed URL scheme{FORM}"),
        ));
    }
    if host.is_empty() {
        errs.push(FieldError::invalid(
            path,
            host,
            &format!("host must be specified{FORM}"),
        ));
    }
    if let Some(u) = user {
        errs.push(FieldError::invalid(
            path,
            u,
            "user information is not permitted in the URL",
        ));
    }
    if !fragment.is_empty() {
        errs.push(FieldError::invalid(
            path,
            fragment,
            "fragments are not permitted in the URL",
        ));
    }
    if !query.is_empty() {
        errs.push(FieldError::invalid(
            path,
            query,
            "query parameters are not permitted in the URL",
        ));
    }
}

/// Upstream `webhook.ValidateWebhookService`.
fn validate_webhook_service(s: &Value, path: &str, errs: &mut Vec<FieldError>) {
    if str_of(s.get("name")).is_empty() {
        errs.push(FieldError::required(
            &sub(path, "name"),
            "service name is required",
        ));
    }
    if str_of(s.get("namespace")).is_empty() {
        errs.push(FieldError::required(
            &sub(path, "namespace"),
            "service namespace is required",
        ));
    }
    if let Some(port) = s.get("port").and_then(Value::as_i64)
        && !(1..=65535).contains(&port)
    {
        errs.push(FieldError::invalid(
            &sub(path, "port"),
            port,
            "port is not valid: must be between 1 and 65535, inclusive",
        ));
    }
    let p = str_of(s.get("path"));
    let pp = sub(path, "path");
    if p.is_empty() || p == "/" {
        return;
    }
    if p == "//" {
        errs.push(FieldError::invalid(&pp, p, "segment[0] may not be empty"));
        return;
    }
    if !p.starts_with('/') {
        errs.push(FieldError::invalid(&pp, p, "must start with a '/'"));
    }
    let check = p.get(1..).unwrap_or("");
    let check = check.strip_suffix('/').unwrap_or(check);
    for (i, step) in check.split('/').enumerate() {
        if step.is_empty() {
            errs.push(FieldError::invalid(
                &pp,
                p,
                &format!("segment[{i}] may not be empty"),
            ));
            continue;
        }
        for failure in dns1123_subdomain(step) {
            errs.push(FieldError::invalid(
                &pp,
                p,
                &format!("segment[{i}]: {failure}"),
            ));
        }
    }
}

/// One version's (or the hoisted) `schema`: the checks of the schema object itself, then
/// the structural checks, then the defaults.
fn validate_validation(v: &Value, status: bool, path: &str, errs: &mut Vec<FieldError>) {
    let Some(schema) = get(v, "openAPIV3Schema") else {
        return;
    };
    let spath = sub(path, "openAPIV3Schema");
    let node = match Node::parse(schema, &spath) {
        Ok(n) => n,
        Err(e) => {
            errs.push(FieldError::invalid(&e.path, e.value, &e.detail));
            return;
        }
    };
    let mut local = Vec::new();
    if status {
        root_with_status(&node, schema, &spath, &mut local);
    }
    if node.nullable {
        local.push(FieldError::forbidden(
            &sub(&spath, "nullable"),
            "nullable cannot be true at the root",
        ));
    }
    let mut init_errs = Vec::new();
    match super::structural::unsupported(&node) {
        Some(msg) => init_errs.push(FieldError::invalid(&spath, "", &msg)),
        None => {
            let s_errs = super::structural::validate_structural(&node, &spath);
            if !s_errs.is_empty() {
                local.extend(s_errs);
            } else {
                // The root is a resource: its type meta and metadata count as embedded.
                let mut root = node.clone();
                root.x_embedded_resource = true;
                validate_defaults(&root, &spath, false, &mut local);
            }
        }
    }
    let ctx = SchemaCtx {
        allow_defaults: true,
        defaults_reason: String::new(),
        inside_meta: false,
        uncorrelatable: None,
    };
    openapi_schema(&node, &spath, &ctx, true, &mut local);
    if local.is_empty() {
        local.extend(init_errs);
    }
    errs.extend(local);
}

fn root_with_status(n: &Node, raw: &Value, path: &str, errs: &mut Vec<FieldError>) {
    // Upstream walks JSONSchemaProps' fields in declaration order and stops at the first
    // one that is not allowed (type must be object).
    const ORDER: [&str; 44] = [
        "id",
        "$schema",
        "$ref",
        "description",
        "type",
        "nullable",
        "format",
        "title",
        "default",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "maxLength",
        "minLength",
        "pattern",
        "maxItems",
        "minItems",
        "uniqueItems",
        "multipleOf",
        "enum",
        "maxProperties",
        "minProperties",
        "required",
        "items",
        "allOf",
        "oneOf",
        "anyOf",
        "not",
        "properties",
        "additionalProperties",
        "patternProperties",
        "dependencies",
        "additionalItems",
        "definitions",
        "externalDocs",
        "example",
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-embedded-resource",
        "x-kubernetes-int-or-string",
        "x-kubernetes-list-map-keys",
        "x-kubernetes-list-type",
        "x-kubernetes-map-type",
        "x-kubernetes-validations",
    ];
    const ALLOWED: [&str; 21] = [
        "description",
        "format",
        "title",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "maxLength",
        "minLength",
        "pattern",
        "maxItems",
        "minItems",
        "uniqueItems",
        "multipleOf",
        "required",
        "items",
        "properties",
        "externalDocs",
        "example",
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-validations",
    ];
    let set = |k: &str| match n.raw.get(k) {
        None | Some(Value::Null) | Some(Value::Bool(false)) => false,
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(o)) => !o.is_empty() || k == "default" || k == "example",
        Some(_) => true,
    };
    for k in ORDER {
        if !set(k) {
            continue;
        }
        if k == "type" {
            if n.type_ != "object" {
                errs.push(FieldError::invalid(
                    &sub(path, "type"),
                    n.type_.as_str(),
                    r#"only "object" is allowed as the type at the root of the schema if the status subresource is enabled"#,
                ));
                return;
            }
            continue;
        }
        if !ALLOWED.contains(&k) {
            errs.push(FieldError::invalid(
                path,
                raw.clone(),
                &format!("only {ROOT_FIELDS_WITH_STATUS} fields are allowed at the root of the schema if the status subresource is enabled"),
            ));
            return;
        }
    }
}

#[derive(Clone)]
struct SchemaCtx {
    allow_defaults: bool,
    defaults_reason: String,
    inside_meta: bool,
    /// The first list above without list-type map: `oldSelf` cannot be correlated below it.
    uncorrelatable: Option<String>,
}

/// Upstream `ValidateCustomResourceDefinitionOpenAPISchema` (without CEL compilation).
fn openapi_schema(
    n: &Node,
    path: &str,
    ctx: &SchemaCtx,
    is_root: bool,
    errs: &mut Vec<FieldError>,
) {
    // specStandardValidatorV3.
    if !n.type_.is_empty() && !OPENAPI_TYPES.contains(&n.type_.as_str()) {
        errs.push(FieldError::not_supported(
            &sub(path, "type"),
            n.type_.as_str(),
            &OPENAPI_TYPES,
        ));
    }
    if n.default.is_some() && !ctx.allow_defaults {
        let mut detail = "must not be set".to_string();
        if !ctx.defaults_reason.is_empty() {
            detail.push(' ');
            detail.push_str(&ctx.defaults_reason);
        }
        errs.push(FieldError::forbidden(&sub(path, "default"), &detail));
    }
    for (json, msg) in [
        ("id", "id is not supported"),
        ("additionalItems", "additionalItems is not supported"),
        ("patternProperties", "patternProperties is not supported"),
        ("definitions", "definitions is not supported"),
        ("dependencies", "dependencies is not supported"),
        ("$ref", "$ref is not supported"),
    ] {
        if n.unsupported.contains(&json) {
            errs.push(FieldError::forbidden(&sub(path, json), msg));
        }
    }
    if n.type_ == "null" {
        errs.push(FieldError::forbidden(
            &sub(path, "type"),
            "type cannot be set to null, use nullable as an alternative",
        ));
    }
    if n.items_array {
        errs.push(FieldError::forbidden(
            &sub(path, "items"),
            "items must be a schema object and not an array",
        ));
    }
    if ctx.inside_meta && n.x_embedded_resource {
        errs.push(FieldError::forbidden(
            &sub(path, "x-kubernetes-embedded-resource"),
            "must not be used inside of resource meta",
        ));
    }

    if n.unique_items {
        errs.push(FieldError::forbidden(
            &sub(path, "uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
    if let Some(ap) = &n.additional_properties {
        if !n.properties.is_empty() && !matches!(ap, Additional::Bool(true)) {
            errs.push(FieldError::forbidden(
                &sub(path, "additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            ));
        }
        if let Additional::Schema(s) = ap {
            let mut c = ctx.clone();
            if ctx.inside_meta {
                c.allow_defaults = false;
                c.defaults_reason =
                    "inside additionalProperties applying to object metadata".into();
            }
            openapi_schema(s, &sub(path, "additionalProperties"), &c, false, errs);
        }
    }
    for (k, p) in &n.properties {
        let mut c = ctx.clone();
        if (is_root || n.x_embedded_resource)
            && matches!(k.as_str(), "metadata" | "kind" | "apiVersion")
        {
            c.inside_meta = true;
            if is_root {
                c.allow_defaults = false;
                c.defaults_reason = format!("in top-level {k}");
            }
        }
        openapi_schema(p, &key(&sub(path, "properties"), k), &c, false, errs);
    }
    if let Some(not) = &n.not {
        openapi_schema(not, &sub(path, "not"), ctx, false, errs);
    }
    for (name, list) in [
        ("allOf", &n.all_of),
        ("oneOf", &n.one_of),
        ("anyOf", &n.any_of),
    ] {
        for (i, s) in list.iter().enumerate() {
            openapi_schema(s, &idx(&sub(path, name), i), ctx, false, errs);
        }
    }
    if let Some(items) = &n.items {
        let mut c = ctx.clone();
        if n.x_list_type.as_deref() != Some("map") && c.uncorrelatable.is_none() {
            c.uncorrelatable = Some(path.to_string());
        }
        openapi_schema(items, &sub(path, "items"), &c, false, errs);
    }
    if n.x_preserve_unknown_fields == Some(false) {
        errs.push(FieldError::invalid(
            &sub(path, "x-kubernetes-preserve-unknown-fields"),
            false,
            "must be true or undefined",
        ));
    }
    let type_path = sub(path, "type");
    if n.x_map_type.is_some() && n.type_ != "object" {
        let d = "must be object if x-kubernetes-map-type is specified";
        if n.type_.is_empty() {
            errs.push(FieldError::required(&type_path, d));
        } else {
            errs.push(FieldError::invalid(&type_path, n.type_.as_str(), d));
        }
    }
    if let Some(mt) = &n.x_map_type
        && mt != "atomic"
        && mt != "granular"
    {
        errs.push(FieldError::not_supported(
            &sub(path, "x-kubernetes-map-type"),
            mt.as_str(),
            &["atomic", "granular"],
        ));
    }
    if n.x_list_type.is_some() && n.type_ != "array" {
        let d = "must be array if x-kubernetes-list-type is specified";
        if n.type_.is_empty() {
            errs.push(FieldError::required(&type_path, d));
        } else {
            errs.push(FieldError::invalid(&type_path, n.type_.as_str(), d));
        }
    } else if n.x_list_type.as_deref() == Some("set")
        && let Some(is) = &n.items
    {
        let d = "must be atomic as item of a list with x-kubernetes-list-type=set";
        match is.type_.as_str() {
            "array" if is.x_list_type.as_deref().is_some_and(|t| t != "atomic") => {
                errs.push(FieldError::invalid(
                    &sub(&sub(path, "items"), "x-kubernetes-list-type"),
                    is.x_list_type.clone().unwrap_or_default(),
                    d,
                ))
            }
            "object" if is.x_map_type.as_deref() != Some("atomic") => {
                // Upstream shows the items' list type here (null when unset).
                let shown = is
                    .x_list_type
                    .clone()
                    .map(Value::String)
                    .unwrap_or(Value::Null);
                errs.push(FieldError::invalid(
                    &sub(&sub(path, "items"), "x-kubernetes-map-type"),
                    shown,
                    d,
                ))
            }
            _ => {}
        }
    }
    if let Some(lt) = &n.x_list_type
        && !matches!(lt.as_str(), "atomic" | "set" | "map")
    {
        errs.push(FieldError::not_supported(
            &sub(path, "x-kubernetes-list-type"),
            lt.as_str(),
            &["atomic", "set", "map"],
        ));
    }
    let lt_path = sub(path, "x-kubernetes-list-type");
    if !n.x_list_map_keys.is_empty() {
        match n.x_list_type.as_deref() {
            None => errs.push(FieldError::required(
                &lt_path,
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )),
            Some("map") => {}
            Some(other) => errs.push(FieldError::invalid(
                &lt_path,
                other,
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )),
        }
    }
    let keys_path = sub(path, "x-kubernetes-list-map-keys");
    let keys_value = Value::from(n.x_list_map_keys.clone());
    if n.x_list_type.as_deref() == Some("map") {
        if n.x_list_map_keys.is_empty() {
            errs.push(FieldError::required(
                &keys_path,
                "must not be empty if x-kubernetes-list-type is map",
            ));
        }
        match &n.items {
            None if n.items_array => errs.push(FieldError::invalid(
                &sub(path, "items"),
                n.raw.get("items").cloned().unwrap_or(Value::Null),
                "must only have a single schema if x-kubernetes-list-type is map",
            )),
            None => errs.push(FieldError::required(
                &sub(path, "items"),
                "must have a schema if x-kubernetes-list-type is map",
            )),
            Some(is) if is.type_ != "object" => errs.push(FieldError::invalid(
                &sub(&sub(path, "items"), "type"),
                is.type_.as_str(),
                "must be object if parent array's x-kubernetes-list-type is map",
            )),
            Some(is) => {
                let mut seen: Vec<&str> = Vec::new();
                for k in &n.x_list_map_keys {
                    match is.properties.get(k) {
                        Some(p) if p.type_ == "array" || p.type_ == "object" => {
                            errs.push(FieldError::invalid(
                                &sub(&key(&sub(&sub(path, "items"), "properties"), k), "type"),
                                is.type_.as_str(),
                                "must be a scalar type if parent array's x-kubernetes-list-type is map",
                            ))
                        }
                        Some(_) => {}
                        None => errs.push(FieldError::invalid(
                            &keys_path,
                            keys_value.clone(),
                            "entries must all be names of item properties",
                        )),
                    }
                    if seen.contains(&k.as_str()) {
                        errs.push(FieldError::invalid(
                            &keys_path,
                            keys_value.clone(),
                            "must not contain duplicate entries",
                        ));
                    }
                    seen.push(k);
                }
            }
        }
    }
    // requireMapListKeysMapSetValidation.
    if let (Some(lt @ ("set" | "map")), Some(is)) = (n.x_list_type.as_deref(), &n.items) {
        if is.nullable {
            errs.push(FieldError::forbidden(
                &sub(&sub(path, "items"), "nullable"),
                &format!("cannot be nullable when x-kubernetes-list-type is {lt}"),
            ));
        }
        if lt == "map" {
            for k in &n.x_list_map_keys {
                let Some(p) = is.properties.get(k) else {
                    continue;
                };
                let kp = key(&sub(&sub(path, "items"), "properties"), k);
                if !is.required.contains(k) && p.default.is_none() {
                    errs.push(FieldError::required(
                        &sub(&kp, "default"),
                        "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
                    ));
                }
                if p.nullable {
                    errs.push(FieldError::forbidden(
                        &sub(&kp, "nullable"),
                        "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                    ));
                }
            }
        }
    }
    validation_rules(n, path, ctx.uncorrelatable.as_deref(), errs);
}

/// The checks of `x-kubernetes-validations`: the static ones, then (when those pass) that
/// every rule compiles and sets `optionalOldSelf` only with `oldSelf`.
fn validation_rules(
    n: &Node,
    path: &str,
    uncorrelatable: Option<&str>,
    errs: &mut Vec<FieldError>,
) {
    let before = errs.len();
    static_rule_checks(n, path, errs);
    if errs.len() != before || n.x_validations.is_empty() {
        return;
    }
    let (compiled, failed) = super::cel::compile_rules(n);
    let rule_path = |i: usize, f: &str| sub(&idx(&sub(path, "x-kubernetes-validations"), i), f);
    for e in failed {
        errs.push(FieldError::invalid(
            &rule_path(e.index, "rule"),
            n.x_validations[e.index].clone(),
            &e.detail,
        ));
    }
    for (i, r) in n.x_validations.iter().enumerate() {
        let text = str_of(r.get("rule")).trim();
        let Some(c) = compiled.iter().find(|c| c.text() == text) else {
            continue;
        };
        if c.uses_old_self() {
            if let Some(within) = uncorrelatable {
                errs.push(FieldError::invalid(
                    &rule_path(i, "rule"),
                    text,
                    &format!("oldSelf cannot be used on the uncorrelatable portion of the schema within {within}"),
                ));
            }
        } else if let Some(o) = r.get("optionalOldSelf").filter(|o| !o.is_null()) {
            errs.push(FieldError::invalid(
                &rule_path(i, "optionalOldSelf"),
                o.clone(),
                "may not be set if oldSelf is not used in rule",
            ));
        }
    }
}

fn static_rule_checks(n: &Node, path: &str, errs: &mut Vec<FieldError>) {
    let newline = |s: &str| s.contains('\n') || s.contains('\r');
    for (i, rule) in n.x_validations.iter().enumerate() {
        let p = idx(&sub(path, "x-kubernetes-validations"), i);
        let r = str_of(rule.get("rule"));
        let msg = str_of(rule.get("message"));
        let msg_expr = str_of(rule.get("messageExpression"));
        if r.trim().is_empty() {
            errs.push(FieldError::required(
                &sub(&p, "rule"),
                "rule is not specified",
            ));
        } else if !msg.is_empty() && msg.trim().is_empty() {
            errs.push(FieldError::invalid(
                &sub(&p, "message"),
                msg,
                "must be non-empty if specified",
            ));
        } else if newline(msg.trim()) {
            errs.push(FieldError::invalid(
                &sub(&p, "message"),
                msg,
                "must not contain line breaks",
            ));
        } else if newline(r.trim()) && msg.trim().is_empty() {
            errs.push(FieldError::required(
                &sub(&p, "message"),
                "message must be specified if rule contains line breaks",
            ));
        }
        if !msg_expr.is_empty() && msg_expr.trim().is_empty() {
            errs.push(FieldError::required(
                &sub(&p, "messageExpression"),
                "messageExpression must be non-empty if specified",
            ));
        }
        if let Some(reason) = rule.get("reason").and_then(Value::as_str) {
            let ok = [
                "FieldValueDuplicate",
                "FieldValueForbidden",
                "FieldValueInvalid",
                "FieldValueRequired",
            ];
            if !ok.contains(&reason) {
                errs.push(FieldError::not_supported(&sub(&p, "reason"), reason, &ok));
            }
        }
        let fp = str_of(rule.get("fieldPath"));
        if !fp.is_empty() && fp.trim().is_empty() {
            errs.push(FieldError::invalid(
                &sub(&p, "fieldPath"),
                fp,
                "must be non-empty if specified",
            ));
        }
        if newline(fp) {
            errs.push(FieldError::invalid(
                &sub(&p, "fieldPath"),
                fp,
                "must not contain line breaks",
            ));
        }
    }
}

/// Upstream `defaulting.ValidateDefaults`: every `default` must survive pruning unchanged
/// and validate against its own schema (defaults inside resource metadata are skipped).
fn validate_defaults(n: &Node, path: &str, inside_meta: bool, errs: &mut Vec<FieldError>) {
    let inside_meta = inside_meta && !n.x_embedded_resource;
    if let (Some(d), false) = (&n.default, inside_meta) {
        let dpath = sub(path, "default");
        let mut pruned = d.clone();
        super::prune::prune_value(&mut pruned, n, n.x_embedded_resource);
        if &pruned != d {
            errs.push(FieldError::invalid(
                &dpath,
                d.clone(),
                "must not have unknown fields",
            ));
        }
        let mut v = super::validate::validate_at(n, d, &dpath);
        if v.is_empty() {
            super::embedded::validate_embedded(&dpath, d, Some(n), &mut v);
        }
        errs.extend(v);
    }
    if let Some(items) = &n.items {
        validate_defaults(items, &sub(path, "items"), inside_meta, errs);
    }
    for (k, p) in &n.properties {
        let meta = inside_meta
            || (n.x_embedded_resource && matches!(k.as_str(), "metadata" | "apiVersion" | "kind"));
        validate_defaults(p, &key(&sub(path, "properties"), k), meta, errs);
    }
}
