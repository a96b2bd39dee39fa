//! The `rbac/bootstrap-roles` post-start hook (upstream `pkg/registry/rbac/rest/storage_rbac.go`):
//! at every start, creates the default roles and bindings that are missing and adds what the
//! stored ones lack, leaving objects annotated `autoupdate: "false"` alone; then starts the
//! ClusterRole aggregation controller. Its health check keeps `/readyz` failing until then.

use std::sync::Arc;
use std::time::Duration;

use apiserver::registry::informer::Informer;
use apiserver::registry::rest::{
    CreateOptions, DeleteOptions, GetOptions, ListOptions, RequestContext, RestStorage,
    UpdateOptions,
};
use apiserver::registry::store::Store;
use apiserver::server::hooks::PostStartHookFn;
use apiserver::status::{ApiError, reason};
use futures::StreamExt;
use serde_json::{Value, json};

use super::reconciliation::{Operation, Reconciled, reconcile_binding, reconcile_role};
use super::{
    BindingSpec, RoleSpec, cluster_role_bindings, cluster_roles, namespace_role_bindings,
    namespace_roles,
};
use crate::controllers::clusterrole_aggregation;
use crate::install::Stores;

/// The hook's name.
pub const HOOK_NAME: &str = "rbac/bootstrap-roles";

/// How often storage is tried while it does not answer, and for how long (upstream: every
/// second for 30 seconds, then the server exits).
const RETRY_INTERVAL: Duration = Duration::from_secs(1);
const RETRY_FOR: Duration = Duration::from_secs(30);

/// Roles whose rules moved into aggregated roles: a stored `admin` without an aggregation
/// rule (from before aggregation) has its rules copied to `system:aggregate-to-admin` first,
/// so reconciling does not lose custom rules.
const CLUSTER_ROLES_TO_AGGREGATE: [(&str, &str); 3] = [
    ("admin", "system:aggregate-to-admin"),
    ("edit", "system:aggregate-to-edit"),
    ("view", "system:aggregate-to-view"),
];

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// How many objects are reconciled at once.
const CONCURRENCY: usize = 32;

