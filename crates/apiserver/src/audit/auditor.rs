//! The auditor: the policy evaluator and the backend, bundled for the audit filters and the
//! failed-authentication audit, and built from the `--audit-*` flags.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::backend::{Backend, ShutdownFuture};
use super::buffered::{BatchConfig, Throttle};
use super::event::{Event, ResponseStatus, micro_time};
use super::level::{Level, Stage};
use super::log::{LogBackend, LogFormat};
use super::metrics;
use super::mode::{Mode, Union};
use super::policy::{AuditAttributes, Policy, PolicyRuleEvaluator, RequestAuditConfig};
use super::rotate::RotationConfig;
use super::truncate::{TruncateConfig, TruncatingBackend};
use super::webhook::{DEFAULT_INITIAL_BACKOFF, WebhookBackend};
use super::{AuditContext, AuditError, FailedAuthenticationAuditor};
use crate::request::ReceivedTimestamp;

/// The only event version upstream still serves.
pub const AUDIT_V1: &str = "audit.k8s.io/v1";

/// The `--audit-<plugin>-mode` and `--audit-<plugin>-batch-*` flags of one backend.
#[derive(Clone, Debug, PartialEq)]
pub struct BatchOptions {
    /// `batch`, `blocking` or `blocking-strict`.
    pub mode: String,
    /// `--audit-<plugin>-batch-buffer-size`.
    pub buffer_size: i64,
    /// `--audit-<plugin>-batch-max-size`.
    pub max_batch_size: i64,
    /// `--audit-<plugin>-batch-max-wait`.
    pub max_batch_wait: Duration,
    /// `--audit-<plugin>-batch-throttle-enable`.
    pub throttle_enable: bool,
    /// `--audit-<plugin>-batch-throttle-qps`.
    pub throttle_qps: f32,
    /// `--audit-<plugin>-batch-throttle-burst`.
    pub throttle_burst: i64,
}

impl BatchOptions {
    /// Upstream's log defaults: `blocking`; batches of one, no throttle.
    pub fn log_defaults() -> Self {
        Self::from_config("blocking", BatchConfig::log_defaults())
    }

    /// Upstream's webhook defaults: `batch` of up to 400 events every 30 s, 10 batches a
    /// second (bursts of 15).
    pub fn webhook_defaults() -> Self {
        Self::from_config("batch", BatchConfig::webhook_defaults())
    }

    fn from_config(mode: &str, config: BatchConfig) -> Self {
        BatchOptions {
            mode: mode.to_string(),
            buffer_size: config.buffer_size as i64,
            max_batch_size: config.max_batch_size as i64,
            max_batch_wait: config.max_batch_wait,
            throttle_enable: config.throttle.is_some(),
            throttle_qps: config.throttle.map(|t| t.qps).unwrap_or(0.0),
            throttle_burst: config.throttle.map(|t| t.burst as i64).unwrap_or(0),
        }
    }

    /// Upstream's `validateBackendBatchOptions` (the batch values only in `batch` mode).
    fn validate(&self, plugin: &str) -> Result<Mode, String> {
        let mode = Mode::parse(plugin, &self.mode)?;
        if mode != Mode::Batch {
            return Ok(mode);
        }
        if self.buffer_size <= 0 {
            return Err(format!(
                "invalid audit batch {plugin} buffer size {}, must be a positive number",
                self.buffer_size
            ));
        }
        if self.max_batch_size <= 0 {
            return Err(format!(
                "invalid audit batch {plugin} max batch size {}, must be a positive number",
                self.max_batch_size
            ));
        }
        if self.throttle_enable {
            if self.throttle_qps <= 0.0 {
                return Err(format!(
                    "invalid audit batch {plugin} throttle QPS {}, must be a positive number",
                    self.throttle_qps
                ));
            }
            if self.throttle_burst <= 0 {
                return Err(format!(
                    "invalid audit batch {plugin} throttle burst {}, must be a positive number",
                    self.throttle_burst
                ));
            }
        }
        Ok(mode)
    }

