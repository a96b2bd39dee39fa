//! Controllers upstream runs in kube-controller-manager that kube-apiserver runs itself, as
//! post-start hooks, since there is no controller manager here.

pub mod clusterrole_aggregation;
pub mod resourcequota;
pub mod serviceaccounts;
pub mod storage_protection;
