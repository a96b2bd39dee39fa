//! Services: defaults (`type`, `sessionAffinity`, port `protocol` and `targetPort`), port
//! validation, the immutable cluster IP, and kubectl's columns.
//!
//! Allocating `spec.clusterIP` from `--service-cluster-ip-range` is the server's job (it needs
//! the allocator); this strategy keeps an allocated IP across updates that omit it.

use std::collections::BTreeSet;

use apiserver::registry::{FieldError, TableColumn};
use k8s_openapi::api::core::v1::Service;
use serde_json::{Value, json};

use crate::apis::ResourceDef;
use crate::apis::json::{array_at, default_key, get, object_at, str_at};
use crate::apis::strategy::{BuiltinStrategy, info};
use crate::apis::table::{age_cell, age_column, column, format_labels, name_cell, name_column};
use crate::apis::validation::{NameRule, dns1123_label};

const TYPES: [&str; 4] = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];

/// The services resource (subresource `status`).
pub fn services() -> ResourceDef {
    let strategy = BuiltinStrategy::new::<Service>(info(
        "",
        "v1",
        "Service",
        "services",
        true,
        &["svc"],
        &["all"],
    ))
    .name_rule(NameRule::Dns1035Label)
    .status_from(|| json!({"loadBalancer": {}}))
    .defaults(default_service)
    .prepare_update(keep_allocated)
    .validate(validate)
    .validate_update(validate_update)
    .table(columns, row);
    ResourceDef::new(strategy).with(&["status"])
}

fn default_service(obj: &mut Value) {
    let Some(spec) = object_at(obj, "spec") else {
        return;
    };
    default_key(spec, "type", json!("ClusterIP"));
    default_key(spec, "sessionAffinity", json!("None"));
    let type_ = spec
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if type_ != "ExternalName" {
        default_key(spec, "internalTrafficPolicy", json!("Cluster"));
    }
    if matches!(type_.as_str(), "NodePort" | "LoadBalancer") {
        default_key(spec, "externalTrafficPolicy", json!("Cluster"));
    }
    if type_ == "LoadBalancer" {
        default_key(spec, "allocateLoadBalancerNodePorts", json!(true));
    }
    if let Some(Value::Array(ports)) = spec.get_mut("ports") {
        for port in ports.iter_mut().filter_map(Value::as_object_mut) {
            default_key(port, "protocol", json!("TCP"));
            if let Some(number) = port.get("port").cloned() {
                default_key(port, "targetPort", number);
            }
        }
    }
}

/// An update that omits the allocated cluster IP keeps it (upstream's REST layer patches
/// allocated values back in before validating).
fn keep_allocated(new: &mut Value, old: &Value) {
    let same_type = str_at(new, "spec.type") == str_at(old, "spec.type");
    let Some(spec) = object_at(new, "spec") else {
        return;
    };
    for field in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
        if let Some(value) = old.get("spec").and_then(|s| s.get(field)) {
            default_key(spec, field, value.clone());
        }
    }
    if same_type && let Some(Value::Array(ports)) = spec.get_mut("ports") {
        // node ports survive an update that omits them (matched by port number).
        for port in ports.iter_mut().filter_map(Value::as_object_mut) {
            let matching = array_at(old, "spec.ports").iter().find(|p| {
                p.get("port") == port.get("port") && p.get("protocol") == port.get("protocol")
            });
            if let Some(node_port) = matching.and_then(|p| p.get("nodePort")) {
                default_key(port, "nodePort", node_port.clone());
            }
        }
    }
}

