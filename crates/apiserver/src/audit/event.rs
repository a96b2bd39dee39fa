//! The `audit.k8s.io/v1` `Event` and the helpers that fill it from a request (upstream
//! `pkg/audit/request.go`).

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::level::{Level, Stage};
use super::policy::AuditAttributes;
use crate::request::{ConnectionInfo, UserInfo};
use crate::status::StatusDetails;

/// The longest user agent recorded; longer ones are cut and marked.
pub const MAX_USER_AGENT_LENGTH: usize = 1024;
/// Appended to a truncated user agent.
pub const USER_AGENT_TRUNCATE_SUFFIX: &str = "...TRUNCATED";

/// One audit event, encoded as upstream encodes `audit.k8s.io/v1` `Event` (field order kept).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// Always `Event`.
    pub kind: String,
    /// Always `audit.k8s.io/v1`.
    pub api_version: String,
    /// The audit level of the request.
    pub level: Level,
    /// The request's audit ID.
    #[serde(rename = "auditID")]
    pub audit_id: String,
    /// The stage this event was generated at.
    pub stage: Stage,
    /// Path and query as sent by the client.
    #[serde(rename = "requestURI")]
    pub request_uri: String,
    /// The Kubernetes verb.
    pub verb: String,
    /// The authenticated user.
    pub user: EventUser,
    /// The impersonated user, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub impersonated_user: Option<EventUser>,
    /// Client and proxy addresses.
    #[serde(default, rename = "sourceIPs", skip_serializing_if = "Vec::is_empty")]
    pub source_ips: Vec<String>,
    /// The `User-Agent` header, truncated.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub user_agent: String,
    /// The object addressed, for resource requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object_ref: Option<ObjectReference>,
    /// The response status, once known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_status: Option<ResponseStatus>,
    /// The request body (levels Request and RequestResponse, JSON bodies only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_object: Option<Box<RawValue>>,
    /// The response body (level RequestResponse, JSON bodies only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_object: Option<Box<RawValue>>,
    /// When the request was received (RFC 3339, microseconds).
    pub request_received_timestamp: String,
    /// When this stage was reached (RFC 3339, microseconds).
    pub stage_timestamp: String,
    /// Annotations added by filters and handlers.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// The received time at full precision (the legacy log format prints nanoseconds);
    /// not part of the encoded event.
    #[serde(skip)]
    pub received_at: Option<SystemTime>,
}

/// `authentication/v1` `UserInfo` as it appears in an event.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventUser {
    /// User name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub username: String,
    /// User UID.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// Groups.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// Extra attributes.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, Vec<String>>,
}

impl From<&UserInfo> for EventUser {
    fn from(user: &UserInfo) -> Self {
        EventUser {
            username: user.name.clone(),
            uid: user.uid.clone(),
            groups: user.groups.clone(),
            extra: user.extra.clone(),
        }
    }
}

/// The object a resource request addresses.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReference {
    /// Resource.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource: String,
    /// Namespace.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// API group.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_group: String,
    /// API version.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// Subresource.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub subresource: String,
}

/// The subset of `metav1.Status` recorded as `responseStatus`. Upstream encodes a full
/// Status, so an empty `metadata: {}` is always present.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResponseStatus {
    /// Always `{}`.
    #[serde(default)]
    pub metadata: serde_json::Map<String, serde_json::Value>,
    /// `Success` or `Failure`, when the response was a Status object.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub status: String,
    /// The message of a failure.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// The reason of a failure.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Status details (re-encoded in Go's field order).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<StatusDetails>,
    /// The HTTP status code.
    #[serde(default)]
    pub code: u16,
}

impl ResponseStatus {
    /// A status with only a code.
    pub fn code(code: u16) -> Self {
        ResponseStatus {
            code,
            ..Default::default()
        }
    }

    /// Copies the bounded fields of a `metav1.Status` response body (as upstream's
    /// `LogResponseObject` does), keeping `code` when the body has none.
    pub fn merge_status_body(&mut self, body: &[u8]) {
        #[derive(Deserialize)]
        struct StatusBody {
            #[serde(default)]
            kind: String,
            #[serde(default)]
            status: String,
            #[serde(default)]
            message: String,
            #[serde(default)]
            reason: String,
            #[serde(default)]
            details: Option<StatusDetails>,
            #[serde(default)]
            code: u16,
        }
        if let Ok(status) = serde_json::from_slice::<StatusBody>(body)
            && status.kind == "Status"
        {
            self.status = status.status;
            self.message = status.message;
            self.reason = status.reason;
            self.details = status.details;
            if status.code != 0 {
                self.code = status.code;
            }
        }
    }
}

