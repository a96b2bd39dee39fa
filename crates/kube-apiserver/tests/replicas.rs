//! Several kube-apiserver replicas on one real etcd, each on its own loopback address: the
//! `kubernetes` Service's Endpoints and EndpointSlice list exactly the live replicas (a replica
//! leaves them in its pre-shutdown hook, or when its master lease expires after a kill -9),
//! API server identity leases are renewed and expired ones collected, and a watch on a replica
//! that stops resumes on another from its last resourceVersion without a gap.
//!
//! The intervals are shortened with the test-only environment variables (upstream shortens
//! the same constants in its integration tests).

mod common;

use std::collections::BTreeMap;
use std::process::Command;

use http::Method;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use common::client::{Client, Proto};
use common::etcd::EtcdServer;
use common::{ApiServer, DEADLINE, eventually, free_port, run_to_exit, run_tool};

/// Reconcile every second; master leases live three seconds (etcd's shortest lease is ~2 s).
const FAST_ENDPOINTS: [(&str, &str); 2] = [
    ("APISERVER_TEST_ENDPOINT_RECONCILER_INTERVAL", "1s"),
    ("APISERVER_TEST_MASTER_LEASE_TTL", "3s"),
];

/// A replica serving on `ip:port`, advertising `ip`, on `etcd`.
async fn replica(etcd: &EtcdServer, ip: &str, port: u16, extra: &[&str]) -> ApiServer {
    let mut builder = ApiServer::builder()
        .bind_address(ip)
        .args([
            format!("--etcd-servers={}", etcd.url()),
            format!("--advertise-address={ip}"),
            format!("--secure-port={port}"),
        ])
        .args(extra.iter().copied());
    for (name, value) in FAST_ENDPOINTS {
        builder = builder.env(name, value);
    }
    builder.start().await
}

/// Runs kubectl 1.35 against `server` with its admin kubeconfig; `None` when it fails.
async fn kubectl(server: &ApiServer, args: &[&str]) -> Option<String> {
    let home = tempfile::tempdir().unwrap();
    let kubeconfig = server.kubeconfig();
    let mut full = vec!["--kubeconfig", kubeconfig.to_str().unwrap()];
    full.extend_from_slice(args);
    let out = run_tool("kubectl-1.35", home.path(), &full).await;
    (out.code == Some(0)).then_some(out.stdout)
}

/// The addresses the `kubernetes` Endpoints list, as kubectl prints them.
async fn endpoint_ips(server: &ApiServer) -> Option<String> {
    kubectl(
        server,
        &[
            "get",
            "endpoints",
            "kubernetes",
            "-o",
            "jsonpath={.subsets[*].addresses[*].ip}",
        ],
    )
    .await
}

/// The addresses of the `kubernetes` EndpointSlice(s), as kubectl prints them.
async fn slice_ips(server: &ApiServer) -> Option<String> {
    kubectl(
        server,
        &[
            "get",
            "endpointslices",
            "-l",
            "kubernetes.io/service-name=kubernetes",
            "-o",
            "jsonpath={.items[*].endpoints[*].addresses[*]}",
        ],
    )
    .await
}

/// Waits until both the Endpoints and the EndpointSlice list exactly `want`.
async fn wait_endpoints(server: &ApiServer, want: &str) {
    eventually(
        &format!("the kubernetes endpoints to be {want:?}"),
        || async {
            let endpoints = endpoint_ips(server).await?;
            let slices = slice_ips(server).await?;
            (endpoints == want && slices == want).then_some(())
        },
    )
    .await;
}

