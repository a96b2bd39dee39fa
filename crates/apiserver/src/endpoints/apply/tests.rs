//! Apply and managed fields tests, after structured-merge-diff's merge tests and the field
//! manager tests of k8s.io/apiserver.

use serde_json::{Value, json};

use super::*;

const T1: &str = "2026-01-01T00:00:00Z";
const T2: &str = "2026-01-01T00:01:00Z";
const T3: &str = "2026-01-01T00:02:00Z";

/// A slice of kube's OpenAPI v2 document with the extensions the built-in types carry.
fn document() -> Value {
    json!({"definitions": {
        "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {"properties": {
            "name": {"type": "string"},
            "namespace": {"type": "string"},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
            "finalizers": {"type": "array", "items": {"type": "string"},
                "x-kubernetes-list-type": "set", "x-kubernetes-patch-strategy": "merge"},
            "managedFields": {"type": "array", "items": {"type": "object"},
                "x-kubernetes-list-type": "atomic"}
        }},
        "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector": {
            "properties": {"matchLabels": {"type": "object",
                "additionalProperties": {"type": "string"}}},
            "x-kubernetes-map-type": "atomic"
        },
        "io.k8s.api.core.v1.ConfigMap": {"properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"},
            "data": {"type": "object", "additionalProperties": {"type": "string"}},
            "immutable": {"type": "boolean"}
        }},
        "io.k8s.api.apps.v1.Deployment": {"properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"},
            "spec": {"$ref": "#/definitions/io.k8s.api.apps.v1.DeploymentSpec"},
            "status": {"$ref": "#/definitions/io.k8s.api.apps.v1.DeploymentStatus"}
        }},
        "io.k8s.api.apps.v1.DeploymentSpec": {"required": ["selector", "template"], "properties": {
            "replicas": {"type": "integer"},
            "selector": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector"},
            "strategy": {"$ref": "#/definitions/io.k8s.api.apps.v1.DeploymentStrategy"},
            "template": {"$ref": "#/definitions/io.k8s.api.core.v1.PodTemplateSpec"}
        }},
        "io.k8s.api.apps.v1.DeploymentStrategy": {"properties": {"type": {"type": "string"}}},
        "io.k8s.api.apps.v1.DeploymentStatus": {"properties": {"replicas": {"type": "integer"}}},
        "io.k8s.api.core.v1.PodTemplateSpec": {"properties": {
            "metadata": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"},
            "spec": {"$ref": "#/definitions/io.k8s.api.core.v1.PodSpec"}
        }},
        "io.k8s.api.core.v1.PodSpec": {"required": ["containers"], "properties": {
            "containers": {"type": "array",
                "items": {"$ref": "#/definitions/io.k8s.api.core.v1.Container"},
                "x-kubernetes-patch-merge-key": "name",
                "x-kubernetes-patch-strategy": "merge"}
        }},
        "io.k8s.api.core.v1.Container": {"required": ["name"], "properties": {
            "name": {"type": "string"},
            "image": {"type": "string"},
            "args": {"type": "array", "items": {"type": "string"}},
            "resources": {"$ref": "#/definitions/io.k8s.api.core.v1.ResourceRequirements"},
            "ports": {"type": "array",
                "items": {"$ref": "#/definitions/io.k8s.api.core.v1.ContainerPort"},
                "x-kubernetes-list-map-keys": ["containerPort", "protocol"],
                "x-kubernetes-list-type": "map",
                "x-kubernetes-patch-merge-key": "containerPort",
                "x-kubernetes-patch-strategy": "merge"}
        }},
        "io.k8s.api.core.v1.ContainerPort": {"required": ["containerPort"], "properties": {
            "containerPort": {"type": "integer"},
            "protocol": {"type": "string", "default": "TCP"}
        }},
        "io.k8s.api.core.v1.Service": {"properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"},
            "spec": {"$ref": "#/definitions/io.k8s.api.core.v1.ServiceSpec"}
        }},
        "io.k8s.api.core.v1.ServiceSpec": {"properties": {
            "selector": {"type": "object", "additionalProperties": {"type": "string"}},
            "ports": {"type": "array",
                "items": {"$ref": "#/definitions/io.k8s.api.core.v1.ServicePort"},
                "x-kubernetes-list-map-keys": ["port", "protocol"],
                "x-kubernetes-list-type": "map",
                "x-kubernetes-patch-merge-key": "port",
                "x-kubernetes-patch-strategy": "merge"}
        }},
        "io.k8s.api.core.v1.ServicePort": {"required": ["port"], "properties": {
            "name": {"type": "string"},
            "port": {"type": "integer"},
            "protocol": {"type": "string", "default": "TCP"},
            "targetPort": {"type": "string", "format": "int-or-string"}
        }},
        "io.k8s.api.core.v1.ResourceRequirements": {"properties": {
            "limits": {"type": "object", "additionalProperties": {"type": "string"}}
        }}
    }})
}

