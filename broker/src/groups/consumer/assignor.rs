//! Server-side assignors. `uniform` (the default) balances partitions across the members that
//! subscribe to them and keeps every partition where it is unless balance requires a move;
//! `range` gives each member a contiguous range of every topic it subscribes to.

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use super::{insert, partition_count, Assignment, TopicsMeta};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Assignor {
    Uniform,
    Range,
}

impl Assignor {
    pub const DEFAULT: Assignor = Assignor::Uniform;

    pub fn parse(name: &str) -> Option<Assignor> {
        match name {
            "uniform" => Some(Assignor::Uniform),
            "range" => Some(Assignor::Range),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Assignor::Uniform => "uniform",
            Assignor::Range => "range",
        }
    }

    /// The target assignment of every member (members without partitions included).
    pub fn assign(
        self,
        members: &BTreeMap<String, MemberSpec>,
        topics: &TopicsMeta,
    ) -> BTreeMap<String, Assignment> {
        match self {
            Assignor::Uniform => uniform(members, topics),
            Assignor::Range => range(members, topics),
        }
    }
}

/// What an assignor knows of a member.
#[derive(Debug, Clone, Default)]
pub struct MemberSpec {
    pub subscribed: BTreeSet<String>,
    /// The member's previous target, for stickiness.
    pub current: Assignment,
}

fn range(
    members: &BTreeMap<String, MemberSpec>,
    topics: &TopicsMeta,
) -> BTreeMap<String, Assignment> {
    let mut out: BTreeMap<String, Assignment> = members
        .keys()
        .map(|id| (id.clone(), Assignment::new()))
        .collect();
    for (name, topic) in topics {
        let subscribers: Vec<&String> = members
            .iter()
            .filter(|(_, spec)| spec.subscribed.contains(name))
            .map(|(id, _)| id)
            .collect();
        if subscribers.is_empty() || topic.partitions <= 0 {
            continue;
        }
        let count = subscribers.len() as i32;
        let (base, extra) = (topic.partitions / count, topic.partitions % count);
        let mut next = 0;
        for (i, member) in subscribers.into_iter().enumerate() {
            let size = base + i32::from((i as i32) < extra);
            let assignment = out.entry(member.clone()).or_default();
            for partition in next..next + size {
                insert(assignment, topic.id, partition);
            }
            next += size;
        }
    }
    out
}

fn uniform(
    members: &BTreeMap<String, MemberSpec>,
    topics: &TopicsMeta,
) -> BTreeMap<String, Assignment> {
    let by_id: BTreeMap<Uuid, (&str, i32)> = topics
        .values()
        .map(|t| (t.id, (t.name.as_str(), t.partitions)))
        .collect();
    let eligible = |member: &str, topic: &Uuid| -> bool {
        by_id.get(topic).is_some_and(|(name, _)| {
            members
                .get(member)
                .is_some_and(|m| m.subscribed.contains(*name))
        })
    };
    let mut out: BTreeMap<String, Assignment> = members
        .keys()
        .map(|id| (id.clone(), Assignment::new()))
        .collect();
    // Keep what members had, if it is still valid and not claimed twice.
    let mut taken: BTreeSet<(Uuid, i32)> = BTreeSet::new();
    for (member, spec) in members {
        for (topic, partitions) in &spec.current {
            let Some(&(_, count)) = by_id.get(topic) else {
                continue;
            };
            if !eligible(member, topic) {
                continue;
            }
            for &partition in partitions {
                if partition < count && taken.insert((*topic, partition)) {
                    insert(out.entry(member.clone()).or_default(), *topic, partition);
                }
            }
        }
    }
    let mut loads: BTreeMap<String, usize> = out
        .iter()
        .map(|(id, a)| (id.clone(), partition_count(a)))
        .collect();
    // Hand out the rest, each to the least loaded eligible member.
    for (topic, &(_, count)) in &by_id {
        for partition in 0..count {
            if taken.contains(&(*topic, partition)) {
                continue;
            }
            let least = loads
                .iter()
                .filter(|(id, _)| eligible(id, topic))
                .min_by_key(|(id, load)| (**load, (*id).clone()))
                .map(|(id, _)| id.clone());
            if let Some(member) = least {
                insert(out.entry(member.clone()).or_default(), *topic, partition);
                *loads.entry(member).or_default() += 1;
                taken.insert((*topic, partition));
            }
        }
    }
    // Move partitions from the most to the least loaded members until no move helps. Each
    // move lowers the sum of squared loads, so this ends; the bound is a guard.
    let moves_max = taken.len() * members.len().max(1);
    for _ in 0..moves_max {
        let Some(step) = best_move(&out, &loads, &eligible) else {
            break;
        };
        let (from, to, topic, partition) = step;
        if let Some(partitions) = out.get_mut(&from).and_then(|a| a.get_mut(&topic)) {
            partitions.remove(&partition);
            if partitions.is_empty() {
                out.get_mut(&from).map(|a| a.remove(&topic));
            }
        }
        insert(out.entry(to.clone()).or_default(), topic, partition);
        *loads.entry(from).or_default() -= 1;
        *loads.entry(to).or_default() += 1;
    }
    out
}

