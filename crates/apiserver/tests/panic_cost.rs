//! What a panic in a handler costs the process: one log line and no backtrace, even with
//! `RUST_BACKTRACE` set (capturing and symbolising one loads the debug information, hundreds
//! of MiB that stay). The server runs in a child process (this test binary run again), so its
//! stderr and memory are its own.

mod common;

use std::process::Command;

use common::*;
use http::Method;

const CHILD_ENV: &str = "APISERVER_PANIC_COST_CHILD";
const PANICS: usize = 20;
const PROTOS: [Proto; 2] = [Proto::H1, Proto::H2];

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// The server side: serve `/panic`, panic there `PANICS` times, report RSS before and after.
async fn child() {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
    let mut server = TestServerBuilder::new()
        .install(|s| s.handler().non_api_mux.handle("/panic", panic_handler()))
        .start()
        .await;
    let client = server.admin_client();
    // Warm up every code path of a request except the panic.
    for proto in PROTOS {
        assert_eq!(client.get(proto, "/version").await.unwrap().status, 200);
    }
    let before = rss_kib();
    eprintln!("MARK panics start");
    for i in 0..PANICS {
        let proto = PROTOS[i % PROTOS.len()];
        let mut conn = client.connect(proto).await.unwrap();
        let result = conn.send(client.request(Method::GET, "/panic", "")).await;
        assert!(
            result.is_err(),
            "expected a transport error, got {result:?}"
        );
    }
    let after = rss_kib();
    eprintln!("MARK panics end");
    println!("RSS_KIB {before} {after}");
    server.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_caught_panic_logs_one_line_and_captures_no_backtrace_even_with_rust_backtrace() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return child().await;
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "each_caught_panic_logs_one_line_and_captures_no_backtrace_even_with_rust_backtrace",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, "1")
        .env("RUST_BACKTRACE", "full")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child failed:\n{stdout}\n{stderr}");

    let during: Vec<&str> = stderr
        .lines()
        .skip_while(|l| !l.contains("MARK panics start"))
        .skip(1)
        .take_while(|l| !l.contains("MARK panics end"))
        .collect();
    let panic_lines = during
        .iter()
        .filter(|l| l.contains("apiserver panic'd"))
        .count();
    assert_eq!(panic_lines, PANICS, "{}", during.join("\n"));
    assert_eq!(
        during.len(),
        PANICS,
        "one line per panic:\n{}",
        during.join("\n")
    );
    assert!(
        during
            .iter()
            .all(|l| l.contains("location=") && l.contains(".rs:")),
        "each line says where:\n{}",
        during.join("\n")
    );
    assert!(!stderr.contains("stack backtrace"), "{stderr}");

    // libtest writes its own text around the child's, on the same line.
    let rss: Vec<u64> = stdout
        .split("RSS_KIB ")
        .nth(1)
        .and_then(|rest| rest.lines().next())
        .map(|v| v.split(' ').map(|n| n.parse().unwrap()).collect())
        .unwrap_or_else(|| panic!("no RSS line in:\n{stdout}"));
    let grown_mib = rss[1].saturating_sub(rss[0]) / 1024;
    assert!(
        grown_mib < 32,
        "{PANICS} panics grew RSS by {grown_mib} MiB"
    );
}
