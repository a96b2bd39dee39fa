//! CEL for admission policies (upstream `admission/plugin/cel`): expressions compiled once when a
//! policy changes, evaluated with a cost meter as upstream's runtime cost limits require.
//!
//! The interpreter of the `cel` crate has no cost tracking and cannot build objects
//! (`Object{…}`), so evaluation walks the expression tree here: every node is charged (one unit
//! per variable, field selection and function call, ten per list literal, thirty per map
//! literal, forty per object, a tenth of the size for string and list functions, each
//! comprehension step separately), and each single operation is handed to the crate's
//! interpreter with its operands already evaluated. A call stops with upstream's
//! `operation cancelled: actual cost limit exceeded` past [`PER_CALL_LIMIT`]; the expressions of
//! one binding share [`RUNTIME_BUDGET`].

use std::collections::HashMap;
use std::sync::Arc;

use kube_cel::KubeCelExt as _;
use kube_cel::cel::common::ast::{
    CallExpr, EntryExpr, Expr, IdedEntryExpr, IdedExpr, ListExpr, MapEntryExpr, MapExpr,
    SelectExpr, operators,
};
use kube_cel::cel::objects::{Key, Map, OptionalValue};
use kube_cel::cel::{self, Context, ExecutionError};
use serde_json::Value;

/// Upstream `celconfig.PerCallLimit`: the cost one evaluation may reach.
pub const PER_CALL_LIMIT: u64 = 1_000_000;
/// Upstream `celconfig.RuntimeCELCostBudget`: the cost all expressions of a binding may reach.
pub const RUNTIME_BUDGET: u64 = 10_000_000;
/// Upstream `celconfig.RuntimeCELCostBudgetMatchConditions`.
pub const MATCH_CONDITIONS_BUDGET: u64 = 2_500_000;

/// A compiled expression.
#[derive(Clone)]
pub struct Program {
    text: String,
    ast: Arc<IdedExpr>,
}

impl std::fmt::Debug for Program {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Program").field(&self.text).finish()
    }
}

/// Why an evaluation failed.
#[derive(Debug, Clone, PartialEq)]
pub enum EvalError {
    /// The expression failed (`no such key: x`, a type error …).
    Failed(String),
    /// The per-call cost limit was reached.
    CostLimit,
    /// The binding's budget ran out.
    OutOfBudget,
}

impl std::fmt::Display for EvalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EvalError::Failed(message) => f.write_str(message),
            EvalError::CostLimit => f.write_str("operation cancelled: actual cost limit exceeded"),
            EvalError::OutOfBudget => f.write_str(
                "validation failed due to running out of cost budget, no further validation rules will be run",
            ),
        }
    }
}

impl Program {
    /// Compiles `text`, which may refer to the variables in `declared` only; the error is
    /// upstream's `compilation failed: …` detail.
    pub fn compile(text: &str, declared: &[&str]) -> Result<Self, String> {
        apiserver::util::cel::Expression::compile(text, declared)?;
        let program = cel::Program::compile(text).map_err(|e| {
            format!(
                "compilation failed: {}",
                e.to_string().lines().next().unwrap_or("").trim()
            )
        })?;
        Ok(Program {
            text: text.to_string(),
            ast: Arc::new(program.expression().clone()),
        })
    }

    /// The expression tree.
    pub fn ast(&self) -> &IdedExpr {
        &self.ast
    }

    /// Evaluates with `vars` bound, charging the cost to `budget`.
    pub fn eval(
        &self,
        vars: &[(&str, cel::Value)],
        budget: &mut u64,
    ) -> Result<cel::Value, EvalError> {
        let ast = self.ast.clone();
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            BASE.with(|base| {
                let mut ctx = base.new_inner_scope();
                for (name, value) in vars {
                    ctx.add_variable_from_value(*name, value.clone());
                }
                let mut meter = Meter { used: 0 };
                let value = meter.eval(&ast, &ctx);
                (value, meter.used)
            })
        }));
        let (value, used) = result.unwrap_or_else(|_| {
            (
                Err(EvalError::Failed(
                    "internal error evaluating expression".into(),
                )),
                0,
            )
        });
        if value == Err(EvalError::CostLimit) {
            return Err(EvalError::CostLimit);
        }
        if used > *budget {
            *budget = 0;
            return Err(EvalError::OutOfBudget);
        }
        *budget -= used;
        value
    }
}

