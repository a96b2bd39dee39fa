//! The OpenAPI documents of the built-in API, generated from the project's type model:
//! k8s-openapi's schemars schemas plus the Kubernetes extensions encoded in [`extensions`]
//! (group-version-kind, patch strategies and merge keys, list types and map keys), and one path
//! item per resource and verb (see [`paths`]). Upstream spec files are never vendored.
//!
//! [`LazyDocs`] takes the served resources (fed by the registry) and hands the library's
//! `OpenApiService` builders of the Swagger 2.0 document for `/openapi/v2` and of one OpenAPI
//! 3.0 document per group-version for `/openapi/v3/<gv-path>`, each run on first use, so that
//! start-up generates nothing.

pub mod extensions;
pub mod paths;
pub mod types;

#[cfg(test)]
mod tests;

#[cfg(test)]
use std::collections::BTreeMap;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, OnceLock};

use apiserver::endpoints::openapi::OpenApiService;
use serde_json::{Map, Value, json};

use types::Flavour;

/// One served resource, as the registry knows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceSpec {
    /// The API group (`""` for core).
    pub group: String,
    /// The version, e.g. `v1`.
    pub version: String,
    /// The kind, e.g. `ConfigMap`.
    pub kind: String,
    /// The plural resource name, e.g. `configmaps`.
    pub resource: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// Subresources with their own paths: `status` and `scale` are published; others are
    /// ignored for now.
    pub subresources: Vec<String>,
    /// The schema's definition name, e.g. `io.k8s.api.core.v1.ConfigMap` (see
    /// [`types::definition_name`]).
    pub definition_name: String,
    /// Served for `create` only (the access reviews): just the collection's `post`.
    pub create_only: bool,
}

impl ResourceSpec {
    /// A built-in resource, its definition name looked up from the kind (`None` for a kind the
    /// type model does not know).
    pub fn builtin(
        group: &str,
        version: &str,
        kind: &str,
        resource: &str,
        namespaced: bool,
        subresources: &[&str],
    ) -> Option<ResourceSpec> {
        Some(ResourceSpec {
            definition_name: types::definition_name(group, version, kind)?,
            group: group.to_owned(),
            version: version.to_owned(),
            kind: kind.to_owned(),
            resource: resource.to_owned(),
            namespaced,
            subresources: subresources.iter().map(|s| (*s).to_owned()).collect(),
            create_only: false,
        })
    }

    /// The spec of a registry resource whose kind the type model knows.
    pub fn from_info(
        info: &apiserver::registry::ResourceInfo,
        subresources: &[&str],
    ) -> Option<ResourceSpec> {
        Self::builtin(
            &info.group,
            &info.version,
            &info.kind,
            &info.resource,
            info.namespaced,
            subresources,
        )
    }

    /// Whether the resource serves only `create` on its collection (the review kinds, which
    /// are never stored): one POST path, no list type.
    pub fn create_only(&self) -> bool {
        CREATE_ONLY.contains(&(self.group.as_str(), self.resource.as_str()))
    }

    /// The group-version path of the v3 document (`api/v1`, `apis/apps/v1`).
    #[cfg(test)]
    pub fn gv_path(&self) -> String {
        gv_path(&self.group, &self.version)
    }
}

/// The `(group, resource)`s that only serve `create` on their collection.
const CREATE_ONLY: &[(&str, &str)] = &[
    ("authentication.k8s.io", "selfsubjectreviews"),
    ("authentication.k8s.io", "tokenreviews"),
];

/// `api/v1` for the core group, `apis/<group>/<version>` otherwise.
pub fn gv_path(group: &str, version: &str) -> String {
    paths::gv_prefix(group, version)
        .trim_start_matches('/')
        .to_owned()
}

/// The generated documents, all built at once (the reference the lazy documents are tested
/// against).
#[cfg(test)]
#[derive(Clone, Debug, PartialEq)]
pub struct OpenApiDocs {
    /// The Swagger 2.0 document of `/openapi/v2`.
    pub v2: Value,
    /// The OpenAPI 3.0 documents by group-version path (`api/v1`, `apis/apps/v1`, …).
    pub v3: BTreeMap<String, Value>,
}

