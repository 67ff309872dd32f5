//! Typed columns for files compacted before their topic's table had them (the topic became a
//! table, or its subject got its first version, after they were written): each such file is
//! rewritten once with the typed columns, and swapped in for itself at its own index key,
//! conditional on the version read, as key compaction swaps its groups. The new file holds the
//! same batches with the same index description; only the object key, length and checksum
//! change. The old file becomes an orphan once the table's next commit drops it. At most
//! [`RETYPE_BYTES_PER_PASS`] are rewritten per pass, so a large backfill spreads over passes.

use std::sync::Arc;

use metastore::{Expect, MetaError, MetaStore, PutOptions};
use object_store::path::Path;
use storage::compacted::{FileWriter, WriterOptions};
use storage::index::StoredEntry;
use storage::record_batch::decode_batch;
use storage::topics;
use storage::{FileType, IndexEntry};

use super::files::CompactedFile;
use super::stream::{next_generation, KeyCompactor};
use crate::upload::Upload;
use crate::CompactorError;

/// Compacted-file bytes rewritten with typed columns per pass, at most (one file may pass it).
pub const RETYPE_BYTES_PER_PASS: u64 = 1 << 30;

/// What the retype step did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RetypeReport {
    pub files_rewritten: u64,
    pub bytes_written: u64,
}

/// Rewrites the untyped files of every table's partitions, within the pass's budget.
pub async fn retype_tables(kc: &KeyCompactor<'_>, coord_meta: &Arc<dyn MetaStore>) -> RetypeReport {
    let mut report = RetypeReport::default();
    let all = match topics::list(coord_meta.as_ref()).await {
        Ok(all) => all,
        Err(error) => {
            tracing::warn!(%error, "cannot list topics for typed columns");
            return report;
        }
    };
    for topic in all {
        for partition in 0..topic.record.partitions.max(0) {
            let stream = topic.record.stream_id(partition);
            if report.bytes_written >= RETYPE_BYTES_PER_PASS {
                return report;
            }
            let Some(wanted) = kc.typing.typed_columns(&stream) else {
                break; // not a table with typed columns: no partition of it is
            };
            if let Err(error) = kc.retype_stream(&stream, &wanted, &mut report).await {
                tracing::warn!(topic = %topic.name, partition, %error, "typed column rewrite failed; will retry");
            }
        }
    }
    report
}

impl KeyCompactor<'_> {
    async fn retype_stream(
        &self,
        stream: &str,
        wanted: &[&str],
        report: &mut RetypeReport,
    ) -> Result<(), CompactorError> {
        let entries = self.entries(stream).await?;
        let mut generation = next_generation(&entries);
        for stored in &entries {
            let entry = &stored.located.entry;
            if entry.file_type != FileType::Parquet || self.typing.known_typed(&entry.object_key) {
                continue;
            }
            if report.bytes_written >= RETYPE_BYTES_PER_PASS {
                return Ok(());
            }
            let file = CompactedFile::open(self.objects, &stored.located, self.throttle).await?;
            let fields = file.footer().top_level_fields();
            if wanted.iter().all(|w| fields.iter().any(|f| f == w)) {
                self.typing.mark_typed(&entry.object_key);
                continue;
            }
            let written = self.retype_file(stream, stored, &file, generation).await?;
            generation += 1;
            report.files_rewritten += 1;
            report.bytes_written += written;
        }
        Ok(())
    }

    /// Writes `file` again with typed columns and swaps it in at the entry's own key.
    async fn retype_file(
        &self,
        stream: &str,
        stored: &StoredEntry,
        file: &CompactedFile<'_>,
        generation: u64,
    ) -> Result<u64, CompactorError> {
        let old = &stored.located.entry;
        let object_key = format!(
            "{}/{stream}/{:020}-g{generation:010}.parquet",
            self.config.compacted_prefix, stored.located.base_offset
        );
        let mut upload = Upload::new(self.objects.clone(), Path::from(object_key.as_str()));
        let written = match self.write_typed(stream, old, file, &mut upload).await {
            Ok(written) => written,
            Err(e) => {
                upload.abort().await;
                return Err(e);
            }
        };
        upload.finish().await?;
        tables::crash_point("retype-uploaded");
        let entry = IndexEntry {
            object_key: object_key.clone(),
            byte_offset: 0,
            byte_len: written.0,
            crc32c: written.1,
            ..IndexEntry::clone(old)
        };
        let options = PutOptions {
            expect: Expect::Version(stored.version_id),
            partition_key: Some(stream.to_string()),
            ..Default::default()
        };
        match self.meta.put(&stored.key, entry.encode(), options).await {
            Ok(_) => {}
            Err(MetaError::UnexpectedVersion) => {
                return Err(CompactorError::Conflict(stream.to_string()))
            }
            Err(e) => return Err(e.into()),
        }
        tables::crash_point("retype-swapped");
        self.typing.mark_typed(&object_key);
        tracing::info!(stream, old = %old.object_key, new = %object_key, "rewrote a file with its typed columns");
        Ok(u64::from(written.0))
    }

    /// The file's batches, each with its own index description, through a writer with the
    /// typed columns; returns the new file's (length, CRC32C).
    async fn write_typed(
        &self,
        stream: &str,
        old: &IndexEntry,
        file: &CompactedFile<'_>,
        upload: &mut Upload,
    ) -> Result<(u32, u32), CompactorError> {
        let options = WriterOptions::default();
        let extra = self.typing.extra(stream);
        let mut writer = if file.footer().key_compacted() {
            FileWriter::key_compacted(stream, &options, extra)?
        } else {
            FileWriter::with_extra(stream, &options, extra)?
        };
        let mut metas = old.batches.iter();
        for g in 0..file.groups() {
            let rebuilt = file
                .group(g, self.throttle, self.config.cpu_work_inline)
                .await?;
            for (base, bytes, attributes) in rebuilt.all_batches() {
                let mut batch =
                    decode_batch(&bytes).map_err(storage::compacted::CompactedError::from)?;
                batch.header.attributes = attributes;
                let meta = metas.next().ok_or_else(|| {
                    CompactorError::Corrupt(format!(
                        "{stream}: {} has more batches than its entry",
                        old.object_key
                    ))
                })?;
                writer.push_decoded(base, &batch, *meta)?;
            }
            upload.write(writer.take_output()?).await?;
        }
        if metas.next().is_some() {
            return Err(CompactorError::Corrupt(format!(
                "{stream}: {} has fewer batches than its entry",
                old.object_key
            )));
        }
        let (tail, written) = writer.finish()?;
        upload.write(tail).await?;
        debug_assert_eq!(
            written.batches, old.batches,
            "the same batches, described the same"
        );
        let byte_len = u32::try_from(written.byte_len).map_err(|_| {
            CompactorError::Corrupt(format!("{stream}: compacted file above 4 GiB"))
        })?;
        Ok((byte_len, written.crc32c))
    }
}