thread_local! {
    /// The base context with the Kubernetes CEL library registered (built once per thread).
    static BASE: Context<'static> = {
        let mut ctx = Context::default();
        ctx.register_all();
        apiserver::util::cel_authorizer::register(&mut ctx);
        ctx
    };
}

/// The cost meter of one evaluation.
struct Meter {
    used: u64,
}

fn failed(e: ExecutionError) -> EvalError {
    let text = e.to_string();
    let mut chars = text.chars();
    // cel-go's messages start in lower case (`no such key: x`).
    let text = match chars.next() {
        Some(first) => first.to_lowercase().collect::<String>() + chars.as_str(),
        None => text,
    };
    EvalError::Failed(text)
}

fn ident(name: &str) -> IdedExpr {
    IdedExpr {
        id: 0,
        expr: Expr::Ident(name.to_string()),
    }
}

/// The size the cost of a string or collection function grows with.
fn size_of(v: &cel::Value) -> u64 {
    match v {
        cel::Value::String(s) => s.len() as u64,
        cel::Value::Bytes(b) => b.len() as u64,
        cel::Value::List(l) => l.len() as u64,
        cel::Value::Map(m) => m.map.len() as u64,
        _ => 0,
    }
}

/// Functions whose cost grows with the size of their operands.
const SIZED_FUNCTIONS: &[&str] = &[
    operators::ADD,
    operators::EQUALS,
    operators::NOT_EQUALS,
    operators::IN,
    "matches",
    "contains",
    "startsWith",
    "endsWith",
    "split",
    "replace",
    "join",
    "lowerAscii",
    "upperAscii",
    "indexOf",
    "lastIndexOf",
    "substring",
    "trim",
    "find",
    "findAll",
    "string",
    "format",
];

impl Meter {
    fn charge(&mut self, cost: u64) -> Result<(), EvalError> {
        self.used = self.used.saturating_add(cost);
        if self.used > PER_CALL_LIMIT {
            Err(EvalError::CostLimit)
        } else {
            Ok(())
        }
    }

    /// Resolves `expr` (whose operands are bound in `ctx`) with the crate's interpreter.
    fn resolve(expr: &IdedExpr, ctx: &Context) -> Result<cel::Value, EvalError> {
        cel::Value::resolve(expr, ctx).map_err(failed)
    }

