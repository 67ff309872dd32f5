//! TLS for SSL listeners (rustls with the aws-lc-rs provider; TLS 1.2 and 1.3).
//!
//! - [`settings`]: the `ssl_*` settings;
//! - [`files`]: reading the certificate chain, the key (refused when others may read it) and
//!   the client CAs into a rustls configuration;
//! - [`ServerTls`]: the configuration new connections get, replaced whole when the files
//!   change ([`reload`]: on SIGHUP and when a poll sees a file's mtime or length change);
//!   a connection keeps the configuration it was accepted with;
//! - [`handshake`]: the handshake under a timeout, the client's principal from its
//!   certificate, and one log line per second at most for failed handshakes;
//! - [`subject`] and [`principal_mapping`]: certificate subject to RFC 2253 text, and Kafka's
//!   `ssl.principal.mapping.rules` from that text to a principal name.

pub mod files;
pub mod handshake;
pub mod principal_mapping;
pub mod reload;
pub mod settings;
pub mod subject;

use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use storage::settings::Resolved;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::TlsAcceptor;

use crate::config::ConfigError;
use files::{Fingerprint, TlsError};
use principal_mapping::PrincipalMapper;
use settings as s;

/// The TLS settings of a broker with at least one TLS listener.
#[derive(Debug, Clone)]
pub struct TlsConfig {
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
    /// Client certificates are asked for; `None` with `ssl_client_auth=none`.
    pub client_ca: Option<ClientCa>,
    pub principal_mapping: PrincipalMapper,
    pub key_file_permissions_unchecked: bool,
    /// 0: reload on SIGHUP only.
    pub reload_interval_ms: u64,
    pub handshake_timeout_ms: u64,
    /// A failed handshake is closed this long after it failed
    /// (`connection_failed_authentication_delay_ms`, as a failed SASL login).
    pub failed_handshake_delay_ms: u64,
}

/// Where client certificates must chain to, and whether a client must present one.
#[derive(Debug, Clone)]
pub struct ClientCa {
    pub ca_file: PathBuf,
    pub required: bool,
}

impl TlsConfig {
    /// The TLS settings, when `needed_by` (the first listener that uses TLS, else `http_tls`)
    /// needs them.
    pub fn from_settings(
        r: &Resolved,
        needed_by: Option<&str>,
    ) -> Result<Option<TlsConfig>, ConfigError> {
        let Some(user) = needed_by else {
            return Ok(None);
        };
        let required = |key: &str, value: Option<PathBuf>| {
            value.ok_or_else(|| ConfigError::Invalid {
                key: key.into(),
                reason: format!("required by {user}"),
            })
        };
        let cert_file = required(s::SSL_CERT_FILE.key, r.get(&s::SSL_CERT_FILE))?;
        let key_file = required(s::SSL_KEY_FILE.key, r.get(&s::SSL_KEY_FILE))?;
        let client_ca = match r.get(&s::SSL_CLIENT_AUTH) {
            s::ClientAuth::None => None,
            auth => Some(ClientCa {
                ca_file: r.get(&s::SSL_CA_FILE).ok_or_else(|| ConfigError::Invalid {
                    key: s::SSL_CA_FILE.key.into(),
                    reason: format!("required with ssl_client_auth={}", auth.name()),
                })?,
                required: auth == s::ClientAuth::Required,
            }),
        };
        let principal_mapping = PrincipalMapper::parse(&r.get(&s::SSL_PRINCIPAL_MAPPING_RULES))
            .map_err(|reason| ConfigError::Invalid {
                key: s::SSL_PRINCIPAL_MAPPING_RULES.key.into(),
                reason,
            })?;
        Ok(Some(TlsConfig {
            cert_file,
            key_file,
            client_ca,
            principal_mapping,
            key_file_permissions_unchecked: r.get(&s::SSL_KEY_FILE_PERMISSIONS_UNCHECKED),
            reload_interval_ms: r.get(&s::SSL_RELOAD_INTERVAL_MS),
            handshake_timeout_ms: r.get(&s::SSL_HANDSHAKE_TIMEOUT_MS),
            failed_handshake_delay_ms: r
                .get(&crate::config::sasl::CONNECTION_FAILED_AUTHENTICATION_DELAY_MS),
        }))
    }
}

/// The TLS setup of the broker's TLS listeners.
pub struct ServerTls {
    config: TlsConfig,
    current: RwLock<Loaded>,
    /// Failed handshakes, logged once a second at most.
    pub failures: handshake::FailureLog,
}

