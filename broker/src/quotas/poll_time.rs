//! What a request quota counts: the time a request's handler spends inside `poll()`. Kafka
//! counts the time a request handler thread spends on the request; a thread there is busy
//! for all of it, while here a handler waiting for the WAL, the object store or a long-poll
//! deadline holds no thread at all. Time between polls is time the runtime spends on other
//! requests, so counting wall-clock time would charge a client for its own waits and for
//! everyone else's work; the time inside `poll()` is the part of a worker thread it used.

use std::cell::Cell;
use std::future::Future;
use std::time::{Duration, Instant};

/// The handler time of the request whose handler is being polled.
#[derive(Default)]
struct Clock {
    spent: Cell<Duration>,
    polling_since: Cell<Option<Instant>>,
    /// The handler counted its request itself ([`take`]).
    taken: Cell<bool>,
}

tokio::task_local! {
    static CLOCK: Clock;
}

/// Runs `future` to completion; returns its output and the time spent inside its `poll()`
/// that is still to be counted: none when the handler counted its request itself ([`take`]).
pub async fn timed<F: Future>(future: F) -> (F::Output, Option<Duration>) {
    CLOCK
        .scope(Clock::default(), async move {
            let mut future = std::pin::pin!(future);
            let output = std::future::poll_fn(|cx| {
                let started = Instant::now();
                CLOCK.with(|c| c.polling_since.set(Some(started)));
                let polled = future.as_mut().poll(cx);
                CLOCK.with(|c| {
                    c.spent.set(c.spent.get() + started.elapsed());
                    c.polling_since.set(None);
                });
                polled
            })
            .await;
            let left = CLOCK.with(|c| (!c.taken.get()).then(|| c.spent.get()));
            (output, left)
        })
        .await
}

/// The handler time of the request so far, for a handler that counts its request itself
/// before it answers (a Fetch, which answers empty when over its request quota, as Kafka).
/// `None` outside a [`timed`] handler, or once taken.
pub fn take() -> Option<Duration> {
    CLOCK
        .try_with(|c| {
            if c.taken.replace(true) {
                return None;
            }
            let running = c
                .polling_since
                .get()
                .map_or(Duration::ZERO, |s| s.elapsed());
            Some(c.spent.get() + running)
        })
        .ok()
        .flatten()
}

/// A request's time as its rate counts it: percent of one thread for one second per second
/// (Kafka's `nanosToPercentage`), so a rate over the window reads as a percentage.
pub fn percent_seconds(spent: Duration) -> f64 {
    spent.as_secs_f64() * 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spin(duration: Duration) {
        let until = Instant::now() + duration;
        while Instant::now() < until {
            std::hint::spin_loop();
        }
    }

    #[tokio::test]
    async fn time_spent_waiting_between_polls_is_not_counted() {
        let started = Instant::now();
        let ((), spent) = timed(async {
            spin(Duration::from_millis(20));
            tokio::time::sleep(Duration::from_millis(300)).await;
            spin(Duration::from_millis(20));
        })
        .await;
        let spent = spent.unwrap_or_default();
        assert!(started.elapsed() >= Duration::from_millis(340));
        assert!(spent >= Duration::from_millis(40), "{spent:?}");
        assert!(spent < Duration::from_millis(200), "{spent:?}");
    }

    #[tokio::test]
    async fn the_output_of_the_timed_future_is_handed_back() {
        let (output, _) = timed(async { 7 }).await;
        assert_eq!(output, 7);
    }

    #[tokio::test]
    async fn a_handler_that_counts_its_request_itself_is_not_counted_again() {
        let (taken, left) = timed(async {
            tokio::time::sleep(Duration::from_millis(50)).await;
            spin(Duration::from_millis(20));
            let first = take();
            (first, take())
        })
        .await;
        let (first, second) = taken;
        // The poll under way counts too; the sleep before it does not.
        assert!(
            first.is_some_and(|t| t >= Duration::from_millis(20)),
            "{first:?}"
        );
        assert!(
            first.is_some_and(|t| t < Duration::from_millis(50)),
            "{first:?}"
        );
        assert_eq!((second, left), (None, None));
    }

    #[test]
    fn handler_time_is_not_known_outside_a_timed_handler() {
        assert_eq!(take(), None);
    }

    #[test]
    fn a_tenth_of_a_second_is_ten_percent_seconds() {
        let amount = percent_seconds(Duration::from_millis(100));
        assert!((amount - 10.0).abs() < 1e-9, "{amount}");
    }
}