impl Event {
    /// A new event for a request at `level` (stage `RequestReceived`, both timestamps the
    /// received time), filled from the request head (upstream `NewEventFromRequest`).
    pub fn from_request(
        parts: &http::request::Parts,
        attrs: &AuditAttributes,
        level: Level,
        audit_id: &str,
        received: SystemTime,
    ) -> Event {
        let received_at = received;
        let received = micro_time(received);
        let object_ref = attrs.resource_request.then(|| ObjectReference {
            resource: attrs.resource.clone(),
            namespace: attrs.namespace.clone(),
            name: attrs.name.clone(),
            api_group: attrs.api_group.clone(),
            api_version: attrs.api_version.clone(),
            subresource: attrs.subresource.clone(),
        });
        let user_agent = parts
            .headers
            .get(http::header::USER_AGENT)
            .map(|v| truncate_user_agent(&String::from_utf8_lossy(v.as_bytes())))
            .unwrap_or_default();
        Event {
            kind: "Event".to_string(),
            api_version: "audit.k8s.io/v1".to_string(),
            level,
            audit_id: audit_id.to_string(),
            stage: Stage::RequestReceived,
            request_uri: parts
                .uri
                .path_and_query()
                .map(|pq| pq.as_str().to_string())
                .unwrap_or_else(|| parts.uri.path().to_string()),
            verb: attrs.verb.clone(),
            user: attrs
                .user
                .as_deref()
                .map(EventUser::from)
                .unwrap_or_default(),
            impersonated_user: None,
            source_ips: source_ips(parts)
                .into_iter()
                .map(|ip| ip.to_string())
                .collect(),
            user_agent,
            object_ref,
            response_status: None,
            request_object: None,
            response_object: None,
            request_received_timestamp: received.clone(),
            stage_timestamp: received,
            annotations: BTreeMap::new(),
            received_at: Some(received_at),
        }
    }

    /// The event as one JSON line (without the newline).
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string(self)
    }
}

/// Formats a time as `metav1.MicroTime` does: UTC, RFC 3339 with exactly six fractional digits.
pub fn micro_time(t: SystemTime) -> String {
    match jiff::Timestamp::try_from(t) {
        Ok(ts) => ts.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string(),
        Err(_) => "1970-01-01T00:00:00.000000Z".to_string(),
    }
}

/// Cuts a user agent longer than [`MAX_USER_AGENT_LENGTH`] bytes and marks it.
pub fn truncate_user_agent(user_agent: &str) -> String {
    if user_agent.len() <= MAX_USER_AGENT_LENGTH {
        return user_agent.to_string();
    }
    let mut end = MAX_USER_AGENT_LENGTH;
    while !user_agent.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{}", &user_agent[..end], USER_AGENT_TRUNCATE_SUFFIX)
}

/// The client's addresses, as upstream's `utilnet.SourceIPs`: every valid address of
/// `X-Forwarded-For`, then `X-Real-Ip` unless already listed, then the connection's remote
/// address unless it is the last one listed.
pub fn source_ips(parts: &http::request::Parts) -> Vec<IpAddr> {
    let mut ips: Vec<IpAddr> = Vec::new();
    let header = |name: &str| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let forwarded = header("x-forwarded-for");
    if !forwarded.is_empty() {
        ips.extend(forwarded.split(',').filter_map(|p| parse_ip(p.trim())));
    }
    let real = header("x-real-ip");
    if let Some(ip) = parse_ip(real.trim())
        && !ips.contains(&ip)
    {
        ips.push(ip);
    }
    let remote = parts
        .extensions
        .get::<ConnectionInfo>()
        .and_then(|c| c.remote_addr)
        .map(|a| a.ip().to_canonical());
    if let Some(ip) = remote
        && ips.last() != Some(&ip)
    {
        ips.push(ip);
    }
    ips
}

fn parse_ip(s: &str) -> Option<IpAddr> {
    s.parse::<IpAddr>().ok().map(|ip| ip.to_canonical())
}

/// Whether a content type carries JSON (`application/json`, `…+json`, the JSON patch types).
pub fn is_json_content_type(content_type: Option<&http::HeaderValue>) -> bool {
    let Some(ct) = content_type.and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let essence = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    essence == "application/json" || essence.ends_with("+json")
}