    fn eval(&mut self, e: &IdedExpr, ctx: &Context) -> Result<cel::Value, EvalError> {
        match &e.expr {
            Expr::Literal(_) => Self::resolve(e, ctx),
            Expr::Ident(_) => {
                self.charge(1)?;
                Self::resolve(e, ctx)
            }
            Expr::Select(select) => {
                self.charge(1)?;
                let operand = self.eval(&select.operand, ctx)?;
                let mut scope = ctx.new_inner_scope();
                scope.add_variable_from_value("@o", operand);
                let built = IdedExpr {
                    id: e.id,
                    expr: Expr::Select(SelectExpr {
                        operand: Box::new(ident("@o")),
                        field: select.field.clone(),
                        test: select.test,
                    }),
                };
                Self::resolve(&built, &scope)
            }
            Expr::List(list) => {
                self.charge(10)?;
                let mut scope = ctx.new_inner_scope();
                let mut elements = Vec::with_capacity(list.elements.len());
                for (i, element) in list.elements.iter().enumerate() {
                    let value = self.eval(element, ctx)?;
                    let name = format!("@{i}");
                    scope.add_variable_from_value(name.clone(), value);
                    elements.push(ident(&name));
                }
                let built = IdedExpr {
                    id: e.id,
                    expr: Expr::List(ListExpr {
                        elements,
                        optional_indices: list.optional_indices.clone(),
                    }),
                };
                Self::resolve(&built, &scope)
            }
            Expr::Map(map) => {
                self.charge(30)?;
                let mut scope = ctx.new_inner_scope();
                let mut entries = Vec::with_capacity(map.entries.len());
                for (i, entry) in map.entries.iter().enumerate() {
                    let EntryExpr::MapEntry(m) = &entry.expr else {
                        return Err(EvalError::Failed("unexpected struct field in a map".into()));
                    };
                    let key = self.eval(&m.key, ctx)?;
                    let value = self.eval(&m.value, ctx)?;
                    let (k, v) = (format!("@k{i}"), format!("@v{i}"));
                    scope.add_variable_from_value(k.clone(), key);
                    scope.add_variable_from_value(v.clone(), value);
                    entries.push(IdedEntryExpr {
                        id: entry.id,
                        expr: EntryExpr::MapEntry(MapEntryExpr {
                            key: ident(&k),
                            value: ident(&v),
                            optional: m.optional,
                        }),
                    });
                }
                let built = IdedExpr {
                    id: e.id,
                    expr: Expr::Map(MapExpr { entries }),
                };
                Self::resolve(&built, &scope)
            }
            Expr::Struct(object) => {
                // `Object{…}` and `Object.spec{…}` of apply configurations: plain maps.
                self.charge(40)?;
                let mut out: HashMap<Key, cel::Value> = HashMap::new();
                for entry in &object.entries {
                    let EntryExpr::StructField(field) = &entry.expr else {
                        return Err(EvalError::Failed(
                            "unexpected map entry in an object".into(),
                        ));
                    };
                    let value = self.eval(&field.value, ctx)?;
                    let value = if field.optional {
                        match optional_inner(&value) {
                            Some(Some(inner)) => inner,
                            Some(None) => continue,
                            None => value,
                        }
                    } else {
                        value
                    };
                    out.insert(Key::String(Arc::new(field.field.clone())), value);
                }
                Ok(cel::Value::Map(Map { map: Arc::new(out) }))
            }
            Expr::Comprehension(c) => {
                let accu = self.eval(&c.accu_init, ctx)?;
                let range = self.eval(&c.iter_range, ctx)?;
                let items: Vec<cel::Value> = match &range {
                    cel::Value::List(items) => items.iter().cloned().collect(),
                    cel::Value::Map(map) => map
                        .map
                        .keys()
                        .map(|k| cel::Value::from(k.clone()))
                        .collect(),
                    other => {
                        return Err(EvalError::Failed(format!(
                            "no such overload: cannot iterate over {other:?}"
                        )));
                    }
                };
                let mut scope = ctx.new_inner_scope();
                scope.add_variable_from_value(c.accu_var.clone(), accu);
                for item in items {
                    self.charge(1)?;
                    match self.eval(&c.loop_cond, &scope)? {
                        cel::Value::Bool(true) => {}
                        cel::Value::Bool(false) => break,
                        _ => return Err(EvalError::Failed("no such overload".into())),
                    }
                    scope.add_variable_from_value(c.iter_var.clone(), item);
                    let accu = self.eval(&c.loop_step, &scope)?;
                    scope.add_variable_from_value(c.accu_var.clone(), accu);
                }
                self.eval(&c.result, &scope)
            }
            Expr::Call(call) => self.call(e, call, ctx),
            Expr::Unspecified => Err(EvalError::Failed("unspecified expression".into())),
        }
    }

