//! OpenAPI for custom resources: what each served version contributes ([`CustomResourceOpenApi`])
//! and where it goes ([`OpenApiPublisher`]). [`ServicePublisher`] merges the Swagger 2.0
//! definitions into a base document and publishes one OpenAPI 3.0 document per group-version on
//! an [`OpenApiService`] (`kubectl explain` reads those).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, OnceLock};

use apiserver::endpoints::openapi::OpenApiService;
use serde_json::{Map, Value, json};

/// The definition custom resources' `metadata` refers to.
const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// `OBJECT_META` and every definition it refers to, from a Swagger 2.0 document's
/// definitions, with references rewritten for OpenAPI 3.0 (`#/components/schemas/`).
pub fn object_meta_closure_v3(v2: &Value) -> Map<String, Value> {
    fn refs(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(r)) = map.get("$ref")
                    && let Some(name) = r.strip_prefix("#/definitions/")
                {
                    out.push(name.to_string());
                }
                map.values().for_each(|v| refs(v, out));
            }
            Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }
    fn rewrite(value: &Value) -> Value {
        match value {
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| match (k.as_str(), v) {
                        ("$ref", Value::String(r)) => (
                            k.clone(),
                            json!(r.replace("#/definitions/", "#/components/schemas/")),
                        ),
                        _ => (k.clone(), rewrite(v)),
                    })
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(rewrite).collect()),
            other => other.clone(),
        }
    }
    let mut out = Map::new();
    let Some(defs) = v2.get("definitions").and_then(Value::as_object) else {
        return out;
    };
    let mut todo = vec![OBJECT_META.to_string()];
    while let Some(name) = todo.pop() {
        if out.contains_key(&name) {
            continue;
        }
        let Some(def) = defs.get(&name) else {
            continue;
        };
        refs(def, &mut todo);
        out.insert(name, rewrite(def));
    }
    out
}

/// One served version of a custom resource, for OpenAPI.
#[derive(Clone, Debug, PartialEq)]
pub struct CustomResourceOpenApi {
    /// The group.
    pub group: String,
    /// The version.
    pub version: String,
    /// The kind.
    pub kind: String,
    /// The list kind.
    pub list_kind: String,
    /// The plural resource.
    pub resource: String,
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
    /// Served subresources (`status`, `scale`).
    pub subresources: Vec<String>,
    /// The kind's Swagger 2.0 schema.
    pub schema_v2: Value,
    /// The kind's OpenAPI 3.0 schema.
    pub schema_v3: Value,
}

impl CustomResourceOpenApi {
    /// The definition name upstream gives a custom resource kind: the reversed group, the
    /// version and the kind (`com.example.v1.Widget`).
    pub fn definition_name(&self) -> String {
        let mut parts: Vec<&str> = self.group.split('.').collect();
        parts.reverse();
        format!("{}.{}.{}", parts.join("."), self.version, self.kind)
    }

    /// The kind's schema with the `x-kubernetes-group-version-kind` extension and the
    /// standard `apiVersion`, `kind` and `metadata` properties (`metadata` referring to
    /// `ObjectMeta` under `meta_prefix` when the document has it).
    fn kind_schema(&self, schema: &Value, kind: &str, meta_prefix: Option<&str>) -> Value {
        let mut out = schema.clone();
        if !out.is_object() {
            out = json!({"type": "object"});
        }
        let gvk = json!([{"group": self.group, "kind": kind, "version": self.version}]);
        if let Some(map) = out.as_object_mut() {
            map.insert("x-kubernetes-group-version-kind".into(), gvk);
            let props = map.entry("properties").or_insert_with(|| json!({}));
            if let Some(props) = props.as_object_mut() {
                props.insert("apiVersion".into(), json!({"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"}));
                props.insert("kind".into(), json!({"type": "string", "description": "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"}));
                let description = "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
                let metadata = match meta_prefix {
                    Some(prefix) => {
                        json!({"$ref": format!("{prefix}{OBJECT_META}"), "description": description})
                    }
                    None => json!({"type": "object", "description": description}),
                };
                props.insert("metadata".into(), metadata);
            }
        }
        out
    }

