//! The storage contract (etcd3 semantics) and its backends.
