//! The in-memory RBAC policy: roles and cluster roles by name, bindings by subject, kept
//! current from informer events. Lookups for a user touch only the bindings that name the user,
//! one of its groups or its service account, never every binding.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard};

use apiserver::request::UserInfo;
use serde::Deserialize;
use serde_json::Value;

use super::rule::PolicyRule;

/// The service-account user name prefix (`system:serviceaccount:`).
pub const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// `roleRef` of a binding.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RoleRef {
    /// `rbac.authorization.k8s.io`.
    pub api_group: String,
    /// `Role` or `ClusterRole`.
    pub kind: String,
    /// The role's name.
    pub name: String,
}

/// One subject of a binding.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Subject {
    /// `User`, `Group` or `ServiceAccount`.
    pub kind: String,
    /// The name.
    pub name: String,
    /// A service account's namespace (defaults to a RoleBinding's own).
    pub namespace: String,
}

/// A RoleBinding (with its namespace) or ClusterRoleBinding (namespace empty).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Binding {
    /// Object metadata (name, namespace).
    pub metadata: Meta,
    /// The role it grants.
    pub role_ref: RoleRef,
    /// Who it grants it to.
    #[serde(deserialize_with = "null_as_empty")]
    pub subjects: Vec<Subject>,
}

/// The metadata the index reads.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct Meta {
    /// Name.
    pub name: String,
    /// Namespace, empty for cluster-scoped objects.
    pub namespace: String,
}

/// A Role or ClusterRole: only its rules matter here.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
struct RoleObject {
    metadata: Meta,
    #[serde(deserialize_with = "null_as_empty")]
    rules: Vec<PolicyRule>,
}

fn null_as_empty<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

/// Which of the four RBAC kinds an object is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicyKind {
    /// `roles`.
    Role,
    /// `clusterroles`.
    ClusterRole,
    /// `rolebindings`.
    RoleBinding,
    /// `clusterrolebindings`.
    ClusterRoleBinding,
}

/// The user name a subject stands for when it is a user or a service account (`None` for
/// groups, unknown kinds, and service accounts without a namespace).
fn subject_user_name(subject: &Subject, binding_namespace: &str) -> Option<String> {
    match subject.kind.as_str() {
        "User" => Some(subject.name.clone()),
        "ServiceAccount" => {
            let namespace = if subject.namespace.is_empty() {
                binding_namespace
            } else {
                subject.namespace.as_str()
            };
            (!namespace.is_empty())
                .then(|| format!("{SERVICE_ACCOUNT_PREFIX}{namespace}:{}", subject.name))
        }
        _ => None,
    }
}

/// Whether `subject` of a binding in `binding_namespace` applies to `user` (upstream's
/// `appliesToUser`).
pub fn applies_to(user: &UserInfo, subject: &Subject, binding_namespace: &str) -> bool {
    match subject.kind.as_str() {
        "Group" => user.groups.contains(&subject.name),
        _ => subject_user_name(subject, binding_namespace).is_some_and(|n| n == user.name),
    }
}

/// Bindings of one scope (the cluster, or one namespace) indexed by subject.
#[derive(Default)]
struct BindingSet {
    by_name: HashMap<String, Arc<Binding>>,
    by_user: HashMap<String, BTreeSet<String>>,
    by_group: HashMap<String, BTreeSet<String>>,
}

impl BindingSet {
    fn keys(binding: &Binding) -> (Vec<String>, Vec<String>) {
        let ns = binding.metadata.namespace.as_str();
        let users = binding
            .subjects
            .iter()
            .filter_map(|s| subject_user_name(s, ns))
            .collect();
        let groups = binding
            .subjects
            .iter()
            .filter(|s| s.kind == "Group")
            .map(|s| s.name.clone())
            .collect();
        (users, groups)
    }

