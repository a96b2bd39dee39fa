//! The service-account controller (upstream `pkg/controller/serviceaccount`, which runs in
//! kube-controller-manager; there is none here): every active namespace has a `default`
//! ServiceAccount, created when the namespace appears and again if it is deleted. The
//! ServiceAccount admission plugin gives every pod that names no service account `default`,
//! and refuses pods whose service account does not exist.

use std::sync::Arc;

use apiserver::registry::informer::{Informer, InformerEvent};
use apiserver::registry::rest::{CreateOptions, RequestContext, RestStorage};
use apiserver::registry::store::Store;
use apiserver::server::hooks::PostStartHookFn;
use apiserver::status::reason;
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// The hook's name.
pub const HOOK_NAME: &str = "start-service-account-controller";
/// The service account every namespace gets.
const DEFAULT_SERVICE_ACCOUNT: &str = "default";

fn name_of(obj: &Value) -> &str {
    obj.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn is_active(namespace: &Value) -> bool {
    namespace.pointer("/status/phase").and_then(Value::as_str) != Some("Terminating")
        && namespace
            .pointer("/metadata/deletionTimestamp")
            .is_none_or(Value::is_null)
}

/// Creates `default` in `namespace` unless it exists or the namespace is going away.
async fn ensure_default(
    namespaces: &Informer,
    service_accounts: &Informer,
    store: &Store,
    namespace: &str,
) {
    if !namespaces
        .get("", namespace)
        .is_some_and(|ns| is_active(&ns))
        || service_accounts
            .get(namespace, DEFAULT_SERVICE_ACCOUNT)
            .is_some()
    {
        return;
    }
    let ctx = RequestContext {
        namespace: namespace.to_string(),
        ..Default::default()
    };
    let account = json!({
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": DEFAULT_SERVICE_ACCOUNT, "namespace": namespace}
    });
    match store.create(&ctx, account, &CreateOptions::default()).await {
        Ok(_) => {}
        Err(e) if e.reason() == reason::ALREADY_EXISTS => {}
        Err(e) => tracing::warn!(namespace, error = %e, "service-account controller"),
    }
}

/// The controller as a post-start hook: namespaces and service accounts are watched through
/// the shared informers; the first pass over existing namespaces ends before the hook does.
pub fn service_account_controller_hook(
    namespaces: Informer,
    service_accounts: Informer,
    store: Store,
) -> PostStartHookFn {
    Arc::new(move |ctx| {
        let (namespaces, service_accounts, store) =
            (namespaces.clone(), service_accounts.clone(), store.clone());
        Box::pin(async move {
            namespaces.wait_synced().await;
            service_accounts.wait_synced().await;
            for namespace in namespaces.list() {
                ensure_default(&namespaces, &service_accounts, &store, name_of(&namespace)).await;
            }
            let (queue, mut pending) = mpsc::unbounded_channel::<String>();
            let on_namespace = queue.clone();
            namespaces.add_handler(Arc::new(move |event| match event {
                InformerEvent::Added(ns) | InformerEvent::Modified { new: ns, .. } => {
                    let _ = on_namespace.send(name_of(ns).to_string());
                }
                InformerEvent::Deleted(_) => {}
            }));
            service_accounts.add_handler(Arc::new(move |event| {
                if let InformerEvent::Deleted(sa) = event
                    && name_of(sa) == DEFAULT_SERVICE_ACCOUNT
                    && let Some(ns) = sa.pointer("/metadata/namespace").and_then(Value::as_str)
                {
                    let _ = queue.send(ns.to_string());
                }
            }));
            tokio::spawn(async move {
                loop {
                    tokio::select! {
                        _ = ctx.stop.cancelled() => return,
                        next = pending.recv() => match next {
                            Some(namespace) => {
                                ensure_default(&namespaces, &service_accounts, &store, &namespace)
                                    .await;
                            }
                            None => return,
                        },
                    }
                }
            });
            Ok(())
        })
    })
}
