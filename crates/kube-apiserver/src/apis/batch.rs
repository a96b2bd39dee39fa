//! batch/v1: jobs and cronjobs.

use apiserver::registry::{FieldError, SelectableFields, TableColumn};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use serde_json::{Value, json};

use super::ResourceDef;
use super::json::{array_at, default_at, get, has, i64_at, object_at, str_at};
use super::podspec::{default_template, validate_template};
use super::strategy::{BuiltinStrategy, info};
use super::table::{
    age_cell, age_column, column, containers_images_cells, containers_images_columns,
    duration_between, format_label_selector, name_cell, name_column, translate_timestamp_since,
};
use super::validation::{immutable, non_negative};
use super::workload::validate_selector_and_template;

/// batch/v1 resources.
pub fn resources() -> Vec<ResourceDef> {
    vec![cronjobs(), jobs()]
}

const JOB_RESTART_POLICIES: [&str; 2] = ["OnFailure", "Never"];

/// The label (and selector key) tying a job's pods to it.
const CONTROLLER_UID: &str = "batch.kubernetes.io/controller-uid";
const JOB_NAME: &str = "batch.kubernetes.io/job-name";

/// The jobs resource (subresource `status`).
pub fn jobs() -> ResourceDef {
    let strategy =
        BuiltinStrategy::new::<Job>(info("batch", "v1", "Job", "jobs", true, &[], &["all"]))
            .status()
            .generation()
            .defaults(default_job)
            .prepare_create(generate_selector)
            .validate(validate_job)
            .validate_update(validate_job_update)
            .selectable(|obj| {
                let mut fields = SelectableFields::new();
                fields.insert(
                    "status.successful".into(),
                    i64_at(obj, "status.succeeded").unwrap_or(0).to_string(),
                );
                fields
            })
            .table(job_columns, job_row);
    ResourceDef::new(strategy).with(&["status"])
}

fn default_job_spec(obj: &mut Value, spec_path: &str) {
    let completions = format!("{spec_path}.completions");
    let parallelism = format!("{spec_path}.parallelism");
    if !has(obj, &completions) && !has(obj, &parallelism) {
        default_at(obj, &completions, json!(1));
    }
    default_at(obj, &parallelism, json!(1));
    if !has(obj, &format!("{spec_path}.backoffLimitPerIndex")) {
        default_at(obj, &format!("{spec_path}.backoffLimit"), json!(6));
    }
    default_at(
        obj,
        &format!("{spec_path}.completionMode"),
        json!("NonIndexed"),
    );
    default_at(obj, &format!("{spec_path}.suspend"), json!(false));
    if !has(obj, &format!("{spec_path}.podFailurePolicy")) {
        default_at(
            obj,
            &format!("{spec_path}.podReplacementPolicy"),
            json!("TerminatingOrFailed"),
        );
    }
    default_template(obj, &format!("{spec_path}.template"));
}

fn default_job(obj: &mut Value) {
    default_job_spec(obj, "spec");
}

/// Upstream generates the selector and the pod labels from the job's uid unless
/// `manualSelector` is set. The uid is the one the object carries; a new one is made (and
/// kept in `metadata.uid`) when the store has not assigned it yet.
fn generate_selector(obj: &mut Value) {
    if get(obj, "spec.manualSelector").and_then(Value::as_bool) == Some(true) {
        return;
    }
    let uid = match str_at(obj, "metadata.uid").filter(|u| !u.is_empty()) {
        Some(uid) => uid.to_string(),
        None => {
            let uid = uuid::Uuid::new_v4().to_string();
            if let Some(meta) = object_at(obj, "metadata") {
                meta.insert("uid".into(), json!(uid));
            }
            uid
        }
    };
    let name = str_at(obj, "metadata.name").unwrap_or_default().to_string();
    if let Some(labels) = object_at(obj, "spec.template.metadata.labels") {
        for (key, value) in [
            (CONTROLLER_UID, &uid),
            (JOB_NAME, &name),
            ("controller-uid", &uid),
            ("job-name", &name),
        ] {
            labels
                .entry(key)
                .or_insert_with(|| Value::String(value.clone()));
        }
    }
    if !has(obj, "spec.selector")
        && let Some(spec) = object_at(obj, "spec")
    {
        spec.insert(
            "selector".into(),
            json!({"matchLabels": {CONTROLLER_UID: uid}}),
        );
    }
}

