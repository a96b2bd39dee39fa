//! Certificates reloaded from files (upstream `DynamicServingCertificateController` with its
//! file-backed serving, SNI and CA providers).
//!
//! Files are re-read on every file-system event in their directories and every refresh
//! interval. A changed, valid content set rebuilds the TLS configuration and swaps it in
//! atomically; broken content (empty, unparsable, key not matching) is logged and the previous
//! content is kept. New handshakes see the new configuration; open connections are untouched.

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arc_swap::{ArcSwap, ArcSwapOption};
use notify::{EventKind, RecursiveMode, Watcher};
use rustls::DistinguishedName;
use rustls::ServerConfig;
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio_util::sync::CancellationToken;

use super::sni::{NamedCerts, SniEntry, SniResolver, derived_names};
use super::tls::TlsBase;
use super::{CertKeyFiles, ServeError, SniCertKey, StaticSniCert};
use crate::authn::ClientCaSource;

/// The client CA bundle, kept current from its file while serving. Hand a clone to the x509
/// authenticator: it sees every reload.
#[derive(Clone, Debug)]
pub struct DynamicClientCa {
    path: PathBuf,
    current: Arc<ArcSwapOption<Vec<CertificateDer<'static>>>>,
}

impl DynamicClientCa {
    /// A handle for the CA bundle in `path`. Nothing is loaded until serving starts (until then
    /// [`ClientCaSource::ca_certificates`] returns `None`).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        DynamicClientCa {
            path: path.into(),
            current: Arc::new(ArcSwapOption::empty()),
        }
    }

    /// The CA bundle file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn store(&self, certs: Arc<Vec<CertificateDer<'static>>>) {
        self.current.store(Some(certs));
    }
}

impl ClientCaSource for DynamicClientCa {
    fn ca_certificates(&self) -> Option<Arc<Vec<CertificateDer<'static>>>> {
        self.current.load_full()
    }
}

/// A loaded certificate/key pair and the bytes it came from.
#[derive(Clone)]
struct LoadedPair {
    cert_pem: Vec<u8>,
    key_pem: Vec<u8>,
    key: Arc<CertifiedKey>,
    derived_names: Vec<String>,
}

/// A loaded CA bundle and the bytes it came from.
#[derive(Clone)]
struct LoadedCa {
    pem: Vec<u8>,
    certs: Arc<Vec<CertificateDer<'static>>>,
    subjects: Vec<DistinguishedName>,
}

#[derive(Clone, Default)]
struct State {
    serving: Option<LoadedPair>,
    sni: Vec<Option<LoadedPair>>,
    ca: Option<LoadedCa>,
}

/// One configuration generation: the base config (resolver without local IP) and the names.
pub(crate) struct Snapshot {
    config: Arc<ServerConfig>,
    certs: Arc<NamedCerts>,
}

/// The live TLS configuration and the files it comes from.
pub(crate) struct DynamicCertificates {
    serving_files: Option<CertKeyFiles>,
    sni_files: Vec<SniCertKey>,
    /// In-memory SNI certificates; they precede the file-based ones.
    static_sni: Vec<SniEntry>,
    client_ca: Option<DynamicClientCa>,
    base: TlsBase,
    state: Mutex<State>,
    current: ArcSwap<Snapshot>,
}

fn pair_name(purpose: &str, cert: &Path, key: &Path) -> String {
    format!("{purpose}::{}::{}", cert.display(), key.display())
}

fn cert_error(name: &str, message: impl std::fmt::Display) -> ServeError {
    ServeError::Certificate {
        name: name.to_string(),
        message: message.to_string(),
    }
}

/// Reads and parses a pair; `Ok(None)` when the bytes equal `previous`.
fn load_pair(
    name: &str,
    cert: &Path,
    key: &Path,
    previous: Option<&LoadedPair>,
    base: &TlsBase,
) -> Result<Option<LoadedPair>, ServeError> {
    let cert_pem = std::fs::read(cert).map_err(|e| cert_error(name, e))?;
    let key_pem = std::fs::read(key).map_err(|e| cert_error(name, e))?;
    if let Some(prev) = previous
        && prev.cert_pem == cert_pem
        && prev.key_pem == key_pem
    {
        return Ok(None);
    }
    if cert_pem.is_empty() {
        return Err(cert_error(
            name,
            format!("empty certificate file {}", cert.display()),
        ));
    }
    if key_pem.is_empty() {
        return Err(cert_error(
            name,
            format!("empty key file {}", key.display()),
        ));
    }
    parse_pair(name, cert_pem, key_pem, base).map(Some)
}

