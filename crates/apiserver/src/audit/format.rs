//! The legacy one-line text form of an event (upstream `audit.EventString`), written by
//! `--audit-log-format=legacy` and used when a backend logs the events it lost.

use std::time::SystemTime;

use super::event::Event;
use crate::util::goquote::go_quote;

/// One line (without the newline) in upstream's layout:
/// `<received> AUDIT: id="…" stage="…" ip="…" method="…" user="…" groups="…" as="…"
/// asgroups="…" user-agent="…" namespace="…" uri="…" response="…"`.
pub fn event_string(ev: &Event) -> String {
    let (username, groups) = if ev.user.username.is_empty() {
        ("<none>".to_string(), "<none>".to_string())
    } else if ev.user.groups.is_empty() {
        (ev.user.username.clone(), "<none>".to_string())
    } else {
        (ev.user.username.clone(), quoted_list(&ev.user.groups))
    };
    let (as_user, as_groups) = match &ev.impersonated_user {
        None => ("<self>".to_string(), "<lookup>".to_string()),
        // Go tells a nil group list ("<lookup>") from an empty one; ours has no nil.
        Some(user) if user.groups.is_empty() => (user.username.clone(), "<lookup>".to_string()),
        Some(user) => (user.username.clone(), quoted_list(&user.groups)),
    };
    let namespace = ev
        .object_ref
        .as_ref()
        .map(|o| o.namespace.as_str())
        .filter(|ns| !ns.is_empty())
        .unwrap_or("<none>");
    let response = ev
        .response_status
        .as_ref()
        .map(|s| s.code.to_string())
        .unwrap_or_else(|| "<deferred>".to_string());
    let ip = ev
        .source_ips
        .first()
        .map(String::as_str)
        .unwrap_or("<unknown>");
    let received = ev
        .received_at
        .map(rfc3339_nano)
        .unwrap_or_else(|| trim_fraction(&ev.request_received_timestamp));
    format!(
        "{received} AUDIT: id={} stage={} ip={} method={} user={} groups={} as={} asgroups={} user-agent={} namespace={} uri={} response=\"{response}\"",
        go_quote(&ev.audit_id),
        go_quote(ev.stage.as_str()),
        go_quote(ip),
        go_quote(&ev.verb),
        go_quote(&username),
        go_quote(&groups),
        go_quote(&as_user),
        go_quote(&as_groups),
        go_quote(&ev.user_agent),
        go_quote(namespace),
        go_quote(&ev.request_uri),
    )
}

/// Each element quoted, joined by commas (upstream `auditStringSlice`).
fn quoted_list(list: &[String]) -> String {
    list.iter()
        .map(|s| go_quote(s))
        .collect::<Vec<_>>()
        .join(",")
}

/// Go's `time.RFC3339Nano` of a UTC time: fractional seconds without trailing zeros.
pub fn rfc3339_nano(t: SystemTime) -> String {
    match jiff::Timestamp::try_from(t) {
        Ok(ts) => trim_fraction(&ts.strftime("%Y-%m-%dT%H:%M:%S%.9fZ").to_string()),
        Err(_) => "1970-01-01T00:00:00Z".to_string(),
    }
}

/// `…:SS.123000Z` → `…:SS.123Z`, `…:SS.000Z` → `…:SSZ`.
fn trim_fraction(stamp: &str) -> String {
    let Some((head, tail)) = stamp.split_once('.') else {
        return stamp.to_string();
    };
    let digits_end = tail
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(tail.len());
    let (digits, zone) = tail.split_at(digits_end);
    let digits = digits.trim_end_matches('0');
    if digits.is_empty() {
        format!("{head}{zone}")
    } else {
        format!("{head}.{digits}{zone}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::event::{EventUser, ObjectReference, ResponseStatus};
    use crate::audit::level::Stage;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn legacy_line_layout() {
        let mut ev = crate::audit::buffered::tests::event(7);
        ev.received_at = Some(UNIX_EPOCH + Duration::from_nanos(1_700_000_000_123_456_700));
        ev.stage = Stage::ResponseComplete;
        ev.source_ips = vec!["127.0.0.1".into(), "10.0.0.1".into()];
        ev.verb = "create".into();
        ev.user = EventUser {
            username: "alice".into(),
            groups: vec!["devs".into(), "system:authenticated".into()],
            ..Default::default()
        };
        ev.impersonated_user = Some(EventUser {
            username: "bob".into(),
            groups: vec!["ops".into()],
            ..Default::default()
        });
        ev.user_agent = "kubectl/v1.35.0 \"x\"".into();
        ev.object_ref = Some(ObjectReference {
            namespace: "default".into(),
            resource: "pods".into(),
            ..Default::default()
        });
        ev.request_uri = "/api/v1/namespaces/default/pods".into();
        ev.response_status = Some(ResponseStatus::code(201));
        assert_eq!(
            event_string(&ev),
            r#"2023-11-14T22:13:20.1234567Z AUDIT: id="id-7" stage="ResponseComplete" ip="127.0.0.1" method="create" user="alice" groups="\"devs\",\"system:authenticated\"" as="bob" asgroups="\"ops\"" user-agent="kubectl/v1.35.0 \"x\"" namespace="default" uri="/api/v1/namespaces/default/pods" response="201""#
        );
    }

    #[test]
    fn legacy_line_placeholders() {
        let mut ev = crate::audit::buffered::tests::event(1);
        ev.received_at = None;
        ev.request_received_timestamp = "2023-11-14T22:13:20.000000Z".into();
        ev.stage = Stage::RequestReceived;
        ev.user = EventUser::default();
        ev.source_ips.clear();
        ev.user_agent.clear();
        ev.response_status = None;
        assert_eq!(
            event_string(&ev),
            r#"2023-11-14T22:13:20Z AUDIT: id="id-1" stage="RequestReceived" ip="<unknown>" method="get" user="<none>" groups="<none>" as="<self>" asgroups="<lookup>" user-agent="" namespace="<none>" uri="/healthz" response="<deferred>""#
        );
    }
}
