//! Pod spec defaulting and validation shared by pods and every pod template (upstream
//! `SetDefaults_PodSpec`, `SetDefaults_Container`, `ValidatePodSpec` for the fields clients
//! rely on).

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};

use apiserver::registry::FieldError;
use serde_json::{Value, json};

use super::json::{array_at, array_mut, default_key, get, get_mut, str_at};
use super::validation::{dns1123_label, validate_labels};

/// Defaults a pod spec in place (`restartPolicy`, `dnsPolicy`, container defaults, ...).
pub fn default_pod_spec(spec: &mut Value) {
    let Some(map) = spec.as_object_mut() else {
        return;
    };
    default_key(map, "restartPolicy", json!("Always"));
    default_key(map, "dnsPolicy", json!("ClusterFirst"));
    default_key(map, "schedulerName", json!("default-scheduler"));
    default_key(map, "terminationGracePeriodSeconds", json!(30));
    default_key(map, "securityContext", json!({}));
    default_key(map, "enableServiceLinks", json!(true));
    for list in ["initContainers", "containers", "ephemeralContainers"] {
        if let Some(containers) = array_mut(spec, list) {
            for container in containers.iter_mut() {
                default_container(container);
            }
        }
    }
}

fn default_container(container: &mut Value) {
    let image = container
        .get("image")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let Some(map) = container.as_object_mut() else {
        return;
    };
    default_key(map, "terminationMessagePath", json!("/dev/termination-log"));
    default_key(map, "terminationMessagePolicy", json!("File"));
    default_key(map, "imagePullPolicy", json!(default_pull_policy(&image)));
    default_key(map, "resources", json!({}));
    if let Some(Value::Array(ports)) = map.get_mut("ports") {
        for port in ports.iter_mut().filter_map(Value::as_object_mut) {
            default_key(port, "protocol", json!("TCP"));
        }
    }
}

/// `Always` for `:latest` or untagged images, `IfNotPresent` otherwise (upstream
/// `SetDefaults_Container`); a digest pins the image.
pub fn default_pull_policy(image: &str) -> &'static str {
    if image.contains('@') {
        return "IfNotPresent";
    }
    let last = image.rsplit('/').next().unwrap_or(image);
    match last.rsplit_once(':') {
        Some((_, "latest")) | None => "Always",
        Some(_) => "IfNotPresent",
    }
}

/// Defaults the pod template at `path` (`spec.template`).
pub fn default_template(obj: &mut Value, path: &str) {
    if let Some(spec) = get_mut(obj, &format!("{path}.spec")) {
        default_pod_spec(spec);
    }
}

/// Validates a pod spec at `path` (containers required, each with a DNS-label name unique in
/// the pod; `restartPolicy` among `restart_policies`). Images are required of pods only:
/// upstream lets templates omit them for admission webhooks to fill in.
pub fn validate_pod_spec(
    spec: Option<&Value>,
    path: &str,
    restart_policies: &[&str],
    for_pod: bool,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let empty = Value::Null;
    let spec = spec.unwrap_or(&empty);
    let mut names = BTreeSet::new();
    let containers = array_at(spec, "containers");
    if containers.is_empty() {
        errs.push(FieldError::required(&format!("{path}.containers"), ""));
    }
    for list in ["initContainers", "containers"] {
        for (i, container) in array_at(spec, list).iter().enumerate() {
            let at = format!("{path}.{list}[{i}]");
            let name = str_at(container, "name").unwrap_or_default();
            if name.is_empty() {
                errs.push(FieldError::required(&format!("{at}.name"), ""));
            } else {
                for msg in dns1123_label(name) {
                    errs.push(FieldError::invalid(&format!("{at}.name"), name, &msg));
                }
                if !names.insert(name.to_string()) {
                    errs.push(FieldError::duplicate(&format!("{at}.name"), name));
                }
            }
            if for_pod && str_at(container, "image").is_none_or(|i| i.trim().is_empty()) {
                errs.push(FieldError::required(&format!("{at}.image"), ""));
            }
            for (j, port) in array_at(container, "ports").iter().enumerate() {
                let port_path = format!("{at}.ports[{j}]");
                match port.get("containerPort").and_then(Value::as_i64) {
                    None | Some(0) => errs.push(FieldError::required(
                        &format!("{port_path}.containerPort"),
                        "",
                    )),
                    Some(p) if !(1..=65535).contains(&p) => errs.push(FieldError::invalid(
                        &format!("{port_path}.containerPort"),
                        p,
                        "must be between 1 and 65535, inclusive",
                    )),
                    Some(_) => {}
                }
                if let Some(protocol) = str_at(port, "protocol")
                    && !matches!(protocol, "TCP" | "UDP" | "SCTP")
                {
                    errs.push(FieldError::not_supported(
                        &format!("{port_path}.protocol"),
                        protocol,
                        &["SCTP", "TCP", "UDP"],
                    ));
                }
            }
        }
    }
    errs.extend(validate_privileged(
        spec,
        path,
        ALLOW_PRIVILEGED.load(Ordering::Relaxed),
    ));
    if let Some(policy) = str_at(spec, "restartPolicy")
        && !restart_policies.contains(&policy)
    {
        errs.push(FieldError::not_supported(
            &format!("{path}.restartPolicy"),
            policy,
            restart_policies,
        ));
    }
    if let Some(policy) = str_at(spec, "dnsPolicy")
        && !matches!(
            policy,
            "ClusterFirstWithHostNet" | "ClusterFirst" | "Default" | "None"
        )
    {
        errs.push(FieldError::not_supported(
            &format!("{path}.dnsPolicy"),
            policy,
            &["ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"],
        ));
    }
    errs
}

