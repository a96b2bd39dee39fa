//! Storage backends: the embedded redb store (default) and etcd (cargo feature `etcd`).

pub mod embedded;

pub use embedded::EmbeddedStorage;
