//! ServiceAccount (upstream `plugin/pkg/admission/serviceaccount`): a pod without a service
//! account gets `default`; the service account must exist; unless the pod or its service
//! account turns automounting off, every container and init container mounts the projected
//! `kube-api-access-<random>` volume (a bound token, the `kube-root-ca.crt` CA bundle and the
//! namespace) at `/var/run/secrets/kubernetes.io/serviceaccount`; the service account's image
//! pull secrets are copied to a pod without any; with the `kubernetes.io/enforce-mountable-secrets`
//! annotation, the pod may only use the secrets the service account lists. Mirror pods are not
//! changed and may not reference service accounts or secrets.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use apiserver::admission::{Attributes, Operation, Plugin, forbidden};
use apiserver::registry::informer::Informer;
use apiserver::registry::rest::{GetOptions, RequestContext, RestStorage};
use apiserver::registry::store::Store;
use apiserver::registry::store::meta::generate_name;
use apiserver::status::{ApiError, reason};
use async_trait::async_trait;
use serde_json::{Map, Value, json};

use super::pods::{is_mirror_pod, is_pod_request, visit_secret_names};
use crate::admission::PluginContext;
use crate::apis::json::{array_at, get, str_at};

/// The plugin's name.
pub const NAME: &str = "ServiceAccount";

/// The service account of pods that name none.
pub const DEFAULT_SERVICE_ACCOUNT: &str = "default";
/// With the value `true` on a service account, its pods may only use the secrets it lists.
const ENFORCE_MOUNTABLE_SECRETS: &str = "kubernetes.io/enforce-mountable-secrets";
/// The prefix of the projected token volume's name.
const VOLUME_PREFIX: &str = "kube-api-access-";
/// Where every container finds its token, CA bundle and namespace.
pub const TOKEN_MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// A bound token's lifetime as requested by the volume: an hour and 7 seconds, which the
/// token issuer recognises as the automounted default (upstream
/// `WarnOnlyBoundTokenExpirationSeconds`).
const TOKEN_EXPIRATION_SECONDS: i64 = 3607;
/// Storage reads for a service account the informer does not have yet: `default` is created
/// by a controller just after its namespace, so it gets more tries.
const LOOKUP_ATTEMPTS: usize = 1;
const DEFAULT_LOOKUP_ATTEMPTS: usize = 10;
const LOOKUP_RETRY: Duration = Duration::from_millis(150);

/// The ServiceAccount plugin.
pub struct ServiceAccount {
    informer: Informer,
    store: Store,
}

/// Builds the plugin over the service-account informer and store.
pub fn new(ctx: &PluginContext) -> Result<Arc<dyn Plugin>, String> {
    let missing = "ServiceAccount needs the serviceaccounts resource";
    let informer = ctx
        .informers
        .informer("", "serviceaccounts")
        .ok_or(missing)?;
    let store = ctx
        .informers
        .stores()
        .get(&(String::new(), "serviceaccounts".to_string()))
        .cloned()
        .ok_or(missing)?;
    Ok(Arc::new(ServiceAccount { informer, store }))
}

/// The projected volume source every automounting pod gets.
pub fn token_volume_source() -> Value {
    json!({
        "defaultMode": 420,
        "sources": [
            {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION_SECONDS, "path": "token"}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace",
                "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}
        ]
    })
}

/// Whether the pod's token is mounted: the pod's choice, else the service account's, else yes.
fn should_automount(sa: &Value, pod: &Value) -> bool {
    get(pod, "spec.automountServiceAccountToken")
        .and_then(Value::as_bool)
        .or_else(|| get(sa, "automountServiceAccountToken").and_then(Value::as_bool))
        .unwrap_or(true)
}

/// Go's `strconv.ParseBool` truth values.
fn parse_bool(s: &str) -> bool {
    matches!(s, "1" | "t" | "T" | "true" | "TRUE" | "True")
}

fn enforces_mountable_secrets(sa: &Value) -> bool {
    get(sa, "metadata.annotations")
        .and_then(|a| a.get(ENFORCE_MOUNTABLE_SECRETS))
        .and_then(Value::as_str)
        .is_some_and(parse_bool)
}

fn names_at(obj: &Value, path: &str) -> BTreeSet<String> {
    array_at(obj, path)
        .iter()
        .filter_map(|r| r.get("name").and_then(Value::as_str).map(str::to_string))
        .collect()
}

fn env_secret_refs(container: &Value) -> impl Iterator<Item = (&str, &str)> {
    array_at(container, "env").iter().filter_map(|env| {
        let secret = str_at(env, "valueFrom.secretKeyRef.name")?;
        Some((str_at(env, "name").unwrap_or_default(), secret))
    })
}