fn validate(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let type_ = str_at(obj, "spec.type").unwrap_or("ClusterIP");
    if !TYPES.contains(&type_) {
        errs.push(FieldError::not_supported("spec.type", type_, &TYPES));
    }
    let ports = array_at(obj, "spec.ports");
    let headless = str_at(obj, "spec.clusterIP") == Some("None");
    if type_ == "ExternalName" {
        if str_at(obj, "spec.externalName").is_none_or(str::is_empty) {
            errs.push(FieldError::required("spec.externalName", ""));
        }
    } else if ports.is_empty() && !headless {
        errs.push(FieldError::required("spec.ports", ""));
    }
    let mut names = BTreeSet::new();
    for (i, port) in ports.iter().enumerate() {
        let at = format!("spec.ports[{i}]");
        let name = str_at(port, "name").unwrap_or_default();
        if ports.len() > 1 && name.is_empty() {
            errs.push(FieldError::required(&format!("{at}.name"), ""));
        } else if !name.is_empty() {
            for msg in dns1123_label(name) {
                errs.push(FieldError::invalid(&format!("{at}.name"), name, &msg));
            }
            if !names.insert(name) {
                errs.push(FieldError::duplicate(&format!("{at}.name"), name));
            }
        }
        let number = port.get("port").and_then(Value::as_i64).unwrap_or(0);
        if !(1..=65535).contains(&number) {
            errs.push(FieldError::invalid(
                &format!("{at}.port"),
                number,
                "must be between 1 and 65535, inclusive",
            ));
        }
        let protocol = str_at(port, "protocol").unwrap_or("TCP");
        if !matches!(protocol, "TCP" | "UDP" | "SCTP") {
            errs.push(FieldError::not_supported(
                &format!("{at}.protocol"),
                protocol,
                &["SCTP", "TCP", "UDP"],
            ));
        }
        match port.get("targetPort") {
            Some(Value::Number(n)) => {
                let n = n.as_i64().unwrap_or(0);
                if !(1..=65535).contains(&n) {
                    errs.push(FieldError::invalid(
                        &format!("{at}.targetPort"),
                        n,
                        "must be between 1 and 65535, inclusive",
                    ));
                }
            }
            Some(Value::String(s)) if s.is_empty() || s.len() > 15 => {
                errs.push(FieldError::invalid(
                    &format!("{at}.targetPort"),
                    s.as_str(),
                    "must contain at least one letter (a-z) and be no more than 15 characters",
                ));
            }
            _ => {}
        }
        if let Some(node_port) = port.get("nodePort").and_then(Value::as_i64)
            && node_port != 0
            && !matches!(type_, "NodePort" | "LoadBalancer")
        {
            errs.push(FieldError::forbidden(
                &format!("{at}.nodePort"),
                "may not be used when `type` is 'ClusterIP'",
            ));
        }
    }
    if let Some(affinity) = str_at(obj, "spec.sessionAffinity")
        && !matches!(affinity, "None" | "ClientIP")
    {
        errs.push(FieldError::not_supported(
            "spec.sessionAffinity",
            affinity,
            &["ClientIP", "None"],
        ));
    }
    errs
}

fn validate_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let old_ip = str_at(old, "spec.clusterIP").unwrap_or_default();
    let new_ip = str_at(new, "spec.clusterIP").unwrap_or_default();
    // ExternalName services have no cluster IP; changing to or from them reallocates.
    let type_change = (str_at(old, "spec.type") == Some("ExternalName"))
        != (str_at(new, "spec.type") == Some("ExternalName"));
    if !old_ip.is_empty() && old_ip != new_ip && !type_change {
        errs.push(FieldError::invalid(
            "spec.clusterIPs[0]",
            new_ip,
            "may not change once set",
        ));
    }
    errs
}

fn columns() -> Vec<TableColumn> {
    vec![
        name_column(),
        column(
            "Type",
            "string",
            "type determines how the Service is exposed. Defaults to ClusterIP. Valid options are ExternalName, ClusterIP, NodePort, and LoadBalancer.",
            0,
        ),
        column(
            "Cluster-IP",
            "string",
            "clusterIP is the IP address of the service and is usually assigned randomly.",
            0,
        ),
        column(
            "External-IP",
            "string",
            "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.",
            0,
        ),
        column(
            "Port(s)",
            "string",
            "The list of ports that are exposed by this service. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies",
            0,
        ),
        age_column(),
        column(
            "Selector",
            "string",
            "Route service traffic to pods with label keys and values matching this selector. If empty or not present, the service is assumed to have an external process managing its endpoints, which Kubernetes will not modify. Only applies to types ClusterIP, NodePort, and LoadBalancer. Ignored if type is ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/",
            1,
        ),
    ]
}

fn external_ip(obj: &Value) -> String {
    let external: Vec<&str> = array_at(obj, "spec.externalIPs")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    match str_at(obj, "spec.type").unwrap_or("ClusterIP") {
        "ClusterIP" | "NodePort" => {
            if external.is_empty() {
                "<none>".into()
            } else {
                external.join(",")
            }
        }
        "LoadBalancer" => {
            let mut ips: Vec<&str> = array_at(obj, "status.loadBalancer.ingress")
                .iter()
                .filter_map(|i| {
                    i.get("ip")
                        .or_else(|| i.get("hostname"))
                        .and_then(Value::as_str)
                })
                .collect();
            ips.extend(external);
            if ips.is_empty() {
                "<pending>".into()
            } else {
                ips.join(",")
            }
        }
        "ExternalName" => str_at(obj, "spec.externalName")
            .unwrap_or_default()
            .to_string(),
        _ => "<unknown>".into(),
    }
}

fn ports_cell(obj: &Value) -> String {
    let ports: Vec<String> = array_at(obj, "spec.ports")
        .iter()
        .map(|p| {
            let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
            let protocol = p.get("protocol").and_then(Value::as_str).unwrap_or("TCP");
            match p.get("nodePort").and_then(Value::as_i64) {
                Some(node) if node != 0 => format!("{port}:{node}/{protocol}"),
                _ => format!("{port}/{protocol}"),
            }
        })
        .collect();
    if ports.is_empty() {
        "<none>".into()
    } else {
        ports.join(",")
    }
}

