//! Bodies built by encoding `k8s-pb` messages (generated from upstream's `generated.proto`) the
//! way client-go's gogo marshallers do: value fields always present (empty strings, zero times),
//! pointer fields only when set.

use std::collections::BTreeMap;

use http::StatusCode;
use k8s_pb::api::coordination::v1 as coordination;
use k8s_pb::api::core::v1 as core;
use k8s_pb::api::policy::v1 as policy;
use k8s_pb::apimachinery::pkg::api::resource::Quantity;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
use prost::Message as _;
use serde_json::json;

use super::*;

fn s(v: &str) -> Option<String> {
    Some(v.to_string())
}

/// The envelope client-go's protobuf serializer writes around `raw`.
fn envelope_raw(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
    let unknown = Unknown {
        type_meta: Some(TypeMeta {
            api_version: s(api_version),
            kind: s(kind),
        }),
        raw: Some(raw),
        content_encoding: s(""),
        content_type: s(""),
    };
    let mut out = MAGIC.to_vec();
    out.extend(unknown.encode_to_vec());
    out
}

fn envelope(api_version: &str, kind: &str, object: &impl prost::Message) -> Vec<u8> {
    envelope_raw(api_version, kind, object.encode_to_vec())
}

/// ObjectMeta as gogo writes it for a fresh object: every value field present, the zero
/// `creationTimestamp` as an empty message.
fn meta(name: &str, namespace: &str) -> meta::ObjectMeta {
    meta::ObjectMeta {
        name: s(name),
        generate_name: s(""),
        namespace: s(namespace),
        self_link: s(""),
        uid: s(""),
        resource_version: s(""),
        generation: Some(0),
        creation_timestamp: Some(meta::Time::default()),
        ..Default::default()
    }
}

fn map<V: Clone>(pairs: &[(&str, V)]) -> BTreeMap<String, V> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

fn decode_ok(body: &[u8]) -> serde_json::Value {
    decode_kubernetes_protobuf(body).unwrap()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The object inside an encoded response, unwrapped by prost: the magic, then `runtime.Unknown`
/// with the apiVersion/kind of `object` and empty contentEncoding/contentType, as Go writes.
fn unwrap_envelope(body: &[u8], object: &serde_json::Value) -> Vec<u8> {
    let rest = body.strip_prefix(MAGIC).expect("magic");
    let unknown = Unknown::decode(rest).expect("prost reads the envelope");
    assert_eq!(
        unknown.encode_to_vec(),
        rest,
        "the envelope is written as gogo writes it"
    );
    let type_meta = unknown.type_meta.expect("typeMeta");
    assert_eq!(
        type_meta.api_version.as_deref(),
        object["apiVersion"].as_str()
    );
    assert_eq!(type_meta.kind.as_deref(), object["kind"].as_str());
    assert_eq!(unknown.content_encoding.as_deref(), Some(""));
    assert_eq!(unknown.content_type.as_deref(), Some(""));
    unknown.raw.expect("raw")
}

/// Encodes `object` and checks the result with prost (generated from upstream's
/// `generated.proto`, an independent decoder): prost reads it, re-encoding prost's message gives
/// the same bytes (field-number order, value fields present, pointers only when set, maps in
/// key order, unpacked repeated scalars; prost leaves out an empty map value gogo writes, so
/// that comparison needs none), and what prost read is the object again. Returns prost's
/// message.
fn assert_encoding_matches_prost<T: prost::Message + Default + std::fmt::Debug>(
    object: &serde_json::Value,
) -> T {
    let body = encode_kubernetes_protobuf(object).unwrap();
    let raw = unwrap_envelope(&body, object);
    let decoded = T::decode(raw.as_slice()).expect("prost reads the object");
    let again = decoded.encode_to_vec();
    if !has_empty_map_value(object) {
        assert_eq!(hex(&again), hex(&raw), "{decoded:?}");
    }
    let api_version = object["apiVersion"].as_str().unwrap();
    let kind = object["kind"].as_str().unwrap();
    if !can_encode(api_version, kind) {
        // Status and PartialObjectMetadata are never request bodies.
        return decoded;
    }
    assert_json(
        &without_zero_values(&decode_ok(&envelope_raw(api_version, kind, again))),
        &without_zero_values(object),
    );
    assert_json(
        &without_zero_values(&decode_ok(&body)),
        &without_zero_values(object),
    );
    decoded
}

fn has_empty_map_value(value: &serde_json::Value) -> bool {
    match value {
        serde_json::Value::Object(map) => map.iter().any(|(key, v)| {
            (matches!(
                key.as_str(),
                "labels" | "annotations" | "data" | "stringData"
            ) && v.as_object().is_some_and(|m| m.values().any(|v| v == "")))
                || has_empty_map_value(v)
        }),
        serde_json::Value::Array(items) => items.iter().any(has_empty_map_value),
        _ => false,
    }
}

/// `value` without zero values and empty objects: Go writes a struct value it was not given as
/// an empty message (`resources: {}`) and value fields without `omitempty` as zeros
/// (`disruptionsAllowed: 0`), which hand-built test objects leave out. (Zeros that must be
/// kept are checked byte for byte against prost's presence.)
fn without_zero_values(value: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), without_zero_values(v)))
                .filter(|(_, v)| {
                    !matches!(v, Value::Bool(false))
                        && v != 0
                        && v != ""
                        && v.as_object().is_none_or(|m| !m.is_empty())
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_zero_values).collect()),
        other => other.clone(),
    }
}

/// A body a Go client wrote, decoded here and encoded again, comes out byte for byte the same.
fn assert_encodes_back(body: &[u8]) {
    let object = decode_ok(body);
    let again = encode_kubernetes_protobuf(&object).unwrap();
    assert_eq!(hex(&again), hex(body), "{object}");
}

#[test]
fn secret_with_binary_data_becomes_base64() {
    let secret = core::Secret {
        metadata: Some(meta("sh.helm.release.v1.demo.v1", "default")),
        immutable: None,
        data: map(&[
            ("release", vec![0x1f, 0x8b, 0x08, 0x00, 0xff]),
            ("empty", vec![]),
        ]),
        string_data: BTreeMap::new(),
        r#type: s("helm.sh/release.v1"),
    };
    let got = decode_ok(&envelope("v1", "Secret", &secret));
    assert_eq!(
        got,
        json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "sh.helm.release.v1.demo.v1", "namespace": "default"},
            "data": {"release": "H4sIAP8=", "empty": ""},
            "type": "helm.sh/release.v1",
        })
    );
}

#[test]
fn configmap_with_labels_annotations_and_binary_data() {
    let mut metadata = meta("cm", "");
    metadata.labels = map(&[("app", "web".to_string()), ("tier", "".to_string())]);
    metadata.annotations = map(&[("note", "a b".to_string())]);
    let cm = core::ConfigMap {
        metadata: Some(metadata),
        immutable: Some(false),
        data: map(&[("a", "b".to_string()), ("multi", "x\ny\n".to_string())]),
        binary_data: map(&[("bin", b"\x00\x01\x02".to_vec())]),
    };
    let got = decode_ok(&envelope("v1", "ConfigMap", &cm));
    assert_encoding_matches_prost::<core::ConfigMap>(&got);
    assert_eq!(
        got,
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "cm",
                "labels": {"app": "web", "tier": ""},
                "annotations": {"note": "a b"},
            },
            // A pointer field: an explicit false is kept.
            "immutable": false,
            "data": {"a": "b", "multi": "x\ny\n"},
            "binaryData": {"bin": "AAEC"},
        })
    );
}

#[test]
fn namespace_with_spec_and_empty_status() {
    let ns = core::Namespace {
        metadata: Some(meta("team-a", "")),
        spec: Some(core::NamespaceSpec {
            finalizers: vec!["kubernetes".into()],
        }),
        status: Some(core::NamespaceStatus {
            phase: s(""),
            conditions: vec![],
        }),
    };
    let got = decode_ok(&envelope("v1", "Namespace", &ns));
    assert_eq!(
        got,
        json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "team-a"},
            "spec": {"finalizers": ["kubernetes"]},
            "status": {},
        })
    );
}

#[test]
fn delete_options_with_propagation_policy_and_preconditions() {
    let opts = meta::DeleteOptions {
        grace_period_seconds: Some(0),
        preconditions: Some(meta::Preconditions {
            uid: s("6a1c2f0e-0000-4000-8000-000000000001"),
            resource_version: s(""),
        }),
        orphan_dependents: None,
        propagation_policy: s("Background"),
        dry_run: vec!["All".into()],
        ignore_store_read_error_with_cluster_breaking_potential: None,
    };
    // client-go stamps the client's group version, not meta.k8s.io/v1.
    let got = decode_ok(&envelope("v1", "DeleteOptions", &opts));
    assert_eq!(
        got,
        json!({
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "gracePeriodSeconds": 0,
            "preconditions": {"uid": "6a1c2f0e-0000-4000-8000-000000000001", "resourceVersion": ""},
            "propagationPolicy": "Background",
            "dryRun": ["All"],
        })
    );
    let got = decode_ok(&envelope("apps/v1", "DeleteOptions", &opts));
    assert_eq!(got["apiVersion"], "apps/v1");
}

#[test]
fn object_meta_owner_references_finalizers_managed_fields_and_times() {
    let mut metadata = meta("x", "ns");
    metadata.uid = s("uid-1");
    metadata.resource_version = s("42");
    metadata.generation = Some(3);
    metadata.creation_timestamp = Some(meta::Time {
        seconds: Some(1_700_000_000),
        nanos: Some(123_000_000),
    });
    metadata.deletion_timestamp = Some(meta::Time {
        seconds: Some(1_700_000_100),
        nanos: Some(0),
    });
    metadata.deletion_grace_period_seconds = Some(0);
    metadata.finalizers = vec!["a/b".into(), "c".into()];
    metadata.owner_references = vec![meta::OwnerReference {
        api_version: s("apps/v1"),
        kind: s("ReplicaSet"),
        name: s("rs"),
        uid: s("uid-rs"),
        controller: Some(true),
        block_owner_deletion: Some(false),
    }];
    metadata.managed_fields = vec![meta::ManagedFieldsEntry {
        manager: s("kubectl-create"),
        operation: s("Update"),
        api_version: s("v1"),
        time: Some(meta::Time {
            seconds: Some(0),
            nanos: Some(0),
        }),
        fields_type: s("FieldsV1"),
        fields_v1: Some(meta::FieldsV1 {
            raw: Some(br#"{"f:data":{".":{},"f:a":{}}}"#.to_vec()),
        }),
        subresource: s(""),
    }];
    let cm = core::ConfigMap {
        metadata: Some(metadata),
        ..Default::default()
    };
    let got = decode_ok(&envelope("v1", "ConfigMap", &cm));
    assert_encoding_matches_prost::<core::ConfigMap>(&got);
    assert_eq!(
        got["metadata"],
        json!({
            "name": "x",
            "namespace": "ns",
            "uid": "uid-1",
            "resourceVersion": "42",
            "generation": 3,
            // metav1.Time serialises whole seconds.
            "creationTimestamp": "2023-11-14T22:13:20Z",
            "deletionTimestamp": "2023-11-14T22:15:00Z",
            "deletionGracePeriodSeconds": 0,
            "finalizers": ["a/b", "c"],
            "ownerReferences": [{
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": "rs",
                "uid": "uid-rs",
                "controller": true,
                "blockOwnerDeletion": false,
            }],
            "managedFields": [{
                "manager": "kubectl-create",
                "operation": "Update",
                "apiVersion": "v1",
                "time": "1970-01-01T00:00:00Z",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:data": {".": {}, "f:a": {}}},
            }],
        })
    );
}

#[test]
fn service_int_or_string_and_pointer_fields() {
    let svc = core::Service {
        metadata: Some(meta("web", "default")),
        spec: Some(core::ServiceSpec {
            ports: vec![
                core::ServicePort {
                    name: s("http"),
                    protocol: s("TCP"),
                    app_protocol: None,
                    port: Some(80),
                    target_port: Some(IntOrString {
                        r#type: Some(0),
                        int_val: Some(8080),
                        str_val: s(""),
                    }),
                    node_port: Some(0),
                },
                core::ServicePort {
                    name: s("metrics"),
                    protocol: s("TCP"),
                    app_protocol: None,
                    port: Some(9090),
                    target_port: Some(IntOrString {
                        r#type: Some(1),
                        int_val: Some(0),
                        str_val: s("metrics"),
                    }),
                    node_port: Some(0),
                },
            ],
            selector: map(&[("app", "web".to_string())]),
            cluster_ip: s(""),
            r#type: s("ClusterIP"),
            session_affinity: s(""),
            load_balancer_ip: s(""),
            external_name: s(""),
            external_traffic_policy: s(""),
            health_check_node_port: Some(0),
            publish_not_ready_addresses: Some(false),
            allocate_load_balancer_node_ports: Some(false),
            ..Default::default()
        }),
        status: Some(core::ServiceStatus {
            load_balancer: Some(core::LoadBalancerStatus::default()),
            conditions: vec![],
        }),
    };
    let got = decode_ok(&envelope("v1", "Service", &svc));
    assert_encoding_matches_prost::<core::Service>(&got);
    assert_eq!(
        got,
        json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "ports": [
                    {"name": "http", "protocol": "TCP", "port": 80, "targetPort": 8080},
                    {"name": "metrics", "protocol": "TCP", "port": 9090, "targetPort": "metrics"},
                ],
                "selector": {"app": "web"},
                "type": "ClusterIP",
                "allocateLoadBalancerNodePorts": false,
            },
            "status": {"loadBalancer": {}},
        })
    );
}

