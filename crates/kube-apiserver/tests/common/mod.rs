//! Runs the real `kube-apiserver` binary for end-to-end tests: a temp data dir, a free port on
//! loopback, its stdout/stderr collected line by line, `/readyz` awaited with a deadline, and
//! the process killed (by its own pid) when the test ends, also on panic.

#![allow(dead_code)]

// The library's black-box test client, shared rather than copied.
#[path = "../../../apiserver/tests/common/client.rs"]
pub mod client;
#[path = "../../../apiserver/src/storage/testing/etcd_server.rs"]
#[allow(dead_code)]
pub mod etcd;

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use client::{Client, Proto};

/// How long anything may take on a loaded 2-core machine before a test gives up.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// How often conditions are polled.
const POLL: Duration = Duration::from_millis(20);

/// The binary under test.
pub fn binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_kube-apiserver"))
}

/// The directory holding `kubectl-1.35`, `kubectl-1.20` and `helm`: `$APISERVER_TOOLS`, or
/// `<workspace>/.tools/bin`.
pub fn tools_dir() -> PathBuf {
    match std::env::var_os("APISERVER_TOOLS") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.tools/bin"),
    }
}

/// A tool from [`tools_dir`]; fails the test (never skips) when it is missing.
pub fn tool(name: &str) -> PathBuf {
    let path = tools_dir().join(name);
    assert!(
        path.is_file(),
        "{} not found: run scripts/install-test-tools.sh or set APISERVER_TOOLS to the \
         directory holding it",
        path.display()
    );
    path
}

/// Lines a child wrote to one of its pipes, collected by a reader thread.
#[derive(Clone, Default)]
pub struct Lines(Arc<Mutex<Vec<String>>>);

impl Lines {
    fn collect_from(stream: impl Read + Send + 'static) -> Self {
        let lines = Lines::default();
        let sink = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines() {
                let Ok(line) = line else { break };
                sink.0.lock().unwrap().push(line);
            }
        });
        lines
    }

    /// Everything read so far.
    pub fn snapshot(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }

    /// The first line containing `needle`, if any yet.
    pub fn find(&self, needle: &str) -> Option<String> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .find(|l| l.contains(needle))
            .cloned()
    }

    /// Waits (polling, with [`DEADLINE`]) for a line containing `needle`.
    pub async fn wait_for(&self, needle: &str) -> String {
        let start = Instant::now();
        loop {
            if let Some(line) = self.find(needle) {
                return line;
            }
            assert!(
                start.elapsed() < DEADLINE,
                "no line containing {needle:?} within {DEADLINE:?}; got:\n{}",
                self.snapshot().join("\n")
            );
            tokio::time::sleep(POLL).await;
        }
    }
}

/// Builds a server invocation.
pub struct ServerBuilder {
    args: Vec<String>,
    envs: Vec<(String, String)>,
    data_dir: Option<PathBuf>,
    data_dir_flag: bool,
    current_dir: Option<PathBuf>,
    cert_dir: Option<PathBuf>,
    bind_address: String,
    wait_ready: bool,
    wait_serving: bool,
}

/// A running `kube-apiserver` process (killed on drop if still running).
pub struct ApiServer {
    child: Child,
    /// Its data dir (generated PKI and admin kubeconfig).
    pub data_dir: PathBuf,
    cert_dir: Option<PathBuf>,
    _tmp: Option<tempfile::TempDir>,
    /// The secure address it serves on.
    pub addr: SocketAddr,
    /// Its stdout lines.
    pub stdout: Lines,
    /// Its stderr lines (the log).
    pub stderr: Lines,
}

impl ServerBuilder {
    /// Adds flags.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets an environment variable of the process.
    pub fn env(mut self, key: &str, value: impl Into<String>) -> Self {
        self.envs.push((key.to_string(), value.into()));
        self
    }

    /// Uses this data dir instead of a fresh temp dir (kept after the test).
    pub fn data_dir(mut self, dir: &Path) -> Self {
        self.data_dir = Some(dir.to_path_buf());
        self
    }

    /// Passes no `--data-dir`; `effective` is where the server is expected to keep its
    /// PKI and kubeconfig.
    pub fn without_data_dir_flag(mut self, effective: &Path) -> Self {
        self.data_dir = Some(effective.to_path_buf());
        self.data_dir_flag = false;
        self
    }

    /// Passes `--cert-dir` (where the generated PKI then lives).
    pub fn cert_dir(mut self, dir: &Path) -> Self {
        self.cert_dir = Some(dir.to_path_buf());
        self
    }

    /// Serves on `ip` instead of 127.0.0.1 (another loopback address, e.g. for replicas).
    pub fn bind_address(mut self, ip: &str) -> Self {
        self.bind_address = ip.to_string();
        self
    }

