//! The aggregator's controllers, run as one loop over the APIServices: the autoregistration of
//! local APIServices (upstream `autoregister` + `crdregistration`), the registration of proxy
//! routes for remote ones (`apiservice-registration-controller`), their availability
//! (`apiservice-status-*-available-controller`) and the merge of their discovery documents
//! (`apiservice-discovery-controller`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use apiserver::body::{Body, empty};
use apiserver::endpoints::discovery::aggregated_types::DiscoveryFreshness;
use apiserver::endpoints::discovery::{
    APIResource, DiscoveryManager, Priority, Source, VersionOptions,
};
use apiserver::registry::rest::{
    CreateOptions, DeleteOptions, ListOptions, RequestContext, RestStorage, UpdateOptions,
};
use apiserver::registry::store::{StatusStore, Store};
use apiserver::request::UserInfo;
use apiserver::request::names::SYSTEM_MASTERS;
use apiserver::server::handler::ApiRoutes;
use apiserver::status::reason;
use futures::StreamExt;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::apiservice::{self, ApiServiceView, ServiceReference};
use crate::openapi::{OpenApiAggregator, RemoteSpecs};
use crate::priorities::local_priority;
use crate::proxy::{HandlingInfo, ProxyTarget, outbound_headers};
use crate::resolver::ServiceResolver;
use crate::transport::{ProxyClientCertFiles, client_config, connect};

/// The label marking APIServices the autoregistration manages: `onstart` for the built-in
/// group-versions (synced at start), `true` for custom resource ones (kept in sync).
pub const AUTOMANAGED_LABEL: &str = "kube-aggregator.kubernetes.io/automanaged";

/// How often the local group-versions are compared with the last sync's.
const LOCAL_POLL: Duration = Duration::from_secs(1);

/// How long a discovery check may take (upstream: 5 s).
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// Where the local group-versions come from: the web-service roots of the servers the
/// aggregator delegates to (upstream reads the delegate's listed paths).
#[derive(Clone, Default)]
pub struct LocalApis {
    /// The kube API server's roots (`/api/v1`, `/apis/apps/v1` …): `automanaged: onstart`.
    pub builtin: Vec<ApiRoutes>,
    /// The apiextensions server's roots (custom resources): `automanaged: true`.
    pub custom: Vec<ApiRoutes>,
    /// Group-versions served by the aggregator itself (`apiregistration.k8s.io/v1`).
    pub own: Vec<(String, String)>,
}

/// The group-versions among web-service roots (`/api/v1` → `("", "v1")`).
pub fn group_versions_of(roots: &[String]) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for root in roots {
        if root == "/api/v1" {
            out.insert((String::new(), "v1".to_string()));
            continue;
        }
        let Some(rest) = root.strip_prefix("/apis/") else {
            continue;
        };
        let parts: Vec<&str> = rest.split('/').collect();
        if let [group, version] = parts[..]
            && !group.is_empty()
            && !version.is_empty()
        {
            out.insert((group.to_string(), version.to_string()));
        }
    }
    out
}

impl LocalApis {
    /// The local group-versions and their automanaged label value.
    fn desired(&self) -> BTreeMap<(String, String), &'static str> {
        let mut out = BTreeMap::new();
        for routes in &self.custom {
            for gv in group_versions_of(&routes.roots()) {
                out.insert(gv, "true");
            }
        }
        for routes in &self.builtin {
            for gv in group_versions_of(&routes.roots()) {
                out.insert(gv, "onstart");
            }
        }
        for gv in &self.own {
            out.insert(gv.clone(), "onstart");
        }
        out
    }
}

/// The name of the APIService of `group`/`version`.
pub fn api_service_name(group: &str, version: &str) -> String {
    format!("{version}.{group}")
}

/// A local APIService as autoregistration creates it.
pub fn local_api_service(group: &str, version: &str, automanaged: &str) -> Value {
    let priority = local_priority(group, version);
    json!({
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {
            "name": api_service_name(group, version),
            "labels": {AUTOMANAGED_LABEL: automanaged},
        },
        "spec": {
            "group": group,
            "version": version,
            "groupPriorityMinimum": priority.group_priority_minimum,
            "versionPriority": priority.version_priority,
        },
    })
}

/// The `Available` condition to set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Availability {
    /// `True` or `False`.
    pub available: bool,
    /// Upstream's reason (`Local`, `Passed`, `FailedDiscoveryCheck`, `ServiceNotFound` …).
    pub reason: String,
    /// The message.
    pub message: String,
}