/// One default object to reconcile, with its store and kind (for log lines).
enum Object<'a> {
    Role(&'a Store, &'a RoleSpec, &'static str),
    Binding(&'a Store, &'a BindingSpec, &'static str),
}

/// The stores the hook writes through.
#[derive(Clone)]
struct RbacStores {
    cluster_roles: Store,
    cluster_role_bindings: Store,
    roles: Store,
    role_bindings: Store,
    namespaces: Store,
}

impl RbacStores {
    fn from(stores: &Stores) -> Result<Self, String> {
        let get = |group: &str, resource: &str| {
            stores
                .get(&(group.to_string(), resource.to_string()))
                .cloned()
                .ok_or_else(|| format!("no {resource} store installed"))
        };
        Ok(RbacStores {
            cluster_roles: get(RBAC_GROUP, "clusterroles")?,
            cluster_role_bindings: get(RBAC_GROUP, "clusterrolebindings")?,
            roles: get(RBAC_GROUP, "roles")?,
            role_bindings: get(RBAC_GROUP, "rolebindings")?,
            namespaces: get("", "namespaces")?,
        })
    }
}

/// The `rbac/bootstrap-roles` hook over the installed stores. With an informer over
/// ClusterRoles, it then starts the ClusterRole aggregation controller, whose first pass is
/// done when the hook returns (so `/readyz` passes with `admin`, `edit` and `view` filled).
pub fn bootstrap_roles_hook(
    stores: &Stores,
    cluster_role_informer: Option<Informer>,
) -> Result<PostStartHookFn, String> {
    let stores = RbacStores::from(stores)?;
    Ok(Arc::new(move |ctx| {
        let stores = stores.clone();
        let informer = cluster_role_informer.clone();
        Box::pin(async move {
            let deadline = tokio::time::Instant::now() + RETRY_FOR;
            loop {
                match ensure_policy(&stores).await {
                    Ok(()) => {
                        if let Some(informer) = informer {
                            clusterrole_aggregation::start(
                                informer,
                                stores.cluster_roles.clone(),
                                ctx.stop.clone(),
                            )
                            .await;
                        }
                        return Ok(());
                    }
                    Err(err) => tracing::error!("{err}"),
                }
                if tokio::time::Instant::now() + RETRY_INTERVAL > deadline {
                    return Err(
                        "unable to initialize roles: timed out waiting for the condition".into(),
                    );
                }
                tokio::select! {
                    () = ctx.stop.cancelled() => return Ok(()),
                    () = tokio::time::sleep(RETRY_INTERVAL) => {}
                }
            }
        })
    }))
}

fn in_namespace(namespace: &str) -> RequestContext {
    RequestContext {
        namespace: namespace.to_string(),
        ..RequestContext::default()
    }
}

/// One pass: storage must answer, then every object is reconciled; a failure on one object
/// is logged and the others still done (upstream: "try to create as many as you can").
async fn ensure_policy(stores: &RbacStores) -> Result<(), String> {
    let all = RequestContext::default();
    stores
        .cluster_roles
        .list(&all, &ListOptions::default())
        .await
        .map_err(|e| format!("unable to initialize clusterroles: {e}"))?;
    stores
        .cluster_role_bindings
        .list(&all, &ListOptions::default())
        .await
        .map_err(|e| format!("unable to initialize clusterrolebindings: {e}"))?;
    prime_aggregated_cluster_roles(&stores.cluster_roles)
        .await
        .map_err(|e| format!("unable to prime aggregated clusterroles: {e}"))?;
    prime_split_cluster_role_bindings(&stores.cluster_role_bindings)
        .await
        .map_err(|e| format!("unable to prime split ClusterRoleBindings: {e}"))?;

    let roles = namespace_roles();
    let bindings = namespace_role_bindings();
    let mut namespaces: Vec<&str> = roles
        .iter()
        .map(|r| r.namespace)
        .chain(bindings.iter().map(|b| b.namespace))
        .collect();
    namespaces.sort_unstable();
    namespaces.dedup();
    for namespace in namespaces {
        ensure_namespace(&stores.namespaces, namespace).await;
    }

    // The objects are independent of each other (a binding may name a role that does not exist
    // yet), so they are reconciled concurrently: on a fresh store the creates share fsyncs.
    let cluster_roles = cluster_roles();
    let cluster_role_bindings = cluster_role_bindings();
    let work = cluster_roles
        .iter()
        .map(|r| Object::Role(&stores.cluster_roles, r, "clusterrole"))
        .chain(
            cluster_role_bindings
                .iter()
                .map(|b| Object::Binding(&stores.cluster_role_bindings, b, "clusterrolebinding")),
        )
        .chain(roles.iter().map(|r| Object::Role(&stores.roles, r, "role")))
        .chain(
            bindings
                .iter()
                .map(|b| Object::Binding(&stores.role_bindings, b, "rolebinding")),
        );
    futures::stream::iter(work)
        .for_each_concurrent(CONCURRENCY, |object| async move {
            match object {
                Object::Role(store, role, kind) => reconcile_one_role(store, role, kind).await,
                Object::Binding(store, binding, kind) => {
                    reconcile_one_binding(store, binding, kind).await;
                }
            }
        })
        .await;
    Ok(())
}

/// Creates `namespace` if it is missing: the system namespaces hook runs at the same time, and
/// a Role cannot be created in a namespace that does not exist.
async fn ensure_namespace(namespaces: &Store, namespace: &str) {
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}});
    match namespaces
        .create(&RequestContext::default(), ns, &CreateOptions::default())
        .await
    {
        Ok(_) => {}
        Err(err) if err.reason() == reason::ALREADY_EXISTS => {}
        Err(err) => tracing::warn!("unable to create namespace {namespace}: {err}"),
    }
}