struct Loaded {
    server: Arc<ServerConfig>,
    fingerprint: Fingerprint,
}

impl ServerTls {
    /// Loads the files; the broker does not start on an error. Blocking file I/O.
    pub fn load(config: TlsConfig) -> Result<Arc<ServerTls>, TlsError> {
        let fingerprint = files::fingerprint(&config);
        let server = files::load(&config)?;
        Ok(Arc::new(ServerTls {
            config,
            current: RwLock::new(Loaded {
                server,
                fingerprint,
            }),
            failures: handshake::FailureLog::default(),
        }))
    }

    pub fn config(&self) -> &TlsConfig {
        &self.config
    }

    /// What a new connection handshakes with.
    pub fn acceptor(&self) -> TlsAcceptor {
        TlsAcceptor::from(self.lock().server.clone())
    }

    pub fn handshake_timeout(&self) -> Duration {
        Duration::from_millis(self.config.handshake_timeout_ms)
    }

    /// The HTTP listener's TLS (`http_tls`): the same files, reloaded the same way.
    pub fn http_source(self: &Arc<Self>) -> Arc<dyn telemetry::http::TlsSource> {
        self.clone()
    }

    /// Loads the files again if they changed since the last load (or always, with `force`).
    /// `Ok(true)` when new connections now get the new files; on an error they keep getting
    /// the old ones. Blocking file I/O.
    pub fn reload(&self, force: bool) -> Result<bool, TlsError> {
        let fingerprint = files::fingerprint(&self.config);
        if !force && fingerprint == self.lock().fingerprint {
            return Ok(false);
        }
        // The fingerprint is kept only with a successful load, so a broken file (or one
        // whose mode alone was fixed) is tried again at the next poll.
        let server = files::load(&self.config)?;
        let mut current = self.current.write().unwrap_or_else(|e| e.into_inner());
        *current = Loaded {
            server,
            fingerprint,
        };
        Ok(true)
    }

    // Only whole values are ever stored under this lock: a poisoned one still holds a
    // consistent configuration.
    fn lock(&self) -> std::sync::RwLockReadGuard<'_, Loaded> {
        self.current.read().unwrap_or_else(|e| e.into_inner())
    }
}

impl telemetry::http::TlsSource for ServerTls {
    fn acceptor(&self) -> TlsAcceptor {
        ServerTls::acceptor(self)
    }

    fn handshake_timeout(&self) -> Duration {
        ServerTls::handshake_timeout(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A self-signed certificate for localhost and its key, as PEM.
    fn identity(name: &str) -> (String, String) {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        (params.self_signed(&key).unwrap().pem(), key.serialize_pem())
    }

    fn write(dir: &std::path::Path, (cert, key): &(String, String)) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::write(dir.join("cert.pem"), cert).unwrap();
        std::fs::write(dir.join("key.pem"), key).unwrap();
        let mode = std::fs::Permissions::from_mode(0o600);
        std::fs::set_permissions(dir.join("key.pem"), mode).unwrap();
    }

    fn config(dir: &std::path::Path) -> TlsConfig {
        TlsConfig {
            cert_file: dir.join("cert.pem"),
            key_file: dir.join("key.pem"),
            client_ca: None,
            principal_mapping: PrincipalMapper::default(),
            key_file_permissions_unchecked: false,
            reload_interval_ms: 0,
            handshake_timeout_ms: 1000,
            failed_handshake_delay_ms: 0,
        }
    }

    fn served(tls: &ServerTls) -> Arc<ServerConfig> {
        tls.lock().server.clone()
    }

    #[test]
    fn reload_loads_changed_files_and_keeps_the_old_ones_when_the_new_fail() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), &identity("one"));
        let tls = ServerTls::load(config(dir.path())).unwrap();
        let first = served(&tls);
        assert!(
            !tls.reload(false).unwrap(),
            "unchanged files are not reloaded"
        );
        assert!(Arc::ptr_eq(&first, &served(&tls)));
        // A certificate with another certificate's key: refused, the first pair stays.
        let (two, three) = (identity("two-longer-name"), identity("three"));
        write(dir.path(), &(two.0.clone(), three.1));
        assert!(matches!(tls.reload(false), Err(TlsError::Identity(_))));
        assert!(Arc::ptr_eq(&first, &served(&tls)));
        write(dir.path(), &two);
        assert!(tls.reload(false).unwrap());
        assert!(!Arc::ptr_eq(&first, &served(&tls)));
        // SIGHUP reloads even unchanged files.
        assert!(tls.reload(true).unwrap());
    }
}
