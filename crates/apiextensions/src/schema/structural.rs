//! Whether a schema is structural (upstream `ValidateStructural` and `NewStructural`'s
//! unsupported-field errors), with upstream's paths and messages.

use apiserver::registry::FieldError;

use super::node::{Additional, Node};
use super::path::{idx, key, sub};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Item,
    Field,
}

/// The first construct `NewStructural` refuses (in upstream's order), as its error text.
pub(crate) fn unsupported(n: &Node) -> Option<String> {
    const ORDER: [(&str, &str); 7] = [
        ("id", "id"),
        ("$schema", "schema"),
        ("$ref", "$ref"),
        ("patternProperties", "patternProperties"),
        ("dependencies", "dependencies"),
        ("additionalItems", "additionalItems"),
        ("definitions", "definitions"),
    ];
    for (json, shown) in ORDER {
        if n.unsupported.contains(&json) {
            return Some(format!("OpenAPIV3Schema '{shown}' is not supported"));
        }
    }
    let nested = n
        .not
        .iter()
        .map(|b| b.as_ref())
        .chain(&n.all_of)
        .chain(&n.any_of)
        .chain(&n.one_of);
    for c in nested {
        if let Some(e) = unsupported(c) {
            return Some(e);
        }
    }
    if n.x_preserve_unknown_fields == Some(false) {
        return Some(
            "internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined"
                .into(),
        );
    }
    if n.items_array {
        return Some("OpenAPIV3Schema 'items' must be a schema, but is an array".into());
    }
    if let Some(e) = n.items.as_deref().and_then(unsupported) {
        return Some(e);
    }
    for p in n.properties.values() {
        if let Some(e) = unsupported(p) {
            return Some(e);
        }
    }
    if let Some(Additional::Schema(s)) = &n.additional_properties {
        return unsupported(s);
    }
    None
}

/// Structural-schema violations of `s` (rooted at `path`), sorted by message as upstream.
pub(crate) fn validate_structural(s: &Node, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    invariants(s, Level::Root, path, &mut errs);
    completeness_value(s, Some(s), path, path, &mut errs);
    errs.sort_by_key(|e| e.to_string());
    errs
}

fn only_type(n: &Node, t: &str) -> bool {
    if n.type_ != t {
        return false;
    }
    let mut c = n.clone();
    c.type_.clear();
    c.is_empty_structurally()
}

fn int_or_string_pair(list: &[Node]) -> bool {
    list.len() == 2 && only_type(&list[0], "integer") && only_type(&list[1], "string")
}

