//! The default-class choice DefaultStorageClass and DefaultIngressClass share: of the classes
//! annotated as default, the newest wins, then the first by name.

use std::sync::Arc;

use serde_json::Value;

use crate::apis::json::{get, str_at};

/// The class whose annotation (any of `annotations`) is `"true"`, newest first; `None` when no
/// class is marked.
pub fn newest_default(classes: Vec<Arc<Value>>, annotations: &[&str]) -> Option<Arc<Value>> {
    let mut defaults: Vec<Arc<Value>> = classes
        .into_iter()
        .filter(|class| {
            let marked = get(class, "metadata.annotations");
            annotations
                .iter()
                .any(|a| marked.and_then(|m| m.get(*a)).and_then(Value::as_str) == Some("true"))
        })
        .collect();
    if defaults.len() > 1 {
        tracing::info!(
            count = defaults.len(),
            "several default classes; choosing the newest"
        );
    }
    defaults.sort_by(|a, b| {
        let created = |c: &Value| {
            str_at(c, "metadata.creationTimestamp")
                .unwrap_or_default()
                .to_string()
        };
        let name = |c: &Value| str_at(c, "metadata.name").unwrap_or_default().to_string();
        created(b)
            .cmp(&created(a))
            .then_with(|| name(a).cmp(&name(b)))
    });
    defaults.into_iter().next()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn class(name: &str, created: &str, default: bool) -> Arc<Value> {
        Arc::new(
            json!({"metadata": {"name": name, "creationTimestamp": created,
            "annotations": {"is-default": if default { "true" } else { "false" }}}}),
        )
    }

    #[test]
    fn the_newest_default_wins_then_the_first_name() {
        let classes = vec![
            class("old", "2026-01-01T00:00:00Z", true),
            class("b", "2026-02-01T00:00:00Z", true),
            class("a", "2026-02-01T00:00:00Z", true),
            class("newest", "2026-03-01T00:00:00Z", false),
        ];
        let chosen = newest_default(classes, &["is-default"]).unwrap();
        assert_eq!(chosen["metadata"]["name"], "a");
        assert!(
            newest_default(
                vec![class("x", "2026-01-01T00:00:00Z", false)],
                &["is-default"]
            )
            .is_none()
        );
    }
}
