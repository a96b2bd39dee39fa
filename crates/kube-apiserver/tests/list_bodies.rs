//! End-to-end: a LIST written from the stored bytes of its items (compact and `?pretty`)
//! carries the same objects as GETs of each of them, with Go's HTML escaping, over HTTP/1.1
//! and HTTP/2, from the watch cache and consistent, paged and filtered.

mod common;

use common::ApiServer;
use common::client::{Client, Proto, Reply};
use http::{Method, StatusCode};
use serde_json::{Value, json};

async fn send(client: &Client, proto: Proto, method: Method, path: &str, body: &str) -> Reply {
    let mut req = client.request(method, path, body);
    req.headers_mut()
        .insert("content-type", "application/json".parse().unwrap());
    req.headers_mut()
        .insert("accept", "application/json".parse().unwrap());
    client.send(proto, req).await.unwrap()
}

fn parse(reply: &Reply) -> Value {
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    serde_json::from_str(&reply.body).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn list_items_equal_their_gets_compact_and_pretty_with_go_escaping() {
    let mut server = ApiServer::start(&[]).await;
    let admin = server.admin_client();
    let base = "/api/v1/namespaces/default/configmaps";
    for (name, app, value) in [
        ("a", "web", "<b>&amp;</b>"),
        ("b", "db", "ü\u{2028}x"),
        ("c", "web", "plain"),
    ] {
        let cm = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "labels": {"app": app}},
            "data": {"value": value},
        });
        let reply = send(&admin, Proto::H2, Method::POST, base, &cm.to_string()).await;
        assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    }
    for proto in [Proto::H1, Proto::H2] {
        let mut gets = Vec::new();
        for name in ["a", "b", "c"] {
            gets.push(parse(
                &send(&admin, proto, Method::GET, &format!("{base}/{name}"), "").await,
            ));
        }
        for query in ["", "?resourceVersion=0"] {
            let reply = send(&admin, proto, Method::GET, &format!("{base}{query}"), "").await;
            let list = parse(&reply);
            assert_eq!(list["kind"], "ConfigMapList");
            assert_eq!(list["apiVersion"], "v1");
            assert!(list["metadata"]["resourceVersion"].as_str().is_some());
            assert_eq!(list["items"].as_array().unwrap(), &gets, "{query}");
            // One line, as Go's encoder writes it, with <, > and & escaped.
            assert_eq!(reply.body.matches('\n').count(), 1, "{}", reply.body);
            assert!(reply.body.ends_with("}\n"));
            assert!(
                reply
                    .body
                    .contains(r#"\u003cb\u003e\u0026amp;\u003c/b\u003e"#)
            );
            assert!(reply.body.contains(r#"\u2028"#));

            let pretty = send(
                &admin,
                proto,
                Method::GET,
                &format!("{base}?pretty=true"),
                "",
            )
            .await;
            assert_eq!(parse(&pretty), list);
            assert!(
                pretty
                    .body
                    .starts_with("{\n  \"apiVersion\": \"v1\",\n  \"items\": [\n    {")
            );
            assert!(pretty.body.contains(r#"\u003cb\u003e"#));
        }

        // Pages pin one revision; the last page has no continue token.
        let first = parse(&send(&admin, proto, Method::GET, &format!("{base}?limit=2"), "").await);
        assert_eq!(first["items"].as_array().unwrap(), &gets[..2]);
        assert_eq!(first["metadata"]["remainingItemCount"], 1);
        let token = first["metadata"]["continue"].as_str().unwrap();
        let rest = parse(
            &send(
                &admin,
                proto,
                Method::GET,
                &format!("{base}?limit=2&continue={token}"),
                "",
            )
            .await,
        );
        assert_eq!(rest["items"].as_array().unwrap(), &gets[2..]);
        assert!(rest["metadata"].get("continue").is_none());
        assert_eq!(
            rest["metadata"]["resourceVersion"],
            first["metadata"]["resourceVersion"]
        );

        let web = parse(
            &send(
                &admin,
                proto,
                Method::GET,
                &format!("{base}?labelSelector=app%3Dweb"),
                "",
            )
            .await,
        );
        let names: Vec<&str> = web["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["a", "c"]);
    }
    server.stop().await;
}
