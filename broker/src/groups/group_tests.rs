//! The classic group state machine under a hand-moved clock (every operation takes `now_ms`).
//! Every timer against its configured value: [`timers`]; static members: [`static_members`].

mod static_members;
mod timers;

use std::collections::HashMap;

use bytes::Bytes;
use kafka_protocol::ResponseError;
use tokio::sync::oneshot;

use super::group::{Group, GroupState, JoinRequest, Outcome, SyncRequest};
use super::member::{JoinResponse, Protocol, SyncResponse};
use super::GroupConfig;

const T0: u64 = 1_000_000;
const SESSION_MS: i32 = 10_000;
const REBALANCE_MS: i32 = 30_000;

fn config() -> GroupConfig {
    GroupConfig {
        initial_rebalance_delay_ms: 0,
        ..GroupConfig::default()
    }
}

fn request(member_id: &str, protocols: &[(&str, &'static [u8])]) -> JoinRequest {
    JoinRequest {
        member_id: member_id.to_string(),
        group_instance_id: None,
        client_id: "client".to_string(),
        client_host: String::new(),
        session_timeout_ms: SESSION_MS,
        rebalance_timeout_ms: REBALANCE_MS,
        protocol_type: "consumer".to_string(),
        protocols: protocols
            .iter()
            .map(|(name, md)| Protocol {
                name: name.to_string(),
                metadata: Bytes::from_static(md),
            })
            .collect(),
        require_known_member_id: false,
        supports_skip_assignment: false,
    }
}

fn range(member_id: &str) -> JoinRequest {
    request(member_id, &[("range", b"m")])
}

fn static_member(member_id: &str, instance: &str) -> JoinRequest {
    JoinRequest {
        group_instance_id: Some(instance.to_string()),
        ..range(member_id)
    }
}

fn ready<T: std::fmt::Debug>(outcome: Outcome<T>) -> T {
    match outcome {
        Outcome::Ready(answer) => answer,
        Outcome::Waiting(_) => panic!("expected an immediate answer"),
    }
}

fn waiting<T>(outcome: Outcome<T>) -> oneshot::Receiver<T> {
    match outcome {
        Outcome::Waiting(answer) => answer,
        Outcome::Ready(_) => panic!("expected to wait"),
    }
}

fn answered<T>(answer: &mut oneshot::Receiver<T>) -> T {
    answer.try_recv().expect("answer expected by now")
}

fn sync(member_id: &str, generation_id: i32, assignments: &[(&str, &'static [u8])]) -> SyncRequest {
    SyncRequest {
        member_id: member_id.to_string(),
        group_instance_id: None,
        generation_id,
        protocol_type: Some("consumer".to_string()),
        protocol_name: Some("range".to_string()),
        assignments: assignments
            .iter()
            .map(|(m, a)| (m.to_string(), Bytes::from_static(a)))
            .collect(),
    }
}

/// When [`stable_group`]'s members are answered: they join together in the first window of
/// the initial delay, which buys them a second one.
const STABLE_AT: u64 = T0 + 2 * DELAY_MS;
const DELAY_MS: u64 = 1000;

/// A stable group of `n` members (joined together inside the initial delay, synced at
/// [`STABLE_AT`]); returns their ids, leader first, each assigned `a-<id>`.
fn stable_group(n: usize) -> (Group, Vec<String>) {
    stable_group_of(config(), (0..n).map(|_| range("")).collect())
}

/// A stable group of the members joining with `requests` at `T0`, as [`stable_group`];
/// `config`'s initial delay is replaced by [`DELAY_MS`].
fn stable_group_of(config: GroupConfig, requests: Vec<JoinRequest>) -> (Group, Vec<String>) {
    let mut group = Group::new(
        "g",
        GroupConfig {
            initial_rebalance_delay_ms: DELAY_MS,
            ..config
        },
    );
    let mut answers: Vec<_> = requests
        .into_iter()
        .map(|request| waiting(group.join(request, T0)))
        .collect();
    group.tick(STABLE_AT);
    let joined: Vec<JoinResponse> = answers.iter_mut().map(answered).collect();
    let leader = joined[0].leader_id.clone();
    let generation = group.generation_id();
    assert_eq!(generation, 1);
    let mut members: Vec<String> = joined.iter().map(|j| j.member_id.clone()).collect();
    members.sort_by_key(|m| *m != leader);
    let assignments: Vec<(String, Bytes)> = members
        .iter()
        .map(|m| (m.clone(), Bytes::from(format!("a-{m}"))))
        .collect();
    // Followers first, so that they wait for the leader.
    let instances: HashMap<String, Option<String>> = joined
        .iter()
        .map(|j| (j.member_id.clone(), group_instance(&group, &j.member_id)))
        .collect();
    let mut syncs: Vec<_> = members
        .iter()
        .rev()
        .map(|m| {
            let mut request = sync(m, generation, &[]);
            request.group_instance_id = instances[m].clone();
            if *m == leader {
                request.assignments = assignments.clone();
            }
            waiting(group.sync(request, STABLE_AT))
        })
        .collect();
    for answer in syncs.iter_mut() {
        assert_eq!(answered(answer).error, None);
    }
    assert_eq!(group.state(), GroupState::Stable);
    (group, members)
}

/// The `group.instance.id` of a member, as DescribeGroups shows it.
fn group_instance(group: &Group, member_id: &str) -> Option<String> {
    group
        .describe()
        .members
        .into_iter()
        .find(|m| m.member_id == member_id)
        .and_then(|m| m.group_instance_id)
}

#[test]
fn first_join_from_v4_client_gets_member_id_required_then_joins() {
    let mut group = Group::new("g", config());
    let mut first = range("");
    first.require_known_member_id = true;
    let answer = ready(group.join(first.clone(), T0));
    assert_eq!(answer.error, Some(ResponseError::MemberIdRequired));
    assert!(answer.member_id.starts_with("client-"));
    let mut rejoin = range(&answer.member_id);
    rejoin.require_known_member_id = true;
    let joined = answered(&mut waiting(group.join(rejoin, T0)));
    assert_eq!(joined.error, None);
    assert_eq!(joined.generation_id, 1);
    assert_eq!(joined.leader_id, answer.member_id);
    assert_eq!(joined.members.len(), 1, "the leader sees every member");
    assert_eq!(joined.protocol_name.as_deref(), Some("range"));
    assert_eq!(group.state(), GroupState::CompletingRebalance);
}

#[test]
fn leader_gets_member_metadata_and_followers_do_not() {
    let mut group = Group::new("g", config());
    let first = answered(&mut waiting(
        group.join(request("", &[("range", b"r1")]), T0),
    ));
    let mut second = waiting(group.join(request("", &[("range", b"r2")]), T0));
    let mut again = waiting(group.join(request(&first.member_id, &[("range", b"r1")]), T0));
    let (again, second) = (answered(&mut again), answered(&mut second));
    assert_eq!(again.generation_id, 2);
    assert_eq!(again.leader_id, first.member_id);
    let mut metadata: Vec<_> = again.members.iter().map(|m| m.metadata.clone()).collect();
    metadata.sort();
    assert_eq!(
        metadata,
        vec![Bytes::from_static(b"r1"), Bytes::from_static(b"r2")]
    );
    assert!(second.members.is_empty());
}

#[test]
fn sync_hands_out_the_leaders_assignment_and_makes_the_group_stable() {
    let (mut group, members) = stable_group(3);
    assert!(
        group.take_dirty(),
        "a completed generation must be persisted"
    );
    let generation = group.generation_id();
    for member in &members {
        let answer = ready(group.sync(sync(member, generation, &[]), T0));
        assert_eq!(answer.assignment, Bytes::from(format!("a-{member}")));
    }
    let record = group.to_record();
    assert_eq!(record.members.len(), 3);
    assert_eq!(record.generation_id, generation);
}

#[test]
fn heartbeat_answers_rebalance_in_progress_while_a_rebalance_is_prepared() {
    let (mut group, members) = stable_group(2);
    let generation = group.generation_id();
    assert_eq!(group.heartbeat(&members[1], None, generation, T0), Ok(()));
    let _rejoin = waiting(group.join(range(&members[0]), T0)); // the leader forces a rebalance
    assert_eq!(group.state(), GroupState::PreparingRebalance);
    assert_eq!(
        group.heartbeat(&members[1], None, generation, T0),
        Err(ResponseError::RebalanceInProgress)
    );
    // Commits of the current generation are still accepted, so eager clients can commit.
    assert_eq!(
        group.check_commit(&members[1], None, generation, T0),
        Ok(())
    );
}

#[test]
fn stale_generation_and_unknown_member_are_rejected() {
    let (mut group, members) = stable_group(2);
    let generation = group.generation_id();
    assert_eq!(
        group.heartbeat(&members[0], None, generation - 1, T0),
        Err(ResponseError::IllegalGeneration)
    );
    assert_eq!(
        group.heartbeat("nobody", None, generation, T0),
        Err(ResponseError::UnknownMemberId)
    );
    assert_eq!(
        ready(group.sync(sync(&members[0], generation + 1, &[]), T0)).error,
        Some(ResponseError::IllegalGeneration)
    );
    assert_eq!(
        group.check_commit(&members[0], None, generation - 1, T0),
        Err(ResponseError::IllegalGeneration)
    );
    assert_eq!(
        group.check_commit("", None, -1, T0),
        Err(ResponseError::UnknownMemberId)
    );
    assert_eq!(
        ready(group.join(range("nobody"), T0)).error,
        Some(ResponseError::UnknownMemberId)
    );
}

#[test]
fn commit_during_completing_rebalance_is_rebalance_in_progress() {
    let mut group = Group::new("g", config());
    let joined = answered(&mut waiting(group.join(range(""), T0)));
    assert_eq!(group.state(), GroupState::CompletingRebalance);
    assert_eq!(
        group.check_commit(&joined.member_id, None, joined.generation_id, T0),
        Err(ResponseError::RebalanceInProgress)
    );
}

#[test]
fn simple_commit_with_negative_generation_is_allowed_only_for_an_empty_group() {
    let mut group = Group::new("g", config());
    assert_eq!(group.check_commit("", None, -1, T0), Ok(()));
    let _pending = waiting(group.join(range(""), T0));
    assert_eq!(
        group.check_commit("", None, -1, T0),
        Err(ResponseError::UnknownMemberId)
    );
}

#[test]
fn last_member_leaving_empties_the_group_with_a_new_generation() {
    let (mut group, members) = stable_group(2);
    let generation = group.generation_id();
    let _ = group.take_dirty();
    assert_eq!(group.leave(&members[1], None, T0), Ok(()));
    assert_eq!(group.state(), GroupState::PreparingRebalance);
    assert_eq!(group.leave(&members[0], None, T0), Ok(()));
    assert_eq!(group.state(), GroupState::Empty);
    assert_eq!(group.generation_id(), generation + 1);
    assert!(group.take_dirty());
    assert_eq!(
        group.leave(&members[0], None, T0),
        Err(ResponseError::UnknownMemberId)
    );
}

#[test]
fn member_with_incompatible_protocols_is_rejected() {
    let mut group = Group::new("g", config());
    let _pending = waiting(group.join(request("", &[("range", b"")]), T0));
    let answer = ready(group.join(request("", &[("roundrobin", b"")]), T0));
    assert_eq!(answer.error, Some(ResponseError::InconsistentGroupProtocol));
    let mut other_type = range("");
    other_type.protocol_type = "connect".to_string();
    assert_eq!(
        ready(group.join(other_type, T0)).error,
        Some(ResponseError::InconsistentGroupProtocol)
    );
    assert_eq!(
        ready(Group::new("h", config()).join(request("", &[]), T0)).error,
        Some(ResponseError::InconsistentGroupProtocol)
    );
}

#[test]
fn protocol_common_to_all_members_is_chosen() {
    let mut group = Group::new("g", config());
    let first = answered(&mut waiting(group.join(
        request("", &[("cooperative-sticky", b""), ("range", b"")]),
        T0,
    )));
    assert_eq!(first.protocol_name.as_deref(), Some("cooperative-sticky"));
    let mut second = waiting(group.join(request("", &[("range", b""), ("roundrobin", b"")]), T0));
    let mut again = waiting(group.join(
        request(
            &first.member_id,
            &[("cooperative-sticky", b""), ("range", b"")],
        ),
        T0,
    ));
    assert_eq!(answered(&mut again).protocol_name.as_deref(), Some("range"));
    assert_eq!(
        answered(&mut second).protocol_name.as_deref(),
        Some("range")
    );
}

#[test]
fn group_refuses_members_beyond_its_limit() {
    let mut group = Group::new(
        "g",
        GroupConfig {
            members_max: 2,
            ..config()
        },
    );
    let _a = waiting(group.join(range(""), T0));
    let _b = waiting(group.join(range(""), T0));
    assert_eq!(
        ready(group.join(range(""), T0)).error,
        Some(ResponseError::GroupMaxSizeReached)
    );
}

#[test]
fn restored_group_is_stable_and_expires_members_that_do_not_return() {
    let (group, members) = stable_group(2);
    let record = group.to_record();
    let mut restored = Group::from_record("g", config(), record, 7, T0 + 50_000);
    assert_eq!(restored.state(), GroupState::Stable);
    assert_eq!(restored.store_version, Some(7));
    let generation = restored.generation_id();
    assert_eq!(
        restored.heartbeat(&members[0], None, generation, T0 + 55_000),
        Ok(())
    );
    restored.tick(T0 + 60_000);
    assert_eq!(restored.member_count(), 1);
    assert_eq!(restored.state(), GroupState::PreparingRebalance);
}

#[test]
fn follower_sync_waiting_for_the_leader_is_told_to_rejoin_when_the_leader_leaves() {
    let mut group = Group::new("g", config());
    let a = answered(&mut waiting(group.join(range(""), T0)));
    let mut b = waiting(group.join(range(""), T0));
    let mut a2 = waiting(group.join(range(&a.member_id), T0));
    let (a2, b) = (answered(&mut a2), answered(&mut b));
    let leader = a2.leader_id.clone();
    let follower = if b.member_id == leader {
        a2.member_id.clone()
    } else {
        b.member_id.clone()
    };
    let mut pending: oneshot::Receiver<SyncResponse> =
        waiting(group.sync(sync(&follower, a2.generation_id, &[]), T0));
    assert_eq!(group.leave(&leader, None, T0), Ok(()));
    assert_eq!(
        answered(&mut pending).error,
        Some(ResponseError::RebalanceInProgress)
    );
}

#[test]
fn subscription_metadata_decides_whether_offsets_may_be_deleted() {
    use kafka_protocol::messages::ConsumerProtocolSubscription;
    use kafka_protocol::protocol::{Encodable, StrBytes};
    let subscription = ConsumerProtocolSubscription::default()
        .with_topics(vec![StrBytes::from_static_str("orders")]);
    let mut metadata = bytes::BytesMut::new();
    metadata.extend_from_slice(&1i16.to_be_bytes());
    subscription.encode(&mut metadata, 1).unwrap();
    let mut group = Group::new("g", config());
    let mut join = range("");
    join.protocols = vec![Protocol {
        name: "range".into(),
        metadata: metadata.freeze(),
    }];
    let _pending = waiting(group.join(join, T0));
    assert!(group.is_subscribed_to("orders"));
    assert!(!group.is_subscribed_to("payments"));
}
