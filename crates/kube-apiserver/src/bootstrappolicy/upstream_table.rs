//! The names and rule counts of upstream's bootstrap policy test data
//! (`bootstrappolicy/testdata/{cluster-roles,controller-roles,namespace-roles}.yaml`, default
//! feature gates), so a change on either side shows up as a failing test.

use std::collections::BTreeMap;

/// ClusterRoles: name and number of rules.
const CLUSTER_ROLES: &[(&str, usize)] = &[
    ("admin", 0),
    ("cluster-admin", 2),
    ("edit", 0),
    ("system:aggregate-to-admin", 2),
    ("system:aggregate-to-edit", 13),
    ("system:aggregate-to-view", 10),
    ("system:auth-delegator", 2),
    ("system:basic-user", 2),
    (
        "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
        1,
    ),
    (
        "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
        1,
    ),
    (
        "system:certificates.k8s.io:kube-apiserver-client-approver",
        1,
    ),
    (
        "system:certificates.k8s.io:kube-apiserver-client-kubelet-approver",
        1,
    ),
    ("system:certificates.k8s.io:kubelet-serving-approver", 1),
    ("system:certificates.k8s.io:legacy-unknown-approver", 1),
    ("system:discovery", 1),
    ("system:heapster", 2),
    ("system:kube-aggregator", 1),
    ("system:kube-controller-manager", 11),
    ("system:kube-dns", 1),
    ("system:kube-scheduler", 25),
    ("system:kubelet-api-admin", 3),
    ("system:monitoring", 1),
    ("system:node", 24),
    ("system:node-bootstrapper", 1),
    ("system:node-problem-detector", 3),
    ("system:node-proxier", 4),
    ("system:persistent-volume-provisioner", 5),
    ("system:public-info-viewer", 1),
    ("system:service-account-issuer-discovery", 1),
    ("system:volume-scheduler", 3),
    ("view", 0),
];

/// Controller ClusterRoles (`system:controller:` + name) and their number of rules.
const CONTROLLER_ROLES: &[(&str, usize)] = &[
    ("attachdetach-controller", 8),
    ("certificate-controller", 6),
    ("clusterrole-aggregation-controller", 1),
    ("cronjob-controller", 6),
    ("daemon-set-controller", 8),
    ("deployment-controller", 6),
    ("disruption-controller", 9),
    ("endpoint-controller", 4),
    ("endpointslice-controller", 4),
    ("endpointslicemirroring-controller", 5),
    ("ephemeral-volume-controller", 4),
    ("expand-controller", 5),
    ("generic-garbage-collector", 2),
    ("horizontal-pod-autoscaler", 8),
    ("job-controller", 5),
    ("legacy-service-account-token-cleaner", 2),
    ("namespace-controller", 3),
    ("node-controller", 5),
    ("persistent-volume-binder", 10),
    ("pod-garbage-collector", 3),
    ("pv-protection-controller", 2),
    ("pvc-protection-controller", 3),
    ("replicaset-controller", 5),
    ("replication-controller", 5),
    ("resource-claim-controller", 6),
    ("resourcequota-controller", 3),
    ("root-ca-cert-publisher", 2),
    ("route-controller", 3),
    // The test data this table was taken from predates three roles 1.35 creates with its
    // default feature gates: SELinuxChangePolicy (1.33), MultiCIDRServiceAllocator (GA in 1.33)
    // and VolumeAttributesClass (GA in 1.34); their rules are from upstream's controller policy.
    ("selinux-warning-controller", 3),
    ("service-account-controller", 2),
    ("service-cidrs-controller", 5),
    ("service-controller", 4),
    ("statefulset-controller", 10),
    ("ttl-after-finished-controller", 2),
    ("ttl-controller", 2),
    ("validatingadmissionpolicy-status-controller", 3),
    ("volumeattributesclass-protection-controller", 4),
];

/// Roles: namespace, name and number of rules.
const NAMESPACE_ROLES: &[(&str, &str, usize)] = &[
    ("kube-public", "system:controller:bootstrap-signer", 3),
    (
        "kube-system",
        "extension-apiserver-authentication-reader",
        1,
    ),
    (
        "kube-system",
        "system::leader-locking-kube-controller-manager",
        2,
    ),
    ("kube-system", "system::leader-locking-kube-scheduler", 2),
    ("kube-system", "system:controller:bootstrap-signer", 1),
    ("kube-system", "system:controller:cloud-provider", 1),
    ("kube-system", "system:controller:token-cleaner", 2),
];

