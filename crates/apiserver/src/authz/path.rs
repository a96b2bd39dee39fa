//! The always-allow-paths authorizer (`authorization/path`).

use super::{Attributes, AuthorizeResult, Authorizer, Decision};

/// A path with a `*` anywhere but at the end.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("only trailing * allowed in {0:?}")]
pub struct InvalidPathError(pub String);

/// Allows non-resource requests for exact paths or trailing-`*` prefixes (a leading `/` is
/// optional); has no opinion otherwise.
#[derive(Clone, Debug, Default)]
pub struct PathAuthorizer {
    paths: Vec<String>,
    prefixes: Vec<String>,
}

impl PathAuthorizer {
    /// An authorizer for `always_allow_paths`.
    pub fn new(always_allow_paths: &[String]) -> Result<Self, InvalidPathError> {
        let mut out = PathAuthorizer::default();
        for p in always_allow_paths {
            let p = p.strip_prefix('/').unwrap_or(p);
            if p.is_empty() {
                out.paths.push(String::new());
                continue;
            }
            let last = p.chars().last().map_or(0, char::len_utf8);
            if p[..p.len() - last].contains('*') {
                return Err(InvalidPathError(p.to_string()));
            }
            match p.strip_suffix('*') {
                Some(prefix) => out.prefixes.push(prefix.to_string()),
                None => out.paths.push(p.to_string()),
            }
        }
        Ok(out)
    }
}

#[async_trait::async_trait]
impl Authorizer for PathAuthorizer {
    async fn authorize(&self, attrs: &Attributes) -> AuthorizeResult {
        if attrs.resource_request {
            return (Decision::NoOpinion, String::new(), None);
        }
        let path = attrs.path.strip_prefix('/').unwrap_or(&attrs.path);
        if self.paths.iter().any(|p| p == path)
            || self.prefixes.iter().any(|p| path.starts_with(p.as_str()))
        {
            return (Decision::Allow, String::new(), None);
        }
        (Decision::NoOpinion, String::new(), None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn check(allowed: &[&str], path: &str) -> Decision {
        let paths: Vec<String> = allowed.iter().map(|s| s.to_string()).collect();
        let auth = PathAuthorizer::new(&paths).unwrap();
        auth.authorize(&Attributes {
            path: path.into(),
            ..Default::default()
        })
        .await
        .0
    }

    #[tokio::test]
    async fn new_authorizer_table() {
        use Decision::*;
        let cases: &[(&[&str], &[&str], &[&str])] = &[
            (&[], &[], &["/", "/foo"]),
            (&["/"], &["/"], &["/foo"]),
            (&["/foo"], &["/foo", "foo"], &["/", "/foo/bar", "/bar"]),
            (&["/foo", "/bar"], &["/foo", "/bar"], &["/", "/baz"]),
            (&["*"], &["/", "/foo/bar"], &[]),
            (&["/foo/*"], &["/foo/", "/foo/bar"], &["/", "/foo", "/bar"]),
            (&["/foo*"], &["/foo", "/foobar", "/foo/bar"], &["/", "/bar"]),
        ];
        for (allowed, allow, deny) in cases {
            for p in *allow {
                assert_eq!(check(allowed, p).await, Allow, "{allowed:?} {p}");
            }
            for p in *deny {
                assert_eq!(check(allowed, p).await, NoOpinion, "{allowed:?} {p}");
            }
        }
    }

    #[test]
    fn invalid_star() {
        assert!(PathAuthorizer::new(&["/fooé".to_string()]).is_ok());
        for bad in ["/*foo", "/foo/*/bar", "**", "/*é"] {
            let err = PathAuthorizer::new(&[bad.to_string()]).unwrap_err();
            assert!(
                err.to_string().starts_with("only trailing * allowed in"),
                "{err}"
            );
        }
    }

    #[tokio::test]
    async fn resource_requests_have_no_opinion() {
        let auth = PathAuthorizer::new(&["*".to_string()]).unwrap();
        let (d, _, _) = auth
            .authorize(&Attributes {
                resource_request: true,
                path: "/api/v1/pods".into(),
                ..Default::default()
            })
            .await;
        assert_eq!(d, Decision::NoOpinion);
    }
}
