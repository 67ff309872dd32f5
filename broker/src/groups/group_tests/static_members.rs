//! Static members (KIP-345) coming back under a new member id, as Kafka's
//! `updateStaticMemberThenRebalanceOrCompleteJoin` handles them.

use super::*;

const SESSION: u64 = SESSION_MS as u64;

/// A stable group of static members "a" (the leader) and "b": (group, leader id, follower id).
fn static_pair() -> (Group, String, String) {
    let (group, members) = stable_group_of(
        config(),
        vec![static_member("", "a"), static_member("", "b")],
    );
    assert_eq!(group_instance(&group, &members[0]).as_deref(), Some("a"));
    (group, members[0].clone(), members[1].clone())
}

fn restart(instance: &str, supports_skip_assignment: bool) -> JoinRequest {
    JoinRequest {
        supports_skip_assignment,
        ..static_member("", instance)
    }
}

fn sync_as(member_id: &str, instance: &str, generation_id: i32) -> SyncRequest {
    SyncRequest {
        group_instance_id: Some(instance.to_string()),
        ..sync(member_id, generation_id, &[])
    }
}

#[test]
fn restarted_static_follower_takes_over_its_assignment_without_a_rebalance() {
    let (mut group, leader, follower) = static_pair();
    let _ = group.take_dirty();
    let back = ready(group.join(restart("b", true), STABLE_AT + 1_000));
    assert_eq!(back.error, None);
    assert_eq!(back.generation_id, 1, "the same generation");
    assert_eq!(
        (back.leader_id.as_str(), back.skip_assignment),
        (leader.as_str(), false)
    );
    assert!(back.members.is_empty());
    assert_ne!(back.member_id, follower);
    assert_eq!(group.state(), GroupState::Stable);
    assert!(group.take_dirty(), "the new member id must be persisted");
    let synced = ready(group.sync(sync_as(&back.member_id, "b", 1), STABLE_AT + 1_000));
    assert_eq!(synced.assignment, Bytes::from(format!("a-{follower}")));
    // The leader notices nothing.
    assert_eq!(
        group.heartbeat(&leader, Some("a"), 1, STABLE_AT + 1_000),
        Ok(())
    );
}

#[test]
fn restarted_static_leader_is_told_to_skip_the_assignment_and_nothing_rebalances() {
    let (mut group, leader, follower) = static_pair();
    let back = ready(group.join(restart("a", true), STABLE_AT + 1_000));
    assert_eq!(back.error, None);
    assert_eq!(back.generation_id, 1);
    assert_eq!(back.leader_id, back.member_id, "it leads under its new id");
    assert!(back.skip_assignment);
    assert_eq!(back.members.len(), 2, "a leader learns the members");
    assert_eq!(group.state(), GroupState::Stable);
    let synced = ready(group.sync(sync_as(&back.member_id, "a", 1), STABLE_AT + 1_000));
    assert_eq!(synced.assignment, Bytes::from(format!("a-{leader}")));
    assert_eq!(
        group.heartbeat(&follower, Some("b"), 1, STABLE_AT + 1_000),
        Ok(())
    );
}

#[test]
fn restarted_static_leader_on_a_client_that_cannot_skip_the_assignment_syncs_as_a_follower() {
    let (mut group, leader, follower) = static_pair();
    let back = ready(group.join(restart("a", false), STABLE_AT + 1_000));
    assert_eq!(back.generation_id, 1);
    assert_eq!(
        back.leader_id, leader,
        "named the previous leader, so it does not assign"
    );
    assert!(back.members.is_empty() && !back.skip_assignment);
    let synced = ready(group.sync(sync_as(&back.member_id, "a", 1), STABLE_AT + 1_000));
    assert_eq!(synced.assignment, Bytes::from(format!("a-{leader}")));
    assert_eq!(group.state(), GroupState::Stable);
    assert_eq!(
        group.heartbeat(&follower, Some("b"), 1, STABLE_AT + 1_000),
        Ok(())
    );
}

#[test]
fn old_incarnation_of_a_restarted_static_member_is_fenced() {
    let (mut group, _, follower) = static_pair();
    let back = ready(group.join(restart("b", true), STABLE_AT + 1_000));
    let now = STABLE_AT + 1_500;
    let fenced = Err(ResponseError::FencedInstanceId);
    assert_eq!(group.heartbeat(&follower, Some("b"), 1, now), fenced);
    assert_eq!(group.check_commit(&follower, Some("b"), 1, now), fenced);
    assert_eq!(
        ready(group.sync(sync_as(&follower, "b", 1), now)).error,
        Some(ResponseError::FencedInstanceId)
    );
    let rejoin = JoinRequest {
        group_instance_id: Some("b".into()),
        ..range(&follower)
    };
    assert_eq!(
        ready(group.join(rejoin, now)).error,
        Some(ResponseError::FencedInstanceId)
    );
    assert_eq!(group.leave(&follower, Some("b"), now), fenced);
    assert_eq!(group.heartbeat(&back.member_id, Some("b"), 1, now), Ok(()));
    assert_eq!(
        (group.state(), group.member_count()),
        (GroupState::Stable, 2)
    );
}