fn rule_counts(roles: &[super::RoleSpec]) -> BTreeMap<String, usize> {
    roles
        .iter()
        .map(|r| {
            let key = if r.namespace.is_empty() {
                r.name.clone()
            } else {
                format!("{}/{}", r.namespace, r.name)
            };
            (key, r.rules.len())
        })
        .collect()
}

#[test]
fn cluster_roles_match_upstream_names_and_rule_counts() {
    let ours = rule_counts(&super::cluster_roles());
    let mut upstream: BTreeMap<String, usize> = CLUSTER_ROLES
        .iter()
        .map(|(n, c)| ((*n).to_string(), *c))
        .collect();
    upstream.extend(
        CONTROLLER_ROLES
            .iter()
            .map(|(n, c)| (format!("system:controller:{n}"), *c)),
    );
    assert_eq!(ours, upstream);
    assert_eq!(
        super::cluster_roles().len(),
        upstream.len(),
        "duplicate names"
    );
}

#[test]
fn namespace_roles_match_upstream_names_and_rule_counts() {
    let ours = rule_counts(&super::namespace_roles());
    let upstream: BTreeMap<String, usize> = NAMESPACE_ROLES
        .iter()
        .map(|(ns, n, c)| (format!("{ns}/{n}"), *c))
        .collect();
    assert_eq!(ours, upstream);
}

#[test]
fn every_controller_role_is_bound_to_its_service_account() {
    let bindings = super::cluster_role_bindings();
    for (controller, _) in CONTROLLER_ROLES {
        let name = format!("system:controller:{controller}");
        let binding = bindings
            .iter()
            .find(|b| b.name == name)
            .unwrap_or_else(|| panic!("no binding {name}"));
        assert_eq!(binding.role, name);
        assert_eq!(
            binding.subjects,
            [super::Subject::service_account("kube-system", controller)]
        );
    }
    // 12 bindings of users, groups and components besides the controllers'.
    assert_eq!(bindings.len(), CONTROLLER_ROLES.len() + 12);
}

#[test]
fn every_binding_refers_to_a_default_role() {
    let cluster_roles: Vec<String> = super::cluster_roles().into_iter().map(|r| r.name).collect();
    for binding in super::cluster_role_bindings() {
        assert!(cluster_roles.contains(&binding.role), "{}", binding.role);
    }
    let roles: Vec<(&str, String)> = super::namespace_roles()
        .into_iter()
        .map(|r| (r.namespace, r.name))
        .collect();
    for binding in super::namespace_role_bindings() {
        assert!(
            roles.contains(&(binding.namespace, binding.role.clone())),
            "{}/{}",
            binding.namespace,
            binding.role
        );
    }
}

#[test]
fn objects_carry_the_bootstrap_label_and_autoupdate_annotation() {
    let view = super::cluster_roles()
        .into_iter()
        .find(|r| r.name == "view")
        .unwrap()
        .to_value();
    assert_eq!(view["apiVersion"], "rbac.authorization.k8s.io/v1");
    assert_eq!(view["kind"], "ClusterRole");
    assert_eq!(
        view["metadata"]["labels"]["kubernetes.io/bootstrapping"],
        "rbac-defaults"
    );
    assert_eq!(
        view["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-edit"],
        "true"
    );
    assert_eq!(
        view["metadata"]["annotations"]["rbac.authorization.kubernetes.io/autoupdate"],
        "true"
    );
    assert_eq!(
        view["aggregationRule"]["clusterRoleSelectors"][0]["matchLabels"]["rbac.authorization.k8s.io/aggregate-to-view"],
        "true"
    );
    let binding = super::namespace_role_bindings()[0].to_value();
    assert_eq!(binding["kind"], "RoleBinding");
    assert_eq!(binding["metadata"]["namespace"], "kube-system");
    assert_eq!(binding["roleRef"]["kind"], "Role");
    assert_eq!(
        binding["subjects"][0]["apiGroup"],
        "rbac.authorization.k8s.io"
    );
    let sa = super::cluster_role_bindings()
        .into_iter()
        .find(|b| b.name == "system:kube-dns")
        .unwrap()
        .to_value();
    assert_eq!(sa["subjects"][0]["kind"], "ServiceAccount");
    assert_eq!(sa["subjects"][0]["namespace"], "kube-system");
    assert!(sa["subjects"][0].get("apiGroup").is_none());
}
