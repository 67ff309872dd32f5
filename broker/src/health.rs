//! What `/readyz` checks on a broker: the MetaStore and the object store answer
//! (`storage::health`), and the first Kafka listener accepts a connection, so "ready" means a
//! client request could be served.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use metastore::MetaStore;
use object_store::ObjectStore;
use telemetry::ready::Readiness;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

pub fn readiness(
    meta: Arc<dyn MetaStore>,
    objects: Arc<dyn ObjectStore>,
    listener: SocketAddr,
) -> Readiness {
    storage::health::readiness(meta, objects).check("listener", move || listener_accepts(listener))
}

async fn listener_accepts(addr: SocketAddr) -> Result<(), String> {
    let addr = if addr.ip().is_unspecified() {
        SocketAddr::new(std::net::Ipv4Addr::LOCALHOST.into(), addr.port())
    } else {
        addr
    };
    match tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::TcpStream::connect(addr)).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(error)) => Err(format!("{addr}: {error}")),
        Err(_) => Err(format!("{addr}: no accept within 1 s")),
    }
}
