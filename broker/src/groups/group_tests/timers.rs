//! Every timer of a classic group against its configured value, to the millisecond: each
//! deadline is checked a millisecond before (nothing happens) and at it, as Kafka runs them.

use super::*;

const SESSION: u64 = SESSION_MS as u64;
const REBALANCE: u64 = REBALANCE_MS as u64;

fn heartbeat_all(group: &mut Group, members: &[String], now_ms: u64) {
    let generation = group.generation_id();
    for member in members {
        let instance = group_instance(group, member);
        let _ = group.heartbeat(member, instance.as_deref(), generation, now_ms);
    }
}

/// Two dynamic members in CompletingRebalance at `T0` (generation 2): the first joined alone,
/// the second made it rejoin. Returns (leader, follower).
fn joined_pair(group: &mut Group) -> (String, String) {
    let a = answered(&mut waiting(group.join(range(""), T0)));
    let mut b = waiting(group.join(range(""), T0));
    let a = answered(&mut waiting(group.join(range(&a.member_id), T0)));
    let b = answered(&mut b);
    assert_eq!(
        (a.generation_id, group.state()),
        (2, GroupState::CompletingRebalance)
    );
    if a.leader_id == a.member_id {
        (a.member_id, b.member_id)
    } else {
        (b.member_id, a.member_id)
    }
}

#[test]
fn session_expires_exactly_a_session_timeout_after_the_last_heartbeat() {
    let (mut group, members) = stable_group(2);
    let beat = STABLE_AT + 4_000;
    heartbeat_all(&mut group, &members, beat);
    group.tick(beat + SESSION - 1);
    assert_eq!(group.member_count(), 2);
    heartbeat_all(&mut group, &members[..1], beat + SESSION - 1);
    group.tick(beat + SESSION);
    assert_eq!(group.member_count(), 1, "the silent member is gone");
    assert_eq!(group.state(), GroupState::PreparingRebalance);
    let rejoined = answered(&mut waiting(group.join(range(&members[0]), beat + SESSION)));
    assert_eq!(rejoined.generation_id, 2);
    assert_eq!(rejoined.members.len(), 1);
}

#[test]
fn offset_commit_keeps_a_session_alive_and_sync_group_does_not() {
    let (mut group, members) = stable_group(2);
    let generation = group.generation_id();
    let later = STABLE_AT + 5_000;
    assert_eq!(
        group.check_commit(&members[0], None, generation, later),
        Ok(())
    );
    let resync = ready(group.sync(sync(&members[1], generation, &[]), later));
    assert_eq!(resync.error, None);
    group.tick(STABLE_AT + SESSION - 1);
    assert_eq!(group.member_count(), 2);
    group.tick(STABLE_AT + SESSION);
    assert_eq!(group.member_count(), 1);
    group.tick(later + SESSION);
    assert_eq!(group.state(), GroupState::Empty);
}

#[test]
fn last_static_members_expiring_leave_an_empty_group_at_once() {
    let (mut group, members) = stable_group_of(
        config(),
        vec![static_member("", "a"), static_member("", "b")],
    );
    let generation = group.generation_id();
    let _ = group.take_dirty();
    // One goes quiet 500 ms before the other.
    heartbeat_all(&mut group, &members[1..], STABLE_AT + 500);
    group.tick(STABLE_AT + SESSION);
    assert_eq!(
        (group.state(), group.member_count()),
        (GroupState::PreparingRebalance, 1)
    );
    group.tick(STABLE_AT + 500 + SESSION - 1);
    assert_eq!(group.member_count(), 1);
    // The last one's session ends the rebalance: nobody is left to wait for.
    group.tick(STABLE_AT + 500 + SESSION);
    assert_eq!(group.state(), GroupState::Empty);
    assert_eq!(group.generation_id(), generation + 1);
    assert_eq!(group.empty_since_ms(), Some(STABLE_AT + 500 + SESSION));
    assert!(group.take_dirty(), "the empty group must be persisted");
}

