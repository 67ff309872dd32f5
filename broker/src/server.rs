//! The Kafka listener: accepts connections into their slots (`slots`: at most
//! `max_connections`, `max_connections_per_ip` from one address, silent connections evicted
//! first) and, on shutdown, stops accepting, lets every connection finish the requests it has
//! read, then returns.

use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinSet;

use crate::connection;
use crate::context::Broker;
use crate::slots::Slots;

pub async fn run(listener: TcpListener, broker: Arc<Broker>, mut shutdown: watch::Receiver<bool>) {
    storage::allocator::tune();
    let config = &broker.config;
    let slots = Slots::new(config.max_connections, config.max_connections_per_ip);
    let request_bytes = Arc::new(Semaphore::new(config.queued_max_request_bytes));
    let mut connections = JoinSet::new();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = shutdown.changed() => break,
        };
        // Reap finished connections so the set does not grow with the connection history.
        while connections.try_join_next().is_some() {}
        match accepted {
            Ok((stream, peer)) => {
                // Waits only when every slot holds a connection that sent a request; extra
                // clients then wait in the kernel's backlog.
                let slot = tokio::select! {
                    slot = slots.admit(peer.ip()) => slot,
                    _ = shutdown.changed() => break,
                };
                let slot = match slot {
                    Ok(slot) => slot,
                    Err(refused) => {
                        tracing::info!(%peer, %refused, "connection refused");
                        continue;
                    }
                };
                tracing::debug!(%peer, "connection accepted");
                let broker = broker.clone();
                let shutdown = shutdown.clone();
                let request_bytes = request_bytes.clone();
                connections.spawn(async move {
                    connection::serve(stream, peer, broker, shutdown, slot, request_bytes).await;
                    tracing::debug!(%peer, "connection closed");
                });
            }
            Err(error) => {
                // Usually EMFILE: back off instead of spinning.
                tracing::warn!(%error, "accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    drop(listener);
    let open = connections.len();
    tracing::info!(open, "listener closed, finishing in-flight requests");
    let timeout = Duration::from_millis(broker.config.shutdown_timeout_ms);
    let drained = tokio::time::timeout(timeout, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            remaining = connections.len(),
            "shutdown timeout: aborting connections"
        );
        connections.shutdown().await;
    }
}
