//! The RBAC bootstrap policy (upstream `plugin/pkg/auth/authorizer/rbac/bootstrappolicy`):
//! every default ClusterRole, ClusterRoleBinding, Role and RoleBinding kube-apiserver v1.35
//! creates, labelled `kubernetes.io/bootstrapping: rbac-defaults` and annotated
//! `rbac.authorization.kubernetes.io/autoupdate: "true"`, and the `rbac/bootstrap-roles`
//! post-start hook that reconciles them at every start.

use std::collections::BTreeMap;

use k8s_openapi::api::rbac::v1::{
    AggregationRule, ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef,
    Subject as RbacSubject,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use serde_json::Value;

mod cluster_roles;
mod controller_roles;
pub mod hook;
mod namespace_roles;
pub mod reconciliation;
pub mod rules;
#[cfg(test)]
mod upstream_table;

pub use cluster_roles::node_rules;

/// The label every bootstrap object carries.
pub const BOOTSTRAPPING_LABEL: (&str, &str) = ("kubernetes.io/bootstrapping", "rbac-defaults");
/// The annotation that lets the reconciliation update an object (`"false"` protects it).
pub const AUTOUPDATE_ANNOTATION: &str = "rbac.authorization.kubernetes.io/autoupdate";
/// The label that aggregates a ClusterRole into `admin`.
pub const AGGREGATE_TO_ADMIN: &str = "rbac.authorization.k8s.io/aggregate-to-admin";
/// The label that aggregates a ClusterRole into `edit`.
pub const AGGREGATE_TO_EDIT: &str = "rbac.authorization.k8s.io/aggregate-to-edit";
/// The label that aggregates a ClusterRole into `view`.
pub const AGGREGATE_TO_VIEW: &str = "rbac.authorization.k8s.io/aggregate-to-view";

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";
const RBAC_API_VERSION: &str = "rbac.authorization.k8s.io/v1";

/// A default ClusterRole or Role.
#[derive(Clone, Debug, PartialEq)]
pub struct RoleSpec {
    /// Empty for a ClusterRole.
    pub namespace: &'static str,
    /// The name.
    pub name: String,
    /// Labels besides the bootstrapping one.
    pub labels: Vec<&'static str>,
    /// The label (set to `"true"`) this role aggregates the ClusterRoles of, if any.
    pub aggregates: Option<&'static str>,
    /// The rules.
    pub rules: Vec<PolicyRule>,
}

impl RoleSpec {
    fn cluster(name: &'static str, rules: Vec<PolicyRule>) -> Self {
        Self::cluster_owned(name.to_string(), rules)
    }

    fn cluster_owned(name: String, rules: Vec<PolicyRule>) -> Self {
        RoleSpec {
            namespace: "",
            name,
            labels: Vec::new(),
            aggregates: None,
            rules,
        }
    }

    fn namespaced(namespace: &'static str, name: &'static str, rules: Vec<PolicyRule>) -> Self {
        RoleSpec {
            namespace,
            ..Self::cluster(name, rules)
        }
    }

    /// Adds the label `label: "true"`.
    fn labelled(mut self, label: &'static str) -> Self {
        self.labels.push(label);
        self
    }

    /// Makes this role the aggregate of the ClusterRoles labelled `label: "true"`.
    fn aggregating(mut self, label: &'static str) -> Self {
        self.aggregates = Some(label);
        self
    }

    fn metadata(&self) -> ObjectMeta {
        let mut labels = BTreeMap::from([(
            BOOTSTRAPPING_LABEL.0.to_string(),
            BOOTSTRAPPING_LABEL.1.to_string(),
        )]);
        for label in &self.labels {
            labels.insert((*label).to_string(), "true".to_string());
        }
        ObjectMeta {
            name: Some(self.name.clone()),
            namespace: (!self.namespace.is_empty()).then(|| self.namespace.to_string()),
            labels: Some(labels),
            annotations: Some(autoupdate_annotation()),
            ..ObjectMeta::default()
        }
    }

    /// The ClusterRole (for a cluster-scoped spec) or Role as stored JSON.
    pub fn to_value(&self) -> Value {
        let rules = (!self.rules.is_empty()).then(|| self.rules.clone());
        let value = if self.namespace.is_empty() {
            serde_json::to_value(ClusterRole {
                metadata: self.metadata(),
                rules,
                aggregation_rule: self.aggregates.map(|label| AggregationRule {
                    cluster_role_selectors: Some(vec![LabelSelector {
                        match_labels: Some(BTreeMap::from([(
                            label.to_string(),
                            "true".to_string(),
                        )])),
                        match_expressions: None,
                    }]),
                }),
            })
        } else {
            serde_json::to_value(Role {
                metadata: self.metadata(),
                rules,
            })
        };
        with_type(
            value,
            if self.namespace.is_empty() {
                "ClusterRole"
            } else {
                "Role"
            },
        )
    }
}

/// Who a default binding binds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subject {
    kind: &'static str,
    namespace: String,
    name: String,
}

