//! `x-kubernetes-validations`: CEL rules on schema nodes (upstream
//! `pkg/apiserver/schema/cel`), evaluated with `self` (and `oldSelf` on update) bound to the
//! node's value, and their errors as upstream words them (`spec: Invalid value: "object":
//! failed rule: self.a > 0`, or the rule's message, messageExpression, reason and fieldPath).

use std::collections::BTreeMap;
use std::collections::HashMap;
use std::sync::Arc;

use apiserver::registry::{FieldError, FieldErrorType};
use apiserver::util::cel::RESERVED_WORDS;
use kube_cel::KubeCelExt as _;
use kube_cel::cel::{self, Context, Program};
use serde_json::Value;

use super::node::{Additional, Node};
use super::path::{idx, key};
use super::validate::correlate;

/// One compiled rule.
pub(crate) struct Rule {
    rule: String,
    program: Program,
    message: String,
    /// Upstream `ruleErrorString`: the message if set, else the rule.
    error_string: String,
    message_expression: Option<Program>,
    reason: Option<String>,
    field_path: String,
    uses_old_self: bool,
    optional_old_self: bool,
}

impl Rule {
    /// The rule's expression (trimmed).
    pub(crate) fn text(&self) -> &str {
        &self.rule
    }

    fn error_string(&self) -> &str {
        &self.error_string
    }

    /// Whether the rule is a transition rule (uses `oldSelf`).
    pub(crate) fn uses_old_self(&self) -> bool {
        self.uses_old_self
    }
}

/// The compiled rules of a schema, shaped like the schema (only where rules are).
#[derive(Default)]
pub(crate) struct Tree {
    rules: Vec<Rule>,
    properties: BTreeMap<String, Tree>,
    items: Option<Box<Tree>>,
    additional: Option<Box<Tree>>,
}

impl Tree {
    fn is_empty(&self) -> bool {
        self.rules.is_empty()
            && self.properties.is_empty()
            && self.items.is_none()
            && self.additional.is_none()
    }
}

/// The compiled rules of a Structural (never part of its identity).
#[derive(Clone, Default)]
pub(crate) struct Compiled(pub Option<Arc<Tree>>);

impl PartialEq for Compiled {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for Compiled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Compiled(rules)"
        } else {
            "Compiled(none)"
        })
    }
}

/// A rule that does not compile: its index on the node and the parser's message.
pub(crate) struct CompileError {
    pub index: usize,
    pub detail: String,
}

/// Compiles the rules of one node.
pub(crate) fn compile_rules(n: &Node) -> (Vec<Rule>, Vec<CompileError>) {
    let mut rules = Vec::new();
    let mut errors = Vec::new();
    for (i, r) in n.x_validations.iter().enumerate() {
        let text = r
            .get("rule")
            .and_then(Value::as_str)
            .unwrap_or("")
            .trim()
            .to_string();
        let program = match Program::compile(&text) {
            Ok(p) => p,
            Err(e) => {
                errors.push(CompileError {
                    index: i,
                    detail: format!("compilation failed: {e}"),
                });
                continue;
            }
        };
        let message_expression = r
            .get("messageExpression")
            .and_then(Value::as_str)
            .filter(|m| !m.trim().is_empty())
            .and_then(|m| Program::compile(m).ok());
        let message = r
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("")
            .trim()
            .to_string();
        let uses_old_self = program.references().has_variable("oldSelf");
        rules.push(Rule {
            error_string: if message.is_empty() {
                text.clone()
            } else {
                message.clone()
            },
            message: if message.is_empty() {
                format!("failed rule: {text}")
            } else {
                message
            },
            rule: text,
            program,
            message_expression,
            reason: r.get("reason").and_then(Value::as_str).map(str::to_string),
            field_path: r
                .get("fieldPath")
                .and_then(Value::as_str)
                .unwrap_or("")
                .trim()
                .trim_start_matches('.')
                .to_string(),
            uses_old_self,
            optional_old_self: r.get("optionalOldSelf").and_then(Value::as_bool) == Some(true),
        });
    }
    (rules, errors)
}