    fn list_schema(&self, prefix: &str) -> Value {
        json!({
            "description": format!("{} is a list of {}", self.list_kind, self.kind),
            "type": "object",
            "required": ["items"],
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": {"type": "object"},
                "items": {"type": "array", "items": {"$ref": format!("{prefix}{}", self.definition_name())}},
            },
            "x-kubernetes-group-version-kind": [{"group": self.group, "kind": self.list_kind, "version": self.version}],
        })
    }

    fn paths(&self, v3: bool) -> Map<String, Value> {
        let prefix = if v3 {
            "#/components/schemas/"
        } else {
            "#/definitions/"
        };
        let body = |name: &str| -> Value {
            let reference = json!({"$ref": format!("{prefix}{name}")});
            if v3 {
                json!({"content": {"application/json": {"schema": reference}}})
            } else {
                reference
            }
        };
        let query = |name: &str| json!({"name": name, "in": "query", "type": "string", "schema": {"type": "string"}, "uniqueItems": true});
        let op = |id: &str, with_body: bool| {
            let mut operation = json!({
                "operationId": id,
                "parameters": [query("dryRun"), query("fieldManager"), query("fieldValidation")],
                "responses": {"200": {"description": "OK"}},
                "x-kubernetes-group-version-kind": {"group": self.group, "kind": self.kind, "version": self.version},
            });
            if with_body && v3 {
                operation["requestBody"] = body(&self.definition_name());
            }
            operation
        };
        let base = if self.namespaced {
            format!(
                "/apis/{}/{}/namespaces/{{namespace}}/{}",
                self.group, self.version, self.resource
            )
        } else {
            format!("/apis/{}/{}/{}", self.group, self.version, self.resource)
        };
        let mut paths = Map::new();
        paths.insert(
            base.clone(),
            json!({"get": op(&format!("list{}", self.kind), false),
                   "post": op(&format!("create{}", self.kind), true)}),
        );
        paths.insert(
            format!("{base}/{{name}}"),
            json!({"get": op(&format!("read{}", self.kind), false),
                   "put": op(&format!("replace{}", self.kind), true),
                   "patch": op(&format!("patch{}", self.kind), false),
                   "delete": op(&format!("delete{}", self.kind), false)}),
        );
        for sub in &self.subresources {
            paths.insert(
                format!("{base}/{{name}}/{sub}"),
                json!({"get": op(&format!("read{}{sub}", self.kind), false),
                       "put": op(&format!("replace{}{sub}", self.kind), true),
                       "patch": op(&format!("patch{}{sub}", self.kind), false)}),
            );
        }
        paths
    }
}

/// Where custom-resource OpenAPI goes. `publish` receives every served version each time
/// (the full set: what is absent must be removed).
pub trait OpenApiPublisher: Send + Sync {
    /// Publishes the documents of `served`.
    fn publish(&self, served: &[CustomResourceOpenApi]);
}

/// A publisher that does nothing (servers without OpenAPI).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoOpenApi;

impl OpenApiPublisher for NoOpenApi {
    fn publish(&self, _served: &[CustomResourceOpenApi]) {}
}

/// The target (once set) and the latest documents.
type DeferredState = (
    Option<Arc<dyn OpenApiPublisher>>,
    Option<Vec<CustomResourceOpenApi>>,
);

/// A publisher whose target is set later (the built-in OpenAPI exists only after the servers
/// that delegate to the apiextensions server are built); what was published meanwhile is
/// published when the target is set.
#[derive(Default)]
pub struct DeferredPublisher {
    state: Mutex<DeferredState>,
}

impl DeferredPublisher {
    /// A publisher without a target yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the target and publishes the latest documents on it.
    pub fn set(&self, target: Arc<dyn OpenApiPublisher>) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(served) = &state.1 {
            target.publish(served);
        }
        state.0 = Some(target);
    }
}

impl OpenApiPublisher for DeferredPublisher {
    fn publish(&self, served: &[CustomResourceOpenApi]) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(target) = &state.0 {
            target.publish(served);
        }
        state.1 = Some(served.to_vec());
    }
}