/// Parses a PEM certificate chain and key, checking that they belong together.
fn parse_pair(
    name: &str,
    cert_pem: Vec<u8>,
    key_pem: Vec<u8>,
    base: &TlsBase,
) -> Result<LoadedPair, ServeError> {
    let chain = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| cert_error(name, format!("failed to parse certificate: {e}")))?;
    let Some(leaf) = chain.first() else {
        return Err(cert_error(
            name,
            "no certificate found in the certificate file",
        ));
    };
    let derived = derived_names(leaf.as_ref()).map_err(|e| cert_error(name, e))?;
    let private = PrivateKeyDer::from_pem_slice(&key_pem)
        .map_err(|e| cert_error(name, format!("failed to parse private key: {e}")))?;
    let signing = base
        .provider
        .key_provider
        .load_private_key(private)
        .map_err(|e| cert_error(name, format!("failed to load private key: {e}")))?;
    let key = CertifiedKey::new(chain, signing);
    key.keys_match()
        .map_err(|e| cert_error(name, format!("private key does not match certificate: {e}")))?;
    Ok(LoadedPair {
        cert_pem,
        key_pem,
        key: Arc::new(key),
        derived_names: derived,
    })
}

/// Reads and parses a CA bundle; `Ok(None)` when the bytes equal `previous`.
fn load_ca(path: &Path, previous: Option<&LoadedCa>) -> Result<Option<LoadedCa>, ServeError> {
    let name = format!("client-ca-bundle::{}", path.display());
    let pem = std::fs::read(path).map_err(|e| cert_error(&name, e))?;
    if previous.is_some_and(|p| p.pem == pem) {
        return Ok(None);
    }
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| cert_error(&name, format!("failed to parse CA bundle: {e}")))?;
    if certs.is_empty() {
        return Err(cert_error(&name, "no certificates found in the CA bundle"));
    }
    let mut subjects = Vec::with_capacity(certs.len());
    for cert in &certs {
        let anchor = webpki::anchor_from_trusted_cert(cert)
            .map_err(|e| cert_error(&name, format!("failed to parse CA certificate: {e}")))?;
        subjects.push(DistinguishedName::in_sequence(anchor.subject.as_ref()));
    }
    Ok(Some(LoadedCa {
        pem,
        certs: Arc::new(certs),
        subjects,
    }))
}

impl DynamicCertificates {
    /// Loads every file once; any failure is fatal here (upstream primes with `RunOnce`).
    pub(crate) fn load(
        serving_files: Option<CertKeyFiles>,
        static_sni: Vec<StaticSniCert>,
        sni_files: Vec<SniCertKey>,
        client_ca: Option<DynamicClientCa>,
        base: TlsBase,
    ) -> Result<Arc<Self>, ServeError> {
        if serving_files.is_none() && sni_files.is_empty() && static_sni.is_empty() {
            return Err(ServeError::NoCertificate);
        }
        let static_sni = static_sni
            .into_iter()
            .enumerate()
            .map(|(i, c)| {
                let pair = parse_pair(
                    &format!("static-sni-cert-{i}"),
                    c.cert_pem,
                    c.key_pem,
                    &base,
                )?;
                Ok(SniEntry {
                    key: pair.key,
                    explicit_names: c.names,
                    derived_names: pair.derived_names,
                })
            })
            .collect::<Result<Vec<_>, ServeError>>()?;
        let mut state = State::default();
        if let Some(files) = &serving_files {
            let name = pair_name("serving-cert", &files.cert, &files.key);
            state.serving = load_pair(&name, &files.cert, &files.key, None, &base)?;
        }
        for files in &sni_files {
            let name = pair_name("sni-serving-cert", &files.cert, &files.key);
            state
                .sni
                .push(load_pair(&name, &files.cert, &files.key, None, &base)?);
        }
        if let Some(ca) = &client_ca {
            state.ca = load_ca(ca.path(), None)?;
        }
        let snapshot = build_snapshot(&base, &state, &static_sni, &sni_files)?;
        if let (Some(handle), Some(loaded)) = (&client_ca, &state.ca) {
            handle.store(loaded.certs.clone());
        }
        Ok(Arc::new(DynamicCertificates {
            serving_files,
            sni_files,
            static_sni,
            client_ca,
            base,
            state: Mutex::new(state),
            current: ArcSwap::from_pointee(snapshot),
        }))
    }

    /// The configuration for a new connection arriving at `local_ip`.
    pub(crate) fn config_for(&self, local_ip: Option<IpAddr>) -> Arc<ServerConfig> {
        let snapshot = self.current.load();
        // Go clones the config per handshake in GetConfigForClient; here the clone carries the
        // local IP that selects a certificate when the client sends no SNI.
        let mut config = (*snapshot.config).clone();
        config.cert_resolver = Arc::new(SniResolver {
            certs: snapshot.certs.clone(),
            local_ip,
        });
        Arc::new(config)
    }

    /// The certificate served without SNI (tests).
    #[cfg(test)]
    pub(crate) fn default_cert(&self) -> Option<Arc<CertifiedKey>> {
        self.current.load().certs.select(None, None)
    }

