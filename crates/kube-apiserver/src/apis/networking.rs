//! networking.k8s.io/v1: ingresses, ingressclasses, networkpolicies, ipaddresses and
//! servicecidrs (subresource `status`).

use std::net::IpAddr;

use apiserver::registry::FieldError;
use k8s_openapi::api::networking::v1::{
    IPAddress, Ingress, IngressClass, NetworkPolicy, ServiceCIDR,
};
use serde_json::{Value, json};

use super::ResourceDef;
use super::json::{array_at, get, str_at};
use super::strategy::{BuiltinStrategy, info};
use super::table::{age_cell, age_column, column, format_label_selector, name_cell, name_column};
use super::validation::immutable;

/// networking.k8s.io/v1 resources.
pub fn resources() -> Vec<ResourceDef> {
    vec![
        ingressclasses(),
        ingresses(),
        ipaddresses(),
        networkpolicies(),
        servicecidrs(),
    ]
}

/// The ipaddresses resource: the name is an IP address in canonical form, `spec.parentRef`
/// names what holds it (immutable).
pub fn ipaddresses() -> ResourceDef {
    ResourceDef::new(
        BuiltinStrategy::new::<IPAddress>(info(
            "networking.k8s.io",
            "v1",
            "IPAddress",
            "ipaddresses",
            false,
            &["ip"],
            &[],
        ))
        .name_rule(super::validation::NameRule::Any)
        .validate(validate_ip_address)
        .validate_update(|new, old| immutable(new, old, "spec.parentRef").into_iter().collect())
        .table(
            || {
                vec![
                    name_column(),
                    column("ParentRef", "string", super::docs::IP_PARENT_REF, 0),
                    age_column(),
                ]
            },
            |obj| vec![name_cell(obj), json!(parent_ref_cell(obj)), age_cell(obj)],
        ),
    )
}

/// Upstream's printed parent reference: `<resource>[.<group>][/<namespace>]/<name>`.
fn parent_ref_cell(obj: &Value) -> String {
    let Some(r) = get(obj, "spec.parentRef").filter(|r| r.is_object()) else {
        return "<none>".into();
    };
    let field = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or_default();
    let mut out = match field("group") {
        "" => field("resource").to_lowercase(),
        group => format!("{}.{group}", field("resource")).to_lowercase(),
    };
    if !field("namespace").is_empty() {
        out.push('/');
        out.push_str(field("namespace"));
    }
    out.push('/');
    out.push_str(field("name"));
    out
}

