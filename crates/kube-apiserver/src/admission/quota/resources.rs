//! Resource lists (`corev1.ResourceList`: resource name → quantity) and the operations quota
//! needs on them (upstream `k8s.io/apiserver/pkg/quota/v1/resources.go`).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use crate::apis::quantity::Quantity;

/// A resource list, sorted by name.
pub type ResourceList = BTreeMap<String, Quantity>;

/// The list at `value` (a JSON object of quantities); entries that are no quantity are left
/// out (they are refused where the object is validated).
pub fn from_json(value: Option<&Value>) -> ResourceList {
    let Some(Value::Object(map)) = value else {
        return ResourceList::new();
    };
    map.iter()
        .filter_map(|(name, v)| {
            let quantity = match v {
                Value::String(s) => Quantity::parse(s).ok()?,
                Value::Number(n) => Quantity::parse(&n.to_string()).ok()?,
                _ => return None,
            };
            Some((name.clone(), quantity))
        })
        .collect()
}

/// The list as a JSON object of canonical quantity strings.
pub fn to_json(list: &ResourceList) -> Value {
    Value::Object(
        list.iter()
            .map(|(k, v)| (k.clone(), Value::String(v.to_string())))
            .collect::<Map<String, Value>>(),
    )
}

/// `a + b`, key by key (upstream `quota.Add`).
pub fn add(a: &ResourceList, b: &ResourceList) -> ResourceList {
    let mut result = a.clone();
    for (key, value) in b {
        let sum = match result.get(key) {
            Some(existing) => existing.add(value),
            None => *value,
        };
        result.insert(key.clone(), sum);
    }
    result
}

/// `a - b` for the keys of `a`, never below zero (upstream `SubtractWithNonNegativeResult`).
pub fn subtract_non_negative(a: &ResourceList, b: &ResourceList) -> ResourceList {
    let zero = Quantity::zero();
    a.iter()
        .map(|(key, value)| {
            let diff = value.sub(b.get(key).unwrap_or(&zero));
            let diff = if diff.is_negative() {
                Quantity::zero()
            } else {
                diff
            };
            (key.clone(), diff)
        })
        .collect()
}

/// Only the entries named in `names` (upstream `Mask`).
pub fn mask<'a>(list: &ResourceList, names: impl IntoIterator<Item = &'a String>) -> ResourceList {
    names
        .into_iter()
        .filter_map(|name| Some((name.clone(), *list.get(name)?)))
        .collect()
}

/// Whether every entry of `a` is at most the same entry of `b` (missing in `b` is no
/// limit); the names that exceed otherwise (upstream `LessThanOrEqual`).
pub fn less_than_or_equal(a: &ResourceList, b: &ResourceList) -> (bool, Vec<String>) {
    let exceeded: Vec<String> = a
        .iter()
        .filter(|(key, value)| b.get(*key).is_some_and(|limit| *value > limit))
        .map(|(key, _)| key.clone())
        .collect();
    (exceeded.is_empty(), exceeded)
}

/// Whether both lists have the same names with equal quantities (upstream `Equals`).
pub fn equals(a: &ResourceList, b: &ResourceList) -> bool {
    a.len() == b.len() && a.iter().all(|(k, v)| b.get(k) == Some(v))
}

/// Without its zero entries (upstream `RemoveZeros`).
pub fn remove_zeros(list: &ResourceList) -> ResourceList {
    list.iter()
        .filter(|(_, v)| !v.is_zero())
        .map(|(k, v)| (k.clone(), *v))
        .collect()
}

/// The names with negative quantities (upstream `IsNegative`).
pub fn negative_names(list: &ResourceList) -> Vec<String> {
    list.iter()
        .filter(|(_, v)| v.is_negative())
        .map(|(k, _)| k.clone())
        .collect()
}

/// `name=quantity` pairs joined by commas, sorted by name (upstream `prettyPrint`).
pub fn pretty_print(list: &ResourceList) -> String {
    list.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Names sorted and joined by commas (upstream `prettyPrintResourceNames`).
pub fn pretty_print_names<'a>(names: impl IntoIterator<Item = &'a String>) -> String {
    names
        .into_iter()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn list(v: Value) -> ResourceList {
        from_json(Some(&v))
    }

    #[test]
    fn arithmetic_and_comparison_key_by_key() {
        let a = list(json!({"pods": "2", "requests.cpu": "500m"}));
        let b = list(json!({"pods": "1", "services": "1"}));
        assert_eq!(
            to_json(&add(&a, &b)),
            json!({"pods": "3", "requests.cpu": "500m", "services": "1"})
        );
        assert_eq!(
            to_json(&subtract_non_negative(&b, &a)),
            json!({"pods": "0", "services": "1"})
        );
        let hard = list(json!({"pods": "2"}));
        assert_eq!(
            less_than_or_equal(&add(&a, &b), &hard),
            (false, vec!["pods".to_string()])
        );
        assert!(less_than_or_equal(&a, &hard).0);
        assert!(equals(
            &list(json!({"cpu": "1000m"})),
            &list(json!({"cpu": "1"}))
        ));
        assert_eq!(pretty_print(&a), "pods=2,requests.cpu=500m");
        assert_eq!(
            to_json(&remove_zeros(&list(json!({"a": "0", "b": "1"})))),
            json!({"b": "1"})
        );
    }
}
