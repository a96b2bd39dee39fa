//! The resource quota controller (upstream `pkg/controller/resourcequota`, which runs in
//! kube-controller-manager; there is none here, so kube-apiserver runs it as a post-start
//! hook): it copies `spec.hard` to `status.hard` and recomputes `status.used` from the
//! informers when a quota is created or its limits change, when a counted object is deleted
//! or stops counting (a pod reaching a terminal phase), and every five minutes
//! (`--resource-quota-sync-period`'s default).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use apiserver::registry::informer::{Informer, InformerEvent};
use apiserver::registry::store::{StatusStore, Store};
use apiserver::server::hooks::PostStartHookFn;
use apiserver::status::ApiError;
use serde_json::Value;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::admission::quota::evaluator::{Evaluator, quota_scope_requirements};
use crate::admission::quota::resources::{self, ResourceList};
use crate::admission::quota::status::write_status;
use crate::informers::SharedInformers;

/// The post-start hook that starts the controller.
pub const HOOK_NAME: &str = "start-resource-quota-controller";

/// How often every quota is recomputed.
const RESYNC: Duration = Duration::from_secs(5 * 60);

/// How long to wait before retrying a namespace whose quota write conflicted.
const RETRY: Duration = Duration::from_millis(200);

/// Finds the store of a custom resource (`<plural>.<group>`), whose objects no shared
/// informer holds.
pub type CustomStores = Arc<dyn Fn(&str) -> Option<Store> + Send + Sync>;

/// The group and resource an object-count name (`count/<resource>[.<group>]`, or a legacy
/// name such as `configmaps`) counts.
fn counted_resource(name: &str) -> Option<(String, String)> {
    if let Some(rest) = name.strip_prefix("count/") {
        return Some(match rest.split_once('.') {
            Some((resource, group)) => (group.to_string(), resource.to_string()),
            None => (String::new(), rest.to_string()),
        });
    }
    match name {
        "configmaps" | "secrets" | "replicationcontrollers" | "resourcequotas" => {
            Some((String::new(), name.to_string()))
        }
        _ => None,
    }
}

/// The evaluators that measure something among `hard`.
pub fn evaluators_for(hard: &[String]) -> Vec<Evaluator> {
    let mut out = vec![
        Evaluator::Pods,
        Evaluator::Services,
        Evaluator::PersistentVolumeClaims,
    ];
    for name in hard {
        if let Some((group, resource)) = counted_resource(name) {
            let evaluator = Evaluator::for_resource(&group, &resource);
            if !out.contains(&evaluator) {
                out.push(evaluator);
            }
        }
    }
    out.retain(|e| !e.matching_resources(hard).is_empty());
    out
}

/// The usage of the objects `objects` of `evaluator`'s resource in the scopes of `quota`,
/// for the resources among its hard limits the evaluator measures (upstream
/// `CalculateUsageStats` masked as `CalculateUsage` masks it).
pub fn usage_of(
    evaluator: &Evaluator,
    quota: &Value,
    hard: &[String],
    objects: &[Arc<Value>],
    now: jiff::Timestamp,
) -> ResourceList {
    let matching = evaluator.matching_resources(hard);
    let scopes = quota_scope_requirements(quota);
    let mut used: ResourceList = matching
        .iter()
        .map(|name| (name.clone(), Default::default()))
        .collect();
    for object in objects {
        if scopes.iter().all(|s| evaluator.matches_scope(s, object)) {
            used = resources::add(&used, &evaluator.usage(object, now));
        }
    }
    resources::mask(&used, &matching)
}

struct Controller {
    informers: SharedInformers,
    custom: Option<CustomStores>,
    /// Informers over custom resources' stores, started on first use.
    custom_informers: Mutex<std::collections::HashMap<(String, String), Informer>>,
    stop: CancellationToken,
    quotas: Informer,
    status: StatusStore,
    /// Namespaces to sync; `None` inside means all.
    dirty: Mutex<BTreeSet<String>>,
    all_dirty: Mutex<bool>,
    wake: Notify,
}

