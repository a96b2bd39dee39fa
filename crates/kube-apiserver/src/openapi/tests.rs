use std::sync::OnceLock;

use serde_json::{Value, json};

use super::*;

fn docs() -> &'static OpenApiDocs {
    static DOCS: OnceLock<OpenApiDocs> = OnceLock::new();
    DOCS.get_or_init(|| build(&builtin_resources()))
}

fn find_refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(obj) => {
            for (k, v) in obj {
                // JSONSchemaProps has a property named `$ref`; only string values are refs.
                if k == "$ref" && v.is_string() {
                    out.push(v.as_str().unwrap().to_owned());
                } else {
                    find_refs(v, out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| find_refs(v, out)),
        _ => {}
    }
}

#[test]
fn every_builtin_kind_has_a_definition() {
    let resources = builtin_resources();
    assert_eq!(
        resources.len(),
        35,
        "every kind of issue 4 maps to a k8s-openapi type"
    );
    assert_eq!(
        types::definition_name("", "v1", "ConfigMap").as_deref(),
        Some("io.k8s.api.core.v1.ConfigMap")
    );
    assert_eq!(
        types::definition_name("apiextensions.k8s.io", "v1", "CustomResourceDefinition").as_deref(),
        Some("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition")
    );
    assert_eq!(types::definition_name("example.com", "v1", "Foo"), None);
}

#[test]
fn v3_api_v1_has_configmap_schema_with_gvk() {
    let doc = &docs().v3["api/v1"];
    assert_eq!(doc["openapi"], "3.0.0");
    let cm = &doc["components"]["schemas"]["io.k8s.api.core.v1.ConfigMap"];
    assert_eq!(
        cm["x-kubernetes-group-version-kind"],
        json!([{"group": "", "kind": "ConfigMap", "version": "v1"}])
    );
    // Described references are wrapped in allOf, as in upstream's v3 documents.
    assert_eq!(
        cm["properties"]["metadata"]["allOf"][0]["$ref"],
        "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );
    assert!(
        cm.get("required").is_none(),
        "metadata is not required upstream"
    );
    let list = &doc["components"]["schemas"]["io.k8s.api.core.v1.ConfigMapList"];
    assert_eq!(
        list["x-kubernetes-group-version-kind"][0]["kind"],
        "ConfigMapList"
    );
    assert!(
        doc["components"]["schemas"]
            .get("io.k8s.api.apps.v1.Deployment")
            .is_none()
    );
}

#[test]
fn v3_patch_operation_is_what_kubectl_looks_for() {
    let doc = &docs().v3["api/v1"];
    let path = &doc["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"];
    let patch = &path["patch"];
    assert_eq!(patch["operationId"], "patchCoreV1NamespacedConfigMap");
    assert_eq!(patch["x-kubernetes-action"], "patch");
    assert_eq!(
        patch["x-kubernetes-group-version-kind"],
        json!({"group": "", "kind": "ConfigMap", "version": "v1"})
    );
    let names: Vec<&str> = patch["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["dryRun", "fieldManager", "fieldValidation", "force"]
    );
    let content = patch["requestBody"]["content"].as_object().unwrap();
    let types: Vec<&String> = content.keys().collect();
    assert_eq!(
        types,
        [
            "application/apply-patch+yaml",
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/strategic-merge-patch+json"
        ]
    );
    assert_eq!(
        content["application/strategic-merge-patch+json"]["schema"]["$ref"],
        "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"
    );
    assert_eq!(
        patch["responses"]["200"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/io.k8s.api.core.v1.ConfigMap"
    );
    let path_params: Vec<&str> = path["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(path_params, ["name", "namespace", "pretty"]);
    for (method, id) in [
        ("get", "readCoreV1NamespacedConfigMap"),
        ("put", "replaceCoreV1NamespacedConfigMap"),
        ("delete", "deleteCoreV1NamespacedConfigMap"),
    ] {
        assert_eq!(path[method]["operationId"], id);
    }
    let collection = &doc["paths"]["/api/v1/namespaces/{namespace}/configmaps"];
    assert_eq!(
        collection["get"]["operationId"],
        "listCoreV1NamespacedConfigMap"
    );
    assert_eq!(
        collection["post"]["operationId"],
        "createCoreV1NamespacedConfigMap"
    );
    assert_eq!(
        collection["delete"]["operationId"],
        "deleteCoreV1CollectionNamespacedConfigMap"
    );
    assert_eq!(
        doc["paths"]["/api/v1/configmaps"]["get"]["operationId"],
        "listCoreV1ConfigMapForAllNamespaces"
    );
    assert_eq!(
        doc["paths"]["/api/v1/watch/namespaces/{namespace}/configmaps/{name}"]["get"]["operationId"],
        "watchCoreV1NamespacedConfigMap"
    );
}

#[test]
fn every_v3_document_is_self_contained() {
    for (gv, doc) in &docs().v3 {
        let mut refs = Vec::new();
        find_refs(doc, &mut refs);
        let schemas = doc["components"]["schemas"].as_object().unwrap();
        for r in refs {
            let name = r
                .strip_prefix("#/components/schemas/")
                .unwrap_or_else(|| panic!("{gv}: foreign ref {r}"));
            assert!(schemas.contains_key(name), "{gv}: dangling ref {name}");
        }
    }
    let keys: Vec<&String> = docs().v3.keys().collect();
    assert!(keys.contains(&&"apis/apps/v1".to_owned()));
    assert!(keys.contains(&&"apis/rbac.authorization.k8s.io/v1".to_owned()));
    assert_eq!(keys.len(), 12);
}

#[test]
fn v2_uses_definitions_refs_with_sibling_descriptions() {
    let v2 = &docs().v2;
    assert_eq!(v2["swagger"], "2.0");
    let defs = v2["definitions"].as_object().unwrap();
    let mut refs = Vec::new();
    find_refs(v2, &mut refs);
    for r in refs {
        let name = r.strip_prefix("#/definitions/").unwrap();
        assert!(defs.contains_key(name), "dangling {name}");
    }
    let cm = &defs["io.k8s.api.core.v1.ConfigMap"];
    assert_eq!(
        cm["properties"]["metadata"]["$ref"],
        "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );
    let deploy = &defs["io.k8s.api.apps.v1.Deployment"];
    assert_eq!(
        deploy["x-kubernetes-group-version-kind"],
        json!([{"group": "apps", "kind": "Deployment", "version": "v1"}])
    );
    let patch = &v2["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
    assert_eq!(patch["operationId"], "patchAppsV1NamespacedDeployment");
    assert_eq!(
        patch["consumes"],
        json!([
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/strategic-merge-patch+json",
            "application/apply-patch+yaml"
        ])
    );
    assert_eq!(patch["parameters"][0]["in"], "body");
    let scale =
        &v2["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"]["get"];
    assert_eq!(scale["operationId"], "readAppsV1NamespacedDeploymentScale");
    assert_eq!(
        scale["x-kubernetes-group-version-kind"],
        json!({"group": "autoscaling", "kind": "Scale", "version": "v1"})
    );
    assert_eq!(
        v2["paths"]["/apis/rbac.authorization.k8s.io/v1/clusterroles/{name}"]["get"]["operationId"],
        "readRbacAuthorizationV1ClusterRole"
    );
    assert_eq!(
        v2["paths"]["/api/v1/nodes/{name}/status"]["patch"]["operationId"],
        "patchCoreV1NodeStatus"
    );
}

#[test]
fn patch_strategies_and_list_types_are_set() {
    let defs = docs().v2["definitions"].as_object().unwrap();
    let containers = &defs["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"];
    assert_eq!(containers["x-kubernetes-patch-strategy"], "merge");
    assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
    assert_eq!(containers["x-kubernetes-list-type"], "map");
    assert_eq!(containers["x-kubernetes-list-map-keys"], json!(["name"]));
    let volumes = &defs["io.k8s.api.core.v1.PodSpec"]["properties"]["volumes"];
    assert_eq!(volumes["x-kubernetes-patch-strategy"], "merge,retainKeys");
    let ports = &defs["io.k8s.api.core.v1.Container"]["properties"]["ports"];
    assert_eq!(ports["x-kubernetes-patch-merge-key"], "containerPort");
    assert_eq!(
        ports["x-kubernetes-list-map-keys"],
        json!(["containerPort", "protocol"])
    );
    let svc_ports = &defs["io.k8s.api.core.v1.ServiceSpec"]["properties"]["ports"];
    assert_eq!(svc_ports["x-kubernetes-patch-merge-key"], "port");
    let meta = &defs["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]["properties"];
    assert_eq!(meta["finalizers"]["x-kubernetes-patch-strategy"], "merge");
    assert_eq!(meta["finalizers"]["x-kubernetes-list-type"], "set");
    assert_eq!(
        meta["ownerReferences"]["x-kubernetes-patch-merge-key"],
        "uid"
    );
    let conditions = &defs["io.k8s.api.apps.v1.DeploymentStatus"]["properties"]["conditions"];
    assert_eq!(conditions["x-kubernetes-patch-merge-key"], "type");
    assert_eq!(
        defs["io.k8s.api.core.v1.PodSpec"]["properties"]["tolerations"]["x-kubernetes-list-type"],
        "atomic"
    );
    // Every table entry names a real property, so a k8s-openapi rename cannot go unnoticed.
    for field in extensions::FIELD_EXTENSIONS {
        assert!(
            defs.get(field.definition)
                .and_then(|d| d["properties"].get(field.property))
                .is_some(),
            "{}.{} does not exist",
            field.definition,
            field.property
        );
    }
}

#[test]
fn delete_options_and_watch_event_list_every_group_version() {
    let defs = docs().v2["definitions"].as_object().unwrap();
    for name in [types::DELETE_OPTIONS, types::WATCH_EVENT] {
        let gvks = defs[name]["x-kubernetes-group-version-kind"]
            .as_array()
            .unwrap();
        assert_eq!(gvks.len(), 12, "{name}");
        assert!(gvks.contains(&json!({"group": "apps", "kind": gvks[0]["kind"], "version": "v1"})));
    }
}

#[test]
fn v2_protobuf_encoding_keeps_the_extensions() {
    use apiserver::endpoints::openapi::to_proto;
    let doc = to_proto::document(&docs().v2);
    let defs = doc.definitions.unwrap().additional_properties;
    let cm = defs
        .iter()
        .find(|d| d.name == "io.k8s.api.core.v1.ConfigMap")
        .and_then(|d| d.value.as_ref())
        .unwrap();
    let gvk = cm
        .vendor_extension
        .iter()
        .find(|e| e.name == "x-kubernetes-group-version-kind")
        .unwrap();
    assert_eq!(
        gvk.value.as_ref().unwrap().yaml,
        r#"[{"group":"","kind":"ConfigMap","version":"v1"}]"#
    );
    let metadata = cm
        .properties
        .as_ref()
        .unwrap()
        .additional_properties
        .iter()
        .find(|p| p.name == "metadata")
        .and_then(|p| p.value.as_ref())
        .unwrap();
    assert_eq!(
        metadata.r#ref,
        "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );
}

#[test]
fn publish_serves_every_group_version() {
    let service = OpenApiService::new();
    publish(&service, docs());
    assert!(service.v2_etag().is_some());
    assert_eq!(service.v3_paths().len(), docs().v3.len());
    assert!(service.v3_etag("api/v1").is_some());
}

/// `("", "v1")` for `api/v1`, `("apps", "v1")` for `apis/apps/v1`.
fn group_version_of(path: &str) -> (&str, &str) {
    match path.split('/').collect::<Vec<_>>().as_slice() {
        ["api", version] => ("", version),
        ["apis", group, version] => (group, version),
        _ => panic!("unexpected path {path}"),
    }
}

#[test]
fn lazy_documents_are_byte_for_byte_the_documents_built_at_once() {
    let lazy = LazyDocs::new(builtin_resources());
    let bytes = |v: &Value| serde_json::to_vec(v).unwrap();
    assert_eq!(bytes(&lazy.v2()), bytes(&docs().v2));
    assert!(Arc::ptr_eq(&lazy.v2(), &lazy.v2()), "v2 is built once");
    assert_eq!(
        lazy.v3_paths(),
        docs().v3.keys().cloned().collect::<Vec<_>>()
    );
    for (path, doc) in &docs().v3 {
        let (group, version) = group_version_of(path);
        assert_eq!(bytes(&lazy.v3(group, version)), bytes(doc), "{path}");
    }
}

#[test]
fn kind_schemas_are_self_contained_slices_of_the_v2_definitions() {
    let lazy = LazyDocs::new(builtin_resources());
    let v2_definitions = docs().v2["definitions"].as_object().unwrap();
    for spec in builtin_resources() {
        let doc = lazy.patch_schema(&spec.definition_name);
        assert!(Arc::ptr_eq(&doc, &lazy.patch_schema(&spec.definition_name)));
        let definitions = doc["definitions"].as_object().unwrap();
        assert!(definitions.contains_key(&spec.definition_name));
        for (name, definition) in definitions {
            assert_eq!(definition, &v2_definitions[name], "{name}");
        }
        let mut refs = Vec::new();
        find_refs(&doc, &mut refs);
        for reference in refs {
            let name = reference.trim_start_matches("#/definitions/");
            assert!(definitions.contains_key(name), "{}: {name}", spec.kind);
        }
    }
    let service = lazy.patch_schema("io.k8s.api.core.v1.Service");
    let ports = service["definitions"]["io.k8s.api.core.v1.ServicePort"]["properties"]["protocol"]
        ["default"]
        .clone();
    assert_eq!(ports, json!("TCP"));
    // Once the v2 document exists, it is the schema of every kind.
    let v2 = lazy.v2();
    assert!(Arc::ptr_eq(
        &lazy.patch_schema("io.k8s.api.core.v1.ConfigMap"),
        &v2
    ));
}

#[test]
fn lazy_publishing_serves_the_same_documents_and_etags() {
    let eager = OpenApiService::new();
    publish(&eager, docs());
    let lazy = OpenApiService::new();
    LazyDocs::new(builtin_resources()).publish(&lazy);
    assert_eq!(lazy.v3_paths(), eager.v3_paths());
    assert_eq!(lazy.v2_etag(), eager.v2_etag());
    for path in eager.v3_paths() {
        assert_eq!(lazy.v3_etag(&path), eager.v3_etag(&path), "{path}");
    }
}

#[test]
fn gv_paths_and_field_lookup() {
    let deploy =
        ResourceSpec::builtin("apps", "v1", "Deployment", "deployments", true, &[]).unwrap();
    assert_eq!(deploy.gv_path(), "apis/apps/v1");
    assert_eq!(gv_path("", "v1"), "api/v1");
    let env = extensions::field_extensions("io.k8s.api.core.v1.Container", "env").unwrap();
    assert_eq!(env.patch_merge_key, Some("name"));
    assert!(extensions::field_extensions("io.k8s.api.core.v1.Container", "image").is_none());
}

#[test]
fn document_sizes_are_reasonable() {
    let v2 = serde_json::to_vec(&docs().v2).unwrap();
    let v1 = serde_json::to_vec(&docs().v3["api/v1"]).unwrap();
    eprintln!("v2 {} bytes, v3 api/v1 {} bytes", v2.len(), v1.len());
    assert!(v2.len() < 8 << 20);
}

#[test]
fn strategic_merge_patch_reads_the_published_extensions() {
    use apiserver::endpoints::patch::{PatchMeta, SchemaPatchMeta};
    for doc in [&docs().v2, &docs().v3["api/v1"]] {
        let pod = SchemaPatchMeta::for_definition(doc, "io.k8s.api.core.v1.Pod").unwrap();
        let spec = pod.lookup_map_field("spec").unwrap();
        let containers = spec.schema.lookup_list_field("containers").unwrap();
        assert_eq!(containers.meta.strategies, ["merge"]);
        assert_eq!(containers.meta.merge_key.as_deref(), Some("name"));
        let env = containers.schema.lookup_list_field("env").unwrap();
        assert_eq!(env.meta.merge_key.as_deref(), Some("name"));
        let volumes = spec.schema.lookup_list_field("volumes").unwrap();
        assert_eq!(volumes.meta.strategies, ["merge", "retainKeys"]);
    }
}

#[test]
fn key_fields_of_port_lists_default_to_tcp_for_server_side_apply() {
    use apiserver::endpoints::apply::{self, ApplySchema, ListType, OpenApiSchema};
    for doc in [&docs().v2, &docs().v3["api/v1"]] {
        for (definition, property) in [
            ("io.k8s.api.core.v1.ServicePort", "protocol"),
            ("io.k8s.api.core.v1.ContainerPort", "protocol"),
        ] {
            let schema = doc
                .pointer("/definitions")
                .or_else(|| doc.pointer("/components/schemas"))
                .unwrap();
            assert_eq!(
                schema[definition]["properties"][property]["default"],
                json!("TCP")
            );
        }
        let service = OpenApiSchema::for_definition(doc, "io.k8s.api.core.v1.Service").unwrap();
        let spec = service.field("spec");
        let ports = spec.schema.field("ports");
        assert_eq!(
            ports.schema.list_type(),
            ListType::Map(vec!["port".into(), "protocol".into()])
        );
        assert_eq!(ports.schema.key_default("protocol"), Some(json!("TCP")));

        // Re-applying ports without protocol merges into the live, defaulted port.
        let applied = json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"ports": [{"name": "web", "port": 80}]}});
        let live = json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}});
        let merged = apply::apply(Some(&live), &applied, "kubectl", true, &service).unwrap();
        assert_eq!(
            merged["spec"]["ports"],
            json!([{"name": "web", "port": 80, "protocol": "TCP"}])
        );
    }
}

#[test]
fn resource_spec_from_registry_info() {
    let info = apiserver::registry::ResourceInfo {
        group: "apps".into(),
        version: "v1".into(),
        kind: "Deployment".into(),
        list_kind: "DeploymentList".into(),
        resource: "deployments".into(),
        singular: "deployment".into(),
        namespaced: true,
        short_names: vec!["deploy".into()],
        categories: vec!["all".into()],
    };
    let spec = ResourceSpec::from_info(&info, &["status", "scale"]).unwrap();
    assert_eq!(spec.definition_name, "io.k8s.api.apps.v1.Deployment");
    assert_eq!(spec.subresources, ["status", "scale"]);
}