fn with_schema<T>(definition: &str, f: impl FnOnce(&dyn ApplySchema) -> T) -> T {
    let doc = document();
    let schema = OpenApiSchema::for_definition(&doc, definition).unwrap();
    f(&schema)
}

const CONFIG_MAP: &str = "io.k8s.api.core.v1.ConfigMap";
const DEPLOYMENT: &str = "io.k8s.api.apps.v1.Deployment";

fn apply_at(
    live: Option<&Value>,
    applied: &Value,
    manager: &str,
    force: bool,
    now: &str,
    definition: &str,
) -> Result<Value, ApplyError> {
    with_schema(definition, |schema| {
        apply_with(
            live,
            applied,
            &ApplyOptions {
                manager,
                force,
                subresource: "",
                now: Some(now),
                ignored: None,
            },
            schema,
        )
    })
}

fn update_at(
    old: Option<&Value>,
    new: &Value,
    manager: &str,
    now: &str,
    definition: &str,
) -> Value {
    let mut new = new.clone();
    let api_version = new["apiVersion"].as_str().unwrap().to_owned();
    with_schema(definition, |schema| {
        update_managed_fields_with(
            old,
            &mut new,
            &UpdateOptions {
                manager,
                operation: Operation::Update,
                api_version: &api_version,
                subresource: "",
                now: Some(now),
                ignored: None,
            },
            schema,
        )
    });
    new
}

/// The `FieldsV1` text of `manager`'s entry, as upstream would serialize it.
fn fields_of(object: &Value, manager: &str) -> String {
    let entry = managed_entry(object, manager).unwrap_or_else(|| panic!("no entry for {manager}"));
    Set::from_fields_v1(&entry["fieldsV1"])
        .unwrap()
        .to_fields_v1()
}

fn managed_entry<'v>(object: &'v Value, manager: &str) -> Option<&'v Value> {
    object["metadata"]["managedFields"]
        .as_array()?
        .iter()
        .find(|e| e["manager"] == manager)
}

