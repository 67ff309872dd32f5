//! Every error code a response carries, as Kafka's `AbstractResponse.errorCounts` lists them:
//! the top-level code and each per-topic, per-partition or per-resource code.

use kafka_protocol::messages::ResponseKind;

/// The codes of `response`, NONE (0) included.
pub(super) fn error_codes(response: &ResponseKind) -> Vec<i16> {
    data(response)
        .or_else(|| groups(response))
        .or_else(|| admin(response))
        .unwrap_or_default()
}

fn data(response: &ResponseKind) -> Option<Vec<i16>> {
    Some(match response {
        ResponseKind::Produce(r) => r
            .responses
            .iter()
            .flat_map(|t| t.partition_responses.iter().map(|p| p.error_code))
            .collect(),
        ResponseKind::Fetch(r) => std::iter::once(r.error_code)
            .chain(
                r.responses
                    .iter()
                    .flat_map(|t| t.partitions.iter().map(|p| p.error_code)),
            )
            .collect(),
        ResponseKind::ListOffsets(r) => r
            .topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
            .collect(),
        ResponseKind::Metadata(r) => r
            .topics
            .iter()
            .flat_map(|t| {
                std::iter::once(t.error_code).chain(t.partitions.iter().map(|p| p.error_code))
            })
            .collect(),
        ResponseKind::ApiVersions(r) => vec![r.error_code],
        ResponseKind::DescribeTopicPartitions(r) => r
            .topics
            .iter()
            .flat_map(|t| {
                std::iter::once(t.error_code).chain(t.partitions.iter().map(|p| p.error_code))
            })
            .collect(),
        ResponseKind::DeleteRecords(r) => r
            .topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
            .collect(),
        ResponseKind::InitProducerId(r) => vec![r.error_code],
        ResponseKind::AddPartitionsToTxn(r) => std::iter::once(r.error_code)
            .chain(
                r.results_by_transaction
                    .iter()
                    .flat_map(|t| t.topic_results.iter())
                    .chain(r.results_by_topic_v3_and_below.iter())
                    .flat_map(|t| {
                        t.results_by_partition
                            .iter()
                            .map(|p| p.partition_error_code)
                    }),
            )
            .collect(),
        ResponseKind::AddOffsetsToTxn(r) => vec![r.error_code],
        ResponseKind::DescribeTransactions(r) => {
            r.transaction_states.iter().map(|t| t.error_code).collect()
        }
        ResponseKind::ListTransactions(r) => vec![r.error_code],
        ResponseKind::DescribeProducers(r) => r
            .topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
            .collect(),
        ResponseKind::EndTxn(r) => vec![r.error_code],
        ResponseKind::TxnOffsetCommit(r) => r
            .topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
            .collect(),
        ResponseKind::SaslHandshake(r) => vec![r.error_code],
        ResponseKind::SaslAuthenticate(r) => vec![r.error_code],
        _ => return None,
    })
}

fn groups(response: &ResponseKind) -> Option<Vec<i16>> {
    Some(match response {
        ResponseKind::FindCoordinator(r) if r.coordinators.is_empty() => vec![r.error_code],
        ResponseKind::FindCoordinator(r) => r.coordinators.iter().map(|c| c.error_code).collect(),
        ResponseKind::JoinGroup(r) => vec![r.error_code],
        ResponseKind::SyncGroup(r) => vec![r.error_code],
        ResponseKind::Heartbeat(r) => vec![r.error_code],
        ResponseKind::LeaveGroup(r) => std::iter::once(r.error_code)
            .chain(r.members.iter().map(|m| m.error_code))
            .collect(),
        ResponseKind::OffsetCommit(r) => r
            .topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
            .collect(),
        ResponseKind::OffsetFetch(r) => std::iter::once(r.error_code)
            .chain(
                r.topics
                    .iter()
                    .flat_map(|t| t.partitions.iter().map(|p| p.error_code)),
            )
            .chain(r.groups.iter().flat_map(|g| {
                std::iter::once(g.error_code).chain(
                    g.topics
                        .iter()
                        .flat_map(|t| t.partitions.iter().map(|p| p.error_code)),
                )
            }))
            .collect(),
        ResponseKind::DescribeGroups(r) => r.groups.iter().map(|g| g.error_code).collect(),
        ResponseKind::ListGroups(r) => vec![r.error_code],
        ResponseKind::DeleteGroups(r) => r.results.iter().map(|g| g.error_code).collect(),
        ResponseKind::OffsetDelete(r) => std::iter::once(r.error_code)
            .chain(
                r.topics
                    .iter()
                    .flat_map(|t| t.partitions.iter().map(|p| p.error_code)),
            )
            .collect(),
        ResponseKind::ConsumerGroupHeartbeat(r) => vec![r.error_code],
        ResponseKind::ConsumerGroupDescribe(r) => r.groups.iter().map(|g| g.error_code).collect(),
        _ => return None,
    })
}

