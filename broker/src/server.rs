//! The Kafka listeners: each accepts connections into the broker's shared slots (`slots`: at
//! most `max_connections`, `max_connections_per_ip` from one address, silent connections
//! evicted first), completes the TLS handshake of TLS listeners, and serves the connection
//! with the session the listener gives it. On shutdown every listener stops accepting, lets
//! its connections finish the requests they have read, then returns.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tracing::Instrument;

use crate::connection::budget::Budgets;
use crate::connection::{self, RequestBytes};
use crate::context::{Broker, NodeListener};
use crate::security::{Principal, Session};
use crate::slots::{Slot, Slots};
use crate::tls::{handshake, ServerTls};

/// A listener bound to its socket.
pub struct Bound {
    pub tcp: TcpListener,
    pub listener: Listener,
}

/// What a listener gives its connections.
pub struct Listener {
    pub node: NodeListener,
    /// Set for listeners whose protocol uses TLS.
    pub tls: Option<Arc<ServerTls>>,
}

/// What every listener's connections share.
#[derive(Clone)]
struct Shared {
    broker: Arc<Broker>,
    slots: Arc<Slots>,
    request_bytes: RequestBytes,
}

pub async fn run(listeners: Vec<Bound>, broker: Arc<Broker>, shutdown: watch::Receiver<bool>) {
    storage::allocator::tune();
    let config = &broker.config;
    let shared = Shared {
        slots: Slots::new(config.max_connections, config.max_connections_per_ip),
        request_bytes: Arc::new(Budgets::new(
            config.queued_max_request_bytes,
            config.queued_max_unauthenticated_request_bytes,
            Duration::from_millis(config.frame_stall_timeout_ms),
        )),
        broker: broker.clone(),
    };
    let mut accepting = JoinSet::new();
    for listener in listeners {
        accepting.spawn(accept(listener, shared.clone(), shutdown.clone()));
    }
    while accepting.join_next().await.is_some() {}
}

/// Accepts on one listener until shutdown, then drains its connections.
async fn accept(bound: Bound, shared: Shared, mut shutdown: watch::Receiver<bool>) {
    let Bound { tcp, listener } = bound;
    let listener = Arc::new(listener);
    let mut connections = JoinSet::new();
    loop {
        let accepted = tokio::select! {
            accepted = tcp.accept() => accepted,
            _ = shutdown.changed() => break,
        };
        // Reap finished connections so the set does not grow with the connection history.
        while connections.try_join_next().is_some() {}
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(error) => {
                // Usually EMFILE: back off instead of spinning.
                tracing::warn!(%error, "accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        // Waits only when every slot holds a connection that sent a request; extra clients
        // then wait in the kernel's backlog.
        let slot = tokio::select! {
            slot = shared.slots.admit(peer.ip()) => slot,
            _ = shutdown.changed() => break,
        };
        let slot = match slot {
            Ok(slot) => slot,
            Err(refused) => {
                tracing::info!(%peer, %refused, "connection refused");
                continue;
            }
        };
        tracing::debug!(%peer, listener = %listener.node.name, "connection accepted");
        let (shared, shutdown, listener) = (shared.clone(), shutdown.clone(), listener.clone());
        // Every line logged while serving the connection names it (requests nest their span).
        let span = tracing::info_span!("connection", listener = %listener.node.name, %peer);
        let open_here = crate::metrics::connection_opened(&listener.node.name);
        connections.spawn(
            async move {
                open(stream, peer, &listener, shared, shutdown, slot).await;
                drop(open_here);
                tracing::debug!("connection closed");
            }
            .instrument(span),
        );
    }
    drop(tcp);
    drain(connections, &listener.node.name, &shared.broker).await;
}

/// Serves one accepted connection: at once on a plaintext listener, after the handshake on a
/// TLS one. A connection still handshaking has sent no request: its slot may be taken back.
/// On SASL listeners the session starts as `User:ANONYMOUS` and `connection::serve` runs the
/// SASL exchange before serving anything else.
async fn open(
    stream: TcpStream,
    peer: SocketAddr,
    listener: &Listener,
    shared: Shared,
    mut shutdown: watch::Receiver<bool>,
    mut slot: Slot,
) {
    if let Err(error) = stream.set_nodelay(true) {
        tracing::debug!(%peer, %error, "cannot set nodelay");
    }
    let Listener { node, tls } = listener;
    let session = |principal| Session::new(&node.name, node.protocol, peer, principal);
    let Some(tls) = tls else {
        let session = session(Principal::anonymous());
        let Shared {
            broker,
            request_bytes,
            ..
        } = shared;
        connection::serve(stream, session, broker, shutdown, slot, request_bytes).await;
        return;
    };
    let accepted = tokio::select! {
        accepted = handshake::accept(tls, stream) => accepted,
        _ = slot.evicted() => {
            tracing::debug!(%peer, "closing connection during its tls handshake: slot given to a newer one");
            return;
        }
        _ = shutdown.changed() => return,
    };
    match accepted {
        Ok((stream, principal)) => {
            tracing::debug!(%peer, listener = %node.name, %principal, "tls connection established");
            // On SASL_SSL the SASL exchange names the client, not its certificate (as Kafka).
            let principal = if node.protocol.uses_sasl() {
                Principal::anonymous()
            } else {
                principal
            };
            let Shared {
                broker,
                request_bytes,
                ..
            } = shared;
            let session = session(principal);
            connection::serve(stream, session, broker, shutdown, slot, request_bytes).await;
        }
        Err(error) => tls.failures.log(&node.name, peer, &error),
    }
}

/// Waits up to `shutdown_timeout_ms` for the connections to finish what they read.
async fn drain(mut connections: JoinSet<()>, listener: &str, broker: &Broker) {
    let open = connections.len();
    tracing::info!(
        listener,
        open,
        "listener closed, finishing in-flight requests"
    );
    let timeout = Duration::from_millis(broker.config.shutdown_timeout_ms);
    let drained = tokio::time::timeout(timeout, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            listener,
            remaining = connections.len(),
            "shutdown timeout: aborting connections"
        );
        connections.shutdown().await;
    }
}