/// The OpenAPI documents of the served resources, each built on first use: the Swagger 2.0
/// document once (it is also the schema strategic merge patch and server-side apply read), an
/// OpenAPI 3.0 document whenever the service needs it, from only the types of its
/// group-version. Nothing is generated at start-up.
#[derive(Debug)]
pub struct LazyDocs {
    resources: Vec<ResourceSpec>,
    version: String,
    v2: OnceLock<Arc<Value>>,
    /// Per-kind schema documents handed out before the v2 document was built.
    kind_schemas: Mutex<HashMap<String, Arc<Value>>>,
}

impl LazyDocs {
    /// The documents of `resources`, `info.version` = [`crate::server::KUBERNETES_VERSION`].
    pub fn new(resources: Vec<ResourceSpec>) -> Arc<LazyDocs> {
        Self::with_version(resources, crate::server::KUBERNETES_VERSION)
    }

    /// The documents of `resources`, `info.version` = `version`.
    pub fn with_version(resources: Vec<ResourceSpec>, version: &str) -> Arc<LazyDocs> {
        Arc::new(LazyDocs {
            resources,
            version: version.to_owned(),
            v2: OnceLock::new(),
            kind_schemas: Mutex::default(),
        })
    }

    /// The Swagger 2.0 document, built on the first call and shared afterwards.
    pub fn v2(&self) -> Arc<Value> {
        self.v2
            .get_or_init(|| Arc::new(v2_document(&self.resources, &self.version)))
            .clone()
    }

    /// The schema document strategic merge patch and server-side apply read for the kind
    /// with definition `definition`: the v2 document once it is built, otherwise (and then
    /// cached) a small one holding only that kind's definitions, the same as v2's. Writes
    /// need it for managedFields, so the first write of a kind builds it; building the whole
    /// v2 document there would cost every server ~20 MiB it may never serve.
    pub fn patch_schema(&self, definition: &str) -> Arc<Value> {
        if let Some(v2) = self.v2.get() {
            return v2.clone();
        }
        let mut schemas = self.kind_schemas.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(doc) = schemas.get(definition) {
            return doc.clone();
        }
        let doc = Arc::new(kind_schema_document(&self.resources, definition));
        schemas.insert(definition.to_owned(), doc.clone());
        doc
    }

    /// The OpenAPI 3.0 document of one group-version, built now (the service keeps its bytes,
    /// not the value).
    pub fn v3(&self, group: &str, version: &str) -> Value {
        let definitions = definitions(Flavour::V3, &self.resources, Some((group, version)));
        v3_document(&self.resources, group, version, &definitions, &self.version)
    }

    /// The group-version paths of the v3 documents (`api/v1`, `apis/apps/v1`, …).
    #[cfg(test)]
    pub fn v3_paths(&self) -> Vec<String> {
        group_versions(&self.resources)
            .iter()
            .map(|(group, version)| gv_path(group, version))
            .collect()
    }

    /// Registers every document on `service`, each to be built on first request.
    pub fn publish(self: &Arc<Self>, service: &OpenApiService) {
        let docs = self.clone();
        service.set_v2_lazy(move || docs.v2());
        for (group, version) in group_versions(&self.resources) {
            let docs = self.clone();
            let path = gv_path(&group, &version);
            service.set_v3_lazy(&path, move || docs.v3(&group, &version));
        }
    }
}

