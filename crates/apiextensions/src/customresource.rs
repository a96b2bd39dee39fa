//! Custom resources of one served version: their strategy (scope, prune → default → validate
//! through the compiled schema, the status subresource, generation, printer columns, no
//! strategic merge patch) and the `status` and `scale` subresource storages.

use std::sync::Arc;

use apiserver::registry::rest::{
    BoxFuture, GetOptions, RequestContext, RestStorage, UpdateFunc, UpdateOptions,
};
use apiserver::registry::store::{StatusStore, Store};
use apiserver::registry::{FieldError, ResourceInfo, Strategy, TableColumn, invalid};
use apiserver::status::ApiError;
use serde_json::{Value, json};

use crate::jsonpath::JsonPath;
use crate::seams::CustomResourceSchema;

/// An `additionalPrinterColumns` entry, parsed.
#[derive(Clone, Debug)]
pub struct PrinterColumn {
    /// The table column.
    pub column: TableColumn,
    /// Where its value is.
    pub path: JsonPath,
}

/// The printer columns of a version: `Name`, then its `additionalPrinterColumns` (or `Age`
/// when it has none, as upstream).
pub fn printer_columns(version: &Value) -> Vec<PrinterColumn> {
    let declared = version
        .get("additionalPrinterColumns")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let declared = if declared.is_empty() {
        vec![json!({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"})]
    } else {
        declared
    };
    declared
        .iter()
        .filter_map(|c| {
            let s = |f: &str| c.get(f).and_then(Value::as_str).unwrap_or_default();
            let path = JsonPath::parse(s("jsonPath")).ok()?;
            let description = match s("description") {
                "" => format!(
                    "Custom resource definition column (in JSONPath format): {}",
                    s("jsonPath")
                ),
                d => d.to_string(),
            };
            let priority = c.get("priority").and_then(Value::as_i64).unwrap_or(0);
            Some(PrinterColumn {
                column: TableColumn::new(
                    s("name"),
                    s("type"),
                    s("format"),
                    &description,
                    i32::try_from(priority).unwrap_or(0),
                ),
                path,
            })
        })
        .collect()
}

/// A cell as upstream's `cellForJSONValue` types it (`None` → null); `date` cells are ages
/// (`5s`, `3m`) as of now.
fn cell(type_: &str, value: &Value) -> Value {
    cell_at(type_, value, jiff::Timestamp::now())
}

/// [`cell`] with `date` ages measured at `now`.
fn cell_at(type_: &str, value: &Value, now: jiff::Timestamp) -> Value {
    match (type_, value) {
        ("integer", Value::Number(n)) => n
            .as_i64()
            .or_else(|| n.as_f64().map(|f| f as i64))
            .map_or(Value::Null, |i| json!(i)),
        ("number", Value::Number(n)) => n.as_f64().map_or(Value::Null, |f| json!(f)),
        ("boolean", Value::Bool(b)) => json!(b),
        ("date", Value::String(s)) => json!(apiserver::util::gotime::human_age(s, now)),
        ("string", Value::String(s)) => json!(s),
        // client-go's jsonpath printer renders other values as JSON.
        ("string", other) if !other.is_null() => json!(other.to_string()),
        _ => Value::Null,
    }
}

/// Scale subresource paths (`spec.versions[i].subresources.scale`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScalePaths {
    /// `specReplicasPath`, e.g. `.spec.replicas`.
    pub spec_replicas: String,
    /// `statusReplicasPath`.
    pub status_replicas: String,
    /// `labelSelectorPath` (optional).
    pub label_selector: String,
}

impl ScalePaths {
    /// The scale paths of a version, if it has the subresource.
    pub fn of(version: &Value) -> Option<ScalePaths> {
        let scale = version.pointer("/subresources/scale")?;
        let s = |f: &str| {
            scale
                .get(f)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        Some(ScalePaths {
            spec_replicas: s("specReplicasPath"),
            status_replicas: s("statusReplicasPath"),
            label_selector: s("labelSelectorPath"),
        })
    }
}

/// The strategy of one version of a custom resource.
pub struct CustomResourceStrategy {
    info: ResourceInfo,
    schema: Arc<dyn CustomResourceSchema>,
    status_subresource: bool,
    columns: Vec<PrinterColumn>,
    patch_schema: Option<(Arc<Value>, String)>,
}

impl CustomResourceStrategy {
    /// A strategy for `info` validated by `schema`, with the version's printer columns and
    /// status subresource; `patch_schema` is the Swagger document and definition name
    /// server-side apply reads list types from.
    pub fn new(
        info: ResourceInfo,
        schema: Arc<dyn CustomResourceSchema>,
        version: &Value,
        patch_schema: Option<(Arc<Value>, String)>,
    ) -> Self {
        CustomResourceStrategy {
            info,
            schema,
            status_subresource: version.pointer("/subresources/status").is_some(),
            columns: printer_columns(version),
            patch_schema,
        }
    }

    /// The compiled schema.
    pub fn schema(&self) -> &Arc<dyn CustomResourceSchema> {
        &self.schema
    }

    fn prune_and_default(&self, obj: &mut Value) {
        self.schema.prune(obj);
        self.schema.apply_defaults(obj);
    }
}

impl Strategy for CustomResourceStrategy {
    fn info(&self) -> &ResourceInfo {
        &self.info
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        if self.status_subresource
            && let Value::Object(map) = obj
        {
            map.remove("status");
        }
        self.prune_and_default(obj);
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        if self.status_subresource
            && let Value::Object(map) = new
        {
            match old.get("status") {
                Some(status) => map.insert("status".into(), status.clone()),
                None => map.remove("status"),
            };
        }
        self.prune_and_default(new);
        // Without a status subresource, status is part of what the generation tracks (the
        // store compares everything else).
        if !self.status_subresource && new.get("status") != old.get("status") {
            let next = old
                .pointer("/metadata/generation")
                .and_then(Value::as_i64)
                .unwrap_or(0)
                + 1;
            if let Some(meta) = new.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.insert("generation".into(), json!(next));
            }
        }
    }

    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        self.schema.validate(obj)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        self.schema.validate_update(new, old)
    }

    fn drop_unknown_fields(&self, obj: &mut Value) -> Vec<String> {
        self.schema.prune(obj)
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn table_columns(&self) -> Vec<TableColumn> {
        let mut columns = vec![TableColumn::new(
            "Name",
            "string",
            "name",
            "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names",
            0,
        )];
        columns.extend(self.columns.iter().map(|c| c.column.clone()));
        columns
    }

    fn table_row(&self, obj: &Value) -> Vec<Value> {
        let mut row = vec![
            obj.pointer("/metadata/name")
                .cloned()
                .unwrap_or_else(|| json!("")),
        ];
        for c in &self.columns {
            let found = c.path.find(obj);
            row.push(
                found
                    .first()
                    .map_or(Value::Null, |v| cell(&c.column.type_, v)),
            );
        }
        row
    }

    fn patch_schema(&self) -> Option<(Arc<Value>, String)> {
        self.patch_schema.clone()
    }

    fn supports_strategic_merge_patch(&self) -> bool {
        false
    }
}

/// `<resource>/status`: the store's status update, with the request's status pruned and
/// defaulted first (the store does not run the main strategy's preparation there).
pub struct CustomResourceStatus {
    inner: StatusStore,
    schema: Arc<dyn CustomResourceSchema>,
}

impl CustomResourceStatus {
    /// The status subresource of `store`.
    pub fn new(store: &Store, schema: Arc<dyn CustomResourceSchema>) -> Self {
        CustomResourceStatus {
            inner: StatusStore::new(store),
            schema,
        }
    }
}

impl RestStorage for CustomResourceStatus {
    fn info(&self) -> &ResourceInfo {
        self.inner.info()
    }
    fn verbs(&self) -> Vec<&'static str> {
        self.inner.verbs()
    }
    fn get<'a>(
        &'a self,
        ctx: &'a RequestContext,
        name: &'a str,
        opts: &'a GetOptions,
    ) -> BoxFuture<'a, Result<Value, ApiError>> {
        self.inner.get(ctx, name, opts)
    }
    fn update<'a>(
        &'a self,
        ctx: &'a RequestContext,
        name: &'a str,
        mut update: UpdateFunc,
        opts: &'a UpdateOptions,
        force_allow_create: bool,
    ) -> BoxFuture<'a, Result<(Value, bool), ApiError>> {
        let schema = self.schema.clone();
        let wrapped: UpdateFunc = Box::new(move |current| {
            let mut new = update(current)?;
            schema.prune(&mut new);
            schema.apply_defaults(&mut new);
            Ok(new)
        });
        self.inner
            .update(ctx, name, wrapped, opts, force_allow_create)
    }
    fn strategy(&self) -> Option<&dyn Strategy> {
        self.inner.strategy()
    }
}