    /// The client CA handle, if configured.
    pub(crate) fn client_ca(&self) -> Option<DynamicClientCa> {
        self.client_ca.clone()
    }

    /// Re-reads every file; swaps in a new configuration when something really changed.
    /// Returns whether a new configuration was installed.
    pub(crate) fn reload(&self) -> bool {
        let Ok(mut state) = self.state.lock() else {
            return false;
        };
        let mut next = state.clone();
        let mut changed = false;
        if let Some(files) = &self.serving_files {
            let name = pair_name("serving-cert", &files.cert, &files.key);
            match load_pair(
                &name,
                &files.cert,
                &files.key,
                next.serving.as_ref(),
                &self.base,
            ) {
                Ok(Some(pair)) => {
                    next.serving = Some(pair);
                    changed = true;
                }
                Ok(None) => {}
                Err(e) => tracing::error!(
                    "failed to reload serving certificate, keeping the previous one: {e}"
                ),
            }
        }
        for (i, files) in self.sni_files.iter().enumerate() {
            let name = pair_name("sni-serving-cert", &files.cert, &files.key);
            let previous = next.sni.get(i).and_then(Option::as_ref);
            match load_pair(&name, &files.cert, &files.key, previous, &self.base) {
                Ok(Some(pair)) => {
                    if let Some(slot) = next.sni.get_mut(i) {
                        *slot = Some(pair);
                        changed = true;
                    }
                }
                Ok(None) => {}
                Err(e) => tracing::error!(
                    "failed to reload SNI certificate, keeping the previous one: {e}"
                ),
            }
        }
        let mut ca_changed = false;
        if let Some(ca) = &self.client_ca {
            match load_ca(ca.path(), next.ca.as_ref()) {
                Ok(Some(loaded)) => {
                    next.ca = Some(loaded);
                    changed = true;
                    ca_changed = true;
                }
                Ok(None) => {}
                Err(e) => tracing::error!(
                    "failed to reload client CA bundle, keeping the previous one: {e}"
                ),
            }
        }
        if !changed {
            return false;
        }
        match build_snapshot(&self.base, &next, &self.static_sni, &self.sni_files) {
            Ok(snapshot) => {
                self.current.store(Arc::new(snapshot));
                if ca_changed && let (Some(handle), Some(loaded)) = (&self.client_ca, &next.ca) {
                    handle.store(loaded.certs.clone());
                }
                *state = next;
                tracing::info!("loaded a new serving certificate configuration");
                true
            }
            Err(e) => {
                tracing::error!(
                    "failed to build the TLS configuration, keeping the previous one: {e}"
                );
                false
            }
        }
    }

    /// [`Self::reload`] off the async worker threads (it reads files).
    async fn reload_in_background(self: &Arc<Self>) {
        let this = self.clone();
        if let Err(e) = tokio::task::spawn_blocking(move || this.reload()).await {
            tracing::error!("certificate reload failed: {e}");
        }
    }

    /// The watched files.
    fn files(&self) -> Vec<&Path> {
        let mut files: Vec<&Path> = Vec::new();
        if let Some(f) = &self.serving_files {
            files.extend([f.cert.as_path(), f.key.as_path()]);
        }
        for f in &self.sni_files {
            files.extend([f.cert.as_path(), f.key.as_path()]);
        }
        if let Some(ca) = &self.client_ca {
            files.push(ca.path());
        }
        files
    }

    /// Watches the files' directories and re-reads on every change and every `interval`, until
    /// `stop` fires. Directories (not files) are watched so that Kubernetes' `..data` symlink
    /// swaps and editors' rename-into-place are seen; see [`watched_directories`].
    pub(crate) fn spawn_reloader(self: &Arc<Self>, interval: Duration, stop: CancellationToken) {
        let this = self.clone();
        tokio::spawn(async move { this.reload_loop(interval, stop).await });
    }

    async fn reload_loop(self: Arc<Self>, interval: Duration, stop: CancellationToken) {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<notify::Result<notify::Event>>();
        let watcher = match notify::recommended_watcher(move |event| {
            let _ = tx.send(event);
        }) {
            Ok(w) => Some(w),
            Err(e) => {
                tracing::error!(
                    "cannot watch certificate files, relying on periodic re-reads: {e}"
                );
                None
            }
        };
        let mut watches = DirectoryWatches::new(watcher);
        watches.refresh(&self.files());
        let period = interval.max(Duration::from_millis(10));
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = stop.cancelled() => break,
                event = rx.recv() => {
                    // Events come in bursts: take them all, then re-read once if any of them
                    // was a change (reading the files, ours included, is not).
                    let mut changed = false;
                    let mut next = event;
                    loop {
                        match next {
                            Some(Ok(event)) if is_change(&event.kind) => {
                                changed = true;
                                watches.forget_removed(&event);
                            }
                            Some(Ok(_)) => {}
                            Some(Err(e)) => tracing::debug!("certificate watch error: {e}"),
                            None => {}
                        }
                        match rx.try_recv() {
                            Ok(more) => next = Some(more),
                            Err(_) => break,
                        }
                    }
                    if changed {
                        watches.refresh(&self.files());
                        self.reload_in_background().await;
                    }
                }
                _ = tick.tick() => {
                    watches.refresh(&self.files());
                    self.reload_in_background().await;
                }
            }
        }
    }
}

