//! Reads and writes the `kubernetes` Service's Endpoints and EndpointSlice in `default`
//! (upstream `pkg/controlplane/reconcilers/endpointsadapter.go`): both list exactly the given
//! addresses with the given port; the Endpoints carry the skip-mirror label (the mirroring
//! controller leaves them alone), the EndpointSlice the service-name label; other slices of
//! the service are deleted.

use std::collections::BTreeSet;
use std::time::Duration;

use apiserver::registry::rest::{
    CreateOptions, DeleteOptions, GetOptions, ListOptions, RequestContext, RestStorage,
    UpdateOptions,
};
use apiserver::registry::store::Store;
use apiserver::status::{ApiError, reason};
use serde_json::{Value, json};

/// The Service (and Endpoints and EndpointSlice) name.
pub const SERVICE_NAME: &str = "kubernetes";
/// Its namespace.
pub const SERVICE_NAMESPACE: &str = "default";
/// `discovery.LabelSkipMirror`.
pub const LABEL_SKIP_MIRROR: &str = "endpointslice.kubernetes.io/skip-mirror";
/// `discovery.LabelServiceName`.
pub const LABEL_SERVICE_NAME: &str = "kubernetes.io/service-name";
/// The address type of the slice: the service range is IPv4 only here.
const ADDRESS_TYPE: &str = "IPv4";

/// client-go's `retry.DefaultBackoff`: 4 attempts, 10 ms growing fivefold.
const RETRY_STEPS: u32 = 4;
const RETRY_FIRST_DELAY: Duration = Duration::from_millis(10);

/// The port the endpoints list (upstream `createEndpointPortSpec`): `https`, TCP.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EndpointPort {
    /// The port name.
    pub name: String,
    /// The port.
    pub port: u16,
}

impl EndpointPort {
    /// The `https` port of the secure listener.
    pub fn https(port: u16) -> Self {
        EndpointPort {
            name: "https".into(),
            port,
        }
    }

    fn endpoints_json(&self) -> Value {
        json!([{"name": self.name, "port": self.port, "protocol": "TCP"}])
    }
}

/// The Endpoints and EndpointSlice stores.
#[derive(Clone)]
pub struct EndpointsAdapter {
    endpoints: Store,
    slices: Option<Store>,
}

fn context() -> RequestContext {
    RequestContext {
        namespace: SERVICE_NAMESPACE.into(),
        ..Default::default()
    }
}

/// Whether an error is worth another attempt (upstream `isRetriableError`): another
/// apiserver changed or created the object first.
fn retriable(err: &ApiError) -> bool {
    err.reason() == reason::CONFLICT || err.reason() == reason::ALREADY_EXISTS
}

/// Runs `attempt` until it succeeds, fails otherwise than [`retriable`], or the attempts run out.
async fn with_retries<F, Fut>(mut attempt: F) -> Result<(), ApiError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), ApiError>>,
{
    let mut delay = RETRY_FIRST_DELAY;
    let mut step = 1;
    loop {
        match attempt().await {
            Err(err) if retriable(&err) && step < RETRY_STEPS => {
                tokio::time::sleep(delay).await;
                delay *= 5;
                step += 1;
            }
            other => return other,
        }
    }
}

async fn get(store: &Store, name: &str) -> Result<Option<Value>, ApiError> {
    match store.get(&context(), name, &GetOptions::default()).await {
        Ok(obj) => Ok(Some(obj)),
        Err(err) if err.reason() == reason::NOT_FOUND => Ok(None),
        Err(err) => Err(err),
    }
}

/// Writes `desired` as the new version of `current` (which carries the resourceVersion read,
/// so a concurrent change is a conflict), or creates it when there was none.
async fn write(store: &Store, current: Option<&Value>, desired: Value) -> Result<(), ApiError> {
    let ctx = context();
    if current.is_none() {
        return store
            .create(&ctx, desired, &CreateOptions::default())
            .await
            .map(drop);
    }
    let name = desired
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let update = Box::new(move |_: Option<&Value>| Ok(desired.clone()));
    store
        .update(&ctx, &name, update, &UpdateOptions::default(), false)
        .await
        .map(drop)
}

impl EndpointsAdapter {
    /// The adapter over the Endpoints store and (when served) the EndpointSlice store.
    pub fn new(endpoints: Store, slices: Option<Store>) -> Self {
        EndpointsAdapter { endpoints, slices }
    }

