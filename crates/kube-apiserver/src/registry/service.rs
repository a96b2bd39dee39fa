//! Services: cluster IPs allocated from `--service-cluster-ip-range` on create (upstream's
//! service REST layer with its IP allocator), the lowest free address first.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;
use std::sync::Arc;

use apiserver::registry::rest::{
    BoxFuture, CreateOptions, ListOptions, RequestContext, RestStorage, UpdateFunc, UpdateOptions,
    WrappingStorage,
};
use apiserver::registry::{FieldError, ResourceInfo, invalid};
use apiserver::status::ApiError;
use serde_json::{Value, json};
use tokio::sync::Mutex;

/// An IPv4 service CIDR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServiceRange {
    base: u32,
    prefix: u8,
}

impl ServiceRange {
    /// Parses `a.b.c.d/n` (the address is masked to the network), refusing ranges upstream
    /// refuses (IPv6 here is unsupported; masks under /12 are too large; /31 and /32 have no
    /// usable address).
    pub fn parse(text: &str) -> Result<Self, String> {
        let (ip, prefix) = text
            .split_once('/')
            .ok_or_else(|| format!("invalid CIDR address: {text}"))?;
        let ip: Ipv4Addr = ip
            .parse()
            .map_err(|_| format!("invalid CIDR address: {text}"))?;
        let prefix: u8 = prefix
            .parse()
            .ok()
            .filter(|p| *p <= 32)
            .ok_or_else(|| format!("invalid CIDR address: {text}"))?;
        if prefix < 12 {
            return Err(
                "specified --service-cluster-ip-range is too large; for 32-bit addresses, the mask must be >= 12"
                    .into(),
            );
        }
        if prefix > 30 {
            return Err(format!(
                "specified --service-cluster-ip-range {text} has no usable address"
            ));
        }
        let mask = u32::MAX << (32 - prefix);
        Ok(ServiceRange {
            base: u32::from(ip) & mask,
            prefix,
        })
    }

    /// The first usable address (the `kubernetes` service's).
    pub fn first(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.base + 1)
    }

    fn last(&self) -> u32 {
        self.base + ((1u64 << (32 - self.prefix)) as u32 - 2)
    }

    fn contains(&self, ip: Ipv4Addr) -> bool {
        let n = u32::from(ip);
        n > self.base && n <= self.last()
    }
}

impl std::fmt::Display for ServiceRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", Ipv4Addr::from(self.base), self.prefix)
    }
}

/// The `services` resource with cluster IP allocation around the generic store.
pub struct ServiceStorage {
    inner: Arc<dyn RestStorage>,
    range: ServiceRange,
    /// Allocations are serialized: the in-use set is read and the service stored under it.
    lock: Mutex<()>,
}

impl ServiceStorage {
    /// Wraps `inner` (the services store, possibly already wrapped by admission).
    pub fn new(inner: Arc<dyn RestStorage>, range: ServiceRange) -> Self {
        ServiceStorage {
            inner,
            range,
            lock: Mutex::new(()),
        }
    }

    async fn in_use(&self) -> Result<BTreeSet<Ipv4Addr>, ApiError> {
        let list = self
            .inner
            .list(&RequestContext::default(), &ListOptions::default())
            .await?;
        let mut used = BTreeSet::new();
        for item in list
            .get("items")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let ips = item.pointer("/spec/clusterIPs").and_then(Value::as_array);
            let single = item.pointer("/spec/clusterIP");
            for ip in ips.into_iter().flatten().chain(single) {
                if let Some(ip) = ip.as_str().and_then(|s| s.parse().ok()) {
                    used.insert(ip);
                }
            }
        }
        Ok(used)
    }

    async fn create_inner(
        &self,
        ctx: &RequestContext,
        mut obj: Value,
        opts: &CreateOptions,
    ) -> Result<Value, ApiError> {
        let _guard = self.lock.lock().await;
        let used = self.in_use().await?;
        allocate(self.range, self.inner.info(), &mut obj, &used)?;
        self.inner.create(ctx, obj, opts).await
    }

    /// PUT or PATCH: a create through update (server-side apply of a new service) allocates
    /// like a create; so does a change away from ExternalName that leaves no cluster IP.
    async fn update_inner(
        &self,
        ctx: &RequestContext,
        name: &str,
        mut update: UpdateFunc,
        opts: &UpdateOptions,
        force_allow_create: bool,
    ) -> Result<(Value, bool), ApiError> {
        let _guard = self.lock.lock().await;
        let used = self.in_use().await?;
        let wrapped: UpdateFunc = {
            let range = self.range;
            let info = self.inner.info().clone();
            Box::new(move |cur: Option<&Value>| {
                let mut new = update(cur)?;
                let had_ip = cur
                    .and_then(|c| c.pointer("/spec/clusterIP"))
                    .and_then(Value::as_str)
                    .is_some_and(|s| !s.is_empty());
                if !had_ip {
                    allocate(range, &info, &mut new, &used)?;
                }
                Ok(new)
            })
        };
        self.inner
            .update(ctx, name, wrapped, opts, force_allow_create)
            .await
    }
}