#[test]
fn quantities_stay_strings_and_micro_time_has_six_digits() {
    let quota = core::ResourceQuota {
        metadata: Some(meta("q", "default")),
        spec: Some(core::ResourceQuotaSpec {
            hard: map(&[
                ("cpu", Quantity { string: s("500m") }),
                ("pods", Quantity { string: s("10") }),
            ]),
            ..Default::default()
        }),
        status: Some(core::ResourceQuotaStatus::default()),
    };
    let got = decode_ok(&envelope("v1", "ResourceQuota", &quota));
    assert_encoding_matches_prost::<core::ResourceQuota>(&got);
    assert_eq!(got["spec"], json!({"hard": {"cpu": "500m", "pods": "10"}}));

    let lease = coordination::Lease {
        metadata: Some(meta("l", "kube-node-lease")),
        spec: Some(coordination::LeaseSpec {
            holder_identity: s("node-1"),
            lease_duration_seconds: Some(40),
            renew_time: Some(meta::MicroTime {
                seconds: Some(1_700_000_000),
                nanos: Some(5_000),
            }),
            lease_transitions: Some(0),
            ..Default::default()
        }),
    };
    let got = decode_ok(&envelope("coordination.k8s.io/v1", "Lease", &lease));
    assert_encoding_matches_prost::<coordination::Lease>(&got);
    assert_eq!(
        got["spec"],
        json!({
            "holderIdentity": "node-1",
            "leaseDurationSeconds": 40,
            "renewTime": "2023-11-14T22:13:20.000005Z",
            "leaseTransitions": 0,
        })
    );
}

#[test]
fn pod_disruption_budget_pointer_int_or_string_and_selector() {
    let pdb = policy::PodDisruptionBudget {
        metadata: Some(meta("pdb", "default")),
        spec: Some(policy::PodDisruptionBudgetSpec {
            min_available: Some(IntOrString {
                r#type: Some(0),
                int_val: Some(0),
                str_val: s(""),
            }),
            selector: Some(meta::LabelSelector {
                match_labels: map(&[("app", "web".to_string())]),
                match_expressions: vec![meta::LabelSelectorRequirement {
                    key: s("tier"),
                    operator: s("In"),
                    values: vec!["a".into(), "b".into()],
                }],
            }),
            ..Default::default()
        }),
        status: Some(policy::PodDisruptionBudgetStatus::default()),
    };
    let got = decode_ok(&envelope("policy/v1", "PodDisruptionBudget", &pdb));
    assert_encoding_matches_prost::<policy::PodDisruptionBudget>(&got);
    assert_eq!(
        got["spec"],
        json!({
            // A pointer: minAvailable 0 is a real setting.
            "minAvailable": 0,
            "selector": {
                "matchLabels": {"app": "web"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}],
            },
        })
    );
}

#[test]
fn unknown_fields_are_skipped_like_upstream() {
    // Field 99 (varint) and 98 (bytes) are not in ConfigMap.
    let mut raw = core::ConfigMap {
        metadata: Some(meta("cm", "")),
        ..Default::default()
    }
    .encode_to_vec();
    raw.extend([0x98, 0x06, 0x01, 0x92, 0x06, 0x01, b'z']);
    let got = decode_ok(&envelope_raw("v1", "ConfigMap", raw));
    assert_eq!(
        got,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}})
    );
}

#[test]
fn unsupported_kind_is_415() {
    // ComponentStatus is a built-in kind that is only read (never a request body).
    let pod = core::ComponentStatus {
        metadata: Some(meta("p", "default")),
        ..Default::default()
    };
    let err = decode_kubernetes_protobuf(&envelope("v1", "ComponentStatus", &pod)).unwrap_err();
    assert_eq!(err.code(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_eq!(err.reason(), "UnsupportedMediaType");
    assert_eq!(
        err.0.message,
        "the body of the request was in an unknown format - accepted media types include: \
         application/json, application/yaml"
    );
    // Right kind, wrong group version.
    let err = decode_kubernetes_protobuf(&envelope("apps/v1", "ConfigMap", &pod)).unwrap_err();
    assert_eq!(err.code(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
}

#[test]
fn wrong_magic_is_400() {
    let mut body = envelope("v1", "ConfigMap", &core::ConfigMap::default());
    body[3] = b'x';
    let err = decode_kubernetes_protobuf(&body).unwrap_err();
    assert_eq!(err.code(), StatusCode::BAD_REQUEST);
    assert!(
        err.0
            .message
            .contains("does not appear to be a protobuf message")
    );
    let err = decode_kubernetes_protobuf(br#"{"kind":"ConfigMap"}"#).unwrap_err();
    assert_eq!(err.code(), StatusCode::BAD_REQUEST);
    let err = decode_kubernetes_protobuf(b"").unwrap_err();
    assert_eq!(err.code(), StatusCode::BAD_REQUEST);
}

#[test]
fn malformed_envelope_is_400() {
    // Magic followed by garbage: field 1 with wire type 7.
    let err = decode_kubernetes_protobuf(b"k8s\0\x0f\x01").unwrap_err();
    assert_eq!(err.code(), StatusCode::BAD_REQUEST);
    // typeMeta given as a varint.
    let err = decode_kubernetes_protobuf(b"k8s\0\x08\x01").unwrap_err();
    assert_eq!(err.code(), StatusCode::BAD_REQUEST);
    // No kind at all.
    let err = decode_kubernetes_protobuf(b"k8s\0").unwrap_err();
    assert_eq!(err.code(), StatusCode::BAD_REQUEST);
    assert!(
        err.0.message.contains("'Kind' is missing"),
        "{}",
        err.0.message
    );
}

#[test]
fn truncated_message_is_400() {
    let cm = core::ConfigMap {
        metadata: Some(meta("cm", "default")),
        data: map(&[("a", "b".to_string())]),
        ..Default::default()
    };
    let body = envelope("v1", "ConfigMap", &cm);
    for cut in [body.len() - 1, body.len() - 5, 6] {
        let err = decode_kubernetes_protobuf(&body[..cut]).unwrap_err();
        assert_eq!(err.code(), StatusCode::BAD_REQUEST, "cut at {cut}");
        assert!(
            err.0.message.contains("unexpected EOF"),
            "{}",
            err.0.message
        );
    }
    // A raw object whose own bytes are truncated inside a complete envelope.
    let raw = cm.encode_to_vec();
    let err = decode_kubernetes_protobuf(&envelope_raw(
        "v1",
        "ConfigMap",
        raw[..raw.len() - 2].to_vec(),
    ))
    .unwrap_err();
    assert_eq!(err.code(), StatusCode::BAD_REQUEST);
}

#[test]
fn wrong_wire_type_for_a_field_is_400() {
    // ConfigMap.metadata (1) as a varint.
    let err =
        decode_kubernetes_protobuf(&envelope_raw("v1", "ConfigMap", vec![0x08, 0x01])).unwrap_err();
    assert_eq!(err.code(), StatusCode::BAD_REQUEST);
    assert!(
        err.0.message.contains("field 1 of ConfigMap"),
        "{}",
        err.0.message
    );
}

#[test]
fn supported_kinds_lists_the_tables() {
    let kinds: Vec<_> = supported_kinds().collect();
    for expected in [
        ("v1", "ConfigMap"),
        ("v1", "Secret"),
        ("v1", "Namespace"),
        ("v1", "Pod"),
        ("apps/v1", "StatefulSet"),
        ("apps/v1", "DaemonSet"),
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
        ("apiregistration.k8s.io/v1", "APIService"),
        ("*", "DeleteOptions"),
    ] {
        assert!(kinds.contains(&expected), "{expected:?}");
    }
}

fn unhex(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

/// Bodies captured from kubectl v1.35.2 (`create configmap x --from-literal=a=b
/// --from-literal=multi=line1`, `create secret generic s --from-literal=k=v`,
/// `create namespace team-a`) against a loopback listener.
#[test]
fn bodies_captured_from_kubectl_1_35() {
    let configmap = "6b3873000a0f0a0276311209436f6e6669674d617012320a180a017812001a0764656661756c74\
                     22002a0032003800420012060a0161120162120e0a056d756c746912056c696e65311a002200";
    assert_eq!(
        decode_ok(&unhex(configmap)),
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "x", "namespace": "default"},
            "data": {"a": "b", "multi": "line1"},
        })
    );
    let secret = "6b3873000a0c0a027631120653656372657412240a180a017312001a0764656661756c742200\
                  2a0032003800420012060a016b1201761a001a002200";
    assert_eq!(
        decode_ok(&unhex(secret)),
        json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "s", "namespace": "default"},
            "data": {"k": "dg=="},
        })
    );
    let namespace = "6b3873000a0f0a02763112094e616d657370616365121e0a160a067465616d2d6112001a002200\
                     2a0032003800420012001a020a001a002200";
    assert_eq!(
        decode_ok(&unhex(namespace)),
        json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "team-a"},
            "spec": {},
            "status": {},
        })
    );
    for body in [configmap, secret, namespace] {
        assert_encodes_back(&unhex(body));
    }
}