fn namespace_of(obj: &Value) -> &str {
    obj.pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

impl Controller {
    fn mark(&self, namespace: &str) {
        self.dirty
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(namespace.to_string());
        self.wake.notify_one();
    }

    fn mark_all(&self) {
        *self.all_dirty.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.wake.notify_one();
    }

    /// The informer of `group`/`resource`: the shared one of a built-in resource, or one of
    /// this controller's own over a custom resource's store; `None` when nothing serves it.
    fn informer_for(&self, group: &str, resource: &str) -> Option<Informer> {
        if let Some(informer) = self.informers.informer(group, resource) {
            return Some(informer);
        }
        let key = (group.to_string(), resource.to_string());
        let mut custom = self
            .custom_informers
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(informer) = custom.get(&key) {
            return Some(informer.clone());
        }
        let store = (self.custom.as_ref()?)(&format!("{resource}.{group}"))?;
        let informer = Informer::new(Arc::new(store));
        informer.start(self.stop.clone());
        custom.insert(key, informer.clone());
        Some(informer)
    }

    /// The objects of `group`/`resource` in `namespace`; `None` when nothing serves them.
    async fn objects(
        &self,
        group: &str,
        resource: &str,
        namespace: &str,
    ) -> Option<Vec<Arc<Value>>> {
        let informer = self.informer_for(group, resource)?;
        informer.wait_synced().await;
        Some(
            informer
                .list()
                .into_iter()
                .filter(|o| namespace_of(o) == namespace)
                .collect(),
        )
    }

    /// Brings the status of `quota` up to date (upstream `syncResourceQuota`).
    async fn sync_quota(&self, quota: &Value) -> Result<(), ApiError> {
        let hard = resources::from_json(quota.pointer("/spec/hard"));
        let status_hard = quota.pointer("/status/hard");
        let status_used = quota.pointer("/status/used");
        let old_used = resources::from_json(status_used);
        let mut dirty = status_hard.is_none()
            || status_used.is_none()
            || !resources::equals(&hard, &resources::from_json(status_hard));
        let names: Vec<String> = hard.keys().cloned().collect();
        let namespace = namespace_of(quota);
        let now = jiff::Timestamp::now();
        let mut used = old_used.clone();
        for evaluator in evaluators_for(&names) {
            let (group, resource) = evaluator.group_resource();
            let Some(objects) = self.objects(group, resource, namespace).await else {
                continue;
            };
            used.extend(usage_of(&evaluator, quota, &names, &objects, now));
        }
        let used = resources::mask(&used, &names);
        dirty = dirty || !resources::equals(&used, &old_used);
        if !dirty {
            return Ok(());
        }
        let text = |path: &str| {
            quota
                .pointer(path)
                .and_then(Value::as_str)
                .unwrap_or_default()
        };
        write_status(
            &self.status,
            namespace,
            text("/metadata/name"),
            text("/metadata/resourceVersion"),
            Some(&hard),
            &used,
        )
        .await
        .map(|_| ())
    }

    /// Syncs the quotas of `namespaces` (all when `None`); the namespaces to retry.
    async fn sync(&self, namespaces: Option<&BTreeSet<String>>) -> BTreeSet<String> {
        let mut retry = BTreeSet::new();
        for quota in self.quotas.list() {
            let namespace = namespace_of(&quota);
            if namespaces.is_some_and(|n| !n.contains(namespace)) {
                continue;
            }
            match self.sync_quota(&quota).await {
                Ok(()) => {}
                // Written meanwhile (by admission, or the informer is behind): again soon.
                Err(err) if err.code() == http::StatusCode::CONFLICT => {
                    tracing::debug!(error = %err, namespace, "resource quota sync; retrying");
                    retry.insert(namespace.to_string());
                }
                // Deleted meanwhile.
                Err(err) if err.code() == http::StatusCode::NOT_FOUND => {}
                // Anything else waits for the next change or the periodic pass.
                Err(err) => tracing::warn!(error = %err, namespace, "resource quota sync failed"),
            }
        }
        retry
    }

    async fn run(self: Arc<Self>, stop: CancellationToken) {
        self.quotas.wait_synced().await;
        let mut resync = tokio::time::interval(RESYNC);
        resync.tick().await;
        self.mark_all();
        loop {
            let all =
                std::mem::take(&mut *self.all_dirty.lock().unwrap_or_else(|e| e.into_inner()));
            let namespaces =
                std::mem::take(&mut *self.dirty.lock().unwrap_or_else(|e| e.into_inner()));
            let retry = if all {
                self.sync(None).await
            } else if !namespaces.is_empty() {
                self.sync(Some(&namespaces)).await
            } else {
                BTreeSet::new()
            };
            if !retry.is_empty() {
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(RETRY) => {}
                }
                self.dirty
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .extend(retry);
                continue;
            }
            tokio::select! {
                () = stop.cancelled() => return,
                () = self.wake.notified() => {}
                _ = resync.tick() => self.mark_all(),
            }
        }
    }

    /// Whether the quota event needs a sync: a new quota, or limits not yet in its status
    /// (status writes, the controller's own and admission's, are not).
    fn quota_changed(event: &InformerEvent) -> bool {
        match event {
            InformerEvent::Added(_) => true,
            InformerEvent::Modified { old, new } => {
                let hard = |q: &Value, p: &str| resources::from_json(q.pointer(p));
                !resources::equals(&hard(old, "/spec/hard"), &hard(new, "/spec/hard"))
                    || old.pointer("/spec/scopes") != new.pointer("/spec/scopes")
                    || old.pointer("/spec/scopeSelector") != new.pointer("/spec/scopeSelector")
                    || !resources::equals(&hard(new, "/spec/hard"), &hard(new, "/status/hard"))
            }
            InformerEvent::Deleted(_) => false,
        }
    }

    /// Whether an event of a counted resource frees usage: a deletion, or a change of what
    /// the object uses (a pod reaching a terminal phase).
    fn replenishes(evaluator: &Evaluator, event: &InformerEvent) -> bool {
        match event {
            InformerEvent::Added(_) => false,
            InformerEvent::Deleted(_) => true,
            InformerEvent::Modified { old, new } => {
                let now = jiff::Timestamp::now();
                !resources::equals(&evaluator.usage(old, now), &evaluator.usage(new, now))
            }
        }
    }

    /// Watches `group`/`resource` for replenishment, once.
    fn watch_resource(
        self: &Arc<Self>,
        group: &str,
        resource: &str,
        watched: &Mutex<BTreeSet<(String, String)>>,
    ) {
        // Quotas themselves are the controller's own informer (a handler added from inside
        // one of its handlers would wait on itself): their deletions are seen there.
        if group.is_empty() && resource == "resourcequotas" {
            return;
        }
        let key = (group.to_string(), resource.to_string());
        let mut watched = watched.lock().unwrap_or_else(|e| e.into_inner());
        if watched.contains(&key) {
            return;
        }
        // A custom resource not served yet is tried again on the next quota event.
        let Some(informer) = self.informer_for(group, resource) else {
            return;
        };
        watched.insert(key);
        drop(watched);
        let evaluator = Evaluator::for_resource(group, resource);
        let weak = Arc::downgrade(self);
        informer.add_handler(Arc::new(move |event: &InformerEvent| {
            if let Some(controller) = weak.upgrade()
                && Self::replenishes(&evaluator, event)
            {
                controller.mark(namespace_of(event.object()));
            }
        }));
    }
}