/// Sets the cluster IPs of a service being created (upstream's allocator): the requested
/// one when free and in range, else the lowest free address after the first.
fn allocate(
    range: ServiceRange,
    info: &ResourceInfo,
    obj: &mut Value,
    used: &BTreeSet<Ipv4Addr>,
) -> Result<(), ApiError> {
    let spec_type = obj
        .pointer("/spec/type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP");
    if spec_type == "ExternalName" {
        return Ok(());
    }
    let requested = obj
        .pointer("/spec/clusterIP")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .or_else(|| {
            obj.pointer("/spec/clusterIPs/0")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
        })
        .map(str::to_string);
    if requested.as_deref() == Some("None") {
        set_ips(obj, "None");
        return Ok(());
    }
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let ip = match requested {
        Some(text) => {
            let reject = |why: String| {
                invalid(
                    info,
                    &name,
                    &[FieldError::invalid(
                        "spec.clusterIPs",
                        json!([text]),
                        &format!("failed to allocate IP {text}: {why}"),
                    )],
                )
            };
            let ip: Ipv4Addr = text
                .parse()
                .map_err(|_| reject("must be a valid IP address".into()))?;
            if !range.contains(ip) {
                return Err(reject(format!(
                    "the provided IP ({ip}) is not in the valid range. The range of valid IPs is {}",
                    range
                )));
            }
            if used.contains(&ip) {
                return Err(reject("provided IP is already allocated".into()));
            }
            ip
        }
        None => (u32::from(range.first()) + 1..=range.last())
            .map(Ipv4Addr::from)
            .find(|ip| !used.contains(ip))
            .ok_or_else(|| ApiError::internal("failed to allocate a serviceIP: range is full"))?,
    };
    set_ips(obj, &ip.to_string());
    Ok(())
}

fn set_ips(obj: &mut Value, ip: &str) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    let spec = root.entry("spec").or_insert_with(|| json!({}));
    if let Some(spec) = spec.as_object_mut() {
        spec.insert("clusterIP".into(), json!(ip));
        spec.insert("clusterIPs".into(), json!([ip]));
        spec.insert("ipFamilies".into(), json!(["IPv4"]));
        spec.insert("ipFamilyPolicy".into(), json!("SingleStack"));
    }
}