/// Further bodies captured from kubectl v1.35.2 `create ...` subcommands (all typed clients).
#[test]
fn workload_and_other_bodies_captured_from_kubectl_1_35() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "create deployment web --image=nginx --replicas=2 --port=8080",
            "6b3873000a150a07617070732f7631120a4465706c6f796d656e7412c0010a260a0377656212001a0764656661756c7422002a003200380042005a0a0a0361707012037765621287010802120c0a0a0a0361707012037765621a6d0a1c0a0012001a0022002a003200380042005a0a0a036170701203776562124d122f0a056e67696e7812056e67696e782a00320b0a00100018903f22002a0042006a007200800100880100900100a201001a00320042004a0052005800600068008201008a01009a0100c2010022020a00280038001a0c0800100018002000280038001a002200",
            r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"labels":{"app":"web"},"name":"web","namespace":"default"},"spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},"strategy":{},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"image":"nginx","name":"nginx","ports":[{"containerPort":8080}],"resources":{}}]}}},"status":{}}"#,
        ),
        (
            "create job j1 --image=busybox",
            "6b3873000a0f0a0862617463682f763112034a6f621281010a190a026a3112001a0764656661756c7422002a00320038004200125a32580a100a0012001a0022002a00320038004200124412210a026a31120762757379626f782a0042006a007200800100880100900100a201001a054e65766572320042004a0052005800600068008201008a01009a0100c201001a082000280030003a001a002200",
            r#"{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j1","namespace":"default"},"spec":{"template":{"metadata":{},"spec":{"containers":[{"image":"busybox","name":"j1","resources":{}}],"restartPolicy":"Never"}}},"status":{}}"#,
        ),
        (
            "create service clusterip websvc --tcp=80:8080",
            "6b3873000a0d0a02763112075365727669636512790a2c0a0677656273766312001a0764656661756c7422002a003200380042005a0d0a03617070120677656273766312450a1b0a0738302d38303830120354435018502207080010903f1a002800120d0a0361707012067765627376631a002209436c757374657249503a00420052005a00600068001a020a001a002200",
            r#"{"apiVersion":"v1","kind":"Service","metadata":{"labels":{"app":"websvc"},"name":"websvc","namespace":"default"},"spec":{"ports":[{"name":"80-8080","port":80,"protocol":"TCP","targetPort":8080}],"selector":{"app":"websvc"},"type":"ClusterIP"},"status":{"loadBalancer":{}}}"#,
        ),
        (
            "create serviceaccount sa1",
            "6b3873000a140a027631120e536572766963654163636f756e74121c0a1a0a0373613112001a0764656661756c7422002a003200380042001a002200",
            r#"{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"sa1","namespace":"default"}}"#,
        ),
        (
            "create priorityclass pc1 --value=10",
            "6b3873000a250a147363686564756c696e672e6b38732e696f2f7631120d5072696f72697479436c61737312310a130a0370633112001a0022002a00320038004200100a180022002a14507265656d70744c6f7765725072696f726974791a002200",
            r#"{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"pc1"},"preemptionPolicy":"PreemptLowerPriority","value":10}"#,
        ),
        (
            "create quota q1 --hard=pods=10",
            "6b3873000a130a027631120d5265736f7572636551756f7461122d0a190a02713112001a0764656661756c7422002a00320038004200120e0a0c0a04706f647312040a0231301a001a002200",
            r#"{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"q1","namespace":"default"},"spec":{"hard":{"pods":"10"}},"status":{}}"#,
        ),
    ];
    for (command, hex, expected) in cases {
        let expected: serde_json::Value = serde_json::from_str(expected).unwrap();
        assert_eq!(decode_ok(&unhex(hex)), expected, "kubectl {command}");
        assert_encodes_back(&unhex(hex));
    }
}

fn container(name: &str) -> core::Container {
    core::Container {
        name: s(name),
        image: s("nginx:1.27"),
        working_dir: s(""),
        resources: Some(core::ResourceRequirements::default()),
        termination_message_path: s(""),
        termination_message_policy: s(""),
        image_pull_policy: s(""),
        stdin: Some(false),
        stdin_once: Some(false),
        tty: Some(false),
        ..Default::default()
    }
}

#[test]
fn deployment_pod_template_with_inlined_references_probes_and_volumes() {
    let mut c = container("web");
    c.env = vec![core::EnvVar {
        name: s("PASSWORD"),
        value: s(""),
        value_from: Some(core::EnvVarSource {
            secret_key_ref: Some(core::SecretKeySelector {
                local_object_reference: Some(core::LocalObjectReference { name: s("creds") }),
                key: s("password"),
                optional: Some(false),
            }),
            ..Default::default()
        }),
    }];
    c.resources = Some(core::ResourceRequirements {
        limits: map(&[("memory", Quantity { string: s("128Mi") })]),
        requests: map(&[("cpu", Quantity { string: s("100m") })]),
        claims: vec![],
    });
    c.readiness_probe = Some(core::Probe {
        handler: Some(core::ProbeHandler {
            http_get: Some(core::HttpGetAction {
                path: s("/healthz"),
                port: Some(IntOrString {
                    r#type: Some(1),
                    int_val: Some(0),
                    str_val: s("http"),
                }),
                host: s(""),
                scheme: s("HTTP"),
                http_headers: vec![],
            }),
            ..Default::default()
        }),
        initial_delay_seconds: Some(0),
        timeout_seconds: Some(1),
        period_seconds: Some(10),
        success_threshold: Some(1),
        failure_threshold: Some(3),
        termination_grace_period_seconds: None,
    });
    c.volume_mounts = vec![core::VolumeMount {
        name: s("config"),
        read_only: Some(true),
        mount_path: s("/etc/web"),
        sub_path: s(""),
        sub_path_expr: s(""),
        ..Default::default()
    }];
    let pod_spec = core::PodSpec {
        volumes: vec![core::Volume {
            name: s("config"),
            volume_source: Some(core::VolumeSource {
                config_map: Some(core::ConfigMapVolumeSource {
                    local_object_reference: Some(core::LocalObjectReference { name: s("web") }),
                    items: vec![],
                    default_mode: Some(0o644),
                    optional: None,
                }),
                ..Default::default()
            }),
        }],
        containers: vec![c],
        restart_policy: s("Always"),
        termination_grace_period_seconds: Some(0),
        dns_policy: s(""),
        service_account_name: s(""),
        service_account: s(""),
        automount_service_account_token: Some(false),
        node_name: s(""),
        host_network: Some(false),
        host_pid: Some(false),
        host_ipc: Some(false),
        hostname: s(""),
        subdomain: s(""),
        scheduler_name: s(""),
        priority_class_name: s(""),
        tolerations: vec![core::Toleration {
            key: s("dedicated"),
            operator: s("Exists"),
            value: s(""),
            effect: s("NoSchedule"),
            toleration_seconds: None,
        }],
        ..Default::default()
    };
    let deployment = k8s_pb::api::apps::v1::Deployment {
        metadata: Some(meta("web", "default")),
        spec: Some(k8s_pb::api::apps::v1::DeploymentSpec {
            replicas: Some(0),
            selector: Some(meta::LabelSelector {
                match_labels: map(&[("app", "web".to_string())]),
                match_expressions: vec![],
            }),
            template: Some(core::PodTemplateSpec {
                metadata: Some(meta("", "")),
                spec: Some(pod_spec),
            }),
            strategy: Some(k8s_pb::api::apps::v1::DeploymentStrategy {
                r#type: s("RollingUpdate"),
                rolling_update: Some(k8s_pb::api::apps::v1::RollingUpdateDeployment {
                    max_unavailable: Some(IntOrString {
                        r#type: Some(1),
                        int_val: Some(0),
                        str_val: s("25%"),
                    }),
                    max_surge: None,
                }),
            }),
            min_ready_seconds: Some(0),
            paused: Some(false),
            ..Default::default()
        }),
        status: Some(k8s_pb::api::apps::v1::DeploymentStatus::default()),
    };
    let got = decode_ok(&envelope("apps/v1", "Deployment", &deployment));
    assert_encoding_matches_prost::<k8s_pb::api::apps::v1::Deployment>(&got);
    assert_eq!(
        got["spec"],
        json!({
            "replicas": 0,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%"}},
            "template": {
                "metadata": {},
                "spec": {
                    "volumes": [{"name": "config", "configMap": {"name": "web", "defaultMode": 420}}],
                    "containers": [{
                        "name": "web",
                        "image": "nginx:1.27",
                        "env": [{
                            "name": "PASSWORD",
                            "valueFrom": {
                                "secretKeyRef": {"name": "creds", "key": "password", "optional": false},
                            },
                        }],
                        "resources": {
                            "limits": {"memory": "128Mi"},
                            "requests": {"cpu": "100m"},
                        },
                        "readinessProbe": {
                            "httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP"},
                            "timeoutSeconds": 1,
                            "periodSeconds": 10,
                            "successThreshold": 1,
                            "failureThreshold": 3,
                        },
                        "volumeMounts": [{"name": "config", "readOnly": true, "mountPath": "/etc/web"}],
                    }],
                    "restartPolicy": "Always",
                    "terminationGracePeriodSeconds": 0,
                    "automountServiceAccountToken": false,
                    "tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
                },
            },
        })
    );
    assert_eq!(got["status"], json!({}));
}

/// kubectl v1.35.2 `create ingress web --rule="example.com/api*=svc:80,tls=my-cert"
/// --class=nginx`: the rule value is an embedded (inlined) struct.
#[test]
fn ingress_captured_from_kubectl_1_35() {
    let hex = "6b3873000a1f0a146e6574776f726b696e672e6b38732e696f2f76311207496e677265737312730a\
               1a0a0377656212001a0764656661756c7422002a00320038004200125112160a0b6578616d706c65\
               2e636f6d12076d792d636572741a300a0b6578616d706c652e636f6d12210a1f0a1d0a042f617069\
               120d220b0a0373766312040a0010501a0650726566697822056e67696e781a020a001a002200";
    assert_encodes_back(&unhex(hex));
    assert_eq!(
        decode_ok(&unhex(hex)),
        json!({
            "apiVersion": "networking.k8s.io/v1",
            "kind": "Ingress",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {
                "ingressClassName": "nginx",
                "rules": [{
                    "host": "example.com",
                    "http": {"paths": [{
                        "path": "/api",
                        "pathType": "Prefix",
                        "backend": {"service": {"name": "svc", "port": {"number": 80}}},
                    }]},
                }],
                "tls": [{"hosts": ["example.com"], "secretName": "my-cert"}],
            },
            "status": {"loadBalancer": {}},
        })
    );
}

#[test]
fn rbac_role_and_binding() {
    use k8s_pb::api::rbac::v1 as rbac;
    let role = rbac::ClusterRole {
        metadata: Some(meta("reader", "")),
        rules: vec![rbac::PolicyRule {
            verbs: vec!["get".into(), "list".into()],
            api_groups: vec!["".into()],
            resources: vec!["pods".into()],
            resource_names: vec![],
            non_resource_ur_ls: vec!["/healthz".into()],
        }],
        aggregation_rule: None,
    };
    let got = decode_ok(&envelope(
        "rbac.authorization.k8s.io/v1",
        "ClusterRole",
        &role,
    ));
    assert_eq!(
        got["rules"],
        json!([{
            "verbs": ["get", "list"],
            "apiGroups": [""],
            "resources": ["pods"],
            "nonResourceURLs": ["/healthz"],
        }])
    );
    let binding = rbac::RoleBinding {
        metadata: Some(meta("read", "default")),
        subjects: vec![rbac::Subject {
            kind: s("ServiceAccount"),
            api_group: s(""),
            name: s("sa1"),
            namespace: s("default"),
        }],
        role_ref: Some(rbac::RoleRef {
            api_group: s("rbac.authorization.k8s.io"),
            kind: s("ClusterRole"),
            name: s("reader"),
        }),
    };
    let got = decode_ok(&envelope(
        "rbac.authorization.k8s.io/v1",
        "RoleBinding",
        &binding,
    ));
    assert_eq!(
        got,
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "read", "namespace": "default"},
            "subjects": [{"kind": "ServiceAccount", "name": "sa1", "namespace": "default"}],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "reader"},
        })
    );
}

#[test]
fn tables_have_unique_numbers_and_json_names() {
    for (version, kind, message) in generated::KINDS {
        let errors = schema::table_errors(message);
        assert!(errors.is_empty(), "{version} {kind}: {errors:?}");
    }
    assert!(schema::table_errors(generated::DELETE_OPTIONS).is_empty());
}

/// prost's field name for a JSON name (heck's snake case of the proto name, which equals the
/// JSON name except for `$ref`/`$schema` and the `x-kubernetes-*` spellings).
fn snake(json: &str) -> String {
    let chars: Vec<char> = json.trim_start_matches('$').chars().collect();
    let mut out = String::new();
    for (i, c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            if !out.ends_with('_') {
                out.push('_');
            }
            continue;
        }
        if c.is_uppercase() && i > 0 {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            if (prev.is_lowercase() || prev.is_numeric() || (prev.is_uppercase() && next_lower))
                && !out.ends_with('_')
            {
                out.push('_');
            }
        }
        out.extend(c.to_lowercase());
    }
    out
}

