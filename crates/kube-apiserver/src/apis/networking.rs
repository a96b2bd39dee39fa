//! networking.k8s.io/v1: ingresses, ingressclasses, networkpolicies.

use apiserver::registry::FieldError;
use k8s_openapi::api::networking::v1::{Ingress, IngressClass, NetworkPolicy};
use serde_json::{Value, json};

use super::ResourceDef;
use super::json::{array_at, get, str_at};
use super::strategy::{BuiltinStrategy, info};
use super::table::{age_cell, age_column, column, format_label_selector, name_cell, name_column};

/// networking.k8s.io/v1 resources.
pub fn resources() -> Vec<ResourceDef> {
    vec![ingressclasses(), ingresses(), networkpolicies()]
}

const PATH_TYPES: [&str; 3] = ["Exact", "ImplementationSpecific", "Prefix"];

/// The ingresses resource (subresource `status`).
pub fn ingresses() -> ResourceDef {
    let strategy = BuiltinStrategy::new::<Ingress>(info(
        "networking.k8s.io",
        "v1",
        "Ingress",
        "ingresses",
        true,
        &["ing"],
        &[],
    ))
    .status_from(|| json!({"loadBalancer": {}}))
    .generation()
    .validate(validate_ingress)
    .table(
        || {
            vec![
                name_column(),
                column(
                    "Class",
                    "string",
                    "The name of the IngressClass resource that should be used by this Ingress.",
                    0,
                ),
                column(
                    "Hosts",
                    "string",
                    "Hosts that incoming requests are matched against before the ingress rule",
                    0,
                ),
                column(
                    "Address",
                    "string",
                    "Address is a list containing ingress points for the load-balancer",
                    0,
                ),
                column(
                    "Ports",
                    "string",
                    "Ports of TLS configurations that open",
                    0,
                ),
                age_column(),
            ]
        },
        ingress_row,
    );
    ResourceDef::new(strategy).with(&["status"])
}

fn validate_ingress(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let has_default = get(obj, "spec.defaultBackend").is_some_and(|b| !b.is_null());
    let rules = array_at(obj, "spec.rules");
    if rules.is_empty() && !has_default {
        errs.push(FieldError::invalid(
            "spec.rules",
            json!([]),
            "either `defaultBackend` or `rules` must be specified",
        ));
    }
    for (i, rule) in rules.iter().enumerate() {
        for (j, path) in array_at(rule, "http.paths").iter().enumerate() {
            let at = format!("spec.rules[{i}].http.paths[{j}].pathType");
            match path.get("pathType").and_then(Value::as_str) {
                None => errs.push(FieldError::required(&at, "pathType must be specified")),
                Some(t) if !PATH_TYPES.contains(&t) => {
                    errs.push(FieldError::not_supported(&at, t, &PATH_TYPES));
                }
                Some(_) => {}
            }
        }
    }
    errs
}

fn ingress_row(obj: &Value) -> Vec<Value> {
    let hosts: Vec<&str> = array_at(obj, "spec.rules")
        .iter()
        .filter_map(|r| r.get("host").and_then(Value::as_str))
        .filter(|h| !h.is_empty())
        .collect();
    let hosts_cell = match hosts.len() {
        0 => "*".to_string(),
        n if n > 3 => format!("{} + {} more...", hosts[..3].join(","), n - 3),
        _ => hosts.join(","),
    };
    let address: Vec<&str> = array_at(obj, "status.loadBalancer.ingress")
        .iter()
        .filter_map(|i| {
            i.get("ip")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .or_else(|| i.get("hostname").and_then(Value::as_str))
        })
        .collect();
    let ports = if array_at(obj, "spec.tls").is_empty() {
        "80"
    } else {
        "80, 443"
    };
    vec![
        name_cell(obj),
        json!(
            str_at(obj, "spec.ingressClassName")
                .filter(|c| !c.is_empty())
                .unwrap_or("<none>")
        ),
        json!(hosts_cell),
        json!(address.join(",")),
        json!(ports),
        age_cell(obj),
    ]
}

