//! Kafka's operation table: what each API asks the authorizer, on which resource, and what a
//! refusal answers (Kafka 4.1's `KafkaApis`, `ControllerApis`, `AclApis`, `AuthHelper`). Every
//! handler asks with one of these rules, so the table here is the whole of it; `docs/security.md`
//! prints it (`cargo run -p broker --example acl_operations_table`, a test keeps it current),
//! and a test fails when an advertised API has no row.

use kafka_protocol::messages::ApiKey;
use kafka_protocol::ResponseError;

use crate::security::acl::{AclOperation, ResourceType};

/// One check an API makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    pub api: ApiKey,
    pub operation: AclOperation,
    pub resource: ResourceType,
    /// What the refused part of the request is answered; `None` for checks that only choose
    /// between two ways of answering (an alternative grant, what is listed).
    pub error: Option<ResponseError>,
    /// When the check applies and what a refusal does, for the docs.
    pub applies: &'static str,
}

use AclOperation as Op;
use ApiKey as Api;
use ResourceType as Res;

const TOPIC_FAILED: Option<ResponseError> = Some(ResponseError::TopicAuthorizationFailed);
const GROUP_FAILED: Option<ResponseError> = Some(ResponseError::GroupAuthorizationFailed);
const CLUSTER_FAILED: Option<ResponseError> = Some(ResponseError::ClusterAuthorizationFailed);
const TXN_FAILED: Option<ResponseError> = Some(ResponseError::TransactionalIdAuthorizationFailed);

macro_rules! rules {
    ($($name:ident: $api:ident, $op:ident, $res:ident, $error:expr, $applies:literal;)*) => {
        $(pub const $name: Rule = Rule {
            api: Api::$api,
            operation: Op::$op,
            resource: Res::$res,
            error: $error,
            applies: $applies,
        };)*

        /// Every rule, in the order the docs list them.
        pub const TABLE: &[Rule] = &[$($name,)*];
    };
}

