//! A resource served in one version from the store of another (upstream serves every version
//! of a resource from one storage, converting on the way): requests are converted to the
//! stored version, results back. Used for autoscaling/v1 horizontalpodautoscalers over the v2
//! store.

use std::sync::Arc;

use apiserver::registry::rest::{
    BoxFuture, CreateOptions, DeleteOptions, GetOptions, ListOptions, ObjectEvent, ObjectWatch,
    RequestContext, RestStorage, UpdateFunc, UpdateOptions,
};
use apiserver::registry::{ResourceInfo, SharedStrategy, Strategy};
use apiserver::status::ApiError;
use futures::StreamExt;
use serde_json::{Value, json};

use crate::apis::Conversion;

/// One served version of a resource over a storage of its stored version.
pub struct ConvertedStorage {
    inner: Arc<dyn RestStorage>,
    strategy: SharedStrategy,
    conversion: Conversion,
}

impl ConvertedStorage {
    /// Serves `inner` (the stored version) as the version of `strategy` (its facts, table and
    /// field checks) through `conversion`.
    pub fn new(
        inner: Arc<dyn RestStorage>,
        strategy: SharedStrategy,
        conversion: Conversion,
    ) -> Self {
        ConvertedStorage {
            inner,
            strategy,
            conversion,
        }
    }

    /// A stored-version object in the served version; anything else (a Status) as it is.
    fn out(&self, obj: Value) -> Value {
        let stored = obj.get("kind").and_then(Value::as_str) == Some(self.info().kind.as_str());
        if stored {
            (self.conversion.from_stored)(obj)
        } else {
            obj
        }
    }

    fn out_list(&self, mut list: Value) -> Value {
        if let Some(items) = list.get_mut("items").and_then(Value::as_array_mut) {
            for item in items.iter_mut() {
                *item = (self.conversion.from_stored)(std::mem::take(item));
            }
        }
        if let Some(map) = list.as_object_mut() {
            map.insert("kind".into(), json!(self.info().list_kind));
            map.insert("apiVersion".into(), json!(self.info().api_version()));
        }
        list
    }
}

impl RestStorage for ConvertedStorage {
    fn info(&self) -> &ResourceInfo {
        self.strategy.info()
    }

    fn verbs(&self) -> Vec<&'static str> {
        self.inner.verbs()
    }

    fn get<'a>(
        &'a self,
        ctx: &'a RequestContext,
        name: &'a str,
        opts: &'a GetOptions,
    ) -> BoxFuture<'a, Result<Value, ApiError>> {
        Box::pin(async move { Ok(self.out(self.inner.get(ctx, name, opts).await?)) })
    }

    fn list<'a>(
        &'a self,
        ctx: &'a RequestContext,
        opts: &'a ListOptions,
    ) -> BoxFuture<'a, Result<Value, ApiError>> {
        Box::pin(async move { Ok(self.out_list(self.inner.list(ctx, opts).await?)) })
    }

    fn watch<'a>(
        &'a self,
        ctx: &'a RequestContext,
        opts: &'a ListOptions,
    ) -> BoxFuture<'a, Result<ObjectWatch, ApiError>> {
        Box::pin(async move {
            let from = self.conversion.from_stored;
            let api_version = self.info().api_version();
            let events = self.inner.watch(ctx, opts).await?;
            let mapped = events.map(move |event| match event {
                ObjectEvent::Added(o) => ObjectEvent::Added(from(o)),
                ObjectEvent::Modified(o) => ObjectEvent::Modified(from(o)),
                ObjectEvent::Deleted(o) => ObjectEvent::Deleted(from(o)),
                ObjectEvent::Bookmark(mut o) => {
                    if let Some(map) = o.as_object_mut() {
                        map.insert("apiVersion".into(), json!(api_version));
                    }
                    ObjectEvent::Bookmark(o)
                }
                ObjectEvent::Error(e) => ObjectEvent::Error(e),
            });
            Ok(Box::pin(mapped) as ObjectWatch)
        })
    }

    fn create<'a>(
        &'a self,
        ctx: &'a RequestContext,
        obj: Value,
        opts: &'a CreateOptions,
    ) -> BoxFuture<'a, Result<Value, ApiError>> {
        Box::pin(async move {
            let stored = (self.conversion.to_stored)(obj);
            Ok(self.out(self.inner.create(ctx, stored, opts).await?))
        })
    }

    fn update<'a>(
        &'a self,
        ctx: &'a RequestContext,
        name: &'a str,
        mut update: UpdateFunc,
        opts: &'a UpdateOptions,
        force_allow_create: bool,
    ) -> BoxFuture<'a, Result<(Value, bool), ApiError>> {
        let (to, from) = (self.conversion.to_stored, self.conversion.from_stored);
        let wrapped: UpdateFunc = Box::new(move |cur: Option<&Value>| {
            let served = cur.cloned().map(from);
            update(served.as_ref()).map(to)
        });
        Box::pin(async move {
            let (obj, created) = self
                .inner
                .update(ctx, name, wrapped, opts, force_allow_create)
                .await?;
            Ok((self.out(obj), created))
        })
    }

    fn delete<'a>(
        &'a self,
        ctx: &'a RequestContext,
        name: &'a str,
        opts: &'a DeleteOptions,
    ) -> BoxFuture<'a, Result<(Value, bool), ApiError>> {
        Box::pin(async move {
            let (obj, now) = self.inner.delete(ctx, name, opts).await?;
            Ok((self.out(obj), now))
        })
    }

    fn delete_collection<'a>(
        &'a self,
        ctx: &'a RequestContext,
        delete: &'a DeleteOptions,
        list: &'a ListOptions,
    ) -> BoxFuture<'a, Result<Value, ApiError>> {
        Box::pin(async move {
            Ok(self.out_list(self.inner.delete_collection(ctx, delete, list).await?))
        })
    }

    fn strategy(&self) -> Option<&dyn Strategy> {
        Some(self.strategy.as_ref())
    }
}
