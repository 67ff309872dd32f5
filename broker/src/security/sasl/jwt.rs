//! JWT validation for SASL/OAUTHBEARER, as Kafka's broker-side validator does it
//! (`BrokerJwtValidator`, KIP-768): the signature against a key of the JWKS file (found by
//! `kid`), `exp` and `iat` required, `nbf` honoured, each with a clock skew, `iss` and `aud`
//! checked when configured, the principal from the `sub` claim (or the configured one).
//!
//! Only asymmetric algorithms are accepted (RS*, PS*, ES256/ES384, EdDSA): an HMAC "key" in a
//! JWKS would be a shared secret anyone who can read the file could mint tokens with, and
//! accepting HS* against a public key is the classic algorithm-confusion hole.

use std::path::PathBuf;
use std::sync::Arc;

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, JwkSet, KeyAlgorithm};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::Value;

use super::watched_file::{FileError, WatchedFile, RECHECK_INTERVAL};

#[derive(Debug, Clone)]
pub struct JwtConfig {
    pub jwks_file: PathBuf,
    pub expected_issuer: Option<String>,
    /// Any one of these in `aud` suffices; empty: `aud` is not checked.
    pub expected_audience: Vec<String>,
    pub sub_claim_name: String,
    pub clock_skew_s: u64,
}

/// A valid token: who it names and until when (ms since the epoch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidToken {
    pub principal_name: String,
    pub expires_ms: u64,
}

/// Why a token was refused: for the broker's log (the client is told `invalid_token`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct JwtRefusal(pub String);

fn refused(reason: impl Into<String>) -> JwtRefusal {
    JwtRefusal(reason.into())
}

pub struct JwtValidator {
    config: JwtConfig,
    jwks: WatchedFile<JwkSet>,
}

impl JwtValidator {
    pub async fn open(config: JwtConfig) -> Result<JwtValidator, FileError> {
        let jwks =
            WatchedFile::open(&config.jwks_file, parse_jwks, false, RECHECK_INTERVAL).await?;
        Ok(JwtValidator { config, jwks })
    }

    pub async fn validate(&self, token: &str, now_ms: u64) -> Result<ValidToken, JwtRefusal> {
        let jwks: Arc<JwkSet> = self.jwks.current().await;
        validate(&self.config, &jwks, token, now_ms)
    }
}

fn parse_jwks(bytes: &[u8]) -> Result<JwkSet, String> {
    let jwks: JwkSet = serde_json::from_slice(bytes).map_err(|e| format!("not a JWKS: {e}"))?;
    if jwks.keys.is_empty() {
        return Err("the JWKS holds no key".into());
    }
    Ok(jwks)
}

/// The whole check of one token against `jwks` at `now_ms`.
pub fn validate(
    config: &JwtConfig,
    jwks: &JwkSet,
    token: &str,
    now_ms: u64,
) -> Result<ValidToken, JwtRefusal> {
    let header =
        jsonwebtoken::decode_header(token).map_err(|e| refused(format!("bad header: {e}")))?;
    let alg = header.alg;
    if !is_asymmetric(alg) {
        return Err(refused(format!("algorithm {alg:?} is not accepted")));
    }
    let jwk = find_key(jwks, header.kid.as_deref(), alg)?;
    let key = DecodingKey::from_jwk(jwk).map_err(|e| refused(format!("unusable key: {e}")))?;
    let mut validation = Validation::new(alg);
    // Time, issuer and audience are checked below, on the broker's clock.
    validation.validate_exp = false;
    validation.validate_nbf = false;
    validation.validate_aud = false;
    validation.required_spec_claims.clear();
    let claims = jsonwebtoken::decode::<Value>(token, &key, &validation)
        .map_err(|e| refused(format!("signature not verified: {e}")))?
        .claims;
    let expires_ms = check_times(config, &claims, now_ms)?;
    check_issuer_and_audience(config, &claims)?;
    let principal_name = match claims.get(&config.sub_claim_name) {
        Some(Value::String(sub)) if !sub.trim().is_empty() => sub.trim().to_string(),
        _ => return Err(refused(format!("no {} claim", config.sub_claim_name))),
    };
    Ok(ValidToken {
        principal_name,
        expires_ms,
    })
}

fn is_asymmetric(alg: Algorithm) -> bool {
    use Algorithm::*;
    matches!(
        alg,
        RS256 | RS384 | RS512 | PS256 | PS384 | PS512 | ES256 | ES384 | EdDSA
    )
}

