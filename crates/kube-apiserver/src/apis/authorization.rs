//! authorization.k8s.io/v1: the access reviews (SubjectAccessReview, SelfSubjectAccessReview,
//! LocalSubjectAccessReview, SelfSubjectRulesReview). Create-only and never stored; their
//! storage is `registry::authorization::AccessReviewStorage`.

use k8s_openapi::api::authorization::v1::{
    LocalSubjectAccessReview, SelfSubjectAccessReview, SelfSubjectRulesReview, SubjectAccessReview,
};

use super::ResourceDef;
use super::strategy::{BuiltinStrategy, info};

/// The group.
pub const GROUP: &str = "authorization.k8s.io";

/// authorization.k8s.io/v1 resources.
pub fn resources() -> Vec<ResourceDef> {
    let review = |strategy: BuiltinStrategy| ResourceDef::new(strategy).virtual_resource();
    vec![
        review(BuiltinStrategy::new::<LocalSubjectAccessReview>(info(
            GROUP,
            "v1",
            "LocalSubjectAccessReview",
            "localsubjectaccessreviews",
            true,
            &[],
            &[],
        ))),
        review(BuiltinStrategy::new::<SelfSubjectAccessReview>(info(
            GROUP,
            "v1",
            "SelfSubjectAccessReview",
            "selfsubjectaccessreviews",
            false,
            &[],
            &[],
        ))),
        review(BuiltinStrategy::new::<SelfSubjectRulesReview>(info(
            GROUP,
            "v1",
            "SelfSubjectRulesReview",
            "selfsubjectrulesreviews",
            false,
            &[],
            &[],
        ))),
        review(BuiltinStrategy::new::<SubjectAccessReview>(info(
            GROUP,
            "v1",
            "SubjectAccessReview",
            "subjectaccessreviews",
            false,
            &[],
            &[],
        ))),
    ]
}
