//! The consumer group state machine: joins, incremental hand-over, fencing, leaving, expiry,
//! static members, commit checks, subscriptions by regex and the durable record. Timers to the
//! millisecond: [`timers`]; static members leaving and coming back: [`static_members`].

mod static_members;
mod timers;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kafka_protocol::ResponseError;
use uuid::Uuid;

use super::group::{ConsumerGroup, ConsumerGroupState, Heartbeat, HeartbeatAnswer};
use super::topic_regex::compile;
use super::{Assignment, ConsumerGroupConfig, TopicMeta, TopicRegexError, TopicSource};

const TOPIC: u128 = 5;

fn config() -> ConsumerGroupConfig {
    ConsumerGroupConfig {
        session_timeout_ms: 1_000,
        ..ConsumerGroupConfig::default()
    }
}

fn topics(partitions: i32) -> impl Fn(&str) -> Option<TopicMeta> {
    move |name: &str| {
        (name == "t").then(|| TopicMeta {
            id: Uuid::from_u128(TOPIC),
            name: "t".into(),
            partitions,
        })
    }
}

fn join(member: &str) -> Heartbeat {
    Heartbeat {
        member_id: member.into(),
        member_epoch: 0,
        rebalance_timeout_ms: 500,
        subscribed_topic_names: Some(vec!["t".into()]),
        owned: Some(Assignment::new()),
        ..Heartbeat::default()
    }
}

fn beat(member: &str, epoch: i32, owned: Option<&[i32]>) -> Heartbeat {
    Heartbeat {
        member_id: member.into(),
        member_epoch: epoch,
        owned: owned.map(parts),
        ..Heartbeat::default()
    }
}

fn parts(ps: &[i32]) -> Assignment {
    if ps.is_empty() {
        return Assignment::new();
    }
    [(
        Uuid::from_u128(TOPIC),
        ps.iter().copied().collect::<BTreeSet<i32>>(),
    )]
    .into()
}

fn owned(answer: &HeartbeatAnswer) -> Vec<i32> {
    answer
        .assignment
        .as_ref()
        .and_then(|a| a.get(&Uuid::from_u128(TOPIC)))
        .map(|ps| ps.iter().copied().collect())
        .unwrap_or_default()
}

fn group() -> ConsumerGroup {
    ConsumerGroup::new("g", config())
}

#[test]
fn first_member_gets_every_partition_at_epoch_one() {
    let mut g = group();
    let answer = g.heartbeat(join("a"), &topics(4), 0).unwrap();
    assert_eq!(answer.member_epoch, 1);
    assert_eq!(owned(&answer), vec![0, 1, 2, 3]);
    assert_eq!(g.state(), ConsumerGroupState::Stable);
    assert!(g.take_dirty());
}

#[test]
fn partitions_move_to_a_new_member_only_after_the_old_owner_revokes_them() {
    let mut g = group();
    g.heartbeat(join("a"), &topics(4), 0).unwrap();
    // b joins at epoch 2, but a still owns everything: b gets nothing yet.
    let b = g.heartbeat(join("b"), &topics(4), 10).unwrap();
    assert_eq!(b.member_epoch, 2);
    assert!(owned(&b).is_empty());
    assert_eq!(g.state(), ConsumerGroupState::Reconciling);
    // a is told to keep two partitions, at its old epoch, until it gives the others up.
    let a = g.heartbeat(beat("a", 1, None), &topics(4), 20).unwrap();
    assert_eq!(a.member_epoch, 1);
    let kept = owned(&a);
    assert_eq!(kept.len(), 2);
    let b = g
        .heartbeat(beat("b", 2, Some(&[])), &topics(4), 30)
        .unwrap();
    assert!(owned(&b).is_empty(), "a has not revoked yet");
    // a acknowledges: it moves to epoch 2, and b may take the released partitions.
    let a = g
        .heartbeat(beat("a", 1, Some(&kept)), &topics(4), 40)
        .unwrap();
    assert_eq!(a.member_epoch, 2);
    let b = g
        .heartbeat(beat("b", 2, Some(&[])), &topics(4), 50)
        .unwrap();
    let mut all: Vec<i32> = owned(&a).into_iter().chain(owned(&b)).collect();
    all.sort();
    assert_eq!(all, vec![0, 1, 2, 3]);
    assert_eq!(owned(&b).len(), 2);
    assert_eq!(g.state(), ConsumerGroupState::Stable);
}