/// Compiles every rule of the schema (rules that do not compile are left out; the CRD's
/// validation reports them).
pub(crate) fn compile(n: &Node) -> Compiled {
    let t = tree(n);
    Compiled((!t.is_empty()).then(|| Arc::new(t)))
}

fn tree(n: &Node) -> Tree {
    let (rules, _) = compile_rules(n);
    let mut t = Tree {
        rules,
        ..Tree::default()
    };
    for (k, p) in &n.properties {
        let c = tree(p);
        if !c.is_empty() {
            t.properties.insert(k.clone(), c);
        }
    }
    t.items = n
        .items
        .as_deref()
        .map(tree)
        .filter(|c| !c.is_empty())
        .map(Box::new);
    t.additional = n
        .additional_schema()
        .map(tree)
        .filter(|c| !c.is_empty())
        .map(Box::new);
    t
}

thread_local! {
    /// The base context with the Kubernetes CEL library registered (built once per thread).
    static BASE: Context<'static> = {
        let mut ctx = Context::default();
        ctx.register_all();
        ctx
    };
}

/// Evaluates the rules of `t` against `obj` (and `old` on update).
pub(crate) fn validate(
    t: &Compiled,
    root: &Node,
    obj: &Value,
    old: Option<&Value>,
) -> Vec<FieldError> {
    let Some(tree) = &t.0 else {
        return Vec::new();
    };
    let mut errs = Vec::new();
    BASE.with(|base| walk(base, tree, root, obj, old, "", true, &mut errs));
    errs
}

#[allow(clippy::too_many_arguments)]
fn walk(
    base: &Context<'static>,
    t: &Tree,
    n: &Node,
    v: &Value,
    old: Option<&Value>,
    path: &str,
    is_root: bool,
    errs: &mut Vec<FieldError>,
) {
    if v.is_null() {
        return;
    }
    if !t.rules.is_empty() {
        let unchanged = old == Some(v);
        let this = to_cel(v, n, is_root);
        let old_cel = old.map(|o| to_cel(o, n, is_root));
        for r in &t.rules {
            // Ratcheting: an unchanged value keeps passing its non-transition rules.
            if unchanged && !r.uses_old_self {
                continue;
            }
            if r.uses_old_self && old_cel.is_none() && !r.optional_old_self {
                continue;
            }
            let mut ctx = base.new_inner_scope();
            ctx.add_variable_from_value("self", this.clone());
            // With optionalOldSelf, oldSelf is a CEL optional (none on create).
            let old_self = if r.optional_old_self {
                let opt = match &old_cel {
                    Some(o) => cel::objects::OptionalValue::of(o.clone()),
                    None => cel::objects::OptionalValue::none(),
                };
                cel::Value::Opaque(Arc::new(opt))
            } else {
                old_cel.clone().unwrap_or(cel::Value::Null)
            };
            ctx.add_variable_from_value("oldSelf", old_self);
            let err_path = rule_path(path, &r.field_path);
            match r.program.execute(&ctx) {
                Ok(cel::Value::Bool(true)) => {}
                Ok(cel::Value::Bool(false)) => {
                    let detail = r
                        .message_expression
                        .as_ref()
                        .and_then(|m| match m.execute(&ctx) {
                            Ok(cel::Value::String(s))
                                if !s.trim().is_empty() && !s.contains('\n') =>
                            {
                                Some(s.trim().to_string())
                            }
                            _ => None,
                        })
                        .unwrap_or_else(|| r.message.clone());
                    // Upstream omits the value of objects and arrays.
                    let value =
                        (!matches!(n.type_.as_str(), "object" | "array")).then(|| v.clone());
                    errs.push(error_for_reason(
                        &err_path,
                        value,
                        &detail,
                        r.reason.as_deref(),
                    ));
                }
                Ok(_) => errs.push(FieldError::invalid(
                    path_or_nil(path),
                    n.type_.as_str(),
                    &format!(
                        "rule did not evaluate to a bool evaluating rule: {}",
                        r.error_string()
                    ),
                )),
                Err(e) => {
                    let text = e.to_string();
                    let detail = if text.starts_with("no such overload") {
                        format!(
                            "'{text}': call arguments did not match a supported operator, function or macro signature for rule: {}",
                            r.error_string()
                        )
                    } else {
                        format!("{text} evaluating rule: {}", r.error_string())
                    };
                    errs.push(FieldError::invalid(
                        path_or_nil(path),
                        n.type_.as_str(),
                        &detail,
                    ));
                }
            }
        }
    }
    match v {
        Value::Object(map) => {
            for (k, child) in &t.properties {
                if let (Some(val), Some(schema)) = (map.get(k), n.properties.get(k)) {
                    let o = old.and_then(|o| o.get(k));
                    walk(
                        base,
                        child,
                        schema,
                        val,
                        o,
                        &child_path(path, k),
                        false,
                        errs,
                    );
                }
            }
            if let (Some(child), Some(schema)) = (&t.additional, n.additional_schema()) {
                for (k, val) in map {
                    if n.properties.contains_key(k) {
                        continue;
                    }
                    let o = old.and_then(|o| o.get(k));
                    walk(base, child, schema, val, o, &key(path, k), false, errs);
                }
            }
        }
        Value::Array(items) => {
            if let (Some(child), Some(schema)) = (&t.items, n.items.as_deref()) {
                for (i, val) in items.iter().enumerate() {
                    let o = correlate(n, val, i, old);
                    walk(base, child, schema, val, o, &idx(path, i), false, errs);
                }
            }
        }
        _ => {}
    }
}

