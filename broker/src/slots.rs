//! Connection slots: at most `max_connections` connections at once, and at most
//! `max_connections_per_ip` from one address. When every slot is taken, a new connection
//! takes the slot of the oldest connection that has not yet sent a complete request: such a
//! connection has cost nothing but a socket, so thousands of clients that connect and stay
//! silent cannot lock a working client out. Only when every connection has sent a request
//! does a new one wait for a slot to free up.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{oneshot, Notify};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;

struct Metrics {
    open: Gauge,
    accepted: Counter,
    evicted: Counter,
}

static METRICS: std::sync::LazyLock<Metrics> = std::sync::LazyLock::new(|| {
    let accepted = Counter::default();
    let evicted = Counter::default();
    let mut registry = telemetry::registry::registry();
    registry.register(
        "kafka_server_connections_accepted",
        "Connections given a slot, on every listener",
        accepted.clone(),
    );
    registry.register(
        "kafka_server_connections_evicted",
        "Silent connections closed to give their slot to a new one",
        evicted.clone(),
    );
    drop(registry);
    Metrics {
        open: telemetry::gauge(
            "kafka_server_connections",
            "Open client connections, on every listener (max_connections bounds them)",
        ),
        accepted,
        evicted,
    }
});

/// Registers the connection metrics so that they are listed before the first connection.
pub fn register_metrics() {
    std::sync::LazyLock::force(&METRICS);
}

pub struct Slots {
    max_connections: usize,
    max_per_ip: usize,
    state: Mutex<State>,
    freed: Notify,
}

#[derive(Default)]
struct State {
    open: usize,
    per_ip: HashMap<IpAddr, usize>,
    /// Connections without a complete request yet, oldest first, and how to close each.
    unproven: BTreeMap<u64, oneshot::Sender<()>>,
    next_id: u64,
}

/// Why a connection got no slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("too many connections from this address (max_connections_per_ip)")]
    PerIpLimit,
}

/// A connection's slot, given back when dropped.
pub struct Slot {
    slots: Arc<Slots>,
    id: u64,
    ip: IpAddr,
    /// Resolves when the slot is taken back from a connection that never sent a request.
    evicted: Option<oneshot::Receiver<()>>,
}

impl Slots {
    pub fn new(max_connections: usize, max_per_ip: usize) -> Arc<Slots> {
        Arc::new(Slots {
            max_connections: max_connections.max(1),
            max_per_ip: max_per_ip.max(1),
            state: Mutex::new(State::default()),
            freed: Notify::new(),
        })
    }

    /// A slot for a connection from `ip`: at once if one is free, else after evicting the
    /// oldest silent connection, else once any connection closes.
    pub async fn admit(self: &Arc<Self>, ip: IpAddr) -> Result<Slot, Refused> {
        loop {
            // Registered before the check, so a slot freed in between still wakes us.
            let freed = self.freed.notified();
            {
                let mut state = self.lock();
                if state.per_ip.get(&ip).copied().unwrap_or(0) >= self.max_per_ip {
                    return Err(Refused::PerIpLimit);
                }
                if state.open < self.max_connections {
                    return Ok(self.take(&mut state, ip));
                }
                if let Some((_, evict)) = state.unproven.pop_first() {
                    // Its connection closes and gives the slot back; we wait for that.
                    let _ = evict.send(());
                    if telemetry::enabled() {
                        METRICS.evicted.inc();
                    }
                    tracing::debug!("evicting the oldest connection that sent no request");
                }
            }
            freed.await;
        }
    }

    fn take(self: &Arc<Self>, state: &mut State, ip: IpAddr) -> Slot {
        let id = state.next_id;
        state.next_id += 1;
        state.open += 1;
        if telemetry::enabled() {
            METRICS.open.inc();
            METRICS.accepted.inc();
        }
        *state.per_ip.entry(ip).or_insert(0) += 1;
        let (evict, evicted) = oneshot::channel();
        state.unproven.insert(id, evict);
        Slot {
            slots: self.clone(),
            id,
            ip,
            evicted: Some(evicted),
        }
    }

    pub fn open(&self) -> usize {
        self.lock().open
    }

    // Every change is a few counter updates under the lock: a poisoned lock still holds
    // consistent counts.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Slot {
    /// The connection sent a complete request: it keeps its slot from now on.
    pub fn prove(&mut self) {
        if self.evicted.take().is_some() {
            self.slots.lock().unproven.remove(&self.id);
        }
    }

    /// Resolves once this (still silent) connection must close to give its slot up; never for
    /// a connection that proved itself.
    pub async fn evicted(&mut self) {
        match self.evicted.as_mut() {
            Some(evicted) => {
                if evicted.await.is_err() {
                    // The sender went away without evicting: only `prove` does that.
                    std::future::pending::<()>().await;
                }
            }
            None => std::future::pending::<()>().await,
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut state = self.slots.lock();
        state.open -= 1;
        if telemetry::enabled() {
            METRICS.open.dec();
        }
        state.unproven.remove(&self.id);
        if let Some(n) = state.per_ip.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                state.per_ip.remove(&self.ip);
            }
        }
        drop(state);
        self.slots.freed.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;
    use std::time::Duration;

    const A: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
    const B: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2));

    #[tokio::test]
    async fn a_full_house_evicts_the_oldest_silent_connection() {
        let slots = Slots::new(2, 10);
        let mut first = slots.admit(A).await.unwrap();
        let mut second = slots.admit(A).await.unwrap();
        second.prove();
        let admitting = tokio::spawn({
            let slots = slots.clone();
            async move { slots.admit(B).await }
        });
        // The oldest unproven one is told to go; once it does, the newcomer is in.
        tokio::time::timeout(Duration::from_secs(5), first.evicted())
            .await
            .unwrap();
        drop(first);
        let third = admitting.await.unwrap().unwrap();
        assert_eq!(slots.open(), 2);
        drop((second, third));
        assert_eq!(slots.open(), 0);
    }

    #[tokio::test]
    async fn proven_connections_are_never_evicted_and_a_newcomer_waits() {
        let slots = Slots::new(1, 10);
        let mut only = slots.admit(A).await.unwrap();
        only.prove();
        let waiting = tokio::spawn({
            let slots = slots.clone();
            async move { slots.admit(B).await }
        });
        let evicted = tokio::time::timeout(Duration::from_millis(200), only.evicted()).await;
        assert!(evicted.is_err(), "a proven connection keeps its slot");
        assert!(!waiting.is_finished());
        drop(only);
        assert!(waiting.await.unwrap().is_ok());
    }

    #[tokio::test]
    async fn one_address_gets_at_most_its_share() {
        let slots = Slots::new(10, 2);
        let a1 = slots.admit(A).await.unwrap();
        let _a2 = slots.admit(A).await.unwrap();
        assert_eq!(slots.admit(A).await.err(), Some(Refused::PerIpLimit));
        assert!(slots.admit(B).await.is_ok());
        drop(a1);
        assert!(slots.admit(A).await.is_ok());
    }
}