/// `<resource>/scale`: an `autoscaling/v1` `Scale` view of the custom resource through the
/// CRD's replicas and selector paths.
pub struct CustomResourceScale {
    store: Store,
    info: ResourceInfo,
    paths: ScalePaths,
}

impl CustomResourceScale {
    /// The scale subresource of `store` with `paths`.
    pub fn new(store: Store, paths: ScalePaths) -> Self {
        let parent = store.info();
        let info = ResourceInfo {
            group: "autoscaling".into(),
            version: "v1".into(),
            kind: "Scale".into(),
            list_kind: "ScaleList".into(),
            resource: parent.resource.clone(),
            singular: String::new(),
            namespaced: parent.namespaced,
            short_names: Vec::new(),
            categories: Vec::new(),
        };
        CustomResourceScale { store, info, paths }
    }
}

fn first(path: &str, obj: &Value) -> Option<Value> {
    JsonPath::parse(path)
        .ok()?
        .find(obj)
        .first()
        .map(|v| (*v).clone())
}

/// The Scale of a custom resource (upstream `scaleFromCustomResource`).
pub fn to_scale(obj: &Value, paths: &ScalePaths) -> Value {
    let meta = obj.get("metadata").cloned().unwrap_or_else(|| json!({}));
    let keep = [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ];
    let meta: serde_json::Map<String, Value> = meta
        .as_object()
        .map(|m| {
            m.iter()
                .filter(|(k, _)| keep.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    let spec_replicas = first(&paths.spec_replicas, obj)
        .and_then(|v| v.as_i64())
        .unwrap_or(0);
    let status_replicas = first(&paths.status_replicas, obj)
        .and_then(|v| v.as_i64())
        .unwrap_or(0);
    let mut status = json!({"replicas": status_replicas});
    if !paths.label_selector.is_empty()
        && let Some(Value::String(selector)) = first(&paths.label_selector, obj)
    {
        status["selector"] = json!(selector);
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": meta,
        "spec": {"replicas": spec_replicas},
        "status": status,
    })
}

/// Sets `value` at a simple `.a.b.c` path, creating objects on the way.
fn set_path(obj: &mut Value, path: &str, value: Value) -> bool {
    let fields: Vec<&str> = path.trim_start_matches('.').split('.').collect();
    let mut cursor = obj;
    for (i, field) in fields.iter().enumerate() {
        let Some(map) = cursor.as_object_mut() else {
            return false;
        };
        if i + 1 == fields.len() {
            map.insert((*field).to_string(), value);
            return true;
        }
        cursor = map.entry(*field).or_insert_with(|| json!({}));
    }
    false
}

impl RestStorage for CustomResourceScale {
    fn info(&self) -> &ResourceInfo {
        &self.info
    }

    fn verbs(&self) -> Vec<&'static str> {
        vec!["get", "patch", "update"]
    }

    fn get<'a>(
        &'a self,
        ctx: &'a RequestContext,
        name: &'a str,
        opts: &'a GetOptions,
    ) -> BoxFuture<'a, Result<Value, ApiError>> {
        Box::pin(async move {
            let obj = self.store.get(ctx, name, opts).await?;
            Ok(to_scale(&obj, &self.paths))
        })
    }

    fn update<'a>(
        &'a self,
        ctx: &'a RequestContext,
        name: &'a str,
        mut update: UpdateFunc,
        opts: &'a UpdateOptions,
        _force_allow_create: bool,
    ) -> BoxFuture<'a, Result<(Value, bool), ApiError>> {
        let paths = self.paths.clone();
        let info = self.info.clone();
        let group = self.store.info().group.clone();
        let resource = self.store.info().resource.clone();
        let owned = name.to_string();
        let parent_update: UpdateFunc = Box::new(move |current| {
            let current = current.ok_or_else(|| ApiError::not_found(&group, &resource, &owned))?;
            let scale = to_scale(current, &paths);
            let new_scale = update(Some(&scale))?;
            let replicas = match new_scale.pointer("/spec/replicas") {
                None | Some(Value::Null) => 0,
                Some(v) => v.as_i64().ok_or_else(|| {
                    invalid(
                        &info,
                        &owned,
                        &[FieldError::invalid(
                            "spec.replicas",
                            v.clone(),
                            "must be an integer",
                        )],
                    )
                })?,
            };
            if replicas < 0 {
                return Err(invalid(
                    &info,
                    &owned,
                    &[FieldError::invalid(
                        "spec.replicas",
                        replicas,
                        "must be greater than or equal to 0",
                    )],
                ));
            }
            let mut parent = current.clone();
            if let Some(rv) = new_scale
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
                .filter(|rv| !rv.is_empty())
            {
                set_path(&mut parent, ".metadata.resourceVersion", json!(rv));
            }
            set_path(&mut parent, &paths.spec_replicas, json!(replicas));
            Ok(parent)
        });
        Box::pin(async move {
            let (obj, created) = self
                .store
                .update(ctx, name, parent_update, opts, false)
                .await?;
            Ok((to_scale(&obj, &self.paths), created))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Structural;

    fn version() -> Value {
        json!({"name": "v1", "served": true, "storage": true,
            "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                "statusReplicasPath": ".status.replicas", "labelSelectorPath": ".status.selector"}},
            "additionalPrinterColumns": [
                {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
                {"name": "Ready", "type": "string", "priority": 1,
                 "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
                {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}],
            "schema": {"openAPIV3Schema": {"type": "object"}}})
    }

    fn strategy(version: &Value) -> CustomResourceStrategy {
        let info = ResourceInfo {
            group: "example.com".into(),
            version: "v1".into(),
            kind: "Widget".into(),
            list_kind: "WidgetList".into(),
            resource: "widgets".into(),
            singular: "widget".into(),
            namespaced: true,
            ..Default::default()
        };
        let schema = Structural::new(&json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {"replicas": {"type": "integer", "default": 1}}},
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}), "")
        .expect("structural");
        CustomResourceStrategy::new(info, Arc::new(schema), version, None)
    }

    #[test]
    fn table_columns_and_cells() {
        let s = strategy(&version());
        let names: Vec<String> = s.table_columns().iter().map(|c| c.name.clone()).collect();
        assert_eq!(names, vec!["Name", "Replicas", "Ready", "Age"]);
        assert_eq!(s.table_columns()[2].priority, 1);
        assert_eq!(
            s.table_columns()[1].description,
            "Custom resource definition column (in JSONPath format): .spec.replicas"
        );
        // Half a minute into the 31st minute: the age reads `30m` for 29 more seconds.
        let created = jiff::Timestamp::now() - jiff::SignedDuration::from_secs(30 * 60 + 30);
        let created = created.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
        let obj = json!({"metadata": {"name": "w", "creationTimestamp": created},
            "spec": {"replicas": 2},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}});
        assert_eq!(
            s.table_row(&obj),
            vec![json!("w"), json!(2), json!("True"), json!("30m")]
        );
        let now: jiff::Timestamp = "2024-01-01T00:00:05Z".parse().unwrap();
        assert_eq!(
            cell_at("date", &json!("2024-01-01T00:00:00Z"), now),
            json!("5s")
        );
        assert_eq!(cell_at("date", &json!("junk"), now), json!("<invalid>"));
        assert_eq!(
            s.table_row(&json!({"metadata": {"name": "w"}})),
            vec![json!("w"), Value::Null, Value::Null, Value::Null]
        );
        // Without declared columns: Name and Age.
        let plain = strategy(&json!({"name": "v1"}));
        let names: Vec<String> = plain
            .table_columns()
            .iter()
            .map(|c| c.name.clone())
            .collect();
        assert_eq!(names, vec!["Name", "Age"]);
    }

    #[test]
    fn create_drops_status_and_defaults_spec() {
        let s = strategy(&version());
        let mut obj = json!({"metadata": {"name": "w"}, "spec": {"bogus": 1}, "status": {"x": 1}});
        assert_eq!(s.drop_unknown_fields(&mut obj.clone()), vec!["spec.bogus"]);
        s.prepare_for_create(&mut obj);
        assert_eq!(
            obj,
            json!({"metadata": {"name": "w"}, "spec": {"replicas": 1}})
        );
        let old = json!({"metadata": {"name": "w"}, "spec": {"replicas": 1}, "status": {"x": 1}});
        let mut new =
            json!({"metadata": {"name": "w"}, "spec": {"replicas": 3}, "status": {"x": 2}});
        s.prepare_for_update(&mut new, &old);
        assert_eq!(new["status"], json!({"x": 1}));
        // Without a status subresource a status change bumps the generation.
        let plain = strategy(&json!({"name": "v1"}));
        let old = json!({"metadata": {"name": "w", "generation": 2}, "status": {"x": 1}});
        let mut new = json!({"metadata": {"name": "w", "generation": 2}, "status": {"x": 2}});
        plain.prepare_for_update(&mut new, &old);
        assert_eq!(new["metadata"]["generation"], 3);
        assert!(!s.supports_strategic_merge_patch());
    }

    #[test]
    fn scale_view() {
        let paths = ScalePaths::of(&version()).unwrap();
        let obj = json!({"metadata": {"name": "w", "namespace": "d", "labels": {"a": "b"}},
            "spec": {"replicas": 3}, "status": {"replicas": 2, "selector": "a=b"}});
        assert_eq!(
            to_scale(&obj, &paths),
            json!({"kind": "Scale", "apiVersion": "autoscaling/v1",
                "metadata": {"name": "w", "namespace": "d"},
                "spec": {"replicas": 3}, "status": {"replicas": 2, "selector": "a=b"}})
        );
        let mut parent = obj.clone();
        assert!(set_path(&mut parent, ".spec.replicas", json!(5)));
        assert_eq!(parent["spec"]["replicas"], 5);
    }
}
