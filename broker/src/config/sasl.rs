//! SASL settings: which mechanisms SASL listeners offer and what each needs. They apply to
//! listeners whose protocol is SASL_PLAINTEXT or SASL_SSL (see the listener settings).

use std::path::PathBuf;

use storage::settings::{AnySetting, Resolved, Setting, Unit};

use super::ConfigError;
use crate::security::sasl::config::{parse_list, parse_mechanisms, Mechanism, SaslConfig};
use crate::security::sasl::jwt::JwtConfig;

pub static SASL: &[&dyn AnySetting] = &[
    &SASL_ENABLED_MECHANISMS,
    &SASL_PLAIN_USERS_FILE,
    &SASL_OAUTHBEARER_JWKS_FILE,
    &SASL_OAUTHBEARER_EXPECTED_ISSUER,
    &SASL_OAUTHBEARER_EXPECTED_AUDIENCE,
    &SASL_OAUTHBEARER_SUB_CLAIM_NAME,
    &SASL_OAUTHBEARER_CLOCK_SKEW_SECONDS,
    &CONNECTIONS_MAX_REAUTH_MS,
    &CONNECTION_FAILED_AUTHENTICATION_DELAY_MS,
];

pub static SASL_ENABLED_MECHANISMS: Setting<String> = Setting::new(
    "sasl_enabled_mechanisms",
    "SCRAM-SHA-256,SCRAM-SHA-512",
    Unit::None,
    "SASL mechanisms offered on SASL listeners, comma-separated: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER (Kafka's `sasl.enabled.mechanisms`; GSSAPI is not supported)",
)
.checked(|text| parse_mechanisms(text).map(|_| ()));

pub static SASL_PLAIN_USERS_FILE: Setting<Option<PathBuf>> = Setting::new(
    "sasl_plain_users_file",
    None,
    Unit::None,
    "`name:password` lines that PLAIN checks before the SCRAM credentials; readable by its owner only (chmod 600), re-read when it changes",
)
.default_note("none: PLAIN checks the SCRAM credentials");

pub static SASL_OAUTHBEARER_JWKS_FILE: Setting<Option<PathBuf>> = Setting::new(
    "sasl_oauthbearer_jwks_file",
    None,
    Unit::None,
    "JWKS (JSON Web Key Set) whose keys verify OAUTHBEARER tokens (RS*, PS*, ES256, ES384, EdDSA; by `kid`); re-read when it changes. Required when OAUTHBEARER is enabled",
)
.default_note("none");

pub static SASL_OAUTHBEARER_EXPECTED_ISSUER: Setting<Option<String>> = Setting::new(
    "sasl_oauthbearer_expected_issuer",
    None,
    Unit::None,
    "The `iss` OAUTHBEARER tokens must carry (Kafka's `sasl.oauthbearer.expected.issuer`)",
)
.default_note("not checked");

pub static SASL_OAUTHBEARER_EXPECTED_AUDIENCE: Setting<Option<String>> = Setting::new(
    "sasl_oauthbearer_expected_audience",
    None,
    Unit::None,
    "Audiences, comma-separated, one of which an OAUTHBEARER token's `aud` must hold (Kafka's `sasl.oauthbearer.expected.audience`)",
)
.default_note("not checked");

pub static SASL_OAUTHBEARER_SUB_CLAIM_NAME: Setting<String> = Setting::new(
    "sasl_oauthbearer_sub_claim_name",
    "sub",
    Unit::None,
    "The claim naming an OAUTHBEARER client: its principal is `User:<value>` (Kafka's `sasl.oauthbearer.sub.claim.name`)",
)
.checked(|name| {
    if name.trim().is_empty() {
        Err("must not be empty".into())
    } else {
        Ok(())
    }
});

pub static SASL_OAUTHBEARER_CLOCK_SKEW_SECONDS: Setting<u64> = Setting::new(
    "sasl_oauthbearer_clock_skew_seconds",
    30,
    Unit::None,
    "Seconds of clock difference allowed when checking a token's `exp`, `nbf` and `iat` (Kafka's `sasl.oauthbearer.clock.skew.seconds`)",
)
.at_most(3600);

pub static CONNECTIONS_MAX_REAUTH_MS: Setting<u64> = Setting::new(
    "connections_max_reauth_ms",
    0,
    Unit::Ms,
    "Longest a SASL session lasts before the client must re-authenticate (KIP-368, Kafka's `connections.max.reauth.ms`); 0: no limit (OAUTHBEARER sessions still end with their token)",
);

pub static CONNECTION_FAILED_AUTHENTICATION_DELAY_MS: Setting<u64> = Setting::new(
    "connection_failed_authentication_delay_ms",
    100,
    Unit::Ms,
    "How long a failed SASL authentication or TLS handshake waits before its answer and the close, which slows down password guessing (Kafka's `connection.failed.authentication.delay.ms`); below connections_max_idle_ms",
)
.at_most(60_000);

/// OAUTHBEARER cannot be offered without keys to check its tokens.
pub fn oauthbearer_has_keys(resolved: &Resolved) -> Result<(), String> {
    let enabled = parse_mechanisms(&resolved.get(&SASL_ENABLED_MECHANISMS))
        .is_ok_and(|m| m.contains(&Mechanism::OAuthBearer));
    if enabled && resolved.get(&SASL_OAUTHBEARER_JWKS_FILE).is_none() {
        Err("OAUTHBEARER needs sasl_oauthbearer_jwks_file".into())
    } else {
        Ok(())
    }
}

/// The SASL settings as the broker reads them (each was checked when read).
pub fn sasl_config(r: &Resolved) -> Result<SaslConfig, ConfigError> {
    let enabled_mechanisms =
        parse_mechanisms(&r.get(&SASL_ENABLED_MECHANISMS)).map_err(|reason| {
            ConfigError::Invalid {
                key: SASL_ENABLED_MECHANISMS.key.into(),
                reason,
            }
        })?;
    let oauthbearer = r
        .get(&SASL_OAUTHBEARER_JWKS_FILE)
        .map(|jwks_file| JwtConfig {
            jwks_file,
            expected_issuer: r.get(&SASL_OAUTHBEARER_EXPECTED_ISSUER),
            expected_audience: parse_list(
                &r.get(&SASL_OAUTHBEARER_EXPECTED_AUDIENCE)
                    .unwrap_or_default(),
            ),
            sub_claim_name: r.get(&SASL_OAUTHBEARER_SUB_CLAIM_NAME).trim().to_string(),
            clock_skew_s: r.get(&SASL_OAUTHBEARER_CLOCK_SKEW_SECONDS),
        });
    Ok(SaslConfig {
        enabled_mechanisms,
        plain_users_file: r.get(&SASL_PLAIN_USERS_FILE),
        oauthbearer,
        connections_max_reauth_ms: r.get(&CONNECTIONS_MAX_REAUTH_MS),
        failed_authentication_delay_ms: r.get(&CONNECTION_FAILED_AUTHENTICATION_DELAY_MS),
    })
}