fn managers(object: &Value) -> Vec<String> {
    object["metadata"]["managedFields"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|e| {
                    format!(
                        "{}/{}",
                        e["manager"].as_str().unwrap(),
                        e["operation"].as_str().unwrap()
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn config_map(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cm", "namespace": "default"}, "data": data})
}

#[test]
fn apply_creates_the_object_with_one_apply_entry() {
    let applied = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cm", "namespace": "default", "labels": {"app": "web"}},
        "data": {"key": "value"}});
    let created = apply_at(None, &applied, "kubectl", false, T1, CONFIG_MAP).unwrap();
    assert_eq!(created["data"], json!({"key": "value"}));
    assert_eq!(created["metadata"]["labels"], json!({"app": "web"}));
    assert_eq!(
        created["metadata"]["managedFields"],
        json!([{"manager": "kubectl", "operation": "Apply", "apiVersion": "v1", "time": T1,
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {"f:key": {}}, "f:metadata": {"f:labels": {"f:app": {}}}}}])
    );
    assert_eq!(
        fields_of(&created, "kubectl"),
        r#"{"f:data":{"f:key":{}},"f:metadata":{"f:labels":{"f:app":{}}}}"#
    );
}

#[test]
fn reapplying_the_same_configuration_changes_nothing() {
    let applied = config_map(json!({"key": "value"}));
    let created = apply_at(None, &applied, "kubectl", false, T1, CONFIG_MAP).unwrap();
    let again = apply_at(Some(&created), &applied, "kubectl", false, T2, CONFIG_MAP).unwrap();
    assert_eq!(again, created, "a no-op apply keeps even the timestamp");
}

#[test]
fn apply_removes_fields_the_manager_stopped_applying() {
    let first = apply_at(
        None,
        &config_map(json!({"a": "1", "b": "2"})),
        "kubectl",
        false,
        T1,
        CONFIG_MAP,
    )
    .unwrap();
    let second = apply_at(
        Some(&first),
        &config_map(json!({"a": "1"})),
        "kubectl",
        false,
        T2,
        CONFIG_MAP,
    )
    .unwrap();
    assert_eq!(second["data"], json!({"a": "1"}));
    assert_eq!(fields_of(&second, "kubectl"), r#"{"f:data":{"f:a":{}}}"#);
    assert_eq!(managed_entry(&second, "kubectl").unwrap()["time"], T2);
    // Applying nothing of `data` any more drops the map.
    let mut without_data = config_map(json!(null));
    without_data.as_object_mut().unwrap().remove("data");
    let third = apply_at(
        Some(&second),
        &without_data,
        "kubectl",
        false,
        T3,
        CONFIG_MAP,
    )
    .unwrap();
    assert!(third.get("data").is_none(), "{third}");
    assert!(third["metadata"].get("managedFields").is_none());
}

#[test]
fn fields_shared_by_two_appliers_stay_until_both_stop() {
    let a1 = apply_at(
        None,
        &config_map(json!({"a": "1"})),
        "alice",
        false,
        T1,
        CONFIG_MAP,
    )
    .unwrap();
    let b1 = apply_at(
        Some(&a1),
        &config_map(json!({"a": "1", "b": "2"})),
        "bob",
        false,
        T2,
        CONFIG_MAP,
    )
    .unwrap();
    assert_eq!(fields_of(&b1, "alice"), r#"{"f:data":{"f:a":{}}}"#);
    assert_eq!(fields_of(&b1, "bob"), r#"{"f:data":{"f:a":{},"f:b":{}}}"#);
    // Alice stops applying `a`: Bob still owns it.
    let a2 = apply_at(
        Some(&b1),
        &config_map(json!({"c": "3"})),
        "alice",
        false,
        T3,
        CONFIG_MAP,
    )
    .unwrap();
    assert_eq!(a2["data"], json!({"a": "1", "b": "2", "c": "3"}));
    assert_eq!(fields_of(&a2, "alice"), r#"{"f:data":{"f:c":{}}}"#);
    // Bob stops applying `a` too: now it goes.
    let b2 = apply_at(
        Some(&a2),
        &config_map(json!({"b": "2"})),
        "bob",
        false,
        T3,
        CONFIG_MAP,
    )
    .unwrap();
    assert_eq!(b2["data"], json!({"b": "2", "c": "3"}));
    // Changing a shared value conflicts with the other applier.
    let err = apply_at(
        Some(&b1),
        &config_map(json!({"a": "9"})),
        "alice",
        false,
        T3,
        CONFIG_MAP,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"Apply failed with 1 conflict: conflict with "bob": .data.a"#
    );
}

#[test]
fn conflict_with_an_updater_is_a_409_with_upstream_causes() {
    let created = update_at(
        None,
        &config_map(json!({"key": "old"})),
        "kubectl-client-side-apply",
        T1,
        CONFIG_MAP,
    );
    assert_eq!(
        fields_of(&created, "kubectl-client-side-apply"),
        r#"{"f:data":{".":{},"f:key":{}}}"#
    );
    let err = apply_at(
        Some(&created),
        &config_map(json!({"key": "new"})),
        "kubectl",
        false,
        T2,
        CONFIG_MAP,
    )
    .unwrap_err();
    let api: ApiError = err.into();
    assert_eq!(
        String::from_utf8(api.0.to_json_line()).unwrap(),
        concat!(
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","#,
            r#""message":"Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" using v1: .data.key","#,
            r#""reason":"Conflict","details":{"causes":[{"reason":"FieldManagerConflict","#,
            r#""message":"conflict with \"kubectl-client-side-apply\" using v1","field":".data.key"}]},"code":409}"#,
            "\n"
        )
    );

    // Applying the same value shares ownership without conflict.
    let shared = apply_at(
        Some(&created),
        &config_map(json!({"key": "old"})),
        "kubectl",
        false,
        T2,
        CONFIG_MAP,
    )
    .unwrap();
    assert_eq!(
        managers(&shared),
        ["kubectl/Apply", "kubectl-client-side-apply/Update"]
    );

    // Forcing moves the field to the applier; the updater keeps only the map it created
    // (as in kube, where `f:data: {}` stays behind).
    let forced = apply_at(
        Some(&created),
        &config_map(json!({"key": "new"})),
        "kubectl",
        true,
        T2,
        CONFIG_MAP,
    )
    .unwrap();
    assert_eq!(forced["data"]["key"], "new");
    assert_eq!(
        managers(&forced),
        ["kubectl/Apply", "kubectl-client-side-apply/Update"]
    );
    assert_eq!(fields_of(&forced, "kubectl"), r#"{"f:data":{"f:key":{}}}"#);
    assert_eq!(
        fields_of(&forced, "kubectl-client-side-apply"),
        r#"{"f:data":{}}"#
    );
}

#[test]
fn several_conflicts_are_grouped_by_manager() {
    let created = update_at(
        None,
        &config_map(json!({"a": "1", "b": "1"})),
        "editor",
        T1,
        CONFIG_MAP,
    );
    let applied = apply_at(
        Some(&created),
        &config_map(json!({"c": "1"})),
        "ci",
        false,
        T1,
        CONFIG_MAP,
    )
    .unwrap();
    let err = apply_at(
        Some(&applied),
        &config_map(json!({"a": "2", "b": "2", "c": "2"})),
        "kubectl",
        false,
        T2,
        CONFIG_MAP,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 3 conflicts: conflicts with \"ci\":\n- .data.c\nconflicts with \"editor\" using v1:\n- .data.a\n- .data.b"
    );
}

#[test]
fn updates_take_ownership_of_what_they_change() {
    let created = apply_at(
        None,
        &config_map(json!({"a": "1", "b": "1"})),
        "kubectl",
        false,
        T1,
        CONFIG_MAP,
    )
    .unwrap();
    let mut edited = created.clone();
    edited["data"]["a"] = json!("2");
    edited["data"]["z"] = json!("new");
    let updated = update_at(Some(&created), &edited, "kubectl-edit", T2, CONFIG_MAP);
    assert_eq!(managers(&updated), ["kubectl/Apply", "kubectl-edit/Update"]);
    assert_eq!(fields_of(&updated, "kubectl"), r#"{"f:data":{"f:b":{}}}"#);
    assert_eq!(
        fields_of(&updated, "kubectl-edit"),
        r#"{"f:data":{"f:a":{},"f:z":{}}}"#
    );
    let entry = managed_entry(&updated, "kubectl-edit").unwrap();
    assert_eq!(entry["apiVersion"], "v1");
    assert_eq!(entry["time"], T2);

    // An update that changes nothing keeps the managed fields as they were.
    let same = update_at(Some(&updated), &updated, "kubectl-edit", T3, CONFIG_MAP);
    assert_eq!(same, updated);

    // `[{}]` resets the managed fields, then the writer owns everything it changed.
    let mut reset = updated.clone();
    reset["metadata"]["managedFields"] = json!([{}]);
    reset["data"]["b"] = json!("x");
    let reset = update_at(Some(&updated), &reset, "kubectl-edit", T3, CONFIG_MAP);
    assert_eq!(managers(&reset), ["kubectl-edit/Update"]);
    assert_eq!(
        fields_of(&reset, "kubectl-edit"),
        r#"{"f:data":{"f:b":{}}}"#
    );
}

#[test]
fn an_untracked_live_object_is_attributed_to_before_first_apply() {
    let live = config_map(json!({"a": "1"}));
    let err = apply_at(
        Some(&live),
        &config_map(json!({"a": "2"})),
        "kubectl",
        false,
        T1,
        CONFIG_MAP,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"Apply failed with 1 conflict: conflict with "before-first-apply" using v1: .data.a"#
    );
}

fn deployment(image: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
    "spec": {
        "replicas": 1,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "app", "image": image}]}
        }
    }})
}

#[test]
fn deployment_fields_v1_match_kube_for_create_and_apply() {
    // `kubectl create -f`: an Update entry, with "." where Go's typed object gained a map,
    // list item or pointer struct (not for structs and required fields it always carries).
    let mut object = deployment("nginx");
    object["spec"]["strategy"] = json!({});
    object["spec"]["template"]["spec"]["containers"][0]["resources"] = json!({});
    object["status"] = json!({});
    let created = update_at(None, &object, "kubectl-create", T1, DEPLOYMENT);
    assert_eq!(
        fields_of(&created, "kubectl-create"),
        concat!(
            r#"{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:replicas":{},"#,
            r#""f:selector":{},"f:template":{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"#,
            r#""f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{},"#,
            r#""f:name":{},"f:resources":{}}}}}}}"#
        )
    );

    // `kubectl apply --server-side`: only what the configuration sets.
    let applied = apply_at(None, &deployment("nginx"), "kubectl", false, T1, DEPLOYMENT).unwrap();
    assert_eq!(
        fields_of(&applied, "kubectl"),
        concat!(
            r#"{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:replicas":{},"#,
            r#""f:selector":{},"f:template":{"f:metadata":{"f:labels":{"f:app":{}}},"#,
            r#""f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{},"#,
            r#""f:name":{}}}}}}}"#
        )
    );
}

#[test]
fn containers_merge_by_name_and_conflict_per_field() {
    let applied = apply_at(None, &deployment("nginx:1"), "helm", false, T1, DEPLOYMENT).unwrap();

    // Another manager adds a sidecar and changes the image.
    let mut edited = applied.clone();
    edited["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:2");
    edited["spec"]["template"]["spec"]["containers"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "sidecar", "image": "busybox"}));
    let edited = update_at(Some(&applied), &edited, "kubectl-edit", T2, DEPLOYMENT);
    assert_eq!(
        fields_of(&edited, "kubectl-edit"),
        concat!(
            r#"{"f:spec":{"f:template":{"f:spec":{"f:containers":{"#,
            r#""k:{\"name\":\"app\"}":{"f:image":{}},"#,
            r#""k:{\"name\":\"sidecar\"}":{".":{},"f:image":{},"f:name":{}}}}}}}"#
        )
    );

    // Re-applying the old image conflicts on that one field.
    let err = apply_at(
        Some(&edited),
        &deployment("nginx:1"),
        "helm",
        false,
        T3,
        DEPLOYMENT,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"Apply failed with 1 conflict: conflict with "kubectl-edit" using apps/v1: .spec.template.spec.containers[name="app"].image"#
    );
    let api: ApiError = err.into();
    let causes = &api.0.details.as_ref().unwrap().causes;
    assert_eq!(
        causes[0].field,
        r#".spec.template.spec.containers[name="app"].image"#
    );

    // Applying a new container keeps the sidecar (owned by the editor) and appends.
    let mut more = deployment("nginx:2");
    more["spec"]["template"]["spec"]["containers"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "log", "image": "fluent"}));
    let merged = apply_at(Some(&edited), &more, "helm", false, T3, DEPLOYMENT).unwrap();
    let names: Vec<&str> = merged["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["app", "sidecar", "log"]);

    // Helm stops applying "log": it goes; the sidecar, owned by the editor, stays.
    let pruned = apply_at(
        Some(&merged),
        &deployment("nginx:2"),
        "helm",
        false,
        T3,
        DEPLOYMENT,
    )
    .unwrap();
    let names: Vec<&str> = pruned["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["app", "sidecar"]);
}

#[test]
fn ports_are_keyed_by_container_port_and_defaulted_protocol() {
    let mut object = deployment("nginx");
    object["spec"]["template"]["spec"]["containers"][0]["ports"] =
        json!([{"containerPort": 80}, {"containerPort": 9, "protocol": "UDP"}]);
    let applied = apply_at(None, &object, "kubectl", false, T1, DEPLOYMENT).unwrap();
    let fields = fields_of(&applied, "kubectl");
    assert!(
        fields.contains(concat!(
            r#""f:ports":{"k:{\"containerPort\":9,\"protocol\":\"UDP\"}":{".":{},"f:containerPort":{},"f:protocol":{}},"#,
            r#""k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{}}}"#
        )),
        "{fields}"
    );
}

fn service(port_name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"app": "web"},
            "ports": [{"name": port_name, "port": 80, "targetPort": 8080}]}})
}