/// Publishes on an [`OpenApiService`]: `/openapi/v2` = `base_v2` plus the custom resources'
/// paths and definitions; `/openapi/v3/apis/<group>/<version>` per served group-version.
pub struct ServicePublisher {
    service: OpenApiService,
    base_v2: Option<BaseV2>,
    /// `ObjectMeta` and what it refers to, for the v3 documents (read from the base document
    /// when the first custom resource is published).
    meta_v3: OnceLock<Map<String, Value>>,
    published_v3: Mutex<BTreeSet<String>>,
}

/// The built-in Swagger document, built on first use (the server builds OpenAPI lazily).
pub type BaseV2 = Arc<dyn Fn() -> Arc<Value> + Send + Sync>;

impl ServicePublisher {
    /// A publisher on `service`, merging into `base_v2` (the built-in Swagger document; `None`
    /// leaves `/openapi/v2` alone). Documents are merged when first requested.
    pub fn new(service: OpenApiService, base_v2: Option<BaseV2>) -> Self {
        ServicePublisher {
            service,
            base_v2,
            meta_v3: OnceLock::new(),
            published_v3: Mutex::default(),
        }
    }

    fn meta_v3(&self) -> &Map<String, Value> {
        self.meta_v3.get_or_init(|| {
            self.base_v2
                .as_ref()
                .map(|base| object_meta_closure_v3(&base()))
                .unwrap_or_default()
        })
    }
}

/// The Swagger 2.0 document `base` with `served` merged in.
pub fn merge_v2(base: &Value, served: &[CustomResourceOpenApi]) -> Value {
    let mut doc = base.clone();
    let meta = base
        .pointer(&format!("/definitions/{OBJECT_META}"))
        .map(|_| "#/definitions/");
    for cr in served {
        let name = cr.definition_name();
        if let Some(defs) = doc.get_mut("definitions").and_then(Value::as_object_mut) {
            defs.insert(name.clone(), cr.kind_schema(&cr.schema_v2, &cr.kind, meta));
            defs.insert(format!("{name}List"), cr.list_schema("#/definitions/"));
        }
        if let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) {
            paths.extend(cr.paths(false));
        }
    }
    doc
}

/// The OpenAPI 3.0 documents of `served`, by group-version path (`apis/<group>/<version>`);
/// `meta` (see [`object_meta_closure_v3`]) is added to each so that `metadata` can refer to
/// `ObjectMeta`.
pub fn v3_documents(
    served: &[CustomResourceOpenApi],
    meta: &Map<String, Value>,
) -> BTreeMap<String, Value> {
    let meta_prefix = (!meta.is_empty()).then_some("#/components/schemas/");
    let mut docs: BTreeMap<String, Value> = BTreeMap::new();
    for cr in served {
        let path = format!("apis/{}/{}", cr.group, cr.version);
        let doc = docs.entry(path).or_insert_with(|| {
            json!({"openapi": "3.0.0", "info": {"title": "Kubernetes CRD Swagger", "version": "v0.1.0"},
                   "paths": {}, "components": {"schemas": {}}})
        });
        let name = cr.definition_name();
        if let Some(schemas) = doc
            .pointer_mut("/components/schemas")
            .and_then(Value::as_object_mut)
        {
            schemas.extend(meta.iter().map(|(k, v)| (k.clone(), v.clone())));
            schemas.insert(
                name.clone(),
                cr.kind_schema(&cr.schema_v3, &cr.kind, meta_prefix),
            );
            schemas.insert(
                format!("{name}List"),
                cr.list_schema("#/components/schemas/"),
            );
        }
        if let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) {
            paths.extend(cr.paths(true));
        }
    }
    docs
}

