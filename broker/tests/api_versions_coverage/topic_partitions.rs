//! DescribeTopicPartitions (KIP-966): a topic described in pages of a partition limit, the
//! cursor carried from one page to the next, and an unknown topic named with its error.

use kafka_protocol::messages::describe_topic_partitions_request::{Cursor, TopicRequest};
use kafka_protocol::messages::*;
use kafka_protocol::ResponseError;

use crate::common::name;
use crate::ctx::Ctx;
use crate::expect_kind;

pub async fn describe_topic_partitions(ctx: &mut Ctx, version: i16) {
    // Named so that the missing topic sorts after the described one.
    let topic = format!("a-paged-v{version}");
    let id = ctx.create_topic(&topic, 4).await;
    let missing = format!("b-missing-v{version}");
    let asked = |cursor: Option<Cursor>| {
        DescribeTopicPartitionsRequest::default()
            .with_topics(vec![
                TopicRequest::default().with_name(name(&topic)),
                TopicRequest::default().with_name(name(&missing)),
            ])
            .with_response_partition_limit(2)
            .with_cursor(cursor)
    };
    let first = expect_kind!(
        ctx.call(ApiKey::DescribeTopicPartitions, version, asked(None))
            .await,
        DescribeTopicPartitions
    );
    assert_eq!(first.topics.len(), 1, "{first:?}");
    assert_eq!(
        (first.topics[0].topic_id, first.topics[0].error_code),
        (id, 0)
    );
    let indexes = |r: &DescribeTopicPartitionsResponse| -> Vec<i32> {
        r.topics[0]
            .partitions
            .iter()
            .map(|p| p.partition_index)
            .collect()
    };
    assert_eq!(indexes(&first), [0, 1]);
    let next = first
        .next_cursor
        .clone()
        .expect("a cursor after the first page");
    assert_eq!(
        (next.topic_name.0.as_str(), next.partition_index),
        (topic.as_str(), 2)
    );
    let cursor = Cursor::default()
        .with_topic_name(next.topic_name)
        .with_partition_index(next.partition_index);
    let second = expect_kind!(
        ctx.call(
            ApiKey::DescribeTopicPartitions,
            version,
            asked(Some(cursor))
        )
        .await,
        DescribeTopicPartitions
    );
    assert_eq!(indexes(&second), [2, 3]);
    let leader = &second.topics[0].partitions[0];
    assert!(leader.leader_id.0 >= 0 && leader.isr_nodes == vec![leader.leader_id]);
    // The limit is reached on `topic`'s last partition: the cursor names the next topic,
    // which is not described in this page.
    assert_eq!(second.topics.len(), 1, "{second:?}");
    let after = second
        .next_cursor
        .as_ref()
        .map(|c| c.topic_name.0.to_string());
    assert_eq!(after, Some(missing.clone()), "{second:?}");
    let unknown = TopicRequest::default().with_name(name(&missing));
    let alone = expect_kind!(
        ctx.call(
            ApiKey::DescribeTopicPartitions,
            version,
            DescribeTopicPartitionsRequest::default()
                .with_topics(vec![unknown])
                .with_response_partition_limit(10)
        )
        .await,
        DescribeTopicPartitions
    );
    let code = ResponseError::UnknownTopicOrPartition.code();
    assert_eq!((alone.topics.len(), alone.topics[0].error_code), (1, code));
    assert!(alone.next_cursor.is_none());
}