/// What the Service strategy's defaulting does to a stored port.
fn defaulted(mut service: Value) -> Value {
    for port in service["spec"]["ports"].as_array_mut().unwrap() {
        port.as_object_mut()
            .unwrap()
            .entry("protocol")
            .or_insert(json!("TCP"));
    }
    service
}

#[test]
fn reapplying_ports_without_protocol_matches_the_live_defaulted_port() {
    const SERVICE: &str = "io.k8s.api.core.v1.Service";
    let created =
        defaulted(apply_at(None, &service("http"), "kubectl", false, T1, SERVICE).unwrap());
    assert!(
        fields_of(&created, "kubectl").contains(
            r#""f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:name":{},"f:port":{},"f:targetPort":{}}}"#
        ),
        "{}",
        fields_of(&created, "kubectl")
    );
    for name in ["http", "web"] {
        let reapplied = apply_at(
            Some(&created),
            &service(name),
            "kubectl",
            false,
            T2,
            SERVICE,
        )
        .unwrap();
        assert_eq!(
            reapplied["spec"]["ports"],
            json!([{"name": name, "port": 80, "protocol": "TCP", "targetPort": 8080}])
        );
    }
}

#[test]
fn finalizers_are_a_set_owned_by_value() {
    let with_finalizers = |items: Value| {
        let mut cm = config_map(json!({"a": "1"}));
        cm["metadata"]["finalizers"] = items;
        cm
    };
    let first = apply_at(
        None,
        &with_finalizers(json!(["a", "b"])),
        "alice",
        false,
        T1,
        CONFIG_MAP,
    )
    .unwrap();
    assert_eq!(
        fields_of(&first, "alice"),
        r#"{"f:data":{"f:a":{}},"f:metadata":{"f:finalizers":{"v:\"a\"":{},"v:\"b\"":{}}}}"#
    );
    let mut bob = with_finalizers(json!(["c"]));
    bob.as_object_mut().unwrap().remove("data");
    let second = apply_at(Some(&first), &bob, "bob", false, T2, CONFIG_MAP).unwrap();
    assert_eq!(second["metadata"]["finalizers"], json!(["a", "b", "c"]));
    let third = apply_at(
        Some(&second),
        &with_finalizers(json!(["a"])),
        "alice",
        false,
        T3,
        CONFIG_MAP,
    )
    .unwrap();
    assert_eq!(third["metadata"]["finalizers"], json!(["a", "c"]));
}