    fn config(&self, async_delegate: bool) -> BatchConfig {
        BatchConfig {
            buffer_size: usize::try_from(self.buffer_size).unwrap_or(1),
            max_batch_size: usize::try_from(self.max_batch_size).unwrap_or(1),
            max_batch_wait: self.max_batch_wait,
            throttle: self.throttle_enable.then(|| Throttle {
                qps: self.throttle_qps,
                burst: usize::try_from(self.throttle_burst).unwrap_or(1),
            }),
            async_delegate,
        }
    }
}

/// The `--audit-<plugin>-truncate-*` flags of one backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TruncateOptions {
    /// `--audit-<plugin>-truncate-enabled`.
    pub enabled: bool,
    /// `--audit-<plugin>-truncate-max-batch-size`.
    pub max_batch_size: i64,
    /// `--audit-<plugin>-truncate-max-event-size`.
    pub max_event_size: i64,
}

impl Default for TruncateOptions {
    fn default() -> Self {
        let config = TruncateConfig::default();
        TruncateOptions {
            enabled: false,
            max_batch_size: config.max_batch_size,
            max_event_size: config.max_event_size,
        }
    }
}

impl TruncateOptions {
    /// Upstream's `AuditTruncateOptions.Validate` (checked whether enabled or not).
    fn validate(&self, plugin: &str) -> Result<(), String> {
        if self.max_event_size <= 0 {
            return Err(format!(
                "invalid audit truncate {plugin} max event size {}, must be a positive number",
                self.max_event_size
            ));
        }
        if self.max_batch_size < self.max_event_size {
            return Err(format!(
                "invalid audit truncate {plugin} max batch size {}, must be greater than max event size ({})",
                self.max_batch_size, self.max_event_size
            ));
        }
        Ok(())
    }

    fn wrap(&self, backend: Arc<dyn Backend>) -> Arc<dyn Backend> {
        if !self.enabled {
            return backend;
        }
        Arc::new(TruncatingBackend::new(
            backend,
            TruncateConfig {
                max_event_size: self.max_event_size,
                max_batch_size: self.max_batch_size,
            },
        ))
    }
}

/// Upstream's `validateGroupVersionString`: only `audit.k8s.io/v1` is known.
fn validate_version(version: &str) -> Result<(), String> {
    if version.matches('/').count() > 1 {
        return Err(format!("unexpected GroupVersion string: {version}"));
    }
    if version != AUDIT_V1 {
        return Err(format!(
            "invalid group version, allowed versions are [{AUDIT_V1:?}]"
        ));
    }
    Ok(())
}

/// The `--audit-*` options.
#[derive(Clone, Debug, PartialEq)]
pub struct AuditOptions {
    /// `--audit-policy-file`; auditing is off without it.
    pub policy_file: Option<String>,
    /// `--audit-log-path`; `-` is stdout; the log backend is off without it.
    pub log_path: Option<String>,
    /// `--audit-log-maxage` (days to keep backups; 0 = no limit).
    pub log_max_age: i64,
    /// `--audit-log-maxbackup` (backups kept; 0 = no limit).
    pub log_max_backups: i64,
    /// `--audit-log-maxsize` (MB before rotation; 0 = lumberjack's 100 MB).
    pub log_max_size: i64,
    /// `--audit-log-format`: `json` or `legacy`.
    pub log_format: String,
    /// `--audit-log-compress`: gzip rotated files.
    pub log_compress: bool,
    /// `--audit-log-version`.
    pub log_version: String,
    /// `--audit-log-mode` and `--audit-log-batch-*`.
    pub log_batch: BatchOptions,
    /// `--audit-log-truncate-*`.
    pub log_truncate: TruncateOptions,
    /// `--audit-webhook-config-file`: the webhook backend is off without it.
    pub webhook_config_file: Option<String>,
    /// `--audit-webhook-initial-backoff`.
    pub webhook_initial_backoff: Duration,
    /// `--audit-webhook-mode` and `--audit-webhook-batch-*`.
    pub webhook_batch: BatchOptions,
    /// `--audit-webhook-truncate-*`.
    pub webhook_truncate: TruncateOptions,
    /// `--audit-webhook-version`.
    pub webhook_version: String,
}