impl Availability {
    fn local() -> Self {
        Availability {
            available: true,
            reason: "Local".into(),
            message: "Local APIServices are always available".into(),
        }
    }

    fn passed() -> Self {
        Availability {
            available: true,
            reason: "Passed".into(),
            message: "all checks passed".into(),
        }
    }

    fn failed(reason: &str, message: String) -> Self {
        Availability {
            available: false,
            reason: reason.into(),
            message,
        }
    }
}

/// `obj` with its `Available` condition set to `availability`; `None` when it already says
/// that (the transition time changes only when the status does, as upstream).
pub fn with_availability(obj: &Value, availability: &Availability) -> Option<Value> {
    let status = if availability.available {
        "True"
    } else {
        "False"
    };
    let current = apiservice::available_condition(obj);
    let same = |field: &str, want: &str| {
        current.and_then(|c| c.get(field)).and_then(Value::as_str) == Some(want)
    };
    if same("status", status)
        && same("reason", &availability.reason)
        && same("message", &availability.message)
    {
        return None;
    }
    let transition = match current {
        Some(c) if same("status", status) => {
            c.get("lastTransitionTime").cloned().unwrap_or(Value::Null)
        }
        _ => json!(apiserver::registry::store::meta::now_rfc3339()),
    };
    let condition = json!({
        "type": apiservice::AVAILABLE,
        "status": status,
        "lastTransitionTime": transition,
        "reason": availability.reason,
        "message": availability.message,
    });
    let mut out = obj.clone();
    let conditions = out
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut conditions: Vec<Value> = conditions
        .into_iter()
        .filter(|c| c.get("type").and_then(Value::as_str) != Some(apiservice::AVAILABLE))
        .collect();
    conditions.push(condition);
    if let Some(top) = out.as_object_mut() {
        top.insert("status".into(), json!({"conditions": conditions}));
    }
    Some(out)
}

/// One remote APIService the aggregator proxies to.
struct Remote {
    view: ApiServiceView,
    target: ProxyTarget,
    /// The last discovery document fetched (resources of the group-version).
    resources: Option<Vec<APIResource>>,
}

/// Settings of the controllers.
#[derive(Clone, Debug)]
pub struct ControllerOptions {
    /// How often every remote APIService is checked (besides on changes).
    pub resync_interval: Duration,
    /// `--proxy-client-cert-file` / `--proxy-client-key-file`.
    pub proxy_client_cert: Option<ProxyClientCertFiles>,
    /// `--aggregator-reject-forwarding-redirect` (default true).
    pub reject_forwarding_redirects: bool,
}

impl Default for ControllerOptions {
    fn default() -> Self {
        ControllerOptions {
            resync_interval: Duration::from_secs(30),
            proxy_client_cert: None,
            reject_forwarding_redirects: true,
        }
    }
}

/// The aggregator's controllers over the APIService storage.
#[derive(Clone)]
pub struct Controller {
    inner: Arc<Inner>,
}

struct Inner {
    store: Store,
    status: StatusStore,
    routes: ApiRoutes,
    discovery: DiscoveryManager,
    resolver: ServiceResolver,
    local: LocalApis,
    options: ControllerOptions,
    remotes: Mutex<BTreeMap<String, Remote>>,
    openapi: Option<OpenApiAggregator>,
    /// Woken by APIService changes and proxy failures.
    changed: Arc<Notify>,
    /// Fired once every local APIService wanted at start exists.
    autoregistered: CancellationToken,
    /// Fired after the first full sync.
    synced: CancellationToken,
}

impl Controller {
    /// The controllers over `store` (the APIService storage), registering proxy routes on
    /// `routes` (the aggregator's API routes) and remote discovery in `discovery`.
    pub fn new(
        store: Store,
        routes: ApiRoutes,
        discovery: DiscoveryManager,
        resolver: ServiceResolver,
        local: LocalApis,
        options: ControllerOptions,
        openapi: Option<OpenApiAggregator>,
    ) -> Self {
        Controller {
            inner: Arc::new(Inner {
                status: StatusStore::new(&store),
                store,
                routes,
                discovery,
                resolver,
                local,
                options,
                remotes: Mutex::default(),
                openapi,
                changed: Arc::new(Notify::new()),
                autoregistered: CancellationToken::new(),
                synced: CancellationToken::new(),
            }),
        }
    }

