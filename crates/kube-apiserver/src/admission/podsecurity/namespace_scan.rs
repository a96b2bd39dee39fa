//! The check of a namespace's existing pods when its enforce level tightens (upstream
//! `EvaluatePodsInNamespace`): warnings only, the label change itself is never refused.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::api::LevelVersion;
use super::checks::Evaluator;
use super::config::PodSecurityConfig;
use super::pod::PodView;

/// At most this many existing pods are checked.
const NAMESPACE_MAX_PODS_TO_CHECK: usize = 3000;
/// And for at most this long.
const NAMESPACE_POD_CHECK_TIMEOUT: Duration = Duration::from_secs(1);

/// The warnings about existing pods of `namespace` that violate `enforce`: one per distinct
/// set of reasons, naming the first pod (by name) and how many others share it. Pods of an
/// exempt runtime class are skipped; one pod per controller is checked before the others;
/// at most 3000 pods and about a second.
pub fn warnings(
    evaluator: &Evaluator,
    config: &PodSecurityConfig,
    namespace: &str,
    enforce: LevelVersion,
    pods: &[Arc<Value>],
) -> Vec<String> {
    let deadline = Instant::now() + NAMESPACE_POD_CHECK_TIMEOUT;
    let mut decoded: Vec<PodView> = pods
        .iter()
        .filter_map(|p| PodView::decode(p).ok())
        .filter(|p| !config.exempt_runtime_class(p.spec.runtime_class_name.as_deref()))
        .collect();
    // Upstream walks its lister's (unordered) list; ours by name, so the output is stable.
    decoded.sort_by(|a, b| a.meta.name.cmp(&b.meta.name));
    let mut seen_controllers = HashSet::new();
    let (first, duplicates): (Vec<PodView>, Vec<PodView>) =
        decoded
            .into_iter()
            .partition(|p| match p.meta.controller_uid() {
                None => true,
                Some(uid) => seen_controllers.insert(uid.to_string()),
            });
    let prioritized: Vec<PodView> = first.into_iter().chain(duplicates).collect();
    let total = prioritized.len();
    let mut checked = total.min(NAMESPACE_MAX_PODS_TO_CHECK);
    // reasons → (lexically first pod name, count), in order of first appearance.
    let mut order: Vec<String> = Vec::new();
    let mut counts: HashMap<String, (String, usize)> = HashMap::new();
    for (i, pod) in prioritized
        .iter()
        .take(NAMESPACE_MAX_PODS_TO_CHECK)
        .enumerate()
    {
        let result = evaluator.evaluate(enforce, &pod.meta, &pod.spec);
        if !result.allowed() {
            let reason = result.forbidden_reason();
            match counts.get_mut(&reason) {
                Some((name, count)) => {
                    if pod.meta.name < *name {
                        name.clone_from(&pod.meta.name);
                    }
                    *count += 1;
                }
                None => {
                    counts.insert(reason.clone(), (pod.meta.name.clone(), 1));
                    order.push(reason);
                }
            }
        }
        if Instant::now() >= deadline {
            checked = i + 1;
            break;
        }
    }
    let mut warnings = Vec::new();
    if checked < total {
        warnings.push(format!(
            "new PodSecurity enforce level only checked against the first {checked} of {total} existing pods"
        ));
    }
    if !order.is_empty() {
        warnings.push(format!(
            "existing pods in namespace {namespace:?} violate the new PodSecurity enforce level {:?}",
            enforce.to_string()
        ));
    }
    let mut pod_warnings: Vec<String> = order
        .into_iter()
        .map(|reason| {
            let (name, count) = counts.get(&reason).cloned().unwrap_or_default();
            match count {
                1 => format!("{name}: {reason}"),
                2 => format!("{name} (and 1 other pod): {reason}"),
                n => format!("{name} (and {} other pods): {reason}", n - 1),
            }
        })
        .collect();
    pod_warnings.sort();
    warnings.extend(pod_warnings);
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::podsecurity::api::{Level, Version};
    use crate::admission::podsecurity::checks::default_checks;
    use serde_json::json;

    fn privileged_pod(name: &str) -> Arc<Value> {
        Arc::new(json!({"metadata": {"name": name}, "spec": {"containers": [
            {"name": "c", "securityContext": {"privileged": true}}]}}))
    }

    fn baseline() -> LevelVersion {
        LevelVersion {
            level: Level::Baseline,
            version: Version::Latest,
        }
    }

    #[test]
    fn scan_is_capped_at_3000_pods() {
        let evaluator = Evaluator::new(&default_checks()).expect("checks");
        let pods: Vec<Arc<Value>> = (0..3005)
            .map(|i| privileged_pod(&format!("p{i:04}")))
            .collect();
        let w = warnings(
            &evaluator,
            &PodSecurityConfig::default(),
            "ns",
            baseline(),
            &pods,
        );
        assert_eq!(
            w[0],
            "new PodSecurity enforce level only checked against the first 3000 of 3005 existing pods"
        );
        assert_eq!(w[2], "p0000 (and 2999 other pods): privileged");
    }

    #[test]
    fn one_pod_per_controller_first_and_exempt_runtime_classes_skipped() {
        let evaluator = Evaluator::new(&default_checks()).expect("checks");
        let config = PodSecurityConfig::load(Some(&json!({
            "apiVersion": "pod-security.admission.config.k8s.io/v1", "kind": "PodSecurityConfiguration",
            "exemptions": {"runtimeClasses": ["kata"]}
        })))
        .expect("config");
        let owned = |name: &str, uid: &str| {
            let mut p = (*privileged_pod(name)).clone();
            p["metadata"]["ownerReferences"] = json!([{"uid": uid, "controller": true}]);
            Arc::new(p)
        };
        let mut kata = (*privileged_pod("a-kata")).clone();
        kata["spec"]["runtimeClassName"] = json!("kata");
        let pods = vec![
            owned("rs1-a", "rs1"),
            owned("rs1-b", "rs1"),
            owned("rs2-a", "rs2"),
            Arc::new(kata),
        ];
        let w = warnings(&evaluator, &config, "ns", baseline(), &pods);
        assert_eq!(
            w,
            [
                r#"existing pods in namespace "ns" violate the new PodSecurity enforce level "baseline:latest""#,
                "rs1-a (and 2 other pods): privileged",
            ]
        );
    }
}
