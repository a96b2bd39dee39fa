//! apps/v1: deployments, replicasets, statefulsets, daemonsets, controllerrevisions.

use apiserver::registry::{FieldError, SelectableFields, TableColumn};
use k8s_openapi::api::apps::v1::{
    ControllerRevision, DaemonSet, Deployment, ReplicaSet, StatefulSet,
};
use serde_json::{Value, json};

use super::ResourceDef;
use super::json::{default_at, get, i64_at, str_at};
use super::podspec::{default_template, validate_template};
use super::strategy::{BuiltinStrategy, info};
use super::table::{
    age_cell, age_column, column, containers_images_cells, containers_images_columns,
    format_label_selector, format_labels, int_cell, name_cell, name_column,
};
use super::validation::immutable;
use super::workload::validate_selector_and_template;

/// apps/v1 resources.
pub fn resources() -> Vec<ResourceDef> {
    vec![
        controllerrevisions(),
        daemonsets(),
        deployments(),
        replicasets(),
        statefulsets(),
    ]
}

fn apps(kind: &str, resource: &str, short: &[&str], all: bool) -> super::strategy::BuiltinStrategy {
    let categories: &[&str] = if all { &["all"] } else { &[] };
    let info = info("apps", "v1", kind, resource, true, short, categories);
    match kind {
        "Deployment" => BuiltinStrategy::new::<Deployment>(info),
        "ReplicaSet" => BuiltinStrategy::new::<ReplicaSet>(info),
        "StatefulSet" => BuiltinStrategy::new::<StatefulSet>(info),
        "DaemonSet" => BuiltinStrategy::new::<DaemonSet>(info),
        _ => BuiltinStrategy::new::<ControllerRevision>(info),
    }
}

/// The selector of apps/v1 workloads cannot change.
fn selector_immutable(new: &Value, old: &Value) -> Vec<FieldError> {
    immutable(new, old, "spec.selector").into_iter().collect()
}

fn selector_cell(obj: &Value) -> Value {
    json!(format_label_selector(get(obj, "spec.selector")))
}

fn selector_column(description: &str) -> TableColumn {
    column("Selector", "string", description, 1)
}

/// The deployments resource (subresources `status` and `scale`).
pub fn deployments() -> ResourceDef {
    let strategy = apps("Deployment", "deployments", &["deploy"], true)
        .status()
        .generation()
        .defaults(|obj| {
            default_at(obj, "spec.replicas", json!(1));
            let strategy_type = str_at(obj, "spec.strategy.type")
                .unwrap_or("RollingUpdate")
                .to_string();
            default_at(obj, "spec.strategy.type", json!(strategy_type));
            if strategy_type == "RollingUpdate" {
                default_at(obj, "spec.strategy.rollingUpdate.maxUnavailable", json!("25%"));
                default_at(obj, "spec.strategy.rollingUpdate.maxSurge", json!("25%"));
            }
            default_at(obj, "spec.revisionHistoryLimit", json!(10));
            default_at(obj, "spec.progressDeadlineSeconds", json!(600));
            default_template(obj, "spec.template");
        })
        .validate(|obj| {
            let mut errs = validate_selector_and_template(obj, "deployment", true);
            errs.extend(validate_template(obj, "spec.template", &["Always"]));
            if let Some(t) = str_at(obj, "spec.strategy.type")
                && !matches!(t, "Recreate" | "RollingUpdate")
            {
                errs.push(FieldError::not_supported(
                    "spec.strategy.type",
                    t,
                    &["Recreate", "RollingUpdate"],
                ));
            }
            errs
        })
        .validate_update(selector_immutable)
        .table(
            || {
                let [containers, images] = containers_images_columns();
                vec![
                    name_column(),
                    column("Ready", "string", "Number of the pod with ready state", 0),
                    column("Up-to-date", "integer", "Total number of non-terminated pods targeted by this deployment that have the desired template spec.", 0),
                    column("Available", "integer", "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.", 0),
                    age_column(),
                    containers,
                    images,
                    selector_column("Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment."),
                ]
            },
            |obj| {
                let [containers, images] = containers_images_cells(get(obj, "spec.template.spec"));
                vec![
                    name_cell(obj),
                    json!(format!(
                        "{}/{}",
                        i64_at(obj, "status.readyReplicas").unwrap_or(0),
                        i64_at(obj, "spec.replicas").unwrap_or(0)
                    )),
                    int_cell(obj, "status.updatedReplicas"),
                    int_cell(obj, "status.availableReplicas"),
                    age_cell(obj),
                    containers,
                    images,
                    selector_cell(obj),
                ]
            },
        );
    ResourceDef::new(strategy).with(&["status", "scale"])
}