/// Checks that each distinct leaf of `ours` sits in the prost field named after its JSON key
/// in `debug` (the prost message's Debug output).
fn check_names(value: &serde_json::Value, debug: &str, path: &str, errors: &mut Vec<String>) {
    use serde_json::Value;
    let is_map_key = |k: &str| k.starts_with('k') && k[1..].parse::<u64>().is_ok();
    let is_tagged = |s: &str| s.starts_with('v') && s[1..].parse::<u64>().is_ok();
    // k8s-pb's own spellings of a few proto names.
    let alias = |field: &str| match field {
        "cluster_i_ps" => "cluster_ips".to_string(),
        "external_i_ps" => "external_ips".to_string(),
        "api_group" => "a_pi_group".to_string(),
        "uid" => "u_id".to_string(),
        other => other.to_string(),
    };
    let found = |field: &str, rest: &str| {
        [field.to_string(), alias(field)].iter().any(|f| {
            debug.contains(&format!("{f}: {rest}")) || debug.contains(&format!("r#{f}: {rest}"))
        })
    };
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                let at = format!("{path}.{key}");
                // The envelope's apiVersion and kind are not part of the message.
                if !is_map_key(key) && !(path.is_empty() && (key == "apiVersion" || key == "kind"))
                {
                    let field = snake(key);
                    let expected = match v {
                        Value::String(s) if is_tagged(s) => Some(format!("Some(\"{s}\")")),
                        Value::Array(items) => match items.first() {
                            Some(Value::String(s)) if is_tagged(s) => Some(format!("[\"{s}\"")),
                            Some(Value::Number(n)) if n.as_u64().is_some_and(|n| n < 900_000) => {
                                Some(format!("[{n}"))
                            }
                            _ => None,
                        },
                        Value::Number(n) if n.as_u64().is_some_and(|n| n < 900_000) => {
                            Some(format!("Some({n})"))
                        }
                        Value::Object(m) => m
                            .keys()
                            .next()
                            .filter(|k| is_map_key(k))
                            .map(|k| format!("{{\"{k}\"")),
                        _ => None,
                    };
                    if let Some(rest) = expected
                        && !found(&field, &rest)
                    {
                        errors.push(format!("{at}: prost has no `{field}: {rest}`"));
                    }
                }
                check_names(v, debug, &at, errors);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                check_names(v, debug, &format!("{path}[{i}]"), errors);
            }
        }
        _ => {}
    }
}

/// The paths where two JSON values differ.
fn json_diff(a: &serde_json::Value, b: &serde_json::Value, path: &str, out: &mut Vec<String>) {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for key in x.keys().chain(y.keys().filter(|k| !x.contains_key(*k))) {
                match (x.get(key), y.get(key)) {
                    (Some(p), Some(q)) => json_diff(p, q, &format!("{path}.{key}"), out),
                    (p, q) => out.push(format!("{path}.{key}: {p:?} vs {q:?}")),
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                json_diff(p, q, &format!("{path}[{i}]"), out);
            }
        }
        _ if a != b => out.push(format!("{path}: {a} vs {b}")),
        _ => {}
    }
}

/// Encodes the fully populated sample of `kind` from our table, has prost (generated from
/// upstream's `generated.proto`) decode and re-encode it, and checks that (1) prost accepts every
/// field's wire type, (2) prost knows every field number (re-encoding loses none), and (3) each
/// value sits in the prost field named like its JSON key.
fn check_against_prost<T: prost::Message + Default + std::fmt::Debug>(
    version: &str,
    kind: &str,
) -> Vec<String> {
    let message = generated::KINDS
        .iter()
        .find(|(v, k, _)| *v == version && *k == kind)
        .map(|(_, _, m)| *m)
        .unwrap_or_else(|| panic!("{version} {kind} has no table"));
    let raw = schema::sample(message);
    let ours = decode_ok(&envelope_raw(version, kind, raw.clone()));
    let decoded = match T::decode(raw.as_slice()) {
        Ok(decoded) => decoded,
        Err(err) => return vec![format!("prost rejects the sample: {err}")],
    };
    let again = decode_ok(&envelope(version, kind, &decoded));
    let mut errors = Vec::new();
    json_diff(&ours, &again, "", &mut errors);
    check_names(&ours, &format!("{decoded:?}"), "", &mut errors);
    // And back: the JSON encoded here, read by prost and by the decoder here.
    match encode_kubernetes_protobuf(&ours) {
        Ok(body) => {
            let raw = unwrap_envelope(&body, &ours);
            match T::decode(raw.as_slice()) {
                Ok(back) => {
                    if back.encode_to_vec() != raw {
                        errors.push(format!("prost re-encodes differently: {back:?}"));
                    }
                    check_names(&ours, &format!("{back:?}"), "", &mut errors);
                }
                Err(err) => errors.push(format!("prost rejects the encoding: {err}")),
            }
            json_diff(&decode_ok(&body), &ours, "", &mut errors);
        }
        Err(err) => errors.push(format!("encoding fails: {err}")),
    }
    errors
}