rules! {
    PRODUCE_TRANSACTIONAL: Produce, Write, TransactionalId, TXN_FAILED,
        "a request with a transactional id: every partition refused";
    PRODUCE: Produce, Write, Topic, TOPIC_FAILED,
        "each topic; its partitions refused, before existence and leadership are checked";
    FETCH_FOLLOWER: Fetch, ClusterAction, Cluster, TOPIC_FAILED,
        "a fetch from a replica (`replica_id` >= 0): every partition refused";
    FETCH: Fetch, Read, Topic, TOPIC_FAILED,
        "each topic of a consumer's fetch (session partitions included)";
    LIST_OFFSETS: ListOffsets, Describe, Topic, TOPIC_FAILED, "each topic";
    METADATA: Metadata, Describe, Topic, TOPIC_FAILED,
        "each topic named (refused ones are listed with the error); all-topics requests silently leave out the others";
    METADATA_AUTO_CREATE_CLUSTER: Metadata, Create, Cluster, None,
        "auto-creating unknown topics: allows every one";
    METADATA_AUTO_CREATE: Metadata, Create, Topic, TOPIC_FAILED,
        "else each unknown topic to auto-create";
    METADATA_CLUSTER_OPERATIONS: Metadata, Describe, Cluster, None,
        "v8-10 `include_cluster_authorized_operations`: without it, 0";
    DESCRIBE_TOPIC_PARTITIONS: DescribeTopicPartitions, Describe, Topic, TOPIC_FAILED,
        "each topic named (refused ones are listed with the error and no id); all-topics requests silently leave out the others";
    CREATE_TOPICS_CLUSTER: CreateTopics, Create, Cluster, None, "allows every topic";
    CREATE_TOPICS: CreateTopics, Create, Topic, TOPIC_FAILED,
        "else each topic (`Authorization failed.`)";
    CREATE_TOPICS_CONFIGS: CreateTopics, DescribeConfigs, Topic, TOPIC_FAILED,
        "the created topic's configs in the answer (v5+); refused: `topic_config_error_code`, no configs";
    DELETE_TOPICS_CLUSTER: DeleteTopics, Delete, Cluster, None, "allows every topic";
    DELETE_TOPICS_DESCRIBE: DeleteTopics, Describe, Topic, TOPIC_FAILED,
        "else each topic, before its existence is told";
    DELETE_TOPICS: DeleteTopics, Delete, Topic, TOPIC_FAILED, "and each existing topic";
    DESCRIBE_CONFIGS_TOPIC: DescribeConfigs, DescribeConfigs, Topic, TOPIC_FAILED, "a TOPIC resource";
    DESCRIBE_CONFIGS_BROKER: DescribeConfigs, DescribeConfigs, Cluster, CLUSTER_FAILED, "a BROKER resource";
    ALTER_CONFIGS_TOPIC: AlterConfigs, AlterConfigs, Topic, TOPIC_FAILED, "a TOPIC resource";
    ALTER_CONFIGS_BROKER: AlterConfigs, AlterConfigs, Cluster, CLUSTER_FAILED, "a BROKER resource";
    INCREMENTAL_ALTER_CONFIGS_TOPIC: IncrementalAlterConfigs, AlterConfigs, Topic, TOPIC_FAILED,
        "a TOPIC resource";
    INCREMENTAL_ALTER_CONFIGS_BROKER: IncrementalAlterConfigs, AlterConfigs, Cluster, CLUSTER_FAILED,
        "a BROKER resource";
    CREATE_PARTITIONS: CreatePartitions, Alter, Topic, TOPIC_FAILED, "each topic";
    DELETE_RECORDS: DeleteRecords, Delete, Topic, TOPIC_FAILED, "each topic";
    DESCRIBE_CLUSTER_OPERATIONS: DescribeCluster, Describe, Cluster, None,
        "`include_cluster_authorized_operations`: without it, 0 (the brokers are listed to anyone, as in Kafka)";
    FIND_COORDINATOR_GROUP: FindCoordinator, Describe, Group, GROUP_FAILED, "each GROUP key";
    FIND_COORDINATOR_TRANSACTION: FindCoordinator, Describe, TransactionalId, TXN_FAILED,
        "each TRANSACTION key";
    JOIN_GROUP: JoinGroup, Read, Group, GROUP_FAILED, "the group, before its coordinator is looked for";
    SYNC_GROUP: SyncGroup, Read, Group, GROUP_FAILED, "the group";
    HEARTBEAT: Heartbeat, Read, Group, GROUP_FAILED, "the group";
    LEAVE_GROUP: LeaveGroup, Read, Group, GROUP_FAILED, "the group";
    OFFSET_COMMIT_GROUP: OffsetCommit, Read, Group, GROUP_FAILED, "the group: every partition refused";
    OFFSET_COMMIT: OffsetCommit, Read, Topic, TOPIC_FAILED, "each topic";
    OFFSET_FETCH_GROUP: OffsetFetch, Describe, Group, GROUP_FAILED, "each group";
    OFFSET_FETCH: OffsetFetch, Describe, Topic, TOPIC_FAILED,
        "each topic named; a request for all topics silently leaves out the others";
    DESCRIBE_GROUPS: DescribeGroups, Describe, Group, GROUP_FAILED, "each group";
    LIST_GROUPS_CLUSTER: ListGroups, Describe, Cluster, None, "lists every group";
    LIST_GROUPS: ListGroups, Describe, Group, None, "else only the groups it allows";
    DELETE_GROUPS: DeleteGroups, Delete, Group, GROUP_FAILED, "each group";
    OFFSET_DELETE_GROUP: OffsetDelete, Delete, Group, GROUP_FAILED, "the group";
    OFFSET_DELETE: OffsetDelete, Read, Topic, TOPIC_FAILED, "each topic";
    INIT_PRODUCER_ID_TRANSACTIONAL: InitProducerId, Write, TransactionalId, TXN_FAILED,
        "a transactional id";
    INIT_PRODUCER_ID_IDEMPOTENT: InitProducerId, IdempotentWrite, Cluster, CLUSTER_FAILED,
        "an idempotent producer, unless WRITE is allowed on some topic (KIP-679)";
    ADD_PARTITIONS_TO_TXN_ID: AddPartitionsToTxn, Write, TransactionalId, TXN_FAILED,
        "the transactional id: every partition refused";
    ADD_PARTITIONS_TO_TXN: AddPartitionsToTxn, Write, Topic, TOPIC_FAILED,
        "each topic (one refused: the others OPERATION_NOT_ATTEMPTED)";
    ADD_PARTITIONS_TO_TXN_BATCHED: AddPartitionsToTxn, ClusterAction, Cluster, CLUSTER_FAILED,
        "v4, the brokers' batched form: the request refused";
    ADD_OFFSETS_TO_TXN_ID: AddOffsetsToTxn, Write, TransactionalId, TXN_FAILED,
        "the transactional id";
    ADD_OFFSETS_TO_TXN: AddOffsetsToTxn, Read, Group, GROUP_FAILED, "the group";
    TXN_OFFSET_COMMIT_ID: TxnOffsetCommit, Write, TransactionalId, TXN_FAILED,
        "the transactional id: every partition refused";
    TXN_OFFSET_COMMIT_GROUP: TxnOffsetCommit, Read, Group, GROUP_FAILED,
        "the group: every partition refused";
    TXN_OFFSET_COMMIT: TxnOffsetCommit, Read, Topic, TOPIC_FAILED, "each topic";
    END_TXN: EndTxn, Write, TransactionalId, TXN_FAILED, "the transactional id";
    DESCRIBE_TRANSACTIONS: DescribeTransactions, Describe, TransactionalId, TXN_FAILED,
        "each transactional id";
    LIST_TRANSACTIONS: ListTransactions, Describe, TransactionalId, None,
        "lists only the transactional ids it allows";
    DESCRIBE_PRODUCERS: DescribeProducers, Read, Topic, TOPIC_FAILED, "each topic";
    CONSUMER_GROUP_HEARTBEAT: ConsumerGroupHeartbeat, Read, Group, GROUP_FAILED, "the group";
    CONSUMER_GROUP_HEARTBEAT_TOPICS: ConsumerGroupHeartbeat, Describe, Topic, TOPIC_FAILED,
        "every subscribed topic name (one refused refuses the heartbeat); a regex matches only the topics allowed";
    CONSUMER_GROUP_DESCRIBE: ConsumerGroupDescribe, Describe, Group, GROUP_FAILED, "each group";
    CONSUMER_GROUP_DESCRIBE_TOPICS: ConsumerGroupDescribe, Describe, Topic, TOPIC_FAILED,
        "every topic assigned in the group: one refused refuses the group";
    CREATE_ACLS: CreateAcls, Alter, Cluster, CLUSTER_FAILED, "every creation refused";
    DESCRIBE_ACLS: DescribeAcls, Describe, Cluster, CLUSTER_FAILED, "the request refused";
    DELETE_ACLS: DeleteAcls, Alter, Cluster, CLUSTER_FAILED, "every filter refused";
    OFFSET_FOR_LEADER_EPOCH_CLUSTER: OffsetForLeaderEpoch, ClusterAction, Cluster, None,
        "allows every topic";
    OFFSET_FOR_LEADER_EPOCH: OffsetForLeaderEpoch, Describe, Topic, TOPIC_FAILED,
        "else each topic";
    ELECT_LEADERS: ElectLeaders, Alter, Cluster, CLUSTER_FAILED, "every partition refused";
    LIST_PARTITION_REASSIGNMENTS: ListPartitionReassignments, Describe, Cluster, CLUSTER_FAILED,
        "the request refused";
    ALTER_PARTITION_REASSIGNMENTS: AlterPartitionReassignments, Alter, Cluster, CLUSTER_FAILED,
        "every partition refused";
    DESCRIBE_LOG_DIRS: DescribeLogDirs, Describe, Cluster, CLUSTER_FAILED,
        "the request refused (v3+: the top-level error; no directories)";
    ALTER_CLIENT_QUOTAS: AlterClientQuotas, AlterConfigs, Cluster, CLUSTER_FAILED,
        "every entry refused";
    DESCRIBE_CLIENT_QUOTAS: DescribeClientQuotas, DescribeConfigs, Cluster, CLUSTER_FAILED,
        "the request refused";
    ALTER_USER_SCRAM_CREDENTIALS: AlterUserScramCredentials, Alter, Cluster, CLUSTER_FAILED,
        "every user of the request refused";
    LIST_CONFIG_RESOURCES: ListConfigResources, DescribeConfigs, Cluster, CLUSTER_FAILED,
        "the request refused";
    DESCRIBE_USER_SCRAM_CREDENTIALS: DescribeUserScramCredentials, Describe, Cluster, CLUSTER_FAILED,
        "the request refused";
}