    /// The addresses the Endpoints list now (upstream `EndpointsAdapter.Get`).
    pub async fn get(&self) -> Result<BTreeSet<String>, ApiError> {
        let Some(endpoints) = get(&self.endpoints, SERVICE_NAME).await? else {
            return Ok(BTreeSet::new());
        };
        let subsets = endpoints
            .get("subsets")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        Ok(match subsets.as_slice() {
            [subset] => addresses_of(subset),
            _ => BTreeSet::new(),
        })
    }

    /// Makes the Endpoints and the EndpointSlice list exactly `ips` (IPv4 ones, sorted); the
    /// port is set when missing, or when `reconcile_ports` and it differs (upstream `Sync`).
    pub async fn sync(
        &self,
        ips: &BTreeSet<String>,
        port: &EndpointPort,
        reconcile_ports: bool,
    ) -> Result<(), ApiError> {
        let sorted: Vec<&str> = ips
            .iter()
            .map(String::as_str)
            .filter(|ip| ip.parse::<std::net::Ipv4Addr>().is_ok())
            .collect();
        with_retries(|| self.sync_endpoints(&sorted, port, reconcile_ports)).await?;
        if let Some(slices) = &self.slices {
            with_retries(|| sync_slice(slices, &sorted, port, reconcile_ports)).await?;
        }
        Ok(())
    }

    async fn sync_endpoints(
        &self,
        ips: &[&str],
        port: &EndpointPort,
        reconcile_ports: bool,
    ) -> Result<(), ApiError> {
        let current = get(&self.endpoints, SERVICE_NAME).await?;
        let desired = desired_endpoints(current.as_ref(), ips, port, reconcile_ports);
        if let Some(current) = &current
            && current.get("subsets") == desired.get("subsets")
            && current.pointer("/metadata/labels") == desired.pointer("/metadata/labels")
        {
            return Ok(());
        }
        if current.is_some() {
            let subsets = desired.get("subsets").cloned().unwrap_or_default();
            tracing::warn!("Resetting endpoints for master service {SERVICE_NAME:?} to {subsets}");
        }
        write(&self.endpoints, current.as_ref(), desired).await
    }
}

