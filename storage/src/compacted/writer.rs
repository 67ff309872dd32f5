//! Writes one compacted file from a stream range's record batches, incrementally: the caller
//! pushes one WAL slice at a time and drains the bytes of finished row groups as they appear, so
//! memory holds one row group of columns plus whatever the caller has not drained yet.

use bytes::Bytes;
use parquet::basic::Compression;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::file::writer::SerializedFileWriter;

use super::columns::{self, Columns};
use super::row_group::{push_batch, write_group};
use super::{
    CompactedError, ExtraColumns, FORMAT_VERSION, FORMAT_VERSIONS_READ, FORMAT_VERSION_KEY,
    KEY_COMPACTED_FORMAT_VERSION, VALUES_ELIDED_SUFFIX,
};
use crate::index::{BatchMeta, ProducerMeta};
use record_batch::{decode_batch, split_batches, DecodedBatch};

/// How row groups are cut. A row group always ends on a batch boundary, so that the reader can
/// rebuild any batch from one row group.
#[derive(Clone, Debug)]
pub struct WriterOptions {
    pub row_group_rows_target: usize,
    pub row_group_bytes_target: usize,
}

impl Default for WriterOptions {
    /// Row groups of ~2 MiB: a read at any offset fetches and decodes about that much (one
    /// ranged GET, ~512 per GiB read), while the footer of a 128 MiB file stays ~64 row groups.
    fn default() -> Self {
        WriterOptions {
            row_group_rows_target: 4_096,
            row_group_bytes_target: 2 << 20,
        }
    }
}

/// What a finished file's index entry must say.
#[derive(Debug)]
pub struct WrittenMeta {
    /// One per Kafka batch, lengths as the batches were read from the WAL.
    pub batches: Vec<BatchMeta>,
    pub records: u64,
    pub min_timestamp: i64,
    pub max_timestamp: i64,
    /// Length of the whole file: every drained output plus the tail.
    pub byte_len: u64,
    /// CRC32C of the whole file.
    pub crc32c: u32,
}

/// A whole file written in one go, with what its index entry must say.
#[derive(Debug)]
pub struct WrittenFile {
    pub bytes: Bytes,
    /// One per Kafka batch, lengths as the batches were read from the WAL.
    pub batches: Vec<BatchMeta>,
    pub records: u64,
    pub min_timestamp: i64,
    pub max_timestamp: i64,
}

/// Builds one file from pushed WAL payloads. Every batch is decoded and CRC-checked on the way.
pub struct FileWriter {
    // Draining the Vec between row groups is safe: the parquet writer tracks file positions
    // itself, never by looking at its sink.
    writer: SerializedFileWriter<Vec<u8>>,
    options: WriterOptions,
    /// The Kafka partition of the stream (its id ends in `-<partition>`), or -1.
    partition: i32,
    group: Columns,
    extra: Option<Box<dyn ExtraColumns>>,
    group_bytes: usize,
    batches: Vec<BatchMeta>,
    records: u64,
    min_timestamp: i64,
    max_timestamp: i64,
    output_bytes: u64,
    output_crc32c: u32,
}

/// The partition a stream id names (`<topic id>-<partition>`); -1 for another form.
fn partition_of(stream: &str) -> i32 {
    stream
        .rsplit_once('-')
        .and_then(|(_, p)| p.parse().ok())
        .unwrap_or(-1)
}

impl FileWriter {
    pub fn new(stream: &str, options: &WriterOptions) -> Result<Self, CompactedError> {
        Self::with_version(stream, options, FORMAT_VERSION, None)
    }

    /// A writer whose rows also carry `extra` columns (see [`ExtraColumns`]).
    pub fn with_extra(
        stream: &str,
        options: &WriterOptions,
        extra: Option<Box<dyn ExtraColumns>>,
    ) -> Result<Self, CompactedError> {
        Self::with_version(stream, options, FORMAT_VERSION, extra)
    }

