//! The `apiregistration.k8s.io/v1` `APIService` resource: its strategy (defaults, validation,
//! table) and typed views of the fields the controllers read.

use apiserver::registry::names::{dns1035_label, dns1123_subdomain};
use apiserver::registry::store::meta::path_segment_errors;
use apiserver::registry::{FieldError, ResourceInfo, Strategy, TableColumn, typed};
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use serde_json::{Value, json};

use crate::age::translate_timestamp_since;

/// The API group.
pub const GROUP: &str = "apiregistration.k8s.io";
/// The served version.
pub const VERSION: &str = "v1";
/// The resource.
pub const RESOURCE: &str = "apiservices";

/// The `Available` condition type.
pub const AVAILABLE: &str = "Available";

/// Where a remote APIService's server is (`spec.service`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceReference {
    /// Namespace of the Service.
    pub namespace: String,
    /// Name of the Service.
    pub name: String,
    /// Port of the Service (default 443).
    pub port: u16,
}

/// The fields of an APIService the aggregator acts on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiServiceView {
    /// `metadata.name` (`<version>.<group>`).
    pub name: String,
    /// `spec.group`.
    pub group: String,
    /// `spec.version`.
    pub version: String,
    /// `spec.service`; `None` for a local APIService.
    pub service: Option<ServiceReference>,
    /// `spec.caBundle`, decoded (PEM bytes).
    pub ca_bundle: Vec<u8>,
    /// `spec.insecureSkipTLSVerify`.
    pub insecure_skip_tls_verify: bool,
    /// `spec.groupPriorityMinimum`.
    pub group_priority_minimum: i32,
    /// `spec.versionPriority`.
    pub version_priority: i32,
}

impl ApiServiceView {
    /// Reads the view from an APIService object.
    pub fn from_object(obj: &Value) -> Self {
        let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
        let text = |v: &Value, field: &str| {
            v.get(field)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let service = spec
            .get("service")
            .filter(|s| s.is_object())
            .map(|s| ServiceReference {
                namespace: text(s, "namespace"),
                name: text(s, "name"),
                port: s
                    .get("port")
                    .and_then(Value::as_u64)
                    .and_then(|p| u16::try_from(p).ok())
                    .unwrap_or(443),
            });
        let ca_bundle = spec
            .get("caBundle")
            .and_then(Value::as_str)
            .and_then(|b| {
                use base64::Engine;
                base64::engine::general_purpose::STANDARD.decode(b).ok()
            })
            .unwrap_or_default();
        let int = |field: &str| {
            spec.get(field)
                .and_then(Value::as_i64)
                .and_then(|v| i32::try_from(v).ok())
                .unwrap_or(0)
        };
        ApiServiceView {
            name: obj
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            group: text(&spec, "group"),
            version: text(&spec, "version"),
            service,
            ca_bundle,
            insecure_skip_tls_verify: spec
                .get("insecureSkipTLSVerify")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            group_priority_minimum: int("groupPriorityMinimum"),
            version_priority: int("versionPriority"),
        }
    }
}

/// The `Available` condition of an APIService object, if it has one.
pub fn available_condition(obj: &Value) -> Option<&Value> {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(AVAILABLE))
}

/// Whether the APIService's `Available` condition is `True`.
pub fn is_available(obj: &Value) -> bool {
    available_condition(obj).and_then(|c| c.get("status")) == Some(&json!("True"))
}

/// The `ResourceInfo` of `apiservices`.
pub fn resource_info() -> ResourceInfo {
    ResourceInfo {
        group: GROUP.into(),
        version: VERSION.into(),
        kind: "APIService".into(),
        list_kind: "APIServiceList".into(),
        resource: RESOURCE.into(),
        singular: "apiservice".into(),
        namespaced: false,
        short_names: Vec::new(),
        categories: vec!["api-extensions".into()],
    }
}

/// The APIService strategy (upstream `registry/apiservice/strategy.go`).
pub struct ApiServiceStrategy {
    info: ResourceInfo,
}

impl Default for ApiServiceStrategy {
    fn default() -> Self {
        ApiServiceStrategy {
            info: resource_info(),
        }
    }
}

impl ApiServiceStrategy {
    /// The strategy.
    pub fn new() -> Self {
        Self::default()
    }
}

/// v1 defaulting: `spec.service.port` is 443 when unset.
fn default_port(obj: &mut Value) {
    if let Some(service) = obj
        .pointer_mut("/spec/service")
        .and_then(Value::as_object_mut)
        && service.get("port").is_none_or(Value::is_null)
    {
        service.insert("port".into(), json!(443));
    }
}

