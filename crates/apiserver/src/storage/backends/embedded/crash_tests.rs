//! Crash test: a child process (this test binary, re-executed) writes concurrently and prints
//! every acknowledged write; the parent kills it with SIGKILL mid-stream, reopens the data
//! directory and checks that every acknowledged write is there and that revisions have no gap
//! and were never reused. Twenty cycles on one directory.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;

use bytes::Bytes;

use super::EmbeddedStorage;
use crate::storage::{ListOptions, Storage};

const DIR_ENV: &str = "APISERVER_STORAGE_CRASH_DIR";
const CYCLE_ENV: &str = "APISERVER_STORAGE_CRASH_CYCLE";

/// The child: writes until killed. Only does anything when re-executed by the parent.
#[test]
#[ignore = "run by crash_cycles as a child process"]
fn crash_child_writer() {
    let Ok(dir) = std::env::var(DIR_ENV) else {
        return;
    };
    let cycle = std::env::var(CYCLE_ENV).unwrap_or_default();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let store = Arc::new(EmbeddedStorage::open(&dir).unwrap());
        let mut tasks = Vec::new();
        for t in 0..4 {
            let store = store.clone();
            let cycle = cycle.clone();
            tasks.push(tokio::spawn(async move {
                for i in 0.. {
                    let name = format!("c{cycle}-t{t}-{i}");
                    let key = format!("/registry/crash/{name}");
                    let obj = format!(r#"{{"metadata":{{"name":"{name}"}},"n":{i}}}"#);
                    let out = store.create(&key, Bytes::from(obj)).await.unwrap();
                    // Printed only after the write was acknowledged (durable).
                    println!("ACK {} {key}", out.resource_version);
                }
            }));
        }
        for t in tasks {
            let _ = t.await;
        }
    });
}

#[test]
fn crash_cycles() {
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut acked: BTreeMap<String, u64> = BTreeMap::new();
    for cycle in 0..20 {
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "storage::backends::embedded::crash_tests::crash_child_writer",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(DIR_ENV, dir.path())
            .env(CYCLE_ENV, cycle.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let want = 20 + (cycle * 37) % 150;
        let mut got = 0;
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let mut parts = line.split_whitespace();
            if parts.next() != Some("ACK") {
                continue;
            }
            let rev: u64 = parts.next().unwrap().parse().unwrap();
            let key = parts.next().unwrap().to_string();
            assert!(acked.insert(key, rev).is_none());
            got += 1;
            if got >= want {
                // SIGKILL while the other writers are mid-commit.
                child.kill().unwrap();
                break;
            }
        }
        let status = child.wait().unwrap();
        assert!(
            got >= want,
            "child exited early ({status}) after {got} writes"
        );

        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let acked = &acked;
        rt.block_on(async {
            let store = EmbeddedStorage::open(dir.path()).unwrap();
            let current = store.current_revision().await.unwrap();
            let list = store
                .list(
                    "/registry/crash/",
                    ListOptions {
                        recursive: true,
                        ..Default::default()
                    },
                )
                .await
                .unwrap();
            let stored: BTreeMap<String, u64> = list
                .items
                .iter()
                .map(|o| (o.key.clone(), o.resource_version))
                .collect();
            // Every acknowledged write survived, at the revision it was acknowledged with.
            for (key, rev) in acked {
                assert_eq!(stored.get(key), Some(rev), "cycle {cycle}: lost {key}");
            }
            // Every revision 2..=current (1 is the empty store) is exactly one stored create:
            // no gap, no reuse.
            let mut revs: Vec<u64> = stored.values().copied().collect();
            revs.sort_unstable();
            let expected: Vec<u64> = (2..=current).collect();
            assert_eq!(
                revs, expected,
                "cycle {cycle}: revisions have gaps or reuse"
            );
        });
    }
}
