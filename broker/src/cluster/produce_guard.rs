//! Produce to a partition this broker does not lead is refused with `NOT_LEADER_OR_FOLLOWER`
//! (the client refreshes metadata and retries at the leader). Any broker could append, since
//! offsets come from the MetaStore, but one writer per partition keeps idempotent-producer
//! sequence state in one place and batches from one producer in order. Fetch is served by any
//! broker.

use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::{ProduceRequest, ProduceResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::Placement;

/// Partitions taken out of a request because another broker leads them.
#[derive(Debug, Default)]
pub struct Refused {
    topics: Vec<(TopicName, Vec<i32>)>,
}

impl Refused {
    pub fn is_empty(&self) -> bool {
        self.topics.is_empty()
    }
}

/// Removes from `request` the partitions that `my_id` does not lead for a client in `zone`.
pub fn split(
    placement: &Placement,
    my_id: i32,
    zone: Option<&str>,
    mut request: ProduceRequest,
) -> (ProduceRequest, Refused) {
    let mut refused = Refused::default();
    for topic in &mut request.topic_data {
        let name = topic.name.0.to_string();
        let mut not_mine = Vec::new();
        topic.partition_data.retain(|p| {
            let mine = placement.partition_leader(&name, p.index, zone).broker_id == my_id;
            if !mine {
                not_mine.push(p.index);
            }
            mine
        });
        if !not_mine.is_empty() {
            refused.topics.push((topic.name.clone(), not_mine));
        }
    }
    request.topic_data.retain(|t| !t.partition_data.is_empty());
    (request, refused)
}

/// Adds a `NOT_LEADER_OR_FOLLOWER` answer for every refused partition.
pub fn merge(mut response: ProduceResponse, refused: Refused) -> ProduceResponse {
    for (name, partitions) in refused.topics {
        let answers = partitions.into_iter().map(|index| {
            PartitionProduceResponse::default()
                .with_index(index)
                .with_error_code(ResponseError::NotLeaderOrFollower.code())
                .with_base_offset(-1)
                .with_log_append_time_ms(-1)
                .with_log_start_offset(-1)
                .with_error_message(Some(StrBytes::from_static_str(
                    "another broker leads this partition",
                )))
        });
        match response.responses.iter_mut().find(|t| t.name == name) {
            Some(topic) => topic.partition_responses.extend(answers),
            None => response.responses.push(
                TopicProduceResponse::default()
                    .with_name(name)
                    .with_partition_responses(answers.collect()),
            ),
        }
    }
    response
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};

    use super::*;
    use crate::cluster::Member;

    fn member(id: i32) -> Member {
        Member {
            broker_id: id,
            host: "h".into(),
            port: 1,
            rack: None,
            listeners: Vec::new(),
        }
    }

    #[test]
    fn partitions_led_elsewhere_are_answered_not_leader() {
        let placement = Placement::new(vec![member(1), member(2)], &member(3));
        let partitions: Vec<PartitionProduceData> = (0..30)
            .map(|i| PartitionProduceData::default().with_index(i))
            .collect();
        let request = ProduceRequest::default().with_topic_data(vec![TopicProduceData::default()
            .with_name(TopicName(StrBytes::from_static_str("t")))
            .with_partition_data(partitions)]);
        let (kept, refused) = split(&placement, 3, None, request);
        let kept_ids: Vec<i32> = kept
            .topic_data
            .iter()
            .flat_map(|t| t.partition_data.iter().map(|p| p.index))
            .collect();
        assert!(!refused.is_empty());
        for index in &kept_ids {
            assert_eq!(placement.partition_leader("t", *index, None).broker_id, 3);
        }
        let response = merge(ProduceResponse::default(), refused);
        let answered = &response.responses[0].partition_responses;
        assert_eq!(answered.len() + kept_ids.len(), 30);
        for answer in answered {
            assert_eq!(answer.error_code, ResponseError::NotLeaderOrFollower.code());
            assert_ne!(
                placement
                    .partition_leader("t", answer.index, None)
                    .broker_id,
                3
            );
        }
    }
}
