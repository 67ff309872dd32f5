//! A compacted file's footer, parsed once and kept: which row group holds which offsets and
//! which bytes its column chunks span, so that a read fetches just that range.

use std::sync::Arc;

use parquet::file::metadata::{FooterTail, ParquetMetaData, ParquetMetaDataReader};
use parquet::file::statistics::Statistics;
use parquet::file::FOOTER_SIZE;

use super::columns::{LEAF_COLUMNS, LEAF_COLUMNS_WITHOUT_PARTITION};
use super::{
    CompactedError, FORMAT_VERSIONS_READ, FORMAT_VERSION_KEY, KEY_COMPACTED_FORMAT_VERSION,
    VALUES_ELIDED_SUFFIX,
};
use crate::cache::Weigh;

/// Bytes read from a file's end on first touch. Footers of files cut at 128 MiB with 2 MiB
/// row groups are ~40 KiB; a bigger footer costs one more ranged GET.
pub const FOOTER_PREFETCH_BYTES: u64 = 64 << 10;

/// Where one row group lies and which offsets it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowGroupSpan {
    /// First and last record offset, from the offset column's statistics (absent if unwritten).
    pub offsets: Option<(u64, u64)>,
    pub byte_start: u64,
    pub byte_end: u64,
    pub rows: usize,
}

/// The parsed footer of one compacted file.
#[derive(Debug)]
pub struct Footer {
    pub(crate) metadata: Arc<ParquetMetaData>,
    pub groups: Vec<RowGroupSpan>,
    pub file_len: u64,
}

/// What parsing a file's tail gave.
#[derive(Debug)]
pub enum ParsedTail {
    Footer(Footer),
    /// The footer is longer than the tail given: read this many bytes from the end and retry.
    NeedTailBytes(u64),
}

impl Footer {
    /// Parses the footer from the last `tail.len()` bytes of a file of `file_len` bytes.
    pub fn parse(tail: &[u8], file_len: u64) -> Result<ParsedTail, CompactedError> {
        if tail.len() < FOOTER_SIZE || tail.len() as u64 > file_len {
            return Err(bad(format!(
                "tail of {} bytes for a file of {file_len}",
                tail.len()
            )));
        }
        let mut end = [0u8; FOOTER_SIZE];
        end.copy_from_slice(&tail[tail.len() - FOOTER_SIZE..]);
        let footer_tail = FooterTail::try_new(&end)?;
        if footer_tail.is_encrypted_footer() {
            return Err(bad("encrypted footer".into()));
        }
        let needed = footer_tail.metadata_length() as u64 + FOOTER_SIZE as u64;
        if needed > file_len {
            return Err(bad(format!(
                "footer of {needed} bytes in a file of {file_len}"
            )));
        }
        let Some(start) = usize::try_from(needed)
            .ok()
            .and_then(|needed| tail.len().checked_sub(needed))
        else {
            return Ok(ParsedTail::NeedTailBytes(needed));
        };
        let metadata =
            ParquetMetaDataReader::decode_metadata(&tail[start..tail.len() - FOOTER_SIZE])?;
        check_layout(&metadata)?;
        let data_end = file_len - needed;
        let groups = (0..metadata.num_row_groups())
            .map(|i| span(&metadata, i, data_end))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ParsedTail::Footer(Footer {
            metadata: Arc::new(metadata),
            groups,
            file_len,
        }))
    }

    /// The first row group that may hold `offset` or later offsets (row groups are in offset
    /// order; one without statistics is a candidate the caller must decode to know).
    pub fn first_group_from(&self, offset: u64) -> Option<usize> {
        self.groups
            .iter()
            .position(|g| g.offsets.is_none_or(|(_, last)| last >= offset))
    }
}

/// What a file's footer statistics say about its rows (Iceberg manifests carry it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileStats {
    pub rows: u64,
    /// Lowest and highest record offset (absent if a row group has no statistics).
    pub offsets: Option<(u64, u64)>,
    /// Whether some row may be of a transactional batch (true when unknown).
    pub transactional: bool,
    /// Whether some row may be of a control batch (true when unknown).
    pub control: bool,
}

/// Leaf columns of `is_transactional` and `is_control` (see `columns::SCHEMA`).
const IS_TRANSACTIONAL_LEAF: usize = 18;
const IS_CONTROL_LEAF: usize = 19;

impl Footer {
    /// Names of the file's top-level columns, the Kafka ones and any extra (see
    /// [`super::ExtraColumns`]).
    pub fn top_level_fields(&self) -> Vec<String> {
        let schema = self.metadata.file_metadata().schema_descr();
        schema
            .root_schema()
            .get_fields()
            .iter()
            .map(|f| f.name().to_string())
            .collect()
    }

    /// The file's layout version (one of [`super::FORMAT_VERSIONS_READ`]); checked when the
    /// footer was parsed.
    pub fn format_version(&self) -> Option<&str> {
        format_version(&self.metadata)
    }

