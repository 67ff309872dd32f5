//! Reading the TLS files into a rustls server configuration: the certificate chain, its key
//! (refused when group or others may read it), and the CAs of client certificates.
//! Nothing read from the key file ever reaches a message or a log line.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use tokio_rustls::rustls::crypto::aws_lc_rs;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::server::{VerifierBuilderError, WebPkiClientVerifier};
use tokio_rustls::rustls::{self, RootCertStore, ServerConfig};

use super::{ClientCa, TlsConfig};

/// A TLS file larger than this is refused: a CA bundle is a few hundred KiB.
const FILE_BYTES_MAX: u64 = 16 << 20;

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read {setting} {path}: {source}")]
    Read {
        setting: &'static str,
        path: PathBuf,
        source: io::Error,
    },
    #[error("{setting} {path} is larger than {FILE_BYTES_MAX} bytes")]
    TooLarge {
        setting: &'static str,
        path: PathBuf,
    },
    #[error("{setting} {path} holds no PEM certificate")]
    NoCertificate {
        setting: &'static str,
        path: PathBuf,
    },
    #[error("{setting} {path}: bad PEM certificate: {reason}")]
    BadCertificate {
        setting: &'static str,
        path: PathBuf,
        reason: String,
    },
    #[error("ssl_key_file {path} holds no unencrypted PEM private key (PKCS#8, PKCS#1 or SEC1)")]
    NoKey { path: PathBuf },
    #[error(
        "ssl_key_file {path} may be read by group or others (mode {mode:03o}): chmod 600 it, \
         or pass --ssl-key-file-permissions-unchecked"
    )]
    KeyPermissions { path: PathBuf, mode: u32 },
    #[error("ssl_cert_file and ssl_key_file do not make a usable TLS identity: {0}")]
    Identity(rustls::Error),
    #[error("ssl_ca_file {path}: {reason}")]
    ClientCa { path: PathBuf, reason: String },
}

/// What tells that the files changed: each one's modification time and length.
pub type Fingerprint = Vec<Option<(SystemTime, u64)>>;

pub fn fingerprint(config: &TlsConfig) -> Fingerprint {
    files(config)
        .map(|(_, path)| {
            let meta = std::fs::metadata(path).ok()?;
            Some((meta.modified().ok()?, meta.len()))
        })
        .collect()
}

fn files(config: &TlsConfig) -> impl Iterator<Item = (&'static str, &Path)> {
    [
        ("ssl_cert_file", Some(config.cert_file.as_path())),
        ("ssl_key_file", Some(config.key_file.as_path())),
        (
            "ssl_ca_file",
            config.client_ca.as_ref().map(|ca| ca.ca_file.as_path()),
        ),
    ]
    .into_iter()
    .filter_map(|(setting, path)| Some((setting, path?)))
}

/// Reads every file and builds the configuration new connections get. Blocking file I/O.
pub fn load(config: &TlsConfig) -> Result<Arc<ServerConfig>, TlsError> {
    let chain = certificates("ssl_cert_file", &config.cert_file)?;
    let key = private_key(&config.key_file, config.key_file_permissions_unchecked)?;
    let provider = Arc::new(aws_lc_rs::default_provider());
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
        .map_err(TlsError::Identity)?;
    let builder = match &config.client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => builder.with_client_cert_verifier(client_verifier(ca, provider)?),
    };
    let server = builder
        .with_single_cert(chain, key)
        .map_err(TlsError::Identity)?;
    Ok(Arc::new(server))
}

/// Verifies client certificates against the CA file; without `required`, a client may
/// present none (but one it presents must be valid).
fn client_verifier(
    ca: &ClientCa,
    provider: Arc<rustls::crypto::CryptoProvider>,
) -> Result<Arc<dyn rustls::server::danger::ClientCertVerifier>, TlsError> {
    let bad = |reason: String| TlsError::ClientCa {
        path: ca.ca_file.clone(),
        reason,
    };
    let mut roots = RootCertStore::empty();
    for certificate in certificates("ssl_ca_file", &ca.ca_file)? {
        roots.add(certificate).map_err(|e| bad(e.to_string()))?;
    }
    let builder = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
    let builder = if ca.required {
        builder
    } else {
        builder.allow_unauthenticated()
    };
    builder
        .build()
        .map_err(|e: VerifierBuilderError| bad(e.to_string()))
}

fn certificates(
    setting: &'static str,
    path: &Path,
) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let pem = read(setting, path)?;
    let chain = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::BadCertificate {
            setting,
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
    if chain.is_empty() {
        return Err(TlsError::NoCertificate {
            setting,
            path: path.to_path_buf(),
        });
    }
    Ok(chain)
}

fn private_key(path: &Path, unchecked: bool) -> Result<PrivateKeyDer<'static>, TlsError> {
    if !unchecked {
        check_key_permissions(path)?;
    }
    let pem = read("ssl_key_file", path)?;
    // The PEM error could quote the file: only its absence is reported.
    PrivateKeyDer::from_pem_slice(&pem).map_err(|_| TlsError::NoKey {
        path: path.to_path_buf(),
    })
}

/// A private key anyone but its owner may read is refused, as ssh refuses one.
pub fn check_key_permissions(path: &Path) -> Result<(), TlsError> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).map_err(|source| TlsError::Read {
        setting: "ssl_key_file",
        path: path.to_path_buf(),
        source,
    })?;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(TlsError::KeyPermissions {
            path: path.to_path_buf(),
            mode,
        });
    }
    Ok(())
}

fn read(setting: &'static str, path: &Path) -> Result<Vec<u8>, TlsError> {
    let failed = |source| TlsError::Read {
        setting,
        path: path.to_path_buf(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(failed)?;
    if meta.len() > FILE_BYTES_MAX {
        return Err(TlsError::TooLarge {
            setting,
            path: path.to_path_buf(),
        });
    }
    std::fs::read(path).map_err(failed)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn key_file(mode: u32) -> tempfile::NamedTempFile {
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::set_permissions(file.path(), std::fs::Permissions::from_mode(mode)).unwrap();
        file
    }

    #[test]
    fn only_a_key_its_owner_alone_may_access_passes() {
        for mode in [0o600, 0o400, 0o700] {
            assert!(
                check_key_permissions(key_file(mode).path()).is_ok(),
                "{mode:o}"
            );
        }
        for mode in [0o640, 0o604, 0o644, 0o660, 0o601] {
            let error = check_key_permissions(key_file(mode).path()).unwrap_err();
            assert!(
                matches!(error, TlsError::KeyPermissions { mode: m, .. } if m == mode),
                "{mode:o}: {error}"
            );
        }
    }

    #[test]
    fn a_key_file_that_does_not_parse_is_reported_without_its_content() {
        let file = key_file(0o600);
        let secret =
            "-----BEGIN PRIVATE KEY-----\nc2VjcmV0LWtleS1ieXRlcyE=\n-----END PRIVATE KEY-----\n";
        std::fs::write(file.path(), secret.replace("c2V", "!!!")).unwrap();
        let error = private_key(file.path(), false).unwrap_err().to_string();
        assert!(
            error.contains("holds no unencrypted PEM private key"),
            "{error}"
        );
        assert!(!error.contains("!!!jcmV0"), "{error}");
    }
}