    /// Runs the process in `dir`.
    pub fn current_dir(mut self, dir: &Path) -> Self {
        self.current_dir = Some(dir.to_path_buf());
        self
    }

    /// Returns once it serves, without waiting for `/readyz` (e.g. when authorization denies
    /// the admin client nothing but the test wants to look itself).
    pub fn no_ready_wait(mut self) -> Self {
        self.wait_ready = false;
        self
    }

    /// Returns as soon as the process runs (e.g. when it waits for its storage first); the test
    /// calls [`ApiServer::wait_serving`] itself.
    pub fn no_serving_wait(mut self) -> Self {
        self.wait_serving = false;
        self
    }

    /// Starts the process and waits until it serves and (by default) `/readyz` answers 200 to
    /// the admin.
    pub async fn start(self) -> ApiServer {
        let (tmp, data_dir) = match self.data_dir {
            Some(dir) => (None, dir),
            None => {
                let tmp = tempfile::tempdir().unwrap();
                let dir = tmp.path().join("data");
                (Some(tmp), dir)
            }
        };
        let mut cmd = Command::new(binary());
        if self.data_dir_flag {
            cmd.arg(format!("--data-dir={}", data_dir.display()));
        }
        if let Some(dir) = &self.current_dir {
            cmd.current_dir(dir);
        }
        if let Some(dir) = &self.cert_dir {
            cmd.arg(format!("--cert-dir={}", dir.display()));
        }
        // `--secure-port=0` unless the test fixes a port (e.g. to restart on the same one).
        if !self.args.iter().any(|a| a.starts_with("--secure-port")) {
            cmd.arg("--secure-port=0");
        }
        cmd.arg(format!("--bind-address={}", self.bind_address))
            .args(&self.args)
            .env_remove("NOTIFY_SOCKET")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in &self.envs {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("spawn kube-apiserver");
        let stdout = Lines::collect_from(child.stdout.take().unwrap());
        let stderr = Lines::collect_from(child.stderr.take().unwrap());
        let mut server = ApiServer {
            child,
            data_dir,
            cert_dir: self.cert_dir,
            _tmp: tmp,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            stdout,
            stderr,
        };
        if !self.wait_serving {
            return server;
        }
        server.addr = server.wait_serving().await;
        if self.wait_ready {
            server.wait_ready().await;
        }
        server
    }
}

impl ApiServer {
    /// A builder with the defaults (temp data dir, `--secure-port=0`, loopback).
    pub fn builder() -> ServerBuilder {
        ServerBuilder {
            args: Vec::new(),
            envs: Vec::new(),
            data_dir: None,
            data_dir_flag: true,
            current_dir: None,
            cert_dir: None,
            bind_address: "127.0.0.1".into(),
            wait_ready: true,
            wait_serving: true,
        }
    }

    /// Starts with these extra flags and waits until ready.
    pub async fn start(args: &[&str]) -> ApiServer {
        Self::builder().args(args.iter().copied()).start().await
    }

    /// The process id.
    pub fn pid(&self) -> i32 {
        i32::try_from(self.child.id()).unwrap()
    }

    /// Waits (with [`DEADLINE`]) for the `Serving securely on` line and returns that address.
    pub async fn wait_serving(&mut self) -> SocketAddr {
        let start = Instant::now();
        loop {
            if let Some(line) = self.stderr.find("Serving securely on ") {
                let addr = line.rsplit("Serving securely on ").next().unwrap().trim();
                return addr.parse().unwrap_or_else(|e| panic!("{addr:?}: {e}"));
            }
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!(
                    "kube-apiserver exited with {status} before serving:\n{}",
                    self.stderr.snapshot().join("\n")
                );
            }
            assert!(
                start.elapsed() < DEADLINE,
                "kube-apiserver did not serve within {DEADLINE:?}:\n{}",
                self.stderr.snapshot().join("\n")
            );
            tokio::time::sleep(POLL).await;
        }
    }

