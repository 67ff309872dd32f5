//! Static members of a consumer group (KIP-848): leaving with epoch -2 and coming back with
//! epoch 0 under the same instance id.

use super::*;

fn static_join(member: &str, instance: &str) -> Heartbeat {
    Heartbeat {
        instance_id: Some(instance.into()),
        ..join(member)
    }
}

fn static_beat(member: &str, instance: &str, epoch: i32, owned: Option<&[i32]>) -> Heartbeat {
    Heartbeat {
        instance_id: Some(instance.into()),
        ..beat(member, epoch, owned)
    }
}

/// Static `a` (i1) and `b` (i2) settled on a two-partition topic at epoch 2.
fn settled() -> (ConsumerGroup, Vec<i32>, Vec<i32>) {
    let mut g = group();
    g.heartbeat(static_join("a", "i1"), &topics(2), 0).unwrap();
    g.heartbeat(static_join("b", "i2"), &topics(2), 0).unwrap();
    let revoking = g
        .heartbeat(static_beat("a", "i1", 1, None), &topics(2), 10)
        .unwrap();
    let kept = owned(&revoking);
    let a = g
        .heartbeat(static_beat("a", "i1", 1, Some(&kept)), &topics(2), 20)
        .unwrap();
    let b = g
        .heartbeat(static_beat("b", "i2", 2, Some(&[])), &topics(2), 30)
        .unwrap();
    assert_eq!((a.member_epoch, b.member_epoch), (2, 2));
    (g, owned(&a), owned(&b))
}

#[test]
fn static_member_back_within_its_session_gets_its_partitions_and_nobody_notices() {
    let (mut g, a_parts, b_parts) = settled();
    let epoch = g.group_epoch();
    g.heartbeat(static_beat("a", "i1", -2, None), &topics(2), 100)
        .unwrap();
    let back = g
        .heartbeat(static_join("a2", "i1"), &topics(2), 200)
        .unwrap();
    assert_eq!((back.member_epoch, owned(&back)), (2, a_parts));
    assert_eq!(g.group_epoch(), epoch, "no new group epoch");
    let b = g
        .heartbeat(static_beat("b", "i2", 2, Some(&b_parts)), &topics(2), 300)
        .unwrap();
    assert_eq!((b.member_epoch, owned(&b)), (2, b_parts));
    assert_eq!(g.state(), ConsumerGroupState::Stable);
    // Its session runs from the rejoin, not from the departed member's last heartbeat.
    g.heartbeat(static_beat("b", "i2", 2, None), &topics(2), 1_150)
        .unwrap();
    g.tick(1_199);
    assert_eq!(g.describe().members.len(), 2);
    g.tick(1_200);
    assert_eq!(g.describe().members.len(), 1);
}

#[test]
fn old_member_id_of_a_returned_static_member_is_fenced() {
    let (mut g, _, _) = settled();
    g.heartbeat(static_beat("a", "i1", -2, None), &topics(2), 100)
        .unwrap();
    g.heartbeat(static_join("a2", "i1"), &topics(2), 200)
        .unwrap();
    for epoch in [2, -1, -2] {
        let err = g
            .heartbeat(static_beat("a", "i1", epoch, None), &topics(2), 300)
            .unwrap_err();
        assert_eq!(err.error, ResponseError::FencedInstanceId, "epoch {epoch}");
    }
    let err = g
        .heartbeat(static_beat("a2", "i9", 2, None), &topics(2), 300)
        .unwrap_err();
    assert_eq!(err.error, ResponseError::UnknownMemberId);
    assert!(g
        .heartbeat(static_beat("a2", "i1", 2, None), &topics(2), 300)
        .is_ok());
}

#[test]
fn instance_still_in_use_cannot_join_under_another_member_id() {
    let (mut g, _, _) = settled();
    let err = g
        .heartbeat(static_join("a2", "i1"), &topics(2), 100)
        .unwrap_err();
    assert_eq!(err.error, ResponseError::UnreleasedInstanceId);
}

#[test]
fn static_leave_releases_what_was_still_being_revoked() {
    let mut g = group();
    g.heartbeat(static_join("a", "i1"), &topics(2), 0).unwrap();
    g.heartbeat(join("b"), &topics(2), 0).unwrap();
    let revoking = g
        .heartbeat(static_beat("a", "i1", 1, None), &topics(2), 10)
        .unwrap();
    assert_eq!(owned(&revoking).len(), 1, "a must give one partition up");
    // a leaves before acknowledging: the partition it was revoking goes to b at once, and
    // its rebalance timeout (500 ms, from 10) no longer applies.
    g.heartbeat(static_beat("a", "i1", -2, None), &topics(2), 20)
        .unwrap();
    let b = g
        .heartbeat(beat("b", 2, Some(&[])), &topics(2), 30)
        .unwrap();
    assert_eq!(owned(&b).len(), 1);
    g.heartbeat(beat("b", 2, None), &topics(2), 900).unwrap();
    g.tick(900);
    assert_eq!(
        g.describe().members.len(),
        2,
        "a stays until its session ends at 1010"
    );
    g.tick(1_010);
    assert_eq!(g.describe().members.len(), 1);
}
