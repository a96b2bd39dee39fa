//! `--authorization-mode=Node` through the real binary: a kubelet identity (a client
//! certificate for `system:node:<name>` in `system:nodes`, signed by the cluster CA) reads
//! the secrets of the pods bound to its node, and nothing else.

mod common;

use apiserver::server::serving::kubeconfig::write_admin_kubeconfig;
use apiserver::server::serving::selfsigned::{GeneratedCert, new_client_cert};
use common::client::{Client, Proto};
use common::{ApiServer, eventually, run_tool};
use http::Method;
use serde_json::{Value, json};

/// A kubelet certificate for `node`, signed by the server's CA.
fn node_cert(server: &ApiServer, node: &str) -> GeneratedCert {
    let pki = server.pki();
    let ca_cert = std::fs::read_to_string(pki.join("ca.crt")).unwrap();
    let ca_key = std::fs::read_to_string(pki.join("ca.key")).unwrap();
    let key = rcgen::KeyPair::from_pem(&ca_key).unwrap();
    let issuer = rcgen::Issuer::from_ca_cert_pem(&ca_cert, key).unwrap();
    new_client_cert(
        &issuer,
        &format!("system:node:{node}"),
        Some("system:nodes"),
    )
    .unwrap()
}

/// A client presenting a kubelet certificate for `node`.
fn node_client(server: &ApiServer, node: &str) -> Client {
    let cert = node_cert(server, node);
    server
        .anonymous_client()
        .with_identity(&cert.cert_pem, &cert.key_pem)
}

/// A kubeconfig for a kubelet of `node`, as kubectl (a client-go client like the kubelet)
/// uses it.
fn node_kubeconfig(server: &ApiServer, node: &str) -> std::path::PathBuf {
    let cert = node_cert(server, node);
    let ca = std::fs::read(server.pki().join("ca.crt")).unwrap();
    let path = server.data_dir.join(format!("{node}.kubeconfig"));
    write_admin_kubeconfig(
        &path,
        &format!("https://127.0.0.1:{}", server.addr.port()),
        &ca,
        cert.cert_pem.as_bytes(),
        cert.key_pem.as_bytes(),
    )
    .unwrap();
    path
}

async fn send(client: &Client, method: Method, path: &str, body: &Value) -> (u16, Value) {
    let text = if body.is_null() {
        String::new()
    } else {
        body.to_string()
    };
    let mut req = client.request(method, path, &text);
    req.headers_mut()
        .insert("content-type", "application/json".parse().unwrap());
    let reply = client.send(Proto::H1, req).await.unwrap();
    let value = serde_json::from_str(&reply.body).unwrap_or(Value::Null);
    (reply.status.as_u16(), value)
}

async fn create(client: &Client, path: &str, body: Value) {
    let (status, reply) = send(client, Method::POST, path, &body).await;
    assert_eq!(status, 201, "{path}: {reply}");
}

async fn status_of(client: &Client, path: &str) -> (u16, Value) {
    send(client, Method::GET, path, &Value::Null).await
}

const SECRETS: &str = "/api/v1/namespaces/default/secrets";

