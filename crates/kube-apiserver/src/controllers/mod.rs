//! Controllers kube-apiserver runs as post-start hooks: its own (the `kubernetes` Service's
//! endpoints, the API server identity leases) and those upstream runs in
//! kube-controller-manager, since there is no controller manager here.

pub mod apiserveridentity;
pub mod clusterrole_aggregation;
pub mod intervals;
pub mod kubernetesservice;
pub mod resourcequota;
pub mod serviceaccounts;
pub mod storage_protection;
