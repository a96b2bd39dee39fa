//! The ResourceQuota plugin's configuration (`ResourceQuotaConfiguration` of
//! `apiserver.config.k8s.io/v1`, also `resourcequota.admission.k8s.io/v1beta1` and
//! `v1alpha1`): resources that may only be consumed when a quota covers them.

use serde_json::Value;

use super::evaluator::ScopeRequirement;

/// One `limitedResources` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LimitedResource {
    /// `apiGroup` (empty for core).
    pub api_group: String,
    /// `resource`.
    pub resource: String,
    /// `matchContains`: usage names containing one of these need a covering quota.
    pub match_contains: Vec<String>,
    /// `matchScopes`: objects in one of these scopes need a quota with the same scope.
    pub match_scopes: Vec<ScopeRequirement>,
}

const KINDS: &[&str] = &[
    "apiserver.config.k8s.io/v1",
    "resourcequota.admission.k8s.io/v1",
    "resourcequota.admission.k8s.io/v1beta1",
    "resourcequota.admission.k8s.io/v1alpha1",
];

const SCOPES: &[&str] = &[
    "Terminating",
    "NotTerminating",
    "BestEffort",
    "NotBestEffort",
    "PriorityClass",
    "CrossNamespacePodAffinity",
    "VolumeAttributesClass",
];

fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The limited resources of `config` (the plugin's configuration as JSON; none without one).
/// An invalid configuration is the message of a start-up error.
pub fn parse(config: Option<&Value>) -> Result<Vec<LimitedResource>, String> {
    let Some(config) = config else {
        return Ok(Vec::new());
    };
    let api_version = config
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let kind = config
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !api_version.is_empty()
        && (!KINDS.contains(&api_version) || kind != "ResourceQuotaConfiguration")
    {
        return Err(format!(
            "no kind \"{kind}\" is registered for version \"{api_version}\""
        ));
    }
    let mut out = Vec::new();
    let entries = config
        .get("limitedResources")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for (i, entry) in entries.iter().enumerate() {
        let resource = entry
            .get("resource")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if resource.is_empty() {
            return Err(format!("limitedResources[{i}].resource: Required value"));
        }
        let mut scopes = Vec::new();
        for (j, scope) in entry
            .get("matchScopes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let scope = ScopeRequirement::from_json(scope);
            let path = format!("limitedResources[{i}].matchScopes[{j}]");
            if !SCOPES.contains(&scope.scope_name.as_str()) {
                return Err(format!(
                    "{path}.scopeName: Invalid value: \"{}\": unsupported scope",
                    scope.scope_name
                ));
            }
            match scope.operator.as_str() {
                "In" | "NotIn" if scope.values.is_empty() => {
                    return Err(format!(
                        "{path}.values: Required value: must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"
                    ));
                }
                "Exists" | "DoesNotExist" if !scope.values.is_empty() => {
                    return Err(format!(
                        "{path}.values: Invalid value: must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector"
                    ));
                }
                "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
                other => {
                    return Err(format!(
                        "{path}.operator: Invalid value: \"{other}\": not a valid selector operator"
                    ));
                }
            }
            scopes.push(scope);
        }
        out.push(LimitedResource {
            api_group: entry
                .get("apiGroup")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            resource: resource.to_string(),
            match_contains: strings(entry.get("matchContains")),
            match_scopes: scopes,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn limited_resources_are_read_and_checked() {
        let config = json!({
            "apiVersion": "apiserver.config.k8s.io/v1", "kind": "ResourceQuotaConfiguration",
            "limitedResources": [{"resource": "pods", "matchContains": ["requests.cpu"],
                "matchScopes": [{"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]}]
        });
        let parsed = parse(Some(&config)).unwrap();
        assert_eq!(parsed[0].resource, "pods");
        assert_eq!(parsed[0].match_contains, ["requests.cpu"]);
        assert_eq!(parsed[0].match_scopes[0].values, ["high"]);
        assert!(parse(None).unwrap().is_empty());
        let bad = json!({"limitedResources": [{"apiGroup": ""}]});
        assert_eq!(
            parse(Some(&bad)).unwrap_err(),
            "limitedResources[0].resource: Required value"
        );
        let bad_kind = json!({"apiVersion": "v1", "kind": "Pod"});
        assert!(parse(Some(&bad_kind)).is_err());
    }
}
