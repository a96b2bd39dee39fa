//! The naming controller's decision (upstream `calculateNamesAndConditions`): which of a CRD's
//! requested names it may have, given the names the other CRDs of its group were accepted
//! with, and its `NamesAccepted` and `Established` conditions. The establishing controller then
//! turns `Established` true once the names are accepted.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use crate::crd::{Condition, condition};

/// What the naming controller sets on a CRD's status.
#[derive(Clone, Debug, PartialEq)]
pub struct NamingResult {
    /// `status.acceptedNames`.
    pub accepted_names: Value,
    /// The `NamesAccepted` condition.
    pub names_accepted: Condition,
    /// The `Established` condition.
    pub established: Condition,
}

fn names_str<'a>(names: &'a Value, field: &str) -> &'a str {
    names.get(field).and_then(Value::as_str).unwrap_or_default()
}

fn short_names(names: &Value) -> Vec<String> {
    names
        .get("shortNames")
        .and_then(Value::as_array)
        .map(|l| {
            l.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn equal_to_accepted_or_fresh(
    requested: &str,
    accepted: &str,
    used: &BTreeSet<String>,
) -> Result<(), String> {
    if requested == accepted || !used.contains(requested) {
        Ok(())
    } else {
        Err(format!("{requested:?} is already in use"))
    }
}

/// The accepted names and conditions of `crd`, where `others` are every CRD (this one is
/// skipped by name).
pub fn calculate_names(crd: &Value, others: &[Value]) -> NamingResult {
    let name = crd.pointer("/metadata/name").and_then(Value::as_str);
    let group = crd.pointer("/spec/group").and_then(Value::as_str);
    let mut resources = BTreeSet::new();
    let mut kinds = BTreeSet::new();
    for other in others {
        if other.pointer("/metadata/name").and_then(Value::as_str) == name
            || other.pointer("/spec/group").and_then(Value::as_str) != group
        {
            continue;
        }
        let accepted = other
            .pointer("/status/acceptedNames")
            .cloned()
            .unwrap_or(Value::Null);
        for field in ["plural", "singular"] {
            resources.insert(names_str(&accepted, field).to_string());
        }
        resources.extend(short_names(&accepted));
        for field in ["kind", "listKind"] {
            kinds.insert(names_str(&accepted, field).to_string());
        }
    }
    resources.remove("");
    kinds.remove("");

    let accepted = crd
        .pointer("/status/acceptedNames")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let requested = crd
        .pointer("/spec/names")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let mut new_names: Map<String, Value> = accepted.as_object().cloned().unwrap_or_default();
    let mut cond = Condition::new("NamesAccepted", "Unknown", "", "");
    let conflict = |cond: &mut Condition, reason: &str, message: String| {
        cond.status = "False".into();
        cond.reason = reason.into();
        cond.message = message;
    };

    for (field, reason) in [
        ("plural", "PluralConflict"),
        ("singular", "SingularConflict"),
    ] {
        match equal_to_accepted_or_fresh(
            names_str(&requested, field),
            names_str(&accepted, field),
            &resources,
        ) {
            Ok(()) => {
                if let Some(v) = requested.get(field) {
                    new_names.insert(field.into(), v.clone());
                }
            }
            Err(message) => conflict(&mut cond, reason, message),
        }
    }
    let requested_short = short_names(&requested);
    let accepted_short = short_names(&accepted);
    if requested_short != accepted_short {
        let errs: Vec<String> = requested_short
            .iter()
            .filter(|s| !accepted_short.contains(s))
            .filter_map(|s| equal_to_accepted_or_fresh(s, "", &resources).err())
            .collect();
        match errs.len() {
            0 => {
                new_names.insert("shortNames".into(), json!(requested_short));
            }
            // upstream's aggregate error: one message as is, several in brackets.
            1 => conflict(&mut cond, "ShortNamesConflict", errs[0].clone()),
            _ => conflict(
                &mut cond,
                "ShortNamesConflict",
                format!("[{}]", errs.join(", ")),
            ),
        }
    }
    for (field, reason) in [("kind", "KindConflict"), ("listKind", "ListKindConflict")] {
        match equal_to_accepted_or_fresh(
            names_str(&requested, field),
            names_str(&accepted, field),
            &kinds,
        ) {
            Ok(()) => {
                if let Some(v) = requested.get(field) {
                    new_names.insert(field.into(), v.clone());
                }
            }
            Err(message) => conflict(&mut cond, reason, message),
        }
    }
    match requested.get("categories") {
        Some(c) => new_names.insert("categories".into(), c.clone()),
        None => new_names.remove("categories"),
    };
    if cond.status == "Unknown" {
        cond = Condition::new("NamesAccepted", "True", "NoConflicts", "no conflicts found");
    }

    let mut established = match condition(crd, "Established") {
        Some(old) => Condition::new(
            "Established",
            old.get("status")
                .and_then(Value::as_str)
                .unwrap_or_default(),
            old.get("reason")
                .and_then(Value::as_str)
                .unwrap_or_default(),
            old.get("message")
                .and_then(Value::as_str)
                .unwrap_or_default(),
        ),
        None => Condition::new(
            "Established",
            "False",
            "NotAccepted",
            "not all names are accepted",
        ),
    };
    if established.status != "True" && cond.status == "True" {
        established = Condition::new(
            "Established",
            "False",
            "Installing",
            "the initial names have been accepted",
        );
    }
    NamingResult {
        accepted_names: Value::Object(new_names),
        names_accepted: cond,
        established,
    }
}

/// The `Established` condition the establishing controller sets once names are accepted.
pub fn established_condition() -> Condition {
    Condition::new(
        "Established",
        "True",
        "InitialNamesAccepted",
        "the initial names have been accepted",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(name: &str, group: &str, names: Value, accepted: Value) -> Value {
        json!({"metadata": {"name": name}, "spec": {"group": group, "names": names},
               "status": {"acceptedNames": accepted}})
    }

    fn widgets() -> Value {
        json!({"plural": "widgets", "singular": "widget", "kind": "Widget",
               "listKind": "WidgetList", "shortNames": ["wd"], "categories": ["all"]})
    }

    #[test]
    fn fresh_names_are_accepted() {
        let c = crd(
            "widgets.a.io",
            "a.io",
            widgets(),
            json!({"plural": "", "kind": ""}),
        );
        let r = calculate_names(&c, std::slice::from_ref(&c));
        assert_eq!(r.accepted_names, widgets());
        assert_eq!(
            r.names_accepted,
            Condition::new("NamesAccepted", "True", "NoConflicts", "no conflicts found")
        );
        assert_eq!(
            r.established,
            Condition::new(
                "Established",
                "False",
                "Installing",
                "the initial names have been accepted"
            )
        );
    }

    // upstream naming_controller_test cases: conflicts with other CRDs of the group.
    #[test]
    fn conflicts_as_upstream() {
        let existing = crd("widgets.a.io", "a.io", widgets(), widgets());
        let cases = [
            (
                json!({"plural": "widgets", "kind": "Other"}),
                "PluralConflict",
                "\"widgets\" is already in use",
            ),
            (
                json!({"plural": "others", "singular": "widget", "kind": "Other"}),
                "SingularConflict",
                "\"widget\" is already in use",
            ),
            (
                json!({"plural": "others", "kind": "Other", "shortNames": ["wd"]}),
                "ShortNamesConflict",
                "\"wd\" is already in use",
            ),
            (
                json!({"plural": "others", "kind": "Widget"}),
                "KindConflict",
                "\"Widget\" is already in use",
            ),
            (
                json!({"plural": "others", "kind": "Other", "listKind": "WidgetList"}),
                "ListKindConflict",
                "\"WidgetList\" is already in use",
            ),
        ];
        for (names, reason, message) in cases {
            let c = crd("others.a.io", "a.io", names, json!({}));
            let r = calculate_names(&c, &[existing.clone(), c.clone()]);
            assert_eq!(r.names_accepted.status, "False", "{reason}");
            assert_eq!(r.names_accepted.reason, reason);
            assert_eq!(r.names_accepted.message, message);
            assert_eq!(r.established.reason, "NotAccepted");
        }
        // Another group may use the same names.
        let c = crd("widgets.b.io", "b.io", widgets(), json!({}));
        let r = calculate_names(&c, &[existing, c.clone()]);
        assert_eq!(r.names_accepted.status, "True");
    }

    #[test]
    fn established_stays_true() {
        let mut c = crd("widgets.a.io", "a.io", widgets(), widgets());
        c["status"]["conditions"] = json!([{"type": "Established", "status": "True",
            "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"}]);
        let r = calculate_names(&c, &[]);
        assert_eq!(r.established, established_condition());
    }
}
