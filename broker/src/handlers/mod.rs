//! Dispatch by API key, one file per API. Handlers answer errors in-band with Kafka error
//! codes; a [`HandlerError`] closes the connection, as Kafka does for requests it cannot serve.

mod add_offsets_to_txn;
mod add_partitions_to_txn;
mod add_partitions_to_txn_batched;
mod alter_client_quotas;
mod alter_user_scram_credentials;
mod api_versions;
mod configs;
mod consumer_group_describe;
mod consumer_group_heartbeat;
mod create_acls;
mod create_partitions;
mod create_topics;
mod delete_acls;
mod delete_groups;
mod delete_records;
mod delete_topics;
mod describe_acls;
mod describe_client_quotas;
mod describe_cluster;
mod describe_groups;
mod describe_log_dirs;
mod describe_producers;
mod describe_topic_partitions;
mod describe_transactions;
mod describe_user_scram_credentials;
mod elect_leaders;
mod end_txn;
mod fetch;
mod find_coordinator;
mod heartbeat;
mod init_producer_id;
mod join_group;
mod leave_group;
mod list_config_resources;
mod list_groups;
mod list_offsets;
mod list_transactions;
mod metadata;
mod offset_commit;
mod offset_delete;
mod offset_fetch;
mod offset_for_leader_epoch;
mod partition_reassignments;
mod produce;
mod produce_access;
pub(crate) mod produce_policy;
mod request_context;
pub mod sasl;
mod sasl_authenticate;
mod sasl_handshake;
mod sync_group;
mod throttle_time;
mod txn_offset_commit;

use std::sync::Arc;