#[tokio::test(flavor = "multi_thread")]
async fn a_node_reads_the_secret_of_a_pod_bound_to_it_until_the_pod_is_deleted() {
    let mut server = ApiServer::start(&["--authorization-mode=Node"]).await;
    let admin = server.admin_client();
    for name in ["used", "unused"] {
        create(
            &admin,
            SECRETS,
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
                   "data": {"k": "dg=="}}),
        )
        .await;
    }
    create(
        &admin,
        "/api/v1/namespaces/default/persistentvolumeclaims",
        json!({
            "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "claim"},
            "spec": {"accessModes": ["ReadWriteOnce"],
                     "resources": {"requests": {"storage": "1Gi"}}, "volumeName": "pv1"}
        }),
    )
    .await;
    for (pv, claim) in [("pv1", "claim"), ("pv2", "elsewhere")] {
        create(
            &admin,
            "/api/v1/persistentvolumes",
            json!({
                "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv},
                "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                         "hostPath": {"path": "/tmp"},
                         "claimRef": {"namespace": "default", "name": claim}}
            }),
        )
        .await;
    }
    create(
        &admin,
        "/api/v1/namespaces/default/pods",
        json!({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p1"},
            "spec": {
                "nodeName": "n1",
                "containers": [{"name": "c", "image": "busybox"}],
                "volumes": [
                    {"name": "s", "secret": {"secretName": "used"}},
                    {"name": "data", "persistentVolumeClaim": {"claimName": "claim"}}
                ]
            }
        }),
    )
    .await;

    let n1 = node_client(&server, "n1");
    let n2 = node_client(&server, "n2");
    let used = format!("{SECRETS}/used");
    // The graph follows the pod through an informer: allowed once it has seen it.
    eventually("n1 reads the secret of its pod", || async {
        (status_of(&n1, &used).await.0 == 200).then_some(())
    })
    .await;

    let (status, body) = status_of(&n1, &format!("{SECRETS}/unused")).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(
        body["message"],
        "secrets \"unused\" is forbidden: User \"system:node:n1\" cannot get resource \"secrets\" \
         in API group \"\" in the namespace \"default\": no relationship found between node 'n1' \
         and this object"
    );
    let (status, body) = status_of(&n2, &used).await;
    assert_eq!(status, 403, "{body}");
    // kubectl with the kubelet's credentials sees the same (raw requests: discovery is RBAC's
    // to allow, and only the Node authorizer runs here).
    let kubeconfig = node_kubeconfig(&server, "n1").display().to_string();
    let kubectl = |args: &'static [&'static str]| {
        let kubeconfig = kubeconfig.clone();
        let home = server.data_dir.clone();
        async move {
            let mut all = vec!["--kubeconfig", kubeconfig.as_str()];
            all.extend_from_slice(args);
            run_tool("kubectl-1.35", &home, &all).await
        }
    };
    let out = kubectl(&["get", "--raw", "/api/v1/namespaces/default/secrets/used"]).await;
    assert_eq!(out.code, Some(0), "{out:?}");
    let secret: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(secret["metadata"]["name"], "used");
    let out = kubectl(&["get", "--raw", "/api/v1/namespaces/default/secrets/unused"]).await;
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr.contains(
            "Error from server (Forbidden): secrets \"unused\" is forbidden: User \"system:node:n1\" \
             cannot get resource \"secrets\" in API group \"\" in the namespace \"default\": no \
             relationship found between node 'n1' and this object"
        ),
        "{out:?}"
    );
    // Listing secrets is not reading one the graph knows.
    let (status, body) = status_of(&n1, SECRETS).await;
    assert_eq!(status, 403, "{body}");
    // The pod's claim and the volume bound to it, not another volume.
    eventually("n1 reads the volume of its pod's claim", || async {
        (status_of(&n1, "/api/v1/persistentvolumes/pv1").await.0 == 200).then_some(())
    })
    .await;
    let (status, body) = status_of(
        &n1,
        "/api/v1/namespaces/default/persistentvolumeclaims/claim",
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = status_of(&n1, "/api/v1/persistentvolumes/pv2").await;
    assert_eq!(status, 403, "{body}");
    // What every node may do, from the static node rules.
    let (status, body) = status_of(&n1, "/api/v1/services").await;
    assert_eq!(status, 200, "{body}");

    let (status, body) = send(
        &admin,
        Method::DELETE,
        "/api/v1/namespaces/default/pods/p1",
        &json!({"gracePeriodSeconds": 0}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    eventually("the secret is unreadable once the pod is gone", || async {
        (status_of(&n1, &used).await.0 == 403).then_some(())
    })
    .await;
    server.stop().await;
}
