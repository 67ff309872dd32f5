//! The HTTP listener of `--http-listen`: `GET /metrics` (OpenMetrics text), `/healthz` (the
//! process answers) and `/readyz` ([`Readiness`]). Bounded like the Kafka listener: at most
//! [`CONNECTIONS_MAX`] at once (more are closed at accept), a header read timeout and a cap on
//! each connection's life, so scrapers cannot pile up. [`HttpSecurity`] adds TLS and guards
//! `/metrics` with HTTP Basic authentication ([`access`]).

mod accept;
pub mod access;
pub mod router;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::HeaderValue;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use crate::ready::Readiness;
pub use access::{Access, BasicCredentials, Caller, HttpSecurity, MetricsAccess, TlsSource};

pub const CONNECTIONS_MAX: usize = 64;
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(5);
const CONNECTION_LIFETIME_MAX: Duration = Duration::from_secs(60);
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
const BASIC_CHALLENGE: &str = "Basic realm=\"metrics\", charset=\"UTF-8\"";

#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("cannot listen on {addr} (http_listen): {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
}

/// Where the listener binds (`http_listen`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpListen {
    Off,
    /// The default address: when it is taken the process runs without the listener.
    Default(SocketAddr),
    /// Set explicitly: the process does not start without it.
    Explicit(SocketAddr),
}

/// Binds and serves `listen` until `shutdown`; `Ok(None)` when off, or when the default
/// address is taken (logged).
pub async fn start(
    listen: HttpListen,
    readiness: Readiness,
    security: HttpSecurity,
    shutdown: watch::Receiver<bool>,
) -> Result<Option<(SocketAddr, tokio::task::JoinHandle<()>)>, HttpError> {
    let (addr, explicit) = match listen {
        HttpListen::Off => return Ok(None),
        HttpListen::Default(addr) => (addr, false),
        HttpListen::Explicit(addr) => (addr, true),
    };
    let scheme = if security.tls.is_some() {
        "https"
    } else {
        "http"
    };
    let basic = security.metrics_access.is_some();
    let server = match HttpServer::bind(addr, readiness, security).await {
        Ok(server) => server,
        Err(error) if !explicit => {
            tracing::warn!(%error, "no metrics listener: its default address is taken; set http_listen");
            return Ok(None);
        }
        Err(error) => return Err(error),
    };
    let bound = server.local_addr().unwrap_or(addr);
    tracing::info!(addr = %bound, scheme, basic_auth = basic, "http listening: /metrics /healthz /readyz");
    Ok(Some((bound, tokio::spawn(server.run(shutdown)))))
}

/// A bound listener; [`HttpServer::run`] serves it until `shutdown` turns true.
pub struct HttpServer {
    listener: TcpListener,
    served: Arc<Served>,
}

/// What every connection answers with.
struct Served {
    readiness: Readiness,
    security: HttpSecurity,
}

impl HttpServer {
    pub async fn bind(
        addr: SocketAddr,
        readiness: Readiness,
        security: HttpSecurity,
    ) -> Result<Self, HttpError> {
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| HttpError::Bind { addr, source })?;
        Ok(HttpServer {
            listener,
            served: Arc::new(Served {
                readiness,
                security,
            }),
        })
    }

    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.listener.local_addr().ok()
    }

    pub async fn run(self, shutdown: watch::Receiver<bool>) {
        let bounds = accept::Bounds {
            name: "http_listen",
            connections_max: CONNECTIONS_MAX,
            lifetime_max: CONNECTION_LIFETIME_MAX,
        };
        let served = self.served.clone();
        accept::accept_loop(&self.listener, bounds, shutdown, move |stream, peer| {
            let served = served.clone();
            async move { served.connection(stream, peer).await }
        })
        .await;
    }
}

impl Served {
    /// Serves one connection, over TLS when configured (the handshake bounded in time).
    async fn connection(self: Arc<Self>, stream: TcpStream, peer: SocketAddr) {
        let Some(tls) = self.security.tls.clone() else {
            return self.serve(stream, peer).await;
        };
        let handshake =
            tokio::time::timeout(tls.handshake_timeout(), tls.acceptor().accept(stream));
        match handshake.await {
            Ok(Ok(stream)) => self.serve(stream, peer).await,
            Ok(Err(error)) => tracing::debug!(%peer, %error, "https handshake failed"),
            Err(_) => tracing::debug!(%peer, "https handshake timed out"),
        }
    }

