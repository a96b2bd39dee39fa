//! rbac.authorization.k8s.io/v1: roles, rolebindings, clusterroles, clusterrolebindings
//! (stored and validated; authorization does not enforce them yet).

use apiserver::registry::{FieldError, TableColumn};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use serde_json::{Value, json};

use super::ResourceDef;
use super::json::{array_at, get, str_at};
use super::strategy::{BuiltinStrategy, info};
use super::table::{age_cell, age_column, column, name_cell, name_column};
use super::validation::NameRule;

const GROUP: &str = "rbac.authorization.k8s.io";

/// rbac.authorization.k8s.io/v1 resources.
pub fn resources() -> Vec<ResourceDef> {
    vec![
        clusterrolebindings(),
        clusterroles(),
        rolebindings(),
        roles(),
    ]
}

fn validate_rules(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, rule) in array_at(obj, "rules").iter().enumerate() {
        if array_at(rule, "verbs").is_empty() {
            errs.push(FieldError::required(
                &format!("rules[{i}].verbs"),
                "verbs must contain at least one value",
            ));
        }
        if !array_at(rule, "nonResourceURLs").is_empty() {
            if !array_at(rule, "apiGroups").is_empty() || !array_at(rule, "resources").is_empty() {
                errs.push(FieldError::invalid(
                    &format!("rules[{i}].nonResourceURLs"),
                    get(rule, "nonResourceURLs").cloned().unwrap_or(Value::Null),
                    "rules cannot apply to both regular resources and non-resource URLs",
                ));
            }
            continue;
        }
        if array_at(rule, "apiGroups").is_empty() {
            errs.push(FieldError::required(
                &format!("rules[{i}].apiGroups"),
                "resource rules must supply at least one api group",
            ));
        }
        if array_at(rule, "resources").is_empty() {
            errs.push(FieldError::required(
                &format!("rules[{i}].resources"),
                "resource rules must supply at least one resource",
            ));
        }
    }
    errs
}

/// The roles resource.
pub fn roles() -> ResourceDef {
    ResourceDef::new(
        BuiltinStrategy::new::<Role>(info(GROUP, "v1", "Role", "roles", true, &[], &[]))
            .create_on_update()
            .name_rule(NameRule::PathSegment)
            .validate(validate_rules),
    )
}

/// The clusterroles resource.
pub fn clusterroles() -> ResourceDef {
    ResourceDef::new(
        BuiltinStrategy::new::<ClusterRole>(info(
            GROUP,
            "v1",
            "ClusterRole",
            "clusterroles",
            false,
            &[],
            &[],
        ))
        .create_on_update()
        .name_rule(NameRule::PathSegment)
        .validate(validate_rules),
    )
}

fn validate_binding(obj: &Value, kinds: &[&str]) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if str_at(obj, "roleRef.apiGroup") != Some(GROUP) {
        errs.push(FieldError::not_supported(
            "roleRef.apiGroup",
            str_at(obj, "roleRef.apiGroup").unwrap_or_default(),
            &[GROUP],
        ));
    }
    let kind = str_at(obj, "roleRef.kind").unwrap_or_default();
    if !kinds.contains(&kind) {
        errs.push(FieldError::not_supported("roleRef.kind", kind, kinds));
    }
    if str_at(obj, "roleRef.name").is_none_or(str::is_empty) {
        errs.push(FieldError::required("roleRef.name", ""));
    }
    for (i, subject) in array_at(obj, "subjects").iter().enumerate() {
        let at = format!("subjects[{i}]");
        if str_at(subject, "name").is_none_or(str::is_empty) {
            errs.push(FieldError::required(&format!("{at}.name"), ""));
        }
        let kind = str_at(subject, "kind").unwrap_or_default();
        if !matches!(kind, "ServiceAccount" | "User" | "Group") {
            errs.push(FieldError::not_supported(
                &format!("{at}.kind"),
                kind,
                &["ServiceAccount", "User", "Group"],
            ));
        }
    }
    errs
}