#[test]
fn wrong_epochs_and_unknown_members_are_fenced() {
    let mut g = group();
    g.heartbeat(join("a"), &topics(2), 0).unwrap();
    let err = g.heartbeat(beat("a", 7, None), &topics(2), 1).unwrap_err();
    assert_eq!(err.error, ResponseError::FencedMemberEpoch);
    let err = g.heartbeat(beat("zz", 1, None), &topics(2), 1).unwrap_err();
    assert_eq!(err.error, ResponseError::UnknownMemberId);
    // Growing the topic moves a to epoch 2; a heartbeat at epoch 1 owning only what it had
    // is a lost answer and is accepted, one without its partitions is fenced.
    let a = g.heartbeat(beat("a", 1, None), &topics(3), 2).unwrap();
    assert_eq!(a.member_epoch, 2);
    assert!(g
        .heartbeat(beat("a", 1, Some(&[0, 1])), &topics(3), 3)
        .is_ok());
    let err = g.heartbeat(beat("a", 1, None), &topics(3), 4).unwrap_err();
    assert_eq!(err.error, ResponseError::FencedMemberEpoch);
}

#[test]
fn leaving_member_hands_its_partitions_to_the_others() {
    let mut g = group();
    g.heartbeat(join("a"), &topics(4), 0).unwrap();
    g.heartbeat(join("b"), &topics(4), 0).unwrap();
    let a = g.heartbeat(beat("a", 1, None), &topics(4), 0).unwrap();
    g.heartbeat(beat("a", 1, Some(&owned(&a))), &topics(4), 0)
        .unwrap();
    let epoch = g.group_epoch();
    let left = g.heartbeat(beat("b", -1, None), &topics(4), 0).unwrap();
    assert_eq!(left.member_epoch, -1);
    assert_eq!(g.group_epoch(), epoch + 1);
    let a = g.heartbeat(beat("a", 2, None), &topics(4), 0).unwrap();
    assert_eq!(owned(&a), vec![0, 1, 2, 3]);
    let err = g.heartbeat(beat("b", -1, None), &topics(4), 0).unwrap_err();
    assert_eq!(err.error, ResponseError::UnknownMemberId);
}

#[test]
fn silent_member_expires_after_its_session() {
    let mut g = group();
    g.heartbeat(join("a"), &topics(2), 0).unwrap();
    g.tick(999);
    assert_eq!(g.state(), ConsumerGroupState::Stable);
    g.tick(1_000);
    assert_eq!(g.state(), ConsumerGroupState::Empty);
    assert_eq!(g.group_epoch(), 2);
}

#[test]
fn member_that_does_not_revoke_within_its_rebalance_timeout_is_removed() {
    let mut g = group();
    g.heartbeat(join("a"), &topics(2), 0).unwrap();
    g.heartbeat(join("b"), &topics(2), 0).unwrap();
    g.heartbeat(beat("a", 1, None), &topics(2), 100).unwrap(); // a must now revoke one
    g.heartbeat(beat("b", 2, Some(&[])), &topics(2), 400)
        .unwrap();
    g.tick(599);
    g.heartbeat(beat("a", 1, None), &topics(2), 599).unwrap();
    g.tick(600); // rebalance timeout 500 ms since 100
    let err = g
        .heartbeat(beat("a", 1, None), &topics(2), 601)
        .unwrap_err();
    assert_eq!(err.error, ResponseError::UnknownMemberId);
    let b = g
        .heartbeat(beat("b", 2, Some(&[])), &topics(2), 602)
        .unwrap();
    assert_eq!(owned(&b), vec![0, 1]);
}