fn admin(response: &ResponseKind) -> Option<Vec<i16>> {
    Some(match response {
        ResponseKind::CreateTopics(r) => r.topics.iter().map(|t| t.error_code).collect(),
        ResponseKind::DeleteTopics(r) => r.responses.iter().map(|t| t.error_code).collect(),
        ResponseKind::DescribeConfigs(r) => r.results.iter().map(|t| t.error_code).collect(),
        ResponseKind::AlterConfigs(r) => r.responses.iter().map(|t| t.error_code).collect(),
        ResponseKind::IncrementalAlterConfigs(r) => {
            r.responses.iter().map(|t| t.error_code).collect()
        }
        ResponseKind::CreatePartitions(r) => r.results.iter().map(|t| t.error_code).collect(),
        ResponseKind::DescribeCluster(r) => vec![r.error_code],
        ResponseKind::DescribeAcls(r) => vec![r.error_code],
        ResponseKind::CreateAcls(r) => r.results.iter().map(|t| t.error_code).collect(),
        ResponseKind::DeleteAcls(r) => r.filter_results.iter().map(|t| t.error_code).collect(),
        ResponseKind::DescribeClientQuotas(r) => vec![r.error_code],
        ResponseKind::ListConfigResources(r) => vec![r.error_code],
        ResponseKind::AlterClientQuotas(r) => r.entries.iter().map(|e| e.error_code).collect(),
        ResponseKind::OffsetForLeaderEpoch(r) => r
            .topics
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
            .collect(),
        ResponseKind::ElectLeaders(r) => std::iter::once(r.error_code)
            .chain(
                r.replica_election_results
                    .iter()
                    .flat_map(|t| t.partition_result.iter().map(|p| p.error_code)),
            )
            .collect(),
        ResponseKind::ListPartitionReassignments(r) => vec![r.error_code],
        ResponseKind::AlterPartitionReassignments(r) => std::iter::once(r.error_code)
            .chain(
                r.responses
                    .iter()
                    .flat_map(|t| t.partitions.iter().map(|p| p.error_code)),
            )
            .collect(),
        ResponseKind::DescribeLogDirs(r) => std::iter::once(r.error_code)
            .chain(r.results.iter().map(|d| d.error_code))
            .collect(),
        ResponseKind::AlterUserScramCredentials(r) => {
            r.results.iter().map(|t| t.error_code).collect()
        }
        ResponseKind::DescribeUserScramCredentials(r) => std::iter::once(r.error_code)
            .chain(r.results.iter().map(|t| t.error_code))
            .collect(),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::produce_response::{
        PartitionProduceResponse, TopicProduceResponse,
    };
    use kafka_protocol::messages::ProduceResponse;

    use super::*;

    #[test]
    fn every_partition_code_of_a_produce_is_listed() {
        let partitions = vec![
            PartitionProduceResponse::default(),
            PartitionProduceResponse::default().with_error_code(6),
        ];
        let topic = TopicProduceResponse::default().with_partition_responses(partitions);
        let response =
            ResponseKind::Produce(ProduceResponse::default().with_responses(vec![topic]));
        assert_eq!(error_codes(&response), vec![0, 6]);
    }

    #[test]
    fn every_advertised_api_has_its_codes_listed() {
        for &(api, _, _) in protocol::versions::SUPPORTED_APIS
            .iter()
            .chain(protocol::versions::SASL_APIS)
        {
            let Ok(response) = default_response(api) else {
                panic!("{api:?}: no default response");
            };
            let listed = data(&response)
                .or_else(|| groups(&response))
                .or_else(|| admin(&response));
            assert!(
                listed.is_some(),
                "{api:?}: add its error codes to response_errors.rs"
            );
        }
    }

    fn default_response(api: kafka_protocol::messages::ApiKey) -> Result<ResponseKind, ()> {
        use kafka_protocol::messages::*;
        Ok(match api {
            ApiKey::Produce => ResponseKind::Produce(Default::default()),
            ApiKey::Fetch => ResponseKind::Fetch(Default::default()),
            ApiKey::ListOffsets => ResponseKind::ListOffsets(Default::default()),
            ApiKey::Metadata => ResponseKind::Metadata(Default::default()),
            ApiKey::DescribeTopicPartitions => {
                ResponseKind::DescribeTopicPartitions(Default::default())
            }
            ApiKey::ApiVersions => ResponseKind::ApiVersions(Default::default()),
            ApiKey::CreateTopics => ResponseKind::CreateTopics(Default::default()),
            ApiKey::DeleteTopics => ResponseKind::DeleteTopics(Default::default()),
            ApiKey::DescribeConfigs => ResponseKind::DescribeConfigs(Default::default()),
            ApiKey::AlterConfigs => ResponseKind::AlterConfigs(Default::default()),
            ApiKey::CreatePartitions => ResponseKind::CreatePartitions(Default::default()),
            ApiKey::IncrementalAlterConfigs => {
                ResponseKind::IncrementalAlterConfigs(Default::default())
            }
            ApiKey::DescribeCluster => ResponseKind::DescribeCluster(Default::default()),
            ApiKey::FindCoordinator => ResponseKind::FindCoordinator(Default::default()),
            ApiKey::JoinGroup => ResponseKind::JoinGroup(Default::default()),
            ApiKey::SyncGroup => ResponseKind::SyncGroup(Default::default()),
            ApiKey::Heartbeat => ResponseKind::Heartbeat(Default::default()),
            ApiKey::LeaveGroup => ResponseKind::LeaveGroup(Default::default()),
            ApiKey::OffsetCommit => ResponseKind::OffsetCommit(Default::default()),
            ApiKey::OffsetFetch => ResponseKind::OffsetFetch(Default::default()),
            ApiKey::DescribeGroups => ResponseKind::DescribeGroups(Default::default()),
            ApiKey::ListGroups => ResponseKind::ListGroups(Default::default()),
            ApiKey::DeleteGroups => ResponseKind::DeleteGroups(Default::default()),
            ApiKey::OffsetDelete => ResponseKind::OffsetDelete(Default::default()),
            ApiKey::InitProducerId => ResponseKind::InitProducerId(Default::default()),
            ApiKey::AddPartitionsToTxn => ResponseKind::AddPartitionsToTxn(Default::default()),
            ApiKey::AddOffsetsToTxn => ResponseKind::AddOffsetsToTxn(Default::default()),
            ApiKey::EndTxn => ResponseKind::EndTxn(Default::default()),
            ApiKey::TxnOffsetCommit => ResponseKind::TxnOffsetCommit(Default::default()),
            ApiKey::DescribeTransactions => ResponseKind::DescribeTransactions(Default::default()),
            ApiKey::ListTransactions => ResponseKind::ListTransactions(Default::default()),
            ApiKey::DescribeProducers => ResponseKind::DescribeProducers(Default::default()),
            ApiKey::DeleteRecords => ResponseKind::DeleteRecords(Default::default()),
            ApiKey::ConsumerGroupHeartbeat => {
                ResponseKind::ConsumerGroupHeartbeat(Default::default())
            }
            ApiKey::ConsumerGroupDescribe => {
                ResponseKind::ConsumerGroupDescribe(Default::default())
            }
            ApiKey::DescribeAcls => ResponseKind::DescribeAcls(Default::default()),
            ApiKey::CreateAcls => ResponseKind::CreateAcls(Default::default()),
            ApiKey::DeleteAcls => ResponseKind::DeleteAcls(Default::default()),
            ApiKey::DescribeClientQuotas => ResponseKind::DescribeClientQuotas(Default::default()),
            ApiKey::DescribeLogDirs => ResponseKind::DescribeLogDirs(Default::default()),
            ApiKey::ListConfigResources => ResponseKind::ListConfigResources(Default::default()),
            ApiKey::AlterClientQuotas => ResponseKind::AlterClientQuotas(Default::default()),
            ApiKey::OffsetForLeaderEpoch => ResponseKind::OffsetForLeaderEpoch(Default::default()),
            ApiKey::ElectLeaders => ResponseKind::ElectLeaders(Default::default()),
            ApiKey::ListPartitionReassignments => {
                ResponseKind::ListPartitionReassignments(Default::default())
            }
            ApiKey::AlterPartitionReassignments => {
                ResponseKind::AlterPartitionReassignments(Default::default())
            }
            ApiKey::AlterUserScramCredentials => {
                ResponseKind::AlterUserScramCredentials(Default::default())
            }
            ApiKey::DescribeUserScramCredentials => {
                ResponseKind::DescribeUserScramCredentials(Default::default())
            }
            ApiKey::SaslHandshake => ResponseKind::SaslHandshake(Default::default()),
            ApiKey::SaslAuthenticate => ResponseKind::SaslAuthenticate(Default::default()),
            _ => return Err(()),
        })
    }
}