fn validate_binding_update(new: &Value, old: &Value) -> Vec<FieldError> {
    if get(new, "roleRef") != get(old, "roleRef") {
        return vec![FieldError::invalid(
            "roleRef",
            get(new, "roleRef").cloned().unwrap_or(Value::Null),
            "cannot change roleRef",
        )];
    }
    Vec::new()
}

fn binding_columns() -> Vec<TableColumn> {
    vec![
        name_column(),
        column(
            "Role",
            "string",
            "RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error.",
            0,
        ),
        age_column(),
        column("Users", "string", "Users in the binding", 1),
        column("Groups", "string", "Groups in the binding", 1),
        column(
            "ServiceAccounts",
            "string",
            "ServiceAccounts in the binding",
            1,
        ),
    ]
}

fn binding_row(obj: &Value) -> Vec<Value> {
    let mut users = Vec::new();
    let mut groups = Vec::new();
    let mut service_accounts = Vec::new();
    for subject in array_at(obj, "subjects") {
        let name = str_at(subject, "name").unwrap_or_default();
        match str_at(subject, "kind").unwrap_or_default() {
            "User" => users.push(name.to_string()),
            "Group" => groups.push(name.to_string()),
            "ServiceAccount" => service_accounts.push(format!(
                "{}/{name}",
                str_at(subject, "namespace").unwrap_or_default()
            )),
            _ => {}
        }
    }
    vec![
        name_cell(obj),
        json!(format!(
            "{}/{}",
            str_at(obj, "roleRef.kind").unwrap_or_default(),
            str_at(obj, "roleRef.name").unwrap_or_default()
        )),
        age_cell(obj),
        json!(users.join(", ")),
        json!(groups.join(", ")),
        json!(service_accounts.join(", ")),
    ]
}

/// The rolebindings resource.
pub fn rolebindings() -> ResourceDef {
    ResourceDef::new(
        BuiltinStrategy::new::<RoleBinding>(info(
            GROUP,
            "v1",
            "RoleBinding",
            "rolebindings",
            true,
            &[],
            &[],
        ))
        .create_on_update()
        .name_rule(NameRule::PathSegment)
        .validate(|obj| validate_binding(obj, &["Role", "ClusterRole"]))
        .validate_update(validate_binding_update)
        .table(binding_columns, binding_row),
    )
}

/// The clusterrolebindings resource.
pub fn clusterrolebindings() -> ResourceDef {
    ResourceDef::new(
        BuiltinStrategy::new::<ClusterRoleBinding>(info(
            GROUP,
            "v1",
            "ClusterRoleBinding",
            "clusterrolebindings",
            false,
            &[],
            &[],
        ))
        .create_on_update()
        .name_rule(NameRule::PathSegment)
        .validate(|obj| validate_binding(obj, &["ClusterRole"]))
        .validate_update(validate_binding_update)
        .table(binding_columns, binding_row),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_and_bindings() {
        let role = json!({"metadata": {"name": "system:reader"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]});
        assert!(roles().strategy.validate(&role).is_empty());
        let bad = json!({"metadata": {"name": "a/b"}, "rules": [{"apiGroups": [""], "resources": ["pods"]}]});
        let errs: Vec<String> = roles()
            .strategy
            .validate(&bad)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            errs,
            vec![
                "metadata.name: Invalid value: \"a/b\": may not contain '/'",
                "rules[0].verbs: Required value: verbs must contain at least one value",
            ]
        );
        let binding = json!({"metadata": {"name": "b"},
            "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": "d"},
                         {"kind": "User", "name": "alice"}]});
        let def = rolebindings();
        assert!(def.strategy.validate(&binding).is_empty());
        let row = def.strategy.table_row(&binding);
        assert_eq!(row[1], "ClusterRole/view");
        assert_eq!(row[3..], [json!("alice"), json!(""), json!("d/default")]);
        let mut changed = binding.clone();
        changed["roleRef"]["name"] = json!("edit");
        assert!(
            def.strategy.validate_update(&changed, &binding)[0]
                .to_string()
                .ends_with("cannot change roleRef")
        );
        let crb = clusterrolebindings();
        let mut to_role = binding.clone();
        to_role["roleRef"]["kind"] = json!("Role");
        assert_eq!(crb.strategy.validate(&to_role)[0].field, "roleRef.kind");
    }
}
