//! Renders JSON values the way Go's `fmt` prints decoded `interface{}` values.
//!
//! Upstream's strategic merge patch errors embed the offending map or list with `%v`
//! (`map[name:foo value:bar]`), and clients and tests compare those messages, so we reproduce
//! Go's notation: maps with sorted keys, space-separated lists, numbers as `float64`.

use serde_json::Value;

/// Formats `value` like Go's `%v` of the value decoded by `encoding/json` into `interface{}`.
pub(crate) fn go_value(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

/// Formats a list of lists like Go's `fmt.Sprint` of `[][]interface{}`.
pub(crate) fn go_lists(lists: &[&[Value]]) -> String {
    let inner: Vec<String> = lists.iter().map(|l| go_list(l)).collect();
    format!("[{}]", inner.join(" "))
}

/// Formats a list like Go's `%v` of `[]interface{}`.
pub(crate) fn go_list(list: &[Value]) -> String {
    let inner: Vec<String> = list.iter().map(go_value).collect();
    format!("[{}]", inner.join(" "))
}

/// Formats `value` like Go's `%s`: strings verbatim, anything else as a bad-verb marker.
pub(crate) fn go_string_verb(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => "%!s(<nil>)".to_owned(),
        other => format!("%!s({}={})", go_type_name(other), go_value(other)),
    }
}

/// The Go type name `reflect.TypeOf` gives for a decoded JSON value.
pub(crate) fn go_type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("<nil>"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&go_float(n.as_f64().unwrap_or(f64::NAN))),
        Value::String(s) => out.push_str(s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            // serde_json's map iterates in key order, as Go's fmt prints maps.
            out.push_str("map[");
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(key);
                out.push(':');
                write_value(out, item);
            }
            out.push(']');
        }
    }
}

/// Go's `%v` of a `float64`: the shortest representation, in exponent form (`1e+06`) when the
/// decimal exponent is below -4 or at least 6 (Go's `%g` rule for the shortest precision).
fn go_float(f: f64) -> String {
    if !f.is_finite() {
        return format!("{f}");
    }
    if f == 0.0 {
        return "0".to_owned();
    }
    // Rust's `{:e}` gives the shortest round-trip mantissa, e.g. `1.5e7`.
    let sci = format!("{f:e}");
    let Some((mantissa, exponent)) = sci.split_once('e') else {
        return sci;
    };
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if (-4..6).contains(&exponent) {
        return format!("{f}");
    }
    let sign = if exponent < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exponent.abs())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn formats_like_go() {
        assert_eq!(
            go_value(&json!({"value": "a", "name": 1, "l": [true, null]})),
            "map[l:[true <nil>] name:1 value:a]"
        );
        assert_eq!(go_value(&json!(1.5)), "1.5");
        assert_eq!(go_value(&json!(1_000_000)), "1e+06");
        assert_eq!(go_value(&json!(123_456)), "123456");
        assert_eq!(go_value(&json!(0.00001)), "1e-05");
        assert_eq!(go_value(&json!(0.0001)), "0.0001");
        assert_eq!(go_string_verb(&json!(1)), "%!s(float64=1)");
        assert_eq!(
            go_lists(&[&[json!(1)], &[json!("a"), json!("b")]]),
            "[[1] [a b]]"
        );
    }
}
