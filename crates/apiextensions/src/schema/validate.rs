//! Validation of a custom resource against its schema: a port of kube-openapi's
//! `validate.SchemaValidator` (the validators, their order and messages) and of upstream's
//! conversion of its result into field errors (`kubeOpenAPIResultToFieldErrors`), with
//! ratcheting on update (errors of values unchanged from the old object are dropped, as
//! the `CRDValidationRatcheting` feature does).

use apiserver::registry::{FieldError, FieldErrorType};
use serde_json::Value;

use super::formats;
use super::gofmt::{float, quote};
use super::node::{Additional, Node};

/// What an error becomes as a field error.
#[derive(Clone, Debug, PartialEq)]
enum Code {
    Required,
    Enum(Vec<Value>),
    TooLong(i64),
    TooMany {
        actual: usize,
        max: i64,
    },
    InvalidType,
    Other,
    /// Not a `*Validation` upstream (anyOf/oneOf/allOf/not): reported at the nil path.
    Composite,
}

#[derive(Clone, Debug, PartialEq)]
struct OErr {
    code: Code,
    name: String,
    value: Option<Value>,
    message: String,
}

#[derive(Clone, Debug, Default)]
struct Res {
    errors: Vec<OErr>,
    matches: usize,
}

impl Res {
    fn valid(&self) -> bool {
        self.errors.is_empty()
    }
    fn merge(&mut self, other: Res) {
        self.errors.extend(other.errors);
        self.matches += other.matches;
    }
    fn add(&mut self, e: OErr) {
        self.errors.push(e);
    }
}

fn e(code: Code, name: &str, value: Option<Value>, message: String) -> OErr {
    OErr {
        code,
        name: name.to_string(),
        value,
        message,
    }
}

fn composite(message: String) -> OErr {
    e(Code::Composite, "", None, message)
}

fn invalid_type(name: &str, type_name: &str, value: &str) -> OErr {
    e(
        Code::InvalidType,
        name,
        Some(Value::String(value.to_string())),
        format!(
            "{name} in body must be of type {type_name}: {}",
            quote(value)
        ),
    )
}

/// Validates `data` against `s` (the whole resource at the root), optionally ratcheting
/// against the old object of an update.
pub(crate) fn validate(s: &Node, data: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let res = validate_node(s, data, "", old);
    res.errors
        .into_iter()
        .map(|e| to_field_error(e, None))
        .collect()
}

/// Validates a value (a schema's `default`) with errors under `base` (upstream passes a
/// field path to `ValidateCustomResource` there, instead of nil).
pub(crate) fn validate_at(s: &Node, data: &Value, base: &str) -> Vec<FieldError> {
    let res = validate_node(s, data, "", None);
    res.errors
        .into_iter()
        .map(|e| to_field_error(e, Some(base)))
        .collect()
}

