//! CEL expressions of the structured authentication and authorization configuration
//! (upstream `authentication/cel` and `authorization/cel`): compiled once when the
//! configuration loads, with the Kubernetes CEL library, over JSON values (`claims`, `user`,
//! `request`).

use std::collections::HashMap;
use std::sync::Arc;

use kube_cel::KubeCelExt as _;
use kube_cel::cel::{self, Context, Program};
use serde_json::Value;

/// CEL's reserved words: not identifiers (variable names), and escaped as `__word__` when
/// used as property names.
pub const RESERVED_WORDS: [&str; 21] = [
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// A compiled expression and its text.
#[derive(Clone)]
pub struct Expression {
    text: String,
    program: Arc<Program>,
}

impl std::fmt::Debug for Expression {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Expression").field(&self.text).finish()
    }
}

impl Expression {
    /// Compiles `text`, which may refer only to the variables in `allowed` (upstream's
    /// environment declares exactly those; anything else is a compile error there too).
    pub fn compile(text: &str, allowed: &[&str]) -> Result<Self, String> {
        // The parser's message draws the expression under its first line; keep that line.
        let program = Program::compile(text).map_err(|e| {
            let message = e.to_string();
            format!(
                "compilation failed: {}",
                message.lines().next().unwrap_or("").trim()
            )
        })?;
        let references = program.references();
        let bound = macro_variables(text);
        let mut unknown: Vec<&str> = references
            .variables()
            .into_iter()
            .filter(|v| !allowed.contains(v) && !bound.iter().any(|b| b == v))
            .collect();
        unknown.sort_unstable();
        if let Some(v) = unknown.first() {
            return Err(format!(
                "compilation failed: ERROR: <input>:1:1: undeclared reference to '{v}' (in container '')"
            ));
        }
        Ok(Expression {
            text: text.to_string(),
            program: Arc::new(program),
        })
    }

    /// The expression's text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether the expression refers to `field` of `variable` (`claims.email`), judged from
    /// its text.
    pub fn mentions(&self, variable: &str, field: &str) -> bool {
        let dotted = format!("{variable}.{field}");
        let indexed = format!("{variable}[\"{field}\"]");
        let indexed_single = format!("{variable}['{field}']");
        let text = self.text.as_str();
        text.match_indices(&dotted).any(|(i, _)| {
            !text[i + dotted.len()..]
                .chars()
                .next()
                .is_some_and(|c| c.is_alphanumeric() || c == '_')
        }) || text.contains(&indexed)
            || text.contains(&indexed_single)
    }

    /// Evaluates the expression with `vars` bound.
    pub fn eval(&self, vars: &[(&str, &Value)]) -> Result<cel::Value, String> {
        self.eval_with(vars, &[])
    }

    /// Evaluates the expression with `vars` and the CEL values `extra` (such as the
    /// `authorizer` of [`cel_authorizer`](super::cel_authorizer)) bound.
    pub fn eval_with(
        &self,
        vars: &[(&str, &Value)],
        extra: &[(&str, cel::Value)],
    ) -> Result<cel::Value, String> {
        BASE.with(|base| {
            let mut ctx = base.new_inner_scope();
            for (name, value) in vars {
                ctx.add_variable_from_value(*name, to_cel(value));
            }
            for (name, value) in extra {
                ctx.add_variable_from_value(*name, value.clone());
            }
            self.program.execute(&ctx).map_err(|e| e.to_string())
        })
    }
}

/// The iteration variables the comprehension macros of `text` bind
/// (`claims.groups.all(g, …)` binds `g`).
fn macro_variables(text: &str) -> Vec<String> {
    static MACRO: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"\.(?:all|exists|exists_one|map|filter|transformList|transformMap)\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*,(?:\s*([A-Za-z_][A-Za-z0-9_]*)\s*,)?",
        )
        .expect("a valid regular expression")
    });
    MACRO
        .captures_iter(text)
        .flat_map(|c| {
            [c.get(1), c.get(2)]
                .into_iter()
                .flatten()
                .map(|m| m.as_str().to_string())
        })
        .collect()
}