    fn insert(&mut self, binding: Binding) {
        self.remove(&binding.metadata.name.clone());
        let (users, groups) = Self::keys(&binding);
        let name = binding.metadata.name.clone();
        for user in users {
            self.by_user.entry(user).or_default().insert(name.clone());
        }
        for group in groups {
            self.by_group.entry(group).or_default().insert(name.clone());
        }
        self.by_name.insert(name, Arc::new(binding));
    }

    fn remove(&mut self, name: &str) {
        let Some(old) = self.by_name.remove(name) else {
            return;
        };
        let (users, groups) = Self::keys(&old);
        for (index, keys) in [(&mut self.by_user, users), (&mut self.by_group, groups)] {
            for key in keys {
                if let Some(names) = index.get_mut(&key) {
                    names.remove(name);
                    if names.is_empty() {
                        index.remove(&key);
                    }
                }
            }
        }
    }

    fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// The bindings naming `user`, one of its groups, or its service account, in name order.
    fn for_user(&self, user: &UserInfo) -> Vec<Arc<Binding>> {
        let mut names: BTreeSet<&str> = BTreeSet::new();
        if let Some(found) = self.by_user.get(&user.name) {
            names.extend(found.iter().map(String::as_str));
        }
        for group in &user.groups {
            if let Some(found) = self.by_group.get(group) {
                names.extend(found.iter().map(String::as_str));
            }
        }
        names
            .into_iter()
            .filter_map(|n| self.by_name.get(n).cloned())
            .collect()
    }
}

/// The policy objects, guarded by one lock.
#[derive(Default)]
pub struct PolicyState {
    roles: HashMap<String, HashMap<String, Arc<[PolicyRule]>>>,
    cluster_roles: HashMap<String, Arc<[PolicyRule]>>,
    cluster_bindings: BindingSet,
    role_bindings: HashMap<String, BindingSet>,
}

impl PolicyState {
    /// The rules of Role `namespace/name`.
    pub fn role(&self, namespace: &str, name: &str) -> Option<Arc<[PolicyRule]>> {
        self.roles.get(namespace)?.get(name).cloned()
    }

    /// The rules of ClusterRole `name`.
    pub fn cluster_role(&self, name: &str) -> Option<Arc<[PolicyRule]>> {
        self.cluster_roles.get(name).cloned()
    }

    /// The ClusterRoleBindings that may apply to `user`.
    pub fn cluster_role_bindings_for(&self, user: &UserInfo) -> Vec<Arc<Binding>> {
        self.cluster_bindings.for_user(user)
    }

    /// The RoleBindings of `namespace` that may apply to `user`.
    pub fn role_bindings_for(&self, user: &UserInfo, namespace: &str) -> Vec<Arc<Binding>> {
        self.role_bindings
            .get(namespace)
            .map(|set| set.for_user(user))
            .unwrap_or_default()
    }

    fn upsert(&mut self, kind: PolicyKind, obj: &Value) -> Result<(), serde_json::Error> {
        match kind {
            PolicyKind::Role | PolicyKind::ClusterRole => {
                let role = RoleObject::deserialize(obj)?;
                let rules: Arc<[PolicyRule]> = role.rules.into();
                if kind == PolicyKind::Role {
                    self.roles
                        .entry(role.metadata.namespace)
                        .or_default()
                        .insert(role.metadata.name, rules);
                } else {
                    self.cluster_roles.insert(role.metadata.name, rules);
                }
            }
            PolicyKind::RoleBinding => {
                let binding = Binding::deserialize(obj)?;
                self.role_bindings
                    .entry(binding.metadata.namespace.clone())
                    .or_default()
                    .insert(binding);
            }
            PolicyKind::ClusterRoleBinding => {
                let mut binding = Binding::deserialize(obj)?;
                binding.metadata.namespace.clear();
                self.cluster_bindings.insert(binding);
            }
        }
        Ok(())
    }

