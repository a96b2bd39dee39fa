//! Label selectors, a port of apimachinery's `pkg/labels` parser (same grammar, same error
//! texts, requirements sorted by key).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::LazyLock;

use regex::Regex;

use super::packed::AttrLookup;

/// A set of labels.
pub type Labels = BTreeMap<String, String>;

/// A selector operator (`selection.Operator`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operator {
    /// `!key`
    DoesNotExist,
    /// `key=v`
    Equals,
    /// `key==v`
    DoubleEquals,
    /// `key in (a,b)`
    In,
    /// `key!=v`
    NotEquals,
    /// `key notin (a,b)`
    NotIn,
    /// `key`
    Exists,
    /// `key>1`
    GreaterThan,
    /// `key<1`
    LessThan,
}

/// One requirement of a selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requirement {
    /// The label key.
    pub key: String,
    /// The operator.
    pub operator: Operator,
    /// The values, sorted and de-duplicated.
    pub values: Vec<String>,
}

impl Requirement {
    /// Whether the labels satisfy this requirement.
    pub fn matches<L: AttrLookup + ?Sized>(&self, labels: &L) -> bool {
        let value = labels.lookup(&self.key);
        let listed = |v: &str| self.values.iter().any(|w| w == v);
        match self.operator {
            Operator::In | Operator::Equals | Operator::DoubleEquals => value.is_some_and(listed),
            Operator::NotIn | Operator::NotEquals => value.is_none_or(|v| !listed(v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let (Some(v), [want]) = (value, self.values.as_slice()) else {
                    return false;
                };
                let (Ok(have), Ok(want)) = (v.parse::<i64>(), want.parse::<i64>()) else {
                    return false;
                };
                match self.operator {
                    Operator::GreaterThan => have > want,
                    _ => have < want,
                }
            }
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.operator == Operator::DoesNotExist {
            f.write_str("!")?;
        }
        f.write_str(&self.key)?;
        let op = match self.operator {
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::In => " in ",
            Operator::NotIn => " notin ",
            Operator::GreaterThan => ">",
            Operator::LessThan => "<",
            Operator::Exists | Operator::DoesNotExist => return Ok(()),
        };
        f.write_str(op)?;
        let list = matches!(self.operator, Operator::In | Operator::NotIn);
        if list {
            f.write_str("(")?;
        }
        f.write_str(&self.values.join(","))?;
        if list {
            f.write_str(")")?;
        }
        Ok(())
    }
}

/// A parsed label selector: the AND of its requirements. The empty selector matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

impl LabelSelector {
    /// The selector matching everything.
    pub fn everything() -> Self {
        Self::default()
    }

    /// Parses a selector string (`labels.Parse`).
    pub fn parse(selector: &str) -> Result<Self, String> {
        let mut parser = Parser {
            items: lex_all(selector),
            pos: 0,
        };
        let mut requirements = parser.parse()?;
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(LabelSelector { requirements })
    }

    /// A selector requiring `key=value` for each pair.
    pub fn from_set(labels: &Labels) -> Self {
        LabelSelector {
            requirements: labels
                .iter()
                .map(|(k, v)| Requirement {
                    key: k.clone(),
                    operator: Operator::Equals,
                    values: vec![v.clone()],
                })
                .collect(),
        }
    }

    /// True when it matches everything.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// The requirements, sorted by key.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// Whether the labels match.
    pub fn matches<L: AttrLookup + ?Sized>(&self, labels: &L) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }

    /// The single value `label` must equal, if the selector demands one.
    pub fn requires_exact_match(&self, label: &str) -> Option<&str> {
        let r = self.requirements.iter().find(|r| r.key == label)?;
        match (r.operator, r.values.as_slice()) {
            (Operator::Equals | Operator::DoubleEquals | Operator::In, [v]) => Some(v),
            _ => None,
        }
    }
}

impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.requirements.iter().map(|r| r.to_string()).collect();
        f.write_str(&parts.join(","))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Token {
    EndOfString,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
    Error,
}

fn keyword(s: &str) -> Option<Token> {
    Some(match s {
        ")" => Token::ClosedPar,
        "," => Token::Comma,
        "!" => Token::DoesNotExist,
        "==" => Token::DoubleEquals,
        "=" => Token::Equals,
        ">" => Token::GreaterThan,
        "in" => Token::In,
        "<" => Token::LessThan,
        "!=" => Token::NotEquals,
        "notin" => Token::NotIn,
        "(" => Token::OpenPar,
        _ => return None,
    })
}

fn is_whitespace(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special(c: u8) -> bool {
    matches!(c, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

fn lex_all(s: &str) -> Vec<(Token, String)> {
    let bytes = s.as_bytes();
    let mut pos = 0;
    let mut out = Vec::new();
    loop {
        while pos < bytes.len() && is_whitespace(bytes[pos]) {
            pos += 1;
        }
        if pos >= bytes.len() {
            out.push((Token::EndOfString, String::new()));
            return out;
        }
        if is_special(bytes[pos]) {
            // Longest run of special symbols that still forms a token.
            let start = pos;
            let mut last: Option<(Token, usize)> = None;
            while pos < bytes.len() && is_special(bytes[pos]) {
                let candidate = &s[start..=pos];
                if let Some(tok) = keyword(candidate) {
                    last = Some((tok, pos + 1));
                    pos += 1;
                } else if last.is_some() {
                    break;
                } else {
                    pos += 1;
                }
            }
            match last {
                Some((tok, end)) => {
                    out.push((tok, s[start..end].to_string()));
                    pos = end;
                }
                None => out.push((
                    Token::Error,
                    format!("error expected: keyword found '{}'", &s[start..pos]),
                )),
            }
        } else {
            let start = pos;
            while pos < bytes.len() && !is_special(bytes[pos]) && !is_whitespace(bytes[pos]) {
                pos += 1;
            }
            let word = &s[start..pos];
            out.push((keyword(word).unwrap_or(Token::Identifier), word.to_string()));
        }
    }
}

struct Parser {
    items: Vec<(Token, String)>,
    pos: usize,
}

/// In value context `in`/`notin` are plain identifiers.
fn as_value(tok: Token) -> Token {
    match tok {
        Token::In | Token::NotIn => Token::Identifier,
        t => t,
    }
}

impl Parser {
    fn lookahead(&self, values: bool) -> (Token, String) {
        let (tok, lit) = self
            .items
            .get(self.pos)
            .cloned()
            .unwrap_or((Token::EndOfString, String::new()));
        (if values { as_value(tok) } else { tok }, lit)
    }

    fn consume(&mut self, values: bool) -> (Token, String) {
        let item = self.lookahead(values);
        self.pos += 1;
        item
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, String> {
        let mut requirements = Vec::new();
        loop {
            let (tok, lit) = self.lookahead(true);
            match tok {
                Token::Identifier | Token::DoesNotExist => {
                    let r = self
                        .parse_requirement()
                        .map_err(|e| format!("unable to parse requirement: {e}"))?;
                    requirements.push(r);
                    let (t, l) = self.consume(true);
                    match t {
                        Token::EndOfString => return Ok(requirements),
                        Token::Comma => {
                            let (t2, l2) = self.lookahead(true);
                            if t2 != Token::Identifier && t2 != Token::DoesNotExist {
                                return Err(format!(
                                    "found '{l2}', expected: identifier after ','"
                                ));
                            }
                        }
                        _ => return Err(format!("found '{l}', expected: ',' or 'end of string'")),
                    }
                }
                Token::EndOfString => return Ok(requirements),
                _ => {
                    return Err(format!(
                        "found '{lit}', expected: !, identifier, or 'end of string'"
                    ));
                }
            }
        }
    }

    fn parse_requirement(&mut self) -> Result<Requirement, String> {
        let (key, op) = self.parse_key_and_infer_operator()?;
        if let Some(op @ (Operator::Exists | Operator::DoesNotExist)) = op {
            return new_requirement(key, op, Vec::new());
        }
        let op = self.parse_operator()?;
        let values = match op {
            Operator::In | Operator::NotIn => self.parse_values()?,
            _ => self.parse_exact_value()?,
        };
        new_requirement(key, op, values)
    }

    fn parse_key_and_infer_operator(&mut self) -> Result<(String, Option<Operator>), String> {
        let mut op = None;
        let (mut tok, mut lit) = self.consume(true);
        if tok == Token::DoesNotExist {
            op = Some(Operator::DoesNotExist);
            (tok, lit) = self.consume(true);
        }
        if tok != Token::Identifier {
            return Err(format!("found '{lit}', expected: identifier"));
        }
        let errs = label_key_errors(&lit);
        if !errs.is_empty() {
            return Err(field_invalid("<nil>", &lit, &errs.join("; ")));
        }
        let (t, _) = self.lookahead(true);
        if (t == Token::EndOfString || t == Token::Comma) && op != Some(Operator::DoesNotExist) {
            op = Some(Operator::Exists);
        }
        Ok((lit, op))
    }

    fn parse_operator(&mut self) -> Result<Operator, String> {
        let (tok, lit) = self.consume(false);
        Ok(match tok {
            Token::In => Operator::In,
            Token::Equals => Operator::Equals,
            Token::DoubleEquals => Operator::DoubleEquals,
            Token::GreaterThan => Operator::GreaterThan,
            Token::LessThan => Operator::LessThan,
            Token::NotIn => Operator::NotIn,
            Token::NotEquals => Operator::NotEquals,
            _ => {
                return Err(format!(
                    "found '{lit}', expected: in, notin, =, ==, !=, gt, lt"
                ));
            }
        })
    }

    fn parse_values(&mut self) -> Result<Vec<String>, String> {
        let (tok, lit) = self.consume(true);
        if tok != Token::OpenPar {
            return Err(format!("found '{lit}' expected: '('"));
        }
        let (tok, lit) = self.lookahead(true);
        match tok {
            Token::Identifier | Token::Comma => {
                let s = self.parse_identifiers_list()?;
                let (t, _) = self.consume(true);
                if t != Token::ClosedPar {
                    return Err(format!("found '{lit}', expected: ')'"));
                }
                Ok(s)
            }
            Token::ClosedPar => {
                self.consume(true);
                Ok(vec![String::new()])
            }
            _ => Err(format!("found '{lit}', expected: ',', ')' or identifier")),
        }
    }

    fn parse_identifiers_list(&mut self) -> Result<Vec<String>, String> {
        let mut set = std::collections::BTreeSet::new();
        loop {
            let (tok, lit) = self.consume(true);
            match tok {
                Token::Identifier => {
                    set.insert(lit);
                    let (t2, l2) = self.lookahead(true);
                    match t2 {
                        Token::Comma => continue,
                        Token::ClosedPar => return Ok(set.into_iter().collect()),
                        _ => return Err(format!("found '{l2}', expected: ',' or ')'")),
                    }
                }
                Token::Comma => {
                    if set.is_empty() {
                        set.insert(String::new());
                    }
                    let (t2, _) = self.lookahead(true);
                    if t2 == Token::ClosedPar {
                        set.insert(String::new());
                        return Ok(set.into_iter().collect());
                    }
                    if t2 == Token::Comma {
                        set.insert(String::new());
                    }
                }
                _ => return Err(format!("found '{lit}', expected: ',', or identifier")),
            }
        }
    }

    fn parse_exact_value(&mut self) -> Result<Vec<String>, String> {
        let (tok, _) = self.lookahead(true);
        if tok == Token::EndOfString || tok == Token::Comma {
            return Ok(vec![String::new()]);
        }
        let (tok, lit) = self.consume(true);
        if tok == Token::Identifier {
            Ok(vec![lit])
        } else {
            Err(format!("found '{lit}', expected: identifier"))
        }
    }
}

/// `field.Invalid(path, value, detail).Error()` for a string value.
fn field_invalid(path: &str, value: &str, detail: &str) -> String {
    format!("{path}: Invalid value: {}: {detail}", go_quote(value))
}

/// Go's `%q` for the printable strings selectors carry.
fn go_quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
}

/// `labels.NewRequirement`: validates key and values, aggregating errors.
fn new_requirement(key: String, op: Operator, values: Vec<String>) -> Result<Requirement, String> {
    let mut errs = Vec::new();
    let key_errs = label_key_errors(&key);
    if !key_errs.is_empty() {
        errs.push(field_invalid("key", &key, &key_errs.join("; ")));
    }
    if matches!(op, Operator::GreaterThan | Operator::LessThan) {
        for (i, v) in values.iter().enumerate() {
            if v.parse::<i64>().is_err() {
                errs.push(field_invalid(
                    &format!("values[{i}]"),
                    v,
                    "for 'Gt', 'Lt' operators, the value must be an integer",
                ));
            }
        }
    }
    for (i, v) in values.iter().enumerate() {
        let value_errs = label_value_errors(v);
        if !value_errs.is_empty() {
            errs.push(field_invalid(
                &format!("values[{i}][{key}]"),
                v,
                &value_errs.join("; "),
            ));
        }
    }
    match errs.len() {
        0 => Ok(Requirement {
            key,
            operator: op,
            values,
        }),
        1 => Err(errs.remove(0)),
        _ => Err(format!("[{}]", errs.join(", "))),
    }
}

const LABEL_KEY_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";

static LABEL_KEY_RE: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(&format!("^{LABEL_KEY_FMT}$")).ok());
static LABEL_VALUE_RE: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(&format!("^{LABEL_VALUE_FMT}$")).ok());
static DNS1123_SUBDOMAIN_RE: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(&format!("^{DNS1123_SUBDOMAIN_FMT}$")).ok());

fn re_matches(re: &LazyLock<Option<Regex>>, s: &str) -> bool {
    re.as_ref().is_some_and(|r| r.is_match(s))
}

/// `content.RegexError`.
fn regex_error(msg: &str, re: &str, examples: &[&str]) -> String {
    let mut out = format!("{msg} (e.g. ");
    for (i, ex) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push_str(&format!("'{ex}', "));
    }
    out.push_str(&format!("regex used for validation is '{re}')"));
    out
}

