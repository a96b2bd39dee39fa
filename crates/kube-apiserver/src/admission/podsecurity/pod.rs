//! Typed views of the pod fields the checks read, decoded from the object's JSON.
//!
//! These are not k8s-openapi's types on purpose: upstream decodes into Go structs, where a
//! missing field is its zero value and `null` is nil, so a pod template without, say,
//! `containers` or a seccomp profile without `type` still evaluates. Every field here is
//! optional or defaulted the same way, and fields the checks never read are skipped unparsed.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny};
use serde_json::Value;

/// `null` decodes as the type's default, as a nil slice or map does in Go.
fn null_default<'de, D, T>(de: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(de)?.unwrap_or_default())
}

/// The metadata the checks and the namespace scan read.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodMeta {
    /// `metadata.name`.
    #[serde(deserialize_with = "null_default")]
    pub name: String,
    /// `metadata.annotations` (AppArmor and seccomp annotations).
    #[serde(deserialize_with = "null_default")]
    pub annotations: BTreeMap<String, String>,
    /// `metadata.ownerReferences` (pods of one controller are checked once).
    #[serde(deserialize_with = "null_default")]
    pub owner_references: Vec<OwnerReference>,
}

impl PodMeta {
    /// The uid of the controlling owner, if any.
    pub fn controller_uid(&self) -> Option<&str> {
        self.owner_references
            .iter()
            .find(|r| r.controller == Some(true))
            .map(|r| r.uid.as_str())
    }
}

/// One owner reference.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct OwnerReference {
    /// The owner's uid.
    #[serde(deserialize_with = "null_default")]
    pub uid: String,
    /// Whether the owner is the controller.
    pub controller: Option<bool>,
}

/// A pod spec (also a template's).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodSpec {
    /// `initContainers`.
    #[serde(deserialize_with = "null_default")]
    pub init_containers: Vec<Container>,
    /// `containers`.
    #[serde(deserialize_with = "null_default")]
    pub containers: Vec<Container>,
    /// `ephemeralContainers` (their common fields are a container's).
    #[serde(deserialize_with = "null_default")]
    pub ephemeral_containers: Vec<Container>,
    /// `volumes`.
    #[serde(deserialize_with = "null_default")]
    pub volumes: Vec<Volume>,
    /// `securityContext`.
    pub security_context: Option<PodSecurityContext>,
    /// `hostNetwork`.
    #[serde(deserialize_with = "null_default")]
    pub host_network: bool,
    /// `hostPID`.
    #[serde(rename = "hostPID", deserialize_with = "null_default")]
    pub host_pid: bool,
    /// `hostIPC`.
    #[serde(rename = "hostIPC", deserialize_with = "null_default")]
    pub host_ipc: bool,
    /// `hostUsers` (`false`: the pod runs in a user namespace).
    pub host_users: Option<bool>,
    /// `os`.
    pub os: Option<PodOs>,
    /// `runtimeClassName`.
    pub runtime_class_name: Option<String>,
}

impl PodSpec {
    /// Every container: init containers, containers, then ephemeral containers (upstream's
    /// visiting order, which is the order names appear in messages).
    pub fn all_containers(&self) -> impl Iterator<Item = &Container> {
        self.init_containers
            .iter()
            .chain(&self.containers)
            .chain(&self.ephemeral_containers)
    }

    /// Whether `os.name` is `windows`.
    pub fn is_windows(&self) -> bool {
        self.os.as_ref().is_some_and(|os| os.name == "windows")
    }

    /// Whether the pod runs in a user namespace (`hostUsers: false`), which relaxes some checks.
    pub fn in_user_namespace(&self) -> bool {
        self.host_users == Some(false)
    }
}

/// `spec.os`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct PodOs {
    /// `linux` or `windows`.
    #[serde(deserialize_with = "null_default")]
    pub name: String,
}

