//! What reconciling one default role or binding with the stored one does (upstream
//! `pkg/registry/rbac/reconciliation`, as the bootstrap hook calls it: extra permissions and
//! subjects are kept). Pure: the hook applies the result.

use k8s_openapi::api::rbac::v1::{PolicyRule, Subject};
use serde_json::{Map, Value};

use super::AUTOUPDATE_ANNOTATION;
use super::rules::uncovered;

/// What has to happen to the stored object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Operation {
    /// Nothing: it is up to date.
    None,
    /// It does not exist: create it.
    Create,
    /// Update it to the reconciled object.
    Update,
    /// A binding whose role reference changed: delete it and create the reconciled one (a
    /// binding's `roleRef` cannot be updated).
    Recreate,
}

/// The outcome of reconciling one object.
#[derive(Clone, Debug, PartialEq)]
pub struct Reconciled {
    /// What to do.
    pub operation: Operation,
    /// The object to create or update to.
    pub object: Value,
    /// Whether the stored object is annotated `autoupdate: "false"`, so it must be left as it
    /// is whatever [`operation`](Self::operation) says.
    pub protected: bool,
    /// Rules the stored role lacks (broken down one verb and resource each, as upstream
    /// appends them).
    pub missing_rules: Vec<PolicyRule>,
    /// Subjects the stored binding lacks.
    pub missing_subjects: Vec<Value>,
}

impl Reconciled {
    fn create(expected: &Value) -> Self {
        Reconciled {
            operation: Operation::Create,
            object: expected.clone(),
            protected: false,
            missing_rules: Vec::new(),
            missing_subjects: Vec::new(),
        }
    }
}

fn is_protected(existing: &Value) -> bool {
    existing
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(AUTOUPDATE_ANNOTATION))
        .and_then(Value::as_str)
        == Some("false")
}

/// Merges `expected`'s map at `metadata.<field>` under the stored one (stored values win, as
/// upstream's `merge(expected, existing)`); true when that changed anything.
fn merge_metadata_map(object: &mut Value, expected: &Value, field: &str) -> bool {
    let Some(wanted) = expected
        .pointer(&format!("/metadata/{field}"))
        .and_then(Value::as_object)
    else {
        return false;
    };
    let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
        return false;
    };
    let map = metadata
        .entry(field)
        .or_insert_with(|| Value::Object(Map::new()));
    if !map.is_object() {
        *map = Value::Object(Map::new());
    }
    let Some(map) = map.as_object_mut() else {
        return false;
    };
    let mut changed = false;
    for (key, value) in wanted {
        if !map.contains_key(key) {
            map.insert(key.clone(), value.clone());
            changed = true;
        }
    }
    changed
}

fn merge_metadata(object: &mut Value, expected: &Value) -> bool {
    let labels = merge_metadata_map(object, expected, "labels");
    let annotations = merge_metadata_map(object, expected, "annotations");
    labels || annotations
}

fn rules_of(object: &Value) -> Vec<PolicyRule> {
    object
        .get("rules")
        .and_then(|r| serde_json::from_value(r.clone()).ok())
        .unwrap_or_default()
}