/// `--allow-privileged` (upstream's process-wide `capabilities`, set once at start-up).
static ALLOW_PRIVILEGED: AtomicBool = AtomicBool::new(false);

/// Sets what `--allow-privileged` says (upstream `capabilities.Setup`).
pub fn set_allow_privileged(allow: bool) {
    ALLOW_PRIVILEGED.store(allow, Ordering::Relaxed);
}

/// Upstream `ValidateSecurityContext`'s policy check: a container asking for
/// `securityContext.privileged: true` is forbidden unless `--allow-privileged`.
fn validate_privileged(spec: &Value, path: &str, allow: bool) -> Vec<FieldError> {
    if allow {
        return Vec::new();
    }
    let mut errs = Vec::new();
    for list in ["initContainers", "containers", "ephemeralContainers"] {
        for (i, container) in array_at(spec, list).iter().enumerate() {
            if get(container, "securityContext.privileged").and_then(Value::as_bool) == Some(true) {
                errs.push(FieldError::forbidden(
                    &format!("{path}.{list}[{i}].securityContext.privileged"),
                    "disallowed by cluster policy",
                ));
            }
        }
    }
    errs
}

/// Validates the template at `path` of a workload: its labels and pod spec.
pub fn validate_template(obj: &Value, path: &str, restart_policies: &[&str]) -> Vec<FieldError> {
    let mut errs = validate_labels(
        get(obj, &format!("{path}.metadata.labels")),
        &format!("{path}.metadata.labels"),
    );
    errs.extend(validate_pod_spec(
        get(obj, &format!("{path}.spec")),
        &format!("{path}.spec"),
        restart_policies,
        false,
    ));
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn privileged_containers_need_allow_privileged() {
        let spec = json!({
            "containers": [{"name": "a", "image": "x"},
                           {"name": "b", "image": "x", "securityContext": {"privileged": true}}],
            "initContainers": [{"name": "i", "image": "x", "securityContext": {"privileged": false}}],
            "ephemeralContainers": [{"name": "e", "image": "x", "securityContext": {"privileged": true}}],
        });
        let errs = validate_privileged(&spec, "spec", false);
        let fields: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
        assert_eq!(
            fields,
            [
                "spec.containers[1].securityContext.privileged: Forbidden: disallowed by cluster policy",
                "spec.ephemeralContainers[0].securityContext.privileged: Forbidden: disallowed by cluster policy",
            ]
        );
        assert!(validate_privileged(&spec, "spec", true).is_empty());
    }

    #[test]
    fn pull_policy_defaults() {
        assert_eq!(default_pull_policy("nginx"), "Always");
        assert_eq!(default_pull_policy("nginx:latest"), "Always");
        assert_eq!(default_pull_policy("nginx:1.25"), "IfNotPresent");
        assert_eq!(default_pull_policy("localhost:5000/nginx"), "Always");
        assert_eq!(default_pull_policy("nginx@sha256:abc"), "IfNotPresent");
    }

    #[test]
    fn pod_spec_defaults() {
        let mut spec = json!({"containers": [{"name": "c", "image": "nginx:1",
                                              "ports": [{"containerPort": 80}]}]});
        default_pod_spec(&mut spec);
        assert_eq!(spec["restartPolicy"], "Always");
        assert_eq!(spec["dnsPolicy"], "ClusterFirst");
        assert_eq!(spec["containers"][0]["imagePullPolicy"], "IfNotPresent");
        assert_eq!(
            spec["containers"][0]["terminationMessagePath"],
            "/dev/termination-log"
        );
        assert_eq!(spec["containers"][0]["ports"][0]["protocol"], "TCP");
    }

    #[test]
    fn pod_spec_validation() {
        let spec = json!({"containers": [{"name": "c"}, {"name": "c", "image": "i"},
                                         {"name": "Bad", "image": "i"}],
                          "restartPolicy": "Sometimes"});
        let errs: Vec<String> =
            validate_pod_spec(Some(&spec), "spec", &["Always", "OnFailure", "Never"], true)
                .iter()
                .map(ToString::to_string)
                .collect();
        assert_eq!(errs[0], "spec.containers[0].image: Required value");
        assert_eq!(errs[1], "spec.containers[1].name: Duplicate value: \"c\"");
        assert!(errs[2].starts_with(
            "spec.containers[2].name: Invalid value: \"Bad\": a lowercase RFC 1123 label"
        ));
        assert_eq!(
            errs[3],
            "spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\""
        );
        let errs = validate_pod_spec(Some(&json!({})), "spec", &["Always"], true);
        assert_eq!(errs[0].to_string(), "spec.containers: Required value");
        let no_image = json!({"containers": [{"name": "c"}]});
        assert!(
            validate_pod_spec(Some(&no_image), "spec.template.spec", &["Always"], false).is_empty()
        );
        assert_eq!(errs[0].to_string(), "spec.containers: Required value");
    }
}
