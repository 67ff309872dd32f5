//! The accept loop every HTTP listener of ours runs: bounded connections, each with a life cap.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};

/// How one listener is bounded.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds {
    /// Names the listener in logs (its setting).
    pub name: &'static str,
    /// Connections open at once; one more is closed at accept.
    pub connections_max: usize,
    /// A connection is closed after this long, whatever it is doing.
    pub lifetime_max: Duration,
}

/// Accepts until `shutdown` turns true, serving each connection with `serve` in a task of its
/// own within `bounds`.
pub(crate) async fn accept_loop<F, Fut>(
    listener: &TcpListener,
    bounds: Bounds,
    mut shutdown: watch::Receiver<bool>,
    serve: F,
) where
    F: Fn(TcpStream, SocketAddr) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let permits = Arc::new(Semaphore::new(bounds.connections_max));
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = shutdown.wait_for(|stop| *stop) => return,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(error) => {
                tracing::warn!(listener = bounds.name, %error, "http accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            tracing::debug!(listener = bounds.name, %peer, "http connection refused: too many open");
            continue;
        };
        let served = serve(stream, peer);
        tokio::spawn(async move {
            let _ = tokio::time::timeout(bounds.lifetime_max, served).await;
            drop(permit);
        });
    }
}