/// The ingressclasses resource.
pub fn ingressclasses() -> ResourceDef {
    ResourceDef::new(
        BuiltinStrategy::new::<IngressClass>(info(
            "networking.k8s.io",
            "v1",
            "IngressClass",
            "ingressclasses",
            false,
            &[],
            &[],
        ))
        .generation()
        .validate_update(|new, old| {
            super::validation::immutable(new, old, "spec.controller")
                .into_iter()
                .collect()
        })
        .table(
            || {
                vec![
                    name_column(),
                    column(
                        "Controller",
                        "string",
                        "Controller that is responsible for handling this class",
                        0,
                    ),
                    column(
                        "Parameters",
                        "string",
                        "A reference to a resource with additional parameters",
                        0,
                    ),
                    age_column(),
                ]
            },
            |obj| {
                let params = match get(obj, "spec.parameters").filter(|p| !p.is_null()) {
                    None => "<none>".to_string(),
                    Some(p) => {
                        let mut text = str_at(p, "kind").unwrap_or_default().to_string();
                        if let Some(group) = str_at(p, "apiGroup") {
                            text = format!("{text}.{group}");
                        }
                        format!("{text}/{}", str_at(p, "name").unwrap_or_default())
                    }
                };
                vec![
                    name_cell(obj),
                    json!(str_at(obj, "spec.controller").unwrap_or_default()),
                    json!(params),
                    age_cell(obj),
                ]
            },
        ),
    )
}

/// The networkpolicies resource.
pub fn networkpolicies() -> ResourceDef {
    ResourceDef::new(
        BuiltinStrategy::new::<NetworkPolicy>(info(
            "networking.k8s.io",
            "v1",
            "NetworkPolicy",
            "networkpolicies",
            true,
            &["netpol"],
            &[],
        ))
        .generation()
        .validate(|obj| {
            let mut errs = Vec::new();
            for (i, t) in array_at(obj, "spec.policyTypes").iter().enumerate() {
                let t = t.as_str().unwrap_or_default();
                if !matches!(t, "Ingress" | "Egress") {
                    errs.push(FieldError::not_supported(
                        &format!("spec.policyTypes[{i}]"),
                        t,
                        &["Ingress", "Egress"],
                    ));
                }
            }
            errs
        })
        .table(
            || {
                vec![
                    name_column(),
                    column("Pod-Selector", "string", "podSelector selects the pods to which this NetworkPolicy object applies. The array of rules is applied to any pods selected by this field. An empty selector matches all pods in the policy's namespace. Multiple network policies can select the same set of pods. In this case, the ingress rules for each are combined additively. This field is optional. If it is not specified, it defaults to an empty selector.", 0),
                    age_column(),
                ]
            },
            |obj| {
                vec![
                    name_cell(obj),
                    json!(format_label_selector(get(obj, "spec.podSelector"))),
                    age_cell(obj),
                ]
            },
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ingress_validation_and_row() {
        let def = ingresses();
        let ing = json!({"metadata": {"name": "web"}, "spec": {"ingressClassName": "nginx",
            "rules": [{"host": "a.example.com", "http": {"paths": [
                {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}],
            "tls": [{"hosts": ["a.example.com"]}]}});
        assert!(def.strategy.validate(&ing).is_empty());
        assert_eq!(
            def.strategy.table_row(&ing)[1..5],
            [
                json!("nginx"),
                json!("a.example.com"),
                json!(""),
                json!("80, 443")
            ]
        );
        let mut bad = ing.clone();
        bad["spec"]["rules"][0]["http"]["paths"][0]
            .as_object_mut()
            .unwrap()
            .remove("pathType");
        assert_eq!(
            def.strategy.validate(&bad)[0].to_string(),
            "spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified"
        );
    }

    #[test]
    fn netpol_and_class_rows() {
        let np = json!({"metadata": {"name": "deny"}, "spec": {"podSelector": {}}});
        assert_eq!(networkpolicies().strategy.table_row(&np)[1], "<none>");
        let ic =
            json!({"metadata": {"name": "nginx"}, "spec": {"controller": "k8s.io/ingress-nginx"}});
        assert_eq!(
            ingressclasses().strategy.table_row(&ic)[1..3],
            [json!("k8s.io/ingress-nginx"), json!("<none>")]
        );
    }
}