#[test]
fn member_waiting_for_an_answer_never_expires_and_its_session_restarts_with_the_answer() {
    let mut group = Group::new("g", config());
    let (leader, follower) = joined_pair(&mut group);
    let mut pending = waiting(group.sync(sync(&follower, 2, &[]), T0));
    // The leader keeps its session but takes its time to assign.
    let synced_at = T0 + 2 * SESSION;
    for step in 1..synced_at.saturating_sub(T0) / 5_000 {
        heartbeat_all(&mut group, std::slice::from_ref(&leader), T0 + step * 5_000);
    }
    group.tick(synced_at - 1);
    assert_eq!(group.member_count(), 2, "a waiting member is alive");
    let mut assign = sync(&leader, 2, &[]);
    assign.assignments = vec![(follower.clone(), Bytes::from_static(b"p"))];
    assert_eq!(ready_sync(group.sync(assign, synced_at)).error, None);
    assert_eq!(answered(&mut pending).assignment, Bytes::from_static(b"p"));
    group.tick(synced_at + SESSION - 1);
    assert_eq!(group.member_count(), 2);
    group.tick(synced_at + SESSION);
    assert_eq!(
        group.member_count(),
        0,
        "both sessions restarted at the assignment"
    );
}

/// The leader's own SyncGroup answer is immediate once it assigned.
fn ready_sync(outcome: Outcome<SyncResponse>) -> SyncResponse {
    match outcome {
        Outcome::Ready(answer) => answer,
        Outcome::Waiting(mut answer) => answered(&mut answer),
    }
}

#[test]
fn leader_that_never_syncs_is_removed_a_rebalance_timeout_after_the_join_phase() {
    let mut group = Group::new("g", config());
    let (leader, follower) = joined_pair(&mut group);
    let mut pending = waiting(group.sync(sync(&follower, 2, &[]), T0));
    for step in 1..REBALANCE / 5_000 {
        heartbeat_all(&mut group, std::slice::from_ref(&leader), T0 + step * 5_000);
    }
    group.tick(T0 + REBALANCE - 1);
    assert_eq!(group.state(), GroupState::CompletingRebalance);
    group.tick(T0 + REBALANCE);
    assert_eq!(group.member_count(), 1, "the leader is gone");
    assert_eq!(
        answered(&mut pending).error,
        Some(ResponseError::RebalanceInProgress)
    );
    // The follower's session restarted with that answer.
    group.tick(T0 + REBALANCE + SESSION - 1);
    assert_eq!(group.member_count(), 1);
    group.tick(T0 + REBALANCE + SESSION);
    assert_eq!(group.state(), GroupState::Empty);
}

#[test]
fn member_that_never_syncs_is_removed_at_the_sync_deadline_even_in_a_stable_group() {
    let mut group = Group::new("g", config());
    let (leader, follower) = joined_pair(&mut group);
    let _ = ready_sync(group.sync(sync(&leader, 2, &[]), T0));
    assert_eq!(group.state(), GroupState::Stable);
    for step in 1..REBALANCE / 5_000 {
        heartbeat_all(
            &mut group,
            &[leader.clone(), follower.clone()],
            T0 + step * 5_000,
        );
    }
    group.tick(T0 + REBALANCE - 1);
    assert_eq!(group.member_count(), 2);
    group.tick(T0 + REBALANCE);
    assert_eq!(
        (group.member_count(), group.state()),
        (1, GroupState::PreparingRebalance)
    );
    assert_eq!(
        group.heartbeat(&follower, None, 2, T0 + REBALANCE),
        Err(ResponseError::UnknownMemberId)
    );
}