use kafka_protocol::messages::{ApiKey, BrokerId, RequestKind, ResponseKind, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use protocol::codec::Request;

use crate::context::Broker;
use crate::quotas::{exempt::exempt, poll_time, throttle_ms, QuotaKind};
use crate::security::Session;
use crate::sequencer::{Sequencer, Ticket};
pub use request_context::RequestContext;

/// A log offset as Kafka's i64 field. Offsets count records from 0, far below `i64::MAX`;
/// one that were not would saturate, so answers stay ordered.
pub(crate) fn kafka_offset(offset: u64) -> i64 {
    i64::try_from(offset).unwrap_or(i64::MAX)
}

#[derive(Debug, thiserror::Error)]
pub enum HandlerError {
    /// The API is in the version table but no handler serves it (a wiring mistake).
    #[error("no handler for {0:?}")]
    NoHandler(ApiKey),
}

/// Serves one request. `Ok(None)` means no response is sent (Produce with acks=0).
/// `produce_ticket` orders a Produce after the connection's earlier ones (see `sequencer`);
/// `session` is the connection's security state: the client's address and principal.
pub async fn handle(
    broker: &Arc<Broker>,
    request: Request,
    produce_ticket: Option<Ticket>,
    session: &Session,
) -> Result<Option<ResponseKind>, HandlerError> {
    use tracing::Instrument;
    let api_key = request.api_key;
    let span = tracing::info_span!(
        "request",
        api = ?api_key,
        version = request.header.request_api_version,
        correlation_id = request.header.correlation_id,
        client_id = request.header.client_id.as_deref().unwrap_or_default(),
        principal = %session.principal,
        peer = %session.peer,
    );
    // A connection muted by a quota is served once its throttle time is over; a Produce is
    // counted as it passes, so that one pipelined behind it waits out its throttle.
    let client_id = request
        .header
        .client_id
        .as_deref()
        .unwrap_or_default()
        .to_string();
    let user = session.principal.name.as_str();
    let produce_throttle = match produce_bytes(&request.body) {
        Some(bytes) => Some(
            broker
                .quotas
                .admit(QuotaKind::Produce, user, &client_id, bytes, session.peer)
                .await,
        ),
        None => {
            broker.quotas.wait_unmuted(session.peer).await;
            None
        }
    };
    let started = std::time::Instant::now();
    // A Produce's appends report when they became durable: its `response` stage starts there.
    // The time inside the handler's `poll()` is what a request quota counts (`poll_time`).
    // Boxed: the state machine of every API's handler is large (debug builds overflowed a
    // 2 MiB thread stack polling it inline), and a caller's future stays small.
    let serving = Box::pin(serve(broker, request, produce_ticket, session).instrument(span));
    let ((mut served, durable_at), spent) =
        poll_time::timed(storage::wal::stages::durable_at(serving)).await;
    if matches!(served, Ok(Some(ResponseKind::Produce(_)))) {
        crate::metrics::produce_answered(durable_at);
    }
    // A Fetch applies its quota itself: a throttled one is answered empty (`fetch::handle`).
    if let (Ok(Some(ResponseKind::Produce(r))), Some(throttle)) = (&mut served, produce_throttle) {
        r.throttle_time_ms = throttle_ms(throttle);
    }
    if let (Ok(Some(response)), Some(spent)) = (&mut served, spent) {
        if !exempt(api_key) {
            let byte_throttle = throttle_time::carried(response);
            let quotas = &broker.quotas;
            let throttle = quotas.request(user, &client_id, spent, byte_throttle, session.peer);
            throttle_time::raise(response, throttle);
        }
    }
    let response = served.as_ref().ok().and_then(Option::as_ref);
    crate::metrics::record_request(api_key, started.elapsed(), response);
    served
}

/// Record-batch bytes of a Produce request, what its byte-rate quota counts.
fn produce_bytes(body: &RequestKind) -> Option<u64> {
    let RequestKind::Produce(produce) = body else {
        return None;
    };
    let bytes = produce
        .topic_data
        .iter()
        .flat_map(|t| t.partition_data.iter())
        .filter_map(|p| p.records.as_ref().map(|r| r.len() as u64))
        .sum();
    Some(bytes)
}

async fn serve(
    broker: &Arc<Broker>,
    request: Request,
    produce_ticket: Option<Ticket>,
    session: &Session,
) -> Result<Option<ResponseKind>, HandlerError> {
    let context = RequestContext::new(&request.header, session);
    if let Some(refused) = refuse_unauthorized_group(broker, &context, &request.body) {
        return Ok(Some(refused));
    }
    let placement = broker.membership.placement();
    if let Some(refused) =
        crate::cluster::coordinator_guard::refuse(&placement, broker.node.broker_id, &request.body)
    {
        return Ok(Some(refused));
    }
    let Request {
        api_key,
        header,
        body,
    } = request;
    let call = Call {
        broker,
        version: header.request_api_version,
        header: &header,
        context: &context,
        sasl_listener: session.protocol.uses_sasl(),
    };
    let body = match body {
        RequestKind::Produce(r) => return Ok(call.produce(r, produce_ticket, &placement).await),
        other => other,
    };
    let body = match call.data(body).await {
        Ok(response) => return Ok(Some(response)),
        Err(body) => body,
    };
    let body = match call.groups(body).await {
        Ok(response) => return Ok(Some(response)),
        Err(body) => body,
    };
    match call.admin(body).await {
        Ok(response) => Ok(Some(response)),
        Err(_) => Err(HandlerError::NoHandler(api_key)),
    }
}

/// Group requests only the coordinator serves are refused GROUP_AUTHORIZATION_FAILED without
/// READ on the group, before the coordinator is looked for, as Kafka checks them.
fn refuse_unauthorized_group(
    broker: &Broker,
    context: &RequestContext,
    body: &RequestKind,
) -> Option<ResponseKind> {
    use crate::cluster::coordinator_guard::{answer, group_of};
    use crate::security::authorizer::operations as ops;
    let group = group_of(body)?;
    let rule = match body {
        RequestKind::JoinGroup(_) => &ops::JOIN_GROUP,
        RequestKind::SyncGroup(_) => &ops::SYNC_GROUP,
        RequestKind::Heartbeat(_) => &ops::HEARTBEAT,
        RequestKind::LeaveGroup(_) => &ops::LEAVE_GROUP,
        RequestKind::OffsetCommit(_) => &ops::OFFSET_COMMIT_GROUP,
        _ => return None,
    };
    if broker.authorizer.allows(context, rule, group) {
        return None;
    }
    answer(body, ResponseError::GroupAuthorizationFailed)
}

/// What every handler may need of the request it serves.
struct Call<'a> {
    broker: &'a Arc<Broker>,
    version: i16,
    header: &'a kafka_protocol::messages::RequestHeader,
    context: &'a RequestContext,
    /// SASL listeners list the SASL APIs in ApiVersions.
    sasl_listener: bool,
}

/// Each family of APIs answers the requests it serves and hands any other back.
type Served = Result<ResponseKind, RequestKind>;

