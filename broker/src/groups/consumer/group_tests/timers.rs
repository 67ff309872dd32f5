//! The consumer group's timers against their configured values, to the millisecond (session
//! timeout 1 s and rebalance timeout 500 ms, from [`config`] and [`join`]).

use super::*;

/// `a` then `b` join a two-partition topic and settle, one partition each; the last
/// heartbeats are `a` at 20 and `b` at 30.
fn settled_pair(a: Heartbeat) -> ConsumerGroup {
    let mut g = group();
    let a_id = a.member_id.clone();
    let instance = a.instance_id.clone();
    g.heartbeat(a, &topics(2), 0).unwrap();
    g.heartbeat(join("b"), &topics(2), 0).unwrap();
    let beat_a = |epoch, owned: Option<&[i32]>| Heartbeat {
        instance_id: instance.clone(),
        ..beat(&a_id, epoch, owned)
    };
    let revoking = g.heartbeat(beat_a(1, None), &topics(2), 10).unwrap();
    let kept = owned(&revoking);
    assert_eq!(kept.len(), 1);
    let a = g.heartbeat(beat_a(1, Some(&kept)), &topics(2), 20).unwrap();
    assert_eq!(a.member_epoch, 2);
    let b = g
        .heartbeat(beat("b", 2, Some(&[])), &topics(2), 30)
        .unwrap();
    assert_eq!(owned(&b).len(), 1);
    assert_eq!(g.state(), ConsumerGroupState::Stable);
    g
}

#[test]
fn session_expires_exactly_a_session_timeout_after_the_last_heartbeat() {
    let mut g = settled_pair(join("a"));
    g.heartbeat(beat("b", 2, None), &topics(2), 900).unwrap();
    g.tick(20 + 999);
    assert_eq!(g.describe().members.len(), 2);
    g.tick(20 + 1_000);
    assert_eq!(g.describe().members.len(), 1, "a is gone");
    let b = g.heartbeat(beat("b", 2, None), &topics(2), 1_100).unwrap();
    assert_eq!((b.member_epoch, owned(&b)), (3, vec![0, 1]));
}

#[test]
fn static_leave_keeps_the_partitions_until_the_session_its_last_heartbeat_started_ends() {
    let static_a = Heartbeat {
        instance_id: Some("i1".into()),
        ..join("a")
    };
    let mut g = settled_pair(static_a);
    let epoch = g.group_epoch();
    let left = g
        .heartbeat(
            Heartbeat {
                instance_id: Some("i1".into()),
                ..beat("a", -2, None)
            },
            &topics(2),
            700,
        )
        .unwrap();
    assert_eq!(left.member_epoch, -2);
    // The leave does not extend a's session: it ends 1 s after its heartbeat at 20.
    let b = g.heartbeat(beat("b", 2, None), &topics(2), 1_019).unwrap();
    assert_eq!(owned(&b).len(), 1, "a's partition stays reserved");
    assert_eq!(g.group_epoch(), epoch);
    g.tick(1_019);
    assert_eq!(g.describe().members.len(), 2);
    g.tick(1_020);
    assert_eq!(g.describe().members.len(), 1);
    let b = g.heartbeat(beat("b", 2, None), &topics(2), 1_030).unwrap();
    assert_eq!(owned(&b), vec![0, 1]);
    assert_eq!(g.group_epoch(), epoch + 1);
}

#[test]
fn revocation_timeout_restarts_with_each_new_revocation() {
    let mut g = group();
    g.heartbeat(join("a"), &topics(3), 0).unwrap();
    g.heartbeat(join("b"), &topics(3), 0).unwrap();
    let first = g.heartbeat(beat("a", 1, None), &topics(3), 100).unwrap();
    let kept = owned(&first);
    assert_eq!(kept.len(), 2, "a revokes one partition, from 100");
    // c joins: a's target shrinks again before it acknowledged.
    g.heartbeat(join("c"), &topics(3), 200).unwrap();
    let second = g
        .heartbeat(beat("a", 1, Some(&kept)), &topics(3), 400)
        .unwrap();
    assert_eq!(owned(&second).len(), 1, "a revokes another one, from 400");
    let mut epochs = [("b", 2), ("c", 3)];
    for now in [500, 899] {
        for (member, epoch) in epochs.iter_mut() {
            *epoch = g
                .heartbeat(beat(member, *epoch, Some(&[])), &topics(3), now)
                .unwrap()
                .member_epoch;
        }
    }
    g.tick(600);
    g.tick(899);
    assert!(g
        .describe()
        .members
        .iter()
        .any(|m| m.member.member_id == "a"));
    g.tick(900);
    assert!(!g
        .describe()
        .members
        .iter()
        .any(|m| m.member.member_id == "a"));
}