/// A partition of a most-loaded member that a member with at least two fewer can take.
fn best_move(
    out: &BTreeMap<String, Assignment>,
    loads: &BTreeMap<String, usize>,
    eligible: &impl Fn(&str, &Uuid) -> bool,
) -> Option<(String, String, Uuid, i32)> {
    let mut donors: Vec<(&String, usize)> = loads.iter().map(|(id, l)| (id, *l)).collect();
    donors.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let mut takers = donors.clone();
    takers.reverse();
    for (donor, donor_load) in &donors {
        for (taker, taker_load) in &takers {
            if taker_load + 2 > *donor_load {
                break;
            }
            // The highest partition moves, so the low ones stay put.
            let Some(owned) = out.get(*donor) else {
                continue;
            };
            for (topic, partitions) in owned.iter().rev() {
                if !eligible(taker, topic) {
                    continue;
                }
                if let Some(&partition) = partitions.iter().next_back() {
                    return Some(((*donor).clone(), (*taker).clone(), *topic, partition));
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::groups::consumer::TopicMeta;

    fn topic(name: &str, n: u128, partitions: i32) -> (String, TopicMeta) {
        (
            name.to_string(),
            TopicMeta {
                id: Uuid::from_u128(n),
                name: name.to_string(),
                partitions,
            },
        )
    }

    fn spec(topics: &[&str], current: &Assignment) -> MemberSpec {
        MemberSpec {
            subscribed: topics.iter().map(|t| t.to_string()).collect(),
            current: current.clone(),
        }
    }

    fn loads(out: &BTreeMap<String, Assignment>) -> Vec<usize> {
        out.values().map(partition_count).collect()
    }

    fn owners(out: &BTreeMap<String, Assignment>) -> BTreeMap<(Uuid, i32), String> {
        let mut owners = BTreeMap::new();
        for (member, a) in out {
            for (t, ps) in a {
                for p in ps {
                    assert!(owners.insert((*t, *p), member.clone()).is_none(), "twice");
                }
            }
        }
        owners
    }

    fn members(
        ids: &[&str],
        previous: &BTreeMap<String, Assignment>,
    ) -> BTreeMap<String, MemberSpec> {
        ids.iter()
            .map(|id| {
                let current = previous.get(*id).cloned().unwrap_or_default();
                (id.to_string(), spec(&["t"], &current))
            })
            .collect()
    }

    #[test]
    fn uniform_balances_six_partitions_over_three_members() {
        let topics: TopicsMeta = [topic("t", 1, 6)].into();
        let out = Assignor::Uniform.assign(&members(&["a", "b", "c"], &BTreeMap::new()), &topics);
        assert_eq!(loads(&out), vec![2, 2, 2]);
        assert_eq!(owners(&out).len(), 6);
    }

    #[test]
    fn uniform_moves_only_what_a_joining_member_needs() {
        let topics: TopicsMeta = [topic("t", 1, 12)].into();
        let before =
            Assignor::Uniform.assign(&members(&["a", "b", "c"], &BTreeMap::new()), &topics);
        let after = Assignor::Uniform.assign(&members(&["a", "b", "c", "d"], &before), &topics);
        assert_eq!(loads(&after), vec![3, 3, 3, 3]);
        let (old, new) = (owners(&before), owners(&after));
        let moved = old.iter().filter(|(tp, m)| new[*tp] != **m).count();
        assert_eq!(moved, 3, "only the new member's share moves");
    }

    #[test]
    fn uniform_keeps_survivors_partitions_when_a_member_leaves() {
        let topics: TopicsMeta = [topic("t", 1, 7)].into();
        let before =
            Assignor::Uniform.assign(&members(&["a", "b", "c"], &BTreeMap::new()), &topics);
        let after = Assignor::Uniform.assign(&members(&["a", "c"], &before), &topics);
        let mut sorted = loads(&after);
        sorted.sort();
        assert_eq!(sorted, vec![3, 4]);
        for survivor in ["a", "c"] {
            for (t, ps) in &before[survivor] {
                assert!(
                    ps.is_subset(&after[survivor][t]),
                    "{survivor} lost a partition"
                );
            }
        }
        assert_eq!(owners(&after).len(), 7);
    }

    #[test]
    fn uniform_assigns_only_subscribed_topics() {
        let topics: TopicsMeta = [topic("t", 1, 4), topic("u", 2, 4)].into();
        let mut specs = BTreeMap::new();
        specs.insert("a".to_string(), spec(&["t"], &Assignment::new()));
        specs.insert("b".to_string(), spec(&["t", "u"], &Assignment::new()));
        let out = Assignor::Uniform.assign(&specs, &topics);
        assert!(out["a"].keys().all(|t| *t == Uuid::from_u128(1)));
        assert_eq!(owners(&out).len(), 8);
        assert_eq!(loads(&out), vec![4, 4]);
    }

    #[test]
    fn uniform_drops_partitions_of_unsubscribed_or_shrunk_topics() {
        let topics: TopicsMeta = [topic("t", 1, 2)].into();
        let mut stale = Assignment::new();
        insert(&mut stale, Uuid::from_u128(1), 5);
        insert(&mut stale, Uuid::from_u128(9), 0);
        let mut specs = BTreeMap::new();
        specs.insert("a".to_string(), spec(&["t"], &stale));
        let out = Assignor::Uniform.assign(&specs, &topics);
        assert_eq!(
            out["a"],
            [(Uuid::from_u128(1), BTreeSet::from([0, 1]))].into()
        );
    }

    #[test]
    fn range_gives_contiguous_ranges_with_the_remainder_first() {
        let topics: TopicsMeta = [topic("t", 1, 7)].into();
        let out = Assignor::Range.assign(&members(&["a", "b", "c"], &BTreeMap::new()), &topics);
        let t = Uuid::from_u128(1);
        assert_eq!(out["a"][&t], BTreeSet::from([0, 1, 2]));
        assert_eq!(out["b"][&t], BTreeSet::from([3, 4]));
        assert_eq!(out["c"][&t], BTreeSet::from([5, 6]));
    }

    #[test]
    fn range_leaves_extra_members_empty() {
        let topics: TopicsMeta = [topic("t", 1, 2)].into();
        let out = Assignor::Range.assign(&members(&["a", "b", "c"], &BTreeMap::new()), &topics);
        assert_eq!(loads(&out), vec![1, 1, 0]);
    }

    #[test]
    fn assignor_names_round_trip() {
        for a in [Assignor::Uniform, Assignor::Range] {
            assert_eq!(Assignor::parse(a.name()), Some(a));
        }
        assert_eq!(Assignor::parse("sticky"), None);
    }
}