/// The key named by `kid`; without a `kid`, the one key that fits `alg`.
fn find_key<'a>(
    jwks: &'a JwkSet,
    kid: Option<&str>,
    alg: Algorithm,
) -> Result<&'a Jwk, JwtRefusal> {
    match kid {
        Some(kid) => {
            let jwk = jwks
                .find(kid)
                .ok_or_else(|| refused(format!("no key with kid {kid:?}")))?;
            if fits(jwk, alg) {
                Ok(jwk)
            } else {
                Err(refused(format!("key {kid:?} does not fit {alg:?}")))
            }
        }
        None => {
            let mut fitting = jwks.keys.iter().filter(|k| fits(k, alg));
            match (fitting.next(), fitting.next()) {
                (Some(jwk), None) => Ok(jwk),
                (None, _) => Err(refused(format!("no key fits {alg:?}"))),
                (Some(_), Some(_)) => Err(refused("no kid and several keys fit")),
            }
        }
    }
}

/// Whether a JWK may verify `alg`: its type and curve, and its own `alg` when it names one.
fn fits(jwk: &Jwk, alg: Algorithm) -> bool {
    use Algorithm::*;
    let by_type = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => matches!(alg, RS256 | RS384 | RS512 | PS256 | PS384 | PS512),
        AlgorithmParameters::EllipticCurve(ec) => matches!(
            (&ec.curve, alg),
            (EllipticCurve::P256, ES256) | (EllipticCurve::P384, ES384)
        ),
        AlgorithmParameters::OctetKeyPair(_) => alg == EdDSA,
        AlgorithmParameters::OctetKey(_) => false,
    };
    let by_alg = match jwk.common.key_algorithm {
        None => true,
        Some(key_alg) => key_algorithm_name(key_alg) == Some(alg),
    };
    by_type && by_alg
}

fn key_algorithm_name(key_alg: KeyAlgorithm) -> Option<Algorithm> {
    format!("{key_alg:?}").parse().ok()
}

/// `exp` and `iat` must be there (as Kafka requires), `nbf` may; each within the skew. The
/// token's expiry in ms.
fn check_times(config: &JwtConfig, claims: &Value, now_ms: u64) -> Result<u64, JwtRefusal> {
    let seconds = |name: &str| {
        claims
            .get(name)
            .map(|v| v.as_f64().filter(|s| s.is_finite()))
    };
    let now = now_ms as f64 / 1000.0;
    let skew = config.clock_skew_s as f64;
    let exp = seconds("exp").ok_or_else(|| refused("no exp claim"))?;
    let exp = exp.ok_or_else(|| refused("exp is not a number"))?;
    if now > exp + skew {
        return Err(refused(format!("expired at {exp}")));
    }
    let iat = seconds("iat").ok_or_else(|| refused("no iat claim"))?;
    let iat = iat.ok_or_else(|| refused("iat is not a number"))?;
    if iat > now + skew {
        return Err(refused(format!("issued in the future ({iat})")));
    }
    match seconds("nbf") {
        None => {}
        Some(None) => return Err(refused("nbf is not a number")),
        Some(Some(nbf)) if nbf > now + skew => {
            return Err(refused(format!("not valid before {nbf}")))
        }
        Some(Some(_)) => {}
    }
    Ok(seconds_to_ms(exp))
}

#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
fn seconds_to_ms(seconds: f64) -> u64 {
    // `as` saturates: a negative or huge exp becomes 0 or u64::MAX, both harmless here.
    (seconds * 1000.0) as u64
}

fn check_issuer_and_audience(config: &JwtConfig, claims: &Value) -> Result<(), JwtRefusal> {
    if let Some(expected) = &config.expected_issuer {
        if claims.get("iss").and_then(Value::as_str) != Some(expected.as_str()) {
            return Err(refused("issuer is not the expected one"));
        }
    }
    if config.expected_audience.is_empty() {
        return Ok(());
    }
    let audience: Vec<&str> = match claims.get("aud") {
        Some(Value::String(one)) => vec![one.as_str()],
        Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if audience
        .iter()
        .any(|a| config.expected_audience.iter().any(|e| e == a))
    {
        Ok(())
    } else {
        Err(refused("audience is not an expected one"))
    }
}

#[cfg(test)]
#[path = "jwt_tests.rs"]
mod tests;
