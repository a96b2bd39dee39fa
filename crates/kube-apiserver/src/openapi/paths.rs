//! The path items of each resource (upstream `endpoints/installer.go` + `builder/openapi.go`):
//! one operation per verb with upstream's `operationId`s, parameters, request bodies, response
//! schemas and `x-kubernetes-action` / `x-kubernetes-group-version-kind` extensions, rendered in
//! the Swagger 2.0 or the OpenAPI 3.0 form.

use serde_json::{Map, Value, json};

use super::ResourceSpec;
use super::types::{
    API_RESOURCE_LIST, DELETE_OPTIONS, Flavour, PATCH, SCALE, STATUS, TOKEN_REQUEST, WATCH_EVENT,
};

/// The media types every object-returning operation produces.
const PRODUCES: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
];

/// The media types of list and watch operations (adds the watch streams).
const PRODUCES_STREAM: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
    "application/json;stream=watch",
    "application/vnd.kubernetes.protobuf;stream=watch",
];

/// The patch content types the server accepts, in upstream's order.
pub const PATCH_CONTENT_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
];

const LIST_PARAMS: &[&str] = &[
    "allowWatchBookmarks",
    "continue",
    "fieldSelector",
    "labelSelector",
    "limit",
    "resourceVersion",
    "resourceVersionMatch",
    "sendInitialEvents",
    "timeoutSeconds",
    "watch",
];
const WRITE_PARAMS: &[&str] = &["dryRun", "fieldManager", "fieldValidation"];
const PATCH_PARAMS: &[&str] = &["dryRun", "fieldManager", "fieldValidation", "force"];
const DELETE_PARAMS: &[&str] = &[
    "dryRun",
    "gracePeriodSeconds",
    "ignoreStoreReadErrorWithClusterBreakingPotential",
    "orphanDependents",
    "propagationPolicy",
];
const DELETE_COLLECTION_PARAMS: &[&str] = &[
    "continue",
    "dryRun",
    "fieldSelector",
    "gracePeriodSeconds",
    "ignoreStoreReadErrorWithClusterBreakingPotential",
    "labelSelector",
    "limit",
    "orphanDependents",
    "propagationPolicy",
    "resourceVersion",
    "resourceVersionMatch",
    "sendInitialEvents",
    "timeoutSeconds",
];

/// The type and description of a query parameter.
fn query_param_info(name: &str) -> (&'static str, &'static str) {
    match name {
        "allowWatchBookmarks" => (
            "boolean",
            "allowWatchBookmarks requests watch events with type \"BOOKMARK\". Servers may send bookmarks at their discretion; clients must not assume any interval.",
        ),
        "continue" => (
            "string",
            "The continue option should be set when retrieving more results from the server; its value is the continue token of the previous page.",
        ),
        "dryRun" => (
            "string",
            "When present, indicates that modifications should not be persisted. Valid values: All (process all dry run stages).",
        ),
        "fieldManager" => (
            "string",
            "fieldManager is a name associated with the actor or entity that is making these changes (at most 128 printable characters).",
        ),
        "fieldSelector" => (
            "string",
            "A selector to restrict the list of returned objects by their fields. Defaults to everything.",
        ),
        "fieldValidation" => (
            "string",
            "fieldValidation instructs the server on how to handle objects in the request containing unknown or duplicate fields. Valid values: Ignore, Warn (the default), Strict.",
        ),
        "force" => (
            "boolean",
            "Force is going to \"force\" Apply requests: the user re-acquires conflicting fields owned by other people. Must be unset for non-apply patch requests.",
        ),
        "gracePeriodSeconds" => (
            "integer",
            "The duration in seconds before the object should be deleted. Zero means delete immediately.",
        ),
        "ignoreStoreReadErrorWithClusterBreakingPotential" => (
            "boolean",
            "if set to true, it will trigger an unsafe deletion of the resource in case the normal deletion flow fails with a corrupt object error.",
        ),
        "labelSelector" => (
            "string",
            "A selector to restrict the list of returned objects by their labels. Defaults to everything.",
        ),
        "limit" => (
            "integer",
            "limit is a maximum number of responses to return for a list call; more results are signalled by the continue field of the list metadata.",
        ),
        "orphanDependents" => (
            "boolean",
            "Deprecated: please use the PropagationPolicy. Should the dependent objects be orphaned.",
        ),
        "propagationPolicy" => (
            "string",
            "Whether and how garbage collection will be performed: Orphan, Background or Foreground.",
        ),
        "resourceVersion" => (
            "string",
            "resourceVersion sets a constraint on what resource versions a request may be served from.",
        ),
        "resourceVersionMatch" => (
            "string",
            "resourceVersionMatch determines how resourceVersion is applied to list calls: Exact or NotOlderThan.",
        ),
        "sendInitialEvents" => (
            "boolean",
            "`sendInitialEvents=true` may be set together with `watch=true`: the stream begins with synthetic events for the current state, ended by a bookmark annotated \"k8s.io/initial-events-end\".",
        ),
        "timeoutSeconds" => (
            "integer",
            "Timeout for the list/watch call, regardless of any activity or inactivity.",
        ),
        "watch" => (
            "boolean",
            "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications. Specify resourceVersion.",
        ),
        "pretty" => (
            "string",
            "If 'true', then the output is pretty printed. Defaults to 'false' unless the user-agent indicates a browser or command-line HTTP tool (curl and wget).",
        ),
        _ => ("string", ""),
    }
}

