//! The topic records of the catalog as stored in the coordination MetaStore:
//! `topics/<name>` -> JSON [`TopicRecord`]. The broker's catalog writes and caches them; the
//! compactor only reads them (retention settings, which streams exist). Their configs resolve
//! here, not in the broker, so that both read them the same way.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{ConfigError, TopicConfig, TopicDefaults};
use metastore::{MetaError, MetaStore};

pub const TOPICS_PREFIX: &str = "topics/";
/// Upper bound of the `topics/<name>` range in Oxia's slash-aware key order.
pub const TOPICS_END: &str = "topics//";
/// Records read per range scan while listing topics.
const SCAN_PAGE_RECORDS: usize = 1000;

/// What the store holds for a topic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopicRecord {
    pub id: Uuid,
    pub partitions: i32,
    /// Topic-level overrides only; absent keys take the broker defaults.
    pub configs: BTreeMap<String, String>,
    pub created_ms: u64,
}

impl TopicRecord {
    /// The storage stream holding one partition's log (no '/', as stream ids require).
    pub fn stream_id(&self, partition: i32) -> String {
        stream_id(self.id, partition)
    }

    /// The topic's typed config on a broker with `defaults`.
    pub fn config(&self, defaults: &TopicDefaults) -> Result<TopicConfig, TopicError> {
        Ok(TopicConfig::resolve(&self.configs, defaults)?)
    }

    /// How long records are kept, `None` for ever (`retention.ms` = -1), on a broker with
    /// Kafka's defaults; [`Self::config`] takes the broker's settings into account.
    pub fn retention_ms(&self) -> Result<Option<u64>, TopicError> {
        Ok(self.config(&TopicDefaults::kafka())?.retention_ms)
    }

    /// Bytes kept per partition, `None` for no limit (`retention.bytes` < 0), on a broker with
    /// Kafka's defaults; [`Self::config`] takes the broker's settings into account.
    pub fn retention_bytes(&self) -> Result<Option<u64>, TopicError> {
        Ok(self.config(&TopicDefaults::kafka())?.retention_bytes)
    }
}

/// The stream id of a partition of the topic with this unique id.
pub fn stream_id(topic_id: Uuid, partition: i32) -> String {
    format!("{}-{}", topic_id.simple(), partition)
}

pub fn topic_key(name: &str) -> String {
    format!("{TOPICS_PREFIX}{name}")
}

#[derive(Debug, thiserror::Error)]
pub enum TopicError {
    #[error("topic record {key} is unreadable: {reason}")]
    Corrupt { key: String, reason: String },
    #[error("bad topic config: {0}")]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Meta(#[from] MetaError),
}

pub fn encode(record: &TopicRecord) -> bytes::Bytes {
    // Serialising plain data with string keys cannot fail.
    bytes::Bytes::from(serde_json::to_vec(record).unwrap_or_default())
}

/// The topic name and record stored at `key`.
pub fn decode(key: &str, value: &[u8]) -> Result<(String, TopicRecord), TopicError> {
    let corrupt = |reason: String| TopicError::Corrupt {
        key: key.to_string(),
        reason,
    };
    let name = key
        .strip_prefix(TOPICS_PREFIX)
        .ok_or_else(|| corrupt("not a topic key".into()))?;
    let record: TopicRecord = serde_json::from_slice(value).map_err(|e| corrupt(e.to_string()))?;
    Ok((name.to_string(), record))
}

/// A topic as stored, with the version it was read at.
#[derive(Debug, Clone)]
pub struct StoredTopic {
    pub name: String,
    pub record: TopicRecord,
    pub version_id: i64,
}

/// Every topic in the store, in key order, read page by page.
pub async fn list(meta: &dyn MetaStore) -> Result<Vec<StoredTopic>, TopicError> {
    let mut out = Vec::new();
    let mut start = TOPICS_PREFIX.to_string();
    loop {
        let page = meta
            .range_scan(&start, TOPICS_END, None, SCAN_PAGE_RECORDS)
            .await?;
        let full = page.len() == SCAN_PAGE_RECORDS;
        for record in &page {
            let (name, topic) = decode(&record.key, &record.value)?;
            out.push(StoredTopic {
                name,
                record: topic,
                version_id: record.version.version_id,
            });
        }
        match page.last() {
            // Names never contain U+0001, so this is the smallest key after `last`.
            Some(last) if full => start = format!("{}\u{1}", last.key),
            _ => break,
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(configs: &[(&str, &str)]) -> TopicRecord {
        TopicRecord {
            id: Uuid::from_u128(0xabc),
            partitions: 2,
            configs: configs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            created_ms: 5,
        }
    }

    #[test]
    fn retention_defaults_to_seven_days_and_no_byte_limit() {
        let r = record(&[]);
        assert_eq!(r.retention_ms().unwrap(), Some(604_800_000));
        assert_eq!(r.retention_bytes().unwrap(), None);
    }

    #[test]
    fn retention_overrides_and_minus_one_mean_what_kafka_means() {
        let r = record(&[("retention.ms", "-1"), ("retention.bytes", "1024")]);
        assert_eq!(r.retention_ms().unwrap(), None);
        assert_eq!(r.retention_bytes().unwrap(), Some(1024));
        assert!(record(&[("retention.ms", "soon")]).retention_ms().is_err());
        assert!(record(&[("retention.ms", "-2")]).retention_ms().is_err());
        // Kafka takes any negative size as no limit.
        assert_eq!(
            record(&[("retention.bytes", "-2")])
                .retention_bytes()
                .unwrap(),
            None
        );
        let defaults = TopicDefaults::with([("log.retention.minutes", "1")]).unwrap();
        assert_eq!(
            record(&[]).config(&defaults).unwrap().retention_ms,
            Some(60_000)
        );
    }

    #[test]
    fn records_round_trip_and_name_their_stream() {
        let r = record(&[("retention.ms", "10")]);
        let (name, back) = decode(&topic_key("orders"), &encode(&r)).unwrap();
        assert_eq!((name.as_str(), &back), ("orders", &r));
        assert_eq!(
            r.stream_id(1),
            format!("{}-1", Uuid::from_u128(0xabc).simple())
        );
        assert!(decode("groups/x", &encode(&r)).is_err());
        assert!(decode(&topic_key("x"), b"{").is_err());
    }
}
