//! CustomResourceDefinitions: the `apiextensions.k8s.io` API and the custom resources it
//! serves, as a generic server that kube-apiserver's chain delegates to (the Rust analogue of
//! k8s.io/apiextensions-apiserver).
//!
//! [`install`] puts the CRD API and its controllers on a generic server. The structural-schema
//! library plugs in through [`seams`].

#![warn(missing_docs)]

pub mod controller;
pub mod crd;
pub mod customresource;
pub mod install;
pub mod jsonpath;
pub mod names;
pub mod openapi;
pub mod seams;
pub mod serving;
mod typed;

pub use install::{ApiextensionsHandle, CRD_SYNCED_SIGNAL, InstallError, install};
pub use openapi::{
    CustomResourceOpenApi, DeferredPublisher, NoOpenApi, OpenApiPublisher, ServicePublisher,
};
pub use seams::{CrdValidator, CustomResourceSchema, SchemaCompiler, Seams};
