//! The handler chain, composed in one place in upstream order (`DefaultBuildHandlerChain`).
//! The list reads outermost filter first, as a request sees them.

use std::sync::Arc;

use tower::Layer;

use super::audit::AuditFilter;
use super::audit_init::AuditInitFilter;
use super::authentication::AuthenticationFilter;
use super::authorization::AuthorizationFilter;
use super::cache_control::CacheControl;
use super::cors::Cors;
use super::goaway::ProbabilisticGoaway;
use super::hsts::Hsts;
use super::httplog::HttpLog;
use super::impersonation::ImpersonationFilter;
use super::latency::LatencyTracker;
use super::max_inflight::MaxInFlight;
use super::mux_discovery_complete::MuxAndDiscoveryComplete;
use super::panic_recovery::PanicRecovery;
use super::request_deadline::RequestDeadlineFilter;
use super::request_info::RequestInfoFilter;
use super::request_received::RequestReceivedTimestamp;
use super::retry_after::RetryAfter;
use super::shutdown_close::ShutdownConnectionClose;
use super::timeout::TimeoutFilter;
use super::waitgroup::WaitGroupFilter;
use super::warning::WarningFilter;
use super::watch_termination::WatchTermination;
use super::{Filter, FilterLayer, HttpService};
use crate::audit::FailedAuthenticationAuditor;
use crate::server::config::CompletedConfig;
use crate::server::waitgroup::RateLimitedSafeWaitGroup;

type Wrap = Box<dyn FnOnce(HttpService) -> HttpService>;

fn filter<F: Filter>(f: F) -> Wrap {
    Box::new(move |inner| FilterLayer::new(f).layer(inner))
}

/// Applies `filters` (outermost first) around `handler`.
fn compose(handler: HttpService, filters: Vec<Option<Wrap>>) -> HttpService {
    filters
        .into_iter()
        .flatten()
        .rev()
        .fold(handler, |inner, wrap| wrap(inner))
}

/// The default chain around `handler` (the director), outermost first.
pub fn build_default_handler_chain(handler: HttpService, c: &CompletedConfig) -> HttpService {
    let signals = &c.lifecycle_signals;
    let authorizer = c.authorizer.clone();
    let failed_auditor = c
        .auditor
        .clone()
        .map(|a| a as Arc<dyn FailedAuthenticationAuditor>);
    compose(
        handler,
        vec![
            Some(filter(AuditInitFilter::new())),
            Some(filter(PanicRecovery::new())),
            Some(filter(MuxAndDiscoveryComplete::new(
                signals.mux_and_discovery_complete.clone(),
            ))),
            Some(filter(RequestReceivedTimestamp::new())),
            Some(filter(RequestInfoFilter::new(
                c.request_info_resolver.clone(),
                c.long_running_check.clone(),
            ))),
            Some(filter(LatencyTracker::new())),
            Some(filter(HttpLog::new())),
            c.shutdown_send_retry_after.then(|| {
                filter(RetryAfter::new(Some(
                    signals.not_accepting_new_requests.clone(),
                )))
            }),
            c.close_connections_during_shutdown.then(|| {
                filter(ShutdownConnectionClose::new(
                    signals.shutdown_initiated.clone(),
                ))
            }),
            (!c.hsts_directives.is_empty()).then(|| filter(Hsts::new(&c.hsts_directives))),
            Some(filter(CacheControl::new())),
            // Only where HTTP/2 is served: GOAWAY is an HTTP/2 frame.
            (c.secure_serving.as_ref().is_some_and(|s| !s.disable_http2) && c.goaway_chance > 0.0)
                .then(|| filter(ProbabilisticGoaway::new(c.goaway_chance))),
            Some(watch_termination(c)),
            Some(filter(WaitGroupFilter::new(
                c.non_long_running_request_wait_group.clone(),
            ))),
            Some(filter(
                RequestDeadlineFilter::new(c.request_timeout).with_auditor(c.auditor.clone()),
            )),
            Some(filter(TimeoutFilter::new())),
            Some(filter(WarningFilter::new())),
            cors(c),
            c.authenticator.clone().map(|authn| {
                filter(AuthenticationFilter::new(
                    authn,
                    failed_auditor,
                    c.api_audiences.clone(),
                ))
            }),
            c.auditor.clone().map(|a| filter(AuditFilter::new(a))),
            authorizer
                .clone()
                .map(|authz| filter(ImpersonationFilter::new(authz))),
            max_in_flight(c),
            authorizer.map(|authz| filter(AuthorizationFilter::new(authz))),
        ],
    )
}

fn watch_termination(c: &CompletedConfig) -> Wrap {
    if c.shutdown_watch_termination_grace_period.is_zero() {
        // Not drained: watches end when the server stops (see `WatchTermination::with_token`).
        filter(WatchTermination::with_token(
            RateLimitedSafeWaitGroup::new(),
            c.watches_end.clone(),
        ))
    } else {
        filter(WatchTermination::new(
            c.watch_request_wait_group.clone(),
            c.lifecycle_signals.not_accepting_new_requests.clone(),
        ))
    }
}

fn cors(c: &CompletedConfig) -> Option<Wrap> {
    if c.cors_allowed_origins.is_empty() {
        return None;
    }
    match Cors::new(&c.cors_allowed_origins) {
        Ok(cors) => Some(filter(cors)),
        Err(err) => {
            // Validated at start-up; a bad list here is a programming error upstream treats
            // as fatal. Refuse every cross-origin request rather than serving without CORS.
            tracing::error!("invalid CORS allowed origins: {err}");
            None
        }
    }
}

fn max_in_flight(c: &CompletedConfig) -> Option<Wrap> {
    if c.max_requests_in_flight == 0 && c.max_mutating_requests_in_flight == 0 {
        return None;
    }
    Some(filter(c.max_in_flight.clone()))
}

/// The shared in-flight limiter of a configuration.
pub fn new_max_in_flight(non_mutating: usize, mutating: usize) -> MaxInFlight {
    MaxInFlight::new(non_mutating, mutating)
}
