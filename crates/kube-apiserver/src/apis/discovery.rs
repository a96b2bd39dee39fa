//! discovery.k8s.io/v1: endpointslices.

use apiserver::registry::FieldError;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use serde_json::{Value, json};

use super::ResourceDef;
use super::json::{array_at, str_at};
use super::strategy::{BuiltinStrategy, info};
use super::table::{age_cell, age_column, column, name_cell, name_column};

/// discovery.k8s.io/v1 resources.
pub fn resources() -> Vec<ResourceDef> {
    vec![endpointslices()]
}

const ADDRESS_TYPES: [&str; 3] = ["FQDN", "IPv4", "IPv6"];

/// The endpointslices resource.
pub fn endpointslices() -> ResourceDef {
    ResourceDef::new(
        BuiltinStrategy::new::<EndpointSlice>(info(
            "discovery.k8s.io",
            "v1",
            "EndpointSlice",
            "endpointslices",
            true,
            &[],
            &[],
        ))
.create_on_update()
        .generation()
        .validate(|obj| match str_at(obj, "addressType") {
            None | Some("") => vec![FieldError::required("addressType", "")],
            Some(t) if !ADDRESS_TYPES.contains(&t) => {
                vec![FieldError::not_supported("addressType", t, &ADDRESS_TYPES)]
            }
            Some(_) => Vec::new(),
        })
        .validate_update(|new, old| {
            super::validation::immutable(new, old, "addressType")
                .into_iter()
                .collect()
        })
        .table(
            || {
                vec![
                    name_column(),
                    column("AddressType", "string", "addressType specifies the type of address carried by this EndpointSlice. All addresses in this slice must be the same type. This field is immutable after creation.", 0),
                    column("Ports", "string", "ports specifies the list of network ports exposed by each endpoint in this slice.", 0),
                    column("Endpoints", "string", "endpoints is a list of unique endpoints in this slice.", 0),
                    age_column(),
                ]
            },
            |obj| {
                vec![
                    name_cell(obj),
                    json!(str_at(obj, "addressType").unwrap_or_default()),
                    json!(format_ports(obj)),
                    json!(format_addresses(obj)),
                    age_cell(obj),
                ]
            },
        ),
    )
}

fn format_ports(obj: &Value) -> String {
    let ports = array_at(obj, "ports");
    if ports.is_empty() {
        return "<unset>".into();
    }
    let shown: Vec<String> = ports
        .iter()
        .take(3)
        .map(|p| match p.get("port").and_then(Value::as_i64) {
            Some(port) => port.to_string(),
            None => "<unset>".into(),
        })
        .collect();
    let mut out = shown.join(",");
    if ports.len() > 3 {
        out.push_str(&format!(" + {} more...", ports.len() - 3));
    }
    out
}

fn format_addresses(obj: &Value) -> String {
    let addresses: Vec<&str> = array_at(obj, "endpoints")
        .iter()
        .flat_map(|e| array_at(e, "addresses"))
        .filter_map(Value::as_str)
        .collect();
    if addresses.is_empty() {
        return "<unset>".into();
    }
    let mut out = addresses
        .iter()
        .take(3)
        .copied()
        .collect::<Vec<_>>()
        .join(",");
    if addresses.len() > 3 {
        out.push_str(&format!(" + {} more...", addresses.len() - 3));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices() {
        let def = endpointslices();
        let slice = json!({"metadata": {"name": "s"}, "addressType": "IPv4",
            "ports": [{"port": 80}], "endpoints": [{"addresses": ["10.0.0.1"]}]});
        assert!(def.strategy.validate(&slice).is_empty());
        assert_eq!(
            def.strategy.table_row(&slice)[1..4],
            [json!("IPv4"), json!("80"), json!("10.0.0.1")]
        );
        let bad = json!({"metadata": {"name": "s"}});
        assert_eq!(
            def.strategy.validate(&bad)[0].to_string(),
            "addressType: Required value"
        );
    }
}
