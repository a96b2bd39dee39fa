//! Escalation prevention (upstream's `ConfirmNoEscalation`): a user may only grant the
//! permissions it holds itself.

use std::collections::BTreeSet;

use apiserver::request::UserInfo;

use super::covers::{compact, covers};
use super::resolver::RuleResolver;
use super::rule::{PolicyRule, go_quote_list};
use apiserver::filters::authorization::go_quote;

/// Checks that `user`'s rules in `namespace` cover `rules`; otherwise the error text upstream
/// puts after `… is forbidden: ` (the missing rules, compacted, sorted, one per line).
pub fn confirm_no_escalation(
    resolver: &RuleResolver,
    user: &UserInfo,
    namespace: &str,
    rules: &[PolicyRule],
) -> Result<(), String> {
    let (owner_rules, resolution_error) = resolver.rules_for(user, namespace);
    if let Some(err) = &resolution_error {
        tracing::info!(user = %user.name, %err, "non-fatal error getting local rules");
    }
    let (covered, missing) = covers(&owner_rules, rules);
    if covered {
        return Ok(());
    }
    let descriptions: BTreeSet<String> = compact(missing)
        .iter()
        .map(PolicyRule::compact_string)
        .collect();
    let mut message = format!(
        "user {} (groups={}) is attempting to grant RBAC permissions not currently held:\n{}",
        go_quote(&user.name),
        go_quote_list(&user.groups),
        descriptions.into_iter().collect::<Vec<_>>().join("\n")
    );
    if let Some(err) = resolution_error {
        // Go prints the one-element error slice as `[<error>]`.
        message.push_str(&format!("; resolution errors: [{err}]"));
    }
    Err(message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::rbac::index::{PolicyIndex, PolicyKind};
    use serde_json::json;
    use std::sync::Arc;

    #[test]
    fn missing_rules_are_listed_compacted_and_sorted() {
        let index = Arc::new(PolicyIndex::new());
        index.upsert(
            PolicyKind::Role,
            &json!({"metadata": {"name": "r", "namespace": "ns"},
                "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]}),
        );
        index.upsert(
            PolicyKind::RoleBinding,
            &json!({"metadata": {"name": "b", "namespace": "ns"}, "roleRef": {"kind": "Role", "name": "r"},
                "subjects": [{"kind": "User", "name": "alice"}]}),
        );
        let resolver = RuleResolver::new(index);
        let alice = UserInfo {
            name: "alice".into(),
            groups: vec!["devs".into(), "system:authenticated".into()],
            ..Default::default()
        };
        let wanted = [
            PolicyRule::resource(&["get", "list", "watch"], &[""], &["pods"]),
            PolicyRule::resource(&["get"], &[""], &["secrets"]),
        ];
        let err = confirm_no_escalation(&resolver, &alice, "ns", &wanted).unwrap_err();
        assert_eq!(
            err,
            "user \"alice\" (groups=[\"devs\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n\
             {APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"list\" \"watch\"]}\n\
             {APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\"]}"
        );
        assert!(confirm_no_escalation(&resolver, &alice, "ns", &wanted[..1][..0]).is_ok());
        assert!(
            confirm_no_escalation(
                &resolver,
                &alice,
                "ns",
                &[PolicyRule::resource(&["get"], &[""], &["pods"])]
            )
            .is_ok()
        );
        // Cluster-wide, alice holds nothing.
        assert!(
            confirm_no_escalation(
                &resolver,
                &alice,
                "",
                &[PolicyRule::resource(&["get"], &[""], &["pods"])]
            )
            .is_err()
        );
    }
}
