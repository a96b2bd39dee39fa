//! The black-box test harness: a real generic server on 127.0.0.1 over TLS, built through the
//! public life cycle (`Config` → `complete` → `new` → `prepare_run` → `run`), and clients
//! that talk to it over HTTP/1.1 and HTTP/2.
#![allow(dead_code)]

pub mod client;
pub mod lifecycle;
pub mod pki;

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use apiserver::authn::{AuthenticatorOptions, build_authenticator};
use apiserver::authz::{AuthorizationMode, build_authorizer};
use apiserver::body::{Request, Response, with_content_type};
use apiserver::filters::{HttpService, service_fn};
use apiserver::server::lifecycle::{LifecycleSignals, SignalRecorder};
use apiserver::server::run::RunError;
use apiserver::server::serving::{BindAddress, CertKeyFiles, DynamicClientCa, SecureServingInfo};
use apiserver::server::{Config, DelegationTarget, EmptyDelegate, GenericApiServer};
use http::StatusCode;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

#[allow(unused_imports)]
pub use client::{Client, Conn, Proto, Reply};
pub use pki::{Ca, Pem};

/// Polls `check` until it returns true, failing the test after `deadline`.
pub async fn eventually<F, Fut>(deadline: Duration, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let start = tokio::time::Instant::now();
    loop {
        if check().await {
            return;
        }
        if start.elapsed() > deadline {
            panic!("timed out after {deadline:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A running test server.
pub struct TestServer {
    pub addr: std::net::SocketAddr,
    pub ca: Arc<Ca>,
    pub dir: tempfile::TempDir,
    pub stop: CancellationToken,
    pub signals: LifecycleSignals,
    pub recorder: Arc<SignalRecorder>,
    pub run: Option<JoinHandle<Result<(), RunError>>>,
    pub admin: Pem,
    pub loopback_token: String,
    /// A duplicate of the listening socket, if asked for (to break the listener from
    /// outside; while it exists the socket stays open after the server closed its copy).
    pub listener: Option<std::net::TcpListener>,
}

/// Files of the test PKI.
pub struct TestPki {
    pub ca: Arc<Ca>,
    pub dir: tempfile::TempDir,
    pub serving: CertKeyFiles,
    pub client_ca_file: PathBuf,
}

impl TestPki {
    /// A CA, a serving certificate for localhost/127.0.0.1 and the CA file as client CA.
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let ca = Arc::new(Ca::new("test-ca"));
        let serving = ca.serving("localhost", &["localhost", "127.0.0.1"]);
        let cert = dir.path().join("serving.crt");
        let key = dir.path().join("serving.key");
        std::fs::write(&cert, &serving.cert).expect("write");
        std::fs::write(&key, &serving.key).expect("write");
        let client_ca_file = dir.path().join("client-ca.crt");
        std::fs::write(&client_ca_file, &ca.pem.cert).expect("write");
        TestPki {
            ca,
            dir,
            serving: CertKeyFiles { cert, key },
            client_ca_file,
        }
    }
}

type ConfigureFn = Box<dyn FnOnce(&mut Config, &TestPki)>;
type InstallFn = Box<dyn FnOnce(&GenericApiServer, std::net::SocketAddr)>;

/// Builds a test server. `configure` adjusts the config; `install` adds routes and hooks.
pub struct TestServerBuilder {
    configure: Vec<ConfigureFn>,
    install: Vec<InstallFn>,
    anonymous: bool,
    modes: Vec<AuthorizationMode>,
    token_file: Option<String>,
    delegate: Option<Arc<dyn DelegationTarget>>,
    keep_listener: bool,
}

impl Default for TestServerBuilder {
    fn default() -> Self {
        TestServerBuilder {
            configure: Vec::new(),
            install: Vec::new(),
            anonymous: true,
            modes: vec![AuthorizationMode::AlwaysAllow],
            token_file: None,
            delegate: None,
            keep_listener: false,
        }
    }
}

impl TestServerBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn configure(mut self, f: impl FnOnce(&mut Config, &TestPki) + 'static) -> Self {
        self.configure.push(Box::new(f));
        self
    }

    pub fn install(mut self, f: impl FnOnce(&GenericApiServer) + 'static) -> Self {
        self.install.push(Box::new(move |server, _addr| f(server)));
        self
    }

    /// Like `install`, also given the address the server will listen on (for hooks that
    /// reach the server over loopback before it hands them a loopback configuration).
    pub fn install_at(
        mut self,
        f: impl FnOnce(&GenericApiServer, std::net::SocketAddr) + 'static,
    ) -> Self {
        self.install.push(Box::new(f));
        self
    }

    /// Keeps a duplicate of the listening socket in [`TestServer::listener`].
    pub fn keep_listener(mut self) -> Self {
        self.keep_listener = true;
        self
    }

    /// The server delegates unknown paths to `delegate` (default: an empty delegate).
    pub fn delegate(mut self, delegate: Arc<dyn DelegationTarget>) -> Self {
        self.delegate = Some(delegate);
        self
    }

    pub fn anonymous(mut self, allowed: bool) -> Self {
        self.anonymous = allowed;
        self
    }

    pub fn authorization(mut self, modes: Vec<AuthorizationMode>) -> Self {
        self.modes = modes;
        self
    }

    /// Authenticates bearer tokens from this `--token-auth-file` CSV content.
    pub fn token_file(mut self, csv: &str) -> Self {
        self.token_file = Some(csv.to_string());
        self
    }

    /// Starts the server and waits until it listens.
    pub async fn start(self) -> TestServer {
        let pki = TestPki::new();
        let recorder = SignalRecorder::new();
        let mut config = Config::new(Some(recorder.clone()));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let listener_dup = self
            .keep_listener
            .then(|| listener.try_clone().expect("dup listener"));
        let client_ca = DynamicClientCa::new(&pki.client_ca_file);
        let mut info = SecureServingInfo::new(BindAddress::Listener(listener), pki.serving.clone());
        info.client_ca = Some(client_ca.clone());
        config.secure_serving = Some(info);
        let token_file = self.token_file.map(|csv| {
            let path = pki.dir.path().join("tokens.csv");
            std::fs::write(&path, csv).expect("write token file");
            path
        });
        config.authenticator = build_authenticator(&AuthenticatorOptions {
            client_ca: Some(Arc::new(client_ca)),
            token_file,
            anonymous: self.anonymous,
            anonymous_paths: Vec::new(),
            request_header: None,
            token_authenticators: Vec::new(),
            token_success_cache_ttl: std::time::Duration::ZERO,
        })
        .expect("authenticator");
        config.authorizer = Some(build_authorizer(&self.modes).expect("authorizer"));
        config.systemd_notify = false;
        for f in self.configure {
            f(&mut config, &pki);
        }
        let loopback_token = config.loopback.bearer_token.clone();
        let signals = config.lifecycle_signals.clone();
        let server = config
            .complete()
            .new(
                "test-apiserver",
                self.delegate
                    .unwrap_or_else(|| Arc::new(EmptyDelegate::new())),
            )
            .expect("new server");
        for f in self.install {
            f(&server, addr);
        }
        let prepared = server.prepare_run();
        let stop = CancellationToken::new();
        let run = tokio::spawn(prepared.run(stop.clone()));
        let admin = pki.ca.client("admin", &["system:masters"]);
        let server = TestServer {
            addr,
            ca: pki.ca.clone(),
            dir: pki.dir,
            stop,
            signals,
            recorder,
            run: Some(run),
            admin,
            loopback_token,
            listener: listener_dup,
        };
        let client = server.client();
        eventually(Duration::from_secs(20), "the server to listen", || {
            let client = client.clone();
            async move { client.get(Proto::H1, "/livez/ping").await.is_ok() }
        })
        .await;
        server
    }
}

impl TestServer {
    /// An anonymous client.
    pub fn client(&self) -> Client {
        Client::new(self.addr, &self.ca.pem.cert, "localhost")
    }

    /// A client authenticated as `admin` in `system:masters`.
    pub fn admin_client(&self) -> Client {
        self.client()
            .with_identity(&self.admin.cert, &self.admin.key)
    }

    /// A client with a certificate for `user` in `groups`.
    pub fn user_client(&self, user: &str, groups: &[&str]) -> Client {
        let pem = self.ca.client(user, groups);
        self.client().with_identity(&pem.cert, &pem.key)
    }

    /// Waits until /readyz answers 200.
    pub async fn wait_ready(&self) {
        let client = self.admin_client();
        eventually(Duration::from_secs(20), "/readyz to be 200", || {
            let client = client.clone();
            async move {
                matches!(client.get(Proto::H1, "/readyz").await, Ok(r) if r.status == StatusCode::OK)
            }
        })
        .await;
    }

    /// Requests shutdown and waits for `run` to return.
    pub async fn shutdown(&mut self) -> Result<(), RunError> {
        self.stop.cancel();
        self.join().await
    }

    /// Waits for `run` to return.
    pub async fn join(&mut self) -> Result<(), RunError> {
        let run = self.run.take().expect("run handle");
        tokio::time::timeout(Duration::from_secs(60), run)
            .await
            .expect("run returned in time")
            .expect("run task")
    }
}

/// A handler answering 200 with `text`.
pub fn text_handler(text: &'static str) -> HttpService {
    service_fn(
        move |_req: Request| async move { with_content_type(StatusCode::OK, "text/plain", text) },
    )
}

/// A handler that waits for `release` before answering 200 `done`.
pub fn blocking_handler(
    started: Arc<tokio::sync::Notify>,
    release: CancellationToken,
) -> HttpService {
    service_fn(move |_req: Request| {
        let started = started.clone();
        let release = release.clone();
        async move {
            started.notify_one();
            release.cancelled().await;
            with_content_type(StatusCode::OK, "text/plain", "done")
        }
    })
}

/// Reads a handler's response type, for closures that build responses.
pub type Handled = Response;

/// A handler that never answers (until the request is dropped).
pub fn pending_handler() -> HttpService {
    service_fn(|_req: Request| async move {
        std::future::pending::<()>().await;
        with_content_type(StatusCode::OK, "text/plain", "unreachable")
    })
}

/// A handler that panics.
pub fn panic_handler() -> HttpService {
    service_fn(|req: Request| async move {
        if req.uri().path().starts_with("/panic") {
            panic!("test handler panics on purpose");
        }
        with_content_type(StatusCode::OK, "text/plain", "unreachable")
    })
}

/// A handler answering `name|uid|group1,group2` of the user it sees on the request.
pub fn echo_user_handler() -> HttpService {
    service_fn(|req: Request| async move {
        let body = match req.extensions().get::<apiserver::request::RequestUser>() {
            Some(user) => format!("{}|{}|{}", user.0.name, user.0.uid, user.0.groups.join(",")),
            None => "no user".to_string(),
        };
        with_content_type(StatusCode::OK, "text/plain", body)
    })
}

/// A handler that adds `warnings` (agent `-`) and answers 200 `warned`.
pub fn warning_handler(warnings: &'static [&'static str]) -> HttpService {
    service_fn(move |req: Request| async move {
        for text in warnings {
            apiserver::request::warning::add_warning(req.extensions(), "-", text);
        }
        with_content_type(StatusCode::OK, "text/plain", "warned")
    })
}
