//! One connection's SASL state machine (Kafka's `SaslServerAuthenticator`, KIP-368 included).
//! The connection layer owns one per SASL connection and drives it; see the module docs of
//! [`super`] for exactly how.

use std::net::SocketAddr;
use std::sync::Arc;

use kafka_protocol::messages::ApiKey;

use crate::security::scram::{ScramFailure, ScramServer, ScramStep};
use crate::security::Principal;

use super::authenticator::SaslAuthenticator;
use super::config::Mechanism;
use super::oauthbearer::{OAuthBearerServer, OAuthFailure, OAuthStep};
use super::plain::{self, PlainFailure};

/// Kafka allows one re-authentication a second per connection (`KafkaChannel`).
pub const MIN_REAUTH_INTERVAL_MS: u64 = 1000;

/// What the connection does with a request before serving it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Serve it as usual.
    Serve,
    /// SaslHandshake or SaslAuthenticate: give it to this server (`handlers::sasl::serve`).
    Sasl,
    /// Not allowed now (before or during authentication, or after the session expired):
    /// close the connection without answering, as Kafka does.
    Close,
}

/// How the client sends its SASL tokens after the handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// SaslHandshake v1+: in SaslAuthenticate requests.
    SaslAuthenticate,
    /// SaslHandshake v0: raw tokens, each a 4-byte length and the bytes, with no Kafka
    /// header, answered the same way; a failure closes the connection without a word.
    Raw,
}

/// The answer to one SASL token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Send `bytes` back (SaslAuthenticate `auth_bytes`, or a raw token); more will come.
    Challenge(Vec<u8>),
    /// Authenticated: send `response` back the same way; from now on requests are served as
    /// `principal`. `session_lifetime_ms` (0: unlimited) goes in SaslAuthenticate v1+.
    Done {
        response: Vec<u8>,
        principal: Principal,
        session_lifetime_ms: i64,
    },
    /// Answer SASL_AUTHENTICATION_FAILED with `message` (nothing in raw framing), then close.
    Failed { message: String },
}

/// Why a SaslHandshake or SaslAuthenticate request was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SaslRefusal {
    /// UNSUPPORTED_SASL_MECHANISM with the enabled list; the connection then closes.
    #[error("unsupported sasl mechanism")]
    UnsupportedMechanism,
    /// ILLEGAL_SASL_STATE; `close` says whether the connection then closes (it stays open
    /// when an authenticated client may not re-authenticate now, as in Kafka).
    #[error("illegal sasl state")]
    IllegalState { close: bool },
}

/// An authenticated session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    pub principal: Principal,
    pub mechanism: Mechanism,
    /// When the client must have re-authenticated (ms since the epoch), if ever.
    pub expires_at_ms: Option<u64>,
}

pub struct SaslServer {
    shared: Arc<SaslAuthenticator>,
    peer: SocketAddr,
    state: State,
    last_reauth_start_ms: Option<u64>,
}

enum State {
    /// ApiVersions and SaslHandshake are admitted.
    AwaitingHandshake,
    Authenticating {
        exchange: Exchange,
        framing: Framing,
        /// The session being renewed (KIP-368 re-authentication).
        previous: Option<Session>,
    },
    /// A re-authentication asked for another mechanism: its first token fails with this.
    BadReauthMechanism {
        message: String,
    },
    Authenticated(Session),
    Failed,
}

enum Exchange {
    Plain,
    Scram(ScramServer),
    OAuthBearer(OAuthBearerServer),
}

/// A failed token: what the client is told (`None`: Kafka's generic message) and what is logged.
struct Refusal {
    told: Option<String>,
    reason: String,
    attempted: Option<String>,
}

impl SaslServer {
    pub(super) fn new(shared: Arc<SaslAuthenticator>, peer: SocketAddr) -> SaslServer {
        SaslServer {
            shared,
            peer,
            state: State::AwaitingHandshake,
            last_reauth_start_ms: None,
        }
    }

    /// The enabled mechanisms, for every SaslHandshake response.
    pub fn enabled_mechanisms(&self) -> Vec<String> {
        self.shared.enabled_mechanism_names()
    }

    pub fn is_authenticated(&self) -> bool {
        matches!(self.state, State::Authenticated(_))
    }

    /// The authenticated session (still the old one during a re-authentication).
    pub fn session(&self) -> Option<&Session> {
        match &self.state {
            State::Authenticated(session) => Some(session),
            State::Authenticating { previous, .. } => previous.as_ref(),
            _ => None,
        }
    }

