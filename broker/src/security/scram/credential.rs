//! A SCRAM credential as Kafka keeps it (`ScramCredential`, KRaft's
//! `UserScramCredentialRecord`): salt, stored key, server key and iteration count. The
//! password is never kept; what is kept lets a server verify a proof, not make one.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use serde::{Deserialize, Serialize};

use super::mechanism::{CryptoError, ScramMechanism};

/// Random salt bytes of credentials made here (`broker scram set`).
pub const SALT_BYTES: usize = 32;
/// Salts longer than this are refused (AlterUserScramCredentials takes the client's salt).
pub const SALT_BYTES_MAX: usize = 1024;

#[derive(Clone, PartialEq, Eq)]
pub struct ScramCredential {
    pub salt: Vec<u8>,
    pub stored_key: Vec<u8>,
    pub server_key: Vec<u8>,
    pub iterations: i32,
}

/// Keys stay out of logs and panics: only the iteration count shows.
impl std::fmt::Debug for ScramCredential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScramCredential")
            .field("iterations", &self.iterations)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CredentialError {
    #[error("iterations must be between {min} and {max} (got {got})", min = ScramMechanism::MIN_ITERATIONS, max = ScramMechanism::MAX_ITERATIONS)]
    Iterations { got: i32 },
    #[error("the salt must be 1 to {SALT_BYTES_MAX} bytes (got {got})")]
    Salt { got: usize },
    #[error("the salted password of {mechanism} must be {expected} bytes (got {got})")]
    SaltedPassword {
        mechanism: ScramMechanism,
        expected: usize,
        got: usize,
    },
    #[error("no random bytes for the salt: {0}")]
    Random(String),
    #[error(transparent)]
    Crypto(#[from] CryptoError),
}

impl ScramCredential {
    /// What AlterUserScramCredentials stores for an upsertion: the client salted the password,
    /// the server derives the keys (as Kafka's controller does).
    pub fn from_salted_password(
        mechanism: ScramMechanism,
        salt: &[u8],
        salted_password: &[u8],
        iterations: i32,
    ) -> Result<ScramCredential, CredentialError> {
        check_iterations(iterations)?;
        if salt.is_empty() || salt.len() > SALT_BYTES_MAX {
            return Err(CredentialError::Salt { got: salt.len() });
        }
        if salted_password.len() != mechanism.digest_len() {
            return Err(CredentialError::SaltedPassword {
                mechanism,
                expected: mechanism.digest_len(),
                got: salted_password.len(),
            });
        }
        let client_key = mechanism.client_key(salted_password)?;
        Ok(ScramCredential {
            salt: salt.to_vec(),
            stored_key: mechanism.stored_key(&client_key),
            server_key: mechanism.server_key(salted_password)?,
            iterations,
        })
    }

    /// A new credential for `password` with a random salt. Costs `iterations` HMACs.
    pub fn from_password(
        mechanism: ScramMechanism,
        password: &[u8],
        iterations: i32,
    ) -> Result<ScramCredential, CredentialError> {
        check_iterations(iterations)?;
        let mut salt = vec![0u8; SALT_BYTES];
        getrandom::fill(&mut salt).map_err(|e| CredentialError::Random(e.to_string()))?;
        let salted = mechanism.salted_password(password, &salt, iterations_u32(iterations))?;
        ScramCredential::from_salted_password(mechanism, &salt, &salted, iterations)
    }

    /// Whether `password` is the one this credential was made from (SASL/PLAIN against SCRAM
    /// credentials). Costs `iterations` HMACs; the comparison takes constant time.
    pub fn matches_password(
        &self,
        mechanism: ScramMechanism,
        password: &[u8],
    ) -> Result<bool, CryptoError> {
        let salted =
            mechanism.salted_password(password, &self.salt, iterations_u32(self.iterations))?;
        let stored_key = mechanism.stored_key(&mechanism.client_key(&salted)?);
        Ok(super::constant_time_eq(&stored_key, &self.stored_key))
    }

    pub fn to_json(&self) -> Vec<u8> {
        let stored = StoredCredential {
            salt: BASE64.encode(&self.salt),
            stored_key: BASE64.encode(&self.stored_key),
            server_key: BASE64.encode(&self.server_key),
            iterations: self.iterations,
        };
        serde_json::to_vec(&stored).unwrap_or_default()
    }

    pub fn from_json(bytes: &[u8]) -> Result<ScramCredential, String> {
        let stored: StoredCredential = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
        let decode = |field: &str, text: &str| {
            BASE64
                .decode(text)
                .map_err(|e| format!("{field} is not base64: {e}"))
        };
        Ok(ScramCredential {
            salt: decode("salt", &stored.salt)?,
            stored_key: decode("stored_key", &stored.stored_key)?,
            server_key: decode("server_key", &stored.server_key)?,
            iterations: stored.iterations,
        })
    }
}

/// The record in the MetaStore: Kafka's `ScramCredential` fields, base64 as Kafka's ZooKeeper
/// format wrote them (`salt=...,stored_key=...,server_key=...,iterations=...`).
#[derive(Serialize, Deserialize)]
struct StoredCredential {
    salt: String,
    stored_key: String,
    server_key: String,
    iterations: i32,
}

fn check_iterations(iterations: i32) -> Result<(), CredentialError> {
    if (ScramMechanism::MIN_ITERATIONS..=ScramMechanism::MAX_ITERATIONS).contains(&iterations) {
        Ok(())
    } else {
        Err(CredentialError::Iterations { got: iterations })
    }
}

/// Stored counts were checked when written; a corrupt negative one costs one round.
fn iterations_u32(iterations: i32) -> u32 {
    u32::try_from(iterations).unwrap_or(1).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_credential_verifies_its_password_only() {
        let credential =
            ScramCredential::from_password(ScramMechanism::Sha512, b"alice-secret", 4096).unwrap();
        assert!(credential
            .matches_password(ScramMechanism::Sha512, b"alice-secret")
            .unwrap());
        assert!(!credential
            .matches_password(ScramMechanism::Sha512, b"alice-secreT")
            .unwrap());
        assert_eq!(credential.salt.len(), SALT_BYTES);
        assert_eq!(credential.stored_key.len(), 64);
    }

    #[test]
    fn json_round_trips_and_debug_hides_keys() {
        let credential =
            ScramCredential::from_password(ScramMechanism::Sha256, b"pw", 4096).unwrap();
        let back = ScramCredential::from_json(&credential.to_json()).unwrap();
        assert_eq!(back, credential);
        let shown = format!("{credential:?}");
        assert!(
            shown.contains("4096") && !shown.contains("key: ["),
            "{shown}"
        );
    }

    #[test]
    fn kafkas_iteration_bounds_and_lengths_are_enforced() {
        let m = ScramMechanism::Sha256;
        assert_eq!(
            ScramCredential::from_password(m, b"pw", 4095),
            Err(CredentialError::Iterations { got: 4095 })
        );
        assert!(ScramCredential::from_password(m, b"pw", 16385).is_err());
        assert!(ScramCredential::from_salted_password(m, b"", &[0; 32], 4096).is_err());
        assert!(ScramCredential::from_salted_password(m, b"s", &[0; 31], 4096).is_err());
        assert!(ScramCredential::from_salted_password(m, b"s", &[0; 32], 4096).is_ok());
    }
}
