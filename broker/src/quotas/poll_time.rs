//! What a request quota counts: the time a request's handler spends inside `poll()`. Kafka
//! counts the time a request handler thread spends on the request; a thread there is busy
//! for all of it, while here a handler waiting for the WAL, the object store or a long-poll
//! deadline holds no thread at all. Time between polls is time the runtime spends on other
//! requests, so counting wall-clock time would charge a client for its own waits and for
//! everyone else's work; the time inside `poll()` is the part of a worker thread it used.

use std::future::Future;
use std::time::{Duration, Instant};

/// Runs `future` to completion; returns its output and the time spent inside its `poll()`.
pub async fn timed<F: Future>(future: F) -> (F::Output, Duration) {
    let mut future = std::pin::pin!(future);
    let mut spent = Duration::ZERO;
    let output = std::future::poll_fn(|cx| {
        let started = Instant::now();
        let polled = future.as_mut().poll(cx);
        spent += started.elapsed();
        polled
    })
    .await;
    (output, spent)
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
        assert!(started.elapsed() >= Duration::from_millis(340));
        assert!(spent >= Duration::from_millis(40), "{spent:?}");
        assert!(spent < Duration::from_millis(200), "{spent:?}");
    }

    #[tokio::test]
    async fn the_output_of_the_timed_future_is_handed_back() {
        let (output, _) = timed(async { 7 }).await;
        assert_eq!(output, 7);
    }

    #[test]
    fn a_tenth_of_a_second_is_ten_percent_seconds() {
        let amount = percent_seconds(Duration::from_millis(100));
        assert!((amount - 10.0).abs() < 1e-9, "{amount}");
    }
}
