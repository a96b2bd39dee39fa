//! What several pod plugins share: which requests are about pods, mirror pods, and the
//! secrets and config maps a pod references (upstream `pkg/api/pod` visitors).

use apiserver::admission::Attributes;
use serde_json::Value;

use crate::apis::json::{array_at, str_at};

/// The annotation the kubelet puts on the mirror pods of static pods.
pub const MIRROR_POD_ANNOTATION: &str = "kubernetes.io/config.mirror";

/// Whether the request is about core `pods` itself (no subresource).
pub fn is_pod_request(attrs: &Attributes) -> bool {
    attrs.resource.group.is_empty()
        && attrs.resource.resource == "pods"
        && attrs.subresource.is_empty()
}

/// Whether the pod is a kubelet's mirror pod.
pub fn is_mirror_pod(pod: &Value) -> bool {
    pod.pointer("/metadata/annotations")
        .and_then(|a| a.get(MIRROR_POD_ANNOTATION))
        .is_some()
}

/// Every container of the pod: init containers, containers and ephemeral containers.
pub fn all_containers(pod: &Value) -> impl Iterator<Item = &Value> {
    [
        "spec.initContainers",
        "spec.containers",
        "spec.ephemeralContainers",
    ]
    .into_iter()
    .flat_map(move |path| array_at(pod, path).iter())
}

/// Calls `visit` with each secret name the pod references (image pull secrets, container
/// environment, volumes) until it returns false.
pub fn visit_secret_names(pod: &Value, visit: &mut dyn FnMut(&str) -> bool) -> bool {
    let mut names: Vec<&str> = Vec::new();
    names.extend(
        array_at(pod, "spec.imagePullSecrets")
            .iter()
            .filter_map(|r| str_at(r, "name")),
    );
    for container in all_containers(pod) {
        names.extend(
            array_at(container, "envFrom")
                .iter()
                .filter_map(|e| str_at(e, "secretRef.name")),
        );
        names.extend(
            array_at(container, "env")
                .iter()
                .filter_map(|e| str_at(e, "valueFrom.secretKeyRef.name")),
        );
    }
    for volume in array_at(pod, "spec.volumes") {
        for path in [
            "azureFile.secretName",
            "cephfs.secretRef.name",
            "cinder.secretRef.name",
            "flexVolume.secretRef.name",
            "rbd.secretRef.name",
            "secret.secretName",
            "scaleIO.secretRef.name",
            "iscsi.secretRef.name",
            "storageos.secretRef.name",
            "csi.nodePublishSecretRef.name",
        ] {
            names.extend(str_at(volume, path));
        }
        names.extend(
            array_at(volume, "projected.sources")
                .iter()
                .filter_map(|s| str_at(s, "secret.name")),
        );
    }
    names.into_iter().filter(|n| !n.is_empty()).all(visit)
}

/// Whether the pod references any config map (container environment, volumes).
pub fn references_configmaps(pod: &Value) -> bool {
    let in_containers = all_containers(pod).any(|c| {
        array_at(c, "envFrom")
            .iter()
            .any(|e| str_at(e, "configMapRef.name").is_some())
            || array_at(c, "env")
                .iter()
                .any(|e| str_at(e, "valueFrom.configMapKeyRef.name").is_some())
    });
    in_containers
        || array_at(pod, "spec.volumes").iter().any(|v| {
            str_at(v, "configMap.name").is_some()
                || array_at(v, "projected.sources")
                    .iter()
                    .any(|s| str_at(s, "configMap.name").is_some())
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secret_names_come_from_pull_secrets_env_and_volumes() {
        let pod = json!({"spec": {
            "imagePullSecrets": [{"name": "pull"}],
            "initContainers": [{"name": "i", "envFrom": [{"secretRef": {"name": "from"}}]}],
            "containers": [{"name": "c", "env": [{"name": "E",
                "valueFrom": {"secretKeyRef": {"name": "env", "key": "k"}}}]}],
            "volumes": [{"name": "v", "secret": {"secretName": "vol"}},
                        {"name": "p", "projected": {"sources": [{"secret": {"name": "proj"}}]}}]
        }});
        let mut seen = Vec::new();
        visit_secret_names(&pod, &mut |n| {
            seen.push(n.to_string());
            true
        });
        assert_eq!(seen, ["pull", "from", "env", "vol", "proj"]);
        assert!(!references_configmaps(&pod));
        let with_cm = json!({"spec": {"volumes": [{"name": "c", "configMap": {"name": "x"}}]}});
        assert!(references_configmaps(&with_cm));
    }
}
