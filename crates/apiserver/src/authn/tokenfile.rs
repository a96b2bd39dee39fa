//! Static tokens from `--token-auth-file` (`authentication/token/tokenfile`).
//!
//! Each CSV record is `token,user,uid[,"group1,group2"]`. Records with fewer than three
//! columns make the whole file invalid; an empty token is skipped; a duplicate token replaces
//! the earlier one (upstream only logs both cases).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::bearertoken::TokenAuthenticator;
use super::{AuthError, AuthResponse};
use crate::request::UserInfo;

/// Why a token file could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum TokenFileError {
    /// The file could not be read.
    #[error("failed to read token file '{path}': {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The CSV is malformed.
    #[error("failed to parse token file '{path}': {source}")]
    Csv {
        /// The file.
        path: PathBuf,
        /// The CSV error.
        source: csv::Error,
    },
    /// A record has fewer than three columns.
    #[error(
        "token file '{path}' must have at least 3 columns (token, user name, user uid), found {found}"
    )]
    TooFewColumns {
        /// The file.
        path: PathBuf,
        /// The number of columns of the offending record.
        found: usize,
    },
}

/// Authenticates tokens listed in a CSV file.
#[derive(Debug, Default, Clone)]
pub struct TokenFileAuthenticator {
    tokens: HashMap<String, UserInfo>,
}

impl TokenFileAuthenticator {
    /// Loads the tokens of the CSV file at `path`.
    pub fn from_file(path: &Path) -> Result<Self, TokenFileError> {
        let data = std::fs::read(path).map_err(|source| TokenFileError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_csv(path, &data)
    }

    /// Parses CSV `data` (`path` only names the source in errors and logs).
    pub fn from_csv(path: &Path, data: &[u8]) -> Result<Self, TokenFileError> {
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .from_reader(data);
        let mut tokens = HashMap::new();
        for (index, record) in reader.records().enumerate() {
            let record = record.map_err(|source| TokenFileError::Csv {
                path: path.to_path_buf(),
                source,
            })?;
            if record.len() < 3 {
                return Err(TokenFileError::TooFewColumns {
                    path: path.to_path_buf(),
                    found: record.len(),
                });
            }
            let record_number = index + 1;
            let token = &record[0];
            if token.is_empty() {
                tracing::warn!(
                    "empty token has been found in token file '{}', record number '{record_number}'",
                    path.display()
                );
                continue;
            }
            let mut user = UserInfo {
                name: record[1].to_string(),
                uid: record[2].to_string(),
                ..Default::default()
            };
            if record.len() >= 4 {
                user.groups = record[3].split(',').map(str::to_string).collect();
            }
            if tokens.insert(token.to_string(), user).is_some() {
                tracing::warn!(
                    "duplicate token has been found in token file '{}', record number '{record_number}'",
                    path.display()
                );
            }
        }
        Ok(TokenFileAuthenticator { tokens })
    }
}

#[async_trait::async_trait]
impl TokenAuthenticator for TokenFileAuthenticator {
    async fn authenticate_token(
        &self,
        _req: &http::request::Parts,
        token: &str,
    ) -> Result<Option<AuthResponse>, AuthError> {
        Ok(self
            .tokens
            .get(token)
            .map(|user| AuthResponse::new(user.clone())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lookup(auth: &TokenFileAuthenticator, token: &str) -> Option<UserInfo> {
        let (parts, _) = http::Request::new(()).into_parts();
        auth.authenticate_token(&parts, token)
            .await
            .unwrap()
            .map(|r| r.user)
    }

    fn user(name: &str, uid: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            name: name.into(),
            uid: uid.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn parses_tokens_with_groups() {
        let data = "token1,user1,uid1\ntoken2,user2,uid2\ntoken3,user3,uid3,\"group1,group2\"\ntoken4,user4,uid4,\"group2\"\ntoken5,user5,uid5,group5\ntoken6,user6,uid6,group5,otherdata\ntoken7,user7,uid7,\"group1,group2\",otherdata\n";
        let auth = TokenFileAuthenticator::from_file_data(data);
        assert_eq!(
            lookup(&auth, "token1").await,
            Some(user("user1", "uid1", &[]))
        );
        assert_eq!(
            lookup(&auth, "token2").await,
            Some(user("user2", "uid2", &[]))
        );
        assert_eq!(
            lookup(&auth, "token3").await,
            Some(user("user3", "uid3", &["group1", "group2"]))
        );
        assert_eq!(
            lookup(&auth, "token4").await,
            Some(user("user4", "uid4", &["group2"]))
        );
        assert_eq!(
            lookup(&auth, "token5").await,
            Some(user("user5", "uid5", &["group5"]))
        );
        assert_eq!(
            lookup(&auth, "token6").await,
            Some(user("user6", "uid6", &["group5"]))
        );
        assert_eq!(
            lookup(&auth, "token7").await,
            Some(user("user7", "uid7", &["group1", "group2"]))
        );
        assert_eq!(lookup(&auth, "token8").await, None);
        assert_eq!(lookup(&auth, "").await, None);
    }

    #[test]
    fn bad_and_insufficient_columns() {
        for data in ["token1,user1\n", "token1\n"] {
            let err = TokenFileAuthenticator::from_csv(Path::new("tokens.csv"), data.as_bytes())
                .unwrap_err();
            assert!(
                err.to_string()
                    .starts_with("token file 'tokens.csv' must have at least 3 columns"),
                "{err}"
            );
        }
    }

    #[tokio::test]
    async fn empty_token_skipped_and_last_duplicate_wins() {
        let data = ",user1,uid1\ntoken2,user2,uid2\ntoken2,user3,uid3\n";
        let auth = TokenFileAuthenticator::from_file_data(data);
        assert_eq!(lookup(&auth, "").await, None);
        assert_eq!(
            lookup(&auth, "token2").await,
            Some(user("user3", "uid3", &[]))
        );
    }

    #[tokio::test]
    async fn reads_file_from_disk() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens.csv");
        std::fs::write(&path, "abc,admin,1,system:masters\n").unwrap();
        let auth = TokenFileAuthenticator::from_file(&path).unwrap();
        assert_eq!(
            lookup(&auth, "abc").await,
            Some(user("admin", "1", &["system:masters"]))
        );
        assert!(TokenFileAuthenticator::from_file(&dir.path().join("missing")).is_err());
    }

    impl TokenFileAuthenticator {
        fn from_file_data(data: &str) -> Self {
            Self::from_csv(Path::new("test"), data.as_bytes()).unwrap()
        }
    }
}
