//! What kubectl sends for built-in types: `kubectl patch` (strategic by default), `label`,
//! `annotate` and the three-way patches of client-side `apply`, against a hand-written schema
//! description of Pod, Deployment and ConfigMap fragments (the patch facts are upstream's
//! struct tags).

use serde_json::{Value, json};

use super::super::apply_strategic_merge_patch;
use crate::endpoints::patch::{PatchError, SchemaPatchMeta};

const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

fn merge(key: &str, items: &str) -> Value {
    json!({
        "type": "array",
        "items": {"$ref": format!("#/definitions/{items}")},
        "x-kubernetes-patch-strategy": "merge",
        "x-kubernetes-patch-merge-key": key
    })
}

fn document() -> Value {
    json!({"definitions": {
        "Pod": {"properties": {
            "metadata": {"$ref": "#/definitions/ObjectMeta"},
            "spec": {"$ref": "#/definitions/PodSpec"}
        }},
        "Deployment": {"properties": {
            "metadata": {"$ref": "#/definitions/ObjectMeta"},
            "spec": {"$ref": "#/definitions/DeploymentSpec"}
        }},
        "ConfigMap": {"properties": {
            "metadata": {"$ref": "#/definitions/ObjectMeta"},
            "data": {"type": "object", "additionalProperties": {"type": "string"}}
        }},
        "ObjectMeta": {"properties": {
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
            "finalizers": {
                "type": "array",
                "items": {"type": "string"},
                "x-kubernetes-patch-strategy": "merge",
                "x-kubernetes-list-type": "set"
            },
            "ownerReferences": merge("uid", "OwnerReference")
        }},
        "OwnerReference": {"properties": {}},
        "DeploymentSpec": {"properties": {
            "template": {"$ref": "#/definitions/PodTemplateSpec"},
            "strategy": {
                "allOf": [{"$ref": "#/definitions/DeploymentStrategy"}],
                "x-kubernetes-patch-strategy": "retainKeys"
            }
        }},
        "DeploymentStrategy": {"properties": {"type": {}, "rollingUpdate": {}}},
        "PodTemplateSpec": {"properties": {
            "metadata": {"$ref": "#/definitions/ObjectMeta"},
            "spec": {"$ref": "#/definitions/PodSpec"}
        }},
        "PodSpec": {"properties": {
            "containers": merge("name", "Container"),
            "initContainers": merge("name", "Container"),
            "volumes": {
                "type": "array",
                "items": {"$ref": "#/definitions/Volume"},
                "x-kubernetes-patch-strategy": "merge,retainKeys",
                "x-kubernetes-patch-merge-key": "name"
            },
            "tolerations": {"type": "array", "items": {"type": "object"}}
        }},
        "Volume": {"properties": {}},
        "Container": {"properties": {
            "args": {"type": "array", "items": {"type": "string"}},
            "env": merge("name", "EnvVar"),
            "ports": {
                "type": "array",
                "items": {"$ref": "#/definitions/ContainerPort"},
                "x-kubernetes-patch-strategy": "merge",
                "x-kubernetes-patch-merge-key": "containerPort",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["containerPort", "protocol"]
            },
            "volumeMounts": merge("mountPath", "VolumeMount")
        }},
        "EnvVar": {"properties": {}},
        "ContainerPort": {"properties": {}},
        "VolumeMount": {"properties": {}}
    }})
}

fn apply(kind: &str, original: &Value, patch: &Value) -> Result<Value, PatchError> {
    let doc = document();
    let meta = SchemaPatchMeta::for_definition(&doc, kind).unwrap();
    apply_strategic_merge_patch(original, patch, &meta)
}

fn pod() -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web",
            "namespace": "default",
            "labels": {"app": "web", "tier": "frontend"},
            "finalizers": ["example.com/a", "example.com/b"]
        },
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": "nginx:1.25",
                    "args": ["--port", "8080"],
                    "env": [{"name": "MODE", "value": "prod"}, {"name": "DEBUG", "value": "0"}],
                    "ports": [{"containerPort": 8080, "name": "http", "protocol": "TCP"}],
                    "volumeMounts": [{"mountPath": "/data", "name": "data"}]
                },
                {"name": "sidecar", "image": "busybox:1.36"}
            ],
            "volumes": [{"name": "data", "emptyDir": {}}],
            "tolerations": [{"key": "a", "operator": "Exists"}]
        }
    })
}

fn container<'v>(pod: &'v Value, name: &str) -> &'v Value {
    pod["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap()
}

#[test]
fn image_change_keeps_the_other_containers() {
    let patch = json!({"spec": {"containers": [{"name": "app", "image": "nginx:1.26"}]}});
    let result = apply("Pod", &pod(), &patch).unwrap();
    let mut expected = pod();
    expected["spec"]["containers"][0]["image"] = json!("nginx:1.26");
    assert_eq!(result, expected);
}