fn validate_job(obj: &Value) -> Vec<FieldError> {
    let mut errs = validate_selector_and_template(obj, "job", true);
    for path in ["spec.parallelism", "spec.completions", "spec.backoffLimit"] {
        errs.extend(non_negative(obj, path));
    }
    if let Some(mode) = str_at(obj, "spec.completionMode")
        && !matches!(mode, "NonIndexed" | "Indexed")
    {
        errs.push(FieldError::not_supported(
            "spec.completionMode",
            mode,
            &["NonIndexed", "Indexed"],
        ));
    }
    errs.extend(validate_restart_policy(obj, "spec.template.spec"));
    errs.extend(validate_template(
        obj,
        "spec.template",
        &JOB_RESTART_POLICIES,
    ));
    errs
}

/// Jobs need an explicit `OnFailure` or `Never`: upstream reports a missing one as required
/// (defaulting makes it `Always`, which the template check then refuses).
fn validate_restart_policy(obj: &Value, spec_path: &str) -> Vec<FieldError> {
    let path = format!("{spec_path}.restartPolicy");
    if str_at(obj, &path).is_none_or(str::is_empty) {
        return vec![FieldError::required(
            &path,
            "valid values: \"OnFailure\", \"Never\"",
        )];
    }
    Vec::new()
}

fn validate_job_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs: Vec<FieldError> = immutable(new, old, "spec.selector").into_iter().collect();
    // the template may change only while the job is suspended.
    let suspended = get(old, "spec.suspend").and_then(Value::as_bool) == Some(true);
    if !suspended && let Some(err) = immutable(new, old, "spec.template") {
        errs.push(err);
    }
    if str_at(new, "spec.completionMode") != Some("Indexed")
        && let Some(err) = immutable(new, old, "spec.completions")
    {
        errs.push(err);
    }
    errs.extend(immutable(new, old, "spec.completionMode"));
    errs
}

fn job_columns() -> Vec<TableColumn> {
    let [containers, images] = containers_images_columns();
    vec![
        name_column(),
        column("Status", "string", "Status of the job.", 0),
        column(
            "Completions",
            "string",
            "The completion status of the job.",
            0,
        ),
        column(
            "Duration",
            "string",
            "Time required to complete the job.",
            0,
        ),
        age_column(),
        containers,
        images,
        column(
            "Selector",
            "string",
            "A label query over pods that should match the pod count. Normally, the system sets this field for you. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
            1,
        ),
    ]
}

fn has_condition(obj: &Value, kind: &str) -> bool {
    array_at(obj, "status.conditions").iter().any(|c| {
        c.get("type").and_then(Value::as_str) == Some(kind)
            && c.get("status").and_then(Value::as_str) == Some("True")
    })
}

fn job_status(obj: &Value) -> &'static str {
    if has_condition(obj, "Complete") {
        "Complete"
    } else if has_condition(obj, "Failed") {
        "Failed"
    } else if has(obj, "metadata.deletionTimestamp") {
        "Terminating"
    } else if has_condition(obj, "Suspended") {
        "Suspended"
    } else if has_condition(obj, "FailureTarget") {
        "FailureTarget"
    } else if has_condition(obj, "SuccessCriteriaMet") {
        "SuccessCriteriaMet"
    } else {
        "Running"
    }
}