#[test]
fn static_member_comes_back_under_a_new_id_without_a_rebalance() {
    let mut g = group();
    let first = g
        .heartbeat(
            Heartbeat {
                instance_id: Some("i1".into()),
                ..join("a")
            },
            &topics(2),
            0,
        )
        .unwrap();
    let epoch = g.group_epoch();
    let left = g
        .heartbeat(
            Heartbeat {
                instance_id: Some("i1".into()),
                ..beat("a", -2, None)
            },
            &topics(2),
            10,
        )
        .unwrap();
    assert_eq!(left.member_epoch, -2);
    let back = g
        .heartbeat(
            Heartbeat {
                instance_id: Some("i1".into()),
                ..join("a2")
            },
            &topics(2),
            20,
        )
        .unwrap();
    assert_eq!(g.group_epoch(), epoch, "no rebalance");
    assert_eq!(
        (back.member_epoch, owned(&back)),
        (first.member_epoch, owned(&first))
    );
    let err = g
        .heartbeat(
            Heartbeat {
                instance_id: Some("i1".into()),
                ..join("a3")
            },
            &topics(2),
            30,
        )
        .unwrap_err();
    assert_eq!(err.error, ResponseError::UnreleasedInstanceId);
}

#[test]
fn commits_and_fetches_must_carry_the_current_member_epoch() {
    let mut g = group();
    assert_eq!(
        g.check_commit("", -1),
        Ok(()),
        "an empty group takes admin commits"
    );
    g.heartbeat(join("a"), &topics(2), 0).unwrap();
    assert_eq!(g.check_commit("a", 1), Ok(()));
    assert_eq!(g.check_commit("a", 0), Err(ResponseError::StaleMemberEpoch));
    assert_eq!(g.check_commit("x", 1), Err(ResponseError::UnknownMemberId));
    assert_eq!(g.check_commit("", -1), Err(ResponseError::UnknownMemberId));
    assert_eq!(
        g.check_fetch("", -1),
        Ok(()),
        "admins may always read offsets"
    );
    assert_eq!(g.check_fetch("a", 2), Err(ResponseError::StaleMemberEpoch));
}

#[test]
fn members_choose_the_assignor_and_unknown_topics_get_nothing() {
    let mut g = group();
    let a = g
        .heartbeat(
            Heartbeat {
                server_assignor: Some("range".into()),
                subscribed_topic_names: Some(vec!["t".into(), "missing".into()]),
                ..join("a")
            },
            &topics(3),
            0,
        )
        .unwrap();
    assert_eq!(g.assignor().name(), "range");
    assert_eq!(owned(&a), vec![0, 1, 2]);
}

#[test]
fn group_record_round_trip_keeps_epochs_and_assignments() {
    let mut g = group();
    g.heartbeat(join("a"), &topics(4), 0).unwrap();
    g.heartbeat(join("b"), &topics(4), 0).unwrap();
    g.heartbeat(beat("a", 1, None), &topics(4), 0).unwrap();
    let record = g.to_record();
    let mut loaded = ConsumerGroup::from_record("g", config(), record.clone(), 3, 5_000);
    assert_eq!(loaded.to_record(), record);
    assert_eq!(loaded.store_version, Some(3));
    // Members carry on with the epochs they had: a still has to revoke.
    let a = loaded
        .heartbeat(beat("a", 1, None), &topics(4), 5_001)
        .unwrap();
    assert_eq!(a.member_epoch, 1);
    assert_eq!(owned(&a).len(), 2);
    // Sessions restart from the load.
    loaded.tick(5_400);
    assert_eq!(loaded.describe().members.len(), 2);
}

/// A catalog of named topics, each with an id derived from its place in the list.
struct Catalog(BTreeMap<String, TopicMeta>);

