//! The `throttle_time_ms` of any response this broker sends, so a request quota can report
//! its throttle in whichever response it applies to. A version without the field does not
//! encode it (a client of that version learns of its throttle by the mute alone, as from Kafka).

use std::time::Duration;

use kafka_protocol::messages::ResponseKind;

use crate::quotas::throttle_ms;

/// The response's `throttle_time_ms` field, for every API this broker serves.
fn field(response: &mut ResponseKind) -> Option<&mut i32> {
    macro_rules! throttle_field {
        ($($api:ident),* $(,)?) => {
            match response {
                $(ResponseKind::$api(r) => Some(&mut r.throttle_time_ms),)*
                _ => None,
            }
        };
    }
    throttle_field!(
        Produce,
        Fetch,
        ListOffsets,
        Metadata,
        OffsetCommit,
        OffsetFetch,
        FindCoordinator,
        JoinGroup,
        Heartbeat,
        LeaveGroup,
        SyncGroup,
        DescribeGroups,
        ListGroups,
        ApiVersions,
        CreateTopics,
        DeleteTopics,
        DeleteRecords,
        InitProducerId,
        OffsetForLeaderEpoch,
        AddPartitionsToTxn,
        AddOffsetsToTxn,
        EndTxn,
        TxnOffsetCommit,
        DescribeAcls,
        CreateAcls,
        DeleteAcls,
        DescribeConfigs,
        AlterConfigs,
        DescribeLogDirs,
        CreatePartitions,
        DeleteGroups,
        ElectLeaders,
        IncrementalAlterConfigs,
        AlterPartitionReassignments,
        ListPartitionReassignments,
        OffsetDelete,
        DescribeClientQuotas,
        AlterClientQuotas,
        DescribeUserScramCredentials,
        AlterUserScramCredentials,
        DescribeCluster,
        DescribeProducers,
        DescribeTransactions,
        ListTransactions,
        ConsumerGroupHeartbeat,
        ConsumerGroupDescribe,
        ListConfigResources,
        DescribeTopicPartitions,
    )
}

/// The throttle time the response already carries (a byte-rate quota's).
pub fn carried(response: &mut ResponseKind) -> Duration {
    let ms = field(response).map_or(0, |ms| *ms);
    Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

/// Makes the response carry at least `throttle`: Kafka reports the larger of a request's
/// byte-rate and request-rate throttles.
pub fn raise(response: &mut ResponseKind, throttle: Duration) {
    if let Some(ms) = field(response) {
        *ms = (*ms).max(throttle_ms(throttle));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::{MetadataResponse, ProduceResponse};

    #[test]
    fn the_larger_of_two_throttles_is_reported() {
        let mut produce =
            ResponseKind::Produce(ProduceResponse::default().with_throttle_time_ms(800));
        raise(&mut produce, Duration::from_millis(300));
        assert_eq!(carried(&mut produce), Duration::from_millis(800));
        raise(&mut produce, Duration::from_millis(1000));
        assert_eq!(carried(&mut produce), Duration::from_millis(1000));
    }

    #[test]
    fn a_response_without_a_throttle_gets_the_request_throttle() {
        let mut metadata = ResponseKind::Metadata(MetadataResponse::default());
        assert_eq!(carried(&mut metadata), Duration::ZERO);
        raise(&mut metadata, Duration::from_millis(250));
        assert_eq!(carried(&mut metadata), Duration::from_millis(250));
    }
}