async fn prime_aggregated_cluster_roles(store: &Store) -> Result<(), ApiError> {
    let ctx = RequestContext::default();
    for (old, new) in CLUSTER_ROLES_TO_AGGREGATE {
        match store.get(&ctx, new, &GetOptions::default()).await {
            Ok(_) => continue,
            Err(err) if err.reason() == reason::NOT_FOUND => {}
            Err(err) => return Err(err),
        }
        let mut existing = match store.get(&ctx, old, &GetOptions::default()).await {
            Ok(existing) => existing,
            Err(err) if err.reason() == reason::NOT_FOUND => continue,
            Err(err) => return Err(err),
        };
        if existing
            .get("aggregationRule")
            .is_some_and(|r| !r.is_null())
        {
            // Already aggregated: no custom rules left to carry over.
            return Ok(());
        }
        tracing::info!("migrating {old} to {new}");
        if let Some(metadata) = existing.get_mut("metadata").and_then(Value::as_object_mut) {
            metadata.insert("name".into(), new.into());
            for field in [
                "resourceVersion",
                "uid",
                "creationTimestamp",
                "managedFields",
            ] {
                metadata.remove(field);
            }
        }
        match store
            .create(&ctx, existing, &CreateOptions::default())
            .await
        {
            Ok(_) => {}
            Err(err) if err.reason() == reason::ALREADY_EXISTS => {}
            Err(err) => return Err(err),
        }
    }
    Ok(())
}

/// Bindings split off older ones: `system:public-info-viewer` was split off `system:discovery`,
/// so where the old binding exists and the new one does not, the new one starts with the old
/// one's subjects, labels and annotations (upstream `primeSplitClusterRoleBindings`).
const CLUSTER_ROLE_BINDINGS_TO_SPLIT: [(&str, &str); 1] =
    [("system:discovery", "system:public-info-viewer")];

async fn prime_split_cluster_role_bindings(store: &Store) -> Result<(), ApiError> {
    let ctx = RequestContext::default();
    for (source, target) in CLUSTER_ROLE_BINDINGS_TO_SPLIT {
        let existing = match store.get(&ctx, source, &GetOptions::default()).await {
            Ok(existing) => existing,
            Err(err) if err.reason() == reason::NOT_FOUND => continue,
            Err(err) => return Err(err),
        };
        match store.get(&ctx, target, &GetOptions::default()).await {
            Ok(_) => continue,
            Err(err) if err.reason() == reason::NOT_FOUND => {}
            Err(err) => return Err(err),
        }
        let Some(template) = cluster_role_bindings()
            .into_iter()
            .find(|b| b.name == target)
        else {
            continue;
        };
        tracing::info!(
            "copying subjects, labels, and annotations from ClusterRoleBinding {source:?} to template {target:?}"
        );
        let mut binding = template.to_value();
        binding["subjects"] = existing.get("subjects").cloned().unwrap_or(Value::Null);
        for field in ["labels", "annotations"] {
            binding["metadata"][field] = existing
                .pointer(&format!("/metadata/{field}"))
                .cloned()
                .unwrap_or(Value::Null);
        }
        match store.create(&ctx, binding, &CreateOptions::default()).await {
            Ok(_) => {}
            Err(err) if err.reason() == reason::ALREADY_EXISTS => {}
            Err(err) => return Err(err),
        }
    }
    Ok(())
}

/// The stored object, `None` when there is none.
async fn stored(store: &Store, namespace: &str, name: &str) -> Result<Option<Value>, ApiError> {
    match store
        .get(&in_namespace(namespace), name, &GetOptions::default())
        .await
    {
        Ok(obj) => Ok(Some(obj)),
        Err(err) if err.reason() == reason::NOT_FOUND => Ok(None),
        Err(err) => Err(err),
    }
}