fn child_path(path: &str, k: &str) -> String {
    if path.is_empty() {
        k.to_string()
    } else {
        format!("{path}.{k}")
    }
}

fn rule_path(path: &str, field_path: &str) -> String {
    match (path.is_empty(), field_path.is_empty()) {
        (true, true) => "<nil>".to_string(),
        (true, false) => field_path.to_string(),
        (false, true) => path.to_string(),
        (false, false) => format!("{path}.{field_path}"),
    }
}

/// Upstream `fieldErrorForReason` (a `None` value is upstream's omitted value).
fn error_for_reason(
    path: &str,
    value: Option<Value>,
    detail: &str,
    reason: Option<&str>,
) -> FieldError {
    let (type_, detail) = match reason {
        Some("FieldValueForbidden") => return FieldError::forbidden(path, detail),
        Some("FieldValueRequired") => return FieldError::required(path, detail),
        Some("FieldValueDuplicate") => (FieldErrorType::Duplicate, String::new()),
        _ => (FieldErrorType::Invalid, detail.to_string()),
    };
    FieldError {
        type_,
        field: path.to_string(),
        bad_value: value,
        detail,
    }
}

/// A nil field path renders as `<nil>`.
fn path_or_nil(path: &str) -> &str {
    if path.is_empty() { "<nil>" } else { path }
}

/// Upstream's escaping of property names in CEL (`foo-bar` is `self.foo__dash__bar`).
fn escape(name: &str) -> String {
    if RESERVED_WORDS.contains(&name) {
        return format!("__{name}__");
    }
    let mut out = String::new();
    let mut chars = name.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '_' if chars.peek() == Some(&'_') => {
                chars.next();
                out.push_str("__underscores__");
            }
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c if c.is_ascii_alphanumeric() || c == '_' => out.push(c),
            c => out.push_str(&format!("__{}__", c as u32)),
        }
    }
    out
}