impl Default for AuditOptions {
    /// Upstream's defaults (`NewAuditOptions`).
    fn default() -> Self {
        AuditOptions {
            policy_file: None,
            log_path: None,
            log_max_age: 0,
            log_max_backups: 0,
            log_max_size: 0,
            log_format: "json".to_string(),
            log_compress: false,
            log_version: AUDIT_V1.to_string(),
            log_batch: BatchOptions::log_defaults(),
            log_truncate: TruncateOptions::default(),
            webhook_config_file: None,
            webhook_initial_backoff: DEFAULT_INITIAL_BACKOFF,
            webhook_batch: BatchOptions::webhook_defaults(),
            webhook_truncate: TruncateOptions::default(),
            webhook_version: AUDIT_V1.to_string(),
        }
    }
}

impl AuditOptions {
    /// Upstream's option validation, every error in its order (each backend's options only
    /// when that backend is configured).
    pub fn validation_errors(&self) -> Vec<String> {
        let mut errors = Vec::new();
        if self.log_enabled() {
            let plugin = super::log::PLUGIN_NAME;
            errors.extend(self.log_batch.validate(plugin).err());
            errors.extend(self.log_truncate.validate(plugin).err());
            errors.extend(validate_version(&self.log_version).err());
            errors.extend(self.log_format.parse::<LogFormat>().err());
            for (value, flag) in [
                (self.log_max_age, "maxage"),
                (self.log_max_backups, "maxbackup"),
                (self.log_max_size, "maxsize"),
            ] {
                if value < 0 {
                    errors.push(format!(
                        "--audit-log-{flag} {value} can't be a negative number"
                    ));
                }
            }
        }
        if self.webhook_enabled() {
            let plugin = super::webhook::PLUGIN_NAME;
            errors.extend(self.webhook_batch.validate(plugin).err());
            errors.extend(self.webhook_truncate.validate(plugin).err());
            errors.extend(validate_version(&self.webhook_version).err());
        }
        errors
    }

    /// [`AuditOptions::validation_errors`] as one error (the first).
    pub fn validate(&self) -> Result<(), AuditError> {
        match self.validation_errors().into_iter().next() {
            Some(e) => Err(AuditError::InvalidOption(e)),
            None => Ok(()),
        }
    }

    /// Whether the log backend is configured.
    fn log_enabled(&self) -> bool {
        self.log_path.as_deref().is_some_and(|p| !p.is_empty())
    }

    /// Whether the webhook backend is configured.
    fn webhook_enabled(&self) -> bool {
        self.webhook_config_file
            .as_deref()
            .is_some_and(|p| !p.is_empty())
    }

    /// The log backend, wrapped for its mode and truncation (upstream `newBackend`).
    fn log_backend(&self, path: &str) -> Result<Arc<dyn Backend>, AuditError> {
        let format = self
            .log_format
            .parse::<LogFormat>()
            .map_err(AuditError::InvalidOption)?;
        let rotation = RotationConfig::from_flags(
            self.log_max_size.max(0) as u64,
            self.log_max_backups.max(0) as usize,
            self.log_max_age.max(0) as u64,
            self.log_compress,
        );
        let log: Arc<dyn Backend> = Arc::new(LogBackend::new(path, format, rotation)?);
        let mode = self
            .log_batch
            .validate(super::log::PLUGIN_NAME)
            .map_err(AuditError::InvalidOption)?;
        Ok(self
            .log_truncate
            .wrap(mode.wrap(log, self.log_batch.config(false))))
    }

