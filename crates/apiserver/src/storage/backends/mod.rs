//! Storage backends: the embedded redb store (default) and etcd (cargo feature `etcd`).

pub mod embedded;
#[cfg(feature = "etcd")]
pub mod etcd;

pub use embedded::EmbeddedStorage;
#[cfg(feature = "etcd")]
pub use etcd::{EtcdConfig, EtcdStorage};
