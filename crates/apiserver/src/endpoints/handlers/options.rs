//! Query parameters into the `registry::rest` option types (upstream's meta parameter codec),
//! with upstream's 400 for undecodable values and its 422 option validation.

use crate::registry::rest::{CreateOptions, DeleteOptions, GetOptions, ListOptions, UpdateOptions};
use crate::registry::store::options as store_options;
use crate::registry::{FieldError, ResourceInfo, invalid};
use crate::request::requestinfo::parse_query;
use crate::status::ApiError;

/// Decoded query parameters (first value wins, except for repeated `dryRun`).
#[derive(Clone, Debug, Default)]
pub struct Query(Vec<(String, String)>);

impl Query {
    /// Parses a raw query string.
    pub fn parse(query: &str) -> Self {
        Query(parse_query(query))
    }

    /// The first value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Every value of `key`.
    pub fn all(&self, key: &str) -> Vec<String> {
        self.0
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
            .collect()
    }

    fn string(&self, key: &str) -> String {
        self.get(key).unwrap_or_default().to_string()
    }

    /// Upstream converts a query bool leniently: anything but `false`/`0` is true, an empty
    /// value is false.
    fn bool(&self, key: &str) -> bool {
        self.get(key).is_some_and(query_bool)
    }

    fn opt_bool(&self, key: &str) -> Option<bool> {
        self.get(key).map(query_bool)
    }

    fn opt_int(&self, key: &str) -> Result<Option<i64>, ApiError> {
        match self.get(key) {
            None | Some("") => Ok(None),
            Some(v) => parse_int(v).map(Some),
        }
    }
}

fn query_bool(value: &str) -> bool {
    !value.is_empty() && !matches!(value.to_lowercase().as_str(), "false" | "0")
}

/// 400 with Go's `strconv.ParseInt` error text, as upstream's codec reports it.
fn parse_int(value: &str) -> Result<i64, ApiError> {
    value.parse::<i64>().map_err(|err| {
        let why = match err.kind() {
            std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow => {
                "value out of range"
            }
            _ => "invalid syntax",
        };
        ApiError::bad_request(format!("strconv.ParseInt: parsing {value:?}: {why}"))
    })
}

fn options_info(kind: &str) -> ResourceInfo {
    ResourceInfo {
        group: "meta.k8s.io".into(),
        kind: kind.into(),
        ..Default::default()
    }
}

fn check(kind: &str, errs: Vec<FieldError>) -> Result<(), ApiError> {
    if errs.is_empty() {
        Ok(())
    } else {
        Err(invalid(&options_info(kind), "", &errs))
    }
}

/// `GetOptions` from the query.
pub fn get_options(query: &Query) -> GetOptions {
    GetOptions {
        resource_version: query.string("resourceVersion"),
    }
}

/// `ListOptions` from the query (400 on undecodable integers).
pub fn list_options(query: &Query) -> Result<ListOptions, ApiError> {
    Ok(ListOptions {
        label_selector: query.string("labelSelector"),
        field_selector: query.string("fieldSelector"),
        watch: query.bool("watch"),
        allow_watch_bookmarks: query.bool("allowWatchBookmarks"),
        resource_version: query.string("resourceVersion"),
        resource_version_match: query.string("resourceVersionMatch"),
        timeout_seconds: query.opt_int("timeoutSeconds")?,
        limit: query.opt_int("limit")?.unwrap_or(0),
        continue_: query.string("continue"),
        send_initial_events: query.opt_bool("sendInitialEvents"),
    })
}

/// Upstream's watch-list defaulting (gate `WatchList`, on): a watch from `""`/`"0"` without
/// `sendInitialEvents` and `resourceVersionMatch` starts with the current state.
pub fn default_watch_list(opts: &mut ListOptions) {
    if opts.watch
        && (opts.resource_version.is_empty() || opts.resource_version == "0")
        && opts.send_initial_events.is_none()
        && opts.resource_version_match.is_empty()
    {
        opts.send_initial_events = Some(true);
        opts.resource_version_match = "NotOlderThan".into();
    }
}

/// Upstream `ValidateListOptions` (the watch rules when `opts.watch`): 422
/// `ListOptions.meta.k8s.io "" is invalid: …`.
pub fn validate_list_options(opts: &ListOptions) -> Result<(), ApiError> {
    // One set of rules for the handlers and the generic store.
    if opts.watch {
        store_options::validate_watch_options(opts)
    } else {
        store_options::validate_list_options(opts)
    }
}

/// `CreateOptions` from the query.
pub fn create_options(query: &Query) -> CreateOptions {
    CreateOptions {
        dry_run: query.all("dryRun"),
        field_manager: query.string("fieldManager"),
        field_validation: query.string("fieldValidation"),
    }
}

/// `UpdateOptions` (also PATCH's) from the query.
pub fn update_options(query: &Query) -> UpdateOptions {
    UpdateOptions {
        dry_run: query.all("dryRun"),
        field_manager: query.string("fieldManager"),
        field_validation: query.string("fieldValidation"),
    }
}

