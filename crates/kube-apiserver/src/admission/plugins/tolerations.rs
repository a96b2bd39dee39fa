//! Toleration lists merged as upstream's `pkg/util/tolerations` does.

use serde_json::Value;

use crate::apis::json::{get, str_at};

/// Whether `ss` tolerates everything `t` does (upstream `isSuperset`).
pub fn is_superset(ss: &Value, t: &Value) -> bool {
    if ss == t {
        return true;
    }
    let field = |v: &Value, k: &str| str_at(v, k).unwrap_or_default().to_string();
    let (ss_key, ss_op, ss_effect) = (field(ss, "key"), field(ss, "operator"), field(ss, "effect"));
    if field(t, "key") != ss_key && (!ss_key.is_empty() || ss_op != "Exists") {
        return false;
    }
    if field(t, "effect") != ss_effect && !ss_effect.is_empty() {
        return false;
    }
    if ss_effect == "NoExecute"
        && let Some(limit) = get(ss, "tolerationSeconds").and_then(Value::as_i64)
    {
        match get(t, "tolerationSeconds").and_then(Value::as_i64) {
            Some(seconds) if seconds <= limit => {}
            _ => return false,
        }
    }
    match ss_op.as_str() {
        "Equal" | "" => field(t, "operator") == "Equal" && field(t, "value") == field(ss, "value"),
        "Exists" => true,
        _ => false,
    }
}

/// Upstream `MergeTolerations`: both lists, dropping any toleration another one covers.
pub fn merge_tolerations(first: &[Value], second: &[Value]) -> Vec<Value> {
    let all: Vec<&Value> = first.iter().chain(second).collect();
    let mut merged: Vec<Value> = Vec::new();
    for (i, t) in all.iter().enumerate() {
        if merged.iter().any(|m| is_superset(m, t)) {
            continue;
        }
        if all[i + 1..]
            .iter()
            .any(|later| *later != *t && is_superset(later, t))
        {
            continue;
        }
        merged.push((*t).clone());
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merged_tolerations_drop_the_covered_ones() {
        let pod = [
            json!({"key": "a", "operator": "Equal", "value": "1", "effect": "NoSchedule"}),
            json!({"key": "b", "operator": "Exists"}),
        ];
        let class = [
            json!({"key": "a", "operator": "Exists", "effect": "NoSchedule"}),
            json!({"key": "c", "operator": "Exists"}),
            json!({"key": "b", "operator": "Exists"}),
        ];
        assert_eq!(
            merge_tolerations(&pod, &class),
            [
                json!({"key": "b", "operator": "Exists"}),
                json!({"key": "a", "operator": "Exists", "effect": "NoSchedule"}),
                json!({"key": "c", "operator": "Exists"}),
            ]
        );
    }
}
