//! Building JSON values without copying them.
//!
//! `serde_json::json!` turns every interpolated expression into a value with `to_value`, which
//! for an expression that already is a [`Value`] serializes it into a deep copy; with the
//! items of a large list that copy (and freeing the original) cost more than building the
//! list. [`object`] moves the values in.

use serde_json::{Map, Value};

/// A JSON object of `members`, moved in as they are.
pub fn object<const N: usize>(members: [(&str, Value); N]) -> Value {
    Value::Object(
        members
            .into_iter()
            .map(|(key, value)| (key.to_string(), value))
            .collect::<Map<_, _>>(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn equals_the_json_macro() {
        let items = vec![json!({"a": 1}), json!([true])];
        assert_eq!(
            object([
                ("kind", json!("List")),
                ("items", Value::Array(items.clone()))
            ]),
            json!({"kind": "List", "items": items})
        );
    }
}
