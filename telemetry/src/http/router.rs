//! A listener serving an axum router (the schema registry's, the Iceberg REST catalog's):
//! HTTP/1.1 over hyper, TLS when the process gives a certificate, and bounds: at most
//! [`CONNECTIONS_MAX`] connections, a header read timeout, a cap on each connection's life.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use super::TlsSource;
use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

pub const CONNECTIONS_MAX: usize = 256;
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
const CONNECTION_LIFETIME_MAX: Duration = Duration::from_secs(300);

/// The peer of a connection, handed to the router in each request's extensions.
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub SocketAddr);

#[derive(Debug, thiserror::Error)]
#[error("cannot listen on {addr} ({setting}): {source}")]
pub struct BindError {
    addr: SocketAddr,
    setting: &'static str,
    source: std::io::Error,
}

/// A bound listener.
pub struct Server {
    /// The setting that names the address, in errors and logs.
    setting: &'static str,
    listener: TcpListener,
    router: Router,
    tls: Option<Arc<dyn TlsSource>>,
}

impl Server {
    pub async fn bind(
        setting: &'static str,
        addr: SocketAddr,
        router: Router,
        tls: Option<Arc<dyn TlsSource>>,
    ) -> Result<Server, BindError> {
        let listener = TcpListener::bind(addr).await.map_err(|source| BindError {
            addr,
            setting,
            source,
        })?;
        Ok(Server {
            setting,
            listener,
            router,
            tls,
        })
    }

    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.listener.local_addr().ok()
    }

    /// Serves until `shutdown` turns true.
    pub async fn run(self, shutdown: watch::Receiver<bool>) {
        let bounds = super::accept::Bounds {
            name: self.setting,
            connections_max: CONNECTIONS_MAX,
            lifetime_max: CONNECTION_LIFETIME_MAX,
        };
        let (router, tls) = (self.router.clone(), self.tls.clone());
        super::accept::accept_loop(&self.listener, bounds, shutdown, move |stream, peer| {
            connection(stream, peer, router.clone(), tls.clone())
        })
        .await;
    }
}

async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    router: Router,
    tls: Option<Arc<dyn TlsSource>>,
) {
    let Some(tls) = tls else {
        return serve(stream, peer, router).await;
    };
    let handshake = tokio::time::timeout(tls.handshake_timeout(), tls.acceptor().accept(stream));
    match handshake.await {
        Ok(Ok(stream)) => serve(stream, peer, router).await,
        Ok(Err(error)) => tracing::debug!(%peer, %error, "http tls handshake failed"),
        Err(_) => tracing::debug!(%peer, "http tls handshake timed out"),
    }
}

async fn serve<S>(stream: S, peer: SocketAddr, router: Router)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let router = router.layer(axum::Extension(Peer(peer)));
    let service = TowerToHyperService::new(router);
    let _ = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .serve_connection(TokioIo::new(stream), service)
        .await;
}