/// Upstream `limitSecretReferences`: the pod's secret volumes, secret env vars and image pull
/// secrets must all be listed by the service account.
fn limit_secret_references(sa: &Value, pod: &Value) -> Result<(), String> {
    let sa_name = str_at(sa, "metadata.name").unwrap_or_default();
    let mountable = names_at(sa, "secrets");
    for volume in array_at(pod, "spec.volumes") {
        if let Some(secret) = str_at(volume, "secret.secretName")
            && !mountable.contains(secret)
        {
            return Err(format!(
                "volume with secret.secretName=\"{secret}\" is not allowed because service account {sa_name} does not reference that secret"
            ));
        }
    }
    for (kind, path) in [
        ("init container", "spec.initContainers"),
        ("container", "spec.containers"),
    ] {
        for container in array_at(pod, path) {
            let container_name = str_at(container, "name").unwrap_or_default();
            for (env, secret) in env_secret_refs(container) {
                if !mountable.contains(secret) {
                    return Err(format!(
                        "{kind} {container_name} with envVar {env} referencing secret.secretName=\"{secret}\" is not allowed because service account {sa_name} does not reference that secret"
                    ));
                }
            }
        }
    }
    let pull_secrets = names_at(sa, "imagePullSecrets");
    for (i, reference) in array_at(pod, "spec.imagePullSecrets").iter().enumerate() {
        let name = str_at(reference, "name").unwrap_or_default();
        if !pull_secrets.contains(name) {
            return Err(format!(
                "imagePullSecrets[{i}].name=\"{name}\" is not allowed because service account {sa_name} does not reference that imagePullSecret"
            ));
        }
    }
    Ok(())
}

/// The mountable-secrets check of ephemeral containers added through `pods/ephemeralcontainers`.
fn limit_ephemeral_secret_references(sa: &Value, pod: &Value) -> Result<(), String> {
    let sa_name = str_at(sa, "metadata.name").unwrap_or_default();
    let mountable = names_at(sa, "secrets");
    for container in array_at(pod, "spec.ephemeralContainers") {
        let container_name = str_at(container, "name").unwrap_or_default();
        for (env, secret) in env_secret_refs(container) {
            if !mountable.contains(secret) {
                return Err(format!(
                    "ephemeral container {container_name} with envVar {env} referencing secret.secretName=\"{secret}\" is not allowed because service account {sa_name} does not reference that secret"
                ));
            }
        }
    }
    Ok(())
}

fn mounts_token_path(container: &Value) -> bool {
    array_at(container, "volumeMounts")
        .iter()
        .any(|m| str_at(m, "mountPath") == Some(TOKEN_MOUNT_PATH))
}

/// Upstream `mountServiceAccountToken`: mounts the token volume (reusing a `kube-api-access-`
/// volume the pod has) in every container and init container not already using the path.
fn mount_token(pod: &mut Value) {
    let existing = array_at(pod, "spec.volumes")
        .iter()
        .filter_map(|v| str_at(v, "name"))
        .find(|name| name.starts_with(VOLUME_PREFIX))
        .map(str::to_string);
    let volume_name = existing
        .clone()
        .unwrap_or_else(|| generate_name(VOLUME_PREFIX));
    let mount = json!({"name": volume_name, "readOnly": true, "mountPath": TOKEN_MOUNT_PATH});
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let mut mounted = false;
    for key in ["initContainers", "containers"] {
        let Some(containers) = spec.get_mut(key).and_then(Value::as_array_mut) else {
            continue;
        };
        for container in containers.iter_mut() {
            if mounts_token_path(container) {
                continue;
            }
            let Some(container) = container.as_object_mut() else {
                continue;
            };
            let mounts = container
                .entry("volumeMounts")
                .or_insert_with(|| Value::Array(Vec::new()));
            if !mounts.is_array() {
                *mounts = Value::Array(Vec::new());
            }
            if let Some(mounts) = mounts.as_array_mut() {
                mounts.push(mount.clone());
                mounted = true;
            }
        }
    }
    if existing.is_none() && mounted {
        let volumes = spec
            .entry("volumes")
            .or_insert_with(|| Value::Array(Vec::new()));
        if !volumes.is_array() {
            *volumes = Value::Array(Vec::new());
        }
        if let Some(volumes) = volumes.as_array_mut() {
            volumes.push(json!({"name": volume_name, "projected": token_volume_source()}));
        }
    }
}

