//! The storage conformance suite: upstream's `pkg/storage/testing/store_tests.go` scenarios
//! (and the watch scenarios of `watcher_tests.go`), ported as functions over a `&dyn Storage`
//! so every backend, and the watch cache over each, runs the same checks.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::StatusCode;

use super::*;

pub mod etcd_server;

/// How long a test waits for an expected event before failing.
pub const EVENT_TIMEOUT: Duration = Duration::from_secs(20);

/// Which optional behaviours the store under test has.
#[derive(Clone, Copy, Debug)]
pub struct Caps {
    /// A watch from a compacted revision fails with 410 (false for the watch cache, which may
    /// still hold the window).
    pub watch_compaction_410: bool,
}

/// A pod-like object.
pub fn pod(ns: &str, name: &str, labels: &[(&str, &str)]) -> Bytes {
    pod_with(ns, name, labels, "")
}

/// A pod-like object with a `spec.note` to tell versions apart.
pub fn pod_with(ns: &str, name: &str, labels: &[(&str, &str)], note: &str) -> Bytes {
    let labels: serde_json::Map<String, serde_json::Value> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), serde_json::Value::String(v.to_string())))
        .collect();
    let v = serde_json::json!({
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"name": name, "namespace": ns, "uid": format!("uid-{name}"), "labels": labels},
        "spec": {"note": note},
    });
    Bytes::from(serde_json::to_vec(&v).unwrap())
}

fn note(obj: &Object) -> String {
    let v: serde_json::Value = serde_json::from_slice(&obj.value).unwrap();
    v["spec"]["note"].as_str().unwrap_or_default().to_string()
}

fn name_of(obj: &Object) -> String {
    obj.key.rsplit('/').next().unwrap_or_default().to_string()
}

fn rv_in_json(obj: &Object) -> u64 {
    versioner::object_resource_version(&obj.value).unwrap()
}

fn all(_prefix: &str) -> ListOptions {
    ListOptions {
        recursive: true,
        ..Default::default()
    }
}

fn names(list: &ListResult) -> Vec<String> {
    list.items.iter().map(name_of).collect()
}

/// Waits for the next event (failing after [`EVENT_TIMEOUT`]).
pub async fn next_event(w: &mut WatchStream) -> WatchEvent {
    match tokio::time::timeout(EVENT_TIMEOUT, w.next()).await {
        Ok(Some(ev)) => ev,
        Ok(None) => panic!("watch ended unexpectedly"),
        Err(_) => panic!("no watch event within {EVENT_TIMEOUT:?}"),
    }
}

/// Waits for the next non-bookmark event.
pub async fn next_change(w: &mut WatchStream) -> WatchEvent {
    loop {
        match next_event(w).await {
            WatchEvent::Bookmark { .. } => continue,
            ev => return ev,
        }
    }
}

fn describe(ev: &WatchEvent) -> String {
    match ev {
        WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => {
            format!("{} {} @{}", ev.type_name(), name_of(o), o.resource_version)
        }
        WatchEvent::Bookmark {
            resource_version, ..
        } => format!("BOOKMARK @{resource_version}"),
        WatchEvent::Error(e) => format!("ERROR {} {}", e.code(), e.0.message),
    }
}

async fn expect_change(w: &mut WatchStream, kind: &str, name: &str) -> Object {
    let ev = next_change(w).await;
    let d = describe(&ev);
    match ev {
        WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o)
            if d.starts_with(kind) && name_of(&o) == name =>
        {
            assert_eq!(rv_in_json(&o), o.resource_version, "{d}");
            o
        }
        _ => panic!("expected {kind} {name}, got {d}"),
    }
}

/// `RunTestCreate` / `RunTestCreateWithKeyExist`.
pub async fn create(s: &Arc<dyn Storage>, p: &str, _caps: Caps) {
    let key = format!("{p}ns/foo");
    let out = s.create(&key, pod("ns", "foo", &[])).await.unwrap();
    assert!(out.resource_version > 0);
    assert_eq!(rv_in_json(&out), out.resource_version);
    let got = s.get(&key, GetOptions::default()).await.unwrap().unwrap();
    assert_eq!(got, out);
    let err = s.create(&key, pod("ns", "foo", &[])).await.unwrap_err();
    assert!(matches!(err, StorageError::KeyExists { .. }), "{err:?}");
    let api = err.to_api_error(Operation::Create, "", "pods", "foo");
    assert_eq!(api.code(), StatusCode::CONFLICT);
    // An object carrying a resourceVersion is refused, as upstream.
    let with_rv = versioner::set_resource_version(&pod("ns", "bar", &[]), 5).unwrap();
    assert!(s.create(&format!("{p}ns/bar"), with_rv).await.is_err());
}

