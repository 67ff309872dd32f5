//! What SASL a broker offers: the enabled mechanisms and what each needs.

use std::path::PathBuf;

use crate::security::scram::ScramMechanism;

use super::jwt::JwtConfig;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mechanism {
    Plain,
    Scram(ScramMechanism),
    OAuthBearer,
}

impl Mechanism {
    pub const ALL: [Mechanism; 4] = [
        Mechanism::Plain,
        Mechanism::Scram(ScramMechanism::Sha256),
        Mechanism::Scram(ScramMechanism::Sha512),
        Mechanism::OAuthBearer,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Plain => "PLAIN",
            Mechanism::Scram(m) => m.name(),
            Mechanism::OAuthBearer => "OAUTHBEARER",
        }
    }

    /// Names are case-sensitive, as in Kafka's `sasl.enabled.mechanisms`.
    pub fn from_name(name: &str) -> Option<Mechanism> {
        Mechanism::ALL.into_iter().find(|m| m.name() == name)
    }
}

impl std::fmt::Display for Mechanism {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// `PLAIN,SCRAM-SHA-512` as a list, in the order given, without repeats.
pub fn parse_mechanisms(text: &str) -> Result<Vec<Mechanism>, String> {
    let mut mechanisms = Vec::new();
    for name in text.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let mechanism = Mechanism::from_name(name).ok_or_else(|| match name {
            "GSSAPI" => "GSSAPI (Kerberos) is not supported".to_string(),
            _ => format!(
                "unknown mechanism {name:?}: expected PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER"
            ),
        })?;
        if !mechanisms.contains(&mechanism) {
            mechanisms.push(mechanism);
        }
    }
    if mechanisms.is_empty() {
        return Err("at least one mechanism must be enabled".into());
    }
    Ok(mechanisms)
}

/// Splits a comma-separated list (the expected audiences), dropping empty items.
pub fn parse_list(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

#[derive(Debug, Clone)]
pub struct SaslConfig {
    /// Offered on SASL listeners, in this order (SaslHandshake lists them so).
    pub enabled_mechanisms: Vec<Mechanism>,
    /// `name:password` lines PLAIN checks before the SCRAM credentials.
    pub plain_users_file: Option<PathBuf>,
    /// Set when OAUTHBEARER is enabled (a JWKS file is then required).
    pub oauthbearer: Option<JwtConfig>,
    /// Kafka's `connections.max.reauth.ms`: 0 lets sessions last (OAUTHBEARER sessions still
    /// end with their token).
    pub connections_max_reauth_ms: u64,
    /// Kafka's `connection.failed.authentication.delay.ms`: a failed authentication is
    /// answered and closed this much later.
    pub failed_authentication_delay_ms: u64,
}

impl Default for SaslConfig {
    fn default() -> Self {
        SaslConfig {
            enabled_mechanisms: vec![
                Mechanism::Scram(ScramMechanism::Sha256),
                Mechanism::Scram(ScramMechanism::Sha512),
            ],
            plain_users_file: None,
            oauthbearer: None,
            connections_max_reauth_ms: 0,
            failed_authentication_delay_ms:
                crate::config::sasl::CONNECTION_FAILED_AUTHENTICATION_DELAY_MS.default_value(),
        }
    }
}

impl SaslConfig {
    pub fn is_enabled(&self, mechanism: Mechanism) -> bool {
        self.enabled_mechanisms.contains(&mechanism)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mechanism_lists_parse_as_kafka_names_them() {
        assert_eq!(
            parse_mechanisms(" PLAIN, SCRAM-SHA-512 ,PLAIN").unwrap(),
            vec![Mechanism::Plain, Mechanism::Scram(ScramMechanism::Sha512)]
        );
        assert_eq!(
            parse_mechanisms("GSSAPI").unwrap_err(),
            "GSSAPI (Kerberos) is not supported"
        );
        assert!(parse_mechanisms("plain").is_err());
        assert!(parse_mechanisms(" , ").is_err());
        assert_eq!(parse_list("kafka, ,billing"), vec!["kafka", "billing"]);
    }
}