/// Copies the service account's image pull secrets to a pod that has none.
fn copy_image_pull_secrets(sa: &Value, pod: &mut Value) {
    if !array_at(pod, "spec.imagePullSecrets").is_empty() {
        return;
    }
    let secrets: Vec<Value> = array_at(sa, "imagePullSecrets")
        .iter()
        .filter_map(|s| s.get("name").map(|name| json!({"name": name})))
        .collect();
    if secrets.is_empty() {
        return;
    }
    if let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) {
        spec.insert("imagePullSecrets".into(), Value::Array(secrets));
    }
}

/// Upstream's checks of mirror pods, which the kubelet creates from static manifests.
fn validate_mirror_pod(attrs: &Attributes, pod: &Value) -> Result<(), ApiError> {
    if str_at(pod, "spec.serviceAccountName").is_some_and(|s| !s.is_empty()) {
        return Err(forbidden(
            attrs,
            "a mirror pod may not reference service accounts",
        ));
    }
    let mut has_secrets = false;
    visit_secret_names(pod, &mut |_| {
        has_secrets = true;
        false
    });
    if has_secrets {
        return Err(forbidden(attrs, "a mirror pod may not reference secrets"));
    }
    let projects_token = array_at(pod, "spec.volumes").iter().any(|v| {
        array_at(v, "projected.sources")
            .iter()
            .any(|s| get(s, "serviceAccountToken").is_some_and(|t| !t.is_null()))
    });
    if projects_token {
        return Err(forbidden(
            attrs,
            "a mirror pod may not use ServiceAccountToken volume projections",
        ));
    }
    Ok(())
}

impl ServiceAccount {
    /// The service account from the informer, else from storage (with retries for `default`,
    /// which a controller creates just after its namespace).
    async fn service_account(&self, namespace: &str, name: &str) -> Result<Arc<Value>, String> {
        if let Some(sa) = self.informer.get(namespace, name) {
            return Ok(sa);
        }
        let attempts = if name == DEFAULT_SERVICE_ACCOUNT {
            DEFAULT_LOOKUP_ATTEMPTS
        } else {
            LOOKUP_ATTEMPTS
        };
        let ctx = RequestContext {
            namespace: namespace.to_string(),
            ..Default::default()
        };
        for attempt in 0..attempts {
            if attempt > 0 {
                tokio::time::sleep(LOOKUP_RETRY).await;
                if let Some(sa) = self.informer.get(namespace, name) {
                    return Ok(sa);
                }
            }
            match self.store.get(&ctx, name, &GetOptions::default()).await {
                Ok(sa) => return Ok(Arc::new(sa)),
                Err(e) if e.reason() == reason::NOT_FOUND => {}
                Err(e) => return Err(e.to_string()),
            }
        }
        // Upstream names the resource in the singular here.
        Err(format!("serviceaccount \"{name}\" not found"))
    }

    async fn lookup(&self, attrs: &Attributes, name: &str) -> Result<Arc<Value>, ApiError> {
        self.service_account(&attrs.namespace, name)
            .await
            .map_err(|e| {
                forbidden(
                    attrs,
                    &format!(
                        "error looking up service account {}/{name}: {e}",
                        attrs.namespace
                    ),
                )
            })
    }
}

#[async_trait]
impl Plugin for ServiceAccount {
    fn name(&self) -> &str {
        NAME
    }

    fn handles(&self, op: Operation) -> bool {
        matches!(op, Operation::Create | Operation::Update)
    }

    fn mutates(&self) -> bool {
        true
    }

    fn validates(&self) -> bool {
        true
    }

