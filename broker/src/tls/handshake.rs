//! The TLS handshake of one connection, bounded by `ssl_handshake_timeout_ms`, and who the
//! client is once it is done: `User:<mapped subject>` with a client certificate,
//! `User:ANONYMOUS` without one.

use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite};
use tokio_rustls::server::TlsStream;

use super::subject::{subject_rfc2253, MalformedCertificate};
use super::ServerTls;
use crate::security::Principal;

#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    #[error("not finished within {timeout_ms} ms")]
    Timeout { timeout_ms: u64 },
    /// rustls's reason (a bad certificate, a plaintext client, a protocol mismatch), or the
    /// peer going away.
    #[error("{0}")]
    Tls(#[from] std::io::Error),
    #[error("client certificate: {0}")]
    Certificate(#[from] MalformedCertificate),
    /// Kafka refuses such a client too (`NoMatchingRule`).
    #[error(
        "no ssl_principal_mapping_rules rule applies to the client certificate subject {subject:?}"
    )]
    NoMatchingRule { subject: String },
}

/// Completes the handshake on `stream`; the principal is the client certificate's subject
/// through the mapping rules. A handshake that fails (not one that times out) returns only
/// `failed_handshake_delay_ms` later, its connection held open meanwhile, as Kafka delays
/// closing a connection that failed authentication: guessing is slow.
pub async fn accept<S: AsyncRead + AsyncWrite + Unpin>(
    tls: &ServerTls,
    stream: S,
) -> Result<(TlsStream<S>, Principal), HandshakeError> {
    let timeout = tls.handshake_timeout();
    let handshake = tls.acceptor().accept(stream).into_fallible();
    let stream = match tokio::time::timeout(timeout, handshake).await {
        Ok(Ok(stream)) => stream,
        Ok(Err((error, stream))) => return Err(failed(tls, stream, error.into()).await),
        Err(_) => {
            return Err(HandshakeError::Timeout {
                timeout_ms: tls.config().handshake_timeout_ms,
            })
        }
    };
    match principal(tls, &stream) {
        Ok(principal) => Ok((stream, principal)),
        Err(error) => Err(failed(tls, stream, error).await),
    }
}

/// Holds the failed connection for the delay, then lets it close.
async fn failed<T>(tls: &ServerTls, connection: T, error: HandshakeError) -> HandshakeError {
    let delay = Duration::from_millis(tls.config().failed_handshake_delay_ms);
    tokio::time::sleep(delay).await;
    drop(connection);
    error
}

fn principal<S>(tls: &ServerTls, stream: &TlsStream<S>) -> Result<Principal, HandshakeError> {
    let (_, connection) = stream.get_ref();
    // The chain starts with the client's own certificate; rustls verified all of it.
    let Some(certificate) = connection
        .peer_certificates()
        .and_then(|chain| chain.first())
    else {
        return Ok(Principal::anonymous());
    };
    let subject = subject_rfc2253(certificate)?;
    match tls.config().principal_mapping.name(&subject) {
        Some(name) => Ok(Principal::user(name)),
        None => Err(HandshakeError::NoMatchingRule { subject }),
    }
}

/// How often a failed handshake is logged at most; scanners and misconfigured clients can
/// fail thousands a second.
const FAILURE_LOG_INTERVAL: Duration = Duration::from_secs(1);

/// One log line per [`FAILURE_LOG_INTERVAL`] for failed handshakes, counting the ones
/// not logged since the last line.
#[derive(Default)]
pub struct FailureLog {
    window: Mutex<Window>,
}

#[derive(Default)]
struct Window {
    last_logged: Option<Instant>,
    suppressed: u64,
}

impl FailureLog {
    pub fn log(&self, listener: &str, peer: SocketAddr, error: &HandshakeError) {
        if let Some(suppressed) = self.admit(Instant::now()) {
            tracing::info!(listener, %peer, %error, suppressed, "tls handshake failed");
        }
    }

    /// Whether a failure at `now` is logged, and if so how many were suppressed before it.
    fn admit(&self, now: Instant) -> Option<u64> {
        // A counter and a time: a poisoned lock still holds consistent ones.
        let mut window = self.window.lock().unwrap_or_else(|e| e.into_inner());
        match window.last_logged {
            Some(last) if now.saturating_duration_since(last) < FAILURE_LOG_INTERVAL => {
                window.suppressed += 1;
                None
            }
            _ => {
                window.last_logged = Some(now);
                Some(std::mem::take(&mut window.suppressed))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_logged_once_a_second_with_the_count_of_the_others() {
        let log = FailureLog::default();
        let start = Instant::now();
        assert_eq!(log.admit(start), Some(0));
        for ms in [1, 10, 999] {
            assert_eq!(log.admit(start + Duration::from_millis(ms)), None);
        }
        assert_eq!(log.admit(start + Duration::from_millis(1000)), Some(3));
        assert_eq!(log.admit(start + Duration::from_millis(1500)), None);
        assert_eq!(log.admit(start + Duration::from_millis(2500)), Some(1));
    }
}
