//! The two kinds of MutatingAdmissionPolicy mutations (upstream `policy/mutating/patch`):
//! an `ApplyConfiguration` (an object built by CEL, merged into the object as server-side apply
//! merges, by the resource's schema) and a `JSONPatch` (a list of RFC 6902 operations built by
//! CEL).

use apiserver::endpoints::apply::ApplySchema;
use apiserver::endpoints::apply::typed::merge;
use kube_cel::cel;
use serde_json::Value;

use super::cel::{to_json, type_name};

/// Merges the result of an `applyConfiguration` expression into `object`.
pub fn apply_configuration(
    object: &Value,
    result: &cel::Value,
    schema: &dyn ApplySchema,
) -> Result<Value, String> {
    let cel::Value::Map(_) = result else {
        return Err(format!(
            "unsupported return type from ApplyConfiguration expression: {}",
            type_name(result)
        ));
    };
    let applied = to_json(result).map_err(|e| format!("type mismatch: {e}"))?;
    if applied.get("apiVersion").is_some() || applied.get("kind").is_some() {
        return Err(
            "invalid ApplyConfiguration: apiVersion and kind must not be set by an apply configuration"
                .into(),
        );
    }
    merge(object, &applied, schema)
        .map_err(|e| format!("error applying patch: failed to merge patch: {e}"))
}

/// Applies the result of a `jsonPatch` expression to `object`.
pub fn json_patch(object: &Value, result: &cel::Value) -> Result<Value, String> {
    let cel::Value::List(items) = result else {
        return Err("type mismatch: JSONPatchType.expression should evaluate to array".into());
    };
    let mut operations = Vec::with_capacity(items.len());
    for item in items.iter() {
        let cel::Value::Map(_) = item else {
            return Err(format!(
                "type mismatch: JSONPatchType.expression should evaluate to array of JSONPatch, got element of {}",
                type_name(item)
            ));
        };
        let op = to_json(item).map_err(|e| {
            format!(
                "JSONPath valueExpression evaluated to a type that could not marshal to JSON: {e}"
            )
        })?;
        operations.push(op);
    }
    let patch: json_patch::Patch = serde_json::from_value(Value::Array(operations))
        .map_err(|e| format!("failed to create JSON patch: {e}"))?;
    let mut out = object.clone();
    json_patch::patch(&mut out, &patch).map_err(|e| format!("JSON Patch: {e}"))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::cel::{Program, RUNTIME_BUDGET, from_json};
    use super::*;
    use apiserver::endpoints::apply::DeducedSchema;
    use serde_json::json;

    fn eval(text: &str, object: &Value) -> cel::Value {
        let p = Program::compile(text, &["object", "JSONPatch"]).unwrap();
        let mut budget = RUNTIME_BUDGET;
        p.eval(&[("object", from_json(object))], &mut budget)
            .unwrap()
    }

    #[test]
    fn apply_configurations_merge_into_the_object() {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "labels": {"keep": "yes"}}, "data": {"a": "1"}});
        let result = eval(
            "Object{metadata: Object.metadata{labels: {'team': 'blue'}}}",
            &cm,
        );
        let out = apply_configuration(&cm, &result, &DeducedSchema).unwrap();
        assert_eq!(
            out["metadata"]["labels"],
            json!({"keep": "yes", "team": "blue"})
        );
        assert_eq!(out["data"], json!({"a": "1"}));
        let not_object = eval("'x'", &cm);
        assert_eq!(
            apply_configuration(&cm, &not_object, &DeducedSchema).unwrap_err(),
            "unsupported return type from ApplyConfiguration expression: string"
        );
    }

    #[test]
    fn json_patches_apply_in_order() {
        let cm = json!({"metadata": {"name": "c"}, "data": {"a": "1"}});
        let result = eval(
            "[JSONPatch{op: 'add', path: '/data/b', value: object.data.a + '2'}, JSONPatch{op: 'remove', path: '/data/a'}]",
            &cm,
        );
        assert_eq!(
            json_patch(&cm, &result).unwrap()["data"],
            json!({"b": "12"})
        );
        let bad = eval("[JSONPatch{op: 'remove', path: '/data/zzz'}]", &cm);
        assert!(
            json_patch(&cm, &bad)
                .unwrap_err()
                .starts_with("JSON Patch: ")
        );
        assert_eq!(
            json_patch(&cm, &eval("1", &cm)).unwrap_err(),
            "type mismatch: JSONPatchType.expression should evaluate to array"
        );
    }
}
