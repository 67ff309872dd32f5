use super::*;

const STALL: Duration = Duration::from_millis(100);

fn waiting_budget(total_bytes: usize) -> Arc<Budget> {
    Budget::new(Kind::Authenticated, total_bytes, STALL)
}

fn login_budget(total_bytes: usize) -> Arc<Budget> {
    Budget::new(Kind::Unauthenticated, total_bytes, STALL)
}

const GAVE_WAY: Evicted = Evicted {
    budget: "authenticated",
};

#[tokio::test]
async fn a_frame_takes_bytes_in_steps_and_gives_them_back_when_its_permits_drop() {
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
}

#[tokio::test]
async fn a_stalled_frame_holding_the_budget_is_closed_for_a_waiting_reader() {
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
}

#[tokio::test]
async fn frames_that_receive_whole_steps_are_not_closed_while_a_reader_waits() {
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
}

#[tokio::test]
async fn frames_that_each_hold_part_of_the_budget_and_wait_for_more_are_broken_up() {
    let budget = waiting_budget(100);
    let first = budget.start_frame();
    let second = budget.start_frame();
    let first_bytes = first.take(60).await.unwrap();
    let second_bytes = second.take(40).await.unwrap();
    let second_more = tokio::spawn(async move {
        let more = second.take(50).await;
        (more.is_ok(), second_bytes)
    });
    // The frame started last gives way; the other then gets its bytes.
    let first_more = tokio::spawn(async move {
        let more = first.take(50).await;
        (more.is_ok(), first_bytes)
    });
    let (second_got_more, second_bytes) = second_more.await.unwrap();
    assert!(!second_got_more);
    drop(second_bytes);
    let (first_got_more, _) = first_more.await.unwrap();
    assert!(first_got_more);
}

#[tokio::test]
async fn bytes_held_by_requests_being_served_are_never_taken_back() {
    let budget = waiting_budget(100);
    let served = budget.start_frame();
    let held = served.take(100).await.unwrap();
    drop(served);
    let waiter = budget.start_frame();
    let waited = tokio::time::timeout(STALL * 10, waiter.take(10)).await;
    assert!(waited.is_err(), "nothing to close: the reader waits");
    drop(held);
    assert!(waiter.take(10).await.is_ok());
}

#[tokio::test]
async fn before_login_a_spent_budget_closes_the_oldest_frame_for_a_newcomer_at_once() {
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
}

#[tokio::test]
async fn before_login_a_stalled_frame_gives_way_before_an_older_busy_one() {
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
}

#[tokio::test]
async fn before_login_a_reader_with_nothing_to_close_gives_up_at_once() {
    let budget = login_budget(100);
    let served = budget.start_frame();
    let _held = served.take(100).await.unwrap();
    drop(served);
    let newcomer = budget.start_frame();
    assert!(newcomer.take(10).await.is_err());
}
