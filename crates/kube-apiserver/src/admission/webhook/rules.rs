//! Which requests a webhook's `rules` select (upstream `predicates/rules`): operations, API
//! groups and versions with `*`, resources with `*`, `*/*`, `pods/*` and `*/status`, and the
//! scope; and the admission configuration resources no webhook is ever called for.

use serde_json::Value;

/// A rule's scope.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// `*`: any request.
    All,
    /// `Cluster`: cluster-scoped resources (and namespaces themselves).
    Cluster,
    /// `Namespaced`: namespaced resources.
    Namespaced,
    /// A value upstream does not know: never matches.
    Unknown,
}

/// One `RuleWithOperations`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// `CREATE`, `UPDATE`, `DELETE`, `CONNECT` or `*`.
    pub operations: Vec<String>,
    /// API groups (`""` for core, `*` for any).
    pub groups: Vec<String>,
    /// API versions (`*` for any).
    pub versions: Vec<String>,
    /// `resource` or `resource/subresource`, with `*` wildcards.
    pub resources: Vec<String>,
    /// The scope.
    pub scope: Scope,
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

impl Rule {
    /// The rule of a stored (defaulted, validated) `rules[]` entry.
    pub fn parse(rule: &Value) -> Rule {
        let scope = match rule.get("scope").and_then(Value::as_str) {
            None | Some("*") => Scope::All,
            Some("Cluster") => Scope::Cluster,
            Some("Namespaced") => Scope::Namespaced,
            Some(_) => Scope::Unknown,
        };
        Rule {
            operations: strings(rule.get("operations")),
            groups: strings(rule.get("apiGroups")),
            versions: strings(rule.get("apiVersions")),
            resources: strings(rule.get("resources")),
            scope,
        }
    }

    /// Whether the rule selects `request`.
    pub fn matches(&self, request: &RuleInput<'_>) -> bool {
        self.scope_matches(request)
            && self
                .operations
                .iter()
                .any(|op| op == "*" || op == request.operation)
            && exact_or_wildcard(&self.groups, request.group)
            && exact_or_wildcard(&self.versions, request.version)
            && self.resources.iter().any(|res_sub| {
                let (res, sub) = res_sub.split_once('/').unwrap_or((res_sub, ""));
                (res == "*" || res == request.resource)
                    && (sub == "*" || sub == request.subresource)
            })
    }

    fn scope_matches(&self, request: &RuleInput<'_>) -> bool {
        let namespace_resource =
            request.group.is_empty() && request.version == "v1" && request.resource == "namespaces";
        match self.scope {
            Scope::All => true,
            Scope::Namespaced => !namespace_resource && !request.namespace.is_empty(),
            Scope::Cluster => namespace_resource || request.namespace.is_empty(),
            Scope::Unknown => false,
        }
    }
}

fn exact_or_wildcard(items: &[String], requested: &str) -> bool {
    items.iter().any(|item| item == "*" || item == requested)
}

/// What rules look at in a request.
#[derive(Clone, Copy, Debug)]
pub struct RuleInput<'a> {
    /// `CREATE`, `UPDATE`, `DELETE` or `CONNECT`.
    pub operation: &'a str,
    /// The resource's group.
    pub group: &'a str,
    /// The resource's version.
    pub version: &'a str,
    /// The resource.
    pub resource: &'a str,
    /// The subresource, empty for the main resource.
    pub subresource: &'a str,
    /// The request's namespace, empty for cluster-scoped requests.
    pub namespace: &'a str,
}

/// The admission configuration kinds no webhook is called for (upstream
/// `IsExemptAdmissionConfigurationResource`), so that a broken webhook cannot lock its own
/// configuration.
pub fn is_exempt(group: &str, kind: &str) -> bool {
    group == "admissionregistration.k8s.io"
        && matches!(
            kind,
            "ValidatingWebhookConfiguration"
                | "MutatingWebhookConfiguration"
                | "ValidatingAdmissionPolicy"
                | "ValidatingAdmissionPolicyBinding"
                | "MutatingAdmissionPolicy"
                | "MutatingAdmissionPolicyBinding"
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn input<'a>(op: &'a str, resource: &'a str, sub: &'a str, ns: &'a str) -> RuleInput<'a> {
        RuleInput {
            operation: op,
            group: "",
            version: "v1",
            resource,
            subresource: sub,
            namespace: ns,
        }
    }

    fn rule(resources: Value, scope: &str) -> Rule {
        Rule::parse(
            &json!({"operations": ["CREATE", "UPDATE"], "apiGroups": [""],
                            "apiVersions": ["v1"], "resources": resources, "scope": scope}),
        )
    }

    #[test]
    fn resources_and_subresources_match_with_wildcards() {
        let plain = rule(json!(["pods"]), "*");
        assert!(plain.matches(&input("CREATE", "pods", "", "ns")));
        assert!(!plain.matches(&input("CREATE", "pods", "status", "ns")));
        assert!(!plain.matches(&input("DELETE", "pods", "", "ns")));
        let star = rule(json!(["*"]), "*");
        assert!(star.matches(&input("CREATE", "configmaps", "", "ns")));
        assert!(!star.matches(&input("CREATE", "pods", "status", "ns")));
        let all = rule(json!(["*/*"]), "*");
        assert!(all.matches(&input("UPDATE", "pods", "status", "ns")));
        let pod_subs = rule(json!(["pods/*"]), "*");
        assert!(pod_subs.matches(&input("UPDATE", "pods", "status", "ns")));
        assert!(pod_subs.matches(&input("UPDATE", "pods", "", "ns")));
        let status = rule(json!(["*/status"]), "*");
        assert!(status.matches(&input("UPDATE", "deployments", "status", "ns")));
        assert!(!status.matches(&input("UPDATE", "deployments", "scale", "ns")));
    }

    #[test]
    fn scopes_treat_namespaces_as_cluster_scoped() {
        let namespaced = rule(json!(["*"]), "Namespaced");
        let cluster = rule(json!(["*"]), "Cluster");
        assert!(namespaced.matches(&input("CREATE", "configmaps", "", "ns")));
        assert!(!namespaced.matches(&input("CREATE", "nodes", "", "")));
        assert!(!namespaced.matches(&input("UPDATE", "namespaces", "", "ns")));
        assert!(cluster.matches(&input("UPDATE", "namespaces", "", "ns")));
        assert!(cluster.matches(&input("CREATE", "nodes", "", "")));
        assert!(!cluster.matches(&input("CREATE", "configmaps", "", "ns")));
    }

    #[test]
    fn admission_configuration_kinds_are_exempt() {
        assert!(is_exempt(
            "admissionregistration.k8s.io",
            "ValidatingWebhookConfiguration"
        ));
        assert!(is_exempt(
            "admissionregistration.k8s.io",
            "MutatingAdmissionPolicyBinding"
        ));
        assert!(!is_exempt("", "ConfigMap"));
    }
}
