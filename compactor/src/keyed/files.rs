//! Reading a compacted file one row group at a time (a ranged GET of its footer, then one per
//! row group), rebuilt into Kafka batches: key compaction holds one row group of a file.

use std::sync::Arc;

use bytes::Bytes;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use storage::compacted::{
    decode_group, Footer, ParsedTail, RebuildOptions, RebuiltGroup, FOOTER_PREFETCH_BYTES,
};
use storage::index::LocatedEntry;

use crate::throttle::ReadThrottle;
use crate::CompactorError;

pub struct CompactedFile<'a> {
    objects: &'a Arc<dyn ObjectStore>,
    located: &'a LocatedEntry,
    footer: Arc<Footer>,
    path: Path,
    /// Rebuilds the values the file's typed columns elided (its schemas parsed once per file).
    restorer: Arc<tables::typed::restore::Restorer>,
}

impl<'a> CompactedFile<'a> {
    pub async fn open(
        objects: &'a Arc<dyn ObjectStore>,
        located: &'a LocatedEntry,
        throttle: &ReadThrottle,
    ) -> Result<CompactedFile<'a>, CompactorError> {
        let entry = &located.entry;
        let path = Path::from(entry.object_key.as_str());
        let file_len = u64::from(entry.byte_len);
        let file_end = entry.byte_offset + file_len;
        let corrupt = |e: &dyn std::fmt::Display| {
            CompactorError::Corrupt(format!("{}: {e}", entry.object_key))
        };
        let mut tail_len = FOOTER_PREFETCH_BYTES.min(file_len);
        let footer = loop {
            throttle.acquire(tail_len).await;
            let tail = objects
                .get_range(&path, file_end - tail_len..file_end)
                .await?;
            match Footer::parse(&tail, file_len).map_err(|e| corrupt(&e))? {
                ParsedTail::Footer(footer) => break Arc::new(footer),
                ParsedTail::NeedTailBytes(n) if n > tail_len => tail_len = n,
                ParsedTail::NeedTailBytes(n) => {
                    return Err(corrupt(&format!("footer wants {n} bytes, {tail_len} read")))
                }
            }
        };
        Ok(CompactedFile {
            objects,
            located,
            footer,
            path,
            restorer: Arc::default(),
        })
    }

    pub fn footer(&self) -> &Footer {
        &self.footer
    }

    pub fn groups(&self) -> usize {
        self.footer.groups.len()
    }

    /// Row group `group` rebuilt into uncompressed batches, off the async threads.
    pub async fn group(
        &self,
        group: usize,
        throttle: &ReadThrottle,
        inline: bool,
    ) -> Result<RebuiltGroup, CompactorError> {
        let span = self.footer.groups[group];
        let base = self.located.entry.byte_offset;
        throttle.acquire(span.byte_end - span.byte_start).await;
        let bytes: Bytes = self
            .objects
            .get_range(&self.path, base + span.byte_start..base + span.byte_end)
            .await?;
        let footer = self.footer.clone();
        let options = RebuildOptions {
            recompress: false,
            restorer: Some(self.restorer.clone()),
        };
        storage::cpu::run(inline, move || {
            decode_group(&footer, group, bytes, &options)
        })
        .await
        .map_err(|e| CompactorError::Corrupt(format!("reader task failed: {e}")))?
        .map_err(CompactorError::from)
    }
}