impl WrappingStorage for ServiceStorage {
    fn inner(&self) -> &dyn RestStorage {
        self.inner.as_ref()
    }
    fn create<'a>(
        &'a self,
        ctx: &'a RequestContext,
        obj: Value,
        opts: &'a CreateOptions,
    ) -> BoxFuture<'a, Result<Value, ApiError>> {
        Box::pin(self.create_inner(ctx, obj, opts))
    }
    fn update<'a>(
        &'a self,
        ctx: &'a RequestContext,
        name: &'a str,
        update: UpdateFunc,
        opts: &'a UpdateOptions,
        force_allow_create: bool,
    ) -> BoxFuture<'a, Result<(Value, bool), ApiError>> {
        Box::pin(self.update_inner(ctx, name, update, opts, force_allow_create))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apis::core::services::services;
    use apiserver::registry::store::Store;
    use apiserver::storage::Storage;
    use apiserver::storage::backends::EmbeddedStorage;

    fn ctx() -> RequestContext {
        RequestContext {
            namespace: "default".into(),
            ..Default::default()
        }
    }

    fn fixture(range: &str) -> (tempfile::TempDir, ServiceStorage) {
        let dir = tempfile::tempdir().unwrap();
        let backend: Arc<dyn Storage> = Arc::new(EmbeddedStorage::open(dir.path()).unwrap());
        let store = Store::new(services().strategy, backend, "/registry/services");
        let range = ServiceRange::parse(range).unwrap();
        (dir, ServiceStorage::new(Arc::new(store), range))
    }

    fn svc(name: &str, ip: Option<&str>) -> Value {
        let mut v = json!({"metadata": {"name": name},
            "spec": {"ports": [{"port": 80}]}});
        if let Some(ip) = ip {
            v["spec"]["clusterIP"] = json!(ip);
        }
        v
    }

    async fn create(s: &dyn RestStorage, v: Value) -> Result<Value, ApiError> {
        s.create(&ctx(), v, &CreateOptions::default()).await
    }

    #[tokio::test]
    async fn allocates_lowest_free_after_the_first() {
        let (_d, s) = fixture("10.0.0.0/24");
        create(&s, svc("kubernetes", Some("10.0.0.1")))
            .await
            .unwrap();
        let a = create(&s, svc("a", None)).await.unwrap();
        assert_eq!(a["spec"]["clusterIP"], "10.0.0.2");
        assert_eq!(a["spec"]["clusterIPs"], json!(["10.0.0.2"]));
        assert_eq!(a["spec"]["ipFamilies"], json!(["IPv4"]));
        assert_eq!(a["spec"]["ipFamilyPolicy"], "SingleStack");
        let b = create(&s, svc("b", None)).await.unwrap();
        assert_eq!(b["spec"]["clusterIP"], "10.0.0.3");
        let headless = create(&s, svc("h", Some("None"))).await.unwrap();
        assert_eq!(headless["spec"]["clusterIPs"], json!(["None"]));
    }

    #[tokio::test]
    async fn requested_ip_out_of_range_or_in_use_is_invalid() {
        let (_d, s) = fixture("10.0.0.0/24");
        create(&s, svc("a", Some("10.0.0.9"))).await.unwrap();
        let err = create(&s, svc("b", Some("10.0.0.9"))).await.unwrap_err();
        assert_eq!(err.code(), http::StatusCode::UNPROCESSABLE_ENTITY);
        assert!(
            err.to_string()
                .ends_with("failed to allocate IP 10.0.0.9: provided IP is already allocated"),
            "{err}"
        );
        let err = create(&s, svc("c", Some("10.1.0.5"))).await.unwrap_err();
        assert_eq!(err.code(), http::StatusCode::UNPROCESSABLE_ENTITY);
        assert!(err.to_string().contains(
            "the provided IP (10.1.0.5) is not in the valid range. The range of valid IPs is 10.0.0.0/24"
        ));
    }

    #[tokio::test]
    async fn create_through_update_allocates() {
        let (_d, s) = fixture("10.0.0.0/24");
        let s: &dyn RestStorage = &s;
        let (v, created) = s
            .update(
                &ctx(),
                "applied",
                Box::new(|_| Ok(svc("applied", None))),
                &UpdateOptions::default(),
                true,
            )
            .await
            .unwrap();
        assert!(created);
        assert_eq!(v["spec"]["clusterIP"], "10.0.0.2");
        // An update that omits the IP keeps it.
        let (v, _) = s
            .update(
                &ctx(),
                "applied",
                Box::new(|_| Ok(svc("applied", None))),
                &UpdateOptions::default(),
                false,
            )
            .await
            .unwrap();
        assert_eq!(v["spec"]["clusterIP"], "10.0.0.2");
    }

    #[tokio::test]
    async fn full_range_is_an_internal_error() {
        let (_d, s) = fixture("10.0.0.0/30");
        create(&s, svc("a", None)).await.unwrap();
        let err = create(&s, svc("b", None)).await.unwrap_err();
        assert_eq!(err.code(), http::StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(
            err.to_string(),
            "Internal error occurred: failed to allocate a serviceIP: range is full"
        );
    }

    #[test]
    fn range_parsing() {
        let r = ServiceRange::parse("10.96.0.7/12").unwrap();
        assert_eq!(r.to_string(), "10.96.0.0/12");
        assert_eq!(r.first(), Ipv4Addr::new(10, 96, 0, 1));
        assert!(ServiceRange::parse("10.0.0.0/8").is_err());
        assert!(ServiceRange::parse("nope").is_err());
    }
}
