//! An idle server stays idle: certificate re-reads (which open the watched files) must not
//! trigger further re-reads. This file holds a single test so that the process's CPU time is
//! the server's alone.

mod common;

use std::time::Duration;

use common::*;

const REFRESH: Duration = Duration::from_millis(100);

/// User plus system CPU time of this process, from `/proc/self/stat`.
fn process_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    // The command name may hold spaces; the fields after it are space-separated.
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the name.
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    let hz = clock_ticks_per_second();
    Duration::from_millis(ticks * 1000 / hz)
}

/// The kernel's clock tick rate as `getconf CLK_TCK` reports it.
fn clock_ticks_per_second() -> u64 {
    let out = std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .expect("getconf");
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_server_does_not_spin_after_certificate_rereads_and_file_reads() {
    let mut server = TestServerBuilder::new()
        .configure(|c, _| {
            c.secure_serving.as_mut().unwrap().cert_refresh_interval = REFRESH;
        })
        .start()
        .await;
    let client = server.admin_client();
    assert_eq!(
        client.get(Proto::H1, "/healthz").await.unwrap().status,
        http::StatusCode::OK
    );
    // Let several periodic re-reads happen, and read the certificates as another process
    // would (each open is an inotify event in the watched directory).
    let dir = server.dir.path().to_path_buf();
    let read_all = || {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_file() {
                let _ = std::fs::read(&path);
            }
        }
    };
    let settle = tokio::time::Instant::now() + REFRESH * 10;
    while tokio::time::Instant::now() < settle {
        read_all();
        tokio::time::sleep(REFRESH).await;
    }
    read_all();

    let window = Duration::from_secs(3);
    let before = process_cpu();
    tokio::time::sleep(window).await;
    let used = process_cpu() - before;
    // 30 re-reads of three small files cost a few milliseconds; a re-read loop costs a core.
    assert!(
        used < window / 5,
        "an idle server used {used:?} of CPU in {window:?}"
    );
    server.shutdown().await.unwrap();
}
