//! Field selectors, a port of apimachinery's `pkg/fields` (`=`, `==`, `!=`, backslash escapes).

use std::collections::BTreeMap;
use std::fmt;

use super::packed::AttrLookup;

/// Field values of an object, e.g. `metadata.name`.
pub type Fields = BTreeMap<String, String>;

/// One term of a field selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldRequirement {
    /// The field, e.g. `metadata.name`.
    pub field: String,
    /// `true` for `!=`.
    pub not_equal: bool,
    /// The (unescaped) value.
    pub value: String,
}

/// A parsed field selector: the AND of its terms. Empty matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSelector {
    terms: Vec<FieldRequirement>,
}

impl FieldSelector {
    /// The selector matching everything.
    pub fn everything() -> Self {
        Self::default()
    }

    /// `fields.OneTermEqualSelector`.
    pub fn one_term_equal(field: &str, value: &str) -> Self {
        FieldSelector {
            terms: vec![FieldRequirement {
                field: field.into(),
                not_equal: false,
                value: value.into(),
            }],
        }
    }

    /// Parses a selector (`fields.ParseSelector`).
    pub fn parse(selector: &str) -> Result<Self, String> {
        let mut parts = split_terms(selector);
        parts.sort();
        let mut terms = Vec::new();
        for part in parts {
            if part.is_empty() {
                continue;
            }
            let Some((lhs, op, rhs)) = split_term(part) else {
                return Err(format!(
                    "invalid selector: '{selector}'; can't understand '{part}'"
                ));
            };
            terms.push(FieldRequirement {
                field: lhs.to_string(),
                not_equal: op == "!=",
                value: unescape_value(rhs)?,
            });
        }
        Ok(FieldSelector { terms })
    }

    /// Appends a term (used to merge the URL name as `metadata.name=<name>`).
    pub fn and(mut self, term: FieldRequirement) -> Self {
        self.terms.push(term);
        self
    }

    /// True when it matches everything.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// The terms.
    pub fn requirements(&self) -> &[FieldRequirement] {
        &self.terms
    }

    /// Whether the fields match (a missing field reads as the empty string, as upstream).
    pub fn matches<F: AttrLookup + ?Sized>(&self, fields: &F) -> bool {
        self.terms.iter().all(|t| {
            let have = fields.lookup(&t.field).unwrap_or("");
            (have == t.value) != t.not_equal
        })
    }

    /// The value `field` must equal, if the selector demands one.
    pub fn requires_exact_match(&self, field: &str) -> Option<&str> {
        self.terms
            .iter()
            .find(|t| t.field == field && !t.not_equal)
            .map(|t| t.value.as_str())
    }
}

impl fmt::Display for FieldSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .terms
            .iter()
            .map(|t| {
                let op = if t.not_equal { "!=" } else { "=" };
                format!("{}{op}{}", t.field, escape_value(&t.value))
            })
            .collect();
        f.write_str(&parts.join(","))
    }
}

/// `fields.EscapeValue`.
pub fn escape_value(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace(',', "\\,")
        .replace('=', "\\=")
}

/// `fields.UnescapeValue`.
pub fn unescape_value(s: &str) -> Result<String, String> {
    if !s.contains(['\\', ',', '=']) {
        return Ok(s.to_string());
    }
    let mut out = String::with_capacity(s.len());
    let mut in_slash = false;
    for c in s.chars() {
        if in_slash {
            match c {
                '\\' | ',' | '=' => out.push(c),
                _ => {
                    return Err(format!(
                        "invalid field selector: invalid escape sequence: \\{c}"
                    ));
                }
            }
            in_slash = false;
            continue;
        }
        match c {
            '\\' => in_slash = true,
            ',' | '=' => {
                // Go prints the rune with %v, i.e. as its code point number.
                return Err(format!(
                    "invalid field selector: unescaped character in value: {}",
                    c as u32
                ));
            }
            _ => out.push(c),
        }
    }
    if in_slash {
        return Err("invalid field selector: invalid escape sequence: \\".into());
    }
    Ok(out)
}

fn split_terms(selector: &str) -> Vec<&str> {
    if selector.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut start = 0;
    let mut in_slash = false;
    for (i, c) in selector.char_indices() {
        if in_slash {
            in_slash = false;
        } else if c == '\\' {
            in_slash = true;
        } else if c == ',' {
            terms.push(&selector[start..i]);
            start = i + 1;
        }
    }
    terms.push(&selector[start..]);
    terms
}

fn split_term(term: &str) -> Option<(&str, &str, &str)> {
    for (i, _) in term.char_indices() {
        let rest = &term[i..];
        for op in ["!=", "==", "="] {
            if let Some(rhs) = rest.strip_prefix(op) {
                return Some((&term[..i], op, rhs));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_match() {
        let fields: Fields = [("metadata.name", "foo"), ("metadata.namespace", "ns")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let cases = [
            ("", true),
            ("metadata.name=foo", true),
            ("metadata.name==foo", true),
            ("metadata.name!=foo", false),
            ("metadata.name=foo,metadata.namespace=ns", true),
            ("metadata.name=foo,metadata.namespace!=ns", false),
            ("spec.nodeName=", true),
        ];
        for (sel, want) in cases {
            assert_eq!(
                FieldSelector::parse(sel).unwrap().matches(&fields),
                want,
                "{sel}"
            );
        }
    }

    #[test]
    fn errors_and_escapes() {
        assert_eq!(
            FieldSelector::parse("foo").unwrap_err(),
            "invalid selector: 'foo'; can't understand 'foo'"
        );
        assert_eq!(
            FieldSelector::parse("a=b\\x").unwrap_err(),
            "invalid field selector: invalid escape sequence: \\x"
        );
        assert_eq!(
            FieldSelector::parse("a=b=c").unwrap_err(),
            "invalid field selector: unescaped character in value: 61"
        );
        let sel = FieldSelector::parse("a=b\\,c\\=d").unwrap();
        assert_eq!(sel.requirements()[0].value, "b,c=d");
        assert_eq!(sel.to_string(), "a=b\\,c\\=d");
    }
}