impl Subject {
    /// A user.
    pub fn user(name: &str) -> Self {
        Subject {
            kind: "User",
            namespace: String::new(),
            name: name.to_string(),
        }
    }

    /// A group.
    pub fn group(name: &str) -> Self {
        Subject {
            kind: "Group",
            namespace: String::new(),
            name: name.to_string(),
        }
    }

    /// A service account.
    pub fn service_account(namespace: &str, name: &str) -> Self {
        Subject {
            kind: "ServiceAccount",
            namespace: namespace.to_string(),
            name: name.to_string(),
        }
    }

    fn to_rbac(&self) -> RbacSubject {
        let service_account = self.kind == "ServiceAccount";
        RbacSubject {
            kind: self.kind.to_string(),
            // Users and groups are named in the RBAC group; service accounts in the core one.
            api_group: (!service_account).then(|| RBAC_GROUP.to_string()),
            name: self.name.clone(),
            namespace: service_account.then(|| self.namespace.clone()),
        }
    }
}

/// A default ClusterRoleBinding or RoleBinding.
#[derive(Clone, Debug, PartialEq)]
pub struct BindingSpec {
    /// Empty for a ClusterRoleBinding.
    pub namespace: &'static str,
    /// The name.
    pub name: String,
    /// The bound role: a ClusterRole for ClusterRoleBindings, a Role for RoleBindings.
    pub role: String,
    /// The subjects.
    pub subjects: Vec<Subject>,
}

impl BindingSpec {
    fn cluster(name: &'static str, subjects: Vec<Subject>) -> Self {
        BindingSpec {
            namespace: "",
            name: name.to_string(),
            role: name.to_string(),
            subjects,
        }
    }

    fn namespaced(
        namespace: &'static str,
        name: &'static str,
        role: &'static str,
        subjects: Vec<Subject>,
    ) -> Self {
        BindingSpec {
            namespace,
            name: name.to_string(),
            role: role.to_string(),
            subjects,
        }
    }

    /// The ClusterRoleBinding or RoleBinding as stored JSON.
    pub fn to_value(&self) -> Value {
        let metadata = ObjectMeta {
            name: Some(self.name.clone()),
            namespace: (!self.namespace.is_empty()).then(|| self.namespace.to_string()),
            labels: Some(BTreeMap::from([(
                BOOTSTRAPPING_LABEL.0.to_string(),
                BOOTSTRAPPING_LABEL.1.to_string(),
            )])),
            annotations: Some(autoupdate_annotation()),
            ..ObjectMeta::default()
        };
        let cluster = self.namespace.is_empty();
        let role_ref = RoleRef {
            api_group: RBAC_GROUP.to_string(),
            kind: if cluster { "ClusterRole" } else { "Role" }.to_string(),
            name: self.role.clone(),
        };
        let subjects = (!self.subjects.is_empty())
            .then(|| self.subjects.iter().map(Subject::to_rbac).collect());
        if cluster {
            with_type(
                serde_json::to_value(ClusterRoleBinding {
                    metadata,
                    role_ref,
                    subjects,
                }),
                "ClusterRoleBinding",
            )
        } else {
            with_type(
                serde_json::to_value(RoleBinding {
                    metadata,
                    role_ref,
                    subjects,
                }),
                "RoleBinding",
            )
        }
    }
}