    /// The webhook backend, wrapped for its mode and truncation.
    fn webhook_backend(&self, config_file: &str) -> Result<Arc<dyn Backend>, AuditError> {
        let webhook: Arc<dyn Backend> = Arc::new(WebhookBackend::new(
            Path::new(config_file),
            self.webhook_initial_backoff,
        )?);
        let mode = self
            .webhook_batch
            .validate(super::webhook::PLUGIN_NAME)
            .map_err(AuditError::InvalidOption)?;
        Ok(self
            .webhook_truncate
            .wrap(mode.wrap(webhook, self.webhook_batch.config(true))))
    }
}

/// Policy evaluator plus backend: what the audit filters need.
#[derive(Debug)]
pub struct Auditor {
    evaluator: PolicyRuleEvaluator,
    backend: Arc<dyn Backend>,
}

impl Auditor {
    /// An auditor for `policy` sending events to `backend`.
    pub fn new(policy: Policy, backend: Arc<dyn Backend>) -> Arc<Self> {
        Arc::new(Auditor {
            evaluator: PolicyRuleEvaluator::new(policy),
            backend,
        })
    }

    /// Builds the auditor from the flags (upstream `AuditOptions.ApplyTo`): `Ok(None)` when
    /// auditing is off (no policy file, or no backend). The log file is opened and the
    /// webhook kubeconfig read here, so a bad path or kubeconfig fails at startup.
    pub fn from_options(options: &AuditOptions) -> Result<Option<Arc<Self>>, AuditError> {
        options.validate()?;
        let policy = match options.policy_file.as_deref().filter(|p| !p.is_empty()) {
            Some(file) => Some(Policy::load_file(file)?),
            None => None,
        };
        let mut backends: Vec<Arc<dyn Backend>> = Vec::new();
        if let Some(path) = options.log_path.as_deref().filter(|p| !p.is_empty()) {
            // Upstream opens the file even when no policy will send it events.
            let log = options.log_backend(path)?;
            if policy.is_some() {
                backends.push(log);
            } else {
                tracing::info!(
                    "No audit policy file provided, no events will be recorded for log backend"
                );
            }
        }
        if let Some(file) = options
            .webhook_config_file
            .as_deref()
            .filter(|p| !p.is_empty())
        {
            if policy.is_some() {
                backends.push(options.webhook_backend(file)?);
            } else {
                tracing::info!(
                    "No audit policy file provided, no events will be recorded for webhook backend"
                );
            }
        }
        let (Some(policy), Some(backend)) = (policy, Union::of(backends)) else {
            return Ok(None);
        };
        tracing::info!("Using audit backend: {}", backend.name());
        Ok(Some(Auditor::new(policy, backend)))
    }

    /// The policy evaluator.
    pub fn evaluator(&self) -> &PolicyRuleEvaluator {
        &self.evaluator
    }

    /// The backend.
    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    /// Starts the backend; call before serving. The server reports an error as
    /// `failed to run the audit backend: <err>`.
    pub fn run(&self) -> Result<(), AuditError> {
        self.backend.run()
    }

    /// Flushes and stops the backend; call after InFlightRequestsDrained.
    pub fn shutdown(&self) -> ShutdownFuture<'_> {
        self.backend.shutdown()
    }

    /// Evaluates the policy for a request (counted in `apiserver_audit_level_total`).
    pub fn evaluate(&self, attrs: &AuditAttributes) -> RequestAuditConfig {
        let config = self.evaluator.evaluate(attrs);
        metrics::observe_policy_level(config.level);
        config
    }

    /// Sends `event` at its stage unless the stage is omitted, stamping the stage time
    /// (`RequestReceived` keeps the received time, as upstream). Returns whether the backend
    /// accepted it (an omitted stage counts as accepted).
    pub fn emit(&self, event: &mut Event, omit_stages: &[Stage]) -> bool {
        if omit_stages.contains(&event.stage) {
            return true;
        }
        if event.stage == Stage::RequestReceived {
            event.stage_timestamp = event.request_received_timestamp.clone();
        } else {
            event.stage_timestamp = micro_time(SystemTime::now());
        }
        metrics::observe_event();
        self.backend.process_events(std::slice::from_ref(event))
    }
}