/// A new item of a merging list lands before the live items the patch does not mention:
/// upstream orders patch items ahead of server-only items it cannot place relative to them.
#[test]
fn new_container_goes_first() {
    let patch = json!({"spec": {"containers": [{"name": "log", "image": "fluentbit"}]}});
    let result = apply("Pod", &pod(), &patch).unwrap();
    let names: Vec<&Value> = result["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["name"])
        .collect();
    assert_eq!(names, [&json!("log"), &json!("app"), &json!("sidecar")]);

    // Mentioning a live item places the new one relative to it.
    let patch = json!({"spec": {"containers": [
        {"name": "app", "image": "nginx:1.26"},
        {"name": "log", "image": "fluentbit"}
    ]}});
    let result = apply("Pod", &pod(), &patch).unwrap();
    let names: Vec<&Value> = result["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["name"])
        .collect();
    assert_eq!(names, [&json!("app"), &json!("log"), &json!("sidecar")]);
}

#[test]
fn container_deleted_by_key() {
    let patch = json!({"spec": {"containers": [{"$patch": "delete", "name": "sidecar"}]}});
    let result = apply("Pod", &pod(), &patch).unwrap();
    assert_eq!(result["spec"]["containers"].as_array().unwrap().len(), 1);
    assert_eq!(result["spec"]["containers"][0]["name"], "app");
}

#[test]
fn container_list_replaced_by_directive() {
    let patch = json!({"spec": {"containers": [
        {"name": "only", "image": "x"},
        {"$patch": "replace"}
    ]}});
    let result = apply("Pod", &pod(), &patch).unwrap();
    assert_eq!(
        result["spec"]["containers"],
        json!([{"name": "only", "image": "x"}])
    );
}

#[test]
fn env_merges_by_name() {
    let patch = json!({"spec": {"containers": [{"name": "app", "env": [
        {"name": "DEBUG", "value": "1"},
        {"name": "NEW", "value": "x"},
        {"name": "MODE", "$patch": "delete"}
    ]}]}});
    let result = apply("Pod", &pod(), &patch).unwrap();
    assert_eq!(
        container(&result, "app")["env"],
        json!([{"name": "DEBUG", "value": "1"}, {"name": "NEW", "value": "x"}])
    );
}

#[test]
fn env_value_removed_with_null() {
    let patch = json!({"spec": {"containers": [{"name": "app", "env": [
        {"name": "DEBUG", "value": null, "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}
    ]}]}});
    let result = apply("Pod", &pod(), &patch).unwrap();
    assert_eq!(
        container(&result, "app")["env"],
        json!([
            {"name": "MODE", "value": "prod"},
            {"name": "DEBUG", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}
        ])
    );
}

#[test]
fn ports_merge_by_container_port() {
    let patch = json!({"spec": {"containers": [{"name": "app", "ports": [
        {"containerPort": 8443, "name": "https"},
        {"containerPort": 8080, "name": "web"}
    ]}]}});
    let result = apply("Pod", &pod(), &patch).unwrap();
    assert_eq!(
        container(&result, "app")["ports"],
        json!([
            {"containerPort": 8443, "name": "https"},
            {"containerPort": 8080, "name": "web", "protocol": "TCP"}
        ])
    );
}

#[test]
fn args_are_replaced_atomically() {
    let patch = json!({"spec": {"containers": [{"name": "app", "args": ["--port", "9090"]}]}});
    let result = apply("Pod", &pod(), &patch).unwrap();
    assert_eq!(container(&result, "app")["args"], json!(["--port", "9090"]));

    let patch = json!({"spec": {"tolerations": [{"key": "b", "operator": "Exists"}]}});
    let result = apply("Pod", &pod(), &patch).unwrap();
    assert_eq!(
        result["spec"]["tolerations"],
        json!([{"key": "b", "operator": "Exists"}])
    );
}

#[test]
fn volumes_merge_by_name_and_retain_keys() {
    // `kubectl apply` switching a volume's source: the old source must disappear.
    let patch = json!({"spec": {
        "$setElementOrder/volumes": [{"name": "data"}, {"name": "config"}],
        "volumes": [
            {"$retainKeys": ["configMap", "name"], "name": "data", "configMap": {"name": "cm"}},
            {"name": "config", "secret": {"secretName": "s"}}
        ]
    }});
    let result = apply("Pod", &pod(), &patch).unwrap();
    assert_eq!(
        result["spec"]["volumes"],
        json!([
            {"name": "data", "configMap": {"name": "cm"}},
            {"name": "config", "secret": {"secretName": "s"}}
        ])
    );
}

#[test]
fn labels_added_and_removed() {
    // `kubectl label pod web env=prod tier-`
    let patch = json!({"metadata": {"labels": {"env": "prod", "tier": null}}});
    let result = apply("Pod", &pod(), &patch).unwrap();
    assert_eq!(
        result["metadata"]["labels"],
        json!({"app": "web", "env": "prod"})
    );
    // `kubectl annotate pod web note=x` on an object without annotations.
    let patch = json!({"metadata": {"annotations": {"note": "x", "absent": null}}});
    let result = apply("Pod", &pod(), &patch).unwrap();
    assert_eq!(result["metadata"]["annotations"], json!({"note": "x"}));
}

#[test]
fn finalizers_merge_as_a_set() {
    let patch = json!({"metadata": {"finalizers": ["example.com/b", "example.com/c"]}});
    let result = apply("Pod", &pod(), &patch).unwrap();
    assert_eq!(
        result["metadata"]["finalizers"],
        json!(["example.com/a", "example.com/b", "example.com/c"])
    );

    let patch = json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["example.com/a"]}});
    let result = apply("Pod", &pod(), &patch).unwrap();
    assert_eq!(result["metadata"]["finalizers"], json!(["example.com/b"]));

    // Removing every finalizer the way controllers do it.
    let patch = json!({"metadata": {"finalizers": null}});
    let result = apply("Pod", &pod(), &patch).unwrap();
    assert!(result["metadata"].get("finalizers").is_none());
}

