use super::*;

const STALL: Duration = Duration::from_millis(100);

fn waiting_budget(total_bytes: usize) -> Arc<Budget> {
    Budget::new(Kind::Authenticated, total_bytes, STALL)
}

fn login_budget(total_bytes: usize) -> Arc<Budget> {
    Budget::new(Kind::Unauthenticated, total_bytes, STALL)
}

/// Runs a test's body, failing it if a wait never ends instead of hanging the suite.
async fn bounded(body: impl std::future::Future<Output = ()>) {
    let finished = tokio::time::timeout(Duration::from_secs(20), body).await;
    assert!(finished.is_ok(), "the test finished within 20 s");
}

const GAVE_WAY: Evicted = Evicted {
    budget: "authenticated",
};

#[tokio::test]
async fn a_frame_takes_bytes_in_steps_and_gives_them_back_when_its_permits_drop() {
    bounded(async {
        let budget = waiting_budget(100);
        let frame = budget.start_frame();
        let mut held = frame.take(30).await.unwrap();
        held.merge(frame.take(30).await.unwrap());
        assert_eq!(budget.available_bytes(), 40);
        drop(frame);
        assert_eq!(
            budget.available_bytes(),
            40,
            "bytes of a read frame stay held"
        );
        drop(held);
        assert_eq!(budget.available_bytes(), 100);
    })
    .await;
}

#[tokio::test]
async fn a_stalled_frame_holding_the_budget_is_closed_for_a_waiting_reader() {
    bounded(async {
        let budget = waiting_budget(100);
        let silent = budget.start_frame();
        let _held = silent.take(100).await.unwrap();
        let waiting = tokio::spawn({
            let budget = budget.clone();
            async move { budget.start_frame().take(10).await.is_ok() }
        });
        let evicted = tokio::time::timeout(STALL * 30, silent.evicted()).await;
        assert_eq!(evicted, Ok(GAVE_WAY));
        drop((_held, silent));
        assert!(waiting.await.unwrap());
    })
    .await;
}

#[tokio::test]
async fn frames_that_receive_whole_steps_are_not_closed_while_a_reader_waits() {
    bounded(async {
        let budget = waiting_budget(100);
        let busy = budget.start_frame();
        let _held = busy.take(100).await.unwrap();
        let waiter = tokio::spawn({
            let budget = budget.clone();
            async move { budget.start_frame().take(10).await.is_ok() }
        });
        for _ in 0..10 {
            tokio::time::sleep(STALL / 2).await;
            busy.stepped();
        }
        assert!(
            !waiter.is_finished(),
            "the waiter still waits: nothing stalled"
        );
        let evicted = tokio::time::timeout(Duration::ZERO, busy.evicted()).await;
        assert!(
            evicted.is_err(),
            "a frame receiving its steps is not closed"
        );
        waiter.abort();
    })
    .await;
}

#[tokio::test]
async fn frames_that_each_hold_part_of_the_budget_and_wait_for_more_are_broken_up() {
    bounded(async {
        let budget = waiting_budget(100);
        let first = budget.start_frame();
        let second = budget.start_frame();
        let first_bytes = first.take(60).await.unwrap();
        let second_bytes = second.take(40).await.unwrap();
        let second_more = tokio::spawn(async move {
            let more = second.take(50).await;
            (more.is_ok(), second_bytes)
        });
        // The frame started last gives way; the other then gets its bytes, though the semaphore
        // handed it part of them while it still waited.
        let first_more = tokio::spawn(async move {
            let more = first.take(40).await;
            (more.is_ok(), first_bytes)
        });
        let (second_got_more, second_bytes) = second_more.await.unwrap();
        assert!(!second_got_more);
        drop(second_bytes);
        let (first_got_more, _) = first_more.await.unwrap();
        assert!(first_got_more);
    })
    .await;
}

#[tokio::test]
async fn bytes_held_by_requests_being_served_are_never_taken_back() {
    bounded(async {
        let budget = waiting_budget(100);
        let served = budget.start_frame();
        let held = served.take(100).await.unwrap();
        drop(served);
        let waiter = budget.start_frame();
        let waited = tokio::time::timeout(STALL * 10, waiter.take(10)).await;
        assert!(waited.is_err(), "nothing to close: the reader waits");
        drop(held);
        assert!(waiter.take(10).await.is_ok());
    })
    .await;
}

#[tokio::test]
async fn before_login_a_spent_budget_closes_the_oldest_frame_for_a_newcomer_at_once() {
    bounded(async {
        let budget = login_budget(100);
        let oldest = budget.start_frame();
        let oldest_bytes = oldest.take(50).await.unwrap();
        tokio::time::sleep(Duration::from_millis(10)).await;
        let younger = budget.start_frame();
        let _younger_bytes = younger.take(50).await.unwrap();
        let newcomer = budget.start_frame();
        let taken = tokio::spawn(async move { newcomer.take(10).await.is_ok() });
        assert_eq!(
            oldest.evicted().await,
            Evicted {
                budget: "unauthenticated"
            }
        );
        drop((oldest_bytes, oldest));
        assert!(taken.await.unwrap(), "the newcomer takes the freed bytes");
        let evicted = tokio::time::timeout(Duration::ZERO, younger.evicted()).await;
        assert!(evicted.is_err(), "one frame gave way, not two");
    })
    .await;
}

#[tokio::test]
async fn before_login_a_stalled_frame_gives_way_before_an_older_busy_one() {
    bounded(async {
        let budget = login_budget(100);
        let busy = budget.start_frame();
        let _busy_bytes = busy.take(50).await.unwrap();
        let stalled = budget.start_frame();
        let stalled_bytes = stalled.take(50).await.unwrap();
        tokio::time::sleep(STALL).await;
        busy.stepped();
        let newcomer = budget.start_frame();
        let taken = tokio::spawn(async move { newcomer.take(10).await.is_ok() });
        assert!(stalled.evicted().await.budget == "unauthenticated");
        drop((stalled_bytes, stalled));
        assert!(taken.await.unwrap());
    })
    .await;
}

#[tokio::test]
async fn before_login_a_reader_with_nothing_to_close_gives_up_at_once() {
    bounded(async {
        let budget = login_budget(100);
        let served = budget.start_frame();
        let _held = served.take(100).await.unwrap();
        drop(served);
        let newcomer = budget.start_frame();
        assert!(newcomer.take(10).await.is_err());
    })
    .await;
}

#[tokio::test]
async fn a_frame_larger_than_the_whole_budget_gives_way_instead_of_waiting_forever() {
    bounded(async {
        let budget = waiting_budget(100);
        let frame = budget.start_frame();
        let _held = frame.take(70).await.unwrap();
        assert_eq!(frame.take(50).await.err(), Some(GAVE_WAY));
    })
    .await;
}

#[tokio::test]
async fn frames_waiting_behind_a_request_being_served_are_not_broken_up() {
    bounded(async {
        let budget = waiting_budget(100);
        let served = budget.start_frame();
        let served_bytes = served.take(50).await.unwrap();
        drop(served);
        let reading = budget.start_frame();
        let _reading_bytes = reading.take(50).await.unwrap();
        let waited = tokio::time::timeout(STALL * 10, reading.take(30)).await;
        assert!(
            waited.is_err(),
            "the served request gives its bytes back in time"
        );
        drop(served_bytes);
        assert!(reading.take(30).await.is_ok());
    })
    .await;
}