    /// Whether the next frame is a raw SASL token rather than a Kafka request.
    pub fn expects_raw_tokens(&self) -> bool {
        matches!(
            self.state,
            State::Authenticating {
                framing: Framing::Raw,
                ..
            }
        )
    }

    /// Whether the session ran past its lifetime (the connection must close on any request
    /// but a SaslHandshake that starts a re-authentication).
    pub fn is_expired(&self) -> bool {
        let now = self.now_ms();
        self.session()
            .and_then(|s| s.expires_at_ms)
            .is_some_and(|expires| now >= expires)
    }

    /// What to do with a request of `api_key`.
    pub fn admit(&self, api_key: ApiKey) -> Admission {
        let sasl = matches!(api_key, ApiKey::SaslHandshake | ApiKey::SaslAuthenticate);
        match &self.state {
            State::AwaitingHandshake if sasl => Admission::Sasl,
            State::AwaitingHandshake if api_key == ApiKey::ApiVersions => Admission::Serve,
            State::Authenticating {
                framing: Framing::SaslAuthenticate,
                ..
            }
            | State::BadReauthMechanism { .. }
                if sasl =>
            {
                Admission::Sasl
            }
            State::Authenticated(_) if sasl => Admission::Sasl,
            State::Authenticated(_) if !self.is_expired() => Admission::Serve,
            _ => Admission::Close,
        }
    }

    /// A request `admit` answered `Close` for: logs it as a failed authentication (through
    /// the rate-limited failure log) and ends the exchange; the connection then closes.
    pub fn refuse_request(&mut self, api_key: ApiKey) {
        let mechanism = match &self.state {
            State::Authenticating { exchange, .. } => exchange.mechanism().name(),
            State::Authenticated(session) => session.mechanism.name(),
            _ => "none",
        };
        let reason = if self.is_expired() {
            format!("{api_key:?} request after the session expired, without re-authentication")
        } else {
            format!("unexpected {api_key:?} request during sasl authentication")
        };
        let attempted = self.session().map(|s| s.principal.name.clone());
        let now = self.now_ms();
        self.shared
            .failures
            .record(now, self.peer, mechanism, attempted.as_deref(), &reason);
        self.state = State::Failed;
    }

    /// SaslHandshake `version` asking for `mechanism`.
    pub fn handshake(&mut self, version: i16, mechanism: &str) -> Result<(), SaslRefusal> {
        let framing = if version == 0 {
            Framing::Raw
        } else {
            Framing::SaslAuthenticate
        };
        let previous = match std::mem::replace(&mut self.state, State::Failed) {
            State::AwaitingHandshake => None,
            State::Authenticated(session) => match self.may_reauthenticate(&session, framing) {
                Ok(()) => Some(session),
                Err(refused) => {
                    self.state = State::Authenticated(session);
                    return Err(refused);
                }
            },
            _ => return Err(SaslRefusal::IllegalState { close: true }),
        };
        let Some(chosen) =
            Mechanism::from_name(mechanism).filter(|m| self.shared.config.is_enabled(*m))
        else {
            return Err(SaslRefusal::UnsupportedMechanism);
        };
        self.state = match previous {
            Some(previous) if previous.mechanism != chosen => State::BadReauthMechanism {
                message: format!(
                    "SASL mechanism '{chosen}' requested by client is not supported for re-authentication of mechanism '{}'",
                    previous.mechanism
                ),
            },
            previous => State::Authenticating {
                exchange: self.exchange(chosen)?,
                framing,
                previous,
            },
        };
        Ok(())
    }

    /// KIP-368: only a session with a lifetime re-authenticates, at most once a second, and
    /// never with the legacy v0 framing.
    fn may_reauthenticate(
        &mut self,
        session: &Session,
        framing: Framing,
    ) -> Result<(), SaslRefusal> {
        let now = self.now_ms();
        let too_soon = self
            .last_reauth_start_ms
            .is_some_and(|last| now.saturating_sub(last) < MIN_REAUTH_INTERVAL_MS);
        if session.expires_at_ms.is_none() || too_soon || framing == Framing::Raw {
            return Err(SaslRefusal::IllegalState { close: false });
        }
        self.last_reauth_start_ms = Some(now);
        Ok(())
    }