#[test]
fn finalizers_ordered_by_set_element_order() {
    let patch = json!({"metadata": {
        "$setElementOrder/finalizers": ["example.com/c", "example.com/a"],
        "$deleteFromPrimitiveList/finalizers": ["example.com/b"],
        "finalizers": ["example.com/c"]
    }});
    let result = apply("Pod", &pod(), &patch).unwrap();
    assert_eq!(
        result["metadata"]["finalizers"],
        json!(["example.com/c", "example.com/a"])
    );
}

#[test]
fn config_map_data_merges() {
    let original = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cfg"},
        "data": {"a": "1", "b": "2"}
    });
    let patch = json!({"data": {"b": "20", "c": "3", "a": null}});
    let result = apply("ConfigMap", &original, &patch).unwrap();
    assert_eq!(result["data"], json!({"b": "20", "c": "3"}));
}

#[test]
fn container_without_name_is_rejected() {
    let patch = json!({"spec": {"containers": [{"image": "nginx"}]}});
    assert_eq!(
        apply("Pod", &pod(), &patch).unwrap_err().to_string(),
        "map: map[image:nginx] does not contain declared merge key: name"
    );
}

fn deployment(last_applied: &str) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "annotations": {LAST_APPLIED: last_applied},
            "labels": {"app": "web"}
        },
        "spec": {
            "replicas": 2,
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}
            },
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [
                    {"name": "app", "image": "nginx:1.25",
                     "env": [{"name": "MODE", "value": "prod"}],
                     "terminationMessagePath": "/dev/termination-log"},
                    {"name": "sidecar", "image": "busybox:1.36"}
                ]}
            }
        }
    })
}

/// The three-way patch `kubectl apply` sends after the image changes, an env var is added, the
/// sidecar is removed from the manifest, and the strategy switches to `Recreate`.
#[test]
fn client_side_apply_patch() {
    let old_applied = r#"{"apiVersion":"apps/v1","kind":"Deployment","spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:1.25"},{"name":"sidecar","image":"busybox:1.36"}]}}}}"#;
    let new_applied = r#"{"apiVersion":"apps/v1","kind":"Deployment","spec":{"strategy":{"type":"Recreate"},"template":{"spec":{"containers":[{"name":"app","image":"nginx:1.26","env":[{"name":"LOG","value":"debug"}]}]}}}}"#;
    let patch = json!({
        "metadata": {"annotations": {LAST_APPLIED: format!("{new_applied}\n")}},
        "spec": {
            "strategy": {"$retainKeys": ["type"], "rollingUpdate": null, "type": "Recreate"},
            "template": {"spec": {
                "$setElementOrder/containers": [{"name": "app"}],
                "containers": [
                    {
                        "$setElementOrder/env": [{"name": "MODE"}, {"name": "LOG"}],
                        "env": [{"name": "LOG", "value": "debug"}],
                        "image": "nginx:1.26",
                        "name": "app"
                    },
                    {"$patch": "delete", "name": "sidecar"}
                ]
            }}
        }
    });
    let result = apply("Deployment", &deployment(old_applied), &patch).unwrap();

    let mut expected = deployment(&format!("{new_applied}\n"));
    expected["spec"]["strategy"] = json!({"type": "Recreate"});
    expected["spec"]["template"]["spec"]["containers"] = json!([{
        "name": "app",
        "image": "nginx:1.26",
        "env": [{"name": "MODE", "value": "prod"}, {"name": "LOG", "value": "debug"}],
        "terminationMessagePath": "/dev/termination-log"
    }]);
    assert_eq!(result, expected);
}

/// `kubectl apply` re-ordering containers: `$setElementOrder` alone reorders the live list.
#[test]
fn client_side_apply_reorders_containers() {
    let patch = json!({"spec": {"template": {"spec": {
        "$setElementOrder/containers": [{"name": "sidecar"}, {"name": "app"}]
    }}}});
    let result = apply("Deployment", &deployment("{}"), &patch).unwrap();
    let names: Vec<&Value> = result["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["name"])
        .collect();
    assert_eq!(names, [&json!("sidecar"), &json!("app")]);
}