#[test]
fn objects_without_schema_use_the_deduced_type() {
    let applied = json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w"}, "spec": {"size": 1, "tags": ["x"]}});
    let created = apply(None, &applied, "kubectl", false, &DeducedSchema).unwrap();
    // Deduced maps own their entries themselves; lists are atomic; the type and the
    // server-maintained metadata are never owned.
    assert_eq!(
        fields_of(&created, "kubectl"),
        r#"{"f:spec":{".":{},"f:size":{},"f:tags":{}}}"#
    );
}

#[test]
fn malformed_applied_objects_are_bad_requests() {
    let cases = [
        (
            json!({"kind": "ConfigMap", "metadata": {"name": "cm"}}),
            "invalid object type: /, Kind=ConfigMap",
        ),
        (
            json!({"apiVersion": "v1", "metadata": {"name": "cm"}}),
            "invalid object type: /v1, Kind=",
        ),
        (
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "cm", "managedFields": [{"manager": "x"}]}}),
            "metadata.managedFields must be nil",
        ),
    ];
    for (applied, message) in cases {
        let err = apply(None, &applied, "kubectl", false, &DeducedSchema).unwrap_err();
        let api: ApiError = err.into();
        assert_eq!(api.code(), 400);
        assert_eq!(api.0.message, message);
    }
    let live = config_map(json!({}));
    let mut other = config_map(json!({}));
    other["metadata"]["name"] = json!("other");
    let api: ApiError = apply(Some(&live), &other, "kubectl", false, &DeducedSchema)
        .unwrap_err()
        .into();
    assert_eq!(api.code(), 400);
    assert_eq!(
        api.0.message,
        "the name of the object (other) does not match the name on the URL (cm)"
    );

    let mut wrong_type = deployment("x");
    wrong_type["apiVersion"] = json!("apps/v1beta1");
    let live = deployment("x");
    let api: ApiError = apply(Some(&live), &wrong_type, "kubectl", false, &DeducedSchema)
        .unwrap_err()
        .into();
    assert_eq!(
        api.0.message,
        "invalid object type: apps/v1beta1, Kind=Deployment"
    );
}