    fn exchange(&self, mechanism: Mechanism) -> Result<Exchange, SaslRefusal> {
        Ok(match mechanism {
            Mechanism::Plain => Exchange::Plain,
            Mechanism::Scram(m) => {
                let nonce = crate::security::scram::server::new_nonce()
                    .map_err(|_| SaslRefusal::IllegalState { close: true })?;
                Exchange::Scram(ScramServer::new(m, nonce))
            }
            Mechanism::OAuthBearer => Exchange::OAuthBearer(OAuthBearerServer::default()),
        })
    }

    /// Whether a SaslAuthenticate request fits now: only during an exchange begun by a v1+
    /// handshake. Otherwise answer ILLEGAL_SASL_STATE (an authenticated connection stays open,
    /// as Kafka's `KafkaApis` answers it there).
    pub fn check_authenticate_request(&self) -> Result<(), SaslRefusal> {
        match &self.state {
            State::Authenticating {
                framing: Framing::SaslAuthenticate,
                ..
            }
            | State::BadReauthMechanism { .. } => Ok(()),
            State::Authenticated(_) => Err(SaslRefusal::IllegalState { close: false }),
            _ => Err(SaslRefusal::IllegalState { close: true }),
        }
    }

    /// One SASL token from the client (SaslAuthenticate `auth_bytes`, or a raw token).
    pub async fn authenticate(&mut self, token: &[u8]) -> Step {
        match std::mem::replace(&mut self.state, State::Failed) {
            State::Authenticating {
                mut exchange,
                framing,
                previous,
            } => {
                let mechanism = exchange.mechanism();
                match self.evaluate(&mut exchange, token).await {
                    Ok(Evaluated::Challenge(bytes)) => {
                        self.state = State::Authenticating {
                            exchange,
                            framing,
                            previous,
                        };
                        Step::Challenge(bytes)
                    }
                    Ok(Evaluated::Done {
                        name,
                        response,
                        credential_expires_ms,
                    }) => self.finish(mechanism, previous, name, response, credential_expires_ms),
                    Err(refusal) => self.fail(mechanism, previous.is_some(), refusal),
                }
            }
            State::BadReauthMechanism { message } => Step::Failed { message },
            other => {
                self.state = other;
                Step::Failed {
                    message: "Unexpected SASL token: no SASL handshake in progress".into(),
                }
            }
        }
    }

    async fn evaluate(&self, exchange: &mut Exchange, token: &[u8]) -> Result<Evaluated, Refusal> {
        let shared = &self.shared;
        match exchange {
            Exchange::Plain => {
                let users = match &shared.plain_users {
                    Some(file) => Some(file.current().await),
                    None => None,
                };
                let attempted = plain::PlainMessage::parse(token).ok().map(|m| m.username);
                match plain::authenticate(token, users.as_deref(), shared.scram.as_ref()).await {
                    Ok(name) => Ok(Evaluated::done(name, Vec::new(), None)),
                    Err(PlainFailure::Told(told)) => Err(Refusal::told(told, attempted)),
                    Err(PlainFailure::Invalid(reason)) => Err(Refusal::generic(reason, attempted)),
                }
            }
            Exchange::Scram(scram) => {
                let step = scram.evaluate(token, shared.scram.as_ref(), &shared.decoy_key);
                let attempted = scram.username().map(str::to_string);
                match step {
                    Ok(ScramStep::Challenge(bytes)) => Ok(Evaluated::Challenge(bytes)),
                    Ok(ScramStep::Done { username, response }) => {
                        Ok(Evaluated::done(username, response, None))
                    }
                    Err(ScramFailure::AuthorizationId) => Err(Refusal::told(
                        &ScramFailure::AuthorizationId.to_string(),
                        attempted,
                    )),
                    Err(other) => Err(Refusal::generic(&other.to_string(), attempted)),
                }
            }
            Exchange::OAuthBearer(oauth) => self.evaluate_oauth(oauth, token).await,
        }
    }

