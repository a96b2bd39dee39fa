//! Serving custom resources: per established CRD a store per served version (one watch cache
//! per CRD), their routes (`/apis/<group>/<version>`, `/apis/<group>`) registered and
//! unregistered at runtime on the apiextensions server, their discovery entries in the shared
//! discovery manager (source `Crd`), and their OpenAPI.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use apiserver::endpoints::discovery::version_order::compare_kube_aware_versions;
use apiserver::endpoints::discovery::{
    DiscoveryManager, Priority, Source, VersionOptions, storage_version_hash,
};
use apiserver::endpoints::installer::{GroupVersionHandler, api_resource};
use apiserver::registry::rest::{
    BoxFuture, CreateOptions, RequestContext, RestStorage, UpdateFunc, UpdateOptions,
    WrappingStorage,
};
use apiserver::registry::store::{Store, attrs_func};
use apiserver::registry::{ResourceInfo, SharedStrategy};
use apiserver::server::GenericApiServer;
use apiserver::status::{ApiError, StatusDetails, reason};
use apiserver::storage::Storage;
use apiserver::storage::cacher::{CacherConfig, decorated_storage};
use serde_json::{Value, json};

use crate::conversion::{ConvertingStorage, CrConverter};
use crate::crd::{is_true, versions};
use crate::customresource::{
    CustomResourceScale, CustomResourceStatus, CustomResourceStrategy, ScalePaths,
};
use crate::openapi::{CustomResourceOpenApi, OpenApiPublisher};
use crate::seams::{CustomResourceSchema, SchemaCompiler, ServiceResolver};

/// The resources of one served version of a CRD.
struct ServedVersion {
    version: String,
    /// `widgets`, `widgets/status`, `widgets/scale`.
    resources: BTreeMap<String, Arc<dyn RestStorage>>,
    /// The main store (deleting the CRD's instances uses it).
    store: Store,
    openapi: CustomResourceOpenApi,
}

/// What is served for one CRD.
struct ServedCrd {
    /// The spec and accepted names it was built from (rebuilt when they change).
    basis: Value,
    group: String,
    /// The watch cache shared by the versions.
    cache: Arc<dyn Storage>,
    versions: Vec<ServedVersion>,
    /// Discovery's `storageVersionHash` of every served version: upstream hashes the
    /// storage version's group, version and kind.
    hash: String,
    /// The CRD is being deleted: no more creates.
    terminating: Arc<AtomicBool>,
}

/// The main resource of a served version: the store, refusing creates while the CRD is
/// terminating (upstream's crdHandler answers 405).
struct Guarded {
    store: Store,
    terminating: Arc<AtomicBool>,
}

impl WrappingStorage for Guarded {
    fn inner(&self) -> &dyn RestStorage {
        &self.store
    }
    fn create<'a>(
        &'a self,
        ctx: &'a RequestContext,
        obj: Value,
        opts: &'a CreateOptions,
    ) -> BoxFuture<'a, Result<Value, ApiError>> {
        if self.terminating.load(Ordering::SeqCst) {
            let info = self.store.info();
            let err = ApiError::new(
                http::StatusCode::METHOD_NOT_ALLOWED,
                reason::METHOD_NOT_ALLOWED,
                "create not allowed while custom resource definition is terminating",
            )
            .with_details(StatusDetails {
                group: info.group.clone(),
                kind: info.resource.clone(),
                ..Default::default()
            });
            return Box::pin(async move { Err(err) });
        }
        self.store.create(ctx, obj, opts)
    }
    fn update<'a>(
        &'a self,
        ctx: &'a RequestContext,
        name: &'a str,
        update: UpdateFunc,
        opts: &'a UpdateOptions,
        force_allow_create: bool,
    ) -> BoxFuture<'a, Result<(Value, bool), ApiError>> {
        // Server-side apply of a missing object creates it: not while terminating either.
        let force_allow_create = force_allow_create && !self.terminating.load(Ordering::SeqCst);
        self.store
            .update(ctx, name, update, opts, force_allow_create)
    }
}

/// The custom resources a server serves.
pub struct CrdServing {
    server: GenericApiServer,
    discovery: DiscoveryManager,
    storage: Arc<dyn Storage>,
    prefix: String,
    compiler: Arc<dyn SchemaCompiler>,
    resolver: Arc<dyn ServiceResolver>,
    openapi: Arc<dyn OpenApiPublisher>,
    served: Mutex<BTreeMap<String, ServedCrd>>,
    /// Groups whose routes are registered.
    groups: Mutex<BTreeSet<String>>,
}

