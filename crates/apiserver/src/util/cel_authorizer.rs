//! The Kubernetes CEL authorizer library (upstream `k8s.io/apiserver/pkg/cel/library/authz`):
//! the `authorizer` variable of admission policies and webhook match conditions, with
//! `authorizer.group(g).resource(r).subresource(s).namespace(n).name(x).check(verb)`,
//! `authorizer.path(p).check(verb)`, `authorizer.serviceAccount(namespace, name)`,
//! `authorizer.requestResource` and the decision's `allowed()`, `reason()`, `errored()` and
//! `error()`.
//!
//! The checks themselves are made by a [`CheckFn`] the caller supplies (which asks the
//! server's authorizer as the requesting user), so this module knows nothing of authorizers.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use kube_cel::cel::extractors::This;
use kube_cel::cel::objects::{Key, Map, Opaque};
use kube_cel::cel::{self, Context, ExecutionError};

/// The map key under which the `authorizer` variable keeps its checker (not expressible in
/// CEL, so expressions only see `requestResource`).
const ROOT_KEY: &str = "@authorizer";

/// One authorization question an expression asks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckRequest {
    /// `Some((namespace, name))` when asked for a service account
    /// (`authorizer.serviceAccount(…)`), `None` for the requesting user.
    pub service_account: Option<(String, String)>,
    /// The verb.
    pub verb: String,
    /// The URL path of a non-resource check; empty for resource checks.
    pub path: String,
    /// The API group.
    pub group: String,
    /// The API version (`*` unless it is the request's resource).
    pub version: String,
    /// The resource.
    pub resource: String,
    /// The subresource.
    pub subresource: String,
    /// The namespace.
    pub namespace: String,
    /// The object name.
    pub name: String,
}

/// The answer to a [`CheckRequest`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckResult {
    /// Whether the authorizer allowed it.
    pub allowed: bool,
    /// The authorizer's reason.
    pub reason: String,
    /// The authorizer's error, if it failed.
    pub error: Option<String>,
}

/// Answers check requests (synchronously: CEL evaluation is).
pub type CheckFn = Arc<dyn Fn(&CheckRequest) -> CheckResult + Send + Sync>;

/// The resource a request addresses (`authorizer.requestResource`).
#[derive(Clone, Debug, Default)]
pub struct RequestResource {
    /// The API group.
    pub group: String,
    /// The API version.
    pub version: String,
    /// The resource.
    pub resource: String,
    /// The subresource.
    pub subresource: String,
    /// The namespace.
    pub namespace: String,
    /// The object name.
    pub name: String,
}

/// An authorizer for one user (the requester, or a service account).
#[derive(Clone)]
struct Authorizer {
    check: CheckFn,
    service_account: Option<(String, String)>,
}

impl fmt::Debug for Authorizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Authorizer")
            .field("service_account", &self.service_account)
            .finish()
    }
}

impl PartialEq for Authorizer {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.check, &other.check) && self.service_account == other.service_account
    }
}

impl Eq for Authorizer {}

impl Opaque for Authorizer {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.authorization.Authorizer"
    }
}

/// A check being built: `GroupCheck`, `ResourceCheck` or `PathCheck` upstream.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Check {
    authorizer: Authorizer,
    kind: CheckKind,
    request: CheckRequest,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CheckKind {
    Group,
    Resource,
    Path,
}

impl Opaque for Check {
    fn runtime_type_name(&self) -> &str {
        match self.kind {
            CheckKind::Group => "kubernetes.authorization.GroupCheck",
            CheckKind::Resource => "kubernetes.authorization.ResourceCheck",
            CheckKind::Path => "kubernetes.authorization.PathCheck",
        }
    }
}

/// The result of `check(verb)`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Decision(CheckResult);

impl Opaque for Decision {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.authorization.Decision"
    }
}

/// The `authorizer` variable for a request: checks go to `check`, and
/// `authorizer.requestResource` is `resource`.
pub fn authorizer_variable(check: CheckFn, resource: Option<&RequestResource>) -> cel::Value {
    let authorizer = Authorizer {
        check,
        service_account: None,
    };
    let mut map: HashMap<Key, cel::Value> = HashMap::new();
    if let Some(r) = resource {
        let request = CheckRequest {
            group: r.group.clone(),
            version: r.version.clone(),
            resource: r.resource.clone(),
            subresource: r.subresource.clone(),
            namespace: r.namespace.clone(),
            name: r.name.clone(),
            ..CheckRequest::default()
        };
        map.insert(
            Key::String(Arc::new("requestResource".into())),
            cel::Value::Opaque(Arc::new(Check {
                authorizer: authorizer.clone(),
                kind: CheckKind::Resource,
                request,
            })),
        );
    }
    map.insert(
        Key::String(Arc::new(ROOT_KEY.into())),
        cel::Value::Opaque(Arc::new(authorizer)),
    );
    cel::Value::Map(Map { map: Arc::new(map) })
}