/// Every served kind, fully populated (all fields and nested messages), against prost.
#[test]
fn every_kind_fully_populated_matches_prost() {
    use k8s_pb::api::{
        admissionregistration::v1 as admreg, authentication::v1 as authn,
        autoscaling::v2 as autoscaling2, certificates::v1 as certs, node::v1 as node,
        resource::v1 as dra,
    };
    use k8s_pb::api::{
        apps::v1 as apps, authorization::v1 as authz, autoscaling::v1 as autoscaling,
        batch::v1 as batch, coordination::v1 as coord, discovery::v1 as discovery,
        events::v1 as events, networking::v1 as net, policy::v1 as pol, rbac::v1 as rbac,
        scheduling::v1 as sched, storage::v1 as storage,
    };
    use k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiext;
    use k8s_pb::kube_aggregator::pkg::apis::apiregistration::v1 as apireg;
    type Check = fn(&str, &str) -> Vec<String>;
    let checks: &[(&str, &str, Check)] = &[
        ("v1", "ConfigMap", check_against_prost::<core::ConfigMap>),
        (
            "authentication.k8s.io/v1",
            "TokenRequest",
            check_against_prost::<authn::TokenRequest>,
        ),
        (
            "authentication.k8s.io/v1",
            "TokenReview",
            check_against_prost::<authn::TokenReview>,
        ),
        (
            "authentication.k8s.io/v1",
            "SelfSubjectReview",
            check_against_prost::<authn::SelfSubjectReview>,
        ),
        ("v1", "Secret", check_against_prost::<core::Secret>),
        ("v1", "Namespace", check_against_prost::<core::Namespace>),
        (
            "v1",
            "ServiceAccount",
            check_against_prost::<core::ServiceAccount>,
        ),
        ("v1", "Service", check_against_prost::<core::Service>),
        ("v1", "Endpoints", check_against_prost::<core::Endpoints>),
        ("v1", "Event", check_against_prost::<core::Event>),
        ("v1", "Pod", check_against_prost::<core::Pod>),
        ("v1", "Binding", check_against_prost::<core::Binding>),
        ("v1", "Node", check_against_prost::<core::Node>),
        (
            "v1",
            "PersistentVolumeClaim",
            check_against_prost::<core::PersistentVolumeClaim>,
        ),
        (
            "v1",
            "PersistentVolume",
            check_against_prost::<core::PersistentVolume>,
        ),
        ("v1", "LimitRange", check_against_prost::<core::LimitRange>),
        (
            "v1",
            "ResourceQuota",
            check_against_prost::<core::ResourceQuota>,
        ),
        (
            "v1",
            "ReplicationController",
            check_against_prost::<core::ReplicationController>,
        ),
        (
            "apps/v1",
            "ControllerRevision",
            check_against_prost::<apps::ControllerRevision>,
        ),
        (
            "apps/v1",
            "DaemonSet",
            check_against_prost::<apps::DaemonSet>,
        ),
        (
            "apps/v1",
            "Deployment",
            check_against_prost::<apps::Deployment>,
        ),
        (
            "apps/v1",
            "ReplicaSet",
            check_against_prost::<apps::ReplicaSet>,
        ),
        (
            "apps/v1",
            "StatefulSet",
            check_against_prost::<apps::StatefulSet>,
        ),
        (
            "autoscaling/v1",
            "Scale",
            check_against_prost::<autoscaling::Scale>,
        ),
        (
            "events.k8s.io/v1",
            "Event",
            check_against_prost::<events::Event>,
        ),
        ("batch/v1", "CronJob", check_against_prost::<batch::CronJob>),
        ("batch/v1", "Job", check_against_prost::<batch::Job>),
        (
            "networking.k8s.io/v1",
            "IngressClass",
            check_against_prost::<net::IngressClass>,
        ),
        (
            "networking.k8s.io/v1",
            "Ingress",
            check_against_prost::<net::Ingress>,
        ),
        (
            "networking.k8s.io/v1",
            "NetworkPolicy",
            check_against_prost::<net::NetworkPolicy>,
        ),
        (
            "policy/v1",
            "PodDisruptionBudget",
            check_against_prost::<pol::PodDisruptionBudget>,
        ),
        (
            "policy/v1",
            "Eviction",
            check_against_prost::<pol::Eviction>,
        ),
        (
            "authorization.k8s.io/v1",
            "SubjectAccessReview",
            check_against_prost::<authz::SubjectAccessReview>,
        ),
        (
            "authorization.k8s.io/v1",
            "SelfSubjectAccessReview",
            check_against_prost::<authz::SelfSubjectAccessReview>,
        ),
        (
            "authorization.k8s.io/v1",
            "LocalSubjectAccessReview",
            check_against_prost::<authz::LocalSubjectAccessReview>,
        ),
        (
            "authorization.k8s.io/v1",
            "SelfSubjectRulesReview",
            check_against_prost::<authz::SelfSubjectRulesReview>,
        ),
        (
            "rbac.authorization.k8s.io/v1",
            "Role",
            check_against_prost::<rbac::Role>,
        ),
        (
            "rbac.authorization.k8s.io/v1",
            "ClusterRole",
            check_against_prost::<rbac::ClusterRole>,
        ),
        (
            "rbac.authorization.k8s.io/v1",
            "RoleBinding",
            check_against_prost::<rbac::RoleBinding>,
        ),
        (
            "rbac.authorization.k8s.io/v1",
            "ClusterRoleBinding",
            check_against_prost::<rbac::ClusterRoleBinding>,
        ),
        (
            "storage.k8s.io/v1",
            "StorageClass",
            check_against_prost::<storage::StorageClass>,
        ),
        (
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            check_against_prost::<apiext::CustomResourceDefinition>,
        ),
        (
            "scheduling.k8s.io/v1",
            "PriorityClass",
            check_against_prost::<sched::PriorityClass>,
        ),
        (
            "coordination.k8s.io/v1",
            "Lease",
            check_against_prost::<coord::Lease>,
        ),
        (
            "discovery.k8s.io/v1",
            "EndpointSlice",
            check_against_prost::<discovery::EndpointSlice>,
        ),
        (
            "apiregistration.k8s.io/v1",
            "APIService",
            check_against_prost::<apireg::APIService>,
        ),
        (
            "admissionregistration.k8s.io/v1",
            "MutatingWebhookConfiguration",
            check_against_prost::<admreg::MutatingWebhookConfiguration>,
        ),
        (
            "admissionregistration.k8s.io/v1",
            "ValidatingWebhookConfiguration",
            check_against_prost::<admreg::ValidatingWebhookConfiguration>,
        ),
        (
            "admissionregistration.k8s.io/v1",
            "ValidatingAdmissionPolicy",
            check_against_prost::<admreg::ValidatingAdmissionPolicy>,
        ),
        (
            "admissionregistration.k8s.io/v1",
            "ValidatingAdmissionPolicyBinding",
            check_against_prost::<admreg::ValidatingAdmissionPolicyBinding>,
        ),
        (
            "v1",
            "PodTemplate",
            check_against_prost::<core::PodTemplate>,
        ),
        ("v1", "Binding", check_against_prost::<core::Binding>),
        (
            "autoscaling/v1",
            "HorizontalPodAutoscaler",
            check_against_prost::<autoscaling::HorizontalPodAutoscaler>,
        ),
        (
            "autoscaling/v2",
            "HorizontalPodAutoscaler",
            check_against_prost::<autoscaling2::HorizontalPodAutoscaler>,
        ),
        (
            "certificates.k8s.io/v1",
            "CertificateSigningRequest",
            check_against_prost::<certs::CertificateSigningRequest>,
        ),
        (
            "node.k8s.io/v1",
            "RuntimeClass",
            check_against_prost::<node::RuntimeClass>,
        ),
        (
            "resource.k8s.io/v1",
            "DeviceClass",
            check_against_prost::<dra::DeviceClass>,
        ),
        (
            "resource.k8s.io/v1",
            "ResourceClaim",
            check_against_prost::<dra::ResourceClaim>,
        ),
        (
            "resource.k8s.io/v1",
            "ResourceClaimTemplate",
            check_against_prost::<dra::ResourceClaimTemplate>,
        ),
        (
            "resource.k8s.io/v1",
            "ResourceSlice",
            check_against_prost::<dra::ResourceSlice>,
        ),
        (
            "storage.k8s.io/v1",
            "CSIDriver",
            check_against_prost::<storage::CSIDriver>,
        ),
        (
            "storage.k8s.io/v1",
            "CSINode",
            check_against_prost::<storage::CSINode>,
        ),
        (
            "storage.k8s.io/v1",
            "CSIStorageCapacity",
            check_against_prost::<storage::CSIStorageCapacity>,
        ),
        (
            "storage.k8s.io/v1",
            "VolumeAttachment",
            check_against_prost::<storage::VolumeAttachment>,
        ),
        (
            "storage.k8s.io/v1",
            "VolumeAttributesClass",
            check_against_prost::<storage::VolumeAttributesClass>,
        ),
        (
            "networking.k8s.io/v1",
            "IPAddress",
            check_against_prost::<net::IPAddress>,
        ),
        (
            "networking.k8s.io/v1",
            "ServiceCIDR",
            check_against_prost::<net::ServiceCIDR>,
        ),
    ];
    let mut failures = Vec::new();
    for (version, kind, check) in checks {
        for error in check(version, kind) {
            failures.push(format!("{version} {kind}: {error}"));
        }
    }
    for (version, kind, _) in generated::KINDS {
        if !checks.iter().any(|(v, k, _)| v == version && k == kind) {
            failures.push(format!("{version} {kind}: no prost check"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn str_port(name: &str) -> Option<IntOrString> {
    Some(IntOrString {
        r#type: Some(1),
        int_val: Some(0),
        str_val: s(name),
    })
}

fn int_port(port: i32) -> Option<IntOrString> {
    Some(IntOrString {
        r#type: Some(0),
        int_val: Some(port),
        str_val: s(""),
    })
}

fn labels(key: &str, value: &str) -> Option<meta::LabelSelector> {
    Some(meta::LabelSelector {
        match_labels: map(&[(key, value.to_string())]),
        match_expressions: vec![],
    })
}

fn time(seconds: i64) -> Option<meta::Time> {
    Some(meta::Time {
        seconds: Some(seconds),
        nanos: Some(0),
    })
}

/// A pod using the nested messages earlier versions refused (affinity, lifecycle hooks, probes,
/// ephemeral containers, topology spread, security contexts, projected/CSI/ephemeral volumes,
/// DNS config, …) and a status, encoded the way gogo does (value fields present even when zero).
#[test]
fn pod_with_every_kind_of_nested_message() {
    let mut c = container("app");
    c.lifecycle = Some(core::Lifecycle {
        post_start: Some(core::LifecycleHandler {
            exec: Some(core::ExecAction {
                command: vec!["sh".into(), "-c".into(), "echo hi".into()],
            }),
            ..Default::default()
        }),
        pre_stop: Some(core::LifecycleHandler {
            http_get: Some(core::HttpGetAction {
                path: s("/stop"),
                port: int_port(8080),
                host: s(""),
                scheme: s("HTTP"),
                http_headers: vec![core::HttpHeader {
                    name: s("X-Stop"),
                    value: s(""),
                }],
            }),
            sleep: Some(core::SleepAction { seconds: Some(0) }),
            ..Default::default()
        }),
        stop_signal: s("SIGTERM"),
    });
    c.liveness_probe = Some(core::Probe {
        handler: Some(core::ProbeHandler {
            grpc: Some(core::GrpcAction {
                port: Some(9090),
                service: s(""),
            }),
            ..Default::default()
        }),
        initial_delay_seconds: Some(0),
        timeout_seconds: Some(0),
        period_seconds: Some(5),
        success_threshold: Some(0),
        failure_threshold: Some(0),
        termination_grace_period_seconds: Some(0),
    });
    c.startup_probe = Some(core::Probe {
        handler: Some(core::ProbeHandler {
            tcp_socket: Some(core::TcpSocketAction {
                port: str_port("http"),
                host: s(""),
            }),
            ..Default::default()
        }),
        ..Default::default()
    });
    c.ports = vec![core::ContainerPort {
        name: s("http"),
        host_port: Some(0),
        container_port: Some(8080),
        protocol: s("TCP"),
        host_ip: s(""),
    }];
    c.env = vec![core::EnvVar {
        name: s("LIMIT"),
        value: s(""),
        value_from: Some(core::EnvVarSource {
            resource_field_ref: Some(core::ResourceFieldSelector {
                container_name: s(""),
                resource: s("limits.memory"),
                divisor: Some(Quantity { string: s("1Mi") }),
            }),
            ..Default::default()
        }),
    }];
    c.security_context = Some(core::SecurityContext {
        capabilities: Some(core::Capabilities {
            add: vec!["NET_ADMIN".into()],
            drop: vec!["ALL".into()],
        }),
        privileged: Some(false),
        se_linux_options: Some(core::SeLinuxOptions {
            user: s(""),
            role: s(""),
            r#type: s("spc_t"),
            level: s("s0"),
        }),
        windows_options: Some(core::WindowsSecurityContextOptions {
            run_as_user_name: s("ContainerUser"),
            host_process: Some(false),
            ..Default::default()
        }),
        run_as_user: Some(0),
        app_armor_profile: Some(core::AppArmorProfile {
            r#type: s("RuntimeDefault"),
            localhost_profile: None,
        }),
        ..Default::default()
    });
    c.resize_policy = vec![core::ContainerResizePolicy {
        resource_name: s("cpu"),
        restart_policy: s("NotRequired"),
    }];
    c.volume_devices = vec![core::VolumeDevice {
        name: s("raw"),
        device_path: s("/dev/xvda"),
    }];
    let mut debug = container("debugger");
    debug.image = s("busybox");
    let pod_affinity_term = core::PodAffinityTerm {
        label_selector: labels("app", "web"),
        namespaces: vec![],
        topology_key: s("kubernetes.io/hostname"),
        namespace_selector: Some(meta::LabelSelector::default()),
        match_label_keys: vec!["pod-template-hash".into()],
        mismatch_label_keys: vec![],
    };
    let spec = core::PodSpec {
        volumes: vec![
            core::Volume {
                name: s("token"),
                volume_source: Some(core::VolumeSource {
                    projected: Some(core::ProjectedVolumeSource {
                        sources: vec![
                            core::VolumeProjection {
                                service_account_token: Some(core::ServiceAccountTokenProjection {
                                    audience: s("vault"),
                                    expiration_seconds: Some(3600),
                                    path: s("token"),
                                }),
                                ..Default::default()
                            },
                            core::VolumeProjection {
                                downward_api: Some(core::DownwardAPIProjection {
                                    items: vec![core::DownwardAPIVolumeFile {
                                        path: s("labels"),
                                        field_ref: Some(core::ObjectFieldSelector {
                                            api_version: s("v1"),
                                            field_path: s("metadata.labels"),
                                        }),
                                        resource_field_ref: None,
                                        mode: Some(0),
                                    }],
                                }),
                                ..Default::default()
                            },
                        ],
                        default_mode: Some(0o420),
                    }),
                    ..Default::default()
                }),
            },
            core::Volume {
                name: s("csi"),
                volume_source: Some(core::VolumeSource {
                    csi: Some(core::CSIVolumeSource {
                        driver: s("secrets-store.csi.k8s.io"),
                        read_only: Some(true),
                        fs_type: None,
                        volume_attributes: map(&[("secretProviderClass", "vault".to_string())]),
                        node_publish_secret_ref: Some(core::LocalObjectReference {
                            name: s("creds"),
                        }),
                    }),
                    ..Default::default()
                }),
            },
            core::Volume {
                name: s("scratch"),
                volume_source: Some(core::VolumeSource {
                    ephemeral: Some(core::EphemeralVolumeSource {
                        volume_claim_template: Some(core::PersistentVolumeClaimTemplate {
                            metadata: Some(meta("", "")),
                            spec: Some(core::PersistentVolumeClaimSpec {
                                access_modes: vec!["ReadWriteOnce".into()],
                                resources: Some(core::VolumeResourceRequirements {
                                    limits: BTreeMap::new(),
                                    requests: map(&[("storage", Quantity { string: s("1Gi") })]),
                                }),
                                volume_name: s(""),
                                storage_class_name: s(""),
                                ..Default::default()
                            }),
                        }),
                    }),
                    ..Default::default()
                }),
            },
            core::Volume {
                name: s("nfs"),
                volume_source: Some(core::VolumeSource {
                    nfs: Some(core::NfsVolumeSource {
                        server: s("10.0.0.1"),
                        path: s("/exports"),
                        read_only: Some(false),
                    }),
                    ..Default::default()
                }),
            },
        ],
        containers: vec![c],
        ephemeral_containers: vec![core::EphemeralContainer {
            ephemeral_container_common: Some(core::EphemeralContainerCommon {
                name: debug.name,
                image: debug.image,
                stdin: Some(true),
                tty: Some(true),
                ..Default::default()
            }),
            target_container_name: s("app"),
        }],
        host_network: Some(false),
        hostname: s(""),
        security_context: Some(core::PodSecurityContext {
            run_as_non_root: Some(true),
            fs_group: Some(2000),
            supplemental_groups: vec![1, 2],
            sysctls: vec![core::Sysctl {
                name: s("net.core.somaxconn"),
                value: s("1024"),
            }],
            se_linux_options: Some(core::SeLinuxOptions::default()),
            ..Default::default()
        }),
        affinity: Some(core::Affinity {
            node_affinity: Some(core::NodeAffinity {
                required_during_scheduling_ignored_during_execution: Some(core::NodeSelector {
                    node_selector_terms: vec![core::NodeSelectorTerm {
                        match_expressions: vec![core::NodeSelectorRequirement {
                            key: s("kubernetes.io/arch"),
                            operator: s("In"),
                            values: vec!["amd64".into()],
                        }],
                        match_fields: vec![],
                    }],
                }),
                preferred_during_scheduling_ignored_during_execution: vec![
                    core::PreferredSchedulingTerm {
                        weight: Some(1),
                        preference: Some(core::NodeSelectorTerm::default()),
                    },
                ],
            }),
            pod_affinity: None,
            pod_anti_affinity: Some(core::PodAntiAffinity {
                required_during_scheduling_ignored_during_execution: vec![],
                preferred_during_scheduling_ignored_during_execution: vec![
                    core::WeightedPodAffinityTerm {
                        weight: Some(100),
                        pod_affinity_term: Some(pod_affinity_term),
                    },
                ],
            }),
        }),
        host_aliases: vec![core::HostAlias {
            ip: s("127.0.0.1"),
            hostnames: vec!["db".into()],
        }],
        dns_config: Some(core::PodDnsConfig {
            nameservers: vec!["1.1.1.1".into()],
            searches: vec![],
            options: vec![core::PodDnsConfigOption {
                name: s("ndots"),
                value: s("2"),
            }],
        }),
        readiness_gates: vec![core::PodReadinessGate {
            condition_type: s("example.com/ready"),
        }],
        topology_spread_constraints: vec![core::TopologySpreadConstraint {
            max_skew: Some(1),
            topology_key: s("topology.kubernetes.io/zone"),
            when_unsatisfiable: s("DoNotSchedule"),
            label_selector: labels("app", "web"),
            min_domains: Some(0),
            node_affinity_policy: None,
            node_taints_policy: s("Honor"),
            match_label_keys: vec![],
        }],
        os: Some(core::PodOs { name: s("linux") }),
        scheduling_gates: vec![core::PodSchedulingGate {
            name: s("example.com/gate"),
        }],
        resource_claims: vec![core::PodResourceClaim {
            name: s("gpu"),
            resource_claim_name: None,
            resource_claim_template_name: s("gpu-template"),
        }],
        ..Default::default()
    };
    let status = core::PodStatus {
        phase: s("Running"),
        conditions: vec![core::PodCondition {
            r#type: s("Ready"),
            observed_generation: Some(0),
            status: s("True"),
            last_probe_time: Some(meta::Time::default()),
            last_transition_time: time(1_700_000_000),
            reason: s(""),
            message: s(""),
        }],
        pod_ips: vec![core::PodIp { ip: s("10.1.2.3") }],
        start_time: time(1_700_000_000),
        container_statuses: vec![core::ContainerStatus {
            name: s("app"),
            state: Some(core::ContainerState {
                terminated: Some(core::ContainerStateTerminated {
                    exit_code: Some(0),
                    signal: Some(0),
                    reason: s("Completed"),
                    message: s(""),
                    started_at: time(1_700_000_000),
                    finished_at: time(1_700_000_060),
                    container_id: s(""),
                }),
                ..Default::default()
            }),
            last_state: Some(core::ContainerState::default()),
            ready: Some(false),
            restart_count: Some(0),
            image: s("nginx:1.27"),
            image_id: s(""),
            container_id: s(""),
            started: Some(false),
            ..Default::default()
        }],
        qos_class: s("BestEffort"),
        ..Default::default()
    };
    let pod = core::Pod {
        metadata: Some(meta("web-0", "default")),
        spec: Some(spec),
        status: Some(status),
    };
    let got = decode_ok(&envelope("v1", "Pod", &pod));
    assert_encoding_matches_prost::<core::Pod>(&got);
    let expected = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web-0", "namespace": "default"},
        "spec": {
            "volumes": [
                {"name": "token", "projected": {"sources": [
                    {"serviceAccountToken": {"audience": "vault", "expirationSeconds": 3600, "path": "token"}},
                    {"downwardAPI": {"items": [{
                        "path": "labels",
                        "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.labels"},
                        "mode": 0,
                    }]}},
                ], "defaultMode": 272}},
                {"name": "csi", "csi": {
                    "driver": "secrets-store.csi.k8s.io",
                    "readOnly": true,
                    "volumeAttributes": {"secretProviderClass": "vault"},
                    "nodePublishSecretRef": {"name": "creds"},
                }},
                {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {
                    "metadata": {},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "1Gi"}},
                        // A pointer: an empty storage class is meaningful (no dynamic provisioning).
                        "storageClassName": "",
                    },
                }}},
                {"name": "nfs", "nfs": {"server": "10.0.0.1", "path": "/exports"}},
            ],
            "containers": [{
                "name": "app",
                "image": "nginx:1.27",
                "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                "env": [{"name": "LIMIT", "valueFrom": {"resourceFieldRef": {
                    "resource": "limits.memory",
                    "divisor": "1Mi",
                }}}],
                "resources": {},
                "resizePolicy": [{"resourceName": "cpu", "restartPolicy": "NotRequired"}],
                "volumeDevices": [{"name": "raw", "devicePath": "/dev/xvda"}],
                "livenessProbe": {
                    "grpc": {"port": 9090, "service": ""},
                    "periodSeconds": 5,
                    "terminationGracePeriodSeconds": 0,
                },
                "startupProbe": {"tcpSocket": {"port": "http"}},
                "lifecycle": {
                    "postStart": {"exec": {"command": ["sh", "-c", "echo hi"]}},
                    "preStop": {
                        "httpGet": {
                            "path": "/stop",
                            "port": 8080,
                            "scheme": "HTTP",
                            // HTTPHeader.value has no omitempty.
                            "httpHeaders": [{"name": "X-Stop", "value": ""}],
                        },
                        "sleep": {"seconds": 0},
                    },
                    "stopSignal": "SIGTERM",
                },
                "securityContext": {
                    "capabilities": {"add": ["NET_ADMIN"], "drop": ["ALL"]},
                    "privileged": false,
                    "seLinuxOptions": {"type": "spc_t", "level": "s0"},
                    "windowsOptions": {"runAsUserName": "ContainerUser", "hostProcess": false},
                    "runAsUser": 0,
                    "appArmorProfile": {"type": "RuntimeDefault"},
                },
            }],
            "ephemeralContainers": [{
                "name": "debugger",
                "image": "busybox",
                "stdin": true,
                "tty": true,
                "targetContainerName": "app",
            }],
            "securityContext": {
                "seLinuxOptions": {},
                "runAsNonRoot": true,
                "supplementalGroups": [1, 2],
                "fsGroup": 2000,
                "sysctls": [{"name": "net.core.somaxconn", "value": "1024"}],
            },
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{
                        "matchExpressions": [
                            {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                        ],
                    }]},
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 1, "preference": {}},
                    ],
                },
                "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
                    "weight": 100,
                    "podAffinityTerm": {
                        "labelSelector": {"matchLabels": {"app": "web"}},
                        "topologyKey": "kubernetes.io/hostname",
                        "namespaceSelector": {},
                        "matchLabelKeys": ["pod-template-hash"],
                    },
                }]},
            },
            "hostAliases": [{"ip": "127.0.0.1", "hostnames": ["db"]}],
            "dnsConfig": {"nameservers": ["1.1.1.1"], "options": [{"name": "ndots", "value": "2"}]},
            "readinessGates": [{"conditionType": "example.com/ready"}],
            "topologySpreadConstraints": [{
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "web"}},
                "minDomains": 0,
                "nodeTaintsPolicy": "Honor",
            }],
            "os": {"name": "linux"},
            "schedulingGates": [{"name": "example.com/gate"}],
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu-template"}],
        },
        "status": {
            "phase": "Running",
            "conditions": [{
                "type": "Ready",
                "status": "True",
                "lastTransitionTime": "2023-11-14T22:13:20Z",
            }],
            "podIPs": [{"ip": "10.1.2.3"}],
            "startTime": "2023-11-14T22:13:20Z",
            "containerStatuses": [{
                "name": "app",
                "state": {"terminated": {
                    "exitCode": 0,
                    "reason": "Completed",
                    "startedAt": "2023-11-14T22:13:20Z",
                    "finishedAt": "2023-11-14T22:14:20Z",
                }},
                "lastState": {},
                "ready": false,
                "restartCount": 0,
                "image": "nginx:1.27",
                "imageID": "",
                "started": false,
            }],
            "qosClass": "BestEffort",
        },
    });
    let mut diff = Vec::new();
    json_diff(&got, &expected, "", &mut diff);
    assert!(diff.is_empty(), "{}", diff.join("\n"));
}

