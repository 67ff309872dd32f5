//! OffsetFetch: one group (v1-v7) or several (v8+); all committed partitions when no topics
//! are named, else the named partitions, with -1 where nothing was committed. DESCRIBE on the
//! group is checked first (GROUP_AUTHORIZATION_FAILED); named topics the principal may not
//! describe are answered TOPIC_AUTHORIZATION_FAILED, and left out of an all-topics answer.

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kafka_protocol::messages::{OffsetFetchRequest, OffsetFetchResponse};
use kafka_protocol::ResponseError;

use super::{str_bytes, topic_name, RequestContext};
use crate::context::Broker;
use crate::groups::store::OffsetRecord;
use crate::security::authorizer::operations;

/// `topic -> partition -> committed offset (None: nothing committed)`.
type Offsets = BTreeMap<String, BTreeMap<i32, Option<OffsetRecord>>>;

/// What one group's answer holds.
#[derive(Default)]
struct Fetched {
    offsets: Offsets,
    /// Named topics the principal may not describe, with the partitions asked for.
    refused: Vec<(String, Vec<i32>)>,
    /// Partitions an open transaction has offsets staged for (asked with `require_stable`).
    unstable: BTreeSet<(String, i32)>,
}

/// One partition's answer, whichever response version carries it.
struct Answer {
    index: i32,
    offset: i64,
    epoch: i32,
    metadata: String,
    error: i16,
}

impl Fetched {
    /// Every topic's answers: committed (or unstable) partitions, then refused topics.
    fn answers(self) -> Vec<(String, Vec<Answer>)> {
        let unstable = self.unstable;
        let answered = self.offsets.into_iter().map(|(topic, partitions)| {
            let answers = partitions
                .into_iter()
                .map(|(index, record)| {
                    if !unstable.is_empty() && unstable.contains(&(topic.clone(), index)) {
                        return Answer::error(index, ResponseError::UnstableOffsetCommit);
                    }
                    let (offset, epoch, metadata) = values(record);
                    Answer {
                        index,
                        offset,
                        epoch,
                        metadata,
                        error: 0,
                    }
                })
                .collect();
            (topic, answers)
        });
        let refused = self.refused.into_iter().map(|(topic, partitions)| {
            let answers = partitions
                .into_iter()
                .map(|index| Answer::error(index, TOPIC_REFUSED))
                .collect();
            (topic, answers)
        });
        answered.chain(refused).collect()
    }
}

impl Answer {
    fn error(index: i32, error: ResponseError) -> Answer {
        Answer {
            index,
            offset: -1,
            epoch: -1,
            metadata: String::new(),
            error: error.code(),
        }
    }
}

pub async fn handle(
    broker: &Broker,
    context: &RequestContext,
    version: i16,
    request: OffsetFetchRequest,
) -> OffsetFetchResponse {
    if version >= 8 {
        let mut groups = Vec::with_capacity(request.groups.len());
        for group in request.groups {
            let wanted = group.topics.map(|topics| {
                topics
                    .into_iter()
                    .map(|t| (t.name.0.to_string(), t.partition_indexes))
                    .collect()
            });
            let response =
                OffsetFetchResponseGroup::default().with_group_id(group.group_id.clone());
            if !allowed(broker, context, &group.group_id.0) {
                groups.push(response.with_error_code(GROUP_REFUSED.code()));
                continue;
            }
            // v9 carries the member of a consumer-protocol group, which must be current.
            if version >= 9 {
                let member_id = group.member_id.as_deref().unwrap_or_default();
                let check = broker
                    .groups
                    .check_consumer_fetch(&group.group_id.0, member_id, group.member_epoch)
                    .await;
                if let Err(error) = check {
                    groups.push(response.with_error_code(error.code()));
                    continue;
                }
            }
            groups.push(
                match fetch(
                    broker,
                    context,
                    &group.group_id.0,
                    wanted,
                    request.require_stable,
                )
                .await
                {
                    Ok(fetched) => response.with_topics(multi_group_topics(fetched)),
                    Err(error) => response.with_error_code(error.code()),
                },
            );
        }
        return OffsetFetchResponse::default().with_groups(groups);
    }
    // v1 has no "all topics" form: a null list is read as empty.
    let wanted = match request.topics {
        Some(topics) => Some(
            topics
                .into_iter()
                .map(|t| (t.name.0.to_string(), t.partition_indexes))
                .collect(),
        ),
        None if version >= 2 => None,
        None => Some(Vec::new()),
    };
    let fetched = if allowed(broker, context, &request.group_id.0) {
        let stable = version >= 7 && request.require_stable;
        fetch(broker, context, &request.group_id.0, wanted, stable).await
    } else {
        Err(GROUP_REFUSED)
    };
    match fetched {
        Ok(fetched) => OffsetFetchResponse::default().with_topics(single_group_topics(fetched)),
        Err(error) if version >= 2 => OffsetFetchResponse::default().with_error_code(error.code()),
        Err(_) => OffsetFetchResponse::default(),
    }
}

