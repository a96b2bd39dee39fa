//! The API aggregation layer: the `apiregistration.k8s.io` API, proxying of remote APIServices,
//! and the generic server at the front of kube-apiserver's chain (the Rust analogue of
//! k8s.io/kube-aggregator).

#![warn(missing_docs)]