#[test]
fn duplicate_keys_in_the_configuration_are_rejected() {
    let mut object = deployment("nginx");
    object["spec"]["template"]["spec"]["containers"] =
        json!([{"name": "a", "image": "x"}, {"name": "a", "image": "y"}]);
    let api: ApiError = apply_at(None, &object, "kubectl", false, T1, DEPLOYMENT)
        .unwrap_err()
        .into();
    assert_eq!(api.code(), 400);
    assert_eq!(
        api.0.message,
        r#"failed to create typed patch object (default/web; apps/v1, Kind=Deployment): .spec.template.spec.containers: duplicate entries for key [name="a"]"#
    );
}

#[test]
fn fields_the_schema_does_not_declare_are_rejected_naming_the_object() {
    let mut object = deployment("nginx");
    object["bogus"] = json!(1);
    object["spec"]["template"]["spec"]["containers"] =
        json!([{"name": "a", "image": "x", "extra": true}]);
    // Map entries (labels) and their values are not fields: they are accepted.
    object["metadata"]["labels"] = json!({"any-key": "v"});
    let api: ApiError = apply_at(None, &object, "kubectl", false, T1, DEPLOYMENT)
        .unwrap_err()
        .into();
    assert_eq!(api.code(), 400);
    assert_eq!(
        api.0.message,
        "failed to create typed patch object (default/web; apps/v1, Kind=Deployment): errors:\n  .bogus: field not declared in schema\n  .spec.template.spec.containers[name=\"a\"].extra: field not declared in schema"
    );
    object.as_object_mut().unwrap().remove("bogus");
    object["spec"]["template"]["spec"]["containers"] = json!([{"name": "a", "image": "x"}]);
    assert!(apply_at(None, &object, "kubectl", false, T1, DEPLOYMENT).is_ok());
}

