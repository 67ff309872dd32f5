//! Every listed version of every API in `protocol::versions::SUPPORTED_APIS`, sent to a real
//! in-process broker, with its answer checked. The table promises that each version it lists
//! is exercised by a test; this binary is where that promise is kept, and it cannot pass with
//! a listed version left out:
//!
//! - `every_api_in_the_table_has_a_coverage_test` fails when the table names an API that has
//!   no test below, or a test names an API the table does not list;
//! - each API's test runs its scenario once for every version the table lists for it (read
//!   from the table, so a version added there is sent here), and fails unless that run sent
//!   the API at exactly that version and got an answer the scenario accepted (every request
//!   goes through [`Ctx`], which records what was sent and answered).
//!
//! The scenarios check what a client of that version relies on; the edge cases of each API
//! stay in the test file named for it (`groups.rs`, `admin_apis.rs`, ...).

// Test code: an unexpected error fails the test with the value it got.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Test code: offsets, counts, sizes and times of test data are converted with `as`.
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss
)]

#[path = "../common/mod.rs"]
mod common;

mod acls;
mod admin;
mod config_resources;
mod consumer;
mod ctx;
mod fetch;
mod groups;
mod list_offsets;
mod log;
mod offsets;
mod produce;
mod sasl;
mod scram;
mod topic_partitions;
mod transactions;

use std::collections::BTreeSet;

use kafka_protocol::messages::ApiKey;
use protocol::versions::{supported_range, SASL_APIS, SUPPORTED_APIS};

use ctx::Ctx;

/// One `#[tokio::test]` per API, and the list of APIs they cover, from one list: the two
/// cannot disagree.
macro_rules! coverage_tests {
    ($($test:ident => $api:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $test() {
                exercise(ApiKey::$api).await;
            }
        )*

        const EXERCISED: &[ApiKey] = &[$(ApiKey::$api),*];
    };
}

coverage_tests! {
    produce_stores_batches_at_every_version => Produce,
    fetch_reads_them_back_at_every_version => Fetch,
    list_offsets_finds_offsets_by_time_at_every_version => ListOffsets,
    metadata_describes_topics_and_brokers_at_every_version => Metadata,
    describe_topic_partitions_pages_by_cursor_at_every_version => DescribeTopicPartitions,
    list_config_resources_lists_topics_and_brokers_at_every_version => ListConfigResources,
    api_versions_lists_the_table_at_every_version => ApiVersions,
    create_topics_creates_at_every_version => CreateTopics,
    delete_topics_deletes_at_every_version => DeleteTopics,
    describe_configs_shows_topic_configs_at_every_version => DescribeConfigs,
    alter_configs_sets_topic_configs_at_every_version => AlterConfigs,
    create_partitions_adds_partitions_at_every_version => CreatePartitions,
    incremental_alter_configs_sets_and_deletes_at_every_version => IncrementalAlterConfigs,
    describe_cluster_names_this_broker_at_every_version => DescribeCluster,
    find_coordinator_names_this_broker_at_every_version => FindCoordinator,
    join_group_forms_a_group_at_every_version => JoinGroup,
    sync_group_hands_out_assignments_at_every_version => SyncGroup,
    heartbeat_keeps_a_member_and_fences_others_at_every_version => Heartbeat,
    leave_group_removes_a_member_at_every_version => LeaveGroup,
    offset_commit_stores_offsets_at_every_version => OffsetCommit,
    offset_fetch_returns_committed_offsets_at_every_version => OffsetFetch,
    describe_groups_shows_members_at_every_version => DescribeGroups,
    list_groups_lists_and_filters_at_every_version => ListGroups,
    delete_groups_deletes_empty_groups_at_every_version => DeleteGroups,
    offset_delete_spares_subscribed_topics_at_every_version => OffsetDelete,
    init_producer_id_hands_out_ids_at_every_version => InitProducerId,
    add_partitions_to_txn_adds_and_verifies_at_every_version => AddPartitionsToTxn,
    add_offsets_to_txn_commits_offsets_with_the_transaction_at_every_version => AddOffsetsToTxn,
    end_txn_commits_aborts_and_fences_at_every_version => EndTxn,
    txn_offset_commit_stages_until_commit_at_every_version => TxnOffsetCommit,
    describe_transactions_shows_state_and_partitions_at_every_version => DescribeTransactions,
    list_transactions_filters_at_every_version => ListTransactions,
    describe_producers_shows_open_transactions_at_every_version => DescribeProducers,
    delete_records_moves_the_log_start_at_every_version => DeleteRecords,
    consumer_group_heartbeat_assigns_at_every_version => ConsumerGroupHeartbeat,
    consumer_group_describe_shows_assignments_at_every_version => ConsumerGroupDescribe,
    describe_acls_lists_what_a_filter_selects_at_every_version => DescribeAcls,
    create_acls_stores_bindings_at_every_version => CreateAcls,
    delete_acls_removes_what_a_filter_selects_at_every_version => DeleteAcls,
    describe_log_dirs_sizes_partitions_at_every_version => DescribeLogDirs,
    offset_for_leader_epoch_ends_epoch_zero_at_the_log_end_at_every_version => OffsetForLeaderEpoch,
    elect_leaders_finds_no_election_needed_at_every_version => ElectLeaders,
    list_partition_reassignments_lists_none_at_every_version => ListPartitionReassignments,
    alter_partition_reassignments_keeps_the_one_replica_at_every_version => AlterPartitionReassignments,
    describe_client_quotas_finds_none_at_every_version => DescribeClientQuotas,
    alter_client_quotas_sets_and_removes_at_every_version => AlterClientQuotas,
    alter_user_scram_credentials_upserts_and_deletes_at_every_version => AlterUserScramCredentials,
    describe_user_scram_credentials_lists_mechanisms_at_every_version => DescribeUserScramCredentials,
}