fn s<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn strings(v: &Value, pointer: &str) -> Vec<String> {
    v.pointer(pointer)
        .and_then(Value::as_array)
        .map(|l| {
            l.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// What serving depends on: the spec and the accepted names.
fn basis(crd: &Value) -> Value {
    json!({"spec": crd.get("spec"), "acceptedNames": crd.pointer("/status/acceptedNames")})
}

impl CrdServing {
    /// Serving on `server` (routes), advertising through `discovery`, storing custom resources
    /// in `storage` below `prefix`; conversion webhooks given as a `service` are found through
    /// `resolver`.
    pub fn new(
        server: GenericApiServer,
        discovery: DiscoveryManager,
        storage: Arc<dyn Storage>,
        prefix: &str,
        compiler: Arc<dyn SchemaCompiler>,
        resolver: Arc<dyn ServiceResolver>,
        openapi: Arc<dyn OpenApiPublisher>,
    ) -> Self {
        CrdServing {
            server,
            discovery,
            storage,
            prefix: prefix.trim_end_matches('/').to_string(),
            compiler,
            resolver,
            openapi,
            served: Mutex::default(),
            groups: Mutex::default(),
        }
    }

    /// The main store of a served CRD's storage version (or any served version).
    pub fn store_of(&self, crd_name: &str) -> Option<Store> {
        let served = self.served.lock().unwrap_or_else(|p| p.into_inner());
        served
            .get(crd_name)
            .and_then(|c| c.versions.first())
            .map(|v| v.store.clone())
    }

    /// A store for the instances of `crd` whether or not it is served (for cleanup).
    pub fn cleanup_store(&self, crd: &Value) -> Option<Store> {
        if let Some(store) = self.store_of(s(crd, "/metadata/name")) {
            return Some(store);
        }
        let info = self.info(crd, s(crd, "/spec/versions/0/name"));
        let schema = self.compiler.compile(&Value::Null).ok()?;
        let strategy: SharedStrategy =
            Arc::new(CustomResourceStrategy::new(info, schema, &json!({}), None));
        Some(Store::new(
            strategy,
            self.resource_storage(crd),
            &self.key_root(crd),
        ))
    }

    /// The storage of the custom resources of `crd`, with their group-resource's value
    /// transformer (encryption at rest covers custom resources as upstream's does).
    fn resource_storage(&self, crd: &Value) -> Arc<dyn Storage> {
        apiserver::storage::resource_storage(
            &self.storage,
            s(crd, "/spec/group"),
            s(crd, "/spec/names/plural"),
        )
    }

    fn key_root(&self, crd: &Value) -> String {
        format!(
            "{}/{}/{}",
            self.prefix,
            s(crd, "/spec/group"),
            s(crd, "/spec/names/plural")
        )
    }

    fn info(&self, crd: &Value, version: &str) -> ResourceInfo {
        let names = "/status/acceptedNames";
        ResourceInfo {
            group: s(crd, "/spec/group").into(),
            version: version.into(),
            kind: s(crd, &format!("{names}/kind")).into(),
            list_kind: s(crd, &format!("{names}/listKind")).into(),
            resource: s(crd, "/spec/names/plural").into(),
            singular: s(crd, &format!("{names}/singular")).into(),
            namespaced: s(crd, "/spec/scope") == "Namespaced",
            short_names: strings(crd, &format!("{names}/shortNames")),
            categories: strings(crd, &format!("{names}/categories")),
        }
    }

    fn build(
        &self,
        crd: &Value,
        cache: Option<Arc<dyn Storage>>,
        terminating: Arc<AtomicBool>,
    ) -> ServedCrd {
        let root = self.key_root(crd);
        let cache = cache.unwrap_or_else(|| {
            let mut config = CacherConfig::new(&format!("{root}/"));
            // Selectors see metadata.name/namespace only; the strategy of any version does.
            let info = self.info(crd, "");
            if let Ok(schema) = self.compiler.compile(&Value::Null) {
                let strategy: SharedStrategy =
                    Arc::new(CustomResourceStrategy::new(info, schema, &json!({}), None));
                config.get_attrs = attrs_func(strategy);
            }
            // Custom resources: only --watch-cache decides, as upstream.
            decorated_storage(
                &self.storage,
                s(crd, "/spec/group"),
                s(crd, "/spec/names/plural"),
                false,
                config,
            )
        });
        // Every version's schema: served versions use theirs; conversions prune with the
        // target's (the storage version's even when it is not served).
        let mut schemas: BTreeMap<String, Arc<dyn CustomResourceSchema>> = BTreeMap::new();
        for version in versions(crd) {
            let name = s(version, "/name");
            let schema_value = version
                .pointer("/schema/openAPIV3Schema")
                .cloned()
                .unwrap_or(Value::Null);
            match self.compiler.compile(&schema_value) {
                Ok(schema) => {
                    schemas.insert(name.to_string(), schema);
                }
                Err(errs) => {
                    tracing::warn!(
                        crd = s(crd, "/metadata/name"),
                        version = name,
                        ?errs,
                        "schema does not compile; version not served"
                    );
                }
            }
        }
        let storage_version = crate::crd::storage_version(crd).unwrap_or_default();
        let converter = match CrConverter::new(crd, schemas.clone(), self.resolver.clone()) {
            Ok(converter) => Some(Arc::new(converter)),
            Err(err) => {
                tracing::warn!(crd = s(crd, "/metadata/name"), %err, "no converter; not served");
                None
            }
        };
        let mut served_versions = Vec::new();
        for version in versions(crd) {
            if version.get("served").and_then(Value::as_bool) != Some(true) {
                continue;
            }
            let name = s(version, "/name");
            let (Some(schema), Some(converter)) = (schemas.get(name).cloned(), &converter) else {
                continue;
            };
            // The version's view of the shared cache: objects stored in the storage version,
            // handed out in this one. A CRD with one version has nothing to convert.
            let storage: Arc<dyn Storage> = if versions(crd).len() == 1 {
                cache.clone()
            } else {
                Arc::new(ConvertingStorage::new(
                    cache.clone(),
                    converter.clone(),
                    name,
                    &storage_version,
                ))
            };
            let info = self.info(crd, name);
            let mut subresources = Vec::new();
            if version.pointer("/subresources/status").is_some() {
                subresources.push("status".to_string());
            }
            let scale = ScalePaths::of(version);
            if scale.is_some() {
                subresources.push("scale".to_string());
            }
            let openapi = CustomResourceOpenApi {
                group: info.group.clone(),
                version: name.to_string(),
                kind: info.kind.clone(),
                list_kind: info.list_kind.clone(),
                resource: info.resource.clone(),
                namespaced: info.namespaced,
                subresources,
                schema_v2: schema.openapi_v2(),
                schema_v3: schema.openapi_v3(),
            };
            let definition = openapi.definition_name();
            let patch_doc =
                Arc::new(json!({"definitions": {definition.clone(): openapi.schema_v2}}));
            let strategy: SharedStrategy = Arc::new(CustomResourceStrategy::new(
                info.clone(),
                schema.clone(),
                version,
                Some((patch_doc, definition)),
            ));
            let store = Store::new(strategy, storage, &root);
            let mut resources: BTreeMap<String, Arc<dyn RestStorage>> = BTreeMap::new();
            resources.insert(
                info.resource.clone(),
                Arc::new(Guarded {
                    store: store.clone(),
                    terminating: terminating.clone(),
                }),
            );
            if version.pointer("/subresources/status").is_some() {
                resources.insert(
                    format!("{}/status", info.resource),
                    Arc::new(CustomResourceStatus::new(&store, schema.clone())),
                );
            }
            if let Some(paths) = scale {
                resources.insert(
                    format!("{}/scale", info.resource),
                    Arc::new(CustomResourceScale::new(store.clone(), paths)),
                );
            }
            served_versions.push(ServedVersion {
                version: name.to_string(),
                resources,
                store,
                openapi,
            });
        }
        // The storage version first, so cleanup and store_of use it.
        served_versions.sort_by_key(|v| v.version != storage_version);
        let kind = s(crd, "/status/acceptedNames/kind");
        ServedCrd {
            hash: storage_version_hash(s(crd, "/spec/group"), &storage_version, kind),
            basis: basis(crd),
            group: s(crd, "/spec/group").to_string(),
            cache,
            versions: served_versions,
            terminating,
        }
    }

    /// Serves exactly the established CRDs among `crds` (every CRD that exists); returns the
    /// names served.
    pub fn sync(&self, crds: &[Value]) -> Vec<String> {
        let mut touched: BTreeSet<String> = BTreeSet::new();
        let mut served = self.served.lock().unwrap_or_else(|p| p.into_inner());
        let wanted: BTreeMap<String, &Value> = crds
            .iter()
            .filter(|c| is_true(c, "Established"))
            .map(|c| (s(c, "/metadata/name").to_string(), c))
            .collect();
        let gone: Vec<String> = served
            .keys()
            .filter(|n| !wanted.contains_key(*n))
            .cloned()
            .collect();
        for name in gone {
            if let Some(old) = served.remove(&name) {
                touched.insert(old.group);
            }
        }
        for (name, crd) in &wanted {
            let current = served.get(name);
            let terminating = crd.pointer("/metadata/deletionTimestamp").is_some();
            if let Some(current) = current {
                current.terminating.store(terminating, Ordering::SeqCst);
                if current.basis == basis(crd) {
                    continue;
                }
            }
            let cache = current.map(|c| c.cache.clone());
            let built = self.build(crd, cache, Arc::new(AtomicBool::new(terminating)));
            if let Some(old) = served.insert(name.clone(), built) {
                touched.insert(old.group);
            }
            touched.insert(s(crd, "/spec/group").to_string());
        }
        if touched.is_empty() {
            return served.keys().cloned().collect();
        }
        for group in &touched {
            self.install_group(group, &served);
        }
        let all: Vec<CustomResourceOpenApi> = served
            .values()
            .flat_map(|c| c.versions.iter().map(|v| v.openapi.clone()))
            .collect();
        self.openapi.publish(&all);
        served.keys().cloned().collect()
    }

    /// (Re)installs the routes and discovery of one group from what is served.
    fn install_group(&self, group: &str, served: &BTreeMap<String, ServedCrd>) {
        let routes = &self.server.handler().api_routes;
        let mut by_version: BTreeMap<String, BTreeMap<String, Arc<dyn RestStorage>>> =
            BTreeMap::new();
        let mut hashes: BTreeMap<String, String> = BTreeMap::new();
        for crd in served.values().filter(|c| c.group == group) {
            for v in &crd.versions {
                by_version
                    .entry(v.version.clone())
                    .or_default()
                    .extend(v.resources.iter().map(|(k, s)| (k.clone(), s.clone())));
                hashes.insert(v.openapi.resource.clone(), crd.hash.clone());
            }
        }
        let mut groups = self.groups.lock().unwrap_or_else(|p| p.into_inner());
        // Versions of this group served before but not now.
        for root in routes.roots() {
            if let Some(version) = root.strip_prefix(&format!("/apis/{group}/"))
                && !by_version.contains_key(version)
                && groups.contains(group)
            {
                routes.unregister(&root);
            }
        }
        self.discovery.remove_group_from(Source::Crd, group);
        if by_version.is_empty() {
            if groups.remove(group) {
                routes.unregister(&format!("/apis/{group}"));
            }
            return;
        }
        // Discovery lists versions in kube-aware order (the first is preferred), as upstream's
        // discovery controller sorts CRD versions.
        let mut ordered: Vec<&String> = by_version.keys().collect();
        ordered.sort_by(|a, b| compare_kube_aware_versions(a, b).reverse());
        let config = self.server.handler_config();
        for version in ordered {
            let resources = &by_version[version];
            let entries = resources
                .iter()
                .map(|(path, storage)| {
                    let mut entry = api_resource(path, storage.as_ref(), group, version);
                    if let Some(hash) = hashes.get(path) {
                        entry.storage_version_hash = hash.clone();
                    }
                    entry
                })
                .collect();
            let options = VersionOptions {
                source: Source::Crd,
                priority: Some(Priority {
                    group_priority_minimum: 1000,
                    version_priority: 100,
                }),
                ..VersionOptions::default()
            };
            if let Err(err) = self
                .discovery
                .add_group_version_with(group, version, entries, options)
            {
                tracing::warn!(%err, group, version, "custom resource discovery");
            }
            let root = format!("/apis/{group}/{version}");
            let handler = GroupVersionHandler::new(
                &root,
                group,
                version,
                resources,
                &config,
                self.discovery.group_version_service(group, version),
            );
            routes.register(&root, handler.service());
        }
        routes.register(
            &format!("/apis/{group}"),
            self.discovery.group_service(group),
        );
        groups.insert(group.to_string());
    }
}