/// The CEL value of `v` under schema `n`: declared properties by their escaped names,
/// numbers as the schema types them, the metadata of the root and of embedded resources cut
/// to name and generateName.
fn to_cel(v: &Value, n: &Node, is_root: bool) -> cel::Value {
    match v {
        Value::Null => cel::Value::Null,
        Value::Bool(b) => cel::Value::Bool(*b),
        Value::Number(num) => {
            if n.type_ == "number" {
                cel::Value::Float(num.as_f64().unwrap_or(0.0))
            } else if let Some(i) = num.as_i64() {
                cel::Value::Int(i)
            } else if let Some(u) = num.as_u64() {
                cel::Value::UInt(u)
            } else {
                cel::Value::Float(num.as_f64().unwrap_or(0.0))
            }
        }
        Value::String(s) => formatted_string(s, &n.format),
        Value::Array(items) => {
            let item = n.items.as_deref();
            let default = Node::default();
            cel::Value::List(Arc::new(
                items
                    .iter()
                    .map(|x| to_cel(x, item.unwrap_or(&default), false))
                    .collect(),
            ))
        }
        Value::Object(map) => {
            let mut out: HashMap<cel::objects::Key, cel::Value> = HashMap::new();
            let default = Node::default();
            for (k, x) in map {
                if let Some(p) = n.properties.get(k) {
                    let x = if (is_root || n.x_embedded_resource) && k == "metadata" {
                        root_metadata(x)
                    } else {
                        x.clone()
                    };
                    out.insert(
                        cel::objects::Key::String(Arc::new(escape(k))),
                        to_cel(&x, p, false),
                    );
                } else {
                    let schema = match &n.additional_properties {
                        Some(Additional::Schema(s)) => s,
                        _ => &default,
                    };
                    let x = if (is_root || n.x_embedded_resource) && k == "metadata" {
                        root_metadata(x)
                    } else {
                        x.clone()
                    };
                    out.insert(
                        cel::objects::Key::String(Arc::new(k.clone())),
                        to_cel(&x, schema, false),
                    );
                }
            }
            cel::Value::Map(cel::objects::Map { map: Arc::new(out) })
        }
    }
}

/// Upstream types strings by their format: `date-time` as a timestamp, `duration` as a
/// duration, `byte` as bytes (a string that does not parse stays a string).
fn formatted_string(s: &str, format: &str) -> cel::Value {
    use base64::Engine as _;
    match format {
        "date-time" => {
            if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
                return cel::Value::Timestamp(t);
            }
        }
        "duration" => {
            if let Some(d) = go_duration(s) {
                return cel::Value::Duration(d);
            }
        }
        "byte" => {
            if let Ok(b) = base64::engine::general_purpose::STANDARD.decode(s) {
                return cel::Value::Bytes(Arc::new(b));
            }
        }
        _ => {}
    }
    cel::Value::String(Arc::new(s.to_string()))
}

/// Go's `time.ParseDuration` (`1h30m`, `1.5s`, `-300ms`).
fn go_duration(s: &str) -> Option<chrono::Duration> {
    let (neg, mut rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    if rest == "0" {
        return Some(chrono::Duration::zero());
    }
    if rest.is_empty() {
        return None;
    }
    let mut nanos: f64 = 0.0;
    while !rest.is_empty() {
        let end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..end].parse().ok()?;
        rest = &rest[end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_end] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        rest = &rest[unit_end..];
        nanos += number * scale;
    }
    let d = chrono::Duration::nanoseconds(nanos as i64);
    Some(if neg { -d } else { d })
}

fn root_metadata(m: &Value) -> Value {
    let mut out = serde_json::Map::new();
    if let Some(obj) = m.as_object() {
        for k in ["name", "generateName"] {
            if let Some(v) = obj.get(k) {
                out.insert(k.to_string(), v.clone());
            }
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_like_upstream() {
        assert_eq!(escape("foo-bar"), "foo__dash__bar");
        assert_eq!(escape("a.b/c"), "a__dot__b__slash__c");
        assert_eq!(escape("a__b"), "a__underscores__b");
        assert_eq!(escape("namespace"), "__namespace__");
        assert_eq!(escape("plain_name1"), "plain_name1");
    }

    #[test]
    fn go_durations() {
        assert_eq!(go_duration("1h30m"), Some(chrono::Duration::minutes(90)));
        assert_eq!(
            go_duration("-1.5s"),
            Some(-chrono::Duration::milliseconds(1500))
        );
        assert_eq!(go_duration("5"), None);
        assert_eq!(go_duration("soon"), None);
    }
}