/// The built-in resources of issue 4 with their subresources (the test fixture; the server
/// takes its list from the registry).
#[cfg(test)]
pub fn builtin_resources() -> Vec<ResourceSpec> {
    /// group, version, kind, resource, namespaced, subresources.
    type Row = (
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        bool,
        &'static [&'static str],
    );
    const TABLE: &[Row] = &[
        ("", "v1", "Namespace", "namespaces", false, &["status"]),
        ("", "v1", "ConfigMap", "configmaps", true, &[]),
        ("", "v1", "Secret", "secrets", true, &[]),
        ("", "v1", "ServiceAccount", "serviceaccounts", true, &[]),
        ("", "v1", "Service", "services", true, &["status"]),
        ("", "v1", "Endpoints", "endpoints", true, &[]),
        ("", "v1", "Event", "events", true, &[]),
        ("", "v1", "Pod", "pods", true, &["status"]),
        ("", "v1", "Node", "nodes", false, &["status"]),
        (
            "",
            "v1",
            "PersistentVolumeClaim",
            "persistentvolumeclaims",
            true,
            &["status"],
        ),
        (
            "",
            "v1",
            "PersistentVolume",
            "persistentvolumes",
            false,
            &["status"],
        ),
        ("", "v1", "LimitRange", "limitranges", true, &[]),
        (
            "",
            "v1",
            "ResourceQuota",
            "resourcequotas",
            true,
            &["status"],
        ),
        (
            "",
            "v1",
            "ReplicationController",
            "replicationcontrollers",
            true,
            &["status", "scale"],
        ),
        (
            "apps",
            "v1",
            "Deployment",
            "deployments",
            true,
            &["status", "scale"],
        ),
        (
            "apps",
            "v1",
            "ReplicaSet",
            "replicasets",
            true,
            &["status", "scale"],
        ),
        (
            "apps",
            "v1",
            "StatefulSet",
            "statefulsets",
            true,
            &["status", "scale"],
        ),
        ("apps", "v1", "DaemonSet", "daemonsets", true, &["status"]),
        (
            "apps",
            "v1",
            "ControllerRevision",
            "controllerrevisions",
            true,
            &[],
        ),
        ("batch", "v1", "Job", "jobs", true, &["status"]),
        ("batch", "v1", "CronJob", "cronjobs", true, &["status"]),
        ("coordination.k8s.io", "v1", "Lease", "leases", true, &[]),
        ("events.k8s.io", "v1", "Event", "events", true, &[]),
        (
            "discovery.k8s.io",
            "v1",
            "EndpointSlice",
            "endpointslices",
            true,
            &[],
        ),
        (
            "policy",
            "v1",
            "PodDisruptionBudget",
            "poddisruptionbudgets",
            true,
            &["status"],
        ),
        (
            "networking.k8s.io",
            "v1",
            "Ingress",
            "ingresses",
            true,
            &["status"],
        ),
        (
            "networking.k8s.io",
            "v1",
            "IngressClass",
            "ingressclasses",
            false,
            &[],
        ),
        (
            "networking.k8s.io",
            "v1",
            "NetworkPolicy",
            "networkpolicies",
            true,
            &[],
        ),
        (
            "rbac.authorization.k8s.io",
            "v1",
            "Role",
            "roles",
            true,
            &[],
        ),
        (
            "rbac.authorization.k8s.io",
            "v1",
            "RoleBinding",
            "rolebindings",
            true,
            &[],
        ),
        (
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRole",
            "clusterroles",
            false,
            &[],
        ),
        (
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRoleBinding",
            "clusterrolebindings",
            false,
            &[],
        ),
        (
            "storage.k8s.io",
            "v1",
            "StorageClass",
            "storageclasses",
            false,
            &[],
        ),
        (
            "scheduling.k8s.io",
            "v1",
            "PriorityClass",
            "priorityclasses",
            false,
            &[],
        ),
        (
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            "customresourcedefinitions",
            false,
            &["status"],
        ),
    ];
    TABLE
        .iter()
        .filter_map(|(g, v, k, r, ns, subs)| ResourceSpec::builtin(g, v, k, r, *ns, subs))
        .collect()
}

/// Builds every document for `resources` now, with info version
/// [`crate::server::KUBERNETES_VERSION`].
#[cfg(test)]
pub fn build(resources: &[ResourceSpec]) -> OpenApiDocs {
    build_with_version(resources, crate::server::KUBERNETES_VERSION)
}

