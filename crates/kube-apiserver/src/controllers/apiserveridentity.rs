//! API server identity (upstream feature `APIServerIdentity`, on by default): each
//! kube-apiserver keeps a Lease in `kube-system` named after its ID, renewed every 10 s with a
//! one-hour duration (`start-kube-apiserver-identity-lease-controller`, upstream's
//! `component-helpers` lease controller), and every kube-apiserver deletes the identity
//! leases that expired (`start-kube-apiserver-identity-lease-garbage-collector`, upstream
//! `pkg/controlplane/controller/apiserverleasegc`).

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use apiserver::audit::event::micro_time;
use apiserver::registry::rest::{
    CreateOptions, DeleteOptions, GetOptions, ListOptions, RequestContext, RestStorage,
    UpdateOptions,
};
use apiserver::registry::store::Store;
use apiserver::server::hooks::PostStartHookFn;
use apiserver::status::{ApiError, reason};
use apiserver::util::gotime::parse_timestamp;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

/// The identity lease controller's hook.
pub const LEASE_HOOK_NAME: &str = "start-kube-apiserver-identity-lease-controller";
/// The garbage collector's hook.
pub const GC_HOOK_NAME: &str = "start-kube-apiserver-identity-lease-garbage-collector";
/// Where identity leases live.
pub const LEASE_NAMESPACE: &str = "kube-system";
/// The label marking an identity lease and naming its component (upstream
/// `IdentityLeaseComponentLabelKey`).
pub const IDENTITY_LABEL: &str = "apiserver.kubernetes.io/identity";
/// The component (upstream `KubeAPIServer`).
pub const COMPONENT: &str = "kube-apiserver";
/// `corev1.LabelHostname`.
pub const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";
/// Renewal attempts in a row before waiting for the next interval (upstream
/// `maxUpdateRetries`).
const MAX_UPDATE_RETRIES: usize = 5;
/// Jitter of the renew interval (upstream `wait.JitterUntil(…, 0.04, …)`).
const RENEW_JITTER: f64 = 0.04;

/// This host's name as Go's `os.Hostname` reads it on Linux.
pub fn hostname() -> Result<String, String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .map_err(|e| format!("error getting hostname for apiserver identity: {e}"))
}

/// The server's ID (upstream `Config.APIServerID`): `apiserver-` and the lower-case, unpadded
/// base32 of the first 16 bytes of the SHA-256 of the host name and the component name, each
/// preceded by its 16-bit big-endian length. Stable across restarts on the same host.
pub fn apiserver_id(hostname: &str) -> String {
    let mut data = Vec::with_capacity(hostname.len() + COMPONENT.len() + 4);
    for part in [hostname, COMPONENT] {
        let len = u16::try_from(part.len()).unwrap_or(u16::MAX);
        data.extend_from_slice(&len.to_be_bytes());
        data.extend_from_slice(&part.as_bytes()[..usize::from(len)]);
    }
    let hash = Sha256::digest(&data);
    let encoded = data_encoding::BASE32_NOPAD.encode(&hash[..16]);
    format!("apiserver-{}", encoded.to_ascii_lowercase())
}

fn context() -> RequestContext {
    RequestContext {
        namespace: LEASE_NAMESPACE.into(),
        ..Default::default()
    }
}

/// What the lease controller keeps.
#[derive(Clone, Debug)]
pub struct IdentityLease {
    /// The lease's name: the server's ID.
    pub name: String,
    /// `<ID>_<uuid>`: this run of the server.
    pub holder_identity: String,
    /// This host's name, the `kubernetes.io/hostname` label.
    pub hostname: String,
    /// `leaseDurationSeconds`.
    pub duration: Duration,
    /// How often it is renewed.
    pub renew_interval: Duration,
}

