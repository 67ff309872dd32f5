//! Who leads a partition and who coordinates a group: rendezvous (highest random weight)
//! hashing over the live brokers. When a broker joins or leaves, only the keys it wins or won
//! move. A client announcing a zone (`zone=<z>` in its `client.id`) is given leaders among the
//! brokers whose rack is that zone, or among all brokers when its zone has none.

use super::Member;

/// The live brokers at one moment, sorted by id (never empty: this broker is always in it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    members: Vec<Member>,
}

impl Placement {
    /// `members` plus `me` (a broker always counts itself live), deduplicated by id.
    pub fn new(mut members: Vec<Member>, me: &Member) -> Placement {
        members.retain(|m| m.broker_id != me.broker_id);
        members.push(me.clone());
        members.sort_by_key(|m| m.broker_id);
        Placement { members }
    }

    pub fn members(&self) -> &[Member] {
        &self.members
    }

    pub fn member(&self, broker_id: i32) -> Option<&Member> {
        self.members.iter().find(|m| m.broker_id == broker_id)
    }

    /// The leader of a partition for a client in `zone` (or any zone).
    pub fn partition_leader(&self, topic: &str, partition: i32, zone: Option<&str>) -> &Member {
        let in_zone: Vec<&Member> = match zone {
            Some(zone) => self
                .members
                .iter()
                .filter(|m| m.rack.as_deref() == Some(zone))
                .collect(),
            None => Vec::new(),
        };
        let candidates: Vec<&Member> = if in_zone.is_empty() {
            self.members.iter().collect()
        } else {
            in_zone
        };
        let key = format!("partition/{topic}/{partition}");
        highest_weight(&key, &candidates).unwrap_or(&self.members[0])
    }

    /// The coordinator of a consumer group: the same hash, over all live brokers, so that every
    /// member of a group meets at one broker whatever its zone.
    pub fn group_coordinator(&self, group_id: &str) -> &Member {
        let candidates: Vec<&Member> = self.members.iter().collect();
        let key = format!("group/{group_id}");
        highest_weight(&key, &candidates).unwrap_or(&self.members[0])
    }

    /// The coordinator of a transactional id: the same hash over all live brokers.
    pub fn transaction_coordinator(&self, transactional_id: &str) -> &Member {
        let candidates: Vec<&Member> = self.members.iter().collect();
        let key = format!("transaction/{transactional_id}");
        highest_weight(&key, &candidates).unwrap_or(&self.members[0])
    }
}

fn highest_weight<'a>(key: &str, candidates: &[&'a Member]) -> Option<&'a Member> {
    candidates
        .iter()
        .max_by_key(|m| (weight(key, m.broker_id), m.broker_id))
        .copied()
}

/// A hash that every broker computes identically, across builds and platforms (std's hasher
/// makes no such promise): FNV-1a over key and id, then a SplitMix64 finalizer to spread it.
fn weight(key: &str, broker_id: i32) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in key.bytes().chain(broker_id.to_be_bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash = (hash ^ (hash >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    hash = (hash ^ (hash >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    hash ^ (hash >> 31)
}

/// The zone a client announces as `zone=<z>` anywhere in its `client.id`, ended by `,`, `;`,
/// `&`, whitespace or the end.
pub fn client_zone(client_id: Option<&str>) -> Option<&str> {
    let client_id = client_id?;
    let start = client_id.find("zone=")? + "zone=".len();
    let rest = &client_id[start..];
    let end = rest
        .find(|c: char| c == ',' || c == ';' || c == '&' || c.is_whitespace())
        .unwrap_or(rest.len());
    let zone = &rest[..end];
    (!zone.is_empty()).then_some(zone)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(id: i32, rack: &str) -> Member {
        Member {
            broker_id: id,
            host: format!("b{id}"),
            port: 9092 + id,
            rack: Some(rack.to_string()),
            listeners: Vec::new(),
        }
    }

    fn leaders(placement: &Placement, zone: Option<&str>) -> Vec<i32> {
        (0..200)
            .map(|p| placement.partition_leader("t", p, zone).broker_id)
            .collect()
    }

    #[test]
    fn leaders_spread_over_every_live_broker() {
        let all = Placement::new(vec![member(1, "a"), member(2, "a")], &member(3, "b"));
        let chosen = leaders(&all, None);
        for id in 1..=3 {
            let count = chosen.iter().filter(|&&l| l == id).count();
            assert!(count > 40, "broker {id} leads only {count} of 200");
        }
    }

    #[test]
    fn removing_a_broker_moves_only_its_partitions() {
        let all = Placement::new(vec![member(1, "a"), member(2, "a")], &member(3, "b"));
        let without_two = Placement::new(vec![member(1, "a")], &member(3, "b"));
        for (before, after) in leaders(&all, None).iter().zip(leaders(&without_two, None)) {
            if *before != 2 {
                assert_eq!(*before, after);
            } else {
                assert_ne!(after, 2);
            }
        }
    }

    #[test]
    fn clients_get_leaders_in_their_zone_while_it_has_brokers() {
        let all = Placement::new(
            vec![member(1, "a"), member(2, "b"), member(3, "b")],
            &member(4, "a"),
        );
        assert!(leaders(&all, Some("a")).iter().all(|l| [1, 4].contains(l)));
        assert!(leaders(&all, Some("b")).iter().all(|l| [2, 3].contains(l)));
        let only_b = Placement::new(vec![member(2, "b")], &member(3, "b"));
        assert_eq!(leaders(&only_b, Some("a")), leaders(&only_b, None));
    }

    #[test]
    fn placement_is_the_same_whatever_the_order_members_were_seen_in() {
        let one = Placement::new(vec![member(1, "a"), member(2, "b")], &member(3, "a"));
        let two = Placement::new(vec![member(3, "a"), member(2, "b")], &member(1, "a"));
        assert_eq!(leaders(&one, None), leaders(&two, None));
        assert_eq!(
            one.group_coordinator("g").broker_id,
            two.group_coordinator("g").broker_id
        );
    }

    #[test]
    fn weights_are_stable_across_builds() {
        // Pinned so that a change of hash (which would move every leader during a rolling
        // upgrade) fails here first.
        assert_eq!(weight("partition/t/0", 1), 0x5abd_f878_d5ad_8823);
    }

    #[test]
    fn client_zone_is_read_from_the_client_id() {
        assert_eq!(client_zone(Some("zone=eu-1")), Some("eu-1"));
        assert_eq!(client_zone(Some("app,zone=b;x")), Some("b"));
        assert_eq!(client_zone(Some("app zone=c")), Some("c"));
        assert_eq!(client_zone(Some("zone=")), None);
        assert_eq!(client_zone(Some("rdkafka")), None);
        assert_eq!(client_zone(None), None);
    }
}
