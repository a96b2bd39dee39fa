//! The type checking a ValidatingAdmissionPolicy's status reports (upstream
//! `validating/typechecking.go`): each validation `expression` and `messageExpression` is checked
//! against the schema of every kind its `matchConstraints.resourceRules` name without wildcards.
//!
//! The CEL interpreter used here has no type checker, so what is checked is what can be
//! judged from the expression tree and the schema: a chain of field selections from `object`
//! or `oldObject` (also inside `has()`) that names a field the kind's schema does not declare
//! is reported with cel-go's `undefined field` text, and an expression that does not compile
//! with its compilation error.

use apiserver::endpoints::apply::ApplySchema;
use kube_cel::cel::common::ast::{EntryExpr, Expr, IdedExpr};

use super::compiled::{Compiled, CompiledPolicy};

/// Upstream's `maxTypesToCheck`.
pub const MAX_TYPES_TO_CHECK: usize = 10;

/// A kind to check against: its Go `GroupVersionKind` string (`apps/v1, Kind=Deployment`) and
/// schema.
pub struct KindSchema<'a> {
    /// `group/version, Kind=kind`.
    pub gvk: String,
    /// The kind's schema.
    pub schema: Box<dyn ApplySchema + 'a>,
}

/// The (group, version, resource) triples the policy's rules name without wildcards
/// (upstream's `typesToCheck`, before resolving kinds), sorted.
pub fn resources_to_check(policy: &serde_json::Value) -> Vec<(String, String, String)> {
    let strings = |rule: &serde_json::Value, key: &str| -> Vec<String> {
        rule.get(key)
            .and_then(serde_json::Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut out = Vec::new();
    let rules = policy
        .pointer("/spec/matchConstraints/resourceRules")
        .and_then(serde_json::Value::as_array)
        .cloned()
        .unwrap_or_default();
    for rule in &rules {
        let mut groups = strings(rule, "apiGroups");
        let mut versions = strings(rule, "apiVersions");
        if groups.iter().any(|g| g.contains('*')) || versions.iter().any(|v| v.contains('*')) {
            continue;
        }
        let mut resources: Vec<String> = strings(rule, "resources")
            .into_iter()
            .filter(|r| !r.contains('*') && !r.contains('/'))
            .collect();
        groups.sort();
        versions.sort();
        resources.sort();
        for g in &groups {
            for v in &versions {
                for r in &resources {
                    let t = (g.clone(), v.clone(), r.clone());
                    if !out.contains(&t) {
                        out.push(t);
                    }
                }
            }
        }
    }
    out
}

/// The `status.typeChecking.expressionWarnings` of `policy` against `kinds`, as
/// (fieldRef, warning).
pub fn check(policy: &CompiledPolicy, kinds: &[KindSchema<'_>]) -> Vec<(String, String)> {
    let mut warnings = Vec::new();
    let mut check_one = |field: String, compiled: &Compiled| {
        let text = match &compiled.program {
            Err(e) => kinds
                .iter()
                .map(|k| format!("{}: {e}\n", k.gvk))
                .collect::<Vec<_>>()
                .join("\n"),
            Ok(program) => kinds
                .iter()
                .filter_map(|k| {
                    let issues = undefined_fields(program.ast(), &compiled.text, k.schema.as_ref());
                    (!issues.is_empty()).then(|| format!("{}: {}\n", k.gvk, issues.join("\n")))
                })
                .collect::<Vec<_>>()
                .join("\n"),
        };
        if !text.is_empty() {
            warnings.push((field, text));
        }
    };
    for (i, v) in policy.validations.iter().enumerate() {
        check_one(format!("spec.validations[{i}].expression"), &v.expression);
        if let Some(m) = &v.message_expression {
            check_one(format!("spec.validations[{i}].messageExpression"), m);
        }
    }
    warnings
}

/// cel-go style issues for every selection of an undeclared field from `object`/`oldObject`.
pub fn undefined_fields(ast: &IdedExpr, text: &str, schema: &dyn ApplySchema) -> Vec<String> {
    let mut chains = Vec::new();
    collect_chains(ast, &mut chains);
    let mut issues = Vec::new();
    let mut search_from = 0;
    for chain in chains {
        if let Some(depth) = first_undeclared(schema, &chain.fields) {
            let column = locate(text, &chain.root, &chain.fields[..=depth], search_from);
            if let Some(c) = column {
                search_from = c;
            }
            let message = format!("undefined field '{}'", chain.fields[depth]);
            issues.push(issue(text, column.unwrap_or(0), &message));
        }
    }
    issues
}

/// The index of the first field of `fields` that `schema` does not declare (checked as long as
/// the schema is a struct with known fields).
fn first_undeclared(schema: &dyn ApplySchema, fields: &[String]) -> Option<usize> {
    let (first, rest) = fields.split_first()?;
    if !schema.is_closed_struct() {
        return None;
    }
    let f = schema.field(first);
    if !f.declared {
        return Some(0);
    }
    first_undeclared(f.schema.as_ref(), rest).map(|i| i + 1)
}

/// cel-go's issue text: `ERROR: <input>:1:<col>: <message>` with the source line and a caret.
fn issue(text: &str, offset: usize, message: &str) -> String {
    let (line_no, line_start) = text[..offset.min(text.len())]
        .match_indices('\n')
        .fold((1, 0), |(n, _), (i, _)| (n + 1, i + 1));
    let line = text[line_start..].lines().next().unwrap_or("");
    let column = offset - line_start;
    format!(
        "ERROR: <input>:{line_no}:{}: {message}\n | {line}\n | {}^",
        column + 1,
        ".".repeat(column)
    )
}

/// The offset of the `.` before the last field of `root.fields…` in `text`.
fn locate(text: &str, root: &str, fields: &[String], from: usize) -> Option<usize> {
    let dotted = format!("{root}.{}", fields.join("."));
    let at = text
        .get(from..)
        .and_then(|t| t.find(&dotted))
        .map(|i| i + from)
        .or_else(|| text.find(&dotted))?;
    Some(at + dotted.len() - fields.last().map_or(0, String::len) - 1)
}

struct Chain {
    root: String,
    fields: Vec<String>,
}

/// Every maximal field-selection chain rooted at `object` or `oldObject`.
fn collect_chains(e: &IdedExpr, out: &mut Vec<Chain>) {
    if let Expr::Select(_) = &e.expr
        && let Some(chain) = as_chain(e)
    {
        out.push(chain);
        return;
    }
    match &e.expr {
        Expr::Select(s) => collect_chains(&s.operand, out),
        Expr::Call(c) => {
            if let Some(t) = &c.target {
                collect_chains(t, out);
            }
            for a in &c.args {
                collect_chains(a, out);
            }
        }
        Expr::List(l) => l.elements.iter().for_each(|x| collect_chains(x, out)),
        Expr::Map(m) => m.entries.iter().for_each(|x| match &x.expr {
            EntryExpr::MapEntry(me) => {
                collect_chains(&me.key, out);
                collect_chains(&me.value, out);
            }
            EntryExpr::StructField(f) => collect_chains(&f.value, out),
        }),
        Expr::Struct(s) => s.entries.iter().for_each(|x| {
            if let EntryExpr::StructField(f) = &x.expr {
                collect_chains(&f.value, out);
            }
        }),
        Expr::Comprehension(c) => {
            for x in [
                &c.iter_range,
                &c.accu_init,
                &c.loop_cond,
                &c.loop_step,
                &c.result,
            ] {
                collect_chains(x, out);
            }
        }
        _ => {}
    }
}

fn as_chain(e: &IdedExpr) -> Option<Chain> {
    match &e.expr {
        Expr::Ident(name) if name == "object" || name == "oldObject" => Some(Chain {
            root: name.clone(),
            fields: Vec::new(),
        }),
        Expr::Select(s) => {
            let mut chain = as_chain(&s.operand)?;
            chain.fields.push(s.field.clone());
            Some(chain)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::super::cel::Program;
    use super::*;
    use apiserver::endpoints::apply::OpenApiSchema;
    use serde_json::json;

    fn doc() -> serde_json::Value {
        json!({"definitions": {
            "D": {"type": "object", "properties": {
                "metadata": {"$ref": "#/definitions/M"},
                "spec": {"$ref": "#/definitions/S"}}},
            "M": {"type": "object", "properties": {"name": {"type": "string"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}}}},
            "S": {"type": "object", "properties": {"replicas": {"type": "integer"}}}}})
    }

    #[test]
    fn undefined_fields_are_reported_as_cel_go_does() {
        let d = doc();
        let schema = OpenApiSchema::for_definition(&d, "D").unwrap();
        let text = "object.spec.replicass > 1";
        let p = Program::compile(text, &["object"]).unwrap();
        assert_eq!(
            undefined_fields(p.ast(), text, &schema),
            vec![
                "ERROR: <input>:1:12: undefined field 'replicass'\n | object.spec.replicass > 1\n | ...........^"
            ]
        );
        let fine = "object.spec.replicas > 1 && object.metadata.labels.team == 'a' && has(object.metadata.name)";
        let p = Program::compile(fine, &["object"]).unwrap();
        assert!(undefined_fields(p.ast(), fine, &schema).is_empty());
    }

    #[test]
    fn policies_are_checked_against_each_named_kind() {
        let policy = CompiledPolicy::compile(Arc::new(json!({"metadata": {"name": "p"}, "spec": {
            "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                "resources": ["deployments", "*", "deployments/scale"], "operations": ["*"]}]},
            "validations": [{"expression": "object.spek.replicas > 1"}, {"expression": "true"}]}})));
        assert_eq!(
            resources_to_check(&policy.object),
            vec![("apps".into(), "v1".into(), "deployments".into())]
        );
        let d = doc();
        let kinds = [KindSchema {
            gvk: "apps/v1, Kind=Deployment".into(),
            schema: Box::new(OpenApiSchema::for_definition(&d, "D").unwrap()),
        }];
        let warnings = check(&policy, &kinds);
        assert_eq!(warnings.len(), 1);
        assert_eq!(warnings[0].0, "spec.validations[0].expression");
        assert!(
            warnings[0].1.starts_with(
                "apps/v1, Kind=Deployment: ERROR: <input>:1:7: undefined field 'spek'"
            ),
            "{}",
            warnings[0].1
        );
    }
}
