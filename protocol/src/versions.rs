//! The one table of API versions this broker serves. Only versions exercised by a test belong
//! here: `broker/tests/api_versions_coverage/` sends every listed version of every listed API
//! to a real broker and checks its answer, reading the versions from this table, and fails when
//! an API listed here has no scenario there. Listing a version means making it pass there.

use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::ApiKey;

/// `(api, min_version, max_version)`, inclusive.
pub const SUPPORTED_APIS: &[(ApiKey, i16, i16)] = &[
    (ApiKey::Produce, 3, 9),
    (ApiKey::Fetch, 4, 12),
    (ApiKey::ListOffsets, 1, 7),
    (ApiKey::Metadata, 0, 12),
    (ApiKey::ApiVersions, 0, 4),
    (ApiKey::CreateTopics, 2, 7),
    (ApiKey::DeleteTopics, 1, 6),
    (ApiKey::DescribeConfigs, 1, 4),
    (ApiKey::AlterConfigs, 0, 2),
    (ApiKey::CreatePartitions, 0, 3),
    (ApiKey::IncrementalAlterConfigs, 0, 1),
    (ApiKey::DescribeCluster, 0, 1),
    (ApiKey::FindCoordinator, 0, 4),
    (ApiKey::JoinGroup, 0, 9),
    (ApiKey::SyncGroup, 0, 5),
    (ApiKey::Heartbeat, 0, 4),
    (ApiKey::LeaveGroup, 0, 5),
    (ApiKey::OffsetCommit, 2, 9),
    (ApiKey::OffsetFetch, 1, 9),
    (ApiKey::DescribeGroups, 0, 6),
    (ApiKey::ListGroups, 0, 5),
    (ApiKey::DeleteGroups, 0, 2),
    (ApiKey::OffsetDelete, 0, 0),
    (ApiKey::InitProducerId, 0, 5),
    (ApiKey::AddPartitionsToTxn, 0, 4),
    (ApiKey::AddOffsetsToTxn, 0, 3),
    (ApiKey::EndTxn, 0, 3),
    (ApiKey::TxnOffsetCommit, 0, 3),
    (ApiKey::DescribeTransactions, 0, 0),
    (ApiKey::ListTransactions, 0, 2),
    (ApiKey::DescribeProducers, 0, 0),
    (ApiKey::DeleteRecords, 0, 2),
    (ApiKey::ConsumerGroupHeartbeat, 0, 1),
    (ApiKey::ConsumerGroupDescribe, 0, 1),
    (ApiKey::DescribeAcls, 1, 3),
    (ApiKey::CreateAcls, 1, 3),
    (ApiKey::DeleteAcls, 1, 3),
    (ApiKey::DescribeLogDirs, 1, 4),
    (ApiKey::OffsetForLeaderEpoch, 2, 4),
    (ApiKey::ElectLeaders, 0, 2),
    (ApiKey::AlterPartitionReassignments, 0, 1),
    (ApiKey::ListPartitionReassignments, 0, 0),
    (ApiKey::DescribeClientQuotas, 0, 1),
    (ApiKey::AlterClientQuotas, 0, 1),
    (ApiKey::AlterUserScramCredentials, 0, 0),
    (ApiKey::DescribeUserScramCredentials, 0, 0),
    (ApiKey::DescribeTopicPartitions, 0, 0),
    (ApiKey::ListConfigResources, 0, 1),
];

/// Served only on SASL listeners (SASL_PLAINTEXT, SASL_SSL), by the connection's SASL state:
/// listed there in ApiVersions in addition to [`SUPPORTED_APIS`], and absent elsewhere.
/// `broker/tests/api_versions_coverage/sasl.rs` exercises every version listed here.
pub const SASL_APIS: &[(ApiKey, i16, i16)] = &[
    (ApiKey::SaslHandshake, 0, 1),
    (ApiKey::SaslAuthenticate, 0, 2),
];

/// The inclusive version range served for `api_key`, if the API is served at all.
pub fn supported_range(api_key: ApiKey) -> Option<(i16, i16)> {
    SUPPORTED_APIS
        .iter()
        .find(|(key, _, _)| *key == api_key)
        .map(|&(_, min, max)| (min, max))
}

pub fn is_supported(api_key: ApiKey, version: i16) -> bool {
    supported_range(api_key).is_some_and(|(min, max)| (min..=max).contains(&version))
}

/// The range served for `api_key` on a listener with (`sasl`) or without SASL.
pub fn supported_range_on(api_key: ApiKey, sasl: bool) -> Option<(i16, i16)> {
    let sasl_range = || {
        SASL_APIS
            .iter()
            .find(|(key, _, _)| sasl && *key == api_key)
            .map(|&(_, min, max)| (min, max))
    };
    supported_range(api_key).or_else(sasl_range)
}

pub fn is_supported_on(api_key: ApiKey, version: i16, sasl: bool) -> bool {
    supported_range_on(api_key, sasl).is_some_and(|(min, max)| (min..=max).contains(&version))
}

/// The table as an ApiVersions response lists it on a listener without SASL.
pub fn api_versions_table() -> Vec<ApiVersion> {
    api_versions_table_on(false)
}

/// The table as an ApiVersions response lists it on a listener with (`sasl`) or without SASL.
pub fn api_versions_table_on(sasl: bool) -> Vec<ApiVersion> {
    let sasl_apis = if sasl { SASL_APIS } else { &[] };
    SUPPORTED_APIS
        .iter()
        .chain(sasl_apis)
        .map(|&(key, min, max)| {
            ApiVersion::default()
                .with_api_key(key as i16)
                .with_min_version(min)
                .with_max_version(max)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_range_is_within_what_the_codec_supports() {
        for &(key, min, max) in SUPPORTED_APIS.iter().chain(SASL_APIS) {
            let valid = key.valid_versions();
            assert!(min <= max, "{key:?}");
            assert!(
                min >= valid.min && max <= valid.max,
                "{key:?} {min}..={max} vs {valid:?}"
            );
        }
    }

    #[test]
    fn unlisted_api_is_not_supported() {
        assert!(!is_supported(ApiKey::SaslHandshake, 0));
        assert!(is_supported(ApiKey::ApiVersions, 3));
        assert!(!is_supported(ApiKey::ApiVersions, 5));
    }

    #[test]
    fn sasl_apis_are_listed_on_sasl_listeners_only() {
        let listed = |sasl: bool| -> Vec<i16> {
            api_versions_table_on(sasl)
                .iter()
                .map(|v| v.api_key)
                .collect()
        };
        let handshake = ApiKey::SaslHandshake as i16;
        assert!(!listed(false).contains(&handshake));
        assert!(listed(true).contains(&handshake));
        assert_eq!(listed(true).len(), listed(false).len() + SASL_APIS.len());
        assert!(is_supported_on(ApiKey::SaslAuthenticate, 2, true));
        assert!(!is_supported_on(ApiKey::SaslAuthenticate, 2, false));
        assert!(!is_supported_on(ApiKey::SaslAuthenticate, 3, true));
        assert!(is_supported_on(ApiKey::Metadata, 12, false));
        for (key, _, _) in SASL_APIS {
            assert!(supported_range(*key).is_none(), "{key:?} listed twice");
        }
    }
}