impl Call<'_> {
    async fn produce(
        &self,
        request: kafka_protocol::messages::ProduceRequest,
        ticket: Option<Ticket>,
        placement: &crate::cluster::Placement,
    ) -> Option<ResponseKind> {
        let ticket = ticket.unwrap_or_else(|| Sequencer::default().ticket());
        let request = produce::one_batch_per_partition(request);
        let (request, denied) =
            produce_access::split(&self.broker.authorizer, self.context, request);
        let (request, refused) = crate::cluster::produce_guard::split(
            placement,
            self.broker.node.broker_id,
            client_zone(self.header),
            request,
        );
        let response = produce::handle(self.broker, self.version, request, ticket).await?;
        let response = crate::cluster::produce_guard::merge(response, refused);
        Some(ResponseKind::Produce(produce_access::merge(
            response, denied,
        )))
    }

    /// Reading the log, and what a client asks before it reads or writes.
    async fn data(&self, body: RequestKind) -> Served {
        let (broker, version) = (self.broker, self.version);
        Ok(match body {
            RequestKind::Fetch(r) => {
                ResponseKind::Fetch(fetch::handle(broker, self.context, version, r).await)
            }
            RequestKind::ListOffsets(r) => ResponseKind::ListOffsets(
                list_offsets::handle(broker, self.context, version, r).await,
            ),
            RequestKind::ApiVersions(r) => {
                ResponseKind::ApiVersions(api_versions::handle(version, &r, self.sasl_listener))
            }
            RequestKind::Metadata(r) => ResponseKind::Metadata(
                metadata::handle(broker, self.context, version, client_zone(self.header), r).await,
            ),
            RequestKind::DescribeTopicPartitions(r) => ResponseKind::DescribeTopicPartitions(
                describe_topic_partitions::handle(
                    broker,
                    self.context,
                    client_zone(self.header),
                    r,
                )
                .await,
            ),
            RequestKind::DescribeCluster(r) => {
                ResponseKind::DescribeCluster(describe_cluster::handle(broker, self.context, r))
            }
            RequestKind::FindCoordinator(r) => ResponseKind::FindCoordinator(
                find_coordinator::handle(broker, self.context, version, r),
            ),
            RequestKind::InitProducerId(r) => ResponseKind::InitProducerId(
                init_producer_id::handle(broker, self.context, r).await,
            ),
            other => return self.transactions(other).await,
        })
    }

    /// The transaction coordinator's APIs, and TxnOffsetCommit (the group coordinator's).
    async fn transactions(&self, body: RequestKind) -> Served {
        let (broker, context) = (self.broker, self.context);
        Ok(match body {
            RequestKind::AddPartitionsToTxn(r) => ResponseKind::AddPartitionsToTxn(
                add_partitions_to_txn::handle(broker, context, self.version, r).await,
            ),
            RequestKind::AddOffsetsToTxn(r) => {
                ResponseKind::AddOffsetsToTxn(add_offsets_to_txn::handle(broker, context, r).await)
            }
            RequestKind::EndTxn(r) => {
                ResponseKind::EndTxn(end_txn::handle(broker, context, r).await)
            }
            RequestKind::TxnOffsetCommit(r) => ResponseKind::TxnOffsetCommit(
                txn_offset_commit::handle(broker, context, self.version, r).await,
            ),
            RequestKind::DescribeTransactions(r) => ResponseKind::DescribeTransactions(
                describe_transactions::handle(broker, context, r).await,
            ),
            RequestKind::ListTransactions(r) => {
                ResponseKind::ListTransactions(list_transactions::handle(broker, context, r).await)
            }
            RequestKind::DescribeProducers(r) => ResponseKind::DescribeProducers(
                describe_producers::handle(broker, context, r).await,
            ),
            other => return Err(other),
        })
    }

    /// Consumer groups of both protocols and their committed offsets.
    async fn groups(&self, body: RequestKind) -> Served {
        let (broker, version) = (self.broker, self.version);
        Ok(match body {
            RequestKind::JoinGroup(r) => {
                ResponseKind::JoinGroup(join_group::handle(broker, version, self.header, r).await)
            }
            RequestKind::SyncGroup(r) => {
                ResponseKind::SyncGroup(sync_group::handle(broker, version, r).await)
            }
            RequestKind::Heartbeat(r) => {
                ResponseKind::Heartbeat(heartbeat::handle(broker, r).await)
            }
            RequestKind::LeaveGroup(r) => {
                ResponseKind::LeaveGroup(leave_group::handle(broker, version, r).await)
            }
            RequestKind::OffsetCommit(r) => ResponseKind::OffsetCommit(
                offset_commit::handle(broker, self.context, version, r).await,
            ),
            RequestKind::OffsetFetch(r) => ResponseKind::OffsetFetch(
                offset_fetch::handle(broker, self.context, version, r).await,
            ),
            RequestKind::DescribeGroups(r) => ResponseKind::DescribeGroups(
                describe_groups::handle(broker, self.context, version, r).await,
            ),
            RequestKind::ListGroups(r) => ResponseKind::ListGroups(
                list_groups::handle(broker, self.context, version, r).await,
            ),
            RequestKind::DeleteGroups(r) => {
                ResponseKind::DeleteGroups(delete_groups::handle(broker, self.context, r).await)
            }
            RequestKind::OffsetDelete(r) => {
                ResponseKind::OffsetDelete(offset_delete::handle(broker, self.context, r).await)
            }
            RequestKind::ConsumerGroupHeartbeat(r) => ResponseKind::ConsumerGroupHeartbeat(
                consumer_group_heartbeat::handle(broker, self.context, r).await,
            ),
            RequestKind::ConsumerGroupDescribe(r) => ResponseKind::ConsumerGroupDescribe(
                consumer_group_describe::handle(broker, self.context, version, r).await,
            ),
            other => return Err(other),
        })
    }

    /// Topics, partitions, configs and records as administered.
    async fn admin(&self, body: RequestKind) -> Served {
        let (broker, version, context) = (self.broker, self.version, self.context);
        Ok(match body {
            RequestKind::CreateTopics(r) => {
                ResponseKind::CreateTopics(create_topics::handle(broker, context, version, r).await)
            }
            RequestKind::DeleteTopics(r) => {
                ResponseKind::DeleteTopics(delete_topics::handle(broker, context, version, r).await)
            }
            RequestKind::CreatePartitions(r) => {
                ResponseKind::CreatePartitions(create_partitions::handle(broker, context, r).await)
            }
            RequestKind::DescribeConfigs(r) => {
                ResponseKind::DescribeConfigs(configs::describe(broker, context, version, r).await)
            }
            RequestKind::AlterConfigs(r) => {
                ResponseKind::AlterConfigs(configs::alter(broker, context, r).await)
            }
            RequestKind::IncrementalAlterConfigs(r) => ResponseKind::IncrementalAlterConfigs(
                configs::incremental_alter(broker, context, r).await,
            ),
            RequestKind::DeleteRecords(r) => ResponseKind::DeleteRecords(
                delete_records::handle(broker, context, client_zone(self.header), r).await,
            ),
            RequestKind::CreateAcls(r) => {
                ResponseKind::CreateAcls(create_acls::handle(broker, context, r).await)
            }
            RequestKind::DescribeAcls(r) => {
                ResponseKind::DescribeAcls(describe_acls::handle(broker, context, r))
            }
            RequestKind::DeleteAcls(r) => {
                ResponseKind::DeleteAcls(delete_acls::handle(broker, context, r).await)
            }
            other => return self.security(other).await,
        })
    }

    /// SCRAM credentials, and the client quotas `kafka-configs` describes beside them.
    async fn security(&self, body: RequestKind) -> Served {
        let (broker, context) = (self.broker, self.context);
        Ok(match body {
            RequestKind::AlterUserScramCredentials(r) => ResponseKind::AlterUserScramCredentials(
                alter_user_scram_credentials::handle(broker, context, r).await,
            ),
            RequestKind::DescribeUserScramCredentials(r) => {
                ResponseKind::DescribeUserScramCredentials(describe_user_scram_credentials::handle(
                    broker, context, &r,
                ))
            }
            RequestKind::DescribeClientQuotas(r) => ResponseKind::DescribeClientQuotas(
                describe_client_quotas::handle(broker, context, &r),
            ),
            RequestKind::OffsetForLeaderEpoch(r) => ResponseKind::OffsetForLeaderEpoch(
                offset_for_leader_epoch::handle(broker, context, r).await,
            ),
            RequestKind::ElectLeaders(r) => {
                ResponseKind::ElectLeaders(elect_leaders::handle(broker, context, self.version, r))
            }
            RequestKind::ListPartitionReassignments(r) => ResponseKind::ListPartitionReassignments(
                partition_reassignments::list(broker, context, r),
            ),
            RequestKind::AlterPartitionReassignments(r) => {
                ResponseKind::AlterPartitionReassignments(partition_reassignments::alter(
                    broker,
                    context,
                    client_zone(self.header),
                    r,
                ))
            }
            RequestKind::AlterClientQuotas(r) => ResponseKind::AlterClientQuotas(
                alter_client_quotas::handle(broker, context, r).await,
            ),
            RequestKind::ListConfigResources(r) => ResponseKind::ListConfigResources(
                list_config_resources::handle(broker, context, self.version, &r),
            ),
            RequestKind::DescribeLogDirs(r) => ResponseKind::DescribeLogDirs(
                describe_log_dirs::handle(
                    broker,
                    context,
                    client_zone(self.header),
                    self.version,
                    r,
                )
                .await,
            ),
            other => return Err(other),
        })
    }
}

/// The zone a client announces in its `client.id` (see `cluster::placement`).
fn client_zone(header: &kafka_protocol::messages::RequestHeader) -> Option<&str> {
    crate::cluster::client_zone(header.client_id.as_deref())
}

pub(crate) fn str_bytes(value: &str) -> StrBytes {
    StrBytes::from_string(value.to_string())
}

pub(crate) fn topic_name(value: &str) -> TopicName {
    TopicName(str_bytes(value))
}

pub(crate) fn broker_id(id: i32) -> BrokerId {
    BrokerId(id)
}
