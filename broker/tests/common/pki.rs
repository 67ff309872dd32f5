//! Test certificates made in the test (rcgen): a CA, server certificates for localhost, client
//! certificates (valid, expired, from another CA), written to files the broker reads, and
//! rustls clients that present them.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::rustls::crypto::aws_lc_rs;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio_rustls::rustls::{self, ClientConfig, RootCertStore};
use tokio_rustls::TlsConnector;

pub struct Ca {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

/// A certificate and its key.
pub struct Issued {
    pub cert_pem: String,
    pub key_pem: String,
    pub der: CertificateDer<'static>,
    /// The common name it was issued to.
    cn: String,
}

impl Issued {
    pub fn cn(&self) -> String {
        self.cn.clone()
    }
}

impl Ca {
    pub fn new(name: &str) -> Ca {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap();
        Ca { issuer }
    }

    pub fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// A server certificate for `localhost` and 127.0.0.1, with `CN=<name>`.
    pub fn server(&self, name: &str) -> Issued {
        let mut params =
            CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        self.sign(params)
    }

    /// A client certificate whose subject is `CN=<cn>,OU=eng,O=acme` (RFC 2253 order).
    pub fn client(&self, cn: &str) -> Issued {
        self.sign(client_params(cn))
    }

    /// A client certificate that expired yesterday.
    pub fn expired_client(&self, cn: &str) -> Issued {
        let mut params = client_params(cn);
        params.not_before = rcgen::date_time_ymd(2020, 1, 1);
        params.not_after = rcgen::date_time_ymd(2021, 1, 1);
        self.sign(params)
    }

    fn sign(&self, params: CertificateParams) -> Issued {
        let cn = match params.distinguished_name.get(&DnType::CommonName) {
            Some(rcgen::DnValue::Utf8String(cn)) => cn.clone(),
            _ => String::new(),
        };
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        Issued {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            der: cert.der().clone(),
            cn,
        }
    }
}

fn client_params(cn: &str) -> CertificateParams {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    // Without rcgen's default common name, which would stay first.
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(DnType::OrganizationName, "acme");
    params
        .distinguished_name
        .push(DnType::OrganizationalUnitName, "eng");
    params.distinguished_name.push(DnType::CommonName, cn);
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    params
}

/// The broker's TLS files in a directory of their own; the key is written mode 600.
pub struct Files {
    pub dir: tempfile::TempDir,
}

impl Files {
    pub fn write(ca: &Ca, server: &Issued) -> Files {
        let files = Files {
            dir: tempfile::tempdir().unwrap(),
        };
        std::fs::write(files.ca(), ca.pem()).unwrap();
        files.replace(server);
        files
    }

    /// Writes a new certificate and key in place (what a certificate rotation does).
    pub fn replace(&self, server: &Issued) {
        std::fs::write(self.cert(), &server.cert_pem).unwrap();
        write_key(&self.key(), &server.key_pem);
    }

    pub fn cert(&self) -> PathBuf {
        self.dir.path().join("server.pem")
    }

    pub fn key(&self) -> PathBuf {
        self.dir.path().join("server-key.pem")
    }

    pub fn ca(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// `--ssl-cert-file` and `--ssl-key-file` (and `--ssl-ca-file`) as broker arguments.
    pub fn args(&self) -> Vec<String> {
        [
            ("--ssl-cert-file", self.cert()),
            ("--ssl-key-file", self.key()),
            ("--ssl-ca-file", self.ca()),
        ]
        .into_iter()
        .flat_map(|(flag, path)| [flag.to_string(), path.display().to_string()])
        .collect()
    }
}

pub fn write_key(path: &Path, pem: &str) {
    std::fs::write(path, pem).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// A client trusting `ca`, presenting `identity` if given, speaking only `version` if given.
pub fn client_config(
    ca: &Ca,
    identity: Option<&Issued>,
    version: Option<&'static rustls::SupportedProtocolVersion>,
) -> Arc<ClientConfig> {
    let mut roots = RootCertStore::empty();
    roots.add(ca.issuer.der().clone()).unwrap();
    let versions = match version {
        Some(version) => vec![version],
        None => vec![&rustls::version::TLS13, &rustls::version::TLS12],
    };
    let builder = ClientConfig::builder_with_provider(Arc::new(aws_lc_rs::default_provider()))
        .with_protocol_versions(&versions)
        .unwrap()
        .with_root_certificates(roots);
    let config = match identity {
        Some(identity) => {
            let key = PrivateKeyDer::from_pem_slice(identity.key_pem.as_bytes()).unwrap();
            builder
                .with_client_auth_cert(vec![identity.der.clone()], key)
                .unwrap()
        }
        None => builder.with_no_client_auth(),
    };
    Arc::new(config)
}

/// A TLS connection to `addr` as `localhost`; the error is the handshake's.
pub async fn connect(
    addr: std::net::SocketAddr,
    config: Arc<ClientConfig>,
) -> std::io::Result<TlsStream<TcpStream>> {
    let tcp = TcpStream::connect(addr).await?;
    let name = ServerName::try_from("localhost").unwrap();
    TlsConnector::from(config).connect(name, tcp).await
}