const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
const AGE_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// Upstream `ValidateAPIService` (the spec; object meta is checked by the store).
pub fn validate_api_service(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
    let group = spec.get("group").and_then(Value::as_str).unwrap_or("");
    let version = spec.get("version").and_then(Value::as_str).unwrap_or("");
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    // The name *is* the group-version; path-segment problems are reported by the store.
    let required = format!("{version}.{group}");
    if !name.is_empty() && path_segment_errors(name, false).is_empty() && name != required {
        errs.push(FieldError::invalid(
            "metadata.name",
            name,
            &format!("must be `spec.version+\".\"+spec.group`: {required:?}"),
        ));
    }
    if group.is_empty() && version != "v1" {
        errs.push(FieldError::required(
            "spec.group",
            "only v1 may have an empty group and it better be legacy kube",
        ));
    }
    if !group.is_empty() {
        for msg in dns1123_subdomain(group) {
            errs.push(FieldError::invalid("spec.group", group, &msg));
        }
    }
    for msg in dns1035_label(version) {
        errs.push(FieldError::invalid("spec.version", version, &msg));
    }
    let int = |field: &str| spec.get(field).and_then(Value::as_i64).unwrap_or(0);
    let gpm = int("groupPriorityMinimum");
    if gpm <= 0 || gpm > 20000 {
        errs.push(FieldError::invalid(
            "spec.groupPriorityMinimum",
            gpm,
            "must be positive and less than 20000",
        ));
    }
    let vp = int("versionPriority");
    if vp <= 0 || vp > 1000 {
        errs.push(FieldError::invalid(
            "spec.versionPriority",
            vp,
            "must be positive and less than 1000",
        ));
    }
    let ca_len = spec
        .get("caBundle")
        .and_then(Value::as_str)
        .map(|b| {
            use base64::Engine;
            base64::engine::general_purpose::STANDARD
                .decode(b)
                .map_or(b.len(), |d| d.len())
        })
        .unwrap_or(0);
    let insecure = spec
        .get("insecureSkipTLSVerify")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let Some(service) = spec.get("service").filter(|s| s.is_object()) else {
        if ca_len != 0 {
            errs.push(FieldError::invalid(
                "spec.caBundle",
                format!("{ca_len} bytes"),
                "local APIServices may not have a caBundle",
            ));
        }
        if insecure {
            errs.push(FieldError::invalid(
                "spec.insecureSkipTLSVerify",
                true,
                "local APIServices may not have insecureSkipTLSVerify",
            ));
        }
        return errs;
    };
    if service
        .get("namespace")
        .and_then(Value::as_str)
        .unwrap_or("")
        .is_empty()
    {
        errs.push(FieldError::required("spec.service.namespace", ""));
    }
    if service
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .is_empty()
    {
        errs.push(FieldError::required("spec.service.name", ""));
    }
    if let Some(port) = service.get("port").and_then(Value::as_i64)
        && !(1..=65535).contains(&port)
    {
        errs.push(FieldError::invalid(
            "spec.service.port",
            port,
            "must be between 1 and 65535, inclusive",
        ));
    }
    if insecure && ca_len > 0 {
        errs.push(FieldError::invalid(
            "spec.insecureSkipTLSVerify",
            true,
            "may not be true if caBundle is present",
        ));
    }
    errs
}

/// The `Available` column: `True`, `<status> (<reason>)`, or `Unknown` without a condition.
fn available_cell(obj: &Value) -> String {
    match available_condition(obj) {
        Some(c) => {
            let status = c.get("status").and_then(Value::as_str).unwrap_or("");
            if status == "True" {
                status.to_string()
            } else {
                let reason = c.get("reason").and_then(Value::as_str).unwrap_or("");
                format!("{status} ({reason})")
            }
        }
        None => "Unknown".to_string(),
    }
}