/// The replicasets resource (subresources `status` and `scale`).
pub fn replicasets() -> ResourceDef {
    let strategy = apps("ReplicaSet", "replicasets", &["rs"], true)
        .status_from(|| json!({"replicas": 0}))
        .generation()
        .defaults(|obj| {
            default_at(obj, "spec.replicas", json!(1));
            default_template(obj, "spec.template");
        })
        .validate(|obj| {
            let mut errs = validate_selector_and_template(obj, "replicaset", true);
            errs.extend(validate_template(obj, "spec.template", &["Always"]));
            errs
        })
        .validate_update(selector_immutable)
        .selectable(|obj| {
            let mut fields = SelectableFields::new();
            fields.insert(
                "status.replicas".into(),
                i64_at(obj, "status.replicas").unwrap_or(0).to_string(),
            );
            fields
        })
        .table(
            || {
                let [containers, images] = containers_images_columns();
                vec![
                    name_column(),
                    column("Desired", "integer", "Replicas is the number of desired pods. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicaset", 0),
                    column("Current", "integer", "Replicas is the most recently observed number of non-terminating pods. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicaset", 0),
                    column("Ready", "integer", "The number of non-terminating pods targeted by this ReplicaSet with a Ready Condition.", 0),
                    age_column(),
                    containers,
                    images,
                    selector_column("Selector is a label query over pods that should match the replica count. Label keys and values that must match in order to be controlled by this replica set. It must match the pod template's labels. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors"),
                ]
            },
            |obj| {
                let [containers, images] = containers_images_cells(get(obj, "spec.template.spec"));
                vec![
                    name_cell(obj),
                    int_cell(obj, "spec.replicas"),
                    int_cell(obj, "status.replicas"),
                    int_cell(obj, "status.readyReplicas"),
                    age_cell(obj),
                    containers,
                    images,
                    selector_cell(obj),
                ]
            },
        );
    ResourceDef::new(strategy).with(&["status", "scale"])
}

/// The statefulsets resource (subresources `status` and `scale`).
pub fn statefulsets() -> ResourceDef {
    let strategy = apps("StatefulSet", "statefulsets", &["sts"], true)
        .status_from(|| json!({"availableReplicas": 0, "replicas": 0}))
        .generation()
        .defaults(|obj| {
            default_at(obj, "spec.replicas", json!(1));
            default_at(obj, "spec.podManagementPolicy", json!("OrderedReady"));
            let update = str_at(obj, "spec.updateStrategy.type")
                .unwrap_or("RollingUpdate")
                .to_string();
            default_at(obj, "spec.updateStrategy.type", json!(update));
            if update == "RollingUpdate" {
                default_at(obj, "spec.updateStrategy.rollingUpdate.partition", json!(0));
            }
            default_at(obj, "spec.revisionHistoryLimit", json!(10));
            default_at(obj, "spec.persistentVolumeClaimRetentionPolicy.whenDeleted", json!("Retain"));
            default_at(obj, "spec.persistentVolumeClaimRetentionPolicy.whenScaled", json!("Retain"));
            default_template(obj, "spec.template");
        })
        .validate(|obj| {
            let mut errs = validate_selector_and_template(obj, "statefulset", true);
            errs.extend(validate_template(obj, "spec.template", &["Always"]));
            if let Some(p) = str_at(obj, "spec.podManagementPolicy")
                && !matches!(p, "OrderedReady" | "Parallel")
            {
                errs.push(FieldError::not_supported(
                    "spec.podManagementPolicy",
                    p,
                    &["OrderedReady", "Parallel"],
                ));
            }
            errs
        })
        .validate_update(|new, old| {
            // upstream lists what may change; the selector, service name and claim templates
            // may not.
            let mut errs = selector_immutable(new, old);
            for path in ["spec.serviceName", "spec.podManagementPolicy"] {
                if get(new, path) != get(old, path) {
                    errs.push(FieldError::forbidden(
                        "spec",
                        "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
                    ));
                    break;
                }
            }
            errs
        })
        .table(
            || {
                let [containers, images] = containers_images_columns();
                vec![
                    name_column(),
                    column("Ready", "string", "Number of the pod with ready state", 0),
                    age_column(),
                    containers,
                    images,
                ]
            },
            |obj| {
                let [containers, images] = containers_images_cells(get(obj, "spec.template.spec"));
                vec![
                    name_cell(obj),
                    json!(format!(
                        "{}/{}",
                        i64_at(obj, "status.readyReplicas").unwrap_or(0),
                        i64_at(obj, "spec.replicas").unwrap_or(0)
                    )),
                    age_cell(obj),
                    containers,
                    images,
                ]
            },
        );
    ResourceDef::new(strategy).with(&["status", "scale"])
}