/// Fills the parts of an event that come from the request's audit context.
pub(crate) fn apply_context(event: &mut Event, context: Option<&AuditContext>) {
    if let Some(context) = context {
        event.annotations = context.annotations_at(event.level);
        event.impersonated_user = context.impersonated_user().as_ref().map(Into::into);
    }
}

impl Auditor {
    /// Audits a request a filter in front of the audit filter rejects with `code` (upstream's
    /// `withFailedRequestAudit`, which decorates the error writer): one event at stage
    /// `ResponseStarted` with `code` and `message`, if the policy audits the request.
    pub fn audit_failed_request(&self, request: &http::request::Parts, code: u16, message: &str) {
        let attrs = AuditAttributes::from_parts(request);
        let config = self.evaluate(&attrs);
        if config.level == Level::None {
            return;
        }
        let context = request.extensions.get::<Arc<AuditContext>>();
        let audit_id = context.map(|c| c.audit_id.as_str()).unwrap_or("");
        let received = request
            .extensions
            .get::<ReceivedTimestamp>()
            .map(|t| t.wall)
            .unwrap_or_else(SystemTime::now);
        let mut event = Event::from_request(request, &attrs, config.level, audit_id, received);
        apply_context(&mut event, context.map(Arc::as_ref));
        event.stage = Stage::ResponseStarted;
        event.response_status = Some(ResponseStatus {
            message: message.to_string(),
            ..ResponseStatus::code(code)
        });
        self.emit(&mut event, &config.omit_stages);
    }
}