    fn call(
        &mut self,
        e: &IdedExpr,
        call: &CallExpr,
        ctx: &Context,
    ) -> Result<cel::Value, EvalError> {
        let name = call.func_name.as_str();
        if name == operators::CONDITIONAL && call.args.len() == 3 {
            return match self.eval(&call.args[0], ctx)? {
                cel::Value::Bool(true) => self.eval(&call.args[1], ctx),
                cel::Value::Bool(false) => self.eval(&call.args[2], ctx),
                _ => Err(EvalError::Failed("no such overload".into())),
            };
        }
        if (name == operators::LOGICAL_AND || name == operators::LOGICAL_OR) && call.args.len() == 2
        {
            let decisive = name == operators::LOGICAL_OR;
            let left = self.eval(&call.args[0], ctx);
            if let Err(EvalError::CostLimit) = left {
                return left;
            }
            if left == Ok(cel::Value::Bool(decisive)) {
                return left;
            }
            let right = self.eval(&call.args[1], ctx)?;
            return match (left, right) {
                (Ok(cel::Value::Bool(_)), cel::Value::Bool(r)) => Ok(cel::Value::Bool(r)),
                (Err(_), cel::Value::Bool(r)) if r == decisive => Ok(cel::Value::Bool(r)),
                (Err(err), _) => Err(err),
                _ => Err(EvalError::Failed("no such overload".into())),
            };
        }
        if name == operators::NOT_STRICTLY_FALSE && call.args.len() == 1 {
            return match self.eval(&call.args[0], ctx) {
                Err(EvalError::CostLimit) => Err(EvalError::CostLimit),
                Ok(cel::Value::Bool(b)) => Ok(cel::Value::Bool(b)),
                _ => Ok(cel::Value::Bool(true)),
            };
        }
        self.charge(1)?;
        let mut scope = ctx.new_inner_scope();
        let mut size = 0;
        let target = match &call.target {
            // A namespace such as `optional.of` or `math.greatest` stays as written.
            Some(t) if matches!(&t.expr, Expr::Ident(n) if ctx.get_variable(n.as_str()).is_none()) => {
                Some(t.clone())
            }
            Some(t) => {
                let value = self.eval(t, ctx)?;
                size += size_of(&value);
                scope.add_variable_from_value("@t", value);
                Some(Box::new(ident("@t")))
            }
            None => None,
        };
        let mut args = Vec::with_capacity(call.args.len());
        for (i, arg) in call.args.iter().enumerate() {
            let value = self.eval(arg, ctx)?;
            size += size_of(&value);
            let name = format!("@{i}");
            scope.add_variable_from_value(name.clone(), value);
            args.push(ident(&name));
        }
        if SIZED_FUNCTIONS.contains(&name) {
            self.charge(size.div_ceil(10))?;
        }
        let built = IdedExpr {
            id: e.id,
            expr: Expr::Call(CallExpr {
                func_name: call.func_name.clone(),
                target,
                args,
            }),
        };
        Self::resolve(&built, &scope)
    }
}

/// `Some(inner)` when `v` is an optional value (`Some(None)` for `optional.none()`).
fn optional_inner(v: &cel::Value) -> Option<Option<cel::Value>> {
    match v {
        cel::Value::Opaque(o) => o
            .downcast_ref::<OptionalValue>()
            .map(|opt| opt.value().cloned()),
        _ => None,
    }
}

/// The JSON value of a CEL value (objects built by the expression are maps).
pub fn to_json(v: &cel::Value) -> Result<Value, String> {
    Ok(match v {
        cel::Value::Null => Value::Null,
        cel::Value::Bool(b) => Value::Bool(*b),
        cel::Value::Int(i) => Value::from(*i),
        cel::Value::UInt(u) => Value::from(*u),
        cel::Value::Float(f) => serde_json::Number::from_f64(*f)
            .map(Value::Number)
            .ok_or_else(|| format!("cannot represent {f} in JSON"))?,
        cel::Value::String(s) => Value::String(s.to_string()),
        cel::Value::Bytes(b) => Value::String(String::from_utf8_lossy(b).into_owned()),
        cel::Value::List(items) => {
            Value::Array(items.iter().map(to_json).collect::<Result<_, _>>()?)
        }
        cel::Value::Map(map) => {
            let mut out = serde_json::Map::new();
            for (k, v) in map.map.iter() {
                let key = match k {
                    Key::String(s) => s.to_string(),
                    Key::Int(i) => i.to_string(),
                    Key::Uint(u) => u.to_string(),
                    Key::Bool(b) => b.to_string(),
                };
                out.insert(key, to_json(v)?);
            }
            Value::Object(out)
        }
        cel::Value::Opaque(_) => match optional_inner(v) {
            Some(Some(inner)) => to_json(&inner)?,
            Some(None) => Value::Null,
            None => return Err(format!("unsupported value {v:?}")),
        },
        other => return Err(format!("unsupported value {other:?}")),
    })
}

/// The CEL value of a JSON value.
pub fn from_json(v: &Value) -> cel::Value {
    apiserver::util::cel::to_cel(v)
}

