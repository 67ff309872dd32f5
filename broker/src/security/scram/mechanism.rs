//! The two SCRAM mechanisms Kafka offers and their primitives (RFC 5802 section 2.2): `H`,
//! `HMAC` and `Hi` (PBKDF2 with HMAC), on SHA-256 (RFC 7677) and SHA-512.

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256, Sha512};

/// HMAC takes keys of any length; this only fails if that stopped being true.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the HMAC key was refused")]
pub struct CryptoError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScramMechanism {
    Sha256,
    Sha512,
}

impl ScramMechanism {
    pub const ALL: [ScramMechanism; 2] = [ScramMechanism::Sha256, ScramMechanism::Sha512];
    /// Kafka's floor for new credentials and for authenticating with stored ones.
    pub const MIN_ITERATIONS: i32 = 4096;
    /// Kafka's ceiling (`ScramMechanism.maxIterations`): `Hi` costs this many HMACs per login.
    pub const MAX_ITERATIONS: i32 = 16384;

    /// The SASL mechanism name (`SCRAM-SHA-256`).
    pub fn name(self) -> &'static str {
        match self {
            ScramMechanism::Sha256 => "SCRAM-SHA-256",
            ScramMechanism::Sha512 => "SCRAM-SHA-512",
        }
    }

    pub fn from_name(name: &str) -> Option<ScramMechanism> {
        ScramMechanism::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The `mechanism` byte of AlterUserScramCredentials and DescribeUserScramCredentials
    /// (0 is Kafka's UNKNOWN).
    pub fn type_code(self) -> i8 {
        match self {
            ScramMechanism::Sha256 => 1,
            ScramMechanism::Sha512 => 2,
        }
    }

    pub fn from_type_code(code: i8) -> Option<ScramMechanism> {
        ScramMechanism::ALL
            .into_iter()
            .find(|m| m.type_code() == code)
    }

    /// Bytes of the hash: the length of salted passwords, keys, proofs and signatures.
    pub fn digest_len(self) -> usize {
        match self {
            ScramMechanism::Sha256 => 32,
            ScramMechanism::Sha512 => 64,
        }
    }

    pub fn hash(self, data: &[u8]) -> Vec<u8> {
        match self {
            ScramMechanism::Sha256 => Sha256::digest(data).to_vec(),
            ScramMechanism::Sha512 => Sha512::digest(data).to_vec(),
        }
    }

    pub fn hmac(self, key: &[u8], data: &[u8]) -> Result<Vec<u8>, CryptoError> {
        match self {
            ScramMechanism::Sha256 => mac::<Hmac<Sha256>>(key, data),
            ScramMechanism::Sha512 => mac::<Hmac<Sha512>>(key, data),
        }
    }

    /// `Hi(password, salt, iterations)`: the salted password. Costs `iterations` HMACs: call
    /// it off the async threads.
    pub fn salted_password(
        self,
        password: &[u8],
        salt: &[u8],
        iterations: u32,
    ) -> Result<Vec<u8>, CryptoError> {
        let mut out = vec![0u8; self.digest_len()];
        match self {
            ScramMechanism::Sha256 => {
                pbkdf2::pbkdf2::<Hmac<Sha256>>(password, salt, iterations, &mut out)
            }
            ScramMechanism::Sha512 => {
                pbkdf2::pbkdf2::<Hmac<Sha512>>(password, salt, iterations, &mut out)
            }
        }
        .map_err(|_| CryptoError)?;
        Ok(out)
    }

    /// `ClientKey = HMAC(SaltedPassword, "Client Key")`.
    pub fn client_key(self, salted_password: &[u8]) -> Result<Vec<u8>, CryptoError> {
        self.hmac(salted_password, b"Client Key")
    }

    /// `ServerKey = HMAC(SaltedPassword, "Server Key")`.
    pub fn server_key(self, salted_password: &[u8]) -> Result<Vec<u8>, CryptoError> {
        self.hmac(salted_password, b"Server Key")
    }

    /// `StoredKey = H(ClientKey)`.
    pub fn stored_key(self, client_key: &[u8]) -> Vec<u8> {
        self.hash(client_key)
    }
}

impl std::fmt::Display for ScramMechanism {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

fn mac<M: Mac + KeyInit>(key: &[u8], data: &[u8]) -> Result<Vec<u8>, CryptoError> {
    let mut mac = <M as KeyInit>::new_from_slice(key).map_err(|_| CryptoError)?;
    mac.update(data);
    Ok(mac.finalize().into_bytes().to_vec())
}

/// Whether two secrets are equal, in time that depends only on their lengths.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    use subtle::ConstantTimeEq;
    a.len() == b.len() && bool::from(a.ct_eq(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_type_codes_are_kafkas() {
        assert_eq!(
            ScramMechanism::from_name("SCRAM-SHA-512"),
            Some(ScramMechanism::Sha512)
        );
        assert_eq!(ScramMechanism::from_name("scram-sha-512"), None);
        assert_eq!(
            ScramMechanism::from_type_code(1),
            Some(ScramMechanism::Sha256)
        );
        assert_eq!(ScramMechanism::from_type_code(0), None);
        assert_eq!(ScramMechanism::Sha512.type_code(), 2);
    }

    #[test]
    fn hi_matches_rfc_7677_salted_password() {
        // RFC 7677 section 3: password "pencil", salt W22ZaJ0SNY7soEsUEjb6gQ==, i=4096.
        use base64::Engine;
        let salt = base64::engine::general_purpose::STANDARD
            .decode("W22ZaJ0SNY7soEsUEjb6gQ==")
            .unwrap();
        let salted = ScramMechanism::Sha256
            .salted_password(b"pencil", &salt, 4096)
            .unwrap();
        assert_eq!(salted.len(), 32);
        assert_eq!(
            hex(&salted),
            "c4a49510323ab4f952cac1fa99441939e78ea74d6be81ddf7096e87513dc615d"
        );
    }

    #[test]
    fn constant_time_eq_needs_equal_lengths() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
    }

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }
}
