//! A read-rate limit shared by every worker: `read_bytes_per_sec` bounds the sum of all reads,
//! not each worker's own.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Paces reads to a byte rate (a virtual-schedule token bucket: each read books its share of
/// time after the previous bookings; the first read after an idle spell goes at once).
#[derive(Debug)]
pub struct ReadThrottle {
    bytes_per_sec: u64,
    /// When the bookings made so far are paid for.
    booked_until: Mutex<Option<Instant>>,
}

impl ReadThrottle {
    /// `bytes_per_sec == 0` means unlimited.
    pub fn new(bytes_per_sec: u64) -> Self {
        ReadThrottle {
            bytes_per_sec,
            booked_until: Mutex::new(None),
        }
    }

    /// Waits until `bytes` may be read.
    pub async fn acquire(&self, bytes: u64) {
        let wait = self.reserve(bytes, Instant::now());
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
    }

    /// Books `bytes` at `now`; returns how long the caller must wait before reading them.
    pub fn reserve(&self, bytes: u64, now: Instant) -> Duration {
        if self.bytes_per_sec == 0 {
            return Duration::ZERO;
        }
        let cost = Duration::from_secs_f64(bytes as f64 / self.bytes_per_sec as f64);
        // A poisoned lock only means another worker panicked mid-booking; the value is a time.
        let mut booked = self
            .booked_until
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let start = booked.map_or(now, |b| b.max(now));
        *booked = Some(start + cost);
        start - now
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unlimited_throttle_never_waits() {
        let t = ReadThrottle::new(0);
        let now = Instant::now();
        for _ in 0..10 {
            assert_eq!(t.reserve(1 << 30, now), Duration::ZERO);
        }
    }

    #[test]
    fn readers_sharing_a_throttle_together_stay_within_the_rate() {
        let t = ReadThrottle::new(1_000);
        let now = Instant::now();
        // Two workers each asking for 1000 bytes at the same instant: the second waits 1 s,
        // a third 2 s: the sum, not each worker, is paced.
        assert_eq!(t.reserve(1_000, now), Duration::ZERO);
        assert_eq!(t.reserve(1_000, now), Duration::from_secs(1));
        assert_eq!(t.reserve(500, now), Duration::from_secs(2));
        // Later, once the bookings are paid, a read goes at once again.
        let later = now + Duration::from_secs(10);
        assert_eq!(t.reserve(1_000, later), Duration::ZERO);
        assert_eq!(t.reserve(1_000, later), Duration::from_secs(1));
    }

    #[tokio::test]
    async fn acquire_sleeps_for_the_booked_time() {
        let t = ReadThrottle::new(10_000);
        let started = Instant::now();
        t.acquire(1_000).await; // free
        t.acquire(1_000).await; // waits ~100 ms
        t.acquire(1_000).await; // waits ~100 ms more
        assert!(started.elapsed() >= Duration::from_millis(190));
    }
}
