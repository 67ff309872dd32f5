//! A hint in the log when a connection's produce throughput is bound by its batching: many
//! Produce requests of small partition batches, several in flight at once, each waiting about
//! one object PUT. Such a
//! client moves at most `max.in.flight x request size` per produce latency (the Java producer's
//! defaults: 5 x partitions x 16 KiB), however idle the broker is, and larger `batch.size` and
//! `linger.ms` are what lifts it (`docs/client-settings.md`).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Produce requests are judged over windows of this length...
const WINDOW: Duration = Duration::from_secs(10);
/// ...holding at least this many requests...
const REQUESTS_MIN: u32 = 50;
/// ...whose partition batches are this big on average, or smaller (the Java producer's
/// default `batch.size` is 16 KiB; a request holds one batch per partition)...
const SMALL_BATCH_BYTES: u64 = 32 << 10;
/// ...that found, on average, at least this many of the connection's earlier produce requests
/// still in flight: the client is waiting on acknowledgements, not on its own data.
const IN_FLIGHT_MEAN_MIN: f64 = 1.0;
/// The whole broker hints at most once per this long, whatever the number of such clients.
const HINT_SPACING: Duration = Duration::from_secs(60);

static LAST_HINT: Mutex<Option<Instant>> = Mutex::new(None);

/// What one connection's produce requests looked like in the current window.
#[derive(Debug)]
pub struct ProduceShape {
    in_flight: Arc<AtomicUsize>,
    window_started: Option<Instant>,
    requests: u32,
    bytes: u64,
    batches: u64,
    in_flight_seen: u64,
    hinted: bool,
}