/// A CEL value's type name as cel-go prints it (`string`, `int`, `map` …).
pub fn type_name(v: &cel::Value) -> &'static str {
    match v {
        cel::Value::List(_) => "list",
        cel::Value::Map(_) => "map",
        cel::Value::Function(..) => "function",
        cel::Value::Int(_) => "int",
        cel::Value::UInt(_) => "uint",
        cel::Value::Float(_) => "double",
        cel::Value::String(_) => "string",
        cel::Value::Bytes(_) => "bytes",
        cel::Value::Bool(_) => "bool",
        cel::Value::Null => "null_type",
        _ => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(text: &str, vars: &[(&str, Value)]) -> Result<cel::Value, EvalError> {
        let names: Vec<&str> = vars.iter().map(|(n, _)| *n).collect();
        let p = Program::compile(text, &names).unwrap();
        let bound: Vec<(&str, cel::Value)> = vars.iter().map(|(n, v)| (*n, from_json(v))).collect();
        let mut budget = RUNTIME_BUDGET;
        p.eval(&bound, &mut budget)
    }

    #[test]
    fn evaluates_as_the_interpreter_does() {
        let object =
            json!({"spec": {"replicas": 3, "tags": ["a", "b"]}, "metadata": {"name": "x"}});
        let vars = [("object", object)];
        assert_eq!(
            run("object.spec.replicas <= 5", &vars),
            Ok(cel::Value::Bool(true))
        );
        assert_eq!(
            run("object.spec.tags.all(t, t.size() == 1)", &vars),
            Ok(cel::Value::Bool(true))
        );
        assert_eq!(
            run("object.spec.tags.exists(t, t == 'c')", &vars),
            Ok(cel::Value::Bool(false))
        );
        assert_eq!(
            run("object.spec.tags.map(t, t + '!')[1]", &vars),
            Ok(cel::Value::String(Arc::new("b!".into())))
        );
        assert_eq!(
            run("has(object.spec.missing) ? 1 : 2", &vars),
            Ok(cel::Value::Int(2))
        );
        assert_eq!(
            run("'replicas: ' + string(object.spec.replicas)", &vars),
            Ok(cel::Value::String(Arc::new("replicas: 3".into())))
        );
        assert_eq!(
            run("object.metadata.name.matches('^x$') && true", &vars),
            Ok(cel::Value::Bool(true))
        );
        assert_eq!(
            run("{'a': 1}['a'] + [1, 2].size()", &vars),
            Ok(cel::Value::Int(3))
        );
        assert_eq!(
            run("object.spec.nope > 1", &vars),
            Err(EvalError::Failed("no such key: nope".into()))
        );
        // error absorption of the logical operators, as CEL defines it
        assert_eq!(
            run("object.spec.nope > 1 || true", &vars),
            Ok(cel::Value::Bool(true))
        );
        assert_eq!(
            run("false && object.spec.nope > 1", &vars),
            Ok(cel::Value::Bool(false))
        );
    }

    #[test]
    fn builds_objects_for_apply_configurations() {
        let v = run(
            "Object{metadata: Object.metadata{labels: {'team': 'a'}}}",
            &[("object", json!({}))],
        )
        .unwrap();
        assert_eq!(
            to_json(&v).unwrap(),
            json!({"metadata": {"labels": {"team": "a"}}})
        );
    }

    #[test]
    fn a_call_over_the_limit_is_cancelled_and_a_budget_runs_out() {
        let list: Vec<i64> = (0..200).collect();
        let vars = [("params", json!({"l": list}))];
        assert_eq!(
            run(
                "params.l.all(x, params.l.all(y, params.l.all(z, x + y + z >= 0)))",
                &vars
            ),
            Err(EvalError::CostLimit)
        );
        let p = Program::compile("params.l.all(x, params.l.all(y, y >= 0))", &["params"]).unwrap();
        let bound = [("params", from_json(&vars[0].1))];
        let mut budget = 50_000;
        assert_eq!(p.eval(&bound, &mut budget), Err(EvalError::OutOfBudget));
        let mut budget = RUNTIME_BUDGET;
        assert_eq!(p.eval(&bound, &mut budget), Ok(cel::Value::Bool(true)));
        assert!(budget < RUNTIME_BUDGET - 40_000, "{budget}");
    }
}