fn pod_template(name: &str) -> Option<core::PodTemplateSpec> {
    let mut metadata = meta("", "");
    metadata.labels = map(&[("app", name.to_string())]);
    Some(core::PodTemplateSpec {
        metadata: Some(metadata),
        spec: Some(core::PodSpec {
            containers: vec![container(name)],
            ..Default::default()
        }),
    })
}

fn assert_json(got: &serde_json::Value, expected: &serde_json::Value) {
    let mut diff = Vec::new();
    json_diff(got, expected, "", &mut diff);
    assert!(diff.is_empty(), "{}", diff.join("\n"));
}

#[test]
fn statefulset_with_claim_templates_update_strategy_and_status() {
    use k8s_pb::api::apps::v1 as apps;
    let sts = apps::StatefulSet {
        metadata: Some(meta("db", "default")),
        spec: Some(apps::StatefulSetSpec {
            replicas: Some(3),
            selector: labels("app", "db"),
            template: pod_template("db"),
            volume_claim_templates: vec![core::PersistentVolumeClaim {
                metadata: Some(meta("data", "")),
                spec: Some(core::PersistentVolumeClaimSpec {
                    access_modes: vec!["ReadWriteOnce".into()],
                    resources: Some(core::VolumeResourceRequirements {
                        limits: BTreeMap::new(),
                        requests: map(&[("storage", Quantity { string: s("10Gi") })]),
                    }),
                    storage_class_name: s("fast"),
                    volume_mode: s("Filesystem"),
                    data_source_ref: Some(core::TypedObjectReference {
                        api_group: s("snapshot.storage.k8s.io"),
                        kind: s("VolumeSnapshot"),
                        name: s("snap"),
                        namespace: None,
                    }),
                    ..Default::default()
                }),
                status: Some(core::PersistentVolumeClaimStatus::default()),
            }],
            service_name: s("db"),
            pod_management_policy: s("Parallel"),
            update_strategy: Some(apps::StatefulSetUpdateStrategy {
                r#type: s("RollingUpdate"),
                rolling_update: Some(apps::RollingUpdateStatefulSetStrategy {
                    partition: Some(0),
                    max_unavailable: str_port("50%"),
                }),
            }),
            revision_history_limit: Some(10),
            min_ready_seconds: Some(0),
            persistent_volume_claim_retention_policy: Some(
                apps::StatefulSetPersistentVolumeClaimRetentionPolicy {
                    when_deleted: s("Delete"),
                    when_scaled: s("Retain"),
                },
            ),
            ordinals: Some(apps::StatefulSetOrdinals { start: Some(0) }),
        }),
        status: Some(apps::StatefulSetStatus {
            observed_generation: Some(0),
            replicas: Some(0),
            ready_replicas: Some(0),
            current_replicas: Some(0),
            updated_replicas: Some(0),
            current_revision: s(""),
            update_revision: s(""),
            collision_count: None,
            conditions: vec![],
            available_replicas: Some(0),
        }),
    };
    assert_json(
        &decode_ok(&envelope("apps/v1", "StatefulSet", &sts)),
        &json!({
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": "db", "namespace": "default"},
            "spec": {
                "replicas": 3,
                "selector": {"matchLabels": {"app": "db"}},
                "template": {
                    "metadata": {"labels": {"app": "db"}},
                    "spec": {"containers": [{"name": "db", "image": "nginx:1.27", "resources": {}}]},
                },
                "volumeClaimTemplates": [{
                    "metadata": {"name": "data"},
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "10Gi"}},
                        "storageClassName": "fast",
                        "volumeMode": "Filesystem",
                        "dataSourceRef": {
                            "apiGroup": "snapshot.storage.k8s.io",
                            "kind": "VolumeSnapshot",
                            "name": "snap",
                        },
                    },
                    "status": {},
                }],
                "serviceName": "db",
                "podManagementPolicy": "Parallel",
                "updateStrategy": {
                    "type": "RollingUpdate",
                    "rollingUpdate": {"partition": 0, "maxUnavailable": "50%"},
                },
                "revisionHistoryLimit": 10,
                "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete", "whenScaled": "Retain"},
                // `start` has no omitempty.
                "ordinals": {"start": 0},
            },
            // StatefulSetStatus.replicas and availableReplicas have no omitempty; the others do.
            "status": {"replicas": 0, "availableReplicas": 0},
        }),
    );
}

