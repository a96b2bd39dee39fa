//! CustomResourceDefinitions: the `apiextensions.k8s.io` API and the custom resources it
//! serves, as a generic server that kube-apiserver's chain delegates to (the Rust analogue of
//! k8s.io/apiextensions-apiserver).
//!
//! [`install`] puts the CRD API and its controllers on a generic server (the apiextensions
//! server of the chain, before the servers delegating to it are built: they copy its hooks,
//! health checks and mux-complete signal when created):
//!
//! - `customresourcedefinitions` (+ `status`) stored under
//!   `<prefix>/apiextensions.k8s.io/customresourcedefinitions` ([`crd`]);
//! - the naming, establishing and finalizer controllers in one loop ([`controller`], [`names`]),
//!   run by the post-start hook `start-apiextensions-controllers`; `crd-informer-synced` waits
//!   for their first pass, which fires the `CRDInformerHasNotSynced` mux-complete signal (until
//!   then custom-resource paths fall through to the not-found handler's 503);
//! - per established CRD and served version a generic store with the custom-resource strategy,
//!   its `status`/`scale` subresources, routes and discovery entries ([`serving`],
//!   [`customresource`]), and OpenAPI through an [`OpenApiPublisher`] ([`openapi`]);
//! - objects stored in the CRD's storage version and converted to the served one (strategy
//!   `None`, or a conversion webhook) on every read, write, list and watch ([`conversion`]).
//!
//! The structural-schema library plugs in through [`seams`]: implement [`SchemaCompiler`]
//! (returning a [`CustomResourceSchema`]) and [`CrdValidator`], and pass them in [`Seams`].

#![warn(missing_docs)]

pub mod controller;
pub mod conversion;
pub mod crd;
pub mod customresource;
pub mod install;
pub mod jsonpath;
pub mod names;
pub mod openapi;
pub mod schema;
pub mod seams;
pub mod serving;
pub use apiserver::registry::typed;

pub use install::{ApiextensionsHandle, CRD_SYNCED_SIGNAL, InstallError, install};
pub use openapi::{
    BaseV2, CustomResourceOpenApi, DeferredPublisher, NoOpenApi, OpenApiPublisher, ServicePublisher,
};
pub use seams::{
    CrdValidator, CustomResourceSchema, DeferredServiceResolver, DnsServiceResolver,
    SchemaCompiler, Seams, ServiceResolver,
};
