//! Kafka's quota arithmetic: a rate over `count` samples of `size` each (Kafka's
//! `quota.window.num`, default 11, and `quota.window.size.seconds`, default 1), measured over at
//! least `count - 1` windows, and the throttle time that brings an observed rate back to its
//! quota: `(observed - quota) / quota * window span`, at most one window (`ClientQuotaManager`).

use std::time::{Duration, Instant};

/// Kafka's `quota.window.size.seconds` and `quota.window.num`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuotaWindow {
    pub size: Duration,
    pub count: usize,
}

impl Default for QuotaWindow {
    fn default() -> Self {
        QuotaWindow {
            size: Duration::from_secs(1),
            count: 11,
        }
    }
}

/// One quota entity's samples.
#[derive(Debug)]
pub struct Rate {
    window: QuotaWindow,
    /// `(start, amount)` of each sample, oldest first; at most `window.count`.
    samples: Vec<(Instant, f64)>,
}

impl Rate {
    pub fn new(window: QuotaWindow) -> Rate {
        Rate {
            window,
            samples: Vec::with_capacity(window.count),
        }
    }

    /// Adds `amount` at `now` and returns how long the entity must wait, given `quota` per second.
    pub fn record(&mut self, amount: f64, now: Instant, quota: f64) -> Duration {
        self.roll(now);
        match self.samples.last_mut() {
            Some((start, total)) if now.duration_since(*start) < self.window.size => {
                *total += amount
            }
            _ => self.samples.push((now, amount)),
        }
        if self.samples.len() > self.window.count {
            self.samples.remove(0);
        }
        let span = self.span(now);
        let observed = self.samples.iter().map(|(_, a)| a).sum::<f64>() / span.as_secs_f64();
        if observed <= quota || quota <= 0.0 {
            return Duration::ZERO;
        }
        // Kafka bounds one throttle by one window: a client over its quota asks again then.
        span.mul_f64((observed - quota) / quota)
            .min(self.window.size)
    }

    /// Like [`Rate::record`], but a throttled amount is taken back out: Kafka's fetch, which
    /// answers a throttled fetch empty and so uncounts the bytes it did not send.
    pub fn record_unless_throttled(&mut self, amount: f64, now: Instant, quota: f64) -> Duration {
        let throttle = self.record(amount, now, quota);
        if !throttle.is_zero() {
            self.unrecord(amount);
        }
        throttle
    }

    /// Takes back `amount` recorded last: a fetch answered empty for another quota.
    pub fn unrecord(&mut self, amount: f64) {
        if let Some((_, total)) = self.samples.last_mut() {
            *total -= amount;
        }
    }

    fn horizon(&self) -> Duration {
        self.window.size * u32::try_from(self.window.count).unwrap_or(u32::MAX)
    }

    /// Drops samples that have left the measured span.
    fn roll(&mut self, now: Instant) {
        let horizon = self.horizon();
        self.samples
            .retain(|(start, _)| now.duration_since(*start) < horizon);
    }

    /// From the oldest sample to now, and never less than `count - 1` windows (Kafka's
    /// `Rate.windowSize`), so a first burst is not read as an enormous rate.
    fn span(&self, now: Instant) -> Duration {
        let full = self.window.count.saturating_sub(1).max(1);
        let min = self.window.size * u32::try_from(full).unwrap_or(u32::MAX);
        let elapsed = self
            .samples
            .first()
            .map_or(Duration::ZERO, |(s, _)| now.duration_since(*s));
        elapsed.max(min)
    }

    pub fn is_idle(&self, now: Instant) -> bool {
        let horizon = self.horizon();
        self.samples
            .last()
            .is_none_or(|(start, _)| now.duration_since(*start) >= horizon)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traffic_under_the_quota_is_not_throttled() {
        let mut rate = Rate::new(QuotaWindow::default());
        let start = Instant::now();
        for second in 0..30 {
            let at = start + Duration::from_secs(second);
            assert_eq!(rate.record(900.0, at, 1000.0), Duration::ZERO);
        }
    }

    #[test]
    fn a_small_excess_waits_in_proportion_to_it() {
        let mut rate = Rate::new(QuotaWindow::default());
        // 10,500 bytes over a 10 s span is 5% over a 1,000 B/s quota: wait 5% of the span.
        let throttle = rate.record(10_500.0, Instant::now(), 1000.0);
        assert_eq!(throttle, Duration::from_millis(500));
    }

    #[test]
    fn a_throttle_is_at_most_one_window() {
        let mut rate = Rate::new(QuotaWindow::default());
        let throttle = rate.record(1e12, Instant::now(), 1.0);
        assert_eq!(throttle, Duration::from_secs(1));
    }

    #[test]
    fn a_throttled_amount_that_was_not_sent_is_not_counted() {
        let mut rate = Rate::new(QuotaWindow::default());
        let now = Instant::now();
        let throttle = rate.record_unless_throttled(20_000.0, now, 1000.0);
        assert!(!throttle.is_zero());
        // Nothing was counted: 9,000 bytes over the 10 s span are under the quota.
        assert_eq!(rate.record(9_000.0, now, 1000.0), Duration::ZERO);
    }

    #[test]
    fn a_client_that_waits_its_throttles_averages_its_quota() {
        let mut rate = Rate::new(QuotaWindow::default());
        let start = Instant::now();
        let mut now = start;
        let mut sent = 0.0;
        while now.duration_since(start) < Duration::from_secs(300) {
            let wait = rate.record(10_000.0, now, 50_000.0);
            sent += 10_000.0;
            now += wait.max(Duration::from_millis(10));
        }
        let average = sent / now.duration_since(start).as_secs_f64();
        assert!((average - 50_000.0).abs() / 50_000.0 < 0.1, "{average}");
    }
}
