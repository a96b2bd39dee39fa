//! Table-driven check tests: a pod as JSON, the expected reason and detail.

use serde_json::Value;

use super::{CheckFn, CheckResult};
use crate::admission::podsecurity::pod::PodView;

/// One case: a name, the pod (`metadata` and `spec`), and the expected violation.
pub struct Case {
    pub name: &'static str,
    pub pod: Value,
    pub expect: Option<(&'static str, &'static str)>,
}

/// A case the check allows.
pub fn allowed(name: &'static str, pod: Value) -> Case {
    Case {
        name,
        pod,
        expect: None,
    }
}

/// A case the check forbids with `reason` and `detail`.
pub fn forbidden(
    name: &'static str,
    pod: Value,
    reason: &'static str,
    detail: &'static str,
) -> Case {
    Case {
        name,
        pod,
        expect: Some((reason, detail)),
    }
}

/// Runs `check` on every case.
pub fn run(check: CheckFn, cases: Vec<Case>) {
    for case in cases {
        let pod = PodView::decode(&case.pod).unwrap_or_else(|e| panic!("{}: {e}", case.name));
        let got = check(&pod.meta, &pod.spec);
        let want = match case.expect {
            None => CheckResult::Allowed,
            Some((reason, detail)) => CheckResult::forbidden(reason, detail),
        };
        assert_eq!(got, want, "case {:?}", case.name);
    }
}