fn row(obj: &Value) -> Vec<Value> {
    let cluster_ip = str_at(obj, "spec.clusterIP").filter(|ip| !ip.is_empty());
    vec![
        name_cell(obj),
        json!(str_at(obj, "spec.type").unwrap_or_default()),
        json!(cluster_ip.unwrap_or("<none>")),
        json!(external_ip(obj)),
        json!(ports_cell(obj)),
        age_cell(obj),
        json!(format_labels(get(obj, "spec.selector"))),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(errs: Vec<FieldError>) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn defaults_as_upstream() {
        let def = services();
        let mut svc = json!({"metadata": {"name": "web"},
                             "spec": {"ports": [{"port": 80}], "selector": {"app": "web"}}});
        def.strategy.prepare_for_create(&mut svc);
        assert_eq!(svc["spec"]["type"], "ClusterIP");
        assert_eq!(svc["spec"]["sessionAffinity"], "None");
        assert_eq!(
            svc["spec"]["ports"][0],
            json!({"port": 80, "protocol": "TCP", "targetPort": 80})
        );
        assert_eq!(svc["status"], json!({"loadBalancer": {}}));
        assert!(def.strategy.validate(&svc).is_empty());
    }

    #[test]
    fn port_validation() {
        let def = services();
        let svc = json!({"metadata": {"name": "web"}, "spec": {"ports": [
            {"port": 0, "protocol": "TCP"},
            {"name": "a", "port": 80, "protocol": "HTTP"},
            {"name": "a", "port": 81}]}});
        assert_eq!(
            strings(def.strategy.validate(&svc)),
            vec![
                "spec.ports[0].name: Required value",
                "spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
                "spec.ports[1].protocol: Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
                "spec.ports[2].name: Duplicate value: \"a\"",
            ]
        );
        let none = json!({"metadata": {"name": "web"}, "spec": {"type": "ClusterIP"}});
        assert_eq!(
            strings(def.strategy.validate(&none)),
            vec!["spec.ports: Required value"]
        );
        let bad_name = json!({"metadata": {"name": "1web"}, "spec": {"ports": [{"port": 1}]}});
        assert!(strings(def.strategy.validate(&bad_name))[0].contains("a DNS-1035 label"));
    }

    #[test]
    fn cluster_ip_kept_and_immutable() {
        let def = services();
        let old = json!({"metadata": {"name": "web"},
                         "spec": {"clusterIP": "10.0.0.10", "clusterIPs": ["10.0.0.10"],
                                  "ports": [{"port": 80, "protocol": "TCP"}]}});
        let mut new = json!({"metadata": {"name": "web"}, "spec": {"ports": [{"port": 80}]}});
        def.strategy.prepare_for_update(&mut new, &old);
        assert_eq!(new["spec"]["clusterIP"], "10.0.0.10");
        assert!(def.strategy.validate_update(&new, &old).is_empty());
        new["spec"]["clusterIP"] = json!("10.0.0.11");
        assert_eq!(
            strings(def.strategy.validate_update(&new, &old)),
            vec!["spec.clusterIPs[0]: Invalid value: \"10.0.0.11\": may not change once set"]
        );
    }

    #[test]
    fn table_row_as_kubectl() {
        let def = services();
        let svc = json!({"metadata": {"name": "web"},
            "spec": {"type": "NodePort", "clusterIP": "10.0.0.1",
                     "ports": [{"port": 80, "protocol": "TCP", "nodePort": 30080},
                               {"port": 53, "protocol": "UDP"}],
                     "selector": {"app": "web"}}});
        let row = def.strategy.table_row(&svc);
        assert_eq!(
            row.iter()
                .filter(|c| c.is_string())
                .map(|c| c.as_str().unwrap_or(""))
                .collect::<Vec<_>>(),
            vec![
                "web",
                "NodePort",
                "10.0.0.1",
                "<none>",
                "80:30080/TCP,53/UDP",
                "<unknown>",
                "app=web"
            ]
        );
        let names: Vec<String> = def
            .strategy
            .table_columns()
            .into_iter()
            .map(|c| c.name)
            .collect();
        assert_eq!(
            names,
            vec![
                "Name",
                "Type",
                "Cluster-IP",
                "External-IP",
                "Port(s)",
                "Age",
                "Selector"
            ]
        );
        let lb = json!({"metadata": {"name": "x"}, "spec": {"type": "LoadBalancer"}});
        assert_eq!(def.strategy.table_row(&lb)[3], "<pending>");
    }
}