    /// Polls `/readyz` as the admin until it answers 200.
    pub async fn wait_ready(&self) {
        let client = self.admin_client();
        let start = Instant::now();
        loop {
            match client.get(Proto::H1, "/readyz").await {
                Ok(reply) if reply.status == 200 => return,
                other => assert!(
                    start.elapsed() < DEADLINE,
                    "/readyz not ready within {DEADLINE:?}: {other:?}"
                ),
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// The generated PKI directory.
    pub fn pki(&self) -> PathBuf {
        self.cert_dir
            .clone()
            .unwrap_or_else(|| self.data_dir.join("pki"))
    }

    /// The generated admin kubeconfig.
    pub fn kubeconfig(&self) -> PathBuf {
        self.data_dir.join("admin.kubeconfig")
    }

    fn read_pki(&self, name: &str) -> String {
        std::fs::read_to_string(self.pki().join(name)).unwrap()
    }

    /// A client trusting the generated CA, without credentials (anonymous).
    pub fn anonymous_client(&self) -> Client {
        Client::new(self.addr, &self.read_pki("ca.crt"), "127.0.0.1")
    }

    /// A client presenting the generated admin certificate (`system:masters`).
    pub fn admin_client(&self) -> Client {
        self.anonymous_client()
            .with_identity(&self.read_pki("admin.crt"), &self.read_pki("admin.key"))
    }

    /// Sends `signal` to the process.
    pub fn signal(&self, signal: i32) {
        // SAFETY: kill(2) on the pid of the child this test spawned and has not reaped.
        let rc = unsafe { libc::kill(self.pid(), signal) };
        assert_eq!(rc, 0, "kill({}, {signal})", self.pid());
    }

    /// Sends SIGTERM.
    pub fn sigterm(&self) {
        self.signal(libc::SIGTERM);
    }

    /// Waits (polling, with [`DEADLINE`]) for the process to exit.
    pub async fn wait_exit(&mut self) -> ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                start.elapsed() < DEADLINE,
                "kube-apiserver did not exit within {DEADLINE:?}:\n{}",
                self.stderr.snapshot().join("\n")
            );
            tokio::time::sleep(POLL).await;
        }
    }

    /// Waits for exit, then until the reader threads have seen `needle` in the log (the pipe
    /// may still hold the last lines when the process is gone).
    pub async fn wait_exit_and_log(&mut self, needle: &str) -> ExitStatus {
        let status = self.wait_exit().await;
        self.stderr.wait_for(needle).await;
        status
    }

    /// SIGTERM and wait for a clean exit (code 0).
    pub async fn stop(&mut self) {
        self.sigterm();
        let status = self.wait_exit().await;
        assert_eq!(
            status.code(),
            Some(0),
            "exit status {status}:\n{}",
            self.stderr.snapshot().join("\n")
        );
    }
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Runs the binary with `args` (in a temp data dir) to completion, bounded by [`DEADLINE`].
pub async fn run_to_exit(args: &[&str]) -> std::process::Output {
    let tmp = tempfile::tempdir().unwrap();
    let child = tokio::process::Command::new(binary())
        .arg(format!("--data-dir={}", tmp.path().join("data").display()))
        .args(args)
        .current_dir(tmp.path())
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn kube-apiserver");
    tokio::time::timeout(DEADLINE, child.wait_with_output())
        .await
        .expect("kube-apiserver did not exit")
        .unwrap()
}

/// Output of a tool run.
#[derive(Debug)]
pub struct ToolOutput {
    /// Exit code (None when killed by a signal).
    pub code: Option<i32>,
    /// Stdout.
    pub stdout: String,
    /// Stderr.
    pub stderr: String,
}

/// Runs `tool` (e.g. `kubectl-1.35`) with `args`, isolated from the user's kube config and
/// cache (`HOME` and `KUBECONFIG` point into `home`), bounded by [`DEADLINE`].
pub async fn run_tool(tool_name: &str, home: &Path, args: &[&str]) -> ToolOutput {
    let child = tokio::process::Command::new(tool(tool_name))
        .args(args)
        .env("HOME", home)
        .env("KUBECONFIG", home.join("no-such-kubeconfig"))
        .env("KUBECACHEDIR", home.join("kube-cache"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {tool_name}: {e}"));
    let out = tokio::time::timeout(DEADLINE, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("{tool_name} {args:?} did not finish within {DEADLINE:?}"))
        .unwrap();
    ToolOutput {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A port that was free a moment ago on 127.0.0.1.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Polls `check` until it returns `Some`, with [`DEADLINE`].
pub async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let start = Instant::now();
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "{what}: not within {DEADLINE:?}"
        );
        tokio::time::sleep(POLL).await;
    }
}

/// GET `path` over plain HTTP/1.1 on an already connected stream (TCP or unix socket).
pub async fn plain_get<S>(stream: S, path: &str) -> (u16, http::HeaderMap, String)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    use http_body_util::{BodyExt, Empty};
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let req = http::Request::get(path)
        .header("host", "localhost")
        .body(Empty::<bytes::Bytes>::new())
        .unwrap();
    let resp = tokio::time::timeout(DEADLINE, sender.send_request(req))
        .await
        .expect("response in time")
        .unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (status, headers, String::from_utf8_lossy(&body).into_owned())
}