impl IdentityLease {
    /// The lease as it is written now: created with the holder and duration, renewed with a
    /// new `renewTime`; the identity and hostname labels set either way (upstream's
    /// `labelAPIServerHeartbeatFunc`).
    fn renewed(&self, current: Option<&Value>) -> Value {
        let mut lease = current.cloned().unwrap_or_else(|| {
            json!({
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.name, "namespace": LEASE_NAMESPACE},
                "spec": {
                    "holderIdentity": self.holder_identity,
                    "leaseDurationSeconds": self.duration.as_secs(),
                },
            })
        });
        lease["spec"]["renewTime"] = json!(micro_time(SystemTime::now()));
        if !lease["metadata"]["labels"].is_object() {
            lease["metadata"]["labels"] = json!({});
        }
        lease["metadata"]["labels"][IDENTITY_LABEL] = json!(COMPONENT);
        lease["metadata"]["labels"][HOSTNAME_LABEL] = json!(self.hostname);
        lease
    }

    /// One renewal (upstream `sync`): the lease updated from its current state, created when
    /// missing.
    async fn sync(&self, leases: &Store) -> Result<(), ApiError> {
        let ctx = context();
        let mut last = None;
        for _ in 0..MAX_UPDATE_RETRIES {
            let this = self.clone();
            let update = Box::new(move |current: Option<&Value>| Ok(this.renewed(current)));
            let result = leases
                .update(&ctx, &self.name, update, &UpdateOptions::default(), false)
                .await;
            match result {
                Ok(_) => return Ok(()),
                Err(err) if err.reason() == reason::NOT_FOUND => {
                    match leases
                        .create(&ctx, self.renewed(None), &CreateOptions::default())
                        .await
                    {
                        Ok(_) => return Ok(()),
                        Err(err) if err.reason() == reason::ALREADY_EXISTS => last = Some(err),
                        Err(err) => return Err(err),
                    }
                }
                Err(err) if err.reason() == reason::CONFLICT => last = Some(err),
                Err(err) => return Err(err),
            }
        }
        Err(last.unwrap_or_else(|| {
            ApiError::internal(format!(
                "failed {MAX_UPDATE_RETRIES} attempts to update lease"
            ))
        }))
    }

    /// Renews the lease every interval (with upstream's 4% jitter) until `stop`.
    async fn run(self, leases: Store, stop: CancellationToken) {
        loop {
            if let Err(err) = self.sync(&leases).await {
                tracing::error!(
                    "failed to update lease, error: {err}, will retry after {:?}",
                    self.renew_interval
                );
            }
            let jitter = 1.0 + rand_fraction() * RENEW_JITTER;
            tokio::select! {
                _ = stop.cancelled() => return,
                () = tokio::time::sleep(self.renew_interval.mul_f64(jitter)) => {}
            }
        }
    }

    /// `start-kube-apiserver-identity-lease-controller`.
    pub fn hook(self, leases: Store) -> PostStartHookFn {
        Arc::new(move |ctx| {
            tokio::spawn(self.clone().run(leases.clone(), ctx.stop));
            Box::pin(async { Ok(()) })
        })
    }
}

/// A number in `[0, 1)` from the clock's nanoseconds: jitter needs no better randomness.
fn rand_fraction() -> f64 {
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    f64::from(nanos) / 1e9
}

/// Whether an identity lease expired (upstream `isLeaseExpired`): no renew time or duration,
/// or renewed longer ago than its duration.
fn is_expired(lease: &Value, now: jiff::Timestamp) -> bool {
    let renewed = lease
        .pointer("/spec/renewTime")
        .and_then(Value::as_str)
        .and_then(parse_timestamp);
    let duration = lease
        .pointer("/spec/leaseDurationSeconds")
        .and_then(Value::as_i64);
    match (renewed, duration) {
        (Some(renewed), Some(seconds)) => renewed
            .checked_add(jiff::SignedDuration::from_secs(seconds))
            .is_ok_and(|deadline| deadline < now),
        _ => true,
    }
}

/// One collection (upstream `gc`): every expired identity lease of this component, checked
/// again on a fresh read before it is deleted (another server may have renewed or deleted it).
async fn collect(leases: &Store) {
    let ctx = context();
    let selector = format!("{IDENTITY_LABEL}={COMPONENT}");
    let listed = match leases
        .list(
            &ctx,
            &ListOptions {
                label_selector: selector,
                resource_version: "0".into(),
                ..Default::default()
            },
        )
        .await
    {
        Ok(list) => list,
        Err(err) => {
            tracing::error!("Error while listing apiserver leases: {err}");
            return;
        }
    };
    let now = jiff::Timestamp::now();
    for lease in listed
        .get("items")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if !is_expired(lease, now) {
            continue;
        }
        let Some(name) = lease.pointer("/metadata/name").and_then(Value::as_str) else {
            continue;
        };
        let fresh = match leases.get(&ctx, name, &GetOptions::default()).await {
            Ok(fresh) => fresh,
            Err(err) if err.reason() == reason::NOT_FOUND => {
                tracing::debug!("cannot find apiserver lease: {err}");
                continue;
            }
            Err(err) => {
                tracing::error!("Error getting lease: {err}");
                continue;
            }
        };
        if !is_expired(&fresh, jiff::Timestamp::now()) {
            continue;
        }
        match leases.delete(&ctx, name, &DeleteOptions::default()).await {
            Ok(_) => {}
            Err(err) if err.reason() == reason::NOT_FOUND => {
                tracing::debug!("apiserver lease is gone already: {err}");
            }
            Err(err) => tracing::error!("Error deleting lease: {err}"),
        }
    }
}

