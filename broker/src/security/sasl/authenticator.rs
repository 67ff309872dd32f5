//! What every connection's [`SaslServer`] shares: the configuration, the credentials (SCRAM
//! in the MetaStore, the PLAIN users file, the JWKS), the clock and the failure log.

use std::net::SocketAddr;
use std::sync::Arc;

use storage::clock::Clock;

use crate::security::scram::CredentialLookup;

use super::config::SaslConfig;
use super::failure_log::FailureLog;
use super::jwt::JwtValidator;
use super::users_file::PlainUsers;
use super::watched_file::{FileError, WatchedFile, RECHECK_INTERVAL};
use super::SaslServer;

#[derive(Debug, thiserror::Error)]
pub enum SaslSetupError {
    #[error("sasl plain users file: {0}")]
    PlainUsers(FileError),
    #[error("sasl oauthbearer jwks file: {0}")]
    Jwks(FileError),
    #[error("no random bytes for the scram decoy key: {0}")]
    Random(String),
}

pub struct SaslAuthenticator {
    pub(super) config: SaslConfig,
    pub(super) scram: Arc<dyn CredentialLookup>,
    pub(super) plain_users: Option<WatchedFile<PlainUsers>>,
    pub(super) jwt: Option<JwtValidator>,
    pub(super) clock: Arc<dyn Clock>,
    /// Derives the salts shown for unknown SCRAM users. Per process: a decoy is stable for
    /// this broker's lifetime.
    pub(super) decoy_key: [u8; 32],
    pub(super) failures: FailureLog,
}

impl SaslAuthenticator {
    /// Reads the users file and the JWKS (each when configured); fails if either is unusable.
    pub async fn open(
        config: SaslConfig,
        scram: Arc<dyn CredentialLookup>,
        clock: Arc<dyn Clock>,
    ) -> Result<Arc<SaslAuthenticator>, SaslSetupError> {
        let plain_users = match &config.plain_users_file {
            Some(path) => Some(
                WatchedFile::open(path, PlainUsers::parse, true, RECHECK_INTERVAL)
                    .await
                    .map_err(SaslSetupError::PlainUsers)?,
            ),
            None => None,
        };
        let jwt = match &config.oauthbearer {
            Some(jwt) => Some(
                JwtValidator::open(jwt.clone())
                    .await
                    .map_err(SaslSetupError::Jwks)?,
            ),
            None => None,
        };
        let mut decoy_key = [0u8; 32];
        getrandom::fill(&mut decoy_key).map_err(|e| SaslSetupError::Random(e.to_string()))?;
        Ok(Arc::new(SaslAuthenticator {
            config,
            scram,
            plain_users,
            jwt,
            clock,
            decoy_key,
            failures: FailureLog::default(),
        }))
    }

    /// The SASL state of a new connection from `peer`.
    pub fn server(self: &Arc<Self>, peer: SocketAddr) -> SaslServer {
        SaslServer::new(self.clone(), peer)
    }

    /// Whether `password` is `user`'s, as a SASL/PLAIN login checks it (with or without a
    /// PLAIN listener): for HTTP Basic authentication.
    pub async fn verify_password(&self, user: &str, password: &[u8]) -> bool {
        let users = match &self.plain_users {
            Some(file) => Some(file.current().await),
            None => None,
        };
        super::plain::verify_password(user, password, users.as_deref(), self.scram.as_ref()).await
    }

    pub fn config(&self) -> &SaslConfig {
        &self.config
    }

    /// The enabled mechanisms, as SaslHandshake lists them.
    pub fn enabled_mechanism_names(&self) -> Vec<String> {
        self.config
            .enabled_mechanisms
            .iter()
            .map(|m| m.name().to_string())
            .collect()
    }
}
