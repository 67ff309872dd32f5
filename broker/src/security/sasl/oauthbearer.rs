//! SASL/OAUTHBEARER (RFC 7628) as Kafka's `OAuthBearerSaslServer` runs it: the client's
//! initial response `n,[a=authzid],\x01auth=Bearer <jwt>\x01[key=value\x01]...\x01`; a token
//! that fails validation is answered with a challenge holding `{"status":"invalid_token"}`, the
//! client acknowledges with a single `\x01`, and only then does authentication fail (with that
//! JSON as the message, which is what Kafka clients show).

use super::jwt::{JwtValidator, ValidToken};

/// Longest initial response accepted: a JWT with many claims is a few KiB.
pub const MESSAGE_BYTES_MAX: usize = 64 << 10;
/// What the client is told about any refused token (Kafka's `jsonErrorResponse`).
pub const INVALID_TOKEN: &str = r#"{"status":"invalid_token"}"#;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitialResponse {
    pub authzid: String,
    pub token: String,
    /// SASL extensions (`key=value` pairs besides `auth`): accepted and ignored, as Kafka's
    /// default validator does.
    pub extensions: Vec<(String, String)>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid OAUTHBEARER message: {0}")]
pub struct MessageError(pub &'static str);

impl InitialResponse {
    pub fn parse(bytes: &[u8]) -> Result<InitialResponse, MessageError> {
        if bytes.len() > MESSAGE_BYTES_MAX {
            return Err(MessageError("message too long"));
        }
        let text = std::str::from_utf8(bytes).map_err(|_| MessageError("not UTF-8"))?;
        let rest = text
            .strip_prefix("n,")
            .ok_or(MessageError("no GS2 header"))?;
        let (authz, rest) = rest.split_once(',').ok_or(MessageError("no GS2 header"))?;
        let authzid = match authz {
            "" => String::new(),
            a => crate::security::scram::messages::unescape_saslname(
                a.strip_prefix("a=").ok_or(MessageError("bad authzid"))?,
            )
            .map_err(|_| MessageError("bad authzid"))?,
        };
        let pairs = rest
            .strip_prefix('\x01')
            .and_then(|r| r.strip_suffix("\x01\x01"))
            .ok_or(MessageError("bad separators"))?;
        let mut token = None;
        let mut extensions = Vec::new();
        for pair in pairs.split('\x01') {
            let (key, value) = parse_pair(pair)?;
            if key == "auth" {
                if token.is_some() {
                    return Err(MessageError("auth given twice"));
                }
                token = Some(bearer_token(value)?);
            } else {
                extensions.push((key.to_string(), value.to_string()));
            }
        }
        Ok(InitialResponse {
            authzid,
            token: token.ok_or(MessageError("no auth"))?,
            extensions,
        })
    }
}

/// `key = 1*ALPHA`, `value = *(VCHAR / SP / HTAB / CR / LF)`, non-empty as Kafka requires.
fn parse_pair(pair: &str) -> Result<(&str, &str), MessageError> {
    let (key, value) = pair.split_once('=').ok_or(MessageError("bad key=value"))?;
    let value_char =
        |b: u8| (0x21..=0x7e).contains(&b) || matches!(b, b' ' | b'\t' | b'\r' | b'\n');
    if key.is_empty()
        || !key.bytes().all(|b| b.is_ascii_alphabetic())
        || value.is_empty()
        || !value.bytes().all(value_char)
    {
        return Err(MessageError("bad key=value"));
    }
    Ok((key, value))
}

/// `Bearer <b64token>`: the scheme in any case, then the token's base64url characters and dots.
fn bearer_token(auth: &str) -> Result<String, MessageError> {
    let (scheme, token) = auth.split_once(' ').ok_or(MessageError("bad auth"))?;
    let token = token.trim_start_matches(' ');
    let token_char = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.');
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() || !token.bytes().all(token_char)
    {
        return Err(MessageError("bad auth"));
    }
    Ok(token.to_string())
}

/// What the exchange asks of its caller.
#[derive(Debug, PartialEq, Eq)]
pub enum OAuthStep {
    /// Send the error challenge; the client's `\x01` comes next.
    Challenge(Vec<u8>),
    Done(ValidToken),
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OAuthFailure {
    /// Told to the client as "invalid credentials"; the reason is logged.
    #[error("{0}")]
    Invalid(String),
    /// Told to the client as it is (Kafka's messages, or the JSON error after `\x01`).
    #[error("{0}")]
    Told(String),
}

#[derive(Default)]
pub struct OAuthBearerServer {
    /// Set once a token was refused: the message the exchange fails with after the client's
    /// `\x01`.
    refused: Option<String>,
    /// Why the last token was refused, for the log.
    pub last_refusal: Option<String>,
    finished: bool,
}

impl OAuthBearerServer {
    pub async fn evaluate(
        &mut self,
        message: &[u8],
        validator: &JwtValidator,
        now_ms: u64,
    ) -> Result<OAuthStep, OAuthFailure> {
        if self.finished {
            return Err(OAuthFailure::Invalid(
                "message after the exchange ended".into(),
            ));
        }
        if let Some(told) = self.refused.take() {
            // Whatever follows the error challenge (`\x01` by the RFC) ends the exchange.
            self.finished = true;
            return Err(OAuthFailure::Told(told));
        }
        let initial = InitialResponse::parse(message).map_err(|e| {
            self.finished = true;
            OAuthFailure::Invalid(e.to_string())
        })?;
        match validator.validate(&initial.token, now_ms).await {
            Err(refusal) => {
                self.last_refusal = Some(refusal.0);
                self.refused = Some(INVALID_TOKEN.to_string());
                Ok(OAuthStep::Challenge(INVALID_TOKEN.as_bytes().to_vec()))
            }
            Ok(token) => {
                self.finished = true;
                if !initial.authzid.is_empty() && initial.authzid != token.principal_name {
                    return Err(OAuthFailure::Told(format!(
                        "Authentication failed: Client requested an authorization id ({}) that is different from the token's principal name ({})",
                        initial.authzid, token.principal_name
                    )));
                }
                Ok(OAuthStep::Done(token))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafkas_initial_response_parses() {
        let parsed = InitialResponse::parse(b"n,,\x01auth=Bearer abc.def-_.ghi\x01\x01").unwrap();
        assert_eq!(parsed.token, "abc.def-_.ghi");
        assert!(parsed.authzid.is_empty() && parsed.extensions.is_empty());
        let parsed =
            InitialResponse::parse(b"n,a=alice,\x01traceId=123\x01auth=bearer  t\x01\x01").unwrap();
        assert_eq!(parsed.authzid, "alice");
        assert_eq!(parsed.token, "t");
        assert_eq!(parsed.extensions, vec![("traceId".into(), "123".into())]);
    }

    #[test]
    fn malformed_initial_responses_are_errors() {
        for bad in [
            &b""[..],
            b"\x01",
            b"n,,",
            b"y,,\x01auth=Bearer t\x01\x01",
            b"n,,\x01auth=Bearer t\x01",
            b"n,,auth=Bearer t\x01\x01",
            b"n,,\x01auth=Basic dXNlcjpwdw==\x01\x01",
            b"n,,\x01auth=Bearer \x01\x01",
            b"n,,\x01auth=Bearer t t\x01\x01",
            b"n,,\x01\x01",
            b"n,,\x01x=1\x01\x01",
            b"n,,\x01auth=Bearer a\x01auth=Bearer b\x01\x01",
            b"n,,\x011=2\x01auth=Bearer t\x01\x01",
            b"n,a=,\x01auth=Bearer t\x01\x01",
            b"n,,\x01auth=Bearer \xff\x01\x01",
        ] {
            assert!(
                InitialResponse::parse(bad).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