/// Whether a file-system event can change what the files hold: writes, creations, renames,
/// removals and attribute changes. Opening and reading (which every reload does, and would
/// otherwise trigger the next one) are not.
pub(crate) fn is_change(kind: &EventKind) -> bool {
    use notify::event::{AccessKind, AccessMode};
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        _ => true,
    }
}

/// The directories to watch for `files`: each file's own directory, and the directory holding
/// every symbolic link on the way to it — a file reached through a swapped `..data` link (or a
/// linked directory) changes when that link is replaced, which only its parent directory sees.
fn watched_directories(files: &[&Path]) -> BTreeSet<PathBuf> {
    let parent_of = |p: &Path| match p.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut dirs = BTreeSet::new();
    for file in files {
        dirs.insert(parent_of(file));
        let mut prefix = PathBuf::new();
        for component in file.components() {
            prefix.push(component);
            if std::fs::symlink_metadata(&prefix).is_ok_and(|m| m.file_type().is_symlink()) {
                dirs.insert(parent_of(&prefix));
            }
        }
    }
    dirs
}

/// The inotify watches of the certificate directories, each with the directory it resolved to
/// when it was set: a watch follows the directory it was set on, so one whose path now
/// resolves elsewhere (a swapped link) is set again.
pub(crate) struct DirectoryWatches {
    watcher: Option<notify::RecommendedWatcher>,
    watched: std::collections::BTreeMap<PathBuf, Option<PathBuf>>,
}

impl DirectoryWatches {
    pub(crate) fn new(watcher: Option<notify::RecommendedWatcher>) -> Self {
        DirectoryWatches {
            watcher,
            watched: Default::default(),
        }
    }

    /// Watches every directory `files` need that is not watched, or not where its path now
    /// leads.
    pub(crate) fn refresh(&mut self, files: &[&Path]) {
        let Some(watcher) = self.watcher.as_mut() else {
            return;
        };
        for dir in watched_directories(files) {
            let resolved = std::fs::canonicalize(&dir).ok();
            match self.watched.get(&dir) {
                Some(current) if *current == resolved => continue,
                Some(_) => {
                    let _ = watcher.unwatch(&dir);
                    self.watched.remove(&dir);
                }
                None => {}
            }
            match watcher.watch(&dir, RecursiveMode::NonRecursive) {
                Ok(()) => {
                    self.watched.insert(dir, resolved);
                }
                Err(e) => tracing::warn!("cannot watch {}: {e}", dir.display()),
            }
        }
    }

    /// A watched directory that went away or moved has a dead watch: drop it, so that the
    /// next refresh sets it again.
    pub(crate) fn forget_removed(&mut self, event: &notify::Event) {
        use notify::event::ModifyKind;
        if !matches!(
            event.kind,
            EventKind::Remove(_) | EventKind::Modify(ModifyKind::Name(_))
        ) {
            return;
        }
        for path in &event.paths {
            if self.watched.remove(path).is_some()
                && let Some(w) = self.watcher.as_mut()
            {
                let _ = w.unwatch(path);
            }
        }
    }
}

fn build_snapshot(
    base: &TlsBase,
    state: &State,
    static_sni: &[SniEntry],
    sni_files: &[SniCertKey],
) -> Result<Snapshot, ServeError> {
    let sni: Vec<SniEntry> = static_sni
        .iter()
        .cloned()
        .chain(
            state
                .sni
                .iter()
                .zip(sni_files)
                .filter_map(|(loaded, files)| {
                    loaded.as_ref().map(|pair| SniEntry {
                        key: pair.key.clone(),
                        explicit_names: files.names.clone(),
                        derived_names: pair.derived_names.clone(),
                    })
                }),
        )
        .collect();
    let certs = Arc::new(NamedCerts::new(
        state.serving.as_ref().map(|p| p.key.clone()),
        &sni,
    ));
    let resolver = Arc::new(SniResolver {
        certs: certs.clone(),
        local_ip: None,
    });
    let subjects = state.ca.as_ref().map(|ca| ca.subjects.clone());
    let config = base.build(resolver, subjects)?;
    Ok(Snapshot {
        config: Arc::new(config),
        certs,
    })
}