fn selectors_of(object: &Value) -> Vec<Value> {
    object
        .pointer("/aggregationRule/clusterRoleSelectors")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// Reconciles a stored ClusterRole or Role (`None`: not stored) with the default one: labels,
/// annotations, rules and aggregation selectors the stored one lacks are added; nothing it
/// has is removed.
pub fn reconcile_role(existing: Option<&Value>, expected: &Value) -> Reconciled {
    let Some(existing) = existing else {
        return Reconciled::create(expected);
    };
    let mut object = existing.clone();
    let mut changed = merge_metadata(&mut object, expected);

    let existing_rules = rules_of(existing);
    let missing_rules = uncovered(&existing_rules, &rules_of(expected));
    if !missing_rules.is_empty() {
        let mut rules = existing_rules;
        rules.extend(missing_rules.iter().cloned());
        object["rules"] = serde_json::to_value(rules).unwrap_or(Value::Null);
        changed = true;
    }

    let existing_selectors = selectors_of(existing);
    let missing_selectors: Vec<Value> = selectors_of(expected)
        .into_iter()
        .filter(|s| !existing_selectors.contains(s))
        .collect();
    if !missing_selectors.is_empty() {
        let mut selectors = existing_selectors;
        selectors.extend(missing_selectors);
        object["aggregationRule"] = serde_json::json!({ "clusterRoleSelectors": selectors });
        changed = true;
    }

    Reconciled {
        operation: if changed {
            Operation::Update
        } else {
            Operation::None
        },
        object,
        protected: is_protected(existing),
        missing_rules,
        missing_subjects: Vec::new(),
    }
}

/// A subject as upstream compares them: an empty `apiGroup` or `namespace` is an absent one.
fn subject_key(subject: &Value) -> Option<(String, String, String, String)> {
    let s: Subject = serde_json::from_value(subject.clone()).ok()?;
    Some((
        s.kind,
        s.api_group.unwrap_or_default(),
        s.name,
        s.namespace.unwrap_or_default(),
    ))
}

/// Reconciles a stored ClusterRoleBinding or RoleBinding (`None`: not stored) with the
/// default one: labels, annotations and subjects the stored one lacks are added (none
/// removed); a different `roleRef` means recreating it.
pub fn reconcile_binding(existing: Option<&Value>, expected: &Value) -> Reconciled {
    let Some(existing) = existing else {
        return Reconciled::create(expected);
    };
    let mut object = existing.clone();
    let mut operation = if merge_metadata(&mut object, expected) {
        Operation::Update
    } else {
        Operation::None
    };
    if existing.get("roleRef") != expected.get("roleRef") {
        object["roleRef"] = expected.get("roleRef").cloned().unwrap_or(Value::Null);
        operation = Operation::Recreate;
    }
    let existing_subjects: Vec<Value> = existing
        .get("subjects")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let existing_keys: Vec<_> = existing_subjects.iter().filter_map(subject_key).collect();
    let missing_subjects: Vec<Value> = expected
        .get("subjects")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|s| subject_key(s).is_none_or(|k| !existing_keys.contains(&k)))
        .cloned()
        .collect();
    if !missing_subjects.is_empty() {
        let mut subjects = existing_subjects;
        subjects.extend(missing_subjects.iter().cloned());
        object["subjects"] = Value::Array(subjects);
        if operation == Operation::None {
            operation = Operation::Update;
        }
    }
    if operation == Operation::Recreate {
        // A new object: nothing of the stored one's identity carries over.
        if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            for field in [
                "resourceVersion",
                "uid",
                "creationTimestamp",
                "managedFields",
                "generation",
            ] {
                metadata.remove(field);
            }
        }
    }
    Reconciled {
        operation,
        object,
        protected: is_protected(existing),
        missing_rules: Vec::new(),
        missing_subjects,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn stored_role(rules: Value) -> Value {
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {
                "name": "r",
                "resourceVersion": "7",
                "labels": {"kubernetes.io/bootstrapping": "mine"},
                "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}
            },
            "rules": rules
        })
    }

    fn expected_role() -> Value {
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {
                "name": "r",
                "labels": {"kubernetes.io/bootstrapping": "rbac-defaults", "extra": "true"},
                "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}
            },
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]
        })
    }

    #[test]
    fn a_missing_role_is_created_as_expected() {
        let r = reconcile_role(None, &expected_role());
        assert_eq!(r.operation, Operation::Create);
        assert_eq!(r.object, expected_role());
    }

    #[test]
    fn missing_rules_and_labels_are_added_and_extras_kept() {
        let stored = stored_role(json!([
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
            {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["delete"]}
        ]));
        let r = reconcile_role(Some(&stored), &expected_role());
        assert_eq!(r.operation, Operation::Update);
        assert!(!r.protected);
        let rules = r.object["rules"].as_array().unwrap();
        assert_eq!(rules.len(), 3, "{rules:?}");
        assert_eq!(rules[1]["resources"], json!(["deployments"]));
        assert_eq!(
            rules[2],
            json!({"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]})
        );
        // The stored label value wins; the missing one is added.
        assert_eq!(
            r.object["metadata"]["labels"]["kubernetes.io/bootstrapping"],
            "mine"
        );
        assert_eq!(r.object["metadata"]["labels"]["extra"], "true");
        assert_eq!(r.object["metadata"]["resourceVersion"], "7");
    }

    #[test]
    fn a_covering_role_needs_nothing() {
        let stored = stored_role(json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]));
        let mut expected = expected_role();
        expected["metadata"]["labels"] = json!({"kubernetes.io/bootstrapping": "rbac-defaults"});
        let r = reconcile_role(Some(&stored), &expected);
        assert_eq!(r.operation, Operation::None);
    }

    #[test]
    fn a_role_annotated_autoupdate_false_is_protected() {
        let mut stored = stored_role(json!([]));
        stored["metadata"]["annotations"]["rbac.authorization.kubernetes.io/autoupdate"] =
            json!("false");
        let r = reconcile_role(Some(&stored), &expected_role());
        assert!(r.protected);
        assert_eq!(r.missing_rules.len(), 2);
    }

    #[test]
    fn missing_aggregation_selectors_are_appended() {
        let mut stored = stored_role(Value::Null);
        stored["aggregationRule"] =
            json!({"clusterRoleSelectors": [{"matchLabels": {"mine": "true"}}]});
        let mut expected = expected_role();
        expected["rules"] = Value::Null;
        expected["aggregationRule"] =
            json!({"clusterRoleSelectors": [{"matchLabels": {"theirs": "true"}}]});
        let r = reconcile_role(Some(&stored), &expected);
        assert_eq!(r.operation, Operation::Update);
        assert_eq!(
            r.object["aggregationRule"]["clusterRoleSelectors"],
            json!([{"matchLabels": {"mine": "true"}}, {"matchLabels": {"theirs": "true"}}])
        );
    }

    fn binding(role: &str, subjects: Value) -> Value {
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "b", "resourceVersion": "3", "uid": "u",
                         "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
                         "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": subjects
        })
    }

    #[test]
    fn missing_subjects_are_appended_and_extras_kept() {
        let stored = binding(
            "r",
            json!([{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"}]),
        );
        let expected = binding(
            "r",
            json!([{"kind": "ServiceAccount", "name": "sa", "namespace": "kube-system"}]),
        );
        let r = reconcile_binding(Some(&stored), &expected);
        assert_eq!(r.operation, Operation::Update);
        assert_eq!(r.object["subjects"].as_array().unwrap().len(), 2);
        let again = reconcile_binding(Some(&r.object), &expected);
        assert_eq!(again.operation, Operation::None);
    }

    #[test]
    fn service_account_subjects_match_with_or_without_an_empty_api_group() {
        let stored = binding(
            "r",
            json!([{"kind": "ServiceAccount", "apiGroup": "", "name": "sa", "namespace": "kube-system"}]),
        );
        let expected = binding(
            "r",
            json!([{"kind": "ServiceAccount", "name": "sa", "namespace": "kube-system"}]),
        );
        assert_eq!(
            reconcile_binding(Some(&stored), &expected).operation,
            Operation::None
        );
    }

    #[test]
    fn a_binding_to_another_role_is_recreated() {
        let r = reconcile_binding(Some(&binding("old", json!([]))), &binding("r", json!([])));
        assert_eq!(r.operation, Operation::Recreate);
        assert_eq!(r.object["roleRef"]["name"], "r");
        assert!(r.object["metadata"].get("resourceVersion").is_none());
        assert!(r.object["metadata"].get("uid").is_none());
    }
}
