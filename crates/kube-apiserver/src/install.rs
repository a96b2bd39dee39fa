//! Installs the built-in API: a generic store per resource (over a watch cache of the
//! configured storage), its status subresource, the API groups with discovery, and the
//! OpenAPI documents (which also give strategic merge patch its merge keys).

use std::collections::BTreeMap;
use std::sync::Arc;

use apiserver::endpoints::openapi::OpenApiService;
use apiserver::registry::rest::{DeleteOptions, RestStorage};
use apiserver::registry::store::{StatusStore, Store, attrs_func};
use apiserver::registry::{
    FieldError, ResourceInfo, SelectableFields, SharedStrategy, Strategy, TableColumn,
};
use apiserver::server::GenericApiServer;
use apiserver::server::apis::{ApiGroupInfo, ApiGroupVersion};
use apiserver::status::ApiError;
use apiserver::storage::Storage;
use apiserver::storage::cacher::{CacherConfig, decorated_storage};
use serde_json::Value;

use crate::apis::{Backing, ResourceDef};
use crate::auth::AuthzHandle;
use crate::openapi::{LazyDocs, ResourceSpec};
use crate::registry::authentication::{
    AuthenticatorCell, SelfSubjectReviewStorage, TokenReviewStorage,
};
use crate::registry::authorization::{AccessReviewStorage, Review};
use crate::registry::binding::BindingStorage;
use crate::registry::binding::BindingsStorage;
use crate::registry::componentstatus::ComponentStatusStorage;
use crate::registry::converted::ConvertedStorage;
use crate::registry::csr::{CsrStorage, CsrSubresource, CsrSubresourceKind};
use crate::registry::eviction::EvictionStorage;
use crate::registry::namespace::{FinalizeStorage, NamespaceStorage};
use crate::registry::pod::{
    EphemeralContainersStorage, LogStorage, StoreCell, Stream, StreamStorage,
};
use crate::registry::policybased::{Guarded, PolicyBasedStorage};
use crate::registry::scale::{SCALED, ScaleStorage};
use crate::registry::service::{ServiceRange, ServiceStorage};
use crate::registry::serviceaccount_token::TokenRequestStorage;
use crate::serviceaccount::TokenIssuer;

/// The stores of the installed resources, by `(group, resource)`.
pub type Stores = BTreeMap<(String, String), Store>;

/// What the authentication and authorization APIs (the `serviceaccounts/token` subresource,
/// TokenReview, SelfSubjectReview, the access reviews, the RBAC storages) take from the
/// server's configuration.
#[derive(Clone)]
pub struct AuthSetup {
    /// Mints TokenRequests' tokens.
    pub token_issuer: Arc<TokenIssuer>,
    /// The server's authenticator, which TokenReview runs (set once it is built).
    pub authenticator: AuthenticatorCell,
    /// The API audiences a TokenReview without `spec.audiences` checks.
    pub api_audiences: Vec<String>,
    /// The server's authorizer and RBAC policy (set once they are built).
    pub authz: AuthzHandle,
}

/// A built-in strategy with the schema strategic merge patch and apply read (built on the
/// first write that needs it; see [`LazyDocs::patch_schema`]).
struct WithPatchSchema {
    inner: SharedStrategy,
    docs: Arc<LazyDocs>,
    definition: String,
}

impl Strategy for WithPatchSchema {
    fn info(&self) -> &ResourceInfo {
        self.inner.info()
    }
    fn prepare_for_create(&self, obj: &mut Value) {
        self.inner.prepare_for_create(obj)
    }
    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        self.inner.prepare_for_update(new, old)
    }
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        self.inner.validate(obj)
    }
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        self.inner.validate_update(new, old)
    }
    fn drop_unknown_fields(&self, obj: &mut Value) -> Vec<String> {
        self.inner.drop_unknown_fields(obj)
    }
    fn tracks_generation(&self) -> bool {
        self.inner.tracks_generation()
    }
    fn allow_create_on_update(&self) -> bool {
        self.inner.allow_create_on_update()
    }
    fn allow_unconditional_update(&self) -> bool {
        self.inner.allow_unconditional_update()
    }
    fn selectable_fields(&self, obj: &Value) -> SelectableFields {
        self.inner.selectable_fields(obj)
    }
    fn table_columns(&self) -> Vec<TableColumn> {
        self.inner.table_columns()
    }
    fn table_row(&self, obj: &Value) -> Vec<Value> {
        self.inner.table_row(obj)
    }
    fn patch_schema(&self) -> Option<(Arc<Value>, String)> {
        Some((
            self.docs.patch_schema(&self.definition),
            self.definition.clone(),
        ))
    }
    fn supports_strategic_merge_patch(&self) -> bool {
        self.inner.supports_strategic_merge_patch()
    }
    fn before_delete(&self, obj: &Value) -> Result<(), ApiError> {
        self.inner.before_delete(obj)
    }
    fn supports_graceful_delete(&self) -> bool {
        self.inner.supports_graceful_delete()
    }
    fn check_graceful_delete(&self, obj: &Value, opts: &mut DeleteOptions) -> bool {
        self.inner.check_graceful_delete(obj, opts)
    }
}