fn to_field_error(err: OErr, base: Option<&str>) -> FieldError {
    // A nil base path renders as "<nil>".
    let base_str = base.unwrap_or("<nil>");
    if err.code == Code::Composite {
        return FieldError::invalid(base_str, "", &err.message);
    }
    let path = if !err.name.is_empty() && err.name != "." {
        let name = err.name.strip_prefix('.').unwrap_or(&err.name);
        match base {
            Some(b) => format!("{b}.{name}"),
            None => name.to_string(),
        }
    } else {
        base_str.to_string()
    };
    let value = err.value.unwrap_or_else(|| Value::String(String::new()));
    match err.code {
        Code::Required => FieldError::required(&path, ""),
        Code::Enum(values) => {
            let shown: Vec<String> = values
                .iter()
                .map(|v| match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect();
            let refs: Vec<&str> = shown.iter().map(String::as_str).collect();
            // Upstream renders a nil value as the string "null" (quoted).
            let value = if value.is_null() {
                Value::String("null".into())
            } else {
                value
            };
            FieldError::not_supported(&path, value, &refs)
        }
        Code::TooLong(max) => FieldError::too_long(&path, max.max(0) as usize),
        Code::TooMany { actual, max } => too_many(&path, actual, max),
        Code::InvalidType => FieldError {
            type_: FieldErrorType::TypeInvalid,
            field: path,
            bad_value: Some(value),
            detail: err.message,
        },
        Code::Other | Code::Composite => FieldError::invalid(&path, value, &err.message),
    }
}

/// Upstream's `field.TooMany`: `Too many: <actual>: must have at most N items`. The shared
/// `FieldError` shows no value for this type, so the count leads the detail.
pub(crate) fn too_many(path: &str, actual: usize, max: i64) -> FieldError {
    let items = if max > 1 { "items" } else { "item" };
    FieldError {
        type_: FieldErrorType::TooMany,
        field: path.to_string(),
        bad_value: None,
        detail: format!("{actual}: must have at most {max} {items}"),
    }
}

fn types(s: &Node) -> Vec<&str> {
    if s.x_int_or_string {
        vec!["integer", "string"]
    } else if s.type_.is_empty() {
        Vec::new()
    } else {
        vec![s.type_.as_str()]
    }
}

#[derive(Clone, Copy)]
enum Num {
    I(i64),
    F(f64),
}

fn num(v: &Value) -> Option<Num> {
    let Value::Number(n) = v else { return None };
    if let Some(i) = n.as_i64() {
        Some(Num::I(i))
    } else {
        n.as_f64().map(Num::F)
    }
}

fn as_f64(n: Num) -> f64 {
    match n {
        Num::I(i) => i as f64,
        Num::F(f) => f,
    }
}

/// go-openapi's `swag.IsFloat64AJSONInteger`.
fn json_integer(f: f64) -> bool {
    if !f.is_finite() || f.abs() > 1.797_693_134_862_315_7e308 {
        return false;
    }
    let g = f.trunc();
    if f == g {
        return true;
    }
    let diff = (f - g).abs();
    if g == 0.0 {
        return diff < 1e-9 * f64::MIN_POSITIVE;
    }
    diff / (f.abs() + g.abs()) < 1e-9
}

fn info(data: &Value) -> (&'static str, &'static str) {
    match data {
        Value::Bool(_) => ("boolean", ""),
        Value::String(_) => ("string", ""),
        Value::Number(_) => match num(data) {
            Some(Num::I(_)) => ("integer", "int64"),
            _ => ("number", "float64"),
        },
        Value::Array(_) => ("array", ""),
        Value::Object(_) => ("object", ""),
        Value::Null => ("", ""),
    }
}

fn type_check(s: &Node, format: &str, data: &Value, path: &str) -> Option<OErr> {
    let ts = types(s);
    if data.is_null() {
        if !ts.is_empty() && !s.nullable {
            return Some(invalid_type(path, &ts.join(","), "null"));
        }
        return None;
    }
    let (sch_type, fmt) = info(data);
    let float_int = sch_type == "number"
        && num(data).is_some_and(|n| json_integer(as_f64(n)))
        && ts.contains(&"integer");
    let int_float = sch_type == "integer" && ts.contains(&"number");
    let str_or_slice = matches!(data, Value::String(_) | Value::Array(_));
    let type_matches = ts.contains(&sch_type) || float_int || int_float;
    let numeric_type = ts.contains(&"number") || ts.contains(&"integer");
    // A non-string value must match the type or the format.
    let format_or_type_ok = format.is_empty() || type_matches || fmt == format;
    if !str_or_slice && !format_or_type_ok {
        return Some(invalid_type(path, format, fmt));
    }
    // A string format on a non-numeric type is the format validator's business.
    if str_or_slice && !format.is_empty() && !numeric_type {
        return None;
    }
    if !(ts.contains(&sch_type) || float_int || int_float) {
        return Some(invalid_type(path, &ts.join(","), sch_type));
    }
    None
}

fn child_path(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

fn validate_node(s: &Node, data: &Value, path: &str, old: Option<&Value>) -> Res {
    let mut res = Res::default();
    let format = formats::effective(&s.type_, s.x_int_or_string, &s.format);
    let type_applies = !types(s).is_empty() || !format.is_empty();
    if data.is_null() {
        if let Some(err) = type_check(s, &format, data, path) {
            res.add(err);
        }
        if let Some(err) = enum_check(s, data, path) {
            res.add(err);
        }
        return ratchet(res, data, old);
    }
    if type_applies {
        if let Some(err) = type_check(s, &format, data, path) {
            res.add(err);
        }
        res.matches += 1;
    }
    res.merge(schema_props(s, data, path, old));
    res.matches += 1;
    if let Value::String(text) = data {
        if let Some(err) = string_check(s, text, path) {
            res.add(err);
        }
        res.matches += 1;
        if !format.is_empty() && formats::is_string_format(&format) {
            if !formats::valid(&format, text) {
                res.add(e(
                    Code::InvalidType,
                    path,
                    Some(data.clone()),
                    format!("{path} in body must be of type {format}: {}", quote(text)),
                ));
            }
            res.matches += 1;
        }
    }
    if let Some(n) = num(data) {
        number_check(s, n, data, path, &mut res);
        res.matches += 1;
    }
    if let Value::Array(items) = data {
        slice_check(s, items, path, old, &mut res);
        res.matches += 1;
    }
    if let Some(err) = enum_check(s, data, path) {
        res.add(err);
    }
    res.matches += 1;
    if let Value::Object(map) = data {
        object_check(s, map, path, old, &mut res);
        res.matches += 1;
    }
    res.matches += 1;
    ratchet(res, data, old)
}

/// Ratcheting: a value equal to the old one keeps its (old) errors to itself.
fn ratchet(res: Res, data: &Value, old: Option<&Value>) -> Res {
    if !res.valid() && old == Some(data) {
        return Res {
            errors: Vec::new(),
            matches: res.matches,
        };
    }
    res
}

fn schema_props(s: &Node, data: &Value, path: &str, old: Option<&Value>) -> Res {
    let mut main = Res::default();
    if !s.any_of.is_empty() {
        let mut best: Option<Res> = None;
        let mut first_success: Option<Res> = None;
        for sub in &s.any_of {
            let r = validate_node(sub, data, path, old);
            if r.valid() {
                best = None;
                first_success = Some(r);
                break;
            }
            if best.as_ref().is_none_or(|b| r.matches > b.matches) {
                best = Some(r);
            }
        }
        if first_success.is_none() {
            main.add(composite(format!(
                "{} must validate at least one schema (anyOf)",
                quote(path)
            )));
        }
        if let Some(b) = best.or(first_success) {
            main.merge(b);
        }
    }
    if !s.one_of.is_empty() {
        let mut best: Option<Res> = None;
        let mut first_success: Option<Res> = None;
        let mut validated = 0;
        for sub in &s.one_of {
            let r = validate_node(sub, data, path, old);
            if r.valid() {
                validated += 1;
                best = None;
                if first_success.is_none() {
                    first_success = Some(r);
                }
                continue;
            }
            if validated == 0 && best.as_ref().is_none_or(|b| r.matches > b.matches) {
                best = Some(r);
            }
        }
        if validated != 1 {
            let more = if validated == 0 {
                "Found none valid".to_string()
            } else {
                format!("Found {validated} valid alternatives")
            };
            main.add(composite(format!(
                "{} must validate one and only one schema (oneOf). {more}",
                quote(path)
            )));
            if let Some(b) = best {
                main.merge(b);
            }
        } else if let Some(f) = first_success {
            main.merge(f);
        }
    }
    if !s.all_of.is_empty() {
        let mut validated = 0;
        for sub in &s.all_of {
            let r = validate_node(sub, data, path, old);
            if r.valid() {
                validated += 1;
            }
            main.merge(r);
        }
        if validated != s.all_of.len() {
            let more = if validated == 0 {
                ". None validated"
            } else {
                ""
            };
            main.add(composite(format!(
                "{} must validate all the schemas (allOf){more}",
                quote(path)
            )));
        }
    }
    if let Some(not) = &s.not
        && validate_node(not, data, path, old).valid()
    {
        main.add(composite(format!(
            "{} must not validate the schema (not)",
            quote(path)
        )));
    }
    main.matches += 1;
    main
}

fn string_check(s: &Node, text: &str, path: &str) -> Option<OErr> {
    let len = text.chars().count() as i64;
    if let Some(max) = s.max_length
        && len > max
    {
        return Some(e(
            Code::TooLong(max),
            path,
            Some(Value::String(text.into())),
            format!("{path} in body should be at most {max} chars long"),
        ));
    }
    if let Some(min) = s.min_length
        && len < min
    {
        return Some(e(
            Code::Other,
            path,
            Some(Value::String(text.into())),
            format!("{path} in body should be at least {min} chars long"),
        ));
    }
    if !s.pattern.is_empty() {
        let shown = match &s.compiled.0 {
            Some(re) if re.is_match(text) => return None,
            Some(_) => s.pattern.clone(),
            None => match regex::Regex::new(&s.pattern) {
                Err(err) => format!(
                    "{}, but pattern is invalid: {}",
                    s.pattern,
                    super::structural::regex_error(&s.pattern, &err)
                ),
                Ok(re) if re.is_match(text) => return None,
                Ok(_) => s.pattern.clone(),
            },
        };
        return Some(e(
            Code::Other,
            path,
            Some(Value::String(text.into())),
            format!("{path} in body should match '{shown}'"),
        ));
    }
    None
}

/// kube-openapi's `IsValueValidAgainstRange`: whether `v` fits the schema's numeric type
/// and format (an error names `prefix`, e.g. `Checked` or `Minimum boundary`).
fn range_error(v: Num, type_name: &str, format: &str, prefix: &str, path: &str) -> Option<OErr> {
    let ok = match type_name {
        "integer" => {
            let whole = match v {
                Num::I(i) => Some(i),
                // Go formats the float without exponent and parses it as an int64.
                Num::F(f)
                    if f.is_finite() && f.fract() == 0.0 && f.abs() < 9.223_372_036_854_775e18 =>
                {
                    Some(f as i64)
                }
                Num::F(_) => None,
            };
            match (whole, format) {
                (Some(i), "int32") => i32::try_from(i).is_ok(),
                (Some(_), _) => true,
                (None, _) => false,
            }
        }
        _ => format != "float" || as_f64(v).abs() <= f32::MAX as f64,
    };
    if ok {
        return None;
    }
    let shown_type = if type_name.is_empty() {
        "number"
    } else {
        type_name
    };
    let message = if format.is_empty() {
        format!("{prefix} value must be of type {shown_type} (default format) in {path}")
    } else {
        format!("{prefix} value must be of type {shown_type} with format {format} in {path}")
    };
    Some(composite(message))
}

fn number_check(s: &Node, n: Num, data: &Value, path: &str, res: &mut Res) {
    let type_name = match types(s).as_slice() {
        ["integer"] => "integer",
        ["number"] => "number",
        _ => "",
    };
    let format = formats::effective(&s.type_, s.x_int_or_string, &s.format);
    let format = match (type_name, format.as_str()) {
        ("integer", "int32" | "int64") | ("number", "float" | "double") => format.clone(),
        _ => String::new(),
    };
    let value = Some(data.clone());
    if let Some(err) = range_error(n, type_name, &format, "Checked", path) {
        res.add(err);
    }
    if let Some(factor) = s.multiple_of {
        let range = range_error(Num::F(factor), type_name, &format, "MultipleOf", path);
        let native = range.is_none();
        if let Some(r) = range {
            res.add(r);
        }
        let err = match n {
            Num::I(v) if native => {
                let f = factor as i64;
                if f <= 0 {
                    Some(e(
                        Code::Other,
                        path,
                        Some(Value::from(f)),
                        format!("factor MultipleOf declared for {path} must be positive: {f}"),
                    ))
                } else if v % f != 0 {
                    Some(e(
                        Code::Other,
                        path,
                        value.clone(),
                        format!("{path} in body should be a multiple of {f}"),
                    ))
                } else {
                    None
                }
            }
            _ => {
                let v = as_f64(n);
                if factor <= 0.0 {
                    Some(e(
                        Code::Other,
                        path,
                        serde_json::Number::from_f64(factor).map(Value::Number),
                        format!(
                            "factor MultipleOf declared for {path} must be positive: {}",
                            float(factor)
                        ),
                    ))
                } else {
                    let mult = if factor < 1.0 {
                        1.0 / factor * v
                    } else {
                        v / factor
                    };
                    (!json_integer(mult)).then(|| {
                        e(
                            Code::Other,
                            path,
                            value.clone(),
                            format!("{path} in body should be a multiple of {}", float(factor)),
                        )
                    })
                }
            }
        };
        if let Some(err) = err {
            res.add(err);
        }
    }
    for (bound, excl, is_min) in [
        (s.minimum, s.exclusive_minimum, true),
        (s.maximum, s.exclusive_maximum, false),
    ] {
        let Some(b) = bound else { continue };
        let prefix = if is_min {
            "Minimum boundary"
        } else {
            "Maximum boundary"
        };
        let range = range_error(Num::F(b), type_name, &format, prefix, path);
        let native = range.is_none();
        if let Some(r) = range {
            res.add(r);
        }
        // Go compares an integer natively against the bound converted (truncated) to int64.
        let (fails, shown) = match n {
            Num::I(v) if native => {
                let m = b as i64;
                let fails = if is_min {
                    (!excl && v < m) || (excl && v <= m)
                } else {
                    (!excl && v > m) || (excl && v >= m)
                };
                (fails, m.to_string())
            }
            _ => {
                let v = as_f64(n);
                let fails = if is_min {
                    (!excl && v < b) || (excl && v <= b)
                } else {
                    (!excl && v > b) || (excl && v >= b)
                };
                (fails, float(b))
            }
        };
        if fails {
            let op = match (is_min, excl) {
                (true, true) => "greater than",
                (true, false) => "greater than or equal to",
                (false, true) => "less than",
                (false, false) => "less than or equal to",
            };
            res.add(e(
                Code::Other,
                path,
                value.clone(),
                format!("{path} in body should be {op} {shown}"),
            ));
        }
    }
}

/// The old element an array element correlates with (ratcheting): by keys in a map-list,
/// by value in a set, none otherwise.
pub(crate) fn correlate<'a>(
    s: &Node,
    item: &Value,
    index: usize,
    old: Option<&'a Value>,
) -> Option<&'a Value> {
    let old_items = old?.as_array()?;
    match s.x_list_type.as_deref() {
        Some("map") => {
            let key_of = |v: &Value| -> Option<Vec<Value>> {
                let m = v.as_object()?;
                Some(
                    s.x_list_map_keys
                        .iter()
                        .map(|k| m.get(k).cloned().unwrap_or(Value::Null))
                        .collect(),
                )
            };
            let k = key_of(item)?;
            old_items.iter().find(|o| key_of(o).as_ref() == Some(&k))
        }
        Some("set") => old_items.iter().find(|o| *o == item),
        _ => {
            let _ = index;
            None
        }
    }
}

