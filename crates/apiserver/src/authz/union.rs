//! The union of authorizers (`authorization/union`).

use std::sync::Arc;

use super::{Attributes, AuthorizeResult, Authorizer, AuthzError, Decision};

/// Asks authorizers in order: the first `Allow` or `Deny` wins (with that authorizer's reason
/// and error); `NoOpinion` moves on. If nobody decides, the result is `NoOpinion` with all
/// reasons joined by newlines and all errors aggregated.
pub struct UnionAuthorizer {
    authorizers: Vec<Arc<dyn Authorizer>>,
}

impl UnionAuthorizer {
    /// A union of `authorizers`.
    pub fn new(authorizers: Vec<Arc<dyn Authorizer>>) -> Self {
        UnionAuthorizer { authorizers }
    }
}

#[async_trait::async_trait]
impl Authorizer for UnionAuthorizer {
    async fn authorize(&self, attrs: &Attributes) -> AuthorizeResult {
        let mut errors = Vec::new();
        let mut reasons = Vec::new();
        for authorizer in &self.authorizers {
            let (decision, reason, err) = authorizer.authorize(attrs).await;
            match decision {
                Decision::Allow | Decision::Deny => return (decision, reason, err),
                Decision::NoOpinion => {
                    errors.extend(err);
                    if !reason.is_empty() {
                        reasons.push(reason);
                    }
                }
            }
        }
        (
            Decision::NoOpinion,
            reasons.join("\n"),
            AuthzError::aggregate(errors),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Mock(Decision, &'static str, Option<&'static str>);
    #[async_trait::async_trait]
    impl Authorizer for Mock {
        async fn authorize(&self, _attrs: &Attributes) -> AuthorizeResult {
            (
                self.0,
                self.1.to_string(),
                self.2.map(|e| AuthzError::Other(e.to_string())),
            )
        }
    }

    async fn run(list: Vec<Mock>) -> AuthorizeResult {
        let list = list
            .into_iter()
            .map(|m| Arc::new(m) as Arc<dyn Authorizer>)
            .collect();
        UnionAuthorizer::new(list)
            .authorize(&Attributes::default())
            .await
    }

    #[tokio::test]
    async fn authorization_first_passes() {
        let (d, _, _) = run(vec![
            Mock(Decision::Allow, "", None),
            Mock(Decision::NoOpinion, "", None),
        ])
        .await;
        assert_eq!(d, Decision::Allow);
    }

    #[tokio::test]
    async fn authorization_second_passes() {
        let (d, _, err) = run(vec![
            Mock(Decision::NoOpinion, "", Some("ignored")),
            Mock(Decision::Allow, "ok", None),
        ])
        .await;
        assert_eq!(d, Decision::Allow);
        assert!(err.is_none());
    }

    #[tokio::test]
    async fn authorization_none_passes() {
        let (d, reason, err) = run(vec![
            Mock(Decision::NoOpinion, "first", None),
            Mock(Decision::NoOpinion, "", None),
            Mock(Decision::NoOpinion, "third", None),
        ])
        .await;
        assert_eq!(d, Decision::NoOpinion);
        assert_eq!(reason, "first\nthird");
        assert!(err.is_none());
    }

    #[tokio::test]
    async fn authorization_error() {
        let (d, _, err) = run(vec![
            Mock(Decision::NoOpinion, "", Some("foo")),
            Mock(Decision::NoOpinion, "", Some("bar")),
        ])
        .await;
        assert_eq!(d, Decision::NoOpinion);
        assert_eq!(err.unwrap().to_string(), "[foo, bar]");
    }

    #[tokio::test]
    async fn authorization_unequivocal_deny() {
        let (d, reason, _) = run(vec![
            Mock(Decision::NoOpinion, "", None),
            Mock(Decision::Deny, "no", None),
            Mock(Decision::Allow, "", None),
        ])
        .await;
        assert_eq!(d, Decision::Deny);
        assert_eq!(reason, "no");
    }
}