#[test]
fn dynamic_member_that_does_not_rejoin_is_removed_at_the_largest_rebalance_timeout() {
    let slow = JoinRequest {
        rebalance_timeout_ms: REBALANCE_MS + 10_000,
        ..range("")
    };
    let (mut group, members) = stable_group_of(config(), vec![range(""), slow]);
    let start = STABLE_AT + 1_000;
    let leader = &members[0];
    let mut rejoin = waiting(group.join(range(leader), start));
    let deadline = start + REBALANCE + 10_000;
    let mut now = start;
    while now + 5_000 < deadline {
        now += 5_000;
        heartbeat_all(&mut group, &members[1..], now);
    }
    group.tick(deadline - 1);
    assert!(
        rejoin.try_recv().is_err(),
        "still waiting for the other member"
    );
    group.tick(deadline);
    assert_eq!(answered(&mut rejoin).generation_id, 2);
    assert_eq!(group.member_count(), 1);
}

#[test]
fn static_member_that_does_not_rejoin_in_time_stays_in_the_next_generation() {
    let (mut group, members) = stable_group_of(
        config(),
        vec![static_member("", "a"), static_member("", "b")],
    );
    let start = STABLE_AT + 1_000;
    let leader_rejoin = JoinRequest {
        group_instance_id: group_instance(&group, &members[0]),
        ..range(&members[0])
    };
    let mut rejoin = waiting(group.join(leader_rejoin, start));
    for step in 1..=REBALANCE / 5_000 {
        heartbeat_all(&mut group, &members[1..], start + step * 5_000 - 1);
    }
    group.tick(start + REBALANCE);
    let joined = answered(&mut rejoin);
    assert_eq!(joined.generation_id, 2);
    assert_eq!(
        group.member_count(),
        2,
        "its session, not the rebalance timeout, decides"
    );
    assert_eq!(joined.members.len(), 2, "the leader assigns to it too");
}

#[test]
fn join_phase_without_any_member_rejoined_waits_another_rebalance_timeout() {
    let requests = vec![static_member("", "a"), static_member("", "b"), range("")];
    let (mut group, members) = stable_group_of(config(), requests);
    let statics: Vec<String> = members
        .iter()
        .filter(|m| group_instance(&group, m).is_some())
        .cloned()
        .collect();
    // The dynamic member goes quiet: its expiry starts a rebalance that nobody rejoins.
    let start = STABLE_AT + SESSION;
    heartbeat_all(&mut group, &statics, start - 1);
    group.tick(start);
    assert_eq!(group.member_count(), 2);
    let first = JoinRequest {
        group_instance_id: group_instance(&group, &statics[0]),
        ..range(&statics[0])
    };
    let mut rejoin = None;
    for step in 1..2 * REBALANCE / 5_000 {
        let now = start + step * 5_000;
        heartbeat_all(&mut group, &statics, now);
        group.tick(now);
        assert_eq!(
            group.state(),
            GroupState::PreparingRebalance,
            "at {}",
            now - start
        );
        if now == start + REBALANCE {
            rejoin = Some(waiting(group.join(first.clone(), now)));
        }
    }
    let Some(mut rejoin) = rejoin else {
        panic!("the first static member never rejoined");
    };
    group.tick(start + 2 * REBALANCE - 1);
    assert!(rejoin.try_recv().is_err());
    group.tick(start + 2 * REBALANCE);
    let joined = answered(&mut rejoin);
    assert_eq!((joined.generation_id, joined.members.len()), (2, 2));
}

fn delayed(delay_ms: u64) -> Group {
    Group::new(
        "g",
        GroupConfig {
            initial_rebalance_delay_ms: delay_ms,
            ..config()
        },
    )
}

#[test]
fn initial_delay_of_a_lone_member_ends_exactly_one_delay_after_it_joined() {
    let mut group = delayed(3_000);
    let mut a = waiting(group.join(range(""), T0));
    group.tick(T0 + 2_999);
    assert!(a.try_recv().is_err());
    group.tick(T0 + 3_000);
    assert_eq!(answered(&mut a).generation_id, 1);
}