#[test]
fn every_api_in_the_table_has_a_coverage_test() {
    let listed: BTreeSet<i16> = SUPPORTED_APIS
        .iter()
        .map(|(api, _, _)| *api as i16)
        .collect();
    let exercised: BTreeSet<i16> = EXERCISED.iter().map(|api| *api as i16).collect();
    assert_eq!(listed.len(), SUPPORTED_APIS.len(), "an API listed twice");
    assert_eq!(exercised.len(), EXERCISED.len(), "an API with two tests");
    let untested: Vec<ApiKey> = listed
        .difference(&exercised)
        .filter_map(|key| ApiKey::try_from(*key).ok())
        .collect();
    assert!(untested.is_empty(), "listed without a test: {untested:?}");
    let unlisted: Vec<ApiKey> = exercised
        .difference(&listed)
        .filter_map(|key| ApiKey::try_from(*key).ok())
        .collect();
    assert!(unlisted.is_empty(), "tested but not listed: {unlisted:?}");
}

/// The SASL APIs, listed apart (SASL listeners only), each at every version listed.
#[tokio::test]
async fn sasl_apis_authenticate_at_every_version() {
    let exercised = [ApiKey::SaslHandshake, ApiKey::SaslAuthenticate];
    let listed: Vec<ApiKey> = SASL_APIS.iter().map(|(api, _, _)| *api).collect();
    assert_eq!(listed, exercised, "a SASL API without a scenario");
    let mut ctx = Ctx::start().await;
    for &(api, min, max) in SASL_APIS {
        for version in min..=max {
            let _context = ctx::Announce { api, version };
            match api {
                ApiKey::SaslHandshake => sasl::sasl_handshake(&mut ctx, version).await,
                _ => sasl::sasl_authenticate(&mut ctx, version).await,
            }
        }
    }
}

/// Runs `api`'s scenario at every version the table lists, each on the same broker, and
/// checks that each run sent `api` at that version.
async fn exercise(api: ApiKey) {
    let (min, max) = supported_range(api).expect("every exercised API is in the table");
    let mut ctx = match api {
        // The ACL APIs need an authorizer; the anonymous client may administer it.
        ApiKey::CreateAcls | ApiKey::DescribeAcls | ApiKey::DeleteAcls => {
            Ctx::start_with(acls::BROKER_ARGS).await
        }
        _ => Ctx::start().await,
    };
    for version in min..=max {
        let _context = ctx::Announce { api, version };
        ctx.clear_sent();
        scenario(&mut ctx, api, version).await;
        assert!(
            ctx.sent(api, version),
            "the {api:?} scenario did not send {api:?} v{version}"
        );
    }
}