/// PATCH's `force` parameter (`None` when absent).
pub fn force(query: &Query) -> Option<bool> {
    query.opt_bool("force")
}

fn write_option_errors(
    dry_run: &[String],
    field_manager: &str,
    validation: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    errs.extend(validate_field_manager(field_manager));
    errs.extend(validate_dry_run(dry_run));
    if !matches!(validation, "" | "Ignore" | "Warn" | "Strict") {
        errs.push(FieldError::not_supported(
            "fieldValidation",
            validation,
            &["", "Ignore", "Strict", "Warn"],
        ));
    }
    errs
}

fn validate_field_manager(manager: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if manager.len() > 128 {
        errs.push(FieldError::too_long("fieldManager", 128));
    }
    if manager.chars().any(|c| !is_go_printable(c)) {
        errs.push(FieldError::invalid(
            "fieldManager",
            manager,
            "must only contain printable characters",
        ));
    }
    errs
}

fn validate_dry_run(dry_run: &[String]) -> Vec<FieldError> {
    if dry_run.is_empty() || (dry_run.len() == 1 && dry_run[0] == "All") {
        Vec::new()
    } else {
        vec![FieldError::not_supported(
            "dryRun",
            serde_json::json!(dry_run),
            &["All"],
        )]
    }
}

/// 422 `CreateOptions.meta.k8s.io "" is invalid: …`.
pub fn validate_create_options(opts: &CreateOptions) -> Result<(), ApiError> {
    check(
        "CreateOptions",
        write_option_errors(&opts.dry_run, &opts.field_manager, &opts.field_validation),
    )
}

/// 422 `UpdateOptions.meta.k8s.io "" is invalid: …`.
pub fn validate_update_options(opts: &UpdateOptions) -> Result<(), ApiError> {
    check(
        "UpdateOptions",
        write_option_errors(&opts.dry_run, &opts.field_manager, &opts.field_validation),
    )
}

/// 422 `PatchOptions.meta.k8s.io "" is invalid: …`: the update rules, plus `fieldManager`
/// required and `force` allowed only for apply patches.
pub fn validate_patch_options(
    opts: &UpdateOptions,
    force: Option<bool>,
    is_apply: bool,
) -> Result<(), ApiError> {
    let mut errs = Vec::new();
    if is_apply {
        if opts.field_manager.is_empty() {
            errs.push(FieldError::required(
                "fieldManager",
                "is required for apply patch",
            ));
        }
    } else if force.is_some() {
        errs.push(FieldError::forbidden(
            "force",
            "may not be specified for non-apply patch",
        ));
    }
    errs.extend(write_option_errors(
        &opts.dry_run,
        &opts.field_manager,
        &opts.field_validation,
    ));
    check("PatchOptions", errs)
}

/// `DeleteOptions` from the query (400 on an undecodable `gracePeriodSeconds`).
pub fn delete_options(query: &Query) -> Result<DeleteOptions, ApiError> {
    Ok(DeleteOptions {
        grace_period_seconds: query.opt_int("gracePeriodSeconds")?,
        preconditions: None,
        orphan_dependents: query.opt_bool("orphanDependents"),
        propagation_policy: query.get("propagationPolicy").map(str::to_string),
        dry_run: query.all("dryRun"),
    })
}

/// 422 `DeleteOptions.meta.k8s.io "" is invalid: …`.
pub fn validate_delete_options(opts: &DeleteOptions) -> Result<(), ApiError> {
    store_options::validate_delete_options(opts)
}

/// `includeObject` of a Table request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IncludeObject {
    /// Rows carry no object.
    None,
    /// Rows carry a `PartialObjectMetadata` (the default).
    #[default]
    Metadata,
    /// Rows carry the full object.
    Object,
}

/// `includeObject` from the query: 400 `Unable to convert to Table as requested: …` for an
/// unknown value.
pub fn include_object(query: &Query) -> Result<IncludeObject, ApiError> {
    match query.get("includeObject").unwrap_or_default() {
        "" | "Metadata" => Ok(IncludeObject::Metadata),
        "Object" => Ok(IncludeObject::Object),
        "None" => Ok(IncludeObject::None),
        other => Err(ApiError::bad_request(format!(
            "Unable to convert to Table as requested: includeObject: Invalid value: {other:?}: must be 'Metadata', 'Object', 'None', or empty"
        ))),
    }
}

/// Upstream `managerOrUserAgent`: the `fieldManager` parameter, else the User-Agent up to its
/// first `/` without non-printable characters, cut to 128 characters.
pub fn manager_or_user_agent(manager: &str, user_agent: &str) -> String {
    if !manager.is_empty() {
        return manager.to_string();
    }
    let prefix = user_agent.split('/').next().unwrap_or_default();
    prefix
        .chars()
        .filter(|c| is_go_printable(*c))
        .take(128)
        .collect()
}

