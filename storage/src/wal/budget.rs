//! The PUT budget of the WAL writer: when the buffer is not yet a full segment, the flusher may
//! start an object only once `1 / write_buffer_puts_per_sec_max` has passed since the last one,
//! so an idle writer flushes at once and a busy one lets objects grow instead of paying for
//! more PUTs. Size-triggered flushes do not wait for the budget (a full segment is the cheapest
//! object there is); they only push the next budgeted flush back by one spacing.
//!
//! Time is tokio's, so a paused runtime controls it in tests.

use std::time::Duration;

use tokio::time::Instant;

/// Why the flusher cuts the buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// A segment's worth (`write_buffer_size`) or `write_buffer_flush_size` is pending.
    Size,
    /// Something is pending and the budget allows a PUT.
    Budget,
    /// The writer is shutting down: everything goes out.
    Closing,
}

/// At most one budgeted object start per `spacing`.
#[derive(Debug)]
pub struct PutBudget {
    spacing: Duration,
    /// The earliest time the next budgeted flush may start; `None` before the first flush.
    next_at: Option<Instant>,
}

impl PutBudget {
    /// A budget of `puts_per_sec` (at least 1) object starts per second; `None` is no budget:
    /// a flush may always go.
    pub fn new(puts_per_sec: Option<u64>) -> PutBudget {
        let spacing = puts_per_sec.map_or(Duration::ZERO, |n| {
            Duration::from_secs(1) / u32::try_from(n.max(1)).unwrap_or(u32::MAX)
        });
        PutBudget {
            spacing,
            next_at: None,
        }
    }

    /// How long a budgeted flush must still wait at `now` (zero: it may go).
    pub fn wait(&self, now: Instant) -> Duration {
        self.next_at
            .map_or(Duration::ZERO, |at| at.saturating_duration_since(now))
    }

    /// Records a cut of `objects` objects at `now`. A budgeted cut of several objects (more
    /// streams than one object takes) spends one spacing per object; a size-triggered cut only
    /// defers the next budgeted flush by one spacing, so a burst of full segments leaves no
    /// debt that would hold back small flushes once the load drops.
    pub fn spend(&mut self, now: Instant, trigger: Trigger, objects: usize) {
        let charged = match trigger {
            Trigger::Budget => u32::try_from(objects.max(1)).unwrap_or(u32::MAX),
            Trigger::Size | Trigger::Closing => 1,
        };
        let candidate = now + self.spacing.saturating_mul(charged);
        self.next_at = Some(self.next_at.map_or(candidate, |at| at.max(candidate)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_idle_budget_lets_the_first_flush_go_at_once() {
        let budget = PutBudget::new(Some(4));
        assert_eq!(budget.wait(Instant::now()), Duration::ZERO);
    }

    #[test]
    fn a_flush_defers_the_next_by_one_spacing_and_no_more() {
        let mut budget = PutBudget::new(Some(4));
        let t0 = Instant::now();
        budget.spend(t0, Trigger::Budget, 1);
        assert_eq!(budget.wait(t0), Duration::from_millis(250));
        assert_eq!(
            budget.wait(t0 + Duration::from_millis(100)),
            Duration::from_millis(150)
        );
        // Long idle: nothing is owed, and the next flush goes at once.
        assert_eq!(budget.wait(t0 + Duration::from_secs(10)), Duration::ZERO);
    }

    #[test]
    fn budgeted_flushes_never_exceed_the_rate_over_any_window() {
        // A flusher that flushes whenever the budget lets it, polled every millisecond for 10 s.
        let mut budget = PutBudget::new(Some(4));
        let t0 = Instant::now();
        let mut starts = Vec::new();
        for ms in 0..10_000u64 {
            let now = t0 + Duration::from_millis(ms);
            if budget.wait(now).is_zero() {
                budget.spend(now, Trigger::Budget, 1);
                starts.push(ms);
            }
        }
        assert_eq!(starts.len(), 40, "4 per second for 10 s");
        // Any window of W ms holds at most W * 4 / 1000 + 1 starts.
        for (i, &start) in starts.iter().enumerate() {
            for window_ms in [250u64, 1000, 3000] {
                let inside = starts[i..]
                    .iter()
                    .take_while(|&&s| s < start + window_ms)
                    .count() as u64;
                assert!(
                    inside <= window_ms * 4 / 1000 + 1,
                    "{inside} in {window_ms} ms"
                );
            }
        }
    }

    #[test]
    fn a_cut_of_several_objects_spends_one_spacing_each() {
        let mut budget = PutBudget::new(Some(10));
        let t0 = Instant::now();
        budget.spend(t0, Trigger::Budget, 3);
        assert_eq!(budget.wait(t0), Duration::from_millis(300));
    }

    #[test]
    fn size_flushes_leave_no_debt_beyond_one_spacing() {
        let mut budget = PutBudget::new(Some(4));
        let t0 = Instant::now();
        for _ in 0..100 {
            budget.spend(t0, Trigger::Size, 4);
        }
        assert_eq!(budget.wait(t0), Duration::from_millis(250));
    }
}
