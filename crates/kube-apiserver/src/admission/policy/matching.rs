//! Which requests a policy or binding applies to (upstream `policy/matching` with the
//! webhook rule, namespace and object predicates): `resourceRules`, `excludeResourceRules`,
//! `resourceNames`, `namespaceSelector`, `objectSelector`, `matchPolicy`.

use serde_json::{Map, Value};

use crate::apis::json::{array_at, str_at};
use crate::apis::workload::{selector_is_empty, selector_matches};

/// The facts of a request the rules look at.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    /// `CREATE`, `UPDATE`, `DELETE` or `CONNECT`.
    pub operation: &'a str,
    /// The resource's API group.
    pub group: &'a str,
    /// The resource's API version.
    pub version: &'a str,
    /// The resource (plural).
    pub resource: &'a str,
    /// The subresource, empty for the main resource.
    pub subresource: &'a str,
    /// The namespace, empty for cluster-scoped resources.
    pub namespace: &'a str,
    /// The object's name.
    pub name: &'a str,
    /// The object after the request (create, update).
    pub object: Option<&'a Value>,
    /// The object before the request (update, delete).
    pub old_object: Option<&'a Value>,
}

impl Request<'_> {
    /// Whether the request is about a core Namespace object.
    pub fn is_namespace(&self) -> bool {
        self.group.is_empty() && self.resource == "namespaces" && self.subresource.is_empty()
    }
}

fn list_has(list: &[Value], value: &str) -> bool {
    list.iter()
        .any(|v| v.as_str().is_some_and(|s| s == "*" || s == value))
}

/// Upstream's `rules.Matcher`: operations, groups, versions, `resource/subresource` with
/// wildcards, scope.
pub fn rule_matches(rule: &Value, req: &Request, version: &str) -> bool {
    let operations = array_at(rule, "operations");
    if !list_has(operations, req.operation) {
        return false;
    }
    if !list_has(array_at(rule, "apiGroups"), req.group)
        || !list_has(array_at(rule, "apiVersions"), version)
    {
        return false;
    }
    let resources = array_at(rule, "resources");
    let resource_matches = resources.iter().filter_map(Value::as_str).any(|r| {
        let (res, sub) = r.split_once('/').unwrap_or((r, ""));
        if res == "*" && sub == "*" {
            return true;
        }
        let res_ok = res == "*" || res == req.resource;
        let sub_ok = if r.contains('/') {
            sub == "*" || sub == req.subresource
        } else {
            req.subresource.is_empty()
        };
        res_ok && sub_ok
    });
    if !resource_matches {
        return false;
    }
    let namespace_object = req.group.is_empty() && req.resource == "namespaces";
    match str_at(rule, "scope").unwrap_or("*") {
        // Namespaces are cluster-scoped, whatever namespace their requests carry.
        "Namespaced" => !namespace_object && !req.namespace.is_empty(),
        "Cluster" => namespace_object || req.namespace.is_empty(),
        _ => true,
    }
}

fn named_rules_match(rules: &[Value], req: &Request, version: &str) -> bool {
    rules.iter().any(|rule| {
        rule_matches(rule, req, version) && {
            let names = array_at(rule, "resourceNames");
            names.is_empty() || names.iter().any(|n| n.as_str() == Some(req.name))
        }
    })
}

/// Matching by rules: `Some(version)` of the resource the rules matched (the request's own, or
/// with `matchPolicy: Equivalent` another served version of the same resource), `None`.
pub fn rules_match(
    match_resources: &Value,
    req: &Request,
    served_versions: &[String],
) -> Option<String> {
    let exclude = array_at(match_resources, "excludeResourceRules");
    if named_rules_match(exclude, req, req.version) {
        return None;
    }
    let rules = array_at(match_resources, "resourceRules");
    if rules.is_empty() || named_rules_match(rules, req, req.version) {
        return Some(req.version.to_string());
    }
    if str_at(match_resources, "matchPolicy") != Some("Equivalent") {
        return None;
    }
    served_versions
        .iter()
        .filter(|v| v.as_str() != req.version)
        .find(|v| named_rules_match(rules, req, v))
        .cloned()
}