impl FailedAuthenticationAuditor for Auditor {
    /// Upstream decorates the 401 writer, so the event is emitted at stage
    /// `ResponseStarted` when the 401 is written, with code 401 and `message`.
    fn audit_failed_authentication(&self, request: &http::request::Parts, message: &str) {
        self.audit_failed_request(request, 401, message);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::buffered::tests::MemoryBackend;
    use crate::audit::policy::PolicyRule;

    fn policy(level: Level, omit: Vec<Stage>) -> Policy {
        Policy {
            rules: vec![PolicyRule {
                level: Some(level),
                omit_stages: omit,
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn failed_authentication_is_audited() {
        let memory = Arc::new(MemoryBackend::default());
        let auditor = Auditor::new(policy(Level::Metadata, vec![]), memory.clone());
        let (mut parts, ()) = http::Request::builder()
            .uri("/api/v1/pods")
            .body(())
            .unwrap()
            .into_parts();
        parts.extensions.insert(AuditContext::new("id-1".into()));
        auditor
            .audit_failed_authentication(&parts, "Authentication failed, no credentials provided");
        let events = memory.events();
        assert_eq!(events.len(), 1);
        let json = events[0].to_json().unwrap();
        assert!(
            json.contains(r#""auditID":"id-1","stage":"ResponseStarted""#),
            "{json}"
        );
        assert!(json.contains(r#""user":{}"#), "{json}");
        assert!(
            json.contains(r#""responseStatus":{"metadata":{},"message":"Authentication failed, no credentials provided","code":401}"#),
            "{json}"
        );
    }

    #[test]
    fn failed_authentication_respects_omitted_stages_and_level_none() {
        let (parts, ()) = http::Request::new(()).into_parts();
        for p in [
            policy(Level::Metadata, vec![Stage::ResponseStarted]),
            policy(Level::None, vec![]),
        ] {
            let memory = Arc::new(MemoryBackend::default());
            let auditor = Auditor::new(p, memory.clone());
            auditor.audit_failed_authentication(&parts, "Authentication failed, attempted: bearer");
            assert!(memory.events().is_empty());
        }
    }

    #[test]
    fn options_build_the_auditor() {
        let dir = tempfile::tempdir().unwrap();
        let policy_path = dir.path().join("policy.yaml");
        std::fs::write(
            &policy_path,
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n",
        )
        .unwrap();
        let log_path = dir.path().join("sub").join("audit.log");
        let mut options = AuditOptions {
            policy_file: Some(policy_path.to_str().unwrap().into()),
            log_path: Some(log_path.to_str().unwrap().into()),
            ..Default::default()
        };
        assert!(Auditor::from_options(&options).unwrap().is_some());
        assert!(log_path.exists(), "log file is opened at startup");
        options.log_max_age = -1;
        assert_eq!(
            Auditor::from_options(&options).unwrap_err().to_string(),
            "--audit-log-maxage -1 can't be a negative number"
        );
        options.log_max_age = 0;
        options.log_path = None;
        assert!(Auditor::from_options(&options).unwrap().is_none());
        options.policy_file = None;
        options.log_path = Some("-".into());
        assert!(Auditor::from_options(&options).unwrap().is_none());
    }

    #[test]
    fn backends_are_wrapped_per_mode_and_joined() {
        let dir = tempfile::tempdir().unwrap();
        let policy_path = dir.path().join("policy.yaml");
        std::fs::write(
            &policy_path,
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n",
        )
        .unwrap();
        let kubeconfig = dir.path().join("hook.kubeconfig");
        std::fs::write(
            &kubeconfig,
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:1/\ncontexts:\n- name: c\n  context:\n    cluster: c\ncurrent-context: c\n",
        )
        .unwrap();
        let mut options = AuditOptions {
            policy_file: Some(policy_path.display().to_string()),
            log_path: Some(dir.path().join("audit.log").display().to_string()),
            webhook_config_file: Some(kubeconfig.display().to_string()),
            ..Default::default()
        };
        let name = |o: &AuditOptions| Auditor::from_options(o).unwrap().unwrap().backend().name();
        assert_eq!(name(&options), "union[ignoreErrors<log>,buffered<webhook>]");
        options.log_batch.mode = "batch".into();
        options.log_truncate.enabled = true;
        options.webhook_batch.mode = "blocking-strict".into();
        assert_eq!(name(&options), "union[truncate<buffered<log>>,webhook]");
        options.log_path = None;
        assert_eq!(name(&options), "webhook");
        // Without a policy the kubeconfig is not even read.
        options.policy_file = None;
        options.webhook_config_file = Some(dir.path().join("missing").display().to_string());
        assert!(Auditor::from_options(&options).unwrap().is_none());
    }

    #[test]
    fn validation_follows_upstream() {
        let mut options = AuditOptions {
            log_format: "yaml".into(),
            ..Default::default()
        };
        options.webhook_batch.mode = "nope".into();
        assert!(
            options.validation_errors().is_empty(),
            "unused backends are not checked"
        );
        options.log_path = Some("-".into());
        options.webhook_config_file = Some("hook".into());
        options.log_batch.mode = "batch".into();
        options.log_batch.buffer_size = 0;
        options.log_truncate.max_event_size = 10;
        options.log_truncate.max_batch_size = 5;
        options.log_version = "audit.k8s.io/v1beta1".into();
        options.log_max_size = -2;
        options.webhook_batch.mode = "batch".into();
        options.webhook_batch.throttle_qps = 0.0;
        options.webhook_version = "a/b/c".into();
        assert_eq!(
            options.validation_errors(),
            [
                "invalid audit batch log buffer size 0, must be a positive number",
                "invalid audit truncate log max batch size 5, must be greater than max event size (10)",
                r#"invalid group version, allowed versions are ["audit.k8s.io/v1"]"#,
                r#"invalid audit log format yaml, allowed formats are "legacy,json""#,
                "--audit-log-maxsize -2 can't be a negative number",
                "invalid audit batch webhook throttle QPS 0, must be a positive number",
                "unexpected GroupVersion string: a/b/c",
            ]
        );
        options.webhook_batch.mode = "blocking".into();
        assert!(
            !options
                .validation_errors()
                .iter()
                .any(|e| e.contains("QPS")),
            "batch values are only checked in batch mode"
        );
    }
}