/// The addresses of an Endpoints subset.
fn addresses_of(subset: &Value) -> BTreeSet<String> {
    subset
        .get("addresses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|a| a.get("ip").and_then(Value::as_str))
        .map(str::to_string)
        .collect()
}

/// `updateEndpoints`: the skip-mirror label only, one subset with the addresses, the port.
fn desired_endpoints(
    current: Option<&Value>,
    ips: &[&str],
    port: &EndpointPort,
    reconcile_ports: bool,
) -> Value {
    let mut endpoints = current.cloned().unwrap_or_else(|| {
        json!({
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": {"name": SERVICE_NAME, "namespace": SERVICE_NAMESPACE},
        })
    });
    endpoints["metadata"]["labels"] = json!({ LABEL_SKIP_MIRROR: "true" });
    let mut subset = match endpoints.get("subsets").and_then(Value::as_array) {
        Some(subsets) if subsets.len() == 1 => subsets[0].clone(),
        _ => json!({}),
    };
    let addresses: Vec<Value> = ips.iter().map(|ip| json!({"ip": ip})).collect();
    if addresses.is_empty() {
        if let Some(s) = subset.as_object_mut() {
            s.remove("addresses");
        }
    } else {
        subset["addresses"] = Value::Array(addresses);
    }
    let ports = port.endpoints_json();
    let current_ports = subset.get("ports").and_then(Value::as_array);
    if current_ports.is_none_or(Vec::is_empty) || (reconcile_ports && subset["ports"] != ports) {
        subset["ports"] = ports;
    }
    endpoints["subsets"] = json!([subset]);
    endpoints
}

/// `updateEndpointSlice`: the service-name label only, IPv4, one ready endpoint per address,
/// the port.
fn desired_slice(
    current: Option<&Value>,
    ips: &[&str],
    port: &EndpointPort,
    reconcile_ports: bool,
) -> Value {
    let mut slice = current.cloned().unwrap_or_else(|| {
        json!({
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {"name": SERVICE_NAME, "namespace": SERVICE_NAMESPACE},
        })
    });
    slice["metadata"]["labels"] = json!({ LABEL_SERVICE_NAME: SERVICE_NAME });
    slice["addressType"] = json!(ADDRESS_TYPE);
    slice["endpoints"] = Value::Array(
        ips.iter()
            .map(|ip| json!({"addresses": [ip], "conditions": {"ready": true}}))
            .collect(),
    );
    let ports = port.endpoints_json();
    let current_ports = slice.get("ports").and_then(Value::as_array);
    if current_ports.is_none_or(Vec::is_empty) || (reconcile_ports && slice["ports"] != ports) {
        slice["ports"] = ports;
    }
    slice
}

async fn sync_slice(
    slices: &Store,
    ips: &[&str],
    port: &EndpointPort,
    reconcile_ports: bool,
) -> Result<(), ApiError> {
    let listed = slices
        .list(
            &context(),
            &ListOptions {
                label_selector: format!("{LABEL_SERVICE_NAME}={SERVICE_NAME}"),
                ..Default::default()
            },
        )
        .await?;
    let mut primary = None;
    for slice in listed
        .get("items")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = slice
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if name == SERVICE_NAME
            && slice.get("addressType").and_then(Value::as_str) == Some(ADDRESS_TYPE)
        {
            primary = Some(slice.clone());
            continue;
        }
        // As far as this server is concerned, no other slice of the service should exist.
        match slices
            .delete(&context(), name, &DeleteOptions::default())
            .await
        {
            Ok(_) => {}
            Err(err) if err.reason() == reason::NOT_FOUND => {}
            Err(err) => return Err(err),
        }
    }
    let desired = desired_slice(primary.as_ref(), ips, port, reconcile_ports);
    if let Some(current) = &primary
        && current.get("endpoints") == desired.get("endpoints")
        && current.get("ports") == desired.get("ports")
        && current.pointer("/metadata/labels") == desired.pointer("/metadata/labels")
    {
        return Ok(());
    }
    write(slices, primary.as_ref(), desired).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_list_the_addresses_with_the_skip_mirror_label_and_keep_their_port() {
        let port = EndpointPort::https(6443);
        let created = desired_endpoints(None, &["10.0.0.1", "10.0.0.2"], &port, false);
        assert_eq!(
            created["metadata"],
            json!({"name": "kubernetes", "namespace": "default",
                   "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}})
        );
        assert_eq!(
            created["subsets"],
            json!([{"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}],
                    "ports": [{"name": "https", "port": 6443, "protocol": "TCP"}]}])
        );
        // A port changed by someone else stays unless ports are reconciled.
        let mut changed = created.clone();
        changed["subsets"][0]["ports"][0]["port"] = json!(1);
        changed["metadata"]["labels"]["extra"] = json!("x");
        let kept = desired_endpoints(Some(&changed), &["10.0.0.1"], &port, false);
        assert_eq!(kept["subsets"][0]["ports"][0]["port"], 1);
        assert_eq!(kept["subsets"][0]["addresses"], json!([{"ip": "10.0.0.1"}]));
        assert_eq!(kept["metadata"]["labels"], created["metadata"]["labels"]);
        let reset = desired_endpoints(Some(&changed), &["10.0.0.1"], &port, true);
        assert_eq!(reset["subsets"][0]["ports"][0]["port"], 6443);
        // Several subsets are one again.
        changed["subsets"] = json!([{"addresses": [{"ip": "1.1.1.1"}]}, {}]);
        let one = desired_endpoints(Some(&changed), &["10.0.0.3"], &port, false);
        assert_eq!(
            one["subsets"],
            json!([{"addresses": [{"ip": "10.0.0.3"}],
                    "ports": [{"name": "https", "port": 6443, "protocol": "TCP"}]}])
        );
    }

    #[test]
    fn the_slice_lists_ready_endpoints_with_the_service_name_label() {
        let slice = desired_slice(None, &["10.0.0.2"], &EndpointPort::https(443), false);
        assert_eq!(
            slice,
            json!({
                "apiVersion": "discovery.k8s.io/v1",
                "kind": "EndpointSlice",
                "metadata": {"name": "kubernetes", "namespace": "default",
                             "labels": {"kubernetes.io/service-name": "kubernetes"}},
                "addressType": "IPv4",
                "endpoints": [{"addresses": ["10.0.0.2"], "conditions": {"ready": true}}],
                "ports": [{"name": "https", "port": 443, "protocol": "TCP"}],
            })
        );
    }
}