impl Catalog {
    fn of(topics: &[(&str, u128, i32)]) -> Catalog {
        Catalog(
            topics
                .iter()
                .map(|&(name, id, partitions)| {
                    let meta = TopicMeta {
                        id: Uuid::from_u128(id),
                        name: name.into(),
                        partitions,
                    };
                    (name.to_string(), meta)
                })
                .collect(),
        )
    }
}

impl TopicSource for Catalog {
    fn topic(&self, name: &str) -> Option<TopicMeta> {
        self.0.get(name).cloned()
    }

    fn matching(&self, pattern: &str) -> Result<Arc<BTreeSet<String>>, TopicRegexError> {
        let regex = compile(pattern)?;
        Ok(Arc::new(
            self.0
                .keys()
                .filter(|n| regex.is_match(n))
                .cloned()
                .collect(),
        ))
    }
}

fn join_regex(member: &str, names: Option<&[&str]>, regex: &str) -> Heartbeat {
    Heartbeat {
        subscribed_topic_names: names.map(|ns| ns.iter().map(|n| n.to_string()).collect()),
        subscribed_topic_regex: Some(regex.into()),
        ..join(member)
    }
}

/// Topic id -> partitions the answer gives the member.
fn by_topic(answer: &HeartbeatAnswer) -> BTreeMap<u128, Vec<i32>> {
    answer
        .assignment
        .iter()
        .flatten()
        .map(|(id, ps)| (id.as_u128(), ps.iter().copied().collect()))
        .collect()
}

#[test]
fn regex_member_is_assigned_the_existing_topics_its_pattern_matches_whole() {
    let catalog = Catalog::of(&[("r-a", 1, 2), ("r-b", 2, 1), ("x-r-a", 3, 1), ("r", 4, 1)]);
    let mut g = group();
    let a = g
        .heartbeat(join_regex("a", None, "r-.*"), &catalog, 0)
        .unwrap();
    assert_eq!(a.member_epoch, 1);
    assert_eq!(
        by_topic(&a),
        BTreeMap::from([(1, vec![0, 1]), (2, vec![0])])
    );
    let described = g.describe();
    let member = &described.members[0].member;
    assert_eq!(member.subscribed_regex.as_deref(), Some("r-.*"));
    assert!(member.subscribed_names.is_empty());
    assert!(g.is_subscribed_to("r-b") && !g.is_subscribed_to("x-r-a"));
}

#[test]
fn topic_created_later_that_matches_is_assigned_at_the_next_heartbeat_and_dropped_when_deleted() {
    let mut g = group();
    let before = Catalog::of(&[("r-a", 1, 2)]);
    let a = g
        .heartbeat(join_regex("a", Some(&[]), "r-.*"), &before, 0)
        .unwrap();
    assert_eq!(by_topic(&a), BTreeMap::from([(1, vec![0, 1])]));
    let a = g.heartbeat(beat("a", 1, Some(&[])), &before, 10).unwrap();
    assert_eq!(a.member_epoch, 1, "nothing changed, no new epoch");

    let created = Catalog::of(&[("r-a", 1, 2), ("r-new", 2, 3), ("other", 3, 1)]);
    let a = g.heartbeat(beat("a", 1, None), &created, 20).unwrap();
    assert_eq!(a.member_epoch, 2);
    assert_eq!(
        by_topic(&a),
        BTreeMap::from([(1, vec![0, 1]), (2, vec![0, 1, 2])])
    );

    // Once deleted, the topic drops out: the member gives its partitions up, then moves on.
    let deleted = Catalog::of(&[("r-new", 2, 3), ("other", 3, 1)]);
    let a = g.heartbeat(beat("a", 2, None), &deleted, 30).unwrap();
    assert_eq!(by_topic(&a), BTreeMap::from([(2, vec![0, 1, 2])]));
    let kept: Assignment = [(Uuid::from_u128(2), BTreeSet::from([0, 1, 2]))].into();
    let a = g
        .heartbeat(
            Heartbeat {
                owned: Some(kept),
                ..beat("a", 2, None)
            },
            &deleted,
            40,
        )
        .unwrap();
    assert_eq!(a.member_epoch, 3);
    assert_eq!(by_topic(&a), BTreeMap::from([(2, vec![0, 1, 2])]));
    assert!(!g.is_subscribed_to("r-a"));
}