fn slice_check(s: &Node, items: &[Value], path: &str, old: Option<&Value>, res: &mut Res) {
    if let Some(item_schema) = &s.items {
        for (i, v) in items.iter().enumerate() {
            let old_item = correlate(s, v, i, old);
            res.merge(validate_node(
                item_schema,
                v,
                &format!("{path}[{i}]"),
                old_item,
            ));
        }
    }
    let size = items.len();
    if let Some(min) = s.min_items
        && (size as i64) < min
    {
        res.add(e(
            Code::Other,
            path,
            Some(Value::from(size)),
            format!("{path} in body should have at least {min} items"),
        ));
    }
    if let Some(max) = s.max_items
        && (size as i64) > max
    {
        res.add(e(
            Code::TooMany { actual: size, max },
            path,
            Some(Value::from(size)),
            format!("{path} in body should have at most {max} items"),
        ));
    }
    if s.unique_items {
        let dup = items
            .iter()
            .enumerate()
            .any(|(i, a)| items[..i].iter().any(|b| a == b));
        if dup {
            res.add(e(
                Code::Other,
                path,
                None,
                format!("{path} in body shouldn't contain duplicates"),
            ));
        }
    }
}

/// Go's enum check: the value converted to each enum value's type, then deep-equal.
fn enum_matches(data: &Value, candidate: &Value) -> bool {
    match (num(data), num(candidate)) {
        (Some(Num::I(a)), Some(Num::I(b))) => a == b,
        (Some(Num::I(a)), Some(Num::F(b))) => (a as f64) == b,
        // A float converted to an integer type truncates.
        (Some(Num::F(a)), Some(Num::I(b))) => a.is_finite() && (a.trunc() as i64) == b,
        (Some(Num::F(a)), Some(Num::F(b))) => a == b,
        _ => data == candidate,
    }
}

