//! authentication.k8s.io/v1: TokenReview and SelfSubjectReview (create only; their storages
//! are in `registry::authentication`).

use k8s_openapi::api::authentication::v1::{SelfSubjectReview, TokenReview};

use super::ResourceDef;
use super::strategy::{BuiltinStrategy, info};

/// authentication.k8s.io/v1 resources.
pub fn resources() -> Vec<ResourceDef> {
    vec![selfsubjectreviews(), tokenreviews()]
}

/// The `selfsubjectreviews` resource (`kubectl auth whoami`).
pub fn selfsubjectreviews() -> ResourceDef {
    ResourceDef::new(BuiltinStrategy::new::<SelfSubjectReview>(info(
        "authentication.k8s.io",
        "v1",
        "SelfSubjectReview",
        "selfsubjectreviews",
        false,
        &[],
        &[],
    )))
    .virtual_resource()
}

/// The `tokenreviews` resource.
pub fn tokenreviews() -> ResourceDef {
    ResourceDef::new(BuiltinStrategy::new::<TokenReview>(info(
        "authentication.k8s.io",
        "v1",
        "TokenReview",
        "tokenreviews",
        false,
        &[],
        &[],
    )))
    .virtual_resource()
}
