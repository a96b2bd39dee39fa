//! Where the structural-schema library plugs in: a compiled per-version schema of custom
//! resources ([`CustomResourceSchema`]), the compiler that turns a version's
//! `openAPIV3Schema` into one ([`SchemaCompiler`]), and the CRD validator ([`CrdValidator`]).
//!
//! The serving code only talks to these traits; [`StructuralCompiler`] and
//! [`StructuralCrdValidator`] implement them with the structural-schema library
//! ([`crate::schema`]). Conversion webhooks reach `service` references through a
//! [`ServiceResolver`] (kube-apiserver resolves them as its aggregator does; the default asks
//! DNS for `<name>.<namespace>.svc`).

use std::sync::{Arc, OnceLock};

use apiserver::registry::FieldError;
use apiserver::storage::BoxFuture;
use serde_json::Value;

use crate::schema::{Structural, default_crd, validate_crd};

/// The compiled schema of one served version of a custom resource.
pub trait CustomResourceSchema: Send + Sync {
    /// Drops the fields the schema does not know; returns their paths (`spec.foo`) for
    /// `fieldValidation`.
    fn prune(&self, obj: &mut Value) -> Vec<String>;
    /// Applies the schema's `default`s.
    fn apply_defaults(&self, obj: &mut Value);
    /// Validates a new object (field paths as upstream: `spec.replicas`).
    fn validate(&self, obj: &Value) -> Vec<FieldError>;
    /// Validates an update (transition rules see `old`).
    fn validate_update(&self, obj: &Value, old: &Value) -> Vec<FieldError>;
    /// The OpenAPI v3 schema of the kind (for `/openapi/v3` and `kubectl explain`).
    fn openapi_v3(&self) -> Value;
    /// The Swagger 2.0 schema of the kind (for `/openapi/v2`).
    fn openapi_v2(&self) -> Value;
}

/// Compiles a version's `openAPIV3Schema` (the JSON value of
/// `spec.versions[i].schema.openAPIV3Schema`; `Null` when absent).
pub trait SchemaCompiler: Send + Sync {
    /// The compiled schema, or the errors that make it unusable.
    fn compile(
        &self,
        version_schema: &Value,
    ) -> Result<Arc<dyn CustomResourceSchema>, Vec<FieldError>>;
}

/// Validates a CustomResourceDefinition (create: `old` is `None`), structural-schema rules
/// included.
pub trait CrdValidator: Send + Sync {
    /// The errors, with upstream's field paths.
    fn validate(&self, crd: &Value, old: Option<&Value>) -> Vec<FieldError>;
}

/// Finds where a webhook's `service` reference (namespace, name, port) is reached: the host
/// (a name or an IP literal) and port to dial (upstream `webhook.ServiceResolver`).
pub trait ServiceResolver: Send + Sync {
    /// The address, or why there is none.
    fn resolve<'a>(
        &'a self,
        namespace: &'a str,
        name: &'a str,
        port: u16,
    ) -> BoxFuture<'a, Result<(String, u16), String>>;
}

/// upstream's default resolver: the service's DNS name `<name>.<namespace>.svc` and the port.
#[derive(Clone, Copy, Debug, Default)]
pub struct DnsServiceResolver;

impl ServiceResolver for DnsServiceResolver {
    fn resolve<'a>(
        &'a self,
        namespace: &'a str,
        name: &'a str,
        port: u16,
    ) -> BoxFuture<'a, Result<(String, u16), String>> {
        Box::pin(async move { Ok((format!("{name}.{namespace}.svc"), port)) })
    }
}

/// A resolver set once its dependencies exist (kube-apiserver builds the apiextensions server
/// before the Service storage); until then it resolves as [`DnsServiceResolver`].
#[derive(Default)]
pub struct DeferredServiceResolver(OnceLock<Arc<dyn ServiceResolver>>);

impl DeferredServiceResolver {
    /// An unset resolver.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the resolver (once; later calls are ignored).
    pub fn set(&self, resolver: Arc<dyn ServiceResolver>) {
        let _ = self.0.set(resolver);
    }
}

impl ServiceResolver for DeferredServiceResolver {
    fn resolve<'a>(
        &'a self,
        namespace: &'a str,
        name: &'a str,
        port: u16,
    ) -> BoxFuture<'a, Result<(String, u16), String>> {
        match self.0.get() {
            Some(inner) => inner.resolve(namespace, name, port),
            None => DnsServiceResolver.resolve(namespace, name, port),
        }
    }
}

/// The pluggable parts of the apiextensions server.
#[derive(Clone)]
pub struct Seams {
    /// Custom-resource schemas.
    pub compiler: Arc<dyn SchemaCompiler>,
    /// CRD validation.
    pub validator: Arc<dyn CrdValidator>,
    /// Where conversion webhooks given as a `service` are.
    pub service_resolver: Arc<dyn ServiceResolver>,
}

impl Default for Seams {
    /// The structural-schema library ([`StructuralCompiler`], [`StructuralCrdValidator`])
    /// and [`DnsServiceResolver`].
    fn default() -> Self {
        Seams {
            compiler: Arc::new(StructuralCompiler),
            validator: Arc::new(StructuralCrdValidator),
            service_resolver: Arc::new(DnsServiceResolver),
        }
    }
}

/// Compiles a version's schema with [`Structural::new`].
#[derive(Clone, Copy, Debug, Default)]
pub struct StructuralCompiler;

impl SchemaCompiler for StructuralCompiler {
    fn compile(
        &self,
        version_schema: &Value,
    ) -> Result<Arc<dyn CustomResourceSchema>, Vec<FieldError>> {
        // A version without a schema keeps everything (upstream's nil schema).
        let schema = match version_schema {
            Value::Null => serde_json::json!({
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": true
            }),
            other => other.clone(),
        };
        Ok(Arc::new(Structural::new(&schema, "")?))
    }
}

impl CustomResourceSchema for Structural {
    fn prune(&self, obj: &mut Value) -> Vec<String> {
        Structural::prune(self, obj)
    }
    fn apply_defaults(&self, obj: &mut Value) {
        Structural::apply_defaults(self, obj)
    }
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        Structural::validate(self, obj)
    }
    fn validate_update(&self, obj: &Value, old: &Value) -> Vec<FieldError> {
        Structural::validate_update(self, obj, old)
    }
    fn openapi_v3(&self) -> Value {
        self.to_openapi_v3()
    }
    fn openapi_v2(&self) -> Value {
        self.to_openapi_v2()
    }
}

/// Validates CRDs with [`validate_crd`] (after upstream's v1 defaults, on a copy).
#[derive(Clone, Copy, Debug, Default)]
pub struct StructuralCrdValidator;

impl CrdValidator for StructuralCrdValidator {
    fn validate(&self, crd: &Value, old: Option<&Value>) -> Vec<FieldError> {
        let mut crd = crd.clone();
        default_crd(&mut crd);
        let old = old.map(|o| {
            let mut o = o.clone();
            default_crd(&mut o);
            o
        });
        validate_crd(&crd, old.as_ref())
    }
}