/// The resources whose DELETE answers with the object instead of a `Success` Status, as
/// `(group, resource)`: those whose upstream store sets `ReturnDeletedObject`.
pub const RETURN_DELETED_OBJECT: [(&str, &str); 10] = [
    ("", "pods"),
    ("", "services"),
    ("", "serviceaccounts"),
    ("", "namespaces"),
    ("", "persistentvolumes"),
    ("", "persistentvolumeclaims"),
    ("storage.k8s.io", "storageclasses"),
    ("storage.k8s.io", "csidrivers"),
    ("storage.k8s.io", "csinodes"),
    ("storage.k8s.io", "volumeattachments"),
];

/// The storage key root of a resource: `<prefix>/<resource>` as kube-apiserver lays keys out,
/// except that `events.k8s.io` events (stored apart from core events here) get their group.
fn key_root(prefix: &str, info: &ResourceInfo) -> String {
    if info.group == "events.k8s.io" {
        format!("{prefix}/{}/{}", info.group, info.resource)
    } else {
        format!("{prefix}/{}", info.resource)
    }
}

/// The definition-name table of the documented kinds.
type Definitions = BTreeMap<(String, String, String), String>;

/// A resource's strategy with its patch schema when its kind is documented.
fn with_patch_schema(
    def: &ResourceDef,
    definitions: &Definitions,
    docs: &Arc<LazyDocs>,
) -> SharedStrategy {
    let info = def.strategy.info();
    match definitions.get(&(info.group.clone(), info.version.clone(), info.kind.clone())) {
        Some(definition) => Arc::new(WithPatchSchema {
            inner: def.strategy.clone(),
            docs: docs.clone(),
            definition: definition.clone(),
        }),
        None => def.strategy.clone(),
    }
}

/// Installs a resource without a store of its own: a converted view of another version's
/// store (with its status subresource), or core `bindings` / `componentstatuses`.
fn install_unstored(
    gv: &mut ApiGroupVersion,
    def: ResourceDef,
    strategy: SharedStrategy,
    stores: &Stores,
    storage: &Arc<dyn Storage>,
    auth: &AuthSetup,
) -> Result<(), String> {
    let info = def.strategy.info().clone();
    let missing = |what: &str| format!("{} needs the {what} store", info.resource);
    match def.backing {
        Backing::Store => Ok(()),
        Backing::Converted(conversion) => {
            let store = stores
                .get(&(info.group.clone(), info.resource.clone()))
                .ok_or_else(|| missing(conversion.stored_version))?;
            let main: Arc<dyn RestStorage> = Arc::new(ConvertedStorage::new(
                Arc::new(store.clone()),
                strategy.clone(),
                conversion,
            ));
            gv.resources.insert(info.resource.clone(), main);
            if def.subresources.contains(&"status") {
                gv.resources.insert(
                    format!("{}/status", info.resource),
                    Arc::new(ConvertedStorage::new(
                        Arc::new(StatusStore::new(store)),
                        strategy,
                        conversion,
                    )),
                );
            }
            Ok(())
        }
        Backing::Virtual => {
            let rest: Arc<dyn RestStorage> = match (info.group.as_str(), info.resource.as_str()) {
                ("", "bindings") => {
                    let pods = stores
                        .get(&(String::new(), "pods".to_string()))
                        .ok_or_else(|| missing("pods"))?;
                    Arc::new(BindingsStorage::new(strategy, pods.clone()))
                }
                ("", "componentstatuses") => {
                    Arc::new(ComponentStatusStorage::new(strategy, storage.clone()))
                }
                ("authentication.k8s.io", "tokenreviews") => Arc::new(TokenReviewStorage::new(
                    strategy,
                    auth.authenticator.clone(),
                    auth.api_audiences.clone(),
                )),
                ("authentication.k8s.io", "selfsubjectreviews") => {
                    Arc::new(SelfSubjectReviewStorage::new(strategy))
                }
                (crate::apis::authorization::GROUP, resource) => {
                    let review = Review::for_resource(resource)
                        .ok_or_else(|| format!("no storage for {resource}"))?;
                    Arc::new(AccessReviewStorage::new(
                        strategy,
                        review,
                        auth.authz.clone(),
                    ))
                }
                _ => return Err(format!("no storage for {}", info.resource)),
            };
            gv.resources.insert(info.resource.clone(), rest);
            Ok(())
        }
    }
}