impl OpenApiPublisher for ServicePublisher {
    fn publish(&self, served: &[CustomResourceOpenApi]) {
        if let Some(base) = &self.base_v2 {
            let base = base.clone();
            let served = served.to_vec();
            self.service.set_v2_lazy(move || merge_v2(&base(), &served));
        }
        let docs = if served.is_empty() {
            BTreeMap::new()
        } else {
            v3_documents(served, self.meta_v3())
        };
        let mut published = self.published_v3.lock().unwrap_or_else(|p| p.into_inner());
        for stale in published.iter().filter(|p| !docs.contains_key(*p)) {
            self.service.remove_v3(stale);
        }
        for (path, doc) in &docs {
            self.service.set_v3(path, doc);
        }
        *published = docs.keys().cloned().collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn widget() -> CustomResourceOpenApi {
        CustomResourceOpenApi {
            group: "stable.example.com".into(),
            version: "v1".into(),
            kind: "Widget".into(),
            list_kind: "WidgetList".into(),
            resource: "widgets".into(),
            namespaced: true,
            subresources: vec!["status".into()],
            schema_v2: json!({"type": "object", "properties": {"spec": {"type": "object"}}}),
            schema_v3: json!({"type": "object", "properties": {"spec": {"type": "object"}}}),
        }
    }

    #[test]
    fn documents_name_kinds_as_upstream() {
        assert_eq!(widget().definition_name(), "com.example.stable.v1.Widget");
        let docs = v3_documents(&[widget()], &Map::new());
        let doc = &docs["apis/stable.example.com/v1"];
        let schema = &doc["components"]["schemas"]["com.example.stable.v1.Widget"];
        assert_eq!(
            schema["x-kubernetes-group-version-kind"],
            json!([{"group": "stable.example.com", "kind": "Widget", "version": "v1"}])
        );
        assert!(schema["properties"]["spec"].is_object());
        assert!(
            doc["paths"]
                .get("/apis/stable.example.com/v1/namespaces/{namespace}/widgets/{name}/status")
                .is_some()
        );
        let v2 = merge_v2(&json!({"paths": {}, "definitions": {}}), &[widget()]);
        assert!(v2["definitions"]["com.example.stable.v1.WidgetList"].is_object());
    }

    #[test]
    fn metadata_refers_to_object_meta_when_the_base_has_it() {
        let base = json!({"paths": {}, "definitions": {
            OBJECT_META: {"properties": {"ownerReferences": {"items": {"$ref": "#/definitions/x.OwnerReference"}}}},
            "x.OwnerReference": {"properties": {"uid": {"type": "string"}}},
            "x.Unrelated": {}}});
        let v2 = merge_v2(&base, &[widget()]);
        assert_eq!(
            v2["definitions"]["com.example.stable.v1.Widget"]["properties"]["metadata"]["$ref"],
            format!("#/definitions/{OBJECT_META}")
        );
        let meta = object_meta_closure_v3(&base);
        assert_eq!(
            meta.keys().collect::<Vec<_>>(),
            vec![OBJECT_META, "x.OwnerReference"]
        );
        assert_eq!(
            meta[OBJECT_META]["properties"]["ownerReferences"]["items"]["$ref"],
            "#/components/schemas/x.OwnerReference"
        );
        let docs = v3_documents(&[widget()], &meta);
        let schemas = &docs["apis/stable.example.com/v1"]["components"]["schemas"];
        assert!(schemas["x.OwnerReference"].is_object());
        assert_eq!(
            schemas["com.example.stable.v1.Widget"]["properties"]["metadata"]["$ref"],
            format!("#/components/schemas/{OBJECT_META}")
        );
    }

    #[test]
    fn deferred_publisher_publishes_when_set() {
        let service = OpenApiService::new();
        let deferred = DeferredPublisher::new();
        deferred.publish(&[widget()]);
        assert!(service.v3_paths().is_empty());
        deferred.set(Arc::new(ServicePublisher::new(service.clone(), None)));
        assert_eq!(service.v3_paths(), vec!["apis/stable.example.com/v1"]);
        deferred.publish(&[]);
        assert!(service.v3_paths().is_empty());
    }

    #[test]
    fn publisher_removes_stale_documents() {
        let service = OpenApiService::new();
        let publisher = ServicePublisher::new(service.clone(), None);
        publisher.publish(&[widget()]);
        assert_eq!(service.v3_paths(), vec!["apis/stable.example.com/v1"]);
        publisher.publish(&[]);
        assert!(service.v3_paths().is_empty());
    }
}
