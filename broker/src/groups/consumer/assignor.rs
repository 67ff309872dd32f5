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
        // Positive (checked above), so the conversion cannot fail.
        let total = usize::try_from(topic.partitions).unwrap_or(0);
        let (base, extra) = (total / subscribers.len(), total % subscribers.len());
        let mut partitions = 0..topic.partitions;
        for (i, member) in subscribers.into_iter().enumerate() {
            let size = base + usize::from(i < extra);
            let assignment = out.entry(member.clone()).or_default();
            for partition in partitions.by_ref().take(size) {
                insert(assignment, topic.id, partition);
            }
        }
    }
    out
}

fn uniform(
    members: &BTreeMap<String, MemberSpec>,
    topics: &TopicsMeta,
) -> BTreeMap<String, Assignment> {
    // Members by index (in id order, which breaks ties), and for each topic which of them
    // subscribe to it: the loops below then compare integers instead of looking up names.
    let specs: Vec<&MemberSpec> = members.values().collect();
    let counts: BTreeMap<Uuid, i32> = topics.values().map(|t| (t.id, t.partitions)).collect();
    let subscribers: BTreeMap<Uuid, Vec<bool>> = topics
        .values()
        .map(|t| {
            let flags = specs
                .iter()
                .map(|m| m.subscribed.contains(&t.name))
                .collect();
            (t.id, flags)
        })
        .collect();
    let eligible = Eligible(&subscribers);
    let mut out: Vec<Assignment> = vec![Assignment::new(); specs.len()];
    // Keep what members had, if it is still valid and not claimed twice.
    let mut taken: BTreeSet<(Uuid, i32)> = BTreeSet::new();
    for (member, spec) in specs.iter().enumerate() {
        for (topic, partitions) in &spec.current {
            let Some(&count) = counts.get(topic) else {
                continue;
            };
            if !eligible.check(member, topic) {
                continue;
            }
            for &partition in partitions {
                if partition < count && taken.insert((*topic, partition)) {
                    insert(&mut out[member], *topic, partition);
                }
            }
        }
    }
    let mut loads: Vec<usize> = out.iter().map(partition_count).collect();
    // Hand out the rest, each to the least loaded eligible member.
    for (topic, &count) in &counts {
        let Some(flags) = subscribers.get(topic) else {
            continue;
        };
        for partition in 0..count {
            if taken.contains(&(*topic, partition)) {
                continue;
            }
            let least = (0..specs.len())
                .filter(|m| flags[*m])
                .min_by_key(|m| (loads[*m], *m));
            if let Some(member) = least {
                insert(&mut out[member], *topic, partition);
                loads[member] += 1;
                taken.insert((*topic, partition));
            }
        }
    }
    balance(&mut out, &mut loads, &eligible);
    members.keys().cloned().zip(out).collect()
}

/// Which members (by index) subscribe to each topic.
struct Eligible<'a>(&'a BTreeMap<Uuid, Vec<bool>>);

impl Eligible<'_> {
    fn check(&self, member: usize, topic: &Uuid) -> bool {
        self.0
            .get(topic)
            .is_some_and(|flags| flags.get(member).copied().unwrap_or(false))
    }
}

/// One partition handed from one member to another.
type Move = (usize, usize, Uuid, i32);

/// Moves partitions from more to less loaded members until no member could give one to a
/// member with at least two fewer, directly or through a chain of members (A gives a `t`
/// partition to B, which gives a `u` partition to C) when subscriptions differ. Each step
/// lowers the sum of squared loads, so this ends; with no such chain left the loads are as
/// even as the subscriptions allow. The search is bounded by a work budget so that a huge
/// group with odd subscriptions cannot stall its coordinator; past it the result stays valid,
/// only less even.
fn balance(out: &mut [Assignment], loads: &mut [usize], eligible: &Eligible) {
    let mut budget = BALANCE_BUDGET;
    loop {
        let chain = match direct_move(out, loads, eligible, &mut budget) {
            Some(step) => vec![step],
            None => match chain_move(out, loads, eligible, &mut budget) {
                Some(chain) => chain,
                None => return,
            },
        };
        for (from, to, topic, partition) in chain {
            if let Some(partitions) = out[from].get_mut(&topic) {
                partitions.remove(&partition);
                if partitions.is_empty() {
                    out[from].remove(&topic);
                }
            }
            insert(&mut out[to], topic, partition);
            loads[from] -= 1;
            loads[to] += 1;
        }
    }
}