/// A container (or an ephemeral container's common fields).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Container {
    /// `name`.
    #[serde(deserialize_with = "null_default")]
    pub name: String,
    /// `image` (an update that changes only images is rechecked).
    #[serde(deserialize_with = "null_default")]
    pub image: String,
    /// `securityContext`.
    pub security_context: Option<SecurityContext>,
    /// `ports`.
    #[serde(deserialize_with = "null_default")]
    pub ports: Vec<ContainerPort>,
    /// `livenessProbe`.
    pub liveness_probe: Option<Handler>,
    /// `readinessProbe`.
    pub readiness_probe: Option<Handler>,
    /// `startupProbe`.
    pub startup_probe: Option<Handler>,
    /// `lifecycle`.
    pub lifecycle: Option<Lifecycle>,
}

/// A container port.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ContainerPort {
    /// `hostPort` (0: none).
    #[serde(deserialize_with = "null_default")]
    pub host_port: i64,
}

/// A probe or lifecycle handler: only the actions that name a host.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Handler {
    /// `httpGet`.
    pub http_get: Option<HostAction>,
    /// `tcpSocket`.
    pub tcp_socket: Option<HostAction>,
}

/// An action's target host.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct HostAction {
    /// `host` (empty: the pod's IP).
    #[serde(deserialize_with = "null_default")]
    pub host: String,
}

/// `lifecycle`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Lifecycle {
    /// `postStart`.
    pub post_start: Option<Handler>,
    /// `preStop`.
    pub pre_stop: Option<Handler>,
}

/// A container's `securityContext`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SecurityContext {
    /// `allowPrivilegeEscalation`.
    pub allow_privilege_escalation: Option<bool>,
    /// `appArmorProfile`.
    pub app_armor_profile: Option<TypedProfile>,
    /// `capabilities`.
    pub capabilities: Option<Capabilities>,
    /// `privileged`.
    pub privileged: Option<bool>,
    /// `procMount`.
    pub proc_mount: Option<String>,
    /// `runAsNonRoot`.
    pub run_as_non_root: Option<bool>,
    /// `runAsUser`.
    pub run_as_user: Option<i64>,
    /// `seLinuxOptions`.
    #[serde(rename = "seLinuxOptions")]
    pub se_linux_options: Option<SeLinuxOptions>,
    /// `seccompProfile`.
    pub seccomp_profile: Option<TypedProfile>,
    /// `windowsOptions`.
    pub windows_options: Option<WindowsOptions>,
}

/// The pod's `securityContext`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodSecurityContext {
    /// `appArmorProfile`.
    pub app_armor_profile: Option<TypedProfile>,
    /// `runAsNonRoot`.
    pub run_as_non_root: Option<bool>,
    /// `runAsUser`.
    pub run_as_user: Option<i64>,
    /// `seLinuxOptions`.
    #[serde(rename = "seLinuxOptions")]
    pub se_linux_options: Option<SeLinuxOptions>,
    /// `seccompProfile`.
    pub seccomp_profile: Option<TypedProfile>,
    /// `sysctls`.
    #[serde(deserialize_with = "null_default")]
    pub sysctls: Vec<Sysctl>,
    /// `windowsOptions`.
    pub windows_options: Option<WindowsOptions>,
}

/// A seccomp or AppArmor profile: its `type`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct TypedProfile {
    /// `type`.
    #[serde(rename = "type", deserialize_with = "null_default")]
    pub type_: String,
}

/// `capabilities`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct Capabilities {
    /// `add`.
    #[serde(deserialize_with = "null_default")]
    pub add: Vec<String>,
    /// `drop`.
    #[serde(deserialize_with = "null_default")]
    pub drop: Vec<String>,
}

/// `seLinuxOptions`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct SeLinuxOptions {
    /// `type`.
    #[serde(rename = "type", deserialize_with = "null_default")]
    pub type_: String,
    /// `user`.
    #[serde(deserialize_with = "null_default")]
    pub user: String,
    /// `role`.
    #[serde(deserialize_with = "null_default")]
    pub role: String,
}

/// `windowsOptions`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct WindowsOptions {
    /// `hostProcess`.
    pub host_process: Option<bool>,
}

/// A sysctl: its name.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct Sysctl {
    /// `name`.
    #[serde(deserialize_with = "null_default")]
    pub name: String,
}

