//! Calling out to webhooks (upstream `k8s.io/apiserver/pkg/util/webhook`): the kubeconfig
//! that names the endpoint and its credentials, the TLS client configuration, and the HTTP
//! client with upstream's timeout and retry backoff.

pub mod client;
pub mod kubeconfig;
pub mod tls;

pub use client::{Backoff, DEFAULT_REQUEST_TIMEOUT, WebhookClient, WebhookError};
pub use kubeconfig::{KubeconfigError, WebhookKubeconfig};
