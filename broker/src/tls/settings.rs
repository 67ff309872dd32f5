//! The TLS settings of SSL (and, later, SASL_SSL) listeners. One certificate, key and client
//! CA serve every TLS listener of the broker.

use std::path::PathBuf;

use storage::settings::{AnySetting, Setting, SettingType, Unit};

use super::principal_mapping::PrincipalMapper;

pub static TLS: &[&dyn AnySetting] = &[
    &SSL_CERT_FILE,
    &SSL_KEY_FILE,
    &SSL_CA_FILE,
    &SSL_CLIENT_AUTH,
    &SSL_PRINCIPAL_MAPPING_RULES,
    &SSL_KEY_FILE_PERMISSIONS_UNCHECKED,
    &SSL_RELOAD_INTERVAL_MS,
    &SSL_HANDSHAKE_TIMEOUT_MS,
];

/// Whether a TLS client must present a certificate (Kafka's `ssl.client.auth`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// No certificate is asked for; every client is `User:ANONYMOUS`.
    None,
    /// A certificate is asked for; a client without one is `User:ANONYMOUS`, one with an
    /// untrusted or expired one is refused.
    Requested,
    /// A client without a trusted certificate is refused.
    Required,
}

impl ClientAuth {
    pub fn name(self) -> &'static str {
        match self {
            ClientAuth::None => "none",
            ClientAuth::Requested => "requested",
            ClientAuth::Required => "required",
        }
    }
}

impl SettingType for ClientAuth {
    type Declared = ClientAuth;
    const PLACEHOLDER: &'static str = "none|requested|required";
    fn from_declared(declared: ClientAuth) -> ClientAuth {
        declared
    }
    fn parse(text: &str) -> Result<ClientAuth, String> {
        match text.trim() {
            "none" => Ok(ClientAuth::None),
            "requested" => Ok(ClientAuth::Requested),
            "required" => Ok(ClientAuth::Required),
            _ => Err(format!(
                "expected none, requested or required, got {text:?}"
            )),
        }
    }
    fn to_text(&self) -> Option<String> {
        Some(self.name().to_string())
    }
    fn to_toml(&self) -> Option<String> {
        Some(format!("\"{}\"", self.name()))
    }
}

pub static SSL_CERT_FILE: Setting<Option<PathBuf>> = Setting::new(
    "ssl_cert_file",
    None,
    Unit::None,
    "PEM certificate chain of TLS listeners, the broker's own certificate first (Kafka's `ssl.keystore.certificate.chain`); required by an SSL listener",
)
.default_note("none");

pub static SSL_KEY_FILE: Setting<Option<PathBuf>> = Setting::new(
    "ssl_key_file",
    None,
    Unit::None,
    "PEM private key of ssl_cert_file (PKCS#8, PKCS#1 or SEC1, unencrypted); must not be readable by group or others",
)
.default_note("none");

pub static SSL_CA_FILE: Setting<Option<PathBuf>> = Setting::new(
    "ssl_ca_file",
    None,
    Unit::None,
    "PEM certificates of the CAs that client certificates must chain to (Kafka's `ssl.truststore.certificates`); required unless ssl_client_auth is none",
)
.default_note("none");

pub static SSL_CLIENT_AUTH: Setting<ClientAuth> = Setting::new(
    "ssl_client_auth",
    ClientAuth::None,
    Unit::None,
    "Client certificates on TLS listeners (Kafka's `ssl.client.auth`): none, requested (a client without one is User:ANONYMOUS) or required",
);

pub static SSL_PRINCIPAL_MAPPING_RULES: Setting<String> = Setting::new(
    "ssl_principal_mapping_rules",
    "DEFAULT",
    Unit::None,
    "How a client certificate's subject becomes its principal (Kafka's `ssl.principal.mapping.rules`): `RULE:pattern/replacement/[L|U]` and `DEFAULT` (the RFC 2253 subject), comma-separated, first match wins",
)
.checked(|rules| PrincipalMapper::parse(rules).map(drop));

pub static SSL_KEY_FILE_PERMISSIONS_UNCHECKED: Setting<bool> = Setting::new(
    "ssl_key_file_permissions_unchecked",
    false,
    Unit::None,
    "Accept an ssl_key_file that group or others may read (refused by default)",
);

pub static SSL_RELOAD_INTERVAL_MS: Setting<u64> = Setting::new(
    "ssl_reload_interval_ms",
    10_000,
    Unit::Ms,
    "How often the TLS files are checked for changes; a change (or SIGHUP) loads them for new connections (0: on SIGHUP only)",
);

pub static SSL_HANDSHAKE_TIMEOUT_MS: Setting<u64> = Setting::new(
    "ssl_handshake_timeout_ms",
    10_000,
    Unit::Ms,
    "A TLS handshake not finished within this long closes the connection",
)
.at_least(1);
