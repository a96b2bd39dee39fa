//! Restricted: only configMap, csi, downwardAPI, emptyDir, ephemeral, image,
//! persistentVolumeClaim, projected and secret volumes (replaces baseline's hostPath check).

use std::collections::BTreeSet;

use super::{Check, CheckResult, VersionedCheck, host_path_volumes, join_quote, pluralize, sorted};
use crate::admission::podsecurity::api::{Level, Version};
use crate::admission::podsecurity::pod::{PodMeta, PodSpec, Volume};

/// The check.
pub fn check() -> Check {
    Check {
        id: "restrictedVolumes",
        level: Level::Restricted,
        versions: vec![VersionedCheck {
            minimum_version: Version::V1(0),
            check: v1_0,
            overrides: &[host_path_volumes::ID],
        }],
    }
}

fn allowed_source(v: &Volume) -> bool {
    [
        &v.config_map,
        &v.csi,
        &v.downward_api,
        &v.empty_dir,
        &v.ephemeral,
        &v.image,
        &v.persistent_volume_claim,
        &v.projected,
        &v.secret,
    ]
    .iter()
    .any(|s| s.is_some())
}

/// The restricted source's name, in upstream's order of precedence.
fn restricted_source(v: &Volume) -> &'static str {
    [
        (&v.host_path, "hostPath"),
        (&v.gce_persistent_disk, "gcePersistentDisk"),
        (&v.aws_elastic_block_store, "awsElasticBlockStore"),
        (&v.git_repo, "gitRepo"),
        (&v.nfs, "nfs"),
        (&v.iscsi, "iscsi"),
        (&v.glusterfs, "glusterfs"),
        (&v.rbd, "rbd"),
        (&v.flex_volume, "flexVolume"),
        (&v.cinder, "cinder"),
        (&v.cephfs, "cephfs"),
        (&v.flocker, "flocker"),
        (&v.fc, "fc"),
        (&v.azure_file, "azureFile"),
        (&v.vsphere_volume, "vsphereVolume"),
        (&v.quobyte, "quobyte"),
        (&v.azure_disk, "azureDisk"),
        (&v.photon_persistent_disk, "photonPersistentDisk"),
        (&v.portworx_volume, "portworxVolume"),
        (&v.scale_io, "scaleIO"),
        (&v.storageos, "storageos"),
    ]
    .into_iter()
    .find(|(s, _)| s.is_some())
    .map_or("unknown", |(_, name)| name)
}

fn v1_0(_: &PodMeta, spec: &PodSpec) -> CheckResult {
    let mut bad_volumes = Vec::new();
    let mut bad_types = BTreeSet::new();
    for v in spec.volumes.iter().filter(|v| !allowed_source(v)) {
        bad_volumes.push(v.name.clone());
        bad_types.insert(restricted_source(v).to_string());
    }
    if bad_volumes.is_empty() {
        return CheckResult::Allowed;
    }
    CheckResult::forbidden(
        "restricted volume types",
        format!(
            "{} {} {} {} {}",
            pluralize("volume", "volumes", bad_volumes.len()),
            join_quote(&bad_volumes),
            pluralize("uses", "use", bad_volumes.len()),
            pluralize(
                "restricted volume type",
                "restricted volume types",
                bad_types.len()
            ),
            join_quote(&sorted(bad_types))
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::super::testing::{allowed, forbidden, run};
    use super::*;
    use serde_json::json;

    #[test]
    fn only_restricted_volume_types() {
        let allowed_types = [
            "emptyDir",
            "secret",
            "persistentVolumeClaim",
            "downwardAPI",
            "configMap",
            "projected",
            "csi",
            "ephemeral",
            "image",
        ];
        let restricted = [
            "hostPath",
            "gcePersistentDisk",
            "awsElasticBlockStore",
            "gitRepo",
            "nfs",
            "iscsi",
            "glusterfs",
            "rbd",
            "flexVolume",
            "cinder",
            "cephfs",
            "flocker",
            "fc",
            "azureFile",
            "vsphereVolume",
            "quobyte",
            "azureDisk",
            "photonPersistentDisk",
            "portworxVolume",
            "scaleIO",
            "storageos",
        ];
        let mut volumes = Vec::new();
        for (i, t) in allowed_types.iter().enumerate() {
            volumes.push(json!({"name": format!("a{}", i + 1), *t: {}}));
        }
        for (i, t) in restricted.iter().enumerate() {
            volumes.push(json!({"name": format!("b{}", i + 1), *t: {}}));
        }
        volumes.push(json!({"name": "c1"}));
        run(
            v1_0,
            vec![
                forbidden(
                    "host path volumes",
                    json!({"spec": {"volumes": volumes}}),
                    "restricted volume types",
                    concat!(
                        r#"volumes "b1", "b2", "b3", "b4", "b5", "b6", "b7", "b8", "b9", "b10", "b11", "b12", "b13", "b14", "b15", "b16", "b17", "b18", "b19", "b20", "b21", "c1""#,
                        r#" use restricted volume types "#,
                        r#""awsElasticBlockStore", "azureDisk", "azureFile", "cephfs", "cinder", "fc", "flexVolume", "flocker", "gcePersistentDisk", "gitRepo", "glusterfs", "#,
                        r#""hostPath", "iscsi", "nfs", "photonPersistentDisk", "portworxVolume", "quobyte", "rbd", "scaleIO", "storageos", "unknown", "vsphereVolume""#
                    ),
                ),
                forbidden(
                    "one volume",
                    json!({"spec": {"volumes": [{"name": "h", "hostPath": {"path": "/"}}]}}),
                    "restricted volume types",
                    r#"volume "h" uses restricted volume type "hostPath""#,
                ),
                allowed(
                    "allowed types",
                    json!({"spec": {"volumes": [{"name": "a", "emptyDir": {}}, {"name": "b", "projected": {"sources": []}}]}}),
                ),
            ],
        );
    }
}