/// A produce request being served; dropping it takes the request out of the in-flight count.
#[derive(Debug)]
pub struct InFlight(Arc<AtomicUsize>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The shape of a window that earns a hint.
#[derive(Debug, PartialEq)]
pub struct Verdict {
    pub requests: u32,
    pub mean_batch_bytes: u64,
    pub mean_in_flight: f64,
}

impl Default for ProduceShape {
    fn default() -> Self {
        ProduceShape {
            in_flight: Arc::new(AtomicUsize::new(0)),
            window_started: None,
            requests: 0,
            bytes: 0,
            batches: 0,
            in_flight_seen: 0,
            hinted: false,
        }
    }
}

impl ProduceShape {
    /// Counts a produce request of `frame_bytes` holding `batches` partition batches, arriving
    /// at `now`; logs the hint when the window it closes earns one.
    pub fn arrived(
        &mut self,
        frame_bytes: usize,
        batches: usize,
        now: Instant,
        peer: SocketAddr,
        client_id: &str,
    ) -> InFlight {
        if let Some(verdict) = self.observe(frame_bytes, batches, now) {
            hint(&verdict, peer, client_id, now);
        }
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        InFlight(self.in_flight.clone())
    }

    /// The accounting of [`arrived`](Self::arrived), without the log: a verdict once per
    /// connection, for the first window that earns it.
    fn observe(&mut self, frame_bytes: usize, batches: usize, now: Instant) -> Option<Verdict> {
        let started = *self.window_started.get_or_insert(now);
        let mut verdict = None;
        if now.saturating_duration_since(started) >= WINDOW {
            verdict = self.judge();
            self.window_started = Some(now);
            self.requests = 0;
            self.bytes = 0;
            self.batches = 0;
            self.in_flight_seen = 0;
        }
        self.requests = self.requests.saturating_add(1);
        self.bytes = self.bytes.saturating_add(frame_bytes as u64);
        self.batches = self.batches.saturating_add(batches as u64);
        let others = self.in_flight.load(Ordering::Acquire) as u64;
        self.in_flight_seen = self.in_flight_seen.saturating_add(others);
        if verdict.is_some() {
            self.hinted = true;
        }
        verdict
    }

    fn judge(&self) -> Option<Verdict> {
        if self.hinted || self.requests < REQUESTS_MIN {
            return None;
        }
        let requests = u64::from(self.requests);
        let verdict = Verdict {
            requests: self.requests,
            mean_batch_bytes: self.bytes / self.batches.max(1),
            mean_in_flight: self.in_flight_seen as f64 / requests as f64,
        };
        let bound = verdict.mean_batch_bytes <= SMALL_BATCH_BYTES
            && verdict.mean_in_flight >= IN_FLIGHT_MEAN_MIN;
        bound.then_some(verdict)
    }
}

fn hint(verdict: &Verdict, peer: SocketAddr, client_id: &str, now: Instant) {
    {
        let Ok(mut last) = LAST_HINT.lock() else {
            return;
        };
        if last.is_some_and(|at| now.saturating_duration_since(at) < HINT_SPACING) {
            return;
        }
        *last = Some(now);
    }
    tracing::info!(
        %peer,
        client_id,
        requests = verdict.requests,
        mean_batch_bytes = verdict.mean_batch_bytes,
        mean_in_flight = format!("{:.1}", verdict.mean_in_flight),
        "produce throughput is bound by small batches waiting on object-store latency: a \
         larger batch.size and linger.ms raise it (docs/client-settings.md)"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `count` requests of 8 batches of `batch_bytes` each, spread over one window, each
    /// finding `in_flight` others.
    fn feed(
        shape: &mut ProduceShape,
        t0: Instant,
        count: u32,
        batch_bytes: usize,
        in_flight: usize,
    ) {
        let mut held = Vec::new();
        for _ in 0..in_flight {
            shape.in_flight.fetch_add(1, Ordering::AcqRel);
            held.push(InFlight(shape.in_flight.clone()));
        }
        for i in 0..count {
            let now = t0 + WINDOW * i / count;
            let verdict = shape.observe(8 * batch_bytes, 8, now);
            assert_eq!(verdict, None, "request {i} inside the window");
        }
    }

    #[test]
    fn small_pipelined_requests_earn_one_hint_when_their_window_closes() {
        let mut shape = ProduceShape::default();
        let t0 = Instant::now();
        feed(&mut shape, t0, 200, 16 << 10, 4);
        let verdict = shape.observe(100, 1, t0 + WINDOW).expect("a hint");
        assert_eq!(verdict.requests, 200);
        assert_eq!(verdict.mean_batch_bytes, 16 << 10);
        assert!((verdict.mean_in_flight - 4.0).abs() < 1e-9);
        // Once per connection.
        feed(&mut shape, t0 + WINDOW, 200, 16 << 10, 4);
        assert_eq!(shape.observe(100, 1, t0 + WINDOW * 2), None);
    }

    #[test]
    fn large_batches_earn_no_hint() {
        let mut shape = ProduceShape::default();
        let t0 = Instant::now();
        feed(&mut shape, t0, 200, 256 << 10, 4);
        assert_eq!(shape.observe(100, 1, t0 + WINDOW), None);
    }

    #[test]
    fn a_client_that_waits_for_each_ack_earns_no_hint() {
        let mut shape = ProduceShape::default();
        let t0 = Instant::now();
        feed(&mut shape, t0, 200, 1 << 10, 0);
        assert_eq!(shape.observe(100, 1, t0 + WINDOW), None);
    }

    #[test]
    fn a_trickle_of_requests_earns_no_hint() {
        let mut shape = ProduceShape::default();
        let t0 = Instant::now();
        feed(&mut shape, t0, REQUESTS_MIN - 1, 1 << 10, 4);
        assert_eq!(shape.observe(100, 1, t0 + WINDOW), None);
    }

    #[test]
    fn a_request_served_leaves_the_in_flight_count() {
        let mut shape = ProduceShape::default();
        let peer: SocketAddr = ([127, 0, 0, 1], 1).into();
        let first = shape.arrived(10, 1, Instant::now(), peer, "c");
        let second = shape.arrived(10, 1, Instant::now(), peer, "c");
        assert_eq!(shape.in_flight.load(Ordering::Acquire), 2);
        drop(first);
        drop(second);
        assert_eq!(shape.in_flight.load(Ordering::Acquire), 0);
    }
}