/// The pod subresources besides `status`, as upstream's `PodStorage` serves them.
fn install_pod_subresources(
    gv: &mut ApiGroupVersion,
    pods: &Store,
    nodes: &StoreCell,
    pdbs: &StoreCell,
) {
    let mut add = |sub: &str, storage: Arc<dyn RestStorage>| {
        gv.resources.insert(format!("pods/{sub}"), storage);
    };
    add("binding", Arc::new(BindingStorage::new(pods.clone())));
    add(
        "eviction",
        Arc::new(EvictionStorage::new(pods.clone(), pdbs.clone())),
    );
    add(
        "ephemeralcontainers",
        Arc::new(EphemeralContainersStorage::new(pods)),
    );
    add(
        "log",
        Arc::new(LogStorage::new(pods.clone(), nodes.clone())),
    );
    for stream in [Stream::Exec, Stream::Attach, Stream::PortForward] {
        let storage = StreamStorage::new(pods.clone(), nodes.clone(), stream);
        add(storage.subresource(), Arc::new(storage));
    }
}

/// Puts the escalation checks in front of the four RBAC storages.
fn guard_rbac(
    gv: &mut ApiGroupVersion,
    stores: &Stores,
    authz: &AuthzHandle,
) -> Result<(), String> {
    let store = |resource: &str| {
        stores
            .get(&(crate::auth::rbac::GROUP.to_string(), resource.to_string()))
            .cloned()
            .ok_or_else(|| format!("RBAC needs the {resource} store"))
    };
    let roles = store("roles")?;
    let cluster_roles = store("clusterroles")?;
    for guarded in [
        Guarded::Roles,
        Guarded::ClusterRoles,
        Guarded::RoleBindings,
        Guarded::ClusterRoleBindings,
    ] {
        let resource = guarded.resource();
        let inner = gv
            .resources
            .remove(resource)
            .ok_or_else(|| format!("RBAC needs the {resource} storage"))?;
        gv.resources.insert(
            resource.to_string(),
            Arc::new(PolicyBasedStorage::new(
                inner,
                guarded,
                authz.clone(),
                roles.clone(),
                cluster_roles.clone(),
            )),
        );
    }
    Ok(())
}

/// The OpenAPI service of the built-in API and its Swagger 2.0 document, built on first use
/// (the base the apiextensions server merges custom resources into).
pub type BuiltinOpenApi = (OpenApiService, apiextensions::BaseV2);