thread_local! {
    /// The base context with the Kubernetes CEL library registered (built once per thread).
    static BASE: Context<'static> = {
        let mut ctx = Context::default();
        ctx.register_all();
        super::cel_authorizer::register(&mut ctx);
        ctx
    };
}

/// The CEL value of a JSON value (integers as `int`, other numbers as `double`).
pub fn to_cel(v: &Value) -> cel::Value {
    match v {
        Value::Null => cel::Value::Null,
        Value::Bool(b) => cel::Value::Bool(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => cel::Value::Int(i),
            None => match n.as_u64() {
                Some(u) => cel::Value::UInt(u),
                None => cel::Value::Float(n.as_f64().unwrap_or(0.0)),
            },
        },
        Value::String(s) => cel::Value::String(Arc::new(s.clone())),
        Value::Array(items) => cel::Value::List(Arc::new(items.iter().map(to_cel).collect())),
        Value::Object(map) => {
            let out: HashMap<cel::objects::Key, cel::Value> = map
                .iter()
                .map(|(k, x)| (cel::objects::Key::String(Arc::new(k.clone())), to_cel(x)))
                .collect();
            cel::Value::Map(cel::objects::Map { map: Arc::new(out) })
        }
    }
}

/// A CEL value as upstream's claim mappings accept it for groups and extra values: a
/// string, a list of strings, or null; empty strings are dropped.
pub fn string_list(v: &cel::Value) -> Result<Vec<String>, String> {
    const MESSAGE: &str = "expression must return a string or a list of strings";
    match v {
        cel::Value::String(s) if s.is_empty() => Ok(Vec::new()),
        cel::Value::String(s) => Ok(vec![s.to_string()]),
        cel::Value::Null => Ok(Vec::new()),
        cel::Value::List(items) => {
            let mut out = Vec::new();
            for item in items.iter() {
                match item {
                    cel::Value::String(s) if s.is_empty() => {}
                    cel::Value::String(s) => out.push(s.to_string()),
                    _ => return Err(MESSAGE.into()),
                }
            }
            Ok(out)
        }
        _ => Err(MESSAGE.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn compiles_and_evaluates_over_json() {
        let e = Expression::compile("claims.sub + ':' + claims.groups[0]", &["claims"]).unwrap();
        let claims = json!({"sub": "alice", "groups": ["dev"]});
        assert_eq!(
            e.eval(&[("claims", &claims)]).unwrap(),
            cel::Value::String(Arc::new("alice:dev".into()))
        );
        let has = Expression::compile("has(claims.email)", &["claims"]).unwrap();
        assert_eq!(
            has.eval(&[("claims", &claims)]).unwrap(),
            cel::Value::Bool(false)
        );
    }

    #[test]
    fn unknown_variables_and_syntax_errors_fail_compilation() {
        let err = Expression::compile("claim.sub", &["claims"]).unwrap_err();
        assert!(err.contains("undeclared reference to 'claim'"), "{err}");
        assert!(Expression::compile("claims.groups.all(g, g != '')", &["claims"]).is_ok());
        assert!(
            Expression::compile("claims.", &["claims"])
                .unwrap_err()
                .starts_with("compilation failed: ")
        );
    }

    #[test]
    fn mentions_fields() {
        let e = Expression::compile("claims.email_verified && claims.email != ''", &["claims"])
            .unwrap();
        assert!(e.mentions("claims", "email"));
        assert!(e.mentions("claims", "email_verified"));
        let only_verified = Expression::compile("claims.email_verified", &["claims"]).unwrap();
        assert!(!only_verified.mentions("claims", "email"));
    }

    #[test]
    fn string_lists() {
        let list = cel::Value::List(Arc::new(vec![
            cel::Value::String(Arc::new("a".into())),
            cel::Value::String(Arc::new(String::new())),
        ]));
        assert_eq!(string_list(&list).unwrap(), vec!["a"]);
        assert!(string_list(&cel::Value::Int(1)).is_err());
        assert!(string_list(&cel::Value::Null).unwrap().is_empty());
    }
}