#[test]
fn daemonset_with_rolling_update_and_status_counters() {
    use k8s_pb::api::apps::v1 as apps;
    let ds = apps::DaemonSet {
        metadata: Some(meta("agent", "kube-system")),
        spec: Some(apps::DaemonSetSpec {
            selector: labels("app", "agent"),
            template: pod_template("agent"),
            update_strategy: Some(apps::DaemonSetUpdateStrategy {
                r#type: s("RollingUpdate"),
                rolling_update: Some(apps::RollingUpdateDaemonSet {
                    max_unavailable: int_port(1),
                    max_surge: int_port(0),
                }),
            }),
            min_ready_seconds: Some(0),
            revision_history_limit: Some(10),
        }),
        status: Some(apps::DaemonSetStatus {
            current_number_scheduled: Some(0),
            number_misscheduled: Some(0),
            desired_number_scheduled: Some(0),
            number_ready: Some(0),
            observed_generation: Some(0),
            updated_number_scheduled: Some(0),
            number_available: Some(0),
            number_unavailable: Some(0),
            collision_count: None,
            conditions: vec![apps::DaemonSetCondition {
                r#type: s("Ready"),
                status: s("False"),
                last_transition_time: Some(meta::Time::default()),
                reason: s(""),
                message: s(""),
            }],
        }),
    };
    assert_json(
        &decode_ok(&envelope("apps/v1", "DaemonSet", &ds)),
        &json!({
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "agent", "namespace": "kube-system"},
            "spec": {
                "selector": {"matchLabels": {"app": "agent"}},
                "template": {
                    "metadata": {"labels": {"app": "agent"}},
                    "spec": {"containers": [{"name": "agent", "image": "nginx:1.27", "resources": {}}]},
                },
                // Pointers: maxSurge 0 is kept.
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
                "revisionHistoryLimit": 10,
            },
            "status": {
                "currentNumberScheduled": 0,
                "numberMisscheduled": 0,
                "desiredNumberScheduled": 0,
                "numberReady": 0,
                "conditions": [{"type": "Ready", "status": "False"}],
            },
        }),
    );
}

#[test]
fn crd_schema_unions_dollar_names_and_x_kubernetes_fields() {
    use k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiext;
    let raw = |json: &str| apiext::Json {
        raw: Some(json.as_bytes().to_vec()),
    };
    let string_schema = || apiext::JsonSchemaProps {
        r#type: s("string"),
        ..Default::default()
    };
    let schema = apiext::JsonSchemaProps {
        schema: s("http://json-schema.org/draft-04/schema#"),
        r#type: s("object"),
        description: s(""),
        maximum: Some(10.0),
        minimum: Some(0.5),
        exclusive_maximum: Some(false),
        r#enum: vec![raw("\"a\""), raw("1"), apiext::Json { raw: None }],
        default: Some(raw(r#"{"size":1}"#)),
        required: vec!["spec".into()],
        properties: map(&[
            (
                "spec",
                apiext::JsonSchemaProps {
                    r#type: s("object"),
                    x_kubernetes_preserve_unknown_fields: Some(false),
                    x_kubernetes_embedded_resource: Some(true),
                    additional_properties: Some(Box::new(apiext::JsonSchemaPropsOrBool {
                        allows: Some(false),
                        schema: None,
                    })),
                    ..Default::default()
                },
            ),
            (
                "tags",
                apiext::JsonSchemaProps {
                    r#type: s("array"),
                    items: Some(Box::new(apiext::JsonSchemaPropsOrArray {
                        schema: Some(Box::new(string_schema())),
                        j_son_schemas: vec![],
                    })),
                    x_kubernetes_list_type: s("set"),
                    ..Default::default()
                },
            ),
            (
                "tuple",
                apiext::JsonSchemaProps {
                    items: Some(Box::new(apiext::JsonSchemaPropsOrArray {
                        schema: None,
                        j_son_schemas: vec![string_schema(), string_schema()],
                    })),
                    ..Default::default()
                },
            ),
            (
                "labels",
                apiext::JsonSchemaProps {
                    r#type: s("object"),
                    additional_properties: Some(Box::new(apiext::JsonSchemaPropsOrBool {
                        allows: Some(true),
                        schema: Some(Box::new(string_schema())),
                    })),
                    ..Default::default()
                },
            ),
            (
                "ref",
                apiext::JsonSchemaProps {
                    r#ref: s("#/definitions/x"),
                    ..Default::default()
                },
            ),
        ]),
        dependencies: map(&[
            (
                "a",
                apiext::JsonSchemaPropsOrStringArray {
                    schema: None,
                    property: vec!["b".into(), "c".into()],
                },
            ),
            (
                "d",
                apiext::JsonSchemaPropsOrStringArray {
                    schema: Some(string_schema()),
                    property: vec![],
                },
            ),
        ]),
        x_kubernetes_validations: vec![apiext::ValidationRule {
            rule: s("self.spec.size > 0"),
            message: s(""),
            message_expression: s(""),
            reason: s("FieldValueInvalid"),
            field_path: s(""),
            optional_old_self: None,
        }],
        ..Default::default()
    };
    let crd = apiext::CustomResourceDefinition {
        metadata: Some(meta("widgets.example.com", "")),
        spec: Some(apiext::CustomResourceDefinitionSpec {
            group: s("example.com"),
            names: Some(apiext::CustomResourceDefinitionNames {
                plural: s("widgets"),
                singular: s("widget"),
                short_names: vec!["wg".into()],
                kind: s("Widget"),
                list_kind: s("WidgetList"),
                categories: vec![],
            }),
            scope: s("Namespaced"),
            versions: vec![apiext::CustomResourceDefinitionVersion {
                name: s("v1"),
                served: Some(true),
                storage: Some(true),
                deprecated: Some(false),
                deprecation_warning: None,
                schema: Some(apiext::CustomResourceValidation {
                    open_apiv3_schema: Some(schema),
                }),
                subresources: Some(apiext::CustomResourceSubresources {
                    status: Some(apiext::CustomResourceSubresourceStatus {}),
                    scale: Some(apiext::CustomResourceSubresourceScale {
                        spec_replicas_path: s(".spec.replicas"),
                        status_replicas_path: s(".status.replicas"),
                        label_selector_path: None,
                    }),
                }),
                additional_printer_columns: vec![apiext::CustomResourceColumnDefinition {
                    name: s("Size"),
                    r#type: s("integer"),
                    format: s(""),
                    description: s(""),
                    priority: Some(0),
                    json_path: s(".spec.size"),
                }],
                selectable_fields: vec![apiext::SelectableField {
                    json_path: s(".spec.color"),
                }],
            }],
            conversion: Some(apiext::CustomResourceConversion {
                strategy: s("Webhook"),
                webhook: Some(apiext::WebhookConversion {
                    client_config: Some(apiext::WebhookClientConfig {
                        url: None,
                        service: Some(apiext::ServiceReference {
                            namespace: s("default"),
                            name: s("conv"),
                            path: s("/convert"),
                            port: Some(443),
                        }),
                        ca_bundle: Some(b"\x01\x02\x03".to_vec()),
                    }),
                    conversion_review_versions: vec!["v1".into()],
                }),
            }),
            preserve_unknown_fields: Some(false),
        }),
        status: Some(apiext::CustomResourceDefinitionStatus {
            conditions: vec![],
            accepted_names: Some(apiext::CustomResourceDefinitionNames {
                plural: s(""),
                singular: s(""),
                short_names: vec![],
                kind: s(""),
                list_kind: s(""),
                categories: vec![],
            }),
            stored_versions: vec!["v1".into()],
            observed_generation: None,
        }),
    };
    let got = decode_ok(&envelope(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        &crd,
    ));
    assert_json(
        &got,
        &json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com",
                "names": {
                    "plural": "widgets",
                    "singular": "widget",
                    "shortNames": ["wg"],
                    "kind": "Widget",
                    "listKind": "WidgetList",
                },
                "scope": "Namespaced",
                "versions": [{
                    "name": "v1",
                    "served": true,
                    "storage": true,
                    "schema": {"openAPIV3Schema": {
                        "$schema": "http://json-schema.org/draft-04/schema#",
                        "type": "object",
                        // Integral doubles as Go writes them.
                        "maximum": 10,
                        "minimum": 0.5,
                        "enum": ["a", 1, null],
                        "default": {"size": 1},
                        "required": ["spec"],
                        "properties": {
                            "spec": {
                                "type": "object",
                                "x-kubernetes-preserve-unknown-fields": false,
                                "x-kubernetes-embedded-resource": true,
                                "additionalProperties": false,
                            },
                            "tags": {
                                "type": "array",
                                "items": {"type": "string"},
                                "x-kubernetes-list-type": "set",
                            },
                            "tuple": {"items": [{"type": "string"}, {"type": "string"}]},
                            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                            "ref": {"$ref": "#/definitions/x"},
                        },
                        "dependencies": {"a": ["b", "c"], "d": {"type": "string"}},
                        "x-kubernetes-validations": [
                            {"rule": "self.spec.size > 0", "reason": "FieldValueInvalid"},
                        ],
                    }},
                    "subresources": {
                        "status": {},
                        "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"},
                    },
                    "additionalPrinterColumns": [
                        {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                    ],
                    "selectableFields": [{"jsonPath": ".spec.color"}],
                }],
                "conversion": {
                    "strategy": "Webhook",
                    "webhook": {
                        "clientConfig": {
                            "service": {"namespace": "default", "name": "conv", "path": "/convert", "port": 443},
                            "caBundle": "AQID",
                        },
                        "conversionReviewVersions": ["v1"],
                    },
                },
            },
            // plural and kind have no omitempty.
            "status": {"acceptedNames": {"plural": "", "kind": ""}, "storedVersions": ["v1"]},
        }),
    );
}

/// Irregular JSON names (`Port`, `podCIDRs`), MicroTime, and pointer IntOrString in kinds that
/// controllers write: Node, events.k8s.io Event, NetworkPolicy.
#[test]
fn node_event_and_network_policy() {
    let node = core::Node {
        metadata: Some(meta("n1", "")),
        spec: Some(core::NodeSpec {
            pod_cidr: s("10.0.0.0/24"),
            pod_cid_rs: vec!["10.0.0.0/24".into()],
            unschedulable: Some(true),
            taints: vec![core::Taint {
                key: s("dedicated"),
                value: s(""),
                effect: s("NoSchedule"),
                time_added: time(1_700_000_000),
            }],
            ..Default::default()
        }),
        status: Some(core::NodeStatus {
            capacity: map(&[("cpu", Quantity { string: s("4") })]),
            addresses: vec![core::NodeAddress {
                r#type: s("InternalIP"),
                address: s("192.168.0.10"),
            }],
            daemon_endpoints: Some(core::NodeDaemonEndpoints {
                kubelet_endpoint: Some(core::DaemonEndpoint { port: Some(10250) }),
            }),
            ..Default::default()
        }),
    };
    assert_json(
        &decode_ok(&envelope("v1", "Node", &node)),
        &json!({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n1"},
            "spec": {
                "podCIDR": "10.0.0.0/24",
                "podCIDRs": ["10.0.0.0/24"],
                "unschedulable": true,
                "taints": [{"key": "dedicated", "effect": "NoSchedule", "timeAdded": "2023-11-14T22:13:20Z"}],
            },
            "status": {
                "capacity": {"cpu": "4"},
                "addresses": [{"type": "InternalIP", "address": "192.168.0.10"}],
                "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            },
        }),
    );

    use k8s_pb::api::events::v1 as events;
    let event = events::Event {
        metadata: Some(meta("web.1", "default")),
        event_time: Some(meta::MicroTime {
            seconds: Some(1_700_000_000),
            nanos: Some(123_456_789),
        }),
        series: Some(events::EventSeries {
            count: Some(2),
            last_observed_time: Some(meta::MicroTime {
                seconds: Some(1_700_000_001),
                nanos: Some(0),
            }),
        }),
        reporting_controller: s("example.com/ctl"),
        reporting_instance: s("ctl-1"),
        action: s("Scale"),
        reason: s("Scaled"),
        regarding: Some(core::ObjectReference {
            kind: s("Deployment"),
            namespace: s("default"),
            name: s("web"),
            ..Default::default()
        }),
        note: s("scaled to 2"),
        r#type: s("Normal"),
        deprecated_count: Some(0),
        deprecated_first_timestamp: Some(meta::Time::default()),
        ..Default::default()
    };
    assert_json(
        &decode_ok(&envelope("events.k8s.io/v1", "Event", &event)),
        &json!({
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": "web.1", "namespace": "default"},
            "eventTime": "2023-11-14T22:13:20.123456Z",
            "series": {"count": 2, "lastObservedTime": "2023-11-14T22:13:21.000000Z"},
            "reportingController": "example.com/ctl",
            "reportingInstance": "ctl-1",
            "action": "Scale",
            "reason": "Scaled",
            "regarding": {"kind": "Deployment", "namespace": "default", "name": "web"},
            "note": "scaled to 2",
            "type": "Normal",
        }),
    );

    use k8s_pb::api::networking::v1 as net;
    let policy = net::NetworkPolicy {
        metadata: Some(meta("allow-web", "default")),
        spec: Some(net::NetworkPolicySpec {
            pod_selector: Some(meta::LabelSelector::default()),
            ingress: vec![net::NetworkPolicyIngressRule {
                ports: vec![net::NetworkPolicyPort {
                    protocol: s("TCP"),
                    port: int_port(80),
                    end_port: Some(90),
                }],
                from: vec![net::NetworkPolicyPeer {
                    ip_block: Some(net::IpBlock {
                        cidr: s("10.0.0.0/8"),
                        except: vec!["10.1.0.0/16".into()],
                    }),
                    ..Default::default()
                }],
            }],
            egress: vec![],
            policy_types: vec!["Ingress".into()],
        }),
    };
    assert_json(
        &decode_ok(&envelope("networking.k8s.io/v1", "NetworkPolicy", &policy)),
        &json!({
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": "allow-web", "namespace": "default"},
            "spec": {
                "podSelector": {},
                "ingress": [{
                    "ports": [{"protocol": "TCP", "port": 80, "endPort": 90}],
                    "from": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}],
                }],
                "policyTypes": ["Ingress"],
            },
        }),
    );
}