/// `start-kube-apiserver-identity-lease-garbage-collector`: collects every `period` until the
/// server stops.
pub fn gc_hook(leases: Store, period: Duration) -> PostStartHookFn {
    Arc::new(move |ctx| {
        let leases = leases.clone();
        tokio::spawn(async move {
            tracing::info!("Starting apiserver lease garbage collector");
            loop {
                tokio::select! {
                    _ = ctx.stop.cancelled() => break,
                    () = collect(&leases) => {}
                }
                tokio::select! {
                    _ = ctx.stop.cancelled() => break,
                    () = tokio::time::sleep(period) => {}
                }
            }
            tracing::info!("Shutting down apiserver lease garbage collector");
        });
        Box::pin(async { Ok(()) })
    })
}

/// Registers the identity lease controller and its garbage collector on `server`.
pub fn register(
    server: &apiserver::server::GenericApiServer,
    stores: &crate::install::Stores,
    id: &str,
    hostname: &str,
    intervals: &super::intervals::Intervals,
) -> Result<(), String> {
    let Some(leases) = stores
        .get(&("coordination.k8s.io".to_string(), "leases".to_string()))
        .cloned()
    else {
        // coordination.k8s.io/v1 turned off with --runtime-config: nowhere to keep them.
        return Ok(());
    };
    let lease = IdentityLease {
        name: id.to_string(),
        holder_identity: format!("{id}_{}", uuid::Uuid::new_v4()),
        hostname: hostname.to_string(),
        duration: intervals.identity_lease_duration,
        renew_interval: intervals.identity_lease_renew,
    };
    server
        .add_post_start_hook(LEASE_HOOK_NAME, lease.hook(leases.clone()))
        .map_err(|e| e.to_string())?;
    server
        .add_post_start_hook(GC_HOOK_NAME, gc_hook(leases, intervals.identity_lease_gc))
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_is_the_hash_of_the_host_name_and_component() {
        // sha256(00 0d "test-server-a" 00 0e "kube-apiserver"), first 16 bytes, base32.
        let id = apiserver_id("test-server-a");
        assert_eq!(id, "apiserver-tcwjsvs6hjq4qbwzx5rvp5fsqe");
        // 16 bytes in unpadded base32 are 26 characters, lower case.
        let hash = &id["apiserver-".len()..];
        assert_eq!(hash.len(), 26);
        assert!(
            hash.chars()
                .all(|c| c.is_ascii_lowercase() || ('2'..='7').contains(&c))
        );
        assert_eq!(id, apiserver_id("test-server-a"));
        assert_ne!(id, apiserver_id("test-server-b"));
    }

    #[test]
    fn renewing_keeps_the_holder_and_sets_the_labels_and_renew_time() {
        let lease = IdentityLease {
            name: "apiserver-abc".into(),
            holder_identity: "apiserver-abc_1".into(),
            hostname: "host-a".into(),
            duration: Duration::from_secs(3600),
            renew_interval: Duration::from_secs(10),
        };
        let created = lease.renewed(None);
        assert_eq!(created["spec"]["holderIdentity"], "apiserver-abc_1");
        assert_eq!(created["spec"]["leaseDurationSeconds"], 3600);
        assert_eq!(
            created["metadata"]["labels"],
            json!({"apiserver.kubernetes.io/identity": "kube-apiserver", "kubernetes.io/hostname": "host-a"})
        );
        let renew_time = created["spec"]["renewTime"].as_str().unwrap();
        assert!(parse_timestamp(renew_time).is_some(), "{renew_time}");
        let mut other = created.clone();
        other["spec"]["holderIdentity"] = json!("apiserver-abc_0");
        other["metadata"]["labels"] = json!({"x": "y"});
        let renewed = lease.renewed(Some(&other));
        assert_eq!(renewed["spec"]["holderIdentity"], "apiserver-abc_0");
        assert_eq!(renewed["metadata"]["labels"]["x"], "y");
        assert_eq!(
            renewed["metadata"]["labels"][IDENTITY_LABEL],
            "kube-apiserver"
        );
    }

    #[test]
    fn leases_past_their_duration_or_without_one_are_expired() {
        let now = jiff::Timestamp::now();
        let lease = |renew: jiff::Timestamp, seconds: i64| json!({"spec": {"renewTime": micro_time(SystemTime::from(renew)), "leaseDurationSeconds": seconds}});
        let ago = |s: i64| now.checked_sub(jiff::SignedDuration::from_secs(s)).unwrap();
        assert!(!is_expired(&lease(ago(10), 3600), now));
        assert!(is_expired(&lease(ago(20), 10), now));
        assert!(is_expired(
            &json!({"spec": {"leaseDurationSeconds": 10}}),
            now
        ));
        assert!(is_expired(
            &json!({"spec": {"renewTime": micro_time(SystemTime::now())}}),
            now
        ));
    }
}