#[test]
fn each_window_of_the_initial_delay_in_which_a_member_joins_buys_exactly_one_more() {
    let mut group = delayed(3_000);
    let mut answers = vec![waiting(group.join(range(""), T0))];
    answers.push(waiting(group.join(range(""), T0 + 100)));
    group.tick(T0 + 3_000);
    answers.push(waiting(group.join(range(""), T0 + 5_999)));
    group.tick(T0 + 8_999);
    assert!(answers.iter_mut().all(|a| a.try_recv().is_err()));
    group.tick(T0 + 9_000);
    let joined: Vec<JoinResponse> = answers.iter_mut().map(answered).collect();
    assert!(joined.iter().all(|j| j.generation_id == 1));
    assert_eq!(joined.iter().map(|j| j.members.len()).max(), Some(3));
}

#[test]
fn initial_delay_never_outlasts_the_rebalance_timeout() {
    let mut group = delayed(1_000);
    let short = |id: &str| JoinRequest {
        rebalance_timeout_ms: 2_500,
        ..range(id)
    };
    let mut first = waiting(group.join(short(""), T0));
    for at in [500, 1_500, 2_100] {
        let _joining = group.join(short(""), T0 + at);
        group.tick(T0 + at);
    }
    group.tick(T0 + 2_499);
    assert!(first.try_recv().is_err());
    group.tick(T0 + 2_500);
    assert_eq!(answered(&mut first).generation_id, 1);
}

#[test]
fn member_leaving_during_the_initial_delay_ends_it_once_the_rest_have_joined() {
    let mut group = delayed(3_000);
    let mut a = waiting(group.join(range(""), T0));
    let mut b = waiting(group.join(range(""), T0 + 10));
    group.tick(T0 + 20);
    assert!(a.try_recv().is_err() && b.try_recv().is_err());
    let leaving = group.describe().members[1].member_id.clone();
    assert_eq!(group.leave(&leaving, None, T0 + 20), Ok(()));
    let answers = [a.try_recv(), b.try_recv()];
    let stayed = answers
        .into_iter()
        .flatten()
        .find(|answer| answer.member_id != leaving)
        .expect("the member left is answered at once");
    assert_eq!((stayed.error, stayed.generation_id), (None, 1));
    assert_eq!(group.leave(&stayed.member_id, None, T0 + 30), Ok(()));
    assert_eq!(group.state(), GroupState::Empty);
}

#[test]
fn new_member_waiting_for_its_first_join_answer_lapses_after_the_join_timeout() {
    let config = GroupConfig {
        new_member_join_timeout_ms: 20_000,
        ..config()
    };
    let (mut group, members) = stable_group_of(config, vec![range("")]);
    let start = STABLE_AT + 1_000;
    let mut newcomer = waiting(group.join(range(""), start));
    // The old member keeps its session but never rejoins (the rebalance lasts 30 s).
    for step in 1..=4 {
        heartbeat_all(&mut group, &members, start + step * 5_000 - 1);
    }
    group.tick(start + 20_000 - 1);
    assert!(newcomer.try_recv().is_err());
    group.tick(start + 20_000);
    assert_eq!(
        answered(&mut newcomer).error,
        Some(ResponseError::UnknownMemberId)
    );
    assert_eq!(group.member_count(), 1);
}

#[test]
fn member_id_handed_out_lapses_a_session_timeout_later_and_the_join_completes() {
    let (mut group, members) = stable_group(1);
    let start = STABLE_AT + 1_000;
    let mut first = range("");
    first.require_known_member_id = true;
    let pending = ready(group.join(first, start));
    assert_eq!(pending.error, Some(ResponseError::MemberIdRequired));
    let mut rejoin = waiting(group.join(range(&members[0]), start));
    group.tick(start + SESSION - 1);
    assert!(rejoin.try_recv().is_err(), "waits for the id handed out");
    group.tick(start + SESSION);
    assert_eq!(answered(&mut rejoin).generation_id, 2);
}