/// Member pairs a balancing pass may examine: tens of milliseconds at most.
const BALANCE_BUDGET: usize = 1_000_000;

/// Spends one unit of `budget`; false once it is gone.
fn spend(budget: &mut usize) -> bool {
    if *budget == 0 {
        return false;
    }
    *budget -= 1;
    true
}

/// The partition `owned` gives away to `taker`: its highest of the highest topic the taker
/// subscribes to, so that the low ones stay put.
fn giveable(owned: &Assignment, taker: usize, eligible: &Eligible) -> Option<(Uuid, i32)> {
    owned.iter().rev().find_map(|(topic, partitions)| {
        if !eligible.check(taker, topic) {
            return None;
        }
        partitions.iter().next_back().map(|p| (*topic, *p))
    })
}

/// Members from most to least loaded (ties by index).
fn by_load_desc(loads: &[usize]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..loads.len()).collect();
    order.sort_by(|a, b| loads[*b].cmp(&loads[*a]).then(a.cmp(b)));
    order
}

/// A partition of a most-loaded member that a member with at least two fewer can take.
fn direct_move(
    out: &[Assignment],
    loads: &[usize],
    eligible: &Eligible,
    budget: &mut usize,
) -> Option<Move> {
    let donors = by_load_desc(loads);
    for &donor in &donors {
        for &taker in donors.iter().rev() {
            if loads[taker] + 2 > loads[donor] || !spend(budget) {
                break;
            }
            if let Some((topic, partition)) = giveable(&out[donor], taker, eligible) {
                return Some((donor, taker, topic, partition));
            }
        }
    }
    None
}

/// The shortest chain of moves from a member to one with at least two fewer partitions, each
/// member in it giving one partition to the next (breadth-first from the most loaded).
fn chain_move(
    out: &[Assignment],
    loads: &[usize],
    eligible: &Eligible,
    budget: &mut usize,
) -> Option<Vec<Move>> {
    let least = loads.iter().copied().min()?;
    for donor in by_load_desc(loads) {
        if loads[donor] < least + 2 {
            break;
        }
        // For each member reached: who gave to it, and which partition.
        let mut reached: Vec<Option<Option<(usize, Uuid, i32)>>> = vec![None; loads.len()];
        reached[donor] = Some(None);
        let mut queue = std::collections::VecDeque::from([donor]);
        while let Some(giver) = queue.pop_front() {
            for taker in 0..loads.len() {
                if reached[taker].is_some() {
                    continue;
                }
                if !spend(budget) {
                    return None;
                }
                let Some((topic, partition)) = giveable(&out[giver], taker, eligible) else {
                    continue;
                };
                reached[taker] = Some(Some((giver, topic, partition)));
                if loads[taker] + 2 <= loads[donor] {
                    let mut chain = Vec::new();
                    let mut at = taker;
                    while let Some(Some((from, topic, partition))) = reached[at] {
                        chain.push((from, at, topic, partition));
                        at = from;
                    }
                    // Each member gives a partition it held before the chain, so the order of
                    // the moves does not matter; donor first reads best in logs.
                    chain.reverse();
                    return Some(chain);
                }
                queue.push_back(taker);
            }
        }
    }
    None
}