const GROUP_REFUSED: ResponseError = ResponseError::GroupAuthorizationFailed;

fn allowed(broker: &Broker, context: &RequestContext, group_id: &str) -> bool {
    broker
        .authorizer
        .allows(context, &operations::OFFSET_FETCH_GROUP, group_id)
}

async fn fetch(
    broker: &Broker,
    context: &RequestContext,
    group_id: &str,
    wanted: Option<Vec<(String, Vec<i32>)>>,
    require_stable: bool,
) -> Result<Fetched, ResponseError> {
    if group_id.is_empty() {
        return Err(ResponseError::InvalidGroupId);
    }
    let mut fetched = committed(broker, context, group_id, wanted).await?;
    if require_stable {
        let staged = crate::transactions::offsets::unstable_partitions(broker, group_id).await?;
        fetched.unstable = staged.into_iter().collect();
    }
    Ok(fetched)
}

async fn committed(
    broker: &Broker,
    context: &RequestContext,
    group_id: &str,
    wanted: Option<Vec<(String, Vec<i32>)>>,
) -> Result<Fetched, ResponseError> {
    let authorizer = &broker.authorizer;
    let mut fetched = Fetched::default();
    match wanted {
        None => {
            for committed in broker.groups.fetch_offsets(group_id, None).await? {
                fetched
                    .offsets
                    .entry(committed.topic)
                    .or_default()
                    .insert(committed.partition, Some(committed.record));
            }
            fetched.offsets.retain(|topic, _| {
                authorizer.allows_quietly(context, &operations::OFFSET_FETCH, topic)
            });
        }
        Some(wanted) => {
            let (wanted, refused): (Vec<_>, Vec<_>) = wanted.into_iter().partition(|(topic, _)| {
                authorizer.allows(context, &operations::OFFSET_FETCH, topic)
            });
            fetched.refused = refused;
            let topics: Vec<String> = wanted.iter().map(|(t, _)| t.clone()).collect();
            let mut committed: BTreeMap<(String, i32), OffsetRecord> = BTreeMap::new();
            for c in broker.groups.fetch_offsets(group_id, Some(&topics)).await? {
                committed.insert((c.topic, c.partition), c.record);
            }
            for (topic, partitions) in wanted {
                let entry = fetched.offsets.entry(topic.clone()).or_default();
                for partition in partitions {
                    entry.insert(partition, committed.remove(&(topic.clone(), partition)));
                }
            }
        }
    }
    Ok(fetched)
}

const TOPIC_REFUSED: ResponseError = ResponseError::TopicAuthorizationFailed;

fn values(record: Option<OffsetRecord>) -> (i64, i32, String) {
    match record {
        Some(r) => (r.offset, r.leader_epoch, r.metadata),
        None => (-1, -1, String::new()),
    }
}

fn single_group_topics(fetched: Fetched) -> Vec<OffsetFetchResponseTopic> {
    let topic = |(name, answers): (String, Vec<Answer>)| {
        let partitions = answers
            .into_iter()
            .map(|a| {
                OffsetFetchResponsePartition::default()
                    .with_partition_index(a.index)
                    .with_committed_offset(a.offset)
                    .with_committed_leader_epoch(a.epoch)
                    .with_metadata(Some(str_bytes(&a.metadata)))
                    .with_error_code(a.error)
            })
            .collect();
        OffsetFetchResponseTopic::default()
            .with_name(topic_name(&name))
            .with_partitions(partitions)
    };
    fetched.answers().into_iter().map(topic).collect()
}

fn multi_group_topics(fetched: Fetched) -> Vec<OffsetFetchResponseTopics> {
    let topic = |(name, answers): (String, Vec<Answer>)| {
        let partitions = answers
            .into_iter()
            .map(|a| {
                OffsetFetchResponsePartitions::default()
                    .with_partition_index(a.index)
                    .with_committed_offset(a.offset)
                    .with_committed_leader_epoch(a.epoch)
                    .with_metadata(Some(str_bytes(&a.metadata)))
                    .with_error_code(a.error)
            })
            .collect();
        OffsetFetchResponseTopics::default()
            .with_name(topic_name(&name))
            .with_partitions(partitions)
    };
    fetched.answers().into_iter().map(topic).collect()
}