fn autoupdate_annotation() -> BTreeMap<String, String> {
    BTreeMap::from([(AUTOUPDATE_ANNOTATION.to_string(), "true".to_string())])
}

fn with_type(value: Result<Value, serde_json::Error>, kind: &str) -> Value {
    // Serializing these plain structs cannot fail; an empty object would only be refused by
    // validation, never stored.
    let mut value = value.unwrap_or_default();
    if let Value::Object(map) = &mut value {
        map.insert("apiVersion".into(), RBAC_API_VERSION.into());
        map.insert("kind".into(), kind.into());
    }
    value
}

/// Every default ClusterRole: the users' and components' roles and the controllers'.
pub fn cluster_roles() -> Vec<RoleSpec> {
    let mut roles = cluster_roles::cluster_roles();
    roles.extend(controller_roles::controller_roles());
    roles
}

/// Every default ClusterRoleBinding.
pub fn cluster_role_bindings() -> Vec<BindingSpec> {
    let mut bindings = vec![
        BindingSpec::cluster("cluster-admin", vec![Subject::group("system:masters")]),
        BindingSpec::cluster(
            "system:monitoring",
            vec![Subject::group("system:monitoring")],
        ),
        BindingSpec::cluster(
            "system:discovery",
            vec![Subject::group("system:authenticated")],
        ),
        BindingSpec::cluster(
            "system:basic-user",
            vec![Subject::group("system:authenticated")],
        ),
        BindingSpec::cluster(
            "system:public-info-viewer",
            vec![
                Subject::group("system:authenticated"),
                Subject::group("system:unauthenticated"),
            ],
        ),
        BindingSpec::cluster(
            "system:node-proxier",
            vec![Subject::user("system:kube-proxy")],
        ),
        BindingSpec::cluster(
            "system:kube-controller-manager",
            vec![Subject::user("system:kube-controller-manager")],
        ),
        BindingSpec::cluster(
            "system:kube-dns",
            vec![Subject::service_account("kube-system", "kube-dns")],
        ),
        BindingSpec::cluster(
            "system:kube-scheduler",
            vec![Subject::user("system:kube-scheduler")],
        ),
        BindingSpec::cluster(
            "system:volume-scheduler",
            vec![Subject::user("system:kube-scheduler")],
        ),
        // Kept for upgrades: nodes are authorized by the Node authorizer, so the binding of
        // `system:node` has no subjects.
        BindingSpec::cluster("system:node", Vec::new()),
        BindingSpec::cluster(
            "system:service-account-issuer-discovery",
            vec![Subject::group("system:serviceaccounts")],
        ),
    ];
    // Each controller's role is bound to the service account named after the controller.
    for role in controller_roles::controller_roles() {
        let Some(controller) = role
            .name
            .strip_prefix(controller_roles::CONTROLLER_ROLE_PREFIX)
        else {
            continue;
        };
        bindings.push(BindingSpec {
            namespace: "",
            name: role.name.clone(),
            role: role.name.clone(),
            subjects: vec![Subject::service_account("kube-system", controller)],
        });
    }
    bindings
}

/// Every default Role (in `kube-system` and `kube-public`).
pub fn namespace_roles() -> Vec<RoleSpec> {
    namespace_roles::namespace_roles()
}

/// Every default RoleBinding (in `kube-system` and `kube-public`).
pub fn namespace_role_bindings() -> Vec<BindingSpec> {
    namespace_roles::namespace_role_bindings()
}