fn invariants(s: &Node, lvl: Level, path: &str, errs: &mut Vec<FieldError>) {
    if s.type_ == "array" && s.items.is_none() {
        errs.push(FieldError::required(
            &sub(path, "items"),
            "must be specified",
        ));
    }
    if let Some(items) = &s.items {
        invariants(items, Level::Item, &sub(path, "items"), errs);
    }
    for (k, v) in &s.properties {
        invariants(v, Level::Field, &key(&sub(path, "properties"), k), errs);
    }
    if let Some(ap) = &s.additional_properties {
        if lvl == Level::Root {
            errs.push(FieldError::forbidden(
                &sub(path, "additionalProperties"),
                "must not be used at the root",
            ));
        }
        if let Additional::Schema(ap) = ap {
            invariants(ap, Level::Field, &sub(path, "additionalProperties"), errs);
        }
    }
    if s.x_int_or_string && s.preserve_unknown() {
        errs.push(FieldError::invalid(
            &sub(path, "x-kubernetes-preserve-unknown-fields"),
            true,
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if s.x_int_or_string && s.x_embedded_resource {
        errs.push(FieldError::invalid(
            &sub(path, "x-kubernetes-embedded-resource"),
            true,
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    let skip_any_of = int_or_string_pair(&s.any_of);
    let skip_first_all_of_any_of = s
        .all_of
        .first()
        .is_some_and(|a| int_or_string_pair(&a.any_of));
    value_validation(s, skip_any_of, skip_first_all_of_any_of, path, errs);

    let check_metadata = lvl == Level::Root || s.x_embedded_resource;
    if s.x_embedded_resource && s.type_ != "object" {
        let detail = "must be object if x-kubernetes-embedded-resource is true";
        if s.type_.is_empty() {
            errs.push(FieldError::required(&sub(path, "type"), detail));
        } else {
            errs.push(FieldError::invalid(
                &sub(path, "type"),
                s.type_.as_str(),
                detail,
            ));
        }
    } else if s.type_.is_empty() && !s.x_int_or_string && !s.preserve_unknown() {
        let detail = match lvl {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        errs.push(FieldError::required(&sub(path, "type"), detail));
    }
    if s.x_embedded_resource && s.additional_properties.is_some() {
        errs.push(FieldError::forbidden(
            &sub(path, "additionalProperties"),
            "must not be used if x-kubernetes-embedded-resource is set",
        ));
    }
    if lvl == Level::Root && !s.type_.is_empty() && s.type_ != "object" {
        errs.push(FieldError::invalid(
            &sub(path, "type"),
            s.type_.as_str(),
            "must be object at the root",
        ));
    }
    for meta in ["kind", "apiVersion"] {
        if let Some(p) = s.properties.get(meta)
            && check_metadata
            && p.type_ != "string"
        {
            errs.push(FieldError::invalid(
                &sub(&key(&sub(path, "properties"), meta), "type"),
                p.type_.as_str(),
                "must be string",
            ));
        }
    }
    if let Some(m) = s.properties.get("metadata") {
        let mpath = key(&sub(path, "properties"), "metadata");
        if check_metadata && m.type_ != "object" {
            errs.push(FieldError::invalid(
                &sub(&mpath, "type"),
                m.type_.as_str(),
                "must be object",
            ));
        }
        if lvl == Level::Root {
            // Upstream: at the root, metadata may only restrict name and generateName (and
            // have a type); everything else is implicitly specified by ObjectMeta.
            let mut c = m.clone();
            let name = c.properties.contains_key("name");
            let generate = c.properties.contains_key("generateName");
            let n = c.properties.len();
            if (name && generate && n == 2) || ((name || generate) && n == 1) {
                c.properties.clear();
            }
            c.type_.clear();
            c.default = None;
            if !c.is_empty_structurally() {
                errs.push(FieldError::forbidden(
                    &mpath,
                    "must not specify anything other than name and generateName, but metadata is implicitly specified",
                ));
            }
        }
    }
    if s.x_embedded_resource && !s.preserve_unknown() && s.properties.is_empty() {
        errs.push(FieldError::required(
            &sub(path, "properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
}

fn value_validation(
    v: &Node,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    path: &str,
    errs: &mut Vec<FieldError>,
) {
    if !skip_any_of {
        for (i, c) in v.any_of.iter().enumerate() {
            nested(c, false, &idx(&sub(path, "anyOf"), i), errs);
        }
    }
    for (i, c) in v.all_of.iter().enumerate() {
        nested(
            c,
            skip_first_all_of_any_of && i == 0,
            &idx(&sub(path, "allOf"), i),
            errs,
        );
    }
    for (i, c) in v.one_of.iter().enumerate() {
        nested(c, false, &idx(&sub(path, "oneOf"), i), errs);
    }
    if let Some(n) = &v.not {
        nested(n, false, &sub(path, "not"), errs);
    }
    if !v.pattern.is_empty()
        && let Err(e) = regex::Regex::new(&v.pattern)
    {
        errs.push(FieldError::invalid(
            &sub(path, "pattern"),
            v.pattern.as_str(),
            &format!(
                "must be a valid regular expression, but isn't: {}",
                regex_error(&v.pattern, &e)
            ),
        ));
    }
}

/// A regex compile error as Go's `regexp` words it (`error parsing regexp: missing
/// argument to repetition operator: `+``), from the syntax error's kind and span.
pub(crate) fn regex_error(pattern: &str, e: &regex::Error) -> String {
    go_regex_error(pattern).unwrap_or_else(|| {
        let text = e.to_string();
        let msg = text
            .lines()
            .find_map(|l| l.strip_prefix("error: "))
            .unwrap_or(text.as_str())
            .to_string();
        format!("error parsing regexp: {msg}")
    })
}

/// Go's wording of why `pattern` does not parse, if the AST parser rejects it.
pub(crate) fn go_regex_error(pattern: &str) -> Option<String> {
    use regex_syntax::ast::ErrorKind as K;
    let err = regex_syntax::ast::parse::Parser::new()
        .parse(pattern)
        .err()?;
    let span = err.span();
    let at = match pattern.get(span.start.offset..span.end.offset) {
        Some(a) if !a.is_empty() => a,
        // An empty span points at the offending character.
        _ => pattern
            .get(span.start.offset..)
            .and_then(|rest| rest.chars().next().map(|c| &rest[..c.len_utf8()]))
            .unwrap_or(pattern),
    };
    let from = pattern.get(span.start.offset..).unwrap_or(pattern);
    let (code, expr) = match err.kind() {
        K::RepetitionMissing => ("missing argument to repetition operator", at),
        K::GroupUnclosed => ("missing closing )", pattern),
        K::GroupUnopened => ("unexpected )", pattern),
        K::ClassUnclosed => ("missing closing ]", from),
        K::ClassRangeInvalid => ("invalid character class range", at),
        K::EscapeUnrecognized | K::EscapeUnexpectedEof => ("invalid escape sequence", at),
        K::RepetitionCountInvalid => ("invalid repeat count", at),
        K::GroupNameInvalid | K::GroupNameEmpty | K::GroupNameDuplicate { .. } => {
            ("invalid named capture", at)
        }
        _ => ("invalid or unsupported Perl syntax", at),
    };
    Some(format!("error parsing regexp: {code}: `{expr}`"))
}

fn nested(v: &Node, skip_any_of: bool, path: &str, errs: &mut Vec<FieldError>) {
    value_validation(v, skip_any_of, false, path, errs);
    if let Some(items) = &v.items {
        nested(items, false, &sub(path, "items"), errs);
    }
    for (k, p) in &v.properties {
        nested(p, false, &key(&sub(path, "properties"), k), errs);
    }
    let ap = matches!(
        &v.additional_properties,
        Some(Additional::Bool(true)) | Some(Additional::Schema(_))
    );
    let forbid = |errs: &mut Vec<FieldError>, f: &str, d: &str| {
        errs.push(FieldError::forbidden(&sub(path, f), d))
    };
    if !v.type_.is_empty() {
        forbid(errs, "type", "must be empty to be structural");
    }
    if ap {
        forbid(
            errs,
            "additionalProperties",
            "must be undefined to be structural",
        );
    }
    if v.default.is_some() {
        forbid(errs, "default", "must be undefined to be structural");
    }
    if !v.title.is_empty() {
        forbid(errs, "title", "must be empty to be structural");
    }
    if !v.description.is_empty() {
        forbid(errs, "description", "must be empty to be structural");
    }
    if v.nullable {
        forbid(errs, "nullable", "must be false to be structural");
    }
    if v.preserve_unknown() {
        forbid(
            errs,
            "x-kubernetes-preserve-unknown-fields",
            "must be false to be structural",
        );
    }
    if v.x_embedded_resource {
        forbid(
            errs,
            "x-kubernetes-embedded-resource",
            "must be false to be structural",
        );
    }
    if v.x_int_or_string {
        forbid(
            errs,
            "x-kubernetes-int-or-string",
            "must be false to be structural",
        );
    }
    if !v.x_list_map_keys.is_empty() {
        forbid(
            errs,
            "x-kubernetes-list-map-keys",
            "must be empty to be structural",
        );
    }
    if v.x_list_type.is_some() {
        forbid(
            errs,
            "x-kubernetes-list-type",
            "must be undefined to be structural",
        );
    }
    if v.x_map_type.is_some() {
        forbid(
            errs,
            "x-kubernetes-map-type",
            "must be undefined to be structural",
        );
    }
    if !v.x_validations.is_empty() {
        forbid(
            errs,
            "x-kubernetes-validations",
            "must be empty to be structural",
        );
    }
    if v.properties.contains_key("metadata") {
        errs.push(FieldError::forbidden(
            &key(&sub(path, "properties"), "metadata"),
            "must not be specified in a nested context",
        ));
    }
}

/// Every property or items a value validation mentions must be specified structurally.
fn completeness_value(
    v: &Node,
    s: Option<&Node>,
    spath: &str,
    vpath: &str,
    errs: &mut Vec<FieldError>,
) {
    if let Some(n) = &v.not {
        completeness_nested(n, s, spath, &sub(vpath, "not"), errs);
    }
    for (i, c) in v.all_of.iter().enumerate() {
        completeness_nested(c, s, spath, &idx(&sub(vpath, "allOf"), i), errs);
    }
    for (i, c) in v.any_of.iter().enumerate() {
        completeness_nested(c, s, spath, &idx(&sub(vpath, "anyOf"), i), errs);
    }
    for (i, c) in v.one_of.iter().enumerate() {
        completeness_nested(c, s, spath, &idx(&sub(vpath, "oneOf"), i), errs);
    }
}

fn completeness_nested(
    v: &Node,
    s: Option<&Node>,
    spath: &str,
    vpath: &str,
    errs: &mut Vec<FieldError>,
) {
    let Some(s) = s else {
        errs.push(FieldError::required(
            spath,
            &format!("because it is defined in {vpath}"),
        ));
        return;
    };
    completeness_value(v, Some(s), spath, vpath, errs);
    if let Some(items) = &v.items {
        completeness_nested(
            items,
            s.items.as_deref(),
            &sub(spath, "items"),
            &sub(vpath, "items"),
            errs,
        );
    }
    for (k, vf) in &v.properties {
        match s.properties.get(k) {
            None => errs.push(FieldError::required(
                &key(&sub(spath, "properties"), k),
                &format!(
                    "because it is defined in {}",
                    key(&sub(vpath, "properties"), k)
                ),
            )),
            Some(sf) => completeness_nested(
                vf,
                Some(sf),
                &key(&sub(spath, "properties"), k),
                &key(&sub(vpath, "properties"), k),
                errs,
            ),
        }
    }
}
