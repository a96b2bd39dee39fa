//! Table printing helpers (upstream `pkg/printers/internalversion`): column definitions and
//! the server-side `Age` cells (`translateTimestampSince`).

use apiserver::registry::TableColumn;
use apiserver::util::duration::human_duration;
use serde_json::Value;

use super::json::{array_at, str_at};

/// `metav1.ObjectMeta`'s description of `name`, which upstream uses for every `Name` column.
pub const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";

/// `metav1.ObjectMeta`'s description of `creationTimestamp`, used for every `Age` column.
pub const AGE_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// The `Name` column.
pub fn name_column() -> TableColumn {
    TableColumn::new("Name", "string", "name", NAME_DESCRIPTION, 0)
}

/// The `Age` column.
pub fn age_column() -> TableColumn {
    TableColumn::new("Age", "string", "", AGE_DESCRIPTION, 0)
}

/// A column of type `type_` at `priority` (0 default, 1 for `-o wide`).
pub fn column(name: &str, type_: &str, description: &str, priority: i32) -> TableColumn {
    TableColumn::new(name, type_, "", description, priority)
}

/// The `Containers` and `Images` wide columns of workload resources.
pub fn containers_images_columns() -> [TableColumn; 2] {
    [
        column(
            "Containers",
            "string",
            "Names of each container in the template.",
            1,
        ),
        column(
            "Images",
            "string",
            "Images referenced by each container in the template.",
            1,
        ),
    ]
}

/// The object's name cell.
pub fn name_cell(obj: &Value) -> Value {
    Value::String(str_at(obj, "metadata.name").unwrap_or_default().to_string())
}

/// The object's `Age` cell.
pub fn age_cell(obj: &Value) -> Value {
    Value::String(translate_timestamp_since(str_at(
        obj,
        "metadata.creationTimestamp",
    )))
}

/// Upstream `translateTimestampSince`: the human duration since an RFC 3339 timestamp, or
/// `<unknown>` without one.
pub fn translate_timestamp_since(timestamp: Option<&str>) -> String {
    let Some(ts) = timestamp.and_then(|t| t.parse::<jiff::Timestamp>().ok()) else {
        return "<unknown>".into();
    };
    let since = jiff::Timestamp::now().as_second() - ts.as_second();
    human_duration(since)
}

/// The human duration between two RFC 3339 timestamps (`end - start`).
pub fn duration_between(start: &str, end: &str) -> Option<String> {
    let start = start.parse::<jiff::Timestamp>().ok()?;
    let end = end.parse::<jiff::Timestamp>().ok()?;
    Some(human_duration(end.as_second() - start.as_second()))
}

/// The container names and images of a pod spec, comma-joined (the `Containers` and `Images`
/// cells).
pub fn containers_images_cells(pod_spec: Option<&Value>) -> [Value; 2] {
    let containers = pod_spec.map_or(&[][..], |spec| array_at(spec, "containers"));
    let join = |field: &str| {
        containers
            .iter()
            .map(|c| c.get(field).and_then(Value::as_str).unwrap_or_default())
            .collect::<Vec<_>>()
            .join(",")
    };
    [Value::String(join("name")), Value::String(join("image"))]
}

/// Upstream `metav1.FormatLabelSelector`: `a=b,c in (d,e)`, `<none>` when empty.
pub fn format_label_selector(selector: Option<&Value>) -> String {
    let Some(selector) = selector.filter(|s| !s.is_null()) else {
        return "<none>".into();
    };
    let mut parts = Vec::new();
    if let Some(Value::Object(labels)) = selector.get("matchLabels") {
        for (k, v) in labels {
            parts.push(format!("{k}={}", v.as_str().unwrap_or_default()));
        }
    }
    for expr in array_at(selector, "matchExpressions") {
        let key = expr.get("key").and_then(Value::as_str).unwrap_or_default();
        let values: Vec<&str> = array_at(expr, "values")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let op = expr
            .get("operator")
            .and_then(Value::as_str)
            .unwrap_or_default();
        parts.push(match op {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            _ => format!("{key} {op} ({})", values.join(",")),
        });
    }
    if parts.is_empty() {
        "<none>".into()
    } else {
        parts.join(",")
    }
}

/// A plain `map[string]string` selector as upstream's `labels.FormatLabels` prints it.
pub fn format_labels(map: Option<&Value>) -> String {
    match map {
        Some(Value::Object(labels)) if !labels.is_empty() => labels
            .iter()
            .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
            .collect::<Vec<_>>()
            .join(","),
        _ => "<none>".into(),
    }
}

/// An integer cell (0 when absent, as Go's zero value prints).
pub fn int_cell(obj: &Value, path: &str) -> Value {
    Value::from(super::json::i64_at(obj, path).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn human_durations_as_upstream() {
        for (secs, want) in [
            (-2, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (119, "119s"),
            (120, "2m"),
            (150, "2m30s"),
            (600, "10m"),
            (3 * 3600 - 1, "179m"),
            (3 * 3600, "3h"),
            (3 * 3600 + 4 * 60, "3h4m"),
            (8 * 3600, "8h"),
            (47 * 3600, "47h"),
            (48 * 3600, "2d"),
            (5 * 86400 + 2 * 3600, "5d2h"),
            (8 * 86400, "8d"),
            (2 * 365 * 86400, "2y"),
            (2 * 365 * 86400 + 3 * 86400, "2y3d"),
            (9 * 365 * 86400, "9y"),
        ] {
            assert_eq!(human_duration(secs), want, "{secs}");
        }
    }

    #[test]
    fn age_of_object() {
        let ts = (jiff::Timestamp::now() - jiff::SignedDuration::from_secs(300)).to_string();
        let age = age_cell(&json!({"metadata": {"creationTimestamp": ts}}));
        // a slow machine may tick over a second.
        assert!(age == json!("5m") || age == json!("5m1s"), "{age}");
        assert_eq!(age_cell(&json!({})), json!("<unknown>"));
    }

    #[test]
    fn selectors_print_as_upstream() {
        let sel = json!({"matchLabels": {"app": "x"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]},
                                 {"key": "k", "operator": "DoesNotExist"}]});
        assert_eq!(format_label_selector(Some(&sel)), "app=x,tier in (a,b),!k");
        assert_eq!(format_label_selector(None), "<none>");
    }
}