/// The daemonsets resource (subresource `status`).
pub fn daemonsets() -> ResourceDef {
    let strategy = apps("DaemonSet", "daemonsets", &["ds"], true)
        .status_from(|| json!({"currentNumberScheduled": 0, "desiredNumberScheduled": 0, "numberMisscheduled": 0, "numberReady": 0}))
        .generation()
        .defaults(|obj| {
            let update = str_at(obj, "spec.updateStrategy.type")
                .unwrap_or("RollingUpdate")
                .to_string();
            default_at(obj, "spec.updateStrategy.type", json!(update));
            if update == "RollingUpdate" {
                default_at(obj, "spec.updateStrategy.rollingUpdate.maxUnavailable", json!(1));
                default_at(obj, "spec.updateStrategy.rollingUpdate.maxSurge", json!(0));
            }
            default_at(obj, "spec.revisionHistoryLimit", json!(10));
            default_template(obj, "spec.template");
        })
        .validate(|obj| {
            let mut errs = validate_selector_and_template(obj, "daemonset", true);
            errs.extend(validate_template(obj, "spec.template", &["Always"]));
            errs
        })
        .validate_update(selector_immutable)
        .table(
            || {
                let [containers, images] = containers_images_columns();
                vec![
                    name_column(),
                    column("Desired", "integer", "The total number of nodes that should be running the daemon pod (including nodes correctly running the daemon pod). More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/", 0),
                    column("Current", "integer", "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod. More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/", 0),
                    column("Ready", "integer", "numberReady is the number of nodes that should be running the daemon pod and have one or more of the daemon pod running with a Ready Condition.", 0),
                    column("Up-to-date", "integer", "The total number of nodes that are running updated daemon pod", 0),
                    column("Available", "integer", "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available (ready for at least spec.minReadySeconds)", 0),
                    column("Node Selector", "string", "NodeSelector is a selector which must be true for the pod to fit on a node. Selector which must match a node's labels for the pod to be scheduled on that node. More info: https://kubernetes.io/docs/concepts/configuration/assign-pod-node/", 0),
                    age_column(),
                    containers,
                    images,
                    selector_column("A label query over pods that are managed by the daemon set. Must match in order to be controlled. It must match the pod template's labels. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors"),
                ]
            },
            |obj| {
                let [containers, images] = containers_images_cells(get(obj, "spec.template.spec"));
                vec![
                    name_cell(obj),
                    int_cell(obj, "status.desiredNumberScheduled"),
                    int_cell(obj, "status.currentNumberScheduled"),
                    int_cell(obj, "status.numberReady"),
                    int_cell(obj, "status.updatedNumberScheduled"),
                    int_cell(obj, "status.numberAvailable"),
                    json!(format_labels(get(obj, "spec.template.spec.nodeSelector"))),
                    age_cell(obj),
                    containers,
                    images,
                    selector_cell(obj),
                ]
            },
        );
    ResourceDef::new(strategy).with(&["status"])
}

