//! The `/status` subresource (upstream's `StatusREST`): the same objects, but an update only
//! changes `status`; everything else is kept from the stored object.

use serde_json::Value;

use super::{Mode, Store};
use crate::registry::ResourceInfo;
use crate::registry::Strategy;
use crate::registry::rest::{
    BoxFuture, GetOptions, RequestContext, RestStorage, UpdateFunc, UpdateOptions,
};
use crate::status::ApiError;

/// The status subresource of a [`Store`]'s resource.
#[derive(Clone, Debug)]
pub struct StatusStore {
    store: Store,
}

impl StatusStore {
    /// The status subresource of `store` (same storage, strategy and keys).
    pub fn new(store: &Store) -> Self {
        let mut store = store.clone();
        store.mode = Mode::Status;
        StatusStore { store }
    }
}

impl RestStorage for StatusStore {
    fn info(&self) -> &ResourceInfo {
        self.store.res()
    }

    fn verbs(&self) -> Vec<&'static str> {
        self.store.served_verbs()
    }

    fn get<'a>(
        &'a self,
        ctx: &'a RequestContext,
        name: &'a str,
        opts: &'a GetOptions,
    ) -> BoxFuture<'a, Result<Value, ApiError>> {
        Box::pin(self.store.get_inner(ctx, name, opts))
    }

    fn update<'a>(
        &'a self,
        ctx: &'a RequestContext,
        name: &'a str,
        update: UpdateFunc,
        opts: &'a UpdateOptions,
        _force_allow_create: bool,
    ) -> BoxFuture<'a, Result<(Value, bool), ApiError>> {
        // The status subresource never creates.
        Box::pin(self.store.update_inner(ctx, name, update, opts, false))
    }

    fn strategy(&self) -> Option<&dyn Strategy> {
        Some(self.store.strategy.as_ref())
    }

    fn runs_admission(&self) -> bool {
        true
    }
}