/// The master lease keys in etcd, read with etcdctl.
fn master_lease_keys(etcd: &EtcdServer) -> Vec<String> {
    let out = Command::new("etcdctl")
        .env("ETCDCTL_API", "3")
        .args([
            &format!("--endpoints={}", etcd.url()),
            "get",
            "/registry/masterleases/",
            "--prefix",
            "--keys-only",
        ])
        .output()
        .expect("etcdctl (installed with etcd)");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kubernetes_endpoints_list_exactly_the_live_replicas() {
    let etcd = EtcdServer::start().await;
    // One port for all: the endpoints carry a single port for every address.
    let port = free_port();
    let one = replica(&etcd, "127.0.0.1", port, &[]).await;
    let mut two = replica(&etcd, "127.0.0.2", port, &["--shutdown-delay-duration=5s"]).await;
    let mut three = replica(&etcd, "127.0.0.3", port, &[]).await;

    wait_endpoints(&one, "127.0.0.1 127.0.0.2 127.0.0.3").await;
    // Every replica sees the same objects, and they carry upstream's labels and port.
    assert_eq!(
        endpoint_ips(&three).await.as_deref(),
        Some("127.0.0.1 127.0.0.2 127.0.0.3")
    );
    let endpoints: Value = serde_json::from_str(
        &kubectl(&two, &["get", "endpoints", "kubernetes", "-o", "json"])
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        endpoints["metadata"]["labels"],
        json!({"endpointslice.kubernetes.io/skip-mirror": "true"})
    );
    assert_eq!(
        endpoints["subsets"][0]["ports"],
        json!([{"name": "https", "port": port, "protocol": "TCP"}])
    );
    let slice: Value = serde_json::from_str(
        &kubectl(&one, &["get", "endpointslice", "kubernetes", "-o", "json"])
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(slice["addressType"], "IPv4");
    assert_eq!(
        slice["metadata"]["labels"],
        json!({"kubernetes.io/service-name": "kubernetes"})
    );
    assert_eq!(slice["endpoints"][0]["conditions"]["ready"], true);
    assert_eq!(
        slice["ports"],
        json!([{"name": "https", "port": port, "protocol": "TCP"}])
    );
    let service = kubectl(
        &one,
        &[
            "get",
            "service",
            "kubernetes",
            "-o",
            "jsonpath={.spec.clusterIP} {.spec.ports[0].port} {.spec.ports[0].targetPort}",
        ],
    )
    .await;
    assert_eq!(service, Some(format!("10.0.0.1 443 {port}")));
    let mut keys = master_lease_keys(&etcd);
    keys.sort();
    assert_eq!(
        keys,
        [
            "/registry/masterleases/127.0.0.1",
            "/registry/masterleases/127.0.0.2",
            "/registry/masterleases/127.0.0.3"
        ]
    );

    // Discovery names the advertise address, and the Service to clients in the service range.
    let api = |headers: &'static [(&'static str, &'static str)]| {
        let client = two.admin_client();
        async move {
            let req = client.request_with(Method::GET, "/api", headers);
            let reply = client.send(Proto::H1, req).await.unwrap();
            let api: Value = serde_json::from_str(&reply.body).unwrap();
            api["serverAddressByClientCIDRs"].clone()
        }
    };
    assert_eq!(
        api(&[]).await,
        json!([{"clientCIDR": "0.0.0.0/0", "serverAddress": format!("127.0.0.2:{port}")}])
    );
    assert_eq!(
        api(&[("x-forwarded-for", "10.0.0.7")]).await,
        json!([
            {"clientCIDR": "0.0.0.0/0", "serverAddress": format!("127.0.0.2:{port}")},
            {"clientCIDR": "10.0.0.0/24", "serverAddress": "10.0.0.1:443"}
        ])
    );

    // The Service is created again when deleted.
    kubectl(&three, &["delete", "service", "kubernetes"])
        .await
        .expect("delete the kubernetes service");
    eventually("the kubernetes service to be back", || async {
        kubectl(&one, &["get", "service", "kubernetes", "-o", "name"]).await
    })
    .await;

    // SIGTERM: the replica leaves the endpoints at once, while it still serves through its
    // shutdown delay (its listener is open, /livez passes, /readyz fails).
    two.sigterm();
    wait_endpoints(&one, "127.0.0.1 127.0.0.3").await;
    let still = two.admin_client();
    let livez = still.get(Proto::H1, "/livez").await.unwrap();
    assert_eq!(livez.status, 200, "{livez:?}");
    let readyz = still.get(Proto::H1, "/readyz").await.unwrap();
    assert_eq!(readyz.status, 500, "{readyz:?}");
    assert!(
        two.stderr
            .find("Shutting down kubernetes service endpoint reconciler")
            .is_some()
    );

    // kill -9: nothing runs on the way out; the master lease expires and the others drop it.
    three.signal(libc::SIGKILL);
    three.wait_exit().await;
    wait_endpoints(&one, "127.0.0.1").await;
    assert_eq!(
        master_lease_keys(&etcd),
        ["/registry/masterleases/127.0.0.1"]
    );

    let status = two.wait_exit().await;
    assert_eq!(
        status.code(),
        Some(0),
        "{}",
        two.stderr.snapshot().join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identity_leases_are_renewed_and_expired_ones_collected() {
    let server = ApiServer::builder()
        .env("APISERVER_TEST_IDENTITY_LEASE_RENEW_INTERVAL", "1s")
        .env("APISERVER_TEST_IDENTITY_LEASE_GC_PERIOD", "1s")
        .start()
        .await;
    let readyz = kubectl(&server, &["get", "--raw", "/readyz?verbose"])
        .await
        .unwrap();
    for hook in [
        "bootstrap-controller",
        "start-kube-apiserver-identity-lease-controller",
        "start-kube-apiserver-identity-lease-garbage-collector",
    ] {
        assert!(
            readyz.contains(&format!("[+]poststarthook/{hook} ok")),
            "{hook}: {readyz}"
        );
    }
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let identity = |renew: &str| -> Option<(String, String)> {
        let lease: Value = serde_json::from_str(renew).ok()?;
        let items = lease["items"].as_array()?;
        let [lease] = items.as_slice() else {
            return None;
        };
        Some((
            lease["metadata"]["name"].as_str()?.to_string(),
            lease["spec"]["renewTime"].as_str()?.to_string(),
        ))
    };
    let list = || async {
        kubectl(
            &server,
            &[
                "get",
                "leases",
                "-n",
                "kube-system",
                "-l",
                "apiserver.kubernetes.io/identity=kube-apiserver",
                "-o",
                "json",
            ],
        )
        .await
    };
    let (name, first_renew) =
        eventually("the identity lease", || async { identity(&list().await?) }).await;
    assert!(name.starts_with("apiserver-"), "{name}");
    let lease: Value = serde_json::from_str(
        &kubectl(
            &server,
            &["get", "lease", "-n", "kube-system", &name, "-o", "json"],
        )
        .await
        .unwrap(),
    )
    .unwrap();
    assert_eq!(
        lease["metadata"]["labels"]["kubernetes.io/hostname"],
        hostname.trim()
    );
    assert_eq!(lease["spec"]["leaseDurationSeconds"], 3600);
    let holder = lease["spec"]["holderIdentity"].as_str().unwrap();
    assert!(holder.starts_with(&format!("{name}_")), "{holder}");
    // Renewed: the renew time moves on.
    eventually("the identity lease to be renewed", || async {
        let (_, renew) = identity(&list().await?)?;
        (renew > first_renew).then_some(())
    })
    .await;

    // The garbage collector deletes expired identity leases only.
    let manifests = tempfile::tempdir().unwrap();
    let leases = manifests.path().join("leases.yaml");
    let lease = |name: &str, identity: bool, renew: &str| {
        let labels = if identity {
            "\n  labels:\n    apiserver.kubernetes.io/identity: kube-apiserver"
        } else {
            ""
        };
        format!(
            "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: {name}\n  namespace: kube-system{labels}\nspec:\n  holderIdentity: {name}_x\n  leaseDurationSeconds: 10\n  renewTime: \"{renew}\"\n"
        )
    };
    std::fs::write(
        &leases,
        [
            lease("apiserver-gone", true, "2020-01-01T00:00:00.000000Z"),
            lease("apiserver-live", true, "2099-01-01T00:00:00.000000Z"),
            lease("not-an-identity", false, "2020-01-01T00:00:00.000000Z"),
        ]
        .join("---\n"),
    )
    .unwrap();
    kubectl(&server, &["apply", "-f", leases.to_str().unwrap()])
        .await
        .expect("apply the leases");
    eventually("the expired identity lease to be collected", || async {
        let out = kubectl(
            &server,
            &["get", "leases", "-n", "kube-system", "-o", "name"],
        )
        .await?;
        (!out.contains("lease.coordination.k8s.io/apiserver-gone\n")).then_some(out)
    })
    .await;
    let left = kubectl(
        &server,
        &["get", "leases", "-n", "kube-system", "-o", "name"],
    )
    .await
    .unwrap();
    for kept in ["apiserver-live", "not-an-identity", name.as_str()] {
        assert!(
            left.contains(&format!("lease.coordination.k8s.io/{kept}\n")),
            "{left}"
        );
    }
}

/// One watch event: its type, the object's name and resourceVersion.
type Seen = (String, String, u64);

/// Opens a watch on `path` from `rv` and forwards each complete event; the channel closes when
/// the stream ends (a partial last line is dropped, as a client would).
async fn watch(client: &Client, path: &str, rv: u64) -> mpsc::UnboundedReceiver<Seen> {
    let mut conn = client.connect(Proto::H1).await.unwrap();
    let response = conn
        .send_head(client.request(
            Method::GET,
            &format!("{path}?watch=1&resourceVersion={rv}&allowWatchBookmarks=true"),
            "",
        ))
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut body = response.into_body();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let _conn = conn;
        let mut buffer = Vec::new();
        while let Some(Ok(frame)) = body.frame().await {
            let Ok(data) = frame.into_data() else {
                continue;
            };
            buffer.extend_from_slice(&data);
            while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = buffer.drain(..=end).collect();
                let Ok(event) = serde_json::from_slice::<Value>(&line) else {
                    continue;
                };
                let meta = &event["object"]["metadata"];
                let rv = meta["resourceVersion"]
                    .as_str()
                    .and_then(|r| r.parse().ok())
                    .unwrap_or(0);
                let name = meta["name"].as_str().unwrap_or_default().to_string();
                let kind = event["type"].as_str().unwrap_or_default().to_string();
                if tx.send((kind, name, rv)).is_err() {
                    return;
                }
            }
        }
    });
    rx
}