#[test]
fn regex_matches_beyond_subscribed_topics_max_are_not_assigned() {
    let catalog = Catalog::of(&[("r-a", 1, 1), ("r-b", 2, 1), ("r-c", 3, 1)]);
    let mut g = ConsumerGroup::new(
        "g",
        ConsumerGroupConfig {
            subscribed_topics_max: 2,
            ..config()
        },
    );
    let a = g
        .heartbeat(join_regex("a", None, "r-.*"), &catalog, 0)
        .unwrap();
    assert_eq!(by_topic(&a), BTreeMap::from([(1, vec![0]), (2, vec![0])]));
    assert!(g.is_subscribed_to("r-b") && !g.is_subscribed_to("r-c"));
}

#[test]
fn topic_names_and_regex_are_united() {
    let catalog = Catalog::of(&[("t", 1, 1), ("r-a", 2, 1), ("r-b", 3, 1), ("u", 4, 1)]);
    let mut g = group();
    let a = g
        .heartbeat(join_regex("a", Some(&["t", "r-a"]), "r-.*"), &catalog, 0)
        .unwrap();
    assert_eq!(
        by_topic(&a),
        BTreeMap::from([(1, vec![0]), (2, vec![0]), (3, vec![0])])
    );
    // A second member by names only shares what both subscribe to.
    g.heartbeat(
        Heartbeat {
            subscribed_topic_names: Some(vec!["u".into()]),
            ..join("b")
        },
        &catalog,
        0,
    )
    .unwrap();
    let topics: Vec<String> = g.describe().topics.into_keys().collect();
    assert_eq!(topics, ["r-a", "r-b", "t", "u"]);
}

#[test]
fn invalid_regex_is_refused_with_invalid_regular_expression_and_changes_nothing() {
    let catalog = Catalog::of(&[("r-a", 1, 1)]);
    let mut g = group();
    let err = g
        .heartbeat(join_regex("a", None, "r-(a"), &catalog, 0)
        .unwrap_err();
    assert_eq!(err.error, ResponseError::InvalidRegularExpression);
    assert!(err.message.contains("r-(a"), "{}", err.message);
    assert!(g.is_empty());
    assert!(!g.take_dirty());

    g.heartbeat(join_regex("a", None, "r-.*"), &catalog, 0)
        .unwrap();
    let epoch = g.group_epoch();
    let err = g
        .heartbeat(
            Heartbeat {
                subscribed_topic_regex: Some("*".into()),
                ..beat("a", 1, None)
            },
            &catalog,
            10,
        )
        .unwrap_err();
    assert_eq!(err.error, ResponseError::InvalidRegularExpression);
    assert_eq!(g.group_epoch(), epoch);
    assert_eq!(
        g.describe().members[0].member.subscribed_regex.as_deref(),
        Some("r-.*")
    );
}

#[test]
fn joining_member_without_names_or_regex_is_refused() {
    let mut g = group();
    let err = g
        .heartbeat(
            Heartbeat {
                subscribed_topic_names: None,
                ..join("a")
            },
            &topics(1),
            0,
        )
        .unwrap_err();
    assert_eq!(err.error, ResponseError::InvalidRequest);
}

