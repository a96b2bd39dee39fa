//! The default Roles and RoleBindings in `kube-system` and `kube-public` (upstream
//! `namespace_policy.go`).

use super::rules::{READ, events_rule, named_rule, rule};
use super::{BindingSpec, RoleSpec, Subject};

const KUBE_SYSTEM: &str = "kube-system";
const KUBE_PUBLIC: &str = "kube-public";

fn leader_locking_rules() -> Vec<k8s_openapi::api::rbac::v1::PolicyRule> {
    let verbs = &["watch", "get", "list", "create", "update"];
    vec![
        rule(verbs, &["coordination.k8s.io"], &["leases"]),
        rule(verbs, &["coordination.k8s.io"], &["leasecandidates"]),
    ]
}

/// The default namespaced Roles.
pub fn namespace_roles() -> Vec<RoleSpec> {
    vec![
        // Reading the configmap with the client CA and front-proxy settings, for components
        // that authenticate their own clients.
        RoleSpec::namespaced(
            KUBE_SYSTEM,
            "extension-apiserver-authentication-reader",
            vec![named_rule(
                READ,
                &[""],
                &["configmaps"],
                &["extension-apiserver-authentication"],
            )],
        ),
        RoleSpec::namespaced(
            KUBE_SYSTEM,
            "system::leader-locking-kube-controller-manager",
            leader_locking_rules(),
        ),
        RoleSpec::namespaced(
            KUBE_SYSTEM,
            "system::leader-locking-kube-scheduler",
            leader_locking_rules(),
        ),
        RoleSpec::namespaced(
            KUBE_SYSTEM,
            "system:controller:bootstrap-signer",
            vec![rule(READ, &[""], &["secrets"])],
        ),
        RoleSpec::namespaced(
            KUBE_SYSTEM,
            "system:controller:cloud-provider",
            vec![rule(
                &["create", "get", "list", "watch"],
                &[""],
                &["configmaps"],
            )],
        ),
        RoleSpec::namespaced(
            KUBE_SYSTEM,
            "system:controller:token-cleaner",
            vec![
                rule(&["delete", "get", "list", "watch"], &[""], &["secrets"]),
                events_rule(),
            ],
        ),
        RoleSpec::namespaced(
            KUBE_PUBLIC,
            "system:controller:bootstrap-signer",
            vec![
                rule(READ, &[""], &["configmaps"]),
                named_rule(&["update"], &[""], &["configmaps"], &["cluster-info"]),
                events_rule(),
            ],
        ),
    ]
}

/// The default RoleBindings.
pub fn namespace_role_bindings() -> Vec<BindingSpec> {
    vec![
        BindingSpec::namespaced(
            KUBE_SYSTEM,
            "system::extension-apiserver-authentication-reader",
            "extension-apiserver-authentication-reader",
            vec![
                Subject::user("system:kube-controller-manager"),
                Subject::user("system:kube-scheduler"),
            ],
        ),
        BindingSpec::namespaced(
            KUBE_SYSTEM,
            "system::leader-locking-kube-controller-manager",
            "system::leader-locking-kube-controller-manager",
            vec![
                Subject::user("system:kube-controller-manager"),
                Subject::service_account(KUBE_SYSTEM, "kube-controller-manager"),
            ],
        ),
        BindingSpec::namespaced(
            KUBE_SYSTEM,
            "system::leader-locking-kube-scheduler",
            "system::leader-locking-kube-scheduler",
            vec![
                Subject::user("system:kube-scheduler"),
                Subject::service_account(KUBE_SYSTEM, "kube-scheduler"),
            ],
        ),
        BindingSpec::namespaced(
            KUBE_SYSTEM,
            "system:controller:bootstrap-signer",
            "system:controller:bootstrap-signer",
            vec![Subject::service_account(KUBE_SYSTEM, "bootstrap-signer")],
        ),
        BindingSpec::namespaced(
            KUBE_SYSTEM,
            "system:controller:cloud-provider",
            "system:controller:cloud-provider",
            vec![Subject::service_account(KUBE_SYSTEM, "cloud-provider")],
        ),
        BindingSpec::namespaced(
            KUBE_SYSTEM,
            "system:controller:token-cleaner",
            "system:controller:token-cleaner",
            vec![Subject::service_account(KUBE_SYSTEM, "token-cleaner")],
        ),
        BindingSpec::namespaced(
            KUBE_PUBLIC,
            "system:controller:bootstrap-signer",
            "system:controller:bootstrap-signer",
            vec![Subject::service_account(KUBE_SYSTEM, "bootstrap-signer")],
        ),
    ]
}