fn job_row(obj: &Value) -> Vec<Value> {
    let succeeded = i64_at(obj, "status.succeeded").unwrap_or(0);
    let completions = match i64_at(obj, "spec.completions") {
        Some(c) => format!("{succeeded}/{c}"),
        None => match i64_at(obj, "spec.parallelism").unwrap_or(0) {
            p if p > 1 => format!("{succeeded}/1 of {p}"),
            _ => format!("{succeeded}/1"),
        },
    };
    let duration = match (
        str_at(obj, "status.startTime"),
        str_at(obj, "status.completionTime"),
    ) {
        (None, _) => String::new(),
        (Some(start), None) => translate_timestamp_since(Some(start)),
        (Some(start), Some(end)) => duration_between(start, end).unwrap_or_default(),
    };
    let [containers, images] = containers_images_cells(get(obj, "spec.template.spec"));
    vec![
        name_cell(obj),
        json!(job_status(obj)),
        json!(completions),
        json!(duration),
        age_cell(obj),
        containers,
        images,
        json!(format_label_selector(get(obj, "spec.selector"))),
    ]
}

/// The cronjobs resource (subresource `status`).
pub fn cronjobs() -> ResourceDef {
    let strategy = BuiltinStrategy::new::<CronJob>(info(
        "batch",
        "v1",
        "CronJob",
        "cronjobs",
        true,
        &["cj"],
        &["all"],
    ))
    .status()
    .generation()
    .defaults(|obj| {
        default_at(obj, "spec.concurrencyPolicy", json!("Allow"));
        default_at(obj, "spec.suspend", json!(false));
        default_at(obj, "spec.successfulJobsHistoryLimit", json!(3));
        default_at(obj, "spec.failedJobsHistoryLimit", json!(1));
        if has(obj, "spec.jobTemplate.spec") {
            default_job_spec(obj, "spec.jobTemplate.spec");
        }
    })
    .validate(|obj| {
        let mut errs = Vec::new();
        if str_at(obj, "spec.schedule").is_none_or(|s| s.trim().is_empty()) {
            errs.push(FieldError::required("spec.schedule", ""));
        }
        if let Some(policy) = str_at(obj, "spec.concurrencyPolicy")
            && !matches!(policy, "Allow" | "Forbid" | "Replace")
        {
            errs.push(FieldError::not_supported(
                "spec.concurrencyPolicy",
                policy,
                &["Allow", "Forbid", "Replace"],
            ));
        }
        for path in ["spec.successfulJobsHistoryLimit", "spec.failedJobsHistoryLimit"] {
            errs.extend(non_negative(obj, path));
        }
        errs.extend(validate_restart_policy(obj, "spec.jobTemplate.spec.template.spec"));
        errs.extend(validate_template(
            obj,
            "spec.jobTemplate.spec.template",
            &JOB_RESTART_POLICIES,
        ));
        errs
    })
    .table(
        || {
            let [containers, images] = containers_images_columns();
            vec![
                name_column(),
                column("Schedule", "string", "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron.", 0),
                column("Timezone", "string", "The time zone name for the given schedule, see https://en.wikipedia.org/wiki/List_of_tz_database_time_zones. If not specified, this will default to the time zone of the kube-controller-manager process. The set of valid time zone names and the time zone offset is loaded from the system-wide time zone database by the API server during CronJob validation and the controller manager during execution. If no system-wide time zone database can be found a bundled version of the database is used instead. If the time zone name becomes invalid during the lifetime of a CronJob or due to a change in host configuration, the controller will stop creating new new Jobs and will create a system event with the reason UnknownTimeZone. More information can be found in https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/#time-zones", 0),
                column("Suspend", "boolean", "This flag tells the controller to suspend subsequent executions, it does not apply to already started executions.  Defaults to false.", 0),
                column("Active", "integer", "A list of pointers to currently running jobs.", 0),
                column("Last Schedule", "string", "Information when was the last time the job was successfully scheduled.", 0),
                age_column(),
                containers,
                images,
                column("Selector", "string", "A label query over pods that should match the pod count. Normally, the system sets this field for you. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors", 1),
            ]
        },
        |obj| {
            let last = str_at(obj, "status.lastScheduleTime")
                .map_or_else(|| "<none>".to_string(), |t| translate_timestamp_since(Some(t)));
            let [containers, images] =
                containers_images_cells(get(obj, "spec.jobTemplate.spec.template.spec"));
            vec![
                name_cell(obj),
                json!(str_at(obj, "spec.schedule").unwrap_or_default()),
                json!(str_at(obj, "spec.timeZone").filter(|z| !z.is_empty()).unwrap_or("<none>")),
                json!(get(obj, "spec.suspend").and_then(Value::as_bool).unwrap_or(false)),
                json!(array_at(obj, "status.active").len()),
                json!(last),
                age_cell(obj),
                containers,
                images,
                json!(format_label_selector(get(obj, "spec.jobTemplate.spec.selector"))),
            ]
        },
    );
    ResourceDef::new(strategy).with(&["status"])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(errs: Vec<FieldError>) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    fn job() -> Value {
        json!({"metadata": {"name": "pi", "uid": "1234"},
               "spec": {"template": {"spec": {"restartPolicy": "Never",
                   "containers": [{"name": "pi", "image": "perl"}]}}}})
    }

    #[test]
    fn job_defaults_and_generated_selector() {
        let def = jobs();
        let mut j = job();
        def.strategy.prepare_for_create(&mut j);
        assert_eq!(j["spec"]["completions"], 1);
        assert_eq!(j["spec"]["parallelism"], 1);
        assert_eq!(j["spec"]["backoffLimit"], 6);
        assert_eq!(
            j["spec"]["selector"],
            json!({"matchLabels": {CONTROLLER_UID: "1234"}})
        );
        assert_eq!(j["spec"]["template"]["metadata"]["labels"][JOB_NAME], "pi");
        assert!(
            def.strategy.validate(&j).is_empty(),
            "{:?}",
            def.strategy.validate(&j)
        );
        let row = def.strategy.table_row(&j);
        assert_eq!(row[1..4], [json!("Running"), json!("0/1"), json!("")]);
    }

    #[test]
    fn job_restart_policy_and_template_immutable() {
        let def = jobs();
        let mut j = job();
        j["spec"]["template"]["spec"]["restartPolicy"] = json!("Always");
        def.strategy.prepare_for_create(&mut j);
        assert_eq!(
            strings(def.strategy.validate(&j)),
            vec![
                "spec.template.spec.restartPolicy: Unsupported value: \"Always\": supported values: \"OnFailure\", \"Never\""
            ]
        );
        let mut old = job();
        def.strategy.prepare_for_create(&mut old);
        let mut new = old.clone();
        new["spec"]["template"]["spec"]["containers"][0]["image"] = json!("perl:2");
        let errs = def.strategy.validate_update(&new, &old);
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].field, "spec.template");
        assert!(errs[0].to_string().ends_with("field is immutable"));
    }

    #[test]
    fn cronjob_defaults_and_row() {
        let def = cronjobs();
        let mut cj = json!({"metadata": {"name": "hello"},
            "spec": {"schedule": "*/1 * * * *", "jobTemplate": {"spec": {"template": {"spec": {
                "restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "busybox"}]}}}}}});
        def.strategy.prepare_for_create(&mut cj);
        assert_eq!(cj["spec"]["concurrencyPolicy"], "Allow");
        assert_eq!(cj["spec"]["successfulJobsHistoryLimit"], 3);
        assert!(
            def.strategy.validate(&cj).is_empty(),
            "{:?}",
            def.strategy.validate(&cj)
        );
        let row = def.strategy.table_row(&cj);
        assert_eq!(
            row[1..6],
            [
                json!("*/1 * * * *"),
                json!("<none>"),
                json!(false),
                json!(0),
                json!("<none>")
            ]
        );
        let missing = json!({"metadata": {"name": "x"}, "spec": {"jobTemplate": {"spec": {"template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}}}}});
        assert_eq!(
            strings(def.strategy.validate(&missing)),
            vec!["spec.schedule: Required value"]
        );
    }
}