// ---- Responses: the encoder ----

#[test]
fn status_error_encodes_as_gogo_writes_it() {
    let err = crate::status::ApiError::not_found("apps", "deployments", "web").with_details(
        crate::status::StatusDetails {
            name: "web".into(),
            group: "apps".into(),
            kind: "deployments".into(),
            causes: vec![crate::status::StatusCause {
                reason: "FieldValueInvalid".into(),
                message: "bad".into(),
                field: "spec.replicas".into(),
            }],
            retry_after_seconds: 3,
            ..Default::default()
        },
    );
    let object = serde_json::to_value(&*err.0).unwrap();
    let status: meta::Status = assert_encoding_matches_prost(&object);
    // ListMeta is a value struct: its strings are written empty; details is a pointer.
    assert_eq!(
        status.metadata,
        Some(meta::ListMeta {
            self_link: s(""),
            resource_version: s(""),
            r#continue: s(""),
            remaining_item_count: None,
        })
    );
    assert_eq!(status.status.as_deref(), Some("Failure"));
    assert_eq!(status.reason.as_deref(), Some("NotFound"));
    assert_eq!(status.code, Some(404));
    assert_eq!(
        status.message.as_deref(),
        Some("deployments.apps \"web\" not found")
    );
    let details = status.details.unwrap();
    assert_eq!(details.retry_after_seconds, Some(3));
    assert_eq!(details.uid.as_deref(), Some(""));
    assert_eq!(details.causes[0].field.as_deref(), Some("spec.replicas"));
    assert_eq!(
        details.causes[0].reason.as_deref(),
        Some("FieldValueInvalid")
    );
}

#[test]
fn times_quantities_int_or_string_and_absent_values_as_go_writes_them() {
    let lease = json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "l", "namespace": "kube-system",
                     "creationTimestamp": "2024-01-02T03:04:05Z"},
        "spec": {"holderIdentity": "node-1", "leaseDurationSeconds": 0,
                 "renewTime": "2024-01-02T03:04:05.123456Z"},
    });
    let got: coordination::Lease = assert_encoding_matches_prost(&lease);
    let metadata = got.metadata.unwrap();
    // metav1.Time carries whole seconds with nanos written as 0; a value field absent from
    // the JSON (generateName, uid) is written empty; pointers absent stay absent.
    assert_eq!(
        metadata.creation_timestamp,
        Some(meta::Time {
            seconds: Some(1_704_164_645),
            nanos: Some(0)
        })
    );
    assert_eq!(metadata.generate_name.as_deref(), Some(""));
    assert_eq!(metadata.generation, Some(0));
    assert_eq!(metadata.deletion_timestamp, None);
    let spec = got.spec.unwrap();
    // A pointer holding zero is kept; MicroTime keeps microseconds.
    assert_eq!(spec.lease_duration_seconds, Some(0));
    assert_eq!(spec.acquire_time, None);
    assert_eq!(
        spec.renew_time,
        Some(meta::MicroTime {
            seconds: Some(1_704_164_645),
            nanos: Some(123_456_000)
        })
    );

    let svc = json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s"},
        "spec": {"ports": [
            {"name": "a", "port": 80, "targetPort": 8080},
            {"name": "b", "port": 81, "targetPort": "http"},
        ]},
    });
    let got: core::Service = assert_encoding_matches_prost(&svc);
    let ports = got.spec.unwrap().ports;
    assert_eq!(
        ports[0].target_port,
        Some(IntOrString {
            r#type: Some(0),
            int_val: Some(8080),
            str_val: s("")
        })
    );
    assert_eq!(
        ports[1].target_port,
        Some(IntOrString {
            r#type: Some(1),
            int_val: Some(0),
            str_val: s("http")
        })
    );

    let quota = json!({
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "q"},
        "spec": {"hard": {"pods": "10", "cpu": "500m", "memory": "1Gi"}},
    });
    let got: core::ResourceQuota = assert_encoding_matches_prost(&quota);
    let hard = got.spec.unwrap().hard;
    assert_eq!(hard.keys().collect::<Vec<_>>(), ["cpu", "memory", "pods"]);
    assert_eq!(hard["cpu"].string.as_deref(), Some("500m"));
    assert_eq!(hard["memory"].string.as_deref(), Some("1Gi"));
}

#[test]
fn map_entries_are_sorted_and_keep_empty_values_like_gogo() {
    let cm = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "m", "labels": {"b": "2", "a": ""}},
        "data": {"z": "last", "a": "first"},
    });
    let body = encode_kubernetes_protobuf(&cm).unwrap();
    let raw = unwrap_envelope(&body, &cm);
    let text = hex(&raw);
    // labels (ObjectMeta field 11): "a" with an empty value (written, as gogo writes it), then
    // "b"; data (field 2): "a" before "z".
    assert!(text.contains(&hex(b"\x5a\x05\x0a\x01a\x12\x00\x5a\x06\x0a\x01b\x12\x012")));
    assert!(text.contains(&hex(
        b"\x12\x0a\x0a\x01a\x12\x05first\x12\x09\x0a\x01z\x12\x04last"
    )));
    let decoded = core::ConfigMap::decode(raw.as_slice()).unwrap();
    assert_eq!(decoded.metadata.unwrap().labels["a"], "");
}

#[test]
fn lists_carry_list_meta_and_items() {
    let pod = |name: &str| {
        json!({"metadata": {"name": name, "namespace": "default", "resourceVersion": "5"},
               "spec": {"containers": [{"name": "c", "image": "busybox"}]},
               "status": {"phase": "Running"}})
    };
    let list = json!({
        "apiVersion": "v1",
        "kind": "PodList",
        "metadata": {"resourceVersion": "42", "continue": "token", "remainingItemCount": 0},
        "items": [pod("a"), pod("b")],
    });
    let body = encode_kubernetes_protobuf(&list).unwrap();
    let raw = unwrap_envelope(&body, &list);
    let got = core::PodList::decode(raw.as_slice()).unwrap();
    assert_eq!(hex(&got.encode_to_vec()), hex(&raw));
    assert_eq!(
        got.metadata,
        Some(meta::ListMeta {
            self_link: s(""),
            resource_version: s("42"),
            r#continue: s("token"),
            remaining_item_count: Some(0),
        })
    );
    let names: Vec<_> = got
        .items
        .iter()
        .map(|p| p.metadata.as_ref().unwrap().name.clone().unwrap())
        .collect();
    assert_eq!(names, ["a", "b"]);
    let first = &got.items[0];
    assert_eq!(
        first.spec.as_ref().unwrap().containers[0].image.as_deref(),
        Some("busybox")
    );
    assert_eq!(
        first.status.as_ref().unwrap().phase.as_deref(),
        Some("Running")
    );

    // An empty list still has its metadata.
    let empty =
        json!({"apiVersion": "apps/v1", "kind": "DeploymentList", "metadata": {}, "items": []});
    let body = encode_kubernetes_protobuf(&empty).unwrap();
    let got =
        k8s_pb::api::apps::v1::DeploymentList::decode(unwrap_envelope(&body, &empty).as_slice())
            .unwrap();
    assert!(got.items.is_empty());
    assert_eq!(got.metadata.unwrap().resource_version.as_deref(), Some(""));
}

#[test]
fn partial_object_metadata_and_its_list() {
    let list = json!({
        "apiVersion": "meta.k8s.io/v1",
        "kind": "PartialObjectMetadataList",
        "metadata": {"resourceVersion": "7"},
        "items": [{"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
                   "metadata": {"name": "x", "uid": "u-1", "ownerReferences": [
                       {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs",
                        "uid": "u-2", "controller": true}]}}],
    });
    let body = encode_kubernetes_protobuf(&list).unwrap();
    let raw = unwrap_envelope(&body, &list);
    let got = meta::PartialObjectMetadataList::decode(raw.as_slice()).unwrap();
    assert_eq!(hex(&got.encode_to_vec()), hex(&raw));
    let item = got.items[0].metadata.as_ref().unwrap();
    assert_eq!(item.uid.as_deref(), Some("u-1"));
    assert_eq!(item.owner_references[0].controller, Some(true));
    assert_eq!(item.owner_references[0].block_owner_deletion, None);

    let one = json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
                     "metadata": {"name": "x"}});
    let got: meta::PartialObjectMetadata = assert_encoding_matches_prost(&one);
    assert_eq!(got.metadata.unwrap().name.as_deref(), Some("x"));
}

#[test]
fn watch_frame_is_a_length_prefixed_watch_event() {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "w"}});
    let object = encode_kubernetes_protobuf(&cm).unwrap();
    let frame = watch_frame("MODIFIED", &object);
    let len = u32::from_be_bytes(frame[..4].try_into().unwrap()) as usize;
    assert_eq!(len, frame.len() - 4);
    let event = meta::WatchEvent::decode(&frame[4..]).unwrap();
    assert_eq!(hex(&event.encode_to_vec()), hex(&frame[4..]));
    assert_eq!(event.r#type.as_deref(), Some("MODIFIED"));
    // The object is the whole encoded object, magic and envelope included.
    assert_eq!(event.object.unwrap().raw, Some(object));
}

#[test]
fn kinds_without_a_table_are_not_encoded() {
    let cr = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}});
    assert!(matches!(
        encode_kubernetes_protobuf(&cr),
        Err(EncodeError::UnsupportedKind { .. })
    ));
    assert!(!can_encode("example.com/v1", "Widget"));
    assert!(can_encode("apps/v1", "Deployment"));
    // A Table is not a protobuf message upstream.
    let table = json!({"apiVersion": "meta.k8s.io/v1", "kind": "Table"});
    assert!(encode_kubernetes_protobuf(&table).is_err());
    // A value of the wrong type is an error, not a panic.
    let bad = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": 5}});
    assert!(matches!(
        encode_kubernetes_protobuf(&bad),
        Err(EncodeError::Type { .. })
    ));
}
