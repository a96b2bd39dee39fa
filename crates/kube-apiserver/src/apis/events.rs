//! events.k8s.io/v1: events in the newer schema (`regarding`, `note`, `reportingController`).
//!
//! Upstream serves these from the same storage as core/v1 events; here they are a resource of
//! their own (a deviation the server can remove by sharing the store and converting).

use apiserver::registry::{FieldError, SelectableFields, TableColumn};
use k8s_openapi::api::events::v1::Event;
use serde_json::{Value, json};

use super::ResourceDef;
use super::json::{get, i64_at, str_at};
use super::strategy::{BuiltinStrategy, info};
use super::table::{NAME_DESCRIPTION, column, translate_timestamp_since};

/// events.k8s.io/v1 resources.
pub fn resources() -> Vec<ResourceDef> {
    vec![events()]
}

/// The events resource of events.k8s.io.
pub fn events() -> ResourceDef {
    ResourceDef::new(
        BuiltinStrategy::new::<Event>(info(
            "events.k8s.io",
            "v1",
            "Event",
            "events",
            true,
            &["ev"],
            &[],
        ))
        .create_on_update()
        .validate(|obj| {
            let mut errs = Vec::new();
            if str_at(obj, "eventTime").is_none_or(str::is_empty) {
                errs.push(FieldError::required("eventTime", ""));
            }
            for field in [
                "reportingController",
                "reportingInstance",
                "action",
                "reason",
            ] {
                if str_at(obj, field).is_none_or(str::is_empty) {
                    errs.push(FieldError::required(field, ""));
                }
            }
            if let Some(t) = str_at(obj, "type")
                && !matches!(t, "Normal" | "Warning")
            {
                errs.push(FieldError::not_supported("type", t, &["Normal", "Warning"]));
            }
            errs
        })
        .selectable(|obj| {
            let mut fields = SelectableFields::new();
            for key in [
                "kind",
                "namespace",
                "name",
                "uid",
                "apiVersion",
                "resourceVersion",
                "fieldPath",
            ] {
                let value = str_at(obj, &format!("regarding.{key}")).unwrap_or_default();
                fields.insert(format!("regarding.{key}"), value.into());
                // field selectors written against core/v1 events work here too.
                fields.insert(format!("involvedObject.{key}"), value.into());
            }
            for key in ["reason", "type", "reportingController"] {
                fields.insert(key.into(), str_at(obj, key).unwrap_or_default().into());
            }
            fields
        })
        .table(columns, row),
    )
}

fn columns() -> Vec<TableColumn> {
    vec![
        column(
            "Last Seen",
            "string",
            "The time at which the most recent occurrence of this event was recorded.",
            0,
        ),
        column(
            "Type",
            "string",
            "Type of this event (Normal, Warning), new types could be added in the future",
            0,
        ),
        column(
            "Reason",
            "string",
            "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.",
            0,
        ),
        column(
            "Object",
            "string",
            "The object that this event is about.",
            0,
        ),
        column(
            "Subobject",
            "string",
            "The field of the object this event is about.",
            1,
        ),
        column("Source", "string", "The component reporting this event.", 1),
        column(
            "Message",
            "string",
            "A human-readable description of the status of this operation.",
            0,
        ),
        column(
            "First Seen",
            "string",
            "The time at which the event was first recorded.",
            1,
        ),
        column(
            "Count",
            "string",
            "The number of times this event has occurred.",
            1,
        ),
        apiserver::registry::TableColumn::new("Name", "string", "name", NAME_DESCRIPTION, 1),
    ]
}

fn non_empty<'a>(obj: &'a Value, path: &str) -> Option<&'a str> {
    str_at(obj, path).filter(|s| !s.is_empty())
}

fn row(obj: &Value) -> Vec<Value> {
    let first = non_empty(obj, "deprecatedFirstTimestamp").or_else(|| non_empty(obj, "eventTime"));
    let mut last =
        non_empty(obj, "deprecatedLastTimestamp").or_else(|| non_empty(obj, "eventTime"));
    let mut count = i64_at(obj, "deprecatedCount").unwrap_or(0);
    if get(obj, "series").is_some_and(|s| !s.is_null()) {
        last = non_empty(obj, "series.lastObservedTime");
        count = i64_at(obj, "series.count").unwrap_or(0);
    } else if count == 0 {
        count = 1;
    }
    let kind = str_at(obj, "regarding.kind")
        .unwrap_or_default()
        .to_lowercase();
    let target = match non_empty(obj, "regarding.name") {
        Some(name) => format!("{kind}/{name}"),
        None => kind,
    };
    let component = non_empty(obj, "deprecatedSource.component")
        .or_else(|| non_empty(obj, "reportingController"));
    let instance =
        non_empty(obj, "deprecatedSource.host").or_else(|| non_empty(obj, "reportingInstance"));
    let source = match (component, instance) {
        (None, _) => "<unknown>".to_string(),
        (Some(c), None) => c.to_string(),
        (Some(c), Some(i)) => format!("{c}, {i}"),
    };
    vec![
        json!(translate_timestamp_since(last)),
        json!(str_at(obj, "type").unwrap_or_default()),
        json!(str_at(obj, "reason").unwrap_or_default()),
        json!(target),
        json!(str_at(obj, "regarding.fieldPath").unwrap_or_default()),
        json!(source),
        json!(str_at(obj, "note").unwrap_or_default().trim()),
        json!(translate_timestamp_since(first)),
        json!(count),
        super::table::name_cell(obj),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_style_events() {
        let def = events();
        let ev = json!({"metadata": {"name": "e"}, "eventTime": "2024-01-01T00:00:00.000000Z",
            "reportingController": "c", "reportingInstance": "i", "action": "A", "reason": "R",
            "type": "Normal", "regarding": {"kind": "Pod", "name": "p"}, "note": "n"});
        assert!(
            def.strategy.validate(&ev).is_empty(),
            "{:?}",
            def.strategy.validate(&ev)
        );
        let row = def.strategy.table_row(&ev);
        assert_eq!(
            row[3..7],
            [json!("pod/p"), json!(""), json!("c, i"), json!("n")]
        );
        assert_eq!(def.strategy.selectable_fields(&ev)["regarding.name"], "p");
    }
}