    /// Fired once the local APIServices wanted at start exist (the `autoregister-completion`
    /// readiness check).
    pub fn autoregistered(&self) -> CancellationToken {
        self.inner.autoregistered.clone()
    }

    /// Fired after the first full sync.
    pub fn synced(&self) -> CancellationToken {
        self.inner.synced.clone()
    }

    /// Asks for a sync now.
    pub fn trigger(&self) {
        self.inner.changed.notify_one();
    }

    /// Runs until `stop`: syncs on every APIService change, proxy failure, and every resync
    /// interval.
    pub async fn run(self, stop: CancellationToken) {
        tokio::spawn(self.clone().watch_changes(stop.clone()));
        tokio::spawn(self.clone().watch_local(stop.clone()));
        // Service and Endpoints changes re-check the remote APIServices (upstream's available
        // controller watches both).
        for storage in self.inner.resolver.watched_storages() {
            tokio::spawn(self.clone().watch_storage(storage, stop.clone()));
        }
        let mut tick = tokio::time::interval(self.inner.options.resync_interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = stop.cancelled() => break,
                _ = tick.tick() => {}
                _ = self.inner.changed.notified() => {}
            }
            self.sync().await;
            self.inner.synced.cancel();
        }
    }

    /// Forwards APIService watch events as sync triggers, re-opening the watch when it ends.
    async fn watch_changes(self, stop: CancellationToken) {
        let storage: Arc<dyn RestStorage> = Arc::new(self.inner.store.clone());
        self.watch_storage(storage, stop).await;
    }

    /// Forwards the watch events of `storage` as sync triggers, only while remote APIServices
    /// exist for Services and Endpoints (always for APIServices), re-opening the watch when it
    /// ends.
    async fn watch_storage(self, storage: Arc<dyn RestStorage>, stop: CancellationToken) {
        let ctx = RequestContext::default();
        let is_apiservices = storage.info().resource == apiservice::RESOURCE;
        while !stop.is_cancelled() {
            let opts = ListOptions {
                watch: true,
                ..Default::default()
            };
            match storage.watch(&ctx, &opts).await {
                Ok(mut events) => loop {
                    tokio::select! {
                        _ = stop.cancelled() => return,
                        event = events.next() => match event {
                            Some(_) if is_apiservices || !self.remotes().is_empty() => self.trigger(),
                            Some(_) => {}
                            None => break,
                        },
                    }
                },
                Err(err) => tracing::warn!("watching {}: {err}", storage.info().resource),
            }
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            }
        }
    }

    /// Triggers a sync when the local group-versions change (a custom resource version
    /// appears or goes): reading the routes is cheap, so they are compared every second.
    async fn watch_local(self, stop: CancellationToken) {
        let mut last = self.inner.local.desired();
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(LOCAL_POLL) => {}
            }
            let now = self.inner.local.desired();
            if now != last {
                last = now;
                self.trigger();
            }
        }
    }

    async fn list(&self) -> Result<Vec<Value>, String> {
        let list = self
            .inner
            .store
            .list(&RequestContext::default(), &ListOptions::default())
            .await
            .map_err(|e| e.to_string())?;
        Ok(list
            .get("items")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default())
    }

    /// One pass: autoregistration, then every APIService's routes, availability and
    /// discovery.
    pub async fn sync(&self) {
        if let Err(err) = self.autoregister().await {
            tracing::warn!("autoregistering local APIServices: {err}");
        } else {
            self.inner.autoregistered.cancel();
        }
        let items = match self.list().await {
            Ok(items) => items,
            Err(err) => {
                tracing::warn!("listing apiservices: {err}");
                return;
            }
        };
        let mut seen = BTreeSet::new();
        for obj in &items {
            let view = ApiServiceView::from_object(obj);
            seen.insert(view.name.clone());
            let priority = Priority {
                group_priority_minimum: view.group_priority_minimum,
                version_priority: view.version_priority,
            };
            let availability = match &view.service {
                None => {
                    self.remove_remote(&view.name);
                    self.inner.discovery.set_group_version_priority(
                        &view.group,
                        &view.version,
                        priority,
                    );
                    Availability::local()
                }
                Some(service) => self.sync_remote(&view, service, priority).await,
            };
            if let Some(updated) = with_availability(obj, &availability) {
                self.write_status(&view.name, updated).await;
            }
        }
        let gone: Vec<String> = self
            .remotes()
            .keys()
            .filter(|name| !seen.contains(*name))
            .cloned()
            .collect();
        for name in gone {
            self.remove_remote(&name);
        }
        // Last, so that the remote documents of this pass are merged with the local ones.
        if let Some(openapi) = &self.inner.openapi {
            openapi.sync_local().await;
        }
    }

    fn remotes(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Remote>> {
        self.inner
            .remotes
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Creates the missing local APIServices, fixes drifted ones, and deletes automanaged ones
    /// whose group-version is gone.
    async fn autoregister(&self) -> Result<(), String> {
        let desired = self.inner.local.desired();
        let existing = self.list().await?;
        let ctx = RequestContext::default();
        let mut present = BTreeSet::new();
        for obj in &existing {
            let view = ApiServiceView::from_object(obj);
            present.insert(view.name.clone());
            let managed = obj
                .pointer("/metadata/labels")
                .and_then(|l| l.get(AUTOMANAGED_LABEL))
                .and_then(Value::as_str);
            let Some(managed) = managed else { continue };
            let key = (view.group.clone(), view.version.clone());
            match desired.get(&key) {
                None if view.service.is_none() => {
                    let _ = self
                        .inner
                        .store
                        .delete(&ctx, &view.name, &DeleteOptions::default())
                        .await;
                }
                Some(label) => {
                    let want = local_api_service(&view.group, &view.version, label);
                    if obj.get("spec") != want.get("spec") || managed != *label {
                        let mut updated = obj.clone();
                        updated["spec"] = want["spec"].clone();
                        updated["metadata"]["labels"][AUTOMANAGED_LABEL] = json!(label);
                        self.update(&view.name, updated).await?;
                    }
                }
                None => {}
            }
        }
        for ((group, version), label) in &desired {
            let name = api_service_name(group, version);
            if present.contains(&name) {
                continue;
            }
            match self
                .inner
                .store
                .create(
                    &ctx,
                    local_api_service(group, version, label),
                    &CreateOptions::default(),
                )
                .await
            {
                Ok(_) => {}
                Err(err) if err.reason() == reason::ALREADY_EXISTS => {}
                Err(err) => return Err(format!("creating APIService {name}: {err}")),
            }
        }
        Ok(())
    }

    async fn update(&self, name: &str, obj: Value) -> Result<(), String> {
        let update = Box::new(move |_current: Option<&Value>| Ok(obj.clone()));
        self.inner
            .store
            .update(
                &RequestContext::default(),
                name,
                update,
                &UpdateOptions::default(),
                false,
            )
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    async fn write_status(&self, name: &str, obj: Value) {
        let status = obj.get("status").cloned().unwrap_or(Value::Null);
        // Applied to the current object, so a concurrent spec change is not overwritten.
        let update = Box::new(move |current: Option<&Value>| {
            let mut next = current.cloned().unwrap_or(Value::Null);
            if let Some(top) = next.as_object_mut() {
                top.insert("status".into(), status.clone());
                if let Some(meta) = top.get_mut("metadata").and_then(Value::as_object_mut) {
                    meta.remove("resourceVersion");
                }
            }
            Ok(next)
        });
        if let Err(err) = self
            .inner
            .status
            .update(
                &RequestContext::default(),
                name,
                update,
                &UpdateOptions::default(),
                false,
            )
            .await
        {
            tracing::warn!("updating the status of APIService {name}: {err}");
        }
    }

    fn remove_remote(&self, name: &str) {
        let Some(remote) = self.remotes().remove(name) else {
            return;
        };
        if let Some(openapi) = &self.inner.openapi {
            openapi.remove_remote(name);
        }
        let (group, version) = (remote.view.group, remote.view.version);
        self.inner
            .routes
            .unregister(&format!("/apis/{group}/{version}"));
        self.inner
            .discovery
            .remove_group_version_from(Source::Aggregator, &group, &version);
        let group_still_remote = self.remotes().values().any(|r| r.view.group == group);
        if !group_still_remote {
            self.inner.routes.unregister(&format!("/apis/{group}"));
        }
    }

    /// Registers (or refreshes) the proxy of a remote APIService, checks it, and merges its
    /// discovery.
    async fn sync_remote(
        &self,
        view: &ApiServiceView,
        service: &ServiceReference,
        priority: Priority,
    ) -> Availability {
        let tls = match client_config(
            &view.ca_bundle,
            view.insecure_skip_tls_verify,
            self.inner.options.proxy_client_cert.as_ref(),
        ) {
            Ok(tls) => tls,
            Err(err) => {
                self.remove_remote(&view.name);
                return Availability::failed("ServiceAccessError", err.to_string());
            }
        };
        let target = {
            let mut remotes = self.remotes();
            let changed_gv = remotes
                .get(&view.name)
                .is_some_and(|r| r.view.group != view.group || r.view.version != view.version);
            if changed_gv {
                drop(remotes);
                self.remove_remote(&view.name);
                remotes = self.remotes();
            }
            let remote = remotes.entry(view.name.clone()).or_insert_with(|| Remote {
                view: view.clone(),
                target: ProxyTarget::new(
                    self.inner.resolver.clone(),
                    self.inner.changed.clone(),
                    self.inner.options.reject_forwarding_redirects,
                ),
                resources: None,
            });
            let available = remote.target.info().is_some_and(|i| i.available);
            remote.view = view.clone();
            remote.target.set(HandlingInfo {
                service: service.clone(),
                tls: tls.clone(),
                available,
            });
            remote.target.clone()
        };
        let group_root = format!("/apis/{}", view.group);
        self.inner
            .routes
            .register(&format!("{group_root}/{}", view.version), target.service());
        self.inner.routes.register(
            &group_root,
            crate::discovery::group_service(self.inner.discovery.clone(), &view.group),
        );

        let result = self.probe(view, service, tls).await;
        let availability = match &result {
            Ok((_, endpoint)) => {
                self.sync_remote_openapi(view, endpoint).await;
                Availability::passed()
            }
            Err(availability) => availability.clone(),
        };
        let result = result.map(|(resources, _)| resources);
        target.set_available(availability.available);
        let resources = {
            let mut remotes = self.remotes();
            let Some(remote) = remotes.get_mut(&view.name) else {
                return availability;
            };
            if let Ok(resources) = &result {
                remote.resources = Some(resources.clone());
            }
            remote.resources.clone()
        };
        // A server that stops answering keeps its last document, marked stale (upstream's
        // aggregated discovery); one never reached is not advertised.
        if let Some(resources) = resources {
            let freshness = if result.is_ok() {
                DiscoveryFreshness::Current
            } else {
                DiscoveryFreshness::Stale
            };
            if let Err(err) = self.inner.discovery.add_group_version_with(
                &view.group,
                &view.version,
                resources,
                VersionOptions {
                    source: Source::Aggregator,
                    priority: Some(priority),
                    freshness,
                },
            ) {
                tracing::warn!("merging the discovery of {}: {err}", view.name);
            }
        }
        availability
    }

    /// The discovery check: GET `/apis/<group>/<version>` on the server as the aggregator
    /// (`system:kube-aggregator` in `system:masters`), expecting 2xx within 5 s. Returns the
    /// group-version's resources and the resolved address.
    async fn probe(
        &self,
        view: &ApiServiceView,
        service: &ServiceReference,
        tls: Arc<rustls::ClientConfig>,
    ) -> Result<(Vec<APIResource>, Endpoint), Availability> {
        let (host, port) = self
            .inner
            .resolver
            .resolve(service)
            .await
            .map_err(|e| Availability::failed(e.reason(), e.to_string()))?;
        let endpoint = Endpoint {
            host,
            port,
            tls,
            server_name: format!("{}.{}.svc", service.name, service.namespace),
        };
        let path = format!("/apis/{}/{}", view.group, view.version);
        let url = endpoint.url(&path);
        let fetch = async {
            let doc = endpoint.get_json(&path).await?;
            serde_json::from_value::<Vec<APIResource>>(
                doc.get("resources").cloned().unwrap_or(json!([])),
            )
            .map_err(|e| e.to_string())
        };
        match tokio::time::timeout(PROBE_TIMEOUT, fetch).await {
            Ok(Ok(resources)) => Ok((resources, endpoint)),
            Ok(Err(err)) => Err(Availability::failed(
                "FailedDiscoveryCheck",
                format!("failing or missing response from {url}: {err}"),
            )),
            Err(_) => Err(Availability::failed(
                "FailedDiscoveryCheck",
                format!(
                    "failing or missing response from {url}: Get {url:?}: context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
                ),
            )),
        }
    }

    /// Reads the remote server's OpenAPI documents (each optional) into the aggregated ones.
    async fn sync_remote_openapi(&self, view: &ApiServiceView, endpoint: &Endpoint) {
        let Some(openapi) = &self.inner.openapi else {
            return;
        };
        let fetch = |path: String| async move {
            tokio::time::timeout(PROBE_TIMEOUT, endpoint.get_json(&path))
                .await
                .ok()
                .and_then(Result::ok)
        };
        let v2 = fetch("/openapi/v2".into()).await;
        let v3 = fetch(format!("/openapi/v3/apis/{}/{}", view.group, view.version)).await;
        openapi.set_remote(
            &view.name,
            RemoteSpecs {
                group: view.group.clone(),
                version: view.version.clone(),
                v2,
                v3,
            },
        );
    }
}

/// A resolved remote server.
struct Endpoint {
    host: String,
    port: u16,
    tls: Arc<rustls::ClientConfig>,
    server_name: String,
}

impl Endpoint {
    fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    fn url(&self, path: &str) -> String {
        format!("https://{}{path}", self.authority())
    }

    /// GETs `path` as the aggregator and parses the 2xx JSON answer; errors in Go's wording.
    async fn get_json(&self, path: &str) -> Result<Value, String> {
        let url = self.url(path);
        let mut sender = connect(&self.host, self.port, self.tls.clone(), &self.server_name)
            .await
            .map_err(|e| format!("Get {url:?}: {e}"))?;
        let user = UserInfo {
            name: "system:kube-aggregator".into(),
            groups: vec![SYSTEM_MASTERS.into()],
            ..Default::default()
        };
        let mut req = http::Request::builder()
            .method("GET")
            .uri(path)
            .body::<Body>(empty())
            .map_err(|e| e.to_string())?;
        let mut headers = outbound_headers(&http::HeaderMap::new(), &user, false);
        headers.insert(
            http::header::ACCEPT,
            http::HeaderValue::from_static("application/json"),
        );
        if let Ok(host) = http::HeaderValue::from_str(&self.authority()) {
            headers.insert(http::header::HOST, host);
        }
        *req.headers_mut() = headers;
        let response = sender
            .send_request(req)
            .await
            .map_err(|e| format!("Get {url:?}: {e}"))?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!("bad status from {url}: {}", status.as_u16()));
        }
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        serde_json::from_slice(&body).map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_versions_from_roots() {
        let roots = [
            "/api",
            "/api/v1",
            "/apis",
            "/apis/apps",
            "/apis/apps/v1",
            "/version",
        ]
        .map(String::from);
        assert_eq!(
            group_versions_of(&roots),
            BTreeSet::from([
                (String::new(), "v1".to_string()),
                ("apps".to_string(), "v1".to_string())
            ])
        );
    }

    #[test]
    fn local_api_services_as_upstream() {
        let obj = local_api_service("", "v1", "onstart");
        assert_eq!(obj["metadata"]["name"], "v1.");
        assert_eq!(obj["spec"]["groupPriorityMinimum"], 18000);
        assert_eq!(obj["spec"]["versionPriority"], 1);
        assert!(apiservice::validate_api_service(&obj).is_empty());
        let obj = local_api_service("apps", "v1", "onstart");
        assert_eq!(obj["metadata"]["name"], "v1.apps");
        assert_eq!(obj["spec"]["groupPriorityMinimum"], 17800);
    }

    #[test]
    fn availability_transitions() {
        let obj = local_api_service("apps", "v1", "onstart");
        let set = with_availability(&obj, &Availability::local()).unwrap();
        let cond = apiservice::available_condition(&set).unwrap().clone();
        assert_eq!(cond["status"], "True");
        assert_eq!(cond["reason"], "Local");
        assert_eq!(cond["message"], "Local APIServices are always available");
        assert!(with_availability(&set, &Availability::local()).is_none());
        let failed = Availability::failed("ServiceNotFound", "gone".into());
        let down = with_availability(&set, &failed).unwrap();
        assert_eq!(
            apiservice::available_condition(&down).unwrap()["status"],
            "False"
        );
        // Same status, new message: the transition time stays.
        let other = Availability::failed("FailedDiscoveryCheck", "x".into());
        let again = with_availability(&down, &other).unwrap();
        assert_eq!(
            apiservice::available_condition(&again).unwrap()["lastTransitionTime"],
            apiservice::available_condition(&down).unwrap()["lastTransitionTime"]
        );
    }
}