/// Registers the library's functions.
pub fn register(ctx: &mut Context) {
    ctx.add_function("group", group);
    ctx.add_function("path", path);
    ctx.add_function("serviceAccount", service_account);
    ctx.add_function("resource", resource);
    ctx.add_function("subresource", subresource);
    ctx.add_function("namespace", namespace);
    ctx.add_function("name", name);
    ctx.add_function("check", check);
    ctx.add_function("allowed", allowed);
    ctx.add_function("reason", reason);
    ctx.add_function("errored", errored);
    ctx.add_function("error", error);
}

fn no_overload(function: &str) -> ExecutionError {
    ExecutionError::function_error(function, "no such overload")
}

fn authorizer_of(function: &str, this: &cel::Value) -> Result<Authorizer, ExecutionError> {
    let opaque = match this {
        cel::Value::Opaque(o) => Some(o.clone()),
        cel::Value::Map(m) => match m.map.get(&Key::String(Arc::new(ROOT_KEY.into()))) {
            Some(cel::Value::Opaque(o)) => Some(o.clone()),
            _ => None,
        },
        _ => None,
    };
    opaque
        .as_deref()
        .and_then(|o| o.downcast_ref::<Authorizer>())
        .cloned()
        .ok_or_else(|| no_overload(function))
}

fn check_of(
    function: &str,
    this: &cel::Value,
    kinds: &[CheckKind],
) -> Result<Check, ExecutionError> {
    match this {
        cel::Value::Opaque(o) => o
            .downcast_ref::<Check>()
            .filter(|c| kinds.contains(&c.kind))
            .cloned()
            .ok_or_else(|| no_overload(function)),
        _ => Err(no_overload(function)),
    }
}

fn decision_of(function: &str, this: &cel::Value) -> Result<CheckResult, ExecutionError> {
    match this {
        cel::Value::Opaque(o) => o
            .downcast_ref::<Decision>()
            .map(|d| d.0.clone())
            .ok_or_else(|| no_overload(function)),
        _ => Err(no_overload(function)),
    }
}

fn opaque(value: impl Opaque) -> cel::Value {
    cel::Value::Opaque(Arc::new(value))
}

fn group(This(this): This<cel::Value>, group: Arc<String>) -> Result<cel::Value, ExecutionError> {
    let authorizer = authorizer_of("group", &this)?;
    Ok(opaque(Check {
        authorizer,
        kind: CheckKind::Group,
        request: CheckRequest {
            group: group.to_string(),
            version: "*".into(),
            ..CheckRequest::default()
        },
    }))
}

fn path(This(this): This<cel::Value>, path: Arc<String>) -> Result<cel::Value, ExecutionError> {
    let authorizer = authorizer_of("path", &this)?;
    Ok(opaque(Check {
        authorizer,
        kind: CheckKind::Path,
        request: CheckRequest {
            path: path.to_string(),
            ..CheckRequest::default()
        },
    }))
}

fn service_account(
    This(this): This<cel::Value>,
    namespace: Arc<String>,
    name: Arc<String>,
) -> Result<cel::Value, ExecutionError> {
    let authorizer = authorizer_of("serviceAccount", &this)?;
    Ok(opaque(Authorizer {
        check: authorizer.check,
        service_account: Some((namespace.to_string(), name.to_string())),
    }))
}

fn resource(
    This(this): This<cel::Value>,
    value: Arc<String>,
) -> Result<cel::Value, ExecutionError> {
    let mut c = check_of("resource", &this, &[CheckKind::Group])?;
    c.kind = CheckKind::Resource;
    c.request.resource = value.to_string();
    Ok(opaque(c))
}

/// Sets one field of a resource check.
fn set_field(
    function: &str,
    this: &cel::Value,
    value: &str,
    field: fn(&mut CheckRequest) -> &mut String,
) -> Result<cel::Value, ExecutionError> {
    let mut c = check_of(function, this, &[CheckKind::Resource])?;
    *field(&mut c.request) = value.to_string();
    Ok(opaque(c))
}

fn subresource(
    This(this): This<cel::Value>,
    value: Arc<String>,
) -> Result<cel::Value, ExecutionError> {
    set_field("subresource", &this, &value, |r| &mut r.subresource)
}

fn namespace(
    This(this): This<cel::Value>,
    value: Arc<String>,
) -> Result<cel::Value, ExecutionError> {
    set_field("namespace", &this, &value, |r| &mut r.namespace)
}

