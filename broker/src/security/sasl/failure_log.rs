//! One log line per failed authentication (who was attempted, from where, why), at most
//! [`LINES_PER_SECOND`] a second across the broker: a client retrying a bad password in a
//! loop, or a scan, must not flood the log. Lines dropped are counted on the next line written.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};

pub const LINES_PER_SECOND: u64 = 10;
/// Attempted names are client input: cut to this many characters and printed escaped.
const NAME_CHARS_MAX: usize = 128;

#[derive(Debug, Default)]
pub struct FailureLog {
    /// The second (since the epoch) the count below belongs to.
    second: AtomicU64,
    lines_this_second: AtomicU64,
    suppressed: AtomicU64,
}

impl FailureLog {
    /// Logs one failure unless this second's lines are spent; whether it was logged.
    pub fn record(
        &self,
        now_ms: u64,
        peer: SocketAddr,
        mechanism: &str,
        attempted: Option<&str>,
        reason: &str,
    ) -> bool {
        let second = now_ms / 1000;
        if self.second.swap(second, Ordering::AcqRel) != second {
            self.lines_this_second.store(0, Ordering::Release);
        }
        if self.lines_this_second.fetch_add(1, Ordering::AcqRel) >= LINES_PER_SECOND {
            self.suppressed.fetch_add(1, Ordering::AcqRel);
            return false;
        }
        let suppressed = self.suppressed.swap(0, Ordering::AcqRel);
        let principal = attempted.map(|name| {
            let cut: String = name.chars().take(NAME_CHARS_MAX).collect();
            format!("User:{cut:?}")
        });
        tracing::info!(
            %peer,
            mechanism,
            principal = principal.as_deref().unwrap_or("unknown"),
            reason,
            suppressed_since_last = suppressed,
            "sasl authentication failed"
        );
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_limited_per_second_and_resume_after() {
        let log = FailureLog::default();
        let peer: SocketAddr = "127.0.0.1:5000".parse().unwrap();
        let logged = (0..25)
            .filter(|_| log.record(1_000_500, peer, "PLAIN", Some("alice"), "wrong password"))
            .count();
        assert_eq!(logged as u64, LINES_PER_SECOND);
        assert_eq!(log.suppressed.load(Ordering::Acquire), 15);
        assert!(log.record(1_001_000, peer, "PLAIN", None, "malformed"));
        assert_eq!(log.suppressed.load(Ordering::Acquire), 0);
    }
}