/// Go's `unicode.IsPrint` as far as it matters here: no control characters, and the only space
/// allowed is ASCII space.
fn is_go_printable(c: char) -> bool {
    !c.is_control() && (c == ' ' || !c.is_whitespace())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_integers_are_400_with_go_text() {
        let err = list_options(&Query::parse("limit=abc")).unwrap_err();
        assert_eq!(err.code(), http::StatusCode::BAD_REQUEST);
        assert_eq!(
            err.0.message,
            "strconv.ParseInt: parsing \"abc\": invalid syntax"
        );
        assert!(list_options(&Query::parse("timeoutSeconds=9")).is_ok());
    }

    #[test]
    fn list_option_validation_table() {
        let cases: &[(&str, Option<&str>)] = &[
            ("", None),
            (
                "resourceVersionMatch=Exact",
                Some(
                    "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
                ),
            ),
            (
                "resourceVersionMatch=Exact&resourceVersion=0",
                Some(
                    "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                ),
            ),
            ("resourceVersionMatch=NotOlderThan&resourceVersion=5", None),
            (
                "sendInitialEvents=true",
                Some(
                    "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list",
                ),
            ),
            (
                "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan",
                None,
            ),
            (
                "watch=true&sendInitialEvents=true",
                Some(
                    "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                ),
            ),
            (
                "watch=true&resourceVersionMatch=NotOlderThan",
                Some(
                    "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                ),
            ),
        ];
        for (query, want) in cases {
            let opts = list_options(&Query::parse(query)).unwrap();
            match (validate_list_options(&opts), want) {
                (Ok(()), None) => {}
                (Err(err), Some(want)) => {
                    assert_eq!(
                        err.code(),
                        http::StatusCode::UNPROCESSABLE_ENTITY,
                        "{query}"
                    );
                    assert_eq!(err.0.message, *want, "{query}");
                }
                (got, want) => panic!("{query}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn watch_list_defaulting() {
        let mut opts = list_options(&Query::parse("watch=1&resourceVersion=0")).unwrap();
        default_watch_list(&mut opts);
        assert_eq!(opts.send_initial_events, Some(true));
        assert_eq!(opts.resource_version_match, "NotOlderThan");
        let mut opts = list_options(&Query::parse("watch=1&resourceVersion=7")).unwrap();
        default_watch_list(&mut opts);
        assert_eq!(opts.send_initial_events, None);
    }

    #[test]
    fn create_option_validation() {
        let opts = create_options(&Query::parse("fieldValidation=Bogus&dryRun=Foo"));
        let err = validate_create_options(&opts).unwrap_err();
        assert_eq!(
            err.0.message,
            "CreateOptions.meta.k8s.io \"\" is invalid: [dryRun: Unsupported value: [\"Foo\"]: supported values: \"All\", fieldValidation: Unsupported value: \"Bogus\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\"]"
        );
        let ok = create_options(&Query::parse(
            "dryRun=All&fieldValidation=Strict&fieldManager=x",
        ));
        assert!(validate_create_options(&ok).is_ok());
        assert!(ok.is_dry_run());
    }

    #[test]
    fn force_only_for_apply() {
        let opts = update_options(&Query::parse("fieldManager=m"));
        let err = validate_patch_options(&opts, Some(false), false).unwrap_err();
        assert_eq!(err.code(), http::StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(
            err.0.message,
            "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch"
        );
        assert!(validate_patch_options(&opts, Some(true), true).is_ok());
        let err = validate_patch_options(&UpdateOptions::default(), None, true).unwrap_err();
        assert_eq!(
            err.0.message,
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
        );
    }

    #[test]
    fn delete_option_validation() {
        let opts = delete_options(&Query::parse(
            "orphanDependents=true&propagationPolicy=Background",
        ))
        .unwrap();
        let err = validate_delete_options(&opts).unwrap_err();
        assert!(err.0.message.starts_with("DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Invalid value: \"Background\": orphanDependents and deletionPropagation cannot be both set"));
        let opts = delete_options(&Query::parse("propagationPolicy=Sideways")).unwrap();
        assert!(validate_delete_options(&opts).is_err());
        assert!(delete_options(&Query::parse("gracePeriodSeconds=x")).is_err());
    }

    #[test]
    fn manager_from_user_agent() {
        assert_eq!(
            manager_or_user_agent("", "kubectl/v1.35.2 (linux/amd64)"),
            "kubectl"
        );
        assert_eq!(manager_or_user_agent("helm", "Helm/4.1.4"), "helm");
        assert_eq!(manager_or_user_agent("", "a\u{7}b/1"), "ab");
        assert_eq!(manager_or_user_agent("", &"x".repeat(300)).len(), 128);
    }

    #[test]
    fn include_object_values() {
        assert_eq!(
            include_object(&Query::parse("")).unwrap(),
            IncludeObject::Metadata
        );
        assert_eq!(
            include_object(&Query::parse("includeObject=Object")).unwrap(),
            IncludeObject::Object
        );
        assert_eq!(
            include_object(&Query::parse("includeObject=None")).unwrap(),
            IncludeObject::None
        );
        let err = include_object(&Query::parse("includeObject=x")).unwrap_err();
        assert_eq!(err.code(), http::StatusCode::BAD_REQUEST);
    }
}