/// The hook that starts the controller on the shared informers; `custom` finds custom
/// resources' stores for `count/<resource>.<group>` quotas.
pub fn hook(
    informers: SharedInformers,
    custom: Option<CustomStores>,
) -> Result<PostStartHookFn, String> {
    let quotas_store = informers
        .stores()
        .get(&(String::new(), "resourcequotas".to_string()))
        .cloned()
        .ok_or("the resource quota controller needs the resourcequotas store")?;
    Ok(Arc::new(move |ctx| {
        let Some(quotas) = informers.informer("", "resourcequotas") else {
            return Box::pin(async { Ok(()) });
        };
        let controller = Arc::new(Controller {
            informers: informers.clone(),
            custom: custom.clone(),
            custom_informers: Mutex::default(),
            stop: ctx.stop.clone(),
            quotas: quotas.clone(),
            status: StatusStore::new(&quotas_store),
            dirty: Mutex::default(),
            all_dirty: Mutex::default(),
            wake: Notify::new(),
        });
        let watched: Arc<Mutex<BTreeSet<(String, String)>>> = Arc::default();
        for resource in ["pods", "services", "persistentvolumeclaims"] {
            controller.watch_resource("", resource, &watched);
        }
        let weak = Arc::downgrade(&controller);
        quotas.add_handler(Arc::new(move |event: &InformerEvent| {
            let Some(controller) = weak.upgrade() else {
                return;
            };
            // Object counts of other resources are watched once a quota names them.
            for name in resources::from_json(event.object().pointer("/spec/hard")).keys() {
                if let Some((group, resource)) = counted_resource(name) {
                    controller.watch_resource(&group, &resource, &watched);
                }
            }
            if Controller::quota_changed(event) || matches!(event, InformerEvent::Deleted(_)) {
                controller.mark(namespace_of(event.object()));
            }
        }));
        tokio::spawn(controller.run(ctx.stop.clone()));
        Box::pin(async { Ok(()) })
    }))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn object_count_names_name_their_resource() {
        assert_eq!(
            counted_resource("count/deployments.apps"),
            Some(("apps".into(), "deployments".into()))
        );
        assert_eq!(
            counted_resource("count/widgets.example.com"),
            Some(("example.com".into(), "widgets".into()))
        );
        assert_eq!(
            counted_resource("configmaps"),
            Some((String::new(), "configmaps".into()))
        );
        assert_eq!(counted_resource("requests.cpu"), None);
    }

    #[test]
    fn usage_counts_only_objects_in_the_quota_scopes() {
        let now = jiff::Timestamp::now();
        let quota = json!({"spec": {"scopes": ["BestEffort"], "hard": {"pods": "5"}}});
        let hard = names(&["pods"]);
        let pods = vec![
            Arc::new(json!({"spec": {"containers": [{"name": "a"}]}})),
            Arc::new(json!({"spec": {"containers": [{"name": "a",
                "resources": {"requests": {"cpu": "1"}}}]}})),
            Arc::new(
                json!({"spec": {"containers": [{"name": "a"}]}, "status": {"phase": "Failed"}}),
            ),
        ];
        let used = usage_of(&Evaluator::Pods, &quota, &hard, &pods, now);
        assert_eq!(resources::to_json(&used), json!({"pods": "1"}));
        let none = usage_of(&Evaluator::Pods, &quota, &hard, &[], now);
        assert_eq!(resources::to_json(&none), json!({"pods": "0"}));
    }

    #[test]
    fn evaluators_are_those_measuring_a_hard_limit() {
        let e = evaluators_for(&names(&["pods", "count/configmaps", "secrets"]));
        assert_eq!(
            e,
            vec![
                Evaluator::Pods,
                Evaluator::for_resource("", "configmaps"),
                Evaluator::for_resource("", "secrets"),
            ]
        );
    }
}