/// Creates configmap `name` through `client`; its resourceVersion.
async fn create_configmap(client: &Client, name: &str) -> u64 {
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}});
    let mut req = client.request(
        Method::POST,
        "/api/v1/namespaces/default/configmaps",
        &body.to_string(),
    );
    req.headers_mut()
        .insert("content-type", "application/json".parse().unwrap());
    let reply = client.send(Proto::H1, req).await.unwrap();
    assert_eq!(reply.status, 201, "{reply:?}");
    let created: Value = serde_json::from_str(&reply.body).unwrap();
    created["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_resumes_on_another_replica_from_its_last_resource_version_without_a_gap() {
    let etcd = EtcdServer::start().await;
    let mut a = replica(&etcd, "127.0.0.1", 0, &[]).await;
    let b = replica(&etcd, "127.0.0.2", 0, &[]).await;
    let (client_a, client_b) = (a.admin_client(), b.admin_client());
    let configmaps = "/api/v1/namespaces/default/configmaps";

    // A write through one replica is read and watched through the other.
    let list = client_b.get(Proto::H1, configmaps).await.unwrap();
    let list: Value = serde_json::from_str(&list.body).unwrap();
    let listed = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let mut on_b = watch(&client_b, configmaps, listed).await;
    let first = create_configmap(&client_a, "first").await;
    let read = client_b
        .get(Proto::H1, &format!("{configmaps}/first"))
        .await
        .unwrap();
    assert_eq!(read.status, 200, "{read:?}");
    let seen = tokio::time::timeout(DEADLINE, async {
        loop {
            match on_b.recv().await {
                Some((kind, name, rv)) if kind == "ADDED" && name == "first" => return rv,
                Some(_) => continue,
                None => panic!("the watch on B ended"),
            }
        }
    })
    .await
    .expect("B's watch sees A's write");
    assert_eq!(seen, first);
    drop(on_b);

    // A watch on A from `first`: ten writes through B reach it; ten more are made while A
    // stops, ten after it is gone.
    let mut on_a = watch(&client_a, configmaps, first).await;
    let mut written = BTreeMap::new();
    for i in 0..10 {
        let name = format!("cm-{i:02}");
        written.insert(name.clone(), vec![create_configmap(&client_b, &name).await]);
    }
    let mut events: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let mut last = first;
    let mut writer = None;
    while let Some((kind, name, rv)) = tokio::time::timeout(DEADLINE, on_a.recv())
        .await
        .expect("A's watch moves")
    {
        if kind == "ADDED" {
            assert!(rv > last, "{name} at {rv} after {last}");
            events.entry(name).or_default().push(rv);
        }
        if kind == "ADDED" || kind == "BOOKMARK" {
            last = last.max(rv);
        }
        if events.len() == 10 && writer.is_none() {
            a.sigterm();
            let client_b = client_b.clone();
            writer = Some(tokio::spawn(async move {
                let mut written = BTreeMap::new();
                for i in 10..20 {
                    let name = format!("cm-{i:02}");
                    written.insert(name.clone(), vec![create_configmap(&client_b, &name).await]);
                }
                written
            }));
        }
    }
    let writer = writer.expect("A's watch ended before A was stopped");
    let status = a.wait_exit().await;
    assert_eq!(status.code(), Some(0));
    written.extend(writer.await.unwrap());
    for i in 20..30 {
        let name = format!("cm-{i:02}");
        written.insert(name.clone(), vec![create_configmap(&client_b, &name).await]);
    }

    // Resumed on B from the last resourceVersion A delivered: every write exactly once, in
    // order.
    let mut on_b = watch(&client_b, configmaps, last).await;
    while events.len() < written.len() {
        let (kind, name, rv) = tokio::time::timeout(DEADLINE, on_b.recv())
            .await
            .unwrap_or_else(|_| panic!("B's watch stalls; seen {:?}", events.keys()))
            .expect("B's watch ends");
        if kind == "ADDED" {
            assert!(
                rv > last,
                "{name} at {rv} after {last}: a duplicate or out of order"
            );
            last = rv;
            events.entry(name).or_default().push(rv);
        }
    }
    assert_eq!(events, written);
    assert!(
        events.contains_key("cm-29"),
        "the resumed watch delivered the writes made after A stopped"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_replica_flags_stop_start_up_with_upstreams_messages() {
    for (args, message) in [
        (
            &["--endpoint-reconciler-type=leases"][..],
            "Error: Reconciler not implemented: leases",
        ),
        (
            &["--apiserver-count=0"][..],
            "Error: --apiserver-count should be a positive number, but value '0' provided",
        ),
        (
            &["--advertise-address=::1"][..],
            "Error: service IP family \"10.0.0.0/24\" must match public address family \"::1\"",
        ),
        (
            &["--advertise-address=not-an-ip"][..],
            "Error: invalid value 'not-an-ip' for '--advertise-address",
        ),
    ] {
        let out = run_to_exit(args).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with(message), "{args:?}: {stderr}");
    }
    // `none` with an IPv6 address is accepted, as upstream (no endpoints to keep).
    let server =
        ApiServer::start(&["--endpoint-reconciler-type=none", "--advertise-address=::1"]).await;
    assert!(server.stderr.find("Using reconciler: none").is_some());
}
