//! The feature flags ApiVersions reports (KIP-584), as Kafka 4.1 reports the ones that have a
//! meaning here. Clients read them: a Java 4.x producer uses KIP-890's new transaction protocol
//! only when `transaction.version` is finalized at 2 or more, and `kafka-features describe`
//! prints this list. KRaft's `metadata.version` and `kraft.version` (and `share.version`,
//! `eligible.leader.replicas.version`) describe things this broker does not have (a metadata
//! log, a controller quorum, share groups, replicas) and are not listed.

use kafka_protocol::messages::api_versions_response::{FinalizedFeatureKey, SupportedFeatureKey};
use kafka_protocol::protocol::StrBytes;

/// One feature: the levels this broker can run, and the level the cluster runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Feature {
    pub name: &'static str,
    pub min_version: i16,
    pub max_version: i16,
    /// The finalized level; 0 means off, and Kafka lists no finalized entry for it.
    pub finalized_level: i16,
}

/// `transaction.version` stops at 1: transactions are served without KIP-890 part 2, and a
/// finalized 2 would make Java 4.x clients use its protocol. `group.version` 1 is KIP-848's
/// consumer group protocol, which is served (Kafka 4.1 finalizes it at 1 too).
pub const FEATURES: &[Feature] = &[
    Feature {
        name: "group.version",
        min_version: 0,
        max_version: 1,
        finalized_level: 1,
    },
    Feature {
        name: "transaction.version",
        min_version: 0,
        max_version: 1,
        finalized_level: 1,
    },
];

/// Kafka's epoch is the metadata log offset the levels were read at; ours are fixed, so the
/// epoch is a constant, to be raised whenever a finalized level in [`FEATURES`] changes (clients
/// keep the levels of the highest epoch they have seen).
pub const FINALIZED_FEATURES_EPOCH: i64 = 1;

/// What ApiVersions `version` lists as supported. Before v4 Kafka leaves out features whose
/// minimum is 0, because clients older than KIP-1022 refuse a range starting at 0.
pub fn supported_features(version: i16) -> Vec<SupportedFeatureKey> {
    FEATURES
        .iter()
        .filter(|f| version >= 4 || f.min_version >= 1)
        .map(|f| {
            SupportedFeatureKey::default()
                .with_name(StrBytes::from_static_str(f.name))
                .with_min_version(f.min_version)
                .with_max_version(f.max_version)
        })
        .collect()
}

/// The finalized levels, each as a `min_version_level == max_version_level` pair as Kafka
/// sends them; features finalized at 0 are left out, as Kafka does.
pub fn finalized_features() -> Vec<FinalizedFeatureKey> {
    FEATURES
        .iter()
        .filter(|f| f.finalized_level > 0)
        .map(|f| {
            FinalizedFeatureKey::default()
                .with_name(StrBytes::from_static_str(f.name))
                .with_min_version_level(f.finalized_level)
                .with_max_version_level(f.finalized_level)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn features_starting_at_zero_are_listed_from_v4_only() {
        assert!(supported_features(3).is_empty());
        let v4: Vec<_> = supported_features(4)
            .iter()
            .map(|f| f.name.to_string())
            .collect();
        assert_eq!(v4, ["group.version", "transaction.version"]);
    }

    #[test]
    fn transaction_version_is_finalized_below_kip_890_part_two() {
        let finalized = finalized_features();
        let tv = finalized
            .iter()
            .find(|f| &*f.name == "transaction.version")
            .map(|f| (f.min_version_level, f.max_version_level));
        assert_eq!(tv, Some((1, 1)));
    }

    #[test]
    fn every_finalized_level_is_within_its_supported_range() {
        for f in FEATURES {
            assert!(f.min_version <= f.finalized_level && f.finalized_level <= f.max_version);
        }
    }
}