fn validate_ip_address(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let name = str_at(obj, "metadata.name").unwrap_or_default();
    if !name.is_empty() {
        match name.parse::<IpAddr>() {
            Err(_) => errs.push(FieldError::invalid(
                "metadata.name",
                name,
                "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            )),
            Ok(ip) if ip.to_string() != name => errs.push(FieldError::invalid(
                "metadata.name",
                name,
                &format!("must be in canonical form (\"{ip}\")"),
            )),
            Ok(_) => {}
        }
    }
    if get(obj, "spec.parentRef").is_none_or(Value::is_null) {
        errs.push(FieldError::required("spec.parentRef", ""));
    } else {
        for field in ["resource", "name"] {
            if str_at(obj, &format!("spec.parentRef.{field}")).is_none_or(str::is_empty) {
                errs.push(FieldError::required(&format!("spec.parentRef.{field}"), ""));
            }
        }
    }
    errs
}

/// The servicecidrs resource (subresource `status`).
pub fn servicecidrs() -> ResourceDef {
    let strategy = BuiltinStrategy::new::<ServiceCIDR>(info(
        "networking.k8s.io",
        "v1",
        "ServiceCIDR",
        "servicecidrs",
        false,
        &[],
        &[],
    ))
    .status()
    .validate(validate_service_cidr)
    .validate_update(|new, old| {
        // Upstream allows only adding the second IP family to a single-CIDR object.
        let (new_cidrs, old_cidrs) = (array_at(new, "spec.cidrs"), array_at(old, "spec.cidrs"));
        let grows = old_cidrs.len() == 1 && new_cidrs.len() == 2 && new_cidrs[0] == old_cidrs[0];
        if grows {
            return Vec::new();
        }
        immutable(new, old, "spec.cidrs").into_iter().collect()
    })
    .table(
        || {
            vec![
                name_column(),
                column("CIDRs", "string", super::docs::SERVICE_CIDR_CIDRS, 0),
                age_column(),
            ]
        },
        |obj| {
            let cidrs: Vec<&str> = array_at(obj, "spec.cidrs")
                .iter()
                .filter_map(Value::as_str)
                .collect();
            vec![name_cell(obj), json!(cidrs.join(",")), age_cell(obj)]
        },
    );
    ResourceDef::new(strategy).with(&["status"])
}

fn validate_service_cidr(obj: &Value) -> Vec<FieldError> {
    let cidrs = array_at(obj, "spec.cidrs");
    if cidrs.is_empty() {
        return vec![FieldError::required(
            "spec.cidrs",
            "at least one CIDR required",
        )];
    }
    if cidrs.len() > 2 {
        return vec![FieldError::invalid(
            "spec",
            Value::Array(cidrs.to_vec()),
            "may only hold up to 2 values",
        )];
    }
    let mut errs = Vec::new();
    let mut families = Vec::new();
    for (i, cidr) in cidrs.iter().enumerate() {
        let text = cidr.as_str().unwrap_or_default();
        match parse_cidr(text) {
            Some(v4) => families.push(v4),
            None => errs.push(FieldError::invalid(
                &format!("spec.cidrs[{i}]"),
                text,
                "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
            )),
        }
    }
    if families.len() == 2 && families[0] == families[1] {
        errs.push(FieldError::invalid(
            "spec.cidrs",
            Value::Array(cidrs.to_vec()),
            "may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64",
        ));
    }
    errs
}

/// Whether `text` is a CIDR, and if so whether it is IPv4.
fn parse_cidr(text: &str) -> Option<bool> {
    let (ip, bits) = text.split_once('/')?;
    let ip: IpAddr = ip.parse().ok()?;
    let bits: u8 = bits.parse().ok()?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    (bits <= max
        && !bits.to_string().is_empty()
        && text.split('/').nth(1) == Some(&bits.to_string()))
    .then_some(ip.is_ipv4())
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
    fn ip_address_names_are_canonical_ips() {
        let def = ipaddresses();
        let ip = json!({"metadata": {"name": "10.0.0.10"},
            "spec": {"parentRef": {"resource": "services", "namespace": "default", "name": "web"}}});
        assert!(def.strategy.validate(&ip).is_empty());
        assert_eq!(
            def.strategy.table_row(&ip)[1],
            json!("services/default/web")
        );
        let bad = json!({"metadata": {"name": "2001:db8:0::1"}, "spec": {"parentRef": {"resource": "services", "name": "x"}}});
        assert_eq!(
            def.strategy.validate(&bad)[0].to_string(),
            "metadata.name: Invalid value: \"2001:db8:0::1\": must be in canonical form (\"2001:db8::1\")"
        );
        let none = json!({"metadata": {"name": "10.0.0.1"}, "spec": {}});
        assert_eq!(
            def.strategy.validate(&none)[0].to_string(),
            "spec.parentRef: Required value"
        );
    }

    #[test]
    fn service_cidrs_one_per_family() {
        let def = servicecidrs();
        let ok = json!({"metadata": {"name": "kubernetes"}, "spec": {"cidrs": ["10.0.0.0/24", "fd00::/108"]}});
        assert!(def.strategy.validate(&ok).is_empty());
        assert_eq!(
            def.strategy.table_row(&ok)[1],
            json!("10.0.0.0/24,fd00::/108")
        );
        let two_v4 =
            json!({"metadata": {"name": "x"}, "spec": {"cidrs": ["10.0.0.0/24", "10.1.0.0/24"]}});
        assert!(
            def.strategy.validate(&two_v4)[0]
                .to_string()
                .contains("no more than one IP for each IP family")
        );
        let bad = json!({"metadata": {"name": "x"}, "spec": {"cidrs": ["10.0.0.0/33"]}});
        assert!(
            def.strategy.validate(&bad)[0]
                .to_string()
                .starts_with("spec.cidrs[0]: Invalid value")
        );
    }

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
