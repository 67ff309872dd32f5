//! Which objects a stream's index still points at: the test both the WAL reclaimer and the
//! orphan sweeper apply before deleting anything.

use std::collections::HashSet;

use metastore::MetaStore;
use storage::{stream, FileType, IndexEntry};

use crate::CompactorError;

const SCAN_PAGE_RECORDS: usize = 1024;

/// Object keys of every index entry of `file_type` in stream `s`.
pub async fn object_keys(
    meta: &dyn MetaStore,
    s: &str,
    file_type: FileType,
) -> Result<HashSet<String>, CompactorError> {
    let mut keys = HashSet::new();
    visit(meta, s, |_, entry| {
        if entry.file_type == file_type {
            keys.insert(entry.object_key);
        }
    })
    .await?;
    Ok(keys)
}

/// Calls `f` with every index entry of stream `s` and the end offset its key names, in key
/// order, a page at a time (entries are not all held at once: a Parquet entry lists up to
/// thousands of batches).
pub async fn visit(
    meta: &dyn MetaStore,
    s: &str,
    mut f: impl FnMut(u64, IndexEntry),
) -> Result<(), CompactorError> {
    let mut from = stream::index_range_start(s);
    let end = stream::index_range_end(s);
    loop {
        let page = meta
            .range_scan(&from, &end, Some(s), SCAN_PAGE_RECORDS)
            .await?;
        let Some(last) = page.last() else { break };
        // The smallest key after `last` at the same depth.
        from = format!("{}\u{1}", last.key);
        let full = page.len() == SCAN_PAGE_RECORDS;
        for r in page {
            let (end_offset, _) = stream::parse_index_key(s, &r.key)
                .ok_or_else(|| CompactorError::Corrupt(format!("index key {}", r.key)))?;
            f(end_offset, IndexEntry::decode(&r.value)?);
        }
        if !full {
            break;
        }
    }
    Ok(())
}
