//! A real etcd for tests: `/usr/bin/etcd` (or `etcd` on `PATH`) on free loopback ports in a
//! temporary directory, optionally serving clients over TLS with client certificates required,
//! or on several client URLs. A missing binary fails the test loudly rather than skipping it.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running etcd, killed on drop.
pub struct EtcdServer {
    child: Option<Child>,
    dir: tempfile::TempDir,
    client_ports: Vec<u16>,
    peer_port: u16,
    metrics_port: u16,
    tls: Option<EtcdTls>,
    binary: PathBuf,
}

/// Client TLS of an etcd: its serving identity and the CA client certificates must chain to
/// (etcd's `--client-cert-auth`).
#[derive(Clone, Debug)]
pub struct EtcdTls {
    /// `--cert-file` (PEM).
    pub cert_file: PathBuf,
    /// `--key-file` (PEM).
    pub key_file: PathBuf,
    /// `--trusted-ca-file` (PEM).
    pub client_ca_file: PathBuf,
}

/// How [`EtcdServer::start_with`] starts etcd.
#[derive(Clone, Debug, Default)]
pub struct EtcdOptions {
    /// Serve clients over TLS only, requiring client certificates.
    pub tls: Option<EtcdTls>,
    /// Client URLs to listen on besides the first (see [`EtcdServer::urls`]).
    pub extra_client_urls: usize,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("no free loopback port")
}

fn find_etcd() -> PathBuf {
    let fixed = PathBuf::from("/usr/bin/etcd");
    if fixed.exists() {
        return fixed;
    }
    if let Some(paths) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&paths) {
            let candidate = dir.join("etcd");
            if candidate.exists() {
                return candidate;
            }
        }
    }
    panic!(
        "etcd is not installed (looked for /usr/bin/etcd and etcd on PATH); the etcd storage tests need it: apt-get install -y etcd-server"
    );
}

impl EtcdServer {
    /// Starts etcd and waits until it serves requests.
    pub async fn start() -> Self {
        Self::start_with(EtcdOptions::default()).await
    }

    /// Starts etcd as `options` say and waits until it serves requests.
    pub async fn start_with(options: EtcdOptions) -> Self {
        let mut server = EtcdServer {
            child: None,
            dir: tempfile::tempdir().expect("tempdir"),
            client_ports: (0..=options.extra_client_urls)
                .map(|_| free_port())
                .collect(),
            peer_port: free_port(),
            metrics_port: free_port(),
            tls: options.tls,
            binary: find_etcd(),
        };
        server.spawn();
        server.wait_ready().await;
        server
    }

    /// The (first) client URL.
    pub fn url(&self) -> String {
        self.urls().remove(0)
    }

    /// Every client URL etcd listens on.
    pub fn urls(&self) -> Vec<String> {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        self.client_ports
            .iter()
            .map(|port| format!("{scheme}://127.0.0.1:{port}"))
            .collect()
    }

    /// Stops listening on the first client URL from the next start on (that address then
    /// refuses connections); at least one URL is kept.
    pub fn drop_first_client_url(&mut self) {
        if self.client_ports.len() > 1 {
            self.client_ports.remove(0);
        }
    }

    fn spawn(&mut self) {
        let client = self.urls().join(",");
        let peer = format!("http://127.0.0.1:{}", self.peer_port);
        let log = std::fs::File::create(self.dir.path().join("etcd.log")).expect("log file");
        let child = Command::new(&self.binary)
            .arg("--name=test")
            .arg(format!(
                "--data-dir={}",
                self.dir.path().join("data").display()
            ))
            .arg(format!("--listen-client-urls={client}"))
            .arg(format!("--advertise-client-urls={client}"))
            .arg(format!("--listen-peer-urls={peer}"))
            .arg(format!("--initial-advertise-peer-urls={peer}"))
            .arg(format!("--initial-cluster=test={peer}"))
            .arg(format!(
                "--listen-metrics-urls=http://127.0.0.1:{}",
                self.metrics_port
            ))
            .args(self.tls.iter().flat_map(|tls| {
                [
                    format!("--cert-file={}", tls.cert_file.display()),
                    format!("--key-file={}", tls.key_file.display()),
                    format!("--trusted-ca-file={}", tls.client_ca_file.display()),
                    "--client-cert-auth".to_string(),
                ]
            }))
            .arg("--experimental-watch-progress-notify-interval=5s")
            .arg("--logger=zap")
            .arg("--log-level=error")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("starting etcd");
        self.child = Some(child);
    }

    /// Waits (with a deadline) until etcd's `/health` says it is healthy (it answers that
    /// once it serves reads). Plain HTTP on the metrics URL (also when clients need TLS), so
    /// the file needs no etcd client and black-box tests of the binary can include it too.
    pub async fn wait_ready(&self) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            let healthy = async {
                let mut tcp = tokio::net::TcpStream::connect(("127.0.0.1", self.metrics_port))
                    .await
                    .ok()?;
                tcp.write_all(b"GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
                    .await
                    .ok()?;
                let mut answer = Vec::new();
                tokio::time::timeout(Duration::from_secs(2), tcp.read_to_end(&mut answer))
                    .await
                    .ok()?
                    .ok()?;
                String::from_utf8_lossy(&answer)
                    .contains(r#""health":"true""#)
                    .then_some(())
            }
            .await
            .is_some();
            if healthy {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "etcd did not become ready; log: {}",
                std::fs::read_to_string(self.dir.path().join("etcd.log")).unwrap_or_default()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The process id of the running etcd (for tests that stop it with signals).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Kills etcd (SIGKILL) and waits for it to exit.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts a stopped etcd again on the same ports and data.
    pub async fn start_again(&mut self) {
        self.spawn();
        self.wait_ready().await;
    }

    /// Starts etcd again on the same ports and data.
    pub async fn restart(&mut self) {
        self.stop();
        self.spawn();
        self.wait_ready().await;
    }
}

impl Drop for EtcdServer {
    fn drop(&mut self) {
        self.stop();
    }
}