fn query_param(flavour: Flavour, name: &str) -> Value {
    let (type_, description) = query_param_info(name);
    match flavour {
        Flavour::V2 => json!({
            "name": name, "in": "query", "description": description,
            "type": type_, "uniqueItems": true,
        }),
        Flavour::V3 => json!({
            "name": name, "in": "query", "description": description,
            "schema": {"type": type_, "uniqueItems": true},
        }),
    }
}

fn path_param(flavour: Flavour, name: &str, description: &str) -> Value {
    match flavour {
        Flavour::V2 => json!({
            "name": name, "in": "path", "description": description, "required": true,
            "type": "string", "uniqueItems": true,
        }),
        Flavour::V3 => json!({
            "name": name, "in": "path", "description": description, "required": true,
            "schema": {"type": "string", "uniqueItems": true},
        }),
    }
}

/// A request body: its schema, whether it is required, and the media types accepted.
struct RequestBody {
    definition: &'static str,
    required: bool,
    consumes: &'static [&'static str],
}

/// One operation before rendering.
struct Op {
    method: &'static str,
    action: &'static str,
    id: String,
    description: String,
    query: &'static [&'static str],
    body: Option<RequestBody>,
    responses: Vec<(&'static str, &'static str, Option<String>)>,
    produces: &'static [&'static str],
    gvk: Value,
}

impl Op {
    fn render(&self, flavour: Flavour, tag: &str, own_definition: &str) -> Value {
        let mut op = Map::new();
        op.insert("description".into(), json!(self.description));
        op.insert("operationId".into(), json!(self.id));
        op.insert("tags".into(), json!([tag]));
        let mut params: Vec<Value> = Vec::new();
        let body = self.body.as_ref();
        let own_body = matches!(self.method, "post" | "put") && body.is_none();
        let body_def = body
            .map(|b| b.definition)
            .or(own_body.then_some(own_definition));
        let consumes: &[&str] = body.map_or(&["*/*"], |b| b.consumes);
        let required = body.is_none_or(|b| b.required);
        if flavour == Flavour::V2 {
            if let Some(def) = body_def {
                let mut p = json!({"name": "body", "in": "body", "schema": flavour.reference(def)});
                if required {
                    p["required"] = json!(true);
                }
                params.push(p);
            }
            op.insert("consumes".into(), json!(consumes));
            op.insert("produces".into(), json!(self.produces));
            op.insert("schemes".into(), json!(["https"]));
        } else if let Some(def) = body_def {
            let content: Map<String, Value> = consumes
                .iter()
                .map(|t| ((*t).to_owned(), json!({"schema": flavour.reference(def)})))
                .collect();
            let mut request_body = json!({"content": content});
            if required {
                request_body["required"] = json!(true);
            }
            op.insert("requestBody".into(), request_body);
        }
        params.extend(self.query.iter().map(|q| query_param(flavour, q)));
        if !params.is_empty() {
            op.insert("parameters".into(), Value::Array(params));
        }
        let mut responses = Map::new();
        for (code, description, definition) in &self.responses {
            let mut response = json!({"description": description});
            if let Some(def) = definition {
                match flavour {
                    Flavour::V2 => response["schema"] = flavour.reference(def),
                    Flavour::V3 => {
                        let content: Map<String, Value> = self
                            .produces
                            .iter()
                            .map(|t| ((*t).to_owned(), json!({"schema": flavour.reference(def)})))
                            .collect();
                        response["content"] = Value::Object(content);
                    }
                }
            }
            responses.insert((*code).to_owned(), response);
        }
        responses.insert("401".into(), json!({"description": "Unauthorized"}));
        op.insert("responses".into(), Value::Object(responses));
        op.insert("x-kubernetes-action".into(), json!(self.action));
        op.insert("x-kubernetes-group-version-kind".into(), self.gvk.clone());
        Value::Object(op)
    }
}

