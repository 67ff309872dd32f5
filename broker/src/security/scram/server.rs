//! The server side of one SCRAM exchange (RFC 5802 section 5): client-first -> server-first,
//! client-final -> server-final. The proof is verified here, by this code: a wrong proof can
//! never end in success (a peer broker once let such clients in because its SASL library
//! reported "finished" on a bad proof).
//!
//! An unknown user gets a server-first message like any other, with a salt derived from the
//! name (stable across attempts) and Kafka's minimum iterations, and fails at the proof like a
//! wrong password: neither the step nor the answer tells whether the user exists.

use std::collections::HashMap;

use super::credential::{ScramCredential, SALT_BYTES};
use super::mechanism::{constant_time_eq, ScramMechanism};
use super::messages::{self, ClientFinal, ClientFirst, MessageError};

/// Where a SCRAM server finds credentials (the MetaStore cache, or a map in tests).
pub trait CredentialLookup: Send + Sync {
    fn scram_credential(&self, user: &str, mechanism: ScramMechanism) -> Option<ScramCredential>;
}

impl CredentialLookup for HashMap<(String, ScramMechanism), ScramCredential> {
    fn scram_credential(&self, user: &str, mechanism: ScramMechanism) -> Option<ScramCredential> {
        self.get(&(user.to_string(), mechanism)).cloned()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScramFailure {
    /// Anything else: the client is only told "invalid credentials"; the reason is logged.
    #[error("{0}")]
    Invalid(&'static str),
    #[error(transparent)]
    Message(#[from] MessageError),
    /// Kafka answers this one with its own message.
    #[error("Authentication failed: Client requested an authorization id that is different from username")]
    AuthorizationId,
}

#[derive(Debug, PartialEq, Eq)]
pub enum ScramStep {
    /// The server-first message; the client-final comes next.
    Challenge(Vec<u8>),
    /// The proof was right: the server-final message, and who the client is.
    Done { username: String, response: Vec<u8> },
}

pub struct ScramServer {
    mechanism: ScramMechanism,
    state: State,
}

enum State {
    ExpectFirst { server_nonce: String },
    ExpectFinal(Box<Pending>),
    Finished,
}

struct Pending {
    first: ClientFirst,
    server_first: String,
    nonce: String,
    /// `None` for an unknown user: the exchange fails at the proof.
    credential: Option<ScramCredential>,
}

impl ScramServer {
    /// `server_nonce`: fresh random printable characters (no `,`), see [`new_nonce`].
    pub fn new(mechanism: ScramMechanism, server_nonce: String) -> ScramServer {
        ScramServer {
            mechanism,
            state: State::ExpectFirst { server_nonce },
        }
    }

    pub fn mechanism(&self) -> ScramMechanism {
        self.mechanism
    }

    /// The user name of the client-first message, once it has been read (for logs).
    pub fn username(&self) -> Option<&str> {
        match &self.state {
            State::ExpectFinal(pending) => Some(&pending.first.username),
            _ => None,
        }
    }

    /// Takes the client's next message. `decoy_key` derives the salt shown for unknown users.
    pub fn evaluate(
        &mut self,
        message: &[u8],
        credentials: &dyn CredentialLookup,
        decoy_key: &[u8],
    ) -> Result<ScramStep, ScramFailure> {
        match std::mem::replace(&mut self.state, State::Finished) {
            State::ExpectFirst { server_nonce } => {
                let pending = self.client_first(message, &server_nonce, credentials, decoy_key)?;
                let challenge = pending.server_first.clone().into_bytes();
                self.state = State::ExpectFinal(Box::new(pending));
                Ok(ScramStep::Challenge(challenge))
            }
            State::ExpectFinal(pending) => self.client_final(message, *pending),
            State::Finished => Err(ScramFailure::Invalid("message after the exchange ended")),
        }
    }

    fn client_first(
        &self,
        message: &[u8],
        server_nonce: &str,
        credentials: &dyn CredentialLookup,
        decoy_key: &[u8],
    ) -> Result<Pending, ScramFailure> {
        let first = messages::parse_client_first(message)?;
        if first
            .extensions
            .iter()
            .any(|(k, v)| k == "tokenauth" && v.eq_ignore_ascii_case("true"))
        {
            return Err(ScramFailure::Invalid("delegation tokens are not supported"));
        }
        if !first.authzid.is_empty() && first.authzid != first.username {
            return Err(ScramFailure::AuthorizationId);
        }
        let credential = credentials
            .scram_credential(&first.username, self.mechanism)
            .filter(|c| c.iterations >= ScramMechanism::MIN_ITERATIONS);
        let (salt, iterations) = match &credential {
            Some(c) => (c.salt.clone(), c.iterations),
            None => (
                self.decoy_salt(decoy_key, &first.username)?,
                ScramMechanism::MIN_ITERATIONS,
            ),
        };
        let nonce = format!("{}{server_nonce}", first.nonce);
        let server_first = messages::server_first(&nonce, &salt, iterations);
        Ok(Pending {
            first,
            server_first,
            nonce,
            credential,
        })
    }

    fn client_final(
        &mut self,
        message: &[u8],
        pending: Pending,
    ) -> Result<ScramStep, ScramFailure> {
        let last: ClientFinal = messages::parse_client_final(message)?;
        // The whole nonce, exactly (Kafka only checks that it ends with the server's).
        if !constant_time_eq(last.nonce.as_bytes(), pending.nonce.as_bytes()) {
            return Err(ScramFailure::Invalid("nonce mismatch"));
        }
        if last.channel_binding != pending.first.gs2_header.as_bytes() {
            return Err(ScramFailure::Invalid("channel binding mismatch"));
        }
        let auth_message = format!(
            "{},{},{}",
            pending.first.bare, pending.server_first, last.without_proof
        );
        let verified = match &pending.credential {
            Some(credential) => self.verify_proof(credential, &auth_message, &last.proof)?,
            None => false,
        };
        let Some(credential) = pending.credential.filter(|_| verified) else {
            return Err(ScramFailure::Invalid("wrong proof or unknown user"));
        };
        let signature = self
            .mechanism
            .hmac(&credential.server_key, auth_message.as_bytes())
            .map_err(|_| ScramFailure::Invalid("hmac"))?;
        Ok(ScramStep::Done {
            username: pending.first.username,
            response: messages::server_final(&signature).into_bytes(),
        })
    }

    /// `ClientKey = ClientProof XOR HMAC(StoredKey, AuthMessage)`; right iff
    /// `H(ClientKey) == StoredKey`.
    fn verify_proof(
        &self,
        credential: &ScramCredential,
        auth_message: &str,
        proof: &[u8],
    ) -> Result<bool, ScramFailure> {
        let m = self.mechanism;
        let signature = m
            .hmac(&credential.stored_key, auth_message.as_bytes())
            .map_err(|_| ScramFailure::Invalid("hmac"))?;
        if proof.len() != signature.len() {
            return Ok(false);
        }
        let client_key: Vec<u8> = proof.iter().zip(&signature).map(|(p, s)| p ^ s).collect();
        Ok(constant_time_eq(
            &m.stored_key(&client_key),
            &credential.stored_key,
        ))
    }

    fn decoy_salt(&self, decoy_key: &[u8], username: &str) -> Result<Vec<u8>, ScramFailure> {
        let input = format!("{}\0{username}", self.mechanism.name());
        let mut salt = ScramMechanism::Sha256
            .hmac(decoy_key, input.as_bytes())
            .map_err(|_| ScramFailure::Invalid("hmac"))?;
        salt.truncate(SALT_BYTES);
        Ok(salt)
    }
}

/// A fresh server nonce: 18 random bytes in base64 (24 characters, none of them `,`).
pub fn new_nonce() -> Result<String, getrandom::Error> {
    use base64::Engine;
    let mut bytes = [0u8; 18];
    getrandom::fill(&mut bytes)?;
    Ok(base64::engine::general_purpose::STANDARD.encode(bytes))
}

#[cfg(test)]
#[path = "server_tests.rs"]
mod tests;
