//! The auditor: the policy evaluator and the backend, bundled for the audit filters and the
//! failed-authentication audit, and built from the `--audit-*` flags.

use std::sync::Arc;
use std::time::SystemTime;

use super::backend::{Backend, ShutdownFuture};
use super::buffered::BufferedBackend;
use super::event::{Event, ResponseStatus, micro_time};
use super::level::{Level, Stage};
use super::log::LogBackend;
use super::policy::{AuditAttributes, Policy, PolicyRuleEvaluator, RequestAuditConfig};
use super::rotate::RotationConfig;
use super::{AuditContext, AuditError, FailedAuthenticationAuditor};
use crate::request::ReceivedTimestamp;

/// The `--audit-*` options this crate implements.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
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
}

impl AuditOptions {
    /// Upstream's option validation (negative values are rejected with its messages).
    pub fn validate(&self) -> Result<(), AuditError> {
        let check = |value: i64, flag: &str| {
            if value < 0 {
                Err(AuditError::InvalidOption(format!(
                    "--audit-log-{flag} {value} can't be a negative number"
                )))
            } else {
                Ok(())
            }
        };
        check(self.log_max_age, "maxage")?;
        check(self.log_max_backups, "maxbackup")?;
        check(self.log_max_size, "maxsize")
    }

    /// Whether the log backend is configured.
    fn log_enabled(&self) -> bool {
        self.log_path.as_deref().is_some_and(|p| !p.is_empty())
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

    /// Builds the auditor from the flags: `Ok(None)` when auditing is off (no policy file, or
    /// no backend: upstream only warns then). The log backend is wrapped in a
    /// [`BufferedBackend`]; the log file is opened here so a bad path fails at startup.
    pub fn from_options(options: &AuditOptions) -> Result<Option<Arc<Self>>, AuditError> {
        options.validate()?;
        let Some(policy_file) = options.policy_file.as_deref().filter(|p| !p.is_empty()) else {
            if options.log_enabled() {
                tracing::info!("No audit policy file provided, no events will be recorded");
            }
            return Ok(None);
        };
        let policy = Policy::load_file(policy_file)?;
        if !options.log_enabled() {
            tracing::warn!(
                "Audit policy file {policy_file} given but no audit backend configured, no events will be recorded"
            );
            return Ok(None);
        }
        let path = options.log_path.as_deref().unwrap_or("-");
        let rotation = RotationConfig::from_flags(
            options.log_max_size.max(0) as u64,
            options.log_max_backups.max(0) as usize,
            options.log_max_age.max(0) as u64,
        );
        let log = LogBackend::new(path, rotation)?;
        let backend = BufferedBackend::with_defaults(Arc::new(log));
        Ok(Some(Auditor::new(policy, Arc::new(backend))))
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

    /// Evaluates the policy for a request.
    pub fn evaluate(&self, attrs: &AuditAttributes) -> RequestAuditConfig {
        self.evaluator.evaluate(attrs)
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
}
