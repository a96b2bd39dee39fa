//! The JSONPath subset of `additionalPrinterColumns` (upstream uses client-go's `jsonpath`
//! with the column's path in braces): fields (`.spec.replicas`, `['a.b']`), indexes (`[0]`,
//! `[-1]`), wildcards (`[*]`, `.*`) and equality filters (`[?(@.type=="Ready")]`).

use serde_json::Value;

/// One step of a path.
#[derive(Clone, Debug, PartialEq)]
enum Step {
    Field(String),
    Index(i64),
    Wildcard,
    /// `[?(@.<path> == <literal>)]` (`!=` when `negate`).
    Filter(Vec<Step>, Value, bool),
}

/// A parsed path.
#[derive(Clone, Debug, PartialEq)]
pub struct JsonPath {
    steps: Vec<Step>,
}

/// Why a path does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unrecognized JSONPath {0:?}")]
pub struct JsonPathError(pub String);

fn parse_steps(s: &str) -> Result<Vec<Step>, JsonPathError> {
    let err = || JsonPathError(s.to_string());
    let bytes = s.as_bytes();
    let mut steps = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'.' => {
                i += 1;
                let start = i;
                while i < bytes.len() && bytes[i] != b'.' && bytes[i] != b'[' {
                    i += 1;
                }
                let name = &s[start..i];
                match name {
                    "" => {}
                    "*" => steps.push(Step::Wildcard),
                    _ => steps.push(Step::Field(name.to_string())),
                }
            }
            b'[' => {
                let close = find_close(s, i).ok_or_else(err)?;
                let inner = s[i + 1..close].trim();
                i = close + 1;
                if inner == "*" {
                    steps.push(Step::Wildcard);
                } else if let Some(quoted) = inner
                    .strip_prefix('\'')
                    .and_then(|q| q.strip_suffix('\''))
                    .or_else(|| inner.strip_prefix('"').and_then(|q| q.strip_suffix('"')))
                {
                    steps.push(Step::Field(quoted.to_string()));
                } else if let Some(filter) =
                    inner.strip_prefix("?(").and_then(|f| f.strip_suffix(')'))
                {
                    steps.push(parse_filter(filter).ok_or_else(err)?);
                } else {
                    steps.push(Step::Index(inner.parse().map_err(|_| err())?));
                }
            }
            _ => {
                // A leading bare name (`spec.x` without the dot) as client-go accepts it.
                let start = i;
                while i < bytes.len() && bytes[i] != b'.' && bytes[i] != b'[' {
                    i += 1;
                }
                steps.push(Step::Field(s[start..i].to_string()));
            }
        }
    }
    Ok(steps)
}

fn find_close(s: &str, open: usize) -> Option<usize> {
    let mut depth = 0;
    let mut quote: Option<char> = None;
    for (i, c) in s[open..].char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '[') => depth += 1,
            (None, ']') => {
                depth -= 1;
                if depth == 0 {
                    return Some(open + i);
                }
            }
            _ => {}
        }
    }
    None
}

fn parse_filter(filter: &str) -> Option<Step> {
    let (lhs, rhs, negate) = if let Some((l, r)) = filter.split_once("==") {
        (l, r, false)
    } else {
        let (l, r) = filter.split_once("!=")?;
        (l, r, true)
    };
    let path = lhs.trim().strip_prefix('@')?;
    let rhs = rhs.trim();
    let literal = if let Some(q) = rhs
        .strip_prefix('\'')
        .and_then(|q| q.strip_suffix('\''))
        .or_else(|| rhs.strip_prefix('"').and_then(|q| q.strip_suffix('"')))
    {
        Value::String(q.to_string())
    } else {
        serde_json::from_str(rhs).ok()?
    };
    Some(Step::Filter(parse_steps(path).ok()?, literal, negate))
}

impl JsonPath {
    /// Parses a column path (`.spec.replicas`; surrounding `{}` are accepted).
    pub fn parse(path: &str) -> Result<JsonPath, JsonPathError> {
        let trimmed = path.trim();
        let inner = trimmed
            .strip_prefix('{')
            .and_then(|p| p.strip_suffix('}'))
            .unwrap_or(trimmed);
        let inner = inner.strip_prefix('$').unwrap_or(inner);
        Ok(JsonPath {
            steps: parse_steps(inner)?,
        })
    }

    /// The values the path finds in `obj`, in document order.
    pub fn find<'a>(&self, obj: &'a Value) -> Vec<&'a Value> {
        eval(&self.steps, obj)
    }
}

fn eval<'a>(steps: &[Step], root: &'a Value) -> Vec<&'a Value> {
    let mut current = vec![root];
    for step in steps {
        let mut next = Vec::new();
        for value in current {
            match step {
                Step::Field(name) => {
                    if let Some(v) = value.get(name.as_str()) {
                        next.push(v);
                    }
                }
                Step::Index(i) => {
                    if let Some(list) = value.as_array() {
                        let len = list.len() as i64;
                        let index = if *i < 0 { len + i } else { *i };
                        if (0..len).contains(&index)
                            && let Some(v) = list.get(index as usize)
                        {
                            next.push(v);
                        }
                    }
                }
                Step::Wildcard => match value {
                    Value::Array(list) => next.extend(list.iter()),
                    Value::Object(map) => next.extend(map.values()),
                    _ => {}
                },
                Step::Filter(path, literal, negate) => {
                    if let Some(list) = value.as_array() {
                        for item in list {
                            let found = eval(path, item);
                            let equal = found.first().is_some_and(|v| *v == literal);
                            if !found.is_empty() && equal != *negate {
                                next.push(item);
                            }
                        }
                    }
                }
            }
        }
        current = next;
    }
    current
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_as_client_go() {
        let obj = json!({"spec": {"replicas": 3, "a.b": "dotted", "list": [1, 2, 3]},
            "status": {"conditions": [{"type": "Ready", "status": "True"},
                                      {"type": "Synced", "status": "False"}]}});
        let cases = [
            (".spec.replicas", vec![json!(3)]),
            ("{.spec.replicas}", vec![json!(3)]),
            (".spec['a.b']", vec![json!("dotted")]),
            (".spec.list[0]", vec![json!(1)]),
            (".spec.list[-1]", vec![json!(3)]),
            (".spec.list[*]", vec![json!(1), json!(2), json!(3)]),
            (
                ".status.conditions[?(@.type==\"Ready\")].status",
                vec![json!("True")],
            ),
            (
                ".status.conditions[?(@.type!='Ready')].type",
                vec![json!("Synced")],
            ),
            (
                ".status.conditions[*].type",
                vec![json!("Ready"), json!("Synced")],
            ),
            (".spec.missing", vec![]),
        ];
        for (path, want) in cases {
            let got: Vec<Value> = JsonPath::parse(path)
                .unwrap()
                .find(&obj)
                .into_iter()
                .cloned()
                .collect();
            assert_eq!(got, want, "{path}");
        }
        assert!(JsonPath::parse(".spec[").is_err());
    }
}