#[cfg(test)]
// Test code: member and partition counts of test groups converted with `as`.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss
)]
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
    fn uniform_balances_through_a_chain_when_subscriptions_differ() {
        // x{t} holds four, y{t,u} three, z{u} two: no direct move helps (x cannot give to z,
        // y has only one more than z), but x -> y -> z evens it out.
        let topics: TopicsMeta = [topic("t", 1, 4), topic("u", 2, 5)].into();
        let (t, u) = (Uuid::from_u128(1), Uuid::from_u128(2));
        let held = |topic: Uuid, ps: &[i32]| -> Assignment {
            [(topic, ps.iter().copied().collect())].into()
        };
        let mut specs = BTreeMap::new();
        specs.insert("x".to_string(), spec(&["t"], &held(t, &[0, 1, 2, 3])));
        specs.insert("y".to_string(), spec(&["t", "u"], &held(u, &[0, 1, 2])));
        specs.insert("z".to_string(), spec(&["u"], &held(u, &[3, 4])));
        let out = Assignor::Uniform.assign(&specs, &topics);
        assert_eq!(loads(&out), vec![3, 3, 3]);
        assert_eq!(owners(&out).len(), 9);
        let moved = |m: &str, before: &Assignment| {
            before
                .iter()
                .flat_map(|(t, ps)| ps.iter().map(move |p| (*t, *p)))
                .filter(|(t, p)| !out[m].get(t).is_some_and(|a| a.contains(p)))
                .count()
        };
        assert_eq!(moved("x", &held(t, &[0, 1, 2, 3])), 1, "x gives one");
        assert_eq!(moved("y", &held(u, &[0, 1, 2])), 1, "y passes one on");
        assert_eq!(moved("z", &held(u, &[3, 4])), 0, "z keeps its own");
    }

    /// The least sum of squared loads any valid assignment reaches, by trying them all.
    fn best_sum_of_squares(eligible: &[Vec<usize>], loads: &mut Vec<usize>, at: usize) -> usize {
        if at == eligible.len() {
            return loads.iter().map(|l| l * l).sum();
        }
        if eligible[at].is_empty() {
            return best_sum_of_squares(eligible, loads, at + 1);
        }
        let mut best = usize::MAX;
        for &m in &eligible[at] {
            loads[m] += 1;
            best = best.min(best_sum_of_squares(eligible, loads, at + 1));
            loads[m] -= 1;
        }
        best
    }

    #[test]
    fn uniform_is_as_even_as_any_assignment_for_mixed_subscriptions() {
        // Small random groups (three topics, up to four members with random subscriptions and
        // random sticky holdings), checked against every possible assignment.
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |n: u64| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((seed >> 33) % n) as usize
        };
        let names = ["t", "u", "v"];
        for case in 0..400 {
            let counts: Vec<i32> = (0..3).map(|_| next(3) as i32).collect();
            let topics: TopicsMeta = names
                .iter()
                .zip(&counts)
                .enumerate()
                .map(|(i, (n, c))| topic(n, i as u128 + 1, *c))
                .collect();
            let member_count = 1 + next(4);
            let mut specs = BTreeMap::new();
            for m in 0..member_count {
                let subscribed: Vec<&str> = names.iter().copied().filter(|_| next(3) > 0).collect();
                let mut current = Assignment::new();
                for (i, c) in counts.iter().enumerate() {
                    for p in 0..*c {
                        if next(member_count as u64) == m {
                            insert(&mut current, Uuid::from_u128(i as u128 + 1), p);
                        }
                    }
                }
                specs.insert(format!("m{m}"), spec(&subscribed, &current));
            }
            let out = Assignor::Uniform.assign(&specs, &topics);
            let ids: Vec<&String> = specs.keys().collect();
            let mut eligible = Vec::new();
            for (i, (name, c)) in names.iter().zip(&counts).enumerate() {
                for p in 0..*c {
                    let can: Vec<usize> = (0..ids.len())
                        .filter(|m| specs[ids[*m]].subscribed.contains(*name))
                        .collect();
                    let owner = owners(&out)
                        .get(&(Uuid::from_u128(i as u128 + 1), p))
                        .cloned();
                    match owner {
                        Some(o) => assert!(specs[&o].subscribed.contains(*name), "case {case}"),
                        None => assert!(can.is_empty(), "case {case}: {name}-{p} unassigned"),
                    }
                    eligible.push(can);
                }
            }
            let ours: usize = loads(&out).iter().map(|l| l * l).sum();
            let best = best_sum_of_squares(&eligible, &mut vec![0; ids.len()], 0);
            assert_eq!(ours, best, "case {case}: {specs:?} -> {out:?}");
        }
    }

    #[test]
    fn uniform_assigns_a_large_mixed_group_completely() {
        // 1,000 members, each on 2 of 50 topics: the chain search is bounded, every partition
        // still goes to a subscriber.
        let topics: TopicsMeta = (0..50)
            .map(|i| topic(&format!("t{i}"), i as u128 + 1, 20))
            .collect();
        let specs: BTreeMap<String, MemberSpec> = (0..1000)
            .map(|m| {
                let subscribed = [format!("t{}", m % 50), format!("t{}", (m * 7 + 3) % 50)];
                let refs: Vec<&str> = subscribed.iter().map(String::as_str).collect();
                (format!("m{m:04}"), spec(&refs, &Assignment::new()))
            })
            .collect();
        let out = Assignor::Uniform.assign(&specs, &topics);
        let owned = owners(&out);
        assert_eq!(owned.len(), 1000);
        let by_id: BTreeMap<Uuid, &str> =
            topics.values().map(|t| (t.id, t.name.as_str())).collect();
        for ((topic, _), member) in &owned {
            assert!(specs[member].subscribed.contains(by_id[topic]));
        }
        assert!(loads(&out).iter().all(|l| *l <= 2), "{:?}", loads(&out));
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
