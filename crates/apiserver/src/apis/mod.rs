//! Configuration-file APIs of the server itself (upstream `k8s.io/apiserver/pkg/apis`).

pub mod apiserver;