/// Builds every document for `resources` now, `info.version` = `version`, the v3 documents
/// from one generation of every definition.
#[cfg(test)]
pub fn build_with_version(resources: &[ResourceSpec], version: &str) -> OpenApiDocs {
    let v3_definitions = definitions(Flavour::V3, resources, None);
    let v3 = group_versions(resources)
        .iter()
        .map(|(group, gv_version)| {
            (
                gv_path(group, gv_version),
                v3_document(resources, group, gv_version, &v3_definitions, version),
            )
        })
        .collect();
    OpenApiDocs {
        v2: v2_document(resources, version),
        v3,
    }
}

/// Sets the v2 document and every v3 document on `service`.
#[cfg(test)]
pub fn publish(service: &OpenApiService, docs: &OpenApiDocs) {
    service.set_v2(&docs.v2);
    for (path, doc) in &docs.v3 {
        service.set_v3(path, doc);
    }
}

/// The group-versions of `resources`.
fn group_versions(resources: &[ResourceSpec]) -> BTreeSet<(String, String)> {
    resources
        .iter()
        .map(|r| (r.group.clone(), r.version.clone()))
        .collect()
}

/// The resources whose definition the type model has. The others are left out (logged).
fn known<'r>(
    resources: impl IntoIterator<Item = &'r ResourceSpec>,
    definitions: &Map<String, Value>,
) -> Vec<&'r ResourceSpec> {
    resources
        .into_iter()
        .filter(|r| {
            let known = definitions.contains_key(&r.definition_name);
            if !known {
                tracing::warn!(
                    definition = %r.definition_name,
                    resource = %r.resource,
                    "no schema for this resource; it is left out of OpenAPI"
                );
            }
            known
        })
        .collect()
}

/// The Swagger 2.0 document of `resources`, `info.version` = `version`.
fn v2_document(resources: &[ResourceSpec], version: &str) -> Value {
    let v2_definitions = definitions(Flavour::V2, resources, None);
    let known = known(resources, &v2_definitions);
    let mut v2_paths = Map::new();
    for r in &known {
        v2_paths.extend(paths::resource_paths(Flavour::V2, r));
    }
    let gvs: BTreeSet<(&str, &str)> = known
        .iter()
        .map(|r| (r.group.as_str(), r.version.as_str()))
        .collect();
    for (group, gv_version) in gvs {
        let (path, item) = paths::api_resources_path(Flavour::V2, group, gv_version);
        v2_paths.insert(path, item);
    }
    json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": version},
        "paths": v2_paths,
        "definitions": v2_definitions,
        "securityDefinitions": {"BearerToken": {
            "description": "Bearer Token authentication",
            "type": "apiKey",
            "name": "authorization",
            "in": "header",
        }},
        "security": [{"BearerToken": []}],
    })
}

/// `{"definitions": …}` with the v2 definitions of the kind named `definition` and everything
/// they refer to, generated from the types of the kind's group-version only.
fn kind_schema_document(resources: &[ResourceSpec], definition: &str) -> Value {
    let Some(spec) = resources.iter().find(|r| r.definition_name == definition) else {
        return json!({"definitions": {}});
    };
    let definitions = definitions(
        Flavour::V2,
        resources,
        Some((spec.group.as_str(), spec.version.as_str())),
    );
    let root = Flavour::V2.reference(definition);
    json!({"definitions": referenced_closure(&root, &definitions, Flavour::V2)})
}

/// The OpenAPI 3.0 document of one group-version of `resources`, its schemas taken from
/// `v3_definitions` (which must hold every definition its paths refer to).
fn v3_document(
    resources: &[ResourceSpec],
    group: &str,
    gv_version: &str,
    v3_definitions: &Map<String, Value>,
    version: &str,
) -> Value {
    let mut gv_paths = Map::new();
    let (path, item) = paths::api_resources_path(Flavour::V3, group, gv_version);
    gv_paths.insert(path, item);
    // Only this group-version's resources: the definitions are built for it alone, so the
    // others would all look schema-less.
    let own = resources
        .iter()
        .filter(|r| r.group == group && r.version == gv_version);
    for r in known(own, v3_definitions) {
        gv_paths.extend(paths::resource_paths(Flavour::V3, r));
    }
    let paths_value = Value::Object(gv_paths);
    let schemas = referenced_closure(&paths_value, v3_definitions, Flavour::V3);
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": version},
        "paths": paths_value,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"BearerToken": {
                "type": "apiKey",
                "description": "Bearer Token authentication",
                "name": "authorization",
                "in": "header",
            }},
        },
        "security": [{"BearerToken": []}],
    })
}