/// A volume: its name and which source it uses (a source is set when present and not null).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[allow(missing_docs)]
pub struct Volume {
    /// `name`.
    #[serde(deserialize_with = "null_default")]
    pub name: String,
    pub config_map: Option<IgnoredAny>,
    pub csi: Option<IgnoredAny>,
    #[serde(rename = "downwardAPI")]
    pub downward_api: Option<IgnoredAny>,
    pub empty_dir: Option<IgnoredAny>,
    pub ephemeral: Option<IgnoredAny>,
    pub image: Option<IgnoredAny>,
    pub persistent_volume_claim: Option<IgnoredAny>,
    pub projected: Option<IgnoredAny>,
    pub secret: Option<IgnoredAny>,
    pub host_path: Option<IgnoredAny>,
    pub gce_persistent_disk: Option<IgnoredAny>,
    pub aws_elastic_block_store: Option<IgnoredAny>,
    pub git_repo: Option<IgnoredAny>,
    pub nfs: Option<IgnoredAny>,
    pub iscsi: Option<IgnoredAny>,
    pub glusterfs: Option<IgnoredAny>,
    pub rbd: Option<IgnoredAny>,
    pub flex_volume: Option<IgnoredAny>,
    pub cinder: Option<IgnoredAny>,
    pub cephfs: Option<IgnoredAny>,
    pub flocker: Option<IgnoredAny>,
    pub fc: Option<IgnoredAny>,
    pub azure_file: Option<IgnoredAny>,
    pub vsphere_volume: Option<IgnoredAny>,
    pub quobyte: Option<IgnoredAny>,
    pub azure_disk: Option<IgnoredAny>,
    pub photon_persistent_disk: Option<IgnoredAny>,
    pub portworx_volume: Option<IgnoredAny>,
    #[serde(rename = "scaleIO")]
    pub scale_io: Option<IgnoredAny>,
    pub storageos: Option<IgnoredAny>,
}

/// A pod's (or template's) metadata and spec.
#[derive(Clone, Debug, Default)]
pub struct PodView {
    /// The metadata.
    pub meta: PodMeta,
    /// The spec.
    pub spec: PodSpec,
}

/// Why an object could not be read as a pod.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct DecodeError(#[from] serde_json::Error);

impl PodView {
    /// Reads `metadata` and `spec` of `obj` (a pod or a pod template spec).
    pub fn decode(obj: &Value) -> Result<PodView, DecodeError> {
        let meta = match obj.get("metadata") {
            Some(m) => PodMeta::deserialize(m)?,
            None => PodMeta::default(),
        };
        let spec = match obj.get("spec") {
            Some(s) => PodSpec::deserialize(s)?,
            None => PodSpec::default(),
        };
        Ok(PodView { meta, spec })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn missing_and_null_fields_decode_as_zero_values() {
        let pod = PodView::decode(&json!({
            "metadata": {"name": "p", "annotations": null},
            "spec": {
                "containers": [{"name": "c", "securityContext": {"seccompProfile": {}}}],
                "volumes": [{"name": "v", "hostPath": null, "emptyDir": {}}],
                "initContainers": null,
                "hostPID": true
            }
        }))
        .expect("decodes");
        assert_eq!(pod.meta.name, "p");
        assert!(pod.meta.annotations.is_empty());
        assert!(pod.spec.host_pid && !pod.spec.host_network);
        let sc = pod.spec.containers[0]
            .security_context
            .as_ref()
            .expect("set");
        assert_eq!(
            sc.seccomp_profile.as_ref().map(|p| p.type_.as_str()),
            Some("")
        );
        assert!(pod.spec.volumes[0].host_path.is_none());
        assert!(pod.spec.volumes[0].empty_dir.is_some());
    }

    #[test]
    fn wrong_types_are_errors() {
        assert!(PodView::decode(&json!({"spec": {"containers": "x"}})).is_err());
    }

    #[test]
    fn controller_uid_is_the_controlling_owner() {
        let pod = PodView::decode(&json!({"metadata": {"ownerReferences": [
            {"uid": "a"}, {"uid": "b", "controller": true}
        ]}}))
        .expect("decodes");
        assert_eq!(pod.meta.controller_uid(), Some("b"));
    }
}