async fn scenario(ctx: &mut Ctx, api: ApiKey, version: i16) {
    match api {
        ApiKey::Produce => produce::scenario(ctx, version).await,
        ApiKey::Fetch => fetch::scenario(ctx, version).await,
        ApiKey::ListOffsets => list_offsets::scenario(ctx, version).await,
        ApiKey::Metadata => admin::metadata(ctx, version).await,
        ApiKey::ListConfigResources => config_resources::list_config_resources(ctx, version).await,
        ApiKey::DescribeTopicPartitions => {
            topic_partitions::describe_topic_partitions(ctx, version).await
        }
        ApiKey::ApiVersions => admin::api_versions(ctx, version).await,
        ApiKey::CreateTopics => admin::create_topics(ctx, version).await,
        ApiKey::DeleteTopics => admin::delete_topics(ctx, version).await,
        ApiKey::DescribeConfigs => admin::describe_configs(ctx, version).await,
        ApiKey::AlterConfigs => admin::alter_configs(ctx, version).await,
        ApiKey::CreatePartitions => admin::create_partitions(ctx, version).await,
        ApiKey::IncrementalAlterConfigs => admin::incremental_alter_configs(ctx, version).await,
        ApiKey::DescribeCluster => admin::describe_cluster(ctx, version).await,
        ApiKey::InitProducerId => admin::init_producer_id(ctx, version).await,
        ApiKey::AddPartitionsToTxn => transactions::add_partitions_to_txn(ctx, version).await,
        ApiKey::AddOffsetsToTxn => transactions::add_offsets_to_txn(ctx, version).await,
        ApiKey::EndTxn => transactions::end_txn_scenario(ctx, version).await,
        ApiKey::TxnOffsetCommit => transactions::txn_offset_commit_scenario(ctx, version).await,
        ApiKey::DescribeTransactions => transactions::describe_transactions(ctx, version).await,
        ApiKey::ListTransactions => transactions::list_transactions(ctx, version).await,
        ApiKey::DescribeProducers => transactions::describe_producers(ctx, version).await,
        ApiKey::DeleteRecords => admin::delete_records(ctx, version).await,
        ApiKey::FindCoordinator => groups::find_coordinator(ctx, version).await,
        ApiKey::JoinGroup => groups::join_group(ctx, version).await,
        ApiKey::SyncGroup => groups::sync_group(ctx, version).await,
        ApiKey::Heartbeat => groups::heartbeat(ctx, version).await,
        ApiKey::LeaveGroup => groups::leave_group(ctx, version).await,
        ApiKey::OffsetCommit => offsets::offset_commit(ctx, version).await,
        ApiKey::OffsetFetch => offsets::offset_fetch(ctx, version).await,
        ApiKey::DescribeGroups => groups::describe_groups(ctx, version).await,
        ApiKey::ListGroups => groups::list_groups(ctx, version).await,
        ApiKey::DeleteGroups => groups::delete_groups(ctx, version).await,
        ApiKey::OffsetDelete => offsets::offset_delete(ctx, version).await,
        ApiKey::ConsumerGroupHeartbeat => consumer::consumer_group_heartbeat(ctx, version).await,
        ApiKey::ConsumerGroupDescribe => consumer::consumer_group_describe(ctx, version).await,
        ApiKey::CreateAcls => acls::create_acls(ctx, version).await,
        ApiKey::DescribeAcls => acls::describe_acls(ctx, version).await,
        ApiKey::DeleteAcls => acls::delete_acls(ctx, version).await,
        ApiKey::DescribeLogDirs => admin::describe_log_dirs(ctx, version).await,
        ApiKey::OffsetForLeaderEpoch => admin::offset_for_leader_epoch(ctx, version).await,
        ApiKey::ElectLeaders => admin::elect_leaders(ctx, version).await,
        ApiKey::ListPartitionReassignments => {
            admin::list_partition_reassignments(ctx, version).await
        }
        ApiKey::AlterPartitionReassignments => {
            admin::alter_partition_reassignments(ctx, version).await
        }
        ApiKey::DescribeClientQuotas => scram::describe_client_quotas(ctx, version).await,
        ApiKey::AlterClientQuotas => scram::alter_client_quotas(ctx, version).await,
        ApiKey::AlterUserScramCredentials => {
            scram::alter_user_scram_credentials(ctx, version).await
        }
        ApiKey::DescribeUserScramCredentials => {
            scram::describe_user_scram_credentials(ctx, version).await
        }
        other => panic!("{other:?} has no scenario: write one before listing it"),
    }
}