/// The reconciliation's write: a create, an update that reconciles again with whatever is
/// stored when it runs (so a concurrent write is not lost), or a delete and create.
async fn apply(
    store: &Store,
    namespace: &str,
    name: &str,
    result: &Reconciled,
    expected: Value,
    reconcile: fn(Option<&Value>, &Value) -> Reconciled,
) -> Result<(), ApiError> {
    let ctx = in_namespace(namespace);
    match result.operation {
        Operation::None => Ok(()),
        Operation::Create => match store
            .create(&ctx, result.object.clone(), &CreateOptions::default())
            .await
        {
            Ok(_) => Ok(()),
            // Created meanwhile (another server of the cluster): reconciled at its start.
            Err(err) if err.reason() == reason::ALREADY_EXISTS => Ok(()),
            Err(err) => Err(err),
        },
        Operation::Update => {
            let update =
                Box::new(move |current: Option<&Value>| Ok(reconcile(current, &expected).object));
            store
                .update(&ctx, name, update, &UpdateOptions::default(), false)
                .await
                .map(|_| ())
        }
        Operation::Recreate => {
            match store.delete(&ctx, name, &DeleteOptions::default()).await {
                Ok(_) => {}
                Err(err) if err.reason() == reason::NOT_FOUND => {}
                Err(err) => return Err(err),
            }
            store
                .create(&ctx, result.object.clone(), &CreateOptions::default())
                .await
                .map(|_| ())
        }
    }
}

fn describe(kind: &str, namespace: &str, name: &str) -> String {
    if namespace.is_empty() {
        format!("{kind}.{RBAC_GROUP}/{name}")
    } else {
        format!("{kind}.{RBAC_GROUP}/{name} in {namespace}")
    }
}

async fn reconcile_one_role(store: &Store, role: &RoleSpec, kind: &str) {
    let what = describe(kind, role.namespace, &role.name);
    let expected = role.to_value();
    let outcome = async {
        let existing = stored(store, role.namespace, &role.name).await?;
        let result = reconcile_role(existing.as_ref(), &expected);
        if result.protected {
            if result.operation != Operation::None {
                tracing::warn!(
                    "skipped reconcile-protected {what} with missing permissions: {:?}",
                    result.missing_rules
                );
            }
            return Ok(());
        }
        apply(
            store,
            role.namespace,
            &role.name,
            &result,
            expected.clone(),
            reconcile_role,
        )
        .await?;
        match result.operation {
            // Upstream logs these at -v=2.
            Operation::Create => tracing::debug!("created {what}"),
            Operation::Update => tracing::debug!(
                "updated {what} with additional permissions: {:?}",
                result.missing_rules
            ),
            Operation::None | Operation::Recreate => {}
        }
        Ok::<(), ApiError>(())
    }
    .await;
    if let Err(err) = outcome {
        tracing::error!("unable to reconcile {what}: {err}");
    }
}

async fn reconcile_one_binding(store: &Store, binding: &BindingSpec, kind: &str) {
    let what = describe(kind, binding.namespace, &binding.name);
    let expected = binding.to_value();
    let outcome = async {
        let existing = stored(store, binding.namespace, &binding.name).await?;
        let result = reconcile_binding(existing.as_ref(), &expected);
        if result.protected {
            if result.operation != Operation::None {
                tracing::warn!(
                    "skipped reconcile-protected {what} with missing subjects: {:?}",
                    result.missing_subjects
                );
            }
            return Ok(());
        }
        apply(
            store,
            binding.namespace,
            &binding.name,
            &result,
            expected.clone(),
            reconcile_binding,
        )
        .await?;
        match result.operation {
            Operation::Create => tracing::debug!("created {what}"),
            Operation::Update => tracing::debug!(
                "updated {what} with additional subjects: {:?}",
                result.missing_subjects
            ),
            Operation::Recreate => tracing::debug!("recreated {what}"),
            Operation::None => {}
        }
        Ok::<(), ApiError>(())
    }
    .await;
    if let Err(err) = outcome {
        tracing::error!("unable to reconcile {what}: {err}");
    }
}

#[cfg(test)]
mod tests {
    use apiserver::storage::Storage;
    use apiserver::storage::backends::EmbeddedStorage;

    use super::*;
    use crate::apis::core::namespaces::namespaces;
    use crate::apis::rbac::{clusterrolebindings, clusterroles, rolebindings, roles};