fn name(This(this): This<cel::Value>, value: Arc<String>) -> Result<cel::Value, ExecutionError> {
    set_field("name", &this, &value, |r| &mut r.name)
}

fn check(This(this): This<cel::Value>, verb: Arc<String>) -> Result<cel::Value, ExecutionError> {
    let c = check_of("check", &this, &[CheckKind::Resource, CheckKind::Path])?;
    let mut request = c.request;
    request.verb = verb.to_string();
    request.service_account = c.authorizer.service_account.clone();
    Ok(opaque(Decision((c.authorizer.check)(&request))))
}

fn allowed(This(this): This<cel::Value>) -> Result<bool, ExecutionError> {
    Ok(decision_of("allowed", &this)?.allowed)
}

fn reason(This(this): This<cel::Value>) -> Result<Arc<String>, ExecutionError> {
    Ok(Arc::new(decision_of("reason", &this)?.reason))
}

fn errored(This(this): This<cel::Value>) -> Result<bool, ExecutionError> {
    Ok(decision_of("errored", &this)?.error.is_some())
}

fn error(This(this): This<cel::Value>) -> Result<Arc<String>, ExecutionError> {
    Ok(Arc::new(
        decision_of("error", &this)?.error.unwrap_or_default(),
    ))
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    /// Allows `get` on deployments in `apps` and `/healthz`; records every request.
    fn recorder() -> (CheckFn, Arc<Mutex<Vec<CheckRequest>>>) {
        let seen: Arc<Mutex<Vec<CheckRequest>>> = Arc::default();
        let log = seen.clone();
        let check: CheckFn = Arc::new(move |r: &CheckRequest| {
            log.lock().unwrap().push(r.clone());
            let allowed = (r.group == "apps" && r.resource == "deployments" && r.verb == "get")
                || r.path == "/healthz";
            CheckResult {
                allowed,
                reason: if allowed { "ok".into() } else { "no".into() },
                error: (r.verb == "explode").then(|| "boom".to_string()),
            }
        });
        (check, seen)
    }

    fn eval(text: &str, authorizer: cel::Value) -> cel::Value {
        let mut ctx = Context::default();
        kube_cel::KubeCelExt::register_all(&mut ctx);
        register(&mut ctx);
        ctx.add_variable_from_value("authorizer", authorizer);
        cel::Program::compile(text).unwrap().execute(&ctx).unwrap()
    }

    #[test]
    fn resource_and_path_checks_reach_the_checker_with_every_field() {
        let (check, seen) = recorder();
        let resource = RequestResource {
            group: "apps".into(),
            version: "v1".into(),
            resource: "deployments".into(),
            namespace: "ns".into(),
            name: "web".into(),
            ..RequestResource::default()
        };
        let a = authorizer_variable(check, Some(&resource));
        let allowed = "authorizer.group('apps').resource('deployments').subresource('scale').namespace('ns').name('web').check('get').allowed()";
        assert_eq!(eval(allowed, a.clone()), cel::Value::Bool(true));
        assert_eq!(
            seen.lock().unwrap()[0],
            CheckRequest {
                verb: "get".into(),
                group: "apps".into(),
                version: "*".into(),
                resource: "deployments".into(),
                subresource: "scale".into(),
                namespace: "ns".into(),
                name: "web".into(),
                ..CheckRequest::default()
            }
        );
        assert_eq!(
            eval(
                "authorizer.group('').resource('pods').check('get').reason()",
                a.clone()
            ),
            cel::Value::String(Arc::new("no".into()))
        );
        assert_eq!(
            eval(
                "authorizer.path('/healthz').check('get').allowed()",
                a.clone()
            ),
            cel::Value::Bool(true)
        );
        assert_eq!(
            eval(
                "authorizer.requestResource.check('get').allowed()",
                a.clone()
            ),
            cel::Value::Bool(true)
        );
        assert_eq!(seen.lock().unwrap().last().unwrap().version, "v1");
        let sa = "authorizer.serviceAccount('kube-system', 'bot').group('').resource('pods').check('explode')";
        assert_eq!(
            eval(&format!("{sa}.errored() && {sa}.error() == 'boom'"), a),
            cel::Value::Bool(true)
        );
        assert_eq!(
            seen.lock().unwrap().last().unwrap().service_account,
            Some(("kube-system".into(), "bot".into()))
        );
    }

    #[test]
    fn the_library_refuses_other_receivers() {
        let mut ctx = Context::default();
        register(&mut ctx);
        assert!(
            cel::Program::compile("'x'.check('get')")
                .unwrap()
                .execute(&ctx)
                .is_err()
        );
    }
}