/// Installs every built-in group on `server` over `storage` (keys under `prefix`) and serves
/// their OpenAPI documents. Returns the stores (for bootstrap hooks and controllers) and the
/// OpenAPI service.
pub fn install_builtin_apis(
    server: &GenericApiServer,
    storage: Arc<dyn Storage>,
    prefix: &str,
    service_range: ServiceRange,
    auth: &AuthSetup,
    groups: Vec<crate::apis::GroupDef>,
) -> Result<(Stores, BuiltinOpenApi), String> {
    let mut specs: Vec<ResourceSpec> = groups
        .iter()
        .flat_map(|g| g.versions.iter())
        .flat_map(|(_, resources)| resources.iter())
        .filter_map(|r| {
            let mut spec = ResourceSpec::from_info(r.strategy.info(), &r.subresources)?;
            spec.create_only = spec.group == crate::apis::authorization::GROUP;
            Some(spec)
        })
        .collect();
    // customresourcedefinitions are served by the apiextensions server; its kind is
    // documented with the built-in ones (the chain's documents are the kube API server's).
    specs.extend(ResourceSpec::builtin(
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        "customresourcedefinitions",
        false,
        &["status"],
    ));
    // So are apiservices, served by the aggregator.
    specs.extend(ResourceSpec::builtin(
        "apiregistration.k8s.io",
        "v1",
        "APIService",
        "apiservices",
        false,
        &["status"],
    ));
    let service = OpenApiService::new();
    let docs = LazyDocs::new(specs.clone());
    docs.publish(&service);
    service
        .install(&server.handler().non_api_mux)
        .map_err(|e| e.to_string())?;
    let definitions: Definitions = specs
        .iter()
        .map(|s| {
            (
                (s.group.clone(), s.version.clone(), s.kind.clone()),
                s.definition_name.clone(),
            )
        })
        .collect();

    let mut stores = Stores::new();
    let nodes: StoreCell = Arc::default();
    let pdbs: StoreCell = Arc::default();
    let pods: StoreCell = Arc::default();
    let secrets: StoreCell = Arc::default();
    let mut legacy = None;
    let mut named = Vec::new();
    for group in groups {
        let mut versions = Vec::new();
        for (version, resources) in group.versions {
            let mut gv = ApiGroupVersion {
                version: version.to_string(),
                resources: BTreeMap::new(),
            };
            let mut deferred: Vec<ResourceDef> = Vec::new();
            for def in resources {
                if !matches!(def.backing, Backing::Store) {
                    deferred.push(def);
                    continue;
                }
                let info = def.strategy.info().clone();
                let strategy = with_patch_schema(&def, &definitions, &docs);
                let root = key_root(prefix, &info);
                let mut cache_config = CacherConfig::new(&format!("{root}/"));
                cache_config.get_attrs = attrs_func(strategy.clone());
                let cached =
                    decorated_storage(&storage, &info.group, &info.resource, true, cache_config);
                let store = Store::new(strategy, cached, &root).with_return_deleted_object(
                    RETURN_DELETED_OBJECT.contains(&(info.group.as_str(), info.resource.as_str())),
                );
                let main: Arc<dyn RestStorage> =
                    if info.group.is_empty() && info.resource == "namespaces" {
                        gv.resources.insert(
                            "namespaces/finalize".to_string(),
                            Arc::new(FinalizeStorage::new(store.clone())),
                        );
                        Arc::new(NamespaceStorage::new(store.clone()))
                    } else {
                        Arc::new(store.clone())
                    };
                let main: Arc<dyn RestStorage> =
                    if info.group.is_empty() && info.resource == "services" {
                        Arc::new(ServiceStorage::new(main, service_range))
                    } else {
                        main
                    };
                let is_csr = info.group == "certificates.k8s.io"
                    && info.resource == "certificatesigningrequests";
                let main: Arc<dyn RestStorage> = if is_csr {
                    Arc::new(CsrStorage::new(main))
                } else {
                    main
                };
                gv.resources.insert(info.resource.clone(), main);
                if def.subresources.contains(&"status") {
                    let status: Arc<dyn RestStorage> = Arc::new(StatusStore::new(&store));
                    let status: Arc<dyn RestStorage> = if is_csr {
                        gv.resources.insert(
                            format!("{}/approval", info.resource),
                            Arc::new(CsrSubresource::new(
                                status.clone(),
                                CsrSubresourceKind::Approval,
                            )),
                        );
                        Arc::new(CsrSubresource::new(status, CsrSubresourceKind::Status))
                    } else {
                        status
                    };
                    gv.resources
                        .insert(format!("{}/status", info.resource), status);
                }
                if info.group.is_empty() && info.resource == "pods" {
                    install_pod_subresources(&mut gv, &store, &nodes, &pdbs);
                }
                if info.group.is_empty() && info.resource == "serviceaccounts" {
                    gv.resources.insert(
                        "serviceaccounts/token".to_string(),
                        Arc::new(TokenRequestStorage::new(
                            auth.token_issuer.clone(),
                            store.clone(),
                            pods.clone(),
                            secrets.clone(),
                            nodes.clone(),
                        )),
                    );
                }
                if SCALED.contains(&(info.group.as_str(), info.resource.as_str())) {
                    gv.resources.insert(
                        format!("{}/scale", info.resource),
                        Arc::new(ScaleStorage::new(store.clone())),
                    );
                }
                stores.insert((info.group.clone(), info.resource.clone()), store);
            }
            for def in deferred {
                let strategy = with_patch_schema(&def, &definitions, &docs);
                install_unstored(&mut gv, def, strategy, &stores, &storage, auth)?;
            }
            if group.group == crate::auth::rbac::GROUP {
                guard_rbac(&mut gv, &stores, &auth.authz)?;
            }
            versions.push(gv);
        }
        let info = ApiGroupInfo {
            group: group.group.to_string(),
            versions,
        };
        if group.group.is_empty() {
            legacy = Some(info);
        } else {
            named.push(info);
        }
    }
    for (cell, group, resource) in [
        (&nodes, "", "nodes"),
        (&pdbs, "policy", "poddisruptionbudgets"),
        (&pods, "", "pods"),
        (&secrets, "", "secrets"),
    ] {
        if let Some(store) = stores.get(&(group.to_string(), resource.to_string())) {
            let _ = cell.set(store.clone());
        }
    }
    if let Some(core) = legacy {
        server
            .install_legacy_api_group("/api", core)
            .map_err(|e| e.to_string())?;
    }
    server
        .install_api_groups(&named)
        .map_err(|e| e.to_string())?;
    let base_v2: apiextensions::BaseV2 = Arc::new(move || docs.v2());
    Ok((stores, (service, base_v2)))
}