/// The definitions of `flavour` with the project's extensions: field extensions, a `<Kind>List`
/// per resource, `x-kubernetes-group-version-kind` on every kind and list, and on
/// `DeleteOptions` / `WatchEvent` one entry per served group-version. With `only`, just the
/// types one group-version's document needs are generated.
fn definitions(
    flavour: Flavour,
    resources: &[ResourceSpec],
    only: Option<(&str, &str)>,
) -> Map<String, Value> {
    let mut defs = match only {
        None => types::definitions(flavour),
        Some((group, version)) => types::group_version_definitions(flavour, group, version),
    };
    extensions::apply_field_extensions(&mut defs);
    let mut gvs: BTreeSet<(&str, &str)> = BTreeSet::new();
    for r in resources {
        // Every served group-version, also those whose types this generation left out.
        gvs.insert((&r.group, &r.version));
        let Some(def) = defs.get_mut(&r.definition_name) else {
            continue;
        };
        extensions::add_group_version_kind(def, &r.group, &r.version, &r.kind);
        // k8s-openapi marks `metadata` required (its field is not optional); upstream does not.
        if let Some(required) = def.get_mut("required").and_then(Value::as_array_mut) {
            required.retain(|f| f != "metadata");
            if required.is_empty() {
                def.as_object_mut().map(|o| o.remove("required"));
            }
        }
        if r.subresources.iter().any(|s| s == "token")
            && let Some(token_request) = defs.get_mut(types::TOKEN_REQUEST)
        {
            extensions::add_group_version_kind(
                token_request,
                "authentication.k8s.io",
                "v1",
                "TokenRequest",
            );
        }
        if r.create_only() {
            continue;
        }
        let list_name = format!("{}List", r.definition_name);
        let list = defs
            .entry(list_name)
            .or_insert_with(|| types::list_schema(flavour, &r.definition_name, &r.kind));
        extensions::add_group_version_kind(list, &r.group, &r.version, &format!("{}List", r.kind));
        if r.subresources.iter().any(|s| s == "scale")
            && let Some(scale) = defs.get_mut(types::SCALE)
        {
            extensions::add_group_version_kind(scale, "autoscaling", "v1", "Scale");
        }
    }
    for (name, kind) in [
        (types::DELETE_OPTIONS, "DeleteOptions"),
        (types::WATCH_EVENT, "WatchEvent"),
    ] {
        if let Some(def) = defs.get_mut(name) {
            for (group, version) in &gvs {
                extensions::add_group_version_kind(def, group, version, kind);
            }
        }
    }
    defs
}

/// The definitions `root` refers to, transitively.
fn referenced_closure(
    root: &Value,
    definitions: &Map<String, Value>,
    flavour: Flavour,
) -> Map<String, Value> {
    let prefix = flavour.ref_prefix();
    let mut pending = Vec::new();
    collect_refs(root, prefix, &mut pending);
    let mut out = Map::new();
    while let Some(name) = pending.pop() {
        if out.contains_key(&name) {
            continue;
        }
        if let Some(def) = definitions.get(&name) {
            collect_refs(def, prefix, &mut pending);
            out.insert(name, def.clone());
        }
    }
    out
}

fn collect_refs(value: &Value, prefix: &str, out: &mut Vec<String>) {
    match value {
        Value::Object(obj) => {
            for (key, v) in obj {
                if key == "$ref"
                    && let Some(name) = v.as_str().and_then(|s| s.strip_prefix(prefix))
                {
                    out.push(name.to_owned());
                } else {
                    collect_refs(v, prefix, out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_refs(v, prefix, out)),
        _ => {}
    }
}
