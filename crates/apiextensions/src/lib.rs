//! CustomResourceDefinitions: the `apiextensions.k8s.io` API and the custom resources it
//! serves, as a generic server that kube-apiserver's chain delegates to (the Rust analogue of
//! k8s.io/apiextensions-apiserver).

#![warn(missing_docs)]

pub mod schema;