    fn fixture() -> (tempfile::TempDir, RbacStores) {
        let dir = tempfile::tempdir().unwrap();
        let backend: Arc<dyn Storage> = Arc::new(EmbeddedStorage::open(dir.path()).unwrap());
        let store = |def: crate::apis::ResourceDef, key: &str| {
            Store::new(def.strategy, backend.clone(), &format!("/registry/{key}"))
        };
        let stores = RbacStores {
            cluster_roles: store(clusterroles(), "clusterroles"),
            cluster_role_bindings: store(clusterrolebindings(), "clusterrolebindings"),
            roles: store(roles(), "roles"),
            role_bindings: store(rolebindings(), "rolebindings"),
            namespaces: store(namespaces(), "namespaces"),
        };
        (dir, stores)
    }

    async fn get(store: &Store, name: &str) -> Value {
        store
            .get(&RequestContext::default(), name, &GetOptions::default())
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn a_second_pass_writes_nothing() {
        let (_dir, stores) = fixture();
        ensure_policy(&stores).await.unwrap();
        let before = get(&stores.cluster_roles, "system:node").await;
        let binding = get(&stores.cluster_role_bindings, "cluster-admin").await;
        ensure_policy(&stores).await.unwrap();
        assert_eq!(get(&stores.cluster_roles, "system:node").await, before);
        assert_eq!(
            get(&stores.cluster_role_bindings, "cluster-admin").await,
            binding
        );
        let reader = stores
            .roles
            .get(
                &in_namespace("kube-system"),
                "extension-apiserver-authentication-reader",
                &GetOptions::default(),
            )
            .await
            .unwrap();
        assert_eq!(
            reader["rules"][0]["resourceNames"],
            json!(["extension-apiserver-authentication"])
        );
    }

    #[tokio::test]
    async fn public_info_viewer_starts_from_the_discovery_binding_it_was_split_from() {
        let (_dir, stores) = fixture();
        let someone =
            json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "someone"});
        stores
            .cluster_role_bindings
            .create(
                &RequestContext::default(),
                json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                       "metadata": {"name": "system:discovery", "labels": {"mine": "yes"}},
                       "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                                   "kind": "ClusterRole", "name": "system:discovery"},
                       "subjects": [someone]}),
                &CreateOptions::default(),
            )
            .await
            .unwrap();
        ensure_policy(&stores).await.unwrap();
        let viewer = get(&stores.cluster_role_bindings, "system:public-info-viewer").await;
        assert_eq!(viewer["roleRef"]["name"], "system:public-info-viewer");
        // The copied subject first, then the default ones reconciliation added.
        assert_eq!(viewer["subjects"][0], someone);
        assert_eq!(viewer["subjects"].as_array().unwrap().len(), 3);
        assert_eq!(viewer["metadata"]["labels"]["mine"], "yes");
        assert_eq!(
            viewer["metadata"]["labels"]["kubernetes.io/bootstrapping"],
            "rbac-defaults"
        );
    }

    #[tokio::test]
    async fn an_admin_role_from_before_aggregation_keeps_its_rules_in_its_aggregate_role() {
        let (_dir, stores) = fixture();
        let custom =
            json!({"apiGroups": ["example.com"], "resources": ["widgets"], "verbs": ["*"]});
        stores
            .cluster_roles
            .create(
                &RequestContext::default(),
                json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                       "metadata": {"name": "admin"}, "rules": [custom]}),
                &CreateOptions::default(),
            )
            .await
            .unwrap();
        ensure_policy(&stores).await.unwrap();
        let aggregate = get(&stores.cluster_roles, "system:aggregate-to-admin").await;
        let rules = aggregate["rules"].as_array().unwrap();
        assert_eq!(rules[0], custom, "{rules:?}");
        // The default rules were added after the copied ones.
        assert!(rules.len() > 1);
        let admin = get(&stores.cluster_roles, "admin").await;
        assert_eq!(
            admin["aggregationRule"]["clusterRoleSelectors"][0]["matchLabels"]["rbac.authorization.k8s.io/aggregate-to-admin"],
            "true"
        );
        assert_eq!(
            admin["metadata"]["labels"]["kubernetes.io/bootstrapping"],
            "rbac-defaults"
        );
    }
}