    async fn serve<S>(self: Arc<Self>, stream: S, peer: SocketAddr)
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let service = hyper::service::service_fn(move |request| {
            let served = self.clone();
            async move { Ok::<_, Infallible>(served.answer(&request, peer).await) }
        });
        let _ = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(HEADER_READ_TIMEOUT)
            .serve_connection(TokioIo::new(stream), service)
            .await;
    }

    async fn answer(&self, request: &Request<Incoming>, peer: SocketAddr) -> Response<Full<Bytes>> {
        if request.method() != Method::GET && request.method() != Method::HEAD {
            return plain(StatusCode::METHOD_NOT_ALLOWED, "only GET\n".into());
        }
        if request.uri().path() == "/metrics" {
            if let Some(refused) = self.refuse_metrics(request, peer).await {
                return refused;
            }
        }
        answer(request, &self.readiness).await
    }

    /// The answer when the peer may not read `/metrics`.
    async fn refuse_metrics(
        &self,
        request: &Request<Incoming>,
        peer: SocketAddr,
    ) -> Option<Response<Full<Bytes>>> {
        let access = self.security.metrics_access.as_ref()?;
        let credentials = request
            .headers()
            .get(hyper::header::AUTHORIZATION)
            .and_then(|value| BasicCredentials::parse(value.as_bytes()));
        match access.check(credentials, peer).await {
            Access::Granted => None,
            Access::Unauthenticated => {
                let mut refused =
                    plain(StatusCode::UNAUTHORIZED, "authentication required\n".into());
                refused.headers_mut().insert(
                    hyper::header::WWW_AUTHENTICATE,
                    HeaderValue::from_static(BASIC_CHALLENGE),
                );
                Some(refused)
            }
            Access::Forbidden => Some(plain(StatusCode::FORBIDDEN, "not authorized\n".into())),
        }
    }
}

async fn answer(request: &Request<Incoming>, readiness: &Readiness) -> Response<Full<Bytes>> {
    match request.uri().path() {
        "/metrics" => match crate::encode() {
            Ok(text) => with_type(StatusCode::OK, text, OPENMETRICS),
            Err(_) => plain(
                StatusCode::INTERNAL_SERVER_ERROR,
                "encoding failed\n".into(),
            ),
        },
        "/healthz" => plain(StatusCode::OK, "ok\n".into()),
        "/readyz" => {
            let report = readiness.run().await;
            if report.ready() {
                plain(StatusCode::OK, "ready\n".into())
            } else {
                let reasons: String = report
                    .failures
                    .iter()
                    .map(|(name, reason)| format!("{name}: {reason}\n"))
                    .collect();
                plain(
                    StatusCode::SERVICE_UNAVAILABLE,
                    format!("not ready\n{reasons}"),
                )
            }
        }
        _ => plain(
            StatusCode::NOT_FOUND,
            "not found: /metrics, /healthz, /readyz\n".into(),
        ),
    }
}

fn plain(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    with_type(status, body, "text/plain; charset=utf-8")
}