#[test]
fn managed_fields_are_sorted_apply_first_then_by_time() {
    let created = update_at(None, &config_map(json!({"a": "1"})), "zeta", T1, CONFIG_MAP);
    let applied = apply_at(
        Some(&created),
        &config_map(json!({"b": "1"})),
        "kubectl",
        false,
        T3,
        CONFIG_MAP,
    )
    .unwrap();
    let mut edited = applied.clone();
    edited["data"]["c"] = json!("1");
    let edited = update_at(Some(&applied), &edited, "alpha", T2, CONFIG_MAP);
    assert_eq!(
        managers(&edited),
        ["kubectl/Apply", "zeta/Update", "alpha/Update"]
    );
}

#[test]
fn more_than_ten_updaters_merge_the_oldest_into_ancient_changes() {
    let mut object = update_at(
        None,
        &config_map(json!({"k0": "v"})),
        "m00",
        "2026-01-01T00:00:00Z",
        CONFIG_MAP,
    );
    for i in 1..=10 {
        let mut next = object.clone();
        next["data"][format!("k{i}")] = json!("v");
        let now = format!("2026-01-01T00:00:{i:02}Z");
        object = update_at(Some(&object), &next, &format!("m{i:02}"), &now, CONFIG_MAP);
    }
    let names = managers(&object);
    assert_eq!(names.len(), 10, "{names:?}");
    assert!(!names.iter().any(|n| n == "m00/Update" || n == "m01/Update"));
    assert_eq!(
        fields_of(&object, "ancient-changes"),
        r#"{"f:data":{".":{},"f:k0":{},"f:k1":{}}}"#
    );
    assert_eq!(
        managed_entry(&object, "ancient-changes").unwrap()["time"],
        "2026-01-01T00:00:01Z"
    );
}