    /// A writer of a key-compacted file (format version 2: gaps allowed), filled with
    /// [`FileWriter::push_decoded`].
    pub fn key_compacted(
        stream: &str,
        options: &WriterOptions,
        extra: Option<Box<dyn ExtraColumns>>,
    ) -> Result<Self, CompactedError> {
        Self::with_version(stream, options, KEY_COMPACTED_FORMAT_VERSION, extra)
    }

    fn with_version(
        stream: &str,
        options: &WriterOptions,
        version: &str,
        extra: Option<Box<dyn ExtraColumns>>,
    ) -> Result<Self, CompactedError> {
        let version = match &extra {
            Some(e) if e.elides_values() => format!("{version}{VALUES_ELIDED_SUFFIX}"),
            _ => version.to_string(),
        };
        debug_assert!(FORMAT_VERSIONS_READ.contains(&version.as_str()));
        let metadata = vec![
            KeyValue::new(FORMAT_VERSION_KEY.into(), version),
            KeyValue::new("kafka.stream".into(), stream.to_string()),
        ];
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_statistics_enabled(EnabledStatistics::Page)
            .set_key_value_metadata(Some(metadata))
            .build();
        let schema = columns::schema_with(extra.as_ref().map(|e| e.fields()).unwrap_or_default())?;
        let writer = SerializedFileWriter::new(Vec::new(), schema, std::sync::Arc::new(props))?;
        Ok(FileWriter {
            writer,
            options: options.clone(),
            partition: partition_of(stream),
            group: Columns::default(),
            extra,
            group_bytes: 0,
            batches: Vec::new(),
            records: 0,
            min_timestamp: i64::MAX,
            max_timestamp: i64::MIN,
            output_bytes: 0,
            output_crc32c: 0,
        })
    }

    /// Appends the batches of one WAL payload whose first offset is `base_offset` (the WAL
    /// keeps the producer's base offset; the true one comes from the index). A row group is
    /// written whenever the buffered rows reach a target.
    pub fn push(&mut self, base_offset: u64, payload: Bytes) -> Result<(), CompactedError> {
        let mut next_offset = base_offset;
        for bytes in split_batches(payload)? {
            let decoded = decode_batch(&bytes)?;
            let h = decoded.header;
            let records = u32::try_from(h.last_offset_delta)
                .ok()
                .and_then(|delta| delta.checked_add(1))
                .ok_or_else(|| {
                    CompactedError::BadBatch(format!(
                        "last offset delta {} at offset {next_offset}",
                        h.last_offset_delta
                    ))
                })?;
            let count = u64::from(records);
            let base = i64::try_from(next_offset).map_err(|_| {
                CompactedError::Limit(format!("offset {next_offset} does not fit an i64"))
            })?;
            self.batches.push(BatchMeta {
                // At most i32::MAX + 12: `split_batches` reads it from the batch's i32 length.
                len: u32::try_from(bytes.len()).unwrap_or(u32::MAX),
                records,
                max_timestamp: h.max_timestamp,
                producer: (h.producer_id >= 0).then_some(ProducerMeta {
                    id: h.producer_id,
                    epoch: h.producer_epoch,
                    base_sequence: h.base_sequence,
                }),
            });
            self.min_timestamp = self.min_timestamp.min(h.base_timestamp);
            self.max_timestamp = self.max_timestamp.max(h.max_timestamp);
            self.records += count;
            self.group_bytes += bytes.len();
            push_batch(&mut self.group, self.extra.as_deref_mut(), base, &decoded);
            next_offset += count;
            self.write_group_if_full()?;
        }
        Ok(())
    }