/// APIs served to anyone: nothing to authorize (the SASL exchange comes before a principal).
pub const UNCHECKED: &[ApiKey] = &[
    ApiKey::ApiVersions,
    ApiKey::SaslHandshake,
    ApiKey::SaslAuthenticate,
];

/// The table as `docs/security.md` shows it.
pub fn markdown_table() -> String {
    let mut out = String::from(
        "| API | operation | resource | refused with | when |\n|---|---|---|---|---|\n",
    );
    for rule in TABLE {
        let error = rule.error.map_or("(none: see when)".to_string(), |e| {
            format!("{e:?}").chars().fold(String::new(), |mut s, c| {
                if c.is_uppercase() && !s.is_empty() {
                    s.push('_');
                }
                s.push(c.to_ascii_uppercase());
                s
            })
        });
        out.push_str(&format!(
            "| {:?} | {} | {} | {} | {} |\n",
            rule.api, rule.operation, rule.resource, error, rule.applies
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_advertised_api_has_a_row_or_is_unchecked() {
        for (api, _, _) in protocol::versions::SUPPORTED_APIS {
            assert!(
                UNCHECKED.contains(api) || TABLE.iter().any(|rule| rule.api == *api),
                "{api:?} asks the authorizer nothing: add its rules to operations.rs"
            );
        }
    }

    #[test]
    fn refusal_codes_print_as_kafka_names_them() {
        let table = markdown_table();
        assert!(
            table.contains("| Produce | WRITE | TOPIC | TOPIC_AUTHORIZATION_FAILED |"),
            "{table}"
        );
        assert!(table.contains(
            "| InitProducerId | IDEMPOTENT_WRITE | CLUSTER | CLUSTER_AUTHORIZATION_FAILED |"
        ));
    }

    #[test]
    fn the_docs_show_this_table() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/security.md");
        let docs = std::fs::read_to_string(path).unwrap();
        assert!(
            docs.contains(&markdown_table()),
            "docs/security.md: the operation table is stale; regenerate it with `cargo run -p broker --example acl_operations_table`"
        );
    }
}