    async fn admit(&self, attrs: &mut Attributes) -> Result<(), ApiError> {
        if attrs.operation != Operation::Create || !is_pod_request(attrs) {
            return Ok(());
        }
        let Some(pod) = attrs.object.as_ref() else {
            return Ok(());
        };
        if is_mirror_pod(pod) {
            return validate_mirror_pod(attrs, pod);
        }
        let name = match str_at(pod, "spec.serviceAccountName") {
            Some(name) if !name.is_empty() => name.to_string(),
            _ => DEFAULT_SERVICE_ACCOUNT.to_string(),
        };
        let sa = self.lookup(attrs, &name).await?;
        let Some(pod) = attrs.object.as_mut() else {
            return Ok(());
        };
        if let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) {
            spec.insert("serviceAccountName".into(), Value::String(name));
        } else if let Some(obj) = pod.as_object_mut() {
            let mut spec = Map::new();
            spec.insert("serviceAccountName".into(), Value::String(name));
            obj.insert("spec".into(), Value::Object(spec));
        }
        if should_automount(&sa, pod) {
            mount_token(pod);
        }
        copy_image_pull_secrets(&sa, pod);
        Ok(())
    }

    async fn validate(&self, attrs: &Attributes) -> Result<(), ApiError> {
        let ephemeral = attrs.operation == Operation::Update
            && attrs.resource.group.is_empty()
            && attrs.resource.resource == "pods"
            && attrs.subresource == "ephemeralcontainers";
        if !(ephemeral || attrs.operation == Operation::Create && is_pod_request(attrs)) {
            return Ok(());
        }
        let Some(pod) = attrs.object.as_ref() else {
            return Ok(());
        };
        if is_mirror_pod(pod) {
            return if ephemeral {
                Ok(())
            } else {
                validate_mirror_pod(attrs, pod)
            };
        }
        let name = str_at(pod, "spec.serviceAccountName").unwrap_or_default();
        let sa = self.lookup(attrs, name).await?;
        if !enforces_mountable_secrets(&sa) {
            return Ok(());
        }
        let checked = if ephemeral {
            limit_ephemeral_secret_references(&sa, pod)
        } else {
            limit_secret_references(&sa, pod)
        };
        checked.map_err(|e| forbidden(attrs, &e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_volume_is_mounted_once_and_reused() {
        let mut pod = json!({"spec": {
            "initContainers": [{"name": "init"}],
            "containers": [
                {"name": "app", "volumeMounts": [{"name": "data", "mountPath": "/data"}]},
                {"name": "own", "volumeMounts": [{"name": "x", "mountPath": TOKEN_MOUNT_PATH}]}
            ]
        }});
        mount_token(&mut pod);
        let volumes = array_at(&pod, "spec.volumes");
        assert_eq!(volumes.len(), 1);
        let name = str_at(&volumes[0], "name").unwrap().to_string();
        assert!(name.starts_with(VOLUME_PREFIX) && name.len() == VOLUME_PREFIX.len() + 5);
        assert_eq!(volumes[0]["projected"], token_volume_source());
        assert_eq!(
            pod["spec"]["initContainers"][0]["volumeMounts"][0]["name"],
            name.as_str()
        );
        assert_eq!(
            pod["spec"]["containers"][0]["volumeMounts"][1]["name"],
            name.as_str()
        );
        assert_eq!(
            pod["spec"]["containers"][1]["volumeMounts"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
        // A second pass (reinvocation) changes nothing.
        let before = pod.clone();
        mount_token(&mut pod);
        assert_eq!(pod, before);
    }

    #[test]
    fn mountable_secrets_are_enforced_with_upstreams_messages() {
        let sa = json!({"metadata": {"name": "builder",
                "annotations": {ENFORCE_MOUNTABLE_SECRETS: "true"}},
            "secrets": [{"name": "allowed"}], "imagePullSecrets": [{"name": "pull"}]});
        assert!(enforces_mountable_secrets(&sa));
        let ok = json!({"spec": {"volumes": [{"name": "v", "secret": {"secretName": "allowed"}}],
            "imagePullSecrets": [{"name": "pull"}]}});
        assert_eq!(limit_secret_references(&sa, &ok), Ok(()));
        let volume =
            json!({"spec": {"volumes": [{"name": "v", "secret": {"secretName": "other"}}]}});
        assert_eq!(
            limit_secret_references(&sa, &volume).unwrap_err(),
            "volume with secret.secretName=\"other\" is not allowed because service account builder does not reference that secret"
        );
        let env = json!({"spec": {"initContainers": [{"name": "init", "env": [{"name": "TOKEN",
            "valueFrom": {"secretKeyRef": {"name": "other", "key": "k"}}}]}]}});
        assert_eq!(
            limit_secret_references(&sa, &env).unwrap_err(),
            "init container init with envVar TOKEN referencing secret.secretName=\"other\" is not allowed because service account builder does not reference that secret"
        );
        let pull = json!({"spec": {"imagePullSecrets": [{"name": "pull"}, {"name": "x"}]}});
        assert_eq!(
            limit_secret_references(&sa, &pull).unwrap_err(),
            "imagePullSecrets[1].name=\"x\" is not allowed because service account builder does not reference that imagePullSecret"
        );
        let off = json!({"metadata": {"annotations": {ENFORCE_MOUNTABLE_SECRETS: "false"}}});
        assert!(!enforces_mountable_secrets(&off));
    }

    #[test]
    fn automounting_follows_the_pod_then_the_service_account() {
        let sa_off = json!({"automountServiceAccountToken": false});
        assert!(!should_automount(&sa_off, &json!({"spec": {}})));
        assert!(should_automount(
            &sa_off,
            &json!({"spec": {"automountServiceAccountToken": true}})
        ));
        assert!(should_automount(&json!({}), &json!({"spec": {}})));
    }
}