    /// Appends one batch already decoded, whose first offset is `base_offset`, described in
    /// the index by `meta` (key compaction: the batch may hold fewer records than its offset
    /// span, and `meta.records` may also cover a gap before it).
    pub fn push_decoded(
        &mut self,
        base_offset: u64,
        batch: &DecodedBatch,
        meta: BatchMeta,
    ) -> Result<(), CompactedError> {
        let base = i64::try_from(base_offset).map_err(|_| {
            CompactedError::Limit(format!("offset {base_offset} does not fit an i64"))
        })?;
        let h = batch.header;
        self.batches.push(meta);
        // The base timestamp may be a delete horizon: the records say what is oldest.
        let oldest = batch
            .records
            .iter()
            .map(|r| h.record_timestamp(r.timestamp_delta))
            .min();
        self.min_timestamp = self.min_timestamp.min(oldest.unwrap_or(h.max_timestamp));
        self.max_timestamp = self.max_timestamp.max(h.max_timestamp);
        self.records += u64::from(meta.records);
        self.group_bytes += meta.len as usize;
        push_batch(&mut self.group, self.extra.as_deref_mut(), base, batch);
        self.write_group_if_full()
    }

    fn write_group_if_full(&mut self) -> Result<(), CompactedError> {
        if self.group.offset.len() >= self.options.row_group_rows_target
            || self.group_bytes >= self.options.row_group_bytes_target
        {
            self.write_group()?;
        }
        Ok(())
    }

    fn write_group(&mut self) -> Result<(), CompactedError> {
        let group = std::mem::take(&mut self.group);
        self.group_bytes = 0;
        write_group(
            &mut self.writer,
            &group,
            self.extra.as_deref_mut(),
            self.partition,
        )
    }

    /// Batches pushed so far.
    pub fn batches(&self) -> usize {
        self.batches.len()
    }

    /// Widens the last batch's index description by `records` offsets: a gap at the end of
    /// the range (key compaction removed its batches) is described by the batch before it.
    pub fn extend_last_batch(&mut self, records: u32) -> bool {
        match self.batches.last_mut() {
            Some(last) => {
                last.records += records;
                self.records += u64::from(records);
                true
            }
            None => false,
        }
    }

    /// Records pushed so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// The file bytes produced since the last call (the magic and finished row groups).
    pub fn take_output(&mut self) -> Result<Bytes, CompactedError> {
        self.writer
            .flush()
            .map_err(|e| CompactedError::Parquet(format!("flush: {e}")))?;
        let out = std::mem::take(self.writer.inner_mut());
        self.output_bytes += out.len() as u64;
        self.output_crc32c = crc32c::crc32c_append(self.output_crc32c, &out);
        Ok(Bytes::from(out))
    }

    /// Writes the last row group and the footer. Returns the bytes not drained yet (the tail of
    /// the file) and the metadata of the whole file.
    pub fn finish(mut self) -> Result<(Bytes, WrittenMeta), CompactedError> {
        if !self.group.offset.is_empty() {
            self.write_group()?;
        }
        for kv in self
            .extra
            .as_ref()
            .map(|e| e.metadata())
            .unwrap_or_default()
        {
            self.writer.append_key_value_metadata(kv);
        }
        self.writer.finish()?;
        let tail = self.take_output()?;
        let meta = WrittenMeta {
            batches: self.batches,
            records: self.records,
            min_timestamp: self.min_timestamp,
            max_timestamp: self.max_timestamp,
            byte_len: self.output_bytes,
            crc32c: self.output_crc32c,
        };
        Ok((tail, meta))
    }
}

/// Writes a whole file in memory from batches whose first offsets are given.
pub fn write_file(
    stream: &str,
    batches: &[(u64, Bytes)],
    options: &WriterOptions,
) -> Result<WrittenFile, CompactedError> {
    let mut writer = FileWriter::new(stream, options)?;
    for (base_offset, payload) in batches {
        writer.push(*base_offset, payload.clone())?;
    }
    // Nothing was drained, so the tail is the whole file.
    let (bytes, meta) = writer.finish()?;
    Ok(WrittenFile {
        bytes,
        batches: meta.batches,
        records: meta.records,
        min_timestamp: meta.min_timestamp,
        max_timestamp: meta.max_timestamp,
    })
}

#[cfg(test)]
mod tests;