/// The controllerrevisions resource.
pub fn controllerrevisions() -> ResourceDef {
    let strategy = apps("ControllerRevision", "controllerrevisions", &[], false)
        .validate(|obj| {
            super::validation::non_negative(obj, "revision")
                .into_iter()
                .collect()
        })
        .validate_update(|new, old| immutable(new, old, "data").into_iter().collect())
        .table(
            || {
                vec![
                    name_column(),
                    column("Controller", "string", "Controller of the object", 0),
                    column(
                        "Revision",
                        "integer",
                        "Revision indicates the revision of the state represented by Data.",
                        0,
                    ),
                    age_column(),
                ]
            },
            |obj| {
                let controller = super::json::array_at(obj, "metadata.ownerReferences")
                    .iter()
                    .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
                    .map(|r| {
                        let kind = r.get("kind").and_then(Value::as_str).unwrap_or_default();
                        let api_version = r
                            .get("apiVersion")
                            .and_then(Value::as_str)
                            .unwrap_or_default();
                        let name = r.get("name").and_then(Value::as_str).unwrap_or_default();
                        let group_kind = match api_version.split_once('/') {
                            Some((group, _)) => format!("{kind}.{group}"),
                            None => kind.to_string(),
                        };
                        format!("{}/{name}", group_kind.to_lowercase())
                    })
                    .unwrap_or_else(|| "<none>".into());
                vec![
                    name_cell(obj),
                    json!(controller),
                    int_cell(obj, "revision"),
                    age_cell(obj),
                ]
            },
        );
    ResourceDef::new(strategy)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(errs: Vec<FieldError>) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    fn deployment() -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "nginx", "image": "nginx:1.25"}]}}}})
    }

    #[test]
    fn deployment_defaults() {
        let def = deployments();
        let mut d = deployment();
        d["status"] = json!({"replicas": 3});
        def.strategy.prepare_for_create(&mut d);
        assert_eq!(d["spec"]["replicas"], 1);
        assert_eq!(
            d["spec"]["strategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
        );
        assert_eq!(d["spec"]["revisionHistoryLimit"], 10);
        assert_eq!(d["spec"]["progressDeadlineSeconds"], 600);
        assert_eq!(d["spec"]["template"]["spec"]["restartPolicy"], "Always");
        assert_eq!(d["status"], json!({}));
        assert!(def.strategy.validate(&d).is_empty());
        assert!(def.strategy.tracks_generation());
        assert_eq!(def.subresources, vec!["status", "scale"]);
    }

    #[test]
    fn deployment_validation_messages() {
        let def = deployments();
        let mut d = deployment();
        d["spec"]["replicas"] = json!(-1);
        d["spec"]["template"]["metadata"]["labels"] = json!({"app": "other"});
        assert_eq!(
            strings(def.strategy.validate(&d)),
            vec![
                "spec.template.metadata.labels: Invalid value: {\"app\":\"other\"}: `selector` does not match template `labels`",
                "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
            ]
        );
        let mut no_selector = deployment();
        no_selector["spec"]
            .as_object_mut()
            .unwrap()
            .remove("selector");
        assert_eq!(
            strings(def.strategy.validate(&no_selector)),
            vec!["spec.selector: Required value"]
        );
        let mut typed = deployment();
        typed["spec"]["replicas"] = json!("abc");
        let errs = strings(def.strategy.validate(&typed));
        assert_eq!(errs.len(), 1);
        assert!(
            errs[0].starts_with("spec.replicas: Invalid value: \"abc\": "),
            "{errs:?}"
        );
        let mut unknown = deployment();
        unknown["spec"]["bogusField"] = json!(1);
        assert_eq!(
            def.strategy.drop_unknown_fields(&mut unknown),
            vec!["spec.bogusField"]
        );
    }

    #[test]
    fn deployment_selector_immutable_and_status_kept() {
        let def = deployments();
        let mut old = deployment();
        old["status"] = json!({"readyReplicas": 1});
        let mut new = deployment();
        new["spec"]["selector"] = json!({"matchLabels": {"app": "web", "x": "y"}});
        new["spec"]["template"]["metadata"]["labels"]["x"] = json!("y");
        def.strategy.prepare_for_update(&mut new, &old);
        assert_eq!(new["status"], json!({"readyReplicas": 1}));
        assert_eq!(
            strings(def.strategy.validate_update(&new, &old)),
            vec![
                "spec.selector: Invalid value: {\"matchLabels\":{\"app\":\"web\",\"x\":\"y\"}}: field is immutable"
            ]
        );
    }

    #[test]
    fn deployment_row() {
        let def = deployments();
        let mut d = deployment();
        d["spec"]["replicas"] = json!(3);
        d["status"] = json!({"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2});
        let row = def.strategy.table_row(&d);
        assert_eq!(
            row,
            vec![
                json!("web"),
                json!("2/3"),
                json!(3),
                json!(2),
                json!("<unknown>"),
                json!("nginx"),
                json!("nginx:1.25"),
                json!("app=web")
            ]
        );
        let names: Vec<String> = def
            .strategy
            .table_columns()
            .into_iter()
            .map(|c| c.name)
            .collect();
        assert_eq!(
            names,
            vec![
                "Name",
                "Ready",
                "Up-to-date",
                "Available",
                "Age",
                "Containers",
                "Images",
                "Selector"
            ]
        );
    }

    #[test]
    fn helm_create_deployment_is_accepted_as_sent() {
        let def = deployments();
        let mut d = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "demo", "labels": {"app.kubernetes.io/name": "demo",
                "helm.sh/chart": "demo-0.1.0", "app.kubernetes.io/managed-by": "Helm"},
                "annotations": {"meta.helm.sh/release-name": "demo"}},
            "spec": {"replicas": 1,
                "selector": {"matchLabels": {"app.kubernetes.io/name": "demo"}},
                "template": {"metadata": {"creationTimestamp": null,
                        "labels": {"app.kubernetes.io/name": "demo"}},
                    "spec": {"serviceAccountName": "demo", "securityContext": {},
                        "containers": [{"name": "demo", "image": "nginx:1.16.0",
                            "imagePullPolicy": "IfNotPresent", "securityContext": {},
                            "ports": [{"name": "http", "containerPort": 80, "protocol": "TCP"}],
                            "livenessProbe": {"httpGet": {"path": "/", "port": "http"}},
                            "readinessProbe": {"httpGet": {"path": "/", "port": "http"}},
                            "resources": {"limits": {"cpu": 1, "memory": "128Mi"}}}]}}}});
        assert!(def.strategy.drop_unknown_fields(&mut d).is_empty());
        def.strategy.prepare_for_create(&mut d);
        assert!(
            def.strategy.validate(&d).is_empty(),
            "{:?}",
            def.strategy.validate(&d)
        );
    }

    #[test]
    fn other_workloads() {
        let mut rs = deployment();
        let def = replicasets();
        def.strategy.prepare_for_create(&mut rs);
        assert!(def.strategy.validate(&rs).is_empty());
        assert_eq!(def.strategy.table_row(&rs)[1], 1);
        let def = statefulsets();
        let mut sts = deployment();
        def.strategy.prepare_for_create(&mut sts);
        assert_eq!(sts["spec"]["podManagementPolicy"], "OrderedReady");
        assert_eq!(def.strategy.table_row(&sts)[1], "0/1");
        let def = daemonsets();
        let mut ds = deployment();
        def.strategy.prepare_for_create(&mut ds);
        assert_eq!(
            ds["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"],
            1
        );
        assert_eq!(def.strategy.table_row(&ds)[6], "<none>");
        let def = controllerrevisions();
        let cr = json!({"metadata": {"name": "web-1", "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "web", "uid": "u", "controller": true}]},
            "revision": 2});
        assert_eq!(
            def.strategy.table_row(&cr)[1..3],
            [json!("daemonset.apps/web"), json!(2)]
        );
    }
}