#[test]
fn ignored_fields_are_never_owned() {
    let ignored = Set::from_paths([Path::fields(&["status"])]);
    let mut object = deployment("nginx");
    object["status"] = json!({"replicas": 3});
    let applied = with_schema(DEPLOYMENT, |schema| {
        apply_with(
            None,
            &object,
            &ApplyOptions {
                manager: "kubectl",
                now: Some(T1),
                ignored: Some(&ignored),
                ..ApplyOptions::default()
            },
            schema,
        )
    })
    .unwrap();
    assert!(!fields_of(&applied, "kubectl").contains("f:status"));

    let mut changed = applied.clone();
    changed["status"]["replicas"] = json!(4);
    with_schema(DEPLOYMENT, |schema| {
        update_managed_fields_with(
            Some(&applied),
            &mut changed,
            &UpdateOptions {
                manager: "controller",
                operation: Operation::Update,
                api_version: "apps/v1",
                subresource: "",
                now: Some(T2),
                ignored: Some(&ignored),
            },
            schema,
        )
    });
    assert_eq!(managers(&changed), ["kubectl/Apply"]);
}

#[test]
fn kubectl_server_side_apply_takes_over_from_client_side_apply() {
    // `kubectl apply` (client-side) created the object, keeping its configuration.
    let mut manifest = config_map(json!({"key": "old", "other": "x"}));
    let mut created = manifest.clone();
    created["metadata"]["annotations"] = json!({
        LAST_APPLIED_ANNOTATION: serde_json::to_string(&manifest).unwrap() + "\n"
    });
    let created = update_at(None, &created, "kubectl-client-side-apply", T1, CONFIG_MAP);

    // Another manager than kubectl conflicts as usual.
    manifest["data"]["key"] = json!("new");
    let err = apply_at(Some(&created), &manifest, "helm", false, T2, CONFIG_MAP).unwrap_err();
    assert!(matches!(err, ApplyError::Conflicts(_)));

    // `kubectl apply --server-side` takes the fields the annotation still describes.
    let upgraded = apply_at(Some(&created), &manifest, "kubectl", false, T2, CONFIG_MAP).unwrap();
    assert_eq!(upgraded["data"]["key"], "new");
    assert_eq!(
        upgraded["metadata"]["annotations"][LAST_APPLIED_ANNOTATION],
        r#"{"apiVersion":"v1","data":{"key":"new","other":"x"},"kind":"ConfigMap","metadata":{"name":"cm","namespace":"default"}}"#.to_owned() + "\n"
    );

    // A field changed since by someone else is not covered by the annotation.
    let mut edited = created.clone();
    edited["data"]["other"] = json!("edited");
    let edited = update_at(Some(&created), &edited, "kubectl-edit", T2, CONFIG_MAP);
    manifest["data"]["other"] = json!("y");
    let err = apply_at(Some(&edited), &manifest, "kubectl", false, T3, CONFIG_MAP).unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"Apply failed with 1 conflict: conflict with "kubectl-edit" using v1: .data.other"#
    );
}

#[test]
fn associative_lists_keep_the_applied_order_and_live_only_items_in_place() {
    with_schema(CONFIG_MAP, |schema| {
        let meta = schema.field("metadata");
        let finalizers = meta.schema.field("finalizers");
        let merged = typed::merge(
            &json!(["a", "b", "c"]),
            &json!(["c", "a"]),
            finalizers.schema.as_ref(),
        )
        .unwrap();
        assert_eq!(merged, json!(["b", "c", "a"]));
        let merged = typed::merge(
            &json!(["a", "b"]),
            &json!(["x", "b"]),
            finalizers.schema.as_ref(),
        )
        .unwrap();
        assert_eq!(merged, json!(["a", "x", "b"]));
    });
}