#[test]
fn restarted_static_member_with_new_metadata_for_the_same_protocol_does_not_rebalance() {
    let (mut group, _, _) = static_pair();
    let mut changed = restart("b", true);
    changed.protocols = vec![Protocol {
        name: "range".into(),
        metadata: Bytes::from_static(b"owned nothing yet"),
    }];
    let back = ready(group.join(changed, STABLE_AT + 1_000));
    assert_eq!((back.error, back.generation_id), (None, 1));
    assert_eq!(group.state(), GroupState::Stable);
}

#[test]
fn restarted_static_member_that_changes_the_chosen_protocol_rebalances() {
    let both = |member_id: &str, instance: &str| JoinRequest {
        group_instance_id: Some(instance.into()),
        ..request(member_id, &[("range", b"m"), ("roundrobin", b"m")])
    };
    let (mut group, members) = stable_group_of(config(), vec![both("", "a"), both("", "b")]);
    assert_eq!(group.protocol_name(), Some("range"));
    let only_roundrobin = JoinRequest {
        group_instance_id: Some("b".into()),
        supports_skip_assignment: true,
        ..request("", &[("roundrobin", b"m")])
    };
    let mut back = waiting(group.join(only_roundrobin, STABLE_AT + 1_000));
    assert_eq!(group.state(), GroupState::PreparingRebalance);
    let mut leader = waiting(group.join(both(&members[0], "a"), STABLE_AT + 1_000));
    let (back, leader) = (answered(&mut back), answered(&mut leader));
    assert_eq!((back.generation_id, leader.generation_id), (2, 2));
    assert_eq!(back.protocol_name.as_deref(), Some("roundrobin"));
}

#[test]
fn static_member_restarted_during_the_sync_phase_rebalances_and_fences_the_old_waiter() {
    let (mut group, leader, follower) = static_pair();
    // The leader asks for a new generation; both rejoin, the follower waits for its share.
    let rejoin = |id: &str, instance: &str| JoinRequest {
        group_instance_id: Some(instance.into()),
        ..range(id)
    };
    let now = STABLE_AT + 1_000;
    let mut leader_join = waiting(group.join(rejoin(&leader, "a"), now));
    let _follower_join = answered(&mut waiting(group.join(rejoin(&follower, "b"), now)));
    assert_eq!(answered(&mut leader_join).generation_id, 2);
    let mut old_sync = waiting(group.sync(sync_as(&follower, "b", 2), now));
    let mut back = waiting(group.join(restart("b", true), now + 100));
    assert_eq!(
        answered(&mut old_sync).error,
        Some(ResponseError::FencedInstanceId)
    );
    assert_eq!(group.state(), GroupState::PreparingRebalance);
    let _leader_again = waiting(group.join(rejoin(&leader, "a"), now + 200));
    assert_eq!(answered(&mut back).generation_id, 3);
}

#[test]
fn static_member_restarted_while_its_old_join_waits_fences_that_join() {
    let instances = ["a", "b", "c"];
    let (mut group, members) = stable_group_of(
        config(),
        instances.iter().map(|i| static_member("", i)).collect(),
    );
    let rejoin = |group: &Group, id: &str| JoinRequest {
        group_instance_id: group_instance(group, id),
        ..range(id)
    };
    let now = STABLE_AT + 1_000;
    // The leader asks for a rebalance; the old "b" rejoins and waits for the third member.
    let (leader, old, last) = (&members[0], &members[1], &members[2]);
    let old_instance = group_instance(&group, old).unwrap_or_default();
    let mut leader_join = waiting(group.join(rejoin(&group, leader), now));
    let mut old_join = waiting(group.join(rejoin(&group, old), now));
    let mut back = waiting(group.join(restart(&old_instance, true), now + 100));
    assert_eq!(
        answered(&mut old_join).error,
        Some(ResponseError::FencedInstanceId)
    );
    let _last = waiting(group.join(rejoin(&group, last), now + 200));
    let (back, leader_join) = (answered(&mut back), answered(&mut leader_join));
    assert_eq!((back.generation_id, leader_join.generation_id), (2, 2));
    let ids: Vec<&str> = leader_join
        .members
        .iter()
        .map(|m| m.member_id.as_str())
        .collect();
    assert_eq!(ids.len(), 3);
    assert!(ids.contains(&back.member_id.as_str()) && !ids.contains(&old.as_str()));
}

#[test]
fn restarted_static_member_starts_a_new_session_and_the_old_one_ends_harmlessly() {
    let (mut group, leader, _) = static_pair();
    let back_at = STABLE_AT + 4_000;
    let back = ready(group.join(restart("b", true), back_at));
    let _ = ready(group.sync(sync_as(&back.member_id, "b", 1), back_at));
    let keep_leader = |group: &mut Group, now| {
        assert_eq!(group.heartbeat(&leader, Some("a"), 1, now), Ok(()));
    };
    // The old incarnation's session (from STABLE_AT) ends: nothing happens.
    keep_leader(&mut group, STABLE_AT + SESSION - 1);
    group.tick(STABLE_AT + SESSION);
    assert_eq!(
        (group.state(), group.member_count()),
        (GroupState::Stable, 2)
    );
    assert_eq!(group.generation_id(), 1);
    // The new one's runs from its join.
    keep_leader(&mut group, back_at + SESSION - 1);
    group.tick(back_at + SESSION - 1);
    assert_eq!(group.member_count(), 2);
    group.tick(back_at + SESSION);
    assert_eq!(
        (group.member_count(), group.state()),
        (1, GroupState::PreparingRebalance)
    );
}