/// `content.IsLabelKey`.
pub fn label_key_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                if prefix.len() > 253 {
                    errs.push("prefix part must be no more than 253 bytes".to_string());
                }
                if !re_matches(&DNS1123_SUBDOMAIN_RE, prefix) {
                    errs.push(format!(
                        "prefix part {}",
                        regex_error(
                            DNS1123_SUBDOMAIN_ERR,
                            DNS1123_SUBDOMAIN_FMT,
                            &["example.com"]
                        )
                    ));
                }
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(LABEL_KEY_ERR, LABEL_KEY_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push("name part must be no more than 63 bytes".to_string());
    }
    if !re_matches(&LABEL_KEY_RE, name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                LABEL_KEY_ERR,
                LABEL_KEY_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// `validation.IsValidLabelValue`.
pub fn label_value_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push("must be no more than 63 bytes".to_string());
    }
    if !re_matches(&LABEL_VALUE_RE, value) {
        errs.push(regex_error(
            LABEL_VALUE_ERR,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn parse_and_string_round_trip() {
        // Cases from apimachinery's TestSelectorParse (valid inputs and their String()).
        let cases = [
            ("", ""),
            ("x=a,y=b,z=c", "x=a,y=b,z=c"),
            ("x!=a,y=b", "x!=a,y=b"),
            ("x=", "x="),
            ("x= ", "x="),
            ("x=,z= ", "x=,z="),
            ("x= ,z= ", "x=,z="),
            ("!x", "!x"),
            ("x>1", "x>1"),
            ("x<1", "x<1"),
            ("x in (a,b)", "x in (a,b)"),
            ("x notin (b,a)", "x notin (a,b)"),
            ("x in ()", "x in ()"),
            ("x in (,a)", "x in (,a)"),
            ("z,x", "x,z"),
            ("x==a", "x==a"),
            ("w in (in)", "w in (in)"),
        ];
        for (input, want) in cases {
            let sel = LabelSelector::parse(input).unwrap_or_else(|e| panic!("{input}: {e}"));
            assert_eq!(sel.to_string(), want, "input {input:?}");
        }
    }

    #[test]
    fn parse_errors() {
        let cases = [
            ("x=a||y=b", "unable to parse requirement: values[0][x]"),
            ("x==a==b", "found '==', expected: ',' or 'end of string'"),
            ("!x=a", "found '=', expected: ',' or 'end of string'"),
            ("x>", "the value must be an integer"),
            (
                "x in a",
                "unable to parse requirement: found 'a' expected: '('",
            ),
            ("x,", "found '', expected: identifier after ','"),
            (
                "x>a",
                "for 'Gt', 'Lt' operators, the value must be an integer",
            ),
            ("x= a b", "found 'b', expected: ',' or 'end of string'"),
            (
                "!",
                "unable to parse requirement: found '', expected: identifier",
            ),
            (
                "(",
                "found '(', expected: !, identifier, or 'end of string'",
            ),
        ];
        for (input, want) in cases {
            let err = LabelSelector::parse(input).expect_err(input);
            assert!(err.contains(want), "input {input:?}: {err}");
        }
        // A bad key carries upstream's nil-path field error.
        let err = LabelSelector::parse("a/b/c=x").unwrap_err();
        assert!(
            err.starts_with("unable to parse requirement: <nil>: Invalid value: \"a/b/c\": a valid label key must consist of"),
            "{err}"
        );
        let err = LabelSelector::parse("x=a$b").unwrap_err();
        assert!(
            err.starts_with(
                "unable to parse requirement: values[0][x]: Invalid value: \"a$b\": a valid label must be an empty string"
            ),
            "{err}"
        );
    }

    #[test]
    fn matches() {
        let ls = labels(&[("x", "a"), ("n", "5")]);
        let cases = [
            ("", true),
            ("x=a", true),
            ("x=b", false),
            ("x!=b", true),
            ("y!=b", true),
            ("x", true),
            ("y", false),
            ("!y", true),
            ("!x", false),
            ("x in (a,b)", true),
            ("x notin (a,b)", false),
            ("y notin (a)", true),
            ("n>4", true),
            ("n<4", false),
            ("x>4", false),
            ("x=a,n>4", true),
        ];
        for (sel, want) in cases {
            assert_eq!(
                LabelSelector::parse(sel).unwrap().matches(&ls),
                want,
                "{sel}"
            );
        }
    }
}