#[test]
fn empty_regex_clears_the_regex_subscription_and_absent_regex_keeps_it() {
    let catalog = Catalog::of(&[("t", 1, 1), ("r-a", 2, 2)]);
    let mut g = group();
    let a = g
        .heartbeat(join_regex("a", Some(&["t"]), "r-.*"), &catalog, 0)
        .unwrap();
    assert_eq!(
        by_topic(&a),
        BTreeMap::from([(1, vec![0]), (2, vec![0, 1])])
    );
    let a = g.heartbeat(beat("a", 1, None), &catalog, 10).unwrap();
    assert_eq!(a.member_epoch, 1, "no regex in the heartbeat keeps it");

    let cleared = g
        .heartbeat(
            Heartbeat {
                subscribed_topic_regex: Some(String::new()),
                ..beat("a", 1, None)
            },
            &catalog,
            20,
        )
        .unwrap();
    // The member must first give up the regex's partitions, then moves to the new epoch.
    assert_eq!(by_topic(&cleared), BTreeMap::from([(1, vec![0])]));
    let owned_now: Assignment = [(Uuid::from_u128(1), BTreeSet::from([0]))].into();
    let a = g
        .heartbeat(
            Heartbeat {
                owned: Some(owned_now),
                ..beat("a", 1, None)
            },
            &catalog,
            30,
        )
        .unwrap();
    assert_eq!(a.member_epoch, 2);
    assert_eq!(by_topic(&a), BTreeMap::from([(1, vec![0])]));
    let member = &g.describe().members[0].member;
    assert_eq!(member.subscribed_regex, None);
    assert!(member.regex_topics.is_empty());
    assert!(!g.is_subscribed_to("r-a"));
}

#[test]
fn members_with_the_same_regex_share_its_topics() {
    let catalog = Catalog::of(&[("r-a", 1, 2), ("r-b", 2, 2)]);
    let mut g = group();
    g.heartbeat(join_regex("a", None, "r-.*"), &catalog, 0)
        .unwrap();
    g.heartbeat(join_regex("b", None, "r-.*"), &catalog, 0)
        .unwrap();
    let described = g.describe();
    let targets: Vec<usize> = described
        .members
        .iter()
        .map(|m| m.target.values().map(BTreeSet::len).sum())
        .collect();
    assert_eq!(targets, [2, 2]);
}

#[test]
fn group_record_round_trip_keeps_regex_subscriptions() {
    let catalog = Catalog::of(&[("r-a", 1, 2), ("t", 2, 1)]);
    let mut g = group();
    g.heartbeat(join_regex("a", Some(&["t"]), "r-.*"), &catalog, 0)
        .unwrap();
    let record = g.to_record();
    assert_eq!(
        record.members[0].subscribed,
        BTreeSet::from(["t".to_string()])
    );
    // Loaded at 500: a's new session outlives b's, which runs out at the tick below.
    let mut loaded = ConsumerGroup::from_record("g", config(), record.clone(), 1, 500);
    assert_eq!(loaded.to_record(), record);
    assert!(
        loaded.is_subscribed_to("r-a"),
        "regex matches count before any heartbeat"
    );
    // A tick that reassigns (b's session ran out) still gives a the regex's topics.
    loaded
        .heartbeat(
            Heartbeat {
                subscribed_topic_names: Some(vec!["t".into()]),
                ..join("b")
            },
            &catalog,
            0,
        )
        .unwrap();
    loaded.tick(1_000);
    let described = loaded.describe();
    let target = &described.members[0].target;
    assert_eq!(target.get(&Uuid::from_u128(1)).map(BTreeSet::len), Some(2));
}

#[test]
fn regex_replacing_the_names_it_matches_is_stored_without_a_new_epoch() {
    let catalog = Catalog::of(&[("t", 1, 1)]);
    let mut g = group();
    g.heartbeat(join("a"), &catalog, 0).unwrap();
    assert!(g.take_dirty());
    let a = g
        .heartbeat(
            Heartbeat {
                subscribed_topic_names: Some(vec![]),
                subscribed_topic_regex: Some("t.*".into()),
                ..beat("a", 1, None)
            },
            &catalog,
            10,
        )
        .unwrap();
    assert_eq!(a.member_epoch, 1, "the same topics: no rebalance");
    assert!(g.take_dirty(), "the new regex must be stored");
    assert_eq!(
        g.to_record().members[0].subscribed_regex.as_deref(),
        Some("t.*")
    );
}