/// A JSON document as a compact raw value (the way Go's encoder compacts embedded
/// `RawMessage`s), or `None` when `bytes` is not JSON.
pub fn compact_json(bytes: &[u8]) -> Option<Box<RawValue>> {
    serde_json::from_slice::<serde::de::IgnoredAny>(bytes).ok()?;
    let mut out = Vec::with_capacity(bytes.len());
    let mut in_string = false;
    let mut escaped = false;
    for &b in bytes {
        if in_string {
            out.push(b);
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
        } else if !matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
            if b == b'"' {
                in_string = true;
            }
            out.push(b);
        }
    }
    let text = String::from_utf8(out).ok()?;
    RawValue::from_string(text).ok()
}

/// A JSON object whose members keep their order (serde_json's map would sort them).
struct OrderedObject(Vec<(String, Box<RawValue>)>);

impl<'de> Deserialize<'de> for OrderedObject {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = OrderedObject;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<OrderedObject, A::Error> {
                let mut members = Vec::new();
                while let Some(entry) = map.next_entry::<String, Box<RawValue>>()? {
                    members.push(entry);
                }
                Ok(OrderedObject(members))
            }
        }
        deserializer.deserialize_map(Visitor)
    }
}

impl Serialize for OrderedObject {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// The object (or each item of a list) without `metadata.managedFields`, for rules with
/// `omitManagedFields`. Anything that is not an object is returned unchanged.
pub fn strip_managed_fields(raw: Box<RawValue>) -> Box<RawValue> {
    let Ok(mut object) = serde_json::from_str::<OrderedObject>(raw.get()) else {
        return raw;
    };
    let mut changed = false;
    for (key, value) in object.0.iter_mut() {
        if key == "metadata"
            && let Ok(mut metadata) = serde_json::from_str::<OrderedObject>(value.get())
        {
            let before = metadata.0.len();
            metadata.0.retain(|(k, _)| k != "managedFields");
            if metadata.0.len() != before
                && let Ok(v) = serde_json::value::to_raw_value(&metadata)
            {
                *value = v;
                changed = true;
            }
        } else if key == "items"
            && let Ok(items) = serde_json::from_str::<Vec<Box<RawValue>>>(value.get())
        {
            let items: Vec<Box<RawValue>> = items.into_iter().map(strip_managed_fields).collect();
            if let Ok(v) = serde_json::value::to_raw_value(&items) {
                *value = v;
                changed = true;
            }
        }
    }
    if !changed {
        return raw;
    }
    serde_json::value::to_raw_value(&object).unwrap_or(raw)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;
    use std::sync::Arc;
    use std::time::{Duration, UNIX_EPOCH};

    fn parts(req: http::Request<()>) -> http::request::Parts {
        req.into_parts().0
    }

    #[test]
    fn micro_time_has_six_digits() {
        let t = UNIX_EPOCH + Duration::from_nanos(1_700_000_000_123_456_789);
        assert_eq!(micro_time(t), "2023-11-14T22:13:20.123456Z");
        assert_eq!(micro_time(UNIX_EPOCH), "1970-01-01T00:00:00.000000Z");
    }

    #[test]
    fn maybe_truncate_user_agent() {
        let short = "a".repeat(1024);
        assert_eq!(truncate_user_agent(&short), short);
        let long = "a".repeat(2000);
        assert_eq!(
            truncate_user_agent(&long),
            format!("{}...TRUNCATED", "a".repeat(1024))
        );
    }

    #[test]
    fn source_ips_follow_upstream_order() {
        let mut p = parts(
            http::Request::builder()
                .header("X-Forwarded-For", "1.2.3.4, bogus, 5.6.7.8")
                .header("X-Real-Ip", "5.6.7.8")
                .body(())
                .unwrap(),
        );
        let mut conn = ConnectionInfo::local();
        conn.remote_addr = Some("9.9.9.9:1234".parse::<SocketAddr>().unwrap());
        p.extensions.insert(conn.clone());
        let ips: Vec<String> = source_ips(&p).iter().map(|i| i.to_string()).collect();
        assert_eq!(ips, ["1.2.3.4", "5.6.7.8", "9.9.9.9"]);

        // The remote address is not repeated when it is the last forwarded one.
        let mut p = parts(
            http::Request::builder()
                .header("X-Real-Ip", "9.9.9.9")
                .body(())
                .unwrap(),
        );
        p.extensions.insert(conn);
        let ips: Vec<String> = source_ips(&p).iter().map(|i| i.to_string()).collect();
        assert_eq!(ips, ["9.9.9.9"]);
    }

    #[test]
    fn event_json_shape() {
        let p = parts(
            http::Request::builder()
                .method("POST")
                .uri("/api/v1/namespaces/default/pods?dryRun=All")
                .header("User-Agent", "kubectl/v1.35")
                .body(())
                .unwrap(),
        );
        let attrs = AuditAttributes {
            user: Some(Arc::new(UserInfo {
                name: "alice".into(),
                groups: vec!["system:authenticated".into()],
                ..Default::default()
            })),
            verb: "create".into(),
            resource_request: true,
            path: "/api/v1/namespaces/default/pods".into(),
            namespace: "default".into(),
            api_version: "v1".into(),
            resource: "pods".into(),
            ..Default::default()
        };
        let t = UNIX_EPOCH + Duration::from_micros(1_700_000_000_000_001);
        let mut ev = Event::from_request(&p, &attrs, Level::Request, "abc", t);
        ev.request_object = compact_json(b"{ \"kind\" : \"Pod\",\n \"a b\": \"x \\\" y\" }");
        let mut status = ResponseStatus::code(201);
        status.merge_status_body(b"{}");
        ev.stage = Stage::ResponseComplete;
        ev.response_status = Some(status);
        ev.annotations
            .insert("authorization.k8s.io/decision".into(), "allow".into());
        assert_eq!(
            ev.to_json().unwrap(),
            concat!(
                r#"{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Request","auditID":"abc","#,
                r#""stage":"ResponseComplete","requestURI":"/api/v1/namespaces/default/pods?dryRun=All","#,
                r#""verb":"create","user":{"username":"alice","groups":["system:authenticated"]},"#,
                r#""userAgent":"kubectl/v1.35","objectRef":{"resource":"pods","namespace":"default","apiVersion":"v1"},"#,
                r#""responseStatus":{"metadata":{},"code":201},"#,
                r#""requestObject":{"kind":"Pod","a b":"x \" y"},"#,
                r#""requestReceivedTimestamp":"2023-11-14T22:13:20.000001Z","#,
                r#""stageTimestamp":"2023-11-14T22:13:20.000001Z","#,
                r#""annotations":{"authorization.k8s.io/decision":"allow"}}"#
            )
        );
    }

    #[test]
    fn status_bodies_are_copied() {
        let mut s = ResponseStatus::code(403);
        s.merge_status_body(
            br#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"nope","reason":"Forbidden","details":{"name":"x"},"code":403}"#,
        );
        assert_eq!(
            serde_json::to_string(&s).unwrap(),
            r#"{"metadata":{},"status":"Failure","message":"nope","reason":"Forbidden","details":{"name":"x"},"code":403}"#
        );
        let mut s = ResponseStatus::code(200);
        s.merge_status_body(br#"{"kind":"Pod"}"#);
        assert_eq!(s, ResponseStatus::code(200));
    }

    #[test]
    fn managed_fields_are_stripped_in_order() {
        let raw = compact_json(
            br#"{"kind":"Pod","metadata":{"name":"a","managedFields":[{"manager":"x"}],"uid":"u"},"spec":{}}"#,
        )
        .unwrap();
        assert_eq!(
            strip_managed_fields(raw).get(),
            r#"{"kind":"Pod","metadata":{"name":"a","uid":"u"},"spec":{}}"#
        );
        let list = compact_json(
            br#"{"kind":"PodList","items":[{"metadata":{"managedFields":[],"name":"b"}}]}"#,
        )
        .unwrap();
        assert_eq!(
            strip_managed_fields(list).get(),
            r#"{"kind":"PodList","items":[{"metadata":{"name":"b"}}]}"#
        );
        let other = compact_json(b"[1,2]").unwrap();
        assert_eq!(strip_managed_fields(other).get(), "[1,2]");
    }

    #[test]
    fn json_content_types() {
        let ct = |s: &'static str| is_json_content_type(Some(&http::HeaderValue::from_static(s)));
        assert!(ct("application/json"));
        assert!(ct("application/json; charset=utf-8"));
        assert!(ct("application/merge-patch+json"));
        assert!(!ct("application/yaml"));
        assert!(!ct("application/vnd.kubernetes.protobuf"));
        assert!(!is_json_content_type(None));
        assert!(compact_json(b"not json").is_none());
    }
}