fn with_type(status: StatusCode, body: String, content_type: &str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    if let Ok(value) = HeaderValue::from_str(content_type) {
        response
            .headers_mut()
            .insert(hyper::header::CONTENT_TYPE, value);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn get(addr: SocketAddr, path: &str) -> String {
        get_with(addr, path, "").await
    }

    /// The whole answer to `GET path` with `headers` (each ending in CRLF).
    async fn get_with(addr: SocketAddr, path: &str, headers: &str) -> String {
        let mut stream = tokio::net::TcpStream::connect(addr)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let request =
            format!("GET {path} HTTP/1.1\r\nHost: x\r\n{headers}Connection: close\r\n\r\n");
        stream
            .write_all(request.as_bytes())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let mut text = String::new();
        stream
            .read_to_string(&mut text)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        text
    }

    #[tokio::test]
    async fn health_readiness_and_metrics_are_served() {
        let ready = Arc::new(std::sync::atomic::AtomicBool::new(true));
        let flag = ready.clone();
        let readiness = Readiness::new().check("metastore", move || {
            let up = flag.load(std::sync::atomic::Ordering::Relaxed);
            async move {
                if up {
                    Ok(())
                } else {
                    Err("stopped".to_string())
                }
            }
        });
        let localhost = SocketAddr::from(([127, 0, 0, 1], 0));
        let server = HttpServer::bind(localhost, readiness, HttpSecurity::default())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let addr = server.local_addr().unwrap_or(localhost);
        let (stop, stopped) = watch::channel(false);
        let serving = tokio::spawn(server.run(stopped));
        assert!(get(addr, "/healthz").await.starts_with("HTTP/1.1 200"));
        assert!(get(addr, "/readyz").await.starts_with("HTTP/1.1 200"));
        ready.store(false, std::sync::atomic::Ordering::Relaxed);
        let unready = get(addr, "/readyz").await;
        assert!(unready.starts_with("HTTP/1.1 503"), "{unready}");
        assert!(unready.contains("metastore: stopped"), "{unready}");
        let metrics = get(addr, "/metrics").await;
        assert!(metrics.contains("openmetrics-text"), "{metrics}");
        assert!(metrics.trim_end().ends_with("# EOF"), "{metrics}");
        assert!(get(addr, "/nothing").await.starts_with("HTTP/1.1 404"));
        let _ = stop.send(true);
        let _ = serving.await;
    }

    /// Grants `alice:right`, forbids `bob:right`, refuses everything else.
    struct Users;

    impl MetricsAccess for Users {
        fn check(
            &self,
            credentials: Option<BasicCredentials>,
            _peer: SocketAddr,
        ) -> futures::future::BoxFuture<'_, Access> {
            let access = match credentials {
                Some(c) if c.password == b"right" && c.user == "alice" => Access::Granted,
                Some(c) if c.password == b"right" && c.user == "bob" => Access::Forbidden,
                _ => Access::Unauthenticated,
            };
            Box::pin(async move { access })
        }
    }

    async fn get_as(addr: SocketAddr, path: &str, user_password: &str) -> String {
        use base64::Engine;
        let token = base64::engine::general_purpose::STANDARD.encode(user_password);
        get_with(addr, path, &format!("Authorization: Basic {token}\r\n")).await
    }

    #[tokio::test]
    async fn metrics_behind_basic_auth_challenge_strangers_refuse_the_unauthorized_and_leave_health_open(
    ) {
        let localhost = SocketAddr::from(([127, 0, 0, 1], 0));
        let security = HttpSecurity {
            tls: None,
            metrics_access: Some(Arc::new(Users)),
        };
        let server = HttpServer::bind(localhost, Readiness::new(), security)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let addr = server.local_addr().unwrap_or(localhost);
        let (stop, stopped) = watch::channel(false);
        let serving = tokio::spawn(server.run(stopped));
        let anonymous = get(addr, "/metrics").await;
        assert!(anonymous.starts_with("HTTP/1.1 401"), "{anonymous}");
        assert!(
            anonymous
                .to_lowercase()
                .contains("www-authenticate: basic realm="),
            "{anonymous}"
        );
        assert!(!anonymous.contains("# EOF"), "{anonymous}");
        let wrong = get_as(addr, "/metrics", "alice:wrong").await;
        assert!(wrong.starts_with("HTTP/1.1 401"), "{wrong}");
        let forbidden = get_as(addr, "/metrics", "bob:right").await;
        assert!(forbidden.starts_with("HTTP/1.1 403"), "{forbidden}");
        let granted = get_as(addr, "/metrics", "alice:right").await;
        assert!(granted.starts_with("HTTP/1.1 200"), "{granted}");
        assert!(granted.trim_end().ends_with("# EOF"), "{granted}");
        assert!(get(addr, "/healthz").await.starts_with("HTTP/1.1 200"));
        assert!(get(addr, "/readyz").await.starts_with("HTTP/1.1 200"));
        let _ = stop.send(true);
        let _ = serving.await;
    }
}