    fn delete(&mut self, kind: PolicyKind, obj: &Value) {
        let meta = obj
            .get("metadata")
            .and_then(|m| Meta::deserialize(m).ok())
            .unwrap_or_default();
        match kind {
            PolicyKind::Role => {
                if let Some(roles) = self.roles.get_mut(&meta.namespace) {
                    roles.remove(&meta.name);
                    if roles.is_empty() {
                        self.roles.remove(&meta.namespace);
                    }
                }
            }
            PolicyKind::ClusterRole => {
                self.cluster_roles.remove(&meta.name);
            }
            PolicyKind::RoleBinding => {
                if let Some(set) = self.role_bindings.get_mut(&meta.namespace) {
                    set.remove(&meta.name);
                    if set.is_empty() {
                        self.role_bindings.remove(&meta.namespace);
                    }
                }
            }
            PolicyKind::ClusterRoleBinding => self.cluster_bindings.remove(&meta.name),
        }
    }
}

/// The RBAC policy kept in memory, shared by the authorizer, the rule resolver and the
/// escalation checks.
#[derive(Default)]
pub struct PolicyIndex {
    state: RwLock<PolicyState>,
}

impl PolicyIndex {
    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads the policy. A writer that panicked left each map consistent (every update
    /// replaces whole entries), so a poisoned lock is still read.
    pub fn read(&self) -> RwLockReadGuard<'_, PolicyState> {
        self.state.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records an added or changed object. An object that does not decode (it passed the
    /// API's validation, so only a corrupt store holds one) is dropped from the index, as if
    /// deleted, and logged.
    pub fn upsert(&self, kind: PolicyKind, obj: &Value) {
        let mut state = self.state.write().unwrap_or_else(PoisonError::into_inner);
        if let Err(err) = state.upsert(kind, obj) {
            tracing::warn!(?kind, %err, "ignoring an RBAC object that does not decode");
            state.delete(kind, obj);
        }
    }

    /// Records a deleted object.
    pub fn delete(&self, kind: PolicyKind, obj: &Value) {
        self.state
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .delete(kind, obj);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            name: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..Default::default()
        }
    }

    fn names(bindings: &[Arc<Binding>]) -> Vec<&str> {
        bindings.iter().map(|b| b.metadata.name.as_str()).collect()
    }

    #[test]
    fn bindings_are_found_by_user_group_and_service_account_only() {
        let index = PolicyIndex::new();
        index.upsert(
            PolicyKind::RoleBinding,
            &json!({"metadata": {"name": "b1", "namespace": "ns"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
                "subjects": [{"kind": "User", "name": "alice"}, {"kind": "ServiceAccount", "name": "sa"}]}),
        );
        index.upsert(
            PolicyKind::RoleBinding,
            &json!({"metadata": {"name": "b2", "namespace": "ns"},
                "roleRef": {"kind": "Role", "name": "r"},
                "subjects": [{"kind": "Group", "name": "devs"},
                             {"kind": "ServiceAccount", "name": "other", "namespace": "elsewhere"}]}),
        );
        index.upsert(
            PolicyKind::ClusterRoleBinding,
            &json!({"metadata": {"name": "c1"}, "roleRef": {"kind": "ClusterRole", "name": "view"},
                "subjects": [{"kind": "Group", "name": "system:authenticated"},
                             {"kind": "ServiceAccount", "name": "no-namespace"}]}),
        );
        let state = index.read();
        assert_eq!(
            names(&state.role_bindings_for(&user("alice", &[]), "ns")),
            ["b1"]
        );
        assert!(
            state
                .role_bindings_for(&user("alice", &[]), "other")
                .is_empty()
        );
        assert_eq!(
            names(&state.role_bindings_for(&user("bob", &["devs"]), "ns")),
            ["b2"]
        );
        // A service-account subject without a namespace defaults to the binding's.
        assert_eq!(
            names(&state.role_bindings_for(&user("system:serviceaccount:ns:sa", &[]), "ns")),
            ["b1"]
        );
        assert_eq!(
            names(
                &state.role_bindings_for(&user("system:serviceaccount:elsewhere:other", &[]), "ns")
            ),
            ["b2"]
        );
        assert_eq!(
            names(&state.cluster_role_bindings_for(&user("x", &["system:authenticated"]))),
            ["c1"]
        );
        // A ClusterRoleBinding's service account needs a namespace.
        assert!(
            state
                .cluster_role_bindings_for(&user("system:serviceaccount::no-namespace", &[]))
                .is_empty()
        );
    }

    #[test]
    fn updates_and_deletes_drop_old_index_entries() {
        let index = PolicyIndex::new();
        let binding = |subject: &str| {
            json!({"metadata": {"name": "c"}, "roleRef": {"kind": "ClusterRole", "name": "view"},
                "subjects": [{"kind": "User", "name": subject}]})
        };
        index.upsert(PolicyKind::ClusterRoleBinding, &binding("alice"));
        index.upsert(PolicyKind::ClusterRoleBinding, &binding("bob"));
        assert!(
            index
                .read()
                .cluster_role_bindings_for(&user("alice", &[]))
                .is_empty()
        );
        assert_eq!(
            names(&index.read().cluster_role_bindings_for(&user("bob", &[]))),
            ["c"]
        );
        index.delete(PolicyKind::ClusterRoleBinding, &binding("bob"));
        assert!(
            index
                .read()
                .cluster_role_bindings_for(&user("bob", &[]))
                .is_empty()
        );

        index.upsert(
            PolicyKind::Role,
            &json!({"metadata": {"name": "r", "namespace": "ns"},
                "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]}),
        );
        assert_eq!(index.read().role("ns", "r").unwrap().len(), 1);
        assert!(index.read().role("other", "r").is_none());
        index.delete(
            PolicyKind::Role,
            &json!({"metadata": {"name": "r", "namespace": "ns"}}),
        );
        assert!(index.read().role("ns", "r").is_none());
        index.upsert(
            PolicyKind::ClusterRole,
            &json!({"metadata": {"name": "view"}, "rules": null}),
        );
        assert_eq!(index.read().cluster_role("view").unwrap().len(), 0);
    }

    #[test]
    fn lookups_touch_only_the_bindings_naming_the_user() {
        let index = PolicyIndex::new();
        for i in 0..1000 {
            index.upsert(
                PolicyKind::RoleBinding,
                &json!({"metadata": {"name": format!("b{i}"), "namespace": "ns"},
                    "roleRef": {"kind": "Role", "name": "r"},
                    "subjects": [{"kind": "User", "name": format!("user-{i}")},
                                 {"kind": "ServiceAccount", "name": format!("sa-{i}")}]}),
            );
        }
        let state = index.read();
        assert_eq!(
            names(&state.role_bindings_for(&user("user-7", &[]), "ns")),
            ["b7"]
        );
        assert_eq!(
            names(&state.role_bindings_for(&user("system:serviceaccount:ns:sa-999", &[]), "ns")),
            ["b999"]
        );
        assert!(
            state
                .role_bindings_for(&user("nobody", &["system:authenticated"]), "ns")
                .is_empty()
        );
    }

    #[test]
    fn subjects_apply_as_upstream() {
        let sa = Subject {
            kind: "ServiceAccount".into(),
            name: "sa".into(),
            namespace: String::new(),
        };
        assert!(applies_to(
            &user("system:serviceaccount:ns:sa", &[]),
            &sa,
            "ns"
        ));
        assert!(!applies_to(
            &user("system:serviceaccount:ns:sa", &[]),
            &sa,
            ""
        ));
        let group = Subject {
            kind: "Group".into(),
            name: "g".into(),
            namespace: String::new(),
        };
        assert!(applies_to(&user("u", &["g"]), &group, ""));
        assert!(!applies_to(&user("g", &[]), &group, ""));
    }
}
