//! SASL/PLAIN (RFC 4616): `authzid NUL authcid NUL passwd`, checked against the users file
//! when it lists the user, else against the user's SCRAM credential (the password is salted
//! with the stored salt and iterations and its stored key compared in constant time). An
//! unknown user costs the same work as a known one and gets the same answer as a wrong
//! password. The messages are Kafka's (`PlainSaslServer`).

use crate::security::scram::{CredentialLookup, ScramCredential, ScramMechanism};

use super::users_file::PlainUsers;

/// Longest PLAIN message accepted (Kafka bounds SASL frames at 512 KiB; names and passwords
/// are far shorter).
pub const MESSAGE_BYTES_MAX: usize = 8192;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlainFailure {
    /// The client is told "invalid credentials"; the reason is for the log.
    #[error("{0}")]
    Invalid(&'static str),
    /// Kafka sends these messages to the client as they are.
    #[error("{0}")]
    Told(&'static str),
}

pub const WRONG_PASSWORD: &str = "Authentication failed: Invalid username or password";
pub const NO_USERNAME: &str = "Authentication failed: username not specified";
pub const NO_PASSWORD: &str = "Authentication failed: password not specified";
pub const OTHER_AUTHZID: &str =
    "Authentication failed: Client requested an authorization id that is different from username";

#[derive(Debug, PartialEq, Eq)]
pub struct PlainMessage {
    pub authzid: String,
    pub username: String,
    pub password: Vec<u8>,
}

impl PlainMessage {
    pub fn parse(bytes: &[u8]) -> Result<PlainMessage, PlainFailure> {
        if bytes.len() > MESSAGE_BYTES_MAX {
            return Err(PlainFailure::Invalid("message too long"));
        }
        let mut tokens = bytes.split(|b| *b == 0);
        let (Some(authzid), Some(username), Some(password), None) =
            (tokens.next(), tokens.next(), tokens.next(), tokens.next())
        else {
            return Err(PlainFailure::Invalid("expected 3 tokens"));
        };
        let text = |t: &[u8]| {
            String::from_utf8(t.to_vec()).map_err(|_| PlainFailure::Invalid("not UTF-8"))
        };
        let (authzid, username) = (text(authzid)?, text(username)?);
        if username.is_empty() {
            return Err(PlainFailure::Told(NO_USERNAME));
        }
        if password.is_empty() {
            return Err(PlainFailure::Told(NO_PASSWORD));
        }
        Ok(PlainMessage {
            authzid,
            username,
            password: password.to_vec(),
        })
    }
}

/// Checks one PLAIN message; the authenticated user name on success.
pub async fn authenticate(
    message: &[u8],
    users: Option<&PlainUsers>,
    scram: &dyn CredentialLookup,
) -> Result<String, PlainFailure> {
    let message = PlainMessage::parse(message)?;
    if !verify_password(&message.username, &message.password, users, scram).await {
        return Err(PlainFailure::Told(WRONG_PASSWORD));
    }
    // Kafka checks the authorization id once the password is known to be right.
    if !message.authzid.is_empty() && message.authzid != message.username {
        return Err(PlainFailure::Told(OTHER_AUTHZID));
    }
    Ok(message.username)
}

/// Whether `password` is `user`'s: the PLAIN users file decides for the users it names, else
/// the user's SCRAM credential (HTTP Basic authentication checks the same way).
pub async fn verify_password(
    user: &str,
    password: &[u8],
    users: Option<&PlainUsers>,
    scram: &dyn CredentialLookup,
) -> bool {
    match users.and_then(|u| u.check(user, password)) {
        Some(verified) => verified,
        None => {
            let stored = scram_credential(scram, user);
            verify_off_thread(stored, password.to_vec()).await
        }
    }
}

/// The user's SCRAM-SHA-512 credential, else its SCRAM-SHA-256 one.
fn scram_credential(
    scram: &dyn CredentialLookup,
    user: &str,
) -> Option<(ScramMechanism, ScramCredential)> {
    [ScramMechanism::Sha512, ScramMechanism::Sha256]
        .into_iter()
        .find_map(|m| scram.scram_credential(user, m).map(|c| (m, c)))
}

/// `Hi` costs thousands of HMACs: run it on the blocking pool. Without a credential, the same
/// work is done on a decoy, so that timing does not tell whether the user exists.
async fn verify_off_thread(
    stored: Option<(ScramMechanism, ScramCredential)>,
    password: Vec<u8>,
) -> bool {
    let work = move || match stored {
        Some((mechanism, credential)) => credential
            .matches_password(mechanism, &password)
            .unwrap_or(false),
        None => {
            let decoy = ScramMechanism::Sha512.salted_password(
                &password,
                b"decoy salt",
                ScramMechanism::MIN_ITERATIONS.unsigned_abs(),
            );
            drop(decoy);
            false
        }
    };
    tokio::task::spawn_blocking(work).await.unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn scram_users() -> HashMap<(String, ScramMechanism), ScramCredential> {
        let credential =
            ScramCredential::from_password(ScramMechanism::Sha256, b"alice-secret", 4096).unwrap();
        HashMap::from([(("alice".to_string(), ScramMechanism::Sha256), credential)])
    }

    #[tokio::test]
    async fn a_scram_credential_checks_a_plain_password() {
        let scram = scram_users();
        assert_eq!(
            authenticate(b"\0alice\0alice-secret", None, &scram).await,
            Ok("alice".to_string())
        );
        assert_eq!(
            authenticate(b"alice\0alice\0alice-secret", None, &scram).await,
            Ok("alice".to_string())
        );
        assert_eq!(
            authenticate(b"\0alice\0wrong", None, &scram).await,
            Err(PlainFailure::Told(WRONG_PASSWORD))
        );
    }

    #[tokio::test]
    async fn an_unknown_user_is_answered_as_a_wrong_password() {
        let scram = scram_users();
        assert_eq!(
            authenticate(b"\0mallory\0alice-secret", None, &scram).await,
            Err(PlainFailure::Told(WRONG_PASSWORD))
        );
    }

    #[tokio::test]
    async fn the_users_file_wins_over_scram_for_the_users_it_lists() {
        let scram = scram_users();
        let users = PlainUsers::parse(b"alice:file-secret\nbob:bob-secret\n").unwrap();
        let auth = |m: &'static [u8]| authenticate(m, Some(&users), &scram);
        assert_eq!(auth(b"\0alice\0file-secret").await, Ok("alice".into()));
        assert!(auth(b"\0alice\0alice-secret").await.is_err());
        assert_eq!(auth(b"\0bob\0bob-secret").await, Ok("bob".into()));
    }

    #[tokio::test]
    async fn empty_fields_and_a_foreign_authzid_get_kafkas_messages() {
        let scram = scram_users();
        let auth = |m: &'static [u8]| authenticate(m, None, &scram);
        assert_eq!(auth(b"\0\0pw").await, Err(PlainFailure::Told(NO_USERNAME)));
        assert_eq!(
            auth(b"\0alice\0").await,
            Err(PlainFailure::Told(NO_PASSWORD))
        );
        assert_eq!(
            auth(b"admin\0alice\0alice-secret").await,
            Err(PlainFailure::Told(OTHER_AUTHZID))
        );
        // A foreign authzid with a wrong password says nothing about the authzid.
        assert_eq!(
            auth(b"admin\0alice\0x").await,
            Err(PlainFailure::Told(WRONG_PASSWORD))
        );
        for malformed in [&b""[..], b"alice", b"\0alice", b"\0a\0b\0c", b"\0\xff\0pw"] {
            assert!(matches!(
                auth(malformed).await,
                Err(PlainFailure::Invalid(_))
            ));
        }
    }
}
