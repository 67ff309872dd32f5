//! Key compaction of compacted topics (`cleanup.policy` with `compact`): for each partition,
//! of the records below its cleanable end, only the latest record of each key is kept;
//! tombstones are kept `delete.retention.ms` after they were first compacted, then removed.
//! Offsets never change: the log gets gaps, which readers step over. Runs after the WAL ->
//! Parquet rewrite of a pass, on the Parquet files; see `docs/compaction.md`.

mod files;
mod key_map;
mod plan;
mod retain;
mod retype;
mod stream;

use std::sync::Arc;

use metastore::MetaStore;
use storage::topics;

pub use key_map::KeyMap;
pub use plan::CleanState;
pub use retype::{retype_tables, RetypeReport, RETYPE_BYTES_PER_PASS};
pub use stream::{clean_key, KeyCompactor, KeyedReport};

/// Compacts every partition of every compacted topic that is due. Failures are logged and
/// retried on the next pass; they never stop the rest of the pass.
pub async fn compact_topics(
    compactor: &KeyCompactor<'_>,
    coord_meta: &Arc<dyn MetaStore>,
) -> KeyedReport {
    let mut report = KeyedReport::default();
    let all = match topics::list(coord_meta.as_ref()).await {
        Ok(all) => all,
        Err(error) => {
            tracing::warn!(%error, "cannot list topics for key compaction");
            return report;
        }
    };
    for topic in all {
        let config = match topic.record.config(&compactor.config.topic_defaults) {
            Ok(config) if config.cleanup_policy.compact => config,
            Ok(_) => continue,
            Err(error) => {
                tracing::warn!(topic = %topic.name, %error, "skipping key compaction: bad config");
                continue;
            }
        };
        for partition in 0..topic.record.partitions.max(0) {
            let stream = topic.record.stream_id(partition);
            match compactor.compact_stream(&stream, &config).await {
                Ok(done) => {
                    report.streams += done.streams;
                    report.files_written += done.files_written;
                    report.records_removed += done.records_removed;
                    report.bytes_read += done.bytes_read;
                    report.bytes_written += done.bytes_written;
                }
                Err(error) => {
                    tracing::warn!(topic = %topic.name, partition, %stream, %error, "key compaction failed; will retry");
                }
            }
        }
    }
    report
}
