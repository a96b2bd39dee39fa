//! Storage backends: the embedded redb store (without `--etcd-servers`) and etcd.

pub mod embedded;
pub mod etcd;

pub use embedded::EmbeddedStorage;
pub use etcd::{EtcdConfig, EtcdStorage};
