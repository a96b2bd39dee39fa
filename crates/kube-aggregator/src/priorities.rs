//! The group and version priorities of kube-apiserver's local APIServices (upstream's
//! `apiVersionPriorities` in kube-apiserver's `aggregator.go`, merged with the generic
//! control plane's `DefaultGenericAPIServicePriorities`).

use apiserver::endpoints::discovery::Priority;

/// `(group, version, groupPriorityMinimum, versionPriority)`.
const TABLE: &[(&str, &str, i32, i32)] = &[
    ("", "v1", 18000, 1),
    // Not in upstream's table: the aggregator's own group, which it lists first.
    ("apiregistration.k8s.io", "v1", 18000, 15),
    ("apps", "v1", 17800, 15),
    ("events.k8s.io", "v1", 17750, 15),
    ("events.k8s.io", "v1beta1", 17750, 5),
    ("authentication.k8s.io", "v1", 17700, 15),
    ("authentication.k8s.io", "v1beta1", 17700, 9),
    ("authentication.k8s.io", "v1alpha1", 17700, 1),
    ("authorization.k8s.io", "v1", 17600, 15),
    ("autoscaling", "v1", 17500, 15),
    ("autoscaling", "v2", 17500, 30),
    ("autoscaling", "v2beta1", 17500, 9),
    ("autoscaling", "v2beta2", 17500, 1),
    ("batch", "v1", 17400, 15),
    ("batch", "v1beta1", 17400, 9),
    ("batch", "v2alpha1", 17400, 9),
    ("certificates.k8s.io", "v1", 17300, 15),
    ("certificates.k8s.io", "v1beta1", 17300, 9),
    ("certificates.k8s.io", "v1alpha1", 17300, 1),
    ("networking.k8s.io", "v1", 17200, 15),
    ("networking.k8s.io", "v1beta1", 17200, 9),
    ("networking.k8s.io", "v1alpha1", 17200, 1),
    ("policy", "v1", 17100, 15),
    ("policy", "v1beta1", 17100, 9),
    ("rbac.authorization.k8s.io", "v1", 17000, 15),
    ("storage.k8s.io", "v1", 16800, 15),
    ("storage.k8s.io", "v1beta1", 16800, 9),
    ("storage.k8s.io", "v1alpha1", 16800, 1),
    ("apiextensions.k8s.io", "v1", 16700, 15),
    ("admissionregistration.k8s.io", "v1", 16700, 15),
    ("admissionregistration.k8s.io", "v1beta1", 16700, 12),
    ("admissionregistration.k8s.io", "v1alpha1", 16700, 9),
    ("scheduling.k8s.io", "v1", 16600, 15),
    ("coordination.k8s.io", "v1", 16500, 15),
    ("coordination.k8s.io", "v1beta1", 16500, 13),
    ("coordination.k8s.io", "v1alpha2", 16500, 12),
    ("node.k8s.io", "v1", 16300, 15),
    ("node.k8s.io", "v1beta1", 16300, 9),
    ("node.k8s.io", "v1alpha1", 16300, 1),
    ("discovery.k8s.io", "v1", 16200, 15),
    ("discovery.k8s.io", "v1beta1", 16200, 12),
    ("flowcontrol.apiserver.k8s.io", "v1", 16100, 21),
    ("flowcontrol.apiserver.k8s.io", "v1beta3", 16100, 18),
    ("flowcontrol.apiserver.k8s.io", "v1beta2", 16100, 15),
    ("flowcontrol.apiserver.k8s.io", "v1beta1", 16100, 12),
    ("flowcontrol.apiserver.k8s.io", "v1alpha1", 16100, 9),
    ("resource.k8s.io", "v1", 15900, 21),
    ("resource.k8s.io", "v1beta2", 15900, 15),
    ("resource.k8s.io", "v1beta1", 15900, 12),
    ("resource.k8s.io", "v1alpha3", 15900, 9),
    ("internal.apiserver.k8s.io", "v1alpha1", 16000, 9),
    ("storagemigration.k8s.io", "v1alpha1", 15800, 9),
];

/// The priority upstream's CRD registration controller gives custom resource group-versions
/// (and what any group-version missing from the table gets here).
pub const CUSTOM_RESOURCE_PRIORITY: Priority = Priority {
    group_priority_minimum: 1000,
    version_priority: 100,
};

/// The built-in priority of `group`/`version`, if the table has one.
pub fn builtin_priority(group: &str, version: &str) -> Option<Priority> {
    TABLE
        .iter()
        .find(|(g, v, _, _)| *g == group && *v == version)
        .map(|&(_, _, gpm, vp)| Priority {
            group_priority_minimum: gpm,
            version_priority: vp,
        })
}

/// The priority of a local APIService for `group`/`version`.
pub fn local_priority(group: &str, version: &str) -> Priority {
    builtin_priority(group, version).unwrap_or(CUSTOM_RESOURCE_PRIORITY)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_values() {
        assert_eq!(
            builtin_priority("", "v1"),
            Some(Priority {
                group_priority_minimum: 18000,
                version_priority: 1
            })
        );
        assert_eq!(
            builtin_priority("apps", "v1").map(|p| p.group_priority_minimum),
            Some(17800)
        );
        assert_eq!(
            local_priority("stable.example.com", "v1"),
            CUSTOM_RESOURCE_PRIORITY
        );
    }
}
