//! Params of a binding (upstream `generic.CollectParams`): the objects of the policy's
//! `paramKind` that the binding's `paramRef` names or selects, read from informers.

use std::sync::Arc;
use std::time::Duration;

use apiserver::registry::informer::Informer;
use apiserver::registry::rest::RestStorage;
use serde_json::{Map, Value};

use crate::admission::custom_resources::CustomResources;
use crate::apis::json::{get, str_at};
use crate::apis::workload::selector_matches;
use crate::informers::SharedInformers;

/// How long a request waits for a param informer's first list.
const SYNC_WAIT: Duration = Duration::from_secs(1);

/// The informer of a paramKind and whether its objects are namespaced.
#[derive(Clone, Debug)]
pub struct ParamSource {
    informer: Informer,
    namespaced: bool,
}

/// Finds the resource of `paramKind` (`apiVersion`, `kind`) among the server's stores; the
/// error is upstream's configuration error text.
pub fn param_source(
    informers: &SharedInformers,
    custom: Option<&CustomResources>,
    api_version: &str,
    kind: &str,
) -> Result<ParamSource, String> {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let found = informers.stores().iter().find_map(|((g, r), store)| {
        let info = store.info();
        (g == group && info.version == version && info.kind == kind)
            .then(|| (g.clone(), r.clone(), info.namespaced))
    });
    let Some((group_name, resource, namespaced)) = found else {
        if let Some((informer, namespaced)) = custom.and_then(|c| c.informer(group, version, kind))
        {
            return Ok(ParamSource {
                informer,
                namespaced,
            });
        }
        return Err(format!(
            "failed to find resource referenced by paramKind: '{group}/{version}, Kind={kind}'"
        ));
    };
    let informer = informers
        .informer(&group_name, &resource)
        .ok_or_else(|| format!("paramKind kind `{api_version}, Kind={kind}` not known"))?;
    Ok(ParamSource {
        informer,
        namespaced,
    })
}

/// The params of one binding: `[None]` without paramKind or paramRef, the objects named or
/// selected otherwise (none when missing and `parameterNotFoundAction` is `Allow`).
pub async fn collect(
    source: Option<&ParamSource>,
    kind_text: &str,
    param_ref: Option<&Value>,
    namespace: &str,
) -> Result<Vec<Option<Arc<Value>>>, String> {
    let (Some(source), Some(param_ref)) = (source, param_ref.filter(|p| p.is_object())) else {
        return Ok(vec![None]);
    };
    let ref_namespace = str_at(param_ref, "namespace").unwrap_or_default();
    let params_namespace = if source.namespaced {
        if !ref_namespace.is_empty() {
            ref_namespace
        } else if !namespace.is_empty() {
            namespace
        } else {
            return Err("cannot use namespaced paramRef in policy binding that matches cluster-scoped resources".into());
        }
    } else {
        ""
    };
    if !source.informer.has_synced()
        && tokio::time::timeout(SYNC_WAIT, source.informer.wait_synced())
            .await
            .is_err()
    {
        return Err(format!(
            "paramKind kind `{kind_text}` not yet synced to use for admission"
        ));
    }
    if !ref_namespace.is_empty() && !source.namespaced {
        return Err(
            "paramRef.namespace must not be provided for a cluster-scoped `paramKind`".into(),
        );
    }
    let name = str_at(param_ref, "name").unwrap_or_default();
    let selector = get(param_ref, "selector").filter(|s| !s.is_null());
    let params: Vec<Option<Arc<Value>>> = if !name.is_empty() {
        if selector.is_some() {
            return Err("paramRef.name and paramRef.selector are mutually exclusive".into());
        }
        source
            .informer
            .get(params_namespace, name)
            .map(|p| vec![Some(p)])
            .unwrap_or_default()
    } else if let Some(selector) = selector {
        let empty = Map::new();
        let mut found: Vec<Arc<Value>> = source
            .informer
            .list()
            .into_iter()
            .filter(|p| {
                !source.namespaced
                    || str_at(p, "metadata.namespace").unwrap_or_default() == params_namespace
            })
            .filter(|p| {
                let labels = get(p, "metadata.labels")
                    .and_then(Value::as_object)
                    .unwrap_or(&empty);
                selector_matches(selector, labels)
            })
            .collect();
        found.sort_by(|a, b| {
            str_at(a, "metadata.name")
                .unwrap_or_default()
                .cmp(str_at(b, "metadata.name").unwrap_or_default())
        });
        found.into_iter().map(Some).collect()
    } else {
        return Err("one of name or selector must be provided".into());
    };
    if params.is_empty() && str_at(param_ref, "parameterNotFoundAction") == Some("Deny") {
        return Err(
            "no params found for policy binding with `Deny` parameterNotFoundAction".into(),
        );
    }
    Ok(params)
}
