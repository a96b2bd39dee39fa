//! Benchmark (ignored by default; `cargo test -p kube-apiserver --test crd_bench -- --ignored
//! --nocapture`): custom-resource create/get/list throughput against configmaps' on one HTTP/2
//! connection, and the resident memory each installed CRD costs. Goals: custom resources within
//! 80% of configmaps, under 1 MB per CRD.

mod common;

use std::time::Instant;

use common::client::{Client, Proto};
use common::{ApiServer, eventually};
use http::Method;

const OBJECTS: usize = 300;
const CRDS: usize = 50;

fn crd(i: usize) -> String {
    format!(
        r#"{{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
        "metadata":{{"name":"things{i}.bench.example.com"}},
        "spec":{{"group":"bench.example.com","scope":"Namespaced",
          "names":{{"plural":"things{i}","kind":"Thing{i}"}},
          "versions":[{{"name":"v1","served":true,"storage":true,
            "schema":{{"openAPIV3Schema":{{"type":"object","properties":{{
              "data":{{"type":"object","additionalProperties":{{"type":"string"}}}}}}}}}}}}]}}}}"#
    )
}

fn rss_kib(pid: i32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap()
}

async fn post(client: &Client, conn: &mut common::client::Conn, path: &str, body: &str) -> u16 {
    let mut req = client.request(Method::POST, path, body);
    req.headers_mut()
        .insert("content-type", "application/json".parse().unwrap());
    conn.send(req).await.unwrap().status.as_u16()
}

/// Creates, gets and lists `OBJECTS` objects at `collection`; returns ops/s of each phase.
async fn run(client: &Client, collection: &str, api_version: &str, kind: &str) -> [f64; 3] {
    let mut conn = client.connect(Proto::H2).await.unwrap();
    let start = Instant::now();
    for i in 0..OBJECTS {
        let body = format!(
            r#"{{"apiVersion":"{api_version}","kind":"{kind}","metadata":{{"name":"o{i}"}},"data":{{"k":"v{i}"}}}}"#
        );
        assert_eq!(post(client, &mut conn, collection, &body).await, 201);
    }
    let create = OBJECTS as f64 / start.elapsed().as_secs_f64();
    let start = Instant::now();
    for i in 0..OBJECTS {
        let reply = conn
            .send(client.request(Method::GET, &format!("{collection}/o{i}"), ""))
            .await
            .unwrap();
        assert_eq!(reply.status, 200);
    }
    let get = OBJECTS as f64 / start.elapsed().as_secs_f64();
    let lists = 30;
    let start = Instant::now();
    for _ in 0..lists {
        let reply = conn
            .send(client.request(Method::GET, collection, ""))
            .await
            .unwrap();
        assert_eq!(reply.status, 200);
    }
    let list = f64::from(lists) / start.elapsed().as_secs_f64();
    [create, get, list]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark"]
async fn custom_resources_against_configmaps() {
    let server = ApiServer::start(&[]).await;
    let client = server.admin_client();
    let mut conn = client.connect(Proto::H2).await.unwrap();
    assert_eq!(
        post(
            &client,
            &mut conn,
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &crd(0)
        )
        .await,
        201
    );
    eventually("served", || async {
        let r = client
            .get(Proto::H1, "/apis/bench.example.com/v1/things0")
            .await
            .ok()?;
        (r.status == 200).then_some(())
    })
    .await;
    let cm = run(
        &client,
        "/api/v1/namespaces/default/configmaps",
        "v1",
        "ConfigMap",
    )
    .await;
    let cr = run(
        &client,
        "/apis/bench.example.com/v1/namespaces/default/things0",
        "bench.example.com/v1",
        "Thing0",
    )
    .await;
    for (phase, (a, b)) in ["create", "get", "list"]
        .iter()
        .zip(cm.iter().zip(cr.iter()))
    {
        println!(
            "{phase}: configmaps {a:.0}/s, custom resources {b:.0}/s ({:.0}%)",
            b / a * 100.0
        );
    }

    let before = rss_kib(server.pid());
    for i in 1..=CRDS {
        assert_eq!(
            post(
                &client,
                &mut conn,
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                &crd(i)
            )
            .await,
            201
        );
    }
    eventually("all served", || async {
        let r = client
            .get(
                Proto::H1,
                &format!("/apis/bench.example.com/v1/things{CRDS}"),
            )
            .await
            .ok()?;
        (r.status == 200).then_some(())
    })
    .await;
    let after = rss_kib(server.pid());
    println!(
        "memory: {} KiB for {CRDS} CRDs, {} KiB per CRD",
        after.saturating_sub(before),
        after.saturating_sub(before) / CRDS as u64
    );
}