    async fn evaluate_oauth(
        &self,
        oauth: &mut OAuthBearerServer,
        token: &[u8],
    ) -> Result<Evaluated, Refusal> {
        let Some(validator) = &self.shared.jwt else {
            return Err(Refusal::generic("no jwks configured", None));
        };
        match oauth.evaluate(token, validator, self.now_ms()).await {
            Ok(OAuthStep::Challenge(bytes)) => Ok(Evaluated::Challenge(bytes)),
            Ok(OAuthStep::Done(valid)) => Ok(Evaluated::done(
                valid.principal_name,
                Vec::new(),
                Some(valid.expires_ms),
            )),
            Err(OAuthFailure::Told(told)) => {
                let reason = oauth.last_refusal.clone().unwrap_or_else(|| told.clone());
                Err(Refusal {
                    told: Some(told),
                    reason,
                    attempted: None,
                })
            }
            Err(OAuthFailure::Invalid(reason)) => Err(Refusal::generic(&reason, None)),
        }
    }

    fn finish(
        &mut self,
        mechanism: Mechanism,
        previous: Option<Session>,
        name: String,
        response: Vec<u8>,
        credential_expires_ms: Option<u64>,
    ) -> Step {
        let principal = Principal::user(name);
        if let Some(previous) = &previous {
            if previous.principal != principal {
                let refusal = Refusal::told(
                    &format!(
                        "Cannot change principals during re-authentication from {}.{}: {}.{}",
                        previous.principal.principal_type,
                        previous.principal.name,
                        principal.principal_type,
                        principal.name
                    ),
                    Some(principal.name.clone()),
                );
                return self.fail(mechanism, true, refusal);
            }
        }
        let now = self.now_ms();
        let lifetime = session_lifetime_ms(
            now,
            self.shared.config.connections_max_reauth_ms,
            credential_expires_ms,
        );
        self.state = State::Authenticated(Session {
            principal: principal.clone(),
            mechanism,
            expires_at_ms: lifetime.map(|ms| now.saturating_add(ms)),
        });
        Step::Done {
            response,
            principal,
            session_lifetime_ms: lifetime.map_or(0, |ms| i64::try_from(ms).unwrap_or(i64::MAX)),
        }
    }

    fn fail(&mut self, mechanism: Mechanism, reauthenticating: bool, refusal: Refusal) -> Step {
        self.state = State::Failed;
        self.shared.failures.record(
            self.now_ms(),
            self.peer,
            mechanism.name(),
            refusal.attempted.as_deref(),
            &refusal.reason,
        );
        let message = refusal.told.unwrap_or_else(|| {
            let during = if reauthenticating { "re-authentication" } else { "authentication" };
            format!("Authentication failed during {during} due to invalid credentials with SASL mechanism {mechanism}")
        });
        Step::Failed { message }
    }

    fn now_ms(&self) -> u64 {
        self.shared.clock.now_ms()
    }
}

/// Kafka's session lifetime (`SaslServerAuthenticator.calcCompletionTimesAndReturn...`): the
/// credential's remaining life (OAUTHBEARER tokens), `connections.max.reauth.ms` when set
/// (above 0), the smaller of the two when both apply; `None` when neither does.
pub fn session_lifetime_ms(
    now_ms: u64,
    max_reauth_ms: u64,
    credential_expires_ms: Option<u64>,
) -> Option<u64> {
    let credential_left = credential_expires_ms.map(|expires| expires.saturating_sub(now_ms));
    let max_reauth = (max_reauth_ms > 0).then_some(max_reauth_ms);
    match (credential_left, max_reauth) {
        (Some(left), Some(max)) => Some(left.min(max)),
        (left, max) => left.or(max),
    }
}

enum Evaluated {
    Challenge(Vec<u8>),
    Done {
        name: String,
        response: Vec<u8>,
        credential_expires_ms: Option<u64>,
    },
}

impl Evaluated {
    fn done(name: String, response: Vec<u8>, credential_expires_ms: Option<u64>) -> Evaluated {
        Evaluated::Done {
            name,
            response,
            credential_expires_ms,
        }
    }
}

impl Refusal {
    fn told(message: &str, attempted: Option<String>) -> Refusal {
        Refusal {
            told: Some(message.to_string()),
            reason: message.to_string(),
            attempted,
        }
    }

    fn generic(reason: &str, attempted: Option<String>) -> Refusal {
        Refusal {
            told: None,
            reason: reason.to_string(),
            attempted,
        }
    }
}

impl Exchange {
    fn mechanism(&self) -> Mechanism {
        match self {
            Exchange::Plain => Mechanism::Plain,
            Exchange::Scram(scram) => Mechanism::Scram(scram.mechanism()),
            Exchange::OAuthBearer(_) => Mechanism::OAuthBearer,
        }
    }
}

#[cfg(test)]
#[path = "server_tests.rs"]
mod tests;