    /// Whether key compaction wrote the file (gaps allowed).
    pub fn key_compacted(&self) -> bool {
        self.format_version()
            .is_some_and(|v| v.starts_with(KEY_COMPACTED_FORMAT_VERSION))
    }

    /// Whether some values are elided: reading the file needs a [`super::ValueRestorer`].
    pub fn values_elided(&self) -> bool {
        values_elided(&self.metadata)
    }

    /// The uncompressed bytes of row group `group`'s columns (about its rebuilt batches).
    pub fn group_uncompressed_bytes(&self, group: usize) -> usize {
        usize::try_from(self.metadata.row_group(group).total_byte_size()).unwrap_or(0)
    }

    pub fn file_metadata(&self) -> &parquet::file::metadata::FileMetaData {
        self.metadata.file_metadata()
    }

    pub fn stats(&self) -> FileStats {
        let mut offsets: Option<(u64, u64)> = None;
        let mut known = true;
        for g in &self.groups {
            match (g.offsets, offsets) {
                (None, _) => known = false,
                (Some(o), None) => offsets = Some(o),
                (Some((lo, hi)), Some((a, b))) => offsets = Some((a.min(lo), b.max(hi))),
            }
        }
        let any_true = |leaf: usize| {
            (0..self.metadata.num_row_groups()).any(|i| {
                match self
                    .metadata
                    .row_group(i)
                    .columns()
                    .get(leaf)
                    .and_then(|c| c.statistics())
                {
                    Some(Statistics::Boolean(s)) => s.max_opt().is_none_or(|max| *max),
                    _ => true,
                }
            })
        };
        FileStats {
            rows: self.groups.iter().map(|g| g.rows as u64).sum(),
            offsets: if known { offsets } else { None },
            transactional: any_true(IS_TRANSACTIONAL_LEAF),
            control: any_true(IS_CONTROL_LEAF),
        }
    }
}

impl Weigh for Footer {
    fn weight_bytes(&self) -> usize {
        self.metadata.memory_size()
            + self.groups.len() * std::mem::size_of::<RowGroupSpan>()
            + std::mem::size_of::<Footer>()
    }
}

fn format_version(metadata: &ParquetMetaData) -> Option<&str> {
    metadata
        .file_metadata()
        .key_value_metadata()
        .and_then(|kv| kv.iter().find(|k| k.key == FORMAT_VERSION_KEY))
        .and_then(|k| k.value.as_deref())
}

fn values_elided(metadata: &ParquetMetaData) -> bool {
    format_version(metadata).is_some_and(|v| v.ends_with(VALUES_ELIDED_SUFFIX))
}

fn span(
    metadata: &ParquetMetaData,
    group: usize,
    data_end: u64,
) -> Result<RowGroupSpan, CompactedError> {
    let rg = metadata.row_group(group);
    let (mut byte_start, mut byte_end) = (u64::MAX, 0u64);
    // Extra columns come after the Kafka ones: the span (what a Kafka read fetches) ends at
    // the last Kafka column, unless elided values are rebuilt from the extra columns.
    let leaves = if values_elided(metadata) {
        usize::MAX
    } else {
        LEAF_COLUMNS
    };
    for column in rg.columns().iter().take(leaves) {
        let start = column
            .dictionary_page_offset()
            .unwrap_or(column.data_page_offset());
        let (Ok(start), Ok(len)) = (
            u64::try_from(start),
            u64::try_from(column.compressed_size()),
        ) else {
            return Err(bad(format!(
                "row group {group} has a negative column range"
            )));
        };
        let end = start.saturating_add(len);
        if end > data_end {
            return Err(bad(format!("row group {group} reaches into the footer")));
        }
        byte_start = byte_start.min(start);
        byte_end = byte_end.max(end);
    }
    if byte_start >= byte_end {
        return Err(bad(format!("row group {group} has no bytes")));
    }
    let rows = usize::try_from(rg.num_rows())
        .map_err(|_| bad(format!("row group {group} has a negative row count")))?;
    let offsets = match rg.column(0).statistics() {
        Some(Statistics::Int64(s)) => match (s.min_opt(), s.max_opt()) {
            // Negative statistics are not offsets: no range, as for absent ones.
            (Some(min), Some(max)) if max >= min => {
                u64::try_from(*min).ok().zip(u64::try_from(*max).ok())
            }
            _ => None,
        },
        _ => None,
    };
    Ok(RowGroupSpan {
        offsets,
        byte_start,
        byte_end,
        rows,
    })
}

fn check_layout(metadata: &ParquetMetaData) -> Result<(), CompactedError> {
    let meta = metadata.file_metadata();
    let version = format_version(metadata);
    if !version.is_some_and(|v| FORMAT_VERSIONS_READ.contains(&v)) {
        return Err(bad(format!(
            "unsupported compacted format version {version:?}"
        )));
    }
    let columns = meta.schema_descr().num_columns();
    if columns < LEAF_COLUMNS && columns != LEAF_COLUMNS_WITHOUT_PARTITION {
        return Err(bad("unexpected column count".into()));
    }
    Ok(())
}

fn bad(what: String) -> CompactedError {
    CompactedError::Parquet(what)
}