fn labels_of(obj: Option<&Value>) -> Map<String, Value> {
    obj.and_then(|o| o.pointer("/metadata/labels"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// Upstream's object matcher: the selector matches the new or the old object's labels.
pub fn object_selector_matches(selector: Option<&Value>, req: &Request) -> bool {
    let Some(selector) = selector.filter(|s| !s.is_null() && !selector_is_empty(s)) else {
        return true;
    };
    [req.object, req.old_object]
        .into_iter()
        .flatten()
        .any(|o| selector_matches(selector, &labels_of(Some(o))))
}

/// Upstream's namespace matcher: cluster-scoped requests (other than namespaces themselves)
/// always match; a namespace is matched by its own labels; others by their namespace's labels
/// (`namespace` is the namespace object, `None` when it does not exist).
pub fn namespace_selector_matches(
    selector: Option<&Value>,
    req: &Request,
    namespace: Option<&Value>,
) -> bool {
    let Some(selector) = selector.filter(|s| !s.is_null() && !selector_is_empty(s)) else {
        return true;
    };
    if req.is_namespace() {
        let own = req.object.or(req.old_object);
        return selector_matches(selector, &labels_of(own));
    }
    if req.namespace.is_empty() {
        return true;
    }
    selector_matches(selector, &labels_of(namespace))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn req<'a>(object: Option<&'a Value>) -> Request<'a> {
        Request {
            operation: "CREATE",
            group: "apps",
            version: "v1",
            resource: "deployments",
            subresource: "",
            namespace: "default",
            name: "web",
            object,
            old_object: None,
        }
    }

    #[test]
    fn rules_with_wildcards_subresources_scope_and_names() {
        let r = req(None);
        let rule = |v: Value| json!({"operations": ["*"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": [v], "scope": "*"});
        assert!(rule_matches(&rule(json!("deployments")), &r, "v1"));
        assert!(rule_matches(&rule(json!("*")), &r, "v1"));
        assert!(!rule_matches(&rule(json!("deployments/scale")), &r, "v1"));
        let scale = Request {
            subresource: "scale",
            ..r
        };
        assert!(rule_matches(
            &rule(json!("deployments/scale")),
            &scale,
            "v1"
        ));
        assert!(rule_matches(&rule(json!("*/*")), &scale, "v1"));
        assert!(!rule_matches(&rule(json!("*")), &scale, "v1"));
        let mut cluster = rule(json!("*"));
        cluster["scope"] = json!("Cluster");
        assert!(!rule_matches(&cluster, &r, "v1"));
        let mr = json!({"resourceRules": [{"operations": ["CREATE"], "apiGroups": ["apps"], "apiVersions": ["v1"],
            "resources": ["deployments"], "resourceNames": ["other"]}], "matchPolicy": "Equivalent"});
        assert_eq!(rules_match(&mr, &r, &[]), None);
        let mr = json!({"resourceRules": [{"operations": ["CREATE"], "apiGroups": ["apps"], "apiVersions": ["v1"],
            "resources": ["deployments"]}], "excludeResourceRules": [{"operations": ["*"], "apiGroups": ["*"],
            "apiVersions": ["*"], "resources": ["*"], "resourceNames": ["web"]}]});
        assert_eq!(rules_match(&mr, &r, &[]), None);
    }

    #[test]
    fn equivalent_versions_match_with_the_equivalent_policy_only() {
        let r = Request {
            group: "autoscaling",
            version: "v1",
            resource: "horizontalpodautoscalers",
            ..req(None)
        };
        let mut mr = json!({"resourceRules": [{"operations": ["CREATE"], "apiGroups": ["autoscaling"], "apiVersions": ["v2"],
            "resources": ["horizontalpodautoscalers"]}], "matchPolicy": "Equivalent"});
        let served = ["v2".to_string(), "v1".to_string()];
        assert_eq!(rules_match(&mr, &r, &served).as_deref(), Some("v2"));
        mr["matchPolicy"] = json!("Exact");
        assert_eq!(rules_match(&mr, &r, &served), None);
    }

    #[test]
    fn selectors_on_objects_and_namespaces() {
        let labelled = json!({"metadata": {"labels": {"env": "prod"}}});
        let r = req(Some(&labelled));
        let prod = json!({"matchLabels": {"env": "prod"}});
        assert!(object_selector_matches(Some(&prod), &r));
        assert!(!object_selector_matches(
            Some(&json!({"matchLabels": {"env": "dev"}})),
            &r
        ));
        assert!(object_selector_matches(Some(&json!({})), &r));
        assert!(namespace_selector_matches(Some(&prod), &r, Some(&labelled)));
        assert!(!namespace_selector_matches(Some(&prod), &r, None));
        let cluster = Request {
            namespace: "",
            group: "",
            resource: "nodes",
            ..r
        };
        assert!(namespace_selector_matches(Some(&prod), &cluster, None));
        let ns = Request {
            namespace: "",
            group: "",
            resource: "namespaces",
            ..r
        };
        assert!(namespace_selector_matches(Some(&prod), &ns, None));
    }
}