/// `""` → `Core`; `rbac.authorization.k8s.io` → `RbacAuthorization` (upstream drops the
/// `.k8s.io` suffix and camel-cases the rest).
pub fn group_camel(group: &str) -> String {
    if group.is_empty() {
        return "Core".into();
    }
    let trimmed = group.strip_suffix(".k8s.io").unwrap_or(group);
    trimmed
        .split(['.', '-'])
        .map(|part| {
            let mut chars = part.chars();
            match chars.next() {
                Some(first) => first.to_uppercase().chain(chars).collect::<String>(),
                None => String::new(),
            }
        })
        .collect()
}

fn upper_first(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn lower_first(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The operation tag of a group-version (`core_v1`, `apps_v1`, `rbacAuthorization_v1`).
pub fn tag(group: &str, version: &str) -> String {
    format!("{}_{version}", lower_first(&group_camel(group)))
}

/// The URL prefix of a group-version (`/api/v1`, `/apis/apps/v1`).
pub fn gv_prefix(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{group}/{version}")
    }
}

fn gvk(group: &str, version: &str, kind: &str) -> Value {
    json!({ "group": group, "kind": kind, "version": version })
}

/// The path items of one resource, as `(path, item)` pairs.
pub fn resource_paths(flavour: Flavour, r: &ResourceSpec) -> Vec<(String, Value)> {
    let prefix = gv_prefix(&r.group, &r.version);
    let gv = format!("{}{}", group_camel(&r.group), upper_first(&r.version));
    let ns = if r.namespaced { "Namespaced" } else { "" };
    let kind = &r.kind;
    let list_def = format!("{}List", r.definition_name);
    let def = r.definition_name.as_str();
    let kind_gvk = gvk(&r.group, &r.version, kind);
    let tag = tag(&r.group, &r.version);
    let (collection, watch_collection) = if r.namespaced {
        (
            format!("{prefix}/namespaces/{{namespace}}/{}", r.resource),
            format!("{prefix}/watch/namespaces/{{namespace}}/{}", r.resource),
        )
    } else {
        (
            format!("{prefix}/{}", r.resource),
            format!("{prefix}/watch/{}", r.resource),
        )
    };
    let item = format!("{collection}/{{name}}");
    let watch_item = format!("{watch_collection}/{{name}}");
    let name_param = path_param(flavour, "name", &format!("name of the {kind}"));
    let namespace_param = path_param(
        flavour,
        "namespace",
        "object name and auth scope, such as for teams and projects",
    );
    let pretty = query_param(flavour, "pretty");
    let mut scope_params = Vec::new();
    if r.namespaced {
        scope_params.push(namespace_param.clone());
    }
    let item_params = {
        let mut p = vec![name_param.clone()];
        p.extend(scope_params.iter().cloned());
        p
    };

    let own = |code: &'static str, desc: &'static str| (code, desc, Some(def.to_owned()));
    let status = |code: &'static str, desc: &'static str| (code, desc, Some(STATUS.to_owned()));
    let watch_event = || vec![("200", "OK", Some(WATCH_EVENT.to_owned()))];

    let mut out = Vec::new();
    let item_ops = |name_suffix: &str, op_def: &str, op_gvk: Value, with_delete: bool| -> Vec<Op> {
        let resp = |code: &'static str, desc: &'static str| (code, desc, Some(op_def.to_owned()));
        let mut ops = vec![
            Op {
                method: "get",
                action: "get",
                id: format!("read{gv}{ns}{kind}{name_suffix}"),
                description: if name_suffix.is_empty() {
                    format!("read the specified {kind}")
                } else {
                    format!(
                        "read {} of the specified {kind}",
                        name_suffix.to_lowercase()
                    )
                },
                query: &[],
                body: None,
                responses: vec![resp("200", "OK")],
                produces: PRODUCES,
                gvk: op_gvk.clone(),
            },
            Op {
                method: "put",
                action: "put",
                id: format!("replace{gv}{ns}{kind}{name_suffix}"),
                description: if name_suffix.is_empty() {
                    format!("replace the specified {kind}")
                } else {
                    format!(
                        "replace {} of the specified {kind}",
                        name_suffix.to_lowercase()
                    )
                },
                query: WRITE_PARAMS,
                body: None,
                responses: vec![resp("200", "OK"), resp("201", "Created")],
                produces: PRODUCES,
                gvk: op_gvk.clone(),
            },
            Op {
                method: "patch",
                action: "patch",
                id: format!("patch{gv}{ns}{kind}{name_suffix}"),
                description: if name_suffix.is_empty() {
                    format!("partially update the specified {kind}")
                } else {
                    format!(
                        "partially update {} of the specified {kind}",
                        name_suffix.to_lowercase()
                    )
                },
                query: PATCH_PARAMS,
                body: Some(RequestBody {
                    definition: PATCH,
                    required: true,
                    consumes: PATCH_CONTENT_TYPES,
                }),
                responses: vec![resp("200", "OK"), resp("201", "Created")],
                produces: PRODUCES,
                gvk: op_gvk.clone(),
            },
        ];
        if with_delete {
            ops.push(Op {
                method: "delete",
                action: "delete",
                id: format!("delete{gv}{ns}{kind}"),
                description: format!("delete a {kind}"),
                query: DELETE_PARAMS,
                body: Some(RequestBody {
                    definition: DELETE_OPTIONS,
                    required: false,
                    consumes: &["*/*"],
                }),
                responses: vec![status("200", "OK"), status("202", "Accepted")],
                produces: PRODUCES,
                gvk: op_gvk,
            });
        }
        ops
    };

    let create = Op {
        method: "post",
        action: "post",
        id: format!("create{gv}{ns}{kind}"),
        description: format!("create a {kind}"),
        query: WRITE_PARAMS,
        body: None,
        responses: vec![
            own("200", "OK"),
            own("201", "Created"),
            own("202", "Accepted"),
        ],
        produces: PRODUCES,
        gvk: kind_gvk.clone(),
    };
    if r.create_only() {
        out.push(path_item(
            flavour,
            &tag,
            def,
            collection,
            scope_params,
            &pretty,
            vec![create],
        ));
        return out;
    }
    // The collection: list, create, deletecollection.
    let collection_ops = vec![
        Op {
            method: "get",
            action: "list",
            id: format!("list{gv}{ns}{kind}"),
            description: format!("list or watch objects of kind {kind}"),
            query: LIST_PARAMS,
            body: None,
            responses: vec![("200", "OK", Some(list_def.clone()))],
            produces: PRODUCES_STREAM,
            gvk: kind_gvk.clone(),
        },
        create,
        Op {
            method: "delete",
            action: "deletecollection",
            id: format!("delete{gv}Collection{ns}{kind}"),
            description: format!("delete collection of {kind}"),
            query: DELETE_COLLECTION_PARAMS,
            body: Some(RequestBody {
                definition: DELETE_OPTIONS,
                required: false,
                consumes: &["*/*"],
            }),
            responses: vec![status("200", "OK")],
            produces: PRODUCES,
            gvk: kind_gvk.clone(),
        },
    ];
    if r.create_only {
        let post = collection_ops
            .into_iter()
            .filter(|op| op.method == "post")
            .collect();
        return vec![path_item(
            flavour,
            &tag,
            def,
            collection,
            scope_params,
            &pretty,
            post,
        )];
    }
    out.push(path_item(
        flavour,
        &tag,
        def,
        collection.clone(),
        scope_params.clone(),
        &pretty,
        collection_ops,
    ));
    out.push(path_item(
        flavour,
        &tag,
        def,
        item,
        item_params.clone(),
        &pretty,
        item_ops("", def, kind_gvk.clone(), true),
    ));

    for sub in &r.subresources {
        if sub == "token" {
            // `serviceaccounts/{name}/token`: create a TokenRequest.
            let token_gvk = gvk("authentication.k8s.io", "v1", "TokenRequest");
            let token_resp = |code: &'static str, desc: &'static str| {
                (code, desc, Some(TOKEN_REQUEST.to_owned()))
            };
            let mut params = vec![path_param(flavour, "name", "name of the TokenRequest")];
            params.extend(scope_params.iter().cloned());
            out.push(path_item(
                flavour,
                &tag,
                TOKEN_REQUEST,
                format!("{collection}/{{name}}/token"),
                params,
                &pretty,
                vec![Op {
                    method: "post",
                    action: "post",
                    id: format!("create{gv}{ns}{kind}Token"),
                    description: format!("create token of a {kind}"),
                    query: WRITE_PARAMS,
                    body: None,
                    responses: vec![
                        token_resp("200", "OK"),
                        token_resp("201", "Created"),
                        token_resp("202", "Accepted"),
                    ],
                    produces: PRODUCES,
                    gvk: token_gvk,
                }],
            ));
            continue;
        }
        let (suffix, op_def, op_gvk) = match sub.as_str() {
            "status" => ("Status", def.to_owned(), kind_gvk.clone()),
            "approval" => ("Approval", def.to_owned(), kind_gvk.clone()),
            "scale" => ("Scale", SCALE.to_owned(), gvk("autoscaling", "v1", "Scale")),
            _ => continue,
        };
        out.push(path_item(
            flavour,
            &tag,
            &op_def,
            format!("{collection}/{{name}}/{sub}"),
            item_params.clone(),
            &pretty,
            item_ops(suffix, &op_def, op_gvk, false),
        ));
    }

    // The deprecated watch paths.
    let watch_list = Op {
        method: "get",
        action: "watchlist",
        id: format!("watch{gv}{ns}{kind}List"),
        description: format!(
            "watch individual changes to a list of {kind}. deprecated: use the 'watch' parameter with a list operation instead."
        ),
        query: LIST_PARAMS,
        body: None,
        responses: watch_event(),
        produces: PRODUCES_STREAM,
        gvk: kind_gvk.clone(),
    };
    out.push(path_item(
        flavour,
        &tag,
        def,
        watch_collection,
        scope_params,
        &pretty,
        vec![watch_list],
    ));
    let watch_one = Op {
        method: "get",
        action: "watch",
        id: format!("watch{gv}{ns}{kind}"),
        description: format!(
            "watch changes to an object of kind {kind}. deprecated: use the 'watch' parameter with a list operation instead, filtered to a single item with the 'fieldSelector' parameter."
        ),
        query: LIST_PARAMS,
        body: None,
        responses: watch_event(),
        produces: PRODUCES_STREAM,
        gvk: kind_gvk.clone(),
    };
    out.push(path_item(
        flavour,
        &tag,
        def,
        watch_item,
        item_params,
        &pretty,
        vec![watch_one],
    ));

    if r.namespaced {
        let all_list = Op {
            method: "get",
            action: "list",
            id: format!("list{gv}{kind}ForAllNamespaces"),
            description: format!("list or watch objects of kind {kind}"),
            query: LIST_PARAMS,
            body: None,
            responses: vec![("200", "OK", Some(list_def))],
            produces: PRODUCES_STREAM,
            gvk: kind_gvk.clone(),
        };
        out.push(path_item(
            flavour,
            &tag,
            def,
            format!("{prefix}/{}", r.resource),
            Vec::new(),
            &pretty,
            vec![all_list],
        ));
        let all_watch = Op {
            method: "get",
            action: "watchlist",
            id: format!("watch{gv}{kind}ListForAllNamespaces"),
            description: format!(
                "watch individual changes to a list of {kind}. deprecated: use the 'watch' parameter with a list operation instead."
            ),
            query: LIST_PARAMS,
            body: None,
            responses: watch_event(),
            produces: PRODUCES_STREAM,
            gvk: kind_gvk,
        };
        out.push(path_item(
            flavour,
            &tag,
            def,
            format!("{prefix}/watch/{}", r.resource),
            Vec::new(),
            &pretty,
            vec![all_watch],
        ));
    }
    out
}

fn path_item(
    flavour: Flavour,
    tag: &str,
    own_definition: &str,
    path: String,
    mut params: Vec<Value>,
    pretty: &Value,
    ops: Vec<Op>,
) -> (String, Value) {
    let mut item = Map::new();
    for op in &ops {
        item.insert(op.method.into(), op.render(flavour, tag, own_definition));
    }
    params.push(pretty.clone());
    item.insert("parameters".into(), Value::Array(params));
    (path, Value::Object(item))
}

/// The `GET <gv-prefix>/` path listing a group-version's resources.
pub fn api_resources_path(flavour: Flavour, group: &str, version: &str) -> (String, Value) {
    let gv = format!("{}{}", group_camel(group), upper_first(version));
    let op = Op {
        method: "get",
        action: "",
        id: format!("get{gv}APIResources"),
        description: "get available resources".into(),
        query: &[],
        body: None,
        responses: vec![("200", "OK", Some(API_RESOURCE_LIST.to_owned()))],
        produces: PRODUCES,
        gvk: Value::Null,
    };
    let mut rendered = op.render(flavour, &tag(group, version), API_RESOURCE_LIST);
    if let Some(obj) = rendered.as_object_mut() {
        obj.remove("x-kubernetes-action");
        obj.remove("x-kubernetes-group-version-kind");
    }
    (
        format!("{}/", gv_prefix(group, version)),
        json!({ "get": rendered }),
    )
}