fn enum_check(s: &Node, data: &Value, path: &str) -> Option<OErr> {
    let values = s.enum_.as_ref().filter(|v| !v.is_empty())?;
    if !data.is_null()
        && values
            .iter()
            .filter(|v| !v.is_null())
            .any(|v| enum_matches(data, v))
    {
        return None;
    }
    let shown: Vec<String> = values.iter().map(go_v).collect();
    Some(e(
        Code::Enum(values.clone()),
        path,
        Some(data.clone()),
        format!("{path} in body should be one of [{}]", shown.join(" ")),
    ))
}

/// A rough Go `%v` of a JSON value (used only in messages that are not shown).
fn go_v(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "<nil>".into(),
        other => other.to_string(),
    }
}

fn object_check(
    s: &Node,
    map: &serde_json::Map<String, Value>,
    path: &str,
    old: Option<&Value>,
    res: &mut Res,
) {
    let n = map.len();
    if let Some(min) = s.min_properties
        && (n as i64) < min
    {
        res.add(e(
            Code::Other,
            path,
            Some(Value::from(n)),
            format!("{path} in body should have at least {min} properties"),
        ));
    }
    if let Some(max) = s.max_properties
        && (n as i64) > max
    {
        res.add(e(
            Code::TooMany { actual: n, max },
            path,
            Some(Value::from(n)),
            format!("{path} in body should have at most {max} properties"),
        ));
    }
    let old_map = old.and_then(Value::as_object);
    let old_child = |k: &str| {
        // Ratcheting never correlates the root's apiVersion and kind.
        if path.is_empty() && (k == "apiVersion" || k == "kind") {
            None
        } else {
            old_map.and_then(|m| m.get(k))
        }
    };
    match &s.additional_properties {
        Some(Additional::Bool(false)) => {
            for k in map.keys() {
                if !s.properties.contains_key(k) {
                    res.add(e(
                        Code::Other,
                        path,
                        Some(Value::String(k.clone())),
                        format!("{path}.{k} in body is a forbidden property"),
                    ));
                }
            }
        }
        Some(Additional::Schema(ap)) => {
            for (k, v) in map {
                if !s.properties.contains_key(k) {
                    res.merge(validate_node(ap, v, &format!("{path}.{k}"), old_child(k)));
                }
            }
        }
        _ => {}
    }
    for (name, prop) in &s.properties {
        if let Some(v) = map.get(name) {
            res.merge(validate_node(
                prop,
                v,
                &child_path(path, name),
                old_child(name),
            ));
        }
    }
    for k in &s.required {
        if !map.contains_key(k) {
            res.add(e(
                Code::Required,
                &format!("{path}.{k}"),
                None,
                format!("{path}.{k} in body is required"),
            ));
        }
    }
}