impl Strategy for ApiServiceStrategy {
    fn info(&self) -> &ResourceInfo {
        &self.info
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        // Status is the controllers' to set.
        if let Some(top) = obj.as_object_mut() {
            top.insert("status".into(), json!({}));
        }
        default_port(obj);
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        if let Some(top) = new.as_object_mut() {
            top.insert(
                "status".into(),
                old.get("status").cloned().unwrap_or_else(|| json!({})),
            );
        }
        default_port(new);
    }

    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        validate_api_service(obj)
    }

    fn drop_unknown_fields(&self, obj: &mut Value) -> Vec<String> {
        typed::drop_unknown_fields::<APIService>(obj)
    }

    fn tracks_generation(&self) -> bool {
        true
    }

    fn supports_strategic_merge_patch(&self) -> bool {
        true
    }

    fn table_columns(&self) -> Vec<TableColumn> {
        vec![
            TableColumn::new("Name", "string", "name", NAME_DESCRIPTION, 0),
            TableColumn::new(
                "Service",
                "string",
                "",
                "The reference to the service that hosts this API endpoint.",
                0,
            ),
            TableColumn::new(
                "Available",
                "string",
                "",
                "Whether this service is available.",
                0,
            ),
            TableColumn::new("Age", "string", "", AGE_DESCRIPTION, 0),
        ]
    }

    fn table_row(&self, obj: &Value) -> Vec<Value> {
        let view = ApiServiceView::from_object(obj);
        let service = match &view.service {
            Some(s) => format!("{}/{}", s.namespace, s.name),
            None => "Local".to_string(),
        };
        vec![
            json!(view.name),
            json!(service),
            json!(available_cell(obj)),
            json!(translate_timestamp_since(
                obj.pointer("/metadata/creationTimestamp")
                    .and_then(Value::as_str)
            )),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api_service(name: &str, spec: Value) -> Value {
        json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
               "metadata": {"name": name}, "spec": spec})
    }

    fn messages(obj: &Value) -> Vec<String> {
        validate_api_service(obj)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn valid_remote_and_local() {
        let remote = api_service(
            "v1alpha1.wardle.example.com",
            json!({"group": "wardle.example.com", "version": "v1alpha1",
                   "service": {"namespace": "wardle", "name": "api", "port": 443},
                   "insecureSkipTLSVerify": true,
                   "groupPriorityMinimum": 1000, "versionPriority": 15}),
        );
        assert!(messages(&remote).is_empty(), "{:?}", messages(&remote));
        let core = api_service(
            "v1.",
            json!({"version": "v1", "groupPriorityMinimum": 18000, "versionPriority": 1}),
        );
        assert!(messages(&core).is_empty(), "{:?}", messages(&core));
    }

    #[test]
    fn upstream_validation_messages() {
        let bad = api_service(
            "v1.wrong",
            json!({"group": "wardle.example.com", "version": "v1alpha1",
                   "groupPriorityMinimum": 0, "versionPriority": 1001,
                   "caBundle": "YWJj", "insecureSkipTLSVerify": true}),
        );
        assert_eq!(
            messages(&bad),
            [
                "metadata.name: Invalid value: \"v1.wrong\": must be `spec.version+\".\"+spec.group`: \"v1alpha1.wardle.example.com\"",
                "spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000",
                "spec.versionPriority: Invalid value: 1001: must be positive and less than 1000",
                "spec.caBundle: Invalid value: \"3 bytes\": local APIServices may not have a caBundle",
                "spec.insecureSkipTLSVerify: Invalid value: true: local APIServices may not have insecureSkipTLSVerify",
            ]
        );
        let no_group = api_service(
            "v2.",
            json!({"version": "v2", "groupPriorityMinimum": 1, "versionPriority": 1}),
        );
        assert_eq!(
            messages(&no_group),
            [
                "spec.group: Required value: only v1 may have an empty group and it better be legacy kube"
            ]
        );
        let both = api_service(
            "v1.a.b",
            json!({"group": "a.b", "version": "v1", "groupPriorityMinimum": 1,
                   "versionPriority": 1, "caBundle": "YWJj", "insecureSkipTLSVerify": true,
                   "service": {"namespace": "", "name": ""}}),
        );
        assert_eq!(
            messages(&both),
            [
                "spec.service.namespace: Required value",
                "spec.service.name: Required value",
                "spec.insecureSkipTLSVerify: Invalid value: true: may not be true if caBundle is present",
            ]
        );
    }

    #[test]
    fn create_clears_status_and_defaults_port() {
        let strategy = ApiServiceStrategy::new();
        let mut obj = api_service(
            "v1.a.b",
            json!({"group": "a.b", "version": "v1", "service": {"namespace": "n", "name": "s"}}),
        );
        obj["status"] = json!({"conditions": [{"type": "Available", "status": "True"}]});
        strategy.prepare_for_create(&mut obj);
        assert_eq!(obj["status"], json!({}));
        assert_eq!(obj["spec"]["service"]["port"], 443);
    }

    #[test]
    fn table_rows() {
        let strategy = ApiServiceStrategy::new();
        let mut obj = api_service(
            "v1alpha1.wardle.example.com",
            json!({"group": "wardle.example.com", "version": "v1alpha1",
                   "service": {"namespace": "wardle", "name": "api"}}),
        );
        obj["status"] = json!({"conditions": [{"type": "Available", "status": "False",
                                               "reason": "FailedDiscoveryCheck"}]});
        let row = strategy.table_row(&obj);
        assert_eq!(
            row[..3],
            [
                json!("v1alpha1.wardle.example.com"),
                json!("wardle/api"),
                json!("False (FailedDiscoveryCheck)")
            ]
        );
        let local = api_service("v1.", json!({"version": "v1"}));
        assert_eq!(
            strategy.table_row(&local)[1..3],
            [json!("Local"), json!("Unknown")]
        );
        assert_eq!(
            strategy
                .table_columns()
                .iter()
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>(),
            ["Name", "Service", "Available", "Age"]
        );
    }
}
