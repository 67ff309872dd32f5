//! Wall-clock time behind a trait, so that tests and the engine simulation control it. Only
//! timestamps come from here (record append times, refresh ages); waits use tokio's timers,
//! which a paused tokio runtime controls in the same tests.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub trait Clock: Send + Sync + 'static {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> u64;
}

/// The system's wall clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        system_now_ms()
    }
}

/// Milliseconds since the Unix epoch by the system clock (0 before 1970).
pub fn system_now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, duration_ms)
}

/// Whole milliseconds of a duration, saturating (at more than 500 million years).
pub fn duration_ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The system clock as a shared handle, the default everywhere.
pub fn system() -> Arc<dyn Clock> {
    Arc::new(SystemClock)
}

/// A clock that only moves when told to.
#[derive(Debug, Default)]
pub struct ManualClock {
    now_ms: AtomicU64,
}

impl ManualClock {
    pub fn new(now_ms: u64) -> ManualClock {
        ManualClock {
            now_ms: AtomicU64::new(now_ms),
        }
    }

    pub fn advance_ms(&self, by_ms: u64) {
        self.now_ms.fetch_add(by_ms, Ordering::SeqCst);
    }

    pub fn set_ms(&self, now_ms: u64) {
        self.now_ms.store(now_ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.now_ms.load(Ordering::SeqCst)
    }
}

/// Tokio's clock read as wall time from `epoch_ms`: in a paused tokio runtime (the engine
/// simulation) timestamps and timers then move together, and only when the runtime says so.
#[derive(Debug)]
pub struct TokioClock {
    start: tokio::time::Instant,
    epoch_ms: u64,
}

impl TokioClock {
    pub fn new(epoch_ms: u64) -> TokioClock {
        TokioClock {
            start: tokio::time::Instant::now(),
            epoch_ms,
        }
    }
}

impl Clock for TokioClock {
    fn now_ms(&self) -> u64 {
        let elapsed = duration_ms(self.start.elapsed());
        self.epoch_ms.saturating_add(elapsed)
    }
}