/// `RunTestGet`.
pub async fn get(s: &Arc<dyn Storage>, p: &str, _caps: Caps) {
    let key = format!("{p}ns/foo");
    let missing = s.get(&key, GetOptions::default()).await.unwrap_err();
    assert!(missing.is_not_found(), "{missing:?}");
    let ignored = s
        .get(
            &key,
            GetOptions {
                ignore_not_found: true,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(ignored.is_none());
    let created = s
        .create(&key, pod_with("ns", "foo", &[], "v1"))
        .await
        .unwrap();
    let mut f = |cur: Option<&Object>| {
        let _ = cur;
        Ok(pod_with("ns", "foo", &[], "v2"))
    };
    let updated = s
        .guaranteed_update(&key, false, None, &mut f)
        .await
        .unwrap();
    assert!(updated.resource_version > created.resource_version);
    for rv in [
        &created.resource_version.to_string(),
        &updated.resource_version.to_string(),
        "",
        "0",
    ] {
        let got = s
            .get(
                &key,
                GetOptions {
                    resource_version: rv.to_string(),
                    ..Default::default()
                },
            )
            .await
            .unwrap()
            .unwrap();
        // Get with a resourceVersion means "not older than": the latest is fine.
        assert!(got.resource_version >= created.resource_version, "rv {rv}");
        if rv.is_empty() {
            assert_eq!(got, updated);
        }
    }
    let too_new = (updated.resource_version + 1000).to_string();
    let err = s
        .get(
            &key,
            GetOptions {
                resource_version: too_new,
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, StorageError::TooLargeResourceVersion { .. }),
        "{err:?}"
    );
    let api = err.to_api_error(Operation::Get, "", "pods", "foo");
    assert_eq!(api.code(), StatusCode::GATEWAY_TIMEOUT);
    let err = s
        .get(
            &key,
            GetOptions {
                resource_version: "abc".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap_err();
    let api = err.to_api_error(Operation::Get, "", "pods", "foo");
    assert!(api.code().is_client_error(), "{api:?}");
}

/// `RunTestUnconditionalDelete`, `RunTestConditionalDelete`, `RunTestDeleteWithConflict`.
pub async fn delete(s: &Arc<dyn Storage>, p: &str, _caps: Caps) {
    let key = format!("{p}ns/foo");
    let err = s.delete(&key, None, None).await.unwrap_err();
    assert!(err.is_not_found());
    let created = s.create(&key, pod("ns", "foo", &[])).await.unwrap();
    // Wrong UID: 409 and nothing deleted.
    let bad = Preconditions {
        uid: Some("other".into()),
        resource_version: None,
    };
    let err = s.delete(&key, Some(bad), None).await.unwrap_err();
    assert!(matches!(err, StorageError::InvalidObj { .. }), "{err:?}");
    assert_eq!(
        err.to_api_error(Operation::Delete, "", "pods", "foo")
            .code(),
        StatusCode::CONFLICT
    );
    // Wrong resourceVersion precondition.
    let bad = Preconditions {
        uid: None,
        resource_version: Some("1".into()),
    };
    if created.resource_version != 1 {
        assert!(s.delete(&key, Some(bad), None).await.is_err());
    }
    // A failing validation aborts the delete.
    let refuse = |_: &Object| -> Result<()> { Err(StorageError::BadRequest("no".into())) };
    assert!(s.delete(&key, None, Some(&refuse)).await.is_err());
    let good = Preconditions {
        uid: Some("uid-foo".into()),
        resource_version: Some(created.resource_version.to_string()),
    };
    let deleted = s.delete(&key, Some(good), None).await.unwrap();
    assert!(deleted.resource_version > created.resource_version);
    assert_eq!(rv_in_json(&deleted), deleted.resource_version);
    assert!(
        s.get(&key, GetOptions::default())
            .await
            .unwrap_err()
            .is_not_found()
    );
    assert!(s.delete(&key, None, None).await.unwrap_err().is_not_found());
}

/// `RunTestGuaranteedUpdate`, `…WithConflict`, `…ChecksStoredData`.
pub async fn guaranteed_update(s: &Arc<dyn Storage>, p: &str, _caps: Caps) {
    let key = format!("{p}ns/foo");
    // Missing object without ignoreNotFound: NotFound.
    let mut f = |_: Option<&Object>| Ok(pod_with("ns", "foo", &[], "x"));
    let err = s
        .guaranteed_update(&key, false, None, &mut f)
        .await
        .unwrap_err();
    assert!(err.is_not_found());
    // With ignoreNotFound: created.
    let mut f = |cur: Option<&Object>| {
        assert!(cur.is_none());
        Ok(pod_with("ns", "foo", &[], "0"))
    };
    let first = s.guaranteed_update(&key, true, None, &mut f).await.unwrap();
    // A no-op update keeps the revision.
    let mut same = |cur: Option<&Object>| Ok(cur.unwrap().value.clone());
    let noop = s
        .guaranteed_update(&key, false, None, &mut same)
        .await
        .unwrap();
    assert_eq!(noop.resource_version, first.resource_version);
    // Precondition on UID.
    let bad = Preconditions {
        uid: Some("nope".into()),
        resource_version: None,
    };
    let mut f = |_: Option<&Object>| Ok(pod_with("ns", "foo", &[], "y"));
    let err = s
        .guaranteed_update(&key, false, Some(bad), &mut f)
        .await
        .unwrap_err();
    assert_eq!(
        err.to_api_error(Operation::Update, "", "pods", "foo")
            .code(),
        StatusCode::CONFLICT
    );
    // The update function's error is returned unchanged.
    let mut fail = |_: Option<&Object>| -> Result<Bytes> {
        Err(StorageError::Api(crate::status::ApiError::bad_request(
            "nope",
        )))
    };
    let err = s
        .guaranteed_update(&key, false, None, &mut fail)
        .await
        .unwrap_err();
    assert!(matches!(err, StorageError::Api(_)));
    // Concurrent read-modify-write increments all land (conflicts are retried).
    let tasks = 8;
    let per = 5;
    let mut handles = Vec::new();
    let shared: Arc<dyn Storage> = s.clone();
    for _ in 0..tasks {
        let s = shared.clone();
        let key = key.clone();
        handles.push(tokio::spawn(async move {
            for _ in 0..per {
                let mut inc = |cur: Option<&Object>| {
                    let n: u64 = note(cur.unwrap()).parse().unwrap_or(0);
                    Ok(pod_with("ns", "foo", &[], &(n + 1).to_string()))
                };
                s.guaranteed_update(&key, false, None, &mut inc)
                    .await
                    .unwrap();
            }
        }));
    }
    for h in handles {
        h.await.unwrap();
    }
    let got = s.get(&key, GetOptions::default()).await.unwrap().unwrap();
    assert_eq!(note(&got), (tasks * per).to_string());
}

/// Upstream's `cachedExistingObject`: an update given a stale copy of the object still applies
/// to the current object, and a no-op or a failed precondition against the stale copy is
/// decided again on a fresh read. (Backends that ignore the copy pass trivially.)
pub async fn guaranteed_update_cached(s: &Arc<dyn Storage>, p: &str, _caps: Caps) {
    let key = format!("{p}ns/cached");
    let v1 = s
        .create(&key, pod_with("ns", "cached", &[], "1"))
        .await
        .unwrap();
    let mut to_2 = |_: Option<&Object>| Ok(pod_with("ns", "cached", &[], "2"));
    let v2 = s
        .guaranteed_update(&key, false, None, &mut to_2)
        .await
        .unwrap();
    let inc = |cur: Option<&Object>| {
        let n: u64 = note(cur.unwrap()).parse().unwrap_or(0);
        Ok(pod_with("ns", "cached", &[], &(n + 1).to_string()))
    };
    // From the stale copy (note 1) the increment still lands on the current object (note 2).
    let mut f = inc;
    let v3 = s
        .guaranteed_update_cached(&key, false, None, &mut f, Some(v1.clone()))
        .await
        .unwrap();
    assert_eq!(note(&v3), "3");
    assert!(v3.resource_version > v2.resource_version);
    // Writing v1's content back changes nothing against the stale copy, but does against
    // the current object.
    let mut back = |_: Option<&Object>| Ok(v1.value.clone());
    let v4 = s
        .guaranteed_update_cached(&key, false, None, &mut back, Some(v1.clone()))
        .await
        .unwrap();
    assert_eq!(note(&v4), "1");
    assert!(v4.resource_version > v3.resource_version);
    // A resourceVersion precondition the current object meets and the stale copy does not.
    let pre = Preconditions {
        uid: None,
        resource_version: Some(v4.resource_version.to_string()),
    };
    let mut f = inc;
    let v5 = s
        .guaranteed_update_cached(&key, false, Some(pre), &mut f, Some(v2.clone()))
        .await
        .unwrap();
    assert_eq!(note(&v5), "2");
    let got = s.get(&key, GetOptions::default()).await.unwrap().unwrap();
    assert_eq!(got.resource_version, v5.resource_version);
}

/// `RunTestList`, `RunTestListResourceVersionMatch`, `RunTestGetListNonRecursive`.
pub async fn list(s: &Arc<dyn Storage>, p: &str, _caps: Caps) {
    let a = s
        .create(&format!("{p}ns/a"), pod_with("ns", "a", &[("l", "x")], "1"))
        .await
        .unwrap();
    let _b = s
        .create(&format!("{p}ns/b"), pod_with("ns", "b", &[("l", "y")], "1"))
        .await
        .unwrap();
    // An object outside the prefix, sharing its beginning.
    s.create(
        &format!("{}x/other", p.trim_end_matches('/')),
        pod("x", "other", &[]),
    )
    .await
    .unwrap();
    let mut f = |_: Option<&Object>| Ok(pod_with("ns", "a", &[("l", "x")], "2"));
    let a2 = s
        .guaranteed_update(&format!("{p}ns/a"), false, None, &mut f)
        .await
        .unwrap();
    let c = s
        .create(&format!("{p}other/c"), pod("other", "c", &[("l", "x")]))
        .await
        .unwrap();

    // Consistent list: everything, at the latest revision.
    let l = s.list(p, all(p)).await.unwrap();
    assert_eq!(names(&l), ["a", "b", "c"]);
    assert!(l.resource_version >= c.resource_version);
    assert_eq!(note(&l.items[0]), "2");
    // NotOlderThan the last write: complete (a cache waits until it caught up).
    let fresh = s
        .list(
            p,
            ListOptions {
                resource_version: c.resource_version.to_string(),
                resource_version_match: ResourceVersionMatch::NotOlderThan,
                ..all(p)
            },
        )
        .await
        .unwrap();
    assert_eq!(names(&fresh), ["a", "b", "c"]);
    // resourceVersion=0: any state is fine (a watch cache whose storage reports progress
    // ahead of events, as etcd 3.4 can, answered the read above from the storage); it is
    // consistent with its revision, and soon complete.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let l0 = s
            .list(
                p,
                ListOptions {
                    resource_version: "0".into(),
                    ..all(p)
                },
            )
            .await
            .unwrap();
        let complete = names(&l0) == ["a", "b", "c"];
        if !complete {
            // Not complete yet: then it is a state before `c`.
            assert!(l0.resource_version < c.resource_version, "{:?}", names(&l0));
        }
        if complete {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the cache never caught up"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // NotOlderThan an old revision.
    let lno = s
        .list(
            p,
            ListOptions {
                resource_version: a.resource_version.to_string(),
                resource_version_match: ResourceVersionMatch::NotOlderThan,
                ..all(p)
            },
        )
        .await
        .unwrap();
    assert!(lno.resource_version >= a.resource_version);
    // Exact: the snapshot as of that revision.
    let lex = s
        .list(
            p,
            ListOptions {
                resource_version: a.resource_version.to_string(),
                resource_version_match: ResourceVersionMatch::Exact,
                ..all(p)
            },
        )
        .await
        .unwrap();
    assert_eq!(names(&lex), ["a"]);
    assert_eq!(lex.resource_version, a.resource_version);
    assert_eq!(note(&lex.items[0]), "1");
    let lex2 = s
        .list(
            p,
            ListOptions {
                resource_version: a2.resource_version.to_string(),
                resource_version_match: ResourceVersionMatch::Exact,
                ..all(p)
            },
        )
        .await
        .unwrap();
    assert_eq!(names(&lex2), ["a", "b"]);
    assert_eq!(note(&lex2.items[0]), "2");
    // Too new.
    let err = s
        .list(
            p,
            ListOptions {
                resource_version: (c.resource_version + 1000).to_string(),
                resource_version_match: ResourceVersionMatch::NotOlderThan,
                ..all(p)
            },
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, StorageError::TooLargeResourceVersion { .. }),
        "{err:?}"
    );
    // Label selector and field selector.
    let sel = ListOptions {
        predicate: SelectionPredicate::new(
            LabelSelector::parse("l=x").unwrap(),
            FieldSelector::everything(),
        ),
        ..all(p)
    };
    assert_eq!(names(&s.list(p, sel).await.unwrap()), ["a", "c"]);
    let sel = ListOptions {
        predicate: SelectionPredicate::new(
            LabelSelector::parse("l=x").unwrap(),
            FieldSelector::parse("metadata.namespace=ns").unwrap(),
        ),
        ..all(p)
    };
    assert_eq!(names(&s.list(p, sel).await.unwrap()), ["a"]);
    // Non-recursive list of one key.
    let one = s
        .list(&format!("{p}ns/b"), ListOptions::default())
        .await
        .unwrap();
    assert_eq!(names(&one), ["b"]);
    let none = s
        .list(&format!("{p}ns/zzz"), ListOptions::default())
        .await
        .unwrap();
    assert!(none.items.is_empty());
    // Bad resourceVersion: 400.
    let err = s
        .list(
            p,
            ListOptions {
                resource_version: "x1".into(),
                ..all(p)
            },
        )
        .await
        .unwrap_err();
    assert_eq!(
        err.to_api_error(Operation::List, "", "pods", "").code(),
        StatusCode::BAD_REQUEST
    );
    // Count.
    assert_eq!(s.count(p).await.unwrap(), 3);
}

/// `RunTestListContinuation`, `RunTestListContinuationWithFilter`, `RunTestListPaging`, and
/// pagination consistency across concurrent writes.
pub async fn pagination(s: &Arc<dyn Storage>, p: &str, _caps: Caps) {
    for i in 0..10 {
        let label = if i % 3 == 0 { "yes" } else { "no" };
        s.create(
            &format!("{p}ns/p{i:02}"),
            pod_with("ns", &format!("p{i:02}"), &[("pick", label)], "orig"),
        )
        .await
        .unwrap();
    }
    let mut opts = ListOptions { limit: 3, ..all(p) };
    let first = s.list(p, opts.clone()).await.unwrap();
    assert_eq!(names(&first), ["p00", "p01", "p02"]);
    assert_eq!(first.remaining_item_count, Some(7));
    let token = first.continue_token.clone().expect("continue token");
    // Writes between pages do not show: every page is the first page's snapshot.
    let mut f = |_: Option<&Object>| Ok(pod_with("ns", "p05", &[("pick", "no")], "changed"));
    s.guaranteed_update(&format!("{p}ns/p05"), false, None, &mut f)
        .await
        .unwrap();
    s.delete(&format!("{p}ns/p04"), None, None).await.unwrap();
    s.create(&format!("{p}ns/p03a"), pod("ns", "p03a", &[]))
        .await
        .unwrap();
    // And a writer keeps changing objects while the pages are read.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let churn = {
        let (s, p, stop) = (s.clone(), p.to_string(), stop.clone());
        tokio::spawn(async move {
            let mut n = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                n += 1;
                let name = format!("p{:02}", n % 10);
                let pick = if n % 10 % 3 == 0 { "yes" } else { "no" };
                let mut f = |_: Option<&Object>| {
                    Ok(pod_with(
                        "ns",
                        &name,
                        &[("pick", pick)],
                        &format!("churn{n}"),
                    ))
                };
                let _ = s
                    .guaranteed_update(&format!("{p}ns/{name}"), true, None, &mut f)
                    .await;
            }
        })
    };
    let mut seen = names(&first);
    let mut token = Some(token);
    while let Some(t) = token {
        opts.continue_token = t;
        let page = s.list(p, opts.clone()).await.unwrap();
        assert_eq!(page.resource_version, first.resource_version);
        for item in &page.items {
            assert_eq!(note(item), "orig");
        }
        seen.extend(names(&page));
        token = page.continue_token;
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    churn.await.unwrap();
    let want: Vec<String> = (0..10).map(|i| format!("p{i:02}")).collect();
    assert_eq!(seen, want);
    // With a filter: pages hold only matches, and all matches are seen once.
    let mut filtered = ListOptions {
        limit: 2,
        predicate: SelectionPredicate::new(
            LabelSelector::parse("pick=yes").unwrap(),
            FieldSelector::everything(),
        ),
        ..all(p)
    };
    let mut seen = Vec::new();
    loop {
        let page = s.list(p, filtered.clone()).await.unwrap();
        assert!(page.items.len() <= 2);
        assert_eq!(page.remaining_item_count, None);
        seen.extend(names(&page));
        match page.continue_token {
            Some(t) => filtered.continue_token = t,
            None => break,
        }
    }
    assert_eq!(seen, ["p00", "p03", "p06", "p09"]);
    // Forged or mismatched tokens: 400.
    for bad in [
        "garbage",
        "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MCwic3RhcnQiOiJhIn0",
    ] {
        let err = s
            .list(
                p,
                ListOptions {
                    continue_token: bad.into(),
                    limit: 1,
                    ..all(p)
                },
            )
            .await
            .unwrap_err();
        assert_eq!(
            err.to_api_error(Operation::List, "", "pods", "").code(),
            StatusCode::BAD_REQUEST,
            "{bad}"
        );
    }
    let t = first.continue_token.clone().unwrap();
    let err = s
        .list(
            p,
            ListOptions {
                continue_token: t,
                resource_version: "5".into(),
                limit: 1,
                ..all(p)
            },
        )
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "specifying resource version is not allowed when using continue"
    );
}

/// `RunTestCompactRevision`, `RunTestListInconsistentContinuation`: compaction → 410.
pub async fn compaction(s: &Arc<dyn Storage>, p: &str, caps: Caps) {
    for i in 0..4 {
        s.create(&format!("{p}ns/c{i}"), pod("ns", &format!("c{i}"), &[]))
            .await
            .unwrap();
    }
    let page = s.list(p, ListOptions { limit: 2, ..all(p) }).await.unwrap();
    let old_rv = page.resource_version;
    for i in 0..3 {
        let mut f = move |_: Option<&Object>| Ok(pod_with("ns", "c0", &[], &i.to_string()));
        s.guaranteed_update(&format!("{p}ns/c0"), false, None, &mut f)
            .await
            .unwrap();
    }
    let current = s.current_revision().await.unwrap();
    s.compact(current).await.unwrap();
    assert!(s.compacted_revision() >= current);
    // Exact list of a compacted revision: 410 Expired.
    let err = s
        .list(
            p,
            ListOptions {
                resource_version: old_rv.to_string(),
                resource_version_match: ResourceVersionMatch::Exact,
                ..all(p)
            },
        )
        .await
        .unwrap_err();
    let api = err.to_api_error(Operation::List, "", "pods", "");
    assert_eq!(api.code(), StatusCode::GONE, "{api:?}");
    assert_eq!(api.0.message, errors::LIST_EXPIRED_MESSAGE);
    // Continue token of a compacted revision: 410 with a fresh token that works.
    let err = s
        .list(
            p,
            ListOptions {
                continue_token: page.continue_token.clone().unwrap(),
                limit: 2,
                ..all(p)
            },
        )
        .await
        .unwrap_err();
    let api = err.to_api_error(Operation::List, "", "pods", "");
    assert_eq!(api.code(), StatusCode::GONE);
    assert_eq!(api.0.message, errors::INCONSISTENT_CONTINUE_MESSAGE);
    let fresh = api.0.metadata.continue_.clone();
    assert!(!fresh.is_empty());
    let rest = s
        .list(
            p,
            ListOptions {
                continue_token: fresh,
                limit: 10,
                ..all(p)
            },
        )
        .await
        .unwrap();
    assert_eq!(names(&rest), ["c2", "c3"]);
    // Reads of the current state still work.
    assert_eq!(s.list(p, all(p)).await.unwrap().items.len(), 4);
    if caps.watch_compaction_410 {
        let mut w = s
            .watch(
                p,
                ListOptions {
                    resource_version: old_rv.to_string(),
                    ..all(p)
                },
            )
            .await
            .unwrap();
        match next_event(&mut w).await {
            WatchEvent::Error(e) => assert_eq!(e.code(), StatusCode::GONE),
            ev => panic!("expected a 410 error, got {}", describe(&ev)),
        }
    }
    // Compacting again at or below the compacted revision is refused.
    assert!(s.compact(current).await.is_err());
}

/// Watch from every kind of resourceVersion (`RunTestWatch*`, `RunTestWatchFromZero`,
/// `RunTestWatchFromNonZero`, `RunTestDeleteTriggerWatch`).
pub async fn watch(s: &Arc<dyn Storage>, p: &str, _caps: Caps) {
    let a = s
        .create(&format!("{p}ns/a"), pod("ns", "a", &[]))
        .await
        .unwrap();
    // rv "" and "0": initial state as ADDED, then changes.
    for (rv, initial) in [("", &["a"][..]), ("0", &["a", "w0"][..])] {
        let mut w = s
            .watch(
                p,
                ListOptions {
                    resource_version: rv.into(),
                    ..all(p)
                },
            )
            .await
            .unwrap();
        for name in initial {
            expect_change(&mut w, "ADDED", name).await;
        }
        let key = format!("{p}ns/w{}", rv.len());
        s.create(&key, pod("ns", &format!("w{}", rv.len()), &[]))
            .await
            .unwrap();
        expect_change(&mut w, "ADDED", &format!("w{}", rv.len())).await;
    }
    // rv N: exactly the changes after N, in order.
    let mut w = s
        .watch(
            p,
            ListOptions {
                resource_version: a.resource_version.to_string(),
                ..all(p)
            },
        )
        .await
        .unwrap();
    expect_change(&mut w, "ADDED", "w0").await;
    expect_change(&mut w, "ADDED", "w1").await;
    let mut f = |_: Option<&Object>| Ok(pod_with("ns", "a", &[], "m"));
    let m = s
        .guaranteed_update(&format!("{p}ns/a"), false, None, &mut f)
        .await
        .unwrap();
    let got = expect_change(&mut w, "MODIFIED", "a").await;
    assert_eq!(got.resource_version, m.resource_version);
    let d = s.delete(&format!("{p}ns/a"), None, None).await.unwrap();
    let got = expect_change(&mut w, "DELETED", "a").await;
    assert_eq!(got.resource_version, d.resource_version);
    assert_eq!(note(&got), "m");
    // A single key.
    let mut one = s
        .watch(
            &format!("{p}ns/w0"),
            ListOptions {
                resource_version: d.resource_version.to_string(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    s.create(&format!("{p}ns/w00"), pod("ns", "w00", &[]))
        .await
        .unwrap();
    s.delete(&format!("{p}ns/w0"), None, None).await.unwrap();
    expect_change(&mut one, "DELETED", "w0").await;
    // Revisions strictly increase on a watch.
    let mut w = s
        .watch(
            p,
            ListOptions {
                resource_version: "1".into(),
                ..all(p)
            },
        )
        .await;
    if let Ok(w) = &mut w {
        let mut last = 0;
        for _ in 0..3 {
            match next_event(w).await {
                WatchEvent::Error(_) => break,
                ev => {
                    assert!(ev.resource_version() > last, "{}", describe(&ev));
                    last = ev.resource_version();
                }
            }
        }
    }
    // Garbage resourceVersion.
    match s
        .watch(
            p,
            ListOptions {
                resource_version: "x".into(),
                ..all(p)
            },
        )
        .await
    {
        Err(e) => assert!(
            e.to_api_error(Operation::Watch, "", "pods", "")
                .code()
                .is_client_error()
        ),
        Ok(_) => panic!("watch with a garbage resourceVersion must fail"),
    }
}

/// Selector filtering on watch: leaving the selector is DELETED, entering it ADDED
/// (`RunTestWatchWithFilter` / `TestWatchFiltering`).
pub async fn watch_selectors(s: &Arc<dyn Storage>, p: &str, _caps: Caps) {
    let start = s.current_revision().await.unwrap();
    let opts = ListOptions {
        resource_version: start.to_string(),
        predicate: SelectionPredicate::new(
            LabelSelector::parse("team=blue").unwrap(),
            FieldSelector::everything(),
        ),
        ..all(p)
    };
    let mut w = s.watch(p, opts).await.unwrap();
    let key = format!("{p}ns/x");
    s.create(&key, pod_with("ns", "x", &[("team", "red")], "0"))
        .await
        .unwrap();
    let to = |team: &'static str, n: &'static str| {
        move |_: Option<&Object>| Ok(pod_with("ns", "x", &[("team", team)], n))
    };
    s.guaranteed_update(&key, false, None, &mut to("blue", "1"))
        .await
        .unwrap();
    s.guaranteed_update(&key, false, None, &mut to("blue", "2"))
        .await
        .unwrap();
    s.guaranteed_update(&key, false, None, &mut to("red", "3"))
        .await
        .unwrap();
    s.guaranteed_update(&key, false, None, &mut to("red", "4"))
        .await
        .unwrap();
    s.guaranteed_update(&key, false, None, &mut to("blue", "5"))
        .await
        .unwrap();
    s.delete(&key, None, None).await.unwrap();
    let added = expect_change(&mut w, "ADDED", "x").await;
    assert_eq!(note(&added), "1");
    assert_eq!(note(&expect_change(&mut w, "MODIFIED", "x").await), "2");
    // Left the selector: DELETED carrying the last matching state at the event's revision.
    let left = expect_change(&mut w, "DELETED", "x").await;
    assert_eq!(note(&left), "2");
    assert_eq!(note(&expect_change(&mut w, "ADDED", "x").await), "5");
    expect_change(&mut w, "DELETED", "x").await;
}

/// `sendInitialEvents` with bookmarks and progress notifications (`RunTestWatchListMatchSingle`,
/// `RunTestWatchInitializationSignal`, progress notify).
pub async fn watch_bookmarks(s: &Arc<dyn Storage>, p: &str, _caps: Caps) {
    s.create(&format!("{p}ns/a"), pod("ns", "a", &[]))
        .await
        .unwrap();
    s.create(&format!("{p}ns/b"), pod("ns", "b", &[]))
        .await
        .unwrap();
    let mut w = s
        .watch(
            p,
            ListOptions {
                send_initial_events: Some(true),
                allow_watch_bookmarks: true,
                resource_version_match: ResourceVersionMatch::NotOlderThan,
                ..all(p)
            },
        )
        .await
        .unwrap();
    let (got, end_rv) = initial_events(&mut w).await;
    assert_eq!(got, BTreeSet::from(["a".to_string(), "b".to_string()]));
    assert!(end_rv >= s.count(p).await.map(|_| 1).unwrap());
    // Progress: a watch asking for it gets a bookmark at least at the current revision.
    let mut w = s
        .watch(
            p,
            ListOptions {
                resource_version: end_rv.to_string(),
                progress_notify: true,
                allow_watch_bookmarks: true,
                ..all(p)
            },
        )
        .await
        .unwrap();
    s.create(&format!("{p}ns/c"), pod("ns", "c", &[]))
        .await
        .unwrap();
    let c_rev = expect_change(&mut w, "ADDED", "c").await.resource_version;
    let deadline = tokio::time::Instant::now() + EVENT_TIMEOUT;
    loop {
        w.request_progress();
        let ev = tokio::time::timeout_at(deadline, w.next())
            .await
            .expect("no bookmark before the deadline")
            .expect("watch ended");
        if let WatchEvent::Bookmark {
            resource_version, ..
        } = ev
        {
            assert!(resource_version >= c_rev);
            break;
        }
    }
}

/// The names a watch-list sends as initial events, and the revision of its
/// `initial-events-end` bookmark.
async fn initial_events(w: &mut WatchStream) -> (BTreeSet<String>, u64) {
    let mut got = BTreeSet::new();
    loop {
        match next_event(w).await {
            WatchEvent::Added(o) => {
                got.insert(name_of(&o));
            }
            WatchEvent::Bookmark {
                resource_version,
                initial_events_end: true,
            } => return (got, resource_version),
            WatchEvent::Bookmark { .. } => {}
            ev => panic!("unexpected {}", describe(&ev)),
        }
    }
}

/// An informer on a resource nobody writes: LIST, then WATCH from the list's revision, which
/// writes to other resources have moved past anything this resource saw. The watch starts at
/// once (the watch cache does not wait for a revision it has not seen; upstream's cacher skips
/// events up to it instead) and delivers the next change; reads not older than that revision
/// (LIST, GET, watch-list) are answered within the freshness wait, by progress notifications.
pub async fn watch_from_list_on_quiet_resource(s: &Arc<dyn Storage>, p: &str, _caps: Caps) {
    s.create(&format!("{p}ns/a"), pod("ns", "a", &[]))
        .await
        .unwrap();
    // Writes elsewhere (outside any watch cache over `/registry/`) move the store's revision;
    // this resource stays quiet.
    let elsewhere = format!("/elsewhere{p}ns/");
    for i in 0..3 {
        s.create(
            &format!("{elsewhere}x{i}"),
            pod("ns", &format!("x{i}"), &[]),
        )
        .await
        .unwrap();
    }
    let list = s.list(p, all(p)).await.unwrap();
    assert_eq!(names(&list), ["a"]);
    let rv = list
        .resource_version
        .max(s.current_revision().await.unwrap());
    // Well under the 3 s freshness wait, even on a loaded machine.
    let quick = Duration::from_secs(2);

    let started = tokio::time::Instant::now();
    let mut w = s
        .watch(
            p,
            ListOptions {
                resource_version: rv.to_string(),
                allow_watch_bookmarks: true,
                ..all(p)
            },
        )
        .await
        .unwrap();
    assert!(
        started.elapsed() < quick,
        "watch from {rv} took {:?}",
        started.elapsed()
    );
    let b = s
        .create(&format!("{p}ns/b"), pod("ns", "b", &[]))
        .await
        .unwrap();
    // Nothing at or before the requested revision comes first: the next change is b.
    let added = expect_change(&mut w, "ADDED", "b").await;
    assert_eq!(added.resource_version, b.resource_version);
    assert!(added.resource_version > rv);

    // Reads that must not be older than a revision this resource never had.
    for _ in 0..3 {
        s.create(
            &format!("{elsewhere}y{}", rand::random::<u32>()),
            pod("ns", "y", &[]),
        )
        .await
        .unwrap();
    }
    let rv = s.current_revision().await.unwrap();
    let started = tokio::time::Instant::now();
    let list = s
        .list(
            p,
            ListOptions {
                resource_version: rv.to_string(),
                resource_version_match: ResourceVersionMatch::NotOlderThan,
                ..all(p)
            },
        )
        .await
        .unwrap();
    assert!(
        started.elapsed() < quick,
        "list not older than {rv} took {:?}",
        started.elapsed()
    );
    assert!(list.resource_version >= rv);
    assert_eq!(names(&list), ["a", "b"]);
    let got = s
        .get(
            &format!("{p}ns/b"),
            GetOptions {
                resource_version: rv.to_string(),
                ..Default::default()
            },
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got.resource_version, b.resource_version);
    let mut w = s
        .watch(
            p,
            ListOptions {
                resource_version: rv.to_string(),
                resource_version_match: ResourceVersionMatch::NotOlderThan,
                send_initial_events: Some(true),
                allow_watch_bookmarks: true,
                ..all(p)
            },
        )
        .await
        .unwrap();
    let (got, end) = initial_events(&mut w).await;
    assert_eq!(got, BTreeSet::from(["a".to_string(), "b".to_string()]));
    assert!(end >= rv, "initial events end at {end}, before {rv}");
}

/// Bad input: values over the request limit.
pub async fn bad_input(s: &Arc<dyn Storage>, p: &str, _caps: Caps) {
    let big = "x".repeat(MAX_REQUEST_BYTES + 10);
    let obj = Bytes::from(format!(
        r#"{{"kind":"ConfigMap","metadata":{{"name":"big"}},"data":{{"a":"{big}"}}}}"#
    ));
    let err = s.create(&format!("{p}ns/big"), obj).await.unwrap_err();
    assert_eq!(err, StorageError::RequestTooLarge);
    let api = err.to_api_error(Operation::Create, "", "configmaps", "big");
    assert_eq!(api.code(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(api.reason(), "RequestEntityTooLarge");
    assert_eq!(api.0.message, "etcdserver: request is too large");
    // Not JSON: refused, no panic.
    assert!(
        s.create(&format!("{p}ns/junk"), Bytes::from_static(b"["))
            .await
            .is_err()
    );
}

/// Keys with a time to live (upstream's master leases): written through
/// [`Storage::guaranteed_update_with_ttl`], deleted when it runs out (a watch sees the
/// deletion), renewed by writing again, kept by a write without one. Backends only: the watch
/// cache refuses them.
pub async fn ttl(s: &Arc<dyn Storage>, p: &str, _caps: Caps) {
    const SHORT: Duration = Duration::from_secs(2);
    let key = format!("{p}ns/lease");
    let mut generation = 0;
    let mut bump = |cur: Option<&Object>| {
        generation += 1;
        assert_eq!(cur.is_some(), generation > 1);
        Ok(pod_with("ns", "lease", &[], &generation.to_string()))
    };
    let first = s
        .guaranteed_update_with_ttl(&key, SHORT, &mut bump)
        .await
        .unwrap();
    let mut w = s
        .watch(
            &key,
            ListOptions {
                resource_version: first.resource_version.to_string(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    // Not renewed: deleted once the time to live runs out.
    let deleted = expect_change(&mut w, "DELETED", "lease").await;
    assert!(deleted.resource_version > first.resource_version);
    assert!(
        s.get(&key, GetOptions::default())
            .await
            .unwrap_err()
            .is_not_found()
    );

    // Renewed with a longer time to live, then written without one: neither deadline applies.
    let mut f = |_: Option<&Object>| Ok(pod_with("ns", "lease", &[], "a"));
    let short = s
        .guaranteed_update_with_ttl(&key, SHORT, &mut f)
        .await
        .unwrap();
    let mut f = |_: Option<&Object>| Ok(pod_with("ns", "lease", &[], "b"));
    s.guaranteed_update_with_ttl(&key, Duration::from_secs(600), &mut f)
        .await
        .unwrap();
    let plain_key = format!("{p}ns/plain");
    let mut f = |_: Option<&Object>| Ok(pod_with("ns", "plain", &[], "a"));
    s.guaranteed_update_with_ttl(&plain_key, SHORT, &mut f)
        .await
        .unwrap();
    let mut f = |_: Option<&Object>| Ok(pod_with("ns", "plain", &[], "b"));
    let kept = s
        .guaranteed_update(&plain_key, false, None, &mut f)
        .await
        .unwrap();
    // A third key expiring after the short deadline proves the deadline has passed.
    let marker = format!("{p}ns/marker");
    let mut f = |_: Option<&Object>| Ok(pod_with("ns", "marker", &[], ""));
    s.guaranteed_update_with_ttl(&marker, SHORT, &mut f)
        .await
        .unwrap();
    let mut w = s
        .watch(
            &marker,
            ListOptions {
                resource_version: short.resource_version.to_string(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    expect_change(&mut w, "ADDED", "marker").await;
    expect_change(&mut w, "DELETED", "marker").await;
    let lease = s.get(&key, GetOptions::default()).await.unwrap().unwrap();
    assert_eq!(note(&lease), "b");
    let plain = s
        .get(&plain_key, GetOptions::default())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(plain.resource_version, kept.resource_version);
}

/// Generates one `#[tokio::test]` per scenario for a store factory
/// `async fn() -> (Arc<dyn Storage>, guard)`; the guard lives as long as the test.
#[macro_export]
#[doc(hidden)]
macro_rules! storage_conformance {
    ($factory:path, $caps:expr) => {
        $crate::storage_conformance!(@tests $factory, $caps, create, get, delete, guaranteed_update,
            guaranteed_update_cached,
            list, pagination, compaction, watch, watch_selectors, watch_bookmarks,
            watch_from_list_on_quiet_resource, bad_input);
    };
    (@tests $factory:path, $caps:expr, $($name:ident),*) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let (store, _guard) = $factory().await;
                let prefix = format!("/registry/{}/", stringify!($name));
                $crate::storage::testing::$name(&store, &prefix, $caps).await;
            }
        )*
    };
}
